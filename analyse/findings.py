"""The objects every pass produces: findings, errors and rule documentation.

A :class:`Finding` is a frozen dataclass whose ``to_dict`` matches
``$defs/finding`` of the report schema. Its ``id`` is a fingerprint of the
rule, the file, the API and the *normalised source text* of the offending line
plus an occurrence counter -- never the line number -- so it survives
unrelated lines being added above it (usable for baselines).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, asdict
from typing import Dict, Iterable, List, Optional, Tuple

CATEGORIES = (
    "cuda-api",
    "distributed",
    "unsupported-api",
    "unknown-api",
    "third-party",
    "cuda-extension",
    "dynamic-shape",
    "affinity",
    "precision-advice",
    "performance-advice",
)

# Ordered from the most to the least serious.
SEVERITIES = ("blocker", "manual", "auto", "advice", "info")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
CONFIDENCES = ("high", "medium", "low")
EVIDENCES = ("syntax", "inferred", "knowledge", "probed", "propagated")
ERROR_KINDS = ("syntax", "encoding", "io", "too-large", "timeout", "internal")


@dataclass(frozen=True)
class Rule:
    """Documentation of one rule code (Ruff style). Codes are never reused.

    ``example`` is code that triggers the rule, ``fix`` what to write instead.
    """

    code: str
    name: str
    category: str
    severity: str
    summary: str
    why: str
    example: str
    fix: str

    def __post_init__(self) -> None:
        if not (self.code.startswith("NPU") and len(self.code) == 6 and self.code[3:].isdigit()):
            raise ValueError(f"bad rule code {self.code!r}")
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.code}: unknown category {self.category!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: unknown severity {self.severity!r}")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Finding:
    code: str
    category: str
    severity: str
    path: str
    line: int
    api: str
    message: str
    replacement: Optional[str] = None
    confidence: str = "high"
    evidence: str = "syntax"
    snippet: str = ""
    column: int = 0
    end_line: Optional[int] = None
    chain: Tuple[str, ...] = ()
    id: str = ""
    # verdict fields (analyse.guards / analyse.reach / analyse.roles): optional, filled by the pipeline
    reach: Optional[dict] = field(default=None, compare=False)   # {"status", "entry_points"?, "path"?}
    role: Optional[str] = None                                    # product|test|example|tool|build|docs
    guard: Optional[dict] = field(default=None, compare=False)   # Guard.to_dict() or None (unconditional)
    # merge_same_place: the other rules' findings folded into this one ({"code", "severity", "message",
    # "replacement", "superseded"?}); empty when one rule reported the place
    also: Tuple[dict, ...] = field(default=(), compare=False)
    base_message: str = field(default="", compare=False, repr=False)   # the leader's own message before merging
    # report.group_findings: the other files of a finding grouped across files (its ``locations``)
    other_paths: Tuple[str, ...] = field(default=(), compare=False, repr=False)
    # merge_same_place: the other columns of this line where the same rule says the same of the same API
    # (``a = x.cuda(); b = y.cuda()``): one finding, every place kept (the report's ``columns``; migrate edits each)
    columns: Tuple[int, ...] = field(default=(), compare=False, repr=False)
    # a GPU-only library's use with no drop-in NPU replacement (the knowledge entry's ``rework``: "high"): the
    # code around it is restructured, so a counted one grades at least high (analyse.report.grade)
    rework: Optional[str] = field(default=None, compare=False)
    # a library that runs on Ascend through its own NPU support with the code unchanged (the knowledge entry's
    # ``npu_support``: "native", e.g. DeepSpeed's NPU accelerator): a use of it leaves a library function supported
    # (analyse.callgraph.classify); the replacement says what to install or set
    npu_support: Optional[str] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"unknown category {self.category!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if self.confidence not in CONFIDENCES:
            raise ValueError(f"unknown confidence {self.confidence!r}")
        if self.evidence not in EVIDENCES:
            raise ValueError(f"unknown evidence {self.evidence!r}")
        if self.line < 1:
            raise ValueError("line must be >= 1")

    @property
    def sort_key(self):
        return (self.path, self.line, self.column, self.code, self.api)

    def to_dict(self) -> dict:
        d = {
            "id": self.id,
            "code": self.code,
            "category": self.category,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "api": self.api,
            "message": self.message,
            "replacement": self.replacement,
            "confidence": self.confidence,
            "evidence": self.evidence,
            "snippet": self.snippet,
        }
        if self.end_line is not None:
            d["end_line"] = self.end_line
        if self.chain:
            d["chain"] = list(self.chain)
        if self.reach is not None:
            d["reach"] = self.reach
        if self.role is not None:
            d["role"] = self.role
        if self.guard is not None:
            d["guard"] = self.guard
        if self.also:
            d["codes"] = sorted({self.code} | {a["code"] for a in self.also})
            d["also"] = [dict(a) for a in self.also]
        if self.columns:
            d["columns"] = sorted({self.column, *self.columns})
        if self.rework is not None:
            d["rework"] = self.rework
        if self.npu_support is not None:
            d["npu_support"] = self.npu_support
        return d


@dataclass(frozen=True)
class AnalysisError:
    path: str
    kind: str
    message: str
    line: Optional[int] = None

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {self.kind!r}")

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "message": self.message, "line": self.line}


# Rules whose finding says the API does not run on the NPU: advice that assumes it runs (dynamic-shape,
# affinity, precision and performance tuning of the same call) is superseded on the same place.
UNSUPPORTED_CODES = frozenset({"NPU201", "NPU302"})
_ASSUMES_IT_RUNS = frozenset({"dynamic-shape", "affinity", "precision-advice", "performance-advice"})


def merge_same_place(findings: Iterable["Finding"]) -> List["Finding"]:
    """One finding per place and API: findings on the same file, line and API are folded into one.

    The worst severity (then the lowest code) leads; it keeps its code, message and replacement and
    carries the others in ``also`` (every code stays traceable: ``codes`` in the report). Where the facts
    conflict the documented limitation wins: advice that assumes the op runs on the NPU is kept in
    ``also`` marked ``superseded`` and left out of the message when a rule on the same place says the API
    is not supported there. Without a replacement of its own the leader takes the first unsuperseded one.
    """
    groups: Dict[tuple, List[Finding]] = {}
    order: List[tuple] = []
    for f in findings:
        key = (f.path, f.line, f.api)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    out: List[Finding] = []
    for key in order:
        group = groups[key]
        if len(group) == 1:
            out.append(group[0])
            continue
        group = sorted(group, key=lambda f: (SEVERITY_RANK[f.severity], f.code, f.column))
        lead, rest = group[0], group[1:]
        unsupported = any(f.code in UNSUPPORTED_CODES for f in group)
        also: List[dict] = [dict(a) for a in lead.also]
        extra: List[str] = []
        replacement = lead.replacement
        seen_codes = {lead.code}
        columns = list(lead.columns)
        for f in rest:
            entry = {"code": f.code, "category": f.category, "severity": f.severity, "message": f.message,
                     "replacement": f.replacement}
            if f.code in seen_codes and f.message == lead.message:
                # the same rule twice on one line (two comparisons, two `.cuda()`): said once, every place kept
                if f.code == lead.code:
                    columns.extend(c for c in (f.column, *f.columns) if c != lead.column and c not in columns)
                continue
            seen_codes.add(f.code)
            if unsupported and f.code not in UNSUPPORTED_CODES and f.category in _ASSUMES_IT_RUNS:
                entry["superseded"] = f"{f.code} assumes the API runs on the NPU; the support list says it does not"
            else:
                if f.message not in extra and f.message != lead.message:
                    extra.append(f"Also ({f.code}): {f.message}")
                if replacement is None and f.replacement:
                    replacement = f.replacement
            also.append(entry)
            also.extend(dict(a) for a in f.also)
        message = lead.message if not extra else lead.message.rstrip() + " " + " ".join(extra)
        out.append(evolve(lead, message=message, replacement=replacement, also=tuple(also),
                           base_message=lead.base_message or lead.message, columns=tuple(sorted(columns))))
    return out


def unmerge(f: "Finding") -> List["Finding"]:
    """The findings a merged one was made of (each with its own code, severity, message and replacement)."""
    if not f.also:
        return [f]
    lead = evolve(f, message=f.base_message or f.message, also=(), base_message="",
                   replacement=f.replacement if f.replacement is not None else None)
    parts = [lead]
    for a in f.also:
        parts.append(evolve(lead, code=a["code"], category=a.get("category", f.category), severity=a["severity"],
                             message=a["message"], replacement=a.get("replacement")))
    return parts


def restrict(f: "Finding", keep) -> Optional["Finding"]:
    """A merged finding limited to the codes ``keep(code)`` accepts (rule selection, per-file ignores,
    suppressions act per code); None when none is left."""
    if not f.also:
        return f if keep(f.code) else None
    parts = [p for p in unmerge(f) if keep(p.code)]
    if not parts:
        return None
    if len(parts) == len(f.also) + 1:
        return f
    merged = merge_same_place(parts)
    return merged[0] if merged else None


def _normalise(text: str) -> str:
    return " ".join(text.split())


def fingerprint(code: str, path: str, api: str, snippet: str, occurrence: int) -> str:
    """Stable id: independent of line numbers, dependent on what the line says.

    Project-level findings (``api`` ``project:...``, anchored at the top of a file) do not
    depend on any line, so their text is left out: adding lines at the top keeps their id."""
    if api.startswith("project:"):
        snippet = ""
    h = hashlib.sha1()
    for part in (code, path, api, _normalise(snippet), str(occurrence)):
        h.update(part.encode("utf-8", "replace"))
        h.update(b"\0")
    return h.hexdigest()[:16]


_FINDING_FIELDS = frozenset(Finding.__dataclass_fields__)
_VALIDATED = frozenset(("category", "severity", "confidence", "evidence", "line"))


def evolve(f: "Finding", **changes) -> "Finding":
    """``dataclasses.replace(f, **changes)`` for a :class:`Finding`, without calling ``__init__`` with every
    field again (``replace`` costs about 50 microseconds a finding; a report builds several copies of each):
    the new finding shares the old one's values and takes *changes*; the checks of ``__post_init__`` run
    when a checked field changes. An unknown field name raises ``TypeError`` as ``replace`` does."""
    unknown = changes.keys() - _FINDING_FIELDS
    if unknown:
        raise TypeError(f"Finding has no field(s) {', '.join(sorted(unknown))}")
    new = object.__new__(Finding)
    d = new.__dict__
    d.update(f.__dict__)
    d.update(changes)
    if not _VALIDATED.isdisjoint(changes):
        new.__post_init__()
    return new


def assign_ids(findings):
    """Return the findings with ``id`` filled in, deterministic for equal inputs.

    Identical (code, path, api, snippet) tuples are told apart by their order
    of occurrence in the file.
    """
    seen: dict = {}
    out = []
    for f in sorted(findings, key=lambda f: f.sort_key):
        key = (f.code, f.path, f.api, "" if f.api.startswith("project:") else _normalise(f.snippet))
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append(evolve(f, id=fingerprint(f.code, f.path, f.api, f.snippet, n)))
    return out
