"""Library mode: two readings of what an NPU host runs as the code stands.

1. ``if torch.cuda.is_available(): states["cuda"] = torch.cuda.get_rng_state_all()`` with no ``else``, followed by
   code that completes: an NPU without transfer_to_npu skips the block and goes on, with it the block runs on the
   NPU. The code after the block is the fallback, so the function is supported (old: needs-migration). INVALID:
   the block is followed by a ``raise`` (no working path without the GPU), or it is the last statement (nothing
   after it to call a fallback): needs-migration stays; GPU-only code in the block (NVML) fails where
   transfer_to_npu makes the test true: unsupported stays.
2. A function conditional only through "a caller sets `mixed_precision == 'fp8'`" on its own parameter adds
   nothing to a call that passes no value for that parameter (``State()``, ``State(cpu=True)``): the option is off
   there (old: conditional). INVALID: a call that passes it (``State("fp8")``, ``State(mixed_precision=p)``) or
   spreads ``**kwargs`` stays conditional.
"""

from __future__ import annotations

from helpers import library_report

NOELSE = {
    "__init__.py": "",
    "state.py": """
        import random

        import torch


        def save_state(path, model):
            states = {"python": random.getstate(), "torch": torch.get_rng_state()}
            if torch.cuda.is_available():
                states["cuda"] = torch.cuda.get_rng_state_all()
            torch.save({"model": model.state_dict(), "rng": states}, path)
            return path


        def default_precision():
            if torch.cuda.is_available():
                if torch.cuda.is_bf16_supported():
                    return "bf16-mixed"
                return "16-mixed"
            return "32-true"


        def needs_gpu(x):
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            raise RuntimeError("no GPU")


        def last_statement(x):
            y = x * 2
            if torch.cuda.is_available():
                torch.cuda.synchronize()


        def metrics():
            out = {}
            if torch.cuda.is_available():
                import pynvml
                handle = pynvml.nvmlDeviceGetHandleByIndex(0)
                out["gpu"] = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
            out["rng"] = torch.get_rng_state()
            return out
    """,
}

DEFAULTS = {
    "__init__.py": "",
    "state.py": """
        import os

        import torch


        class State:
            def __init__(self, mixed_precision=None, cpu=False):
                if mixed_precision is None:
                    mixed_precision = os.environ.get("MIXED_PRECISION", "no")
                if mixed_precision == "fp8":
                    import transformer_engine.pytorch as te
                    te.fp8_autocast()
                self.mixed_precision = mixed_precision


        def context_manager():
            state = State()
            return torch.autocast(device_type="cpu", enabled=state.mixed_precision != "no")


        def with_cpu():
            return State(cpu=True)


        def fp8_state():
            return State("fp8")


        def chosen(precision):
            return State(mixed_precision=precision)


        def spread(**kwargs):
            return State(**kwargs)
    """,
}


def _by(rep):
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_cuda_block_without_else_followed_by_completing_code_is_skipped_on_an_npu(tmp_path, kb):
    # VALID (old: needs-migration, torch.cuda.get_rng_state_all / torch.cuda.is_bf16_supported)
    by = _by(library_report(tmp_path, kb, NOELSE, "nelib"))
    assert "nelib.state.save_state" not in by, by.get("nelib.state.save_state")
    assert "nelib.state.default_precision" not in by, by.get("nelib.state.default_precision")


def test_a_cuda_block_before_a_raise_or_at_the_end_stays_a_migration(tmp_path, kb):
    # INVALID
    by = _by(library_report(tmp_path, kb, NOELSE, "nelib"))
    assert by["nelib.state.needs_gpu"]["status"] == "needs-migration"
    assert by["nelib.state.last_statement"]["status"] == "needs-migration"
    assert by["nelib.state.metrics"]["status"] == "unsupported", by["nelib.state.metrics"]


def test_a_call_that_leaves_the_option_at_its_default_does_not_take_the_callee_condition(tmp_path, kb):
    # VALID (old: conditional through State.__init__)
    by = _by(library_report(tmp_path, kb, DEFAULTS, "deflib"))
    assert by["deflib.state.State.__init__"]["status"] == "conditional"
    assert "deflib.state.context_manager" not in by, by.get("deflib.state.context_manager")
    assert "deflib.state.with_cpu" not in by, by.get("deflib.state.with_cpu")


def test_a_call_that_passes_the_option_keeps_the_callee_condition(tmp_path, kb):
    # INVALID
    by = _by(library_report(tmp_path, kb, DEFAULTS, "deflib"))
    for q in ("fp8_state", "chosen", "spread"):
        assert by[f"deflib.state.{q}"]["status"] == "conditional", q
