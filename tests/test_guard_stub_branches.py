"""A branch whose alternative only defines raising stubs is no fallback.

``if _kernels_available: <Triton kernels and their wrappers>`` / ``else: def op(...): raise AssertionError("needs
triton")``: on a host where the test fails the names exist but raise, so the code in the first branch has no
working alternative (unsupported), while an ``else`` with a real implementation keeps it conditional.
"""

from __future__ import annotations

from analyse.knowledge import load_knowledge
from tests.helpers import library_report

KERNELS = """
import importlib.util

import torch

_available = importlib.util.find_spec("triton") is not None and torch.cuda.is_available()

if _available:
    import triton
    import triton.language as tl

    @triton.jit
    def _kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, x.to(tl.float8e4nv), mask=offs < n)

    def to_fp8(x):
        _kernel[(1,)](x, x.numel(), BLOCK=128)
        return x

else:

    def to_fp8(x):
        raise AssertionError("needs triton")
"""


def _statuses(tmp_path, name, src):
    rep = library_report(tmp_path, load_knowledge("2.7.1"), {"__init__.py": "", "kern.py": src}, name)
    return {d["qualname"]: d for d in rep["thirdparty"]["functions"]}


def test_an_else_of_raising_stubs_is_no_fallback(tmp_path):
    st = _statuses(tmp_path, "stublib", KERNELS)
    assert st["stublib.kern._kernel"]["status"] == "unsupported"
    assert "triton.language.float8e4nv" in st["stublib.kern._kernel"]["reasons"]


def test_an_else_with_a_real_implementation_stays_conditional(tmp_path):
    src = KERNELS.replace('        raise AssertionError("needs triton")', "        return x.to(torch.float16)")
    st = _statuses(tmp_path, "fallbacklib", src)
    assert st["fallbacklib.kern._kernel"]["status"] == "conditional"
