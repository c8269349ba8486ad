"""Library mode: a CUDA flag read by value, and GPU-only calls behind what the caller passes.

* ``self.gpu_available = torch.cuda.is_available()`` then ``if self.gpu_available: pynvml...`` with no ``else``:
  with transfer_to_npu (the default scenario) the flag is true and the NVIDIA-only library runs; skipping the
  branch skips the accelerator, so it is no fallback: ``unsupported`` (INVALID: ``conditional`` "only under
  transfer_to_npu");
* ``if scaling_vector is None: <torch> else: <xFormers kernel>`` with ``scaling_vector=None``: the kernel runs only
  for a caller that passes the argument: ``conditional`` (INVALID: ``unsupported``);
* ``elif isinstance(x_or_list, list): <xFormers path>``: only a caller that passes a list takes it: ``conditional``
  (INVALID: ``unsupported``).

VALID: the same flag with an explicit ``else`` is the fallback an NPU takes as the code stands: supported since
stop 39 (it was ``conditional`` on transfer_to_npu; see analyse.callgraph.npu_takes_fallback); the kernel called
unconditionally stays ``unsupported``.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "monitor.py": """
        import torch


        class Monitor:
            def __init__(self, log_all=False):
                self.gpu_available = torch.cuda.is_available()
                if self.gpu_available:
                    import pynvml
                    pynvml.nvmlInit()

            def sample(self):
                out = {}
                if self.gpu_available:
                    import pynvml
                    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
                    out["util"] = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
                return out


        class Meter:
            def __init__(self):
                self.gpu_available = torch.cuda.is_available()

            def sample(self):
                if self.gpu_available:
                    import pynvml
                    return pynvml.nvmlDeviceGetCount()
                else:
                    return 0
    """,
    "blocks.py": """
        import torch

        try:
            from xformers.ops import scaled_index_add, fmha

            XF_AVAILABLE = True
        except ImportError:
            XF_AVAILABLE = False


        def add_residual(x, idx, residual, alpha, scaling_vector=None):
            if scaling_vector is None:
                out = torch.index_add(x.flatten(1), 0, idx, residual.flatten(1), alpha=alpha)
            else:
                out = scaled_index_add(x, idx, residual, scaling=scaling_vector, alpha=alpha)
            return out


        def bias_for(shapes):
            return fmha.BlockDiagonalMask.from_seqlens(shapes)


        def block(x_or_list):
            if isinstance(x_or_list, torch.Tensor):
                return x_or_list * 2
            elif isinstance(x_or_list, list):
                return bias_for([t.shape[1] for t in x_or_list])
            raise AssertionError


        def always(x):
            return scaled_index_add(x, x, x, scaling=x, alpha=1.0)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "calllib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_flag_set_from_the_cuda_check_without_an_else_is_no_fallback(tmp_path, kb):
    by = _by(tmp_path, kb)
    init, sample = by["calllib.monitor.Monitor.__init__"], by["calllib.monitor.Monitor.sample"]
    assert init["status"] == "unsupported" and "pynvml.nvmlInit" in init["reasons"]
    assert sample["status"] == "unsupported" and "pynvml.nvmlDeviceGetHandleByIndex" in sample["reasons"]
    # VALID: an explicit else is the fallback an NPU takes without transfer_to_npu: supported
    assert "calllib.monitor.Meter.sample" not in by, by.get("calllib.monitor.Meter.sample")


def test_a_kernel_behind_an_argument_the_caller_passes_is_conditional(tmp_path, kb):
    by = _by(tmp_path, kb)
    res = by["calllib.blocks.add_residual"]
    assert res["status"] == "conditional" and res["reasons"] == ["xformers.ops.scaled_index_add"]
    assert res["conditions"] == ["only when a caller sets `scaling_vector is not None` (off by default, "
                                 f"blocks.py:{res['line'] + 1})"]
    blk = by["calllib.blocks.block"]
    assert blk["status"] == "conditional" and blk["reasons"] == ["xformers.ops.fmha.BlockDiagonalMask.from_seqlens"]
    assert any("`isinstance(x_or_list, list)`" in c for c in blk["conditions"])
    # VALID: called on the function's own path
    assert by["calllib.blocks.always"]["status"] == "unsupported"
    assert by["calllib.blocks.bias_for"]["status"] == "unsupported"


OPT = {
    "__init__.py": """
        import torch

        try:
            from bitsandbytes.optim import Adam8bit, GlobalOptimManager
        except ImportError:
            Adam8bit = GlobalOptimManager = None


        def make_optimizer(model, optimizer_cls, lr=1e-3):
            opt = optimizer_cls(model.parameters(), lr=lr)
            eight_bit = ["Adam8bit", "AdamW8bit"]
            if optimizer_cls.__name__ in eight_bit:
                import bitsandbytes

                manager = bitsandbytes.optim.GlobalOptimManager.get_instance()
                for m in model.modules():
                    if isinstance(m, torch.nn.Embedding):
                        manager.register_module_override(m, "weight", {"optim_bits": 32})
            return opt


        def make_optimizer2(model, optimizer_cls, lr=1e-3):
            opt = optimizer_cls(model.parameters(), lr=lr)
            if optimizer_cls is Adam8bit:
                GlobalOptimManager.get_instance().register_parameters(model.parameters())
            return opt


        def make_optimizer3(model, optimizer_cls):
            bits = {"Adam8bit": 8, "AdamW8bit": 8}
            if optimizer_cls.__name__ in bits:
                GlobalOptimManager.get_instance().register_parameters(model.parameters())
            return optimizer_cls(model.parameters())


        def paged(model):
            import bitsandbytes

            return bitsandbytes.optim.GlobalOptimManager.get_instance()
    """,
}


def test_which_class_the_caller_passes_is_the_callers_choice(tmp_path, kb):
    # INVALID: `optimizer_cls.__name__ in <names>` / `optimizer_cls is Adam8bit` made the 8-bit manager unsupported
    rep = library_report(tmp_path, kb, OPT, "optlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    one, two = by["optlib.make_optimizer"], by["optlib.make_optimizer2"]
    assert one["status"] == "conditional" and one["reasons"] == ["bitsandbytes.optim.GlobalOptimManager.get_instance"]
    assert any("`optimizer_cls.__name__ in eight_bit`" in c for c in one["conditions"])
    # the identity test is no use of the class either
    assert two["status"] == "conditional" and two["reasons"] == ["bitsandbytes.optim.GlobalOptimManager.get_instance"]
    assert any("`optimizer_cls is Adam8bit`" in c for c in two["conditions"])
    three = by["optlib.make_optimizer3"]   # a dict of names is a table too (its keys)
    assert three["status"] == "conditional" and any("`optimizer_cls.__name__ in bits`" in c
                                                    for c in three["conditions"])
    assert by["optlib.paged"]["status"] == "unsupported"   # VALID: on the function's own path
    assert not [e for e in rep["errors"] if e.get("kind") == "internal"]
