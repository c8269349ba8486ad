"""Knowledge: torch_scatter's sum / add / mean / std reductions are plain PyTorch (``Tensor.scatter_add_`` on a zeros
tensor of ``src.device``), so a library calling them needs nothing of the extension (stop 43); the reductions that
call the extension's own ops (``scatter_max`` -> ``torch.ops.torch_scatter.scatter_max``, the segment / gather ops)
stay GPU-only uses (data/third_party_libs.yaml, the torch-scatter row's ``excludes``).

INVALID (before: unsupported through the table row's prefix ``torch_scatter``): a function that only calls
``torch_scatter.scatter_add`` or ``torch_scatter.scatter_mean``. VALID: one calling ``scatter_max`` or
``segment_csr`` is unsupported as before.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "ops.py": """
        import torch
        from torch_scatter import scatter_add, scatter_max, segment_csr
        import torch_scatter


        def colcount(col, n):
            return scatter_add(torch.ones_like(col), col, dim=0, dim_size=n)


        def mean_rows(value, row):
            return torch_scatter.scatter_mean(value, row, dim=0)


        def max_rows(value, row):
            return scatter_max(value, row, dim=0)[0]


        def reduce_csr(value, rowptr):
            return segment_csr(value, rowptr, reduce="sum")
    """,
}


def test_pure_torch_scatter_reductions_are_no_gpu_only_use(tmp_path, kb):
    by = {f["qualname"]: f for f in library_report(tmp_path, kb, LIB, "sparselib")["thirdparty"]["functions"]}
    assert "sparselib.ops.colcount" not in by, by.get("sparselib.ops.colcount")
    assert "sparselib.ops.mean_rows" not in by, by.get("sparselib.ops.mean_rows")
    assert by["sparselib.ops.max_rows"]["status"] == "unsupported", by.get("sparselib.ops.max_rows")
    assert by["sparselib.ops.max_rows"]["reasons"] == ["torch_scatter.scatter_max"], by["sparselib.ops.max_rows"]
    assert by["sparselib.ops.reduce_csr"]["status"] == "unsupported", by.get("sparselib.ops.reduce_csr")
