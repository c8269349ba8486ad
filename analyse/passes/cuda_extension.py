"""cuda-extension: the project's own CUDA code (compiled extensions, JIT builds, Triton kernels, .cu files).

Detects

* build files: ``CUDAExtension`` (and ``setuptools.Extension`` with ``.cu``
  sources), ``BuildExtension`` next to them, ``torch.utils.cpp_extension.CUDA_HOME``,
  nvcc flags (``extra_compile_args={'nvcc': ...}``), ``TORCH_CUDA_ARCH_LIST``;
* JIT builds: ``torch.utils.cpp_extension.load`` / ``load_inline`` with CUDA
  sources (``.cu`` files, ``cuda_sources=``, ``with_cuda=True``);
* imports and EVERY use of the project's compiled extension modules: the
  names learnt from ``ext_modules`` in setup.py (project-wide pre-scan cached in
  ``project.store``), the ``_C`` / ``_ext`` convention, ``*_cuda`` /
  ``*_cuda_ext`` / ``*_kernel`` modules that are not Python files of the
  project, ``torch.ops.<ns>.<op>`` for non-builtin namespaces and the values
  returned by ``load(...)`` (``ext = load(...); ext.forward(x)``);
* ``@triton.jit`` kernels and their launches (``kernel[grid](...)``);
* ``.cu`` / ``.cuh`` files (file-level finding naming their ``__global__`` kernels).

Everything is a ``blocker``: CUDA kernels need an NPU implementation (an
Ascend C operator registered through op-plugin / torch_npu) or a rewrite with
torch / torch_npu ops. Binary or undecodable ``.cu`` files become ``errors``
entries. GPU-only *third-party* extension modules (amp_C, flash_attn_2_cuda
...) are reported by the third-party pass instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

from astroid import nodes

from analyse.cpp_syntax import cuda_kernels
from analyse.passes._oplib import describe, op_devices, runs_on_npu
from analyse.findings import AnalysisError, Finding, Rule
from analyse.passes import ModuleContext, Pass, ProjectContext, nodes_of, walk
from analyse.syntax import own_bindings

STORE_KEY = "cuda-extension"
FIX_OP = ("implement the operator for Ascend (Ascend C kernel registered through op-plugin / a torch_npu custom op), "
          "or rewrite it with torch / torch_npu ops")

R_BUILD = Rule(
    code="NPU501", name="cuda-extension-build", category="cuda-extension", severity="blocker",
    summary="A CUDA extension is built (`CUDAExtension`, `.cu` sources, `BuildExtension` for CUDA code).",
    why="The extension is compiled with nvcc against the CUDA runtime; there is no nvcc or CUDA runtime on an Ascend "
        "host, so the build fails and the kernels have no NPU implementation.",
    example="ext_modules=[CUDAExtension('mypkg._C', ['csrc/roi_align.cpp', 'csrc/roi_align_kernel.cu'])]",
    fix="# build the C++ part as a CppExtension and port the kernels to Ascend C (op-plugin),\n"
        "# or replace the operator with torch / torch_npu ops",
)
R_JIT = Rule(
    code="NPU502", name="cuda-jit-extension", category="cuda-extension", severity="blocker",
    summary="`torch.utils.cpp_extension.load` / `load_inline` compiles CUDA sources at run time.",
    why="JIT compilation of `.cu` sources or `cuda_sources=` needs nvcc and a CUDA device.",
    example="ext = load(name='fused', sources=['fused.cpp', 'fused_kernel.cu'])",
    fix="# port the kernel to an Ascend C operator, or use torch / torch_npu ops instead of the extension",
)
R_TOOLCHAIN = Rule(
    code="NPU503", name="cuda-toolchain-config", category="cuda-extension", severity="blocker",
    summary="CUDA toolchain configuration: `CUDA_HOME`, nvcc flags, `TORCH_CUDA_ARCH_LIST`.",
    why="These only configure nvcc builds; on Ascend they are meaningless (CUDA_HOME is None) and code that "
        "requires them fails.",
    example="extra_compile_args={'cxx': ['-O3'], 'nvcc': ['-O3', '--use_fast_math']}",
    fix="extra_compile_args={'cxx': ['-O3']}   # C++ only; NPU kernels are built with the CANN toolchain",
)
R_EXT_USE = Rule(
    code="NPU504", name="compiled-cuda-extension-use", category="cuda-extension", severity="blocker",
    summary="The project's compiled CUDA extension module is imported or called.",
    why="Each call runs a CUDA kernel of the extension. Without an NPU build of the extension the import fails, "
        "and every call site needs an NPU implementation or a replacement.",
    example="from . import _C\nout = _C.roi_align_forward(x, rois, 7, 7, 1.0, 2, True)",
    fix="out = torchvision.ops.roi_align(x, rois, 7, 1.0, 2, True)   # or an Ascend C operator",
)
R_TORCH_OPS = Rule(
    code="NPU505", name="custom-torch-op", category="cuda-extension", severity="blocker",
    summary="A custom operator `torch.ops.<namespace>.<op>` (not aten / prims) or `torch.ops.load_library`.",
    why="Custom operators are registered by the project's (or a library's) compiled extension, usually with "
        "only a CUDA kernel; the NPU dispatch key has no implementation.",
    example="y = torch.ops.mylib.fused_gelu(x)",
    fix="# register an NPU (PrivateUse1) implementation of mylib::fused_gelu, or call torch ops instead",
)
R_TRITON = Rule(
    code="NPU506", name="triton-kernel", category="cuda-extension", severity="blocker",
    summary="A Triton kernel (`@triton.jit`) is defined or launched (`kernel[grid](...)`).",
    why="Triton compiles for NVIDIA/AMD GPUs; transfer_to_npu treats Triton as unavailable and lists Triton "
        "kernels among what it does not handle.",
    example="@triton.jit\ndef add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    ...\nadd_kernel[grid](x, y, n, BLOCK=1024)",
    fix="out = x + y   # express the kernel with torch / torch_npu ops, or write an Ascend C operator",
)
R_CU_FILE = Rule(
    code="NPU507", name="cuda-source-file", category="cuda-extension", severity="blocker",
    summary="A CUDA source file (`.cu` / `.cuh`) and the kernels it defines.",
    why="CUDA C++ kernels (`__global__`) do not run on Ascend NPUs; each needs an Ascend C implementation "
        "or a replacement by existing operators.",
    example="__global__ void roi_align_forward_kernel(const float* input, ...)",
    fix="# port to Ascend C (op-plugin) or replace the operator",
)

BUILTIN_OP_NS = {
    "aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed", "rngprims", "higher_order",
    "_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "c10d", "_dtensor", "profiler", "mkldnn",
    "_caffe2", "debugprims", "_test", "inductor", "_inductor_test", "npu", "npu_graph", "torchvision", "image",
    "torchaudio", "_torch_testing", "hpu", "torch_mlu", "mlu", "xpu", "habana", "ipex", "torch_ipex", "neuron", "_functorch", "_higher_order_ops", "_mkldnn", "onednn", "_native",
    "_quantized_decomposed", "_export", "_prims", "_refs", "_nvfuser", "symm_mem", "_allgather_base",
}
_OPS_ATTRS = {"load_library", "import_module", "loaded_libraries"}
NON_PROJECT_TOPS = {"torch", "torch_npu", "torchvision", "torchaudio", "torchtext", "functorch", "triton", "numpy",
                    "jax", "tensorflow"}
_EXT_SUFFIXES = ("_cuda", "_cuda_ext", "_kernel", "_kernels", "_cuda_kernel", "_cuda_kernels", "_ext_cuda")
_CONVENTION_NAMES = {"_C", "_ext", "_cuda", "_cuda_ext"}
_TRITON_DECORATORS = ("triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit.jit",
                      "triton.runtime.autotuner.autotune")
_CUDA_EXT_CALLS = {"torch.utils.cpp_extension.CUDAExtension"}
_CPP_EXT_CALLS = {"torch.utils.cpp_extension.CppExtension"}
_SETUPTOOLS_EXT = {"setuptools.Extension", "distutils.core.Extension", "setuptools.extension.Extension",
                   "distutils.extension.Extension"}
_LOAD_CALLS = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}
_BUILD_EXT = {"torch.utils.cpp_extension.BuildExtension"}
_CUDA_HOME = {"torch.utils.cpp_extension.CUDA_HOME", "torch.utils.cpp_extension.CUDNN_HOME"}
_LOAD_EXT_FUNCS = {"load_ext"}  # mmcv: ext_module = ext_loader.load_ext('_ext', [...])


def _is_cuda_path(s: str) -> bool:
    s = s.strip().lower()
    return s.endswith((".cu", ".cuh"))


def _const_strings(node) -> List[str]:
    return [n.value for n in walk(node) if isinstance(n, nodes.Const) and isinstance(n.value, str)]


def _kw(call: nodes.Call, name: str, pos: Optional[int] = None):
    for k in call.keywords or ():
        if k.arg == name:
            return k.value
    if pos is not None and pos < len(call.args):
        return call.args[pos]
    return None


def _expand(node, r, depth: int = 0):
    """The node, or the value a plain name is bound to (one hop)."""
    if isinstance(node, nodes.Name) and depth < 3:
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return node
        for d in defs:
            if isinstance(d, nodes.AssignName):
                v = r.assigned_value(d)
                if v is not None:
                    return _expand(v, r, depth + 1)
    return node


def _has_cuda_sources(call: nodes.Call, r) -> bool:
    for name, pos in (("sources", 1), ("cuda_sources", None)):
        v = _kw(call, name, pos)
        if v is None:
            continue
        if name == "cuda_sources":
            return True
        v = _expand(v, r)
        if any(_is_cuda_path(s) for s in _const_strings(v)):
            return True
        # glob('*.cu') / os.path.join(..., '*.cu')
        if any(s.strip().endswith(("*.cu", ".cu")) for s in _const_strings(v)):
            return True
    wc = _kw(call, "with_cuda")
    if isinstance(wc, nodes.Const) and wc.value is True:
        return True
    return False


@dataclass
class ProjectScan:
    ext_names: Dict[str, Tuple[str, int]] = field(default_factory=dict)   # full module name -> (file, line)
    ext_leaves: Dict[str, Tuple[str, int]] = field(default_factory=dict)  # last component -> (file, line)
    cpp_names: Set[str] = field(default_factory=set)
    triton_kernels: Set[str] = field(default_factory=set)                 # qualnames
    python_modules: Set[str] = field(default_factory=set)
    plain_modules: Set[str] = field(default_factory=set)                  # non-package Python modules
    values: Set[str] = field(default_factory=set)                         # module-level names bound to values
    reexports: Dict[str, str] = field(default_factory=dict)               # mod.name -> source module (from-imports)
    # (name, "cuda" | "cpp", sources as written, build file, line) of every extension the build declares
    builds: List[Tuple[str, str, Tuple[str, ...], str, int]] = field(default_factory=list)
    third_party: object = None


def _ext_name(call: nodes.Call, r) -> List[str]:
    v = _kw(call, "name", 0)
    if v is None:
        return []
    vals = r.strings(v) or set()
    return [s for s in vals if s and "{}" not in s]


def ext_kind(call: nodes.Call, r) -> Optional[str]:
    """"cuda" / "cpp" when *call* builds an extension: ``CUDAExtension(...)``,
    ``CppExtension(...)``, ``setuptools.Extension`` with ``.cu`` sources, or a
    variable bound to one of them (``extension = CppExtension; if cuda:
    extension = CUDAExtension; extension(name=...)`` is a CUDA build)."""
    q = r.qualname(call.func)
    if q in _CUDA_EXT_CALLS:
        return "cuda"
    if q in _CPP_EXT_CALLS:
        return "cpp"
    if q in _SETUPTOOLS_EXT:
        return "cuda" if _has_cuda_sources(call, r) else None
    if q is None and isinstance(call.func, nodes.Name):
        try:
            defs = own_bindings(call.func, call.func.name)
        except Exception:
            return None
        kinds = set()
        for d in defs:
            if isinstance(d, nodes.AssignName):
                v = r.assigned_value(d)
                vq = r.qualname(v) if isinstance(v, (nodes.Name, nodes.Attribute)) else None
                if vq in _CUDA_EXT_CALLS:
                    kinds.add("cuda")
                elif vq in _CPP_EXT_CALLS:
                    kinds.add("cpp")
        if "cuda" in kinds:
            return "cuda"
        if "cpp" in kinds:
            return "cpp"
    return None


_SOURCE_RE = re.compile(r"(?:^|[\\/*])[\w*.-]*\.(?:cu|cuh|cpp|cc|cxx|c)$")


def _source_strings(call: nodes.Call, r) -> Tuple[str, ...]:
    v = _kw(call, "sources", 1)
    if v is None:
        return ()
    v = _expand(v, r)
    out = []
    for s in _const_strings(v):
        if _SOURCE_RE.search(s.strip()):
            out.append(s.strip())
    for n in walk(v):  # sources = main + glob(...) + [...]: names bound to lists in the same scope
        if isinstance(n, nodes.Name) and n is not v:
            for s in _const_strings(_expand(n, r)):
                if _SOURCE_RE.search(s.strip()) and s.strip() not in out:
                    out.append(s.strip())
    return tuple(out)


def _scan_file(sf, index, scan: ProjectScan) -> None:
    from analyse.resolve import Resolver

    text = sf.text
    want_ext = "Extension" in text or "cpp_extension" in text
    want_triton = "triton" in text
    if sf.tree is not None:
        for node in sf.tree.body:
            if isinstance(node, (nodes.Assign, nodes.AnnAssign)):
                targets = node.targets if isinstance(node, nodes.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, nodes.AssignName) and sf.modname:
                        scan.values.add(f"{sf.modname}.{t.name}")
            elif isinstance(node, nodes.ImportFrom) and node.level and sf.modname:
                pkg = sf.modname if sf.is_package_init else sf.modname.rpartition(".")[0]
                base_parts = pkg.split(".")[:len(pkg.split(".")) - (node.level - 1)] if node.level > 1 else pkg.split(".")
                base = ".".join(p for p in base_parts + ([node.modname] if node.modname else []) if p)
                for name, asname in node.names:
                    if name != "*" and node.modname:
                        scan.reexports[f"{sf.modname}.{asname or name}"] = base
    if not (want_ext or want_triton):
        return
    r = Resolver(sf.tree, sf.modname, index, is_package=sf.is_package_init)
    helper_funcs: Set[str] = set()
    for node in nodes_of(sf.tree, nodes.Call, nodes.FunctionDef):
        if want_ext and isinstance(node, nodes.Call):
            kind = ext_kind(node, r)
            q = r.qualname(node.func)
            if kind is None and q in _LOAD_CALLS:
                kind = "cuda" if _has_cuda_sources(node, r) else "cpp"
            if kind is None:
                continue
            names = _ext_name(node, r)
            for n in names:
                scan.builds.append((n, kind, _source_strings(node, r), sf.relpath, node.lineno))
            if kind == "cuda":
                for n in names:
                    scan.ext_names.setdefault(n, (sf.relpath, node.lineno))
                    scan.ext_leaves.setdefault(n.rsplit(".", 1)[-1], (sf.relpath, node.lineno))
                fn = node.scope()
                if isinstance(fn, nodes.FunctionDef) and q not in _LOAD_CALLS:
                    helper_funcs.add(fn.name)
            else:
                scan.cpp_names.update(names)
        elif want_triton and isinstance(node, nodes.FunctionDef) and node.decorators is not None:
            for d in node.decorators.nodes:
                if r.qualname(d.func if isinstance(d, nodes.Call) else d) in _TRITON_DECORATORS:
                    scan.triton_kernels.add(node.qname())
                    break
    if helper_funcs:  # make_cuda_ext(name='roi_align_cuda', module='mmdet.ops.roi_align', sources=[...])
        for node in nodes_of(sf.tree, nodes.Call):
            if isinstance(node.func, nodes.Name) and node.func.name in helper_funcs:
                names = _ext_name(node, r)
                mod = _kw(node, "module")
                mods = (r.strings(mod) or set()) if mod is not None else set()
                for n in names:
                    scan.ext_leaves.setdefault(n.rsplit(".", 1)[-1], (sf.relpath, node.lineno))
                    scan.ext_names.setdefault(n, (sf.relpath, node.lineno))
                    full = [f"{m}.{n}" for m in mods] or [n]
                    for fn_ in full:
                        scan.ext_names.setdefault(fn_, (sf.relpath, node.lineno))
                        scan.builds.append((fn_, "cuda", _source_strings(node, r), sf.relpath, node.lineno))


def scan_leaves(scan: ProjectScan) -> Set[str]:
    leaves = getattr(scan, "_leaves", None)
    if leaves is None:
        leaves = {m.rsplit(".", 1)[-1] for m in scan.python_modules}
        scan._leaves = leaves  # type: ignore[attr-defined]
    return leaves


EXTRA_KEY = "cuda-extension-extra"   # project.store: [(relpath, prescan data)] of build files outside the tree


def _prescan_data(scan: ProjectScan):
    """The canonical (ordered, picklable) form of one module's share of the scan."""
    if not (scan.ext_names or scan.ext_leaves or scan.cpp_names or scan.triton_kernels or scan.values
            or scan.reexports or scan.builds):
        return None
    return (tuple(scan.ext_names.items()), tuple(scan.ext_leaves.items()), tuple(sorted(scan.cpp_names)),
            tuple(sorted(scan.triton_kernels)), tuple(sorted(scan.values)), tuple(sorted(scan.reexports.items())),
            tuple(scan.builds))


def prescan_build_file(sf, index) -> object:
    """Prescan data of a build file that is not part of the analysed tree (``../setup.py``)."""
    scan = ProjectScan()
    _scan_file(sf, index, scan)
    return _prescan_data(scan)


def project_scan(project: ProjectContext, prescans=None) -> ProjectScan:
    """The project-wide scan: from the modules' prescan data when given (the pipeline's
    combine step), else (direct callers) by scanning the trees in ``project.files``."""
    scan = project.store.get(STORE_KEY)
    if isinstance(scan, ProjectScan) and prescans is None:
        return scan
    scan = ProjectScan()
    modules = dict(getattr(project, "modules", None) or {})
    for rel, sf in project.files.items():
        modules.setdefault(rel, sf.modname)
    for rel, mod in modules.items():
        if mod:
            scan.python_modules.add(mod)
            if rel.rsplit("/", 1)[-1] != "__init__.py":
                scan.plain_modules.add(mod)
    if prescans is not None:
        for _rel, data in list(prescans) + list(project.store.get(EXTRA_KEY) or ()):
            if data is None:
                continue
            ext_names, ext_leaves, cpp_names, triton, values, reexports, builds = data
            for k, v in ext_names:
                scan.ext_names.setdefault(k, v)
            for k, v in ext_leaves:
                scan.ext_leaves.setdefault(k, v)
            scan.cpp_names.update(cpp_names)
            scan.triton_kernels.update(triton)
            scan.values.update(values)
            scan.reexports.update(dict(reexports))
            scan.builds.extend(builds)
    for sf in project.files.values() if prescans is None else ():
        if sf.tree is not None:
            try:
                _scan_file(sf, project.index, scan)
            except RecursionError:  # pragma: no cover - pathological trees
                continue
    try:
        from analyse.passes.third_party import lib_table

        scan.third_party = lib_table(project.kb)
    except Exception:  # the third-party data is validated (and reported) by its own pass
        scan.third_party = False
    project.store[STORE_KEY] = scan
    return scan


def registered_devices(project: ProjectContext, q: str):
    """Device classes of the project's ``torch.library`` kernels for the op *q* calls (the compiled-code
    pass collects them before any module is analysed); None when it registers none."""
    regs = project.store.get("torch-library")
    return op_devices(regs, q) if regs else None


class CudaExtensionPass(Pass):
    name = "cuda-extension"
    rules = (R_BUILD, R_JIT, R_TOOLCHAIN, R_EXT_USE, R_TORCH_OPS, R_TRITON, R_CU_FILE)
    file_suffixes = (".cu", ".cuh")

    VALID = (
        "from torch.utils.cpp_extension import CppExtension, BuildExtension\n"
        "ext = CppExtension('mypkg._cpu', ['csrc/op.cpp'])\n",
        "import torch\ny = torch.ops.aten.add(x, x)\nz = torch.ops.npu.npu_format_cast(x, 2)\n",
        "# from . import _C\n'''Calls _C.nms on the GPU.'''\nimport torch\n",
    )
    INVALID = (
        "from torch.utils.cpp_extension import CUDAExtension, BuildExtension, CUDA_HOME  # expect: NPU503\n"
        "ext = CUDAExtension('mypkg._C', ['a.cpp', 'b.cu'],  # expect: NPU501\n"
        "                    extra_compile_args={'cxx': ['-O3'], 'nvcc': ['-O3']})  # expect: NPU503\n"
        "cmd = {'build_ext': BuildExtension}  # expect: NPU501\n",
        "from torch.utils.cpp_extension import load\n"
        "ext = load(name='fused', sources=['fused.cpp', 'fused_kernel.cu'])  # expect: NPU502\n"
        "y = ext.forward(x)  # expect: NPU504\n",
        "from . import _C  # expect: NPU504\nout = _C.nms(boxes, scores, 0.5)  # expect: NPU504\n",
        "import torch\ny = torch.ops.mylib.fused_gelu(x)  # expect: NPU505\n",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef add_kernel(x, y, n, BLOCK: tl.constexpr):  # expect: NPU506\n"
        "    pid = tl.program_id(0)\n\nadd_kernel[(4,)](a, b, 8, BLOCK=1024)  # expect: NPU506\n",
    )

    # ------------------------------------------------------------------ project scan
    def prescan(self, ctx: ModuleContext):
        scan = ProjectScan()
        try:
            _scan_file(ctx.source, ctx.resolver.index, scan)
        except RecursionError:  # pragma: no cover - pathological trees
            return None
        return _prescan_data(scan)

    def combine(self, project: ProjectContext, prescans) -> None:
        project_scan(project, prescans)

    # ------------------------------------------------------------------ python modules
    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        scan = project_scan(ctx.project)
        r = ctx.resolver
        text = ctx.source.text
        triton = "triton" in text   # once per file: a search of the whole text per decorated def was 1% of a run
        load_vars: Dict[int, Tuple[str, int]] = {}   # id(AssignName) -> (ext name, line)
        ext_imports: Dict[int, str] = {}             # id(import node) -> module name
        for node in nodes_of(ctx.tree, nodes.Call, nodes.Import, nodes.ImportFrom, nodes.Dict, nodes.Subscript,
                             nodes.FunctionDef):
            if isinstance(node, nodes.Call):
                yield from self._call(ctx, node, scan, load_vars)
            elif isinstance(node, (nodes.Import, nodes.ImportFrom)):
                f = self._import(ctx, node, scan, ext_imports)
                if f is not None:
                    yield f
            elif isinstance(node, nodes.Dict):
                for k, _v in node.items:
                    if isinstance(k, nodes.Const) and k.value == "nvcc":
                        yield ctx.finding(R_TOOLCHAIN, k, "nvcc", "nvcc compiler flags: there is no nvcc on an Ascend host and "
                                          "the flags only apply to CUDA sources.",
                                          replacement="drop the 'nvcc' entry; keep the 'cxx' flags for C++ sources", line=k.lineno)
            elif isinstance(node, nodes.Subscript) and isinstance(node.slice, nodes.Const):
                v = node.slice.value
                if v == "nvcc" and isinstance(node.parent, (nodes.Assign, nodes.AugAssign)) or (
                        v == "TORCH_CUDA_ARCH_LIST" and r.qualname(node.value) == "os.environ"):
                    yield ctx.finding(R_TOOLCHAIN, node, str(v), f"`{v}` configures nvcc builds, which do not exist on Ascend.",
                                      replacement="remove it (NPU operators are built with the CANN toolchain)")
            elif triton and isinstance(node, nodes.FunctionDef) and node.decorators is not None:
                if node.qname() in scan.triton_kernels:
                    yield ctx.finding(R_TRITON, node, node.qname(),
                                      f"Triton kernel `{node.name}` is compiled for GPUs; it does not run on Ascend NPUs.",
                                      replacement="express the kernel with torch / torch_npu ops (or torch.compile), or write "
                                                  "an Ascend C operator",
                                      line=node.position.lineno if getattr(node, "position", None) else node.lineno)
        yield from self._uses(ctx, scan, load_vars, ext_imports)

    def _call(self, ctx, call: nodes.Call, scan: ProjectScan, load_vars) -> Iterator[Finding]:
        r = ctx.resolver
        fname = call.func.attrname if isinstance(call.func, nodes.Attribute) else getattr(call.func, "name", None)
        if fname in _LOAD_EXT_FUNCS and call.args and isinstance(call.args[0], nodes.Const) \
                and isinstance(call.parent, nodes.Assign):
            for t in call.parent.targets:
                if isinstance(t, nodes.AssignName):
                    load_vars[id(t)] = (str(call.args[0].value), call.lineno)
        q = r.qualname(call.func)
        if q is None and isinstance(call.func, nodes.Name) and ext_kind(call, r) == "cuda":
            q = "torch.utils.cpp_extension.CUDAExtension"   # extension = CUDAExtension; extension(...)
        if q is None:
            if isinstance(call.func, nodes.Subscript):  # kernel[grid](...)
                kq = r.qualname(call.func.value)
                if kq and kq in scan.triton_kernels:
                    yield ctx.finding(R_TRITON, call, kq, f"Launch of the Triton kernel `{kq.rsplit('.', 1)[-1]}`: Triton "
                                      "kernels do not run on Ascend NPUs.", replacement=FIX_OP)
            return
        if ext_kind(call, r) == "cuda" and q not in _LOAD_CALLS:
            names = _ext_name(call, r)
            what = f"`{names[0]}`" if names else "an extension"
            yield ctx.finding(R_BUILD, call, q, f"{q.rsplit('.', 1)[-1]} builds {what} from CUDA sources with nvcc; it "
                              "cannot be built on an Ascend host and its kernels have no NPU implementation.",
                              replacement="CppExtension for the C++ part + the kernels ported to Ascend C (op-plugin), "
                                          "or replace the operator with torch / torch_npu ops", line=call.lineno)
        elif q in _LOAD_CALLS and _has_cuda_sources(call, r):
            names = _ext_name(call, r)
            yield ctx.finding(R_JIT, call, q, f"`{q.rsplit('.', 1)[-1]}` JIT-compiles CUDA sources"
                              + (f" into `{names[0]}`" if names else "") + " with nvcc, which does not exist on Ascend.",
                              replacement=FIX_OP, line=call.lineno)
            parent = call.parent
            if isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
                targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
                for t in targets:
                    if isinstance(t, nodes.AssignName):
                        load_vars[id(t)] = (names[0] if names else t.name, call.lineno)
        elif q == "torch.ops.load_library" or q.startswith("torch.ops.load_library"):
            yield ctx.finding(R_TORCH_OPS, call, "torch.ops.load_library",
                              "`torch.ops.load_library` loads a compiled operator library (usually CUDA kernels).",
                              replacement="load an NPU build of the library (PrivateUse1 kernels) or replace its operators")

    def _ext_module(self, mod: str, scan: ProjectScan, project_tops: Set[str]) -> Optional[Tuple[str, str]]:
        """(module, how) when *mod* is a compiled CUDA extension module of the project."""
        if not mod:
            return None
        if mod in scan.ext_names:
            f, line = scan.ext_names[mod]
            return mod, f"built as a CUDA extension in {f}:{line}"
        parts = mod.split(".")
        leaf = parts[-1]
        if mod in scan.python_modules or mod in scan.cpp_names or mod in scan.values:
            return None
        src = scan.reexports.get(mod)
        if src is not None and src in scan.python_modules:
            return None  # `from .config import CfgNode as _C`: a Python value, not the compiled _C
        if len(parts) > 1 and ".".join(parts[:-1]) in scan.plain_modules:
            return None  # an attribute of a Python module of the project
        if leaf in scan.ext_leaves and (len(parts) == 1 or parts[0] in project_tops):
            f, line = scan.ext_leaves[leaf]
            return mod, f"built as a CUDA extension in {f}:{line}"
        if parts[0] in NON_PROJECT_TOPS:
            return None
        if leaf in scan_leaves(scan):
            return None  # a Python module of the project with that name (sys.path-style import)
        if self._third_party(scan, mod):
            return None
        if leaf in _CONVENTION_NAMES:
            return mod, f"`{leaf}` is the conventional name of a compiled extension module"
        if leaf.endswith(_EXT_SUFFIXES) and not leaf.startswith("test"):
            return mod, f"`{leaf}` is named like a compiled CUDA extension and is not a Python module of the project"
        return None

    @staticmethod
    def _third_party(scan: ProjectScan, mod: str) -> bool:
        table = scan.third_party
        return bool(table) and table.match(mod) is not None

    def _import(self, ctx, node, scan: ProjectScan, ext_imports) -> Optional[Finding]:
        r = ctx.resolver
        tops = self._tops(ctx)
        cands = []
        if isinstance(node, nodes.ImportFrom) and r.absolute_import(node.modname, node.level) == "torch.utils.cpp_extension":
            homes = [n for n, _as in node.names if f"torch.utils.cpp_extension.{n}" in _CUDA_HOME]
            if homes:
                return ctx.finding(R_TOOLCHAIN, node, f"torch.utils.cpp_extension.{homes[0]}",
                                   f"`{homes[0]}` points at the CUDA toolkit; it is None on an Ascend host.",
                                   replacement="remove the CUDA toolkit dependency (NPU operators are built with the CANN toolchain, "
                                               "ASCEND_TOOLKIT_HOME)")
            return None
        if isinstance(node, nodes.Import):
            cands = [mod for mod, _as in node.names]
        else:
            base = r.absolute_import(node.modname, node.level)
            hit = self._ext_module(base, scan, tops) if base else None
            if hit:
                cands = [base]
            else:
                cands = [f"{base}.{n}" if base else n for n, _as in node.names if n != "*"]
        for mod in cands:
            hit = self._ext_module(mod, scan, tops)
            if hit:
                ext_imports[id(node)] = hit[0]
                return ctx.finding(R_EXT_USE, node, hit[0], f"Import of the compiled extension `{hit[0]}` ({hit[1]}): it "
                                   "contains CUDA kernels, so the import fails (or the kernels fail) on an Ascend host.",
                                   replacement=FIX_OP, confidence="high" if "built" in hit[1] else "medium")
        return None

    def _tops(self, ctx) -> Set[str]:
        scan = project_scan(ctx.project)
        tops = getattr(scan, "_tops", None)
        if tops is None:
            tops = {m.split(".")[0] for m in scan.python_modules}
            scan._tops = tops  # type: ignore[attr-defined]
        return tops

    def _uses(self, ctx, scan: ProjectScan, load_vars, ext_imports) -> Iterator[Finding]:
        r = ctx.resolver
        tops = self._tops(ctx)
        if load_vars:
            candidates = ((n, None) for n in nodes_of(ctx.tree, nodes.Name, nodes.Attribute))
        else:   # without extension variables only names that resolve can give a finding: the shared outer names
            candidates = ((n, q) for _pos, n, q in r.outer_names() if type(n) is not nodes.AssignAttr)
        for node, known in candidates:
            parent = node.parent
            if isinstance(parent, (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr)) and parent.expr is node:
                continue
            root = node
            while isinstance(root, nodes.Attribute):
                root = root.expr
            if not isinstance(root, nodes.Name):
                continue
            target = parent if isinstance(parent, nodes.Call) and parent.func is node else node
            if load_vars and root is not node or (load_vars and isinstance(node, nodes.Name)):
                try:
                    defs = own_bindings(root, root.name)
                except Exception:
                    defs = ()
                hit = next((load_vars[id(d)] for d in defs if id(d) in load_vars), None)
                if hit is not None and node is not root:
                    api = f"{hit[0]}.{node.as_string().split('.', 1)[1]}" if "." in node.as_string() else hit[0]
                    yield ctx.finding(R_EXT_USE, target, api, f"Call into the compiled extension `{hit[0]}` (loaded "
                                      f"at line {hit[1]}): its CUDA kernels have no NPU implementation.", replacement=FIX_OP)
                    continue
            q = known if known is not None else r.qualname(node)
            if not q:
                continue
            if q in _CUDA_HOME and node.as_string().rsplit(".", 1)[-1] == q.rsplit(".", 1)[-1]:
                yield ctx.finding(R_TOOLCHAIN, target, q, f"`{q.rsplit('.', 1)[-1]}` points at the CUDA toolkit; it is None on "
                                  "an Ascend host, so code that needs it fails or skips the build.",
                                  replacement="remove the CUDA toolkit dependency (NPU operators are built with the CANN toolchain)")
                continue
            if q in _BUILD_EXT:
                if any(f == ctx.path for f, _l in scan.ext_names.values()) or ".cu'" in ctx.source.text \
                        or '.cu"' in ctx.source.text:
                    yield ctx.finding(R_BUILD, target, q, "`BuildExtension` compiles this project's CUDA sources with nvcc "
                                      "(no nvcc on an Ascend host).",
                                      replacement="keep BuildExtension only for CppExtension modules; port the CUDA kernels "
                                                  "to Ascend C (op-plugin)")
                continue
            if q.startswith("torch.ops."):
                parts = q.split(".")
                if len(parts) >= 3 and parts[2] not in BUILTIN_OP_NS and parts[2] not in _OPS_ATTRS \
                        and not parts[2].startswith("__"):
                    devices = registered_devices(ctx.project, q)
                    if devices is not None and runs_on_npu(devices):
                        continue   # a default / composite / NPU kernel of the project's torch.library registrations
                    if isinstance(target, nodes.Call) or len(parts) >= 4:
                        yield ctx.finding(R_TORCH_OPS, target, q, f"`{q}` is a custom operator of namespace "
                                          f"`{parts[2]}`, " + (f"whose kernels the project registers for "
                                                               f"{describe(devices)} only (no default or NPU kernel)."
                                                               if devices else
                                                               "registered by a compiled extension (usually CUDA only)."),
                                          replacement=f"register an NPU (PrivateUse1) kernel for {parts[2]}::{parts[3] if len(parts) > 3 else '<op>'} "
                                                      "or replace it with torch / torch_npu ops")
                continue
            if node is root and not isinstance(target, nodes.Call):
                continue  # a bare module name (passed around): the import and the calls are reported
            parts = q.split(".")
            for i in range(len(parts) - 1, 0, -1):
                mod = ".".join(parts[:i])
                hit = self._ext_module(mod, scan, tops)
                if hit:
                    try:
                        rdefs = own_bindings(root, root.name)
                    except Exception:
                        rdefs = ()
                    if not any(isinstance(d, (nodes.Import, nodes.ImportFrom)) for d in rdefs):
                        break  # only names bound by an import can be an extension module
                    yield ctx.finding(R_EXT_USE, target, q, f"`{q}` calls into the compiled extension `{hit[0]}` ({hit[1]}): "
                                      "a CUDA kernel with no NPU implementation.", replacement=FIX_OP,
                                      confidence="high" if "built" in hit[1] else "medium")
                    break

    # ------------------------------------------------------------------ .cu / .cuh files
    def check_file(self, path, relpath: str, project: ProjectContext):
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            return (), (AnalysisError(relpath, "io", f"cannot read file: {exc.strerror or exc}"),)
        if b"\x00" in data:
            return (), (AnalysisError(relpath, "encoding", "file contains NUL bytes (binary file?)"),)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (), (AnalysisError(relpath, "encoding", f"cannot decode CUDA source as UTF-8: {exc}"),)
        if not text.strip():
            return (), ()
        lines = text.splitlines()
        kernels = cuda_kernels(text)
        if kernels:
            line = kernels[0][1]
            names = list(dict.fromkeys(k for k, _l in kernels))
            shown = ", ".join(f"`{n}`" for n in names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
            msg = f"CUDA source with {len(names)} kernel{'s' if len(names) != 1 else ''}: {shown}. Each needs an Ascend C implementation or a replacement."
        else:
            line = next((i for i, l in enumerate(lines, 1) if "__device__" in l or "cuda" in l.lower()), 1)
            msg = "CUDA source file (device code, no __global__ kernels): it only builds with nvcc."
        snippet = lines[line - 1].rstrip() if line <= len(lines) else ""
        f = Finding(code=R_CU_FILE.code, category=R_CU_FILE.category, severity="blocker", path=relpath, line=line,
                    api=f"cuda-source:{Path(relpath).name}", message=msg, replacement=FIX_OP, confidence="high",
                    evidence="syntax", snippet=snippet)
        return (f,), ()
