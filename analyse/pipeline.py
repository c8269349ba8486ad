"""The pass pipeline: discover files, parse, index, run every pass, collect.

Design (parallel and cached, with output independent of both):

1. **Discover** the files; the main process reads and hashes every Python file
   (:mod:`analyse.cache` key: content + path + module name + the run key).
2. **Pre-scan** (per file): parse (astroid, no inference), record the file's
   share of the project-wide facts -- its classes and bases and argparse
   defaults for the :class:`~analyse.resolve.ProjectIndex`, and each pass's
   ``prescan`` (cuda-extension: the extension names a ``setup.py`` builds).
   Plain, canonical (sorted) data (the cache stores it as data: :func:`analyse.cache.encode`).
3. **Combine** (main process): merge the pre-scans into the index and each
   pass's ``combine`` (into ``project.store``). A digest of all pre-scans is the
   *context* the per-file results depend on.
4. **Analyse** (per file): run every pass's ``check_module`` with the complete
   index, and reduce the module to a call-graph
   :class:`~analyse.callgraph.ModuleSummary`. The result is findings, errors,
   the summary and ``ctx.facts`` -- per-module facts the passes with
   project-level output read in ``finish`` (performance advice, once-per-report
   precision advice). Nothing accumulates in a worker between files.
5. **Finish** (main process, single-threaded): non-Python files
   (``check_file``), each pass's ``finish``, then dedupe and deterministic ids;
   the modes build the call graph from the summaries.

Steps 2 and 4 run in ``--jobs`` forked worker processes, each owning a fixed
share of the files (largest first, round-robin) and keeping its parsed trees
between the two steps unless the project is too big for that (then a tree is
parsed again for step 4 -- memory stays bounded). With one job, or little
work, the same functions run in this process. Results are collected per file
and ordered by discovery order, so every ``--jobs`` gives the same report.

The cache stores both results per file: the pre-scan is reused whenever the
file is unchanged, the analysis only when the context digest is unchanged as
well (editing a function body re-analyses that file; adding a class
re-analyses all). A warm run on an unchanged tree only hashes and loads.

A failure of one pass on one file becomes an ``internal`` error entry for that
file; the other passes and files still run. A worker that dies has its files
redone in the main process.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import astroid

from analyse.cache import Cache, digest, run_key
from analyse.findings import AnalysisError, Finding, assign_ids, merge_same_place
from analyse.passes import ModuleContext, Pass, ProjectContext, discover_passes
from analyse.progress import Progress
from analyse.gcpolicy import collect_less, collect_never
from analyse.files import (NOTEBOOK_SUFFIX, FileTooLarge, NotANotebook, NotRegularFile, discover,
                           file_limit, read_regular_file, source_text)
from analyse.project import SourceFile, parse_source
from analyse.conditions.build import collect_flag_imports, collect_flags, collect_instance_settings
from analyse.conditions.options import collect as collect_options
from analyse.conditions.options import config_refs, read_config
from analyse.conditions.options import configure as configure_conditions
from analyse.conditions.options import merge as merge_options
from analyse.resolve import ClassInfo, ImportHelper, ProjectIndex, Resolver
from analyse.runsettings import Settings, _cgroup_cpu_quota, available_cpus, default_jobs  # noqa: F401 (re-exported)

# Below this much Python source to (re)analyse, worker processes cost more than they save.
PARALLEL_MIN_BYTES = 200_000
# Workers keep parsed trees between the pre-scan and the analysis up to this much source each.
KEEP_TREES_MAX_BYTES = 12_000_000
# ... counting each file as this many bytes more: a tree costs about 32 bytes of memory per byte of source plus
# about 4 KB per file whatever its size (the module node, its scope tables, the SourceFile), so 128,000 four-line
# files (12 MB of source) held 0.9 GB of trees between the two steps.
KEEP_TREES_FILE_BYTES = 128


def keep_trees(work_bytes: int, files: int, workers: int) -> bool:
    """Whether the pre-scan's trees are kept for the analysis (else each file is parsed again there)."""
    return work_bytes + KEEP_TREES_FILE_BYTES * files <= KEEP_TREES_MAX_BYTES * max(1, workers)


@dataclass
class RunResult:
    findings: List[Finding]
    errors: List[AnalysisError]
    files_analysed: int
    lines_analysed: int
    duration_s: float
    project: ProjectContext
    # relpath -> SourceFile (text and lines; the tree parsed again on first use, see LazySource)
    sources: Dict[str, SourceFile] = field(default_factory=dict)
    summaries: list = field(default_factory=list)          # ModuleSummary per module, discovery order
    failed: Dict[str, str] = field(default_factory=dict)   # modname -> relpath: unparsable / no summary
    others: List[Tuple[Path, str]] = field(default_factory=list)  # non-Python files (abspath, relpath)
    timings: Dict[str, float] = field(default_factory=dict)
    cache_hits: int = 0
    summaries_made: bool = True   # False when *graph_read* said nothing reads them (no summaries, no failed)


@dataclass
class Prescan:
    """Step 2 result for one file (plain data, canonical: cached by analyse.cache.encode)."""

    relpath: str
    modname: str
    lines: int = 0
    error: Optional[AnalysisError] = None
    classes: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    argparse: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    options: Tuple = ()                            # option declarations and defaults (analyse.conditions.options)
    configs: Tuple[str, ...] = ()                  # configuration files the module names (analyse.conditions.options)
    import_helpers: Tuple[Tuple[str, Tuple[int, str], Tuple[int, str], int, str], ...] = ()   # analyse.resolve.ImportHelper
    flags: Tuple[Tuple[str, str, Tuple], ...] = ()   # module-level flags other modules import (conditions.build.collect_flags)
    flag_imports: Tuple[Tuple[str, str], ...] = ()   # constants it imports and may hand on (collect_flag_imports)
    settings: Tuple[Tuple, ...] = ()   # what its classes' constructors keep of their parameters (collect_instance_settings)
    passes: Tuple[Tuple[str, object], ...] = ()   # (pass name, prescan data)
    errors: Tuple[AnalysisError, ...] = ()
    digest: str = ""
    # script mode (analyse.entrypoints.may_have_programs): a ``__main__`` block (the file is an entry point),
    # top-level work (one unless a project module imports the file), and the project modules the file imports
    program: bool = False
    top_level: bool = False
    imports: Tuple[str, ...] = ()


@dataclass
class ModuleResult:
    """Step 4 result for one file (plain data: cached by analyse.cache.encode)."""

    relpath: str
    findings: List[Finding] = field(default_factory=list)
    errors: List[AnalysisError] = field(default_factory=list)
    facts: Dict[str, object] = field(default_factory=dict)
    summary: object = None
    summary_error: Optional[AnalysisError] = None
    stored: bool = False   # a worker process has written its cache entry already


@dataclass
class _Task:
    abspath: Path
    relpath: str
    modname: str
    key: str = ""
    size: int = 0


def _cache_types() -> tuple:
    """The dataclasses a per-file cache entry holds (see :func:`analyse.cache.encode`)."""
    from analyse.callgraph import ClassSummary, ModuleSummary

    return (Prescan, ModuleResult, Finding, AnalysisError, ModuleSummary, ClassSummary)


def _entry_ok(entry: dict) -> bool:
    """A per-file entry's shape: a pre-scan (each pass's data of the shape the pass declares:
    ``Pass.prescan_shape``), and a context digest with its result (or neither)."""
    from analyse.cache import conforms
    from analyse.passes import PRESCAN_SHAPES

    ctx, res, pre = entry.get("context"), entry.get("result"), entry.get("prescan")
    if not (isinstance(pre, Prescan) and (ctx is None or isinstance(ctx, str))
            and (res is None or isinstance(res, ModuleResult))):
        return False
    for item in pre.passes:
        if type(item) is not tuple or len(item) != 2 or not isinstance(item[0], str):
            return False
        shape = PRESCAN_SHAPES.get(item[0])
        if shape is not None and not conforms(item[1], shape):
            return False
    return res is None or _result_ok(res)


def _result_ok(res: "ModuleResult") -> bool:
    """The fields of a cached result typed ``object``: each pass's facts of the shape the pass declares
    (``Pass.facts_shape``; facts of a pass that declares none are refused), the summary a
    :class:`ModuleSummary` or None, its reach facts empty or of :class:`analyse.reach.ModuleFacts`' shape."""
    from analyse.cache import conforms
    from analyse.callgraph import ModuleSummary
    from analyse.passes import FACTS_SHAPES
    from analyse.reach import ModuleFacts

    if type(res.facts) is not dict:
        return False
    for name, value in res.facts.items():
        shape = FACTS_SHAPES.get(name) if isinstance(name, str) else None
        if shape is None or not conforms(value, shape):
            return False
    if res.summary is None:
        return True
    if not isinstance(res.summary, ModuleSummary) or type(res.summary.reach) is not dict:
        return False
    return not res.summary.reach or conforms(res.summary.reach, ModuleFacts)


def open_cache(directory: Path) -> Cache:
    """The per-file cache in *directory*: data-only entries of the pipeline's own types."""
    return Cache(directory, types=_cache_types, check=_entry_ok)


def _internal(relpath: str, where: str, exc: BaseException) -> AnalysisError:
    tb = traceback.extract_tb(exc.__traceback__)
    loc = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    return AnalysisError(relpath, "internal", f"{where} failed: {type(exc).__name__}: {exc}{loc}")


_SCALARS = frozenset((int, float, bool, type(None)))   # what :class:`_Sharer` leaves as it is, without a call


class _Sharer:
    """Makes the per-file results the main process holds share their equal strings (:meth:`result`).

    A result arrives pickled from a worker (or from the cache), and unpickling makes new string objects for
    every one: each file's findings carry their own copy of the same message, replacement, API and snippet
    texts, its facts and summary their own copies of the same dictionary keys and names. Until the report is
    written the main process holds every file's result (128,000 four-line files: about 9 KB each, most of the
    run's peak memory); one copy of each text serves them all. Only strings are replaced (by an equal one), in
    the containers of a result (dicts, lists, tuples, sets and the fields of the dataclasses a result is made
    of), so nothing compares, hashes or prints differently. The table is dropped once the results are
    collected."""

    __slots__ = ("table", "types")

    def __init__(self) -> None:
        self.table: Dict[str, str] = {}
        self.types = frozenset(_cache_types())

    def result(self, res: "ModuleResult") -> "ModuleResult":
        self._fields(res)
        return res

    def _fields(self, obj) -> None:
        d = getattr(obj, "__dict__", None)
        if d is not None:
            for k, v in d.items():
                if v is not None and type(v) is not bool and type(v) is not int:
                    d[k] = self._value(v)

    def _value(self, v):
        # strings and plain scalars in a container are handled in place (three items in four of a result):
        # one call per container, not one per item
        t = type(v)
        if t is str:
            return self.table.setdefault(v, v)
        if t is list:
            table, value = self.table, self._value
            for i, x in enumerate(v):
                tx = type(x)
                if tx is str:
                    v[i] = table.setdefault(x, x)
                elif tx not in _SCALARS:
                    v[i] = value(x)
            return v
        if t is tuple:
            if not v:
                return v
            table, value = self.table, self._value
            return tuple([table.setdefault(x, x) if type(x) is str else x if type(x) in _SCALARS else value(x)
                          for x in v])
        if t is dict:
            if not v:
                return v
            table, value = self.table, self._value
            out = {table.setdefault(k, k) if type(k) is str else value(k):
                   table.setdefault(x, x) if type(x) is str else x if type(x) in _SCALARS else value(x)
                   for k, x in v.items()}
            v.clear()
            v.update(out)   # the same dict object: whatever else holds it sees the shared texts too
            return v
        if t is set or t is frozenset:
            return t(self._value(x) for x in v) if v else v
        if t in self.types:
            self._fields(v)
        return v


def other_suffixes(passes: Sequence[Pass]) -> Tuple[str, ...]:
    out = []
    for p in passes:
        for s in p.file_suffixes:
            if s not in out and s != ".py":
                out.append(s)
    return tuple(out)


# --------------------------------------------------------------------------- per-file work

def _read(task: _Task) -> Tuple[Optional[str], Optional[AnalysisError]]:
    try:
        data = read_regular_file(task.abspath, file_limit(task.abspath))
    except FileTooLarge as exc:
        return None, AnalysisError(task.relpath, "too-large", f"file too large to analyse: {exc}")
    except NotRegularFile as exc:
        return None, AnalysisError(task.relpath, "io", f"not read: {exc} is not a regular file")
    except OSError as exc:
        return None, AnalysisError(task.relpath, "io", f"cannot read file: {exc.strerror or exc}")
    try:
        text = source_text(task.abspath, data)
    except NotANotebook as exc:
        return None, AnalysisError(task.relpath, "syntax", str(exc))
    except FileTooLarge as exc:
        return None, AnalysisError(task.relpath, "too-large", f"notebook code too large to analyse: {exc}")
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return None, AnalysisError(task.relpath, "encoding", f"cannot decode file: {exc}")
    if "\x00" in text:
        return None, AnalysisError(task.relpath, "encoding", "file contains NUL bytes (binary file?)")
    return text, None


class _Worker:
    """The per-file steps; one instance per process (the main one for --jobs 1)."""

    def __init__(self, kb, project: ProjectContext, passes: Sequence[Pass], summaries: bool, keep: bool):
        self.kb = kb
        self.project = project
        self.passes = list(passes)
        self.summaries = summaries
        self.keep = keep
        self.trees: Dict[str, SourceFile] = {}

    def _parse(self, task: _Task) -> Tuple[Optional[SourceFile], Optional[AnalysisError]]:
        text, err = _read(task)
        if err is not None:
            return None, err
        return parse_source(text, task.abspath, task.relpath, task.modname)

    def prescan(self, task: _Task) -> Prescan:
        sf, err = self._parse(task)
        if err is not None:
            return Prescan(task.relpath, task.modname, error=err, digest=digest("error", err))
        local = ProjectIndex()
        errors: List[AnalysisError] = []
        r = Resolver(sf.tree, task.modname, local, is_package=sf.is_package_init)
        try:
            local.add_module(task.modname, sf.tree, r)
        except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
            raise
        except Exception as exc:  # pragma: no cover - defensive
            errors.append(_internal(task.relpath, "indexing", exc))
        classes = tuple(sorted((q, tuple(info.bases)) for q, info in local.classes.items()))
        try:
            options = collect_options(sf.tree)
            configs = config_refs(sf.tree)
        except Exception as exc:  # pragma: no cover - defensive
            options, configs = (), ()
            errors.append(_internal(task.relpath, "option defaults", exc))
        try:
            flags, flag_imports = collect_flags(sf.tree), collect_flag_imports(sf.tree)
            settings = collect_instance_settings(sf.tree)
        except Exception as exc:  # pragma: no cover - defensive
            flags, flag_imports, settings = (), (), ()
            errors.append(_internal(task.relpath, "module flags", exc))
        argparse = tuple(sorted((d, tuple(sorted(v))) for d, v in local.argparse_defaults.items()))
        helpers = tuple(sorted((h.qualname, h.module, h.attr, h.item, h.fixed) for h in local.import_helpers.values()))
        facts = []
        ctx = ModuleContext(source=sf, resolver=Resolver(sf.tree, task.modname, local, is_package=sf.is_package_init),
                            kb=self.kb, project=self.project)
        for p in self.passes:
            if type(p).prescan is Pass.prescan:
                continue
            try:
                data = p.prescan(ctx)
            except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
                raise
            except Exception as exc:
                errors.append(_internal(task.relpath, f"pass {p.name} (pre-scan)", exc))
                continue
            if data is not None:
                facts.append((p.name, data))
        program = top_level = False
        imports: Tuple[str, ...] = ()
        if self.project.mode == "script":
            from analyse.entrypoints import has_main_guard, has_top_level_code, project_imports

            program = has_main_guard(sf.tree)
            top_level = not program and has_top_level_code(sf.tree)
            imports = project_imports(sf.tree, r, self._module_names())
        pre = Prescan(task.relpath, task.modname, lines=len(sf.lines), classes=classes, argparse=argparse,
                      options=options, configs=configs, import_helpers=helpers, passes=tuple(facts),
                      errors=tuple(errors), program=program, top_level=top_level, imports=imports, flags=flags,
                      flag_imports=flag_imports, settings=settings)
        pre.digest = digest(task.modname, repr(classes), repr(argparse), repr(options), repr(configs),
                            repr(helpers), repr(pre.passes), repr(flags), repr(flag_imports), repr(settings))
        if self.keep:
            self.trees[task.relpath] = sf
            # the kept tree lives until the end of the run: out of the collector's sight, or every young-generation
            # collection would scan it again (a tenth of a worker's time went to that); see analyse.gcpolicy
            gc.freeze()
        else:
            astroid.MANAGER.astroid_cache.pop(task.modname, None)
        return pre

    def _module_names(self) -> frozenset:
        got = self.__dict__.get("_modules")
        if got is None:
            got = self.__dict__["_modules"] = frozenset(self.project.modules.values())
        return got

    def set_context(self, index: ProjectIndex, prescans: Sequence[Prescan]) -> None:
        self.project.index = index
        # a GPU-only library the project is itself (Megatron-LM's own `megatron` package) is the project's code there:
        # its modules are read, not judged by the knowledge entry
        gpu_only = _gpu_only_modules(self.kb)
        if self.project.mode == "script":
            gpu_only = tuple(m for m in gpu_only if not index.has_root(m.partition(".")[0]))
        configure_conditions(index.option_defaults, self.project.mode, gpu_only=gpu_only,
                             torch_api=self.kb.documented_names(), config_keys=index.config_keys,
                             config_by_module=index.config_by_module,
                             import_helpers=index.helpers_by_leaf(),
                             torch_version=getattr(self.kb, "torch_version", None),
                             module_flags=index.module_flags, instance_settings=index.instance_settings)
        _combine(self.project, self.passes, prescans)

    def analyse(self, task: _Task) -> ModuleResult:
        sf = self.trees.pop(task.relpath, None)
        if sf is None:
            sf, err = self._parse(task)
            if err is not None:  # changed on disk since the pre-scan
                return ModuleResult(task.relpath, errors=[err])
        out = ModuleResult(task.relpath)
        resolver = Resolver(sf.tree, sf.modname, self.project.index, is_package=sf.is_package_init)
        ctx = ModuleContext(source=sf, resolver=resolver, kb=self.kb, project=self.project)
        for p in self.passes:
            try:
                out.findings.extend(p.check_module(ctx))
            except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
                raise
            except Exception as exc:
                out.errors.append(_internal(sf.relpath, f"pass {p.name}", exc))
        out.facts = dict(ctx.facts)
        if self.summaries and self.project.index.summaries:
            from analyse.callgraph import summarise_module

            try:
                # script mode reads no call-edge conditions (only the library statuses do)
                out.summary = summarise_module(sf.tree, sf.modname, sf.relpath, resolver, sf.is_package_init,
                                               len(sf.lines), guards=self.project.mode != "script",
                                               kept=self.project.mode == "script")
            except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
                raise
            except Exception as exc:
                out.summary_error = _internal(sf.relpath, "call graph", exc)
            if out.summary is not None and self.project.mode == "script" and self.project.index.programs:
                # entry points and reach are script mode's (analyse.modes.run_script); the library statuses
                # read none of these facts, and neither does a project without a possible program
                # (ProjectIndex.programs: no entry point is discovered, no reach walked; the summary serves the
                # call chains alone)
                from analyse.reach import call_lines, module_facts

                try:
                    out.summary.reach = module_facts(sf.tree, sf.modname, sf.relpath, sf.is_package_init,
                                                     call_lines(out.summary, self.project.index.modules))
                except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
                    raise
                except Exception as exc:
                    out.summary_error = _internal(sf.relpath, "entry points and reach", exc)
        astroid.MANAGER.astroid_cache.pop(sf.modname, None)
        return out


def _gpu_only_modules(kb) -> Tuple[str, ...]:
    """Modules of the GPU-only libraries (data/third_party_libs.yaml: blockers, and manual entries whose import
    fails on an Ascend host) for the conditions room: a fallback that imports one is no fallback."""
    try:
        from analyse.passes.third_party import lib_table

        table = lib_table(kb)
    except Exception:   # no knowledge of libraries: no fallback is judged by what it imports
        return ()
    return tuple(sorted({m for e in table.entries if e.severity == "blocker"
                         or (e.severity == "manual" and not e.imports_on_npu) for m in e.modules if "*" not in m}))


def _config_options(prescans: Sequence[Prescan], tasks: Dict[str, "_Task"], inputs: Sequence[Path],
                    by_module: Optional[Dict[str, Dict[str, list]]] = None) -> Dict[str, list]:
    """Options from the configuration files the modules name (YAML / JSON / TOML inside the analysed folders,
    looked up next to the module and in the folders above it up to the analysed root). *by_module*, when given,
    gets each module's own: module -> options of the files it names."""
    roots = [os.path.realpath(p) for p in inputs if os.path.isdir(p)]
    out: Dict[str, list] = {}
    seen: Dict[str, Optional[Dict[str, list]]] = {}
    for pre in prescans:
        if not pre.configs or pre.relpath not in tasks:
            continue
        here = tasks[pre.relpath].abspath.parent
        for ref in pre.configs:
            if os.path.isabs(ref):
                continue
            folder = here
            for _ in range(4):
                cand = os.path.realpath(folder / ref)
                if cand in seen:
                    table = seen[cand]
                elif any(os.path.commonpath([cand, r]) == r for r in roots) and os.path.isfile(cand):
                    table = seen[cand] = read_config(cand)
                    for k, vals in (table or {}).items():
                        lst = out.setdefault(k, [])
                        for v in vals:
                            if v not in lst and len(lst) < 8:
                                lst.append(v)
                else:
                    table = False
                if table is not False:
                    if by_module is not None and table:
                        own = by_module.setdefault(pre.modname, {})
                        for k, vals in table.items():
                            lst = own.setdefault(k, [])
                            lst.extend(v for v in vals if v not in lst and len(lst) < 8)
                    break
                if not any(os.path.commonpath([os.path.realpath(folder), r]) == r for r in roots) or \
                        os.path.realpath(folder) in roots:
                    break
                folder = folder.parent
    return out


def _merge_index(prescans: Iterable[Prescan]) -> ProjectIndex:
    index = ProjectIndex()
    for pre in prescans:
        if pre.error is not None:
            continue
        index.modules.add(pre.modname)
        for q, bases in pre.classes:
            index.classes[q] = ClassInfo(q, bases)
        for dest, defaults in pre.argparse:
            index.argparse_defaults.setdefault(dest, set()).update(defaults)
        for q, module, attr, item, fixed in pre.import_helpers:
            index.import_helpers[q] = ImportHelper(q, tuple(module), tuple(attr), item, fixed)
        for name, kind, vals in pre.flags:
            index.module_flags[f"{pre.modname}.{name}"] = (kind, tuple(vals))
        for cls, attr, param, where, known, default in pre.settings:
            index.instance_settings.setdefault(f"{pre.modname}.{cls}", {})[attr] = (param, where, known, default)
    # a flag imported from a module that imports it itself (`from .attention_utils import _SUPPORTS_FLEX`, which
    # took it from utils._import_guard): the definition's value, a few hops at most
    handed = {f"{pre.modname}.{name}": src for pre in prescans if pre.error is None for name, src in pre.flag_imports}
    for q, src in handed.items():
        for _hop in range(4):
            if src in index.module_flags:
                index.module_flags[q] = index.module_flags[src]
                break
            src = handed.get(src)
            if src is None:
                break
    # a test's own settings (a test dataclass with `transformer_impl: str = "local"`) are no default of the programs
    # the project runs; a project made only of tests keeps them
    from analyse.roles import role_of

    usable = [pre for pre in prescans if pre.error is None]
    product = [pre for pre in usable if role_of(pre.relpath) != "test"]
    index.option_defaults = merge_options(pre.options for pre in (product or usable))
    return index


def _combine(project: ProjectContext, passes: Sequence[Pass], prescans: Sequence[Prescan]) -> None:
    for p in passes:
        if type(p).combine is Pass.combine:
            continue
        data = [(pre.relpath, d) for pre in prescans for name, d in pre.passes if name == p.name]
        p.combine(project, data)


# --------------------------------------------------------------------------- workers

def _worker_main(conn, worker: _Worker, tasks: Dict[str, _Task], parent_pid: int = 0, inherited=()) -> None:
    import signal

    # One owner: this process dies with the main process however that ends (kill -9 included), holds no
    # pipe end but its own (the main process's ends, inherited through the fork, would keep its own
    # connection open after the main process died: it would wait for a command forever), and never
    # writes to the run's stdout.
    from analyse.lifecycle import detach_stdout, die_with_parent, parent_alive

    die_with_parent(parent_pid or os.getppid())
    for other in inherited:
        try:
            other.close()
        except OSError:  # pragma: no cover
            pass
    detach_stdout()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C and ends the workers
    for sig in (signal.SIGTERM, signal.SIGHUP):  # the main process's handlers are no use here
        signal.signal(sig, signal.SIG_DFL)
    profile_dir = os.environ.get("NPU_ANALYSE_PROFILE_DIR")  # benchmarks: one cProfile file per worker
    profiler = None
    if profile_dir:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    store = None   # (cache, pre-scans by file, context digest) once the analysis context has come
    if worker.keep:
        gc.disable()   # the kept trees are frozen: see analyse.gcpolicy.collect_never (a worker never enables it again)
    current = ""
    code = 0
    try:
        while True:
            while not conn.poll(_LIVENESS_S):   # waiting for a command: is the main process still there?
                if not parent_alive(parent_pid or os.getppid()):
                    raise EOFError()
            cmd = conn.recv()
            if cmd[0] == "prescan":
                for rel in cmd[1]:
                    current = rel
                    conn.send(("item", worker.prescan(tasks[rel])))
            elif cmd[0] == "analyse":
                for rel in cmd[1]:
                    current = rel
                    res = worker.analyse(tasks[rel])
                    if store is not None and tasks[rel].key:  # the worker writes its own entries
                        store[0].put(tasks[rel].key, {"prescan": store[1][rel], "context": store[2], "result": res})
                        res.stored = store[0].usable
                    conn.send(("item", res))
            elif cmd[0] == "context":
                current = ""
                worker.set_context(cmd[1], cmd[2])
                if cmd[3] is not None:
                    store = (open_cache(cmd[3]), {p.relpath: p for p in cmd[2]}, cmd[4])
            else:
                break
            current = ""
            conn.send(("done", None))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        store = None   # the main process is gone: nothing is waiting for these entries
    except MemoryError:
        # Out of memory: say where, once, and leave (the main process ends the run with exit 3). Nothing
        # more is attempted here: under memory pressure it would fail again, and again.
        store = None
        code = _EXIT_OUT_OF_MEMORY
        try:
            conn.send(("oom", current))
        except BaseException:  # noqa: BLE001 - the exit code says it too
            pass
    finally:
        try:
            conn.close()
        except OSError:  # pragma: no cover
            pass
        if store is not None:
            try:
                store[0].close()   # the entries still buffered go in before the process leaves
            except MemoryError:  # pragma: no cover
                code = _EXIT_OUT_OF_MEMORY
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(os.path.join(profile_dir, f"worker-{os.getpid()}.prof"))
        os._exit(code)


def _here(step: Callable, task: _Task):
    """One file's step in this process; running out of memory names the file."""
    try:
        return step(task)
    except MemoryError:
        raise _out_of_memory(task.relpath) from None


def _cancelled() -> BaseException:
    from analyse.lifecycle import Cancelled

    return Cancelled()


def _out_of_memory(relpath: str) -> Exception:
    from analyse.lifecycle import OutOfMemory

    return OutOfMemory(relpath)


# A worker waiting for its next command checks this often that the main process is still its parent.
_LIVENESS_S = 1.0
# A worker that ran out of memory leaves with this code (and says so on its connection first).
_EXIT_OUT_OF_MEMORY = 75


class _Pool:
    """``jobs`` forked workers that pull files one at a time.

    The pre-scan takes the files from one queue, largest first; the analysis gives each worker first
    the files whose trees it kept from the pre-scan, and a worker that runs out takes the last files
    of the longest other queue (parsing them again), so no worker idles while another has a backlog.
    """

    AHEAD = 2   # commands in flight per worker: the next file is there when one is done

    def __init__(self, jobs: int, worker: _Worker, tasks: Dict[str, _Task]):
        import multiprocessing

        from analyse import lifecycle

        mp = multiprocessing.get_context("fork")
        self.worker = worker
        self.tasks = tasks
        self.procs = []
        self.owner: Dict[str, int] = {}   # which worker pre-scanned (and keeps the tree of) each file
        self.ended = False                # terminate() ran: the run is ending, nothing is redone here
        lifecycle.own(self)               # ended on every exit path of the command line (Ctrl-C, SIGTERM, ...)
        try:
            for _ in range(jobs):
                parent, child = mp.Pipe()
                # the child closes every main-process end it inherits: the earlier workers' and its own
                inherited = [conn for _p, conn in self.procs] + [parent]
                proc = mp.Process(target=_worker_main, args=(child, worker, tasks, os.getpid(), inherited),
                                  daemon=True)
                proc.start()
                child.close()
                self.procs.append((proc, parent))
        except BaseException:
            self.terminate()
            raise

    def broadcast(self, command: tuple) -> None:
        """Send *command* to every live worker and wait until each has done it."""
        if self.ended:
            raise _cancelled()
        live = []
        for _proc, conn in self.procs:
            try:
                conn.send(command)
                live.append(conn)
            except (OSError, ValueError):
                pass
        while live:
            for conn in self._wait(live):
                try:
                    kind, _item = self._recv(conn)
                except (EOFError, OSError):
                    live.remove(conn)
                    continue
                if kind == "done":
                    live.remove(conn)

    def _wait(self, conns: list) -> list:
        from multiprocessing.connection import wait

        try:
            return wait(conns)
        except (OSError, ValueError):
            if self.ended:   # terminated from another thread: the run is ending
                raise _cancelled() from None
            raise

    def _recv(self, conn) -> tuple:
        """The next message from a worker. EOF/OSError: it is gone (its work is redone here), unless the
        run is ending (then :class:`~analyse.lifecycle.Cancelled`) or it ran out of memory (then
        :class:`~analyse.lifecycle.OutOfMemory`, which ends the run)."""
        try:
            msg = conn.recv()
        except (EOFError, OSError, ValueError):
            if self.ended:
                raise _cancelled() from None
            proc = next((p for p, c in self.procs if c is conn), None)
            if proc is not None:
                proc.join(timeout=1)
                if proc.exitcode == _EXIT_OUT_OF_MEMORY:
                    raise _out_of_memory("") from None
            raise EOFError()
        if msg[0] == "oom":
            raise _out_of_memory(msg[1])
        return msg

    def run(self, queues: List[List[str]], verb: str, step: Callable, on_item: Callable, shared: bool) -> None:
        """Work through *queues* (one shared queue, or one per worker with stealing); results go to
        *on_item*; what a dead worker had in hand is done here with *step*."""
        from collections import deque

        qs = [deque(q) for q in queues]
        if self.ended:
            raise _cancelled()
        index = {conn: i for i, (_proc, conn) in enumerate(self.procs)}

        def next_for(i: int) -> Optional[str]:
            if shared:
                return qs[0].popleft() if qs[0] else None
            if qs[i]:
                return qs[i].popleft()
            other = max(qs, key=len)
            return other.pop() if other else None

        inflight: Dict[object, List[str]] = {}    # files sent and not yet answered
        commands: Dict[object, int] = {}          # commands sent and not yet done
        redo: List[str] = []

        def feed(conn) -> bool:
            rel = next_for(index[conn])
            if rel is None:
                return False
            try:
                conn.send((verb, [rel]))
            except (OSError, ValueError):
                redo.append(rel)
                return False
            inflight[conn].append(rel)
            commands[conn] += 1
            return True

        live = []
        for _proc, conn in self.procs:
            inflight[conn] = []
            commands[conn] = 0
            for _ in range(self.AHEAD):
                if not feed(conn):
                    break
            if commands[conn]:
                live.append(conn)
        while live:
            for conn in self._wait(live):
                try:
                    kind, item = self._recv(conn)
                except (EOFError, OSError):
                    redo.extend(inflight.pop(conn))
                    live.remove(conn)
                    continue
                if kind == "done":
                    commands[conn] -= 1
                    feed(conn)
                    if not commands[conn]:
                        live.remove(conn)
                    continue
                if item.relpath in inflight[conn]:
                    inflight[conn].remove(item.relpath)
                self.owner[item.relpath] = index[conn]
                on_item(item)
        if self.ended:
            raise _cancelled()
        for q in qs:  # every worker gone: the rest is done here
            redo.extend(q)
        for rel in redo:
            on_item(_here(step, self.tasks[rel]))

    def close(self) -> None:
        """The normal end: every worker is told to leave (writing its last cache entries) and reaped."""
        from analyse import lifecycle

        for proc, conn in self.procs:
            try:
                conn.send(("exit",))
            except (OSError, ValueError):
                pass
            conn.close()
        for proc, _conn in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():  # pragma: no cover
                proc.kill()
                proc.join()
        lifecycle.disown(self)

    def terminate(self) -> None:
        """The run is ending early (an exception, Ctrl-C, a signal, out of memory): the workers are killed
        and reaped now; whatever they were doing is of no use. Safe to call from another thread, and twice."""
        from analyse import lifecycle

        self.ended = True
        lifecycle.disown(self)
        for proc, _conn in self.procs:
            try:
                if proc.is_alive():
                    proc.kill()
            except (OSError, ValueError, AttributeError):  # pragma: no cover - already reaped
                pass
        for proc, conn in self.procs:
            try:
                proc.join(timeout=2)
            except (OSError, ValueError, AssertionError, AttributeError):  # pragma: no cover
                pass
            try:
                conn.close()
            except OSError:  # pragma: no cover
                pass


def _prefetch(module: str) -> None:
    """Import *module* in a background thread of the main process while the workers run (the main
    process mostly waits for their results then); the cross-file steps after them need it. Only after
    the workers have forked: a thread must not be running when a process forks.

    On Linux the thread runs at the lowest priority (nice is per thread there): with as many workers as
    cores it would otherwise take CPU from them (networkx's import is a third of a second); it runs in
    their idle moments instead, and at full speed once they are done."""
    import sys
    import threading

    if module in sys.modules:
        return
    threading.Thread(target=_import_in_background, args=(module,), name=f"npu-analyse-import-{module}",
                     daemon=True).start()


def _import_in_background(module: str) -> None:
    import importlib
    import sys
    import threading

    if sys.platform.startswith("linux"):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):  # pragma: no cover - no per-thread priority here
            pass
    importlib.import_module(module)


def _owned_queues(rels: List[str], tasks: Dict[str, _Task], n: int, owner: Dict[str, int]) -> List[List[str]]:
    """Each worker's queue: the files whose trees it holds, largest first; files no worker holds go to the
    least loaded queue (by bytes)."""
    loads = [0] * n
    out: List[List[str]] = [[] for _ in range(n)]
    rest = []
    for rel in sorted(rels, key=lambda r: (-tasks[r].size, r)):
        i = owner.get(rel)
        if i is None or i >= n:
            rest.append(rel)
            continue
        out[i].append(rel)
        loads[i] += tasks[rel].size
    for rel in rest:
        i = loads.index(min(loads))
        out[i].append(rel)
        loads[i] += tasks[rel].size
    return out


# --------------------------------------------------------------------------- the run

@collect_less(freeze=True)
def run(inputs: Sequence[Path], kb, *, mode: str = "script", passes: Optional[Sequence[Pass]] = None,
        probe=None, configure: Optional[Callable[[ProjectContext], None]] = None,
        settings: Optional[Settings] = None, extra_suffixes: Tuple[str, ...] = (),
        summaries: Optional[bool] = None, admit=None,
        programs: Optional[Callable[[Sequence[Prescan]], bool]] = None,
        graph_read: Optional[Callable[[Sequence[Prescan], bool], bool]] = None) -> RunResult:
    """Analyse *inputs*. ``summaries``: compute call-graph summaries (default: yes); *admit(abspath, relpath)*
    is asked about every discovered file (configured excludes, see :func:`analyse.files.discover`);
    *programs(pre-scans)*: whether the project may have an entry point (script mode: False leaves the guards
    out of the reach facts, which only a walk from an entry point reads; default: it may); *graph_read(pre-scans,
    programs)*: whether the cross-file steps will read the call-graph summaries (script mode: only for entry points
    and call chains; False makes none, :attr:`RunResult.summaries_made`; default: they are read)."""
    t0 = time.perf_counter()
    settings = settings or Settings()
    timings = {"hash_s": 0.0, "prescan_s": 0.0, "analyse_s": 0.0, "finish_s": 0.0}
    passes = list(passes) if passes is not None else discover_passes()
    suffixes = (".py", NOTEBOOK_SUFFIX) + tuple(dict.fromkeys(other_suffixes(passes) + tuple(extra_suffixes)))
    names = tuple(dict.fromkeys(g for p in passes for g in getattr(p, "file_names", ())))
    found_errors: List[AnalysisError] = []   # symlinks leaving the tree, loops, FIFOs, unreadable folders
    files = discover(inputs, suffixes, found_errors, admit=admit, names=names, package_links=mode == "thirdparty")
    py = [f for f in files if f[0].suffix in (".py", NOTEBOOK_SUFFIX)]   # notebooks: their code cells
    others = [(abspath, rel) for abspath, _root, rel, _m in files if abspath.suffix not in (".py", NOTEBOOK_SUFFIX)]

    project = ProjectContext(kb=kb, index=ProjectIndex(), mode=mode, probe=probe, files={},
                             other_files=[rel for _p, rel in others],
                             root_names=tuple(p.name for p in inputs),
                             modules={rel: mod for _a, _r, rel, mod in py})
    if configure is not None:
        configure(project)
    want_summaries = True if summaries is None else summaries

    # ---- 1. hash (and look up)
    cache = open_cache(settings.cache_dir) if settings.cache_dir is not None else None
    rkey = run_key(kb, mode, [p.name for p in passes], tuple(settings.options) + (want_summaries,),
                   memo=cache) if cache else ""
    tasks: Dict[str, _Task] = {}
    order: List[str] = []
    texts: Dict[str, bytes] = {}
    entries: Dict[str, dict] = {}
    th = time.perf_counter()
    for abspath, _root, rel, modname in py:
        task = _Task(abspath, rel, modname)
        try:
            task.size = abspath.stat().st_size
            if cache is not None and task.size <= file_limit(abspath):
                data = read_regular_file(abspath, file_limit(abspath))
                task.key = digest(rkey, rel, modname, data)
                if mode == "script":
                    texts[rel] = data
                hit = cache.get(task.key)
                if hit is not None:
                    entries[rel] = hit
        except (OSError, FileTooLarge, NotRegularFile):
            pass  # reported by the pre-scan
        tasks[rel] = task
        order.append(rel)
    timings["hash_s"] = time.perf_counter() - th

    progress = Progress(settings.progress)
    jobs = settings.jobs if settings.jobs is not None else default_jobs()
    todo_pre = [rel for rel in order if rel not in entries]
    work_bytes = sum(tasks[r].size for r in todo_pre)
    parallel = jobs > 1 and hasattr(os, "fork") and len(todo_pre) > 1 and work_bytes >= PARALLEL_MIN_BYTES
    n_workers = min(jobs, len(todo_pre)) if parallel else 1
    keep = keep_trees(work_bytes, len(todo_pre), n_workers)
    worker = _Worker(kb, project, passes, want_summaries, keep)

    def start_pool(n: int) -> _Pool:
        if cache is not None:
            cache.prepare()   # made, and this process's connection closed, before the workers fork
        started = _Pool(n, worker, tasks)
        if want_summaries:
            _prefetch("networkx")
        return started

    pool = start_pool(n_workers) if parallel else None
    # The trees analysed in this process are not kept for the cross-file steps (with --jobs 1 they were): entry
    # points and reach read the summaries' facts, and the few files they need a tree of (a setup.py, a file
    # without a summary) are parsed again on use (LazySource). Keeping them all held 7 KB per four-line file
    # until the report was written.
    prescans: Dict[str, Prescan] = {rel: e["prescan"] for rel, e in entries.items()}
    results: Dict[str, ModuleResult] = {}
    sharer = _Sharer()   # one copy of each text of the results held here (dropped once they are collected)
    stored: List[str] = []   # files whose cache entries the workers wrote
    owner: Dict[str, int] = {}
    gc_off = contextlib.ExitStack()
    if pool is None and keep:   # the per-file work in this process, trees kept: see analyse.gcpolicy.collect_never
        gc_off.enter_context(collect_never())
    try:
        # ---- 2. pre-scan
        tp = time.perf_counter()
        if todo_pre:
            progress.start("indexing", len(todo_pre))

            def got_pre(pre: Prescan) -> None:
                prescans[pre.relpath] = pre
                progress.advance()

            if pool is not None:
                pool.run([sorted(todo_pre, key=lambda r: (-tasks[r].size, r))], "prescan", worker.prescan, got_pre,
                         shared=True)
                owner = dict(pool.owner) if keep else {}
            else:
                for rel in todo_pre:
                    got_pre(_here(worker.prescan, tasks[rel]))
        timings["prescan_s"] = time.perf_counter() - tp

        # ---- 3. combine
        ordered_pre = [prescans[rel] for rel in order]
        index = _merge_index(ordered_pre)
        index.programs = True if programs is None else bool(programs(ordered_pre))
        index.summaries = want_summaries and (graph_read is None or bool(graph_read(ordered_pre, index.programs)))
        config_by_module: Dict[str, Dict[str, list]] = {}
        config_options = _config_options(ordered_pre, tasks, inputs, config_by_module)
        if config_options:
            index.option_defaults = merge_options([tuple(sorted(index.option_defaults.items())),
                                                   tuple(sorted((k, tuple(v)) for k, v in config_options.items()))])
            index.config_keys = set(config_options)
            index.config_by_module = config_by_module
        context = digest(rkey, repr([(p.relpath, p.modname, p.digest) for p in ordered_pre]),
                         repr(project.other_files), repr(project.root_names), repr(sorted(config_options.items())),
                         repr(sorted((m, sorted(t.items())) for m, t in config_by_module.items())),
                         repr(index.programs), repr(index.summaries))
        worker.set_context(index, ordered_pre)
        todo = []
        for rel in order:
            if prescans[rel].error is not None:
                continue
            e = entries.get(rel)
            if e is not None and e.get("context") == context and isinstance(e.get("result"), ModuleResult):
                results[rel] = sharer.result(e["result"])
            else:
                todo.append(rel)
        if pool is None and jobs > 1 and hasattr(os, "fork") and len(todo) > 1 \
                and sum(tasks[r].size for r in todo) >= PARALLEL_MIN_BYTES:
            # the pre-scans came from the cache but the analysis runs again (a project-wide fact changed: a
            # new top-level name, a class's bases): the long step gets the workers too. They parse what they
            # analyse and keep nothing, so the collector stays on in them.
            gc_off.close()
            worker.keep = False
            n_workers = min(jobs, len(todo))
            pool = start_pool(n_workers)

        # ---- 4. analyse
        ta = time.perf_counter()
        if todo:
            progress.start("analysing", len(todo))

            def got_result(res: ModuleResult) -> None:
                results[res.relpath] = sharer.result(res)
                progress.advance()
                if res.stored:
                    stored.append(res.relpath)
                elif cache is not None and tasks[res.relpath].key:
                    cache.put(tasks[res.relpath].key, {"prescan": prescans[res.relpath], "context": context,
                                                       "result": res})

            if pool is not None and len(todo) > 1:
                pool.broadcast(("context", index, ordered_pre, cache.directory if cache is not None else None,
                                context))
                pool.run(_owned_queues(todo, tasks, n_workers, owner), "analyse", worker.analyse, got_result,
                         shared=False)
            else:
                for rel in todo:
                    got_result(_here(worker.analyse, tasks[rel]))
        timings["analyse_s"] = time.perf_counter() - ta
    except BaseException:
        if pool is not None:
            pool.terminate()   # an error, Ctrl-C, out of memory: the workers' work is of no use now
            pool = None
        raise
    finally:
        gc_off.close()
        progress.close()
        if pool is not None:
            pool.close()
    if cache is not None:
        for rel in order:  # unparsable files: remember the error
            pre = prescans[rel]
            if pre.error is not None and rel not in entries and tasks[rel].key:
                cache.put(tasks[rel].key, {"prescan": pre, "context": None, "result": None})

    # ---- 5. collect and finish
    tf = time.perf_counter()
    findings: List[Finding] = []
    errors: List[AnalysisError] = list(found_errors)
    facts: Dict[str, List[Tuple[str, object]]] = {}
    summaries_out = []
    failed: Dict[str, str] = {}
    lines = 0
    for rel in order:
        pre = prescans[rel]
        if pre.error is not None:
            errors.append(pre.error)
            failed[pre.modname] = rel
            continue
        lines += pre.lines
        errors.extend(pre.errors)
        res = results[rel]
        findings.extend(res.findings)
        errors.extend(res.errors)
        for name, value in res.facts.items():
            facts.setdefault(name, []).append((rel, value))
        if res.summary is not None:
            summaries_out.append(res.summary)
        elif index.summaries:
            failed[pre.modname] = rel
            if res.summary_error is not None and mode != "script":
                errors.append(res.summary_error)
    project.facts = facts
    del sharer, results
    sources: Dict[str, SourceFile] = {}
    if mode == "script":
        for rel in order:
            if prescans[rel].error is None:
                t = tasks[rel]
                sources[rel] = _light_source(t, texts.get(rel))
        project.files = sources
    for abspath, rel in others:
        for p in passes:
            if abspath.suffix in p.file_suffixes or any(abspath.name.endswith(s) for s in p.file_suffixes) \
                    or any(fnmatch.fnmatchcase(abspath.name, g) for g in getattr(p, "file_names", ())):
                try:
                    fs, errs = p.check_file(abspath, rel, project)
                    findings.extend(fs)
                    errors.extend(errs)
                except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
                    raise
                except Exception as exc:
                    errors.append(_internal(rel, f"pass {p.name}", exc))
    for p in passes:
        try:
            findings.extend(p.finish(project))
        except MemoryError:   # not one file's problem: the run cannot go on (exit 3)
            raise
        except Exception as exc:
            errors.append(_internal("<project>", f"pass {p.name} (project level)", exc))
    project.facts = {}   # read by the passes' finish only: every file's facts, not held while the report is built
    findings = assign_ids(dedupe(findings))
    timings["finish_s"] = time.perf_counter() - tf
    if cache is not None:
        if cache.writes or stored:
            cache.evict()
        cache.flush()   # the last-use times of the entries read
    n_ok = len([r for r in order if prescans[r].error is None])
    return RunResult(findings=findings, errors=errors, files_analysed=n_ok + len(others),
                     lines_analysed=lines, duration_s=time.perf_counter() - t0, project=project,
                     sources=sources, summaries=summaries_out, failed=failed, others=others, timings=timings,
                     cache_hits=len(entries), summaries_made=index.summaries)


class LazySource(SourceFile):
    """A SourceFile in the main process: text and lines at once, the tree parsed on first use
    (the modes' cross-file steps that still walk trees: entry points and reach)."""

    def __init__(self, *args, **kwargs):
        self._tree = None
        self._tried = False
        super().__init__(*args, **kwargs)

    @property
    def tree(self):
        if self._tree is None and not self._tried:
            self._tried = True
            sf, _err = parse_source(self.text, self.path, self.relpath, self.modname)
            self._tree = sf.tree if sf is not None else None
        return self._tree

    @tree.setter
    def tree(self, value) -> None:
        self._tree = value
        self._tried = value is not None


def _light_source(task: _Task, data: Optional[bytes], tree=None) -> SourceFile:
    text = ""
    try:
        text = source_text(task.abspath, data if data is not None else task.abspath.read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError, ValueError, FileTooLarge):
        pass
    return LazySource(path=task.abspath, relpath=task.relpath, modname=task.modname, text=text,
                      lines=text.splitlines(), tree=tree)


def dedupe(findings: Iterable[Finding]) -> List[Finding]:
    """Drop exact repeats (same code, place and api), then fold the findings of one place and API into one
    (:func:`analyse.findings.merge_same_place`)."""
    seen = set()
    out = []
    for f in findings:
        key = (f.code, f.path, f.line, f.column, f.api)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return merge_same_place(out)
