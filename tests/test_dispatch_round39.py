"""Dispatch in script mode, round 39: a registry filled by a plain function call at import time
(``register("name", "lora", Trainer)`` storing its argument into a nested module-level table) and read by a getter
(``return SUPPORTED[name][kind]``) whose result the program builds. The key is a required option, so which entry
runs cannot be told; but every registered entry derives from one project base class, whose code then runs
whichever is chosen (VALID), while entries that share no base stay reach unknown (INVALID). No project code copied."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _registry_demo(shared_base: bool) -> dict:
    base = "Trainer" if shared_base else "object"
    return {
        "kit/__init__.py": "",
        "kit/trainer.py": """
            import torch


            class Trainer:
                def __init__(self, args):
                    self.args = args

                def fit(self):
                    torch.cuda.reset_peak_memory_stats()
                    return self.args
        """,
        "kit/models/__init__.py": """
            from . import plain, wide
        """,
        "kit/models/utils.py": """
            from typing import Dict

            from kit.trainer import Trainer

            SUPPORTED: Dict[str, Dict[str, Trainer]] = {}


            def register(name: str, kind: str, trainer_cls):
                if name not in SUPPORTED:
                    SUPPORTED[name] = {}
                SUPPORTED[name][kind] = trainer_cls


            def get_trainer(name: str, kind: str):
                if name not in SUPPORTED:
                    raise ValueError(name)
                return SUPPORTED[name][kind]
        """,
        "kit/models/plain.py": f"""
            from kit.models.utils import register
            from kit.trainer import Trainer


            class PlainTrainer({base}):
                def __init__(self, args):
                    self.args = args


            register("plain", "lora", PlainTrainer)
        """,
        "kit/models/wide.py": f"""
            from kit.models.utils import register
            from kit.trainer import Trainer


            class WideTrainer({base}):
                def __init__(self, args):
                    self.args = args


            register("wide", "lora", WideTrainer)
        """,
        "train.py": """
            import argparse

            import kit.models
            from kit.models.utils import get_trainer


            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--model", required=True)
                args = parser.parse_args()
                trainer_cls = get_trainer(args.model, "lora")
                trainer = trainer_cls(args)
                trainer.fit()


            if __name__ == "__main__":
                main()
        """,
    }


def test_a_registry_whose_entries_share_a_base_class_runs_the_base_code(tmp_path, kb):
    # VALID (old: register(...) was no registration and get_trainer(...)'s result an untyped value: Trainer was
    # "defined in imported code but never named by reached code", its finding reach unknown and not counted)
    write_files(tmp_path, _registry_demo(shared_base=True))
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.reset_peak_memory_stats")
    assert f["path"] == "kit/trainer.py" and f["line"] == 10, f
    assert f["reach"]["status"] == "reachable" and f["counted"], f["reach"]
    assert f["reach"]["path"] == ["train.<main>", "train.main", "kit.trainer.Trainer", "kit.trainer.Trainer.fit"], \
        f["reach"]


def test_a_registry_whose_entries_share_no_base_stays_unknown(tmp_path, kb):
    # INVALID: the entries derive from no common project class, so nothing says Trainer runs
    write_files(tmp_path, _registry_demo(shared_base=False))
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.reset_peak_memory_stats")
    assert f["reach"]["status"] != "reachable" and not f["counted"], f["reach"]
