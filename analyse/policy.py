"""What a run reports: rule selection, per-file ignores, inline suppressions and the baseline.

A :class:`Policy` is built by the command line from the configuration and
flags, and applied by :func:`analyse.report.build_report` to the findings of
either mode before anything is counted, so the summary, the verdict and the
exit code all see the same findings. In order:

1. findings of rules that are not selected (``select`` / ``extend-select`` /
   ``ignore``) or ignored for their file (``per-file-ignores``) are dropped;
2. findings under an inline ``# npu-analyse: ignore[...]`` comment are
   *suppressed* (counted in ``summary.suppressed``; listed in the report's
   ``suppressed`` section with ``--show-suppressed``);
3. findings whose ``id`` is in the baseline are *baselined* (counted in
   ``summary.baselined``): they are not listed and never gate, but the verdict
   still counts them (:attr:`Policy.baselined_findings`), since accepting a
   finding does not remove the work it stands for.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from analyse.suppress import FileDirectives, scan_file
from analyse.findings import restrict


def _norm_pattern(pattern: str) -> str:
    p = pattern.strip().replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") or p


def glob_match(path: str, pattern: str) -> bool:
    """Ruff-like path glob: *pattern* matches *path* ('/'-separated), a folder above it,
    or -- for a pattern without '/' -- any one component (``__init__.py``, ``tests``)."""
    pattern = _norm_pattern(pattern)
    if not pattern:
        return False
    path = path.strip("/")
    variants = [pattern]
    if pattern.startswith("**/"):
        variants.append(pattern[3:])
    parts = path.split("/")
    for pat in variants:
        if fnmatchcase(path, pat):
            return True
        for i in range(1, len(parts)):
            if fnmatchcase("/".join(parts[:i]), pat):
                return True
        if "/" not in pat and any(fnmatchcase(part, pat) for part in parts):
            return True
    return False


def _translate(pattern: str) -> str:
    """fnmatch's regular expression for *pattern*, without its end anchor."""
    rx = fnmatch.translate(pattern)
    for end in ("\\Z", "\\z"):
        if rx.endswith(end):
            return rx[:-len(end)]
    raise AssertionError(rx)  # pragma: no cover - fnmatch always anchors its expression


class GlobSet:
    """Several :func:`glob_match` patterns compiled once into two regular expressions: one for the path and
    the folders above it, one for single components (patterns without '/'). Matching a path costs one
    search plus one per component, whatever the number of patterns (fnmatch compiled each pattern on each
    call once its cache of 32,768 patterns thrashed: 40,000 excludes took minutes)."""

    def __init__(self, patterns: Sequence[str]):
        whole: List[str] = []
        parts: List[str] = []
        for raw in patterns:
            pattern = _norm_pattern(raw)
            if not pattern:
                continue
            variants = [pattern] + ([pattern[3:]] if pattern.startswith("**/") else [])
            for pat in variants:
                rx = _translate(pat)
                whole.append(rx)
                if "/" not in pat:
                    parts.append(rx)
        self._whole = re.compile("(?:" + "|".join(whole) + ")(?:/.*)?\\Z", re.S) if whole else None
        self._part = re.compile("(?:" + "|".join(parts) + ")\\Z", re.S) if parts else None

    def match(self, path: str) -> bool:
        path = path.strip("/")
        if self._whole is not None and self._whole.match(path):
            return True
        return self._part is not None and any(self._part.match(part) for part in path.split("/"))


@lru_cache(maxsize=2048)
def glob_set(patterns: Tuple[str, ...]) -> GlobSet:
    return GlobSet(patterns)


class Locator:
    """Maps a report path (relative to the analysed roots) back to the file on disk
    and to the path relative to the configuration folder."""

    def __init__(self, inputs: Sequence[Path], base: Optional[Path] = None):
        self.given = [Path(os.path.normpath(str(p))).as_posix() for p in inputs]
        self.inputs = [Path(p).resolve() for p in inputs]
        self.base = base.resolve() if base is not None else None

    def abspath(self, rel: str) -> Optional[Path]:
        multi = len(self.inputs) > 1
        for given, root in zip(self.given, self.inputs):
            if root.is_file():
                if rel == (given if multi else root.name):
                    return root
                continue
            if multi:
                head, _, rest = rel.partition("/")
                if head == root.name and rest:
                    return root / rest
            else:
                return root / rel
        return None

    def candidates(self, rel: str, abspath: Optional[Path] = None) -> List[str]:
        """The strings path globs are matched against: the report path and, when the
        file lies under the configuration folder, the path relative to that folder."""
        out = [rel]
        if self.base is not None:
            ap = abspath if abspath is not None else self.abspath(rel)
            if ap is not None:
                try:
                    out.append(ap.relative_to(self.base).as_posix())
                except ValueError:
                    pass
        return out

    def matches(self, rel: str, patterns: Sequence[str], abspath: Optional[Path] = None) -> bool:
        cands = self.candidates(rel, abspath)
        matcher = glob_set(tuple(patterns))
        return any(matcher.match(c) for c in cands)


@dataclass
class Policy:
    """Filters for one run. ``enabled`` None: every rule code."""

    locator: Locator
    enabled: Optional[FrozenSet[str]] = None
    per_file_ignores: Tuple[Tuple[str, FrozenSet[str]], ...] = ()
    baseline: Optional[FrozenSet[str]] = None
    suppressions: bool = True
    show_suppressed: bool = False
    exclude: Tuple[str, ...] = ()
    warn_unused: bool = False
    # filled by admit(): the files discovered and analysed
    files: Dict[str, Path] = field(default_factory=dict)
    # filled by apply(): what the command line reports afterwards
    unused: List[dict] = field(default_factory=list)
    before_baseline: List[dict] = field(default_factory=list)   # id, code, path, api of each kept finding
    baselined_findings: list = field(default_factory=list)   # the Finding objects the baseline took out
    baselined_index: list = field(default_factory=list)      # their positions in the findings given to apply()
    counts: Dict[str, int] = field(default_factory=dict)

    def excluded(self, rel: str, abspath: Optional[Path] = None) -> bool:
        """True when a file matches an ``exclude`` glob (it is not analysed)."""
        return bool(self.exclude) and self.locator.matches(rel, self.exclude, abspath)

    def admit(self, abspath: Path, rel: str) -> bool:
        """File discovery asks this for every file: False drops an excluded file."""
        if self.excluded(rel, abspath):
            return False
        self.files[rel] = abspath
        return True

    def _file_ignored(self, code: str, rel: str) -> bool:
        for pattern, codes in self.per_file_ignores:
            if code in codes and self.locator.matches(rel, [pattern]):
                return True
        return False

    def apply(self, findings: Sequence) -> Tuple[list, dict, dict]:
        """(kept findings, summary additions, report additions) for the :class:`Finding` list."""
        kept = []
        suppressed: List[dict] = []
        directives: Dict[str, FileDirectives] = {}
        deselected = 0
        # positions (in *findings*) of the kept ones: a folded finding may come back narrowed (a new object)
        self.kept_index: List[int] = []
        for index, f in enumerate(findings):
            if f.also:  # a merged finding: selection and per-file ignores act on each of its codes
                f = restrict(f, lambda c, p=f.path: not ((self.enabled is not None and c not in self.enabled)
                                                         or self._file_ignored(c, p))) or f
            if (self.enabled is not None and f.code not in self.enabled) or self._file_ignored(f.code, f.path):
                deselected += 1
                continue
            if self.suppressions:
                fd = directives.get(f.path)
                if fd is None:
                    ap = self.files.get(f.path) or self.locator.abspath(f.path)
                    fd = directives[f.path] = scan_file(ap) if ap is not None else FileDirectives()
                if f.also:  # a folded finding: a suppression of one code drops that rule's part only
                    for code in {a["code"] for a in f.also} | {f.code}:
                        hit = fd.match(code, f.line)
                        if hit is not None and code != f.code:
                            hit.used.add(code)
                    rest = restrict(f, lambda c, fd=fd, ln=f.line: fd.match(c, ln) is None)
                    if rest is not None:
                        f = rest
                d = fd.match(f.code, f.line)
                if d is not None:
                    d.used.add(f.code)
                    if self.show_suppressed:
                        suppressed.append({**f.to_dict(), "suppression": {
                            "kind": "file" if d.file_level else "line", "line": d.line, "comment": d.text}})
                    else:
                        suppressed.append({})
                    continue
            kept.append(f)
            self.kept_index.append(index)
        # what --write-baseline writes of each finding (analyse.baseline.render_baseline): its id, code, path and
        # API; the whole finding dict of every kept finding stayed alive to the end of the run (about 1 KB each)
        self.before_baseline = [{"id": f.id, "code": f.code, "path": f.path, "api": f.api} for f in kept]
        baselined = 0
        if self.baseline is not None:
            pairs = [(f, i) for f, i in zip(kept, self.kept_index) if f.id not in self.baseline]
            self.baselined_findings = [f for f in kept if f.id in self.baseline]
            self.baselined_index = [i for f, i in zip(kept, self.kept_index) if f.id in self.baseline]
            baselined = len(kept) - len(pairs)
            kept = [f for f, _i in pairs]
            self.kept_index = [i for _f, i in pairs]
        self.unused = []
        if self.warn_unused and self.suppressions:
            for rel, ap in self.files.items():
                if rel not in directives:
                    directives[rel] = scan_file(ap)
        for path in sorted(directives):
            for d in directives[path].all():
                bad = d.unused_codes()
                if bad:
                    self.unused.append({"path": path, "line": d.line, "comment": d.text,
                                        "codes": [] if bad == ["*"] else bad})
        self.counts = {"suppressed": len(suppressed), "baselined": baselined, "deselected": deselected}
        summary = {"suppressed": len(suppressed)}
        if self.baseline is not None:
            summary["baselined"] = baselined
        sections = {}
        if self.show_suppressed:
            sections["suppressed"] = sorted(suppressed, key=lambda d: (d["path"], d["line"], d["column"], d["code"]))
        return kept, summary, sections
