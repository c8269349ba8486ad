"""A kernel-hub download bound to a module-level name (``ops = get_kernel("org/ggml")``, ``ops = None`` otherwise):
the functions that call ``ops.<kernel>(...)`` run the downloaded CUDA build (NPU469 at the call; INVALID: no
finding, the function ``supported``).

``if ops is not None and x.is_cuda: return _fused(...)`` then a torch path: ``ops`` (``None`` unless the module made it)
is an optional object, and an ``and`` with a CUDA test is decided by the operand that is off on an NPU host with a
fallback, so the caller is ``conditional`` (INVALID: ``unsupported``, the CUDA test read as "no fallback"). The
optional object beside the CUDA test keeps it the setting's choice (not analyse.callgraph.npu_takes_fallback).

VALID: the function that calls the kernel unconditionally stays ``unsupported``; a local variable of the same name is
not the module's binding.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import os

        import torch

        if os.getenv("USE_HUB_KERNELS", "false") == "true":
            from kernels import get_kernel

            ops = get_kernel("org/ggml")
        else:
            ops = None


        def _fused(x, w):
            return x @ ops.ggml_dequantize(w).T


        def forward(x, w):
            if ops is not None and x.is_cuda:
                return _fused(x, w)
            return x @ w.T


        if os.getenv("USE_W4A4", "false") == "true":
            from kernels import get_kernel

            w4a4 = get_kernel("org/w4a4").ops
        else:
            w4a4 = None


        def quantize(x):
            return w4a4.quantize_act(x)


        def local(x):
            ops = torch.nn.functional
            return ops.relu(x)
    """,
}


def test_a_call_through_a_module_level_hub_kernel_is_a_compiled_op(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "hublib")
    calls = [f for f in rep["findings"] if f["code"] == "NPU469" and f["api"] == "ops.ggml_dequantize"]
    assert [f["line"] for f in calls] == [14]
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["hublib._fused"]["status"] == "unsupported"
    assert by["hublib.forward"]["status"] == "conditional"
    assert "hublib.local" not in by
    assert by["hublib.quantize"]["status"] == "unsupported"
    assert by["hublib.quantize"]["reasons"] == ["w4a4.quantize_act"]
