"""npu-analyse against Ascend's own analyser (msprobe's ms_fmk_transplt, PyTorch Analyse) on one project,
measured in one run.

    python benchmarks/bench_msfmk.py PROJECT --msfmk MSPROBE/src/ms_fmk_transplt --msfmk-python VENV/bin/python
        [--torch-version 2.1.0] [--rounds 3] [--msfmk-rounds 1]

* ``ms_fmk_transplt``: ``analysis/pytorch_analyse.py -i PROJECT -o OUT -v VERSION`` (mode ``torch_apis``,
  its default) with its own interpreter (it needs libcst, jedi, pandas and prettytable; run it from a
  venv that has them), ``--msfmk-rounds`` times;
* ``npu-analyse cold``: ``script PROJECT --format json`` with an empty cache folder, default ``--jobs``;
* ``npu-analyse warm``: the same cache folder again (tree unchanged: a whole-report cache hit).

Interleaved rounds, best (lowest) wall and CPU time of each (CPU: user + system of the process and its
children); the ratios are ms_fmk_transplt's time over npu-analyse's. The npu-analyse package is
byte-compiled first. The tools do not report the same things (ms_fmk_transplt lists unsupported APIs per
its tables; npu-analyse adds reach, guards, a verdict), so this compares the time to an answer only.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd, env, cwd) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          env=env, cwd=str(cwd))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-800:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project")
    ap.add_argument("--msfmk", required=True, help="the ms_fmk_transplt folder (msprobe's src/ms_fmk_transplt)")
    ap.add_argument("--msfmk-python", default=sys.executable, help="a Python with libcst, jedi, pandas, prettytable")
    ap.add_argument("--torch-version", default="2.1.0", help="-v of ms_fmk_transplt (2.1.0 2.6.0 2.7.1 2.8.0)")
    ap.add_argument("--rounds", type=int, default=3, help="npu-analyse rounds (cold and warm)")
    ap.add_argument("--msfmk-rounds", type=int, default=1)
    args = ap.parse_args()

    project = Path(args.project).resolve()
    msfmk = Path(args.msfmk).resolve()
    compileall.compile_dir(str(ROOT / "analyse"), quiet=1)
    tmp = Path(tempfile.mkdtemp(prefix="npu-analyse-bench-msfmk-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ms_env = {**os.environ, "PYTHONPATH": str(msfmk)}
    ours = [sys.executable, "-m", "analyse", "script", str(project), "--format", "json", "-q",
            "--torch-version", args.torch_version]
    best = {k: [float("inf"), float("inf")] for k in ("ms_fmk_transplt", "npu-analyse cold", "npu-analyse warm")}

    def keep(name, wall, cpu):
        best[name][0] = min(best[name][0], wall)
        best[name][1] = min(best[name][1], cpu)

    for r in range(max(args.rounds, args.msfmk_rounds)):
        if r < args.msfmk_rounds:
            out = tmp / f"msfmk-{r}"
            out.mkdir()
            keep("ms_fmk_transplt", *timed([args.msfmk_python, str(msfmk / "analysis" / "pytorch_analyse.py"),
                                            "-i", str(project), "-o", str(out), "-v", args.torch_version],
                                           ms_env, msfmk))
        if r < args.rounds:
            cache = tmp / f"cache-{r}"
            report = tmp / f"report-{r}"
            keep("npu-analyse cold", *timed(ours + ["--cache-dir", str(cache), "-o", str(report)], env, ROOT))
            keep("npu-analyse warm", *timed(ours + ["--cache-dir", str(cache), "-o", str(report)], env, ROOT))
    shutil.rmtree(tmp, ignore_errors=True)
    files = sum(1 for _ in project.rglob("*.py"))
    ms_wall, ms_cpu = best["ms_fmk_transplt"]
    print(f"{project.name}: {files} .py files; best of {args.msfmk_rounds} (ms_fmk_transplt) / {args.rounds} "
          f"(npu-analyse) rounds; -v / --torch-version {args.torch_version}")
    print(f"{'run':<18} {'wall':>9} {'ratio':>8} {'cpu':>9} {'ratio':>8}")
    for name, (wall, cpu) in best.items():
        print(f"{name:<18} {wall:8.2f}s {ms_wall / wall:7.1f}x {cpu:8.2f}s {ms_cpu / max(cpu, 1e-6):7.1f}x")


if __name__ == "__main__":
    main()
