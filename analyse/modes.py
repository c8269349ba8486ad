"""The two analysis modes, from inputs to the report object."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from analyse import pipeline
from analyse.cache import file_digest
from analyse.project import deep_stack
from analyse.report import build_report


class BadOption(ValueError):
    """An option names something that cannot be used (a --with-thirdparty report, --probe-results, --entry,
    a role): a usage error. Any other ValueError of an analysis is the tool's own failure."""


class _usage:
    """A ValueError inside the block is the option's problem: :class:`BadOption`."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, ValueError) and not isinstance(exc, BadOption):
            raise BadOption(str(exc)) from exc
        return False


@deep_stack  # deep but valid code must not end in RecursionError
def run_script(inputs: Sequence[Path], kb, *, with_thirdparty: Sequence[str] = (), probe_results: Optional[str] = None,
               input_names: Optional[List[str]] = None, entries: Sequence[str] = (),
               roles: Optional[Dict[str, str]] = None, settings: Optional[pipeline.Settings] = None,
               policy=None) -> dict:
    """``npu-analyse script``: scripts or a project folder.

    *entries*: ``FILE[:FUNCTION]`` entry points that replace discovery (``--entry``); *roles*:
    ``{glob: role}`` file-role overrides. Both raise ValueError (a usage error) when they name
    nothing analysable. *policy* (:class:`analyse.policy.Policy`): rule selection, excludes,
    inline suppressions and the baseline.
    """
    from analyse.entrypoints import check_entry_files
    from analyse.roles import check_overrides

    t0 = time.perf_counter()
    with _usage():
        roles = check_overrides(roles)
        check_entry_files(entries, inputs)
    settings = settings or pipeline.Settings()
    overlay = None
    options = []
    if probe_results:
        from analyse.probe.overlay import load_probe_results

        try:
            overlay = load_probe_results(probe_results)
        except (OSError, ValueError) as exc:
            raise BadOption(f"cannot read --probe-results {probe_results}: {exc}") from exc
        options.append(("probe-results", file_digest(probe_results)))
    configure = None
    if with_thirdparty:  # the reports are knowledge for the thirdparty-calls pass, loaded before any module
        from analyse.library.compose import thirdparty_configure

        with _usage():
            configure = thirdparty_configure(list(with_thirdparty))
        options.extend(("with-thirdparty", file_digest(p)) for p in with_thirdparty)
    settings = pipeline.Settings(jobs=settings.jobs, cache_dir=settings.cache_dir, progress=settings.progress,
                                 options=tuple(settings.options) + tuple(options))
    from analyse.callgraph import add_chains, may_have_chain_starts
    from analyse.entrypoints import discover, given_entries, may_have_programs
    from analyse.reach import Reach, annotate, imported_modules, script_graph, summary_facts

    # the call graph is read for entry points and reach (an entry point is possible) and for the call chains of
    # findings (a module can start one); a project with neither (a package folder of library modules, as timm's)
    # makes no call-graph summaries: a seventh of such a run went to summaries, reach facts and a graph nothing read
    result = pipeline.run(list(inputs), kb, mode="script", probe=overlay, configure=configure, settings=settings,
                          admit=policy.admit if policy is not None else None,
                          programs=lambda prescans: may_have_programs(inputs, entries, prescans),
                          graph_read=lambda prescans, programs: programs or may_have_chain_starts(prescans))

    graph = None
    if result.summaries_made:
        try:
            graph = script_graph(result)
        except RecursionError:  # pragma: no cover - defensive: no graph, no reach
            graph = None
        # cross-file chains: script call site -> ... -> offending line
        findings = add_chains(result, graph=(graph.summaries, graph.cg) if graph is not None else None)
    else:
        findings = list(result.findings)
    result.findings = []   # the list above replaces them: each generation of a run's findings held until the end
    if not result.summaries_made or not result.project.index.programs:
        eps = []   # may_have_programs said no entry point can be found: discover finds none (nor reads reach facts)
    elif entries:
        with _usage():
            eps = given_entries(entries, result.sources, roles)
    else:
        eps = discover(result.sources, list(inputs), imported=imported_modules(graph.summaries) if graph else (),
                       roles=roles,
                       facts={s.relpath: summary_facts(s, result.sources) for s in graph.summaries} if graph else None)
    reach = Reach(graph, result.sources, eps) if graph is not None and eps else None
    ep_paths: dict = {}
    ep_unknown: dict = {}
    ep_guards: dict = {}
    findings, members = annotate(findings, reach, eps, roles, ep_paths=ep_paths, ep_unknown=ep_unknown,
                                 ep_guards=ep_guards)
    ep_unresolved = {ep.id: reach.unresolved(ep.id) for ep in eps} if reach is not None else None
    cpu_fallback = list(result.project.store.get("cpu_fallback") or [])
    # the call graph, the summaries and the sources are done with: the memory they hold (about 4 KB a file) serves
    # the report's finding dicts instead of adding to them
    del graph, reach
    result.summaries, result.sources, result.project.files = [], {}, {}
    report = build_report(
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
        entry_points=eps,
        ep_members=members,
        ep_paths=ep_paths,
        ep_unknown=ep_unknown,
        ep_guards=ep_guards,
        ep_unresolved=ep_unresolved,
        roles=roles,
        policy=policy,
    )
    # the ranked "falls back to the CPU" section (analyse/passes/cpu_fallback.py): aten ops without an NPU kernel
    # for the target release, most call sites first
    report.setdefault("summary", {})["cpu_fallback"] = cpu_fallback
    from analyse.places import abspath_resolver, add_places

    return add_places(report, abspath_resolver(list(inputs)))   # source context, notebook cells


@deep_stack
def run_thirdparty(inputs: Sequence[Path], kb, *, input_names: Optional[List[str]] = None,
                   roles: Optional[Dict[str, str]] = None, settings: Optional[pipeline.Settings] = None,
                   policy=None) -> dict:
    """``npu-analyse thirdparty``: a whole library, with call-graph propagation.

    Findings get their file ``role`` (*roles*: ``{glob: role}`` overrides); *policy* as in :func:`run_script`."""
    from analyse.library import analyse_library
    from analyse.roles import check_overrides

    with _usage():
        roles = check_overrides(roles)
    report = analyse_library(list(inputs), kb, input_names=input_names or [str(p) for p in inputs], settings=settings,
                             policy=policy, roles=roles or None)
    for f in report.get("findings", ()):
        # a library has no entry point of its own: what calls each function is in thirdparty.functions
        f.setdefault("reach", {"status": "unknown", "reason": "library mode: no entry point (see thirdparty.functions "
                                                             "for the callers)"})
    from analyse.places import abspath_resolver, add_places

    return add_places(report, abspath_resolver(list(inputs)))   # source context, notebook cells
