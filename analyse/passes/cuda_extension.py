"""cuda-extension: the project's own CUDA code (compiled extensions, JIT builds, .cu files).

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
* ``.cu`` / ``.cuh`` files (file-level finding naming their ``__global__`` kernels).

Everything is a ``blocker``: CUDA kernels need an NPU implementation (an
Ascend C operator registered through op-plugin / torch_npu) or a rewrite with
torch / torch_npu ops. Binary or undecodable ``.cu`` files become ``errors``
entries. GPU-only *third-party* extension modules (amp_C, flash_attn_2_cuda
...) are reported by the third-party pass instead, Triton kernels (NPU506) by the triton pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterator, Optional, Set, Tuple

from astroid import nodes

from analyse.cpp_syntax import cuda_kernels
from analyse.passes._oplib import BUILTIN_OP_NS, describe, registered_devices, runs_on_npu  # noqa: F401 (re-exported)
from analyse.findings import AnalysisError, Finding, Rule
from analyse.passes import ModuleContext, Pass, ProjectContext, nodes_of
# the project scan lives below the passes (the third-party pass and the library mode read it too)
from analyse.passes._project_scan import (  # noqa: F401  (EXTRA_KEY, prescan_build_file: re-exported)
    _BUILD_EXT, _CUDA_HOME, _LOAD_CALLS, _LOAD_EXT_FUNCS, EXTRA_KEY, STORE_KEY, ProjectScan, _ext_name, _has_cuda_sources,
    NON_PROJECT_TOPS, _prescan_data, _scan_file, ext_kind, prescan_build_file, project_scan, scan_leaves)
from analyse.resolve import dynamic_import
from analyse.syntax import own_bindings
from analyse.conditions import OFF, ON, SCENARIOS, render as render_condition
from analyse.conditions.build import handler_catches_import, leaf_name
from analyse.guards import guard_of, tree_memo
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
R_CU_FILE = Rule(
    code="NPU507", name="cuda-source-file", category="cuda-extension", severity="blocker",
    summary="A CUDA source file (`.cu` / `.cuh`) and the kernels it defines.",
    why="CUDA C++ kernels (`__global__`) do not run on Ascend NPUs; each needs an Ascend C implementation "
        "or a replacement by existing operators.",
    example="__global__ void roi_align_forward_kernel(const float* input, ...)",
    fix="# port to Ascend C (op-plugin) or replace the operator",
)

_OPS_ATTRS = {"load_library", "import_module", "loaded_libraries"}
_EXT_SUFFIXES = ("_cuda", "_cuda_ext", "_kernel", "_kernels", "_cuda_kernel", "_cuda_kernels", "_ext_cuda")
_CONVENTION_NAMES = {"_C", "_ext", "_cuda", "_cuda_ext"}

FIX_GUARD = ("edit the guard so that an NPU takes the PyTorch branch: test the extension too (`_C is not None and ...`) "
             "or test the device type (`x.device.type == 'cuda'`)")


def caught_import(node):
    """The ``try`` whose handler catches a failed import of *node* and goes on (a bare ``except:``, ``except
    ImportError:`` that logs or passes, never re-raising or exiting), or None."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef,
                                                         nodes.Module)):
        if isinstance(parent, nodes.Try) and cur in parent.body:
            hs = [h for h in parent.handlers if handler_catches_import(h)]
            if hs and all(not _stops(h.body) for h in hs):
                return parent
            return None
        cur, parent = parent, parent.parent
    return None


def _stops(body) -> bool:
    for st in body:
        if isinstance(st, nodes.Raise):
            return True
        if isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Call) and \
                leaf_name(st.value.func) in ("exit", "_exit", "abort"):
            return True
    return False


def _guard_edit(ctx, target, name: str, defs) -> Optional[str]:
    """The words for a use of a compiled extension whose import is caught (*name* is undefined on an Ascend host)
    under a guard that one NPU scenario meets and the other does not: a NameError in the first, the other
    branch in the second. None when no scenario takes another branch (then the use is a blocker)."""
    tries = [caught_import(d) for d in defs if isinstance(d, (nodes.Import, nodes.ImportFrom))]
    if not tries or any(t is None for t in tries):
        return None
    g = guard_of(target, tree_memo(target.root()))
    if g is None or g.path is None:
        return None
    op = g.on_path
    on = [sc for sc in SCENARIOS if op[sc] == ON]
    off = [sc for sc in SCENARIOS if op[sc] == OFF]
    if not on or not off:
        return None
    cond = render_condition(g.path)
    where = f"{ctx.path}:{g.line}"
    return (f"Its import ({ctx.path}:{tries[0].lineno}) fails on an Ascend host and is caught, so `{name}` is "
            f"undefined there. In the {' and '.join(on)} scenario the guard `{cond}` ({where}) holds and this line "
            f"raises NameError; in the {' and '.join(off)} scenario the other branch of that test runs. A guard edit, "
            "not a kernel: make the test false on an NPU so the PyTorch branch runs.")

def _bound_by_import_call(d, r) -> bool:
    """*d* binds a name to what a call imports (``_C = utils._get_c_extension()``, ``import_module("pkg._C")``):
    :func:`analyse.resolve.dynamic_import` knows the module."""
    if not isinstance(d, nodes.AssignName):
        return False
    value = r.assigned_value(d)
    return isinstance(value, nodes.Call) and dynamic_import(value, r) is not None


def _namespace_lookup(q: str, node, target, r):
    """(api, node) of a use: an operator looked up by name in the extension module's namespace
    (``_C.__dict__[f"render_{backend}"]``) is that operator (``pkg._C.render_{}``, unknown parts as ``{}``), the
    subscript its node; any other use as it is."""
    parent = node.parent
    if not q.endswith(".__dict__") or not isinstance(parent, nodes.Subscript) or parent.value is not node:
        return q, target
    names = r.strings(parent.slice)
    if not names or len(names) != 1:
        return q, target
    return f"{q[:-len('.__dict__')]}.{next(iter(names))}", parent


def _builds_here(node, r) -> bool:
    """The function holding *node* builds or loads an extension (``cpp_extension.load``, ``CUDAExtension``, a
    ``load_ext``): a setting made there configures that build. False at a module's top level."""
    scope = node.scope()
    if not isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return False
    for call in nodes_of(scope, nodes.Call):
        q = r.qualname(call.func) or ""
        leaf = q.rpartition(".")[2] or (call.func.attrname if isinstance(call.func, nodes.Attribute) else "")
        if q in _LOAD_CALLS or leaf in _LOAD_EXT_FUNCS or ext_kind(call, r) is not None:
            return True
    return False


class CudaExtensionPass(Pass):
    name = "cuda-extension"
    rules = (R_BUILD, R_JIT, R_TOOLCHAIN, R_EXT_USE, R_TORCH_OPS, R_CU_FILE)
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
    )

    # ------------------------------------------------------------------ project scan
    prescan_shape = Optional[Tuple[
        Tuple[Tuple[str, Tuple[str, int]], ...], Tuple[Tuple[str, Tuple[str, int]], ...],   # ext names, leaves
        Tuple[str, ...], Tuple[str, ...], Tuple[str, ...],        # C++ names, Triton kernels, values
        Tuple[Tuple[str, str], ...],                              # re-exports
        Tuple[Tuple[str, str, Tuple[str, ...], str, int], ...]]]  # builds

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
        load_vars: Dict[int, Tuple[str, int]] = {}   # id(AssignName) -> (ext name, line)
        ext_imports: Dict[int, str] = {}             # id(import node) -> module name
        for node in nodes_of(ctx.tree, nodes.Call, nodes.Import, nodes.ImportFrom, nodes.Dict, nodes.Subscript):
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
                if v == "nvcc" and isinstance(node.parent, (nodes.Assign, nodes.AugAssign)):
                    yield ctx.finding(R_TOOLCHAIN, node, str(v), f"`{v}` configures nvcc builds, which do not exist on Ascend.",
                                      replacement="remove it (NPU operators are built with the CANN toolchain)")
                elif v == "TORCH_CUDA_ARCH_LIST" and r.qualname(node.value) == "os.environ":
                    if _builds_here(node, r):
                        yield ctx.finding(R_TOOLCHAIN, node, str(v), f"`{v}` configures nvcc builds, which do not exist "
                                          "on Ascend.", replacement="remove it (NPU operators are built with the CANN "
                                                                    "toolchain)")
                    else:
                        # set where nothing is built (a module's top level): it changes nothing on an Ascend host;
                        # the CUDA build it configures is reported, and graded, where it is made
                        yield ctx.finding(R_TOOLCHAIN, node, str(v), f"`{v}` configures nvcc builds, which do not "
                                          "exist on Ascend; set here, where nothing is built, it has no effect there "
                                          "(the build it configures is reported where it is made).",
                                          replacement="remove it (NPU operators are built with the CANN toolchain)",
                                          severity="advice")
        yield from self._uses(ctx, scan, load_vars, ext_imports)

    def _call(self, ctx, call: nodes.Call, scan: ProjectScan, load_vars) -> Iterator[Finding]:
        r = ctx.resolver
        fname = call.func.attrname if isinstance(call.func, nodes.Attribute) else getattr(call.func, "name", None)
        if fname in _LOAD_EXT_FUNCS and call.args and isinstance(call.args[0], nodes.Const) \
                and isinstance(call.parent, nodes.Assign):
            for t in call.parent.targets:
                if isinstance(t, nodes.AssignName):
                    load_vars[id(t)] = (str(call.args[0].value), call.lineno)
        elif fname == "import_module" and call.args and isinstance(call.args[0], nodes.Const) \
                and isinstance(call.args[0].value, str) and isinstance(call.parent, nodes.Assign) \
                and r.qualname(call.func) in ("importlib.import_module", "import_module") \
                and self._ext_module(call.args[0].value, scan, self._tops(ctx)) is not None:
            # `attn = importlib.import_module("attn_core_inplace_cuda")`: the project's compiled extension, by name
            for t in call.parent.targets:
                if isinstance(t, nodes.AssignName):
                    load_vars[id(t)] = (call.args[0].value, call.lineno)
            # and an import like `import attn_core_inplace_cuda`: where it runs unguarded, it fails there
            mod, how = self._ext_module(call.args[0].value, scan, self._tops(ctx))
            caught = caught_import(call.parent)
            if caught is not None:
                yield ctx.finding(R_EXT_USE, call, mod, f"Import of the compiled extension `{mod}` ({how}) by "
                                  f"`import_module` in try/except ({ctx.path}:{caught.lineno}): on an Ascend host the "
                                  "import fails and is caught; each use is reported where it is made.",
                                  replacement=FIX_OP, severity="advice",
                                  confidence="high" if "built" in how else "medium")
            else:
                yield ctx.finding(R_EXT_USE, call, mod, f"Import of the compiled extension `{mod}` ({how}) by "
                                  "`import_module`: it contains CUDA kernels, so the import fails (or the kernels fail) "
                                  "on an Ascend host.", replacement=FIX_OP,
                                  confidence="high" if "built" in how else "medium")
        q = r.qualname(call.func)
        if q is None and isinstance(call.func, nodes.Name) and ext_kind(call, r) == "cuda":
            q = "torch.utils.cpp_extension.CUDAExtension"   # extension = CUDAExtension; extension(...)
        if q is None:
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
            bound = {(_as or n) for n, _as in node.names if n in homes}
            if homes and any(u.name in bound for u in nodes_of(ctx.tree, nodes.Name)):
                # the module reads the name: each use is reported where it is made (and counted where that code
                # runs); importing a path that is None on an Ascend host stops nothing
                return None
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
                caught = caught_import(node)
                if caught is not None:
                    # the failure is caught: the import itself does not stop the program; the uses decide
                    return ctx.finding(R_EXT_USE, node, hit[0], f"Import of the compiled extension `{hit[0]}` ({hit[1]}) "
                                       f"in try/except ({ctx.path}:{caught.lineno}): on an Ascend host the import fails "
                                       "and is caught, leaving its names undefined; each use is reported where it is "
                                       "made.", replacement=FIX_OP, severity="advice",
                                       confidence="high" if "built" in hit[1] else "medium")
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
                    if not any(isinstance(d, (nodes.Import, nodes.ImportFrom)) or _bound_by_import_call(d, r)
                               for d in rdefs):
                        break  # only names bound by an import (or a call that imports) can be an extension module
                    q, target = _namespace_lookup(q, node, target, r)
                    edit = _guard_edit(ctx, target, root.name, rdefs)
                    if edit is not None:
                        yield ctx.finding(R_EXT_USE, target, q, f"`{q}` calls into the compiled extension `{hit[0]}` "
                                          f"({hit[1]}). {edit}", replacement=FIX_GUARD, severity="manual",
                                          confidence="high" if "built" in hit[1] else "medium")
                        break
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
