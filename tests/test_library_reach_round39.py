"""Library mode, round 39: calls the program model did not link (reach and dispatch). VALID/INVALID fixtures of
the shapes met in the read misses; no project code copied.

1. A compiled op bound at module level through a factory: ``op = _lazy("op")`` where ``_lazy(name)`` returns an
   inner function that runs ``getattr(_ext, name)(*args)`` on the module a sibling file loads
   (``_ext = load(name=EXT_NAME, ...)``, imported inside the inner function). A call of ``op`` runs that op.
"""

from __future__ import annotations

from helpers import library_report

LAZY = {
    "__init__.py": "",
    "kernels/__init__.py": """
        from typing import Callable


        def _lazy(name: str) -> Callable:
            def run(*args, **kwargs):
                from ._build import _ext

                return getattr(_ext, name)(*args, **kwargs)

            return run


        scale = _lazy("scale")
        host_sum = _lazy("host_sum")
    """,
    "kernels/_build.py": """
        import glob
        import os

        from torch.utils.cpp_extension import load

        HERE = os.path.dirname(__file__)
        EXT_NAME = "lazy_ops"

        _ext = None
        if os.environ.get("BUILD_OPS", "1") == "1":
            _ext = load(name=EXT_NAME, sources=glob.glob(os.path.join(HERE, "src/*.cu")))
    """,
    "kernels/src/ops.cu": """
        #include <torch/extension.h>

        __global__ void scale_kernel(float* x) { x[threadIdx.x] *= 2.0f; }

        torch::Tensor scale(torch::Tensor x) {
            scale_kernel<<<1, 32>>>(x.data_ptr<float>());
            return x;
        }

        torch::Tensor host_sum(torch::Tensor x);

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
            m.def("scale", &scale);
            m.def("host_sum", &host_sum);
        }
    """,
    "kernels/src/host.cpp": """
        #include <torch/extension.h>

        torch::Tensor host_sum(torch::Tensor x) {
            return x.sum();
        }
    """,
    "ops.py": """
        import torch

        import lazylib.kernels as _K
        from lazylib.kernels import scale


        def double(x):
            return scale(x)


        def double_via_module(x):
            return _K.scale(x)


        def total(x):
            return _K.host_sum(x)


        def plain(x):
            return torch.relu(x)
    """,
}


def _by(rep):
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_name_bound_to_a_factory_result_runs_the_op_the_argument_names(tmp_path, kb):
    # VALID (old: `scale` is a module-level value of lazylib.kernels, the call gets no edge and double is supported)
    by = _by(library_report(tmp_path, kb, LAZY, "lazylib"))
    for q in ("lazylib.ops.double", "lazylib.ops.double_via_module"):
        assert by[q]["status"] == "unsupported", by.get(q)
        assert any(r.startswith("lazy_ops.scale (compiled op bound in kernels/src/ops.cu") and "scale_kernel" in r
                   for r in by[q]["reasons"]), by[q]


def test_the_op_named_decides_not_the_factory(tmp_path, kb):
    # INVALID: the factory's inner function is a trampoline, so `host_sum` (CPU-only C++) does not inherit the CUDA
    # kernel of `scale`, and a function that calls neither stays unlisted
    by = _by(library_report(tmp_path, kb, LAZY, "lazylib"))
    assert by["lazylib.ops.total"]["status"] == "needs-migration", by["lazylib.ops.total"]
    assert all("scale" not in r for r in by["lazylib.ops.total"]["reasons"])
    assert "lazylib.ops.plain" not in by


def test_the_inner_function_itself_calls_some_op_of_the_compiled_module(tmp_path, kb):
    # VALID (old: getattr(_ext, name) on another module's compiled-module name was a dynamic call on a constant)
    by = _by(library_report(tmp_path, kb, LAZY, "lazylib"))
    run = by["lazylib.kernels._lazy.run"]
    assert run["status"] == "unsupported" and any(r.startswith("lazy_ops.* (an op of the compiled module bound in kernels/src/ops.cu") for r in run["reasons"]), run
