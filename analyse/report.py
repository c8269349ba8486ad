"""Turning findings and errors into the report object (report.schema.json)."""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from analyse import __version__
from analyse.findings import CATEGORIES, SEVERITIES, SEVERITY_RANK, AnalysisError, Finding, evolve

EFFORT_TEXT = {
    "none": "No migration work found",
    "low": "Low effort",
    "medium": "Medium effort",
    "high": "High effort",
    "blocked": "Blocked until new NPU work is done",
    "unknown": "Effort unknown: too little could be analysed",
}
EFFORT_ORDER = ("none", "low", "medium", "high", "blocked")


def grade(blockers: int, manual_apis: int, manual: int, auto: int, lib_apis: int = 0, lib_places: int = 0,
          rework: int = 0, lib_names: int = 0, kernels: int = 0) -> str:
    """Effort grade from the counts; *manual_apis* counts distinct APIs needing a manual change, *lib_apis* /
    *lib_places* the distinct APIs and places of GPU-only libraries (with a documented replacement) the code uses,
    *lib_names* how many distinct such libraries (:func:`library_of`), *kernels* the distinct Triton kernels the
    code launches that Triton-Ascend compiles after a manual port (:func:`triton_kernel_use`).

    The grades have one meaning each (the report's legend): ``blocked`` -- a kernel must be written (a CUDA
    extension with no fallback, an op with no NPU kernel); ``high`` / ``medium`` -- a documented replacement or edit
    exists, and a GPU-only library on the path (flash-attn, xformers, bitsandbytes, apex...) is at least medium
    (its calls are swapped for the NPU replacement), high when it is woven through the code, when many distinct
    GPU-only libraries are used (:data:`LIB_HIGH_LIBRARIES`: each is its own replacement to make and validate, and
    together they cover the model's core), or when *rework* of its uses have no drop-in replacement (the knowledge entry's ``rework: high``: the code around them is restructured);
    a Triton kernel on the path is at least medium (the legend's "fixable Triton kernels": each is ported to
    Triton-Ascend and validated against a PyTorch reference on the device, or rewritten in torch);
    ``low`` -- what transfer_to_npu rewrites and a few small edits; ``none`` -- nothing GPU-specific."""
    if blockers:
        return "blocked"
    if manual_apis > 15 or manual > 60 or lib_apis >= LIB_HIGH_APIS or lib_places >= LIB_HIGH_PLACES or rework \
            or lib_names >= LIB_HIGH_LIBRARIES:
        return "high"
    if manual_apis > 4 or manual > 15 or lib_places or kernels:
        return "medium"
    if manual or auto:
        return "low"
    return "none"


# a GPU-only library woven through the code: this many distinct APIs of such libraries, or places, grade high
LIB_HIGH_APIS = 8
LIB_HIGH_PLACES = 20
# many GPU-only libraries on one program's path: this many distinct ones grade high even when each is used in a few
# places. Each library is a separate replacement with its own NPU counterpart, numerics and tests (flash-attn ->
# npu_fusion_attention, its fused cross-entropy -> torch, its rotary kernel -> npu_rotary_mul, xFormers SwiGLU -> torch):
# four of them swap attention, MLP, embedding and loss, the model's core. One, two or three libraries (flash-attn
# with apex, or with bitsandbytes) stay medium: the practice set and the tuned projects judge those medium.
LIB_HIGH_LIBRARIES = 4


def library_of(f: Finding) -> str:
    """The GPU-only library a use belongs to: the top-level module of its API (``flash_attn.flash_attn_func`` ->
    ``flash_attn``), or the switch itself for a library turned on through another's arguments (``load_in_8bit=True``)."""
    return f.api.split(".")[0]


def _lib_counts(sub) -> Tuple[int, int, int]:
    """(distinct APIs, places, distinct libraries) of the counted GPU-only library uses in *sub*."""
    libs = _lib_uses(sub)
    return len({f.api for f in libs}), len(libs), len({library_of(f) for f in libs})


def _lib_uses(sub) -> List:
    """The counted uses of GPU-only libraries with a documented replacement (:func:`gpu_library_use`)."""
    return [f for f in sub if gpu_library_use(f)]


def _reworks(sub) -> List:
    """The counted manual findings whose library has no drop-in NPU replacement (``Finding.rework``)."""
    return [f for f in sub if f.rework == "high" and f.severity == "manual"]


def _top(counter: Counter, n: int = 3) -> str:
    return ", ".join(f"{k} ({v})" for k, v in counter.most_common(n))


TRITON_KERNEL_CODE = "NPU506"


def triton_kernel_use(f: Finding) -> bool:
    """A Triton kernel (defined or launched) that Triton-Ascend compiles after a manual port: NPU506 at manual
    severity (a kernel with a violation that blocks is a blocker). On the default path it is at least medium
    (EFFORT_LEGEND: "fixable Triton kernels"; the practice rule: a Triton kernel is manual work, medium/high)."""
    return f.code == TRITON_KERNEL_CODE and f.severity == "manual" and f.api.startswith("triton-kernel:")


def _kernel_count(sub) -> int:
    """The distinct Triton kernels among *sub* (:func:`triton_kernel_use`)."""
    return len({f.api for f in sub if triton_kernel_use(f)})


def _triton_kernels(findings: Sequence[Finding]) -> Dict[str, str]:
    """Triton kernel -> its grade (NPU506: blocker or manual) among *findings*."""
    out: Dict[str, str] = {}
    for f in findings:
        if f.code == "NPU506" and f.api.startswith("triton-kernel:") and out.get(f.api) != "blocker":
            out[f.api] = f.severity
    return out


def verdict(findings: Sequence[Finding], files_analysed: int) -> dict:
    sev = Counter(f.severity for f in findings)
    blockers = sev.get("blocker", 0)
    manual = sev.get("manual", 0)
    auto = sev.get("auto", 0)
    manual_apis = Counter(f.api for f in findings if f.severity == "manual")
    blocker_apis = Counter(f.api for f in findings if f.severity == "blocker")
    effort = grade(blockers, len(manual_apis), manual, auto, *_lib_counts(findings)[:2], len(_reworks(findings)),
                   _lib_counts(findings)[2], _kernel_count(findings))
    parts: List[str] = []
    files = len({p for f in findings for p in (f.path, *f.other_paths)})
    if not findings:
        parts.append(f"Nothing in the {files_analysed} analysed file(s) needs changing for an Ascend NPU.")
    else:
        parts.append(f"{len(findings)} finding(s) in {files} of {files_analysed} file(s).")
    if blockers:
        parts.append(
            f"{blockers} blocker(s) need new NPU work or a replacement before the code can run "
            f"(custom CUDA kernels, GPU-only libraries or unsupported APIs), most often: {_top(blocker_apis)}."
        )
    if manual:
        parts.append(
            f"{manual} place(s) over {len(manual_apis)} distinct API(s) need a manual code change "
            f"that transfer_to_npu does not make, most often: {_top(manual_apis)}."
        )
    if auto:
        parts.append(
            f"{auto} CUDA use(s) are rewritten at run time by `from torch_npu.contrib import transfer_to_npu`; "
            "replacing them in the source (torch.npu / 'npu' / 'hccl') makes the port explicit."
        )
    triton = _triton_kernels(findings)
    if triton:
        ok = sum(1 for v in triton.values() if v != "blocker")
        parts.append(f"Triton: {len(triton)} kernel(s); {ok} port as they are with Triton-Ascend >= 3.2.0 (manual: "
                     f"validate each against the PyTorch reference), {len(triton) - ok} have a hard violation of the "
                     "Triton-Ascend constraints (blocker).")
    advice = sev.get("advice", 0)
    info = sev.get("info", 0)
    if advice or info:
        parts.append(f"{advice} precision/performance advice and {info} informational note(s) do not block the port.")
    return {
        "effort": effort,
        "blockers": blockers,
        "manual_changes": manual,
        "auto_migratable": auto,
        "explanation": " ".join(parts),
    }


# --------------------------------------------------------------------------- scoped verdict
#
# A finding counts for an entry point when the entry point reaches it (entry-point, reachable or
# unknown reach), it is not guarded with a working fallback, and its file is product code (or is the
# entry point's own file, or a non-product file of the entry point's own role and top folder: an
# example's helper module counts for the example). Guarded findings with a fallback do not count,
# except automatic ones (transfer_to_npu makes torch.cuda.is_available() true on an NPU, so the CUDA
# branch is the one that runs) and distributed set-up (multi-device training is not optional for
# the programs that use it). The overall effort is the worst verdict of the product entry points
# (of all entry points when none is product). Without entry points every product finding counts.

# reach statuses that count: a finding reached only through calls the analysis could not follow (``unknown``:
# a registry, a config, getattr) is listed with the reason ``unresolved-dispatch`` and never counted (#29)
COUNTED_REACH = ("entry-point", "reachable")
REACH_RANK = {"entry-point": 0, "reachable": 0, "unknown": 1, "unreached": 2}
DRIVER_SEVERITIES = ("blocker", "manual", "auto")
MAX_DRIVERS = 8


def is_off_path(f: Finding) -> bool:
    """The guard's condition is false on an NPU host with the defaults (transfer_to_npu scenario):
    the code does not run unless a user changes a setting (analyse.conditions)."""
    g = f.guard
    if not g or (g.get("on_path") or {}).get("transfer_to_npu") != "off":
        return False
    # a distributed setting under its own off-by-default test (`if args.distributed: init_process_group("nccl")`)
    # is the program's distributed run mode and counts; one reached only through a call (or import) that is off
    # with the defaults somewhere else (`if self.use_engine: Engine()` in another module) does not run at all; nor
    # does one under a CUDA device test that the NPU fails in every scenario, with a working other branch
    # (`elif device.type == "cuda": model = DataParallel(model)` with the device from torch.accelerator): that is no
    # run mode a user picks, the NPU takes the other branch
    return f.category != "distributed" or g.get("path") not in (None, f.path) or bool(g.get("npu_fallback"))


def excused(f: Finding) -> bool:
    """Not counted (see above): off the path with the defaults, or guarded with a working fallback
    unless the condition holds on an NPU host (a CUDA test that transfer_to_npu makes true)."""
    g = f.guard
    if not g:
        return False
    if is_off_path(f):
        return True
    if g.get("npu_branch") and f.severity == "auto":
        return True   # the chain's NPU branch runs without transfer_to_npu; with it, this branch runs as torch.npu
    if (g.get("on_path") or {}).get("transfer_to_npu") == "on":
        return False
    return bool(g.get("fallback")) and f.severity != "auto" and f.category != "distributed"


def _top_dir(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def role_counts_for(f: Finding, ep) -> bool:
    if f.role in (None, "product"):
        return True
    if ep is None:
        return False
    return f.path == ep.path or (f.role == ep.role and _top_dir(f.path) == _top_dir(ep.path))


def _rank(effort: str) -> int:
    return EFFORT_ORDER.index(effort) if effort in EFFORT_ORDER else -1


# Grades, one meaning each (the report's legend, EFFORT_LEGEND):
EFFORT_LEGEND = {
    "none": "nothing needs changing for an Ascend NPU",
    "low": "only changes transfer_to_npu makes at run time, or a handful of small manual edits (a guard edit, a "
           "device test, a fixable call, a GPU-only dependency that only the manifests name)",
    "medium": "manual work with a documented way: a GPU-only library replaced by its documented NPU counterpart "
              "on the default path, fixable Triton kernels, or many manual edits",
    "high": "manual work across the code base (many distinct APIs or places, a GPU-only library woven through "
            "the code, or one with no drop-in NPU replacement whose uses must be restructured)",
    "blocked": "a kernel must be written: a CUDA extension the project builds with no fallback, or an op with no "
               "NPU kernel and no decomposition",
}


# the rules that report a GPU-only library itself (imported, used, or switched on through another library's
# arguments); calls into an analysed library's functions (NPU45x) are not among them
GPU_LIBRARY_CODES = frozenset({"NPU401", "NPU402", "NPU403", "NPU404", "NPU460", "NPU461", "NPU463", "NPU464",
                               "NPU466", "NPU467", "NPU471", "NPU472"})


def gpu_library_use(f: Finding) -> bool:
    """A use of a GPU-only third-party library that has a documented NPU replacement (a manual finding of a
    GPU-only library rule): on the default path it is a replacement to make, at least medium (practice rule)."""
    return f.code in GPU_LIBRARY_CODES and f.severity == "manual"


# GPU-only dependencies outside the code: a GPU-only package in a manifest, a CUDA base image (analyse.passes.manifests)
MANIFEST_DEPENDENCY_CODES = frozenset({"NPU901", "NPU903"})


def manifest_dependency(f: Finding) -> bool:
    """A GPU-only dependency the project's own manifests name (not those of its tests, examples, docs or tools):
    alone it grades the project low (the environment is rebuilt without it), never more."""
    return f.code in MANIFEST_DEPENDENCY_CODES and f.severity in ("blocker", "manual") \
        and f.role in (None, "product", "build")


def grade_findings(fs: Sequence[Finding]) -> Tuple[str, int, int, int]:
    """(effort, blockers, manual, auto). Low-confidence findings alone never grade above medium. A counted use
    of a GPU-only library with a documented replacement, or a counted Triton kernel, makes the grade at least
    medium (EFFORT_LEGEND)."""
    def g(sub):
        sev = Counter(f.severity for f in sub)
        manual_apis = {f.api for f in sub if f.severity == "manual"}
        apis, places, names = _lib_counts(sub)
        return grade(sev.get("blocker", 0), len(manual_apis), sev.get("manual", 0), sev.get("auto", 0),
                     apis, places, len(_reworks(sub)), names, _kernel_count(sub))

    sure = g([f for f in fs if f.confidence != "low"])
    every = g(fs)
    capped = every if _rank(every) <= _rank("medium") else "medium"
    effort = sure if _rank(sure) >= _rank(capped) else capped
    sev = Counter(f.severity for f in fs)
    return effort, sev.get("blocker", 0), sev.get("manual", 0), sev.get("auto", 0)


def drivers_of(fs: Sequence[Finding], limit: int = MAX_DRIVERS) -> List[dict]:
    """The distinct APIs that set the grade, worst first: severity, then reached before unknown, then count."""
    groups: Dict[str, List[Finding]] = {}
    for f in fs:
        if f.severity in DRIVER_SEVERITIES:
            groups.setdefault(f.api, []).append(f)
    rows = []
    for api, members in groups.items():
        sev = min((f.severity for f in members), key=lambda x: SEVERITY_RANK[x])
        worst = [f for f in members if f.severity == sev]
        reach = min(REACH_RANK.get((f.reach or {}).get("status", "unknown"), 1) for f in worst)
        paths = sorted({f.path for f in members})
        # count the places at the severity shown, so "(manual, 2 place(s))" agrees with the sentences below
        rework = not any(f.rework == "high" for f in worst)   # a use to restructure leads among its severity
        rows.append(((SEVERITY_RANK[sev], rework, reach, -len(worst), api),
                     {"api": api, "severity": sev, "count": len(worst), "paths": paths[:5]}))
    rows.sort(key=lambda r: r[0])
    return [r[1] for r in rows[:limit]]


def _hops(path: Sequence[str]) -> str:
    hops = [h for h in path if not h.endswith((".<module>", ".<main>"))]
    if len(hops) > 4:
        hops = hops[:2] + ["..."] + hops[-2:]
    return " -> ".join(hops)


def _key(f: Finding) -> tuple:
    return (f.path, f.line, f.code, f.api)


def _ep_drivers(fs: Sequence[Finding], paths: Dict[tuple, List[str]]) -> List[dict]:
    """An entry point's own drivers, each with the place and the path from that entry point."""
    rows = drivers_of(fs, 3)
    for row in rows:
        cands = [f for f in fs if f.api == row["api"] and f.severity == row["severity"]]
        cands.sort(key=lambda f: (_key(f) not in paths, len(paths.get(_key(f)) or ()), f.path, f.line))
        if cands:
            f = cands[0]
            row["where"] = f"{f.path}:{f.line}"
            if _key(f) in paths:
                row["path"] = list(paths[_key(f)])
    return rows


# how many APIs an entry point's explanation names per list
EP_NAMED = 5
_UNCOUNTED_TEXT = (
    ("off-by-default", "off with the defaults (an option or setting turns them on)"),
    ("guarded", "guarded with a working fallback"),
    ("unresolved-dispatch", "reached only through calls the analysis could not follow (registries, configs, getattr)"),
)


def _named(fs: Sequence[Finding], limit: int = EP_NAMED) -> str:
    """The distinct APIs of *fs*, CUDA uses first (category order), then by how often they occur."""
    n: Counter = Counter(f.api for f in fs)
    cat = {}
    for f in fs:
        r = CATEGORIES.index(f.category) if f.category in CATEGORIES else len(CATEGORIES)
        cat[f.api] = min(cat.get(f.api, r), r)
    apis = sorted(n, key=lambda a: (cat[a], -n[a], a))
    more = f" and {len(apis) - limit} more" if len(apis) > limit else ""
    return ", ".join(f"{a} ({n[a]})" if n[a] > 1 else a for a in apis[:limit]) + more


def _ep_explanation(effort: str, counted: Sequence[Finding], uncounted: Sequence[Finding],
                    own_unknown: Iterable[tuple] = ()) -> str:
    """One entry point's verdict in words: what it counts by severity, the advice it reaches that needs no change,
    and the changes it may reach that do not count, with the reason (so a 'none' or 'low' program says which CUDA
    uses it saw and why they set no grade)."""
    parts: List[str] = []
    work = [f for f in counted if f.severity in DRIVER_SEVERITIES]
    if not work:
        parts.append(f"{effort.upper()}: nothing this program reaches needs changing for an Ascend NPU.")
    else:
        bits = []
        for sev, label in (("blocker", "blockers"), ("manual", "manual changes"),
                           ("auto", "rewritten by transfer_to_npu")):
            sub = [f for f in work if f.severity == sev]
            if sub:
                bits.append(f"{label}: {_named(sub)}")
        parts.append(f"{effort.upper()}: " + "; ".join(bits) + ".")
    notes = [f for f in counted if f.severity not in DRIVER_SEVERITIES]
    if notes:
        parts.append(f"Advice and notes that need no change: {_named(notes)}.")
    if uncounted:
        why: Dict[str, List[Finding]] = {}
        for f in uncounted:
            if f.severity not in DRIVER_SEVERITIES:
                continue
            status = (f.reach or {}).get("status", "unknown")
            if status == "unknown" or _key(f) in own_unknown:
                key = "unresolved-dispatch"
            elif status not in COUNTED_REACH:
                key = ""
            elif is_off_path(f):
                key = "off-by-default"
            elif excused(f):
                key = "guarded"
            else:
                key = ""   # another role's file (tests, tools): not this program's work
            if key:
                why.setdefault(key, []).append(f)
        for key, text in _UNCOUNTED_TEXT:
            if why.get(key):
                parts.append(f"Not counted, {text}: {_named(why[key])}.")
    return " ".join(parts)


def _driver_sentence(effort: str, drivers: List[dict], findings: Sequence[Finding], counted_idx: Sequence[int],
                     counted_eps: Sequence, ep_counted: Dict[str, List[int]],
                     ep_paths: Optional[Dict[str, Dict[tuple, List[str]]]] = None) -> str:
    """"BLOCKED by X (blocker, 3 place(s)), used in train.py via main -> build_model (models/x.py:12)"."""
    if not drivers or effort in ("none", "unknown"):
        return ""
    top = drivers[0]
    cands = [i for i in counted_idx if findings[i].api == top["api"] and findings[i].severity == top["severity"]]
    if not cands:
        return ""
    ep_ids = [ep.id for ep in counted_eps]

    def reached_by(i):
        r = findings[i].reach or {}
        listed = set(r.get("entry_points") or ()) if r.get("status") in ("entry-point", "reachable") else set()
        return [e for e in ep_ids if e in listed and i in ep_counted.get(e, ())]

    first = ep_ids[0] if ep_ids else None
    own = (ep_paths or {}).get(first) or {}
    cands.sort(key=lambda i: (not reached_by(i), first not in reached_by(i),
                              len(own.get(_key(findings[i])) or (findings[i].reach or {}).get("path") or ()),
                              findings[i].path, findings[i].line))
    i = cands[0]
    f = findings[i]
    r = f.reach or {}
    more = f" (and {len(drivers) - 1} more API(s))" if len(drivers) > 1 else ""
    where = f"{f.path}:{f.line}"
    direct = reached_by(i)
    if direct:
        ep = direct[0]
        if f.path == ep.split(":")[0]:
            used = f"used in {where}"
        else:
            # the path from this entry point (each entry point's evidence is its own)
            own_path = ((ep_paths or {}).get(ep) or {}).get(_key(f))
            via = _hops(own_path or r.get("path") or ())
            used = f"used in {ep}" + (f" via {via}" if via else "") + f" ({where})"
    else:
        maybe = [e for e in ep_ids if i in ep_counted.get(e, ())]
        if maybe and r.get("status") != "unknown" and f.path.endswith((".py", ".ipynb")):
            used = f"in {where}, which {maybe[0]} may run through dynamic dispatch (registries, configs)"
        elif maybe:
            used = f"in {where}" + (f" ({r['reason']})" if r.get("reason") else "") + f", possibly run by {maybe[0]}"
        else:
            used = f"in {where}"
    return f"{effort.upper()} by {top['api']} ({top['severity']}, {top['count']} place(s)){more}, {used}."


def scoped_verdict(findings: Sequence[Finding], errors: Sequence[AnalysisError], files_analysed: int,
                   entry_points: Sequence, ep_members: Dict[str, List[int]], roles=None,
                   lines_analysed: int = 1, baselined: Sequence[int] = (),
                   ep_paths: Optional[Dict[str, Dict[tuple, List[str]]]] = None,
                   ep_unresolved: Optional[Dict[str, Tuple[int, List[dict]]]] = None,
                   ep_unknown: Optional[Dict[str, set]] = None,
                   ep_guards: Optional[Dict[str, Dict[tuple, dict]]] = None) -> dict:
    """The verdict over *findings* (see above). *ep_guards* (entry point id -> finding key -> guard) holds the guard an
    entry point reaches a finding under where the finding has none of its own (another program reaches it
    unguarded): the entry point counts it as that guard says. *ep_unknown* (entry point id -> finding keys) holds what an entry
    point reaches only through calls not followed: such a finding still counts when another program surely reaches
    it (its listed status ``reachable``; a config may build it here too), and the entry point's explanation says it
    is reached only through calls not followed when it does not count. Each entry point row gets ``unresolved_calls`` (and the first
    of them, ``unresolved``) from *ep_unresolved* when given. *baselined* indexes are findings a baseline accepted: they count
    like any other (a baseline changes what gates, never the verdict) and the explanation says how many.
    *ep_paths* holds each entry point's own call paths to its findings (the evidence the explanation names).
    Also returns ``counted`` (the indexes that count) and ``off_reason`` (index -> reason code, for the others)."""
    from analyse.roles import ROLES, role_of

    eps = list(entry_points)
    ep_rows = []
    ep_counted: Dict[str, List[int]] = {}
    for ep in eps:
        own_unknown = (ep_unknown or {}).get(ep.id) or ()
        own_guards = (ep_guards or {}).get(ep.id) or {}
        idx = [i for i in ep_members.get(ep.id, ())
               if (findings[i].reach or {}).get("status", "unknown") in COUNTED_REACH
               and not excused(findings[i]) and role_counts_for(findings[i], ep)
               and not (own_guards and _key(findings[i]) in own_guards
                        and excused(evolve(findings[i], guard=own_guards[_key(findings[i])])))]
        ep_counted[ep.id] = idx
        fs = [findings[i] for i in idx]
        effort, b, m, a = grade_findings(fs)
        v = {"effort": effort, "blockers": b, "manual_changes": m, "auto_migratable": a,
             "drivers": _ep_drivers(fs, (ep_paths or {}).get(ep.id) or {})}
        in_idx = set(idx)
        v["explanation"] = _ep_explanation(effort, fs, [findings[i] for i in ep_members.get(ep.id, ())
                                                        if i not in in_idx], own_unknown)
        row = ep.to_dict()
        row["verdict"] = v
        if ep_unresolved is not None:
            n, first = ep_unresolved.get(ep.id, (0, []))
            row["unresolved_calls"] = n
            row["unresolved"] = first
        ep_rows.append(row)
    product_eps = [ep for ep in eps if ep.role == "product"]
    counted_eps = product_eps or eps
    counted_roles = {"product"} | {ep.role for ep in counted_eps}
    if eps:
        scope = "entry-points"
        counted_idx = sorted({i for ep in counted_eps for i in ep_counted[ep.id]})
    else:
        scope = "whole-tree"
        products = [i for i, f in enumerate(findings) if f.role in (None, "product")]
        base = products if products else list(range(len(findings)))
        counted_idx = [i for i in base if not excused(findings[i])]
        if not products:
            counted_roles = set(ROLES)
    # GPU-only dependencies named only in the manifests (requirements, a CUDA base image): they never set a
    # program's grade, and lift the project line from none to low when nothing else does (EFFORT_LEGEND["low"])
    deps = [i for i, f in enumerate(findings) if manifest_dependency(f) and i not in set(baselined)]
    if not eps:
        counted_idx = [i for i in counted_idx if not manifest_dependency(findings[i])]
    counted = [findings[i] for i in counted_idx]
    rows_by_id = {ep.id: row for ep, row in zip(eps, ep_rows)}
    if eps:
        def weight(ep):
            ev = rows_by_id[ep.id]["verdict"]
            return (_rank(ev["effort"]), ev["blockers"], ev["manual_changes"], ev["auto_migratable"])

        worst = max(counted_eps, key=weight)
        effort = rows_by_id[worst.id]["verdict"]["effort"]
    else:
        worst = None
        effort = grade_findings(counted)[0]
    # completeness: errors in files of a counted role (or a failed pass)
    bad = sorted({e.path for e in errors if role_of(e.path, roles) in counted_roles or e.path.startswith("<")})
    complete = not bad
    manifest_driven = bool(deps) and effort == "none" and files_analysed > 0
    if manifest_driven:
        effort = "low"
        counted_idx = sorted(set(counted_idx) | set(deps))
        counted = [findings[i] for i in counted_idx]
    v = verdict(counted, files_analysed)
    if files_analysed == 0 or (lines_analysed == 0 and errors):
        effort = "unknown"   # nothing analysable remains
        manifest_driven = False
    if manifest_driven:
        setter_idx, ordered_eps = deps, ()
    elif eps:
        # the drivers are the problems of the entry points that set the grade (those at the worst effort)
        setters = [ep for ep in counted_eps if rows_by_id[ep.id]["verdict"]["effort"] == effort] or counted_eps
        setter_idx = sorted({i for ep in setters for i in ep_counted[ep.id]})
        ordered_eps = sorted(setters, key=lambda ep: ep is not worst)
    else:
        setter_idx, ordered_eps = counted_idx, ()
    drivers = drivers_of([findings[i] for i in setter_idx])
    parts = []
    head = _driver_sentence(effort, drivers, findings, setter_idx, ordered_eps, ep_counted, ep_paths)
    if head:
        parts.append(head)
    if effort == "unknown":
        parts.append("Effort unknown: no source file could be analysed" +
                     (f" ({len(bad)} failed: {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''})." if bad else "."))
    if eps:
        n_worst = sum(1 for ep in counted_eps if rows_by_id[ep.id]["verdict"]["effort"] == effort)
        if manifest_driven:
            wr = "; none of them needs a change, the manifests set the grade"
        elif worst is None or effort in ("none", "unknown"):
            wr = ""
        elif n_worst > 1:
            wr = f"; {n_worst} of them are {effort} (the most work: {worst.id})"
        else:
            wr = f"; the worst is {worst.id} ({effort})"
        who = f"{len(product_eps)} product entry point(s)" if product_eps else f"{len(eps)} entry point(s) (none is product code)"
        parts.append(f"Verdict over {who}{wr}.")
    elif effort != "unknown":
        parts.append("No entry point was found or given (--entry FILE[:FUNCTION]): every finding in product code counts.")
    in_counted, in_base = set(counted_idx), set(baselined)
    off = sum(1 for i in range(len(findings)) if i not in in_counted and i not in in_base)
    if off:
        parts.append(f"{off} finding(s) off the path (unreached, guarded with a fallback, or in tests, tools, "
                     "examples, docs or build files) are listed but not counted.")
    low = [f for f in counted if f.confidence == "low" and f.severity in ("blocker", "manual")]
    if low:
        parts.append(f"{len(low)} low-confidence finding(s) (e.g. documentation conflicts) cannot on their own "
                     "raise the effort above medium.")
    if effort == "unknown":
        pass
    elif counted or not findings:
        parts.append(v["explanation"])
    else:
        parts.append(f"Nothing that the counted code runs needs changing for an Ascend NPU ({files_analysed} file(s) "
                     "analysed).")
    n_base = len(set(baselined))
    if n_base:
        in_counted = len(set(baselined) & set(counted_idx))
        parts.append(f"{n_base} finding(s) accepted by the baseline are not listed and do not gate (--fail-on), "
                     f"but the verdict still counts {'them' if in_counted == n_base else f'the {in_counted} on the path'}: "
                     "accepting a finding does not remove the work.")
    if not complete and effort != "unknown":
        parts.append(f"Analysis incomplete: {len(bad)} file(s) could not be analysed "
                     f"({', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}); the verdict may miss problems there.")
    setter_fs = [findings[i] for i in setter_idx]
    if manifest_driven:
        named = ", ".join(dict.fromkeys(f"{f.api.split(':', 1)[-1]} ({f.path}:{f.line})" for f in setter_fs[:3]))
        parts.insert(1 if head else 0, f"Low only because the manifests name GPU-only dependencies ({named}) that no "
                                       "program uses on its default path: rebuild the environment without them (or with their NPU "
                                       "counterparts); the code needs no change for them.")
    rw = _reworks(setter_fs)
    set_apis, set_places, set_names = _lib_counts(setter_fs)
    set_manual = ({f.api for f in setter_fs if f.severity == "manual"}, sum(f.severity == "manual" for f in setter_fs))
    if effort == "high" and rw and grade(0, len(set_manual[0]), set_manual[1], 0, set_apis, set_places,
                                         0, set_names) != "high":
        where = ", ".join(dict.fromkeys(f"{f.api} ({f.path}:{f.line})" for f in rw[:2]))
        parts.insert(1 if head else 0, f"High because a GPU-only library with no drop-in NPU replacement is used on the "
                                       f"default path ({where}): the code around it has to be restructured.")
    elif effort == "high" and set_names >= LIB_HIGH_LIBRARIES and \
            grade(0, len(set_manual[0]), set_manual[1], 0, set_apis, set_places) != "high":
        names = sorted({library_of(f) for f in _lib_uses(setter_fs)})
        parts.insert(1 if head else 0, f"High because {len(names)} GPU-only libraries are used on the default path "
                                       f"({', '.join(names[:6])}): each needs its own documented NPU replacement, "
                                       "made and validated by hand.")
    if effort == "medium" and any(gpu_library_use(f) for f in setter_fs) and \
            grade(0, len({f.api for f in setter_fs if f.severity == "manual"}),
                  sum(f.severity == "manual" for f in setter_fs), 0) == "low":
        libs = sorted({f.api.split(".")[0] for f in setter_fs if gpu_library_use(f)})[:3]
        parts.insert(1 if head else 0, f"Medium because a GPU-only library ({', '.join(libs)}) is used on the default "
                                       "path: its documented NPU replacement has to be made by hand.")
    elif effort == "medium" and any(triton_kernel_use(f) for f in setter_fs) and \
            grade(0, len({f.api for f in setter_fs if f.severity == "manual"}),
                  sum(f.severity == "manual" for f in setter_fs), 0, *_lib_counts(setter_fs)[:2]) == "low":
        ks = sorted({f.api.split(":", 1)[1].rsplit(".", 1)[-1] for f in setter_fs if triton_kernel_use(f)})
        more = f" and {len(ks) - 3} more" if len(ks) > 3 else ""
        parts.insert(1 if head else 0, f"Medium because the default path launches Triton kernel(s) ({', '.join(ks[:3])}"
                                       f"{more}): each is ported to Triton-Ascend and validated against a PyTorch "
                                       "reference on the device, or rewritten in torch.")
    v.update({"effort": effort, "explanation": " ".join(parts), "scope": scope, "drivers": drivers,
              "legend": dict(EFFORT_LEGEND)})
    # off-path accounting
    counted_set = set(counted_idx)
    base_set = set(baselined)
    off_sev: Counter = Counter()
    off_role: Counter = Counter()
    off_why: Counter = Counter()
    off_reason: Dict[int, str] = {}
    for i, f in enumerate(findings):
        if i in counted_set or i in base_set:   # a baselined finding is not listed: neither counted nor off the path
            continue
        off_sev[f.severity] += 1
        off_role[f.role or "product"] += 1
        if is_off_path(f):
            why = "off-by-default"
        elif excused(f):
            why = "guarded"
        elif eps and not f.path.endswith((".py", ".ipynb")):
            why = "not-python"
        elif f.role not in counted_roles and f.role is not None:
            why = "role"
        else:
            st = (f.reach or {}).get("status", "unreached") if eps else "unreached"
            # reached only by entry points that do not set the grade (tests, tools, examples)
            why = ("unreached" if st == "unreached" else "unresolved-dispatch" if st == "unknown"
                   else "other-entry-points")
        off_why[why] += 1
        off_reason[i] = why
    off_path = {
        "count": sum(off_sev.values()),
        "by_severity": {s: off_sev[s] for s in SEVERITIES if off_sev.get(s)},
        "by_role": dict(sorted(off_role.items())),
        "by_reason": dict(sorted(off_why.items())),
    }
    ep_rows.sort(key=lambda r: (r["role"] != "product", -_rank(r["verdict"]["effort"]), r["path"], r["function"] or ""))
    return {"verdict": v, "entry_points": ep_rows, "off_path": off_path, "complete": complete,
            "incomplete_files": bad[:100], "counted": counted_set, "off_reason": off_reason,
            "product_entry_points": bool(product_eps)}


# --------------------------------------------------------------------------- grouping and per-finding reasons
#
# Advice and info repeat: every DataLoader gets the same pin_memory advice, every `.to(...)` in a loop the same
# non_blocking note. Findings of one advice/info rule in one file become one finding with every line (`lines`,
# `occurrences`). Blockers, manual and automatic changes stay one per place (each is a change to make).
# Baselined and listed occurrences are never grouped together, nor occurrences whose guard excuses them (off the
# path with the defaults, or guarded with a working fallback) with ones it does not: a group shows one status and
# one reason, so `torch.xpu.*` calls in an XPU-only branch stay listed off the path with their why instead of
# riding in a counted group of the same rule. A group takes the reach and guard of its member that counts most
# (reached before unknown before unreached), so it counts when any of its places does.
#
# Ids: a group keeps the id of its first occurrence and lists every occurrence's id (`occurrences[].id`); the
# occurrence ids are the per-place fingerprints of findings.fingerprint, unchanged. Baselines hold occurrence ids
# (written from the findings before grouping) and are matched per occurrence before grouping, so baselines
# written before grouping existed keep matching, and a group whose occurrences are all baselined disappears
# while a new occurrence shows up as a group of the new lines only.

GROUPED_SEVERITIES = ("advice", "info")

OFF_PATH_TEXT = {
    "off-by-default": "off the path on an NPU host with the defaults",
    "guarded": "guarded with a working fallback",
    "not-python": "a build or configuration file that no entry point runs",
    "role": "in {role} code, which does not count for the product",
    "unreached": "no {scope} reaches this code",
    "other-entry-points": "reached only by entry points that do not set the grade ({eps})",
    "unresolved-dispatch": "reached only through calls the analysis cannot follow{why}: listed, not counted",
}


def guard_place(guard: Optional[dict], path: str = "") -> str:
    """``path:line`` of a guard: the file of the test (a caller's guard carries its own ``path``), else *path*."""
    g = guard or {}
    if not g.get("line"):
        return ""
    where = g.get("path") or path
    return f"{where}:{g['line']}" if where else f"line {g['line']}"


def off_by_default_why(guard: Optional[dict], path: str = "") -> str:
    """One line on a place off the path with the defaults, from its guard (the report's and migrate's words);
    the test is cited as ``path:line`` (*path*: the finding's file, for a guard in the same file)."""
    g = guard or {}
    cond = g.get("condition")
    place = guard_place(g, path)
    where = f" ({place})" if place else ""
    dflt = f" ({g['default']})" if g.get("default") else ""
    return (f"runs only when `{cond}`{where}, which is false on an NPU host with the defaults{dflt}" if cond
            else OFF_PATH_TEXT["off-by-default"] + where)


def off_path_why(f: Finding, reason: str, product_eps: bool) -> str:
    """One line: why *f* is listed but not counted."""
    if reason == "guarded":
        g = f.guard or {}
        cond = g.get("condition")
        place = guard_place(g, f.path)
        where = f" at {place}" if place else ""
        if g.get("npu_branch"):
            nb = g["npu_branch"]
            return (f"the `{nb.get('condition')}` branch at {g.get('path') or f.path}:{nb.get('line')} runs on an NPU host; with "
                    "transfer_to_npu this CUDA branch runs as torch.npu: nothing needs to change (the rename is "
                    "optional)")
        if g.get("choice") and cond:
            return f"runs only when a user chooses `{cond}`{where}; the default is not visible to the analysis"
        return f"guarded by `{cond}`{where} with a working fallback" if cond else OFF_PATH_TEXT["guarded"] + where
    if reason == "off-by-default":
        return off_by_default_why(f.guard, f.path)
    if reason == "unreached":
        return OFF_PATH_TEXT["unreached"].format(scope="product entry point" if product_eps else "entry point")
    if reason == "unresolved-dispatch":
        r = (f.reach or {}).get("reason")
        return OFF_PATH_TEXT["unresolved-dispatch"].format(why=f" ({r})" if r else "")
    if reason == "other-entry-points":
        eps = list((f.reach or {}).get("entry_points") or ())
        shown = ", ".join(eps[:2]) + (f" and {len(eps) - 2} more" if len(eps) > 2 else "")
        return OFF_PATH_TEXT["other-entry-points"].format(eps=shown or "tests, tools or examples")
    return OFF_PATH_TEXT.get(reason, reason).format(role=f.role or "product")


def _choice(f: Finding) -> bool:
    """Listed off the path because only a user's choice of a value runs it (``args.mixed_precision == 'fp8'``):
    one fact about the option, however many places pass it on."""
    return bool((f.guard or {}).get("choice")) and excused(f)


def _group_key(f: Finding, baselined: bool):
    if f.api.startswith("project:"):
        return None
    if f.severity in GROUPED_SEVERITIES:
        return (f.path, f.code, baselined, excused(f))
    if _choice(f):
        return (f.path, f.code, f.api, baselined, "choice")
    return None


def _project_key(ms: List[Finding], baselined: bool):
    """Key of a file's group (or single finding) for merging the same advice across files: the same rule, APIs
    and text, with the same status (baselined, excused, reached or not). Product files only: a
    test's or an example's finding counts with its own file (role_counts_for)."""
    head = ms[0]
    if _group_key(head, baselined) is None or head.role not in (None, "product"):
        return None
    rank = min(REACH_RANK.get((m.reach or {}).get("status", "unreached"), 2) for m in ms)
    # the replacement is left out: it is written from each call's own arguments, and each place keeps its own
    # (occurrences[].replacement)
    return (head.code, tuple(dict.fromkeys(m.api for m in ms)), head.message, head.severity,
            baselined, any(excused(m) for m in ms), rank)


def group_findings(findings: Sequence[Finding], baselined: Sequence[bool],
                   ep_members: Optional[Dict[str, List[int]]]):
    """(findings, baselined flags, ep_members, extras) with the advice/info findings of one rule in one file merged,
    and then the same advice repeated in several product files merged (see above). *findings* are sorted; the group
    sits where its first occurrence was. ``extras[i]`` holds the report fields of a group (``lines``,
    ``occurrences``, ``apis``, and ``locations`` when it spans files)."""
    # stage 1: one rule in one file
    groups: List[List[int]] = []
    slot: Dict[tuple, int] = {}
    for i, f in enumerate(findings):
        key = _group_key(f, baselined[i])
        if key is not None and key in slot:
            groups[slot[key]].append(i)
            continue
        if key is not None:
            slot[key] = len(groups)
        groups.append([i])
    # stage 2: the same finding text in several files (each file keeps its lines)
    merged: List[List[int]] = []
    slot2: Dict[tuple, int] = {}
    for g in groups:
        key = _project_key([findings[i] for i in g], baselined[g[0]])
        if key is not None and key in slot2:
            merged[slot2[key]].extend(g)
            continue
        if key is not None:
            slot2[key] = len(merged)
        merged.append(list(g))
    merged.sort(key=lambda g: g[0])
    out: List[Finding] = []
    flags: List[bool] = []
    new_of: Dict[int, int] = {}
    extras: Dict[int, dict] = {}
    for j, g in enumerate(merged):
        for i in g:
            new_of[i] = j
        ms = [findings[i] for i in g]
        head = ms[0]
        flags.append(baselined[g[0]])
        if len(ms) < 2:
            out.append(head)
            continue
        # the group counts when any of its places does: it takes the reach and guard of the place that counts most
        best = min(ms, key=lambda m: (excused(m), REACH_RANK.get((m.reach or {}).get("status", "unreached"), 2)))
        paths = list(dict.fromkeys(m.path for m in ms))
        occ = []
        extra_msgs: List[str] = []
        apis_seen = {head.api}
        for m in ms:
            o = {"id": m.id, "line": m.line, "column": m.column, "api": m.api, "snippet": m.snippet}
            if m.columns:
                o["columns"] = sorted({m.column, *m.columns})
            if len(paths) > 1:
                o = {"path": m.path, **o}
            if m.message != head.message:
                o["message"] = m.message
                # another API's own facts join the message; the same API's wording for another expression
                # stays in occurrences[].message (the places are listed anyway)
                if m.api not in apis_seen:
                    extra_msgs.append(f"Also at line {m.line} (`{m.api}`): {m.message}")
            apis_seen.add(m.api)
            if m.replacement != head.replacement:
                o["replacement"] = m.replacement
            if m.guard != best.guard:
                o["guard"] = m.guard   # each place keeps the condition it runs under
            occ.append(o)
        lines_of: Dict[str, set] = {}   # one pass over the places: a group spanning N files is not N x N
        for m in ms:
            lines_of.setdefault(m.path, set()).add(m.line)
        lines = sorted(lines_of[head.path])
        apis = list(dict.fromkeys(m.api for m in ms))
        extras[j] = {"lines": lines, "occurrences": occ}
        if len(paths) > 1:
            extras[j]["locations"] = [{"path": p, "lines": sorted(lines_of[p])} for p in paths]
        if len(apis) > 1:
            extras[j]["apis"] = apis
        eps = list(dict.fromkeys(e for m in ms for e in ((m.reach or {}).get("entry_points") or ())))
        reach = dict(best.reach) if best.reach is not None else None
        if reach is not None and eps:
            reach["entry_points"] = eps
        out.append(evolve(head, reach=reach, guard=best.guard, other_paths=tuple(paths[1:]),
                           message=" ".join([head.message] + extra_msgs)))
    if ep_members is not None:
        ep_members = {k: sorted({new_of[i] for i in v}) for k, v in ep_members.items()}
    return out, flags, ep_members, extras


_PLACE_KEYS = ("id", "path", "line", "column", "columns", "api", "snippet", "message", "replacement", "guard")


def places_of(d: dict) -> List[dict]:
    """Each place of a report finding as a finding of its own (a group's ``occurrences``, with the place's own
    file, line, API, text and guard, and each of a place's ``columns``: the same use twice on one line), for
    consumers that act per place (migrate)."""
    occ = [o for o in d.get("occurrences") or () if isinstance(o, dict)]
    if len(occ) < 2:
        places = [d]
    else:
        base = {k: v for k, v in d.items() if k not in ("occurrences", "lines", "locations", "apis", "end_line")}
        places = [{**base, **{k: o[k] for k in _PLACE_KEYS if k in o}} for o in occ]
    out = []
    for p in places:
        cols = p.get("columns")
        if isinstance(cols, list) and len(cols) > 1:
            out.extend({**p, "column": c} for c in cols if type(c) is int)
        else:
            out.append(p)
    return out


def build_report(*, mode: str, inputs: Iterable[str], torch_version: str, torch_npu_version: Optional[str],
                 knowledge_base: str, findings: Sequence[Finding], errors: Sequence[AnalysisError],
                 files_analysed: int, lines_analysed: int, duration_s: float,
                 thirdparty: Optional[dict] = None, extra_summary: Optional[dict] = None,
                 entry_points: Optional[Sequence] = None, ep_members: Optional[Dict[str, List[int]]] = None,
                 roles: Optional[Dict[str, str]] = None, policy=None,
                 ep_paths: Optional[Dict[str, Dict[tuple, List[str]]]] = None,
                 ep_unresolved: Optional[Dict[str, Tuple[int, List[dict]]]] = None,
                 ep_unknown: Optional[Dict[str, set]] = None,
                 ep_guards: Optional[Dict[str, Dict[tuple, dict]]] = None) -> dict:
    """The report object. *ep_unresolved*: entry point id -> (how many calls of the code it reaches the
    analysis could not follow, the first of them as ``{path, line, expression}``). *entry_points* (:class:`analyse.entrypoints.EntryPoint`) and *ep_members*
    (entry point id -> indexes into *findings* it reaches) scope the verdict; without them it covers
    the whole tree. *policy* (:class:`analyse.policy.Policy`) drops deselected, suppressed and
    baselined findings first, so that every count and the verdict see only what is reported."""
    from analyse.roles import role_of

    sections: dict = {}
    base_objs: set = set()
    if policy is not None:
        findings = list(findings)
        kept, policy_summary, sections = policy.apply(findings)
        extra_summary = {**(extra_summary or {}), **policy_summary}
        # baselined findings stay for the verdict (they are not listed and never gate)
        base_pairs = list(zip(getattr(policy, "baselined_index", None) or (),
                              getattr(policy, "baselined_findings", None) or ()))
        base_objs = {id(f) for _i, f in base_pairs}
        kept_index = getattr(policy, "kept_index", None)
        if kept_index is not None and len(kept_index) == len(kept):
            pairs = list(zip(kept_index, kept))  # folded findings may come back narrowed to their selected codes
        else:
            keep = {id(f) for f in kept}
            pairs = [(i, f) for i, f in enumerate(findings) if id(f) in keep]
        pairs = sorted(pairs + base_pairs, key=lambda p: p[0])
        old_idx = [i for i, _f in pairs]
        kept = [f for _i, f in pairs]
        remap = {old: new for new, old in enumerate(old_idx)}
        findings = list(kept)
        if ep_members is not None:
            ep_members = {k: [remap[i] for i in v if i in remap] for k, v in ep_members.items()}
    baselined = [id(f) in base_objs for f in findings]
    findings = [f if f.role is not None else evolve(f, role=role_of(f.path, roles)) for f in findings]
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key)
    pos = {old: new for new, old in enumerate(order)}
    findings = [findings[i] for i in order]
    baselined = [baselined[i] for i in order]
    if ep_members is not None:
        ep_members = {k: sorted(pos[i] for i in v) for k, v in ep_members.items()}
    findings, baselined, ep_members, extras = group_findings(findings, baselined, ep_members)
    scoped = scoped_verdict(findings, errors, files_analysed, entry_points or (), ep_members or {}, roles,
                            lines_analysed, baselined=[i for i, b in enumerate(baselined) if b], ep_paths=ep_paths,
                            ep_unresolved=ep_unresolved, ep_unknown=ep_unknown, ep_guards=ep_guards)
    listed = [i for i, b in enumerate(baselined) if not b]
    rows = []
    for i in listed:
        d = findings[i].to_dict()
        d.update(extras.get(i, {}))
        d["counted"] = i in scoped["counted"]
        if i in scoped["off_reason"]:
            reason = scoped["off_reason"][i]
            d["off_path"] = {"reason": reason,
                             "why": off_path_why(findings[i], reason, scoped["product_entry_points"])}
        rows.append(d)
    findings = [findings[i] for i in listed]
    by_cat = Counter(f.category for f in findings)
    by_sev = Counter(f.severity for f in findings)
    # every place of a grouped finding, so that each API the docs do not list is counted (and handed to the probe);
    # a folded finding (one place and API, #23) counts when any of its rules is an unknown-api one
    unknown = Counter(str(o.get("api")) for d in rows
                      if d["category"] == "unknown-api" or any(a.get("category") == "unknown-api"
                                                                for a in d.get("also") or ())
                      for o in (d.get("occurrences") or [d]))
    summary = {
        "files_analysed": files_analysed,
        "files_failed": len({e.path for e in errors if e.kind != "internal"}),
        "lines_analysed": lines_analysed,
        "duration_s": round(duration_s, 3),
        "by_category": {c: by_cat[c] for c in CATEGORIES if by_cat.get(c)},
        "by_severity": {s: by_sev[s] for s in SEVERITIES if by_sev.get(s)},
        "verdict": scoped["verdict"],
        "unknown_apis": [{"api": a, "count": n} for a, n in sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0]))],
        "complete": scoped["complete"],
        "entry_points": scoped["entry_points"],
        "off_path": scoped["off_path"],
    }
    if scoped["incomplete_files"]:
        summary["incomplete_files"] = scoped["incomplete_files"]
    if extra_summary:
        summary.update(extra_summary)
    report = {
        "schema_version": "1",
        "tool": {"name": "npu-analyse", "version": __version__},
        "mode": mode,
        "target": {
            "torch_version": torch_version,
            "torch_npu_version": torch_npu_version,
            "knowledge_base": knowledge_base,
        },
        "inputs": list(inputs),
        "summary": summary,
        "findings": rows,
        "errors": [e.to_dict() for e in sorted(errors, key=lambda e: (e.path, e.line or 0))],
    }
    if thirdparty is not None:
        report["thirdparty"] = thirdparty
    report.update(sections)
    return report


def at_least(report: dict, level: str) -> dict:
    """The report listing only findings at or above *level* (``--min-severity``); the verdict, the summary counts
    and the gate are left as they are. ``summary.min_severity`` says what was left out."""
    if level not in SEVERITY_RANK or level == SEVERITIES[-1]:
        return report
    rank = SEVERITY_RANK[level]
    findings = report.get("findings") or []
    shown = [f for f in findings if SEVERITY_RANK.get(f.get("severity"), 0) <= rank]
    out = dict(report)
    out["findings"] = shown
    out["summary"] = {**(report.get("summary") or {}),
                      "min_severity": {"level": level, "hidden": len(findings) - len(shown)}}
    return out
