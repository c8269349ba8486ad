"""One bounded reader for the files a user or an analysed repository hands the tool as *input*, not as code:
configuration (``.npu-analyse.toml``, ``pyproject.toml``'s ``[tool.npu-analyse]``), baselines, ``probe --ops``
files and ``--from-report`` / ``--with-thirdparty`` / ``--probe-results`` reports.

Every such file is

* a **regular file**: opened without blocking (``O_NONBLOCK``) and checked on the open descriptor
  (``fstat``), so a FIFO, ``/dev/zero``, a socket or a folder is refused at once instead of hanging the run
  or growing it to gigabytes;
* **bounded in size**: at most ``limit`` bytes are read, whatever the file claims;
* **bounded in nesting**: TOML and JSON nested deeper than :data:`MAX_DEPTH` levels of arrays / tables /
  objects are refused before the parser sees them (a nesting bomb in an analysed repository's own
  ``pyproject.toml`` was a ``RecursionError`` traceback and exit 1).

Any problem is an :class:`InputError` with a one-line message; the command line turns it into a usage error
(exit 2). Nothing here imports the analysis.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Union

from analyse.files import file_kind, read_capped

MAX_DEPTH = 100
MAX_JSON_BYTES = 256 * 1024 * 1024   # reports of very large trees; baselines and the others use their own caps
MAX_TOML_BYTES = 4 * 1024 * 1024
MAX_TEXT_BYTES = 64 * 1024 * 1024


class InputError(ValueError):
    """An input file that cannot be used (one line, names the file)."""


class BadSyntax(InputError):
    """Read, but not valid JSON / TOML; ``detail`` is the parser's message."""

    def __init__(self, message: str, detail: str):
        super().__init__(message)
        self.detail = detail


def read_bytes(path: Union[str, Path], what: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of the regular file *path* (at most *limit*). *what* names it in messages ("baseline")."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(str(path), flags)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"cannot read {what} {path}: {file_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise InputError(f"{what} {path} is larger than {limit} bytes")
        data = read_capped(fd, limit)
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(f"{what} {path} is larger than {limit} bytes")
    return data


def read_text(path: Union[str, Path], what: str, limit: int = MAX_TEXT_BYTES) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a byte-order mark is dropped)."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# Strings (and TOML comments) are blanked before brackets are counted: a "[" inside a string nests nothing.
_JSON_SKIP = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_TOML_SKIP = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\n]*\'|#[^\n]*')
_BRACKETS = re.compile(r"[\[\]{}]")


def nesting_depth(text: str, toml: bool = False, cap: int = MAX_DEPTH) -> int:
    """How deep arrays and objects / tables nest in *text* (counting stops past *cap*)."""
    stripped = (_TOML_SKIP if toml else _JSON_SKIP).sub('""', text)
    depth = deepest = 0
    for m in _BRACKETS.finditer(stripped):
        if m.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > cap:
                    break
        elif depth:
            depth -= 1
    return deepest


def _check_depth(text: str, path, what: str, toml: bool) -> None:
    if nesting_depth(text, toml) > MAX_DEPTH:
        raise InputError(f"{what} {path} nests arrays or tables more than {MAX_DEPTH} levels deep")


def load_json(path: Union[str, Path], what: str, limit: int = MAX_JSON_BYTES) -> Any:
    """The JSON document in *path*, read by :func:`read_text`, depth-checked, parsed."""
    text = read_text(path, what, limit)
    _check_depth(text, path, what, toml=False)
    try:
        return json.loads(text)
    except RecursionError:   # pragma: no cover - the depth check comes first
        raise InputError(f"{what} {path} nests too deeply") from None
    except ValueError as exc:
        raise BadSyntax(f"{what} {path} is not valid JSON: {exc}", str(exc)) from None


def load_toml(path: Union[str, Path], what: str, limit: int = MAX_TOML_BYTES) -> dict:
    """The TOML document in *path*, read by :func:`read_text`, depth-checked, parsed."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib

    text = read_text(path, what, limit)
    _check_depth(text, path, what, toml=True)
    try:
        data = tomllib.loads(text)
    except RecursionError:
        # the bracket depth check came first, so only dotted keys (a.a.a... = 1) can nest this deep; tomli (Python
        # < 3.11) recurses on them while parsing, tomllib builds them and data_depth below says the same
        raise InputError(f"{what} {path} nests tables more than {MAX_DEPTH} levels deep (dotted keys included)") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadSyntax(f"{path}: invalid TOML: {exc}", str(exc)) from None
    if data_depth(data) > MAX_DEPTH:   # dotted keys (a.a.a... = 1) nest tables without a bracket
        raise InputError(f"{what} {path} nests tables more than {MAX_DEPTH} levels deep (dotted keys included)")
    return data


def data_depth(value: Any, cap: int = MAX_DEPTH) -> int:
    """How deep dicts and lists nest in a parsed document (counting stops past *cap*); no recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if d > deepest:
            deepest = d
            if deepest > cap:
                return deepest
        stack.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return deepest
