"""The pass pipeline: discover files, parse, index, run every pass, collect.

A failure of one pass on one file becomes an ``internal`` error entry for that
file; the other passes and files still run.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from analyse.findings import AnalysisError, Finding, assign_ids
from analyse.passes import ModuleContext, Pass, ProjectContext, discover_passes
from analyse.project import SourceFile, discover, load_source
from analyse.resolve import ProjectIndex, Resolver


@dataclass
class RunResult:
    findings: List[Finding]
    errors: List[AnalysisError]
    files_analysed: int
    lines_analysed: int
    duration_s: float
    project: ProjectContext
    sources: Dict[str, SourceFile] = field(default_factory=dict)


def _internal(relpath: str, where: str, exc: BaseException) -> AnalysisError:
    tb = traceback.extract_tb(exc.__traceback__)
    loc = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return AnalysisError(relpath, "internal", f"{where} failed: {type(exc).__name__}: {exc}{loc}")


def other_suffixes(passes: Sequence[Pass]) -> Tuple[str, ...]:
    out = []
    for p in passes:
        for s in p.file_suffixes:
            if s not in out and s != ".py":
                out.append(s)
    return tuple(out)


def load_project(inputs: Sequence[Path], passes: Sequence[Pass], keep: bool = True):
    """Parse every Python file; returns (sources, other files, errors, lines)."""
    suffixes = (".py",) + other_suffixes(passes)
    sources: List[SourceFile] = []
    others: List[Tuple[Path, str]] = []
    errors: List[AnalysisError] = []
    lines = 0
    for abspath, _root, rel, modname in discover(inputs, suffixes):
        if abspath.suffix != ".py":
            others.append((abspath, rel))
            continue
        sf, err = load_source(abspath, rel, modname)
        if err is not None:
            errors.append(err)
            continue
        lines += len(sf.lines)
        sources.append(sf)
    return sources, others, errors, lines


def run(inputs: Sequence[Path], kb, *, mode: str = "script", passes: Optional[Sequence[Pass]] = None,
        probe=None, configure: Optional[Callable[[ProjectContext], None]] = None) -> RunResult:
    t0 = time.perf_counter()
    passes = list(passes) if passes is not None else discover_passes()
    sources, others, errors, lines = load_project(inputs, passes)

    index = ProjectIndex()
    resolvers: Dict[str, Resolver] = {}
    for sf in sources:
        r = Resolver(sf.tree, sf.modname, index, is_package=sf.is_package_init)
        resolvers[sf.relpath] = r
        try:
            index.add_module(sf.modname, sf.tree, r)
        except Exception as exc:  # pragma: no cover - defensive
            errors.append(_internal(sf.relpath, "indexing", exc))

    project = ProjectContext(kb=kb, index=index, mode=mode, probe=probe,
                             files={sf.relpath: sf for sf in sources},
                             other_files=[rel for _p, rel in others],
                             root_names=tuple(p.name for p in inputs))
    if configure is not None:
        configure(project)

    findings: List[Finding] = []
    for sf in sources:
        ctx = ModuleContext(source=sf, resolver=resolvers[sf.relpath], kb=kb, project=project)
        for p in passes:
            try:
                findings.extend(p.check_module(ctx))
            except Exception as exc:
                errors.append(_internal(sf.relpath, f"pass {p.name}", exc))
    for abspath, rel in others:
        for p in passes:
            if abspath.suffix in p.file_suffixes or any(abspath.name.endswith(s) for s in p.file_suffixes):
                try:
                    fs, errs = p.check_file(abspath, rel, project)
                    findings.extend(fs)
                    errors.extend(errs)
                except Exception as exc:
                    errors.append(_internal(rel, f"pass {p.name}", exc))
    for p in passes:
        try:
            findings.extend(p.finish(project))
        except Exception as exc:
            errors.append(_internal("<project>", f"pass {p.name} (project level)", exc))

    findings = dedupe(findings)
    findings = assign_ids(findings)
    return RunResult(findings=findings, errors=errors, files_analysed=len(sources) + len(others),
                     lines_analysed=lines, duration_s=time.perf_counter() - t0, project=project,
                     sources={sf.relpath: sf for sf in sources})


def dedupe(findings: Iterable[Finding]) -> List[Finding]:
    """Drop exact repeats (same code, place and api)."""
    seen = set()
    out = []
    for f in findings:
        key = (f.code, f.path, f.line, f.column, f.api)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out
