"""Test-only operators, loaded into the probe worker with --setup-file / NPU_ANALYSE_PROBE_SETUP.

npu_analyse_test::warns  emits the torch_npu CPU-fallback warning text (Python warning)
npu_analyse_test::prints writes the fallback text straight to file descriptor 2 (as C++ code does)
npu_analyse_test::aborts calls os.abort()
npu_analyse_test::sleeps sleeps far longer than the test timeout
npu_analyse_test::fails  raises
npu_analyse_test::segfaults reads address 0 (SIGSEGV)
"""

import os
import time
import warnings

try:
    import torch
except ImportError:  # collected by pytest on a machine without torch: a probe-worker setup file, not a test
    import pytest

    pytest.skip("probe worker setup file: needs torch (pip install torch==2.13.0)", allow_module_level=True)

FALLBACK_TEXT = ("CAUTION: The operator 'aten::npu_analyse_fake' is not currently supported on the NPU backend "
                 "and will fall back to run on the CPU. This may have performance implications.")

lib = torch.library.Library("npu_analyse_test", "DEF")
for name in ("warns", "prints", "aborts", "sleeps", "fails", "segfaults"):
    lib.define(f"{name}(Tensor x) -> Tensor")


def _warns(x):
    warnings.warn(FALLBACK_TEXT)
    return x + 1


def _prints(x):
    os.write(2, (f"[W101 00:00:00.0 VariableFallbackKernel.cpp:250] Warning: {FALLBACK_TEXT}\n").encode())
    return x * 2


def _aborts(x):
    os.abort()


def _sleeps(x):
    time.sleep(120)
    return x


def _segfaults(x):
    import ctypes

    ctypes.string_at(0)
    return x


def _fails(x):
    raise RuntimeError("npu_analyse_test::fails: kernel launch failed on purpose")


for name, fn in (("warns", _warns), ("prints", _prints), ("aborts", _aborts), ("sleeps", _sleeps),
                 ("fails", _fails), ("segfaults", _segfaults)):
    lib.impl(name, fn, "CompositeExplicitAutograd")
