"""Library mode, stop 39: conditions that choose a path on an NPU host.

``x.is_cuda`` in the test of an ``if`` whose branches both complete, of a conditional expression, or folded into a
flag (``det = torch.are_deterministic_algorithms_enabled() and x.is_cuda``) that only such ``if`` s test, is a path
choice: an NPU tensor takes the CUDA path with transfer_to_npu and the other without, and both run. It is advice,
and the function is supported (INVALID: NPU002 auto, the function and its callers ``needs-migration``).

VALID: ``if not x.is_cuda: raise ...`` stops an NPU without transfer_to_npu (needs-migration); an ``is_cuda``
passed on as a value stays a use.
"""

from __future__ import annotations

from helpers import library_report, write_files

IS_CUDA_LIB = {
    "__init__.py": """
        import torch


        def running_sum(x, dim=0):
            det = torch.are_deterministic_algorithms_enabled() and x.is_cuda and x.is_floating_point()
            if det:
                return x.cpu().cumsum(dim=dim).to(x.device)
            return torch.cumsum(x, dim=dim)


        def top_indices(x, k=1):
            if x.dtype == torch.half and not x.is_cuda:
                order = torch.argsort(x, dim=-1)
                return order.flip(-1)[..., :k]
            return x.topk(k).indices


        def pick_dtype(scores):
            return torch.uint8 if scores.is_cuda and scores.dtype is torch.bool else scores.dtype


        def metric(x):
            return running_sum(x) + top_indices(x)


        def only_gpu(x):
            if not x.is_cuda:
                raise RuntimeError("needs a GPU tensor")
            return x * 2


        def pinned(x):
            return torch.empty(3, pin_memory=x.is_cuda)
    """,
}


def test_is_cuda_that_only_chooses_between_completing_paths_is_no_migration(tmp_path, kb):
    rep = library_report(tmp_path, kb, IS_CUDA_LIB, "choicelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("running_sum", "top_indices", "pick_dtype", "metric"):
        assert f"choicelib.{q}" not in by, by.get(f"choicelib.{q}")
    advice = sorted(ln for f in rep["findings"] if f["api"] == "torch.Tensor.is_cuda" and f["severity"] == "advice"
                    for ln in (f.get("lines") or [f["line"]]))
    assert advice == [5, 12, 19]


def test_is_cuda_that_stops_or_is_passed_on_stays_a_migration(tmp_path, kb):
    rep = library_report(tmp_path, kb, IS_CUDA_LIB, "choicelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["choicelib.only_gpu"]["status"] == "needs-migration"
    assert by["choicelib.only_gpu"]["reasons"] == ["torch.Tensor.is_cuda"]
    assert by["choicelib.pinned"]["status"] == "needs-migration"
    auto = sorted(f["line"] for f in rep["findings"]
                  if f["api"] == "torch.Tensor.is_cuda" and f["severity"] == "auto")
    assert auto == [27, 33]



ENGINE_PROJECT = {
    "build_plan.py": """
        import argparse

        try:
            import tensorrt as trt
        except Exception:
            trt = None


        class PlanBuilder:
            def __init__(self, path):
                self.path = path

            def build(self):
                logger = trt.Logger(trt.Logger.WARNING)
                return trt.Builder(logger)


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("path")
            args = parser.parse_args()
            PlanBuilder(args.path).build()


        if __name__ == "__main__":
            main()
    """,
}


def test_placeholder_used_by_a_class_its_own_module_builds_unchecked_is_no_fallback(tmp_path, kb):
    """``except Exception: trt = None`` and nothing tests ``trt`` before the class's methods use it, while the
    module's own ``main`` builds the class with no test: on an NPU host the program dies at ``trt.Logger``
    (INVALID: advice, "guarded ... with a fallback", the program low)."""
    from analyse.modes import run_script

    root = write_files(tmp_path / "proj", ENGINE_PROJECT, strip_first_newline=True)
    rep = run_script([root], kb)
    trt = [f for f in rep["findings"] if f["api"].startswith("tensorrt.") and f["code"] != "NPU401"]
    assert trt and all(f["severity"] == "manual" for f in trt), [(f["line"], f["severity"]) for f in trt]
    assert 14 in {ln for f in trt for ln in (f.get("lines") or [f["line"]])}
    assert rep["summary"]["verdict"]["effort"] == "high"


NORM_LIB = {
    "__init__.py": """
        import importlib

        import torch
        import torch.nn.functional as F


        class _FusedFn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                ext = importlib.import_module("fused_norm_cuda")
                return ext.forward(x, w)


        def fused_affine(x, w):
            return _FusedFn.apply(x, w)


        def fused_plain(x):
            return _FusedFn.apply(x, None)


        class FusedNorm(torch.nn.Module):
            def __init__(self, n, affine=True):
                super().__init__()
                self.affine = affine
                self.weight = torch.nn.Parameter(torch.ones(n))

            def forward(self, x):
                if torch.jit.is_scripting() or not x.is_cuda:
                    return F.layer_norm(x, x.shape[-1:], self.weight)
                if self.affine:
                    return fused_affine(x, self.weight)
                else:
                    return fused_plain(x)


        class StrictNorm(FusedNorm):
            def forward(self, x):
                if not x.is_cuda:
                    raise RuntimeError("CUDA tensors only")
                return fused_affine(x, self.weight)
    """,
}


def test_calls_after_an_early_return_for_non_cuda_tensors_are_off_the_npu_path(tmp_path, kb):
    """``if scripting or not x.is_cuda: return F.layer_norm(...)`` before the fused calls: an NPU tensor is not a
    CUDA tensor and returns there, so the fused path is off the NPU path and forward is supported (INVALID:
    ``conditional`` with "only when `self.affine`" and "only when `not self.affine`", both "otherwise the fallback
    runs"). VALID: ``if not x.is_cuda: raise`` is a stop, not a path: the fused call after it still counts."""
    rep = library_report(tmp_path, kb, NORM_LIB, "normlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "normlib.FusedNorm.forward" not in by, by.get("normlib.FusedNorm.forward")
    assert by["normlib.fused_affine"]["status"] == "unsupported"
    assert by["normlib.StrictNorm.forward"]["status"] == "unsupported"


BACKEND_LIB = {
    "__init__.py": """
        import torch
        import torch.distributed as dist


        def synchronize():
            if not dist.is_available() or not dist.is_initialized():
                return
            if dist.get_backend() == dist.Backend.NCCL:
                dist.barrier(device_ids=[torch.cuda.current_device()])
            else:
                dist.barrier()


        def evaluate(preds):
            synchronize()
            return sum(preds)


        def pin(rank):
            if dist.get_backend() == "nccl":
                torch.cuda.set_device(rank)
            return rank
    """,
}


def test_a_backend_comparison_that_chooses_between_completing_branches_is_no_migration(tmp_path, kb):
    """``if dist.get_backend() == dist.Backend.NCCL: barrier(device_ids=[torch.cuda.current_device()]) else:
    barrier()``: the group is HCCL on an NPU host (false in both scenarios, ``Backend.NCCL`` read as "nccl"), the
    plain barrier runs: NPU102 advice and the CUDA call in the NCCL branch off the path, so synchronize and its
    caller are supported (INVALID: needs-migration for torch.distributed.backend:nccl and
    torch.cuda.current_device). VALID: a comparison that only skips its body (no other path written) stays manual."""
    rep = library_report(tmp_path, kb, BACKEND_LIB, "synclib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "synclib.synchronize" not in by, by.get("synclib.synchronize")
    assert "synclib.evaluate" not in by, by.get("synclib.evaluate")
    sev = {f["line"]: f["severity"] for f in rep["findings"] if f["code"] == "NPU102"}
    assert sev == {8: "advice", 20: "manual"}
    assert by["synclib.pin"]["status"] == "needs-migration"
    cuda = {f["line"]: f["guard"]["on_path"] for f in rep["findings"] if f["api"] == "torch.cuda.current_device"}
    assert cuda == {9: {"transfer_to_npu": "off", "no_transfer": "off"}}


FLAG_LIB = {
    "__init__.py": "",
    "utils/__init__.py": "",
    "utils/_guards.py": """
        import torch

        _SUPPORTS_BLOCK_MASKS = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (7, 5)
        _HAS_GPU = torch.cuda.is_available()
    """,
    "attn.py": """
        import torch

        from .utils._guards import _SUPPORTS_BLOCK_MASKS, _HAS_GPU

        if _SUPPORTS_BLOCK_MASKS:
            from torch.nn.attention.flex_attention import create_block_mask


        def packed_mask(n):
            if _SUPPORTS_BLOCK_MASKS:
                return create_block_mask(lambda b, h, q, k: q >= k, 1, 1, n, n)
            else:
                return torch.tril(torch.ones(n, n, dtype=torch.bool))


        def gpu_mask(n):
            if not _HAS_GPU:
                raise ValueError("needs a GPU")
            return torch.tril(torch.ones(n, n, dtype=torch.bool))
    """,
    "local.py": """
        import torch

        from .attn import _SUPPORTS_BLOCK_MASKS


        def local_mask(n):
            if not _SUPPORTS_BLOCK_MASKS:
                raise ValueError("local attention needs block masks")
            return torch.tril(torch.ones(n, n, dtype=torch.bool))
    """,
}


def test_a_flag_imported_from_another_module_has_the_kind_and_values_of_its_definition(tmp_path, kb):
    """``from .utils._guards import _SUPPORTS_BLOCK_MASKS`` where that module sets it from ``torch.cuda.is_available() and
    ...``: the test reads as the availability check it is, false on an NPU host without transfer_to_npu (INVALID: an
    ``option`` the analysis cannot value, conditional in both scenarios)."""
    rep = library_report(tmp_path, kb, FLAG_LIB, "flaglib")
    (f,) = [f for f in rep["findings"] if f["api"].endswith("create_block_mask") and f["path"] == "attn.py"]
    assert f["guard"]["kind"] == "availability-check" and f["guard"]["condition"] == "_SUPPORTS_BLOCK_MASKS"
    assert f["guard"]["on_path"] == {"transfer_to_npu": "conditional", "no_transfer": "off"}
    # false on an NPU host as the code stands, with a working else: the NPU takes the dense path (supported; it was
    # conditional "only when `_SUPPORTS_BLOCK_MASKS` ... otherwise the fallback runs")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "flaglib.attn.packed_mask" not in by, by.get("flaglib.attn.packed_mask")


def test_a_cuda_flag_test_that_stops_an_npu_makes_the_function_unsupported(tmp_path, kb):
    """``if not _SUPPORTS_BLOCK_MASKS: raise`` with the flag (imported from a module that imported it) false on an NPU host (and not known true with
    transfer_to_npu: the capability test): every call stops, NPU004 manual, the function ``unsupported`` (INVALID:
    supported, no finding). VALID: a flag that transfer_to_npu makes true (``torch.cuda.is_available()``) is a
    migration (auto, needs-migration), as the call itself would be."""
    rep = library_report(tmp_path, kb, FLAG_LIB, "flaglib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["flaglib.local.local_mask"]["status"] == "unsupported"
    assert by["flaglib.local.local_mask"]["reasons"] == ["cuda-availability-flag"]
    stops = [(f["path"], f["line"], f["severity"]) for f in rep["findings"] if f["api"] == "cuda-availability-flag"]
    assert sorted(stops) == [("attn.py", 17, "auto"), ("local.py", 7, "manual")]
    assert by["flaglib.attn.gpu_mask"]["status"] == "needs-migration"


def test_conditions_memoised_before_the_options_are_configured_are_made_again():
    """The pre-scan may build a test's condition (and classify its guard) before the project's options and flags
    are configured; once they are, the memo on the node is stale and the test is read again (INVALID: the imported
    flag stayed an unknown ``option`` in the analysis)."""
    import astroid
    from astroid import nodes

    from analyse import conditions as C
    from analyse.conditions.options import configure
    from analyse.guards import guard_of

    tree = astroid.parse("from pkg.guards import _FLAG\n\n\ndef f(x):\n    if _FLAG:\n        return x.sum()\n"
                         "    return x\n", module_name="pkg.user")
    ifn = next(tree.nodes_of_class(nodes.If))
    call = ifn.body[0].value
    try:
        configure({}, "thirdparty")
        assert C.build(ifn.test).kind == "unknown"
        g0 = guard_of(call)
        assert g0 is None or g0.kind == "option"
        configure({}, "thirdparty", module_flags={"pkg.guards._FLAG": ("cuda", (None, False))})
        assert C.build(ifn.test).values == (None, False)
        g = guard_of(call)
        assert g.kind == "availability-check" and g.on_path == {"transfer_to_npu": "conditional", "no_transfer": "off"}
    finally:
        configure({}, "script")


NAMESPACE_LIB = {
    "__init__.py": """
        import logging

        import torch

        logger = logging.getLogger(__name__)


        def device_type():
            return "npu" if hasattr(torch, "npu") else "cpu"


        def device_namespace():
            name = device_type()
            try:
                return getattr(torch, name)
            except AttributeError:
                logger.warning("no torch.%s, using torch.cuda", name)
                return torch.cuda


        def memory_stats():
            ns = device_namespace()
            return {"peak": ns.max_memory_allocated() / 1e9}
    """,
}


def test_the_cuda_fallback_for_a_missing_device_namespace_is_off_the_npu_path(tmp_path, kb):
    """``try: return getattr(torch, device_type) / except AttributeError: return torch.cuda``: the handler runs only
    for a device type torch has no namespace for, and torch_npu gives the NPU ``torch.npu``: the ``torch.cuda`` there
    is off the path and the functions are supported (INVALID: needs-migration for ``torch.cuda``)."""
    rep = library_report(tmp_path, kb, NAMESPACE_LIB, "nslib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "nslib.device_namespace" not in by and "nslib.memory_stats" not in by, by
    (f,) = [f for f in rep["findings"] if f["api"] == "torch.cuda"]
    assert f["line"] == 18 and f["guard"]["on_path"] == {"transfer_to_npu": "off", "no_transfer": "off"}


WARN_LIB = {
    "__init__.py": """
        import warnings

        import torch


        def reduce_max(src, index, size):
            if src.is_cuda and src.requires_grad:
                warnings.warn("a compiled scatter would be faster here")
            out = src.new_zeros(size)
            return out.scatter_reduce_(0, index, src, reduce="amax", include_self=False)
    """,
}


def test_is_cuda_before_a_branch_that_only_warns_is_a_path_choice(tmp_path, kb):
    """``if src.is_cuda and src.requires_grad: warnings.warn(...)``: a branch that only warns completes (it is not a
    stop), so the test chooses between two completing paths: advice, the function supported (INVALID:
    needs-migration, the warning read as a branch that stops)."""
    rep = library_report(tmp_path, kb, WARN_LIB, "warnlib")
    assert rep["thirdparty"]["functions"] == []
    (f,) = [f for f in rep["findings"] if f["api"] == "torch.Tensor.is_cuda"]
    assert f["severity"] == "advice" and f["line"] == 7


PROBE_LIB = {
    "__init__.py": """
        import torch


        def fuser_version():
            if not torch.cuda.is_available():
                return None
            try:
                import nvfuser
            except ImportError:
                return None
            return nvfuser.version()


        def fuser_available():
            return fuser_version() is not None


        def must_have_gpu():
            if not torch.cuda.is_available():
                raise RuntimeError("GPU only")
            return 1
    """,
}


def test_a_cuda_availability_test_with_completing_paths_is_no_migration_in_a_library(tmp_path, kb):
    """Library mode: ``if not torch.cuda.is_available(): return None`` completes on an NPU host either way: advice
    and the function supported (INVALID: needs-migration for ``torch.cuda.is_available``). VALID: one that raises
    stays a migration."""
    rep = library_report(tmp_path, kb, PROBE_LIB, "probelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "probelib.fuser_version" not in by and "probelib.fuser_available" not in by, by
    assert by["probelib.must_have_gpu"]["status"] == "needs-migration"
    sev = {f["line"]: f["severity"] for f in rep["findings"] if f["api"] == "torch.cuda.is_available"}
    assert sev == {5: "advice", 19: "auto"}


STOP_THEN_KERNEL = {
    "attn.cu": "__global__ void attn_kernel(float* x) {}\n",
    "__init__.py": """
        import torch
        from torch.utils.cpp_extension import load

        try:
            import xformers
            HAS_XF = True
        except ImportError:
            HAS_XF = False

        _ext = load(name="attn_ext", sources=["attn.cu"])


        def enable_fast_attention(module, enable):
            if enable:
                if not HAS_XF:
                    raise ModuleNotFoundError("xformers")
                elif not torch.cuda.is_available():
                    raise ValueError("xformers needs a GPU")
                else:
                    if HAS_XF:
                        q = torch.randn((1, 2, 40), device="cuda")
                        _ext.forward(q)
                    module.backend = "xformers"
    """,
}


def test_a_cuda_test_whose_other_side_stops_is_no_fallback_for_the_code_behind_it(tmp_path, kb):
    """VALID: the kernel sits under ``if HAS_XF:`` (an optional library's test, with a fallback) inside the branch
    left by ``elif not torch.cuda.is_available(): raise``: the CUDA test is false on an NPU host but its other side
    stops, so the NPU does not take a fallback there: the function stays ``conditional`` on the caller's option
    (INVALID with the first reading of npu_takes_fallback: the kernel dropped and the function needs-migration)."""
    rep = library_report(tmp_path, kb, STOP_THEN_KERNEL, "stoplib2")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    fn = by["stoplib2.enable_fast_attention"]
    assert fn["status"] == "conditional", fn
    assert any(r.startswith("attn_ext.forward") for r in fn["reasons"]), fn["reasons"]


HOST_DEVICE_LIB = {
    "__init__.py": """
        import torch


        class Index:
            def __init__(self, points, device="cpu"):
                self.points = points
                self.to(device)

            def to(self, device):
                if str(device) == "cpu":
                    self.points = self.points.cpu()
                elif "cuda" in str(device):
                    self.points = self.points.cuda()
                else:
                    raise ValueError(f"unknown device {device}")
                return self


        def place(x):
            if x.device.type != "cpu":
                return x.cuda()
            return x
    """,
}


def test_a_comparison_with_the_cpu_device_is_no_fallback_an_npu_takes(tmp_path, kb):
    """INVALID (a regression of the stop-39 fallback reading, found on held-out code after the final measurement):
    ``if str(device) == "cpu": <cpu> elif "cuda" in str(device): <cuda> else: raise`` read "not the CPU" as the CUDA
    device, so the CPU branch became the NPU's fallback and the function supported. A caller's NPU device takes
    neither branch and raises: the function is not supported (it stays conditional on the caller's device, as
    before the fallback reading). VALID: ``x.device.type != "cpu"`` choosing ``.cuda()`` is still a device branch the
    tool reports."""
    rep = library_report(tmp_path, kb, HOST_DEVICE_LIB, "hostdev")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("hostdev.Index.to", "hostdev.Index.__init__"):
        assert q in by, sorted(by)
        assert by[q]["status"] != "supported", by[q]
    assert "hostdev.place" in by, sorted(by)


FALL_THROUGH_LIB = {
    "__init__.py": """
        import torch


        def accelerator_name():
            if torch.cuda.is_available():
                return "cuda"
            elif hasattr(torch, "xpu") and torch.xpu.is_available():
                return "xpu"
            raise NotImplementedError("no supported accelerator")


        def accelerator_or_cpu():
            if torch.cuda.is_available():
                return "cuda"
            elif hasattr(torch, "xpu") and torch.xpu.is_available():
                return "xpu"
            return "cpu"
    """,
}


def test_a_device_chain_that_falls_through_to_a_raise_is_no_path_choice(tmp_path, kb):
    """INVALID (a regression of the stop-39 path-choice rule, found on held-out code after the final measurement):
    ``if torch.cuda.is_available(): return "cuda" / elif <xpu>: return "xpu"`` followed by ``raise`` was read as a
    choice between completing paths, because only the chain's own branches were checked; an NPU host without
    transfer_to_npu falls through to the raise, so the test is a migration (needs-migration). VALID: the same chain
    falling through to ``return "cpu"`` completes: a path choice, and the function is supported."""
    rep = library_report(tmp_path, kb, FALL_THROUGH_LIB, "fallthru")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "fallthru.accelerator_name" in by, sorted(by)
    assert by["fallthru.accelerator_name"]["status"] != "supported"
    assert "fallthru.accelerator_or_cpu" not in by, by.get("fallthru.accelerator_or_cpu")
