"""``--format csv``: one row per finding (``report.csv``).

The first five columns are the ones users of Ascend's own migration analysis
know (file, line, API, support status, suggestion); code, severity, category,
message, confidence, the stable finding id and ``lines`` (every line of a
grouped finding, space-separated; empty for a finding at one place) follow. Cells that a spreadsheet
would take for a formula (starting with ``=``, ``+``, ``-``, ``@``, tab or CR)
get a leading apostrophe: snippets and names come from untrusted code.
"""

from __future__ import annotations

import csv
import io

from .common import RenderOptions, column1, one_line, other_places, sorted_findings, source_path

COLUMNS = ("file", "line", "column", "api", "support_status", "suggestion", "code", "severity", "category",
           "message", "confidence", "id", "lines")

_STATUS = {
    "blocker": "unsupported",
    "manual": "supported after a manual change",
    "auto": "supported via transfer_to_npu",
    "advice": "supported",
}
_STATUS_BY_CODE = {
    "NPU201": "unsupported",
    "NPU302": "unsupported (probed)",
    "NPU202": "supported with limitations",
    "NPU301": "unverified",
    "NPU451": "unverified",
}


def support_status(finding: dict) -> str:
    code = str(finding.get("code", ""))
    if code in _STATUS_BY_CODE:
        return _STATUS_BY_CODE[code]
    return _STATUS.get(str(finding.get("severity")), "supported (note)")


def _cell(value: object) -> str:
    text = one_line(value) if not isinstance(value, int) else str(value)
    if text and text[0] in "=+-@\t\r":
        return "'" + text
    return text


def _lines(report: dict, f: dict) -> str:
    """The ``lines`` column: the lines of a grouped finding in its file, then ``path:line`` for each place in
    another file (a finding grouped across files)."""
    own = [str(x) for x in f.get("lines") or ()]
    others = [f"{source_path(report, p)}:{n}" for p, n in other_places(f) if p != f.get("path")]
    if others and not own:
        own = [str(f.get("line") or "")]
    return " ".join(own + others)


def render_csv(report: dict, options: RenderOptions) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for f in sorted_findings(report):
        w.writerow([_cell(v) for v in (
            source_path(report, f.get("path", "")), int(f.get("line") or 0), column1(f), f.get("api", ""),
            support_status(f), f.get("replacement") or "", f.get("code", ""), f.get("severity", ""),
            f.get("category", ""), f.get("message", ""), f.get("confidence", ""), f.get("id", ""),
            _lines(report, f))])
    return buf.getvalue()
