"""From a ``script`` report and the analysed files to the edits of every file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from analyse.migrate.pyedit import FileResult, Options, migrate_python, needs_parse
from analyse.migrate.source import Left
from analyse.migrate.textedit import DOCKER_FILES, MANIFESTS, migrate_text
from analyse.report import places_of

__all__ = ["Migration", "Options", "plan"]


@dataclass
class Migration:
    strategy: str
    inputs: List[str]
    target: dict
    files: List[FileResult] = field(default_factory=list)
    abspaths: Dict[str, Path] = field(default_factory=dict)
    left: List[Left] = field(default_factory=list)

    @property
    def changed(self) -> List[FileResult]:
        return [r for r in self.files if r.new is not None and r.new != r.old]

    def edits_by_rule(self) -> Dict[str, int]:
        c: Counter = Counter()
        for r in self.changed:
            for e in r.edits:
                c[e.code or e.check or "other"] += 1
        return dict(sorted(c.items()))

    def summary(self) -> dict:
        return {
            "files_changed": len(self.changed),
            "edits": sum(len(r.edits) for r in self.changed),
            "edits_by_rule": self.edits_by_rule(),
            "left": len(self.left),
            "files_refused": sorted(r.path for r in self.files if r.refused),
        }


def _versions(kb) -> Dict[str, str]:
    """torch version -> torch_npu release, from the knowledge base index."""
    try:
        index = kb.data_file("knowledge_index.json")
    except (OSError, ValueError, KeyError):
        return {}
    return {v: e.get("torch_npu_version", "") for v, e in (index.get("versions") or {}).items() if isinstance(e, dict)}


def plan(report: dict, inputs: Sequence[Path], kb, opts: Options, *, admit: Optional[Callable] = None,
         roles: Optional[Dict[str, str]] = None, versions: Optional[Dict[str, str]] = None) -> Migration:
    """The migration of the analysed tree described by *report* (a ``script`` report of *inputs*)."""
    from analyse.files import discover
    from analyse.roles import role_of

    mig = Migration(strategy=opts.strategy, inputs=list(report.get("inputs") or []),
                    target={"torch_version": kb.torch_version, "torch_npu_version": kb.torch_npu_version})
    versions = versions if versions is not None else _versions(kb)
    by_path: Dict[str, List[dict]] = {}
    for g in report.get("findings") or ():
        if g.get("suppressed"):
            continue
        for f in places_of(g):   # a grouped finding acts at each of its places, in each of its files
            by_path.setdefault(f["path"], []).append(f)
    entries = set()
    libraries: Dict[str, str] = {}
    for ep in (report.get("summary") or {}).get("entry_points") or ():
        v = ep.get("verdict") or {}
        reaches = any(v.get(k) for k in ("blockers", "manual_changes", "auto_migratable"))
        if reaches and (opts.everything or (ep.get("role") or "product") == "product"):
            if ep.get("library") or ep.get("function"):
                # a program only through a module others import (a package module with a main block, a
                # hubconf.py, a console script's function): the shim there would change every importer
                libraries[ep["path"]] = ep.get("function") or ""
            else:
                entries.add(ep["path"])
    if opts.strategy != "explicit":
        for path in sorted(set(libraries) - entries):
            mig.left.append(Left(path, 1, None, None,
                                 "a library module (importable: a package module, a torch.hub hubconf.py or a "
                                 "console script's module) that can also run as a program: the transfer_to_npu "
                                 "shim is not added here, since importing it would then need torch_npu; add "
                                 "`import torch_npu` and `from torch_npu.contrib import transfer_to_npu` first "
                                 "in the program that runs it"))
    files = discover(list(inputs), suffixes=(".py",), admit=admit, names=MANIFESTS + DOCKER_FILES)
    seen = set()
    for path, _root, rel, _mod in files:
        seen.add(rel)
        mig.abspaths[rel] = path
        found = by_path.get(rel, [])
        is_py = path.suffix == ".py"
        if not is_py and not found and not any(Path(rel).match(g) for g in MANIFESTS):
            continue
        try:
            raw = path.read_bytes()
        except OSError as exc:
            mig.left.append(Left(rel, 0, None, None, f"cannot read the file: {exc.strerror or exc}"))
            continue
        if is_py:
            if not needs_parse(found, opts, raw, rel in entries):
                continue
            res = migrate_python(rel, raw, found, opts, entry=rel in entries,
                                 file_in_scope=role_of(rel, roles) == "product")
        else:
            res = migrate_text(rel, raw, found, opts, versions)
        mig.files.append(res)
        mig.left.extend(res.left)
    # findings of files this walk did not visit (launchers found by other globs, setup.py ...)
    from analyse.files import read_regular_file
    from analyse.policy import Locator

    locator = Locator(list(inputs))
    for rel, found in sorted(by_path.items()):
        if rel in seen:
            continue
        if rel.endswith(".ipynb"):   # a notebook is JSON: its cells are edited in Jupyter, never by a text diff
            for f in found:
                c = f.get("cell") or {}
                where = f" (cell {c['cell']}, line {c.get('line')})" if c.get("cell") else ""
                mig.left.append(Left(rel, int(f.get("line") or 0), f.get("code"), f.get("id"),
                                     f"in a notebook{where}: edit the cell in Jupyter; migrate edits .py files only",
                                     advice=str(f.get("replacement") or "")))
            continue
        ap = locator.abspath(rel)
        if ap is None or not ap.is_file():
            continue
        try:
            raw = read_regular_file(ap)
        except Exception:  # noqa: BLE001 - unreadable: the analysis already reported it
            continue
        mig.abspaths[rel] = ap
        res = migrate_python(rel, raw, found, opts, entry=rel in entries) if rel.endswith(".py") \
            else migrate_text(rel, raw, found, opts, versions)
        mig.files.append(res)
        mig.left.extend(res.left)
    mig.files.sort(key=lambda r: r.path)
    mig.left.sort(key=lambda x: (x.path, x.line, x.code or ""))
    return mig
