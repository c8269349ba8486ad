"""The ``npu-analyse probe`` click command. Importing this module never imports torch."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import List, Optional

import click

from analyse.probe.opsfile import (OpsFileError, OpsList, merge, parse_dtype_list, read_ops_file, read_report_apis,
                                   report_torch_version)

DEVICE_RE = re.compile(r"^(?:(?:npu|cuda)(?::\d+)?|cpu|meta)$")
TORCH_HINT = ("npu-analyse probe needs PyTorch, which is not installed: "
              "pip install torch==2.13.0 (or pip install 'npu-analyse[probe]')")


def _fail(message: str) -> None:
    click.echo(f"npu-analyse probe: {message}", err=True)
    sys.exit(2)


@click.command("probe")
@click.option("--ops", "ops_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Ops file: one operator per line (torch.X, torch.nn.functional.X, torch.Tensor.X, aten::X ...).")
@click.option("--from-report", "reports", type=click.Path(dir_okay=False, path_type=Path), multiple=True,
              help="report.json of `npu-analyse script` or `thirdparty`: probe the torch APIs it names "
                   "(repeat for several reports).")
@click.option("--device", default="npu", show_default=True,
              help="Device to probe: npu, npu:N, cuda, cuda:N, cpu or meta.")
@click.option("--dtypes", default="float32,float16,bfloat16", show_default=True,
              help="Comma-separated dtypes tried for operators whose line names none.")
@click.option("--timeout-per-op", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds one (operator, dtype) may take before the worker is killed and restarted.")
@click.option("--max-samples", type=click.IntRange(min=1), default=4, show_default=True,
              help="Sample inputs tried per (operator, dtype).")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Timed calls per (operator, dtype); the median is reported.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("npu-analyse-probe"), show_default=True, help="Output folder.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@click.option("--setup-file", "setup_files", multiple=True, hidden=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TEST ONLY: Python file executed in the worker before probing (registers test operators).")
def probe(ops_file: Optional[Path], reports: tuple, device: str, dtypes: str, timeout_per_op: float,
          max_samples: int, repeats: int, out_dir: Path, quiet: bool, setup_files: tuple) -> None:
    """Run operators on a device, compare with a CPU reference and detect CPU fallbacks.

    Writes DIR/probe.json and DIR/probe.html. Each operator is probed in a reusable worker
    process, so a crash or hang of one operator is recorded and the run goes on.
    """
    report = reports[0] if reports else None
    if ops_file is None and report is None:
        raise click.UsageError("give --ops FILE and/or --from-report report.json")
    device = device.strip().lower()
    if not DEVICE_RE.match(device):
        raise click.UsageError(f"--device {device!r}: expected npu, npu:N, cuda, cuda:N, cpu or meta")
    wanted, bad = parse_dtype_list(dtypes)
    if bad:
        raise click.UsageError(f"--dtypes: unknown dtype(s) {', '.join(bad)}")
    if not wanted:
        raise click.UsageError("--dtypes: give at least one dtype")

    lists: List[OpsList] = []
    try:
        if ops_file is not None:
            lists.append(read_ops_file(ops_file))
        for path in reports:
            try:
                lists.append(read_report_apis(path))
            except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
                if isinstance(exc, OpsFileError):
                    raise
                _fail(f"report {path} is not a usable npu-analyse report.json ({type(exc).__name__})")
    except OpsFileError as exc:
        _fail(str(exc))
    ops = merge(lists)
    for inv in ops.invalid:
        where = f"{ops_file}:{inv.line}" if inv.source == "ops-file" else f"{report} ({inv.source})"
        click.echo(f"npu-analyse probe: invalid line {where}: {inv.text!r}: {inv.reason}", err=True)
    if not ops.ops and not ops.unprobeable:
        if ops.invalid:
            _fail("no valid operator to probe (every line was invalid; see above)")
        _fail("no operator to probe: the ops file is empty" if report is None
              else "no operator to probe (the report names no torch API the probe can run)")

    if importlib.util.find_spec("torch") is None:
        _fail(TORCH_HINT)

    from analyse import __version__
    from analyse.probe import render
    from analyse.probe.runner import SETUP_ENV, ProbeFatal, ProbeOptions, run_probe

    setup = [str(p.resolve()) for p in setup_files]
    setup += [p for p in os.environ.get(SETUP_ENV, "").split(os.pathsep) if p]
    options = ProbeOptions(device=device, dtypes=list(wanted), timeout_per_op=timeout_per_op,
                           max_samples=max_samples, repeats=repeats, setup_files=setup,
                           kb_torch_version=report_torch_version(report) if report is not None else None)

    def progress(rec):
        if not quiet:
            extra = ""
            if rec.get("limitation") and rec.get("arguments"):
                extra = " " + ", ".join(f"{k}={v}" for k, v in rec["arguments"].items())
            click.echo(f"  {rec['status']:<17} {rec['op']} [{rec['dtype']}]{extra}", err=True)

    try:
        run = run_probe(ops.ops, options, progress)
    except ProbeFatal as exc:
        _fail(str(exc))
    results = run["results"] + [
        {"op": u.text, "dtype": "any", "status": "no-samples", "samples": 0, "max_abs_error": None,
         "max_rel_error": None, "tolerance": None, "device_time_ms": None, "arguments": None,
         "message": f"cannot be probed: {u.reason}", "source": u.source} for u in ops.unprobeable]
    doc = render.build_document(
        version=__version__, device=device, environment=run["environment"], results=results,
        duration_s=run["duration_s"], invalid_lines=[i.to_dict() for i in ops.invalid],
        skipped=[k.to_dict() for k in ops.skipped],
        options={"dtypes": list(wanted), "timeout_per_op": timeout_per_op, "max_samples": max_samples,
                 "repeats": repeats, "worker_starts": run["worker_starts"]})
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        render.write_json(doc, out_dir / "probe.json")
        render.write_html(doc, out_dir / "probe.html")
    except OSError as exc:
        _fail(f"cannot write to {out_dir}: {exc.strerror or exc}")
    click.echo(render.terminal_summary(doc, out_dir))
