"""Library mode: GPU-only libraries a class reaches without naming them at the call.

* ``self.op = Imported`` in ``__init__`` makes ``self.op(...)`` a call of the imported object;
* ``if not HAS_X and not LEGACY: raise`` where the flags are set only by a GPU-only import needs that library.

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


FLAGS = {
    "__init__.py": """
        import torch

        try:
            LEGACY = False
            from pylibcugraphops.pytorch import CSC
            HAS_OPS = True
        except ImportError:
            HAS_OPS = False
            try:
                from pylibcugraphops import make_fg_csr
                LEGACY = True
            except ImportError:
                pass

        try:
            import scipy.sparse
            HAS_SCIPY = True
        except ImportError:
            HAS_SCIPY = False


        class GraphModule(torch.nn.Module):
            def __init__(self):
                super().__init__()
                if not HAS_OPS and not LEGACY:
                    raise ModuleNotFoundError("requires pylibcugraphops")


        def to_scipy(x):
            if not HAS_SCIPY:
                raise ImportError("requires scipy")
            return x
    """,
}


def test_a_function_that_raises_unless_a_gpu_only_import_succeeded_needs_it(tmp_path, kb):
    rep = library_report(tmp_path, kb, FLAGS, "flaglib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["flaglib.GraphModule.__init__"]["status"] == "unsupported"
    assert by["flaglib.GraphModule.__init__"]["reasons"] == ["pylibcugraphops.pytorch.CSC"]
    assert "flaglib.to_scipy" not in by   # scipy imports on an Ascend host
