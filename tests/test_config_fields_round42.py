"""Defaults of config-class fields, read as written, round 42.

A ``@dataclass`` config (no ``__init__`` of its own) built in the program (``train_config, fsdp_config =
TRAIN_CONFIG(), FSDP_CONFIG()``, then updated from the command line) holds its fields' defaults: ``if
train_config.quantization:`` with ``quantization: str = None`` is off on the default path, so the quantization
library reached only under it is opt-in (:func:`analyse.conditions.build.collect_instance_settings` for config
classes, and a parallel assignment binds each name to its element).

INVALID (the old code read no default there: the test was no guard and the library call counted): the 8-bit
quantization call is off by default and is no driver of the program.

VALID: a field whose default turns the branch on (``quantization: str = "8bit"``), a constructor call that passes
the field, or a class that assigns the field again in a method keep it on the path. Shapes modelled on what the
projects do; no project code copied.
"""

from __future__ import annotations

import astroid

from analyse.conditions.build import _parallel_value, collect_instance_settings
from analyse.modes import run_script
from helpers import write_files


def _project(field: str = "quantization: str = None", make: str = "TRAIN_CONFIG()", post: str = "") -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/configs/__init__.py": """
            from pkg.configs.training import train_config
            from pkg.configs.fsdp import fsdp_config
            from pkg.configs.quant import quant_config
        """,
        "pkg/configs/training.py": f"""
            from dataclasses import dataclass


            @dataclass
            class train_config:
                model_name: str = "tiny"
                enable_fsdp: bool = False
                {field}
            {post}
        """,
        "pkg/configs/fsdp.py": """
            from dataclasses import dataclass


            @dataclass
            class fsdp_config:
                pure_bf16: bool = False
        """,
        "pkg/configs/quant.py": """
            from dataclasses import dataclass

            from transformers import BitsAndBytesConfig


            @dataclass
            class quant_config:
                quant_type: str = "fp4"

                def create(self, quantization: str):
                    if quantization == "4bit":
                        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=self.quant_type)
                    return BitsAndBytesConfig(load_in_8bit=True)
        """,
        "pkg/utils.py": """
            def update_config(configs, **kwargs):
                for c in configs:
                    for k, v in kwargs.items():
                        if hasattr(c, k):
                            setattr(c, k, v)
        """,
        "pkg/finetune.py": f"""
            import fire
            import torch
            from transformers import AutoModelForCausalLM

            from pkg.configs import fsdp_config as FSDP_CONFIG, quant_config as QUANT_CONFIG, train_config as TRAIN_CONFIG
            from pkg.utils import update_config


            def main(**kwargs):
                train_config, fsdp_config = {make}, FSDP_CONFIG()
                update_config((train_config, fsdp_config), **kwargs)
                bnb = None
                if train_config.quantization:
                    qc = QUANT_CONFIG()
                    bnb = qc.create(train_config.quantization)
                model = AutoModelForCausalLM.from_pretrained(train_config.model_name, quantization_config=bnb)
                if torch.cuda.is_available():
                    model.to("cuda")


            if __name__ == "__main__":
                fire.Fire(main)
        """,
    }


def _eight_bit(rep):
    (f,) = [f for f in rep["findings"] if f["api"] == "load_in_8bit=True"]
    return f


def _drivers(rep):
    (ep,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "pkg/finetune.py"]
    return [d["api"] for d in ep["verdict"]["drivers"]]


def test_a_field_left_none_keeps_the_branch_off(tmp_path, kb):
    write_files(tmp_path, _project())
    rep = run_script([tmp_path], kb)
    f = _eight_bit(rep)
    assert f["counted"] is False
    assert f["guard"]["on_path"]["transfer_to_npu"] == "off"
    assert f["guard"]["path"] == "pkg/finetune.py" and f["guard"]["line"] == 14
    assert f["off_path"]["reason"] == "off-by-default"
    assert "load_in_8bit=True" not in _drivers(rep)


def test_a_field_whose_default_turns_it_on_keeps_it_on_the_path(tmp_path, kb):
    write_files(tmp_path, _project(field='quantization: str = "8bit"'))
    rep = run_script([tmp_path], kb)
    assert _eight_bit(rep)["counted"] is True
    assert "load_in_8bit=True" in _drivers(rep)


def test_a_constructor_that_passes_the_field_turns_it_on(tmp_path, kb):
    write_files(tmp_path, _project(make='TRAIN_CONFIG(quantization="8bit")'))
    rep = run_script([tmp_path], kb)
    assert _eight_bit(rep)["counted"] is True


def test_a_field_the_class_assigns_again_is_no_setting(tmp_path, kb):
    post = """
                def __post_init__(self):
                    self.quantization = "8bit"
    """
    write_files(tmp_path, _project(post=post))
    rep = run_script([tmp_path], kb)
    assert _eight_bit(rep)["counted"] is True


def test_field_settings_as_collected():
    tree = astroid.parse(
        "from dataclasses import dataclass, field\n"
        "import torch\n"
        "@dataclass\n"
        "class cfg:\n"
        "    name: str\n"
        "    dtype: torch.dtype = torch.bfloat16\n"
        "    quantization: str = None\n"
        "    fsdp: bool = field(default=False)\n"
        "    steps: int = 10\n"
        "class Plain:\n"
        "    quantization: str = None\n",
        module_name="pkg.cfg")
    assert collect_instance_settings(tree) == (
        ("cfg", "quantization", "quantization", 2, True, None),
        ("cfg", "fsdp", "fsdp", 3, True, False),
    )


def test_parallel_assignment_elements():
    tree = astroid.parse("a, b = A(), B()\nc, d = make()\ne, *f = A(), B(), C()\n")
    names = {n.name: n for n in tree.nodes_of_class(astroid.nodes.AssignName)}
    assert _parallel_value(names["a"]).as_string() == "A()"
    assert _parallel_value(names["b"]).as_string() == "B()"
    assert _parallel_value(names["c"]) is None
    assert _parallel_value(names["e"]) is None
