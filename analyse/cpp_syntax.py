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


# A build flag that is set only when the extension is built for CUDA: ``WITH_CUDA``, ``USE_GPU``,
# ``<PROJECT>_WITH_CUDA``, ``USE_NCCL`` ... (the flags setup.py passes to a CUDAExtension and never to a
# CppExtension), and the macros nvcc itself defines for the files it compiles (``__CUDACC__``, ``__NVCC__``).
# ``__CUDA_ARCH__`` is not one: it tells nvcc's device pass from its host pass, not a CUDA build from another.
_CUDA_FLAG = re.compile(r"(?:\w+_)?(?:WITH|USE|ENABLE|HAVE|BUILD)_(?:CUDA|GPU|NCCL|NVRTC|CUDNN|CUBLAS)"
                        r"|__CUDACC__|__NVCC__|GOOGLE_CUDA")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif)\b([^\n]*)", re.M)
_ATOM = re.compile(r"(!?)\s*(?:defined\s*)?([A-Za-z_]\w*)")


def _needs_cuda_flag(cond: str) -> bool:
    """An ``#if`` condition that holds only when a CUDA build flag is set: every ``||`` alternative has a
    conjunct naming a flag of :data:`_CUDA_FLAG` (not negated). Parentheses are dropped first, so a mixed
    ``a && (b || c)`` is read as ``a && b || c``: the reading that says "CUDA" less often."""
    text = cond.replace("(", " ").replace(")", " ")
    alts = text.split("||")
    for alt in alts:
        hit = False
        for conj in alt.split("&&"):
            m = _ATOM.match(conj.strip())
            if m is not None and m.group(2) != "defined" and not m.group(1) and _CUDA_FLAG.fullmatch(m.group(2)):
                hit = True
        if not hit:
            return False
    return True


def _negates_cuda_flag(cond: str) -> bool:
    """``!defined(WITH_CUDA)`` / ``!WITH_CUDA`` alone: the ``#else`` branch is the CUDA build's."""
    m = re.fullmatch(r"\s*!\s*\(?\s*(?:defined\s*\(?\s*)?([A-Za-z_]\w*)\s*\)?\s*\)?\s*", cond)
    return m is not None and _CUDA_FLAG.fullmatch(m.group(1)) is not None


def cuda_build_spans(code: str) -> List[Tuple[int, int, int]]:
    """(start, end, directive offset) of the spans of comment-free *code* compiled only in a CUDA build:
    the branches of ``#ifdef WITH_CUDA`` / ``#if defined(USE_GPU)`` / ``#ifndef X ... #else`` (X a CUDA
    flag) ..., nested ones inside an outer span left out. One pass over the directives."""
    out: List[Tuple[int, int, int]] = []
    # frames: [this branch is CUDA-only, the #else branch would be, offset where the CUDA span opened or -1]
    stack: List[List] = []
    open_at = -1     # offset of the outermost open CUDA span
    open_dir = -1
    for m in _DIRECTIVE.finditer(code):
        kind, cond = m.group(1), m.group(2)
        inside = open_at >= 0
        if kind in ("if", "ifdef", "ifndef"):
            if kind == "ifdef":
                cuda, else_cuda = bool(_CUDA_FLAG.fullmatch(cond.strip())), False
            elif kind == "ifndef":
                cuda, else_cuda = False, bool(_CUDA_FLAG.fullmatch(cond.strip()))
            else:
                cuda, else_cuda = _needs_cuda_flag(cond), _negates_cuda_flag(cond)
            stack.append([cuda, else_cuda])
            if cuda and not inside:
                open_at, open_dir = m.end(), m.start()
                stack[-1].append(True)   # this frame opened the span
            continue
        if not stack:
            continue
        frame = stack[-1]
        opened = len(frame) > 2
        if kind == "endif":
            stack.pop()
            if opened:
                out.append((open_at, m.start(), open_dir))
                open_at = open_dir = -1
            continue
        # elif / else: the span this frame opened closes; the new branch may open one
        if opened:
            out.append((open_at, m.start(), open_dir))
            open_at = open_dir = -1
            del frame[2:]
        cuda = _needs_cuda_flag(cond) if kind == "elif" else frame[1]
        frame[0], frame[1] = cuda, False
        if cuda and open_at < 0:
            open_at, open_dir = m.end(), m.start()
            frame.append(True)
    if open_at >= 0:
        out.append((open_at, len(code), open_dir))
    return out


def in_spans(spans: List[Tuple[int, int, int]], starts: List[int], pos: int) -> int:
    """The directive offset of the span of *spans* (sorted, disjoint; *starts* their start offsets) holding
    *pos*, or -1."""
    i = bisect.bisect_right(starts, pos) - 1
    if i >= 0 and spans[i][0] <= pos < spans[i][1]:
        return spans[i][2]
    return -1
