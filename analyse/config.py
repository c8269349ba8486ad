"""Configuration: ``[tool.npu-analyse]`` in pyproject.toml, or ``.npu-analyse.toml``.

The file is looked for from the analysed path upwards (the folder of the
inputs, then each parent); in each folder ``.npu-analyse.toml`` (keys at the
top level) wins over ``pyproject.toml`` (keys under ``[tool.npu-analyse]``;
a pyproject.toml without that table is passed over). ``--config FILE`` names
one explicitly, ``--isolated`` ignores every file. Command-line flags win over
the file; paths and globs in the file are relative to the file's folder.

Every problem -- unreadable TOML, an unknown key, a value of the wrong type,
an unknown rule code -- is a :class:`ConfigError` with a one-line message
(the command line exits 2 with it).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11
    import tomli as tomllib

SEVERITY_LEVELS = ("blocker", "manual", "auto", "advice", "info")
FAIL_ON_CHOICES = SEVERITY_LEVELS + ("never",)
#: ``fail-on-scope``: the gate sees the findings the verdict counts (default), or every listed finding.
FAIL_ON_SCOPES = ("counted", "listed")
ROLES = ("product", "test", "example", "tool", "build", "docs")
CONFIG_FILE = ".npu-analyse.toml"
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_ITEMS = 1000          # globs, codes, entries or table rows in one setting
MAX_ITEM_CHARS = 1024     # characters of one glob, code or entry
MAX_VALUE_CHARS = 256     # characters of torch-version, fail-on, min-severity
TABLE = "npu-analyse"

# key -> (kind, description)
KEYS: Dict[str, Tuple[str, str]] = {
    "torch-version": ("str", "PyTorch version the code targets"),
    "select": ("codes", "rule codes or prefixes to report (default: all)"),
    "extend-select": ("codes", "rule codes or prefixes added to select"),
    "ignore": ("codes", "rule codes or prefixes never reported"),
    "exclude": ("globs", "path globs not analysed"),
    "per-file-ignores": ("glob-codes", "path glob -> rule codes ignored in those files"),
    "fail-on": ("fail-on", "exit 1 when a finding at or above this severity remains"),
    "fail-on-scope": ("fail-on-scope", "which findings --fail-on gates: counted (default: those the verdict "
                                       "counts) or listed (every listed finding, off the path too)"),
    "entry": ("strs", "entry points, FILE or FILE:FUNCTION"),
    "roles": ("glob-role", "path glob -> file role"),
    "baseline": ("path", "baseline file: its findings do not gate"),
    "min-severity": ("severity", "list only findings at or above this severity (terminal and reports; "
                                 "the verdict and the gate see every finding)"),
}

DEFAULTS: Dict[str, Any] = {
    "torch-version": None,
    "select": ["ALL"],
    "extend-select": [],
    "ignore": [],
    "exclude": [],
    "per-file-ignores": {},
    "fail-on": "never",
    "fail-on-scope": "counted",
    "entry": [],
    "roles": {},
    "baseline": None,
    "min-severity": "info",
}


class ConfigError(ValueError):
    """A configuration problem, as one line."""


@dataclass
class Config:
    """The effective configuration; ``sources[key]`` says where each value came from."""

    values: Dict[str, Any] = field(default_factory=lambda: dict(DEFAULTS))
    sources: Dict[str, str] = field(default_factory=lambda: {k: "default" for k in DEFAULTS})
    file: Optional[Path] = None
    base: Optional[Path] = None  # folder that relative paths in the file are relative to
    warnings: List[str] = field(default_factory=list)   # one line each: settings files passed over, and why

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def set(self, key: str, value: Any, source: str) -> None:
        self.values[key] = value
        self.sources[key] = source


def _rule_codes() -> Tuple[str, ...]:
    from analyse.passes import all_rules

    return tuple(r.code for r in all_rules())


def resolve_selectors(selectors: Iterable[str], where: str, known: Optional[Sequence[str]] = None) -> FrozenSet[str]:
    """Rule codes named by *selectors*: ``ALL``, a code (``NPU002``) or a prefix (``NPU1``, ``NPU70``)."""
    known = tuple(known) if known is not None else _rule_codes()
    out = set()
    for sel in selectors:
        s = str(sel).strip().upper()
        if s == "ALL":
            out.update(known)
            continue
        hit = [c for c in known if c.startswith(s)] if s.startswith("NPU") else []
        if not hit:
            raise ConfigError(f"unknown rule code {sel!r} in {where} (see `npu-analyse rules`)")
        out.update(hit)
    return frozenset(out)


def _check(key: str, value: Any, where: str) -> Any:
    kind = KEYS[key][0]
    loc = f"{key} in {where}"

    def strs(v, what="a list of strings"):
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{loc} must be {what}, not {_tname(v)}")
        _bounded(v)
        return list(v)

    def _bounded(items) -> None:   # every reader bounded: a capped count of capped strings (one line if not)
        if len(items) > MAX_ITEMS:
            raise ConfigError(f"{loc} has {len(items)} entries; at most {MAX_ITEMS}")
        for x in items:
            if isinstance(x, str) and len(x) > MAX_ITEM_CHARS:
                raise ConfigError(f"{loc} has an entry of {len(x)} characters; at most {MAX_ITEM_CHARS}")

    if isinstance(value, str) and kind in ("str", "fail-on", "severity") and len(value) > MAX_VALUE_CHARS:
        raise ConfigError(f"{loc} is {len(value)} characters long; at most {MAX_VALUE_CHARS}")
    if kind in ("str", "path"):
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{loc} must be a non-empty string, not {_tname(value)}")
        if len(value) > MAX_ITEM_CHARS * 4:
            raise ConfigError(f"{loc} is {len(value)} characters long; at most {MAX_ITEM_CHARS * 4}")
        return value
    if kind == "fail-on":
        if not isinstance(value, str) or value.lower() not in FAIL_ON_CHOICES:
            raise ConfigError(f"{loc} must be one of {', '.join(FAIL_ON_CHOICES)}, not {value!r}")
        return value.lower()
    if kind == "fail-on-scope":
        if not isinstance(value, str) or value.lower() not in FAIL_ON_SCOPES:
            raise ConfigError(f"{loc} must be one of {', '.join(FAIL_ON_SCOPES)}, not {value!r}")
        return value.lower()
    if kind == "severity":
        if not isinstance(value, str) or value.lower() not in SEVERITY_LEVELS:
            raise ConfigError(f"{loc} must be one of {', '.join(SEVERITY_LEVELS)}, not {value!r}")
        return value.lower()
    if kind in ("codes", "globs", "strs"):
        value = strs(value)
        if kind == "codes":
            resolve_selectors(value, loc)
        return value
    if kind == "glob-codes":
        if not isinstance(value, dict):
            raise ConfigError(f"{loc} must be a table of glob = [codes], not {_tname(value)}")
        _bounded(list(value))
        out = {}
        for glob, codes in value.items():
            codes = strs(codes, f"a table of glob = [codes] (entry {glob!r})")
            resolve_selectors(codes, f"{loc} ({glob!r})")
            out[glob] = codes
        return out
    if kind == "glob-role":
        if not isinstance(value, dict):
            raise ConfigError(f"{loc} must be a table of glob = \"role\", not {_tname(value)}")
        _bounded(list(value))
        for glob, role in value.items():
            if role not in ROLES:
                raise ConfigError(f"{loc}: role {role!r} for {glob!r} must be one of {', '.join(ROLES)}")
        return dict(value)
    raise AssertionError(kind)  # pragma: no cover


def _tname(v: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)


def read_file(path: Path) -> Tuple[Optional[Dict[str, Any]], str]:
    """(settings table or None when a pyproject.toml has no [tool.npu-analyse], description)."""
    from analyse.inputs import InputError, load_toml

    try:   # a regular file only, bounded in size and nesting (FIFOs, devices, nesting bombs: one line)
        data = load_toml(path, "configuration", MAX_CONFIG_BYTES)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    if path.name == "pyproject.toml":
        table = (data.get("tool") or {}).get(TABLE) if isinstance(data.get("tool"), dict) else None
        if table is not None and not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.{TABLE}] must be a table")
        return table, f"{path} [tool.{TABLE}]"
    return data, str(path)


def untrusted(path: Path) -> Optional[str]:
    """Why a settings file found by the upward lookup is not trusted, or None.

    Like the cache folder: it must belong to this user (or root) and be writable by nobody else, and so must
    the folder holding it unless that folder has the sticky bit (``/tmp``): else another user could choose
    the rules that gate this user's run (``select = ["NPU9"]`` silences everything)."""
    import os
    import stat

    if not hasattr(os, "geteuid"):   # pragma: no cover - no POSIX owners (Windows)
        return None
    me = os.geteuid()
    try:
        st = os.stat(path)
        folder = os.stat(path.parent)
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"
    if st.st_uid not in (me, 0):
        return f"owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by {'everyone' if st.st_mode & stat.S_IWOTH else 'its group'} (mode {stat.S_IMODE(st.st_mode):o})"
    if folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not folder.st_mode & stat.S_ISVTX:
        return f"in a folder others may write ({path.parent}, mode {stat.S_IMODE(folder.st_mode):o})"
    if folder.st_uid not in (me, 0):
        return f"in a folder of another user ({path.parent}, uid {folder.st_uid})"
    return None


def find_config(inputs: Sequence[Path], warnings: Optional[List[str]] = None) -> Optional[Path]:
    """The configuration file for *inputs*: from their common folder upwards. A file that another user could
    have written (:func:`untrusted`) is passed over, with one line in *warnings*."""
    paths = [Path(p).resolve() for p in inputs] or [Path.cwd().resolve()]
    try:
        start = Path(__import__("os").path.commonpath([str(p) for p in paths]))
    except ValueError:  # different drives
        start = paths[0]
    if start.is_file() or not start.exists():
        start = start.parent

    def trusted(path: Path) -> bool:
        why = untrusted(path)
        if why is not None and warnings is not None:
            warnings.append(f"settings file {path} ignored: {why}")
        return why is None

    for folder in [start, *start.parents]:
        own = folder / CONFIG_FILE
        if own.is_file() and trusted(own):
            return own
        pp = folder / "pyproject.toml"
        if pp.is_file():
            try:
                table, _ = read_file(pp)
            except ConfigError:
                if trusted(pp):
                    return pp  # a broken pyproject.toml is reported, not skipped
                continue
            if table is not None and trusted(pp):
                return pp
    return None


def load(inputs: Sequence[Path], explicit: Optional[Path] = None, isolated: bool = False) -> Config:
    """The configuration from the file for *inputs* (defaults when there is none)."""
    cfg = Config()
    if isolated:
        return cfg
    path = explicit if explicit is not None else find_config(inputs, cfg.warnings)
    if path is None:
        return cfg
    path = Path(path)
    if explicit is not None and not path.exists():
        raise ConfigError(f"config file does not exist: {path}")
    table, where = read_file(path)
    cfg.file = path.resolve()
    cfg.base = cfg.file.parent
    if table is None:
        if explicit is not None:
            raise ConfigError(f"{path} has no [tool.{TABLE}] table")
        return cfg
    for key, value in table.items():
        if key not in KEYS:
            close = [k for k in KEYS if k.replace("-", "_") == str(key).replace("-", "_")]
            hint = f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(KEYS)}"
            raise ConfigError(f"unknown key {key!r} in {where}{hint}")
        cfg.set(key, _check(key, value, where), where)
    return cfg


def describe(cfg: Config) -> str:
    """``--show-config``: the effective settings as TOML, each with its source."""
    import json

    lines = [f"# configuration file: {cfg.file if cfg.file else 'none found'}", "[tool.npu-analyse]"]
    for key in KEYS:
        value = cfg.values[key]
        if value is None:
            lines.append(f"# {key} is not set  # {cfg.sources[key]}")
            continue
        if isinstance(value, dict):
            text = "{ " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in value.items()) + " }" if value else "{}"
        else:
            text = json.dumps(value)
        lines.append(f"{key} = {text}  # {cfg.sources[key]}")
    return "\n".join(lines)
