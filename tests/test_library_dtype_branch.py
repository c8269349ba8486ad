"""A library function's branch on the dtype of a caller's data (library mode) is the caller's choice, like a layout
or size test: GPU-only code under it, with a fallback for other dtypes, makes the function conditional.

* INVALID (no longer unsupported): a LoRA merge that dequantises a bitsandbytes-packed weight only when the
  weight's dtype (read into a local first) is ``torch.uint8`` and adds in place otherwise; a dequantiser that calls
  the bitsandbytes kernel only for ``W.dtype in (torch.uint8, torch.int8)`` and returns the tensor otherwise;
* VALID: a function that calls the kernel first and only converts the result by dtype stays unsupported.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch
        import bitsandbytes as bnb


        class Merger:
            def merge(self, delta):
                packed_dtype = self.base.weight.dtype
                if packed_dtype == torch.uint8:
                    w = bnb.functional.dequantize_4bit(self.base.weight, self.base.weight.quant_state)
                    self.base.weight = bnb.nn.Params4bit(w + delta, requires_grad=False)
                else:
                    self.base.weight.data += delta
                return self.base.weight


        def unpack(W, state=None):
            if W.dtype in (torch.uint8, torch.int8):
                return bnb.functional.dequantize_4bit(W, state)
            return W


        def unpack_then_cast(W, state):
            want = W.dtype
            out = bnb.functional.dequantize_4bit(W, state)
            if want == torch.float16:
                out = out.half()
            return out
    """,
}


def test_dtype_branches_are_the_callers_choice(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "dtypelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("dtypelib.Merger.merge", "dtypelib.unpack"):
        assert by[q]["status"] == "conditional", by[q]
        assert any("dtype" in c for c in by[q]["conditions"]), by[q]
    assert by["dtypelib.unpack_then_cast"]["status"] == "unsupported"
