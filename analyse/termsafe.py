"""Text from analysed trees made safe to print on a terminal.

File names, snippets and messages come from untrusted repositories: a file
called ``"\\x1b]0;owned\\x07.py"`` must not retitle the user's terminal, and a
right-to-left override must not reorder what is shown. :func:`safe` replaces
every control character (C0, DEL, C1), every bidirectional-formatting
character and the Unicode line/paragraph separators with a visible escape
(``\\x1b``, ``\\u202e``), exactly as ``repr`` spells them.

A file name that is not valid UTF-8 reaches the tool as a string with lone surrogates (Python's
``surrogateescape``: the byte 0xff is ``\\udcff``); no UTF-8 stream can take those. :func:`safe` and
:func:`escape_surrogates` write them as the byte they stand for (``bad\\xff.py``), :func:`json_surrogates`
as a JSON escape (``"bad\\udcff.py"``, which ``json.loads`` + ``os.fsencode`` turn back into the real name).
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + _BIDI + "\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(m: "re.Match[str]") -> str:
    ch = m.group(0)
    code = ord(ch)
    if 0xdc80 <= code <= 0xdcff:   # surrogateescape: the undecodable byte itself
        return f"\\x{code - 0xdc00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_surrogates(text: str) -> str:
    """*text* with lone surrogates written as visible escapes (``\\xff`` for a surrogateescape byte), so
    that it encodes as UTF-8; nothing else changes."""
    return _SURROGATE.sub(_escape, text) if _SURROGATE.search(text) else text


def json_surrogates(text: str) -> str:
    """JSON text (``ensure_ascii=False``) with lone surrogates, which can only be inside its strings, written
    as ``\\udcff`` escapes: valid UTF-8 that decodes back to the same string."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def safe(text: object, keep_newlines: bool = False) -> str:
    """*text* with control and bidi characters escaped (``\\n`` kept if asked)."""
    s = str(text)
    if keep_newlines:
        return "\n".join(_UNSAFE.sub(_escape, part) for part in s.split("\n"))
    return _UNSAFE.sub(_escape, s)
