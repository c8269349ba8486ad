"""Cold start-up of `npu-analyse script` on a one-file project, against a Python that only parses the file.

    python benchmarks/bench_startup.py [FILE.py] [--rounds 15]

Each configuration runs as a fresh process, ``--rounds`` times, interleaved; the best (lowest) wall and
CPU times are printed, absolute and as a ratio to the parse-only process (``python -c 'import ast;
ast.parse(...)'``: interpreter start-up plus parsing, the floor any Python tool pays):

* ``ast.parse``: the floor;
* ``cold``: ``npu-analyse script FILE -o - --format json --no-cache`` (what a pre-commit hook pays on a new
  file: no cache, every import, the knowledge base, the analysis and the report);
* ``warm``: the same with a cache folder that already holds this run's report (a whole-report hit).

The package is byte-compiled first (``compileall``): an installed wheel is, and with
``PYTHONDONTWRITEBYTECODE`` set every run would compile the sources again. Without FILE, a 30-line
training script is written to a temporary folder. Best-of, because the machine may be shared.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = '''\
import argparse
import torch
import torch.nn as nn
import torch.distributed as dist


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(x).log_softmax(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="nccl")
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    torch.cuda.set_device(dist.get_rank())
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        loss = model(torch.randn(32, 128).cuda()).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
'''


def timed(cmd, env) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()

    compileall.compile_dir(str(ROOT / "analyse"), quiet=1)
    tmp = Path(tempfile.mkdtemp(prefix="npu-analyse-bench-startup-"))
    target = Path(args.file).resolve() if args.file else tmp / "train.py"
    if not args.file:
        target.write_text(SCRIPT)
    cache = tmp / "cache"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    py = sys.executable
    base = [py, "-m", "analyse", "script", str(target), "-o", "-", "--format", "json"]
    configs = {
        "ast.parse": [py, "-c", f"import ast; ast.parse(open({str(target)!r}, 'rb').read())"],
        "cold": base + ["--no-cache"],
        "warm": base + ["--cache-dir", str(cache)],
    }
    timed(configs["warm"], env)   # fills the cache for the warm runs
    best = {k: [float("inf"), float("inf")] for k in configs}
    for _ in range(args.rounds):
        for name, cmd in configs.items():
            wall, cpu = timed(cmd, env)
            best[name][0] = min(best[name][0], wall)
            best[name][1] = min(best[name][1], cpu)
    floor_wall, floor_cpu = best["ast.parse"]
    lines = len(target.read_text(encoding="utf-8", errors="replace").splitlines())
    print(f"{target.name}: {lines} lines; best of {args.rounds} rounds; python {sys.version.split()[0]}")
    print(f"{'run':<10} {'wall':>9} {'x parse':>8} {'cpu':>9} {'x parse':>8}")
    for name, (wall, cpu) in best.items():
        print(f"{name:<10} {wall:8.3f}s {wall / floor_wall:7.1f}x {cpu:8.3f}s {cpu / max(floor_cpu, 1e-6):7.1f}x")


if __name__ == "__main__":
    main()
