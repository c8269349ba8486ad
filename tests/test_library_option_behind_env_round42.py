"""Library mode, round 42: a default-off option inside a method that an environment switch guards with its default.

``if self.skip: return x`` (``self.skip`` read from ``$SKIP_EXPERT``, unset) then ``if ctx.sparse_size > 0:
<CUDA-only op>`` (``--sparse_size`` declared with default 0 by the library's demo script): the environment test holds with its
default, so it is the option that keeps the op off, and a caller can turn it on: conditional (old: any environment
variable on the path made the compiled op unreachable, so the function read as if the op were not there). INVALID: an
environment switch that is off by default and guards the op itself keeps it off the path.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "csrc/sparse_mm.cu": """
        #include <torch/extension.h>

        __global__ void sparse_mm_kernel(float* y, const float* x) { y[threadIdx.x] = x[threadIdx.x]; }

        torch::Tensor sparse_mm(torch::Tensor x) {
          auto y = torch::empty_like(x);
          sparse_mm_kernel<<<1, 32>>>(y.data_ptr<float>(), x.data_ptr<float>());
          return y;
        }

        TORCH_LIBRARY(moe_ops, m) { m.def("sparse_mm", sparse_mm); }
    """,
    "experts.py": """
        import os

        import torch


        class Experts(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.skip = int(os.environ.get("SKIP_EXPERT", "0")) != 0
                self.use_env_kernel = int(os.environ.get("USE_ENV_KERNEL", "0")) != 0

            def forward(self, x, ctx):
                if self.skip:
                    return x
                if ctx.sparse_size > 0:
                    return torch.ops.moe_ops.sparse_mm(x)
                return x * 2

            def env_forward(self, x):
                if self.use_env_kernel:
                    return torch.ops.moe_ops.sparse_mm(x)
                return x * 2


        class Layer(torch.nn.Module):
            def forward(self, x, sparse_size=0):
                self.sparse_size = sparse_size
                return x
    """,
    "demo.py": """
        import argparse

        parser = argparse.ArgumentParser()
        parser.add_argument("--sparse_size", type=int, default=0)
        args = parser.parse_args()
    """,
}


def _functions(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "moelib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_default_off_option_after_an_environment_test_that_holds_is_the_callers_choice(tmp_path, kb):
    fwd = _functions(tmp_path, kb)["moelib.experts.Experts.forward"]
    assert fwd["status"] == "conditional", fwd
    assert fwd["reasons"][0].startswith("torch.ops.moe_ops.sparse_mm (compiled op bound in csrc/sparse_mm.cu"), fwd
    assert any("ctx.sparse_size > 0" in c and "turned on" in c for c in fwd["conditions"]), fwd


def test_an_environment_switch_off_by_default_keeps_the_op_off_the_path(tmp_path, kb):
    # INVALID
    fns = _functions(tmp_path, kb)
    assert "moelib.experts.Experts.env_forward" not in fns, fns.get("moelib.experts.Experts.env_forward")
