"""``--format text``: one finding per line, ``path:line:col: CODE message`` (like ruff's concise output).

Columns are 1-based. File names, messages and suggestions are escaped for the
terminal (control characters never reach it raw).
"""

from __future__ import annotations

from ..termsafe import safe
from .common import RenderOptions, cell_text, column1, finding_text, sorted_findings, source_path


def render_text(report: dict, options: RenderOptions) -> str:
    lines = []
    for f in sorted_findings(report):
        path = source_path(report, f.get("path", ""))
        cell = cell_text(f)
        lines.append(safe(f"{path}:{f.get('line', 1)}:{column1(f)}: {f.get('code', '')} "
                          f"[{f.get('severity', '')}] {finding_text(f)}" + (f" ({path}, {cell})" if cell else "")))
    return "\n".join(lines) + ("\n" if lines else "")
