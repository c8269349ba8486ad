"""analyse.conditions: conditions are values, built by data flow and evaluated on an NPU host (#20).

Each case is a small source written for this test (modelled on shapes seen in accelerate, peft,
bitsandbytes, xformers, detectron2, nanoGPT and yolov5); the line marked ``# <-`` is the one asked
about. ``on_path`` gives the two scenarios: with transfer_to_npu (CUDA device predicates hold) and
without. Every case here failed before the conditions room existed (no ``on_path``, inverted texts,
or no guard at all).
"""

from __future__ import annotations

import textwrap

import astroid
import pytest
from astroid import nodes

from analyse.conditions import configure
from analyse.conditions.options import collect, merge
from analyse.guards import guard_of

ON, OFF, COND = "on", "off", "conditional"


def _guard(src: str, mode: str = "script", extra: str = ""):
    src = textwrap.dedent(src)
    tree = astroid.parse(src)
    tables = [collect(tree)]
    if extra:
        tables.append(collect(astroid.parse(textwrap.dedent(extra))))
    configure(merge(tables), mode)
    line = next(i for i, t in enumerate(src.splitlines(), 1) if "# <-" in t)
    node = next(n for n in tree.nodes_of_class(nodes.NodeNG)
                if getattr(n, "lineno", None) == line and not isinstance(n, (nodes.Module, nodes.Arguments)))
    g = guard_of(node)
    configure({}, "script")
    return g


def _paths(g):
    d = g.to_dict()
    return d["on_path"]["transfer_to_npu"], d["on_path"]["no_transfer"]


# --------------------------------------------------------------------------- point 1: condition forms

def test_flag_through_a_variable():
    g = _guard("""
    import torch
    has_gpu = torch.cuda.is_available()
    def f(x):
        if has_gpu:
            x = x.cuda()  # <-
        return x
    """)
    assert g.condition == "has_gpu" and _paths(g) == (ON, OFF)


def test_flag_set_in_try_and_except():
    g = _guard("""
    try:
        import flash_attn
        FLASH_AVAILABLE = True
    except ImportError:
        FLASH_AVAILABLE = False
    def attn(q):
        if FLASH_AVAILABLE:
            return flash_attn.flash_attn_func(q, q, q)  # <-
        return q
    """)
    assert _paths(g) == (COND, COND)
    assert "optional library" in g.to_dict()["depends_on"]


def test_availability_helper_summarised_from_its_body():
    # the helper's name says nothing; its body returns the CUDA predicate
    g = _guard("""
    import torch
    def _accel_ok():
        return torch.cuda.is_available()
    def f(x):
        if _accel_ok():
            return x.cuda()  # <-
        return x
    """)
    assert g is not None and _paths(g) == (ON, OFF)
    g = _guard("""
    import importlib.util
    def is_bnb_available():
        return importlib.util.find_spec("bitsandbytes") is not None
    def f(layer):
        if is_bnb_available():
            import bitsandbytes as bnb  # <-
        return layer
    """)
    assert _paths(g) == (COND, COND)


def test_early_exit_prints_the_condition_the_rest_runs_under():
    # bitsandbytes cuda_specs / xformers _is_triton_available / peft import_utils shapes
    g = _guard("""
    import torch
    def get_specs():
        if not torch.cuda.is_available():
            return None
        return torch.cuda.get_device_capability()  # <-
    """)
    assert g.condition == "torch.cuda.is_available()"
    assert _paths(g) == (ON, OFF)
    g = _guard("""
    def is_bnb_4bit_available():
        if not is_bnb_available():
            return False
        import bitsandbytes as bnb  # <-
        return hasattr(bnb.nn, "Linear4bit")
    """)
    assert g.condition == "is_bnb_available()" and "not" not in g.condition


def test_short_circuit_with_a_default_off_parameter():
    g = _guard("""
    def wrap(x, loaded_in_8bit=False):
        if loaded_in_8bit and isinstance(x, bnb.nn.Linear8bitLt):
            x = bnb.functional.int8_double_quant(x)  # <-
        return x
    """)
    assert _paths(g) == (OFF, OFF)


def test_if_elif_else_chain_only_the_default_branch_runs():
    src = """
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="torch")
    args = p.parse_args()
    if args.backend == "trt":
        import tensorrt{a}
    elif args.backend == "onnx":
        import onnxruntime{b}
    else:
        import torch{c}
    """
    assert _paths(_guard(src.format(a="  # <-", b="", c=""))) == (OFF, OFF)
    assert _paths(_guard(src.format(a="", b="  # <-", c=""))) == (OFF, OFF)


def test_comparison_with_a_dataclass_default():
    g = _guard("""
    from dataclasses import dataclass
    @dataclass
    class ModelConfig:
        moe_experts: int = 1
    def build(cfg: ModelConfig):
        if cfg.moe_experts > 1:
            import megablocks  # <-
    """)
    assert g.condition == "cfg.moe_experts > 1" and _paths(g) == (OFF, OFF)


def test_except_pass_then_a_flag_test():
    g = _guard("""
    amp = None
    try:
        from apex import amp
    except ImportError:
        pass
    def scale(loss, opt):
        if amp is not None:
            return amp.scale_loss(loss, opt)  # <-
        return loss
    """)
    assert g.condition == "amp is not None" and _paths(g) == (COND, COND)


def test_alternative_assignment_picks_the_default():
    src = textwrap.dedent("""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--fused", action="store_true")
    opt = parser.parse_args()
    norm = apex.normalization.FusedLayerNorm if opt.fused else torch.nn.LayerNorm
    """)
    tree = astroid.parse(src)
    configure(merge([collect(tree)]), "script")
    ifexp = next(tree.nodes_of_class(nodes.IfExp))
    g_fused, g_plain = guard_of(ifexp.body), guard_of(ifexp.orelse)
    configure({}, "script")
    assert g_fused.kind == "option" and _paths(g_fused) == (OFF, OFF)
    assert g_plain is None


def test_environment_flag_unset_is_off():
    # accelerate PartialState: set_numa_affinity only under ACCELERATE_CPU_AFFINITY
    g = _guard("""
    def parse_flag_from_env(key, default=False):
        return default
    class State:
        def __init__(self):
            if parse_flag_from_env("MYLIB_CPU_AFFINITY", False):
                set_numa_affinity(0)  # <-
    """)
    assert _paths(g) == (OFF, OFF)
    g = _guard("""
    import os
    if os.environ.get("USE_FUSED", "0") == "1":
        import fused_ops  # <-
    """)
    assert _paths(g) == (OFF, OFF)


def test_other_accelerator_probes_and_cuda_build_are_off():
    for test in ("torch.xpu.is_available()", "torch.backends.mps.is_available()", "torch.version.cuda",
                 "is_mlu_available()"):
        g = _guard(f"""
        import torch
        def f(x):
            if {test}:
                x = x.to("xpu")  # <-
            return x
        """)
        assert g is not None and _paths(g) == (OFF, OFF), test


def test_device_type_reads_npu_and_device_settings_keep_their_default():
    g = _guard("""
    def f(x):
        if x.device.type == "cuda":
            return cuda_kernel(x)  # <-
        return ref(x)
    """)
    assert _paths(g) == (OFF, OFF)
    g = _guard("""
    device = "cuda"
    device_type = "cuda" if "cuda" in device else "cpu"
    if device_type == "cuda":
        import pynvml  # <-
    """)
    assert _paths(g) == (ON, ON)


# --------------------------------------------------------------------------- point 2: the two scenarios

def test_cuda_branch_runs_with_transfer_to_npu_and_not_without():
    g = _guard("""
    import torch
    def f(x):
        if torch.cuda.is_available():
            x = x.cuda()  # <-
        else:
            x = x.float()
        return x
    """)
    assert g.fallback and _paths(g) == (ON, OFF)
    g = _guard("""
    import torch
    def f(x):
        if torch.cuda.is_available():
            x = x.cuda()
        else:
            x = x.float()  # <-
        return x
    """)
    assert g is None or _paths(g) == (OFF, ON)


# --------------------------------------------------------------------------- point 3: option sources

@pytest.mark.parametrize("decl, test", [
    ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--use-fused", action="store_true")\n'
     'args = p.parse_args()\n', "args.use_fused"),
    ('import argparse\np = argparse.ArgumentParser()\np.add_argument("--quant-bits", type=int, default=16)\n'
     'args = p.parse_args()\n', "args.quant_bits in (4, 8)"),
    ("from dataclasses import dataclass, field\n@dataclass\nclass Cfg:\n    use_fused: bool = field(default=False)\n"
     "cfg = Cfg()\n", "cfg.use_fused"),
    ("from transformers import TrainingArguments\nclass MyArgs(TrainingArguments):\n    quant_bits: int = 16\n"
     "training_args = MyArgs()\n", "training_args.quant_bits in (4, 8)"),
    ("import attr\n@attr.s\nclass Cfg:\n    use_fused = attr.ib(default=False)\ncfg = Cfg()\n", "cfg.use_fused"),
    ("from pydantic import BaseModel\nclass Settings(BaseModel):\n    use_flash: bool = False\nsettings = Settings()\n",
     "settings.use_flash"),
])
def test_option_sources_by_their_default(decl, test):
    g = _guard(decl + f"if {test}:\n    import bitsandbytes  # <-\n")
    assert g is not None and g.kind == "option" and _paths(g) == (OFF, OFF), (test, g)


def test_click_and_typer_options():
    g = _guard("""
    import click
    @click.command()
    @click.option("--fp16", is_flag=True)
    def main(fp16):
        if fp16:
            import apex  # <-
    """)
    assert _paths(g) == (OFF, OFF)
    g = _guard("""
    import typer
    def main(use_triton: bool = typer.Option(False)):
        if use_triton:
            import triton  # <-
    """)
    assert _paths(g) == (OFF, OFF)


def test_namespace_copied_to_an_attribute_and_constructor_defaults():
    g = _guard("""
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("--use-amp", action="store_true")
    class Trainer:
        def __init__(self, args):
            self.use_amp = args.use_amp
        def step(self):
            if self.use_amp:
                from apex import amp  # <-
    """)
    assert _paths(g) == (OFF, OFF)
    g = _guard("""
    import torch
    class Profiler:
        def __init__(self, emit_nvtx=False):
            self.emit_nvtx = emit_nvtx
        def start(self):
            if self.emit_nvtx:
                torch.cuda.nvtx.range_push("step")  # <-
    """)
    assert g.kind == "option" and _paths(g) == (OFF, OFF)


def test_keyword_default_is_a_choice_in_library_mode():
    src = """
    def fused_act(x, use_custom_op=False):
        if use_custom_op:
            return carafe(x)  # <-
        return x
    """
    assert _paths(_guard(src)) == (OFF, OFF)
    g = _guard(src, mode="thirdparty")
    assert _paths(g) == (COND, COND) and g.to_dict()["by_default"] == "off"


def test_fp8_check_two_levels_down_is_off_by_default_for_callers():
    # accelerate AcceleratorState: the capability check sits in an elif under `mixed_precision == "fp8"`
    g = _guard("""
    import torch
    class AcceleratorState:
        def __init__(self, mixed_precision=None):
            mixed_precision = (
                parse_choice_from_env("MYLIB_MIXED_PRECISION", "no") if mixed_precision is None
                else mixed_precision.lower()
            )
            if mixed_precision == "fp8":
                if not is_fp8_available():
                    raise ValueError("fp8 needs transformer_engine")
                elif torch.cuda.is_available() and not check_fp8_capability():  # <-
                    pass
    """, mode="thirdparty")
    d = g.to_dict()
    assert d["on_path"]["transfer_to_npu"] == COND and d["by_default"] == "off"
    assert "mixed_precision == 'fp8'" in d["depends_on"]


# --------------------------------------------------------------------------- verdict: off the path, per-entry-point evidence

def _project(tmp_path, files):
    root = tmp_path / "proj"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def test_default_off_option_is_off_the_path_and_a_cuda_branch_counts(tmp_path, kb):
    from analyse.modes import run_script

    root = _project(tmp_path, {
        "train.py": """
            import argparse
            import torch

            p = argparse.ArgumentParser()
            p.add_argument("--use-te", action="store_true")
            args = p.parse_args()
            if args.use_te:
                import transformer_engine.pytorch as te
                layer = te.Linear(8, 8)
            if torch.cuda.is_available():
                from flash_attn import flash_attn_func
                out = flash_attn_func(None, None, None)
            else:
                out = torch.nn.functional.scaled_dot_product_attention(None, None, None)
        """,
    })
    rep = run_script([root], kb)
    te = [f for f in rep["findings"] if f["api"].startswith("transformer_engine")]
    assert te and all(f["guard"]["on_path"]["transfer_to_npu"] == "off" for f in te)
    assert rep["summary"]["off_path"]["by_reason"].get("off-by-default", 0) >= len(te)
    fa = [f for f in rep["findings"] if f["api"].startswith("flash_attn")]
    # transfer_to_npu makes torch.cuda.is_available() true: the flash-attn branch is the one that runs
    assert fa and all(f["guard"]["on_path"] == {"transfer_to_npu": "on", "no_transfer": "off"} for f in fa)
    v = rep["summary"]["verdict"]
    assert v["manual_changes"] >= 2 and v["blockers"] == 0      # flash-attn counted, transformer_engine not
    assert "flash_attn" in v["drivers"][0]["api"]


def test_each_entry_point_names_its_own_path(tmp_path, kb):
    from analyse.modes import run_script

    root = _project(tmp_path, {
        "lib/__init__.py": "",
        "lib/ops.py": """
            from flash_attn import flash_attn_func


            def attention(q):
                return flash_attn_func(q, q, q)
        """,
        "lib/model_a.py": """
            from lib.ops import attention


            def build_a(q):
                return attention(q)
        """,
        "lib/model_b.py": """
            from lib.ops import attention


            def build_b(q):
                return attention(q)
        """,
        "train_a.py": "from lib.model_a import build_a\n\nif __name__ == '__main__':\n    build_a(1)\n",
        "train_b.py": "from lib.model_b import build_b\n\nif __name__ == '__main__':\n    build_b(1)\n",
    })
    rep = run_script([root], kb)
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    for ep, model in (("train_a.py", "lib.model_a"), ("train_b.py", "lib.model_b")):
        d = rows[ep]["verdict"]["drivers"][0]
        assert d["path"][0].startswith(ep[:-3] + "."), d          # the path starts at this entry point
        assert any(h.startswith(model + ".") for h in d["path"]), d  # and goes through its own model
        assert d["where"].startswith("lib/ops.py:")


def test_yaml_and_json_configs_in_the_repository_give_defaults(tmp_path, kb):
    from analyse.modes import run_script

    root = _project(tmp_path, {
        "configs/default.yaml": "model:\n  use_fused_kernels: false\n  moe_experts: 1\n",
        "configs/extra.json": '{"quant_bits": 16}',
        "train.py": """
            import json
            import yaml

            with open("configs/default.yaml") as fh:
                cfg = yaml.safe_load(fh)
            extra = json.load(open("configs/extra.json"))
            if cfg["model"]["use_fused_kernels"]:
                from apex.normalization import FusedLayerNorm
                norm = FusedLayerNorm(8)
            if extra["quant_bits"] in (4, 8):
                import bitsandbytes as bnb
                opt = bnb.optim.Adam8bit([])
        """,
    })
    rep = run_script([root], kb)
    gated = [f for f in rep["findings"] if f["api"].startswith(("apex", "bitsandbytes"))]
    assert gated and all(f["guard"]["on_path"]["transfer_to_npu"] == "off" for f in gated), \
        [(f["api"], f.get("guard")) for f in gated]


def test_placeholder_from_a_try_import_does_not_guard_a_later_unconditional_call(tmp_path, kb):
    from analyse.modes import run_script

    root = _project(tmp_path, {"attn.py": """
        try:
            from flash_attn import flash_attn_func
        except ImportError:
            flash_attn_func = None


        def attn(q):
            return flash_attn_func(q, q, q)


        def attn_checked(q):
            if flash_attn_func is not None:
                return flash_attn_func(q, q, q)
            return q
    """})
    rep = run_script([root], kb)
    sev = {f["line"]: f["severity"] for f in rep["findings"] if f["code"] == "NPU403"}
    assert sev[8] == "manual"       # the placeholder None is called: fails on an Ascend host
    assert sev[13] == "advice"      # tested first: the fallback runs


def test_placeholder_used_in_a_method_keeps_the_import_guard(tmp_path, kb):
    """A wrapper class whose methods call the optional library runs only when a caller builds it; when no
    reached code names it (exported for callers that pick it), the placeholder rule does not turn its uses
    into counted failures: the import guard with its fallback stands (timm's ApexScaler shape, #20)."""
    from analyse.modes import run_script

    root = _project(tmp_path, {
        "train.py": """
            import argparse
            import torch
            from lossutil import PlainScaler

            parser = argparse.ArgumentParser()
            parser.add_argument('--clip', type=float, default=None)


            def main():
                args = parser.parse_args()
                scaler = PlainScaler()
                scaler(torch.zeros(1, requires_grad=True).sum(), None)


            if __name__ == '__main__':
                main()
        """,
        "lossutil.py": """
            try:
                from apex import amp
            except ImportError:
                amp = None


            class FusedLossScaler:
                def __call__(self, loss, optimizer):
                    with amp.scale_loss(loss, optimizer) as scaled:
                        scaled.backward()

                def load(self, state):
                    amp.load_state_dict(state)


            class PlainScaler:
                def __call__(self, loss, optimizer):
                    loss.backward()


            def scale_now(loss, optimizer):
                return amp.scale_loss(loss, optimizer)
        """,
    })
    rep = run_script([root], kb)
    by_line = {f["line"]: f for f in rep["findings"]
               if f["path"] == "lossutil.py" and f["api"].startswith("apex.amp.")}
    # inside the wrapper's methods the import guard (with its fallback) stands: advice, not a manual change
    # (was: "except branch ... without a fallback", manual and counted); both uses share one finding
    assert by_line[9]["severity"] == "advice", by_line[9]
    assert "with a fallback" in by_line[9]["message"]
    assert by_line[9]["lines"] == [9, 13]
    assert by_line[22]["severity"] == "manual"    # a module-level function calls the placeholder: rule kept
    assert rep["summary"]["verdict"]["manual_changes"] == 0


def test_a_fallback_that_needs_a_gpu_only_library_is_no_fallback(tmp_path, kb):
    from analyse.modes import run_script

    root = _project(tmp_path, {"attn.py": """
        try:
            from flash_attn import flash_attn_func
        except ImportError:
            from xformers.ops import memory_efficient_attention as flash_attn_func
        try:
            from apex.normalization import FusedLayerNorm
        except ImportError:
            from torch.nn import LayerNorm as FusedLayerNorm
    """})
    rep = run_script([root], kb)
    # both guarded imports are NPU404 advice, grouped into one finding per file: each place keeps its own guard
    g = {o["line"]: o.get("guard", f["guard"]) for f in rep["findings"] if f.get("guard")
         for o in (f.get("occurrences") or [f])}
    assert g[2]["fallback"] is False     # the except branch needs xformers: GPU-only as well
    assert g[6]["fallback"] is True      # torch.nn.LayerNorm runs on an NPU


def test_other_accelerator_probe_is_a_condition_not_an_unknown_api(tmp_path, kb):
    from analyse.modes import run_script

    root = _project(tmp_path, {"dev.py": """
        import torch


        def pick(x):
            if torch.xpu.is_available():
                torch.xpu.synchronize()
                return x.to("xpu")
            return x
    """})
    rep = run_script([root], kb)
    apis = {f["api"]: f for f in rep["findings"]}
    assert "torch.xpu.is_available" not in apis
    # another accelerator's namespace is not a torch API to verify (data/noise.yaml, #31): no finding at all
    assert "torch.xpu.synchronize" not in apis


# --------------------------------------------------------------------------- a CUDA branch with an NPU branch beside it

def _alt(src: str):
    from analyse.guards import npu_alternative

    src = textwrap.dedent(src)
    tree = astroid.parse(src)
    line = next(i for i, t in enumerate(src.splitlines(), 1) if "# <-" in t)
    node = next(n for n in tree.nodes_of_class(nodes.Call) if n.lineno == line)
    return npu_alternative(node)


CHAIN = """
import torch
from accelerate.utils import is_npu_available, is_xpu_available

def track():
    if torch.cuda.is_available():{t}
        torch.cuda.empty_cache(){b}
    elif is_xpu_available():
        torch.xpu.empty_cache()
    elif is_npu_available():
        torch.npu.empty_cache()
"""


def test_the_cuda_branch_and_its_test_have_the_npu_branch_as_alternative():
    # shaped like accelerate's peak-memory tracker: one branch per device kind
    assert _alt(CHAIN.format(t="  # <-", b="")) == (6, 10, "is_npu_available()")
    assert _alt(CHAIN.format(t="", b="  # <-")) == (6, 10, "is_npu_available()")


@pytest.mark.parametrize("src", [
    # no NPU branch: without transfer_to_npu the seeds of the NPU are never set
    """
    import torch
    def seed(s):
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(s)  # <-
        elif torch.xpu.is_available():
            torch.xpu.manual_seed_all(s)
    """,
    # a CPU fallback is no NPU branch
    """
    import torch
    def pick():
        if torch.cuda.is_available():
            return torch.cuda.current_device()  # <-
        else:
            return "cpu"
    """,
    # the NPU test comes first: the CUDA branch is its alternative, not the other way round
    """
    import torch
    def pick(is_npu_available):
        if option():
            pass
        elif torch.cuda.is_available():
            torch.cuda.empty_cache()  # <-
    """,
])
def test_no_npu_alternative(src):
    assert _alt(src) is None
