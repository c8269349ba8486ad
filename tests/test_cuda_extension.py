from analyse.passes.cuda_extension import CudaExtensionPass, cuda_kernels
from tests.helpers import analyse_source, codes_by_line

SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension, BuildExtension
setup(name='mypkg', ext_modules=[CUDAExtension('mypkg._C', ['csrc/a.cpp', 'csrc/a_kernel.cu'],
      extra_compile_args={'cxx': ['-O3'], 'nvcc': ['-O3']})],
      cmdclass={'build_ext': BuildExtension})
"""


def _run(tmp_path, kb, src, **kw):
    res = analyse_source(tmp_path, src, kb, passes=[CudaExtensionPass()], **kw)
    return res


def test_setup_and_project_wide_ext_names(tmp_path, kb):
    res = _run(tmp_path, kb, "from mypkg import _C\ny = _C.roi_align(x)\n", name="mypkg/ops.py",
               extra_files={"setup.py": SETUP, "mypkg/__init__.py": "", "mypkg/csrc/a_kernel.cu":
                            "// k\n#include <cuda.h>\n__global__ void roi_kernel(float* x) {}\n"
                            "template <typename T>\n__global__ void __launch_bounds__(256) other_kernel(T* y) {}\n"})
    assert not res.errors, res.errors
    got = sorted((f.path, f.line, f.code, f.severity) for f in res.findings)
    assert ("mypkg/ops.py", 1, "NPU504", "blocker") in got
    assert ("mypkg/ops.py", 2, "NPU504", "blocker") in got
    assert ("setup.py", 3, "NPU501", "blocker") in got
    assert ("setup.py", 4, "NPU503", "blocker") in got
    assert ("setup.py", 5, "NPU501", "blocker") in got
    use = [f for f in res.findings if f.path == "mypkg/ops.py" and f.line == 2][0]
    assert use.api == "mypkg._C.roi_align" and "setup.py:3" in use.message and use.replacement
    cu = [f for f in res.findings if f.code == "NPU507"][0]
    assert cu.line == 3 and "roi_kernel" in cu.message and "other_kernel" in cu.message
    assert cu.snippet.startswith("__global__ void roi_kernel")


def test_jit_load_and_returned_module(tmp_path, kb):
    res = _run(tmp_path, kb, "import os\nfrom torch.utils.cpp_extension import load\n"
                             "ext = load(name='fused', sources=[os.path.join(d, 'fused_kernel.cu')])\n"
                             "y = ext.forward(x)\n")
    got = sorted((f.line, f.code) for f in res.findings)
    assert got == [(3, "NPU502"), (4, "NPU504")]
    assert [f.api for f in res.findings if f.line == 4] == ["fused.forward"]


def test_cpp_only_load_is_not_reported(tmp_path, kb):
    res = _run(tmp_path, kb, "from torch.utils.cpp_extension import load\next = load(name='cpu', sources=['a.cpp'])\n"
                             "y = ext.forward(x)\n")
    assert res.findings == []


def test_torch_ops_custom_namespace(tmp_path, kb):
    res = _run(tmp_path, kb, "import torch\na = torch.ops.aten.mm(x, y)\nb = torch.ops.mylib.gelu.default(x)\n"
                             "torch.ops.load_library('libmy.so')\n")
    got = sorted((f.line, f.code, f.api) for f in res.findings)
    assert got == [(3, "NPU505", "torch.ops.mylib.gelu.default"), (4, "NPU505", "torch.ops.load_library")]


def test_python_module_named_like_kernel_is_not_an_extension(tmp_path, kb):
    res = _run(tmp_path, kb, "import gen_kernel\ngen_kernel.run()\n", extra_files={"gen_kernel.py": "def run():\n    pass\n"})
    assert res.findings == []


def test_a_function_of_a_package_init_named_like_a_kernel_is_not_an_extension(tmp_path, kb):
    # INVALID (old: NPU504 blocker on line 1): `load_fused_kernels` is a def of the package's __init__ (gpt-neox
    # shape), not a compiled submodule of the package
    init = "def load_fused_kernels():\n    pass\n\n\nclass FusedKernels:\n    pass\n"
    res = _run(tmp_path, kb, "from ..fused_kernels import load_fused_kernels, FusedKernels\nload_fused_kernels()\n",
               name="pkg/model/softmax.py",
               extra_files={"pkg/__init__.py": "", "pkg/model/__init__.py": "", "pkg/fused_kernels/__init__.py": init})
    assert [f for f in res.findings if f.code == "NPU504"] == []
    # VALID: a name the package's __init__ does not define, named like a kernel, is still the compiled submodule
    res = _run(tmp_path, kb, "from ..fused_kernels import softmax_cuda\nsoftmax_cuda.forward(x)\n",
               name="pkg/model/softmax.py")
    got = sorted((f.path, f.line, f.code) for f in res.findings if f.code == "NPU504")
    assert got == [("pkg/model/softmax.py", 1, "NPU504"), ("pkg/model/softmax.py", 2, "NPU504")], got


def test_torch_cuda_arch_list_set_where_nothing_is_built_is_advice(tmp_path, kb):
    # INVALID (old: NPU503 blocker): a module's top level sets the variable (gpt-neox megatron/fused_kernels shape); the
    # build it configures, in load(), is reported where it is made. VALID: set inside that build function, it stays
    # the blocker it was
    src = ("import os\nfrom torch.utils import cpp_extension\n\nos.environ['TORCH_CUDA_ARCH_LIST'] = ''\n\n\n"
           "def load():\n    os.environ['TORCH_CUDA_ARCH_LIST'] = '8.0'\n"
           "    return cpp_extension.load(name='k_cuda', sources=['k.cu'])\n")
    res = _run(tmp_path, kb, src, name="pkg/kernels.py", extra_files={"pkg/__init__.py": ""})
    got = sorted((f.line, f.severity) for f in res.findings if f.api == "TORCH_CUDA_ARCH_LIST")
    assert got == [(4, "advice"), (8, "blocker")], got


def test_binary_cu_file_is_an_error(tmp_path, kb):
    (tmp_path / "bad.cu").write_bytes(b"\x00\x01\x02__global__")
    (tmp_path / "latin.cuh").write_bytes("// caf\xe9\n".encode("latin-1"))
    res = _run(tmp_path, kb, "x = 1\n")
    kinds = sorted((e.path, e.kind) for e in res.errors)
    assert kinds == [("bad.cu", "encoding"), ("latin.cuh", "encoding")]
    assert res.findings == []


def test_kernel_regex_ignores_comments():
    text = "// __global__ void old(int)\n/* __global__ void gone() */\n__global__ void\nreal_one(int a) {}\n"
    assert cuda_kernels(text) == [("real_one", 4)]


# ---------------------------------------------------------------- extension names come from the build
SETUP_REASSIGNED = """
import os
import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension


def get_extensions():
    sources = ["csrc/fastops.cpp"]
    extension = CppExtension
    extra = {"cxx": ["-O3"]}
    if torch.cuda.is_available() and CUDA_HOME is not None or os.getenv("FORCE_CUDA", "0") == "1":
        extension = CUDAExtension
        sources += ["csrc/fastops_kernel.cu"]
    return [extension("fastops", sources, extra_compile_args=extra)]


setup(name="toy", ext_modules=get_extensions(), cmdclass={"build_ext": BuildExtension})
"""


def test_reassigned_cuda_extension_makes_calls_cuda_extension_blockers(tmp_path, kb):
    res = analyse_source(tmp_path, """
        import torch
        import fastops


        def gelu(x):
            return fastops.fused_gelu(x)
    """, kb, name="toy/layers.py", extra_files={"setup.py": SETUP_REASSIGNED, "toy/__init__.py": ""})
    by_line = codes_by_line(res.findings, path="toy/layers.py")
    assert by_line.get(3) == ["NPU504"]
    assert by_line.get(7) == ["NPU504"]
    call = next(f for f in res.findings if f.path == "toy/layers.py" and f.line == 7)
    assert call.category == "cuda-extension" and call.severity == "blocker"
    assert "setup.py:15" in call.message
    # never a third-party finding for the project's own extension
    assert not [f for f in res.findings if f.path == "toy/layers.py" and f.category == "third-party"]
    # the build itself: a CUDA build through the reassigned variable
    assert "NPU501" in codes_by_line(res.findings, path="setup.py").get(15, [])


def test_conventional_name_bound_to_a_python_value_is_not_an_extension(tmp_path, kb):
    res = analyse_source(tmp_path, """
        from .defaults import _C


        def get_cfg():
            return _C.clone()
    """, kb, name="det/config/__init__.py", extra_files={
        "det/__init__.py": "",
        "det/config/config.py": "class CfgNode(dict):\n    def clone(self):\n        return CfgNode(self)\n",
        "det/config/defaults.py": "from .config import CfgNode as CN\n\n_C = CN()\n_C.MODEL = CN()\n",
        "det/model.py": "from .config.config import CfgNode as _C\n\n\ndef build(cfg):\n    return _C(cfg)\n",
    })
    assert [f for f in res.findings if f.category == "cuda-extension"] == []


def test_jit_load_name_is_the_extension_module(tmp_path, kb):
    res = analyse_source(tmp_path, """
        from torch.utils.cpp_extension import load

        fused = load(name="fused_ln", sources=["fused_ln.cpp", "fused_ln_kernel.cu"])


        def norm(x):
            return fused.forward(x)
    """, kb, name="pkg/ln.py", extra_files={"pkg/__init__.py": ""})
    by_line = codes_by_line(res.findings, path="pkg/ln.py")
    assert "NPU502" in by_line.get(4, [])
    assert by_line.get(8) == ["NPU504"]


def test_an_extension_loaded_by_importlib_import_module_is_used(tmp_path, kb):
    # openfold shape: `attn = importlib.import_module("attn_core_inplace_cuda")`, a CUDAExtension of the project's
    # setup.py, then `attn.forward_(...)` on the default path: a blocker (VALID); a Python module of the project
    # loaded the same way is not (INVALID)
    import textwrap

    from analyse.modes import run_script

    files = {
        "setup.py": """
            from setuptools import setup
            from torch.utils.cpp_extension import CUDAExtension, BuildExtension
            setup(name="pkg", ext_modules=[CUDAExtension("attn_core_inplace_cuda", ["pkg/attn.cu"])],
                  cmdclass={"build_ext": BuildExtension})
        """,
        "pkg/__init__.py": "",
        "pkg/attn.cu": "__global__ void k() {}\\n",
        "pkg/helpers.py": "def forward_(x):\\n    return x\\n",
        "pkg/core.py": """
            import importlib

            attn = importlib.import_module("attn_core_inplace_cuda")
            helpers = importlib.import_module("pkg.helpers")


            def attention(x):
                attn.forward_(x)
                return helpers.forward_(x)
        """,
        "train.py": "import torch\\nfrom pkg.core import attention\\n\\nif __name__ == '__main__':\\n    attention(torch.ones(2))\\n",
    }
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    rep = run_script([tmp_path], kb)
    uses = [(f["path"], f["api"], f["counted"]) for f in rep["findings"] if f["code"] == "NPU504"]
    # the unguarded import by name stops the module like `import attn_core_inplace_cuda` would (round 39), and the
    # op's use is reported where it is made
    assert uses == [("pkg/core.py", "attn_core_inplace_cuda", True),
                    ("pkg/core.py", "attn_core_inplace_cuda.forward_", True)]
    assert rep["summary"]["verdict"]["effort"] == "blocked"
