"""Dispatch in script mode, round 38: which class a program's default run builds when configuration makes the choice
(alternative imports under an ``if``/``elif`` on an option). VALID/INVALID fixtures of the shapes met; no project code
copied."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


# ---------------------------------------------------------------- if opt.kind == 'x': from a import Net / elif ...

def _backbone_demo(default: str) -> dict:
    return {
        "nets/__init__.py": "",
        "nets/plain.py": """
            import torch


            class Net(torch.nn.Module):
                def __init__(self, opt):
                    super().__init__()
                    self.fc = torch.nn.Linear(4, 4)

                def forward(self, x):
                    return self.fc(x.cuda())
        """,
        "nets/fused.py": """
            import torch
            from torch.utils.cpp_extension import load

            _ext = load(name="fused_ext", sources=["fused.cu"])


            class Net(torch.nn.Module):
                def __init__(self, opt):
                    super().__init__()
                    self.w = torch.nn.Parameter(torch.zeros(4))

                def forward(self, x):
                    return _ext.fused_forward(x, self.w)
        """,
        "main.py": f"""
            import argparse
            import torch

            parser = argparse.ArgumentParser()
            parser.add_argument("--backbone", type=str, default="{default}", choices=["plain", "fused"])
            opt = parser.parse_args()

            if opt.backbone == "plain":
                from nets.plain import Net
            elif opt.backbone == "fused":
                from nets.fused import Net
            else:
                raise NotImplementedError(opt.backbone)

            model = Net(opt)
            print(model(torch.zeros(4)))
        """,
    }


def test_the_option_default_picks_the_alternative_import_the_program_builds(tmp_path, kb):
    # VALID (old: `Net` bound by two imports is unresolved, the kernel call of the fused class is reach unknown):
    # the default backbone "fused" selects nets.fused.Net, so its forward (the JIT-built extension) runs
    write_files(tmp_path, _backbone_demo("fused"))
    rep = run_script([tmp_path], kb)
    (kernel,) = _by(rep, "fused_ext.fused_forward")
    assert kernel["line"] == 14 and kernel["counted"] and kernel["reach"]["status"] == "reachable", kernel
    assert kernel["reach"]["path"] == ["main.<module>", "nets.fused.Net.forward"], kernel["reach"]
    assert "fused_ext.fused_forward" in _drivers(rep)
    assert rep["summary"]["verdict"]["effort"] == "blocked"
    # the other alternative is not built: its .cuda() is no driver
    (cuda,) = _by(rep, "torch.Tensor.cuda")
    assert not cuda["counted"], cuda


def test_the_option_default_rules_out_the_other_alternative_import(tmp_path, kb):
    # INVALID (old: neither class resolved, the program graded none): the default "plain" builds nets.plain.Net,
    # whose .cuda() runs; the fused class's kernel is not on the default path
    write_files(tmp_path, _backbone_demo("plain"))
    rep = run_script([tmp_path], kb)
    (cuda,) = _by(rep, "torch.Tensor.cuda")
    assert cuda["path"] == "nets/plain.py" and cuda["line"] == 11 and cuda["counted"], cuda
    assert cuda["reach"]["path"] == ["main.<module>", "nets.plain.Net.forward"], cuda["reach"]
    (kernel,) = _by(rep, "fused_ext.fused_forward")
    assert not kernel["counted"], kernel
    assert rep["summary"]["verdict"]["effort"] == "low"
    assert _drivers(rep) == ["torch.Tensor.cuda"]


def test_an_option_without_a_known_default_leaves_the_alternative_imports_open(tmp_path, kb):
    # the option is required (no default): either class may be built, nothing is picked (reach unknown)
    files = _backbone_demo("plain")
    files["main.py"] = files["main.py"].replace('default="plain", ', "required=True, ")
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (kernel,) = _by(rep, "fused_ext.fused_forward")
    assert kernel["reach"]["status"] == "unknown", kernel["reach"]
    (cuda,) = _by(rep, "torch.Tensor.cuda")
    assert cuda["reach"]["status"] == "unknown", cuda["reach"]


# ---------------------------------------------------------------- Hydra compose(config_name=args.config)

def _hydra_demo(config_home: str = "kit/configs") -> dict:
    return {
        "kit/__init__.py": "",
        f"{config_home}/runs/finetune.yaml": """
            trainer:
              _target_: training.loop.Trainer
              max_epochs: 2
        """,
        "training/__init__.py": "",
        "training/loop.py": """
            import torch
            import torch.distributed as dist


            class Trainer:
                def __init__(self, max_epochs):
                    self.max_epochs = max_epochs

                def run(self):
                    torch.cuda.set_device(0)
                    dist.init_process_group(backend="nccl")
        """,
        "training/train.py": """
            from argparse import ArgumentParser
            from hydra import compose, initialize_config_module
            from hydra.utils import instantiate


            def main(args):
                cfg = compose(config_name=args.config)
                trainer = instantiate(cfg.trainer)
                trainer.run()


            if __name__ == "__main__":
                initialize_config_module("kit", version_base="1.2")
                parser = ArgumentParser()
                parser.add_argument("-c", "--config", required=True, type=str)
                main(parser.parse_args())
        """,
    }


def test_a_config_named_on_the_command_line_builds_the_targets_of_the_shipped_configs(tmp_path, kb):
    # VALID (old: the config name is no literal, so the trainer is unreached and the program graded none): the configs
    # the project ships under Hydra's search path (the package initialize_config_module names) say what it builds
    write_files(tmp_path, _hydra_demo())
    rep = run_script([tmp_path], kb)
    (nccl,) = [f for f in rep["findings"] if f["path"] == "training/loop.py" and "nccl" in f["api"]]
    assert nccl["line"] == 12 and nccl["counted"] and nccl["reach"]["status"] == "reachable", nccl
    assert nccl["reach"]["path"] == ["training.train.<main>", "training.train.main", "training.loop.Trainer", "training.loop.Trainer.run"], \
        nccl["reach"]
    assert "kit/configs/runs/finetune.yaml" in nccl["reach"]["reason"], nccl["reach"]
    eps = {e["path"]: e for e in rep["summary"]["entry_points"]}
    assert eps["training/train.py"]["verdict"]["effort"] == "low", eps["training/train.py"]["verdict"]


def test_configs_outside_the_search_path_build_nothing(tmp_path, kb):
    # INVALID: the YAML lies outside the package Hydra searches (a folder of examples): it is no config the program
    # can be given by name, and the trainer stays unreached
    write_files(tmp_path, _hydra_demo("examples/configs"))
    rep = run_script([tmp_path], kb)
    (nccl,) = [f for f in rep["findings"] if f["path"] == "training/loop.py" and "nccl" in f["api"]]
    assert not nccl["counted"] and nccl["reach"]["status"] == "unreached", nccl


# ---------------------------------------------------------------- a string-keyed factory: make("fused") -> if kind == "fused"

def _factory_demo(key: str) -> dict:
    return {
        "enc/__init__.py": "",
        "enc/fused.py": """
            import torch
            from torch.utils.cpp_extension import load

            _ext = load(name="fused_enc", sources=["enc.cu"])


            class FusedEncoder(torch.nn.Module):
                def forward(self, x):
                    return _ext.encode(x)
        """,
        "encoding.py": """
            import torch


            def get_encoder(kind, dim=3):
                if kind == "plain":
                    return torch.nn.Identity(), dim
                elif kind == "fused":
                    from enc.fused import FusedEncoder
                    return FusedEncoder(), dim * 2
                raise NotImplementedError(kind)
        """,
        "run.py": f"""
            import torch
            from encoding import get_encoder

            if __name__ == "__main__":
                encoder, out_dim = get_encoder("{key}", dim=3)
                print(encoder(torch.zeros(out_dim)))
        """,
    }


def test_a_factory_branch_selected_by_the_callers_literal_runs(tmp_path, kb):
    # VALID (old: `kind == "fused"` is a value the analysis cannot see, so the JIT build is conditional and not counted):
    # the reached call passes "fused", so the branch, its import and the class it builds run
    write_files(tmp_path, _factory_demo("fused"))
    rep = run_script([tmp_path], kb)
    (build,) = _by(rep, "torch.utils.cpp_extension.load")
    assert build["path"] == "enc/fused.py" and build["line"] == 5, build
    assert build["reach"]["status"] == "reachable" and build["counted"], build
    assert build["guard"]["on_path"]["transfer_to_npu"] == "on", build["guard"]
    assert "kind='fused' from the call at run.py:6" in build["guard"]["condition"], build["guard"]
    assert rep["summary"]["verdict"]["effort"] == "blocked"


def test_a_factory_branch_no_reached_caller_selects_stays_conditional(tmp_path, kb):
    # INVALID: the only call passes "plain"; the fused branch is not turned on by it (still conditional, not counted)
    write_files(tmp_path, _factory_demo("plain"))
    rep = run_script([tmp_path], kb)
    (build,) = _by(rep, "torch.utils.cpp_extension.load")
    assert not build["counted"], build
    assert build["guard"]["on_path"]["transfer_to_npu"] == "conditional", build["guard"]
    assert rep["summary"]["verdict"]["effort"] != "blocked"
