"""Implicit GPU-only libraries (#20 point 5): switched on through transformers / peft / accelerate / trl
arguments, never imported by the project. Shapes modelled on artidoro/qlora (qlora.py) and lm-sys/FastChat
(fastchat/model/model_adapter.py, fastchat/train/train_lora.py)."""

import copy
import textwrap

import pytest

from analyse.modes import run_script
from analyse.passes.implicit_libs import ImplicitDataError, parse_switches

HEAD = """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig, Trainer, TrainingArguments

    def main():
        tok = AutoTokenizer.from_pretrained("meta-llama/Llama-2-7b-hf")
"""
TAIL = """
        args = TrainingArguments(output_dir="out", per_device_train_batch_size=4, bf16=True)
        Trainer(model=model, args=args).train()

    if __name__ == "__main__":
        main()
"""


def _run(tmp_path, kb, body: str) -> dict:
    (tmp_path / "train.py").write_text(textwrap.dedent(HEAD + body + TAIL))
    return run_script([tmp_path], kb)


def _ours(report):
    return [f for f in report["findings"] if f["code"].startswith("NPU46")]


def test_8bit_load_without_bitsandbytes_import_is_a_manual_replacement(tmp_path, kb):
    # #30: the documented fix is an argument edit (bf16 or NF4 load), no kernel to write: manual, and on the
    # default path a GPU-only library's replacement grades medium (was: blocked)
    rep = _run(tmp_path, kb, """
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", load_in_8bit=True, device_map="auto")
    """)
    v = rep["summary"]["verdict"]
    assert v["effort"] == "medium"
    assert "GPU-only library" in v["explanation"]
    assert "kernel must be written" in v["legend"]["blocked"]
    (f,) = _ours(rep)
    assert (f["code"], f["severity"], f["line"], f["api"]) == ("NPU460", "manual", 8, "load_in_8bit=True")
    assert v["drivers"][0]["api"] == "load_in_8bit=True" and "bitsandbytes" in f["message"]
    assert not any("import bitsandbytes" in (x.get("snippet") or "") for x in rep["findings"])


def test_nf4_4bit_load_is_not_blocked(tmp_path, kb):
    rep = _run(tmp_path, kb, """
        q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", quantization_config=q)
    """)
    assert rep["summary"]["verdict"]["effort"] not in ("blocked", "unknown")
    (f,) = _ours(rep)
    assert (f["code"], f["severity"], f["line"]) == ("NPU461", "manual", 8)
    assert "NPU backend" in f["message"]


def test_4bit_default_fp4_is_blocked(tmp_path, kb):
    rep = _run(tmp_path, kb, """
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf", load_in_4bit=True)
    """)
    (f,) = _ours(rep)
    assert (f["code"], f["severity"]) == ("NPU461", "manual")
    assert "fp4" in f["api"] and rep["summary"]["verdict"]["effort"] == "medium"


def test_option_value_is_conditional_not_counted(tmp_path, kb):
    # qlora.py: load_in_4bit=args.bits == 4, load_in_8bit=args.bits == 8, bnb_4bit_quant_type=args.quant_type
    rep = _run(tmp_path, kb, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--bits", type=int, default=16)
        a = p.parse_args()
        model = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=a.bits == 8)
    """)
    (f,) = _ours(rep)
    assert f["code"] == "NPU460" and f["guard"]["kind"] == "option" and f["guard"]["condition"] == "a.bits == 8"
    assert f["message"].startswith("only when `a.bits == 8` is true")
    assert rep["summary"]["verdict"]["effort"] != "blocked"


def test_option_value_is_judged_with_the_options_default(tmp_path, kb):
    # the same test read with the argparse default: `--bits 16` by default turns `a.bits == 16` on
    rep = _run(tmp_path, kb, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--bits", type=int, default=16)
        a = p.parse_args()
        off = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=a.bits == 8)
        on = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=a.bits == 16)
    """)
    off, on = sorted(_ours(rep), key=lambda f: f["line"])
    assert off["counted"] is False and off["off_path"]["reason"] == "off-by-default"
    assert off["off_path"]["why"] == (f"runs only when `a.bits == 8` ({off['path']}:{off['line']}), which is false on an NPU host with the "
                                      "defaults (bits = 16 by default)")
    assert on["counted"] is True and on["severity"] == "manual" and not on.get("guard")
    assert on["message"].startswith("with bits = 16 by default: the argument `load_in_8bit=a.bits == 16`")
    assert rep["summary"]["verdict"]["effort"] == "medium"


def test_option_default_off_inside_a_device_branch_stays_off(tmp_path, kb):
    # `if device == "cuda": from_pretrained(load_in_8bit=load_8bit)` with `load_8bit: bool = False`: an NPU host
    # takes the device branch (transfer_to_npu), but the 8-bit load stays off with the parameter's default
    rep = _run(tmp_path, kb, """
        device = "cuda" if torch.cuda.is_available() else "cpu"

        def load(load_8bit: bool = False, always: bool = True):
            if device == "cuda":
                off = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=load_8bit)
                on = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=always)
            return off, on

        model, _ = load()
    """)
    off, on = sorted(_ours(rep), key=lambda f: f["line"])
    # VALID: the default that switches it on is counted (the device branch runs on an NPU host)
    assert on["counted"] is True and on["line"] == 13
    # INVALID: the default that leaves it off is off the path, with both conditions in the words
    assert off["counted"] is False and off["line"] == 12
    assert off["off_path"]["reason"] == "off-by-default"
    assert off["guard"]["condition"] == "device == 'cuda' and load_8bit"
    assert off["guard"]["on_path"] == {"transfer_to_npu": "off", "no_transfer": "off"}
    assert off["guard"]["default"] == "load_8bit=False by default"


def test_spread_kwargs_fastchat_shape(tmp_path, kb):
    rep = _run(tmp_path, kb, """
        kwargs = {"torch_dtype": torch.float16}
        kwargs["load_in_8bit"] = True
        model = AutoModelForCausalLM.from_pretrained("m", low_cpu_mem_usage=True, **kwargs)
    """)
    (f,) = _ours(rep)
    assert (f["code"], f["line"]) == ("NPU460", 9)


def test_optimizer_field_default_in_training_arguments_subclass(tmp_path, kb):
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass, field
        import transformers

        @dataclass
        class TrainingArguments(transformers.Seq2SeqTrainingArguments):
            optim: str = field(default="paged_adamw_32bit", metadata={"help": "optimizer"})
            lora_r: int = field(default=64)

        if __name__ == "__main__":
            parser = transformers.HfArgumentParser((TrainingArguments,))
            (args,) = parser.parse_args_into_dataclasses()
            transformers.Trainer(model=None, args=args).train()
    """))
    rep = run_script([tmp_path], kb)
    (f,) = _ours(rep)
    assert (f["code"], f["severity"], f["line"], f["api"]) == ("NPU464", "manual", 7, "optim='paged_adamw_32bit'")
    assert "adamw_torch_npu_fused" in f["replacement"]


def test_no_finding_when_switched_off_or_in_transformers_itself(tmp_path, kb):
    rep = _run(tmp_path, kb, """
        model = AutoModelForCausalLM.from_pretrained("m", load_in_8bit=False, attn_implementation="sdpa")
    """)
    assert _ours(rep) == []
    lib = tmp_path / "lib" / "transformers"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "x.py").write_text("from transformers import AutoModel\nm = AutoModel.from_pretrained('m', load_in_8bit=True)\n")
    rep = run_script([lib], kb)
    assert _ours(rep) == []


def test_data_is_validated(kb):
    doc = copy.deepcopy(kb.data_file("implicit_gpu_libs.yaml"))
    assert parse_switches(doc)
    assert all(row.get("source") for row in doc["switches"]) and doc["meta"]["source"]
    bad = copy.deepcopy(doc)
    bad["switches"][0]["code"] = "NPU999"
    with pytest.raises(ImplicitDataError, match="code must be one of"):
        parse_switches(bad)
    bad = copy.deepcopy(doc)
    bad["switches"][0]["values"] = ["x"]
    with pytest.raises(ImplicitDataError, match="exactly one of flag / values"):
        parse_switches(bad)
    bad = copy.deepcopy(doc)
    del bad["switches"][1]["source"]
    with pytest.raises(ImplicitDataError, match="source"):
        parse_switches(bad)


FP8_RECIPE = """
import argparse
from accelerate import Accelerator
from accelerate.utils import AORecipeKwargs, TERecipeKwargs
from torchao.float8 import Float8LinearConfig


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--precision", default="{default}", choices=["fp8", "bf16"])
    args = p.parse_args()
    handlers = []
    if args.precision == "fp8":
        handlers = [AORecipeKwargs(config=Float8LinearConfig())]
    accelerator = Accelerator(kwargs_handlers=handlers)
    return accelerator


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("default, counted", [("fp8", True), ("bf16", False)])
def test_an_accelerate_fp8_recipe_is_fp8_training_when_its_branch_runs(tmp_path, kb, default, counted):
    # shaped like accelerate's examples/torch_native_parallelism/fsdp2_fp8.py: `--precision` picks the torchao recipe
    (tmp_path / "train.py").write_text(FP8_RECIPE.format(default=default))
    rep = run_script([tmp_path], kb)
    (f,) = _ours(rep)
    assert (f["code"], f["line"], f["api"], f["severity"]) == ("NPU466", 14, "accelerate.utils.AORecipeKwargs", "manual")
    assert "torchao float8" in f["message"] and "torch._scaled_mm" in f["message"]
    assert f["replacement"].startswith("leave the fp8 recipe out of kwargs_handlers")
    assert f["counted"] is counted
    assert rep["summary"]["verdict"]["effort"] == ("medium" if counted else "none")


def test_explain_knows_the_calls_that_switch_a_library_on():
    from analyse.explain import explain_name

    text, status = explain_name("accelerate.utils.AORecipeKwargs")
    assert status == 0 and "NPU466 (accelerate-fp8-recipe-ao)" in text and "torchao float8" in text
    text, status = explain_name("accelerate.utils.TERecipeKwargs")
    assert status == 0 and "Transformer Engine" in text
    assert explain_name("accelerate.utils.ProjectConfiguration")[1] == 1   # not every accelerate class switches one on


def test_explain_names_the_switches_of_a_library_and_of_its_calls():
    from analyse.explain import explain_name

    for name in ("ray", "ray.remote"):
        text, status = explain_name(name)
        assert status == 0, name
        assert "NPU470 (ray-num-gpus)" in text and 'resources={"NPU": 1}' in text
    text, status = explain_name("ray")
    assert "NPU470 (ray-gpu-bundles)" in text           # the library lists every switch, the call only its own
    assert "ray-gpu-bundles" not in explain_name("ray.remote")[0]
    assert explain_name("ray.get")[1] == 1               # a call of the library with no switch stays unknown
