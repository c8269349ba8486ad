"""``npu-analyse thirdparty``: which functions of a library break on an NPU, and why.

One project model for both modes: the library is loaded by
:func:`analyse.pipeline.run` exactly as ``script`` mode loads a project (every
file parsed once, the passes given the real file list, so the project's own
modules, values and build-declared extensions are known to them), then

1. **summaries** -- each parsed module is reduced to a
   :class:`~analyse.callgraph.ModuleSummary` (functions with line ranges,
   resolved call sites and the guards they run under, import / re-export
   tables, dynamic-dispatch sites) and its tree is dropped;
2. **C++/CUDA** -- :mod:`analyse.library.cpp` scans the compiled sources, with
   the extension modules the build declares (setup.py ``ext_modules``,
   ``load(name=...)``), and finds per-device implementations;
3. **call graph** -- :func:`analyse.callgraph.build_graph` links the summaries;
   symlinked packages inside the tree are aliases of their target modules;
4. **roots** -- each finding is mapped to its innermost enclosing function
   (blocker/manual findings of unsupported-api, third-party, cuda-extension and
   cuda-api make it ``unsupported``; ``auto`` ones ``needs-migration``, except a use of a
   library that runs on Ascend through its own NPU support with the code unchanged (the knowledge
   entry's ``npu_support: native``, e.g. DeepSpeed's NPU accelerator), which leaves it supported;
   unknown-api ones ``unknown``); a root under a guard that has a working
   fallback (``else`` branch, ``except ImportError`` fallback, default-off
   option) is ``conditional`` with the condition; a call into a compiled op is
   judged by the C++ scan: the library's own NPU implementation makes it
   supported, CPU-only code ``needs-migration`` (nothing when the call has a
   working fallback: the function runs either way, or runs on host tensors:
   ``x.cpu()`` arguments, an ``x.device.type == "cpu"`` branch), CUDA kernels
   ``unsupported``; a call of a kernel loader (``Loader().load()`` over a class
   attribute listing builder classes) by what its builders build
   (:func:`kernel_load_status`);
5. **propagation** to every transitive caller (:func:`analyse.callgraph.propagate`);
   an unsupported callee reached only through a guarded call makes the caller
   ``conditional``.

The library's own NPU support (registered NPU kernels, ``npu/`` kernel folders,
``torch_npu`` imports, ``device.type == "npu"`` branches, NPU accelerator
classes) becomes ``thirdparty.library.npu_support`` and feeds the library
``verdict``; ``thirdparty.coverage`` says what the graph could not see.

Nothing analysed is imported or executed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from analyse.callgraph import (BUILD_CPP, BUILD_CUDA, BUILD_NPU, FALLBACK_CONDITION, MODULE_FN, OFF_BY_DEFAULT, PSEUDO_FNS, RESULT_CALLED, RESULT_TESTED, STUB_CONDITION,
                               UNREACHABLE, FunctionLocator,
                               ModuleSummary, build_graph, classify, npu_takes_fallback, other_device_only, propagate,
                               STUB_OF, self_dispatch_context, summarise_module, transfer_only_condition)
from analyse.findings import AnalysisError, Finding, assign_ids
from analyse.library.cpp import CPP_SUFFIXES, BuildExt, scan_sources
from analyse.passes.cuda_api import ASSERT_REJECTS_NPU, DEVICE_TABLE, EVERY_CALL, NPU_BRANCH_STOPS
from analyse.passes.cuda_extension import EXTRA_KEY, prescan_build_file, project_scan
from analyse.passes.third_party import OWN_PACKAGE_KEY
from analyse.passes.triton import PORTS_AS_IS
from analyse.pipeline import Settings, dedupe
from analyse.pipeline import run as pipeline_run
from analyse.project import load_source
from analyse.report import build_report
from analyse.resolve import ProjectIndex

__all__ = ["analyse_library", "LibraryAnalysis", "analyse_library_data"]

COND_SEP = "\x1f"            # root reason <SEP> condition, for conditional roots
MAX_CONDITIONS = 8
MAX_DYNAMIC = 200
EXT_FINDING_CODES = {"NPU504", "NPU505"}
BUILD_ONLY_CODES = {"NPU503"}    # cuda-toolchain-config: CUDA_HOME is None on an Ascend host, nothing raises
IMPORT_CODE = "NPU401"           # gpu-only-library-import (the import statement itself)
TRITON_KERNEL_CODE = "NPU506"    # triton-kernel: manual when it breaks no documented Triton-Ascend constraint
# a folder of the library's own Ascend backend: `npu/`, `ascend/`, `_ascend/`, `npu_ops/`, `kernels_ascend/`
_NPU_BACKEND_DIR = re.compile(r"^_*(?:npu|ascend)(?:_\w*)?$|^\w*_(?:npu|ascend)$", re.I)
DEVICE_TYPE_CHECK = "NPU004"     # `x.device.type == 'cuda'`: the other branch runs on an NPU
LIMIT_HIT_CODE = "NPU203"        # limitation-hit: a documented limit of a supported API that the call reaches


class LibraryAnalysis:
    """Everything :func:`analyse_library` computes (for tests and benchmarks)."""

    def __init__(self):
        self.findings: List[Finding] = []
        self.errors: List[AnalysisError] = []
        self.summaries: List[ModuleSummary] = []
        self.callgraph = None
        self.statuses: Dict[str, object] = {}
        self.cpp = None
        self.files_analysed = 0
        self.lines_analysed = 0
        self.timings: Dict[str, float] = {"parse_s": 0.0, "passes_s": 0.0, "callgraph_s": 0.0, "propagation_s": 0.0}
        self.functions: List[dict] = []
        self.summary: dict = {}
        self.entry_points: Set[str] = set()
        self.public_affected: List[str] = []
        self.library: dict = {}
        self.coverage: dict = {}
        self.supported_ops: Dict[str, List[str]] = {}   # function -> compiled ops with the library's NPU implementation


def _build_files(inputs: Sequence[Path]) -> List[Path]:
    """setup.py next to an analysed package folder (``mmcv/mmcv`` -> ``mmcv/setup.py``)."""
    out = []
    for inp in inputs:
        root = Path(os.path.realpath(inp))
        if not root.is_dir() or (root / "setup.py").is_file():
            continue
        cand = root.parent / "setup.py"
        try:
            if not cand.is_file() or cand.stat().st_size > 1_000_000:
                continue
        except OSError:
            continue
        out.append(cand)
    return out


def _configure(inputs: Sequence[Path]):
    """Before the passes run: the build file next to the analysed package (outside
    the tree) still names the compiled extensions; its scan joins the project's."""
    def configure(project) -> None:
        extra = []
        for cand in _build_files(inputs):
            sf, err = load_source(cand, "../setup.py", "setup")
            if sf is None:
                continue
            try:
                data = prescan_build_file(sf, ProjectIndex())
            except Exception:  # a build file we cannot read is only lost evidence
                continue
            if data is not None:
                extra.append(("../setup.py", data))
        if extra:
            project.store[EXTRA_KEY] = extra
        outer = outer_package_names(inputs)
        if outer:
            project.store[OWN_PACKAGE_KEY] = tuple(sorted(outer))
    return configure


def outer_package_names(inputs: Sequence[Path]) -> Dict[str, str]:
    """The absolute import name of each analysed package that sits inside a parent package
    (``transformer_engine/pytorch`` analysed alone: its modules are ``pytorch.*``, its own code imports them
    as ``transformer_engine.pytorch.*``) -> the package's module name here. Folders above the input count
    while they hold an ``__init__.py``."""
    out: Dict[str, str] = {}
    for inp in inputs:
        p = Path(inp).resolve()
        if not (p.is_dir() and (p / "__init__.py").is_file()):
            continue
        parts = [p.name]
        up = p.parent
        while (up / "__init__.py").is_file() and up.name and len(parts) < 8:
            parts.insert(0, up.name)
            up = up.parent
        if len(parts) > 1 and all(x.isidentifier() for x in parts):
            out[".".join(parts)] = p.name
    return out


def _module_aliases(inputs: Sequence[Path]) -> Dict[str, str]:
    """Symlinked package folders inside the tree: link module -> target module
    (DeepSpeed's ``deepspeed/accelerator -> ../accelerator``)."""
    from analyse.files import module_name_for

    out: Dict[str, str] = {}
    for inp in inputs:
        root = os.path.realpath(inp)
        if not os.path.isdir(root):
            continue
        seen = set()
        stack = [root]
        while stack and len(seen) < 100_000:
            folder = stack.pop()
            try:
                st = os.stat(folder)
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                with os.scandir(folder) as it:
                    entries = list(it)
            except OSError:
                continue
            for e in entries:
                if e.name.startswith(".") or e.name in ("__pycache__", "node_modules", "build", "dist"):
                    continue
                try:
                    if e.is_symlink():
                        real = os.path.realpath(e.path)
                        if os.path.isdir(real) and os.path.commonpath([real, root]) == root and real != root \
                                and os.path.isfile(os.path.join(real, "__init__.py")) \
                                and os.path.isfile(os.path.join(folder, "__init__.py")):
                            link_mod = module_name_for(Path(e.path) / "__init__.py", Path(root))
                            target_mod = module_name_for(Path(real) / "__init__.py", Path(root))
                            if link_mod != target_mod:
                                out[link_mod] = target_mod
                    elif e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                except (OSError, ValueError):
                    continue
    return out


def analyse_library_data(inputs: Sequence[Path], kb, passes=None, settings: Optional[Settings] = None,
                         admit=None, roles=None) -> LibraryAnalysis:
    res = LibraryAnalysis()
    t = res.timings
    inputs = [Path(p) for p in inputs]

    # ---- one project model: the pipeline (pre-scan, passes and call-graph summaries per module, in workers);
    # every file parsed once, the passes see the real module list
    rr = pipeline_run(inputs, kb, mode="thirdparty", passes=passes, settings=settings, extra_suffixes=CPP_SUFFIXES,
                      summaries=True, configure=_configure(inputs), admit=admit)
    t["parse_s"] += rr.timings.get("prescan_s", 0.0) + rr.timings.get("hash_s", 0.0)
    t["passes_s"] += rr.timings.get("analyse_s", 0.0) + rr.timings.get("finish_s", 0.0)
    res.findings = list(rr.findings)
    res.errors = list(rr.errors)
    res.summaries = list(rr.summaries)
    res.lines_analysed = rr.lines_analysed
    failed: Dict[str, str] = dict(rr.failed)
    res.files_analysed = rr.files_analysed
    project = rr.project
    python_evidence: Dict[str, List[str]] = {}
    for s in res.summaries:
        for kind, items in (getattr(s, "npu_evidence", None) or {}).items():
            python_evidence.setdefault(kind, []).extend(items)

    # ---- C++/CUDA sources, with the extension modules the build declares
    t0 = time.perf_counter()
    cpp_errors: List[AnalysisError] = []
    cpp_files, escaped = _inside_tree(inputs, [(a, r) for a, r in rr.others if a.suffix in CPP_SUFFIXES], cpp_errors)
    if escaped:   # a .cu symlink that leaves the tree is never read
        res.findings = [f for f in res.findings if f.path not in escaped]
    scan = project_scan(project)
    builds = [BuildExt(n, kind, srcs, path, line) for n, kind, srcs, path, line in scan.builds]
    res.cpp = scan_sources(cpp_files, builds=builds)
    seen_err = {(e.path, e.kind) for e in res.errors}
    for e in list(res.cpp.errors) + cpp_errors:
        if (e.path, e.kind) not in seen_err:
            res.errors.append(e)
            seen_err.add((e.path, e.kind))
    res.lines_analysed += res.cpp.lines
    t["parse_s"] += time.perf_counter() - t0

    # ---- the library's own compiled ops: NPU implementation / CPU only / CUDA
    res.findings = assign_ids(dedupe(_judge_ext_findings(res.findings, res.cpp)))

    # ---- call graph
    t0 = time.perf_counter()
    ext_names: Set[str] = set(res.cpp.ext_module_names()) | set(scan.ext_names)
    for s in res.summaries:
        for _name, (ext, _ops) in s.ext_aliases.items():
            ext_names.add(ext)
    cg = build_graph(res.summaries, failed_modules=failed.keys(), ext_modules=ext_names,
                     module_aliases={**outer_package_names(inputs), **_module_aliases(inputs)})
    res.callgraph = cg
    dispatched = served_by_backend_dispatch(cg.linker)
    if dispatched:
        _run_backend_instead(cg, dispatched)
    t["callgraph_s"] += time.perf_counter() - t0

    # ---- roots and propagation
    t0 = time.perf_counter()
    roots: Dict[str, Dict[str, List[str]]] = {}

    def add_root(fn: str, status: str, reason: str) -> None:
        lst = roots.setdefault(fn, {}).setdefault(status, [])
        if reason not in lst:
            lst.append(reason)

    locator = FunctionLocator(res.summaries)
    served = served_by_npu_backend(python_evidence, locator)
    ext_sites = {(caller, line) for caller, line, _ext, _cond in cg.ext_calls}
    library_methods = {m for c in cg.linker.classes.values() for m in c.methods}
    class_lines = {(s.relpath, c.line): q for s in res.summaries for q, c in s.classes.items()}
    import_failures: List[dict] = []
    values_at: Dict[str, List[Tuple[int, int, str]]] = {}
    for vq, (vpath, va, vb) in cg.linker.values.items():
        values_at.setdefault(vpath, []).append((va, vb, vq))
    for f in res.findings:
        st = classify(f)
        api = f.api
        if f.code in BUILD_ONLY_CODES:
            continue   # CUDA_HOME / nvcc flags configure a build; reading them at run time does not fail
        if f.code in EXT_FINDING_CODES and "." in f.api and res.cpp.binding_for(f.api):
            st, api, _ev = res.cpp.op_status(f.api)   # the C++ scan knows the op's devices
            if st == "supported":
                continue
        if st is None:
            continue
        fn = locator.locate(f.path, f.line)
        if fn is None or fn in dispatched:
            continue   # (a function the library's NPU backend implements in its place: its body is not run there)
        if f.code in EXT_FINDING_CODES and (fn, f.line) in ext_sites:
            continue   # the call graph's compiled-op call (full module name) is the root
        if st == "unknown" and _known_enough(f.api, library_methods):
            continue
        if f.code == LIMIT_HIT_CODE and f.confidence != "high":
            continue   # a limitation the support list words for another argument, on an API it marks supported: not certain

        host = _host_only_cuda(f.api)
        if host == "skip":
            continue
        if fn in served and ((f.category in ("cuda-api", "distributed") and st == "needs-migration")
                             or (f.category == "cuda-api" and st == "unsupported" and f.guard)):
            continue   # the library's NPU backend serves this function on an NPU: its CUDA path is the one it replaces
        ref = _class_reference(f)
        if ref == "base":   # class X(nn.MaxPool3d): the subclass's forward runs the base's operator
            cls = class_lines.get((f.path, f.line))
            fn = cg.linker.lookup_method(cls, "forward") if cls else None
            if fn is None:
                continue
        elif ref == "value":   # a class named in a registry, a dict, isinstance(): not a call
            continue
        extra = _value_at(values_at, f.path, f.line)

        def root(status: str, reason: str, fn=fn, extra=extra) -> None:
            add_root(fn, status, reason)
            if extra:   # `OPERATOR = get_operator(...)` in a class body: a call through the attribute runs it
                add_root(extra, status, reason)

        if _ascend_triton_port(f, st):
            continue   # a Triton kernel of the library's own Ascend backend: written for Triton-Ascend, nothing to port
        if _probed_import(f):
            continue   # `if has_x: import x` runs only where the presence test found the library: it binds, nothing more
        if st == "needs-migration" and (f.guard or {}).get("npu_branch"):
            continue   # a CUDA test in a device test or chain that names the NPU itself: an NPU takes its own case
        cond = _finding_condition(f, st)
        if cond == UNREACHABLE:
            continue
        if host == "annotation" and st == "unsupported" and not cond:
            st = "needs-migration"   # an unconditional NVTX range is a change to make; behind an option it is the option's
        if st == "unsupported" and not cond and f.category == "cuda-api" and fn.endswith("." + MODULE_FN):
            # module-level code that raises on an NPU host: importing the module fails (#31)
            import_failures.append({"module": fn[:-len(MODULE_FN) - 1], "path": f.path, "line": f.line, "api": api})
        if f.code == DEVICE_TYPE_CHECK and st == "unsupported" and api == DEVICE_TABLE:
            root("conditional", f"{api}{COND_SEP}only for an NPU device: `{f.snippet.strip()[:80]}` looks up "
                                        "the device type 'npu', which the table has no key for (KeyError)")
        elif f.code == DEVICE_TYPE_CHECK and st == "unsupported" and EVERY_CALL in f.message \
                and (NPU_BRANCH_STOPS in f.message or ASSERT_REJECTS_NPU in f.message):
            # `if device.type != "cuda": raise ...`, `assert "cuda" in str(w.device)` at the top of the function: on
            # an NPU host the device is the NPU, so the function stops there (behind its guard's condition, if any)
            if cond:
                root("conditional", f"{api}{COND_SEP}{cond}")
            else:
                root("unsupported", api)
        elif f.code == DEVICE_TYPE_CHECK and st == "unsupported" and NPU_BRANCH_STOPS in f.message:
            root("conditional", f"{api}{COND_SEP}only for an NPU device: the branch of `{f.snippet.strip()[:80]}` "
                                        "that the device type 'npu' takes stops the program")
        elif f.code == DEVICE_TYPE_CHECK and st == "unsupported":
            root("conditional", f"{api}{COND_SEP}the CUDA branch of `{f.snippet.strip()[:80]}` is skipped on "
                                        "an NPU (the device type is 'npu'); the other branch runs")
        elif cond and st in ("unsupported", "unknown"):
            root("conditional", f"{api}{COND_SEP}{cond}")
        else:
            root(st, api)
    for u in cg.unknowns:
        add_root(u.caller, "unknown", u.reason)
    ext_roots = 0
    for caller, _line, ext, cond in cg.ext_calls:
        if cond == UNREACHABLE:
            continue
        st, reason, _ev = res.cpp.op_status(ext)
        ext_roots += 1
        if st == "supported":
            res.supported_ops.setdefault(caller, [])
            if reason not in res.supported_ops[caller]:
                res.supported_ops[caller].append(reason)
            continue
        if cond and cond.startswith(OFF_BY_DEFAULT):
            if st != "unsupported":
                continue   # behind a default-off option: only CUDA-only code there is the caller's concern
            cond = cond[len(OFF_BY_DEFAULT):]
        if st == "needs-migration" and cond:
            continue   # a host-only (C++) op behind a guard with a working fallback: the function runs either way
        if st == "needs-migration" and (caller, _line, ext) in cg.host_ext_calls:
            continue   # a host-only (C++) op given host copies (`x.cpu()`) or in a CPU-tensor branch: it runs on the host
        if st == "unsupported" and cond:
            add_root(caller, "conditional", f"{reason}{COND_SEP}{cond}")
        else:
            add_root(caller, st, reason)
    for caller, _line, cond, loader, builders in cg.kernel_loads:
        if cond == UNREACHABLE:
            continue
        got = kernel_load_status(loader, builders)
        if got is None:
            continue
        st, reason = got
        if cond and cond.startswith(OFF_BY_DEFAULT):
            if st != "unsupported":
                continue
            cond = cond[len(OFF_BY_DEFAULT):]
        if st == "needs-migration" and cond:
            continue   # a C++ kernel for the host behind a guard with a working fallback: the function runs either way
        if st == "conditional":
            add_root(caller, st, reason if not cond else f"{reason.partition(COND_SEP)[0]}{COND_SEP}{cond}")
        elif st == "unsupported" and cond:
            add_root(caller, "conditional", f"{reason}{COND_SEP}{cond}")
        else:
            add_root(caller, st, reason)
    _drop_redundant(roots)
    _drop_kernel_helper_edges(cg.graph, res.findings)
    none_on_failure = {q for s in res.summaries for q in getattr(s, "none_on_failure", ())}
    res.statuses = _propagate_with_defaults(cg, roots, none_on_failure)
    t["propagation_s"] += time.perf_counter() - t0

    # ---- report data
    g = cg.graph
    linker = cg.linker
    functions = []
    for q, stt in res.statuses.items():
        if q not in linker.functions:
            continue   # (a class attribute value is no function: it is listed through the functions calling it)
        path, line, _end = linker.functions[q]
        d = {"qualname": q, "path": path, "line": line, "status": stt.status, "via": list(stt.via)}
        reasons, conditions = _split_conditions(stt.reasons)
        d["reasons"] = reasons
        if stt.status == "conditional":
            d["conditions"] = conditions
        functions.append(d)
    functions.sort(key=lambda d: (d["path"], d["line"], d["qualname"]))
    res.functions = functions
    res.entry_points = public_entry_points(res.summaries, linker)
    by_status: Dict[str, int] = {}
    for d in functions:
        by_status[d["status"]] = by_status.get(d["status"], 0) + 1
    public_affected = sorted(q for q in res.entry_points if q in res.statuses)
    real_functions = [q for q in linker.functions if not q.endswith(PSEUDO_FNS)]
    res.coverage = {
        "resolved_calls": cg.resolved_calls,
        "unresolved_calls": cg.unresolved_calls,
        "dynamic_dispatch": [{"path": p, "line": ln, "expression": e}
                             for p, ln, e in sorted(cg.dynamic)[:MAX_DYNAMIC]],
    }
    if len(cg.dynamic) > MAX_DYNAMIC:
        res.coverage["dynamic_dispatch_total"] = len(cg.dynamic)
    res.library = _library_verdict(inputs, res, python_evidence, by_status, len(real_functions), public_affected,
                                   import_failures)
    res.summary = {
        "functions_total": len(real_functions),
        "affected": len([d for d in functions if not d["qualname"].endswith(PSEUDO_FNS)]),
        "by_status": by_status,
        "public_entry_points": len(res.entry_points),
        "public_affected": len(public_affected),
        "call_graph": {"nodes": g.number_of_nodes(), "edges": g.number_of_edges(),
                       "unresolved_calls": len(cg.unknowns), "compiled_op_calls": ext_roots},
        "modules": len(res.summaries),
        "modules_failed": len(failed),
        "timings": {k: round(v, 3) for k, v in t.items()},
    }
    res.public_affected = public_affected
    return res


# host-side torch utilities: they never touch the device, so "undocumented" does not make them unknown on NPU
DEVICE_AGNOSTIC = ("torch.serialization.", "torch.hub.", "torch.jit.", "torch.compiler.", "torch.fx.",
                   "torch.package.", "torch.onnx.", "torch.overrides.", "torch.testing.", "torch.utils.data.",
                   "torch.utils.hooks.", "torch.utils.model_zoo.", "torch.inference_mode", "torch.no_grad",
                   "torch.enable_grad", "torch.set_grad_enabled", "torch.is_grad_enabled", "torch.typename",
                   "torch.is_tensor", "torch._assert", "torch.Size", "torch.finfo", "torch.iinfo",
                   "torch.get_default_dtype", "torch.set_default_dtype", "torch.library.", "torch.export.",
                   "torch._dynamo.", "torch.autograd.graph.", "torch.nn.modules.module.register_")
_TORCH_CLASS_METHOD = re.compile(r"^torch\.nn\.(?:Module|Sequential|ModuleList|ModuleDict)\.(\w+)$")


# host-only torch.cuda modules: no device use. _memory_viz reads memory snapshots on the host; nvtx only annotates
# (replaced by torch_npu.npu.mstx ranges), so it asks for a migration, never makes a function unsupported
HOST_ONLY_CUDA = {"torch.cuda._memory_viz": "skip", "torch.cuda.nvtx": "annotation",
                  "torch.autograd.profiler.emit_nvtx": "annotation"}


def _value_at(values_at: Dict[str, List[Tuple[int, int, str]]], path: str, line: int) -> Optional[str]:
    """The class attribute value (``Cls.ATTR``, :attr:`Linker.values`) whose assignment holds *path*:*line*."""
    for a, b, q in values_at.get(path, ()):
        if a <= line <= b:
            return q
    return None


def _host_only_cuda(api: str) -> Optional[str]:
    for prefix, kind in HOST_ONLY_CUDA.items():
        if api == prefix or api.startswith(prefix + "."):
            return kind
    return None


def _known_enough(api: str, library_methods: Set[str]) -> bool:
    """An unknown-api finding that is not unknown for a library: a host-side
    utility, or a method the library defines on its own ``nn.Module`` subclasses
    (``model.load_pretrained()`` typed as ``torch.nn.Module``)."""
    if api.startswith(DEVICE_AGNOSTIC):
        return True
    m = _TORCH_CLASS_METHOD.match(api)
    return bool(m and m.group(1) in library_methods)


_CLASS_API = re.compile(r"(?:^|\.)[A-Z]\w*$")


def _class_reference(f: Finding) -> Optional[str]:
    """How an unsupported-api / unknown-api / custom-op finding names its API when it
    does not call it: "base" (``class X(nn.MaxPool3d)``), "value" (a class or an op
    named in a registry, a dict, ``isinstance()``, passed as a function reference,
    the target of a monkey-patch ``F.avg_pool3d = wrap(F.avg_pool3d)``); None for a
    call or anything else."""
    op_ref = f.code == "NPU505" and f.api.startswith("torch.ops.")
    if not (op_ref or f.category in ("unsupported-api", "unknown-api")) or not f.snippet:
        return None
    line = f.snippet
    head = line.lstrip()
    is_class = bool(_CLASS_API.search(f.api))
    if is_class and head.startswith("class ") and f.column > len(line) - len(head):
        return "base"
    rest = line[f.column:] if 0 <= f.column < len(line) else ""
    m = re.match(r"[\w.]+", rest)
    if m is None:
        return None
    after = rest[m.end():].lstrip()
    if after.startswith("("):
        return None
    if after.startswith("=") and not after.startswith("=="):
        return "value"          # the target of an assignment (a monkey-patch), not a use
    if not after and line.rstrip().endswith(("(", ",")):
        return None   # the call's arguments continue on the next line: ambiguous, keep it
    if is_class or op_ref:
        return "value"
    if after[:1] in (",", ")", "]", "}", ":") and f.api.rsplit(".", 1)[-1][:1].islower():
        return "value"          # a function passed as a reference (callbacks, wrappers, registries)
    return None


def _inside_tree(inputs: Sequence[Path], files, errors: List[AnalysisError]):
    """The files whose real path stays inside an analysed folder (or the source checkout of an analysed package,
    :func:`analyse.files.package_checkout`: its links are followed, as building the package does); the others
    (symlinks leaving the tree) become ``io`` errors and are not read."""
    from analyse.files import package_checkout

    roots = [os.path.realpath(p) for p in inputs if os.path.isdir(p)]
    roots += [c for c in (package_checkout(r) for r in list(roots)) if c]
    keep, escaped = [], set()
    for abspath, rel in files:
        real = os.path.realpath(abspath)
        if roots and not any(os.path.commonpath([real, r]) == r for r in roots):
            errors.append(AnalysisError(rel, "io", f"symlink leaves the tree (points to {real}); not followed"))
            escaped.add(rel)
            continue
        keep.append((abspath, rel))
    return keep, escaped


def in_npu_backend(path: str) -> bool:
    """*path* (a relative file path, or a dotted module / qualified name) lies in a folder of the library's own
    NPU backend: a folder named ``npu`` / ``ascend`` (``_ascend``, ``npu_ops``, ``kernels_npu``)."""
    parts = re.split(r"[/\\]", path) if ("/" in path or "\\" in path) else path.split(".")
    return any(_NPU_BACKEND_DIR.match(p) for p in parts[:-1])


def npu_backend_owner(qualname: str) -> Optional[str]:
    """The package whose code an NPU backend class serves: the part of *qualname* above its NPU backend folder,
    less a ``backends`` folder that holds it (``pkg.ops.gla.backends.triton_ascend.GLABackend`` -> ``pkg.ops.gla``);
    None for a class outside such a folder."""
    parts = qualname.split(".")
    for i, part in enumerate(parts[:-1]):
        if _NPU_BACKEND_DIR.match(part):
            head = parts[:i]
            if head and head[-1] in ("backends", "backend", "_backends"):
                head = head[:-1]
            return ".".join(head) or None
    return None


def served_by_backend_dispatch(linker) -> Dict[str, str]:
    """Functions that a name dispatcher (:meth:`analyse.callgraph.Linker.name_dispatched`: ``@dispatch("op")``
    whose wrapper runs ``getattr(backend, func.__name__)``) hands to the library's own NPU backend: a class in an
    NPU backend folder (:func:`in_npu_backend`) of the function's package or a parent package that defines a method
    of the function's name -> that method. On an NPU the backend's method runs instead of the function's body (the
    generic, GPU-written implementation), so the function answers for what the method does. A backend's verifier
    may still hand some calls (shapes it does not take) back to the body; that is the library's NPU path's own
    limit, not a CUDA dependency."""
    named = linker.name_dispatched()
    if not named:
        return {}
    by_name: Dict[str, List[Tuple[str, str]]] = {}
    for cq, info in linker.classes.items():
        owner = npu_backend_owner(cq)
        if owner is None:
            continue
        for m in info.methods:
            mq = f"{cq}.{m}"
            if m not in info.stubs and mq in linker.functions:
                by_name.setdefault(m, []).append((owner, mq))
    out: Dict[str, str] = {}
    for fq, name in named.items():
        for owner, mq in sorted(by_name.get(name, ()), key=lambda om: -len(om[0])):
            if fq.startswith(owner + ".") and mq != fq and not in_npu_backend(fq):
                out[fq] = mq
                break
    return out


def _run_backend_instead(cg, dispatched: Dict[str, str]) -> None:
    """A dispatched function (:func:`served_by_backend_dispatch`) calls its NPU backend's method, nothing of its
    own body: its call edges, unresolved calls and compiled-op calls give way to one edge into the method."""
    g = cg.graph
    for fq, mq in dispatched.items():
        if fq not in g or mq not in g:
            continue
        g.remove_edges_from(list(g.out_edges(fq)))
        g.add_edge(fq, mq, line=g.nodes[fq].get("line"), cond=None, use=None, passed=[None])
    cg.unknowns = [u for u in cg.unknowns if u.caller not in dispatched]
    cg.ext_calls = [c for c in cg.ext_calls if c[0] not in dispatched]
    cg.held_uses = [h for h in cg.held_uses if h[0] not in dispatched]


def _drop_kernel_helper_edges(g, findings: Sequence[Finding]) -> None:
    """Calls from one Triton kernel into another (``@triton.jit`` helpers: ``exp2(x)`` inside a kernel) compile into
    the calling kernel, whose own NPU506 finding already grades them (its hard violations include its helpers'):
    the edge would only add the helper's "port it" to a kernel the library wrote for Triton-Ascend."""
    kernels = {f.api.partition(":")[2] for f in findings
               if f.code == TRITON_KERNEL_CODE and f.api.startswith("triton-kernel:")}
    kernels.discard("")
    if not kernels:
        return
    drop = [(u, v) for u in kernels if u in g for v in g.successors(u) if v in kernels]
    g.remove_edges_from(drop)


def _ascend_triton_port(f: Finding, status: Optional[str]) -> bool:
    """A Triton kernel that breaks no documented Triton-Ascend constraint (NPU506, manual), defined and launched in
    the library's own Ascend backend folder (``ops/backends/_ascend/``): it was written for Triton-Ascend, so on an
    NPU it is the library's NPU implementation, not a GPU kernel to port. A kernel with a hard violation stays, and so
    does one that is manual only because its element types have an exact rewrite (fp8 / unsigned types, which Atlas
    A2/A3 lacks): it does not compile there as written."""
    if f.code != TRITON_KERNEL_CODE or f.severity != "manual" or status != "unsupported" \
            or PORTS_AS_IS not in (f.base_message or f.message):
        return False
    kernel = f.api.partition(":")[2]
    return in_npu_backend(f.path) and (not kernel or in_npu_backend(kernel))


def _probed_import(f: Finding) -> bool:
    """The import statement of a GPU-only library under an availability check with a fallback
    (``has_x = find_spec("x") is not None; if not has_x: return False; import x``): on a host without the library
    the check fails first, so the import never fails; the uses of the library are judged where they are made."""
    g = f.guard
    return (f.code == IMPORT_CODE and bool(g) and g.get("kind") == "availability-check" and bool(g.get("fallback"))
            and (g.get("on_path") or {}).get("transfer_to_npu") == "conditional")


def _finding_condition(f: Finding, status: Optional[str] = None) -> Optional[str]:
    g = f.guard
    if g and other_device_only(g.get("kind"), g.get("condition")):
        return UNREACHABLE
    if g and g.get("tried") and g.get("fallback"):
        return UNREACHABLE   # a call tried for a value whose failure the handler answers: the function completes
    scen = (g.get("on_path") or {}).get("transfer_to_npu") if g else None
    where = f"{f.path}:{g.get('line')}" if g else ""
    if scen == "off" and status == "unsupported" and g.get("kind") == "option" and g.get("fallback") \
            and g.get("condition") and not g.get("off_whatever_chosen"):
        # CUDA-only code behind an option a user of the library can turn on (an environment switch read with its
        # default): the caller's choice, not dead code (needs-migration / unknown code there stays off the path)
        return f"only when `{g.get('condition')}` is turned on (off by default, {where}; otherwise the fallback runs)"
    if scen == "off":
        return UNREACHABLE   # off the path with the defaults (analyse.conditions)
    if g and scen == "conditional" and g.get("by_default") == "off":
        return f"only when a caller sets {g.get('unless') or 'a non-default value'} (off by default, {where})"
    if g and g.get("skipped_block") and status in ("unsupported", "unknown"):
        return None   # CUDA-only code in a skipped CUDA block: transfer_to_npu makes the test true and runs it
    if g and npu_takes_fallback(g.get("kind"), g.get("on_path"), bool(g.get("fallback")), bool(g.get("npu_fallback"))):
        return UNREACHABLE   # the NPU takes the fallback as the code stands (analyse.callgraph.npu_takes_fallback)
    if g and scen == "on":
        return transfer_only_condition(g.get("kind"), g.get("condition"), g.get("on_path"), bool(g.get("fallback")),
                                       where)
    if not g or not g.get("fallback"):
        return None
    if g.get("kind") == "import-fallback":
        return f"only when the optional import succeeds (fallback in the except branch at {where})"
    cond = g.get("condition")
    what = f"`{cond}`" if cond else "its guard"
    return f"only when {what} ({g.get('kind')}, {where}; otherwise the fallback runs)"


def _held_roots(held_uses, statuses, roots: Dict[str, Dict[str, List[str]]]) -> bool:
    """Roots for the calls into an instance attribute (:attr:`analyse.callgraph.CallGraph.held_uses`) whose every
    value is computed by a call of unsupported code: the object exists only where that code ran, so calling into it
    needs it too (unsupported, or conditional under the call's own guard). A value made without such a call (a
    literal, a parameter, a supported builder) is a working alternative. True when a root was added."""
    added = False
    found: List[Tuple[str, Optional[str], List[str]]] = []
    for caller, _line, cond, _attr, values in held_uses:
        heads: List[str] = []
        for fns in values:
            bad = [f for f in fns if getattr(statuses.get(f), "status", None) == "unsupported"]
            if not bad:
                heads = []
                break
            for f in bad[:2]:
                hs, _conds = _split_conditions(statuses[f].reasons)
                heads.extend(h for h in hs[:2] if h not in heads)
        if not heads:
            continue
        if cond and cond.startswith(OFF_BY_DEFAULT):
            cond = cond[len(OFF_BY_DEFAULT):]
        found.append((caller, cond, heads))
    # `if C: self._m.paged_run(...)` / `else: self._m.run(...)`: neither branch is a working fallback for the other
    sides: Dict[Tuple[str, str], Set[str]] = {}
    for caller, cond, _heads in found:
        m = FALLBACK_CONDITION.match(cond) if cond else None
        if m is not None:
            sides.setdefault((caller, m.group("where")), set()).add(m.group("cond").strip())
    for caller, cond, heads in found:
        m = FALLBACK_CONDITION.match(cond) if cond else None
        if m is not None:
            c = m.group("cond").strip()
            other = c[4:].strip() if c.startswith("not ") else f"not {c}"
            if other in sides.get((caller, m.group("where")), ()):
                cond = None
        st = "conditional" if cond else "unsupported"
        lst = roots.setdefault(caller, {}).setdefault(st, [])
        for h in heads[:4]:
            r = f"{h}{COND_SEP}{cond}" if cond else h
            if r not in lst:
                lst.append(r)
                added = True
    return added


def _split_conditions(reasons: Sequence[str]) -> Tuple[List[str], List[str]]:
    out, conds = [], []
    for r in reasons:
        head, sep, cond = r.partition(COND_SEP)
        if head not in out:
            out.append(head)
        if sep and cond not in conds and len(conds) < MAX_CONDITIONS:
            conds.append(cond)
    return out, conds


def _drop_redundant(roots: Dict[str, Dict[str, List[str]]]) -> None:
    """A compiled-op reason makes a plain api reason for the same op redundant."""
    for _fn, by in roots.items():
        for _st, lst in by.items():
            detailed = [r.split(COND_SEP, 1)[0] for r in lst if " (" in r.split(COND_SEP, 1)[0]]
            if detailed:
                heads = [d.split(" (", 1)[0] for d in detailed]
                lst[:] = [r for r in lst if " (" in r.split(COND_SEP, 1)[0]
                          or not any(h == r.split(COND_SEP, 1)[0] or h.endswith("." + r.split(COND_SEP, 1)[0])
                                     for h in heads)]


def _none_results(g, roots: Dict[str, Dict[str, List[str]]], none_on_failure: Set[str]):
    """The edges into a function that hands None to its caller when its GPU-only part fails (its only roots are
    ``conditional`` through its own except branch, which binds or returns None): a caller that only tests the
    result (``if not get_ext(): use_ext = False``) takes its own fallback, so the edge carries nothing; a caller
    that calls the result (``get_ext().forward(x)``) has no fallback: it calls None. Returns (edges to drop,
    {caller: [callee reasons]} for the callers that call the result)."""
    drop, called = [], {}
    for v in none_on_failure:
        by = roots.get(v)
        if not by or set(by) != {"conditional"} or v not in g:
            continue
        heads, _conds = _split_conditions(by["conditional"])
        for u, _v, d in g.in_edges(v, data=True):
            if d.get("use") == RESULT_TESTED:
                drop.append((u, v))
            elif d.get("use") == RESULT_CALLED and not d.get("cond"):
                drop.append((u, v))
                lst = called.setdefault(u, [])
                lst.extend(h for h in heads[:4] if h not in lst)
    return drop, called


_CALLER_SETS = re.compile(r"^only when a caller sets `(?P<expr>.+)` \(off by default, ")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _propagate_with_defaults(cg, roots: Dict[str, Dict[str, List[str]]], none_on_failure: Set[str] = frozenset()):
    """:func:`_propagate_with_guards`, then once more without the calls that leave a callee's option at its default:
    a function that is conditional only through "a caller sets `mixed_precision == 'fp8'`" on its own parameters
    adds nothing to a call that passes none of them (``AcceleratorState()``): there the option is off."""
    import copy

    first_roots = copy.deepcopy(roots)
    out = _propagate_with_guards(cg, first_roots, none_on_failure)
    drop = _default_left_calls(cg, out)
    if not drop:
        roots.clear()
        roots.update(first_roots)
        return out
    g = cg.graph.copy()
    g.remove_edges_from(drop)
    return _propagate_with_guards(_GraphView(cg, g), roots, none_on_failure)


class _GraphView:
    """*cg* with another graph (the rest of :class:`analyse.callgraph.CallGraph` as it is)."""

    def __init__(self, cg, graph):
        self._cg = cg
        self.graph = graph

    def __getattr__(self, name):
        return getattr(self._cg, name)


def _default_left_calls(cg, statuses) -> List[Tuple[str, str]]:
    """The call edges into a conditional function whose every condition is "a caller sets `...`" over parameters of
    its own that no call site of the edge passes (positionally or by keyword, nor through *args / **kwargs)."""
    params = getattr(cg.linker, "params", None) or {}
    out = []
    for u, v, d in cg.graph.edges(data=True):
        stv = statuses.get(v)
        if stv is None or stv.status != "conditional" or v not in params:
            continue
        sites = d.get("passed") or [None]
        if any(p is None or p[2] for p in sites):
            continue   # a call whose arguments are not known (or spread): it may pass the option
        own = params[v]
        names: Set[str] = set()
        whole = True
        for r in stv.reasons:
            _head, sep, cond = r.partition(COND_SEP)
            m = _CALLER_SETS.match(cond) if sep else None
            words = set(_WORD.findall(m.group("expr"))) & set(own) if m else set()
            if not words:
                whole = False
                break
            names |= words
        if not whole:
            continue
        off = 1 if own and own[0] in ("self", "cls") else 0
        if all(not (names & (set(kws) | set(own[off:off + npos]))) for npos, kws, _star in sites):
            out.append((u, v))
    return out


def _propagate_with_guards(cg, roots: Dict[str, Dict[str, List[str]]], none_on_failure: Set[str] = frozenset()):
    """Propagate over the unguarded edges; a guarded call (one with a working
    fallback) into an unsupported or conditional function makes the caller
    ``conditional`` with that guard's condition, then propagate again. A call into a function that returns
    None when its GPU-only part fails follows what the caller does with the result (:func:`_none_results`)."""
    g = cg.graph
    drop, called = _none_results(g, roots, none_on_failure) if none_on_failure else ([], {})
    if drop:
        g = g.copy()
        g.remove_edges_from(drop)
        for u, heads in called.items():
            lst = roots.setdefault(u, {}).setdefault("unsupported", [])
            lst.extend(h for h in heads if h not in lst)
    guarded = [(u, v, d["cond"]) for u, v, d in g.edges(data=True) if d.get("cond")]
    inst = [(u, v, d["inst"]) for u, v, d in g.edges(data=True) if d.get("inst") and not d.get("cond")]
    # a call into what an instance attribute holds, every value of which needs unsupported code to be made
    # (`self._module = get_module(...)` in plan(), `self._module.run(x)` in run()): read after the first propagation
    held = getattr(cg, "held_uses", None) or ()
    if not guarded and not inst:
        out = propagate(g, roots)
        return propagate(g, roots) if held and _held_roots(held, out, roots) else out
    plain = g.copy()
    plain.remove_edges_from([(u, v) for u, v, _c in guarded] + [(u, v) for u, v, _c in inst])
    guarded = [(u, v, c) for u, v, c in guarded if c != UNREACHABLE]
    condensed: list = [None]   # the second propagation runs on the same graph: one condensation for both
    first = propagate(plain, roots, condensed)
    added = _instance_roots(inst, first, roots)
    if held and _held_roots(held, first, roots):
        added = True
    both = _both_branches_unsupported(guarded, first)
    for u, heads in _every_arm_unsupported(g, guarded, first).items():
        lst = both.setdefault(u, [])
        lst.extend(h for h in heads if h not in lst)
    for u, heads in both.items():
        lst = roots.setdefault(u, {}).setdefault("unsupported", [])
        for h in heads:
            if h not in lst:
                lst.append(h)
                added = True
    stops: Dict[Tuple[str, str], Set[str]] = {}
    for u, v, cond in guarded:
        if u in both:
            continue
        stv = first.get(v)
        if stv is None or stv.status not in ("unsupported", "conditional"):
            continue
        heads, _conds = _split_conditions(stv.reasons)
        lst = roots.setdefault(u, {}).setdefault("conditional", [])
        shown = cond[len(OFF_BY_DEFAULT):] if cond.startswith(OFF_BY_DEFAULT) else cond
        for h in heads[:4]:
            r = f"{h}{COND_SEP}{shown}"
            if r not in lst:
                lst.append(r)
                added = True
    # needs-migration / unknown still flow through guarded edges
    for u, v, cond in guarded:
        stv = first.get(v)
        if cond.startswith(OFF_BY_DEFAULT):
            continue   # behind a default-off option: off the path unless CUDA-only (as the findings there)
        if stv is not None and stv.status in ("unknown", "needs-migration"):
            lst = roots.setdefault(u, {}).setdefault(stv.status, [])
            for r in stv.reasons[:4]:
                if r not in lst:
                    lst.append(r)
                    added = True
    if added:
        _settle_self_dispatch(g, plain, getattr(cg, "linker", None), guarded, first, both, roots, stops)
    return propagate(plain, roots, condensed, stops) if added else first


def _settle_self_dispatch(g, plain, linker, guarded, first, both, roots, stops) -> None:
    """The guarded edges from ``self.m()`` to a subclass's override (:data:`~analyse.callgraph.STUB_OF`) carry
    what the override does (as a condition, or as its needs-migration / unknown reasons) to the method that calls
    it; a caller on the same instance whose class never runs the override gets none of it, one whose class always
    runs it gets the override's status itself (:func:`~analyse.callgraph.self_dispatch_context`). Fills *stops*
    (edge -> reasons it does not carry) and *roots*. A reason the called function reaches without the override
    (the first propagation) still passes."""
    for u, v, cond in guarded:
        stub = g.edges[u, v].get(STUB_OF)
        stv = first.get(v)
        if not stub or stv is None or u in both or linker is None:
            continue
        if stv.status in ("unsupported", "conditional"):
            st = "conditional"
            made = [f"{h}{COND_SEP}{cond}" for h in _split_conditions(stv.reasons)[0][:4]]
        else:
            st, made = stv.status, stv.reasons[:4]
        blocked, always = self_dispatch_context(plain, linker, u, stub[0], stub[1])
        for p, q in blocked:
            fq = first.get(q)
            own = set(fq.reasons) if fq is not None and fq.status == st else set()
            stops.setdefault((p, q), set()).update(r for r in made if r not in own)
        for p in always:
            lst = roots.setdefault(p, {}).setdefault(stv.status, [])
            lst.extend(r for r in stv.reasons if r not in lst)




def _instance_roots(inst, first, roots: Dict[str, Dict[str, List[str]]]) -> bool:
    """The edges into an inherited method called on an instance of known class (``make_spec().build_and_load()``,
    the ``inst`` of :func:`analyse.callgraph.build_graph`): the method's reasons, less those it has only when ``self``
    is an instance of another subclass (its stub dispatch to their overrides; the instance's own override has its
    own edge). True when a root was added."""
    added = False
    for u, v, classes in inst:
        stv = first.get(v)
        if stv is None:
            continue
        kept: List[Tuple[str, str]] = []
        for r in stv.reasons:
            head, sep, cond = r.partition(COND_SEP)
            m = STUB_CONDITION.match(cond) if sep else None
            if m is not None and m.group("cls") not in classes:
                continue
            kept.append((head, r))
        if not kept:
            continue
        st = stv.status
        if st == "conditional" and all(COND_SEP not in r for _h, r in kept):
            st = "unsupported"
        lst = roots.setdefault(u, {}).setdefault(st, [])
        for _h, r in kept[:4]:
            if r not in lst:
                lst.append(r)
                added = True
    return added


def _both_branches_unsupported(guarded, first) -> Dict[str, List[str]]:
    """Callers whose two branches of one test (``if C: a() else: b()``, each a guarded call with the other branch as
    its fallback) both call unsupported code: neither branch is a working fallback for the other, so the caller is
    unsupported whichever way the test goes -> caller: the reasons of both branches."""
    sites: Dict[Tuple[str, str], Dict[str, List[str]]] = {}
    for u, v, cond in guarded:
        m = FALLBACK_CONDITION.match(cond)
        if m is None:
            continue
        stv = first.get(v)
        c = m.group("cond").strip()
        side = sites.setdefault((u, m.group("where")), {})
        heads = side.setdefault(c, [])
        if stv is None or stv.status != "unsupported":
            heads.append("")   # this branch calls something that runs: a working side
        else:
            heads.extend(stv.reasons[:4])
    out: Dict[str, List[str]] = {}
    for (u, _where), side in sites.items():
        for c, heads in side.items():
            other = side.get(c[4:].strip() if c.startswith("not ") else None) if c.startswith("not ") else side.get(f"not {c}")
            if other is None or not heads or not other or "" in heads or "" in other:
                continue
            lst = out.setdefault(u, [])
            for h in heads + other:
                if h not in lst:
                    lst.append(h)
    return out


def _every_arm_unsupported(g, guarded, first) -> Dict[str, List[str]]:
    """Callers with an ``if`` / ``elif`` chain whose final ``else`` only stops (``else: raise ValueError``) and whose
    every other arm calls unsupported code (``if reduce == "sum": return sum_op(...) elif reduce == "mean": return
    mean_op(...) ... else: raise``): the caller's choice only picks which unsupported op runs, so no arm is a working
    fallback and the caller is unsupported whatever it passes -> caller: the reasons of the arms."""
    per: Dict[Tuple[str, tuple], Dict[int, List[str]]] = {}
    total: Dict[Tuple[str, tuple], int] = {}
    for u, v, _cond in guarded:
        arms = g.edges[u, v].get("arms") if g.has_edge(u, v) else None
        stv = first.get(v)
        if not arms or stv is None or stv.status != "unsupported":
            continue
        for path, line, arm, n in arms:
            key = (u, (path, line))
            total[key] = n
            heads = per.setdefault(key, {}).setdefault(arm, [])
            heads.extend(r for r in stv.reasons[:4] if r not in heads)
    out: Dict[str, List[str]] = {}
    for key, by_arm in per.items():
        if len(by_arm) < total[key]:
            continue   # an arm that calls nothing unsupported is a working choice
        lst = out.setdefault(key[0], [])
        for arm in sorted(by_arm):
            lst.extend(h for h in by_arm[arm] if h not in lst)
    return out


def kernel_load_status(loader: str, builders) -> Optional[Tuple[str, str]]:
    """(status, reason) of a call of a kernel loader (``AdamLoader().load()``, :meth:`Linker.kernel_loader`)
    from what its builders build, the loader taking the one that is usable where it runs: a builder with an NPU
    implementation (torch_npu) serves an NPU host (None: nothing to report); builders that all build CUDA extensions
    leave it none (unsupported); CUDA builders beside C++ ones for the host make it the host's choice
    (conditional: reason + COND_SEP + condition); C++ builders alone build for the host (needs-migration)."""
    if any(BUILD_NPU in kinds for _c, kinds in builders):
        return None
    short = lambda cs: ", ".join(c.rpartition(".")[2] for c in cs)   # noqa: E731
    cuda = [c for c, kinds in builders if BUILD_CUDA in kinds]
    cpp = [c for c, kinds in builders if kinds and BUILD_CUDA not in kinds and BUILD_CPP in kinds]
    if cuda and not cpp:
        return "unsupported", (f"{loader} (a kernel loader whose builders build CUDA extensions only: {short(cuda)}; "
                               "none builds an NPU kernel)")
    if cuda:
        return "conditional", (f"{loader} (a kernel loader choosing its builder where it runs: {short(cuda)} build "
                               f"CUDA extensions, {short(cpp)} a C++ one for the host){COND_SEP}only where the "
                               f"loader takes {short(cuda)} (its CUDA builder; the host decides which builder is "
                               "usable)")
    if cpp:
        return "needs-migration", (f"{loader} (a kernel loader whose builders build C++ extensions for the host: "
                                   f"{short(cpp)}; build them on the Ascend host)")
    return None


def _judge_ext_findings(findings: List[Finding], cpp) -> List[Finding]:
    """Findings on calls into the library's own compiled ops follow the C++ scan:
    an op with the library's NPU implementation is not a blocker (one consistent
    story: never both an Ascend implementation and a blocker), a CPU-only op is
    not a CUDA blocker."""
    out = []
    for f in findings:
        if f.code in EXT_FINDING_CODES and f.severity == "blocker" and "." in f.api:
            mod, _, op = f.api.rpartition(".")
            if cpp.binding_for(f.api) and op:
                st, why, _ev = cpp.op_status(f.api)
                if st == "supported" and all(b.host_object for b in cpp.binding_for(f.api)):
                    f = dataclasses.replace(f, severity="info", confidence="high", evidence="syntax",
                                            message=f"`{f.api}` builds an object of the library's compiled module; "
                                                    f"{why.split(' (', 1)[1][:-1]}.",
                                            replacement="build the library's C++ extension on the Ascend host")
                elif st == "supported":
                    f = dataclasses.replace(f, severity="info", confidence="high", evidence="syntax",
                                            message=f"`{f.api}` calls the library's compiled op; {why.split(' (', 1)[1][:-1]}. "
                                                    "Build the extension with its NPU sources.",
                                            replacement="build the library for Ascend (its NPU kernels are registered)")
                elif st == "needs-migration":
                    f = dataclasses.replace(f, severity="manual",
                                            message=f"`{f.api}` calls a CPU-only C++ op of the library: "
                                                    f"{why.split(' (', 1)[1][:-1]}. Tensors on the NPU must be moved "
                                                    "to the host for it, or the op ported.",
                                            replacement="x.cpu() around the call, or port the op to Ascend C")
        out.append(f)
    return out


# --------------------------------------------------------------------------- the library's own NPU support

# the pieces of a real NPU backend (callgraph.npu_evidence kinds): a library with most of them has native support
BACKEND_LABELS = {"device": "NPU device type", "comm_backend": "HCCL communication backend", "rng": "NPU RNG calls",
                  "memory": "NPU memory calls", "kernels": "Ascend kernels (torch_npu.npu_*)"}
NATIVE_BACKEND_KINDS = 4


def served_by_npu_backend(py_ev: Dict[str, List[str]], locator) -> Set[str]:
    """With a native NPU backend (an NPU accelerator class, or most pieces of a backend): the functions that
    hold an NPU branch of their own (``"npu"`` device strings or branches, ``torch.npu`` RNG / memory calls,
    NPU availability checks) -- on an NPU they take that branch, so the CUDA implementation beside it is not
    theirs to answer for."""
    if not (py_ev.get("accelerator") or len(npu_backend_kinds(py_ev)) >= NATIVE_BACKEND_KINDS):
        return set()
    out: Set[str] = set()
    for kind in ("device_type", "device_branch", "availability", "rng", "memory", "kernels"):
        for item in py_ev.get(kind, ()):
            path, _, rest = item.partition(":")
            line = rest.partition(":")[0]
            if line.isdigit():
                fn = locator.locate(path, int(line))
                if fn is not None and not fn.endswith(PSEUDO_FNS):
                    out.add(fn)
    return out


def npu_backend_kinds(py_ev: Dict[str, List[str]]) -> List[str]:
    """Which pieces of an NPU backend the library's Python code has: its device type (``"npu"`` devices or
    ``device.type == "npu"`` branches), the HCCL communication backend, ``torch.npu`` RNG and memory calls,
    Ascend fused kernels it calls through torch_npu."""
    out = []
    if py_ev.get("device_type") or py_ev.get("device_branch"):
        out.append("device")
    for k in ("comm_backend", "rng", "memory", "kernels"):
        if py_ev.get(k):
            out.append(k)
    return out


def _library_verdict(inputs, res: LibraryAnalysis, py_ev: Dict[str, List[str]], by_status: Dict[str, int],
                     n_functions: int, public_affected: List[str], import_failures: Sequence[dict] = ()) -> dict:
    for k in ("accelerator", "torch_npu", "device_branch", "availability"):
        py_ev.setdefault(k, [])
    cpp = res.cpp
    cuda_ops = [b for b in cpp.bindings if b.cuda_code or b.kernels]
    npu_ops = [b for b in cuda_ops if b.npu_impls]
    evidence: List[str] = []
    if py_ev["accelerator"]:
        evidence += [f"NPU accelerator: {e}" for e in py_ev["accelerator"][:5]]
    if npu_ops:
        evidence.append(f"{len(npu_ops)} of {len(cuda_ops)} compiled CUDA ops have an NPU implementation registered "
                        "in the library's sources")
    evidence += cpp.npu_evidence()[:10]
    for kind, label in (("torch_npu", "torch_npu import"), ("device_branch", "NPU device branch"),
                        ("availability", "NPU availability check")):
        items = py_ev[kind]
        if items:
            evidence += [f"{label}: {e}" for e in items[:3]]
            if len(items) > 3:
                evidence.append(f"{label}: {len(items) - 3} more")
    backend_kinds = npu_backend_kinds(py_ev)
    if len(backend_kinds) >= NATIVE_BACKEND_KINDS:
        evidence.insert(0, "NPU backend: " + ", ".join(backend_kinds))
        for kind in backend_kinds:
            items = (py_ev.get("device_type") or py_ev.get("device_branch") or []) if kind == "device" \
                else py_ev.get(kind, ())
            for e in items[:2]:
                evidence.append(f"{BACKEND_LABELS[kind]}: {e}")
    if py_ev["accelerator"] or (cuda_ops and len(npu_ops) >= 0.8 * len(cuda_ops)) \
            or len(backend_kinds) >= NATIVE_BACKEND_KINDS:
        level = "native"
    elif evidence:
        level = "partial"
    else:
        level = "none"
    uns = by_status.get("unsupported", 0)
    cond = by_status.get("conditional", 0)
    unk = by_status.get("unknown", 0)
    nm = by_status.get("needs-migration", 0)
    share = uns / max(1, n_functions)
    support = {"native": "The library has its own NPU support", "partial": "The library has partial NPU support",
               "none": "The library has no NPU support of its own"}[level]
    if uns == 0:
        verdict = (f"{support}; no function is blocked" + (f" ({cond} run CUDA code only under a guard with a fallback)"
                                                           if cond else "")
                   + (f"; {nm} need the usual migration (transfer_to_npu)" if nm else "") + ".")
    elif share <= 0.02:
        verdict = (f"{support}; mostly portable: {uns} of {n_functions} functions are blocked by CUDA-only code"
                   + (f", {cond} only under a guard" if cond else "") + f"; {unk} unverified.")
    else:
        verdict = (f"{support}; blocked in part: {uns} of {n_functions} functions reach CUDA-only code with no NPU path"
                   + (f" ({len(public_affected)} public entry points affected)" if public_affected else "") + ".")
    failing = sorted({(d["module"], d["path"], d["line"], d["api"]) for d in import_failures},
                     key=lambda x: (x[1], x[2]))
    if failing:
        modules = list(dict.fromkeys(m for m, _p, _l, _a in failing))
        first = "; ".join(f"{p}:{ln} `{a}`" for _m, p, ln, a in failing[:3])
        verdict += (f" {len(modules)} module(s) cannot even be imported on an NPU host as written: their top-level code "
                    f"calls CUDA-only APIs at import time ({first}" + (f"; {len(failing) - 3} more" if len(failing) > 3
                                                                      else "") + ").")
    name = inputs[0].resolve().name if inputs else ""
    out = {"name": name, "npu_support": {"level": level, "evidence": evidence}, "verdict": verdict}
    if failing:
        out["import_failures"] = [{"module": m, "path": p, "line": ln, "api": a} for m, p, ln, a in failing]
    return out


def public_entry_points(summaries: Sequence[ModuleSummary], linker) -> Set[str]:
    """Functions a user of the library can call: what package ``__init__`` modules
    export (``__all__`` or public names, re-exports followed), public top-level
    functions of public modules, and public methods of their public classes."""
    out: Set[str] = set()

    def add_class(cq: str) -> None:
        info = linker.classes.get(cq)
        if info is None:
            return
        for m in info.methods:
            if not m.startswith("_") or m in ("__init__", "__call__"):
                out.add(f"{cq}.{m}")

    for s in summaries:
        if any(p.startswith("_") for p in s.modname.split(".")):
            if not s.is_package:
                continue
        names = s.exported() if s.is_package else {n for n in s.top_names if not n.startswith("_")}
        if s.all_names is not None:
            names = set(s.all_names)
        for name in names:
            k, q = linker.canonical(f"{s.modname}.{name}")
            if k == "def" and not q.endswith(PSEUDO_FNS):
                out.add(q)
            elif k == "class":
                add_class(q)
    return {q for q in out if q in linker.functions}


def _call_targets(linker, kind: str, q: str) -> List[str]:
    if kind == "def":
        return [q]
    if kind == "class":
        return [m for m in (linker.lookup_method(q, n) for n in ("__init__", "forward", "__call__")) if m]
    if kind == "classattr":
        cls, _, meth = q.rpartition(".")
        if meth == "apply" and linker.is_autograd_function(cls):
            return [m for m in (linker.lookup_method(cls, "forward"), linker.lookup_method(cls, "backward")) if m]
    return []


def affected_aliases(res: LibraryAnalysis) -> Dict[str, List[str]]:
    """Names a user may call an affected function under (re-exports, ``X = Fn.apply``,
    classes -> their ``__init__`` / ``forward``), for ``--with-thirdparty``."""
    cg = res.callgraph
    if cg is None:
        return {}
    linker = cg.linker
    affected = res.statuses
    out: Dict[str, List[str]] = {}

    def add(name: str) -> None:
        try:
            k, q = linker.canonical(name)
        except RecursionError:  # pragma: no cover
            return
        targets = [t for t in _call_targets(linker, k, q) if t in affected]
        if targets and targets != [name]:
            out[name] = targets

    for s in res.summaries:
        names = set(s.top_names) | (s.exported() if s.is_package else set())
        for src in s.star_imports:
            m = linker.modules.get(src)
            if m is not None:
                names |= m.exported()
        for n in names:
            if not n.startswith("__"):
                add(f"{s.modname}.{n}")
    for cq in linker.classes:
        add(cq)
        add(f"{cq}.apply")
    return dict(sorted(out.items()))


def analyse_library(inputs: Sequence[Path], kb, input_names: Optional[List[str]] = None, passes=None,
                    settings: Optional[Settings] = None, policy=None, roles=None) -> dict:
    """The ``thirdparty`` report dict (report.schema.json); *policy*: an :class:`analyse.policy.Policy`;
    *roles*: ``{glob: role}`` file-role overrides."""
    t0 = time.perf_counter()
    inputs = [Path(p) for p in inputs]
    res = analyse_library_data(inputs, kb, passes=passes, settings=settings,
                               admit=policy.admit if policy is not None else None)
    extra = {
        "aliases": affected_aliases(res),
        "public_affected_entry_points": res.public_affected[:500],
    }
    if res.cpp is not None and (res.cpp.files or res.cpp.bindings):
        extra["extensions"] = res.cpp.summary()
    thirdparty = {"functions": res.functions, "summary": res.summary, "library": res.library,
                  "coverage": res.coverage, **extra}
    return build_report(
        mode="thirdparty",
        inputs=input_names or [str(p) for p in inputs],
        torch_version=kb.torch_version,
        torch_npu_version=kb.torch_npu_version,
        knowledge_base=kb.identifier,
        findings=res.findings,
        errors=res.errors,
        files_analysed=res.files_analysed,
        lines_analysed=res.lines_analysed,
        duration_s=time.perf_counter() - t0,
        thirdparty=thirdparty,
        policy=policy,
        roles=roles,
    )
