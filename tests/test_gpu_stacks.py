"""The GPU stacks of 2026 as data with provenance (#31 point 4): vLLM (vllm-ascend), Ray GPU resources, CUDA IPC
weight sharing, NVRTC kernels (a kernel to write), the kernel-hub loader, Isaac Gym / Lab,
TORCH_NPU_DEVICE_CAPABILITY and stale torch_npu 1.x APIs: each is a finding with its Ascend replacement and an
`explain` entry."""

from __future__ import annotations

import pytest

from tests.helpers import analyse_source

RL_TRAINER = """\
import ray
import torch
import torch_npu
from vllm import LLM, SamplingParams
from torch.multiprocessing.reductions import reduce_tensor


@ray.remote(num_gpus=1)
class Rollout:
    def __init__(self):
        self.llm = LLM(model="m")

    def weights(self, t):
        return reduce_tensor(t)


@ray.remote(num_cpus=1)
def log(x):
    return x


def main():
    actor = Rollout.options(num_gpus=1).remote()
    with torch_npu.npu.profile("/tmp/prof"):
        print(SamplingParams(temperature=0.5), actor, log.remote(1))


main()
"""


def _by(findings):
    out = {}
    for f in findings:
        out.setdefault((f.code, f.line), f)
    return out


def test_rl_trainer_stack_is_found_with_ascend_replacements(tmp_path, kb):
    findings = analyse_source(tmp_path, RL_TRAINER, kb, name="train.py").findings
    got = _by(findings)
    assert "vllm-ascend" in got[("NPU402", 11)].replacement                       # LLM(...)
    assert got[("NPU470", 8)].severity == "manual" and '"NPU": 1' in got[("NPU470", 8)].replacement   # num_gpus=1
    assert ("NPU470", 23) in got                                                   # .options(num_gpus=1)
    assert not [f for f in findings if f.code == "NPU470" and f.line == 17]         # num_cpus only
    ipc = got[("NPU006", 14)]
    assert ipc.api == "torch.multiprocessing.reductions.reduce_tensor" and "HCCL" in ipc.replacement
    assert "torch_npu.profiler.profile" in got[("NPU402", 24)].replacement          # stale 1.x profiler
    assert not [f for f in findings if f.code == "NPU301" and "reduce_tensor" in f.api]


NVRTC = """\
import cupy
import torch

src = 'extern "C" __global__ void add_one(float* x) { x[threadIdx.x] += 1; }'
k1 = torch.cuda._compile_kernel(src, "add_one")
k2 = cupy.RawKernel(src, "add_one")
"""


def test_nvrtc_kernels_are_kernels_to_write(tmp_path, kb):
    findings = analyse_source(tmp_path, NVRTC, kb, name="k.py").findings
    by_line = {f.line: f for f in findings if f.severity == "blocker" and f.line in (5, 6)}
    for line in (5, 6):
        assert "kernel to write" in by_line[line].message and "Triton-Ascend" in by_line[line].replacement


def test_isaac_gym_is_a_finding(tmp_path, kb):
    findings = analyse_source(tmp_path, "import isaacgym\nfrom isaacgym import gymapi\ngym = gymapi.acquire_gym()\n", kb,
                              name="sim.py").findings
    # a third-party GPU simulator with a CPU pipeline: restructuring (manual, rework high), not a kernel to write (#38)
    assert any(f.line == 1 and f.severity == "manual" and f.rework == "high" and "Isaac" in f.message for f in findings)


def test_kernel_hub_loader_is_not_the_kernel(tmp_path, kb):
    src = "from kernels import get_kernel\n\n\ndef act(x):\n    k = get_kernel('kernels-community/activation')\n    return k.gelu(x)\n"
    findings = analyse_source(tmp_path, src, kb, name="hub.py").findings
    import_line = [f for f in findings if f.line == 1]
    assert import_line and all(f.severity == "info" for f in import_line)     # the pure-Python loader
    assert [f.code for f in findings if f.line == 5 and f.severity == "blocker"] == ["NPU469"]   # the kernel id


@pytest.mark.parametrize("name, words", [
    ("vllm", "vllm-ascend"), ("isaacgym", "no Ascend build"), ("num_gpus=1", '"NPU": 1'),
    ("TORCH_NPU_DEVICE_CAPABILITY", "TORCH_NPU_DEVICE_CAPABILITY"),
    ("torch.multiprocessing.reductions.reduce_tensor", "CUDA IPC"), ("torch.cuda._compile_kernel", "NVRTC"),
    ("torch_npu.npu.profile", "torch_npu.profiler.profile"), ("cupy.RawKernel", "NVRTC"),
])
def test_explain_knows_the_gpu_stacks(name, words):
    from analyse.explain import explain_name

    text, status = explain_name(name)
    assert status == 0 and words in text, text


def test_placement_group_gpu_bundles(tmp_path, kb):
    src = ("from ray.util.placement_group import placement_group\n"
           "pg = placement_group([{'GPU': 1, 'CPU': 1}] * 4, strategy='PACK')\n"
           "cpu = placement_group([{'CPU': 4}])\n"
           "none = placement_group(bundles=[{'GPU': 0}])\n")
    findings = analyse_source(tmp_path, src, kb, name="pg.py").findings
    assert [(f.code, f.line) for f in findings if f.code == "NPU470"] == [("NPU470", 2)]
    from analyse.explain import explain_name

    assert explain_name('bundles={"GPU": ...}')[1] == 0
