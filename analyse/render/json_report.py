"""JSON rendering: the report dict itself, as ``report.schema.json`` describes it."""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _str   # json's own string encoder (its C version where built)
from typing import Iterator, List, Optional


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
        yield _dumps(report) + "\n"
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
    out: List[str] = []
    _encode(value, "\n", out.append)
    return "".join(out)


def dumps_indented(value) -> str:
    """Exactly ``json.dumps(value, indent=2, ensure_ascii=False)``, in about half the time.

    With an indent, ``json`` leaves its C encoder for the pure-Python one, which makes a generator frame and a
    token per value: most of the time of writing a large report. Here each string goes through the C string
    encoder (the same one ``json`` uses) and a container's items are joined by one recursive function; the
    output is the standard library's, byte for byte (``tests/test_scaling.py`` checks it on generated values).
    Lists, tuples and dicts (their subclasses too), str, int, float, bool and None are written; anything else
    raises ``TypeError`` like ``json.dumps``. A container that holds itself raises ``RecursionError`` rather
    than ``json``'s ``ValueError``: a report is a tree."""
    return _dumps(value)


_INF = float("inf")


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == _INF:
        return "Infinity"
    if o == -_INF:
        return "-Infinity"
    return float.__repr__(o)


def _scalar(o) -> Optional[str]:
    if isinstance(o, str):
        return _str(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return _float(o)
    return None


def _dict_key(k) -> str:
    """A key as ``json`` writes it: a string as is, a number, bool or None as its JSON text in quotes."""
    if isinstance(k, str):
        return _str(k)
    text = _scalar(k)
    if text is None:
        raise TypeError(f"keys must be str, int, float, bool or None, not {k.__class__.__name__}")
    return '"' + text + '"'


def _encode(o, nl: str, app) -> None:
    """Append the text of *o* at the indentation that *nl* (a newline and its spaces) gives."""
    t = type(o)
    if t is str:
        app(_str(o))
        return
    if t is dict or (t is not list and t is not tuple and isinstance(o, dict)):
        if not o:
            app("{}")
            return
        inner = nl + "  "
        sep = "{" + inner
        for k, v in o.items():
            key = _str(k) if type(k) is str else _dict_key(k)
            tv = type(v)
            if tv is str:
                app(sep + key + ": " + _str(v))
            elif tv is int:
                app(sep + key + ": " + int.__repr__(v))
            elif v is None or tv is bool:
                app(sep + key + (": null" if v is None else ": true" if v else ": false"))
            else:
                app(sep + key + ": ")
                _encode(v, inner, app)
            sep = "," + inner
        app(nl + "}")
        return
    if t is list or t is tuple or isinstance(o, (list, tuple)):
        if not o:
            app("[]")
            return
        inner = nl + "  "
        sep = "[" + inner
        for v in o:
            if type(v) is str:
                app(sep + _str(v))
            else:
                app(sep)
                _encode(v, inner, app)
            sep = "," + inner
        app(nl + "]")
        return
    text = _scalar(o)
    if text is None:
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")
    app(text)


def _key(key) -> str:
    """A non-string key as ``json.dumps`` writes it (``True`` -> ``"true"``, ``1`` -> ``"1"``)."""
    return next(iter(json.loads(json.dumps({key: 0}))))
