"""Conditions in script mode, round 41: settings read through ``is_<x>_enabled()`` helpers, and a path whose own
guard keeps it off below a guard that only makes it conditional. VALID/INVALID fixtures of the shapes met in the
projects; no project code copied."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


# ---------------------------------------------------------------- is_<x>_enabled(): a setting, off by default

def _zero3(test: str) -> dict:
    return {
        "utils.py": f"""
            from contextlib import nullcontext

            from transformers.integrations import is_deepspeed_zero3_enabled


            def gather(model):
                if {test}:
                    import deepspeed

                    ctx = deepspeed.zero.GatheredParameters([model.weight], modifier_rank=0)
                else:
                    ctx = nullcontext()
                with ctx:
                    model.weight.data.zero_()
        """,
        "train.py": """
            import torch
            from utils import gather

            if __name__ == "__main__":
                m = torch.nn.Linear(2, 2).to("cuda")
                gather(m)
        """,
    }


def test_an_enabled_helper_is_a_setting_that_is_off_by_default(tmp_path, kb):
    # the ZeRO-3 branch runs only when the user configures it: off the default path, the else is the way
    write_files(tmp_path, _zero3("is_deepspeed_zero3_enabled()"))
    rep = run_script([tmp_path], kb)
    (use,) = _by(rep, "deepspeed.zero.GatheredParameters")
    assert use["counted"] is False
    assert use["guard"]["on_path"]["transfer_to_npu"] == "off"
    assert not any(d.startswith("deepspeed") for d in _drivers(rep))


def test_the_else_of_an_enabled_helper_is_the_default_path(tmp_path, kb):
    # INVALID for the rule: with the test negated the library call sits on the default side and counts
    write_files(tmp_path, _zero3("not is_deepspeed_zero3_enabled()"))
    rep = run_script([tmp_path], kb)
    (use,) = _by(rep, "deepspeed.zero.GatheredParameters")
    assert use["counted"] is True


def test_torch_run_time_states_are_not_read_as_settings(tmp_path, kb):
    # torch.is_grad_enabled() reports grad mode (on by default), no user setting: the branch stays undecided
    write_files(tmp_path, _zero3("torch.is_grad_enabled()"))
    (tmp_path / "utils.py").write_text("import torch\n" + (tmp_path / "utils.py").read_text())
    rep = run_script([tmp_path], kb)
    (use,) = _by(rep, "deepspeed.zero.GatheredParameters")
    assert use["counted"] is True and (use.get("guard") or {}).get("on_path", {}).get("transfer_to_npu") != "off"


# ---------------------------------------------------------------- an off guard below a conditional one

def _backend_then_early_exit(early_exit: str) -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/leaf.py": f"""
            from transformers.integrations import is_deepspeed_zero3_enabled


            def _set_leaf(model, names):
                from deepspeed.utils import set_z3_leaf_modules

                set_z3_leaf_modules(model, names)


            def add_leaf(model):
                {early_exit}
                _set_leaf(model, ["Block"])
        """,
        "pkg/engine.py": """
            from enum import Enum

            from pkg.leaf import add_leaf


            class Backend(str, Enum):
                HF = "hf"
                OTHER = "other"


            def load(model):
                add_leaf(model)
                return model


            class Chat:
                def __init__(self, args, model):
                    if args.backend == Backend.HF:
                        self.model = load(model)
        """,
        "serve.py": """
            import argparse

            import torch
            from pkg.engine import Chat

            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--backend")
                Chat(p.parse_args(), torch.nn.Linear(2, 2).to("cuda"))
        """,
    }


def test_a_path_kept_off_by_its_own_guard_below_a_conditional_one_is_off(tmp_path, kb):
    # `if args.backend == Backend.HF:` only makes the loader conditional; `if not is_zero3_enabled(): return` below it
    # keeps the leaf-module call off the path: the deeper, deciding guard is the one the finding inherits
    write_files(tmp_path, _backend_then_early_exit("if not is_deepspeed_zero3_enabled():\n                    return"))
    rep = run_script([tmp_path], kb)
    uses = _by(rep, "deepspeed.utils.set_z3_leaf_modules")
    assert uses and all(u["counted"] is False for u in uses)
    assert all(u["guard"]["on_path"]["transfer_to_npu"] == "off" for u in uses)


def test_the_same_path_without_the_early_exit_keeps_the_conditional_guard(tmp_path, kb):
    # INVALID for the rule: no deciding guard below, the calls inherit the backend choice and count
    write_files(tmp_path, _backend_then_early_exit("pass"))
    rep = run_script([tmp_path], kb)
    uses = _by(rep, "deepspeed.utils.set_z3_leaf_modules")
    assert uses and any(u["counted"] is True for u in uses)


# ---------------------------------------------------------------- a bool parameter defaulting to True

def _split(call: str) -> dict:
    return {
        "extract.py": """
            from faster_whisper import WhisperModel


            def split_quick(path):
                return [path]


            def split_asr(path):
                model = WhisperModel("medium", device="cuda", compute_type="float16")
                return [s.text for s in model.transcribe(path)[0]]


            def get_segments(path, quick=True):
                if quick:
                    parts = split_quick(path)
                else:
                    parts = split_asr(path)
                return parts
        """,
        "app.py": f"""
            import torch
            from extract import get_segments

            if __name__ == "__main__":
                device = "cuda" if torch.cuda.is_available() else "cpu"
                print({call}, device)
        """,
    }


def test_the_else_of_a_flag_that_defaults_to_true_is_off_the_default_path(tmp_path, kb):
    # callers pass quick=True or nothing: the ASR side is the opt-in one, and its CUDA-only library does not count
    write_files(tmp_path, _split('get_segments("a.wav", quick=True), get_segments("b.wav")'))
    rep = run_script([tmp_path], kb)
    uses = [u for u in _by(rep, "faster_whisper.WhisperModel") if u["code"] == "NPU402"]   # the call
    assert uses and all(u["counted"] is False for u in uses)
    assert "faster_whisper.WhisperModel" not in _drivers(rep)


def test_a_caller_that_passes_false_puts_the_else_on_the_path(tmp_path, kb):
    # INVALID for the rule: a reached call switches the flag off, so the else runs and counts
    write_files(tmp_path, _split('get_segments("a.wav", quick=False)'))
    rep = run_script([tmp_path], kb)
    uses = [u for u in _by(rep, "faster_whisper.WhisperModel") if u["code"] == "NPU402"]   # the call
    assert any(u["counted"] is True for u in uses)
    assert "faster_whisper.WhisperModel" in _drivers(rep)


# ---------------------------------------------------------------- a job dispatch on a string membership test

def _dispatch(test: str) -> dict:
    return {
        "gen.py": f"""
            import argparse

            import torch


            def encode_image(x):
                assert x.device.type == "cuda"
                return x * 2


            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--task", default="train-small")
                p.add_argument("--with_image", action="store_true")
                args = p.parse_args()
                x = torch.ones(2, device="cuda")
                if {test}:
                    x = encode_image(x)
                print(x)
        """,
    }


def test_a_job_named_on_the_right_of_a_membership_test_is_a_dispatch_not_an_option(tmp_path, kb):
    # `"eval" in args.task` picks one of the program's jobs: it excuses nothing (one of the jobs runs)
    write_files(tmp_path, _dispatch('"eval" in args.task'))
    rep = run_script([tmp_path], kb)
    (chk,) = _by(rep, "device-type-check")
    assert chk["counted"] is True


def test_an_optional_flag_still_guards_the_branch(tmp_path, kb):
    # INVALID for the rule: a real option (off by default) keeps the branch off the default path
    write_files(tmp_path, _dispatch("args.with_image"))
    rep = run_script([tmp_path], kb)
    (chk,) = _by(rep, "device-type-check")
    assert chk["counted"] is False


# ---------------------------------------------------------------- a flag-only except leaves the library unbound

def _flag_import(body: str) -> dict:
    return {
        "attn.py": f"""
            import torch

            try:
                import flash_attn
                FLASH_OK = True
            except ModuleNotFoundError:
                FLASH_OK = False


            def attend(q, k, v):
                {body}
        """,
        "run.py": """
            import torch
            from attn import attend

            if __name__ == "__main__":
                q = torch.ones(1, 4, 2, 8, device="cuda")
                print(attend(q, q, q))
        """,
    }


def test_a_program_that_uses_a_library_its_failed_import_leaves_unbound_needs_it(tmp_path, kb):
    # the except sets only a flag; `assert FLASH_OK` then the call: on an Ascend host the call fails, no fallback
    write_files(tmp_path, _flag_import("assert FLASH_OK\n                return flash_attn.flash_attn_func(q, k, v)"))
    rep = run_script([tmp_path], kb)
    (use,) = [f for f in _by(rep, "flash_attn.flash_attn_func")]
    assert use["severity"] == "manual" and use["counted"] is True


def test_a_use_behind_the_flag_with_an_alternative_stays_guarded(tmp_path, kb):
    # INVALID for the rule: the flag is tested first and the else runs SDPA: the use is the guarded option
    write_files(tmp_path, _flag_import(
        "if FLASH_OK:\n                    return flash_attn.flash_attn_func(q, k, v)\n"
        "                return torch.nn.functional.scaled_dot_product_attention(q, k, v)"))
    rep = run_script([tmp_path], kb)
    (use,) = [f for f in _by(rep, "flash_attn.flash_attn_func")]
    assert use["counted"] is False
