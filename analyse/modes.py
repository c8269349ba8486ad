"""The two analysis modes, from inputs to the report object."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional, Sequence

from analyse import pipeline
from analyse.findings import assign_ids
from analyse.report import build_report


def run_script(inputs: Sequence[Path], kb, *, with_thirdparty: Sequence[str] = (), probe_results: Optional[str] = None,
               input_names: Optional[List[str]] = None, entries: Sequence[str] = (), roles: Optional[dict] = None,
               policy=None) -> dict:
    """``npu-analyse script``: scripts or a project folder.

    *entries* ("FILE[:FUNCTION]") and *roles* ({glob: role}) are the entry points and file roles of the
    configuration / command line; *policy* (:class:`analyse.policy.Policy`) is the rule selection,
    excludes, suppressions and baseline."""
    t0 = time.perf_counter()
    overlay = None
    if probe_results:
        from analyse.probe.overlay import load_probe_results

        try:
            overlay = load_probe_results(probe_results)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read --probe-results {probe_results}: {exc}") from exc
    result = pipeline.run(list(inputs), kb, mode="script", probe=overlay,
                          admit=policy.admit if policy is not None else None)
    from analyse.callgraph import add_chains

    findings = add_chains(result)  # cross-file chains: script call site -> ... -> offending line
    if with_thirdparty:
        from analyse.library.compose import thirdparty_findings

        findings.extend(thirdparty_findings(result, list(with_thirdparty)))
        findings = assign_ids(pipeline.dedupe(findings))
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
        policy=policy,
    )


def run_thirdparty(inputs: Sequence[Path], kb, *, input_names: Optional[List[str]] = None, roles: Optional[dict] = None,
                   policy=None) -> dict:
    """``npu-analyse thirdparty``: a whole library, with call-graph propagation."""
    from analyse.library import analyse_library

    return analyse_library(list(inputs), kb, input_names=input_names or [str(p) for p in inputs], policy=policy)
