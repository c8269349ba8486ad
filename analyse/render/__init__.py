"""Report renderers: one per output format, all over the same report dict.

The report dict follows ``report.schema.json`` (see :mod:`analyse.render.json_report`).
File formats are written by :func:`write_reports`; the terminal summary is a
string returned by :func:`render_terminal` for the CLI to print.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, List

from .html import render_html
from .json_report import render_json
from .terminal import render_terminal

__all__ = ["FORMATS", "write_reports", "render_html", "render_json", "render_terminal"]

#: File formats :func:`write_reports` knows (the terminal summary is always printed unless quiet).
FORMATS = ("json", "html")

_FILENAMES = {"json": "report.json", "html": "report.html"}


def write_reports(report: dict, rules: List[dict], out_dir: Path, formats: Iterable[str]) -> Dict[str, Path]:
    """Write the requested formats into ``out_dir`` (created if needed).

    Returns ``{format: path}`` for every file written, in ``FORMATS`` order.
    Raises ``ValueError`` for an unknown format before writing anything.
    """
    wanted = set()
    for fmt in formats:
        fmt = fmt.strip().lower()
        if fmt not in FORMATS:
            raise ValueError(f"unknown report format {fmt!r}; choose from {', '.join(FORMATS)}")
        wanted.add(fmt)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: Dict[str, Path] = {}
    for fmt in FORMATS:
        if fmt not in wanted:
            continue
        path = out_dir / _FILENAMES[fmt]
        if fmt == "json":
            text = render_json(report)
        else:
            text = render_html(report, rules)
        path.write_text(text, encoding="utf-8")
        written[fmt] = path
    return written
