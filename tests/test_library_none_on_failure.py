"""Library mode: a factory whose except branch hands None to its caller when its GPU-only part fails.

``get_ext()`` JIT-builds a CUDA extension in ``try`` and sets the result to None in ``except``. Its own status is
``conditional`` (the except branch is its fallback), but what its callers get depends on what they do with the
value it returns:

* ``get_ext().forward(x)`` calls the None: no fallback, ``unsupported`` (INVALID: ``conditional`` "only when the
  optional import succeeds");
* ``if not get_ext(): self.ext_available = False`` tests it and takes its own path: nothing from the build reaches
  the caller (INVALID: ``conditional``).

A flag the class sets to True / False in the two branches of that test (``self.ext_available``, in the class or a
base class of the module) holds the test's value: the build fails on an Ascend host, so the flag is False there and
``if self.ext_available: <kernel> else: <torch>`` takes the torch path (INVALID: ``conditional``).

VALID: a caller that only calls the factory (``get_ext()``, result unused) stays ``conditional``; a flag set in the
branches of ``torch.cuda.is_available()`` stays ``conditional`` on transfer_to_npu.
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

            def delta(self, rot):
                if self.ext_available:
                    bd = BlockDiag.apply(rot)
                else:
                    bd = torch.block_diag(*torch.unbind(rot))
                return bd


        class Fast(Layer):
            def forward(self, rot):
                if self.ext_available:
                    return BlockDiag.apply(rot)
                return torch.block_diag(*torch.unbind(rot))


        class Probe(torch.nn.Module):
            def setup(self):
                if torch.cuda.is_available():
                    self.gpu = True
                else:
                    self.gpu = False

            def forward(self, rot):
                if self.gpu:
                    out = BlockDiag.apply(rot)
                else:
                    out = torch.block_diag(*torch.unbind(rot))
                return out
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


def test_a_flag_set_from_the_failed_build_takes_the_fallback(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "fbdlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "fbdlib.Layer.delta" not in by      # supported: the flag is False on an Ascend host
    assert "fbdlib.Fast.forward" not in by     # the flag is set in a base class of the module
    # a flag set from the CUDA check: false on an NPU host as the code stands, whose else runs (supported since
    # stop 39; it was conditional "only under transfer_to_npu")
    assert "fbdlib.Probe.forward" not in by, by.get("fbdlib.Probe.forward")
