"""Library mode: ``self.op = Imported`` in ``__init__`` makes ``self.op(...)`` a call of the imported object.

A layer that imports a GPU-only kernel in ``__init__`` and keeps it on the instance (``self.op = GATConvFuse``) runs
that kernel in ``forward`` (INVALID: ``forward`` was ``supported``: the call through the attribute was not seen).

VALID: an attribute assigned twice, or from a name that is not bound by imports alone (a guarded import with a
``None`` fallback), is not resolved.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch

        try:
            from dgNN.operators import GATConvFuse as _Maybe
        except ImportError:
            _Maybe = None


        class FusedLayer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                from dgNN.operators import GATConvFuse
                self.op = GATConvFuse

            def forward(self, x, rowptr, col):
                return self.op(x, rowptr, col)


        class MaybeLayer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.op = _Maybe

            def forward(self, x, rowptr, col):
                if self.op is None:
                    return x
                return self.op(x, rowptr, col)
    """,
}


def test_a_call_through_an_attribute_bound_to_an_import_is_a_use(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "attrlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["attrlib.FusedLayer.forward"]["status"] == "unsupported"
    assert by["attrlib.FusedLayer.forward"]["reasons"] == ["dgNN.operators.GATConvFuse"]
    assert "attrlib.MaybeLayer.forward" not in by
