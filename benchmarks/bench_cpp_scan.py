"""Benchmark: the C++/CUDA scanners are linear in file size.

    python benchmarks/bench_cpp_scan.py [--size 100000]

For each synthetic shape (ordinary kernels and bindings, and the inputs that
once made the scanners quadratic: many ``__global__`` words without a
parameter list, unbalanced ``.def(`` calls in a pybind module, deep brace
nesting, unclosed comments, long qualifier runs) it scans a file of SIZE and
of 4 x SIZE bytes with the library scan (:func:`analyse.library.cpp.scan_sources`)
and the cuda-extension pass's kernel finder, and prints the times and their
ratio. A linear scanner gives a ratio near 4; a quadratic one near 16.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPES = {
    "kernels+bindings": lambda i: (f"__global__ void k{i}(const float* x, float* y) {{ y[0] = x[0]; }}\n"
                                   f"at::Tensor f{i}(at::Tensor x) {{ k{i}<<<1, 1>>>(x.data_ptr<float>(), 0); return x; }}\n"),
    "global-without-parens": lambda i: "__global__ ",
    "unbalanced-def": lambda i: 'm.def("a", (',
    "nested-braces": lambda i: "{",
    "unclosed-comments": lambda i: "/*",
    "qualifier-run": lambda i: " const &",
    "pybind-py-arg": lambda i: f'  m.def("op{i}", &op{i}, "doc (CUDA)", py::arg("input"), py::arg("flip"));\n',
}


def make(shape: str, size: int) -> str:
    gen = SHAPES[shape]
    head = "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n" if "def" in shape or "py-arg" in shape else ""
    parts, n, i = [head], len(head), 0
    while n < size:
        p = gen(i)
        parts.append(p)
        n += len(p)
        i += 1
    return "".join(parts) + ("}\n" if head else "")


def timed(fn, *args, repeat: int = 3) -> float:
    """Best of *repeat* runs (the machine is shared; the minimum is the least noisy)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100_000)
    args = ap.parse_args()
    from analyse.cpp_syntax import cuda_kernels
    from analyse.library.cpp import scan_sources

    print(f"{'shape':24s} {'scan N':>9s} {'scan 4N':>9s} {'ratio':>6s} {'kern N':>9s} {'kern 4N':>9s} {'ratio':>6s}")
    with tempfile.TemporaryDirectory() as d:
        for shape in SHAPES:
            row = []
            for size in (args.size, 4 * args.size):
                p = Path(d) / f"{shape}.cu"
                text = make(shape, size)
                p.write_text(text)
                row.append((timed(scan_sources, [(p, p.name)]), timed(cuda_kernels, text)))
            (a1, b1), (a4, b4) = row
            print(f"{shape:24s} {a1:9.3f} {a4:9.3f} {a4 / max(a1, 1e-9):6.1f} {b1:9.3f} {b4:9.3f} {b4 / max(b1, 1e-9):6.1f}")


if __name__ == "__main__":
    main()
