"""Helpers shared by the CI formats (SARIF, CSV, JUnit, GitLab, GitHub, text)."""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

SEVERITY_ORDER = ("blocker", "manual", "auto", "advice", "info")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITY_ORDER)}

#: Where the rule documentation lives (docs/rules.md in the repository). Its public address is named with
#: NPU_ANALYSE_DOCS_URL (the GitHub Action sets it to the action's own docs/rules.md); reports never link a file
#: on the analysing machine (a virtualenv's copy means nothing to the reader of a SARIF upload).
DOCS_ENV = "NPU_ANALYSE_DOCS_URL"
DOCS_RELATIVE = "docs/rules.md"


@dataclass
class RenderOptions:
    """What a formatter needs besides the report: rule docs and the gate."""

    rules: List[dict] = field(default_factory=list)
    fail_on: str = "never"
    #: "counted": the gate sees the findings the verdict counts; "listed": every listed finding
    fail_on_scope: str = "counted"

    @property
    def rules_by_code(self) -> Dict[str, dict]:
        return {str(r.get("code")): r for r in self.rules}


def counted(finding: dict) -> bool:
    """Whether the verdict counts *finding* (``counted``; a finding without the field, as in reports written
    before it existed, counts)."""
    return finding.get("counted", True) is not False


def gated(finding: dict, fail_on: str, scope: str = "counted") -> bool:
    """True when *finding* is at or above the ``--fail-on`` severity and, with *scope* ``counted`` (the
    default: the gate and the verdict tell one story), the verdict counts it; *scope* ``listed`` gates on
    every listed finding, off the path too."""
    if fail_on == "never":
        return False
    if scope != "listed" and not counted(finding):
        return False
    return SEVERITY_RANK.get(finding.get("severity"), 99) <= SEVERITY_RANK.get(fail_on, -1)


def rule_anchor(code: str, name: str = "") -> str:
    """The GitHub heading anchor of a rule in docs/rules.md (``## NPU002 tensor-module-cuda``)."""
    text = f"{code} {name}".strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def docs_url() -> str:
    """The public address of the rule documentation ($NPU_ANALYSE_DOCS_URL when it is an http(s) URL), else ""
    (no link: the report carries the rule's help text itself)."""
    env = os.environ.get(DOCS_ENV, "").strip()
    if env.lower().startswith(("https://", "http://")):
        return env.split("#", 1)[0]
    return ""


def rule_help_uri(code: str, name: str = "") -> str:
    """The rule's section of the public docs/rules.md, or "" when no public address is known."""
    base = docs_url()
    return f"{base}#{rule_anchor(code, name)}" if base else ""


def source_path(report: dict, rel: str) -> str:
    """The finding's file as a path from where the tool was run ('/'-separated).

    Report paths are relative to the analysed input (with the input's name in
    front when several were given); CI systems want paths from the checkout
    root, which is where the tool runs. So ``npu-analyse script src`` reports
    ``train.py`` and this gives ``src/train.py``.
    """
    inputs = [str(i).replace(os.sep, "/") for i in (report.get("inputs") or [])]
    rel = str(rel)
    if not inputs:
        return rel
    if len(inputs) == 1:
        base = inputs[0].rstrip("/") or "/"
        if base.endswith(".py") or posixpath.basename(base) == rel:
            joined = base if posixpath.basename(base) == rel else posixpath.join(posixpath.dirname(base), rel)
        else:
            joined = posixpath.join(base, rel)
        return _clean(joined)
    if rel in {_clean(i) for i in inputs}:  # one of several files given: the path as given
        return rel
    head = rel.split("/", 1)[0]
    for inp in inputs:
        stripped = inp.rstrip("/")
        if posixpath.basename(stripped) == head:
            return _clean(posixpath.join(posixpath.dirname(stripped), rel))
    return rel


def _clean(path: str) -> str:
    norm = posixpath.normpath(path)
    return norm[2:] if norm.startswith("./") else norm


def cell_text(finding: dict) -> str:
    """"cell 3, line 2" for a finding in a notebook (``cell``), else ""."""
    c = finding.get("cell")
    if isinstance(c, dict) and c.get("cell"):
        return f"cell {c['cell']}, line {c.get('line', '?')}"
    return ""


def place_text(finding: dict, path: Optional[str] = None) -> str:
    """"train.py:12", or for a notebook "scaling.ipynb, cell 3, line 2"."""
    path = str(finding.get("path", "?")) if path is None else path
    cell = cell_text(finding)
    return f"{path}, {cell}" if cell else f"{path}:{finding.get('line', '?')}"


def column1(finding: dict) -> int:
    """1-based column (reports use 0-based columns)."""
    try:
        return int(finding.get("column") or 0) + 1
    except (TypeError, ValueError):
        return 1


def one_line(text: object) -> str:
    return " ".join(str(text or "").split())


def other_lines(finding: dict) -> List[int]:
    """The lines of a grouped finding (``lines``) besides its own ``line``."""
    own = finding.get("line")
    out = []
    for x in finding.get("lines") or ():
        try:
            n = int(x)
        except (TypeError, ValueError):
            continue
        if n != own and n not in out:
            out.append(n)
    return out


def finding_paths(finding: dict) -> List[str]:
    """Every file of a finding: its own ``path``, then the other files of a finding grouped across files
    (``locations``)."""
    out = [str(finding.get("path", ""))]
    for loc in finding.get("locations") or ():
        p = loc.get("path") if isinstance(loc, dict) else None
        if p and str(p) not in out:
            out.append(str(p))
    return out


def other_places(finding: dict) -> List[tuple]:
    """(path, line) of every place of a grouped finding besides its own: its other lines in its file, then the
    places in other files (``locations``)."""
    own_path = str(finding.get("path", ""))
    out = [(own_path, n) for n in other_lines(finding)]
    for loc in finding.get("locations") or ():
        if not isinstance(loc, dict) or str(loc.get("path", "")) == own_path:
            continue
        for x in loc.get("lines") or ():
            try:
                out.append((str(loc["path"]), int(x)))
            except (TypeError, ValueError):
                continue
    return out


def places_note(finding: dict, limit: int = 12) -> str:
    """" (3 places in this file: lines 12, 40, 77)" for a grouped finding, " (23 places in 12 files: a.py:80, 100;
    b.py:103 ...)" for one grouped across files, else ""."""
    paths = finding_paths(finding)
    if len(paths) > 1:
        places = [(paths[0], finding.get("line"))] + other_places(finding)
        parts: List[str] = []
        last = None
        for p, n in places[:limit]:
            parts.append(f"{p}:{n}" if p != last else str(n))
            last = p
        shown = ", ".join(parts) + (f" and {len(places) - limit} more" if len(places) > limit else "")
        return f" ({len(places)} places in {len(paths)} files: {shown})"
    more = other_lines(finding)
    if not more:
        return ""
    lines = [finding.get("line")] + more
    shown = ", ".join(str(x) for x in lines[:limit]) + (f" and {len(lines) - limit} more" if len(lines) > limit else "")
    return f" ({len(lines)} places in this file: lines {shown})"


def finding_text(finding: dict) -> str:
    """Message, the other lines of a grouped finding and the suggested replacement, on one line."""
    msg = one_line(finding.get("message")) + places_note(finding)
    repl = finding.get("replacement")
    if repl:
        msg += f" Suggested: {one_line(repl)}"
    return msg


#: Advice and info come after what blocks or needs a change, in every listing.
LATER = ("advice", "info")


def display_key(f: dict):
    """Listing order: blockers, manual and automatic changes first, then advice and info; by place within."""
    return (f.get("severity") in LATER, str(f.get("path", "")), f.get("line") or 0, f.get("column") or 0,
            str(f.get("code", "")))


def sorted_findings(report: dict) -> List[dict]:
    return sorted(report.get("findings") or [], key=display_key)


def first(items, default=None) -> Optional[object]:
    for x in items:
        return x
    return default
