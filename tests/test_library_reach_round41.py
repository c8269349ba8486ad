"""Library mode, round 41: reach and dispatch. VALID/INVALID fixtures of the shapes met in the read misses; no
project code copied.

1. A compiled extension named by the build only: ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` in
   ``backend/pybind_cuda.cu`` of the analysed package, the build file one level up (the repository root) declaring
   ``ext_type("pkg.backend", sources)`` with ``ext_type = CUDAExtension if cuda else CppExtension`` (each arm of the
   conditional value a candidate) and sources it computes (a glob, an f-string): the build declares the extension,
   so a call of ``pkg.backend.op`` runs that op (CUDA kernels: unsupported) instead of an unresolved name.
2. A registry of dotted class paths held as strings (``opt_class="apex.optimizers.FusedAdam"``) loaded by a helper
   that imports what its parameter names (``module_name, cls = path.rsplit(".", 1); importlib.import_module(
   module_name)``) inside ``if path.startswith("apex."):``: that branch imports the GPU-only library, under the
   branch's test (an option, the other entries its alternatives): conditional, not a silent pass.
3. A method called on a local bound to one of several classes (``fn = TrainFn if self.trainable else InferFn;
   fn.apply(x)``), the arms project classes or module-level names bound by alternative imports: each class's
   method runs (an autograd Function's ``apply`` its forward), under the alternative's condition.
"""

from __future__ import annotations

import textwrap

from helpers import write_files

SETUP = """
    import glob
    import os

    import torch
    from setuptools import Extension, setup
    from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

    device = "cuda" if torch.cuda.is_available() else "cpu"
    sources = [os.path.join("sparsepkg", "backend", f"pybind_{device}.cu")]
    sources += glob.glob(os.path.join("sparsepkg", "backend", "**", "*"))
    ext_type = {EXT_TYPE}

    setup(name="sparsepkg", ext_modules=[ext_type("sparsepkg.backend", sources)],
          cmdclass={"build_ext": BuildExtension})
"""

BACKEND = {
    "__init__.py": "",
    "backend/pybind_cuda.cu": """
        #include <torch/extension.h>

        __global__ void hash_kernel(long* x) { x[threadIdx.x] += 1; }

        torch::Tensor hash_cuda(torch::Tensor x) { hash_kernel<<<1, 32>>>(x.data_ptr<long>()); return x; }

        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("hash_cuda", &hash_cuda); }
    """,
    "ops.py": """
        import sparsepkg.backend


        def sphash(x):
            return sparsepkg.backend.hash_cuda(x)
    """,
}


def _report(tmp_path, kb, ext_type):
    from analyse.library import analyse_library

    (tmp_path / "setup.py").write_text(textwrap.dedent(SETUP).replace("{EXT_TYPE}", ext_type))
    root = write_files(tmp_path / "sparsepkg", BACKEND, strip_first_newline=True)
    rep = analyse_library([root], kb, input_names=["sparsepkg"])
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_an_extension_built_by_a_conditional_extension_class_in_the_parent_build_is_known(tmp_path, kb):
    # VALID (old: the extension class chosen by an if-expression was no build, TORCH_EXTENSION_NAME stayed unnamed
    # and the call of sparsepkg.backend.hash_cuda could not be resolved: unknown)
    fn = _report(tmp_path, kb, 'CUDAExtension if device == "cuda" else CppExtension')["sparsepkg.ops.sphash"]
    assert fn["status"] == "unsupported", fn
    assert any(r.startswith("sparsepkg.backend.hash_cuda (compiled op bound in backend/pybind_cuda.cu") for r in fn["reasons"]), fn


def test_a_conditional_choice_of_other_callables_declares_no_extension(tmp_path, kb):
    # INVALID: both arms are setuptools' plain Extension, whose sources name no CUDA file: no CUDA/C++ torch build is
    # declared, the module stays unnamed
    fn = _report(tmp_path, kb, 'Extension if device == "cuda" else Extension')["sparsepkg.ops.sphash"]
    assert fn["status"] == "unknown", fn


REGISTRY = {
    "__init__.py": "",
    "factory.py": """
        import importlib

        import torch


        def _load(path):
            module_name, class_name = path.rsplit(".", 1)
            module = importlib.import_module(module_name)
            return getattr(module, class_name)


        def _named(path):
            return {"path": path}


        TABLE = {"sgd": "torch.optim.SGD", "fused_adam": "apex.optimizers.FusedAdam"}


        def get_class(name):
            path = TABLE[name]
            if path.startswith("apex."):
                cls = {LOADER}(path)
            else:
                cls = _load(path)
            return cls


        def create(params, name="sgd"):
            return get_class(name)(params)
    """,
}


def _registry(tmp_path, kb, loader):
    from helpers import library_report

    files = {k: v.replace("{LOADER}", loader) for k, v in REGISTRY.items()}
    rep = library_report(tmp_path, kb, files, "optreg")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_class_path_imported_under_its_prefix_test_is_that_library_under_the_branch(tmp_path, kb):
    # VALID (old: the import of the string's module was invisible; get_class and create were supported)
    by = _registry(tmp_path, kb, "_load")
    for q in ("optreg.factory.get_class", "optreg.factory.create"):
        assert by[q]["status"] == "conditional", by[q]
        assert any("apex" in r for r in by[q]["reasons"]), by[q]


def test_a_helper_that_imports_nothing_under_the_prefix_test_is_no_import(tmp_path, kb):
    # INVALID: the branch hands the path to a function that only wraps it (no import_module): no library runs
    by = _registry(tmp_path, kb, "_named")
    assert "optreg.factory.get_class" not in by or by["optreg.factory.get_class"]["status"] == "supported", by


QUANT = {
    "__init__.py": "",
    "kernels.py": """
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def matmul_kernel(a_ptr, n):
            tl.store(a_ptr, tl.load(a_ptr) + n)


        class TrainFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                matmul_kernel[(1,)](x, 4)
                return x

            @staticmethod
            def backward(ctx, g):
                return g


        class InferFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                matmul_kernel[(1,)](x, 4)
                return x
    """,
    "linear.py": """
        import torch

        {IMPORT}


        class QuantLinear(torch.nn.Module):
            def __init__(self, trainable=False):
                super().__init__()
                self.trainable = trainable

            def forward(self, x):
                {BIND}
                return fn.apply(x)
    """,
}


PLAIN_IMPORT = "from quantlib.kernels import InferFunction, TrainFunction"
GUARDED_IMPORT = """try:
            from quantlib.kernels import InferFunction, TrainFunction
        except ImportError:
            class Fake:
                def __getattr__(self, name):
                    raise ImportError(name)

            TrainFunction = Fake
            InferFunction = Fake"""


def _quant(tmp_path, kb, bind, imp=PLAIN_IMPORT):
    from helpers import library_report

    files = {k: v.replace("{BIND}", bind).replace("{IMPORT}", imp) for k, v in QUANT.items()}
    rep = library_report(tmp_path, kb, files, "quantlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_method_of_a_local_bound_to_one_of_two_classes_runs_each(tmp_path, kb):
    # VALID (old: `fn.apply` on a local bound to an if-expression of two Function classes was no edge: forward
    # looked supported while both Functions run a Triton kernel)
    by = _quant(tmp_path, kb, "fn = TrainFunction if self.trainable else InferFunction")
    fw = by.get("quantlib.linear.QuantLinear.forward")
    assert fw is not None and fw["status"] != "supported", fw
    assert any("InferFunction" in v or "TrainFunction" in v for v in fw["via"]), fw


def test_the_arms_may_be_names_bound_by_alternative_imports(tmp_path, kb):
    # VALID (old: the arms, bound by `try: from .kernels import ...` and a stand-in in the except, resolved to
    # nothing: forward looked supported); the Triton classes run only when the import succeeds
    by = _quant(tmp_path, kb, "fn = TrainFunction if self.trainable else InferFunction", GUARDED_IMPORT)
    fw = by.get("quantlib.linear.QuantLinear.forward")
    assert fw is not None and fw["status"] in ("conditional", "unsupported"), fw
    assert any("kernel" in r for r in fw["reasons"]), fw


def test_a_local_bound_to_something_else_is_no_class_dispatch(tmp_path, kb):
    # INVALID: the local holds a plain torch function choice (no project class): nothing of the kernels runs
    by = _quant(tmp_path, kb, "fn = torch.relu if self.trainable else torch.sigmoid\n                fn = type('F', (), {'apply': staticmethod(fn)})")
    fw = by.get("quantlib.linear.QuantLinear.forward")
    assert fw is None or fw["status"] == "supported", fw


SEQUENTIAL = {
    "__init__.py": "",
    "blocks.py": """
        import torch
        from torch import nn


        class Block(nn.Module):
            def forward(self, x):
                return torch.cuda.comm.broadcast(x, [0, 1])
    """,
    "net.py": """
        from torch import nn

        from seqlib.blocks import Block


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Sequential({STEM})
                self.spare = Block()

            def forward(self, x):
                return self.stem(x)
    """,
}


def _seq(tmp_path, kb, stem):
    from helpers import library_report

    files = {k: v.replace("{STEM}", stem) for k, v in SEQUENTIAL.items()}
    rep = library_report(tmp_path, kb, files, "seqlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_calling_a_sequential_runs_every_module_built_into_it(tmp_path, kb):
    # VALID (old: `self.stem(x)` on an nn.Sequential ran nothing of the project: forward looked supported)
    fw = _seq(tmp_path, kb, "Block(), nn.ReLU()").get("seqlib.net.Net.forward")
    assert fw is not None and fw["status"] == "unsupported", fw


def test_a_sequential_of_torch_modules_runs_no_project_block(tmp_path, kb):
    # INVALID: the Sequential holds torch modules only; the Block kept on another attribute is not called
    fw = _seq(tmp_path, kb, "nn.ReLU(), nn.Identity()").get("seqlib.net.Net.forward")
    assert fw is None or fw["status"] == "supported", fw
