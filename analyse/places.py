"""What a reader sees around a finding: the source lines about it, and a notebook's cell.

Added to the report's findings after the analysis (:func:`add_places`), from the same text the analysis read
(:func:`analyse.files.source_text`: a notebook's code cells, magics and shell lines made ``pass``):

* ``context``: ``{"start": N, "lines": [...]}``, up to :data:`CONTEXT_LINES` lines before and after the
  finding's own lines (the HTML's expanded view shows them, the finding's lines marked);
* ``cell``: ``{"cell": N, "line": M}`` for a finding in a notebook (``.ipynb``), 1-based; every view shows the
  place as ``cell N, line M``. Each occurrence of a grouped finding in a notebook gets its own ``cell``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from analyse.files import (NOTEBOOK_SUFFIX, FileTooLarge, NotRegularFile, cell_place, file_limit, notebook_cells,
                           read_regular_file, source_text)

CONTEXT_LINES = 3
MAX_LINE_CHARS = 400


def abspath_resolver(inputs: List[Path]) -> Callable[[str], Optional[Path]]:
    """The file on disk of a report path (relative to the single input folder, or with the input's name in
    front when several were given, or a file given by name)."""
    inputs = [Path(p) for p in inputs]

    def resolve(rel: str) -> Optional[Path]:
        for inp in inputs:
            if inp.is_file():
                if inp.name == rel or str(inp).replace("\\", "/") == rel:
                    return inp
                continue
            for cand in (inp / rel, inp.parent / rel):
                if cand.is_file():
                    return cand
        return None

    return resolve


class _Files:
    def __init__(self, resolve: Callable[[str], Optional[Path]]):
        self.resolve = resolve
        self.memo: Dict[str, Tuple[List[str], Optional[List[Tuple[int, int]]]]] = {}

    def get(self, rel: str) -> Tuple[List[str], Optional[List[Tuple[int, int]]]]:
        if rel not in self.memo:
            lines: List[str] = []
            cells = None
            path = self.resolve(rel)
            if path is not None:
                try:
                    data = read_regular_file(path, file_limit(path))
                    if rel.endswith(NOTEBOOK_SUFFIX):
                        text, cells = notebook_cells(data)
                    else:
                        text = source_text(path, data)
                    lines = text.splitlines()
                except (OSError, FileTooLarge, NotRegularFile, ValueError, UnicodeDecodeError, SyntaxError,
                        LookupError):
                    pass
            self.memo[rel] = (lines, cells)
        return self.memo[rel]


def add_places(report: dict, resolve: Callable[[str], Optional[Path]]) -> dict:
    """Add ``context`` and (notebooks) ``cell`` to the report's findings, in place; returns *report*."""
    files = _Files(resolve)
    for f in report.get("findings") or ():
        path = str(f.get("path", ""))
        if not path.endswith((".py", ".pyi", NOTEBOOK_SUFFIX)):
            continue
        lines, cells = files.get(path)
        try:
            line = int(f.get("line") or 0)
        except (TypeError, ValueError):
            continue
        if lines and 1 <= line <= len(lines):
            end = max(line, int(f.get("end_line") or line))
            start = max(1, line - CONTEXT_LINES)
            stop = min(len(lines), end + CONTEXT_LINES)
            f["context"] = {"start": start, "lines": [ln[:MAX_LINE_CHARS] for ln in lines[start - 1:stop]]}
        if cells is not None:
            place = cell_place(cells, line)
            if place is not None:
                f["cell"] = {"cell": place[0], "line": place[1]}
        for o in f.get("occurrences") or ():
            opath = str(o.get("path", path)) if isinstance(o, dict) else ""
            if not opath.endswith(NOTEBOOK_SUFFIX):
                continue
            ocells = files.get(opath)[1]
            p = cell_place(ocells, int(o.get("line") or 0)) if ocells is not None else None
            if p is not None:
                o["cell"] = {"cell": p[0], "line": p[1]}
    return report
