"""``npu-analyse thirdparty``: which functions of a library break on an NPU, and why.

The library goes through :func:`analyse.pipeline.run` (worker processes,
per-file cache, bounded memory):

1. **pre-scan** -- every module is parsed (astroid, no inference), its classes
   and bases go into the shared :class:`~analyse.resolve.ProjectIndex`;
2. **passes + summary** -- the script-mode passes (whatever
   :func:`analyse.passes.discover_passes` returns) run on each module, which is
   reduced to a :class:`~analyse.callgraph.ModuleSummary` (functions with line
   ranges, resolved call sites, import / re-export tables), and the tree is
   dropped; non-Python files go to the passes' ``check_file`` and the C++/CUDA
   sources to :mod:`analyse.library.cpp`;
3. **call graph** -- :func:`analyse.callgraph.build_graph` links the summaries;
4. **roots** -- each finding is mapped to its innermost enclosing function
   (blocker/manual findings of unsupported-api, third-party, cuda-extension and
   cuda-api make it ``unsupported``; ``auto`` ones ``needs-migration``;
   unknown-api ones ``unknown``); calls into compiled extension ops are rooted
   in the CUDA kernels behind their binding; unresolvable calls into the
   library make the caller ``unknown``;
5. **propagation** to every transitive caller (:func:`analyse.callgraph.propagate`).

Nothing analysed is imported or executed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from analyse.callgraph import MODULE_FN, FunctionLocator, ModuleSummary, build_graph, classify, propagate
from analyse.findings import AnalysisError, Finding
from analyse.pipeline import Settings
from analyse.pipeline import run as pipeline_run
from analyse.report import build_report
from analyse.library.cpp import CPP_SUFFIXES, scan_sources

__all__ = ["analyse_library", "LibraryAnalysis", "analyse_library_data"]

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


def _setup_texts(inputs: Sequence[Path]) -> List[str]:
    out = []
    for inp in inputs:
        root = inp.resolve()
        for cand in (root / "setup.py", root.parent / "setup.py"):
            try:
                if cand.is_file() and cand.stat().st_size < 1_000_000:
                    out.append(cand.read_text(errors="replace"))
            except OSError:
                continue
    return out


def analyse_library_data(inputs: Sequence[Path], kb, passes=None, settings: Optional[Settings] = None,
                         admit=None) -> LibraryAnalysis:
    res = LibraryAnalysis()
    t = res.timings
    # ---- phases 1-2: the pipeline (pre-scan, passes and call-graph summaries per module, in workers)
    run = pipeline_run(list(inputs), kb, mode="thirdparty", passes=passes, settings=settings,
                       extra_suffixes=CPP_SUFFIXES, summaries=True, admit=admit)
    t["parse_s"] += run.timings.get("prescan_s", 0.0) + run.timings.get("hash_s", 0.0)
    t["passes_s"] += run.timings.get("analyse_s", 0.0) + run.timings.get("finish_s", 0.0)
    res.findings = list(run.findings)
    res.errors = list(run.errors)
    res.summaries = list(run.summaries)
    res.lines_analysed = run.lines_analysed
    failed: Dict[str, str] = dict(run.failed)
    res.files_analysed = len(res.summaries)
    other = run.others

    # ---- the C++/CUDA scan
    t0 = time.perf_counter()
    cpp_files = [(abspath, rel) for abspath, rel in other if abspath.suffix in CPP_SUFFIXES]
    res.cpp = scan_sources(cpp_files, _setup_texts(inputs))
    seen_err = {(e.path, e.kind) for e in res.errors}
    res.errors.extend(e for e in res.cpp.errors if (e.path, e.kind) not in seen_err)
    res.files_analysed += res.cpp.files
    res.lines_analysed += res.cpp.lines
    t["parse_s"] += time.perf_counter() - t0
    res.files_analysed += len([o for o in other if o[0].suffix not in CPP_SUFFIXES])

    # ---- call graph
    t0 = time.perf_counter()
    ext_names: Set[str] = set(res.cpp.ext_module_names())
    for s in res.summaries:
        for name, (ext, _ops) in s.ext_aliases.items():
            ext_names.add(ext)
    cg = build_graph(res.summaries, failed_modules=failed.keys(), ext_modules=ext_names)
    res.callgraph = cg
    t["callgraph_s"] += time.perf_counter() - t0

    # ---- roots and propagation
    t0 = time.perf_counter()
    roots: Dict[str, Dict[str, List[str]]] = {}

    def add_root(fn: str, status: str, reason: str) -> None:
        lst = roots.setdefault(fn, {}).setdefault(status, [])
        if reason not in lst:
            lst.append(reason)

    locator = FunctionLocator(res.summaries)
    for f in res.findings:
        st = classify(f)
        if st is None:
            continue
        fn = locator.locate(f.path, f.line)
        if fn is None:
            continue
        add_root(fn, st, f.api)
    for u in cg.unknowns:
        add_root(u.caller, "unknown", u.reason)
    ext_roots = 0
    for caller, _line, ext in cg.ext_calls:
        st, reason = res.cpp.reason(ext)
        add_root(caller, st, reason)
        ext_roots += 1
    # a compiled-op reason makes a plain api reason for the same op redundant
    for fn, by in roots.items():
        for st, lst in by.items():
            detailed = [r for r in lst if " (" in r]
            if detailed:
                heads = [d.split(" (", 1)[0] for d in detailed]
                lst[:] = [r for r in lst if " (" in r or not any(h == r or h.endswith("." + r) for h in heads)]
    res.statuses = propagate(cg.graph, roots)
    t["propagation_s"] += time.perf_counter() - t0

    # ---- report data
    g = cg.graph
    linker = cg.linker
    functions = []
    for q, stt in res.statuses.items():
        if q not in linker.functions:
            continue
        path, line, _end = linker.functions[q]
        functions.append({"qualname": q, "path": path, "line": line, "status": stt.status,
                          "reasons": list(stt.reasons), "via": list(stt.via)})
    functions.sort(key=lambda d: (d["path"], d["line"], d["qualname"]))
    res.functions = functions
    res.entry_points = public_entry_points(res.summaries, linker)
    by_status: Dict[str, int] = {}
    for d in functions:
        by_status[d["status"]] = by_status.get(d["status"], 0) + 1
    public_affected = sorted(q for q in res.entry_points if q in res.statuses)
    real_functions = [q for q in linker.functions if not q.endswith(MODULE_FN)]
    res.summary = {
        "functions_total": len(real_functions),
        "affected": len([d for d in functions if not d["qualname"].endswith(MODULE_FN)]),
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
            if k == "def" and not q.endswith(MODULE_FN):
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
                    settings: Optional[Settings] = None, policy=None) -> dict:
    """The ``thirdparty`` report dict (report.schema.json); *policy*: an :class:`analyse.policy.Policy`."""
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
    thirdparty = {"functions": res.functions, "summary": res.summary, **extra}
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
    )
