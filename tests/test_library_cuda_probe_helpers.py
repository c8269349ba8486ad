"""A CUDA availability probe whose answer changes nothing on an NPU host is no step for its caller (library mode),
and torch_npu's ShardedGradScaler stands in for FSDP's under the same name (data/curation.yaml):

* INVALID (no longer needs-migration): a state saver that asks its own ``has_gpu()`` helper (``return
  torch.cuda.is_available()``) before adding the CUDA RNG state in a block with no else; a wrapper whose assert
  lists an NPU alternative next to the CUDA probe (``assert has_gpu() or npu_ready()``), through the helper and
  written out (``torch.cuda.is_available() or ...``);
* INVALID (no longer conditional on an unverified API): a scaler factory that builds
  ``torch.distributed.fsdp.sharded_grad_scaler.ShardedGradScaler`` for FSDP;
* VALID: the helper itself (it answers False on an NPU host without transfer_to_npu) and a caller that asserts
  the CUDA probe alone stay needs-migration.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch


        def has_gpu():
            return torch.cuda.is_available()


        def npu_ready():
            try:
                import torch_npu  # noqa: F401
            except ImportError:
                return False
            return torch.npu.is_available()


        def save_rng(path, extra):
            states = {"cpu": torch.get_rng_state(), "extra": extra}
            if has_gpu():
                states["gpu"] = torch.cuda.get_rng_state_all()
            torch.save(states, path)
            return path


        class Wrapper:
            def __init__(self, scale="dynamic"):
                assert has_gpu() or npu_ready(), "needs an accelerator"
                self.scale = scale


        def check_written_out(model):
            assert torch.cuda.is_available() or npu_ready(), "needs an accelerator"
            return model


        def needs_cuda(model):
            assert has_gpu(), "CUDA only"
            return model


        def make_scaler(sharded=False, **kw):
            if sharded:
                from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
                return ShardedGradScaler(**kw)
            return None
    """,
}


def test_settled_cuda_probes_and_sharded_scaler(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "probelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("probelib.save_rng", "probelib.Wrapper.__init__", "probelib.check_written_out", "probelib.make_scaler"):
        assert q not in by, (q, by.get(q))     # supported: no entry
    assert by["probelib.has_gpu"]["status"] == "needs-migration"
    assert by["probelib.needs_cuda"]["status"] == "needs-migration"
    assert by["probelib.needs_cuda"]["reasons"] == ["torch.cuda.is_available"]
