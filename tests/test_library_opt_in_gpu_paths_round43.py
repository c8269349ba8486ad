"""Library mode: GPU-only paths a caller opts into, and GPU-only code held where the call graph did not look (stop 43).

INVALID (before): each of these read ``supported``:

* a call through a module-level name the module binds either to a GPU-only library's native function
  (``cdequant = bnb_functional.lib.cdequantize_blockwise_fp32``) or to a function that only raises: whichever binding
  was made, the call needs the library;
* ``convert = torch.ops.hpu.convert_from_uint4`` in a ``try`` whose handler binds a raising stand-in: another
  vendor's operator, no NPU path;
* ``q4_matmul`` imported in a ``try`` whose ImportError handler assigns ``q4_matmul = error_raiser`` (a function
  that only raises): the stand-in is no fallback, the call is the import's;
* a function calling a name it gets from ``from .kernels import *``: the call was not followed.

and a GPU-only call after ``if quant_state is None: return W`` read ``unsupported`` where the caller's argument decides
(``conditional``), for a parameter with a ``None`` default and for a required one.

VALID: a working alternative binding (a torch function) keeps the call a fallback; a validation that only raises
(``if x is None: raise``) guards nothing; a star-imported name that no star source defines adds no unknown.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "kernels/__init__.py": """
        from .utils import fast_dequantize, fast_gemv, plain
    """,
    "kernels/utils.py": """
        import torch
        try:
            import bitsandbytes as bnb
            import bitsandbytes.functional as bnb_functional
        except Exception:
            bnb = None
            bnb_functional = None


        def _bnb_required(*args, **kwargs):
            raise RuntimeError("this path needs bitsandbytes")


        if bnb is None:
            cdequant = _bnb_required
            cgemv = torch.matmul
        else:
            cdequant = bnb_functional.lib.cdequantize_blockwise_fp32
            cgemv = bnb_functional.lib.cgemm_4bit_inference_naive_fp16


        def fast_dequantize(W, quant_state=None):
            if quant_state is None:
                return W
            out = torch.empty_like(W)
            cdequant(W, quant_state, out)
            return out


        def fast_gemv(X, W, quant_state):
            if quant_state is None:
                return torch.matmul(X, W)
            cdequant(W, quant_state)
            return X


        def always(W, quant_state):
            cdequant(W, quant_state)
            return W


        def validated(W, quant_state):
            if quant_state is None:
                raise ValueError("quant_state is required")
            cdequant(W, quant_state)
            return W


        def alternative(X, W):
            return cgemv(X, W)


        def plain(x):
            return x * 2
    """,
    "models/__init__.py": "",
    "models/llama.py": """
        from ..kernels import *


        def mlp_inference(X, W, quant_state):
            return fast_gemv(X, W, quant_state)


        def merge(W, quant_state):
            return fast_dequantize(W, quant_state)


        def doubled(x):
            return plain(x) + not_defined_anywhere(x)
    """,
    "qlinear/__init__.py": "",
    "qlinear/exllama.py": """
        import torch
        try:
            from exllama_kernels import q4_matmul
        except ImportError as e:
            def error_raiser(*args, **kwargs):
                raise ValueError("exllama kernels are not installed")

            q4_matmul = error_raiser


        class QuantLinear(torch.nn.Module):
            def forward(self, x):
                return q4_matmul(x, self.q4)
    """,
    "qlinear/hpu.py": """
        import torch
        try:
            import habana_frameworks.torch.core as htcore
            convert = torch.ops.hpu.convert_from_uint4
        except Exception as e:
            def error_raiser_hpu(*args, **kwargs):
                raise ValueError("no HPU framework")

            convert = error_raiser_hpu


        class QuantLinear(torch.nn.Module):
            def forward(self, x):
                w = convert(self.qweight, self.scales, self.zeros, x.dtype)
                return torch.matmul(x, w)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "qlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}, rep


def test_a_name_held_by_a_gpu_only_function_or_a_raising_stand_in_is_a_use(tmp_path, kb):
    by, rep = _by(tmp_path, kb)
    assert by["qlib.kernels.utils.always"]["status"] == "unsupported"
    assert by["qlib.kernels.utils.always"]["reasons"] == ["bitsandbytes.functional.lib.cdequantize_blockwise_fp32"]
    assert by["qlib.kernels.utils.validated"]["status"] == "unsupported"   # a raising validation is no fallback
    # a torch function as the other binding is a working alternative: the call is no use with no fallback
    assert "qlib.kernels.utils.alternative" not in by
    lines = {f["line"] for f in rep["findings"] if f["path"] == "kernels/utils.py" and f["code"] == "NPU402"
             and f["severity"] == "manual"}
    import textwrap
    text = textwrap.dedent(LIB["kernels/utils.py"]).lstrip("\n").splitlines()
    calls = {i + 1 for i, ln in enumerate(text) if ln.strip().startswith("cdequant(")}
    gemv = {i + 1 for i, ln in enumerate(text) if ln.strip().startswith("return cgemv(")}
    assert len(calls) == 4 and calls <= lines   # each `cdequant(...)` in a function is the library's use
    assert not (gemv & lines)                   # `cgemv(...)` has a working alternative binding


def test_none_tests_of_parameters_make_the_gpu_side_the_callers_choice(tmp_path, kb):
    import textwrap
    text = textwrap.dedent(LIB["kernels/utils.py"]).lstrip("\n").splitlines()
    tests = [i + 1 for i, ln in enumerate(text) if ln.strip() == "if quant_state is None:"]
    by, _rep = _by(tmp_path, kb)
    # a parameter with a None default: off unless a caller passes it
    assert by["qlib.kernels.utils.fast_dequantize"]["status"] == "conditional"
    assert by["qlib.kernels.utils.fast_dequantize"]["conditions"] == [
        f"only when a caller sets `quant_state is not None` (off by default, kernels/utils.py:{tests[0]})"]
    # a required parameter: either side is a caller's choice, the early return is the fallback
    assert by["qlib.kernels.utils.fast_gemv"]["status"] == "conditional"
    assert by["qlib.kernels.utils.fast_gemv"]["conditions"] == [
        f"only when `quant_state is not None` (option, kernels/utils.py:{tests[1]}; otherwise the fallback runs)"]


def test_star_imported_names_are_called_through(tmp_path, kb):
    by, _rep = _by(tmp_path, kb)
    assert by["qlib.models.llama.mlp_inference"]["status"] == "conditional"
    assert by["qlib.models.llama.mlp_inference"]["via"][-1] == "qlib.kernels.utils.fast_gemv"
    assert by["qlib.models.llama.merge"]["status"] == "conditional"
    assert "qlib.models.llama.doubled" not in by   # plain() is supported; the undefined name adds no unknown


def test_raising_stand_ins_assigned_in_the_handler_are_no_fallback(tmp_path, kb):
    by, _rep = _by(tmp_path, kb)
    assert by["qlib.qlinear.exllama.QuantLinear.forward"]["status"] in ("unsupported", "conditional")
    assert by["qlib.qlinear.exllama.QuantLinear.forward"]["status"] == "unsupported", \
        by["qlib.qlinear.exllama.QuantLinear.forward"]
    assert by["qlib.qlinear.hpu.QuantLinear.forward"]["status"] == "unsupported"
    assert by["qlib.qlinear.hpu.QuantLinear.forward"]["reasons"] == ["torch.ops.hpu.convert_from_uint4"]
