"""Library mode, round 40: calls the program model did not link, or linked to the wrong thing (reach and dispatch).
VALID/INVALID fixtures of the shapes met in the read misses of batch H5; no project code copied.

1. A parameter of ``nn.Module.forward`` without an annotation is guessed to be a tensor. A method torch.Tensor does
   not document called on it (``memories.copy()`` on a list, ``bias.custom_positions(p)`` on a module passed in) says
   the guess is wrong: no unverified tensor API. A documented tensor method on it still counts, and so does an
   undocumented one on a tensor the code makes. A CUDA autocast switched off (``enabled=False``) is advice.
2. ``name = wrapper(own_callable)`` at module level (an outside wrapper of a compiled op) stands for the callable.
3. A JIT build named like a well-known package (``load("torchvision", ...)``) is no extension of that name.
4. A container built from a local list filled in a loop, iterated with nested target tuples.
5. An attribute built by a factory of the project holds what the factory returns.
6. ``getattr(self, name)(x)`` over the submodules a class registers with ``add_module`` / ``setattr``.
7. A local bound to one of several callables in ``if``/``else`` branches: each call edge keeps its binding's test.
8. Other GPU vendors' device tools (rocm-smi) run by the code: data in manifests.yaml, absent on an Ascend host.
"""

from __future__ import annotations

from helpers import library_report


def _by(rep):
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


GUESSED = {
    "__init__.py": "",
    "layers.py": """
        import torch
        from torch import nn


        class Bias(nn.Module):
            def custom_positions(self, pos):
                return pos.float() * 2


        class Stack(nn.Module):
            def __init__(self, depth: int = 2):
                super().__init__()
                self.depth = depth
                self.proj = nn.Linear(4, 4)

            def forward(self, x, memories=None, bias=None, pos=None):
                memories = memories.copy() if memories is not None else [None] * self.depth
                if bias is not None and pos is not None:
                    x = x + bias.custom_positions(pos)
                return self.proj(x)


        class Made(nn.Module):
            def forward(self, x):
                y = torch.zeros(3)
                return y.made_up_tensor_method() + x.nonexistent_on_x()
    """,
}


def test_an_undocumented_method_on_a_guessed_forward_parameter_is_no_tensor_api(tmp_path, kb):
    # VALID (old: memories.copy() / bias.custom_positions(pos) were torch.Tensor.copy / torch.Tensor.custom_positions,
    # unverified, and Stack.forward was unknown)
    by = _by(library_report(tmp_path, kb, GUESSED, "guesslib"))
    assert "guesslib.layers.Stack.forward" not in by, by.get("guesslib.layers.Stack.forward")


def test_an_undocumented_method_on_a_made_tensor_stays_unverified(tmp_path, kb):
    # INVALID: a tensor the code makes (torch.zeros) keeps its type: its undocumented method stays unverified
    made = _by(library_report(tmp_path, kb, GUESSED, "guesslib"))["guesslib.layers.Made.forward"]
    assert made["status"] == "unknown", made
    assert "torch.Tensor.made_up_tensor_method" in made["reasons"], made


AUTOCAST_OFF = {
    "__init__.py": "",
    "rotary.py": """
        import torch
        from torch.amp import autocast


        @autocast("cuda", enabled=False)
        def rotate(x, freqs):
            return x * freqs.cos()


        def rotate_inline(x, freqs):
            with torch.autocast(device_type="cuda", enabled=False):
                return x * freqs.sin()


        def rotate_half(x, freqs):
            with torch.autocast("cuda", dtype=torch.float16):
                return x * freqs
    """,
}


def test_a_cuda_autocast_switched_off_is_advice(tmp_path, kb):
    # VALID (old: the 'cuda' of a disabled autocast was an auto device string, so rotate was needs-migration)
    by = _by(library_report(tmp_path, kb, AUTOCAST_OFF, "ropelib"))
    assert "ropelib.rotary.rotate" not in by and "ropelib.rotary.rotate_inline" not in by, by


def test_a_cuda_autocast_switched_on_stays_a_migration(tmp_path, kb):
    # INVALID: an enabled CUDA autocast region is one transfer_to_npu rewrites
    by = _by(library_report(tmp_path, kb, AUTOCAST_OFF, "ropelib"))
    assert by["ropelib.rotary.rotate_half"]["status"] == "needs-migration", by.get("ropelib.rotary.rotate_half")


WRAPPED = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="boxlib", ext_modules=[CUDAExtension(name="boxlib._C", sources=["csrc/ops.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/ops.cu": """
        #include <torch/extension.h>

        __global__ void suppress_kernel(float* x) { x[threadIdx.x] = 0.0f; }

        torch::Tensor suppress(torch::Tensor boxes, double t) { suppress_kernel<<<1, 32>>>(boxes.data_ptr<float>()); return boxes; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("suppress", &suppress); }
    """,
    "ops/__init__.py": """
        from .suppress import suppress, plain_area
    """,
    "ops/suppress.py": """
        from mixedprec import amp

        from boxlib import _C


        def _area(boxes):
            return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


        suppress = amp.float_function(_C.suppress)
        plain_area = amp.float_function(_area)
    """,
    "boxes.py": """
        from boxlib.ops import plain_area, suppress as _suppress


        def filter_boxes(boxes, thresh: float = 0.5):
            if thresh <= 0:
                return boxes
            return _suppress(boxes, thresh)


        def areas(boxes):
            return plain_area(boxes)
    """,
}


def test_a_name_bound_to_an_outside_wrapper_of_a_compiled_op_runs_the_op(tmp_path, kb):
    # VALID (old: `suppress` was a factory call of the outside amp.float_function, a call of it reached nothing, so
    # filter_boxes was supported)
    by = _by(library_report(tmp_path, kb, WRAPPED, "boxlib"))
    fb = by["boxlib.boxes.filter_boxes"]
    assert fb["status"] in ("unsupported", "conditional"), fb
    assert any(r.startswith("boxlib._C.suppress (compiled op") for r in fb["reasons"]), fb


def test_a_wrapped_python_function_runs_its_own_code(tmp_path, kb):
    # INVALID: the wrapper of a plain torch function runs that function: nothing to report
    by = _by(library_report(tmp_path, kb, WRAPPED, "boxlib"))
    assert "boxlib.boxes.areas" not in by, by.get("boxlib.boxes.areas")


JIT_NAMED = {
    "__init__.py": "",
    "csrc/ops.cu": """
        #include <torch/extension.h>

        __global__ void warp_kernel(float* x) { x[threadIdx.x] += 1.0f; }

        torch::Tensor warp(torch::Tensor x) { warp_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("warp", &warp); }
    """,
    "_build.py": """
        import glob
        import os

        from torch.utils.cpp_extension import load

        HERE = os.path.dirname(__file__)


        def _load_vision():
            return load("torchvision", glob.glob(os.path.join(HERE, "csrc", "*.cu")))


        def _load_own():
            return load("warp_ops", glob.glob(os.path.join(HERE, "csrc", "*.cu")))
    """,
    "data.py": """
        from torchvision.transforms import functional as F


        def resize(image, size):
            return F.resize(image, size)
    """,
    "warp.py": """
        import warp_ops


        def warp(x):
            return warp_ops.warp(x)
    """,
}


def test_a_jit_build_named_like_a_well_known_package_does_not_take_its_name(tmp_path, kb):
    # VALID (old: the loader's name "torchvision" made every torchvision.* call an unbound op of the library's own
    # extension, so resize was unsupported)
    by = _by(library_report(tmp_path, kb, JIT_NAMED, "jitlib"))
    assert "jitlib.data.resize" not in by, by.get("jitlib.data.resize")


def test_a_jit_build_with_its_own_name_is_still_the_extension(tmp_path, kb):
    # INVALID: an import of the name a JIT build gives its module runs that module's CUDA code
    by = _by(library_report(tmp_path, kb, JIT_NAMED, "jitlib"))
    assert by["jitlib.warp.warp"]["status"] == "unsupported", by.get("jitlib.warp.warp")


LOOP_BUILT = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="poollib", ext_modules=[CUDAExtension(name="poollib._C", sources=["csrc/pool.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/pool.cu": """
        #include <torch/extension.h>

        __global__ void pool_kernel(float* x) { x[threadIdx.x] *= 0.5f; }

        torch::Tensor region_pool(torch::Tensor x, double s) { pool_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("region_pool", &region_pool); }
    """,
    "layers.py": """
        import torch
        from torch import nn

        from poollib import _C


        class RegionPool(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = scale

            def forward(self, x):
                return _C.region_pool(x, self.scale)


        class HalfPool(nn.Module):
            def forward(self, x):
                return torch.nn.functional.avg_pool2d(x, 2)
    """,
    "pooler.py": """
        import torch
        from torch import nn

        from poollib.layers import HalfPool, RegionPool


        class MultiLevel(nn.Module):
            def __init__(self, scales):
                super().__init__()
                pools = []
                for s in scales:
                    pools.append(RegionPool(s))
                self.pools = nn.ModuleList(pools)

            def forward(self, feats):
                out = []
                for level, (feat, pool) in enumerate(zip(feats, self.pools)):
                    out.append(pool(feat) * level)
                return torch.cat(out)


        class Halves(nn.Module):
            def __init__(self, n):
                super().__init__()
                blocks = []
                for _ in range(n):
                    blocks.append(HalfPool())
                self.blocks = nn.Sequential(*blocks)
                self.extra = nn.ModuleList(blocks)

            def forward(self, x):
                for i, (name, block) in enumerate(zip(["a", "b"], self.extra)):
                    x = block(x)
                return self.blocks(x)
    """,
}


def test_a_container_filled_in_a_loop_and_iterated_with_a_nested_target_reaches_its_modules(tmp_path, kb):
    # VALID (old: nn.ModuleList(pools) of a local list was empty to the call graph, and `(feat, pool)` inside
    # enumerate(zip(...)) was no loop variable of self.pools: forward was supported)
    by = _by(library_report(tmp_path, kb, LOOP_BUILT, "poollib"))
    fw = by["poollib.pooler.MultiLevel.forward"]
    assert fw["status"] == "unsupported", fw
    assert any(r.startswith("poollib._C.region_pool (compiled op") for r in fw["reasons"]), fw


def test_a_container_of_plain_modules_filled_in_a_loop_stays_supported(tmp_path, kb):
    # INVALID: the modules the loop appends are plain torch
    by = _by(library_report(tmp_path, kb, LOOP_BUILT, "poollib"))
    assert "poollib.pooler.Halves.forward" not in by, by.get("poollib.pooler.Halves.forward")


FACTORY_BUILT = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="detlib", ext_modules=[CUDAExtension(name="detlib._C", sources=["csrc/sel.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/sel.cu": """
        #include <torch/extension.h>

        __global__ void select_kernel(float* x) { x[threadIdx.x] = 1.0f; }

        torch::Tensor select(torch::Tensor x) { select_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("select", &select); }
    """,
    "heads/__init__.py": "",
    "heads/post.py": """
        import torch
        from torch import nn

        from detlib import _C


        class Selector(nn.Module):
            def forward(self, scores):
                return _C.select(scores)


        class Softener(nn.Module):
            def forward(self, scores):
                return torch.sigmoid(scores)


        def make_selector(cfg):
            sel = Selector()
            return sel


        def make_softener(cfg):
            return Softener()


        def make_head(cfg):
            return Head(cfg)


        class Head(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.post = make_selector(cfg)

            def forward(self, x):
                return self.post(x)
    """,
    "model.py": """
        from torch import nn

        from detlib.heads.post import make_head, make_softener


        class Model(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                head = make_head(cfg)
                self.head = head
                self.soft = make_softener(cfg)

            def forward(self, x):
                return self.head(x)

            def scores(self, x):
                return self.soft(x)
    """,
}


def test_an_attribute_built_by_a_factory_of_the_project_runs_what_the_factory_returns(tmp_path, kb):
    # VALID (old: `self.post = make_selector(cfg)` typed the attribute as the function make_selector, and
    # `self.head = head` (a local) was untyped: Head.forward and Model.forward were supported)
    by = _by(library_report(tmp_path, kb, FACTORY_BUILT, "detlib"))
    for q in ("detlib.heads.post.Head.forward", "detlib.model.Model.forward"):
        assert by[q]["status"] == "unsupported", by.get(q)
        assert any(r.startswith("detlib._C.select (compiled op") for r in by[q]["reasons"]), by[q]


def test_a_factory_returning_a_plain_module_adds_nothing(tmp_path, kb):
    # INVALID: the factory hands back a plain torch module
    by = _by(library_report(tmp_path, kb, FACTORY_BUILT, "detlib"))
    assert "detlib.model.Model.scores" not in by, by.get("detlib.model.Model.scores")


REGISTERED = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="stagelib", ext_modules=[CUDAExtension(name="stagelib._C", sources=["csrc/shift.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/shift.cu": """
        #include <torch/extension.h>

        __global__ void shift_kernel(float* x) { x[threadIdx.x] += 3.0f; }

        torch::Tensor shift(torch::Tensor x) { shift_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("shift", &shift); }
    """,
    "stages.py": """
        import torch
        from torch import nn

        from stagelib import _C


        class Shift(nn.Module):
            def forward(self, x):
                return _C.shift(x)


        class Shifted(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.names = []
                for i in range(n):
                    name = "stage" + str(i)
                    self.add_module(name, Shift())
                    self.names.append(name)

            def forward(self, x):
                for name in self.names:
                    x = getattr(self, name)(x)
                return x


        class Plain(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.names = []
                for i in range(n):
                    name = f"lin{i}"
                    setattr(self, name, nn.Linear(4, 4))
                    self.names.append(name)

            def forward(self, x):
                for name in self.names:
                    x = getattr(self, name)(x)
                return x


        class Lookup(nn.Module):
            def forward(self, x, kind: str = "relu"):
                return getattr(self, "act_" + kind)(x)
    """,
}


def test_getattr_on_self_over_the_modules_the_class_registers_reaches_them(tmp_path, kb):
    # VALID (old: getattr(self, name)(x) was dynamic dispatch: Shifted.forward was unknown, and Plain.forward too)
    by = _by(library_report(tmp_path, kb, REGISTERED, "stagelib"))
    fw = by["stagelib.stages.Shifted.forward"]
    assert fw["status"] == "unsupported", fw
    assert any(r.startswith("stagelib._C.shift (compiled op") for r in fw["reasons"]), fw
    assert "stagelib.stages.Plain.forward" not in by, by.get("stagelib.stages.Plain.forward")


def test_getattr_on_self_in_a_class_that_registers_nothing_stays_dynamic(tmp_path, kb):
    # INVALID: with no add_module / setattr in the class, the name may be any attribute
    by = _by(library_report(tmp_path, kb, REGISTERED, "stagelib"))
    lk = by["stagelib.stages.Lookup.forward"]
    assert lk["status"] == "unknown" and any("dynamic getattr" in r for r in lk["reasons"]), lk


BOUND_IN_BRANCHES = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="losslib", ext_modules=[CUDAExtension(name="losslib._C", sources=["csrc/loss.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/loss.cu": """
        #include <torch/extension.h>

        __global__ void focal_kernel(float* x) { x[threadIdx.x] *= 0.25f; }

        torch::Tensor focal(torch::Tensor x) { focal_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("focal", &focal); }
    """,
    "loss.py": """
        import torch

        from losslib import _C


        def focal_fused(logits):
            return _C.focal(logits)


        def focal_plain(logits):
            p = torch.sigmoid(logits)
            return (1 - p) ** 2 * torch.log(p)


        def focal(logits):
            if logits.is_cuda:
                fn = focal_fused
            else:
                fn = focal_plain
            return fn(logits).sum()


        def focal_opt(logits, fused: bool = False):
            if fused:
                fn = focal_fused
            else:
                fn = focal_plain
            return fn(logits).sum()
    """,
}


def test_a_local_bound_under_a_cuda_test_keeps_the_test_on_its_call(tmp_path, kb):
    # VALID (old: each candidate of `fn` was called unconditionally, so focal was unsupported through focal_fused)
    by = _by(library_report(tmp_path, kb, BOUND_IN_BRANCHES, "losslib"))
    assert "losslib.loss.focal" not in by, by.get("losslib.loss.focal")


def test_a_local_bound_under_an_option_is_the_options_choice(tmp_path, kb):
    # INVALID: bound under a default-off option, the fused op is the caller's choice: conditional, not supported
    by = _by(library_report(tmp_path, kb, BOUND_IN_BRANCHES, "losslib"))
    fo = by["losslib.loss.focal_opt"]
    assert fo["status"] == "conditional" and any("fused" in c for c in fo["conditions"]), fo


VENDOR_TOOLS = {
    "__init__.py": "",
    "topology.py": """
        import logging
        import subprocess


        def amd_links():
            out = subprocess.run(["rocm-smi", "--showtopotype"], capture_output=True, text=True)
            return out.stdout


        def list_dir():
            logging.info("rocm-smi is not used here")
            return subprocess.run(["ls", "-l"], capture_output=True).stdout
    """,
}


def test_another_gpu_vendors_device_tool_run_by_the_code_is_absent_on_an_npu_host(tmp_path, kb):
    # VALID (old: only nvidia-smi was known, so amd_links was supported); the tools are data (manifests.yaml)
    by = _by(library_report(tmp_path, kb, VENDOR_TOOLS, "topolib"))
    al = by["topolib.topology.amd_links"]
    assert al["status"] == "unsupported" and "rocm-smi" in al["reasons"], al


def test_a_command_that_names_no_gpu_tool_is_no_finding(tmp_path, kb):
    # INVALID: another command, and the tool's name in a log message
    by = _by(library_report(tmp_path, kb, VENDOR_TOOLS, "topolib"))
    assert "topolib.topology.list_dir" not in by, by.get("topolib.topology.list_dir")
