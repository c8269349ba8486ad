"""Text from analysed trees made safe to print on a terminal.

File names, snippets and messages come from untrusted repositories: a file
called ``"\\x1b]0;owned\\x07.py"`` must not retitle the user's terminal, and a
right-to-left override must not reorder what is shown. :func:`safe` replaces
every control character (C0, DEL, C1), every bidirectional-formatting
character and the Unicode line/paragraph separators with a visible escape
(``\\x1b``, ``\\u202e``), exactly as ``repr`` spells them.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + _BIDI + "]")


def _escape(m: "re.Match[str]") -> str:
    ch = m.group(0)
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: object, keep_newlines: bool = False) -> str:
    """*text* with control and bidi characters escaped (``\\n`` kept if asked)."""
    s = str(text)
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escape, part) for part in s.split("\n"))
    return _UNSAFE.sub(_escape, s)
