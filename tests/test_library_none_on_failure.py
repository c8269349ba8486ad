"""Library mode: a factory whose except branch hands None to its caller when its GPU-only part fails.

``get_ext()`` JIT-builds a CUDA extension in ``try`` and sets the result to None in ``except``. Its own status is
``conditional`` (the except branch is its fallback), but what its callers get depends on what they do with the
value it returns:

* ``get_ext().forward(x)`` calls the None: no fallback, ``unsupported`` (INVALID: ``conditional`` "only when the
  optional import succeeds");
* ``if not get_ext(): self.ext_available = False`` tests it and takes its own path: nothing from the build reaches
  the caller (INVALID: ``conditional``).

VALID: a caller that only calls the factory (``get_ext()``, result unused) stays ``conditional``.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import os
        import warnings

        import torch

        _EXT = None


        def get_ext():
            global _EXT
            if _EXT is not None:
                return _EXT
            from torch.utils.cpp_extension import load

            here = os.path.dirname(__file__)
            try:
                ext = load(name="blockdiag_ext", sources=[f"{here}/bd.cpp", f"{here}/bd_kernel.cu"])
            except Exception as e:
                warnings.warn(f"could not build the extension: {e}")
                ext = None
            _EXT = ext
            return _EXT


        class BlockDiag(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return get_ext().forward(x)[0]


        class Layer(torch.nn.Module):
            def setup(self, factor):
                if not get_ext():
                    self.ext_available = False
                    factor = 1
                else:
                    self.ext_available = True
                self.factor = factor

            def warm(self):
                get_ext()
    """,
    "bd.cpp": "int bd(int x) { return x; }\n",
    "bd_kernel.cu": "__global__ void bd_kernel(float* x) {}\n",
}


def test_what_the_caller_does_with_a_none_result_decides(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "fbdlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["fbdlib.get_ext"]["status"] == "conditional"
    fwd = by["fbdlib.BlockDiag.forward"]
    assert fwd["status"] == "unsupported" and fwd["reasons"] == ["torch.utils.cpp_extension.load"]
    assert "fbdlib.Layer.setup" not in by            # supported: it tests the result and sets its own flag
    warm = by["fbdlib.Layer.warm"]                    # VALID: the factory's own condition
    assert warm["status"] == "conditional" and warm["reasons"] == ["torch.utils.cpp_extension.load"]
