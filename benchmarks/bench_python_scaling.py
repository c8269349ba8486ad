"""Benchmark: the Python analysis grows linearly with the length of a block.

    python benchmarks/bench_python_scaling.py [--size 2000] [--mode script|thirdparty]

Real projects hold long blocks: generated modules of thousands of top-level
statements, functions of hundreds of lines, registries of many ``def``s, a long
``try:`` of optional imports, a class of many methods. For each synthetic shape
this writes a project with SIZE and with 4 x SIZE repetitions of its unit, runs
the real command line on each (one process, no cache), and prints the times and
their ratio. A linear analysis gives a ratio near 4; a quadratic step near 16
(a 20,000-statement module once took 8.5 s instead of 4.8 s: every guard lookup
scanned its block for the statement's position).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SHAPES = {
    "top-level-statements": ("import torch\n", lambda i: f"x{i} = torch.cuda.device_count() + f{i}(x{i - 1} if {i} else 0)\n", ""),
    "npu-branches": ("import torch\n\ndef run(x):\n    if x.device.type == 'npu':\n        return x\n",
                     lambda i: f"    x = torch.cuda.amp.autocast()(x) + {i}\n", "    return x\n"),
    "long-function": ("import torch\n\ndef train(model, loader):\n",
                      lambda i: f"    y{i} = model(torch.zeros({i}).cuda()).sum()\n", "    return y0\n"),
    "early-exits": ("import torch\n\ndef pick(x):\n",
                    lambda i: f"    if not HAVE_{i}:\n        return x\n    x = torch.cuda.amp.autocast()(x) + {i}\n",
                    "    return x\n"),
    "try-of-imports": ("try:\n", lambda i: f"    import mod{i}\n    mod{i}.cuda_op(torch.zeros({i}))\n",
                       "except ImportError:\n    pass\n"),
    "many-defs": ("import torch\n", lambda i: f"\ndef f{i}(x):\n    return f{i - 1}(x).cuda() if {i} else x\n", ""),
    "class-of-methods": ("import torch\n\nclass Net(torch.nn.Module):\n",
                         lambda i: f"    def m{i}(self, x):\n        return self.m{max(i - 1, 0)}(x).cuda()\n", ""),
}


def make(folder: Path, shape: str, n: int) -> Path:
    head, unit, tail = SHAPES[shape]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gen.py").write_text(head + "".join(unit(i) for i in range(n)) + tail)
    return folder


def run(mode: str, path: Path, out: Path) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "analyse", mode, str(path), "-q", "--format", "json", "-o", str(out),
           "--jobs", "1", "--no-cache"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"npu-analyse exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2000, help="repetitions of each shape's unit (and 4 x that)")
    ap.add_argument("--mode", choices=("script", "thirdparty"), default="script")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " + ", ".join(SHAPES))
    ap.add_argument("--repeat", type=int, default=2, help="best of R runs for each size")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="npu-scaling-") as tmp:
        base = run(args.mode, make(Path(tmp) / "empty", "top-level-statements", 0), Path(tmp) / "o")
        print(f"start-up (one statement): {base:.2f} s; times below are without it")
        print(f"{'shape':<22} {'x' + str(args.size):>10} {'x' + str(4 * args.size):>10}  ratio (4 = linear)")
        for shape in [s.strip() for s in args.shapes.split(",") if s.strip()]:
            times = []
            for n in (args.size, 4 * args.size):
                path = make(Path(tmp) / f"{shape}-{n}", shape, n)
                best = min(run(args.mode, path, Path(tmp) / "o") for _ in range(max(1, args.repeat)))
                times.append(max(best - base, 1e-3))
            print(f"{shape:<22} {times[0]:9.2f}s {times[1]:9.2f}s  {times[1] / times[0]:5.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
