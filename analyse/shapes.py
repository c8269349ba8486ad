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


def _where(chain) -> str:
    parts = []
    while chain is not None:
        chain, key = chain
        parts.append(f"[{key}]" if type(key) is int else f".{key}")
    return "$" + "".join(reversed(parts))


_CHECKED = ("type", "const", "enum", "pattern", "minimum", "required", "properties", "additionalProperties", "items",
            "$ref")


def problem(value: Any, schema: dict, root: Optional[dict] = None, limit: int = 5_000_000) -> Optional[str]:
    """The first place where *value* does not fit *schema* (``$.findings[3].line: expected integer``), or
    None. *limit* bounds the values visited (a larger value does not fit). The path of a place is built
    only for the answer: checking a report of thousands of findings formats no string."""
    root = root if root is not None else schema
    stack: List[Tuple[Any, dict, Any]] = [(value, schema, None)]
    seen = 0
    types = _TYPES
    while stack:
        v, s, chain = stack.pop()
        seen += 1
        if seen > limit:
            return f"{_where(chain)}: more than {limit} values"
        while "$ref" in s:
            ref = s["$ref"]
            if not ref.startswith("#/"):
                return f"{_where(chain)}: unsupported reference {ref}"
            node: Any = root
            for part in ref[2:].split("/"):
                node = node[part]
            s = node
        t = s.get("type")
        if t is not None:
            if type(t) is str:
                if not types[t](v):
                    return f"{_where(chain)}: expected {t}, not {type(v).__name__}"
            elif not any(types[k](v) for k in t):
                return f"{_where(chain)}: expected {' or '.join(t)}, not {type(v).__name__}"
        if "const" in s and v != s["const"]:
            return f"{_where(chain)}: expected {s['const']!r}"
        if "enum" in s and v not in s["enum"]:
            return f"{_where(chain)}: not one of the allowed values"
        tv = type(v)
        if tv is str:
            if "pattern" in s and not _pattern(s["pattern"]).search(v):
                return f"{_where(chain)}: does not match {s['pattern']}"
        elif tv is int or tv is float:
            if "minimum" in s and v < s["minimum"]:
                return f"{_where(chain)}: below {s['minimum']}"
        elif tv is dict:
            for key in s.get("required", ()):
                if key not in v:
                    return f"{_where(chain)}: {key} missing"
            props: Dict[str, dict] = s.get("properties", _EMPTY)
            extra = s.get("additionalProperties")
            for key, item in v.items():
                if type(key) is not str:
                    return f"{_where(chain)}: a key that is not a string"
                sub = props.get(key)
                if sub is None:
                    if extra is False:
                        return f"{_where(chain)}: unexpected {key}"
                    if type(extra) is dict:
                        sub = extra
                if sub:
                    simple = _type_only(sub)
                    if simple is None or not types[simple](item):
                        stack.append((item, sub, (chain, key)))
        elif tv is list:
            items = s.get("items")
            if type(items) is dict and items:
                stack.extend((item, items, (chain, i)) for i, item in enumerate(v))
    return None


_EMPTY: Dict[str, dict] = {}


_TYPE_ONLY: Dict[int, Tuple[dict, Optional[str]]] = {}


def _type_only(sub: dict) -> Optional[str]:
    """The type a schema names when it checks nothing else (most fields: a value of that type needs no visit),
    else None. Kept per schema node."""
    hit = _TYPE_ONLY.get(id(sub))
    if hit is not None and hit[0] is sub:
        return hit[1]
    t = sub.get("type")
    simple = t if type(t) is str and not any(k in sub for k in _CHECKED if k != "type") else None
    if len(_TYPE_ONLY) > 10_000:
        _TYPE_ONLY.clear()
    _TYPE_ONLY[id(sub)] = (sub, simple)
    return simple


def report_problem(entry: Any) -> Optional[str]:
    """Why a whole-report cache entry (``{"report": ..., "rules": [...]}``) cannot be used, or None."""
    if type(entry) is not dict:
        return "not an object"
    schema = report_schema()
    why = problem(entry.get("report"), schema)
    if why is None:
        why = problem(entry.get("rules"), RULE_SCHEMA)
    return why
