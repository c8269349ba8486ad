"""Project misses of round 37 (script mode), VALID/INVALID fixtures of the shapes met (no project code copied)."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


# ---------------------------------------------------------------- a module constant reads as written

def _kernel_demo(flag_lines: str) -> dict:
    return {
        "kernels/scan.cu": """
            __global__ void scan_forward(const float* x, float* y) { y[0] = x[0]; }
        """,
        "demo.py": f"""
            import sys
            import torch

{flag_lines}

            if FAST_KERNEL:
                from torch.utils.cpp_extension import load
                load(name="scanop", sources=["kernels/scan.cu"], is_python_module=False)

                def scan(x):
                    return torch.ops.scanop.forward(x)
            else:
                def scan(x):
                    return torch.cumsum(x, 0)


            def main():
                x = torch.randn(8).cuda()
                print(scan(x))


            if __name__ == "__main__":
                main()
        """,
    }


def test_a_module_constant_set_to_true_takes_its_branch(tmp_path, kb):
    # VALID (old: "depends on `FAST_KERNEL` (a value the analysis cannot see)", conditional with a fallback, low):
    # a name bound once at module level to a literal is read as written, so the JIT build of the .cu runs
    write_files(tmp_path, _kernel_demo("            FAST_KERNEL = True  # False: slow path"))
    rep = run_script([tmp_path], kb)
    (load,) = _by(rep, "torch.utils.cpp_extension.load")
    assert load["line"] == 9 and load["counted"], load
    assert load["guard"]["on_path"] == {"transfer_to_npu": "on", "no_transfer": "on"}, load["guard"]
    assert "cannot see" not in load["guard"].get("depends_on", "")
    (op,) = _by(rep, "torch.ops.scanop.forward")
    assert op["counted"], op
    assert rep["summary"]["verdict"]["effort"] in ("high", "blocked")
    assert _drivers(rep)[0] in ("torch.utils.cpp_extension.load", "torch.ops.scanop.forward"), _drivers(rep)


def test_a_module_constant_set_to_false_leaves_the_kernel_off(tmp_path, kb):
    # INVALID: the same constant written False keeps the build off the path (the pure-torch branch runs)
    write_files(tmp_path, _kernel_demo("            FAST_KERNEL = False"))
    rep = run_script([tmp_path], kb)
    (load,) = _by(rep, "torch.utils.cpp_extension.load")
    assert not load["counted"], load
    assert rep["summary"]["verdict"]["effort"] == "low"


def test_a_reassigned_or_argv_driven_flag_stays_unknown(tmp_path, kb):
    # INVALID: a second binding (argv-driven) or a function's `global` rebinding leaves the value unseen
    for lines in ("            FAST_KERNEL = True\n            if len(sys.argv) > 1:\n                FAST_KERNEL = False",
                  "            FAST_KERNEL = '--fast' in sys.argv",
                  "            FAST_KERNEL = True\n\n\n            def slow():\n                global FAST_KERNEL\n"
                  "                FAST_KERNEL = False"):
        write_files(tmp_path, _kernel_demo(lines))
        rep = run_script([tmp_path], kb)
        (load,) = _by(rep, "torch.utils.cpp_extension.load")
        assert load["guard"]["on_path"]["transfer_to_npu"] == "conditional", (lines, load["guard"])
        assert not load["counted"], load


# ---------------------------------------------------------------- values of the configuration file the program loads

def _config_demo(value: str) -> dict:
    return {
        "configs/run.yaml": f"""
            model:
              name: tiny
              low_resource: {value}
        """,
        "lowres/model.py": """
            import torch
            from transformers import AutoModelForCausalLM


            class Model(torch.nn.Module):
                def __init__(self, path, low_resource=False):
                    super().__init__()
                    self.llm = self.load_llm(path, low_resource=low_resource)

                def load_llm(self, path, low_resource=False):
                    if low_resource:
                        return AutoModelForCausalLM.from_pretrained(path, load_in_8bit=True, device_map={"": 0})
                    return AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float16)

                @classmethod
                def from_config(cls, cfg):
                    low_resource = cfg.get("low_resource", False)
                    return cls(cfg.get("path"), low_resource=low_resource)
        """,
        "demo.py": """
            import argparse
            import yaml
            from lowres.model import Model


            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--cfg-path", default="configs/run.yaml")
                args = parser.parse_args()
                with open(args.cfg_path) as fh:
                    cfg = yaml.safe_load(fh)
                model = Model.from_config(cfg["model"]).to("cuda")
                print(model)


            if __name__ == "__main__":
                main()
        """,
    }


def test_a_flag_set_in_the_default_configuration_file_is_threaded_to_the_parameter(tmp_path, kb):
    # VALID (old: `low_resource=False by default`, off by default, low): the YAML the argparse default names sets
    # low_resource: True (read as data), and the parameter of that name takes it, so the 8-bit load is counted
    write_files(tmp_path, _config_demo("True"))
    rep = run_script([tmp_path], kb)
    (q8,) = [f for f in rep["findings"] if f["api"] == "load_in_8bit=True"]
    assert q8["path"] == "lowres/model.py" and q8["line"] == 13 and q8["counted"], q8
    assert q8["guard"]["on_path"]["transfer_to_npu"] == "on", q8["guard"]
    assert rep["summary"]["verdict"]["effort"] == "medium"
    assert "load_in_8bit=True" in _drivers(rep)


def test_a_flag_cleared_in_the_configuration_file_keeps_the_python_default_path(tmp_path, kb):
    # INVALID: the same file with low_resource: False leaves the 8-bit branch off (the fp16 load runs)
    write_files(tmp_path, _config_demo("False"))
    rep = run_script([tmp_path], kb)
    (q8,) = [f for f in rep["findings"] if f["api"] == "load_in_8bit=True"]
    assert not q8["counted"] and q8["off_path"]["reason"] == "off-by-default", q8
    assert rep["summary"]["verdict"]["effort"] == "low"


# ---------------------------------------------------------------- many GPU-only libraries central to the model

def _many_libs(extra: str) -> dict:
    return {
        "tinylm/model.py": f"""
            import torch
            from flash_attn import flash_attn_func
            from xformers.ops import SwiGLU
{extra}


            class Block(torch.nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.mlp = SwiGLU(n, 4 * n)

                def forward(self, q, k, v):
                    return self.mlp(flash_attn_func(q, k, v, causal=True))
        """,
        "pretrain.py": """
            import torch
            from tinylm.model import Block


            def main():
                block = Block(64).cuda()
                x = torch.randn(2, 16, 4, 16, device="cuda")
                print(block(x, x, x).sum())


            if __name__ == "__main__":
                main()
        """,
    }


_FOUR = """
            import rotary_emb
            import xentropy_cuda_lib


            def rope(x, cos, sin):
                out = torch.empty_like(x)
                rotary_emb.apply_rotary(x, x, cos, sin, out, out, False)
                return out


            def loss(logits, labels):
                return xentropy_cuda_lib.forward(logits, labels, 0.0)
"""


def test_four_gpu_only_libraries_on_one_program_grade_it_high(tmp_path, kb):
    # VALID (old: medium, 6 distinct library APIs and 6 places are under the "woven through" thresholds): four distinct
    # GPU-only libraries (attention, MLP, rotary, loss kernels) each need their own replacement: high, said why
    files = _many_libs(_FOUR)
    files["tinylm/model.py"] = files["tinylm/model.py"].replace(
        "return self.mlp(flash_attn_func(q, k, v, causal=True))",
        "return loss(self.mlp(rope(flash_attn_func(q, k, v, causal=True), q, k)), v)")
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    v = rep["summary"]["verdict"]
    assert v["effort"] == "high", v["explanation"]
    assert "High because 4 GPU-only libraries are used on the default path (flash_attn, rotary_emb, xentropy_cuda_lib, " \
           "xformers)" in v["explanation"], v["explanation"]


def test_two_gpu_only_libraries_stay_medium(tmp_path, kb):
    # INVALID: flash-attn and xFormers alone (two replacements) stay medium
    write_files(tmp_path, _many_libs(""))
    rep = run_script([tmp_path], kb)
    v = rep["summary"]["verdict"]
    assert v["effort"] == "medium", v["explanation"]
    assert "GPU-only libraries are used" not in v["explanation"]


# ---------------------------------------------------------------- TorchScript that nothing relies on is a speed note

def _scripted(extra: str) -> dict:
    return {
        "rnn_demo.py": f"""
            import torch


            class Cell(torch.jit.ScriptModule):
                def __init__(self):
                    super().__init__()
                    self.w = torch.nn.Parameter(torch.randn(8, 8))

                @torch.jit.script_method
                def forward(self, x):
                    return torch.tanh(x @ self.w)


            @torch.jit.script
            def step(x):
                return x * 2


            def main():
                cell = Cell().cuda()
                x = torch.randn(4, 8, device="cuda")
                y = step(cell(x))
                torch.cuda.synchronize()
                print(y){extra}


            if __name__ == "__main__":
                main()
        """,
    }


def test_torchscript_nothing_relies_on_ranks_below_the_cuda_calls(tmp_path, kb):
    # VALID (old: torch.jit.script / script_method manual, the top drivers of a low program): under transfer_to_npu
    # the scripted code runs eagerly; nothing saves it or reads its graph, so it is advice and the CUDA calls drive
    write_files(tmp_path, _scripted(""))
    rep = run_script([tmp_path], kb)
    sev = {(f["line"], f["api"]): f["severity"] for f in rep["findings"] if f["code"] == "NPU006"}
    assert sev and set(sev.values()) == {"advice"} and (10, "torch.jit.script_method") in sev, sev
    drivers = _drivers(rep)
    assert not any(d.startswith("torch.jit") for d in drivers), drivers
    assert any("cuda" in d for d in drivers), drivers
    assert rep["summary"]["verdict"]["effort"] == "low"


def test_torchscript_whose_object_is_saved_stays_a_manual_change(tmp_path, kb):
    # INVALID: the same module saving the scripted cell (torch.jit.save) relies on the ScriptModule: manual
    write_files(tmp_path, _scripted('\n                torch.jit.save(cell, "cell.pt")'))
    rep = run_script([tmp_path], kb)
    sev = {(f["line"], f["api"]): f["severity"] for f in rep["findings"] if f["code"] == "NPU006"}
    assert sev and set(sev.values()) == {"manual"} and (10, "torch.jit.script_method") in sev, sev


# ---------------------------------------------------------------- knowledge: AutoGPTQ, CTranslate2, DeepSpeed itself

def test_autogptq_is_a_gpu_only_library_with_a_documented_way(tmp_path, kb):
    # VALID (old: nothing found, none): AutoGPTQ's kernels are CUDA/Triton only: its uses are manual, the program medium
    write_files(tmp_path, {"quantize.py": """
        from auto_gptq import AutoGPTQForCausalLM, BaseQuantizeConfig


        def main():
            cfg = BaseQuantizeConfig(bits=4, group_size=128)
            model = AutoGPTQForCausalLM.from_pretrained("m", cfg, device_map="auto")
            model.quantize([])
            model.save_quantized("out")


        if __name__ == "__main__":
            main()
    """})
    rep = run_script([tmp_path], kb)
    libs = [f for f in rep["findings"] if f["api"].startswith("auto_gptq") and f["counted"]]
    assert libs and all(f["severity"] == "manual" for f in libs), libs
    assert "msModelSlim" in libs[0]["replacement"]
    assert rep["summary"]["verdict"]["effort"] == "medium"
    assert any(d.startswith("auto_gptq") for d in _drivers(rep)), _drivers(rep)


def test_faster_whisper_on_cuda_is_a_manual_change_and_its_import_is_not(tmp_path, kb):
    # VALID (old: only the 'cuda' device string, auto): CTranslate2 is not torch, so transfer_to_npu does not reach it
    write_files(tmp_path, {"asr.py": """
        from faster_whisper import WhisperModel


        def main():
            model = WhisperModel("large-v3", device="cuda", compute_type="float16")
            print(model.transcribe("a.wav"))


        if __name__ == "__main__":
            main()
    """})
    rep = run_script([tmp_path], kb)
    sev = {(f["line"], f["code"]): f["severity"] for f in rep["findings"] if f["api"] == "faster_whisper.WhisperModel"}
    # INVALID part: the import itself runs on an Ascend host (CPU build), so it is advice, not a change
    assert sev.get((2, "NPU401")) == "advice" and sev.get((6, "NPU402")) == "manual", sev
    assert "faster_whisper.WhisperModel" in _drivers(rep)


def test_deepspeed_itself_runs_through_its_npu_accelerator(tmp_path, kb):
    # VALID (old: nothing, none): a module-level DeepSpeed import (ZeRO helpers) is a use of a library that runs on
    # Ascend through its NPU accelerator: auto, low, driven by it; INVALID: a CUDA-only DeepSpeed op keeps its entry
    write_files(tmp_path, {"finetune.py": """
        import torch
        from deepspeed import zero


        def main():
            with zero.GatheredParameters([torch.nn.Parameter(torch.ones(2))]):
                pass


        def legacy():
            from deepspeed.ops.transformer import DeepSpeedTransformerLayer
            return DeepSpeedTransformerLayer(None)


        if __name__ == "__main__":
            main()
    """})
    rep = run_script([tmp_path], kb)
    ds = [f for f in rep["findings"] if f["api"].startswith("deepspeed.zero") and f["counted"]]
    assert ds and {f["severity"] for f in ds} == {"auto"}, ds
    assert rep["summary"]["verdict"]["effort"] == "low"
    assert any(d.startswith("deepspeed") for d in _drivers(rep)), _drivers(rep)
    (layer,) = [f for f in rep["findings"] if f["api"] == "deepspeed.ops.transformer.DeepSpeedTransformerLayer"
                and f["code"] == "NPU402"]
    assert layer["severity"] == "manual" and not layer["counted"], layer


def test_gsplat_rasterization_is_a_rework_and_its_strategy_is_not(tmp_path, kb):
    # VALID (old: nothing found for gsplat, the splatting trainer medium through other libraries): gsplat's rasteriser
    # is its CUDA extension, with torch references only as test helpers: manual with rework, so high;
    # INVALID part: its default densification strategy (torch code) is no finding
    write_files(tmp_path, {"splat_train.py": """
        import torch
        from gsplat.strategy import DefaultStrategy
        from gsplat.rendering import rasterization


        def main():
            means = torch.randn(100, 3, device="cuda")
            strategy = DefaultStrategy()
            img, alpha, info = rasterization(means, None, None, None, None, None, None, 64, 64)
            print(img.shape, strategy)


        if __name__ == "__main__":
            main()
    """})
    rep = run_script([tmp_path], kb)
    (ras,) = [f for f in rep["findings"] if f["api"] == "gsplat.rendering.rasterization" and f["code"] == "NPU402"]
    assert ras["severity"] == "manual" and ras["rework"] == "high" and ras["counted"], ras
    assert not [f for f in rep["findings"] if "DefaultStrategy" in f["api"]]
    assert rep["summary"]["verdict"]["effort"] == "high"


def test_a_string_key_of_the_configuration_file_does_not_set_a_parameter_of_that_name(tmp_path, kb):
    # INVALID: only flags are threaded; `device: cuda` in the loaded YAML leaves `device="cpu"` of an unrelated
    # helper at its Python default, so its CUDA-only branch stays off
    write_files(tmp_path, {
        "configs/run.yaml": """
            device: cuda
            steps: 3
        """,
        "main.py": """
            import torch
            import yaml


            def warm(x, device="cpu"):
                if device == "cuda":
                    torch.cuda.nvtx.range_push("warm")
                return x


            def main():
                with open("configs/run.yaml") as fh:
                    cfg = yaml.safe_load(fh)
                print(warm(torch.ones(cfg["steps"])))


            if __name__ == "__main__":
                main()
        """,
    })
    rep = run_script([tmp_path], kb)
    (nvtx,) = [f for f in rep["findings"] if f["api"].startswith("torch.cuda.nvtx")]
    assert not nvtx["counted"] and nvtx["guard"]["on_path"]["transfer_to_npu"] == "off", nvtx
