"""A distributed wrapper under a CUDA device test the NPU fails in every scenario (stop 43).

``device = torch.accelerator.current_accelerator()`` is the NPU on an Ascend host (with transfer_to_npu too), so
``elif device.type == "cuda": model = nn.DataParallel(model)`` with ``else: model.to(device)`` is the other branch's
business: the DataParallel finding is listed, off the path, and is no driver. INVALID (still counted): the same
wrapper under a device count that transfer_to_npu answers for the NPU, and a process group under the program's own
``--distributed`` switch (its run mode). No project code copied.
"""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


PROGRAM = """
    import argparse

    import torch
    import torch.distributed as dist
    from torch import nn

    p = argparse.ArgumentParser()
    p.add_argument("--distributed", action="store_true")
    args = p.parse_args()


    def main():
        device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
        model = nn.Linear(4, 4)
        if args.distributed:
            dist.init_process_group("nccl")
        if {test}:
            model = nn.DataParallel(model)
        else:
            model.to(device)
        return model


    if __name__ == "__main__":
        main()
"""


def test_a_device_test_the_npu_fails_keeps_data_parallel_off_the_path(tmp_path, kb):
    write_files(tmp_path, {"train.py": PROGRAM.format(test="device.type == 'cuda'")})
    rep = run_script([tmp_path], kb)
    (dp,) = _by(rep, "torch.nn.DataParallel")
    assert dp["guard"]["npu_fallback"] is True and dp["guard"]["on_path"]["transfer_to_npu"] == "off"
    assert dp["counted"] is False
    assert "torch.nn.DataParallel" not in _drivers(rep)
    (pg,) = [f for f in rep["findings"] if f["api"].startswith("torch.distributed.backend")]
    assert pg["counted"] is True   # INVALID for the rule: the program's own distributed switch still counts


def test_a_device_count_transfer_answers_still_counts(tmp_path, kb):
    write_files(tmp_path, {"train.py": PROGRAM.format(test="torch.cuda.device_count() > 1")})
    rep = run_script([tmp_path], kb)
    (dp,) = _by(rep, "torch.nn.DataParallel")
    assert dp["counted"] is True
    assert "torch.nn.DataParallel" in _drivers(rep)
