"""``npu-analyse script --with-thirdparty lib-report.json``: calls from the user's
code into affected functions of an analysed library become findings.

A thirdparty report lists the library functions that are not plainly
supported (``thirdparty.functions``) and the names they are reachable under
(``thirdparty.aliases``: re-exports through ``__init__``, ``X = Fn.apply``,
classes -> their ``__init__`` / ``forward``). Loaded reports are registered in
``project.store["thirdparty_reports"]`` and the ``thirdparty-calls`` pass
(:mod:`analyse.passes.thirdparty_calls`) turns every call the user's code
actually makes into such a function into an NPU450 / NPU451 / NPU452 finding
whose ``chain`` is the user's call site followed by the library's ``via`` chain.
"""

from __future__ import annotations

from typing import List, Sequence

from analyse.findings import Finding
from analyse.knowledge.library_reports import STORE_KEY, load_index


def thirdparty_findings(run_result, report_paths: Sequence[str]) -> List[Finding]:
    """Findings for the calls of *run_result*'s sources into the reports' affected functions."""
    from analyse.passes import ModuleContext
    from analyse.passes.thirdparty_calls import ThirdpartyCallsPass
    from analyse.resolve import Resolver

    index = load_index(report_paths)
    project = run_result.project
    project.store[STORE_KEY] = index
    p = ThirdpartyCallsPass()
    out: List[Finding] = []
    for rel, sf in sorted(run_result.sources.items()):
        if sf.tree is None:
            continue
        r = Resolver(sf.tree, sf.modname, project.index, is_package=sf.is_package_init)
        ctx = ModuleContext(source=sf, resolver=r, kb=project.kb, project=project)
        out.extend(p.check_module(ctx))
    return out
