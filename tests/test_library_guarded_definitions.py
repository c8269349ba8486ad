"""Library mode: what an optional GPU-only library's availability check guards.

* a class defined only when the library imports (``if is_x_available(): class QuantLinear``, or inside
  ``try: import x``) with no other definition of the name: its methods call the library with no fallback, so they
  are ``unsupported`` (INVALID: ``conditional`` "only when the availability check holds");
* a parameter rebound before its test (``names = pick(self, names)`` then ``if not names: return``) is no longer
  decided by its default (INVALID: "only when a caller sets `names`, off by default");
* a class of the library collected in a local tuple that is only the class argument of ``isinstance`` is a type
  comparison, not a use (INVALID: ``conditional``).

VALID: a call behind the check inside a function keeps its fallback (``conditional``); a parameter tested at its
default stays a caller's choice, also when it is rebound through a function that returns a None argument as None
(``mask = sample(mask)`` with ``if t is None: return t``); a guarded class that is built (called) stays a use.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "avail.py": """
        import importlib.util


        def is_qkern_available():
            return importlib.util.find_spec("bitsandbytes") is not None
    """,
    "layers.py": """
        import torch

        from qlib.avail import is_qkern_available


        def pick_adapters(layer, names=None):
            if names is None:
                names = layer.active_adapters
            return [n for n in names if n not in layer.merged_adapters]


        if is_qkern_available():
            import bitsandbytes as bnb

            class QuantLinear(torch.nn.Module):
                def forward(self, x):
                    return bnb.matmul_4bit(x, self.weight)

                def merge(self, adapter_names=None):
                    adapter_names = pick_adapters(self, adapter_names)
                    if not adapter_names:
                        return
                    self.weight = bnb.nn.Int8Params(self.weight.data)


        try:
            import bitsandbytes as bnb2

            class PackedLinear(torch.nn.Module):
                def forward(self, x):
                    return bnb2.matmul_4bit(x, self.weight)
        except ImportError:
            bnb2 = None


        def scale(x):
            if is_qkern_available():
                import bitsandbytes as bnb
                return bnb.functional.dequantize_4bit(x)
            return x * 2


        def merge_plain(layer, adapter_names=None):
            if not adapter_names:
                return
            layer.weight = bnb.nn.Int8Params(layer.weight.data)


        def stage(pred, mask=None, packed=False):
            def sample_full(t, mode):
                if t is None:
                    return t
                return t * 2

            def sample_packed(t, mode):
                if t is None:
                    return None
                return t[0]

            sample = sample_packed if packed else sample_full
            mask = sample(mask, mode="nearest")
            if mask is not None:
                return bnb.functional.dequantize_4bit(mask)
            return pred
    """,
    "checks.py": """
        import torch


        def allowed_layers(model):
            Packed = None
            try:
                import bitsandbytes as bnb

                Packed = bnb.nn.Linear4bit
            except ImportError:
                pass
            allowed = (torch.nn.Linear,)
            if Packed is not None:
                allowed = allowed + (Packed,)
            bad = [m for m in model.modules() if not isinstance(m, allowed)]
            if bad:
                raise ValueError(bad)


        def build_packed(n):
            Packed = None
            try:
                import bitsandbytes as bnb

                Packed = bnb.nn.Linear4bit
            except ImportError:
                pass
            if Packed is not None:
                return Packed(n, n)
            return torch.nn.Linear(n, n)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "qlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_methods_of_a_class_defined_only_with_the_library_have_no_fallback(tmp_path, kb):
    by = _by(tmp_path, kb)
    fwd = by["qlib.layers.QuantLinear.forward"]
    assert fwd["status"] == "unsupported" and fwd["reasons"] == ["bitsandbytes.matmul_4bit"]
    packed = by["qlib.layers.PackedLinear.forward"]
    assert packed["status"] == "unsupported" and packed["reasons"] == ["bitsandbytes.matmul_4bit"]
    # VALID: a call behind the check inside a function keeps the check's fallback
    assert by["qlib.layers.scale"]["status"] == "conditional"
    assert any("`is_qkern_available()`" in c for c in by["qlib.layers.scale"]["conditions"])


def test_a_parameter_rebound_before_its_test_is_not_decided_by_its_default(tmp_path, kb):
    by = _by(tmp_path, kb)
    merge = by["qlib.layers.QuantLinear.merge"]
    assert merge["status"] == "unsupported" and merge["reasons"] == ["bitsandbytes.nn.Int8Params"]
    plain = by["qlib.layers.merge_plain"]   # VALID: the parameter itself, None by default: the caller's choice
    assert plain["status"] == "conditional"
    assert any("`adapter_names`" in c and "off by default" in c for c in plain["conditions"])
    # VALID: rebound through a function that hands a None argument back as None: the default still decides
    st = by["qlib.layers.stage"]
    assert st["status"] == "conditional"
    assert any("`mask is not None`" in c and "off by default" in c for c in st["conditions"])


def test_a_guarded_class_kept_in_a_tuple_of_types_is_no_use(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert "qlib.checks.allowed_layers" not in by   # supported: isinstance(m, allowed) only compares types
    built = by["qlib.checks.build_packed"]          # VALID: the class is built behind its availability test
    assert built["status"] == "conditional" and built["reasons"] == ["bitsandbytes.nn.Linear4bit"]
