"""The JSON schemas of npu-analyse's outputs, shipped inside the package.

``report.schema.json`` (``report.json``), ``probe.schema.json`` (``probe.json``)
and ``sarif-schema-2.1.0.json`` (OASIS SARIF 2.1.0, for ``--format sarif``) are
byte-for-byte copies of the published contracts; a test keeps them equal.
``changes.schema.json`` (the change list of ``npu-analyse migrate --changes``) is npu-analyse's own.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Dict

try:  # Python >= 3.9
    from importlib.resources import files as _files
except ImportError:  # pragma: no cover - Python < 3.9 is not supported
    _files = None

SCHEMAS = ("report.schema.json", "probe.schema.json", "sarif-schema-2.1.0.json", "changes.schema.json")
# npu-analyse's own contracts (no published copy in shared/spec to compare with): the change list of `migrate`
OWN_SCHEMAS = ("changes.schema.json",)


def schema_text(name: str) -> str:
    """The text of one shipped schema (one of :data:`SCHEMAS`)."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}; shipped: {', '.join(SCHEMAS)}")
    return (_files(__name__) / name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _load(name: str) -> str:
    return schema_text(name)


def load_schema(name: str) -> Dict[str, Any]:
    """One shipped schema as a fresh dict."""
    return json.loads(_load(name))
