"""Compare two JSON reports of npu-analyse with their timing fields removed.

    python benchmarks/compare_reports.py BEFORE.json AFTER.json [BEFORE2.json AFTER2.json ...]

A speed change must leave the report as it was: this script drops what a run's
clock writes (``summary.duration_s``, ``summary.analysis_s``,
``thirdparty.summary.timings``) and compares the rest, value by value. It prints
the first differences (JSON paths) of each pair and exits 1 when any pair differs.
"""

from __future__ import annotations

import json
import sys

# (path of keys) -> removed before comparing: the run's own clock
_TIMING = (("summary", "duration_s"), ("summary", "analysis_s"), ("thirdparty", "summary", "timings"))


def strip_timings(report: dict) -> dict:
    for path in _TIMING:
        node = report
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return report


def differences(a, b, path="", out=None, limit=20):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only in {'after' if key in b else 'before'}")
            else:
                differences(a[key], b[key], f"{path}/{key}", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}[{i}]", out, limit)
    elif a != b:
        out.append(f"{path}: {a!r:.120} -> {b!r:.120}")
    return out


def main(argv) -> int:
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    status = 0
    for before, after in zip(argv[::2], argv[1::2]):
        with open(before, encoding="utf-8") as fa, open(after, encoding="utf-8") as fb:
            diff = differences(strip_timings(json.load(fa)), strip_timings(json.load(fb)))
        print(f"{after}: {'identical' if not diff else 'DIFFERENT'}")
        for line in diff:
            print("   ", line)
        status |= bool(diff)
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
