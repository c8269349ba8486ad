"""The pass pipeline: discover files, parse, index, run every pass, collect.

A failure of one pass on one file becomes an ``internal`` error entry for that
file; the other passes and files still run.
"""

from __future__ import annotations

import os
import pickle
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
    resolvers: Dict[str, Resolver] = field(default_factory=dict)     # relpath -> the resolver the passes used
    timings: Dict[str, float] = field(default_factory=dict)          # parse_s, passes_s


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
    t_parsed = time.perf_counter()

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

    findings = check_modules(sources, resolvers, kb, project, passes, errors, lines)
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
    t1 = time.perf_counter()
    return RunResult(findings=findings, errors=errors, files_analysed=len(sources) + len(others),
                     lines_analysed=lines, duration_s=t1 - t0, project=project,
                     sources={sf.relpath: sf for sf in sources}, resolvers=resolvers,
                     timings={"parse_s": t_parsed - t0, "passes_s": t1 - t_parsed})


PARALLEL_MIN_LINES = 20000


def _jobs(lines: int) -> int:
    env = os.environ.get("NPU_ANALYSE_JOBS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    if lines < PARALLEL_MIN_LINES or not hasattr(os, "fork"):
        return 1
    return max(1, min(os.cpu_count() or 1, 4))


def _run_modules(sources, resolvers, kb, project, passes) -> Tuple[List[Finding], List[AnalysisError]]:
    findings: List[Finding] = []
    errors: List[AnalysisError] = []
    for sf in sources:
        ctx = ModuleContext(source=sf, resolver=resolvers[sf.relpath], kb=kb, project=project)
        for p in passes:
            try:
                findings.extend(p.check_module(ctx))
            except Exception as exc:
                errors.append(_internal(sf.relpath, f"pass {p.name}", exc))
    return findings, errors


def check_modules(sources, resolvers, kb, project, passes, errors: List[AnalysisError], lines: int) -> List[Finding]:
    """Run every pass over every module.

    Large projects use several cores: after parsing, forked workers (sharing
    the parsed trees copy-on-write) each run the stateless passes over a share
    of the modules and send their findings back; passes marked ``stateful``
    (they accumulate project-level state in ``project.store`` for ``finish``)
    run over all modules in this process. A worker that fails is redone here.
    """
    jobs = _jobs(lines)
    if jobs <= 1 or len(sources) < 2:
        found, errs = _run_modules(sources, resolvers, kb, project, passes)
        errors.extend(errs)
        return found
    stateful = [p for p in passes if getattr(p, "stateful", False)]
    stateless = [p for p in passes if not getattr(p, "stateful", False)]
    ordered = sorted(sources, key=lambda sf: -len(sf.lines))
    chunks = [ordered[i::jobs] for i in range(jobs)]
    children = []
    for chunk in chunks[1:]:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # worker
            code = 0
            try:
                os.close(rfd)
                payload = pickle.dumps(_run_modules(chunk, resolvers, kb, project, stateless), pickle.HIGHEST_PROTOCOL)
            except BaseException:  # noqa: BLE001 - reported by the parent redoing the chunk
                payload, code = b"", 1
            try:
                with os.fdopen(wfd, "wb") as fh:
                    fh.write(payload)
            finally:
                os._exit(code)
        os.close(wfd)
        children.append((pid, rfd, chunk))
    found, errs = _run_modules(chunks[0], resolvers, kb, project, stateless)
    more, more_errs = _run_modules(sources, resolvers, kb, project, stateful)
    found += more
    errs += more_errs
    for pid, rfd, chunk in children:
        with os.fdopen(rfd, "rb") as fh:
            payload = fh.read()
        _pid, status = os.waitpid(pid, 0)
        try:
            if status != 0 or not payload:
                raise ValueError("worker failed")
            part, part_errs = pickle.loads(payload)
        except Exception:
            part, part_errs = _run_modules(chunk, resolvers, kb, project, stateless)
        found += part
        errs += part_errs
    errors.extend(errs)
    return found


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
