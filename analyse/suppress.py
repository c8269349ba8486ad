"""Inline suppressions: ``# npu-analyse: ignore[NPU002,NPU101]`` comments.

* ``# npu-analyse: ignore[NPU002]`` at the end of a line suppresses those codes
  for findings that start on that line (a finding spanning several lines is
  suppressed by a comment on its first line);
* ``# npu-analyse: ignore`` (no codes) suppresses every finding on that line;
* ``# npu-analyse: ignore-file[NPU501]`` anywhere in a file suppresses those
  codes in the whole file, ``# npu-analyse: ignore-file`` everything in it.

Python files are read with :mod:`tokenize`, so only real comments count (text
inside a string literal is not a directive) and nothing is executed. Other
text files the passes read (``.cu``, ``setup.cfg`` ...) accept the same
directive after ``#``, ``//`` or ``/*``.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from analyse.files import NOTEBOOK_SUFFIX, FileTooLarge, file_limit, source_text

_DIRECTIVE = re.compile(
    r"npu-analyse\s*:\s*(?P<kind>ignore-file|ignore)(?![\w-])\s*(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_OTHER_COMMENT = re.compile(r"(?:#|//|/\*)\s*(?=npu-analyse\s*:)", re.IGNORECASE)
CODE_RE = re.compile(r"^NPU\d{3}$")


@dataclass
class Directive:
    """One ``ignore`` / ``ignore-file`` directive; ``codes`` None means every code."""

    line: int
    file_level: bool
    codes: Optional[Tuple[str, ...]]
    used: set = field(default_factory=set)

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes

    def unused_codes(self) -> List[str]:
        if self.codes is None:
            return [] if self.used else ["*"]
        return [c for c in self.codes if c not in self.used]

    @property
    def text(self) -> str:
        kind = "ignore-file" if self.file_level else "ignore"
        return f"# npu-analyse: {kind}" + (f"[{','.join(self.codes)}]" if self.codes is not None else "")


@dataclass
class FileDirectives:
    lines: Dict[int, List[Directive]] = field(default_factory=dict)
    whole_file: List[Directive] = field(default_factory=list)

    def all(self) -> List[Directive]:
        out = list(self.whole_file)
        for ds in self.lines.values():
            out.extend(ds)
        return sorted(out, key=lambda d: (d.line, d.file_level))

    def match(self, code: str, line: int) -> Optional[Directive]:
        """The directive suppressing *code* on *line* (line-level first), or None."""
        for d in self.lines.get(line, ()):
            if d.covers(code):
                return d
        for d in self.whole_file:
            if d.covers(code):
                return d
        return None


def _parse_codes(raw: Optional[str]) -> Optional[Tuple[str, ...]]:
    if raw is None:
        return None
    codes = [c.strip().upper() for c in re.split(r"[,\s]+", raw) if c.strip()]
    return tuple(dict.fromkeys(codes)) if codes else None


def _add(out: FileDirectives, comment: str, line: int) -> None:
    for m in _DIRECTIVE.finditer(comment):
        d = Directive(line=line, file_level=m.group("kind").lower() == "ignore-file", codes=_parse_codes(m.group("codes")))
        if d.file_level:
            out.whole_file.append(d)
        else:
            out.lines.setdefault(line, []).append(d)


def scan_python(text: str) -> FileDirectives:
    """Directives in the comments of Python source *text* (tokenized, never run)."""
    out = FileDirectives()
    if "npu-analyse" not in text.lower():
        return out
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and "npu-analyse" in tok.string.lower():
                _add(out, tok.string, tok.start[0])
    except (tokenize.TokenError, SyntaxError, ValueError):
        # Unterminated constructs at the end of the file: keep what was read.
        pass
    return out


def scan_other(text: str) -> FileDirectives:
    """Directives in a non-Python text file: after ``#``, ``//`` or ``/*``."""
    out = FileDirectives()
    if "npu-analyse" not in text.lower():
        return out
    for n, line in enumerate(text.splitlines(), 1):
        m = _OTHER_COMMENT.search(line)
        if m:
            _add(out, line[m.end():], n)
    return out


def scan_file(path: Path) -> FileDirectives:
    """Directives of the file at *path*; an unreadable or oversized file has none."""
    try:
        if not path.is_file() or path.stat().st_size > file_limit(path):
            return FileDirectives()
        data = path.read_bytes()
    except OSError:
        return FileDirectives()
    python = path.suffix in (".py", ".pyi", NOTEBOOK_SUFFIX)   # a notebook: the comments of its code cells
    try:
        text = source_text(path, data) if python else data.decode("utf-8", "replace")
    except (UnicodeDecodeError, SyntaxError, LookupError, ValueError, FileTooLarge):
        text = data.decode("utf-8", "replace")
    if python:
        return scan_python(text)
    return scan_other(text)
