"""Library mode: an ``if`` / ``elif`` chain whose final ``else`` only raises, and whose every other arm calls the
library's own CUDA-only op (one per reduction), has no working fallback: the caller's argument only picks which
unsupported op runs, so the function is unsupported whatever it passes (INVALID: conditional, "only when `reduce ==
'sum' or reduce == 'add'` ... otherwise the fallback runs"). VALID: a chain with one arm in plain torch stays
conditional on the caller's choice; a chain whose ``else`` runs code is a fallback as before."""

from __future__ import annotations

from helpers import library_report

CHAIN_LIB = {
    "__init__.py": "",
    "ops.py": """
        import torch


        def seg_sum(src, ptr):
            return torch.ops.seglib.seg_sum(src, ptr)


        def seg_max(src, ptr):
            return torch.ops.seglib.seg_max(src, ptr)


        def segment(src, ptr, reduce="sum"):
            if reduce == "sum" or reduce == "add":
                return seg_sum(src, ptr)
            elif reduce == "max":
                return seg_max(src, ptr)
            else:
                raise ValueError(reduce)


        def segment_or_dense(src, ptr, reduce="sum"):
            if reduce == "sum":
                return src.cumsum(0)[ptr]
            elif reduce == "max":
                return seg_max(src, ptr)
            else:
                raise ValueError(reduce)


        def segment_with_fallback(src, ptr, reduce="sum"):
            if reduce == "sum":
                return seg_sum(src, ptr)
            elif reduce == "max":
                return seg_max(src, ptr)
            else:
                return src.sum(0)
    """,
    "csrc/seg.cpp": """
        #include <torch/script.h>
        torch::Tensor seg_sum(torch::Tensor src, torch::Tensor ptr);
        torch::Tensor seg_max(torch::Tensor src, torch::Tensor ptr);
        static auto registry = torch::RegisterOperators()
            .op("seglib::seg_sum", &seg_sum)
            .op("seglib::seg_max", &seg_max);
    """,
    "csrc/cuda/seg_cuda.cu": """
        #include <torch/extension.h>
        __global__ void seg_sum_kernel(const float* src, float* out) { out[threadIdx.x] = src[threadIdx.x]; }
        torch::Tensor seg_sum(torch::Tensor src, torch::Tensor ptr) { seg_sum_kernel<<<1, 1>>>(nullptr, nullptr); return src; }
        torch::Tensor seg_max(torch::Tensor src, torch::Tensor ptr) { seg_sum_kernel<<<1, 1>>>(nullptr, nullptr); return src; }
    """,
}


def test_a_chain_whose_every_arm_runs_an_unsupported_op_or_raises_is_unsupported(tmp_path, kb):
    rep = library_report(tmp_path, kb, CHAIN_LIB, "seglib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["seglib.ops.seg_sum"]["status"] == "unsupported", by.get("seglib.ops.seg_sum")
    got = by["seglib.ops.segment"]
    assert got["status"] == "unsupported", got
    assert set(got["reasons"]) == {"torch.ops.seglib.seg_sum", "torch.ops.seglib.seg_max"}, got
    # VALID: one arm in plain torch is a working choice; an else that runs code is a fallback
    assert by["seglib.ops.segment_or_dense"]["status"] == "conditional", by["seglib.ops.segment_or_dense"]
    assert by["seglib.ops.segment_with_fallback"]["status"] == "conditional", by["seglib.ops.segment_with_fallback"]
