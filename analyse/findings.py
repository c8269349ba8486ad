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
from typing import Optional, Tuple

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


def assign_ids(findings):
    """Return the findings with ``id`` filled in, deterministic for equal inputs.

    Identical (code, path, api, snippet) tuples are told apart by their order
    of occurrence in the file.
    """
    from dataclasses import replace

    seen: dict = {}
    out = []
    for f in sorted(findings, key=lambda f: f.sort_key):
        key = (f.code, f.path, f.api, "" if f.api.startswith("project:") else _normalise(f.snippet))
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append(replace(f, id=fingerprint(f.code, f.path, f.api, f.snippet, n)))
    return out
