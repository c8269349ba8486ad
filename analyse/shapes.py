"""Checking data read back from disk (the whole-report cache) against the tool's own JSON schemas.

The subset of JSON Schema the shipped ``report.schema.json`` uses: ``type``, ``const``, ``enum``,
``properties``, ``required``, ``additionalProperties`` (a schema), ``items``, ``minimum``, ``pattern`` and
local ``$ref``. :func:`problem` walks a value iteratively (no recursion: a deeply nested value cannot
overflow the stack) and returns the first place that does not fit, or None.

Where the schema leaves an object open, the values the renderers read are checked too
(:data:`_EXTRA_FINDING`): a cached report that passes renders without a traceback.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

_TYPES = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}

# fields of a finding that the schema leaves open but the renderers and migrate read
_EXTRA_FINDING = {
    "codes": {"type": "array", "items": {"type": "string"}},
    "columns": {"type": "array", "items": {"type": "integer"}},
    "also": {"type": "array", "items": {"type": "object"}},
    "places": {"type": "array", "items": {"type": "object", "required": ["path", "line"],
                                          "properties": {"path": {"type": "string"}, "line": {"type": "integer"}}}},
    "suppressed": {"type": ["boolean", "object", "string", "null"]},
    "baselined": {"type": ["boolean", "null"]},
    "advice": {"type": ["string", "null"]},
    "title": {"type": ["string", "null"]},
}
_EXTRA_ERROR = {"type": "object", "properties": {"path": {"type": "string"}, "kind": {"type": "string"},
                                                 "message": {"type": "string"}}}


@lru_cache(maxsize=None)
def report_schema() -> dict:
    import copy

    from analyse.schemas.report_schema import SCHEMA   # a Python copy: a warm run opens no file of the tool

    schema = copy.deepcopy(SCHEMA)
    finding = schema["$defs"]["finding"]
    for key, sub in _EXTRA_FINDING.items():
        finding.setdefault("properties", {}).setdefault(key, sub)
    errors = schema["properties"].setdefault("errors", {"type": "array"})
    errors.setdefault("items", _EXTRA_ERROR)
    return schema


RULE_SCHEMA = {"type": "array", "items": {"type": "object", "required": ["code", "name", "category", "severity"],
                                          "properties": {k: {"type": "string"} for k in
                                                         ("code", "name", "category", "severity", "summary", "why",
                                                          "example", "fix")}}}


@lru_cache(maxsize=256)
def _pattern(p: str):
    return re.compile(p)


def problem(value: Any, schema: dict, root: Optional[dict] = None, limit: int = 5_000_000) -> Optional[str]:
    """The first place where *value* does not fit *schema* (``$.findings[3].line: expected integer``), or
    None. *limit* bounds the values visited (a larger value does not fit)."""
    root = root if root is not None else schema
    stack: List[Tuple[Any, dict, str]] = [(value, schema, "$")]
    seen = 0
    while stack:
        v, s, where = stack.pop()
        seen += 1
        if seen > limit:
            return f"{where}: more than {limit} values"
        while "$ref" in s:
            ref = s["$ref"]
            if not ref.startswith("#/"):
                return f"{where}: unsupported reference {ref}"
            node: Any = root
            for part in ref[2:].split("/"):
                node = node[part]
            s = node
        t = s.get("type")
        if t is not None:
            kinds = t if isinstance(t, list) else [t]
            if not any(_TYPES[k](v) for k in kinds):
                return f"{where}: expected {' or '.join(kinds)}, not {type(v).__name__}"
        if "const" in s and v != s["const"]:
            return f"{where}: expected {s['const']!r}"
        if "enum" in s and v not in s["enum"]:
            return f"{where}: not one of the allowed values"
        if type(v) is str and "pattern" in s and not _pattern(s["pattern"]).search(v):
            return f"{where}: does not match {s['pattern']}"
        if type(v) in (int, float) and type(v) is not bool and "minimum" in s and v < s["minimum"]:
            return f"{where}: below {s['minimum']}"
        if type(v) is dict:
            for key in s.get("required", ()):
                if key not in v:
                    return f"{where}: {key} missing"
            props: Dict[str, dict] = s.get("properties", {})
            extra = s.get("additionalProperties")
            for key, item in v.items():
                if type(key) is not str:
                    return f"{where}: a key that is not a string"
                sub = props.get(key)
                if sub is None and isinstance(extra, dict):
                    sub = extra
                elif sub is None and extra is False:
                    return f"{where}: unexpected {key}"
                if sub:
                    stack.append((item, sub, f"{where}.{key}"))
        elif type(v) is list:
            items = s.get("items")
            if isinstance(items, dict) and items:
                stack.extend((item, items, f"{where}[{i}]") for i, item in enumerate(v))
    return None


def report_problem(entry: Any) -> Optional[str]:
    """Why a whole-report cache entry (``{"report": ..., "rules": [...]}``) cannot be used, or None."""
    if type(entry) is not dict:
        return "not an object"
    schema = report_schema()
    why = problem(entry.get("report"), schema)
    if why is None:
        why = problem(entry.get("rules"), RULE_SCHEMA)
    return why
