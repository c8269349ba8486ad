"""Library mode: device tests whose NPU case the code itself decides (stop 37).

* A CUDA test (``x.is_cuda``) in a device test that also names the NPU (``or (HAVE_NPU and x.device.type ==
  'npu')``, ``not x.is_cuda and x.device.type != 'npu'``) needs no migration: an NPU tensor takes the case written
  for it, with or without transfer_to_npu (INVALID: needs-migration). A CUDA test with no NPU case stays
  needs-migration (VALID).
"""

from __future__ import annotations

from helpers import library_report

NPU_CASE = {
    "__init__.py": """
        import torch

        from .device import HAVE_CUDA, HAVE_NPU


        def fused(x):
            if (HAVE_CUDA and x.is_cuda) or (HAVE_NPU and x.device.type == 'npu'):
                return torch.relu(x) * 2
            return torch.relu(x)


        def act(x):
            if (not x.is_cuda) and x.device.type != 'npu':
                return torch.sigmoid(x)
            return torch.tanh(x)


        def cuda_only(x):
            if x.is_cuda:
                return torch.relu(x) * 2
            return torch.relu(x)
    """,
    "device.py": """
        import importlib.util

        HAVE_CUDA = importlib.util.find_spec("pycuda") is not None
        HAVE_NPU = importlib.util.find_spec("torch_npu") is not None
    """,
}


def test_a_cuda_test_beside_an_explicit_npu_case_needs_no_migration(tmp_path, kb):
    rep = library_report(tmp_path, kb, NPU_CASE, "devlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "devlib.fused" not in by, by.get("devlib.fused")   # supported: no entry
    assert "devlib.act" not in by, by.get("devlib.act")
    assert by["devlib.cuda_only"]["status"] == "needs-migration"
    assert by["devlib.cuda_only"]["reasons"] == ["torch.Tensor.is_cuda"]
    guards = {f["line"]: (f.get("guard") or {}) for f in rep["findings"] if f["api"] == "torch.Tensor.is_cuda"}
    assert guards[7]["npu_branch"] == {"line": 7, "condition": "x.device.type == 'npu'"}
    assert guards[13]["npu_branch"]["line"] == 13
    assert not guards[19].get("npu_branch")
