"""`thirdparty` statuses a library maintainer can trust.

A small library written here, laid out like the detection / vision libraries
it is modelled on: a pybind module whose ops dispatch per device, NPU kernels
registered in an ``npu/`` folder, a CUDA-only op, a CPU-only op, a CUDA kernel
tried with a PyTorch fallback, a default-off option, a branch for another
accelerator, classes named in registries and ``isinstance`` checks, a config
object bound to the name ``_C``, and a symlinked package.
"""

import json
import os
import textwrap
from pathlib import Path

import pytest

LIB = {
    "__init__.py": "from .ops import nms, carafe, box_area, RoIPool\nfrom .config import get_cfg\n",
    "utils.py": """
        import importlib

        def load_ext(name, funcs):
            return importlib.import_module("vislib." + name)


        def is_musa_available():
            return False


        def env_info():
            from torch.utils.cpp_extension import CUDA_HOME
            return {"CUDA_HOME": str(CUDA_HOME)}
    """,
    "ops/__init__.py": "from .nms import nms\nfrom .carafe import carafe, fused_act\nfrom .area import box_area\n"
                       "from .pool import RoIPool\n",
    "ops/nms.py": """
        from ..utils import load_ext

        ext_module = load_ext('_ext', ['nms'])


        def nms(boxes, scores, iou):
            return ext_module.nms(boxes, scores, iou, 0)
    """,
    "ops/carafe.py": """
        import torch
        from ..utils import load_ext, is_musa_available

        ext_module = load_ext('_ext', ['carafe_forward'])


        def carafe(x, mask):
            out = x.new_zeros(x.shape)
            ext_module.carafe_forward(x, mask, out)
            return out


        def _fused_act_ref(x):
            return torch.relu(x)


        def fused_act(x, use_custom_op=False):
            if use_custom_op:
                return carafe(x, x)
            return _fused_act_ref(x)


        def sync(x):
            if is_musa_available():
                torch.musa.synchronize()
            return x
    """,
    "ops/deform.py": """
        from ..utils import load_ext

        ext_module = load_ext('_ext', ['carafe_forward'])


        def deform(x):
            if x.device.type == 'npu':
                return x * 2
            ext_module.carafe_forward(x, x, x)
            return x
    """,
    "ops/area.py": """
        from ..utils import load_ext

        ext_module = load_ext('_ext', ['box_area'])


        def box_area(boxes):
            return ext_module.box_area(boxes)


        try:
            from .. import _ext as _C
        except ImportError:
            _C = None


        def box_area_or_torch(boxes):
            if _C is not None:
                return _C.box_area(boxes)
            return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    """,
    "ops/pool.py": """
        import torch
        from torch import nn

        POOLS = {nn.AvgPool3d: 'avg3d', nn.AvgPool2d: 'avg'}


        class RoIPool(nn.Module):
            def forward(self, x):
                if isinstance(x, nn.AvgPool3d):
                    return None
                return torch.max(x)


        class Pool3d(nn.AvgPool3d):
            pass


        def patch(wrap):
            import torch.nn.functional as F
            F.adaptive_max_pool2d = wrap(F.adaptive_max_pool2d)
            HOOKS = [F.adaptive_max_pool2d, nn.AdaptiveMaxPool2d]
            return HOOKS


        def pool(x):
            import torch.nn.functional as F
            return F.adaptive_max_pool2d(x, 1)
    """,
    "models.py": """
        import torch
        from torch import nn


        class Net(nn.Module):
            def load_pretrained(self, path):
                return torch.hub.load_state_dict_from_url(path)


        def build(model: nn.Module, path):
            model.load_pretrained(path)
            torch.serialization.get_unsafe_globals_in_checkpoint(path)
            return torch.jit.is_scripting()


        def odd(x):
            return torch.special.zeta_not_documented(x)
    """,
    "config/__init__.py": "from .defaults import _C\n\n\ndef get_cfg():\n    return _C.clone()\n",
    "config/node.py": "class CfgNode(dict):\n    def clone(self):\n        return CfgNode(self)\n",
    "config/defaults.py": "from .node import CfgNode as CN\n\n_C = CN()\n_C.MODEL = CN()\n",
    "csrc/pybind.cpp": """
        #include <torch/extension.h>
        Tensor nms(Tensor boxes, Tensor scores, float iou, int offset);
        void carafe_forward(Tensor x, Tensor mask, Tensor out);
        Tensor box_area(Tensor boxes);
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("nms", &nms, "nms (CPU/CUDA)", py::arg("boxes"), py::arg("scores"), py::arg("iou"),
                py::arg("offset"));
          m.def("carafe_forward", &carafe_forward, "carafe_forward (CUDA)", py::arg("x"), py::arg("mask"),
                py::arg("out"));
          m.def("box_area", &box_area, "box_area (CPU)", py::arg("boxes"));
        }
    """,
    "csrc/nms.cpp": """
        Tensor nms_impl(Tensor boxes, Tensor scores, float iou, int offset) {
          return DISPATCH_DEVICE_IMPL(nms_impl, boxes, scores, iou, offset);
        }
        Tensor nms(Tensor boxes, Tensor scores, float iou, int offset) {
          return nms_impl(boxes, scores, iou, offset);
        }
    """,
    "csrc/carafe.cpp": """
        void carafe_forward_impl(Tensor x, Tensor mask, Tensor out) {
          DISPATCH_DEVICE_IMPL(carafe_forward_impl, x, mask, out);
        }
        void carafe_forward(Tensor x, Tensor mask, Tensor out) { carafe_forward_impl(x, mask, out); }
    """,
    "csrc/area.cpp": "Tensor box_area(Tensor boxes) { return boxes.select(1, 2) - boxes.select(1, 0); }\n",
    "csrc/cuda/cudabind.cpp": """
        Tensor nms_cuda(Tensor boxes, Tensor scores, float iou, int offset) { return NMSLauncher(boxes); }
        REGISTER_DEVICE_IMPL(nms_impl, CUDA, nms_cuda);
        void carafe_cuda(Tensor x, Tensor mask, Tensor out) { CarafeLauncher(x); }
        REGISTER_DEVICE_IMPL(carafe_forward_impl, CUDA, carafe_cuda);
    """,
    "csrc/cuda/kernels.cu": """
        __global__ void nms_kernel(const float* b) {}
        __global__ void carafe_kernel(const float* b) {}
        Tensor NMSLauncher(Tensor b) { nms_kernel<<<1, 1>>>(b.data_ptr<float>()); return b; }
        void CarafeLauncher(Tensor b) { carafe_kernel<<<1, 1>>>(b.data_ptr<float>()); }
    """,
    "csrc/common/device_registry.hpp": "#define REGISTER_NPU_IMPL(key, value) REGISTER_DEVICE_IMPL(key, XLA, value)\n",
    "csrc/npu/nms_npu.cpp": """
        Tensor nms_npu(Tensor boxes, Tensor scores, float iou, int offset) { return boxes; }
        Tensor nms_impl(Tensor boxes, Tensor scores, float iou, int offset);
        REGISTER_NPU_IMPL(nms_impl, nms_npu);
    """,
}

SETUP = """
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension
import torch


def get_extensions():
    extension = CppExtension
    sources = ["vislib/csrc/pybind.cpp", "vislib/csrc/nms.cpp", "vislib/csrc/carafe.cpp", "vislib/csrc/area.cpp"]
    if torch.cuda.is_available():
        extension = CUDAExtension
        sources += ["vislib/csrc/cuda/cudabind.cpp", "vislib/csrc/cuda/kernels.cu"]
    return [extension(name="vislib._ext", sources=sources)]


setup(name="vislib", ext_modules=get_extensions(), cmdclass={"build_ext": BuildExtension})
"""


def _write(root: Path) -> Path:
    lib = root / "vislib"
    for rel, text in LIB.items():
        p = lib / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    (root / "setup.py").write_text(SETUP)
    return lib


@pytest.fixture(scope="module")
def report(tmp_path_factory, kb):
    from analyse.library import analyse_library

    root = tmp_path_factory.mktemp("vis")
    lib = _write(root)
    return analyse_library([lib], kb, input_names=["vislib"])


def _fn(report, qual):
    return next((f for f in report["thirdparty"]["functions"] if f["qualname"] == qual), None)


def test_npu_implementation_makes_the_op_supported(report):
    assert _fn(report, "vislib.ops.nms.nms") is None       # the library's NPU kernel is registered
    # the finding on the call is not a blocker either: one consistent story
    fs = [f for f in report["findings"] if f["api"].endswith("_ext.nms") and f["path"] == "ops/nms.py"]
    assert fs and all(f["severity"] not in ("blocker", "manual") for f in fs)
    assert "csrc/npu/nms_npu.cpp:3" in fs[0]["message"]


def test_cuda_only_op_is_unsupported_with_its_kernel(report):
    f = _fn(report, "vislib.ops.carafe.carafe")
    assert f["status"] == "unsupported"
    assert f["reasons"][0].startswith("vislib._ext.carafe_forward") and "carafe_kernel" in f["reasons"][0]


def test_cpu_only_op_is_not_a_cuda_blocker(report):
    f = _fn(report, "vislib.ops.area.box_area")
    assert f["status"] == "needs-migration"
    assert "CPU-only" in f["reasons"][0]


def test_cpu_only_op_with_a_working_fallback_needs_nothing(report):
    # the host-built op runs where the extension is built and the torch fallback where it is not: no migration
    assert _fn(report, "vislib.ops.area.box_area_or_torch") is None


def test_default_off_option_makes_the_caller_conditional(report):
    f = _fn(report, "vislib.ops.carafe.fused_act")
    assert f["status"] == "conditional"
    assert f["conditions"] == ["only when a caller sets `use_custom_op` (off by default, ops/carafe.py:18)"]
    assert f["reasons"][0].startswith("vislib._ext.carafe_forward")


def test_the_librarys_own_npu_branch_wins(report):
    assert _fn(report, "vislib.ops.deform.deform") is None


def test_other_accelerator_branch_is_not_reached_on_npu(report):
    assert _fn(report, "vislib.ops.carafe.sync") is None


def test_monkey_patches_and_function_references_are_not_calls(report):
    apis = {(f["api"], f["line"]) for f in report["findings"] if f["path"] == "ops/pool.py"}
    assert ("torch.nn.functional.adaptive_max_pool2d", 21) in apis    # reported as a finding ...
    assert _fn(report, "vislib.ops.pool.patch") is None               # ... but not a call
    assert _fn(report, "vislib.ops.pool.pool")["status"] == "unsupported"


def test_class_references_and_registrations_are_not_calls(report):
    assert _fn(report, "vislib.ops.pool.RoIPool.forward") is None
    assert _fn(report, "vislib.ops.pool.<module>") is None


def test_unknown_only_where_unknown(report):
    # the library's own method reached through an nn.Module annotation, host-side utilities: not unknown
    assert _fn(report, "vislib.models.build") is None
    assert _fn(report, "vislib.models.odd")["status"] == "unknown"


def test_reading_cuda_home_is_not_a_blocker(report):
    assert any(f["api"].endswith("CUDA_HOME") and f["path"] == "utils.py" for f in report["findings"])
    assert _fn(report, "vislib.utils.env_info") is None


def test_python_value_named_C_is_not_the_compiled_extension(report):
    assert _fn(report, "vislib.config.get_cfg") is None
    assert not [f for f in report["findings"] if f["category"] == "cuda-extension" and f["path"].startswith("config/")]


def test_report_validates(report, report_schema):
    import jsonschema

    jsonschema.validate(report, report_schema)


def test_library_section_and_coverage(report):
    lib = report["thirdparty"]["library"]
    assert lib["npu_support"]["level"] == "partial"
    ev = lib["npu_support"]["evidence"]
    assert "1 of 2 compiled CUDA ops have an NPU implementation registered in the library's sources" in ev
    assert "csrc/npu/nms_npu.cpp:3: NPU implementation nms_npu" in ev
    assert not any("device_registry.hpp" in e for e in ev)   # the macro definition is not a registration
    assert "blocked" in lib["verdict"]
    cov = report["thirdparty"]["coverage"]
    assert cov["resolved_calls"] > 0 and "dynamic_dispatch" in cov
    # the build's module name is linked to PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
    assert [m["module"] for m in report["thirdparty"]["extensions"]["modules"]] == ["vislib._ext"]


def test_symlinked_package_inside_the_tree_is_followed_once(tmp_path, kb):
    from analyse.library import analyse_library

    repo = tmp_path / "repo"
    (repo / "accelerator").mkdir(parents=True)
    (repo / "accelerator" / "__init__.py").write_text("from .real_accelerator import get_accelerator\n")
    (repo / "accelerator" / "real_accelerator.py").write_text(
        "import torch\n\n\ndef get_accelerator():\n    return torch.cuda.jiterator._create_jit_fn('x')\n")
    (repo / "accelerator" / "npu_accelerator.py").write_text(
        "import torch_npu\n\n\nclass NPU_Accelerator(DeepSpeedAccelerator):\n    def device_name(self):\n"
        "        return 'npu'\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    os.symlink("../accelerator", repo / "pkg" / "accelerator")
    (repo / "pkg" / "engine.py").write_text(
        "from pkg.accelerator import get_accelerator\n\n\ndef initialize():\n    return get_accelerator()\n")
    os.symlink(str(tmp_path), repo / "pkg" / "outside")   # leaves the tree
    rep = analyse_library([repo], kb, input_names=["repo"])
    assert not [e for e in rep["errors"] if e["kind"] == "internal"]
    f = _fn(rep, "pkg.engine.initialize")
    assert f is not None and f["status"] == "unsupported"
    assert f["via"] == ["pkg.engine.initialize", "accelerator.real_accelerator.get_accelerator"]
    paths = [p for p in json.dumps(rep["findings"]).split('"path": "')[1:]]
    assert not any(p.startswith("pkg/accelerator/") for p in paths)     # the linked files are analysed once
    npu = rep["thirdparty"]["library"]["npu_support"]
    assert npu["level"] == "native"
    assert any("NPU_Accelerator" in e for e in npu["evidence"])


def test_with_thirdparty_conditional_is_manual_with_the_condition(report, tmp_path, kb):
    from analyse.modes import run_script

    rp = tmp_path / "vislib-report.json"
    rp.write_text(json.dumps(report))
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "train.py").write_text(
        "from vislib.ops import fused_act, carafe\n\n\ny = fused_act(x)\nz = carafe(x, m)\n"
        "w = fused_act(x, use_custom_op=True)\nv = fused_act(x, use_custom_op=False)\n")
    out = run_script([tmp_path / "user"], kb, with_thirdparty=[str(rp)])
    by_line = {f["line"]: f for f in out["findings"] if f["code"] == "NPU450"}
    assert 4 not in by_line and 7 not in by_line     # the call keeps the default-off option off (#20)
    assert by_line[6]["severity"] == "manual" and "use_custom_op" in by_line[6]["message"]
    assert by_line[5]["severity"] == "blocker"


def test_registering_a_function_is_not_calling_it(tmp_path, kb):
    from analyse.library import analyse_library

    lib = tmp_path / "reglib"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "passes.py").write_text("import torch\n\n\ndef schedule(gm):\n    return torch.cuda.jiterator._create_jit_fn('x')\n")
    (lib / "engine.py").write_text(
        "from .passes import schedule\n\n\nclass Engine:\n    def __init__(self):\n"
        "        self.register_compile_pass('prefetch', schedule)\n\n"
        "    def register_compile_pass(self, name, fn):\n        self.passes = {name: fn}\n\n\n"
        "def run(fn, x):\n    return fn(x)\n\n\ndef use():\n    return run(schedule, 1)\n")
    rep = analyse_library([lib], kb)
    assert _fn(rep, "reglib.passes.schedule")["status"] == "unsupported"
    assert _fn(rep, "reglib.engine.Engine.__init__") is None          # registered, not called
    assert _fn(rep, "reglib.engine.use")["status"] == "unsupported"    # a callback that is called


def test_cu_symlink_leaving_the_tree_is_not_followed(tmp_path, kb):
    from analyse.library import analyse_library

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "k.cu").write_text("__global__ void secret_kernel(float* x) {}\n")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "a.py").write_text("import torch\n")
    os.symlink(outside / "k.cu", lib / "k.cu")
    rep = analyse_library([lib], kb)
    assert [e["kind"] for e in rep["errors"] if e["path"] == "k.cu"] == ["io"]
    assert "secret_kernel" not in json.dumps(rep)


def test_load_without_map_location_needs_a_change_not_unsupported(tmp_path, kb):
    # accelerate's Accelerator.load_state: `torch.load(input_scaler_file)` runs on an NPU; only a checkpoint
    # saved on a GPU needs `map_location` (NPU009), so the function needs migration, it is not unsupported
    from analyse.library import analyse_library

    lib = tmp_path / "ckptlib"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "ckpt.py").write_text(
        "import torch\n\n\ndef load_state(path):\n    return torch.load(path)\n\n\n"
        "def resume(path):\n    return load_state(path)\n\n\n"
        "def capability():\n    return torch.cuda.get_device_capability()\n")
    rep = analyse_library([lib], kb)
    assert [f["code"] for f in rep["findings"] if f["line"] == 5] == ["NPU009"]
    for q in ("ckptlib.ckpt.load_state", "ckptlib.ckpt.resume"):
        # NPU009 is advice (#30: it fails only for a checkpoint saved on a GPU): never unsupported
        f = _fn(rep, q)
        assert f is None or f["status"] == "needs-migration", q
    assert _fn(rep, "ckptlib.ckpt.capability")["status"] == "unsupported"


def test_isinstance_against_a_library_that_imports_on_npu_is_not_unsupported(tmp_path, kb):
    # accelerate's utils.bnb.has_4bit_bnb_layers, utils.ao.has_ao_layers and AORecipeKwargs.__post_init__:
    # a lazy import plus isinstance() or a config object runs on an NPU host; the fp8 conversion does not (#20)
    from analyse.library import analyse_library

    lib = tmp_path / "quantlib"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "layers.py").write_text(
        "def has_4bit(model):\n    import bitsandbytes as bnb\n\n"
        "    return any(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())\n\n\n"
        "def has_fp8(model):\n    from torchao.float8.float8_linear import Float8Linear\n\n"
        "    return any(isinstance(m, Float8Linear) for m in model.modules())\n\n\n"
        "def recipe():\n    from torchao.float8 import Float8LinearConfig\n\n"
        "    return Float8LinearConfig(pad_inner_dim=True)\n\n\n"
        "def to_fp8(model):\n    from torchao.float8 import convert_to_float8_training\n\n"
        "    return convert_to_float8_training(model)\n")
    rep = analyse_library([lib], kb)
    for q in ("quantlib.layers.has_4bit", "quantlib.layers.has_fp8", "quantlib.layers.recipe"):
        fn = _fn(rep, q)
        assert fn is None or fn["status"] not in ("unsupported", "conditional"), (q, fn)
    assert _fn(rep, "quantlib.layers.to_fp8")["status"] == "unsupported"
    assert _fn(rep, "quantlib.layers.to_fp8")["reasons"] == ["torchao.float8.convert_to_float8_training"]
