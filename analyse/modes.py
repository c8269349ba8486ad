"""The two analysis modes, from inputs to the report object."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import List, Optional, Sequence

from analyse import pipeline
from analyse.report import build_report


def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def run_script(inputs: Sequence[Path], kb, *, with_thirdparty: Sequence[str] = (), probe_results: Optional[str] = None,
               input_names: Optional[List[str]] = None, settings: Optional[pipeline.Settings] = None) -> dict:
    """``npu-analyse script``: scripts or a project folder."""
    t0 = time.perf_counter()
    settings = settings or pipeline.Settings()
    overlay = None
    options = []
    if probe_results:
        from analyse.probe.overlay import load_probe_results

        try:
            overlay = load_probe_results(probe_results)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read --probe-results {probe_results}: {exc}") from exc
        options.append(("probe-results", _file_digest(probe_results)))
    configure = None
    if with_thirdparty:
        from analyse.library.compose import thirdparty_configure

        configure = thirdparty_configure(list(with_thirdparty))
        options.extend(("with-thirdparty", _file_digest(p)) for p in with_thirdparty)
    settings = pipeline.Settings(jobs=settings.jobs, cache_dir=settings.cache_dir, progress=settings.progress,
                                 options=tuple(settings.options) + tuple(options))
    result = pipeline.run(list(inputs), kb, mode="script", probe=overlay, configure=configure, settings=settings)
    from analyse.callgraph import add_chains

    findings = add_chains(result)  # cross-file chains: script call site -> ... -> offending line
    return build_report(
        mode="script",
        inputs=input_names or [str(p) for p in inputs],
        torch_version=kb.torch_version,
        torch_npu_version=kb.torch_npu_version,
        knowledge_base=kb.identifier,
        findings=findings,
        errors=result.errors,
        files_analysed=result.files_analysed,
        lines_analysed=result.lines_analysed,
        duration_s=time.perf_counter() - t0,
    )


def run_thirdparty(inputs: Sequence[Path], kb, *, input_names: Optional[List[str]] = None,
                   settings: Optional[pipeline.Settings] = None) -> dict:
    """``npu-analyse thirdparty``: a whole library, with call-graph propagation."""
    from analyse.library import analyse_library

    return analyse_library(list(inputs), kb, input_names=input_names or [str(p) for p in inputs], settings=settings)
