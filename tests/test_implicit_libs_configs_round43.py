"""Switches set in the configuration a program loads (stop 43, data/implicit_gpu_libs.yaml).

A Lightning ``Trainer`` built by Hydra from ``trainer: {_target_: lightning.pytorch.trainer.Trainer, accelerator:
gpu}`` asks for Lightning's CUDA accelerator as much as ``Trainer(accelerator="gpu")`` written in the code: NPU470
where the program names the configuration (``@hydra.main``, ``OmegaConf.load("...")``), counted on the path. Read:
the Hydra default config and its defaults list; the configs shipped under config_path when the default is not in the
project (the command line names one); a literal path; ``target`` + ``params`` (instantiate_from_config).

VALID: ``accelerator: cpu``, an interpolation (``${oc.env:ACC}``), a mapping building another class, a keyword the
switch does not have. No project code copied.
"""

from __future__ import annotations

from helpers import write_files

from analyse.modes import run_script

TRAIN = """
    import hydra
    from omegaconf import DictConfig


    @hydra.main(version_base="1.3", config_path="configs", config_name="{name}")
    def main(cfg: DictConfig):
        trainer = hydra.utils.instantiate(cfg.trainer)
        trainer.fit(hydra.utils.instantiate(cfg.model))


    if __name__ == "__main__":
        main()
"""

BASE = """
    trainer:
      _target_: lightning.pytorch.trainer.Trainer
      accelerator: {acc}
      devices: auto
      precision: bf16-mixed
    model:
      _target_: mypkg.Model
      accelerator: gpu
"""

CHILD = """
    defaults:
      - base
      - _self_
    trainer:
      max_steps: 10
"""


def _470(rep):
    return [f for f in rep["findings"] if f["code"] == "NPU470"]


def test_default_config_and_its_defaults_list(tmp_path, kb):
    write_files(tmp_path, {"train.py": TRAIN.replace("{name}", "finetune"),
                           "configs/base.yaml": BASE.format(acc="gpu"), "configs/finetune.yaml": CHILD})
    rep = run_script([tmp_path], kb)
    (f,) = _470(rep)
    assert (f["path"], f["line"], f["severity"], f["api"]) == ("train.py", 6, "manual", "accelerator='gpu'")
    assert "configs/base.yaml:4" in f["message"] and "lightning.pytorch.trainer.Trainer" in f["message"]
    assert f["counted"] is True
    (ep,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "train.py"]
    assert "accelerator='gpu'" in [d["api"] for d in ep["verdict"]["drivers"]]
    assert ep["verdict"]["effort"] != "none"


def test_cpu_accelerator_and_interpolation_are_nothing(tmp_path, kb):
    for i, acc in enumerate(("cpu", "${oc.env:ACC}")):
        root = tmp_path / str(i)
        write_files(root, {"train.py": TRAIN.replace("{name}", "base"), "configs/base.yaml": BASE.format(acc=acc)})
        assert _470(run_script([root], kb)) == []   # VALID (model's `accelerator: gpu` builds another class)


def test_missing_default_reads_the_shipped_configs(tmp_path, kb):
    write_files(tmp_path, {"train.py": TRAIN.replace("{name}", "not_shipped.yaml"),
                           "configs/base.yaml": BASE.format(acc="gpu"), "configs/finetune.yaml": CHILD})
    (f,) = _470(run_script([tmp_path], kb))   # base.yaml read directly and through finetune's defaults: once
    assert "the command line names one" in f["message"] and f["line"] == 6


def test_a_literal_path_with_target_and_params(tmp_path, kb):
    write_files(tmp_path, {
        "main.py": """
            from omegaconf import OmegaConf


            def run():
                cfg = OmegaConf.load("configs/run.yaml")
                return cfg


            if __name__ == "__main__":
                run()
        """,
        "configs/run.yaml": """
            trainer:
              target: pytorch_lightning.Trainer
              params:
                gpus: 2
        """,
    })
    (f,) = _470(run_script([tmp_path], kb))
    assert (f["path"], f["line"], f["api"]) == ("main.py", 6, "gpus=2")
    assert "configs/run.yaml:5" in f["message"]
