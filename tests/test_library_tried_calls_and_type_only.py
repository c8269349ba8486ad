"""Library mode: calls tried for a value, and GPU-only names that are only looked at.

* a call tried for a value whose failure the handler answers with a value of its own
  (``try: ok = lib.probe() / except (AttributeError, RuntimeError, OSError): ok = False``) completes on any host:
  the function is ``supported`` (INVALID: ``unsupported`` from the call, as if nothing caught its failure);
* a GPU-only class imported only to be kept in a local list of types that ``isinstance(m, tuple(checklist))``
  tests (``checklist.append(SyncBatchNorm)``) runs none of its code: no use, and its import is no use either
  (INVALID: ``unsupported`` / ``conditional`` from the import and the append);
* a GPU-only module only listed with ``inspect.getmembers(mod, predicate)`` (the call spread over lines) runs none
  of its code (INVALID: ``unsupported`` from ``bitsandbytes.optim``).

VALID: a handler that re-raises is no fallback, nor is a broad ``except`` around a block of work (both stay
``unsupported``); a class of the list that is then built (``cls(n)``) is a use; a module whose class is built is a use.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "avail.py": """
        import importlib.util


        def is_apex_available():
            return importlib.util.find_spec("apex") is not None
    """,
    "probe.py": """
        def has_fast_kernel():
            try:
                import flash_attn_2_cuda as fa
            except ImportError:
                return False
            try:
                ok = fa.probe_device()
            except (AttributeError, RuntimeError, OSError):
                ok = False
            return ok


        def fast_kernel_version():
            try:
                import flash_attn_2_cuda as fa
            except ImportError:
                return None
            try:
                return fa.version()
            except Exception:
                return None


        def run_fast_kernel(x):
            import flash_attn_2_cuda as fa
            try:
                out = fa.fwd(x)
            except RuntimeError:
                raise
            return out


        def train_step(x):
            try:
                import flash_attn_2_cuda as fa
            except ImportError:
                return x
            try:
                y = fa.fwd(x)
                fa.bwd(y)
                fa.sync()
            except RuntimeError:
                y = None
            return y
    """,
    "norms.py": """
        import inspect

        import torch

        from nlib.avail import is_apex_available


        def revert_fused_norm(module):
            checklist = [torch.nn.SyncBatchNorm]
            if is_apex_available():
                from apex.parallel import SyncBatchNorm
                checklist.append(SyncBatchNorm)
            if isinstance(module, tuple(checklist)):
                return torch.nn.BatchNorm2d(module.num_features)
            return module


        def build_fused_norms(n):
            checklist = [torch.nn.SyncBatchNorm]
            from apex.parallel import SyncBatchNorm
            checklist.append(SyncBatchNorm)
            return [cls(n) for cls in checklist]


        def register_quant_optimizers(table):
            names = []
            try:
                import bitsandbytes as bnb
            except (ImportError, RuntimeError):
                pass
            else:
                members = inspect.getmembers(
                    bnb.optim, lambda c: inspect.isclass(c) and issubclass(c, torch.optim.Optimizer))
                for name, cls in members:
                    table[name] = cls
                    names.append(name)
            return names


        def build_quant_optimizer(params):
            import bitsandbytes as bnb
            return bnb.optim.Adam8bit(params)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "nlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_call_tried_for_a_value_whose_failure_the_handler_answers_completes(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert "nlib.probe.has_fast_kernel" not in by        # supported: the handler's value stands in for the call
    assert "nlib.probe.fast_kernel_version" not in by    # `return call()` / `except Exception: return None`
    # VALID: a handler that re-raises is no fallback
    run = by["nlib.probe.run_fast_kernel"]
    assert run["status"] == "unsupported" and "flash_attn_2_cuda.fwd" in run["reasons"]
    # VALID: a broad except around a block of work is not a tried call
    step = by["nlib.probe.train_step"]
    assert step["status"] == "unsupported"
    assert {"flash_attn_2_cuda.fwd", "flash_attn_2_cuda.bwd"} <= set(step["reasons"])


def test_a_gpu_only_class_kept_only_in_a_list_of_types_is_no_use(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert "nlib.norms.revert_fused_norm" not in by      # supported: import + append + isinstance(tuple(...))
    built = by["nlib.norms.build_fused_norms"]           # VALID: the classes of the list are built
    assert built["status"] == "unsupported" and built["reasons"] == ["apex.parallel.SyncBatchNorm"]


def test_a_gpu_only_module_only_listed_by_inspect_is_no_use(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert "nlib.norms.register_quant_optimizers" not in by   # supported: getmembers only lists the module
    built = by["nlib.norms.build_quant_optimizer"]            # VALID: a class of the module built
    assert built["status"] == "unsupported" and built["reasons"] == ["bitsandbytes.optim.Adam8bit"]
