"""Lexical helpers for C/C++/CUDA text, every one linear in the size of the text.

Shared by the cuda-extension pass (``.cu`` files in script mode) and the
library's C++ scan (:mod:`analyse.library.cpp`). Nothing here backtracks over
unbounded spans: comments and strings are removed by one left-to-right scan,
brackets are matched with a stack, and every look-back from a bracket or a
``__global__`` keyword is bounded by a constant.
"""

from __future__ import annotations

import bisect
import re
from typing import Dict, List, Tuple

# one token per match: a comment (closed or running to the end), a string or
# char literal (closed, or running to the end of the line), or a run of other text
_LEX = re.compile(r"//[^\n]*|/\*[\s\S]*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*(?:\"|$)|'(?:\\.|[^'\\\n])*(?:'|$)"
                  r"|[^/\"']+|/", re.M)
# ``\b__global__\b`` made to start with its literal word (the leading \b a look-behind after it), so that re
# jumps between occurrences instead of trying every position (a tenth of a second on DeepSpeed's sources)
_GLOBAL_KW = re.compile(r"__global__(?<!\w__global__)\b")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^()]*\)")
_TRAIL_IDENT = re.compile(r"[A-Za-z_]\w*$")
MAX_HEAD = 2000   # a kernel declaration head (``__global__ ... name(``) longer than this is not one


def blank_comments_and_strings(text: str, keep_strings: bool = True) -> str:
    """*text* with comments (and, unless *keep_strings*, string contents) replaced
    by spaces; newlines and offsets are preserved."""
    out: List[str] = []
    append = out.append
    for m in _LEX.finditer(text):
        tok = m.group(0)
        c = tok[0]
        if c == "/" and len(tok) > 1 and tok[1] in "/*":
            append(re.sub(r"[^\n]", " ", tok) if "\n" in tok else " " * len(tok))
        elif c in "\"'" and not keep_strings:
            append(c + " " * (len(tok) - 2) + tok[-1] if len(tok) >= 2 else tok)
        else:
            append(tok)
    return "".join(out)


class LineIndex:
    """Offset -> 1-based line number, by bisection over the newline offsets."""

    def __init__(self, text: str):
        self._nl = [m.start() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._nl, offset - 1) + 1


def match_brackets(text: str, open_ch: str = "{", close_ch: str = "}") -> Dict[int, int]:
    """open offset -> close offset, for balanced pairs (unbalanced ones are left out)."""
    stack: List[int] = []
    out: Dict[int, int] = {}
    rx = re.compile("[" + re.escape(open_ch + close_ch) + "]")
    for m in rx.finditer(text):
        pos = m.start()
        if text[pos] == open_ch:
            stack.append(pos)
        elif stack:
            out[stack.pop()] = pos
    return out


def _strip_template(head: str) -> str:
    """``name<T, 4>`` -> ``name`` (the head ends with ``>``)."""
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        ch = head[i]
        if ch == ">":
            depth += 1
        elif ch == "<":
            depth -= 1
            if depth == 0:
                return head[:i].rstrip()
    return head


def global_kernels(code: str) -> List[Tuple[str, int]]:
    """(name, offset of the name) of each ``__global__`` function in comment-free *code*.

    From each ``__global__`` the head runs to the next ``(``; a ``;``, ``{`` or
    ``}`` first, or a head longer than :data:`MAX_HEAD`, means it is not a
    declaration. The next-stop search moves forward only, so the whole scan is
    linear however many ``__global__`` words the text holds.
    """
    out: List[Tuple[str, int]] = []
    stops = re.compile(r"[(;{}]")
    stop_at = -1
    stop_ch = ""
    for m in _GLOBAL_KW.finditer(code):
        start = m.end()
        if stop_at < start:
            s = stops.search(code, start)
            if s is None:
                break
            stop_at, stop_ch = s.start(), s.group(0)
        if stop_ch != "(" or stop_at - start > MAX_HEAD:
            continue
        head = code[start:stop_at].rstrip()
        if head.endswith(">"):
            head = _strip_template(head)
        n = _TRAIL_IDENT.search(head)
        if n is None:
            continue
        name = n.group(0)
        if name in ("__launch_bounds__",):
            continue
        out.append((name, start + n.start()))
    return out


def cuda_kernels(text: str) -> List[Tuple[str, int]]:
    """(name, line) of each ``__global__`` function in CUDA source text (comments ignored)."""
    code = blank_comments_and_strings(text)
    code = _LAUNCH_BOUNDS.sub(lambda m: " " * len(m.group(0)), code)
    lines = LineIndex(code)
    return [(name, lines.line(off)) for name, off in global_kernels(code)]
