"""Report renderers: one module per output format, all over the same report dict.

The report dict follows ``report.schema.json`` (see :mod:`analyse.render.json_report`).
File formats are written by :func:`write_reports` (atomically: each file goes to
a temporary name in the output folder and is renamed into place only when
every requested format has been rendered and written); :func:`render_format`
gives one format as text (``-o -``). The terminal summary is a string returned
by :func:`render_terminal` for the CLI to print.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional

from .common import RenderOptions
from .csv_report import render_csv
from .github import render_github
from .gitlab import render_gitlab
from .json_report import iter_json, render_json
from .junit import render_junit
from .sarif import render_sarif
from .terminal import render_terminal
from .text import render_text

def render_html(report: dict, rules: List[dict]) -> str:
    """The self-contained HTML page (:func:`analyse.render.html.render_html`; jinja2 is imported on use)."""
    from .html import render_html as render

    return render(report, rules)


__all__ = ["FORMATS", "FILENAMES", "RenderOptions", "write_reports", "render_format", "render_html", "render_json",
           "render_terminal", "check_output_dir"]

#: File formats, in the order they are written and listed.
FORMATS = ("json", "html", "sarif", "csv", "junit", "gitlab", "github", "text")

FILENAMES = {
    "json": "report.json",
    "html": "report.html",
    "sarif": "report.sarif",
    "csv": "report.csv",
    "junit": "report.junit.xml",
    "gitlab": "report.gitlab.json",
    "github": "report.github.txt",
    "text": "report.txt",
}

_RENDERERS: Dict[str, Callable[[dict, RenderOptions], str]] = {
    "json": lambda report, options: render_json(report),
    "html": lambda report, options: render_html(report, options.rules),
    "sarif": render_sarif,
    "csv": render_csv,
    "junit": render_junit,
    "gitlab": render_gitlab,
    "github": render_github,
    "text": render_text,
}


# Non-UTF-8 file names (lone surrogates from surrogateescape) in every format: JSON formats write them as
# JSON escapes (\udcff: json.loads + os.fsencode give the real name back), the others as visible text
# (bad\xff.py); SARIF URIs percent-encode the byte (sarif._uri). Every output is valid UTF-8.
_JSON_FORMATS = frozenset(("json", "sarif", "gitlab"))


# Formats written to their file piece by piece (a finding's text at a time): the whole text of a large report is
# never held (the JSON report of 128,000 files is a quarter of a gigabyte).
_PIECES: Dict[str, Callable[[dict, RenderOptions], Iterable[str]]] = {
    "json": lambda report, options: iter_json(report),
}


def _render(fmt: str, report: dict, options: RenderOptions) -> str:
    from analyse.termsafe import escape_surrogates, json_surrogates

    text = _RENDERERS[fmt](report, options)
    return json_surrogates(text) if fmt in _JSON_FORMATS else escape_surrogates(text)


def _pieces(fmt: str, report: dict, options: RenderOptions) -> Iterable[str]:
    """The text of *fmt* in pieces, each made safe as :func:`_render` makes the whole (a lone surrogate is one
    character: no piece boundary splits one)."""
    from analyse.termsafe import escape_surrogates, json_surrogates

    if fmt not in _PIECES:
        yield _render(fmt, report, options)
        return
    safe = json_surrogates if fmt in _JSON_FORMATS else escape_surrogates
    for piece in _PIECES[fmt](report, options):
        yield safe(piece)


def _options(rules, options: Optional[RenderOptions]) -> RenderOptions:
    if options is not None:
        return options
    return RenderOptions(rules=list(rules or []))


def _check_formats(formats: Iterable[str]) -> List[str]:
    wanted = []
    for fmt in formats:
        fmt = fmt.strip().lower()
        if fmt not in FORMATS:
            raise ValueError(f"unknown report format {fmt!r}; choose from {', '.join(FORMATS)}")
        if fmt not in wanted:
            wanted.append(fmt)
    return [f for f in FORMATS if f in wanted]


def render_format(report: dict, fmt: str, rules: Optional[List[dict]] = None,
                  options: Optional[RenderOptions] = None) -> str:
    """One format as text."""
    (fmt,) = _check_formats([fmt])
    return _render(fmt, report, _options(rules, options))


def check_output_dir(out_dir: Path) -> Optional[str]:
    """Why *out_dir* cannot hold reports (one line), or None. Checked before the analysis runs."""
    out_dir = Path(out_dir)
    probe = out_dir
    while not probe.exists():
        if probe.is_symlink():
            return f"output folder {out_dir} is a broken symbolic link"
        parent = probe.parent
        if parent == probe:
            break
        probe = parent
    if not probe.is_dir():
        what = "is a file" if probe == out_dir else f"cannot be created: {probe} is a file"
        return f"output folder {out_dir} {what}, not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"output folder {out_dir} is not writable" if probe == out_dir else \
            f"output folder {out_dir} cannot be created: {probe} is not writable"
    return None


def write_reports(report: dict, rules: List[dict], out_dir: Path, formats: Iterable[str],
                  options: Optional[RenderOptions] = None) -> Dict[str, Path]:
    """Write the requested formats into ``out_dir`` (created if needed).

    Returns ``{format: path}`` for every file written, in ``FORMATS`` order.
    Raises ``ValueError`` for an unknown format before writing anything. Every
    file is first written to a temporary name and renamed into place after all
    of them were written, so an interrupted run (Ctrl-C, a full disk) leaves
    the previous reports or none, never a truncated one.
    """
    wanted = _check_formats(formats)
    opts = _options(rules, options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    staged: List[tuple] = []
    try:
        for fmt in wanted:
            fd, tmp = tempfile.mkstemp(prefix=f".{FILENAMES[fmt]}.", suffix=".tmp", dir=str(out_dir))
            staged.append((fmt, tmp))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                for piece in _pieces(fmt, report, opts):
                    fh.write(piece)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
        written: Dict[str, Path] = {}
        for fmt, tmp in staged:
            path = out_dir / FILENAMES[fmt]
            os.replace(tmp, path)
            written[fmt] = path
        staged = []
        return written
    finally:
        for _fmt, tmp in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
