"""Where the shipped data and templates live.

In a wheel, ``data/`` and ``templates/`` are packaged as ``analyse/_data`` and
``analyse/_templates``; in a source checkout (or editable install) they are the
top-level folders next to the package.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def _locate(packaged: str, toplevel: str) -> Path:
    inside = _PKG / packaged
    if inside.is_dir():
        return inside
    beside = _PKG.parent / toplevel
    if beside.is_dir():
        return beside
    raise FileNotFoundError(f"npu-analyse installation is incomplete: neither {inside} nor {beside} exists")


def data_dir() -> Path:
    return _locate("_data", "data")


def templates_dir() -> Path:
    return _locate("_templates", "templates")


def rules_doc():
    """docs/rules.md (the rule documentation): packaged as ``analyse/_docs/rules.md`` in a wheel,
    ``docs/rules.md`` in a source checkout; None when neither exists."""
    for candidate in (_PKG / "_docs" / "rules.md", _PKG.parent / "docs" / "rules.md"):
        if candidate.is_file():
            return candidate
    return None
