"""Grades with one meaning each (#30 point 8) and defaults by data flow (#30 point 4): VALID/INVALID fixtures of shapes
met on real projects (a training program that hard-requires a packed-attention library, an MoE library with no NPU
backend, a project whose only GPU dependencies are in its manifests, config fields read through instance attributes)."""

import pytest

from analyse.modes import run_script
from analyse.passes._libtable import ThirdPartyDataError, parse_libs
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _verdict(rep):
    return rep["summary"]["verdict"]["effort"]


def _ep(rep, path):
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == path]
    return row["verdict"]


# ---------------------------------------------------------------- rework: a GPU-only library with no drop-in replacement

PACKED_TRAIN = {
    "train.py": """
        import torch
        from model import Net

        try:
            from xformers.ops import fmha
        except ImportError:
            raise AssertionError("xFormers is required for training")


        def main():
            net = Net().cuda()
            crops = [torch.randn(2, 4, 8).cuda(), torch.randn(2, 9, 8).cuda()]
            bias = fmha.BlockDiagonalMask.from_tensor_list(crops)
            out = net(crops, bias)
            out.sum().backward()


        if __name__ == "__main__":
            main()
    """,
    "model.py": """
        import torch


        class Net(torch.nn.Module):
            def forward(self, x, bias):
                return torch.cat(x, dim=1)
    """,
}


def test_a_packed_attention_mask_that_training_requires_grades_high(tmp_path, kb):
    # INVALID (old: medium): the import failure is a hard error, and the block-diagonal mask object (knowledge entry
    # xformers-block-diagonal, rework: high) packs the crops: no drop-in NPU replacement, the path is restructured
    write_files(tmp_path, PACKED_TRAIN)
    rep = run_script([tmp_path], kb)
    (imp,) = _by(rep, "xformers.ops.fmha")
    assert imp["severity"] == "manual" and imp["counted"] and "rework" not in imp
    (mask,) = _by(rep, "xformers.ops.fmha.BlockDiagonalMask.from_tensor_list")
    assert mask["severity"] == "manual" and mask["counted"] and mask["rework"] == "high" and mask["line"] == 14
    assert _verdict(rep) == "high"
    v = rep["summary"]["verdict"]
    assert v["drivers"][0]["api"] == "xformers.ops.fmha.BlockDiagonalMask.from_tensor_list"
    assert "High because a GPU-only library with no drop-in NPU replacement" in v["explanation"]
    assert "train.py:14" in v["explanation"]
    assert "no drop-in NPU replacement" in v["legend"]["high"]


def test_a_plain_memory_efficient_attention_call_stays_medium(tmp_path, kb):
    # VALID: memory_efficient_attention has a documented replacement (npu_fusion_attention / SDPA): a call swap
    files = {"train.py": """
        import torch
        from xformers.ops import memory_efficient_attention


        def main():
            q = torch.randn(2, 16, 4, 8).cuda()
            out = memory_efficient_attention(q, q, q)
            out.sum().backward()


        if __name__ == "__main__":
            main()
    """}
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    uses = _by(rep, "xformers.ops.memory_efficient_attention")
    assert uses and all(f["counted"] and f["severity"] == "manual" and "rework" not in f for f in uses)
    assert _verdict(rep) == "medium"
    assert "High because" not in rep["summary"]["verdict"]["explanation"]


MOE = {
    "main_moe.py": """
        import torch
        from tutel import system
        from moe_model import build


        def main():
            system.init_data_model_parallel(backend="nccl")
            model = build().cuda()
            model(torch.randn(2, 8).cuda()).sum().backward()


        if __name__ == "__main__":
            main()
    """,
    "main.py": """
        import torch
        from dense_model import build


        def main():
            model = build().cuda()
            model(torch.randn(2, 8).cuda()).sum().backward()


        if __name__ == "__main__":
            main()
    """,
    "moe_model.py": """
        import torch

        try:
            from tutel import moe as tutel_moe
        except ImportError:
            tutel_moe = None


        def build():
            return torch.nn.Linear(8, 8)
    """,
    "dense_model.py": """
        import torch


        def build():
            return torch.nn.Linear(8, 8)
    """,
}


def test_an_moe_library_with_no_npu_backend_grades_its_program_high(tmp_path, kb):
    # INVALID (old: medium): Tutel has no NPU backend and no drop-in replacement (knowledge entry tutel, rework: high);
    # VALID: the dense program beside it, which never imports Tutel, stays low
    write_files(tmp_path, MOE)
    rep = run_script([tmp_path], kb)
    (imp,) = _by(rep, "tutel.system")
    assert imp["path"] == "main_moe.py" and imp["line"] == 3 and imp["rework"] == "high" and imp["counted"]
    assert _ep(rep, "main_moe.py")["effort"] == "high"
    assert _ep(rep, "main.py")["effort"] == "low"
    assert _verdict(rep) == "high"
    # the guarded import with a None fallback that nothing uses is not a rework
    guarded = [f for f in rep["findings"] if f["path"] == "moe_model.py"]
    assert guarded and all(f["severity"] != "manual" and "rework" not in f for f in guarded), guarded


def test_rework_is_knowledge_validated_when_loaded():
    base = {"meta": {"source": "s", "date": "d"}, "libraries": [
        {"id": "x", "library": "X", "modules": ["xlib"], "severity": "manual", "reason": "r", "replacement": "p",
         "source": "s", "rework": "high"}]}
    table = parse_libs(base)
    assert table.match("xlib.f")[0].rework == "high"
    bad_value = {**base, "libraries": [dict(base["libraries"][0], rework="huge")]}
    with pytest.raises(ThirdPartyDataError, match="rework must be one of"):
        parse_libs(bad_value)
    not_manual = {**base, "libraries": [dict(base["libraries"][0], severity="blocker")]}
    with pytest.raises(ThirdPartyDataError, match="rework is for a manual entry"):
        parse_libs(not_manual)
