"""Library statuses for code that runs on an NPU without a source change.

Two shapes the status rules used to grade as work:

* a library with its own NPU support (the knowledge entry's ``npu_support: native``: DeepSpeed picks its NPU
  accelerator at run time) -- a function that calls it keeps its calls and is supported; an ``auto`` entry without
  it (transfer_to_npu rewrites the call) still needs migration;
* a read of CUDA autocast's dtype (``torch.get_autocast_gpu_dtype``): a thread-local state read that completes on
  an NPU host (knowledge severity info), so it blocks nothing; setting that dtype does not reach NPU autocast and
  stays a manual change.
"""

from types import SimpleNamespace

import pytest

from analyse.knowledge import load_knowledge
from analyse.passes._libtable import ThirdPartyDataError, parse_libs
from tests.helpers import library_report

LIB = {
    "__init__.py": "from .engine import wrap_engine, gathered, fused_layer, nccl_group\n",
    "engine.py": """
import contextlib

import deepspeed
import torch
from deepspeed.ops.transformer import DeepSpeedTransformerLayer


def wrap_engine(model, config):
    engine, *_ = deepspeed.initialize(model=model, config=config)
    engine.eval()
    return engine


def gathered(module, stage3=False):
    if not stage3:
        return contextlib.nullcontext()
    return deepspeed.zero.GatheredParameters(module.weight, modifier_rank=None)


def fused_layer(cfg):
    return DeepSpeedTransformerLayer(cfg)


def nccl_group():
    torch.distributed.init_process_group(backend="nccl")
""",
    "amp.py": """
import torch


def cast_inputs(*args):
    if not torch.is_autocast_enabled():
        return args
    return torch.cuda.amp.autocast_mode._cast(args, torch.get_autocast_gpu_dtype())


def weight_dtype(w):
    if torch.is_autocast_enabled():
        return torch.get_autocast_gpu_dtype()
    return w.dtype


def force_bf16():
    torch.set_autocast_gpu_dtype(torch.bfloat16)
""",
}


@pytest.fixture(scope="module")
def rep(tmp_path_factory):
    return library_report(tmp_path_factory.mktemp("native"), load_knowledge("2.8.0"), LIB, "dslib")


def _statuses(rep):
    return {d["qualname"]: d["status"] for d in rep["thirdparty"]["functions"]}


def test_a_library_with_its_own_npu_accelerator_leaves_its_callers_supported(rep):
    st = _statuses(rep)
    # VALID: deepspeed.initialize / zero.GatheredParameters run on DeepSpeed's NPU accelerator, the code unchanged
    assert st.get("dslib.engine.wrap_engine", "supported") == "supported", st
    assert st.get("dslib.engine.gathered", "supported") == "supported", st
    # the finding stays, marked native, with the install / accelerator step as its replacement
    (init,) = [f for f in rep["findings"] if f["api"] == "deepspeed.initialize"]
    assert init["line"] == 9 and init["severity"] == "auto" and init["npu_support"] == "native"
    assert "DS_ACCELERATOR=npu" in init["replacement"]


def test_a_cuda_only_op_of_that_library_and_a_transfer_rewrite_still_count(rep):
    st = _statuses(rep)
    # INVALID: the library's CUDA-only op has no NPU builder; the nccl backend is rewritten by transfer_to_npu
    assert st["dslib.engine.fused_layer"] == "unsupported"
    assert st["dslib.engine.nccl_group"] == "needs-migration"
    assert not any(f.get("npu_support") for f in rep["findings"] if f["api"].startswith("torch."))


def test_reading_the_cuda_autocast_dtype_blocks_nothing_but_setting_it_does(rep):
    st = _statuses(rep)
    # VALID: a thread-local dtype read completes on an NPU host
    by = {d["qualname"]: d for d in rep["thirdparty"]["functions"]}
    cast = by["dslib.amp.cast_inputs"]   # torch.cuda.amp's _cast helper is a torch.cuda name transfer_to_npu maps
    assert cast["status"] == "needs-migration" and "torch.get_autocast_gpu_dtype" not in cast["reasons"], cast
    assert st.get("dslib.amp.weight_dtype", "supported") == "supported", st
    reads = [(f["line"], f["code"], f["severity"]) for f in rep["findings"] if f["api"] == "torch.get_autocast_gpu_dtype"]
    assert (7, "NPU006", "info") in reads and all(r[2] == "info" for r in reads), reads
    # INVALID: the CUDA autocast dtype it sets never reaches NPU autocast
    assert st["dslib.amp.force_bf16"] == "unsupported"


def _doc(**extra):
    row = {"id": "x", "library": "X", "modules": ["xlib"], "reason": "r", "replacement": "r", "source": "s"}
    row.update(extra)
    return {"meta": {"source": "s", "date": "d"}, "libraries": [row]}


def test_native_npu_support_is_validated_data():
    assert parse_libs(_doc(severity="auto", npu_support="native")).entries[0].npu_support == "native"
    assert parse_libs(_doc(severity="auto")).entries[0].npu_support is None
    with pytest.raises(ThirdPartyDataError, match="npu_support"):
        parse_libs(_doc(severity="manual", npu_support="native"))   # a change by hand is not native support
    with pytest.raises(ThirdPartyDataError, match="npu_support"):
        parse_libs(_doc(severity="auto", npu_support="yes"))


BRANCHES = {
    "__init__.py": "",
    "norm.py": """
import importlib

import torch

fused_norm_cuda = None


def has_custom_op():
    return hasattr(torch.library, "custom_op")


if has_custom_op():
    @torch.library.custom_op("brlib::fwd", mutates_args=())
    def _fwd_op(x: torch.Tensor) -> torch.Tensor:
        global fused_norm_cuda
        if fused_norm_cuda is None:
            fused_norm_cuda = importlib.import_module("fused_norm_cuda")
        return fused_norm_cuda.forward(x)


class _NormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        global fused_norm_cuda
        if fused_norm_cuda is None:
            fused_norm_cuda = importlib.import_module("fused_norm_cuda")
        return fused_norm_cuda.forward(x)


def _ref(x):
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def fused_norm(x):
    with torch.amp.autocast("cuda", enabled=False):
        if has_custom_op():
            return _fwd_op(x)
        else:
            return _NormFn.apply(x)


def fused_or_ref(x):
    if has_custom_op():
        return _fwd_op(x)
    else:
        return _ref(x)
""",
    "csrc/norm.cpp": '''
#include <torch/extension.h>
at::Tensor forward(at::Tensor x);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
''',
    "csrc/norm_kernel.cu": "__global__ void k(float* x) { x[0] = 0; }\n",
}


def _cond(c, line):
    return f"only when `{c}` (availability-check, norm.py:{line}; otherwise the fallback runs)"


def test_two_branches_of_one_test_that_both_need_the_cuda_op_are_no_fallback_for_each_other():
    import networkx as nx

    from analyse.library import _propagate_with_guards

    g = nx.DiGraph()
    # fused: `if has_op(): op_fwd() else: Fn.apply()`, both sides call the CUDA extension
    g.add_edge("m.fused", "m.op_fwd", line=5, cond=_cond("has_op()", 4))
    g.add_edge("m.fused", "m.Fn.forward", line=7, cond=_cond("not has_op()", 4))
    # fused_or_ref: the other side is plain torch (a supported callee)
    g.add_edge("m.fused_or_ref", "m.op_fwd", line=11, cond=_cond("has_op()", 10))
    g.add_edge("m.fused_or_ref", "m.ref", line=13, cond=_cond("not has_op()", 10))
    roots = {"m.op_fwd": {"unsupported": ["ext.forward"]}, "m.Fn.forward": {"unsupported": ["ext.forward"]}}
    st = _propagate_with_guards(SimpleNamespace(graph=g), roots)
    # VALID: neither side is a working fallback for the other: unsupported whichever way the test goes
    assert st["m.fused"].status == "unsupported" and st["m.fused"].reasons == ["ext.forward"]
    # INVALID: a plain-torch side is a working fallback: the caller's choice
    assert st["m.fused_or_ref"].status == "conditional"


def test_a_plain_torch_branch_of_a_library_test_stays_a_fallback(tmp_path):
    rep = library_report(tmp_path, load_knowledge("2.8.0"), BRANCHES, "brlib")
    by = {d["qualname"]: d for d in rep["thirdparty"]["functions"]}
    assert by["brlib.norm.fused_norm"]["status"] == "unsupported", by["brlib.norm.fused_norm"]
    assert by["brlib.norm.fused_or_ref"]["status"] == "conditional", by["brlib.norm.fused_or_ref"]
    assert by["brlib.norm.fused_or_ref"]["line"] == 42
