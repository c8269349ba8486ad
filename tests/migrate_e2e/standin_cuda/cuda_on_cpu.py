"""Test-only: run a CUDA training script on the CPU (cuda -> cpu, nccl -> gloo)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from devices_on_cpu import map_device_to_cpu  # noqa: E402

import torch  # noqa: E402

map_device_to_cpu("cuda", "nccl")
torch.cuda.manual_seed = lambda seed: None
