"""Library mode: an unverified API that runs only under a guard with a working fallback makes the function
``conditional`` with that condition, not ``unknown``: the default path does not run it.

VALID: the same API on the function's own path keeps the function ``unknown``; INVALID: ``unknown`` for
``if not x.is_sparse: return <dense path>`` followed by an API no support list documents (``torch.linalg.matrix_exp``).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch


        def normalize(x):
            if not x.is_sparse:
                return torch.nn.functional.normalize(x, p=2, dim=1)
            return torch.linalg.matrix_exp(x)


        def always(x):
            return torch.linalg.matrix_exp(x)
    """,
}


def test_unverified_api_behind_a_fallback_guard_is_conditional(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "unvlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["unvlib.normalize"]["status"] == "conditional"
    assert by["unvlib.normalize"]["reasons"] == ["torch.linalg.matrix_exp"]
    assert any("`x.is_sparse`" in c for c in by["unvlib.normalize"]["conditions"])
    assert by["unvlib.always"]["status"] == "unknown"
    assert by["unvlib.always"]["reasons"] == ["torch.linalg.matrix_exp"]
