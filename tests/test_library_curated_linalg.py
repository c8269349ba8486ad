"""Curated rows (data/curation.yaml) for undocumented APIs whose NPU path is known: a library function using
``Tensor.scatter_reduce_`` (op-plugin kernel, limits of its documented sibling), ``torch.svd`` (decomposes into
``_linalg_svd``, which has a kernel), ``torch.trapz`` (calls the documented ``torch.trapezoid``) or
``torch.utils.checkpoint.get_device_states`` (pure Python over the tensors' device module) is not ``unknown``
(INVALID); an API nobody curated (``torch.linalg.matrix_exp``) stays ``unknown`` (VALID).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch
        from torch.utils.checkpoint import get_device_states


        def scatter_max(src, index, out):
            return out.scatter_reduce_(0, index, src, reduce="amax", include_self=False)


        def align(x, y):
            u, s, v = torch.svd(x.transpose(1, 2) @ y)
            return u @ v.transpose(1, 2)


        def auc(fpr, tpr):
            return torch.trapz(tpr, fpr)


        class RandContext:
            def __init__(self, *tensors):
                self.cpu_state = torch.get_rng_state()
                self.gpu_devices, self.gpu_states = get_device_states(*tensors)


        def reflection(r):
            return torch.linalg.matrix_exp(r)
    """,
}


def test_curated_apis_make_library_functions_supported(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "curlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("curlib.scatter_max", "curlib.align", "curlib.auc", "curlib.RandContext.__init__"):
        assert q not in by, (q, by.get(q))     # supported: no entry
    assert by["curlib.reflection"]["status"] == "unknown"
    assert by["curlib.reflection"]["reasons"] == ["torch.linalg.matrix_exp"]
    notes = {f["api"] for f in rep["findings"] if f["code"] == "NPU205"}
    assert "torch.svd" in notes   # "not listed; curated: ..." with its evidence
