"""Worker setup file (test only): a fake torch_npu whose "device" is the CPU.

Loaded in the probe worker with --setup-file, so `--device npu` runs the whole NPU code path
(NpuBackend, torch.npu.synchronize around timings, the documented-limitation checks, doc conflicts)
without an NPU. Values computed on the "device" are the CPU's, so every sample passes.
"""

import os
import sys

try:
    import torch
except ImportError:  # collected by pytest on a machine without torch: a probe-worker setup file, not a test
    import pytest

    pytest.skip("probe worker setup file: needs torch (pip install torch==2.13.0)", allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_npu  # noqa: E402

sys.path.pop(0)

fake_npu.install(torch, device_count=1)

from analyse.probe import worker  # noqa: E402

worker.NpuBackend.torch_device = lambda self: torch.device("cpu")
