"""``npu-analyse script --with-thirdparty lib-report.json``: calls from the user's
code into affected functions of an analysed library become findings.

A thirdparty report lists the library functions that are not plainly
supported (``thirdparty.functions``) and the names they are reachable under
(``thirdparty.aliases``: re-exports through ``__init__``, ``X = Fn.apply``,
classes -> their ``__init__`` / ``forward``). The loaded reports are registered
in ``project.store["thirdparty_reports"]`` before any module is analysed, and
the ``thirdparty-calls`` pass (:mod:`analyse.passes.thirdparty_calls`) turns
every call the user's code actually makes into such a function into an NPU450 /
NPU451 / NPU452 finding whose ``chain`` is the user's call site followed by the
library's ``via`` chain.
"""

from __future__ import annotations

from typing import Callable, Sequence

from analyse.knowledge.library_reports import STORE_KEY, load_index


def thirdparty_configure(report_paths: Sequence[str]) -> Callable:
    """A pipeline ``configure`` hook registering the reports (ValueError on an unreadable report)."""
    index = load_index(report_paths)

    def configure(project) -> None:
        project.store[STORE_KEY] = index

    return configure
