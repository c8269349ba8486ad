"""Library mode, round 39: calls the program model did not link (reach and dispatch). VALID/INVALID fixtures of
the shapes met in the read misses; no project code copied.

1. A compiled op bound at module level through a factory: ``op = _lazy("op")`` where ``_lazy(name)`` returns an
   inner function that runs ``getattr(_ext, name)(*args)`` on the module a sibling file loads
   (``_ext = load(name=EXT_NAME, ...)``, imported inside the inner function). A call of ``op`` runs that op.
2. Callables kept for later: a compiled op stored on ``self`` in ``__init__`` (``self.op = ext_module.op``) and
   handed to a module-level applier object (``applier = Applier(2048)``, whose ``__call__`` calls its argument);
   a class attribute set to an op looked up by name (``OPERATOR = get_operator("lib", "op")``) and called as
   ``Cls.OPERATOR(...)`` / ``self.OPERATOR(...)``.
3. Attributes built in ``__init__`` and never typed: ``self.conv = op(...)`` with ``op`` a local bound to one of two
   classes (each candidate's ``forward`` is reached; the worst decides), and a container of modules
   (``self.pools = nn.ModuleList(Pool(...) for s in scales)``, one class per branch of an ``if``/``elif`` on a
   constructor argument) indexed (``self.pools[0](x)``) or iterated (``for i, p in enumerate(self.pools): p(x)``):
   each branch's class is reached under that branch's condition.
4. A build-declared CUDA extension imported by name (``importlib.import_module("norm_cuda")``) where it runs
   unguarded stops there, like ``import norm_cuda``; inside ``try/except ImportError`` it is advice.
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


APPLIER = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="applib", ext_modules=[CUDAExtension(name="fused_ops", sources=["csrc/fused.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/fused.cu": """
        #include <torch/extension.h>

        __global__ void axpy_kernel(float* x) { x[threadIdx.x] += 1.0f; }

        void fused_axpy(int chunk, torch::Tensor x) { axpy_kernel<<<1, 32>>>(x.data_ptr<float>()); }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused_axpy", &fused_axpy); }
    """,
    "apply/__init__.py": """
        from .applier import Applier

        applier = Applier(2048)
    """,
    "apply/applier.py": """
        class Applier:
            def __init__(self, chunk):
                self.chunk = chunk

            def __call__(self, op, *args):
                return op(self.chunk, *args)
    """,
    "optim.py": """
        import torch

        from applib.apply import applier


        class Fused:
            def __init__(self, params):
                import fused_ops

                self.params = params
                self.axpy = fused_ops.fused_axpy

            def step(self):
                applier(self.axpy, self.params)

            def step_guarded(self, use_fused: bool = False):
                if use_fused:
                    applier(self.axpy, self.params)
                else:
                    torch.add(self.params, 1)

            def describe(self):
                return str(self.params)
    """,
}


def test_a_compiled_op_kept_on_self_and_handed_to_an_applier_runs_where_it_is_handed(tmp_path, kb):
    # VALID (old: `self.axpy` handed on was a reference to a method that does not exist, `applier(...)` a call of a
    # module constant: step was supported)
    by = _by(library_report(tmp_path, kb, APPLIER, "applib"))
    step = by["applib.optim.Fused.step"]
    assert step["status"] == "unsupported", step
    assert any(r.startswith("fused_ops.fused_axpy (compiled op bound in csrc/fused.cu") for r in step["reasons"]), step


def test_a_handed_op_keeps_the_guard_of_the_call_it_is_handed_to(tmp_path, kb):
    # INVALID: behind a default-off option with a torch fallback the op is the option's, and a method that hands
    # nothing on stays unlisted
    by = _by(library_report(tmp_path, kb, APPLIER, "applib"))
    guarded = by["applib.optim.Fused.step_guarded"]
    assert guarded["status"] == "conditional", guarded
    assert any("use_fused" in c for c in guarded["conditions"]), guarded
    assert "applib.optim.Fused.describe" not in by


OPERATORS = {
    "__init__.py": "",
    "common.py": """
        import torch


        def get_operator(library: str, name: str):
            def missing(*args, **kwargs):
                raise RuntimeError(f"no operator {library}::{name}")

            try:
                return getattr(getattr(torch.ops, library), name)
            except (RuntimeError, AttributeError):
                return missing


        class BaseOp:
            OPERATOR = None
            NAME = ""
    """,
    "sparse.py": """
        import torch

        from .common import BaseOp, get_operator


        class Prune(BaseOp):
            OPERATOR = get_operator("opslib", "prune_rows")
            NAME = "prune_rows"

            def run(self, x):
                return self.OPERATOR(x)


        class PruneLike(Prune):
            pass


        def prune(x):
            return Prune.OPERATOR(x)


        def prune_like(x):
            return PruneLike().run(x)


        def name_of():
            return Prune.NAME.upper()
    """,
}


def test_a_call_through_a_class_attribute_holding_a_looked_up_op_runs_the_op(tmp_path, kb):
    # VALID (old: the op-lookup finding stayed on the module's code; Prune.OPERATOR(x) was a class attribute with
    # no edge, so prune and run were supported)
    by = _by(library_report(tmp_path, kb, OPERATORS, "opslib"))
    for q in ("opslib.sparse.prune", "opslib.sparse.Prune.run", "opslib.sparse.prune_like"):
        assert by[q]["status"] == "unsupported", by.get(q)
        assert "torch.ops.opslib.prune_rows" in by[q]["reasons"], by[q]
    # the attribute's value is no function of the listing; reading another class attribute calls nothing
    assert "opslib.sparse.Prune.OPERATOR" not in by and "opslib.sparse.name_of" not in by


MODULES = {
    "__init__.py": "",
    "layers/__init__.py": """
        from .kernels import FusedConv, FusedPlainConv, RotatedPool, PlainPool
    """,
    "layers/kernels.py": """
        import torch
        from torch import nn

        from modlib import _C


        class FusedConv(nn.Module):
            def forward(self, x, offset):
                return _C.fused_conv(x, offset)


        class FusedPlainConv(nn.Module):
            def forward(self, x, offset):
                return _C.fused_plain_conv(x, offset)


        class RotatedPool(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return _C.rotated_pool(x, self.scale)


        class PlainPool(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return torch.nn.functional.avg_pool2d(x, 2) * self.scale
    """,
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="modlib", ext_modules=[CUDAExtension(name="modlib._C", sources=["csrc/ops.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/ops.cu": """
        #include <torch/extension.h>

        __global__ void conv_kernel(float* x) { x[threadIdx.x] *= 2.0f; }

        torch::Tensor fused_conv(torch::Tensor x, torch::Tensor o) { conv_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }
        torch::Tensor fused_plain_conv(torch::Tensor x, torch::Tensor o) { conv_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }
        torch::Tensor rotated_pool(torch::Tensor x, double s) { conv_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
            m.def("fused_conv", &fused_conv);
            m.def("fused_plain_conv", &fused_plain_conv);
            m.def("rotated_pool", &rotated_pool);
        }
    """,
    "blocks.py": """
        import torch
        from torch import nn

        from modlib import _C
        from modlib.layers import FusedConv, FusedPlainConv, PlainPool, RotatedPool


        class Block(nn.Module):
            def __init__(self, modulated: bool = False):
                super().__init__()
                if modulated:
                    conv_op = FusedConv
                else:
                    conv_op = FusedPlainConv
                self.conv = conv_op()
                self.offset = nn.Conv2d(4, 4, 3)

            def forward(self, x):
                return self.conv(x, self.offset(x))


        class Pooler(nn.Module):
            def __init__(self, scales, pool_type: str = "plain"):
                super().__init__()
                if pool_type == "plain":
                    self.pools = nn.ModuleList(PlainPool(s) for s in scales)
                elif pool_type == "rotated":
                    self.pools = nn.ModuleList([RotatedPool(s) for s in scales])
                else:
                    raise ValueError(pool_type)

            def forward(self, xs):
                if len(xs) == 1:
                    return self.pools[0](xs[0])
                out = []
                for level, pool in enumerate(self.pools):
                    out.append(pool(xs[level]))
                return torch.cat(out)

            def first(self, x):
                return self.pools[0](x)


        def _rotated(x):
            return _C.rotated_pool(x, 1.0)


        def _plain(x):
            return x * 2


        def pool_any(x, rotated: bool = False):
            fn = _rotated if rotated else _plain
            return fn(x)


        def pool_plain(x, half: bool = False):
            fn = _plain if half else torch.relu
            return fn(x)


        class PlainPooler(nn.Module):
            def __init__(self, scales):
                super().__init__()
                self.pools = nn.ModuleList(PlainPool(s) for s in scales)

            def forward(self, xs):
                return [pool(x) for pool, x in zip(self.pools, xs)]
    """,
}


def test_an_attribute_built_from_a_local_bound_to_one_of_two_classes_reaches_both(tmp_path, kb):
    # VALID (old: `conv_op(...)` was no class name, self.conv was untyped and forward supported)
    by = _by(library_report(tmp_path, kb, MODULES, "modlib"))
    fwd = by["modlib.blocks.Block.forward"]
    assert fwd["status"] == "unsupported", fwd
    assert any(r.startswith("modlib._C.fused_conv ") for r in fwd["reasons"]), fwd
    assert any(r.startswith("modlib._C.fused_plain_conv ") for r in fwd["reasons"]), fwd


def test_a_container_of_modules_built_per_branch_is_reached_under_each_branch(tmp_path, kb):
    # VALID (old: `self.pools[0](x)` and the loop variable over self.pools were untyped: forward was supported);
    # the rotated pool is built only when the caller picks pool_type="rotated", so forward is conditional on it
    by = _by(library_report(tmp_path, kb, MODULES, "modlib"))
    for q in ("modlib.blocks.Pooler.forward", "modlib.blocks.Pooler.first"):
        got = by[q]
        assert got["status"] == "conditional", got
        assert any(r.startswith("modlib._C.rotated_pool ") for r in got["reasons"]), got
        assert any("pool_type" in c and "rotated" in c for c in got["conditions"]), got


def test_a_container_of_host_modules_stays_supported(tmp_path, kb):
    # INVALID: every element is a plain-torch module, so iterating them reaches no compiled op
    by = _by(library_report(tmp_path, kb, MODULES, "modlib"))
    assert "modlib.blocks.PlainPooler.forward" not in by, by.get("modlib.blocks.PlainPooler.forward")


def test_a_local_bound_to_one_of_several_functions_reaches_each(tmp_path, kb):
    # VALID (old: `fn` bound twice was unresolved, pool_any supported); INVALID: candidates that reach no compiled
    # op leave the caller unlisted
    by = _by(library_report(tmp_path, kb, MODULES, "modlib"))
    assert by["modlib.blocks.pool_any"]["status"] == "unsupported", by.get("modlib.blocks.pool_any")
    assert "modlib.blocks.pool_plain" not in by


DYNAMIC_IMPORT = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="normlib", ext_modules=[CUDAExtension(name="norm_cuda", sources=["csrc/norm.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/norm.cu": """
        #include <torch/extension.h>

        __global__ void norm_kernel(float* x) { x[threadIdx.x] = 0.0f; }

        torch::Tensor forward(torch::Tensor x) { norm_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }
    """,
    "norm.py": """
        import importlib

        import torch

        norm_cuda = None


        class FusedNorm(torch.nn.Module):
            def __init__(self, dim):
                super().__init__()
                global norm_cuda
                norm_cuda = importlib.import_module("norm_cuda")
                self.dim = dim


        class MaybeFusedNorm(torch.nn.Module):
            def __init__(self, dim):
                super().__init__()
                try:
                    self.ext = importlib.import_module("norm_cuda")
                except ImportError:
                    self.ext = None
                self.dim = dim
    """,
}


def test_an_unguarded_import_module_of_a_cuda_extension_stops_the_constructor(tmp_path, kb):
    # VALID (old: the literal import_module only bound the name for later uses; the constructor was supported)
    rep = library_report(tmp_path, kb, DYNAMIC_IMPORT, "normlib")
    by = _by(rep)
    assert by["normlib.norm.FusedNorm.__init__"]["status"] == "unsupported", by.get("normlib.norm.FusedNorm.__init__")
    assert by["normlib.norm.FusedNorm.__init__"]["reasons"] == ["norm_cuda"]
    (f,) = [f for f in rep["findings"] if f["api"] == "norm_cuda" and f["line"] == 12]
    assert f["code"] == "NPU504" and f["severity"] == "blocker", f


def test_a_caught_import_module_of_a_cuda_extension_is_advice(tmp_path, kb):
    # INVALID: the failed import is caught and the attribute set to None: advice at the call, no status
    rep = library_report(tmp_path, kb, DYNAMIC_IMPORT, "normlib")
    (f,) = [f for f in rep["findings"] if f["api"] == "norm_cuda" and f["line"] == 20]
    assert f["code"] == "NPU504" and f["severity"] == "advice", f
    assert "normlib.norm.MaybeFusedNorm.__init__" not in _by(rep)
