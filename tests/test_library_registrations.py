"""Library mode, #20 point 4 (without condition propagation): a library written here, laid out like
bitsandbytes (``_ops.py`` defines ops, ``backends/default/ops.py`` registers pure-PyTorch ``"default"``
kernels through an alias of ``torch.library.register_kernel``, ``backends/cuda/ops.py`` CUDA kernels,
``cextension.py`` loads a native library with ctypes), xformers (``get_operator(library, name)``) and
accelerate (a real NPU backend: device type, HCCL, RNG and memory on ``torch.npu``)."""

import textwrap

import pytest
from helpers import library_report

QLIB = {
    "__init__.py": "from . import _ops\nfrom .backends.default import ops as default_ops\nfrom . import functional\n",
    "_ops.py": """
        import torch

        register_kernel = torch.library.register_kernel

        torch.library.define("qlib::dequant", "(Tensor A, Tensor absmax) -> Tensor")
        torch.library.define("qlib::dequant.out", "(Tensor A, Tensor absmax, *, Tensor(a!) out) -> ()")
        torch.library.define("qlib::optim8", "(Tensor g, Tensor p) -> ()")
        torch.library.define("qlib::double_quant", "(Tensor A) -> (Tensor, Tensor)")

        lib = torch.library.Library("qlib", "FRAGMENT")
        lib.define("comp(Tensor x) -> Tensor")
    """,
    "backends/__init__.py": "",
    "backends/default/__init__.py": "",
    "backends/default/ops.py": """
        import torch
        from ..._ops import register_kernel, lib


        @register_kernel("qlib::dequant", "default")
        def _(A, absmax):
            return A.float() * absmax


        def _comp(x):
            return x * 2


        lib.impl("comp", _comp, "CompositeImplicitAutograd")


        @torch.library.custom_op("qlib::scale", mutates_args=())
        def scale(x: torch.Tensor) -> torch.Tensor:
            return x * 3


        @torch.library.custom_op("qlib::fused", mutates_args=(), device_types="cuda")
        def fused(x: torch.Tensor) -> torch.Tensor:
            return x + 1


        @torch.library.custom_op("qlib::gelu", mutates_args=(), device_types="cuda")
        def gelu(x: torch.Tensor) -> torch.Tensor:
            return x


        @gelu.register_kernel("npu")
        def _(x):
            return x
    """,
    "backends/cuda/__init__.py": "",
    "backends/cuda/ops.py": """
        from ..._ops import register_kernel
        from ...cextension import lib


        @register_kernel("qlib::optim8", "cuda")
        def _(g, p):
            lib.coptim8(g, p)


        @register_kernel("qlib::optim8", "cpu")
        def _(g, p):
            p.add_(g)


        @register_kernel("qlib::double_quant", "cuda")
        def _(A):
            return A, A


        @register_kernel("qlib::dequant.out", "cuda")
        def _(A, absmax, out):
            out.copy_(A)
    """,
    "cextension.py": """
        import ctypes as ct


        def get_native_library():
            return ct.cdll.LoadLibrary("libqlib_cuda.so")


        lib = get_native_library()
    """,
    "functional.py": """
        import ctypes as ct
        import torch
        from .cextension import lib


        def dequantize(A, absmax):
            return torch.ops.qlib.dequant.default(A, absmax)


        def dequantize_into(A, absmax, out):
            torch.ops.qlib.dequant.out(A, absmax, out=out)


        def optimizer_update_8bit(g, p):
            torch.ops.qlib.optim8(g, p)


        def double_quant(A):
            return torch.ops.qlib.double_quant.default(A)


        def composite(x):
            return torch.ops.qlib.comp(x)


        def scaled(x):
            return torch.ops.qlib.scale(x)


        def fused_add(x):
            return torch.ops.qlib.fused(x)


        def gelu(x):
            return torch.ops.qlib.gelu(x)


        def prefetch(A, device):
            lib.cprefetch(ct.c_void_p(A.data_ptr()), ct.c_size_t(A.nbytes), ct.c_int32(device))


        def dequantize_opt(A, absmax, out=None):
            if out is not None:
                torch.ops.qlib.dequant.out(A, absmax, out=out)
            else:
                out = torch.ops.qlib.dequant.default(A, absmax)
            return out


        def dequantize_scaled(A, absmax):
            return dequantize_opt(A, absmax) * 2


        def dequantize_to(A, absmax, buf):
            return dequantize_opt(A, absmax, out=buf)
    """,
    "ops/__init__.py": "",
    "ops/common.py": """
        import torch


        def get_operator(library, name):
            return getattr(getattr(torch.ops, library), name)


        def get_qlib_operator(name):
            return get_operator("xlib", name)


        def swiglu(x, w):
            return get_qlib_operator("swiglu_packedw")(x, w)


        def scale_again(x):
            return get_operator("qlib", "scale")(x)
    """,
    "profiling.py": """
        import torch
        import torch.cuda._memory_viz as memviz


        def snapshot_report(snapshot):
            return memviz.segments(snapshot)


        def annotate(name):
            torch.cuda.nvtx.range_push(name)
            torch.cuda.nvtx.range_pop()
    """,
    "engine.py": """
        import torch


        class Engine:
            def step(self, x):
                return self._kernel(x)

            def _kernel(self, x):
                raise NotImplementedError


        class CudaGraphEngine(Engine):
            def _kernel(self, x):
                torch.cuda.get_device_capability()
                return x


        class PlainEngine(Engine):
            def _kernel(self, x):
                return x
    """,
}


@pytest.fixture(scope="module")
def report(tmp_path_factory, kb):
    return library_report(tmp_path_factory.mktemp("q"), kb, QLIB, "qlib")


def _fn(report, qual):
    return next((f for f in report["thirdparty"]["functions"] if f["qualname"] == qual), None)


def _codes(report, path, line):
    return sorted(f["code"] for f in report["findings"] if f["path"] == path and f["line"] == line)


def test_default_and_composite_kernels_run_on_npu(report):
    for fn in ("dequantize", "composite", "scaled", "gelu"):
        assert _fn(report, f"qlib.functional.{fn}") is None, fn
    # no custom-op blocker (nor an "unverified" finding) on their calls
    assert _codes(report, "functional.py", 7) == []          # dequant.default: "default" kernel
    assert _codes(report, "functional.py", 23) == []         # comp: Library.impl CompositeImplicitAutograd
    assert _codes(report, "functional.py", 27) == []         # custom_op without device_types


def test_cuda_only_registrations_stay_unsupported(report):
    for fn in ("optimizer_update_8bit", "double_quant", "fused_add", "dequantize_into"):
        d = _fn(report, f"qlib.functional.{fn}")
        assert d is not None and d["status"] == "unsupported", (fn, d)
    f = next(f for f in report["findings"] if f["api"] == "torch.ops.qlib.optim8")
    assert f["code"] == "NPU505" and f["severity"] == "blocker" and "cpu, cuda only" in f["message"]
    f = next(f for f in report["findings"] if f["api"] == "torch.ops.qlib.fused")
    assert "cuda only" in f["message"]


def test_optional_out_overload_is_the_callers_choice(report):
    # bitsandbytes dequantize_4bit / gemv_4bit: the CUDA-only ``.out`` overload runs only under
    # ``if out is not None:`` with ``out=None`` by default; the default overload has a "default" kernel
    d = _fn(report, "qlib.functional.dequantize_opt")
    assert d is not None and d["status"] == "conditional", d
    assert d["reasons"] == ["torch.ops.qlib.dequant.out"]
    assert d["conditions"] == ["only when a caller sets `out is not None` (off by default, functional.py:43)"]
    # callers inside the library inherit the choice when they pass a buffer (never unsupported by default); one
    # that passes no `out` leaves it None, so the CUDA-only overload never runs for it (stop 40: the call site's
    # arguments are read against a "caller sets" condition on the callee's own parameters)
    d = _fn(report, "qlib.functional.dequantize_to")
    assert d is not None and d["status"] == "conditional", d
    assert d["reasons"] == ["torch.ops.qlib.dequant.out"]
    assert _fn(report, "qlib.functional.dequantize_scaled") is None


def test_ctypes_native_library_calls_are_compiled_code(report):
    d = _fn(report, "qlib.functional.prefetch")
    assert d["status"] == "unsupported" and d["reasons"] == ["qlib.cextension.lib.cprefetch"]
    assert _codes(report, "functional.py", 39) == ["NPU468"]
    # the CUDA kernel that calls it is registered, not called: nothing calls it through the graph
    assert _codes(report, "backends/cuda/ops.py", 7) == ["NPU468"]


def test_ops_through_a_lookup_helper_are_compiled_code(report):
    d = _fn(report, "qlib.ops.common.swiglu")
    assert d["status"] == "unsupported" and d["reasons"] == ["torch.ops.xlib.swiglu_packedw"]
    assert _fn(report, "qlib.ops.common.scale_again") is None     # the op has a device-agnostic kernel


def test_host_only_cuda_modules_are_not_device_use(report):
    assert _fn(report, "qlib.profiling.snapshot_report") is None
    d = _fn(report, "qlib.profiling.annotate")
    assert d["status"] == "needs-migration"


def test_dispatch_to_subclass_methods_is_followed(report):
    # Engine.step calls the stub self._kernel(): on a CudaGraphEngine that is the CUDA override, on a
    # PlainEngine the portable one -- so step depends on the instance's class
    d = _fn(report, "qlib.engine.Engine.step")
    assert d is not None and d["status"] == "conditional"
    assert d["reasons"] == ["torch.cuda.get_device_capability"]
    assert d["conditions"] == ["only when `self` is an instance of CudaGraphEngine (`self._kernel()` runs its override)"]
    assert _fn(report, "qlib.engine.CudaGraphEngine._kernel")["status"] == "unsupported"
    assert _fn(report, "qlib.engine.PlainEngine._kernel") is None


NPULIB = {
    "__init__.py": "",
    "state.py": """
        import torch
        from .imports import is_npu_available


        def init_process_group(backend=None):
            if is_npu_available():
                backend = "hccl"
                device = torch.device("npu", 0)
            else:
                backend = "nccl"
                device = torch.device("cuda", 0)
            return backend, device
    """,
    "imports.py": """
        import importlib.util


        def is_npu_available():
            return importlib.util.find_spec("torch_npu") is not None
    """,
    "random.py": """
        import torch
        from .imports import is_npu_available


        def set_seed(seed):
            if is_npu_available():
                torch.npu.manual_seed_all(seed)
            else:
                torch.cuda.manual_seed_all(seed)
    """,
    "memory.py": """
        import torch
        from .imports import is_npu_available


        def release_memory():
            if is_npu_available():
                torch.npu.empty_cache()
            else:
                torch.cuda.empty_cache()
    """,
}


def _lib(tmp_path, kb, files, name):
    return library_report(tmp_path, kb, files, name)


def test_npu_backend_makes_support_native(tmp_path, kb):
    rep = _lib(tmp_path, kb, NPULIB, "acclib")
    sup = rep["thirdparty"]["library"]["npu_support"]
    assert sup["level"] == "native"
    assert sup["evidence"][0] == "NPU backend: device, comm_backend, rng, memory"
    assert any(e == "HCCL communication backend: state.py:7: 'hccl'" for e in sup["evidence"])
    # functions the NPU backend serves are not blamed for the CUDA implementation beside their NPU branch
    assert _fn(rep, "acclib.state.init_process_group") is None
    assert _fn(rep, "acclib.random.set_seed") is None


def test_a_few_npu_mentions_are_only_partial(tmp_path, kb):
    files = dict(NPULIB)
    del files["random.py"], files["memory.py"]
    rep = _lib(tmp_path, kb, files, "somelib")
    assert rep["thirdparty"]["library"]["npu_support"]["level"] == "partial"
    # without a real backend the library is no NPU library as a whole, but the function's own NPU branch comes
    # first and is true on an NPU host: its CUDA `else` never runs there (stop 40: guards.npu_alternative)
    assert _fn(rep, "somelib.state.init_process_group") is None


def test_backend_pieces_in_npu_evidence():
    from astroid import parse

    from analyse.callgraph import npu_evidence

    tree = parse(textwrap.dedent("""
        import torch
        from torch_npu import npu_fusion_attention

        def attend(q, k, v):
            torch.npu.manual_seed(0)
            torch.npu.max_memory_allocated()
            out = torch_npu.npu_rms_norm(q, k)
            return npu_fusion_attention(q, k, v, 8, "BSND")[0], torch.device("npu")
    """))
    ev = npu_evidence(tree, "attn.py")
    assert ev["kernels"] == ["attn.py:3: imports Ascend kernels", "attn.py:8: torch_npu.npu_rms_norm()"]
    assert ev["rng"] == ["attn.py:6: torch.npu.manual_seed()"]
    assert ev["memory"] == ["attn.py:7: torch.npu.max_memory_allocated()"]
    assert ev["device_type"] == ["attn.py:9: 'npu'"]
