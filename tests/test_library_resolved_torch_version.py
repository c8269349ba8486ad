"""Library mode: a test of the torch version is valued on the torch version the run resolved.

``if digit_version('1.5.0') <= digit_version(TORCH_VERSION) < digit_version('1.10.0'): <old branch>`` is dead on
torch 2.x: what the old branch does (a CUDA-only assert, ``torch.cuda.amp.autocast``) is off the path, so the
function is ``supported`` (INVALID: ``conditional`` from the old branch's device test). VALID: the branch the
resolved version takes keeps its findings (a GPU-only call behind ``>= '1.10.0'`` stays ``unsupported``), a
tuple version (``TORCH_VERSION >= (1, 8)``) is compared the same way, and a version test of another library
is left to the caller (``conditional``).

Nested guards compose: an option test (``if dtype is None``) inside another accelerator's branch
(``if device_type == 'musa'``) is off the path whatever the caller passes, so it is no caller's choice (INVALID:
``conditional`` "only when `dtype is None` is turned on"); VALID: inside a default-off option of the caller's
(``if fast:``) it stays the caller's choice.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "utils.py": """
        import torch

        TORCH_VERSION = torch.__version__


        def digit_version(v):
            return tuple(int(x) for x in v.split('.')[:3] if x.isdigit())
    """,
    "amp.py": """
        import torch
        from packaging import version

        from vlib.utils import TORCH_VERSION, digit_version


        def autocast_ctx(device_type=None, enabled=True):
            if digit_version('1.5.0') <= digit_version(TORCH_VERSION) < digit_version('1.10.0'):
                assert device_type == 'cuda', 'old torch: cuda only'
                return torch.cuda.amp.autocast(enabled=enabled)
            return torch.autocast(device_type or 'cpu', enabled=enabled)


        def fused_step(x):
            if version.parse(torch.__version__) >= version.parse('1.10.0'):
                import flash_attn_2_cuda
                return flash_attn_2_cuda.fwd(x)
            return x * 2


        def legacy_step(x):
            if TORCH_VERSION < (1, 8):
                import flash_attn_2_cuda
                return flash_attn_2_cuda.fwd(x)
            return x * 2


        def lib_step(x):
            import flash_attn
            if version.parse(flash_attn.__version__) >= version.parse('2.0'):
                import flash_attn_2_cuda
                return flash_attn_2_cuda.fwd(x)
            return x * 2
    """,
    "ctx.py": """
        import torch


        def pick_dtype(device_type=None, dtype=None):
            if device_type == 'musa':
                if dtype is None:
                    dtype = torch.bfloat16
                    torch.set_autocast_gpu_dtype(dtype)
                return dtype
            return dtype or torch.float16


        def pick_dtype_opt(dtype=None, fast=False):
            if fast:
                if dtype is None:
                    dtype = torch.bfloat16
                    torch.set_autocast_gpu_dtype(dtype)
            return dtype
    """,
}


def test_a_torch_version_branch_dead_on_the_resolved_version_is_off_the_path(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "vlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "vlib.amp.autocast_ctx" not in by     # supported: the torch 1.5-1.10 branch is dead on torch 2.x
    assert "vlib.amp.legacy_step" not in by      # TORCH_VERSION < (1, 8): dead
    fused = by["vlib.amp.fused_step"]            # VALID: the live branch keeps its GPU-only call
    assert fused["status"] == "unsupported" and "flash_attn_2_cuda.fwd" in fused["reasons"]
    assert "vlib.amp.lib_step" in by             # VALID: another library's version is not the torch version
    assert by["vlib.amp.lib_step"]["status"] != "supported"


def test_an_option_test_inside_another_accelerators_branch_is_off_whatever_the_caller_passes(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "vlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "vlib.ctx.pick_dtype" not in by       # supported: the musa branch never runs on an NPU host
    opt = by["vlib.ctx.pick_dtype_opt"]          # VALID: behind the caller's own default-off option
    assert opt["status"] == "conditional"
    assert any("`fast`" in c and "off by default" in c for c in opt["conditions"])
