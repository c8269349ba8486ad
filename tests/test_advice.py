"""precision-advice / performance-advice passes."""

from analyse.passes.advice import PerformanceAdvicePass, PrecisionAdvicePass
from analyse.passes.affinity import AffinityPass
from tests.helpers import analyse_source


def run(tmp_path, kb, src, extra=None, passes=None):
    res = analyse_source(tmp_path, src, kb, name="train.py", extra_files=extra,
                         passes=passes or [PrecisionAdvicePass(), PerformanceAdvicePass()])
    assert not res.errors, res.errors
    return res.findings


TRAIN = '''\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP

def main():
    dist.init_process_group("hccl")
    loader = DataLoader(ds, batch_size=8, num_workers=4)
    model = DDP(net, device_ids=[rank])
    opt = torch.optim.AdamW(model.parameters())
    torch.autograd.set_detect_anomaly(True)
    for step, (x, y) in enumerate(loader):
        x = x.to(device)
        y = y.cuda()
        m = x.float()
        out = torch.matmul(x, w)
        out2 = torch.matmul(out, w)
        loss = (out - y).pow(2).mean()
        loss.backward()
        if (step + 1) % 4 == 0:
            opt.step()
    idx = torch.nonzero(m)

if __name__ == "__main__":
    main()
'''


def test_training_script(tmp_path, kb):
    fs = run(tmp_path, kb, TRAIN)
    got = sorted((f.code, f.line, f.api) for f in fs)
    assert got == [
        ("NPU801", 16, "torch.matmul"),
        ("NPU802", 8, "torch.utils.data.DataLoader"),
        ("NPU803", 13, "torch.Tensor.to"),
        ("NPU803", 14, "torch.Tensor.cuda"),
        ("NPU804", 9, "torch.nn.parallel.DistributedDataParallel"),
        ("NPU805", 9, "torch.nn.parallel.DistributedDataParallel.no_sync"),
        ("NPU806", 11, "torch.autograd.set_detect_anomaly"),
        ("NPU807", 1, "project:compile-mode"),
        ("NPU808", 1, "project:task-queue"),
        ("NPU809", 1, "project:hccl-ffts"),
    ]
    by = {f.code: f for f in fs}
    assert by["NPU801"].category == "precision-advice" and "1 more use" in by["NPU801"].message
    assert by["NPU802"].replacement == "pin_memory=True"  # num_workers=4 is fine
    copies = sorted((f.line, f.replacement) for f in fs if f.code == "NPU803")
    assert copies == [(13, "x.to(device, non_blocking=True)"), (14, "y.cuda(non_blocking=True)")]
    assert by["NPU804"].replacement == "bucket_cap_mb=500"
    assert "jit_compile=False" in by["NPU807"].replacement
    assert by["NPU808"].replacement == "export TASK_QUEUE_ENABLE=1"
    assert by["NPU809"].replacement == "export HCCL_OP_BASE_FFTS_MODE_ENABLE=TRUE"
    assert all(f.path == "train.py" for f in fs if f.api.startswith("project:"))
    # the optimizer is affinity's (NPU710), never advice
    assert not any("AdamW" in f.api for f in fs)


def test_project_advice_once_and_on_main_script(tmp_path, kb):
    lib = "import torch\ndef f(m):\n    return torch.nonzero(m)\n"
    fs = run(tmp_path, kb, TRAIN, extra={"a_lib.py": lib, "b_lib.py": lib})
    proj = [f for f in fs if f.api.startswith("project:")]
    assert sorted(f.api for f in proj) == ["project:compile-mode", "project:hccl-ffts", "project:task-queue"]
    assert {f.path for f in proj} == {"train.py"}


def test_configured_project_gets_no_project_advice(tmp_path, kb):
    src = '''\
import os
import torch_npu
os.environ["TASK_QUEUE_ENABLE"] = "1"
torch_npu.npu.set_compile_mode(jit_compile=False)
from torch.utils.data import DataLoader
loader = DataLoader(ds, pin_memory=True, num_workers=8)
for x in loader:
    x = x.to(device, non_blocking=True)
    x = x.to(torch.float16)
    model(x).sum().backward()
idx = torch.nonzero(x)
torch.autograd.set_detect_anomaly(False)
'''
    assert run(tmp_path, kb, src) == []


def test_no_sync_used_and_no_accumulation(tmp_path, kb):
    src = '''\
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net, device_ids=[rank], bucket_cap_mb=500)
for i, x in enumerate(loader):
    with model.no_sync():
        model(x).sum().backward()
    if i % 2 == 0:
        opt.step()
'''
    fs = run(tmp_path, kb, src)
    assert "NPU805" not in {f.code for f in fs} and "NPU804" not in {f.code for f in fs}


def test_precision_once_per_report(tmp_path, kb):
    other = "import torch\ny = torch.matmul(a, b)\n"
    fs = run(tmp_path, kb, "import torch\nz = torch.matmul(a, b)\n", extra={"other.py": other})
    assert [(f.code, f.api) for f in fs if f.code == "NPU801"] == [("NPU801", "torch.matmul")]


def test_no_double_report_with_affinity(tmp_path, kb):
    src = "import torch\nopt = torch.optim.Adam(params)\n"
    fs = run(tmp_path, kb, src, passes=[AffinityPass(), PrecisionAdvicePass(), PerformanceAdvicePass()])
    assert [(f.code, f.line) for f in fs] == [("NPU710", 2)]
