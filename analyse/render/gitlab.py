"""``--format gitlab``: GitLab Code Quality report (``report.gitlab.json``).

A JSON array of Code Climate issues as GitLab reads them (``description``,
``check_name``, ``fingerprint``, ``severity``, ``location.path``,
``location.lines.begin``). Severity: blocker -> ``blocker``, manual ->
``major``, auto -> ``minor``, advice and info -> ``info``; a finding the verdict
does not count (off the path) is ``info`` whatever its severity, with the reason
in its description (one story with the gate and SARIF). The fingerprint is the
stable finding id, so GitLab tracks a finding across line shifts.
"""

from __future__ import annotations


from .json_report import dumps_indented
from .common import RenderOptions, counted, finding_text, one_line, sorted_findings, source_path

SEVERITIES = {"blocker": "blocker", "manual": "major", "auto": "minor", "advice": "info", "info": "info"}


def build_gitlab(report: dict, options: RenderOptions) -> list:
    out = []
    for f in sorted_findings(report):
        category = "Performance" if f.get("category") == "performance-advice" else "Compatibility"
        why = (f.get("off_path") or {}).get("why") if not counted(f) else None
        out.append({
            "type": "issue",
            "check_name": str(f.get("code", "")),
            "description": f"{f.get('code', '')} {finding_text(f)}" + (f" Not counted: {one_line(why)}." if why else ""),
            "categories": [category],
            "fingerprint": str(f.get("id", "")),
            "severity": SEVERITIES.get(str(f.get("severity")), "info") if counted(f) else "info",
            "location": {"path": source_path(report, f.get("path", "")),
                         "lines": {"begin": int(f.get("line") or 1)}},
        })
    return out


def render_gitlab(report: dict, options: RenderOptions) -> str:
    return dumps_indented(build_gitlab(report, options)) + "\n"
