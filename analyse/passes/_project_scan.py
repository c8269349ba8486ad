"""The project-wide scan behind the cuda-extension and third-party passes (a private helper).

What the project itself builds and defines, collected once per run before any module is checked:
the compiled extension modules its build declares (``CUDAExtension`` / ``CppExtension`` /
``setuptools.Extension`` / ``cpp_extension.load``), its Python module names, module-level values and
re-exports, and its Triton kernels. The cuda-extension pass reports the builds and uses, the
third-party pass uses the extension names to leave the project's own modules alone, and the
library mode reads the builds. Living here, below the passes, it lets no pass import another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from astroid import nodes

from analyse.passes import ProjectContext, nodes_of, walk
from analyse.passes._libtable import lib_table
from analyse.syntax import own_bindings

# top-level packages that are never the project's own compiled module, whatever a build names
NON_PROJECT_TOPS = {"torch", "torch_npu", "torchvision", "torchaudio", "torchtext", "functorch", "triton", "numpy",
                    "jax", "tensorflow"}

STORE_KEY = "cuda-extension"
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
    if isinstance(call.func, nodes.Name) and (q is None or q.partition(".")[0] == (r.modname or "").partition(".")[0]):
        # a name of this file (a local, or a module-level value: `extension_type = CUDAExtension if cuda else
        # CppExtension`), each arm of a conditional value a candidate
        try:
            defs = own_bindings(call.func, call.func.name)
        except Exception:
            return None
        kinds = set()
        for d in defs:
            if isinstance(d, nodes.AssignName):
                v = r.assigned_value(d)
                arms = [v.body, v.orelse] if isinstance(v, nodes.IfExp) else [v]
                for arm in arms:
                    vq = r.qualname(arm) if isinstance(arm, (nodes.Name, nodes.Attribute)) else None
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
            elif isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef)) and sf.modname \
                    and sf.is_package_init:
                # `from ..fused_kernels import load_fused_kernels`: a function of the package's __init__, not a
                # compiled submodule of the package (names of plain modules are told apart by plain_modules)
                scan.values.add(f"{sf.modname}.{node.name}")
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
            # `load_ext("torchvision", sources)` (an unused JIT loader): the module is what the call returns, bound to
            # the name it is assigned to; an import of a well-known package of that name imports the package
            names = [n for n in _ext_name(node, r) if n.partition(".")[0] not in NON_PROJECT_TOPS]
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
        scan.third_party = lib_table(project.kb)
    except Exception:  # the third-party data is validated (and reported) by its own pass
        scan.third_party = False
    project.store[STORE_KEY] = scan
    return scan
