"""Library mode: device tests that stop an NPU on every call of the function.

``if device.type != "cuda": raise ValueError(...)`` or ``assert "cuda" in str(w.device)`` at the top of a function
(no other test of the function holds it): on an NPU host the device is the NPU, and transfer_to_npu does not rename
the device type, so every call stops there. The function is ``unsupported``, and its callers with it (INVALID:
both were ``conditional``, "only for an NPU device" / "the CUDA branch is skipped; the other branch runs").

A device test folded into a flag (``use_fast = spacing is None and t.device.type == "cuda"``) whose tests take
branches that complete is advice, and the CUDA-only code behind ``if use_fast:`` is off on an NPU host (INVALID:
NPU004 manual and the function ``conditional``).

VALID: the same stop inside another test of the function (``if torch.is_autocast_enabled(): if t.device.type ==
"cuda": ... elif ...: ... else: raise``) stays ``conditional``: it runs only when that test holds.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch


        def profile_sizes(module, device):
            if device.type != "cuda":
                raise ValueError("size profiler supports only CUDA device")
            return torch.cuda.memory_allocated(device)


        def balance_by_size(module, device="cuda"):
            return profile_sizes(module, torch.device(device))


        class BaselineSoftmax(torch.nn.Module):
            def __init__(self, proj_weight):
                super().__init__()
                assert "cuda" in str(proj_weight.device), "weight should be on GPU"
                self.proj_weight = proj_weight


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


def test_a_device_test_that_stops_an_npu_on_every_call(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "stoplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["stoplib.profile_sizes"]["status"] == "unsupported"
    assert by["stoplib.profile_sizes"]["reasons"] == ["device-type-check"]
    assert by["stoplib.balance_by_size"]["status"] == "unsupported"
    assert by["stoplib.balance_by_size"]["via"] == ["stoplib.balance_by_size", "stoplib.profile_sizes"]
    assert by["stoplib.BaselineSoftmax.__init__"]["status"] == "unsupported"
    assert by["stoplib.BaselineSoftmax.__init__"]["reasons"] == ["device-type-check"]
    stops = {f["line"]: f["message"] for f in rep["findings"] if f["api"] == "device-type-check"}
    assert "whenever the function runs" in stops[5] and "whenever the function runs" in stops[17]


def test_a_stop_under_another_test_of_the_function_stays_conditional(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "stoplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["stoplib.cast"]["status"] == "conditional"
    assert "stops the program" in by["stoplib.cast"]["conditions"][0]


FLAG = {
    "__init__.py": """
        import torch

        try:
            import cupy as cp
        except ImportError:
            cp = None


        def erode(seg, spacing=None):
            use_fast = spacing is None and cp is not None and seg.device.type == "cuda"
            if not use_fast:
                return torch.nn.functional.max_pool2d(seg, 3)
            else:
                return cp.asarray(seg)
    """,
}


def test_a_device_test_folded_into_a_flag_whose_branches_complete(tmp_path, kb):
    rep = library_report(tmp_path, kb, FLAG, "flaglib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "flaglib.erode" not in by, by.get("flaglib.erode")
    (check,) = [f for f in rep["findings"] if f["api"] == "device-type-check"]
    assert check["severity"] == "advice" and "`use_fast`" in check["message"]


APEX = {
    "__init__.py": """
        import torch

        try:
            import apex.amp as apex_amp
        except ImportError:
            apex_amp = None


        class ApexWrapper:
            def __init__(self, opt_level="O1"):
                assert apex_amp is not None, "Apex is not installed"
                self.opt_level = opt_level

            def load_state_dict(self, state):
                if apex_amp is not None and "apex_amp" in state:
                    apex_amp.load_state_dict(state["apex_amp"])
    """,
}


def test_an_assert_on_the_fallback_value_of_a_gpu_only_import(tmp_path, kb):
    # INVALID before: the assert stops every call on an NPU host (apex is not installed there), yet nothing was found
    # and __init__ was supported. VALID: the use behind `if apex_amp is not None` keeps its fallback
    rep = library_report(tmp_path, kb, APEX, "apexlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["apexlib.ApexWrapper.__init__"]["status"] == "unsupported"
    assert by["apexlib.ApexWrapper.__init__"]["reasons"] == ["apex.amp"]
    assert by.get("apexlib.ApexWrapper.load_state_dict", {}).get("status") != "unsupported"
