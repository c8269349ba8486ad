"""Library mode: kernels reached through a kernel loader (stop 43).

A library keeps its compiled kernels behind a loader: builder classes say how to build or load each kernel
(``CUDAExtension`` ahead of time, ``cpp_extension.load`` just in time, an NPU implementation through torch_npu), and
a loader class lists its builders in a class attribute that its ``load()`` reads (``CHOICES = [AdamGpu]``), taking
the one usable where it runs. ``AdamLoader().load()`` then hands back the extension module, and calls on it are its
ops. The call of the loader is judged by what its builders build, each builder's methods resolved along its MRO
(a subclass that overrides the C++ build with a CUDA one builds CUDA):

INVALID (these were ``supported``: the loader's ``load()`` iterates builders the call graph cannot follow):
a function that loads from a loader whose builders all build CUDA extensions is ``unsupported``; behind a
default-off option it is ``conditional``; a loader with a CUDA builder beside a C++ one for the host is
``conditional`` on the host.

VALID: a loader with an NPU builder (torch_npu) serves an NPU host (supported); a loader whose builders build
nothing (a pure-torch "builder") is no kernel load.

The package is analysed from its source checkout, and its builders live outside the package folder, behind a
symlink into the checkout (as a wheel built there would copy them in): thirdparty follows such links
(:func:`analyse.files.package_checkout`), never one that leaves the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import library_report, write_files

BUILDERS = {
    "__init__.py": "",
    "base.py": """
        import importlib
        from torch.utils.cpp_extension import CppExtension, CUDAExtension, load


        class Builder:
            def __init__(self, name):
                self.name = name

            def usable(self):
                raise NotImplementedError

            def build(self):
                raise NotImplementedError

            def load(self):
                try:
                    return importlib.import_module(f"kpkg._ops.{self.name}")
                except ImportError:
                    return self.build()


        class HostBuilder(Builder):
            def build(self):
                return load(name=self.name, sources=self.sources())

            def setup_ext(self):
                return CppExtension(self.name, self.sources())


        class GpuBuilder(HostBuilder):
            def usable(self):
                import torch
                return torch.cuda.is_available()

            def build(self):
                return load(name=self.name, sources=self.sources(), extra_cuda_cflags=["-O3"])

            def setup_ext(self):
                return CUDAExtension(self.name, self.sources())
    """,
    "kinds.py": """
        import platform
        from .base import Builder, GpuBuilder, HostBuilder


        class AdamGpu(GpuBuilder):
            def __init__(self):
                super().__init__("adam_gpu")

            def sources(self):
                return ["adam.cu"]


        class AdamArm(HostBuilder):
            def __init__(self):
                super().__init__("adam_arm")

            def usable(self):
                return platform.machine() == "aarch64"

            def sources(self):
                return ["adam_arm.cpp"]


        class AttnAscend(Builder):
            def __init__(self):
                super().__init__("attn_ascend")

            def usable(self):
                try:
                    import torch_npu
                    return True
                except ImportError:
                    return False

            def load(self):
                def attn(q, k, v):
                    import torch_npu
                    return torch_npu.npu_fusion_attention(q, k, v, 1, "BNSD")[0]
                return attn


        class AttnGpu(GpuBuilder):
            def __init__(self):
                super().__init__("attn_gpu")

            def sources(self):
                return ["attn.cu"]


        class PlainTorch(Builder):
            def usable(self):
                return True

            def load(self):
                import torch
                return torch.softmax
    """,
}

PACKAGE = {
    "__init__.py": "",
    "loader.py": """
        from typing import List
        from .builders.kinds import AdamArm, AdamGpu, AttnAscend, AttnGpu, PlainTorch


        class Loader:
            CHOICES: List[type] = []

            def load(self):
                found = [b() for b in self.__class__.CHOICES]
                found = [b for b in found if b.usable()]
                assert found, "no kernel"
                return found[0].load()


        class AdamLoader(Loader):
            CHOICES = [AdamGpu]


        class HostAdamLoader(Loader):
            CHOICES = [AdamGpu, AdamArm]


        class AttnLoader(Loader):
            CHOICES = [AttnAscend, AttnGpu]


        class SoftmaxLoader(Loader):
            CHOICES = [PlainTorch]
    """,
    "optim.py": """
        import torch
        from .loader import AdamLoader, AttnLoader, HostAdamLoader, SoftmaxLoader

        _kernel = None


        class FusedAdam:
            def __init__(self, params):
                self.params = params
                ops = AdamLoader().load()
                self.step_op = ops.adam_step


        class HostAdam:
            def __init__(self, params):
                ops = HostAdamLoader().load()
                self.step_op = ops.adam_step


        def attention(q, k, v):
            fn = AttnLoader().load()
            return fn(q, k, v)


        def softmax(x):
            return SoftmaxLoader().load()(x)


        def cumsum(x, use_kernel: bool = False):
            global _kernel
            if use_kernel:
                if _kernel is None:
                    _kernel = AdamLoader().load()
                return _kernel.cumsum(x)
            return torch.cumsum(x, 0)
    """,
}


def _statuses(rep):
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def _check(by):
    got = by["kpkg.optim.FusedAdam.__init__"]
    assert got["status"] == "unsupported", got
    assert got["reasons"] == ["kpkg.loader.AdamLoader.load (a kernel loader whose builders build CUDA extensions only: "
                              "AdamGpu; none builds an NPU kernel)"], got
    got = by["kpkg.optim.HostAdam.__init__"]
    assert got["status"] == "conditional", got
    assert "AdamGpu build CUDA extensions, AdamArm a C++ one for the host" in got["reasons"][0], got
    assert got["conditions"] == ["only where the loader takes AdamGpu (its CUDA builder; the host decides which "
                                 "builder is usable)"], got
    got = by["kpkg.optim.cumsum"]
    assert got["status"] == "conditional", got
    assert got["conditions"] == ["only when a caller sets `use_kernel` (off by default, optim.py:31)"], got
    # VALID: an NPU builder serves the NPU host; a builder that builds nothing is no kernel load
    assert "kpkg.optim.attention" not in by, by.get("kpkg.optim.attention")
    assert "kpkg.optim.softmax" not in by, by.get("kpkg.optim.softmax")


def test_a_kernel_loader_is_judged_by_what_its_builders_build(tmp_path, kb):
    files = dict(PACKAGE)
    files.update({f"builders/{k}": v for k, v in BUILDERS.items()})
    _check(_statuses(library_report(tmp_path, kb, files, "kpkg")))


def test_the_linker_reads_builder_kinds_along_the_mro(tmp_path, kb):
    from analyse.library import analyse_library_data

    files = dict(PACKAGE)
    files.update({f"builders/{k}": v for k, v in BUILDERS.items()})
    root = write_files(tmp_path / "kpkg", files, strip_first_newline=True)
    linker = analyse_library_data([root], kb).callgraph.linker
    assert linker.builder_kinds("kpkg.builders.base.HostBuilder") == ("cpp",)
    # GpuBuilder overrides both builds with CUDA ones: the C++ build it inherits the names of never runs
    assert linker.builder_kinds("kpkg.builders.base.GpuBuilder") == ("cuda",)
    assert linker.builder_kinds("kpkg.builders.kinds.AdamGpu") == ("cuda",)
    assert linker.builder_kinds("kpkg.builders.kinds.AdamArm") == ("cpp",)
    assert linker.builder_kinds("kpkg.builders.kinds.AttnAscend") == ("npu",)   # torch_npu in a nested function
    assert linker.builder_kinds("kpkg.builders.kinds.PlainTorch") == ()
    attr, entries = linker.kernel_loader("kpkg.loader.HostAdamLoader", "load")
    assert attr == "CHOICES"
    assert entries == (("kpkg.builders.kinds.AdamGpu", ("cuda",)), ("kpkg.builders.kinds.AdamArm", ("cpp",)))
    assert linker.kernel_loader("kpkg.loader.SoftmaxLoader", "load") is None
    assert linker.kernel_loader("kpkg.loader.AdamLoader", "__init__") is None


needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="needs POSIX symlinks")


@needs_symlinks
def test_builders_behind_a_symlink_into_the_package_checkout_are_read(tmp_path, kb):
    from analyse.library import analyse_library

    checkout = tmp_path / "checkout"
    write_files(checkout / "kpkg", PACKAGE, strip_first_newline=True)
    write_files(checkout / "builders", BUILDERS, strip_first_newline=True)
    (checkout / "setup.py").write_text("from setuptools import setup\nsetup(name='kpkg')\n")
    (checkout / "kpkg" / "builders").symlink_to(Path("..") / "builders", target_is_directory=True)
    rep = analyse_library([checkout / "kpkg"], kb, input_names=["kpkg"])
    assert not [e for e in rep["errors"] if e["kind"] == "io"], rep["errors"]
    _check(_statuses(rep))


@needs_symlinks
def test_only_a_checkout_with_a_build_file_and_only_links_inside_it_are_followed(tmp_path):
    from analyse.files import discover, package_checkout

    checkout = tmp_path / "checkout"
    (checkout / "pkg").mkdir(parents=True)
    (checkout / "pkg" / "__init__.py").write_text("")
    (checkout / "shared").mkdir()
    (checkout / "shared" / "ops.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("y = 2\n")
    (checkout / "pkg" / "shared").symlink_to(Path("..") / "shared", target_is_directory=True)
    (checkout / "pkg" / "evil.py").symlink_to(outside / "evil.py")
    root = os.path.realpath(checkout / "pkg")
    # no build file next to the package: not a checkout, nothing outside the package is read
    assert package_checkout(root) is None
    errors: list = []
    assert [r for _p, _r, r, _m in discover([checkout / "pkg"], (".py",), errors, package_links=True)] == ["__init__.py"]
    assert {e.path for e in errors} == {"evil.py", "shared"}
    (checkout / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    assert package_checkout(root) == os.path.realpath(checkout)
    errors = []
    found = discover([checkout / "pkg"], (".py",), errors, package_links=True)
    assert [(r, m) for _p, _r, r, m in found] == [("__init__.py", "pkg"), ("shared/ops.py", "pkg.shared.ops")]
    assert [(e.path, e.message.split(" (")[0]) for e in errors] == [("evil.py", "symlink leaves the tree")]
    # script mode (no package_links) keeps the tree to the analysed folder
    errors = []
    assert [r for _p, _r, r, _m in discover([checkout / "pkg"], (".py",), errors)] == ["__init__.py"]
    assert {e.path for e in errors} == {"evil.py", "shared"}
