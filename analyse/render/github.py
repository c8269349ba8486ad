"""``--format github``: GitHub Actions workflow commands (``::error file=…,line=…::…``).

Printed in a workflow step (``-o -``), each line becomes an annotation on the
pull request. Findings at or above ``--fail-on`` are ``error``; other
blocker/manual/auto findings ``warning``; advice and info ``notice``.
Values are escaped as the workflow-command syntax requires (``%``, CR, LF,
and ``:`` / ``,`` inside properties) and control characters are escaped too,
so a hostile file name cannot inject another command.
"""

from __future__ import annotations

from ..termsafe import safe
from .common import RenderOptions, column1, counted, finding_text, gated, sorted_findings, source_path


def _data(text: str) -> str:
    return safe(str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def level(finding: dict, fail_on: str, scope: str = "counted") -> str:
    """error: what the gate fails on; notice: advice, info and findings off the path (the verdict does not count
    them); warning: the other changes."""
    if gated(finding, fail_on, scope):
        return "error"
    if not counted(finding):
        return "notice"
    return "warning" if finding.get("severity") in ("blocker", "manual", "auto") else "notice"


def render_github(report: dict, options: RenderOptions) -> str:
    lines = []
    for f in sorted_findings(report):
        props = [f"file={_prop(source_path(report, f.get('path', '')))}", f"line={int(f.get('line') or 1)}",
                 f"col={column1(f)}"]
        if f.get("end_line"):
            props.append(f"endLine={int(f['end_line'])}")
        props.append(f"title={_prop('npu-analyse ' + str(f.get('code', '')) + ' (' + str(f.get('severity', '')) + ')')}")
        lines.append(f"::{level(f, options.fail_on, options.fail_on_scope)} {','.join(props)}::{_data(f.get('code', '') + ' ' + finding_text(f))}")
    for e in report.get("errors") or []:
        props = [f"file={_prop(source_path(report, e.get('path', '')))}"]
        if e.get("line"):
            props.append(f"line={int(e['line'])}")
        props.append(f"title={_prop('npu-analyse could not analyse this file (' + str(e.get('kind', '')) + ')')}")
        lines.append(f"::warning {','.join(props)}::{_data(e.get('message', ''))}")
    return "\n".join(lines) + ("\n" if lines else "")
