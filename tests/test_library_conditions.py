"""Library mode with the conditions model (#20): call-site conditions carried down the chains.

Small libraries written here, laid out like the ones the issue names (never copied):

* ``acclib`` -- an accelerate-like state: ``PartialState.__init__`` calls a pynvml NUMA helper only when
  an environment flag is set; ``AcceleratorState.__init__`` checks the CUDA fp8 capability only under
  ``mixed_precision == "fp8"``; ``set_seed(seed, device_specific=False)``;
* ``peftlib`` -- a peft-like LoRA with availability helpers (``is_bnb_available()`` from ``find_spec``,
  ``is_bnb_4bit_available()`` with an early exit) and an 8-bit branch behind a short-circuit;
* ``bnblib`` / ``xflib`` -- early-exit shapes of bitsandbytes (``get_cuda_specs``) and xformers
  (``_is_triton_available``).

A 35-line training script using ``Accelerator(mixed_precision="bf16")`` and LoRA, analysed with both
thirdparty reports, must not be blocked; no ``conditional`` entry may print its condition inverted.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

ACCLIB = {
    "__init__.py": "from .accelerator import Accelerator\nfrom .state import PartialState, AcceleratorState\n"
                   "from .utils import set_seed\n",
    "utils/__init__.py": "from .environment import set_numa_affinity, check_cuda_fp8_capability\n"
                         "from .imports import is_fp8_available, parse_flag_from_env, parse_choice_from_env\n"
                         "from .random import set_seed\n",
    "utils/imports.py": """
        import importlib.util
        import os


        def is_fp8_available():
            return importlib.util.find_spec("transformer_engine") is not None


        def parse_flag_from_env(key, default=False):
            value = os.environ.get(key, str(default))
            return value.lower() in ("1", "true", "yes")


        def parse_choice_from_env(key, default="no"):
            return os.environ.get(key, str(default))
    """,
    "utils/environment.py": """
        import torch
        import pynvml


        def override_numa_affinity(local_process_index):
            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(local_process_index)
            return pynvml.nvmlDeviceGetCpuAffinity(handle, 4)


        def set_numa_affinity(local_process_index):
            override_numa_affinity(local_process_index)


        def check_cuda_fp8_capability():
            return torch.cuda.get_device_capability() >= (8, 9)
    """,
    "utils/random.py": """
        import random
        import torch


        def set_seed(seed, device_specific=False):
            if device_specific:
                seed += torch.distributed.get_rank()
            random.seed(seed)
            torch.manual_seed(seed)
    """,
    "state.py": """
        import logging
        import torch
        from .utils import (check_cuda_fp8_capability, is_fp8_available, parse_choice_from_env,
                            parse_flag_from_env, set_numa_affinity)

        logger = logging.getLogger(__name__)


        class PartialState:
            def __init__(self, cpu=False):
                self.local_process_index = 0
                self.device = torch.device("cpu" if cpu else "cuda")
                if parse_flag_from_env("ACCLIB_CPU_AFFINITY", False):
                    set_numa_affinity(self.local_process_index)


        class AcceleratorState:
            def __init__(self, mixed_precision=None, cpu=False):
                self.partial = PartialState(cpu)
                mixed_precision = (
                    parse_choice_from_env("ACCLIB_MIXED_PRECISION", "no")
                    if mixed_precision is None
                    else mixed_precision.lower()
                )
                if mixed_precision == "fp8":
                    if not is_fp8_available():
                        raise ValueError("fp8 needs transformer_engine")
                    elif torch.cuda.is_available() and not check_cuda_fp8_capability():
                        logger.warning("capability %s too low for fp8", torch.cuda.get_device_capability())
                self.mixed_precision = mixed_precision
    """,
    "accelerator.py": """
        import torch
        from .state import AcceleratorState


        class Accelerator:
            def __init__(self, mixed_precision=None, cpu=False):
                self.state = AcceleratorState(mixed_precision=mixed_precision, cpu=cpu)

            def prepare(self, *objs):
                return objs

            def backward(self, loss):
                loss.backward()
    """,
}

PEFTLIB = {
    "__init__.py": "from .tuners import LoraConfig, get_peft_model\n",
    "import_utils.py": """
        import importlib.util


        def is_bnb_available():
            return importlib.util.find_spec("bitsandbytes") is not None


        def is_bnb_4bit_available():
            if not is_bnb_available():
                return False

            import bitsandbytes as bnb

            return hasattr(bnb.nn, "Linear4bit")
    """,
    "tuners.py": """
        from dataclasses import dataclass
        import torch
        from .import_utils import is_bnb_available

        if is_bnb_available():
            import bitsandbytes as bnb


        @dataclass
        class LoraConfig:
            r: int = 8
            lora_alpha: int = 16


        class LoraLinear(torch.nn.Module):
            def __init__(self, base, r):
                super().__init__()
                self.base = base
                self.lora_A = torch.nn.Linear(base.in_features, r, bias=False)


        def _create_module(target, config, loaded_in_8bit=False):
            if loaded_in_8bit and isinstance(target, bnb.nn.Linear8bitLt):
                return bnb.nn.Linear8bitLt(target.in_features, target.out_features)
            return LoraLinear(target, config.r)


        def get_peft_model(model, config):
            for name, module in model.named_modules():
                if isinstance(module, torch.nn.Linear):
                    _create_module(module, config)
            return model
    """,
}

BNBLIB = {
    "__init__.py": "",
    "cuda_specs.py": """
        import torch
        import pynvml


        def get_compute_capabilities():
            pynvml.nvmlInit()
            return [torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())]


        def get_cuda_specs():
            if not torch.cuda.is_available():
                return None
            return get_compute_capabilities()
    """,
}

XFLIB = {
    "__init__.py": """
        import os
        import torch


        def _is_triton_available():
            if os.environ.get("XFLIB_ENABLE_TRITON", "0") == "1":
                return True
            if not torch.cuda.is_available():
                return False
            import triton
            return triton.runtime.driver.active.get_current_device() >= 0
    """,
}

SCRIPT = """
import torch
from acclib import Accelerator
from peftlib import LoraConfig, get_peft_model


class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    accelerator = Accelerator(mixed_precision="bf16")
    model = get_peft_model(TinyModel(), LoraConfig(r=4, lora_alpha=8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = [(torch.randn(8, 16), torch.randint(0, 2, (8,))) for _ in range(4)]
    model, optimizer = accelerator.prepare(model, optimizer)
    for x, y in data:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    print("done")


if __name__ == "__main__":
    main()
"""


def _write(root: Path, name: str, files: dict) -> Path:
    lib = root / name
    for rel, text in files.items():
        p = lib / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return lib


@pytest.fixture(scope="module")
def reports(tmp_path_factory, kb):
    from analyse.library import analyse_library

    root = tmp_path_factory.mktemp("libs")
    out = {}
    for name, files in (("acclib", ACCLIB), ("peftlib", PEFTLIB), ("bnblib", BNBLIB), ("xflib", XFLIB)):
        lib = _write(root, name, files)
        out[name] = (lib, analyse_library([lib], kb, input_names=[name]))
    return out


def _fn(report, qual):
    return next((f for f in report["thirdparty"]["functions"] if f["qualname"] == qual), None)


def test_env_flag_call_site_is_off_by_default(reports):
    _lib, rep = reports["acclib"]
    assert _fn(rep, "acclib.utils.environment.set_numa_affinity")["status"] == "unsupported"
    ps = _fn(rep, "acclib.state.PartialState.__init__")
    assert ps is None or ps["status"] != "unsupported", ps


def test_fp8_check_is_conditional_not_unsupported(reports):
    _lib, rep = reports["acclib"]
    for q in ("acclib.state.AcceleratorState.__init__", "acclib.accelerator.Accelerator.__init__"):
        f = _fn(rep, q)
        assert f is not None and f["status"] == "conditional", f
        assert any("mixed_precision == 'fp8'" in c and "off by default" in c for c in f["conditions"]), f


def test_default_off_keyword_is_conditional(reports):
    _lib, rep = reports["acclib"]
    f = _fn(rep, "acclib.utils.random.set_seed")
    assert f is None or f["status"] != "unsupported"


def test_accelerate_and_peft_script_is_not_blocked(reports, tmp_path, kb):
    from analyse.modes import run_script

    paths = []
    for name in ("acclib", "peftlib"):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(reports[name][1]))
        paths.append(str(p))
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "train_lora.py").write_text(SCRIPT)
    assert len(SCRIPT.strip().splitlines()) <= 35
    out = run_script([tmp_path / "user"], kb, with_thirdparty=paths)
    assert out["summary"]["verdict"]["effort"] in ("none", "low"), [(f["code"], f["api"], f["severity"], f["counted"]) for f in out["findings"]]
    # Accelerator(mixed_precision="bf16") keeps the fp8 check off: no finding on that call
    assert not [f for f in out["findings"] if f["code"] == "NPU450" and f["api"].endswith("Accelerator")]


def test_literal_argument_that_turns_the_condition_on_is_reported(reports, tmp_path, kb):
    from analyse.modes import run_script

    p = tmp_path / "acclib.json"
    p.write_text(json.dumps(reports["acclib"][1]))
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "train.py").write_text("from acclib import Accelerator\n\nacc = Accelerator(mixed_precision='fp8')\n")
    out = run_script([tmp_path / "user"], kb, with_thirdparty=[str(p)])
    hits = [f for f in out["findings"] if f["code"] == "NPU450"]
    assert hits and hits[0]["severity"] == "manual" and "fp8" in hits[0]["message"]


_COND = re.compile(r"only when `(?P<cond>[^`]+)` \([\w-]+, (?P<path>[^:]+):(?P<line>\d+)")


_EXIT = re.compile(r"^(return( None| False| True)?|raise\b.*)$")   # an early exit: the guarded code comes after


def _if_test(line: str) -> str:
    m = re.match(r"\s*(?:el)?if (.*):\s*$", line)
    return " ".join(m.group(1).split()) if m else ""


def test_no_conditional_entry_prints_its_condition_inverted(reports):
    """Re-read each conditional entry's guard line: after an early exit (`if not X: return`) the printed
    condition is the one the rest runs under (X), never the exit's own test."""
    checked = 0
    for name, (lib, rep) in reports.items():
        for f in rep["thirdparty"]["functions"]:
            if f["status"] != "conditional":
                continue
            for c in f.get("conditions", ()):
                m = _COND.search(c)
                if not m:
                    continue
                lines = (lib / m.group("path")).read_text().splitlines()
                idx = int(m.group("line")) - 1
                test = _if_test(lines[idx])
                nxt = lines[idx + 1].strip() if idx + 1 < len(lines) else ""
                if test and _EXIT.match(nxt):
                    checked += 1
                    assert m.group("cond") != test, (name, f["qualname"], c)
        for fd in rep["findings"]:
            g = fd.get("guard") or {}
            if not g.get("condition") or g.get("kind") == "import-fallback":
                continue
            lines = (lib / fd["path"]).read_text().splitlines()
            idx = g["line"] - 1
            test = _if_test(lines[idx])
            nxt = lines[idx + 1].strip() if idx + 1 < len(lines) else ""
            if test and _EXIT.match(nxt) and fd["line"] > g["line"] + 1:
                checked += 1
                assert g["condition"] != test, (name, fd["path"], fd["line"], g)
                if test.startswith("not "):
                    want = test[4:]
                    if want.startswith("(") and want.endswith(")"):
                        want = want[1:-1]
                    assert g["condition"] == want, (name, fd["path"], fd["line"], g)
    assert checked >= 2
