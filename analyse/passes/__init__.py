"""Detector passes. One module = one pass; nothing to register.

A pass module defines one subclass of :class:`Pass` with

* ``name``: the pass name (also its category unless the rules say otherwise),
* ``rules``: the :class:`~analyse.findings.Rule` docs of the codes it emits,
* ``VALID`` / ``INVALID``: Fixit-style examples that run as tests
  (``tests/test_pass_examples.py``): code in ``VALID`` must yield no finding
  of this pass; each line of an ``INVALID`` example that ends with
  ``# expect: NPU001[,NPU002]`` must yield exactly those codes on that line,
* ``check_module(ctx)``: yields findings for one parsed module,
* optionally ``check_file(ctx)`` for non-Python files whose suffix is listed in
  ``file_suffixes`` or whose name matches a glob of ``file_names`` and ``finish(project)`` for project-level findings.

Modules are analysed in worker processes (see :mod:`analyse.pipeline`), so a
pass keeps no state between modules. Project-wide facts flow two ways:

* before any ``check_module``: ``prescan(ctx)`` returns plain-data, canonical
  (sorted) facts of one module, ``combine(project, [(relpath, facts), ...])``
  merges them (into ``project.store``) in every process;
* towards ``finish``: ``check_module`` puts plain-data facts of its module in
  ``ctx.facts[self.name]``; ``finish`` reads ``project.facts[self.name]``, a
  list of ``(relpath, facts)`` in file order.

Plain data, because the cache stores facts as data, never as code
(:func:`analyse.cache.encode`): str, int, float, bool, None, bytes, lists,
tuples, dicts, sets and the declared record types (``Finding``,
``AnalysisError``, the call-graph summaries: ``analyse.pipeline._cache_types``).
A fact of any other type is not cached (its file is analysed on every run;
``tests/test_trust.py`` fails on the examples).

:func:`discover_passes` imports every module of this package and collects the
subclasses, so adding a pass touches only its module, its knowledge file and
its tests.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.guards import guard_of, npu_alternative, tree_memo
# re-exported for the passes: tree walking and text/code tests live below the passes room
from analyse.syntax import LOG_CALLS, LOG_METHODS, in_log_or_docstring, nodes_of, walk  # noqa: F401

if TYPE_CHECKING:  # pragma: no cover
    from analyse.knowledge import KnowledgeBase
    from analyse.project import SourceFile
    from analyse.resolve import ProjectIndex, Resolver


@dataclass
class ModuleContext:
    """Everything a pass may look at for one module."""

    source: "SourceFile"
    resolver: "Resolver"
    kb: "KnowledgeBase"
    project: "ProjectContext"
    # per-module memo shared by passes (e.g. the list of API uses)
    cache: Dict[str, object] = field(default_factory=dict)
    # plain-data per-module facts for Pass.finish, keyed by pass name (see the module docstring)
    facts: Dict[str, object] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.source.relpath

    @property
    def tree(self) -> nodes.Module:
        return self.source.tree

    def snippet(self, lineno: int, end: Optional[int] = None) -> str:
        end = end if end and end >= lineno else lineno
        end = min(end, lineno + 4)
        return "\n".join(self.source.line(i) for i in range(lineno, end + 1)).rstrip()

    def finding(self, rule: Rule, node, api: str, message: str, *, replacement: Optional[str] = None,
                severity: Optional[str] = None, confidence: str = "high", evidence: str = "syntax",
                category: Optional[str] = None, line: Optional[int] = None) -> Finding:
        lineno = line or getattr(node, "lineno", None) or 1
        end = getattr(node, "end_lineno", None) if line is None else line
        guard = guard_of(node, tree_memo(node.root())) if isinstance(node, nodes.NodeNG) else None
        gd = guard.to_dict() if guard is not None else None
        if (severity or rule.severity) == "auto" and isinstance(node, nodes.NodeNG):
            alt = npu_alternative(node)
            if alt is not None:   # the CUDA branch of a chain with an NPU branch: nothing to change on an NPU
                gd = dict(gd) if gd is not None else {"kind": "availability-check", "line": alt[0], "fallback": True}
                gd["npu_branch"] = {"line": alt[1], "condition": alt[2]}
        return Finding(
            code=rule.code,
            category=category or rule.category,
            severity=severity or rule.severity,
            path=self.path,
            line=lineno,
            end_line=end if end and end >= lineno else None,
            column=(getattr(node, "col_offset", 0) or 0) if line is None else 0,
            api=api,
            message=message,
            replacement=replacement,
            confidence=confidence,
            evidence=evidence,
            snippet=self.snippet(lineno),
            guard=gd,
        )


@dataclass
class ProjectContext:
    """Project-wide state shared by the passes of one run."""

    kb: "KnowledgeBase"
    index: "ProjectIndex"
    mode: str = "script"
    root_names: Tuple[str, ...] = ()
    # free-form per-pass storage for project-level results (keyed by pass name)
    store: Dict[str, object] = field(default_factory=dict)
    # overlay of probe results (analyse.probe.overlay.ProbeOverlay) when given
    probe: object = None
    # files of the project: relpath -> SourceFile, text only, no tree (script mode, in finish)
    files: Dict[str, "SourceFile"] = field(default_factory=dict)
    # relpaths of every non-Python file seen (setup.cfg, .cu ...)
    other_files: List[str] = field(default_factory=list)
    # every Python file of the project: relpath -> module name (known before any module is analysed)
    modules: Dict[str, str] = field(default_factory=dict)
    # per-module facts for finish(): pass name -> [(relpath, facts)] in file order
    facts: Dict[str, List[Tuple[str, object]]] = field(default_factory=dict)


PRESCAN_SHAPES: Dict[str, object] = {}   # pass name -> Pass.prescan_shape, for the passes that declare one
FACTS_SHAPES: Dict[str, object] = {}     # pass name -> Pass.facts_shape, for the passes that keep module facts


class Pass:
    name: str = ""
    rules: Tuple[Rule, ...] = ()
    file_suffixes: Tuple[str, ...] = ()
    # file-name globs (fnmatch, case-sensitive) for non-Python files without a telling suffix:
    # Dockerfile, Makefile, requirements-dev.txt ...
    file_names: Tuple[str, ...] = ()
    VALID: Tuple[str, ...] = ()
    INVALID: Tuple[str, ...] = ()
    # the typing shape of what prescan() returns (None included): a cached pre-scan of another shape is a
    # miss (analyse.cache.conforms), never an unpacking error in combine()
    prescan_shape: object = object
    # the typing shape of what check_module() puts in ``ctx.facts[self.name]``: a pass that keeps module facts
    # declares it; a cached result with facts of another shape, or of a pass that declares none, is a miss
    facts_shape: object = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name and "prescan_shape" in cls.__dict__:
            PRESCAN_SHAPES[cls.name] = cls.prescan_shape
        if cls.name and cls.__dict__.get("facts_shape") is not None:
            FACTS_SHAPES[cls.name] = cls.facts_shape

    def rule(self, code: str) -> Rule:
        for r in self.rules:
            if r.code == code:
                return r
        raise KeyError(code)

    def prescan(self, ctx: ModuleContext) -> object:
        """Project-wide facts of one module, before any check_module (plain data, canonical); None: nothing."""
        return None

    def combine(self, project: ProjectContext, prescans: List[Tuple[str, object]]) -> None:
        """Merge the prescan facts of every module, in file order (into project.store)."""

    def check_module(self, ctx: ModuleContext) -> Iterable[Finding]:
        return ()

    def check_file(self, path, relpath: str, project: ProjectContext):
        """Non-Python files. Returns (findings, errors)."""
        return (), ()

    def finish(self, project: ProjectContext) -> Iterable[Finding]:
        return ()


@lru_cache(maxsize=None)
def _pass_classes() -> Tuple[type, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Pass) and obj is not Pass and obj.__module__ == mod.__name__:
                found.append(obj)
    return tuple(found)


def discover_passes() -> List[Pass]:
    """A fresh instance of every pass in this package."""
    return [cls() for cls in _pass_classes()]


def all_rules() -> List[Rule]:
    rules: Dict[str, Rule] = {}
    for p in discover_passes():
        for r in p.rules:
            if r.code in rules and rules[r.code] != r:
                raise ValueError(f"rule code {r.code} defined twice")
            rules[r.code] = r
    return [rules[c] for c in sorted(rules)]
