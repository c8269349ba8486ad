"""A file's text with exact positions: edits are spans of the original text, applied in one go.

Python positions (``ast`` line / column, the column in UTF-8 bytes) are turned into offsets of the decoded
text; lines are split the way the Python tokenizer splits them (``\\r\\n``, ``\\r``, ``\\n``) so that line
endings, comments and formatting outside an edit are kept byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

_EOL = re.compile(r"\r\n|\r|\n")


@dataclass
class Edit:
    """One change of a file: the text between ``start`` and ``end`` (offsets) becomes ``new``.

    ``code`` / ``finding`` trace it to the finding that asked for it (``finding`` is None for an edit the
    migrate room detected itself, named by ``check``); ``why`` says what it does.
    """

    start: int
    end: int
    new: str
    code: Optional[str]
    finding: Optional[str]
    why: str
    check: Optional[str] = None
    line: int = 0
    end_line: int = 0
    before: str = ""
    after: str = ""


@dataclass
class Left:
    """A finding (or a place) left for the engineer, with the reason."""

    path: str
    line: int
    code: Optional[str]
    finding: Optional[str]
    reason: str
    advice: str = ""
    annotated: bool = False


@dataclass
class SourceText:
    text: str
    newline: str = "\n"
    starts: List[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.starts = [0]
        for m in _EOL.finditer(self.text):
            self.starts.append(m.end())
        counts = {}
        for m in _EOL.finditer(self.text):
            counts[m.group(0)] = counts.get(m.group(0), 0) + 1
        if counts:
            self.newline = max(counts.items(), key=lambda kv: kv[1])[0]

    # ------------------------------------------------------------------ positions
    def line_text(self, lineno: int) -> str:
        """Line ``lineno`` (1-based) without its line ending."""
        if lineno < 1 or lineno > len(self.starts):
            return ""
        s = self.starts[lineno - 1]
        e = self.starts[lineno] if lineno < len(self.starts) else len(self.text)
        return self.text[s:e].rstrip("\r\n")

    def offset(self, lineno: int, col_bytes: int) -> int:
        """Offset of (1-based line, UTF-8 byte column)."""
        line = self.line_text(lineno)
        if line.isascii():
            col = col_bytes
        else:
            col = len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))
        return self.starts[lineno - 1] + col

    def line_of(self, offset: int) -> int:
        import bisect

        return bisect.bisect_right(self.starts, offset)

    def line_start(self, lineno: int) -> int:
        return self.starts[lineno - 1] if 1 <= lineno <= len(self.starts) else len(self.text)

    def indent_of(self, lineno: int) -> str:
        line = self.line_text(lineno)
        return line[: len(line) - len(line.lstrip(" \t"))]


def apply_edits(text: str, edits: List[Edit]) -> Tuple[str, List[Edit]]:
    """The text with the edits made (overlapping edits after the first are dropped and returned)."""
    out: List[str] = []
    pos = 0
    dropped: List[Edit] = []
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        if e.start < pos:
            dropped.append(e)
            continue
        out.append(text[pos:e.start])
        out.append(e.new)
        pos = e.end
    out.append(text[pos:])
    return "".join(out), dropped


def describe(src: SourceText, new_text: str, edits: List[Edit]) -> None:
    """Fill each edit's line range and its before / after lines (whole lines, for the change list)."""
    shift = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        first = src.line_of(e.start)
        last = src.line_of(max(e.start, e.end - 1)) if e.end > e.start else first
        a = src.line_start(first)
        b = src.starts[last] if last < len(src.starts) else len(src.text)
        e.line, e.end_line = first, last
        e.before = src.text[a:b].rstrip("\r\n")
        na = a + shift
        count = (last - first + 1) + len(_EOL.findall(e.new)) - len(_EOL.findall(src.text[e.start:e.end]))
        pieces = _EOL.split(new_text[na:], maxsplit=max(count, 1))
        e.after = "\n".join(pieces[:max(count, 1)]) if count > 0 else ""
        shift += len(e.new) - (e.end - e.start)
