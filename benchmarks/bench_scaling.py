"""Benchmark: cost per 1,000 files and per 1,000 lines of one function, and how it grows.

    python benchmarks/bench_scaling.py [--files 2000,4000,8000] [--lines 2000,4000,8000] [--cache]
                                       [--jobs N|default] [--group-findings 10000,20000,40000]

Three series, each run on freshly generated inputs:

* **files**: a project of N four-line files, each calling CUDA (``x.cuda()``, ``torch.cuda.synchronize()``:
  the same findings in every file, which the report groups across files); the real command line in a child
  process (``-j 1`` unless ``--jobs``, ``--no-cache`` unless ``--cache``, JSON report), its wall time, CPU
  time (user + system of it and its workers) and peak memory: the largest process's ``ru_maxrss``, and on
  Linux the peak of the summed RSS of the run's whole process tree (main process and workers), sampled;
* **lines**: one function of N lines that rebinds one name with CUDA calls on every line (the shape that
  made ``syntax._straight_line`` quadratic under ``Resolver._name_type``);
* **group-findings** (optional): :func:`analyse.report.group_findings` alone on N findings, one advice
  repeated in N product files (the grouping step was quadratic in the files of one group).

For each series it prints seconds and peak MB per 1,000 units and the slope: the exponent k in
``time ~ size ** k`` between consecutive sizes (1.0 is linear, 2.0 quadratic). The defaults finish in a
few minutes on a two-core machine; the issue's acceptance runs 2k to 128k files (``--files
2000,8000,32000,128000``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parents[1]

FILE = "import torch\n\ndef step{i}(x):\n    return x.cuda() + torch.cuda.synchronize()\n"


def make_files(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    per_dir = 1000
    for i in range(n):
        d = folder / f"pkg{i // per_dir}"
        if i % per_dir == 0:
            d.mkdir(exist_ok=True)
            (d / "__init__.py").write_text("")
        (d / f"m{i}.py").write_text(FILE.format(i=i))
    return folder


def make_function(folder: Path, lines: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"    x = x.cuda() + torch.cuda.current_device() + {i}\n" for i in range(lines))
    (folder / "long.py").write_text("import torch\n\n\ndef train(x):\n" + body + "    return x\n")
    return folder


_TREE_RSS = """
def tree_rss(pid):
    kids = {}
    for p in os.listdir('/proc'):
        if p.isdigit():
            try:
                with open('/proc/%s/stat' % p) as f:
                    kids.setdefault(int(f.read().rsplit(')', 1)[1].split()[1]), []).append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    todo, kb = [pid], 0
    while todo:
        q = todo.pop()
        todo += kids.get(q, [])
        try:
            with open('/proc/%s/status' % q) as f:
                kb += next((int(l.split()[1]) for l in f if l.startswith('VmRSS:')), 0)
        except OSError:
            pass
    return kb
"""


def run_cli(path: Path, out: Path, cache_dir: Path = None, jobs: str = "1") -> Tuple[float, float, float, float]:
    """(seconds, CPU seconds, peak MB of the largest process, peak MB of all processes summed: 0 where /proc
    is missing) of one command-line run in a child process."""
    code = ("import os, resource, subprocess, sys, time\n" + _TREE_RSS +
            "t = time.perf_counter()\n"
            "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
            "peak, n = 0, 0\n"
            "while p.poll() is None:\n"
            "    if os.path.isdir('/proc'):\n"
            "        peak = max(peak, tree_rss(p.pid))\n"
            "    n += 1\n"
            "    time.sleep(0.2 if n < 50 else 1.0)\n"
            "err = p.stderr.read()\n"
            "dt = time.perf_counter() - t\n"
            "if p.returncode not in (0, 1):\n"
            "    sys.stderr.buffer.write(err[-2000:]); sys.exit(3)\n"
            "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(dt, ru.ru_utime + ru.ru_stime, ru.ru_maxrss, peak)\n")
    cmd = [sys.executable, "-m", "analyse", "script", str(path), "-q", "--format", "json", "-o", str(out)]
    cmd += ["--jobs", jobs] if jobs != "default" else []
    cmd += ["--cache-dir", str(cache_dir)] if cache_dir is not None else ["--no-cache"]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=env, cwd=str(ROOT))
    if proc.returncode != 0:
        raise SystemExit(f"npu-analyse failed on {path}: {proc.stderr.strip()}")
    seconds, cpu, kb, tree_kb = proc.stdout.split()
    return float(seconds), float(cpu), int(kb) / 1024, int(tree_kb) / 1024


def group_findings_time(n: int) -> Tuple[float, float]:
    """(seconds, peak MB of this process so far) of report.group_findings on one advice in *n* files."""
    from analyse.findings import Finding
    from analyse.report import group_findings

    findings = [Finding(code="NPU808", category="performance-advice", severity="advice", path=f"pkg/m{i}.py",
                        line=3, api="torch.cuda.synchronize", message="Synchronising the device every step ...",
                        replacement=None, confidence="high", evidence="syntax", role="product",
                        reach={"status": "reachable"})
                for i in range(n)]
    findings.sort(key=lambda f: (f.path, f.line))
    t = time.perf_counter()
    out, _flags, _eps, _extras = group_findings(findings, [False] * n, None)
    dt = time.perf_counter() - t
    assert len(out) == 1, len(out)
    return dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def slope(points: List[Tuple[int, float]]) -> List[str]:
    out = []
    for (n0, t0), (n1, t1) in zip(points, points[1:]):
        k = math.log(t1 / t0) / math.log(n1 / n0) if t0 > 0 and t1 > 0 else float("nan")
        out.append(f"{n0}->{n1}: x{t1 / t0:.2f} for x{n1 / n0:.0f} (slope {k:.2f})")
    return out


def _sizes(text: str) -> List[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default="2000,4000,8000", help="project sizes in files (comma-separated; '' skips)")
    ap.add_argument("--lines", default="2000,4000,8000", help="lines of the one function ('' skips)")
    ap.add_argument("--group-findings", default="", help="findings for group_findings alone, e.g. 10000,20000,40000")
    ap.add_argument("--cache", action="store_true", help="a cold run with the cache on (a fresh cache folder)")
    ap.add_argument("--jobs", default="1", help="--jobs of the runs: a number, or 'default' (the CPUs it may use)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="npu-bench-scaling-") as tmp:
        tmp = Path(tmp)
        for series, sizes, unit in (("files", _sizes(args.files), "files"), ("lines", _sizes(args.lines), "lines")):
            points = []
            for n in sizes:
                src = make_files(tmp / f"files{n}", n) if series == "files" else make_function(tmp / f"fn{n}", n)
                cache = tmp / f"cache-{series}{n}" if args.cache else None
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
                seconds, cpu, mb, tree_mb = run_cli(src, tmp / f"out-{series}{n}", cache, args.jobs)
                points.append((n, seconds))
                results.setdefault(series, []).append({"size": n, "seconds": round(seconds, 3), "cpu_s": round(cpu, 2),
                                                       "peak_mb": round(mb, 1), "peak_all_mb": round(tree_mb, 1),
                                                       "load": round(load, 1)})
                print(f"{series:>6} {n:>7} {unit}: {seconds:8.2f} s  {seconds * 1000 / n:7.3f} s per 1,000 {unit}  "
                      f"CPU {cpu:8.2f} s  peak {mb:7.1f} MB ({mb * 1000 / n:6.1f} MB per 1,000 {unit}), "
                      f"all processes {tree_mb:7.1f} MB  load {load:.1f}", flush=True)
            for line in slope(points):
                print(f"{series:>6} {line}", flush=True)
        points = []
        for n in _sizes(args.group_findings):
            seconds, mb = group_findings_time(n)
            points.append((n, seconds))
            results.setdefault("group_findings", []).append({"size": n, "seconds": round(seconds, 3)})
            print(f"group_findings {n:>7} findings: {seconds:8.3f} s  {seconds * 1000 / n:7.4f} s per 1,000", flush=True)
        for line in slope(points):
            print(f"group_findings {line}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
