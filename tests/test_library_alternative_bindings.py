"""Library mode: a module-level name bound by alternative imports or aliases in the branches of a test.

``if USE_PORTABLE: from otherpkg import attn as backend`` / ``else: import mylib_cuda as backend``: the resolver
cannot tell the two bindings apart, so ``backend.fwd(q)`` used to reach nothing and a function that runs the
build-declared CUDA extension on the default path was supported. Each alternative is now a callee under the
condition of its binding (the else branch, the default, none). ``X = torch.ops.ns.f`` (a version test) / ``else:
X = f``: an operator the library registers itself with ``@torch.library.custom_op("ns::f")`` runs ``f``, and two
alternatives that reach the same function make the call unconditional.

INVALID: the CUDA import only in the branch of an environment switch that is off by default leaves the portable
default path, and the function, supported.
"""

from __future__ import annotations

from helpers import library_report

_SETUP = """
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    setup(name="altlib", ext_modules=[CUDAExtension(name="altlib_cuda", sources=["csrc/k.cu"])],
          cmdclass={"build_ext": BuildExtension})
"""
_KERNEL = """
    #include <torch/extension.h>

    __global__ void fwd_kernel(float* x) { x[threadIdx.x] += 1.0f; }

    torch::Tensor fwd(torch::Tensor x) { fwd_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fwd", &fwd); }
"""

ALT = {
    "__init__.py": "",
    "setup.py": _SETUP,
    "csrc/k.cu": _KERNEL,
    "interface.py": """
        import os

        import torch

        USE_PORTABLE = os.getenv("ALTLIB_PORTABLE", "FALSE") == "TRUE"

        if USE_PORTABLE:
            from otherpkg.kernels import portable_attn as attn_backend
        else:
            import altlib_cuda as attn_backend


        def attention(q):
            return attn_backend.fwd(q)


        @torch.library.custom_op("altlib::_attn_forward", mutates_args=(), device_types="cuda")
        def _attn_forward(q):
            return attn_backend.fwd(q)


        if torch.__version__ >= "2.4.0":
            _wrapped_forward = torch.ops.altlib._attn_forward
        else:
            _wrapped_forward = _attn_forward


        def attention_op(q):
            return _wrapped_forward(q)


        def attention_default(q):
            return torch.ops.altlib._attn_forward.default(q)


        def describe(q):
            return str(q.shape)
    """,
}

OPT_IN = {
    "__init__.py": "",
    "setup.py": _SETUP,
    "csrc/k.cu": _KERNEL,
    "portable.py": """
        import torch


        def fwd(q):
            return torch.softmax(q, dim=-1)
    """,
    "interface.py": """
        import os

        if os.getenv("ALTLIB_CUDA_KERNELS", "0") == "1":
            import altlib_cuda as attn_backend
        else:
            from altlib import portable as attn_backend


        def attention(q):
            return attn_backend.fwd(q)
    """,
}


def _by(rep):
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_call_through_alternative_imports_runs_the_default_binding(tmp_path, kb):
    # VALID (old: supported, `attn_backend.fwd` reached nothing)
    by = _by(library_report(tmp_path, kb, ALT, "altlib"))
    for q in ("attention", "_attn_forward"):
        f = by[f"altlib.interface.{q}"]
        assert f["status"] == "unsupported", f
        assert any(r.startswith("altlib_cuda.fwd (compiled op bound in csrc/k.cu") for r in f["reasons"]), f
    assert "altlib.interface.describe" not in by


def test_a_registered_custom_op_runs_its_function_through_either_alias(tmp_path, kb):
    # VALID (old: supported; torch.ops.altlib._attn_forward was an unknown external name)
    by = _by(library_report(tmp_path, kb, ALT, "altlib"))
    for q in ("attention_op", "attention_default"):
        f = by[f"altlib.interface.{q}"]
        assert f["status"] == "unsupported", f
        assert "conditions" not in f, f


def test_the_cuda_import_of_a_default_off_switch_leaves_the_default_path_supported(tmp_path, kb):
    # INVALID: the default binding is the portable module
    by = _by(library_report(tmp_path, kb, OPT_IN, "altlib"))
    assert by.get("altlib.interface.attention", {}).get("status") in (None, "conditional"), by.get(
        "altlib.interface.attention")
