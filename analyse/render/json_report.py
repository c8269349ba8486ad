"""JSON rendering: the report dict itself, as ``report.schema.json`` describes it."""

from __future__ import annotations

import json
from typing import Iterator


def render_json(report: dict) -> str:
    """The report as pretty-printed JSON text (UTF-8 characters kept as is)."""
    return "".join(iter_json(report))


def iter_json(report: dict) -> Iterator[str]:
    """:func:`render_json`'s text in pieces: each top-level entry, and each item of a top-level list (the
    findings) on its own. The text is exactly ``json.dumps(report, indent=2, ensure_ascii=False) + "\\n"``;
    ``json.dumps`` with an indent builds one list of every token of the whole report before joining it (tens
    of millions of small strings for 128,000 files, several times the report's own size), while a piece here
    is one finding's text, written and dropped.

    A piece of a nested value is re-indented by inserting spaces after each newline: with an indent, JSON
    writes a newline only between tokens (one inside a string is the escape ``\\n``), so that is exact."""
    if not isinstance(report, dict) or not report:
        yield json.dumps(report, indent=2, ensure_ascii=False) + "\n"
        return
    yield "{"
    first = True
    for key, value in report.items():
        yield ("\n  " if first else ",\n  ") + json.dumps(key if isinstance(key, str) else _key(key),
                                                           ensure_ascii=False) + ": "
        first = False
        if isinstance(value, list) and value:
            yield "["
            for i, item in enumerate(value):
                yield ("\n    " if i == 0 else ",\n    ") + _dumps(item).replace("\n", "\n    ")
            yield "\n  ]"
        else:
            yield _dumps(value).replace("\n", "\n  ")
    yield "\n}\n"


def _dumps(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _key(key) -> str:
    """A non-string key as ``json.dumps`` writes it (``True`` -> ``"true"``, ``1`` -> ``"1"``)."""
    return next(iter(json.loads(json.dumps({key: 0}))))
