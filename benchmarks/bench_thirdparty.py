"""Benchmark of `npu-analyse thirdparty` on a library folder.

    python benchmarks/bench_thirdparty.py PATH [--torch-version 2.8.0]

Prints the plain ``ast.parse`` time of the same Python files (the floor any
Python analyser pays), the analysis phases (astroid parse, passes, call-graph
build, propagation), their ratios to ast.parse, function counts and peak RSS.
"""

from __future__ import annotations

import argparse
import ast
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--torch-version", default=None)
    args = ap.parse_args()
    from analyse.knowledge import DEFAULT_TORCH_VERSION, load_knowledge
    from analyse.files import discover
    from analyse.library import analyse_library_data

    root = Path(args.path)
    files = [f[0] for f in discover([root])]
    t0 = time.perf_counter()
    n_ok = 0
    for f in files:
        try:
            ast.parse(f.read_bytes())
            n_ok += 1
        except (SyntaxError, ValueError):
            pass
    ast_s = time.perf_counter() - t0

    kb = load_knowledge(args.torch_version or DEFAULT_TORCH_VERSION)
    t0 = time.perf_counter()
    res = analyse_library_data([root], kb)
    total = time.perf_counter() - t0
    t = res.timings
    s = res.summary
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"files: {len(files)} python ({n_ok} parse), lines {res.lines_analysed:,}")
    print(f"ast.parse (once):        {ast_s:8.2f} s")
    for k in ("parse_s", "passes_s", "callgraph_s", "propagation_s"):
        print(f"{k:<24} {t[k]:8.2f} s   x{t[k] / ast_s if ast_s else 0:6.2f} of ast.parse")
    print(f"total analyse_library:   {total:8.2f} s   x{total / ast_s if ast_s else 0:6.2f} of ast.parse")
    print(f"functions: {s['functions_total']:,}  affected: {s['affected']:,}  by status: {s['by_status']}")
    print(f"public entry points: {s['public_entry_points']:,}  affected: {s['public_affected']:,}")
    print(f"call graph: {s['call_graph']}")
    print(f"findings: {len(res.findings):,}  errors: {len(res.errors):,}  peak RSS: {rss:.0f} MB")


if __name__ == "__main__":
    main()
