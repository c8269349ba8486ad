"""Fuzz of call shapes: 3,000 generated programs through both modes, no internal error.

The programs combine the APIs the passes look at closely (flash-attn / xformers
attention, compiled extension modules, torch.cuda, distributed, the library's
own classes) with every call shape Python allows: ``*args``, ``**kw``, starred
arguments in the middle, keyword-only arguments, lambdas, nested defs,
decorators, calls on call results, subscripted and ``getattr`` callees, walrus
and comprehension scopes. A crash of any pass on any of them is an ``internal``
error entry; the test asserts there is none (a regression once: ``flash_attn_func(*args)``
raised UnboundLocalError in the third-party pass).
"""

import random
from pathlib import Path

import pytest

from analyse.library import analyse_library_data
from analyse.pipeline import run as run_script

CALLEES = [
    "flash_attn_func", "flash_attn_varlen_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "xops.memory_efficient_attention",
    "torch.cuda.synchronize", "torch.cuda.set_device", "torch.nn.functional.scaled_dot_product_attention",
    "dist.init_process_group", "dist.all_reduce", "_C.nms", "ext.roi_align_forward", "torch.ops.mylib.fused",
    "amp_C.multi_tensor_l2norm", "apex.optimizers.FusedAdam", "torch.Tensor.cuda", "x.cuda", "x.to",
    "x.nonzero", "torch.nonzero", "torch.nn.Parameter", "Helper", "Helper.run", "helper_fn", "self.forward",
    "triton_kernel[grid]", "getattr(torch, 'cuda').synchronize", "(lambda *a, **k: a)", "torch.load",
    "torch.backends.cudnn.benchmark.__class__", "mod.fn", "super().forward", "cls",
]
ARG_SHAPES = [
    "", "*args", "**kw", "*args, **kw", "q, k, v", "q, *rest", "q, *rest, v", "*a, *b", "**kw, **kw2",
    "q, k, v, dropout_p=0.1, causal=True", "q, k, v, causal=flag", "q, k, v, *extra, softmax_scale=s",
    "qkv, 0.0, None, True", "*[q, k, v]", "*(q,)", "**{'causal': True}", "x, device='cuda'", "'cuda:0'",
    "lambda t: t.cuda()", "(yield_val := q)", "*map(f, xs)", "[t for t in xs]", "{k: v for k, v in kw.items()}",
    "q[..., 0], k[:, None], v.T", "f(*args)(**kw)", "name='x', sources=['a.cu']", "'nccl'", "backend='nccl'",
]
WRAPPERS = [
    "{call}",
    "y = {call}",
    "y = (lambda *a, **k: {call})(*args)",
    "def inner(*args, **kw):\n        return {call}\n    y = inner(*args, **kw)",
    "def inner(*args, q=None, **kw):\n        def deeper():\n            return {call}\n        return deeper\n    y = inner()()",
    "y = [{call} for _ in range(2)]",
    "with ctx:\n        y = {call}",
    "try:\n        y = {call}\n    except Exception:\n        y = None",
    "if torch.cuda.is_available():\n        y = {call}\n    else:\n        y = None",
    "y = {call} if flag else None",
    "async def co():\n        return await {call}",
    "y = partial({call_func}, *args)",
    "@decorate({call})\n    def g(*a):\n        return a",
    "y = (yield {call})",
    "global G\n    G = {call}",
]
HEADER = """\
import torch
import torch.distributed as dist
from functools import partial
from flash_attn import (flash_attn_func, flash_attn_varlen_func, flash_attn_qkvpacked_func,
                        flash_attn_kvpacked_func, flash_attn_varlen_qkvpacked_func, flash_attn_varlen_kvpacked_func)
import xformers.ops as xops
import amp_C
import apex
from . import _C
from .helpers import Helper, helper_fn
from torch.utils.cpp_extension import load
ext = load(name='fused_ext', sources=['fused.cpp', 'fused_kernel.cu'])
"""
HELPERS = """\
import torch


class Helper(torch.nn.Module):
    def __init__(self, *args, **kw):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(2))

    def run(self, *args, **kw):
        return torch.cuda.synchronize()

    def forward(self, x, *rest, **kw):
        return x.cuda()


def helper_fn(*args, **kw):
    return Helper(*args, **kw).run(*args)
"""


def _program(rng: random.Random, n: int) -> str:
    callee = rng.choice(CALLEES)
    args = rng.choice(ARG_SHAPES)
    call = f"{callee}({args})"
    body = rng.choice(WRAPPERS).format(call=call, call_func=callee)
    sig = rng.choice(["*args, **kw", "q, k, v, *args, flag=False, **kw", "self, *args", "*, q=None, **kw",
                      "q, /, k, *args, v=None, **kw"])
    if rng.random() < 0.3:
        sig = sig.replace("self, ", "")
        return (f"class Case{n}(Helper):\n    def method(self, {sig}):\n        "
                + body.replace("\n    ", "\n        ") + "\n        return locals()\n")
    return f"def case{n}({sig}):\n    {body}\n    return locals()\n"


def _write_corpus(root: Path, programs: int = 3000, per_file: int = 60, seed: int = 20240611) -> int:
    rng = random.Random(seed)
    pkg = root / "fuzzlib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .helpers import Helper, helper_fn\n")
    (pkg / "helpers.py").write_text(HELPERS)
    written = 0
    for f in range(programs // per_file):
        chunks = [HEADER]
        for i in range(per_file):
            chunks.append(_program(rng, f * per_file + i))
            written += 1
        src = "\n\n".join(chunks)
        compile(src, f"case{f}.py", "exec")  # every generated program is valid Python
        (pkg / f"cases_{f:03d}.py").write_text(src)
    return written


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    n = _write_corpus(root)
    assert n == 3000
    return root / "fuzzlib"


def _internal(errors):
    return [e for e in errors if e.kind == "internal"]


def test_no_internal_error_in_script_mode(corpus, kb):
    res = run_script([corpus], kb, mode="script")
    assert _internal(res.errors) == []
    # the calls were seen: attention calls with known arguments are reported
    apis = {f.api for f in res.findings}
    assert "flash_attn.flash_attn_func" in apis
    assert any(a.startswith("torch.cuda.synchronize") for a in apis)


def test_no_internal_error_in_thirdparty_mode(corpus, kb):
    res = analyse_library_data([corpus], kb)
    assert _internal(res.errors) == []
    assert res.files_analysed >= 50
    by_name = {d["qualname"]: d for d in res.functions}
    assert by_name["fuzzlib.helpers.Helper.run"]["status"] == "needs-migration"  # torch.cuda.synchronize


def test_starred_flash_attn_call_is_reported_without_arguments(tmp_path, kb):
    (tmp_path / "a.py").write_text(
        "from flash_attn import flash_attn_func\n\n\ndef f(*args, **kw):\n    return flash_attn_func(*args)\n\n\n"
        "def g(q, k, v):\n    return flash_attn_func(q, *k, v)\n")
    res = run_script([tmp_path], kb, mode="script")
    assert _internal(res.errors) == []
    lines = sorted(f.line for f in res.findings if f.api == "flash_attn.flash_attn_func" and f.code == "NPU403")
    assert lines == [5, 9]
    # the positional argument after *k is not taken for `v`
    g = next(f for f in res.findings if f.code == "NPU403" and f.line == 9)
    assert "v.shape" not in (g.replacement or "")
