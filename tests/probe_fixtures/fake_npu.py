"""A fake torch_npu at the module boundary: records what the probe calls.

Installed into sys.modules by tests/test_probe_backend.py; nothing here runs an NPU.
"""

import sys
import types

CALLS = []


def install(torch, device_count=2, available=True, version="2.13.0.post1"):
    CALLS.clear()
    mod = types.ModuleType("torch_npu")
    mod.__version__ = version
    npu = types.SimpleNamespace(
        is_available=lambda: CALLS.append(("is_available",)) or available,
        device_count=lambda: CALLS.append(("device_count",)) or device_count,
        set_device=lambda i: CALLS.append(("set_device", i)),
        synchronize=lambda *a: CALLS.append(("synchronize",) + a),
        get_device_name=lambda i=0: CALLS.append(("get_device_name", i)) or f"Ascend910B{i}",
    )
    sys.modules["torch_npu"] = mod
    torch.npu = npu
    return mod


def uninstall(torch):
    sys.modules.pop("torch_npu", None)
    if hasattr(torch, "npu") and isinstance(torch.npu, types.SimpleNamespace):
        del torch.npu
