"""Turning findings and errors into the report object (report.schema.json)."""

from __future__ import annotations

from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence

from analyse import __version__
from analyse.findings import CATEGORIES, SEVERITIES, AnalysisError, Finding

EFFORT_TEXT = {
    "none": "No migration work found",
    "low": "Low effort",
    "medium": "Medium effort",
    "high": "High effort",
    "blocked": "Blocked until new NPU work is done",
}


def grade(blockers: int, manual_apis: int, manual: int, auto: int) -> str:
    """Effort grade from the counts; *manual_apis* counts distinct APIs needing a manual change."""
    if blockers:
        return "blocked"
    if manual_apis > 15 or manual > 60:
        return "high"
    if manual_apis > 4 or manual > 15:
        return "medium"
    if manual or auto:
        return "low"
    return "none"


def _top(counter: Counter, n: int = 3) -> str:
    return ", ".join(f"{k} ({v})" for k, v in counter.most_common(n))


def verdict(findings: Sequence[Finding], files_analysed: int) -> dict:
    sev = Counter(f.severity for f in findings)
    blockers = sev.get("blocker", 0)
    manual = sev.get("manual", 0)
    auto = sev.get("auto", 0)
    manual_apis = Counter(f.api for f in findings if f.severity == "manual")
    blocker_apis = Counter(f.api for f in findings if f.severity == "blocker")
    effort = grade(blockers, len(manual_apis), manual, auto)
    parts: List[str] = []
    files = len({f.path for f in findings})
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


def build_report(*, mode: str, inputs: Iterable[str], torch_version: str, torch_npu_version: Optional[str],
                 knowledge_base: str, findings: Sequence[Finding], errors: Sequence[AnalysisError],
                 files_analysed: int, lines_analysed: int, duration_s: float,
                 thirdparty: Optional[dict] = None, extra_summary: Optional[dict] = None, policy=None) -> dict:
    """The report dict. *policy* (:class:`analyse.policy.Policy`) drops deselected, suppressed and
    baselined findings first, so that every count and the verdict see only what is reported."""
    sections: dict = {}
    if policy is not None:
        findings, policy_summary, sections = policy.apply(findings)
        extra_summary = {**(extra_summary or {}), **policy_summary}
    findings = sorted(findings, key=lambda f: f.sort_key)
    by_cat = Counter(f.category for f in findings)
    by_sev = Counter(f.severity for f in findings)
    unknown = Counter(f.api for f in findings if f.category == "unknown-api")
    summary = {
        "files_analysed": files_analysed,
        "files_failed": len({e.path for e in errors if e.kind != "internal"}),
        "lines_analysed": lines_analysed,
        "duration_s": round(duration_s, 3),
        "by_category": {c: by_cat[c] for c in CATEGORIES if by_cat.get(c)},
        "by_severity": {s: by_sev[s] for s in SEVERITIES if by_sev.get(s)},
        "verdict": verdict(findings, files_analysed),
        "unknown_apis": [{"api": a, "count": n} for a, n in sorted(unknown.items(), key=lambda kv: (-kv[1], kv[0]))],
    }
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
        "findings": [f.to_dict() for f in findings],
        "errors": [e.to_dict() for e in sorted(errors, key=lambda e: (e.path, e.line or 0))],
    }
    if thirdparty is not None:
        report["thirdparty"] = thirdparty
    report.update(sections)
    return report
