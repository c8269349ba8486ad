"""JSON rendering: the report dict itself, as ``report.schema.json`` describes it."""

from __future__ import annotations

import json


def render_json(report: dict) -> str:
    """The report as pretty-printed JSON text (UTF-8 characters kept as is)."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
