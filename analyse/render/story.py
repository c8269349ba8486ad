"""The numbers and words every view shows the same way (terminal, HTML; JSON holds them).

One model of what counts: a listed finding is *counted* (the verdict and the ``--fail-on`` gate see it) or
listed off the path for one reason (``findings[].off_path.reason``). The counts come from the report's summary
(``summary.by_severity``, ``summary.off_path``), so they are the same whatever ``--min-severity`` hides from
the listing, and the rows of "why not counted" add up to the number not counted.
"""

from __future__ import annotations

from typing import Dict, List, Optional

#: The reasons a finding is listed but not counted, in the order the views list them, with their short words.
REASON_ORDER = ("unreached", "other-entry-points", "role", "guarded", "off-by-default", "not-python")
REASON_LABELS = {
    "unreached": "no entry point that sets the grade reaches it",
    "other-entry-points": "reached only by tests, tools or examples",
    "role": "in test, tool, example, docs or build code",
    "guarded": "guarded with a working fallback",
    "off-by-default": "off on an NPU host with the defaults",
    "not-python": "a build or configuration file no entry point runs",
}


def reason_label(reason: str) -> str:
    return REASON_LABELS.get(reason, str(reason).replace("-", " "))


def counts(report: dict) -> Dict[str, object]:
    """``{"listed", "counted", "not_counted", "reasons": [{"reason", "label", "count"}]}`` over the listed
    findings (before ``--min-severity``); ``hidden``: how many ``--min-severity`` leaves out of the listing."""
    summary = report.get("summary") or {}
    findings = report.get("findings") or []
    by_sev = summary.get("by_severity")
    listed = sum(int(v or 0) for v in by_sev.values()) if isinstance(by_sev, dict) and by_sev else len(findings)
    off = summary.get("off_path") if isinstance(summary.get("off_path"), dict) else None
    by_reason: Dict[str, int] = {}
    if off is not None and isinstance(off.get("by_reason"), dict):
        by_reason = {str(k): int(v or 0) for k, v in off["by_reason"].items() if v}
    else:   # a report without the summary's reasons: from the listed findings
        for f in findings:
            if f.get("counted") is False:
                r = str((f.get("off_path") or {}).get("reason") or "other")
                by_reason[r] = by_reason.get(r, 0) + 1
    not_counted = sum(by_reason.values())
    order = [r for r in REASON_ORDER if r in by_reason] + sorted(r for r in by_reason if r not in REASON_ORDER)
    ms = summary.get("min_severity") if isinstance(summary.get("min_severity"), dict) else {}
    return {
        "listed": listed,
        "counted": max(0, listed - not_counted),
        "not_counted": not_counted,
        "reasons": [{"reason": r, "label": reason_label(r), "count": by_reason[r]} for r in order],
        "hidden": int(ms.get("hidden") or 0),
        "hidden_level": ms.get("level"),
    }


def timing(summary: dict) -> Dict[str, object]:
    """``{"analysis_s", "run_s", "from_cache"}``: the real analysis time (kept when the report came from the
    cache) and this run's own time."""
    run_s = float(summary.get("duration_s") or 0)
    analysis = summary.get("analysis_s")
    return {"analysis_s": float(analysis) if analysis is not None else run_s, "run_s": run_s,
            "from_cache": bool(summary.get("from_cache"))}


def seconds(value: float) -> str:
    """"1.3 s" (two decimals under a second: "0.04 s")."""
    value = float(value or 0)
    return f"{value:.2f} s" if value < 1 else f"{value:.1f} s"


def timing_text(summary: dict) -> str:
    """"analysed in 1.3 s" or "from the cache in 0.05 s (the analysis took 1.3 s)"."""
    t = timing(summary)
    if t["from_cache"]:
        return f"from the cache in {seconds(t['run_s'])} (the analysis took {seconds(t['analysis_s'])})"
    return f"analysed in {seconds(t['analysis_s'])}"


def first_driver(report: dict) -> Optional[dict]:
    """The counted finding behind the verdict's first driver (its API at its severity), or None: where the
    grade comes from and what to do first."""
    verdict = (report.get("summary") or {}).get("verdict") or {}
    drivers = [d for d in verdict.get("drivers") or [] if isinstance(d, dict)]
    if not drivers:
        return None
    top = drivers[0]
    cands = [f for f in report.get("findings") or [] if f.get("counted", True) is not False
             and f.get("api") == top.get("api") and f.get("severity") == top.get("severity")]
    if not cands:
        return None
    # the entry point's own place first (reach status entry-point), then by place
    cands.sort(key=lambda f: ((f.get("reach") or {}).get("status") != "entry-point", str(f.get("path", "")),
                              f.get("line") or 0))
    return cands[0]


def library_headline(report: dict) -> Optional[Dict[str, object]]:
    """thirdparty mode: the library verdict and the facts under it, or None (not a library report)."""
    tp = report.get("thirdparty")
    if not isinstance(tp, dict):
        return None
    lib = tp.get("library") if isinstance(tp.get("library"), dict) else {}
    tsum = tp.get("summary") if isinstance(tp.get("summary"), dict) else {}
    fns = [f for f in tp.get("functions") or [] if isinstance(f, dict)]
    by_status: Dict[str, int] = {}
    for f in fns:
        s = str(f.get("status", "unknown"))
        by_status[s] = by_status.get(s, 0) + 1
    total = int(tsum.get("functions_total") or 0)
    affected = int(tsum.get("affected") or 0)
    blocking = [f for f in fns if f.get("status") == "unsupported"]
    blocking.sort(key=lambda f: (-len(f.get("via") or ()), str(f.get("path", "")), f.get("line") or 0))
    npu = lib.get("npu_support") if isinstance(lib.get("npu_support"), dict) else {}
    return {
        "name": lib.get("name") or "",
        "verdict": lib.get("verdict") or "",
        "support": npu.get("level") or "none",
        "evidence": list(npu.get("evidence") or []),
        "functions_total": total,
        "affected": affected,
        "share": (100.0 * affected / total) if total else 0.0,
        "by_status": by_status,
        "blocking": [{"qualname": f.get("qualname", ""), "where": f"{f.get('path', '?')}:{f.get('line', '?')}",
                      "why": ", ".join(str(r) for r in (f.get("reasons") or [])[:2])} for f in blocking[:5]],
        "blocking_total": len(blocking),
    }


def support_words(level: str) -> str:
    return {"native": "its own NPU support", "partial": "partial NPU support of its own",
            "none": "no NPU support of its own"}.get(level, f"NPU support: {level}")


def rows_of_status(by_status: Dict[str, int]) -> List[tuple]:
    order = ("unsupported", "conditional", "needs-migration", "unknown")
    return [(k, by_status[k]) for k in order if by_status.get(k)] + \
        sorted((k, v) for k, v in by_status.items() if k not in order and v)
