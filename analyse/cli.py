"""Command line: ``npu-analyse script | thirdparty | probe | explain | rules``.

Exit codes (``script`` and ``thirdparty``; ``probe`` uses 2, 130, 143 and 129 the same way):

* 0 -- the analysis ran and nothing at or above ``--fail-on`` remains (always with ``--exit-zero``);
* 1 -- a finding at or above ``--fail-on`` remains after suppressions and the baseline;
* 2 -- usage or configuration error (one line on stderr);
* 3 -- the analysis could not run: no input file could be analysed, an internal failure, out of
  memory, or the reports could not be written;
* 130 -- interrupted (Ctrl-C, SIGINT); 143 -- SIGTERM; 129 -- SIGHUP. No report is left half-written and
  no worker process outlives the run (:mod:`analyse.lifecycle`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import click

from analyse import __version__
from analyse.atomic import WriteRefused, write_atomic
from analyse.gcpolicy import collect_less
from analyse.termsafe import safe

FORMAT_NAMES = ("json", "html", "sarif", "csv", "junit", "gitlab", "github", "text")
FAIL_ON = ("blocker", "manual", "auto", "advice", "info", "never")
SEVERITY_CHOICES = FAIL_ON[:-1]
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
MAX_API_CHARS = 512   # explain's argument


class UsageFail(click.UsageError):
    """A usage or configuration error printed as one line (exit 2)."""

    def show(self, file=None):  # noqa: D401 - click API
        click.echo(f"npu-analyse: error: {safe(self.format_message())}", err=True)


class RunFailed(click.ClickException):
    """The analysis could not run (exit 3), printed as one line."""

    exit_code = EXIT_FAILED

    def show(self, file=None):  # noqa: D401 - click API
        click.echo(f"npu-analyse: error: {safe(self.format_message())}", err=True)


def use_color(flag: Optional[bool], stream=None) -> bool:
    """--color/--no-color win; then NO_COLOR (off) and FORCE_COLOR (on); else colour only on a TTY."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR", ""):
        return False
    force = os.environ.get("FORCE_COLOR", "")
    if force and force not in ("0", "false", "no"):
        return True
    stream = stream if stream is not None else sys.stdout
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _torch_version(torch_version: Optional[str], inputs: Optional[Sequence[Path]] = None) -> tuple:
    """(version, why, source): an explicit --torch-version / configuration value (source ``given``), or with ``auto``
    (the default) the version the project pins (analyse/torchpin.py), mapped to one the knowledge base has (source
    ``pin``), or the newest when nothing is pinned (source ``default``)."""
    from analyse.knowledge import DEFAULT_TORCH_VERSION, TORCH_VERSIONS

    if torch_version and torch_version != "auto":
        return torch_version, f"--torch-version {torch_version} (given)", "given"
    if not inputs:
        return DEFAULT_TORCH_VERSION, f"the newest in the knowledge base ({DEFAULT_TORCH_VERSION})", "default"
    from analyse.torchpin import find_pins, choose

    pins = find_pins(list(inputs))
    version, why = choose(pins, TORCH_VERSIONS, DEFAULT_TORCH_VERSION)
    return version, f"auto: {why}", ("pin" if pins else "default")


def _load_kb(torch_version: Optional[str], inputs: Optional[Sequence[Path]] = None):
    from analyse.knowledge import TORCH_VERSIONS, UnknownTorchVersion, load_knowledge

    version = _torch_version(torch_version, inputs)[0]
    try:
        return load_knowledge(version)
    except UnknownTorchVersion:
        shown = repr(version) if len(version) <= 64 else f"{version[:40]!r}... ({len(version)} characters)"
        raise UsageFail(f"unknown --torch-version {shown}; the knowledge base has: {', '.join(TORCH_VERSIONS)}")
    except (OSError, ValueError) as exc:  # damaged installation: the analysis cannot run
        raise RunFailed(f"cannot load the knowledge base for torch {version}: {exc}")


def _check_paths(paths: Sequence[str]) -> List[Path]:
    out = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise UsageFail(f"path does not exist: {p}")
        out.append(path)
    return out


def _split(values: Iterable[str]) -> List[str]:
    out: List[str] = []
    for v in values or ():
        out.extend(part.strip() for part in str(v).split(",") if part.strip())
    return out


def _formats(values: Iterable[str]) -> List[str]:
    fmts: List[str] = []
    for part in _split(values):
        part = part.lower()
        if part == "all":
            fmts.extend(["json", "html"])
        elif part in FORMAT_NAMES:
            fmts.append(part)
        else:
            raise UsageFail(f"unknown --format {part!r}; choose from {', '.join(FORMAT_NAMES)} (comma-separated)")
    return list(dict.fromkeys(fmts)) or ["json", "html"]


def _check_output(output: str, fmts: List[str]) -> None:
    """-o is checked before the analysis runs."""
    from analyse.render import check_output_dir

    if output == "-":
        if len(fmts) != 1:
            raise UsageFail(f"-o - writes one format to stdout; --format names {len(fmts)} ({','.join(fmts)})")
        return
    problem = check_output_dir(Path(output))
    if problem:
        raise UsageFail(problem)


def _check_file_target(path: str, what: str) -> None:
    from analyse.atomic import refusal

    p = Path(path)
    why = refusal(p)
    if why:
        raise UsageFail(f"{what} {path} {why}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageFail(f"{what} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageFail(f"{what} {path} is not writable")


def _pairs(values: Iterable[str], sep: str, flag: str) -> List[Tuple[str, str]]:
    out = []
    for v in values or ():
        glob, found, rest = str(v).rpartition(sep)
        if not found or not glob.strip() or not rest.strip():
            raise UsageFail(f"{flag} expects GLOB{sep}VALUE, not {v!r}")
        out.append((glob.strip(), rest.strip()))
    return out


def _effective_config(paths: List[Path], opts: dict, mode: str):
    """The effective configuration: the file's values, then the command line's."""
    from analyse import config as C

    try:
        cfg = C.load(paths, explicit=Path(opts["config"]) if opts.get("config") else None,
                      isolated=bool(opts.get("isolated")))
        if not opts.get("quiet"):
            for warning in cfg.warnings:
                click.echo(f"npu-analyse: warning: {safe(warning)}", err=True)
        cli_values: Dict[str, object] = {}
        if opts.get("torch_version"):
            cli_values["torch-version"] = ("--torch-version", opts["torch_version"])
        for key, flag in (("select", "--select"), ("extend-select", "--extend-select"), ("ignore", "--ignore"),
                          ("exclude", "--exclude")):
            vals = _split(opts.get(key.replace("-", "_")) or ())
            if vals:
                if key == "ignore" or key == "extend-select" or key == "exclude":
                    # like ruff's --extend-*: the command line adds to the file's list
                    vals = list(dict.fromkeys(list(cfg[key]) + vals))
                cli_values[key] = (flag, vals)
        pfi = _pairs(opts.get("per_file_ignores") or (), ":", "--per-file-ignores")
        if pfi:
            merged = dict(cfg["per-file-ignores"])
            for glob, codes in pfi:
                merged[glob] = list(dict.fromkeys(merged.get(glob, []) + _split([codes])))
            cli_values["per-file-ignores"] = ("--per-file-ignores", merged)
        if opts.get("fail_on"):
            cli_values["fail-on"] = ("--fail-on", opts["fail_on"].lower())
        if opts.get("fail_on_scope"):
            cli_values["fail-on-scope"] = ("--fail-on-scope", opts["fail_on_scope"].lower())
        if opts.get("min_severity"):
            cli_values["min-severity"] = ("--min-severity", opts["min_severity"].lower())
        if opts.get("entries"):
            cli_values["entry"] = ("--entry", list(opts["entries"]))
        roles = _pairs(opts.get("roles") or (), "=", "--role")
        if roles:
            cli_values["roles"] = ("--role", {**cfg["roles"], **dict(roles)})
        if opts.get("baseline"):
            cli_values["baseline"] = ("--baseline", opts["baseline"])
        for key, (flag, value) in cli_values.items():
            where = f"command line ({flag})"
            value = C._check(key, value, where)
            cfg.set(key, value, where)
    except C.ConfigError as exc:
        raise UsageFail(str(exc))
    return cfg


def _from_file(cfg, key: str) -> bool:
    return cfg.sources[key] != "default" and not cfg.sources[key].startswith("command line")


def _config_path(cfg, key: str, value: str) -> Path:
    """A path from the configuration file is relative to the file's folder; from the command line, to the cwd."""
    p = Path(value)
    if not p.is_absolute() and _from_file(cfg, key) and cfg.base is not None:
        p = cfg.base / p
    return p


def _policy(cfg, paths: List[Path], opts: dict):
    from analyse import config as C
    from analyse.baseline import BaselineError, read_baseline
    from analyse.policy import Locator, Policy

    enabled: Optional[frozenset] = None
    pfi: tuple = ()
    if [str(s).strip().upper() for s in cfg["select"]] != ["ALL"] or cfg["extend-select"] or cfg["ignore"] \
            or cfg["per-file-ignores"]:  # (the default selects every rule without importing the passes)
        try:
            everything = C.resolve_selectors(["ALL"], "ALL")
            enabled = (C.resolve_selectors(cfg["select"], "select")
                       | C.resolve_selectors(cfg["extend-select"], "extend-select")) \
                - C.resolve_selectors(cfg["ignore"], "ignore")
            pfi = tuple((glob, C.resolve_selectors(codes, f"per-file-ignores ({glob!r})"))
                        for glob, codes in cfg["per-file-ignores"].items())
        except C.ConfigError as exc:
            raise UsageFail(str(exc))
        if enabled == everything:
            enabled = None
    baseline = None
    if cfg["baseline"]:
        path = _config_path(cfg, "baseline", cfg["baseline"])
        try:
            baseline = read_baseline(path)
        except BaselineError as exc:
            raise UsageFail(str(exc))
    return Policy(
        locator=Locator(paths, cfg.base),
        enabled=None if enabled is None else frozenset(enabled),
        per_file_ignores=pfi,
        baseline=baseline,
        suppressions=True,
        show_suppressed=bool(opts.get("show_suppressed")),
        exclude=tuple(cfg["exclude"]),
        warn_unused=bool(opts.get("warn_unused_ignores")),
    )


def _gated(report: dict, fail_on: str, scope: str = "counted") -> List[dict]:
    from analyse.render.common import gated

    return [f for f in report.get("findings") or [] if gated(f, fail_on, scope)]


#: The report folder when -o is not given, in the current folder unless that is inside an analysed folder.
DEFAULT_OUTPUT = "npu-analyse-report"


def default_output(inputs: Sequence[Path], cwd: Optional[Path] = None) -> str:
    """Where the reports go without ``-o``: ``./npu-analyse-report``, unless the current folder is inside an
    analysed folder (``npu-analyse script .``); then a folder of the user's own state,
    ``$XDG_STATE_HOME/npu-analyse/reports/NAME-HASH`` (``~/.local/state`` by default), so that a run never
    writes into the repository it analyses unless asked (``-o``)."""
    import hashlib

    cwd = (cwd or Path.cwd()).resolve()
    for inp in inputs:
        root = Path(inp).resolve()
        if not root.is_dir():
            root = root.parent
        if cwd == root or root in cwd.parents:
            state = os.environ.get("XDG_STATE_HOME", "").strip()
            base = Path(state) if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
            tag = hashlib.blake2b(str(root).encode("utf-8", "surrogateescape"), digest_size=4).hexdigest()
            return str(base / "npu-analyse" / "reports" / f"{root.name or 'root'}-{tag}")
    return f"./{DEFAULT_OUTPUT}"


def _run(mode: str, paths: Sequence[str], opts: dict) -> None:
    fmts = _formats(opts["formats"])
    if opts.get("output") is None:
        opts["output"] = default_output([Path(p) for p in paths])
    output = opts["output"]
    _check_output(output, fmts)
    if opts.get("write_baseline"):
        _check_file_target(opts["write_baseline"], "--write-baseline")
    inputs = _check_paths(paths)
    if mode == "script":
        for extra in list(opts.get("with_thirdparty") or ()) + ([opts["probe_results"]] if opts.get("probe_results") else []):
            if not Path(extra).is_file():
                raise UsageFail(f"file does not exist: {extra}")
    cfg = _effective_config(inputs, opts, mode)
    if opts.get("show_config"):
        from analyse.config import describe

        click.echo(safe(describe(cfg), keep_newlines=True))
        return
    policy = _policy(cfg, inputs, opts)
    entries = [str(_config_path(cfg, "entry", e)) if _from_file(cfg, "entry") else e for e in cfg["entry"]]
    roles = dict(cfg["roles"]) or None
    settings = _run_settings(bool(opts.get("quiet")))
    started = time.perf_counter()
    with collect_less():   # from the knowledge base to the written report: few cycles, many live objects
        record_cache, record_key, record = _cached_report(mode, inputs, paths, cfg, opts, policy, settings)
        if record is not None:
            report, rules = record["report"], record["rules"]
            # the analysis time stays the real one (analysis_s); duration_s is this run's (hashing and loading)
            report["summary"].setdefault("analysis_s", report["summary"].get("duration_s", 0))
            report["summary"]["duration_s"] = round(time.perf_counter() - started, 3)
            report["summary"]["from_cache"] = True   # the whole report was reused (absent when analysed)
        else:
            report = _analyse(mode, inputs, paths, cfg, opts, policy, entries, roles, settings)
            # the whole analysis, report building included (the modes' own figure stops before it)
            report["summary"]["duration_s"] = round(time.perf_counter() - started, 3)
            report["summary"]["analysis_s"] = report["summary"]["duration_s"]
            from analyse.passes import all_rules

            rules = [r.to_dict() for r in all_rules()]
            if record_cache is not None:
                record_cache.put(record_key, {"report": report, "rules": rules})
        if record_cache is not None:
            record_cache.flush()
        if mode == "script" and opts.get("with_migration"):
            report = dict(report)
            report["migration"] = _migration_section(report, inputs, policy, cfg)
        _finish(report, rules, cfg, opts, policy, fmts, output)


def _cached_report(mode: str, inputs: List[Path], paths: Sequence[str], cfg, opts: dict, policy, settings):
    """(cache, key, entry or None) for the whole report of this run.

    The report is reused when the tree is byte-for-byte unchanged (every file under the inputs), and so
    are the tool, the effective configuration and the option files; the run then only hashes and loads.
    Runs that need the policy's own bookkeeping (``--write-baseline``, ``--warn-unused-ignores``) analyse.
    """
    if settings.cache_dir is None or opts.get("write_baseline") or opts.get("warn_unused_ignores"):
        return None, None, None
    from analyse.cache import Cache, file_digest, report_key, tree_state

    extra_files = list(opts.get("with_thirdparty") or ()) + ([opts["probe_results"]] if opts.get("probe_results") else [])
    if cfg["baseline"]:
        extra_files.append(str(_config_path(cfg, "baseline", cfg["baseline"])))
    from analyse.shapes import report_problem

    # an entry is used only when it fits the report schema field by field (and the renderers' open fields)
    cache = Cache(settings.cache_dir, check=lambda e: report_problem(e) is None, plain=True)
    state = tree_state(inputs, admit=_report_admit(opts.get("output"), policy), package_links=mode == "thirdparty")
    key = report_key(state, mode, [os.path.realpath(p) for p in inputs], list(paths), repr(sorted(cfg.values.items())),
                     str(cfg.base), bool(opts.get("show_suppressed")), [(f, file_digest(f)) for f in extra_files],
                     memo=cache)
    entry = cache.get(key)
    cache.close()   # no connection stays open while the analysis forks its workers (the put reopens one)
    return cache, key, entry


def _report_admit(output, policy):
    """The whole-report hash's file filter: the configured excludes, and the reports this run writes when
    ``-o`` is a folder of the analysed tree itself (``-o .``; an ``-o`` folder below it holds nothing else and
    discovery skips it: :func:`analyse.files.is_report_folder`)."""
    from analyse.files import is_report_file

    out = os.path.realpath(output) if output and output != "-" else None

    def admit(abspath, rel) -> bool:
        if out is not None and is_report_file(abspath.name) and os.path.realpath(abspath.parent) == out:
            return False
        return not policy.excluded(rel, abspath)

    return admit


def _analyse(mode: str, inputs: List[Path], paths: Sequence[str], cfg, opts: dict, policy, entries, roles,
             settings) -> dict:
    kb = _load_kb(cfg["torch-version"], inputs)
    from analyse import modes

    try:
        if mode == "script":
            report = modes.run_script(inputs, kb, with_thirdparty=list(opts.get("with_thirdparty") or ()),
                                      probe_results=opts.get("probe_results"), input_names=list(paths),
                                      entries=entries, roles=roles, policy=policy, settings=settings)
        else:
            report = modes.run_thirdparty(inputs, kb, input_names=list(paths), roles=roles, policy=policy,
                                          settings=settings)
    except modes.BadOption as exc:  # unreadable --with-thirdparty / --probe-results file, an --entry, a role
        raise UsageFail(str(exc))
    except (KeyboardInterrupt, click.exceptions.Exit, click.ClickException):
        raise
    except MemoryError as exc:   # lifecycle.OutOfMemory (a worker, naming its file) or this process's own
        raise RunFailed(_out_of_memory(getattr(exc, "where", "")))
    except Exception as exc:  # noqa: BLE001 - a crash of the tool is exit 3 with one line
        from analyse.lifecycle import OutOfMemory

        if isinstance(exc, OutOfMemory):
            raise RunFailed(_out_of_memory(exc.where))
        if os.environ.get("NPU_ANALYSE_DEBUG"):
            raise
        raise RunFailed(f"analysis failed: {type(exc).__name__}: {exc} (set NPU_ANALYSE_DEBUG=1 for a traceback)")
    _version, why, source = _torch_version(cfg["torch-version"], inputs)
    report.setdefault("target", {}).update(torch_version_choice=why, torch_version_source=source)
    return report


def _out_of_memory(where: str) -> str:
    return (f"out of memory while analysing {safe(where)}" if where else "out of memory") + \
        " (try fewer --jobs, or a machine with more memory)"


def _finish(report: dict, rules: List[dict], cfg, opts: dict, policy, fmts, output) -> None:
    """Write the report in every format, print the summary and exit with the gate's code."""
    from analyse.render import RenderOptions, render_format, render_terminal, write_reports

    fail_on = cfg["fail-on"]
    scope = cfg["fail-on-scope"]
    options = RenderOptions(rules=rules, fail_on=fail_on, fail_on_scope=scope)
    full = report   # the gate sees every finding; --min-severity only shortens what is listed
    from analyse.report import at_least

    report = at_least(report, cfg["min-severity"])
    written: Dict[str, Path] = {}
    try:
        if opts.get("write_baseline"):
            from analyse.baseline import render_baseline

            write_atomic(Path(opts["write_baseline"]), render_baseline(policy.before_baseline).encode("utf-8"))
        if output == "-":
            text = render_format(report, fmts[0], options=options)
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            written = write_reports(report, options.rules, Path(output), fmts, options=options)
    except OSError as exc:
        raise RunFailed(f"cannot write the report: {exc.strerror or exc}"
                        + (f": {exc.filename}" if getattr(exc, "filename", None) else ""))

    to_stderr = output == "-"
    if not opts.get("quiet"):
        stream = sys.stderr if to_stderr else sys.stdout
        color = use_color(opts.get("color"), stream)
        from analyse.render.terminal import terminal_width

        click.echo(render_terminal(report, written, color=color, width=terminal_width(stream),
                                   verbose=bool(opts.get("verbose"))), err=to_stderr, color=color, nl=False)
        if opts.get("write_baseline"):
            click.echo(f"Baseline written: {safe(opts['write_baseline'])} "
                       f"({len(policy.before_baseline)} finding(s))", err=to_stderr)
    if opts.get("warn_unused_ignores"):
        for u in policy.unused:
            codes = f" ({', '.join(u['codes'])} unused)" if u["codes"] else ""
            from analyse.render.common import source_path

            click.echo(f"{safe(source_path(report, u['path']))}:{u['line']}: warning: unused suppression "
                       f"{safe(u['comment'])}{codes}", err=True)

    summary = report.get("summary") or {}
    if not summary.get("files_analysed") and not report.get("errors") and not opts.get("quiet"):
        click.echo("npu-analyse: warning: no Python files found under the given path(s)", err=True)
    if not summary.get("files_analysed") and report.get("errors"):
        click.echo("npu-analyse: error: no input file could be analysed (see the report's errors)", err=True)
        raise click.exceptions.Exit(EXIT_FAILED)
    if opts.get("exit_zero") or opts.get("write_baseline"):
        return
    gated = _gated(full, fail_on, scope)
    if gated:
        if not opts.get("quiet"):
            what = "counted finding(s)" if scope == "counted" else "listed finding(s)"
            flags = f"--fail-on {fail_on}" + (f", --fail-on-scope {scope}" if scope != "counted" else "")
            click.echo(f"npu-analyse: {len(gated)} {what} at or above {fail_on!r} ({flags})", err=True)
        raise click.exceptions.Exit(EXIT_FINDINGS)


def _csv_option(*names, help, metavar="CODES"):
    return click.option(*names, multiple=True, metavar=metavar, help=help)


def common_options(f):
    opts = [
        click.option("--torch-version", "torch_version", default=None, metavar="VERSION",
                     help="PyTorch version the code targets (default: auto, the version the project pins in its "
                          "requirements, pyproject, setup, environment files or Dockerfile base images; else the newest)."),
        click.option("-o", "--output", "output", default=None, metavar="DIR|-",
                     help="Folder for the report files; '-' writes the one selected --format to stdout (default: "
                          "./npu-analyse-report, or, when the current folder is inside an analysed folder, "
                          "$XDG_STATE_HOME/npu-analyse/reports/NAME-HASH: never inside the analysed repository)."),
        click.option("--format", "formats", multiple=True, default=("json,html",), show_default=True,
                     help="Report files: json, html, sarif, csv, junit, gitlab, github, text (comma-separated or "
                          "repeated; all = json,html)."),
        click.option("--fail-on", "fail_on", type=click.Choice(FAIL_ON, case_sensitive=False), default=None,
                     help="Exit 1 when a finding at or above this severity remains after suppressions and the "
                          "baseline (default: never, or fail-on in the config); it gates on the findings the "
                          "verdict counts unless --fail-on-scope listed."),
        click.option("--fail-on-scope", "fail_on_scope", type=click.Choice(("counted", "listed"), case_sensitive=False),
                     default=None, help="Which findings --fail-on sees: counted (default: those the verdict counts, "
                                        "not the ones listed off the path) or listed (every listed finding)."),
        click.option("--min-severity", "min_severity", type=click.Choice(SEVERITY_CHOICES, case_sensitive=False),
                     default=None, help="List only findings at or above this severity in the terminal and the "
                                        "reports (default: info, every finding; the verdict and --fail-on see all)."),
        click.option("--exit-zero", "exit_zero", is_flag=True,
                     help="Exit 0 even when findings reach --fail-on (usage errors still exit 2, failures 3)."),
        _csv_option("--select", help="Report only these rule codes or prefixes (e.g. NPU0,NPU101); default ALL."),
        _csv_option("--extend-select", "extend_select", help="Rule codes or prefixes added to the selection."),
        _csv_option("--ignore", help="Rule codes or prefixes never reported (added to the config's ignore)."),
        _csv_option("--exclude", metavar="GLOBS", help="Path globs not analysed (added to the config's exclude)."),
        _csv_option("--per-file-ignores", "per_file_ignores", metavar="GLOB:CODES",
                    help="Ignore rule codes in files matching GLOB, e.g. 'tests/*:NPU002,NPU003' (repeatable)."),
        click.option("--role", "roles", multiple=True, metavar="GLOB=ROLE",
                     help="File role for paths matching GLOB: product, test, example, tool, build, docs."),
        click.option("--baseline", "baseline", default=None, metavar="FILE",
                     help="Findings recorded in this baseline file are dropped (summary.baselined)."),
        click.option("--write-baseline", "write_baseline", default=None, metavar="FILE",
                     help="Record the current findings (after suppressions) as a baseline file; exits 0."),
        click.option("--show-suppressed", "show_suppressed", is_flag=True,
                     help="List findings suppressed by `# npu-analyse: ignore` comments (terminal and report)."),
        click.option("--warn-unused-ignores", "warn_unused_ignores", is_flag=True,
                     help="Warn about `# npu-analyse: ignore` comments that suppress nothing."),
        click.option("--config", "config", default=None, metavar="FILE",
                     help="Configuration file (default: .npu-analyse.toml or pyproject.toml [tool.npu-analyse], "
                          "searched from the analysed path upwards)."),
        click.option("--isolated", is_flag=True, help="Ignore every configuration file."),
        click.option("--show-config", "show_config", is_flag=True,
                     help="Print the effective configuration, with where each value comes from, and exit."),
        click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors."),
        click.option("-v", "--verbose", is_flag=True,
                     help="Also print the verdict's full explanation and the analysis's own statistics "
                          "(thirdparty: call graph, timings)."),
        click.option("--color/--no-color", default=None,
                     help="Colour the terminal summary (default: on a TTY; NO_COLOR / FORCE_COLOR honoured)."),
        # run settings (never change what is found): stored in the click context, read by _run_settings()
        click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, expose_value=False, callback=_keep,
                     help="Worker processes (default: the CPUs this process may use: affinity mask and "
                          "container CPU limit; NPU_ANALYSE_JOBS sets the default too)."),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None, expose_value=False, callback=_keep,
                     help="Cache folder (default: $XDG_CACHE_HOME/npu-analyse or ~/.cache/npu-analyse)."),
        click.option("--no-cache", is_flag=True, expose_value=False, callback=_keep,
                     help="Neither read nor write the cache."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _keep(ctx, param, value):
    ctx.meta[f"npu-analyse.{param.name}"] = value
    return value


def _run_settings(quiet: bool):
    from analyse.cache import default_cache_dir
    from analyse.runsettings import Settings, available_cpus

    meta = click.get_current_context().meta
    cache_dir = None
    if not meta.get("npu-analyse.no_cache"):
        cache_dir = Path(meta["npu-analyse.cache_dir"]) if meta.get("npu-analyse.cache_dir") else default_cache_dir()
    jobs = meta.get("npu-analyse.jobs")
    if jobs is not None:
        cpus = available_cpus()
        if jobs > cpus:   # more workers than CPUs only share the CPUs, each with its own memory
            if not quiet:
                click.echo(f"npu-analyse: --jobs {jobs} capped to {cpus} (the CPUs this process may use)", err=True)
            jobs = cpus
    return Settings(jobs=jobs, cache_dir=cache_dir, progress=not quiet and sys.stderr.isatty())


EPILOG_MAIN = """\b
Examples:
  npu-analyse script train.py                       # one script: report in ./npu-analyse-report
  npu-analyse script . --fail-on manual --format sarif -o reports
  npu-analyse thirdparty .venv/lib/python3.11/site-packages/apex
  npu-analyse rules NPU002"""

EPILOG_SCRIPT = """\b
Examples:
  npu-analyse script train.py --torch-version 2.8.0
  npu-analyse script . --fail-on manual --format sarif,html -o reports
  npu-analyse script src --format json -o - | jq '.summary.verdict'
  npu-analyse script . --write-baseline npu-baseline.json"""

EPILOG_THIRDPARTY = """\b
Examples:
  npu-analyse thirdparty ~/src/apex -o apex-report
  npu-analyse thirdparty .venv/lib/python3.11/site-packages/timm --format json,sarif
  npu-analyse thirdparty vendor/mylib --fail-on blocker -q"""

EPILOG_EXPLAIN = """\b
Examples:
  npu-analyse explain torch.cuda.set_device
  npu-analyse explain torch.Tensor.nonzero --torch-version 2.8.0
  npu-analyse explain torch.std_mean"""

EPILOG_RULES = """\b
Examples:
  npu-analyse rules
  npu-analyse rules NPU002
  npu-analyse rules npu501"""

EPILOG_PROBE = """\b
Examples:
  npu-analyse probe --ops ops.txt --device npu:0
  npu-analyse probe --from-report npu-analyse-report/report.json --device npu
  npu-analyse probe --ops ops.txt --device cpu --dtypes float32 -o probe-cpu"""


class _Commands(click.Group):
    def get_command(self, ctx, cmd_name):
        cmd = super().get_command(ctx, cmd_name)
        if isinstance(cmd, _LazyProbe):
            cmd = _real_probe()
        return cmd


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EPILOG_MAIN)
@click.version_option(__version__, "--version", prog_name="npu-analyse")
def cli() -> None:
    """Static migration analysis of PyTorch CUDA code for Huawei Ascend NPUs (torch_npu).

    \b
    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage or configuration error,
    3 analysis could not run, 130 interrupted, 143 SIGTERM, 129 SIGHUP (no half-written report is left).
    """


@cli.command("script", epilog=EPILOG_SCRIPT)
@click.argument("paths", nargs=-1, required=True)
@common_options
@click.option("--entry", "entries", multiple=True, metavar="FILE[:FUNCTION]",
              help="An entry point of the program (repeatable); replaces entry-point discovery and the config's entry.")
@click.option("--with-thirdparty", "with_thirdparty", multiple=True, metavar="REPORT",
              help="A `npu-analyse thirdparty` report.json: calls into its affected functions become findings.")
@click.option("--probe-results", "probe_results", default=None, metavar="PROBE_JSON",
              help="probe.json from `npu-analyse probe`: device evidence overrides the docs.")
@click.option("--with-migration", "with_migration", is_flag=True,
              help="Add a Migration section (the diff per file of `npu-analyse migrate`) to the report.")
def script_cmd(paths, **opts):
    """Analyse training scripts or a project folder (scripts + the project's own modules).

    \b
    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage or configuration error,
    3 analysis could not run, 130 interrupted, 143 SIGTERM, 129 SIGHUP (no half-written report is left).
    """
    _run("script", paths, opts)


@cli.command("thirdparty", epilog=EPILOG_THIRDPARTY)
@click.argument("paths", nargs=-1, required=True)
@common_options
def thirdparty_cmd(paths, **opts):
    """Analyse a library (source tree or installed package folder): which functions break, and through which calls.

    \b
    Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage or configuration error,
    3 analysis could not run, 130 interrupted, 143 SIGTERM, 129 SIGHUP (no half-written report is left).
    """
    _run("thirdparty", paths, opts)


EPILOG_MIGRATE = """\b
Examples:
  npu-analyse migrate . > npu.patch && git apply npu.patch
  npu-analyse migrate . --strategy explicit --changes changes.csv -o npu.patch
  npu-analyse migrate src --apply ../src-npu --annotate
  npu-analyse migrate . --in-place"""


def _migrate_options(f):
    opts = [
        click.option("--strategy", type=click.Choice(("shim", "explicit")), default="shim", show_default=True,
                     help="shim: import torch_npu + transfer_to_npu in each entry point and make only the edits it "
                          "does not make; explicit: write every CUDA use in its NPU form."),
        click.option("-o", "--output", "output", default=None, metavar="FILE|-",
                     help="The unified diff (default: stdout, none with --apply / --in-place), applicable with `git apply` in the analysed folder."),
        click.option("--changes", "changes", default=None, metavar="FILE",
                     help="Change list: JSON (changes.schema.json), or CSV when FILE ends in .csv."),
        click.option("--apply", "apply_dir", default=None, metavar="DIR",
                     help="Write a migrated copy of the analysed tree to DIR (new or empty folder)."),
        click.option("--in-place", "in_place", is_flag=True,
                     help="Edit the analysed files (only in a git work tree without uncommitted changes)."),
        click.option("--force", is_flag=True, help="With --in-place: edit even outside a clean git work tree."),
        click.option("--annotate", is_flag=True,
                     help="Add one comment (rule code and advice) above each line left for the engineer."),
        click.option("--all", "everything", is_flag=True,
                     help="Also edit guarded and off-path findings (tests, tools, branches with a fallback)."),
        click.option("--torch-version", "torch_version", default=None, metavar="VERSION",
                     help="PyTorch version the code targets (default: auto, the version the project pins in its "
                          "requirements, pyproject, setup, environment files or Dockerfile base images; else the newest)."),
        _csv_option("--select", help="Rule codes or prefixes (as for script)."),
        _csv_option("--extend-select", "extend_select", help="Rule codes or prefixes added to the selection."),
        _csv_option("--ignore", help="Rule codes or prefixes never used."),
        _csv_option("--exclude", metavar="GLOBS", help="Path globs not analysed nor edited."),
        _csv_option("--per-file-ignores", "per_file_ignores", metavar="GLOB:CODES", help="As for script."),
        click.option("--role", "roles", multiple=True, metavar="GLOB=ROLE", help="File role for paths matching GLOB."),
        click.option("--entry", "entries", multiple=True, metavar="FILE[:FUNCTION]",
                     help="An entry point of the program (repeatable); replaces entry-point discovery."),
        click.option("--config", "config", default=None, metavar="FILE", help="Configuration file (as for script)."),
        click.option("--isolated", is_flag=True, help="Ignore every configuration file."),
        click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors."),
        click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, expose_value=False, callback=_keep,
                     help="Worker processes for the analysis."),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None, expose_value=False, callback=_keep,
                     help="Cache folder."),
        click.option("--no-cache", is_flag=True, expose_value=False, callback=_keep, help="Neither read nor write the cache."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _script_report(paths: Sequence[str], opts: dict):
    """The ``script`` analysis of *paths* as the script command runs it (cache included): (report, inputs, policy, cfg)."""
    inputs = _check_paths(paths)
    cfg = _effective_config(inputs, opts, "script")
    policy = _policy(cfg, inputs, opts)
    entries = [str(_config_path(cfg, "entry", e)) if _from_file(cfg, "entry") else e for e in cfg["entry"]]
    roles = dict(cfg["roles"]) or None
    settings = _run_settings(bool(opts.get("quiet")))
    with collect_less():
        record_cache, record_key, record = _cached_report("script", inputs, paths, cfg, opts, policy, settings)
        if record is not None:
            report = record["report"]
        else:
            report = _analyse("script", inputs, paths, cfg, opts, policy, entries, roles, settings)
            if record_cache is not None:
                from analyse.passes import all_rules

                record_cache.put(record_key, {"report": report, "rules": [r.to_dict() for r in all_rules()]})
        if record_cache is not None:
            record_cache.flush()
    return report, inputs, policy, cfg


def _migration(report: dict, inputs, policy, cfg, *, strategy: str = "shim", everything: bool = False,
               annotate: bool = False):
    from analyse.migrate import Options, plan

    kb = _load_kb(cfg["torch-version"], inputs)
    return plan(report, inputs, kb, Options(strategy=strategy, everything=everything, annotate=annotate),
                admit=policy.admit, roles=dict(cfg["roles"]) or None)


def _migration_section(report: dict, inputs, policy, cfg) -> dict:
    """``report["migration"]`` for ``script --with-migration``: the diff per file of the default (shim) migration."""
    from analyse.migrate import output as out

    mig = _migration(report, inputs, policy, cfg)
    doc = out.change_list(mig)
    return {"strategy": mig.strategy, "summary": doc["summary"], "files": out.file_diffs(mig), "left": doc["left"]}


@cli.command("migrate", epilog=EPILOG_MIGRATE)
@click.argument("paths", nargs=-1, required=True)
@_migrate_options
def migrate_cmd(paths, **opts):
    """Turn the findings into edits: a unified diff, a change list, a migrated copy or the tree edited in place.

    \b
    Exit codes: 0 ok, 2 usage or configuration error, 3 the analysis or the writing failed, 130 interrupted.
    """
    from analyse.migrate import output as out

    if opts["in_place"] and opts["apply_dir"]:
        raise UsageFail("--in-place and --apply DIR are exclusive")
    if opts["force"] and not opts["in_place"]:
        raise UsageFail("--force only goes with --in-place")
    if opts["output"] not in (None, "-"):
        _check_file_target(opts["output"], "-o")
    if opts["changes"]:
        _check_file_target(opts["changes"], "--changes")
    if opts["apply_dir"]:
        d = Path(opts["apply_dir"])
        if d.exists() and (not d.is_dir() or any(d.iterdir())):
            raise UsageFail(f"--apply {opts['apply_dir']} must be a new or empty folder")
    if opts["in_place"] and not opts["force"]:
        problem = out.git_dirty([Path(p) for p in paths])
        if problem:
            raise UsageFail(f"--in-place: {problem} (commit or stash first, or add --force)")
    opts.setdefault("formats", ("json",))
    report, inputs, policy, cfg = _script_report(paths, opts)
    if not (report.get("summary") or {}).get("files_analysed") and report.get("errors"):
        click.echo("npu-analyse: error: no input file could be analysed", err=True)
        raise click.exceptions.Exit(EXIT_FAILED)
    mig = _migration(report, inputs, policy, cfg, strategy=opts["strategy"], everything=opts["everything"],
                     annotate=opts["annotate"])
    if opts["in_place"] and not opts["force"]:
        problem = out.git_unsafe([mig.abspaths[r.path] for r in mig.changed])
        if problem:
            raise UsageFail(f"--in-place: {problem} (commit it first, or add --force)")
    written = ""
    skipped: List[str] = []
    try:
        if opts["in_place"]:   # first: the diff and the change list then say what was written
            skipped = out.write_in_place(mig)
            for rel in skipped:
                r = next(x for x in mig.files if x.path == rel)
                click.echo(f"npu-analyse: warning: {safe(rel)} {safe(r.refused or '')}", err=True)
            written = "in place"
        patch = out.diff(mig)
        if opts["output"] == "-" or (opts["output"] is None and not opts["apply_dir"] and not opts["in_place"]):
            sys.stdout.buffer.write(patch)
            sys.stdout.flush()
        elif opts["output"] is not None:
            write_atomic(Path(opts["output"]), patch)
            written = opts["output"] if not opts["in_place"] else written
        if opts["changes"]:
            import json

            doc = out.change_list(mig)
            data = out.change_list_csv(doc) if opts["changes"].lower().endswith(".csv") \
                else json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
            write_atomic(Path(opts["changes"]), data.encode("utf-8"))
        if opts["apply_dir"]:
            out.write_copy(mig, list(inputs), Path(opts["apply_dir"]))
            written = opts["apply_dir"]
    except WriteRefused as exc:
        raise RunFailed(f"cannot write: {exc}")
    except OSError as exc:
        raise RunFailed(f"cannot write: {exc.strerror or exc}" + (f": {exc.filename}" if getattr(exc, "filename", None) else ""))
    if not opts["quiet"]:
        click.echo(safe(out.terminal(mig, written), keep_newlines=True), err=True, nl=False)
    if skipped:
        click.echo(f"npu-analyse: error: {len(skipped)} file(s) not edited (see the warnings above)", err=True)
        raise click.exceptions.Exit(EXIT_FAILED)


@cli.command("explain", epilog=EPILOG_EXPLAIN)
@click.argument("api")
@click.option("--torch-version", "torch_version", default=None, metavar="VERSION")
def explain_cmd(api, torch_version):
    """What the knowledge base says about one API or library name, for every torch version
    (e.g. torch.nn.GRU, torch.cuda.set_device, flash_attn.flash_attn_func). Exit 1 for an unknown name."""
    if len(api) > MAX_API_CHARS:
        raise UsageFail(f"explain: an API name is at most {MAX_API_CHARS} characters, not {len(api)}")
    if not api.strip() or any(not ch.isprintable() for ch in api):
        # no escape sequence, bell, newline or bidi control of the argument reaches the terminal
        raise UsageFail(f"explain: {safe(api)!s} is not an API name (control characters)")
    kb = _load_kb(torch_version)
    from analyse.explain import explain_name

    text, status = explain_name(api, kb.torch_version)
    click.echo(safe(text, keep_newlines=True))
    sys.exit(status)


@cli.command("rules", epilog=EPILOG_RULES)
@click.argument("code", required=False)
def rules_cmd(code):
    """List the rule codes, or document one (what it detects, why, example, fix)."""
    from analyse.passes import all_rules

    rules = all_rules()
    if code:
        match = [r for r in rules if r.code == code.upper()]
        if not match:
            raise UsageFail(f"unknown rule code {code!r}")
        r = match[0]
        click.echo(f"{r.code} {r.name} [{r.category}, default severity {r.severity}]\n\n"
                   f"What it detects: {r.summary}\n\nWhy: {r.why}\n\nExample:\n{_indent(r.example)}\n\nFix:\n{_indent(r.fix)}")
        return
    for r in rules:
        click.echo(f"{r.code}  {r.category:<18} {r.severity:<7} {r.name}: {r.summary}")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


class _LazyProbe(click.Command):
    """Stands for ``probe`` in the command list until the command is used: ``analyse.probe.command`` and
    what it imports are loaded then, not on every run's start-up."""

    def __init__(self) -> None:
        super().__init__("probe", help="Run operators on a device, compare with a CPU reference and detect CPU "
                                       "fallbacks.")


def _real_probe() -> Optional[click.Command]:
    try:
        from analyse.probe.command import probe
    except ImportError:  # pragma: no cover - the probe package is part of the distribution
        return None
    if not probe.epilog:
        probe.epilog = EPILOG_PROBE
    cli.commands["probe"] = probe
    return probe


cli.add_command(_LazyProbe())


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point: click in non-standalone mode so that Ctrl-C is 130 (click's own handling exits 1).

    Every way out ends the run's child processes first (:mod:`analyse.lifecycle`): SIGINT is 130,
    SIGTERM 143 and SIGHUP 129 (128 + the signal), each with one line on stderr."""
    from analyse import lifecycle

    handlers = lifecycle.install_signal_handlers()
    try:
        rv = cli.main(args=argv, prog_name="npu-analyse", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, EOFError) and not isinstance(exc.__context__, KeyboardInterrupt):
            sys.exit(1)
        _interrupted()
    except KeyboardInterrupt:
        _interrupted()
    except lifecycle.Terminated as exc:
        lifecycle.end_owned()
        click.echo(f"npu-analyse: terminated by {exc.name}", err=True)
        raise
    except click.UsageError as exc:
        if isinstance(exc, UsageFail):
            exc.show()
        else:
            hint = f" (see {exc.ctx.command_path} --help)" if exc.ctx is not None else ""
            click.echo(f"npu-analyse: error: {safe(exc.format_message())}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except MemoryError:
        lifecycle.end_owned()
        click.echo(f"npu-analyse: error: {_out_of_memory('')}", err=True)
        sys.exit(EXIT_FAILED)
    except OSError as exc:   # standard output on a full device, a closed pipe, a write error: one line, exit 3
        lifecycle.end_owned()
        _say_error(f"cannot write: {exc.strerror or exc}")
        sys.exit(EXIT_FAILED)
    finally:
        lifecycle.end_owned()   # nothing is left on a normal end; after anything else, the workers go now
        lifecycle.restore_signal_handlers(handlers)
    sys.exit(rv if isinstance(rv, int) else 0)


def _say_error(message: str) -> None:
    """One line on stderr when stderr can take it (it may be the stream that failed)."""
    try:
        sys.stderr.write(f"npu-analyse: error: {safe(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


def _interrupted() -> None:
    from analyse import lifecycle

    lifecycle.end_owned()
    click.echo("npu-analyse: interrupted", err=True)
    sys.exit(EXIT_INTERRUPTED)


def console_main() -> None:
    """The ``npu-analyse`` command and ``python -m analyse``: :func:`main`, then leave without tearing the
    interpreter down. The reports are written and the streams flushed by then; freeing every object of a
    large run one by one only delays the exit (a tenth of a second on timm). mypy leaves the same way.
    Before that, whatever the way out, the run's child processes are ended (:func:`analyse.lifecycle.leaving`):
    ``os._exit`` runs no ``atexit`` hook, and the analysis thread may still be running after Ctrl-C.
    :func:`main` itself raises ``SystemExit`` as usual (tests and embedding callers use it)."""
    from analyse import lifecycle

    _standard_fds()
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    except OSError:   # the error line itself could not be written (stderr on a full device): exit 3 all the same
        code = EXIT_FAILED
    except BaseException:  # pragma: no cover - main turns every exception into an exit code
        lifecycle.leaving()
        raise
    else:  # pragma: no cover - main always exits
        code = EXIT_OK
    lifecycle.leaving()
    if code is None:
        code = EXIT_OK
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = EXIT_FINDINGS
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):   # a closed pipe, a full device: nothing more can reach it
            pass
    os._exit(code)


def _standard_fds() -> None:
    """A run started with stdin, stdout or stderr closed (``>&-``) gets ``/dev/null`` there: otherwise the
    next file the run opens (the cache database, a report) would take descriptor 1 or 2 and receive what is
    printed. Python leaves ``sys.stdout`` / ``sys.stderr`` None then; they become that ``/dev/null``."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:   # pragma: no cover - no /dev/null
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            try:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))
            except OSError:   # pragma: no cover
                pass


if __name__ == "__main__":  # pragma: no cover
    console_main()
