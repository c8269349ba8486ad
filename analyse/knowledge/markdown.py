"""The small markdown subset of the knowledge texts (limitations, notes), as plain text or HTML.

The Ascend docs write limitations as markdown: ``- `input` ...`` bullets, inline code,
``**bold**``, ``[text](url)`` links, fenced code blocks and, rarely, ``| a | b |`` tables.
Messages shown to users never carry that raw markup: :func:`to_plain` gives terminal text
(code blocks indented, table rows as ``a | b``), :func:`to_html` gives escaped HTML.
"""

from __future__ import annotations

import html
import re
from typing import List

__all__ = ["to_plain", "to_html", "one_line"]

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_CODE = re.compile(r"`([^`]*)`")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _blocks(md: str):
    """("code", lines) / ("table", rows) / ("line", text) items."""
    lines = md.replace("<br>", "\n").replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        raw = lines[i]
        if raw.strip().startswith("```"):
            body: List[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            i += 1
            yield "code", body
            continue
        if raw.strip().startswith("|") and raw.strip().endswith("|"):
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                if not _RULE.match(lines[i]):
                    rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            yield "table", rows
            continue
        if raw.strip():
            yield "line", raw
        i += 1


def _inline_plain(text: str) -> str:
    text = re.sub(r"</?term>", "", text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})", text)
    text = _BOLD.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    return text.replace("\\*", "*").strip()


def to_plain(md: str | None) -> str:
    """Terminal text: one line per bullet/line, code blocks indented by four spaces."""
    if not md:
        return ""
    out: List[str] = []
    for kind, body in _blocks(md):
        if kind == "code":
            out.extend("    " + ln for ln in body if ln.strip())
        elif kind == "table":
            out.extend(" | ".join(_inline_plain(c) for c in row) for row in body)
        else:
            out.append(_inline_plain(_BULLET.sub("", body)))
    return "\n".join(out)


def one_line(md: str | None) -> str:
    """Plain text on one line (items joined with '; '), for finding messages."""
    parts = []
    for ln in to_plain(md).split("\n"):
        ln = ln.strip()
        if ln:
            parts.append(ln.rstrip(".;"))
    return "; ".join(parts) + ("." if parts else "")


def _inline_html(text: str) -> str:
    text = re.sub(r"</?term>", "", text)
    out = []
    pos = 0
    for m in _CODE.finditer(text):
        out.append(_inline_html_nocode(text[pos:m.start()]))
        out.append(f"<code>{html.escape(m.group(1))}</code>")
        pos = m.end()
    out.append(_inline_html_nocode(text[pos:]))
    return "".join(out).strip()


def _inline_html_nocode(text: str) -> str:
    parts = []
    pos = 0
    for m in _LINK.finditer(text):
        parts.append(_BOLD.sub(r"<strong>\1</strong>", html.escape(text[pos:m.start()])))
        url = m.group(2)
        label = html.escape(m.group(1))
        if url.startswith(("http://", "https://")):
            parts.append(f'<a href="{html.escape(url, quote=True)}" rel="noopener noreferrer">{label}</a>')
        else:
            parts.append(label)
        pos = m.end()
    parts.append(_BOLD.sub(r"<strong>\1</strong>", html.escape(text[pos:])))
    return "".join(parts).replace("\\*", "*")


def to_html(md: str | None) -> str:
    """Escaped HTML: bullets as a list, code blocks as <pre><code>, tables as <table>."""
    if not md:
        return ""
    out: List[str] = []
    items: List[str] = []

    def flush() -> None:
        if items:
            out.append("<ul>" + "".join(f"<li>{x}</li>" for x in items) + "</ul>")
            items.clear()

    for kind, body in _blocks(md):
        if kind == "code":
            flush()
            out.append("<pre><code>" + html.escape("\n".join(body)) + "</code></pre>")
        elif kind == "table":
            flush()
            rows = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>" for row in body)
            out.append(f"<table>{rows}</table>")
        else:
            items.append(_inline_html(_BULLET.sub("", body)))
    flush()
    return "".join(out)
