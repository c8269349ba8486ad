"""Library mode: device tests whose NPU case the code itself decides (stop 37).

* A CUDA test (``x.is_cuda``) in a device test that also names the NPU (``or (HAVE_NPU and x.device.type ==
  'npu')``, ``not x.is_cuda and x.device.type != 'npu'``) needs no migration: an NPU tensor takes the case written
  for it, with or without transfer_to_npu (INVALID: needs-migration). A CUDA test with no NPU case that stops a
  non-CUDA tensor stays needs-migration (VALID; one that only chooses between two completing paths is advice since
  stop 39, test_library_conditions_round39).
* A table keyed by device types with no ``'npu'`` key, indexed with ``x.device.type``, raises KeyError for an NPU
  device (transfer_to_npu does not rename the type): NPU004 manual, the function ``conditional`` (only for an NPU
  device) and its callers with it (INVALID: supported). A table with an ``'npu'`` key, or a lookup inside
  ``try/except KeyError``, is no finding (VALID).
* ``if t.device.type == 'cuda': ... elif t.device.type == 'cpu': ... else: raise``: an NPU takes the ``else``; the
  device check is NPU004 manual ("stops the program"), not advice naming the ``elif`` branch as the one that runs.
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
            if not x.is_cuda:
                raise ValueError("CUDA tensors only")
            return torch.relu(x) * 2
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
    found = [f for f in rep["findings"] if f["api"] == "torch.Tensor.is_cuda"]
    # both tests also choose between branches that complete: advice since stop 39 (their NPU case was the reason)
    assert sorted(ln for f in found if f["severity"] == "advice" for ln in (f.get("lines") or [f["line"]])) == [7, 13]
    guards = {f["line"]: (f.get("guard") or {}) for f in found if f["severity"] == "auto"}
    assert list(guards) == [19] and not guards[19].get("npu_branch")


TABLES = {
    "__init__.py": """
        import torch


        class Matcher:
            thresholds = {"cpu": -1, "mps": -1, "cuda": 1024}

            def __init__(self):
                self.scales = {"cpu": 1.0, "cuda": 2.0, "npu": 2.0}

            def min_points(self, device):
                return self.thresholds[device.type]

            def scale(self, x):
                return self.scales[x.device.type]

            def safe_min_points(self, device):
                try:
                    return self.thresholds[device.type]
                except KeyError:
                    return -1

            def forward(self, x):
                th = self.min_points(x.device)
                return x[:th]


        def cast(t):
            if torch.is_autocast_enabled():
                if t.device.type == "cuda":
                    dtype = torch.float16
                elif t.device.type == "cpu":
                    dtype = torch.bfloat16
                else:
                    raise NotImplementedError()
                return t.to(dtype=dtype)
            return t
    """,
}


def test_a_device_type_table_without_npu_and_a_chain_that_raises_for_npu(tmp_path, kb):
    rep = library_report(tmp_path, kb, TABLES, "tablelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    checks = {(f["line"], f["api"], f["severity"]) for f in rep["findings"] if f["code"] == "NPU004"}
    assert (11, "device-type-table", "manual") in checks, checks
    assert not any(line in (14, 18) for line, _a, _s in checks), checks   # an 'npu' key; a caught KeyError
    assert (29, "device-type-check", "manual") in checks, checks        # the NPU takes the raising else
    assert by["tablelib.Matcher.min_points"]["status"] == "conditional"
    assert "KeyError" in by["tablelib.Matcher.min_points"]["conditions"][0]
    assert by["tablelib.Matcher.forward"]["status"] == "conditional"
    for q in ("tablelib.Matcher.scale", "tablelib.Matcher.safe_min_points"):
        assert q not in by, by.get(q)
    assert by["tablelib.cast"]["status"] == "conditional"
    assert "stops the program" in by["tablelib.cast"]["conditions"][0]


ORT = {
    "__init__.py": """
        import onnxruntime as ort


        class OnnxMixin:
            def _create_session(self, path, providers=None):
                return ort.InferenceSession(path, providers=providers or ["CPUExecutionProvider"])

            def as_cpu(self):
                self._session.set_providers(["CPUExecutionProvider"])

            def as_cuda(self, device_id=0):
                self._session.set_providers(["CUDAExecutionProvider"], provider_options=[{"device_id": device_id}])

            def as_tensorrt(self):
                self._session.set_providers([("TensorrtExecutionProvider", {"device_id": 0})])
    """,
}


def test_onnxruntime_gpu_execution_providers(tmp_path, kb):
    # INVALID before: a session asked for the CUDA / TensorRT provider was no finding (supported); VALID: the CPU
    # provider is none, and a caller's providers list makes the session the caller's choice
    rep = library_report(tmp_path, kb, ORT, "ortlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    found = {(f["line"], f["api"], f["severity"]) for f in rep["findings"] if f["code"] == "NPU472"}
    assert {(12, "providers=['CUDAExecutionProvider']", "manual"),
            (15, "providers=['TensorrtExecutionProvider']", "manual")} <= found, found
    assert not any(line == 9 for line, _a, _s in found)
    assert by["ortlib.OnnxMixin.as_cuda"]["status"] == "unsupported"
    assert by["ortlib.OnnxMixin.as_tensorrt"]["status"] == "unsupported"
    assert "ortlib.OnnxMixin.as_cpu" not in by
    assert by["ortlib.OnnxMixin._create_session"]["status"] == "conditional"
