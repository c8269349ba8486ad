"""Library reports as knowledge: the affected functions of an analysed library.

A ``npu-analyse thirdparty`` report lists the library functions that are not
plainly supported (``thirdparty.functions``) and the names they are reachable
under (``thirdparty.aliases``: re-exports through ``__init__``, ``X = Fn.apply``,
classes -> their ``__init__`` / ``forward``). :func:`load_index` reads and checks
such reports into a :class:`ThirdpartyIndex` that the ``thirdparty-calls`` pass
looks calls up in. This module reads JSON only; it depends on nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional


STORE_KEY = "thirdparty_reports"
STATUS_RANK = {"unsupported": 0, "conditional": 1, "unknown": 2, "needs-migration": 3}


@dataclass
class ThirdpartyIndex:
    """Affected library functions by every name a user may call them under."""

    functions: Dict[str, dict] = field(default_factory=dict)       # qualname -> function entry
    aliases: Dict[str, List[str]] = field(default_factory=dict)    # name -> qualnames
    libraries: Dict[str, str] = field(default_factory=dict)        # qualname -> report label

    def add_report(self, report: dict, label: str) -> None:
        tp = report.get("thirdparty")
        for fn in tp.get("functions") or []:
            q = fn["qualname"]
            self.functions[q] = fn
            self.libraries[q] = label
        for name, targets in (tp.get("aliases") or {}).items():
            if isinstance(targets, str):
                targets = [targets]
            self.aliases.setdefault(name, [])
            for t in targets:
                if t not in self.aliases[name]:
                    self.aliases[name].append(t)

    def lookup(self, name: str) -> Optional[dict]:
        """The most serious affected function *name* stands for, or None."""
        cands = [self.functions[name]] if name in self.functions else []
        for t in self.aliases.get(name, ()):
            if t in self.functions:
                cands.append(self.functions[t])
        if not cands:
            return None
        return min(cands, key=lambda f: (STATUS_RANK.get(f.get("status"), 9), len(f.get("via") or ())))


def load_report(path: str) -> dict:
    """Read and check one thirdparty report; ValueError with a clear message otherwise."""
    p = Path(path)
    from analyse.inputs import BadSyntax, InputError, load_json

    try:   # a regular file, bounded in size and nesting
        data = load_json(p, "--with-thirdparty report")
    except BadSyntax as exc:
        raise ValueError(f"cannot read --with-thirdparty {path}: not a JSON file ({exc.detail})") from None
    except InputError as exc:
        raise ValueError(str(exc)) from None
    if not isinstance(data, dict):
        raise ValueError(f"cannot read --with-thirdparty {path}: not an npu-analyse report (expected a JSON object)")
    if data.get("mode") != "thirdparty" or not isinstance(data.get("thirdparty"), dict):
        raise ValueError(f"cannot read --with-thirdparty {path}: not an `npu-analyse thirdparty` report "
                         f"(mode is {data.get('mode')!r}, no 'thirdparty' section)")
    fns = data["thirdparty"].get("functions")
    if not isinstance(fns, list):
        raise ValueError(f"cannot read --with-thirdparty {path}: 'thirdparty.functions' must be a list")
    for i, fn in enumerate(fns):
        if not isinstance(fn, dict) or not isinstance(fn.get("qualname"), str) or fn.get("status") not in STATUS_RANK:
            raise ValueError(f"cannot read --with-thirdparty {path}: thirdparty.functions[{i}] lacks a qualname "
                             "or a valid status")
    aliases = data["thirdparty"].get("aliases", {})
    if not isinstance(aliases, dict):
        raise ValueError(f"cannot read --with-thirdparty {path}: 'thirdparty.aliases' must be an object")
    return data


def load_index(report_paths: Iterable[str]) -> ThirdpartyIndex:
    index = ThirdpartyIndex()
    for path in report_paths:
        data = load_report(path)
        label = ", ".join(data.get("inputs") or []) or Path(path).name
        index.add_report(data, label)
    return index
