"""Time `npu-analyse script` on a folder against plain `ast.parse` of the same files, in one run.

    python benchmarks/bench_script.py /path/to/project [--torch-version 2.8.0] [--repeat 1]

Prints lines, seconds, lines/s and the ratios (analysis / ast.parse, and the speed-up over the
~150 lines/s of MindStudio's PyTorch Analyse).
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyse.knowledge import load_knowledge  # noqa: E402
from analyse.modes import run_script  # noqa: E402
from analyse.files import decode_source, iter_files  # noqa: E402

MINDSTUDIO_LINES_PER_S = 150.0


def parse_all(root: Path):
    lines = 0
    files = 0
    t0 = time.perf_counter()
    for p in iter_files(root):
        try:
            text = decode_source(p.read_bytes())
            ast.parse(text)
        except (SyntaxError, ValueError, UnicodeDecodeError, OSError):
            continue
        files += 1
        lines += len(text.splitlines())
    return files, lines, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("path", type=Path)
    ap.add_argument("--torch-version", default="2.8.0")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    kb = load_knowledge(args.torch_version)
    best_parse = best_run = float("inf")
    report = None
    for _ in range(args.repeat):
        files, lines, t_parse = parse_all(args.path)
        best_parse = min(best_parse, t_parse)
        t0 = time.perf_counter()
        report = run_script([args.path], kb)
        best_run = min(best_run, time.perf_counter() - t0)
    s = report["summary"]
    print(f"project            {args.path}")
    print(f"files / lines      {files} / {lines}")
    print(f"ast.parse          {best_parse:8.3f} s   {lines / best_parse:10.0f} lines/s")
    print(f"npu-analyse script {best_run:8.3f} s   {lines / best_run:10.0f} lines/s   ({len(report['findings'])} findings, {len(report['errors'])} errors)")
    print(f"ratio script/ast.parse          {best_run / best_parse:8.1f}x")
    print(f"speed-up vs MindStudio (150 l/s) {lines / best_run / MINDSTUDIO_LINES_PER_S:8.1f}x")
    print(f"by category        {s['by_category']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
