"""Command line: ``npu-analyse script | thirdparty | probe | explain | rules``.

Exit codes: 0 when the analysis ran (with or without findings), 2 for usage
errors (unknown torch version, missing path), with a one-line message.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

import click

from analyse import __version__

FORMAT_CHOICES = ("json", "html", "all")


class UsageFail(click.UsageError):
    """A usage error printed as one line."""

    def show(self, file=None):  # noqa: D401 - click API
        click.echo(f"npu-analyse: error: {self.format_message()}", err=True)


def _torch_versions():
    from analyse.knowledge import TORCH_VERSIONS

    return TORCH_VERSIONS


def _load_kb(torch_version: Optional[str]):
    from analyse.knowledge import DEFAULT_TORCH_VERSION, TORCH_VERSIONS, UnknownTorchVersion, load_knowledge

    version = torch_version or DEFAULT_TORCH_VERSION
    try:
        return load_knowledge(version)
    except UnknownTorchVersion:
        raise UsageFail(f"unknown --torch-version {version!r}; the knowledge base has: {', '.join(TORCH_VERSIONS)}")


def _check_paths(paths: Sequence[str]) -> List[Path]:
    out = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise UsageFail(f"path does not exist: {p}")
        out.append(path)
    return out


def _formats(values: Iterable[str]) -> List[str]:
    fmts: List[str] = []
    for v in values:
        for part in v.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if part == "all":
                fmts.extend(["json", "html"])
            elif part in ("json", "html"):
                fmts.append(part)
            else:
                raise UsageFail(f"unknown --format {part!r}; choose from json, html, all")
    return list(dict.fromkeys(fmts)) or ["json", "html"]


def _emit(report: dict, out: str, formats: List[str], quiet: bool, color: Optional[bool]) -> None:
    from analyse.passes import all_rules
    from analyse.render import render_terminal, write_reports

    rules = [r.to_dict() for r in all_rules()]
    written = write_reports(report, rules, Path(out), formats)
    if not quiet:
        use_color = sys.stdout.isatty() if color is None else color
        click.echo(render_terminal(report, written, color=use_color))


def common_options(f):
    f = click.option("--torch-version", "torch_version", default=None, metavar="VERSION",
                     help="PyTorch version the code targets (default: the newest in the knowledge base).")(f)
    f = click.option("-o", "--output", "output", default="./npu-analyse-report", show_default=True,
                     help="Folder for report.json and report.html.")(f)
    f = click.option("--format", "formats", multiple=True, default=("json,html",), show_default=True,
                     help="Report files to write: json, html or all (comma-separated or repeated).")(f)
    f = click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")(f)
    f = click.option("--color/--no-color", default=None, help="Colour the terminal summary (default: when a TTY).")(f)
    # run settings (never change what is found): stored in the click context, read by _settings()
    f = click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, expose_value=False, callback=_keep,
                     help="Worker processes (default: the number of CPUs).")(f)
    f = click.option("--cache-dir", type=click.Path(file_okay=False), default=None, expose_value=False, callback=_keep,
                     help="Cache folder (default: $XDG_CACHE_HOME/npu-analyse or ~/.cache/npu-analyse).")(f)
    f = click.option("--no-cache", is_flag=True, expose_value=False, callback=_keep,
                     help="Neither read nor write the cache.")(f)
    return f


def _keep(ctx, param, value):
    ctx.meta[f"npu-analyse.{param.name}"] = value
    return value


def _settings(quiet: bool):
    from analyse.cache import default_cache_dir
    from analyse.pipeline import Settings

    meta = click.get_current_context().meta
    cache_dir = None
    if not meta.get("npu-analyse.no_cache"):
        cache_dir = Path(meta["npu-analyse.cache_dir"]) if meta.get("npu-analyse.cache_dir") else default_cache_dir()
    return Settings(jobs=meta.get("npu-analyse.jobs"), cache_dir=cache_dir,
                    progress=not quiet and sys.stderr.isatty())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="npu-analyse")
def cli() -> None:
    """Static migration analysis of PyTorch CUDA code for Huawei Ascend NPUs (torch_npu)."""


@cli.command("script")
@click.argument("paths", nargs=-1, required=True)
@common_options
@click.option("--with-thirdparty", "with_thirdparty", multiple=True, metavar="REPORT",
              help="A `npu-analyse thirdparty` report.json: calls into its affected functions become findings.")
@click.option("--probe-results", "probe_results", default=None, metavar="PROBE_JSON",
              help="probe.json from `npu-analyse probe`: device evidence overrides the docs.")
@click.option("--entry", "entries", multiple=True, metavar="FILE[:FUNCTION]",
              help="An entry point of the program (repeatable); replaces entry-point discovery.")
def script_cmd(paths, torch_version, output, formats, quiet, color, with_thirdparty, probe_results, entries):
    """Analyse training scripts or a project folder (scripts + the project's own modules)."""
    fmts = _formats(formats)
    inputs = _check_paths(paths)
    for extra in list(with_thirdparty) + ([probe_results] if probe_results else []):
        if not Path(extra).is_file():
            raise UsageFail(f"file does not exist: {extra}")
    kb = _load_kb(torch_version)
    from analyse.modes import run_script

    try:
        report = run_script(inputs, kb, with_thirdparty=list(with_thirdparty), probe_results=probe_results,
                            input_names=list(paths), entries=list(entries), settings=_settings(quiet))
    except ValueError as exc:  # unreadable --with-thirdparty / --probe-results file, bad --entry
        raise UsageFail(str(exc))
    _emit(report, output, fmts, quiet, color)


@cli.command("thirdparty")
@click.argument("paths", nargs=-1, required=True)
@common_options
def thirdparty_cmd(paths, torch_version, output, formats, quiet, color):
    """Analyse a library (source tree or installed package folder): which functions break, and through which calls."""
    fmts = _formats(formats)
    inputs = _check_paths(paths)
    kb = _load_kb(torch_version)
    from analyse.modes import run_thirdparty

    report = run_thirdparty(inputs, kb, input_names=list(paths), settings=_settings(quiet))
    _emit(report, output, fmts, quiet, color)


@cli.command("explain")
@click.argument("api")
@click.option("--torch-version", "torch_version", default=None, metavar="VERSION")
def explain_cmd(api, torch_version):
    """What the knowledge base says about one API or library name, for every torch version
    (e.g. torch.nn.GRU, torch.cuda.set_device, flash_attn.flash_attn_func). Exit 1 for an unknown name."""
    kb = _load_kb(torch_version)
    from analyse.explain import explain_name

    text, status = explain_name(api, kb.torch_version)
    click.echo(text)
    sys.exit(status)


@cli.command("rules")
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


def _register_probe() -> None:
    try:
        from analyse.probe.command import probe
    except ImportError:  # pragma: no cover - the probe package is part of the distribution
        return
    cli.add_command(probe)


_register_probe()


def main(argv: Optional[Sequence[str]] = None) -> None:
    try:
        cli.main(args=argv, prog_name="npu-analyse", standalone_mode=True)
    except KeyboardInterrupt:  # pragma: no cover
        click.echo("npu-analyse: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
