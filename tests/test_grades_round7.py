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


# ---------------------------------------------------------------- GPU-only dependencies named only in the manifests

PURE_TORCH = {
    "train.py": """
        import torch


        def main():
            model = torch.nn.Linear(4, 4)
            loss = model(torch.randn(2, 4)).sum()
            loss.backward()


        if __name__ == "__main__":
            main()
    """,
}


def test_a_project_whose_only_gpu_dependencies_are_in_its_manifests_grades_low(tmp_path, kb):
    # INVALID (old: none; #30 "Done when"): the requirements name flash-attn and bitsandbytes, the Dockerfile a CUDA
    # image; no program imports them: low (never more), driven by the manifests, and the program's own row stays none
    files = dict(PURE_TORCH, **{
        "requirements.txt": "torch==2.8.0\nflash-attn==2.5.8\nbitsandbytes>=0.41\n",
        "Dockerfile": "FROM nvcr.io/nvidia/pytorch:24.02-py3\nCOPY . /app\n",
    })
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    v = rep["summary"]["verdict"]
    assert v["effort"] == "low"
    assert _ep(rep, "train.py")["effort"] == "none"
    (fa,) = _by(rep, "package:flash-attn")
    assert fa["path"] == "requirements.txt" and fa["line"] == 2 and fa["counted"]
    assert {d["api"] for d in v["drivers"]} >= {"package:flash-attn", "package:bitsandbytes"}
    assert "Low only because the manifests name GPU-only dependencies" in v["explanation"]
    assert "flash-attn (requirements.txt:2)" in v["explanation"]
    assert "the manifests set the grade" in v["explanation"]


def test_manifests_alone_never_grade_above_low(tmp_path, kb):
    # VALID: a package with no NPU path at all (pycuda: blocker in the knowledge) in the requirements still grades low
    # when no code uses it, with or without an entry point
    files = {"requirements.txt": "pycuda==2024.1\ntensorrt\n", "lib.py": "import torch\n\nX = torch.zeros(2)\n"}
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (pc,) = _by(rep, "package:pycuda")
    assert pc["severity"] == "blocker"
    assert _verdict(rep) == "low"
    write_files(tmp_path, PURE_TORCH)
    rep = run_script([tmp_path], kb)
    assert _verdict(rep) == "low"


def test_a_program_driven_grade_is_kept_and_test_manifests_do_not_count(tmp_path, kb):
    # VALID: a program that needs work keeps its own grade and drivers (the manifests add nothing), and a GPU-only
    # package that only the tests' requirements name does not lift a project with nothing to change
    files = dict(PURE_TORCH, **{"tests/requirements.txt": "flash-attn==2.5.8\n"})
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    assert _verdict(rep) == "none"
    files = {"train.py": PURE_TORCH["train.py"].replace("model = torch.nn.Linear(4, 4)",
                                                        "model = torch.nn.Linear(4, 4).cuda()"),
             "requirements.txt": "flash-attn==2.5.8\n"}
    write_files(tmp_path / "b", files)
    rep = run_script([tmp_path / "b"], kb)
    v = rep["summary"]["verdict"]
    assert v["effort"] == "low"
    assert [d["api"] for d in v["drivers"]][:1] == ["torch.nn.Module.cuda"], v["drivers"]
    assert "Low only because the manifests" not in v["explanation"]
    (fa,) = _by(rep, "package:flash-attn")
    assert not fa["counted"]


# ---------------------------------------------------------------- defaults by data flow (#30 point 4): config objects

def _config_project(use_te="False", num_experts="1", fp8_format='"hybrid"'):
    return {
        "config.py": f"""
            from dataclasses import dataclass


            @dataclass
            class ModelArgs:
                use_te: bool = {use_te}
                num_experts: int = {num_experts}
                expert_interval: int = 1
                fp8_format: str = {fp8_format}
        """,
        "model.py": """
            import torch


            class MLP(torch.nn.Module):
                def forward(self, x):
                    return x * 2


            class MoE(torch.nn.Module):
                def forward(self, x):
                    from megablocks import ops
                    return ops.sort(x)


            class Recipe:
                def __init__(self, args):
                    if args.fp8_format == "hybrid":
                        from transformer_engine.common import recipe
                        self.fmt = recipe.Format.HYBRID


            class Layer(torch.nn.Module):
                def __init__(self, args, layer_number):
                    super().__init__()
                    self.args = args
                    self.num_experts = args.num_experts if layer_number % args.expert_interval == 0 else 1
                    if self.num_experts > 1:
                        self.mlp = MoE()
                    else:
                        self.mlp = MLP()

                def forward(self, x):
                    if self.args.use_te:
                        import transformer_engine.pytorch as te
                        x = te.Linear(4, 4)(x)
                        recipe = Recipe(self.args)
                    return self.mlp(x)
        """,
        "train.py": """
            import torch
            from config import ModelArgs
            from model import Layer


            def main():
                args = ModelArgs()
                layer = Layer(args, 0).cuda()
                layer(torch.randn(2, 4).cuda()).sum().backward()


            if __name__ == "__main__":
                main()
        """,
    }


def _counted(rep, prefix):
    return [(f["path"], f["line"]) for f in rep["findings"] if f["api"].startswith(prefix) and f["counted"]]


def test_config_fields_read_through_instance_attributes_keep_their_defaults(tmp_path, kb):
    # INVALID (old: medium, megablocks and transformer_engine counted): `self.args.use_te` (the constructor keeps its
    # parameter: self.args = args) is the dataclass default False; `self.num_experts` is 1 whichever way the
    # undecidable test goes (num_experts = 1 by default, else 1); `self.mlp(x)` runs MoE.forward only on an MoE the
    # program builds, and it builds one only under `self.num_experts > 1`; the recipe class, built only under the off
    # `use_te`, keeps that guard over its own `fp8_format == "hybrid"` test (true by default)
    write_files(tmp_path, _config_project())
    rep = run_script([tmp_path], kb)
    assert _counted(rep, "megablocks") == []
    assert _counted(rep, "transformer_engine") == []
    (sort,) = _by(rep, "megablocks.ops.sort")
    assert sort["guard"]["on_path"]["transfer_to_npu"] == "off" and "num_experts" in sort["guard"]["condition"]
    (hybrid,) = _by(rep, "transformer_engine.common.recipe.Format.HYBRID")
    assert hybrid["guard"]["on_path"]["transfer_to_npu"] == "off" and "use_te" in hybrid["guard"]["condition"]
    assert _verdict(rep) == "low"


@pytest.mark.parametrize("field, prefix", [("use_te", "transformer_engine"), ("num_experts", "megablocks")])
def test_config_fields_switched_on_by_their_defaults_count(tmp_path, kb, field, prefix):
    # VALID: the same code with the field on by default (use_te = True, num_experts = 8) reaches the library
    kw = {"use_te": "True"} if field == "use_te" else {"num_experts": "8"}
    write_files(tmp_path, _config_project(**kw))
    rep = run_script([tmp_path], kb)
    assert _counted(rep, prefix), [(f["api"], f.get("guard"), f.get("off_path")) for f in rep["findings"]
                                   if f["api"].startswith(prefix)]
    assert _verdict(rep) in ("medium", "high")
