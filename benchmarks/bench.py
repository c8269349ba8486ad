"""Wall time, ratio to ast.parse and peak memory of `npu-analyse` on one tree.

    python benchmarks/bench.py PATH [--mode script|thirdparty] [--runs cold,warm,jobs1] [--jobs N] [--repeat R]

Each configuration runs the real command line (``python -m analyse MODE PATH -q
--format json``) in a fresh process, so the figures include interpreter
start-up, imports and report writing -- what a user waits for. In the same run
the script times plain ``ast.parse`` of the same Python files (the floor any
Python analyser pays) and prints every wall time as a ratio to it: absolute
times on a shared machine are noisy, ratios much less so.

Configurations:

* ``cold``  -- an empty cache directory (a fresh one under the system temp dir),
* ``warm``  -- the same cache directory again, the tree unchanged,
* ``jobs1`` -- ``--jobs 1 --no-cache`` (one process, nothing cached),
* ``nocache`` -- ``--no-cache`` with the default --jobs.

CPU is the user + system time of the command's processes (all workers
together), compared with the CPU time of ast.parse: on a loaded machine the
CPU ratio is the steadier figure, the wall ratio what a user waits for.
Peak memory is the largest resident set of the command's processes (main and
worker processes: ``getrusage(RUSAGE_CHILDREN)`` of a wrapper process that
waits for them). The finding ids of all configurations are compared; the
script says whether they are identical. The load average is printed too:
ratios taken on a busy machine are worse than on an idle one.

``--repeat R`` runs R rounds (ast.parse, then every configuration, each round with
its own empty cache) and compares the best wall time of each: on a machine whose
cores are shared with other tenants single runs of the same command vary by 30%,
and the best of several is the least disturbed (as with ``timeit``). Every round's
wall time is printed too.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

try:
    from analyse.files import decode_source, discover  # noqa: E402
except ImportError:  # a commit before analyse/files.py (benchmarking an older version)
    from analyse.project import decode_source, discover  # noqa: E402


def time_ast_parse(path: Path):
    files = [f[0] for f in discover([path])]
    lines = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    for f in files:
        try:
            text = decode_source(f.read_bytes())
            ast.parse(text)
        except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, OSError, RecursionError, MemoryError):
            continue
        lines += text.count("\n") + 1
    return len(files), lines, time.perf_counter() - t0, time.process_time() - c0


_CHILD = r"""
import resource, subprocess, sys, time, json
t0 = time.perf_counter()
rc = subprocess.call(sys.argv[1:])
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024}))
"""


def run_cli(mode: str, path: Path, out: Path, extra):
    cmd = [sys.executable, "-m", "analyse", mode, str(path), "-q", "--format", "json", "-o", str(out)] + list(extra)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _CHILD] + cmd, cwd=str(ROOT), env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark wrapper failed: {proc.stderr.strip()[-2000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    if res["rc"] != 0:
        raise SystemExit(f"npu-analyse exited {res['rc']}: {' '.join(cmd)}")
    report = json.loads((out / "report.json").read_text())
    res["ids"] = sorted(f["id"] for f in report["findings"])
    res["findings"] = len(report["findings"])
    res["errors"] = len(report["errors"])
    return res


def supports_cache() -> bool:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-m", "analyse", "script", "--help"], cwd=str(ROOT), env=env,
                         capture_output=True, text=True).stdout
    return "--no-cache" in out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--mode", choices=("script", "thirdparty"), default="script")
    ap.add_argument("--runs", default="cold,warm,jobs1", help="comma-separated: cold, warm, jobs1, nocache")
    ap.add_argument("--jobs", type=int, default=None, help="--jobs for the cold / warm / nocache runs")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds: every configuration and ast.parse run once per round; the best of the rounds "
                         "is compared (like timeit: the least disturbed run of each)")
    args = ap.parse_args()
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    new_cli = supports_cache()
    # a wheel install compiles the package's byte code; an editable checkout under PYTHONDONTWRITEBYTECODE
    # would compile every module again in every run (about 0.3 s): time the installed state
    compileall.compile_dir(str(ROOT / "analyse"), quiet=1)
    load = os.getloadavg()
    print(f"tree        {args.path} ({args.mode})")
    scratch = Path(tempfile.mkdtemp(prefix="npu-bench-"))
    jobs = ["--jobs", str(args.jobs)] if args.jobs and new_cli else []
    results: dict = {}
    asts = []
    try:
        for rnd in range(max(1, args.repeat)):
            files, lines, t_ast, cpu_ast = time_ast_parse(args.path)
            asts.append((t_ast, cpu_ast))
            if rnd == 0:
                print(f"files/lines {files} / {lines}   cpus {os.cpu_count()}   load average {load[0]:.2f} {load[1]:.2f} "
                      f"{load[2]:.2f}")
            cache = scratch / f"cache{rnd}"
            for name in runs:
                if not new_cli:
                    extra = []
                    if name != runs[0]:
                        continue
                    name = "baseline"
                elif name in ("cold", "warm"):
                    extra = jobs + ["--cache-dir", str(cache)]
                elif name == "jobs1":
                    extra = ["--jobs", "1", "--no-cache"]
                elif name == "nocache":
                    extra = jobs + ["--no-cache"]
                else:
                    raise SystemExit(f"unknown run {name!r}")
                results.setdefault(name, []).append(run_cli(args.mode, args.path, scratch / name, extra))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    t_ast = min(a[0] for a in asts)
    cpu_ast = min(a[1] for a in asts)
    rounds = f" (best of {len(asts)}: " + ", ".join(f"{a[0]:.2f}" for a in asts) + ")" if len(asts) > 1 else ""
    print(f"ast.parse   {t_ast:8.2f} s wall  {cpu_ast:8.2f} s CPU{rounds}")
    for name, rs in results.items():
        res = min(rs, key=lambda r: r["wall"])
        cpu = min(r["cpu"] for r in rs)
        peak = max(r["peak_mb"] for r in rs)
        spread = " (" + ", ".join(f"{r['wall']:.2f}" for r in rs) + ")" if len(rs) > 1 else ""
        print(f"{name:<8} {res['wall']:8.2f} s  {res['wall'] / t_ast:6.2f}x ast.parse   CPU {cpu:7.2f} s "
              f"{cpu / cpu_ast:6.2f}x   peak RSS {peak:6.0f} MB   {res['findings']} findings, "
              f"{res['errors']} errors{spread}")
    if len(results) > 1 or any(len(rs) > 1 for rs in results.values()):
        all_ids = [(name, r["ids"]) for name, rs in results.items() for r in rs]
        first = all_ids[0][1]
        same = all(v == first for _n, v in all_ids)
        print(f"finding ids identical across {', '.join(results)} (every round): {'yes' if same else 'NO'}")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
