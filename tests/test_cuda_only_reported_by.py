"""Which cuda-only facts the cuda-api pass reports outside torch.cuda is data (`reported_by` in data/cuda_only.yaml),
not an id list in the pass: a fact marked ``reported_by: cuda-api`` is reported (NPU006 with its severity) wherever
a name resolves to it, one marked for another pass or ``none`` is not."""

import pytest
import yaml

from analyse.knowledge import KnowledgeError, clear_cache, data_dir, load_knowledge
from analyse.passes.cuda_api import CudaApiPass
from tests.helpers import analyse_source


def npu006(tmp_path, kb, src):
    r = analyse_source(tmp_path, src, kb, passes=[CudaApiPass()])
    assert not r.errors
    return [(f.line, f.severity, f.api) for f in r.findings if f.code == "NPU006"]


def test_nvtx_profiler_outside_torch_cuda_is_reported(tmp_path, kb):
    # INVALID: torch.autograd.profiler.emit_nvtx (cuda-nvtx, manual: documented as not supported on NPU)
    got = npu006(tmp_path, kb, """
        import torch

        def step(model, x, profile=False):
            if profile:
                with torch.autograd.profiler.emit_nvtx():
                    return model(x)
            return model(x)
    """)
    assert (6, "manual", "torch.autograd.profiler.emit_nvtx") in got


def test_symmetric_memory_is_a_blocker_despite_the_distributed_prefix(tmp_path, kb):
    # INVALID: torch.distributed names are the distributed pass's, except a fact that says cuda-api
    got = npu006(tmp_path, kb, """
        import torch.distributed as dist
        from torch.distributed._symmetric_memory import get_symm_mem_workspace

        def gather(x, group):
            ws = get_symm_mem_workspace(group.group_name, min_size=x.numel() * 4)
            ws.barrier()
            return dist.get_world_size(group)
    """)
    assert (6, "blocker", "torch.distributed._symmetric_memory.get_symm_mem_workspace") in got
    assert all(not api.startswith("torch.distributed.get_world_size") for _l, _s, api in got)


def test_facts_of_other_passes_or_none_are_not_reported(tmp_path, kb):
    # VALID: the NPU spelling of get_device_capability and sdpa_kernel (reported_by: none; the latter sets the SDP
    # flags the NPU ignores), DataParallel (distributed), float64 (dtypes): no NPU006 from the cuda-api pass
    got = npu006(tmp_path, kb, """
        import torch

        from torch.nn.attention import SDPBackend, sdpa_kernel

        cap = torch.npu.get_device_capability()
        model = torch.nn.DataParallel(torch.nn.Linear(2, 2))
        x = torch.zeros(2, dtype=torch.float64)
        with sdpa_kernel([SDPBackend.MATH]):
            y = torch.nn.functional.scaled_dot_product_attention(x, x, x)
    """)
    assert got == []


def test_every_fact_names_its_reporter(kb):
    facts = {f.id: f for f in kb.cuda_only_facts}
    assert facts["cuda-nvtx"].reported_by == "cuda-api"
    assert facts["cuda-sdp-kernel-selection"].reported_by == "none"
    assert facts["torch-symmetric-memory"].reported_by == "cuda-api"
    assert facts["data-parallel"].reported_by == "distributed"
    assert facts["float64-dtype"].reported_by == "dtypes"
    assert facts["cuda-get-device-capability-none"].reported_by == "none"


@pytest.mark.parametrize("value", [None, "cuda_api", "everyone"])
def test_a_fact_without_a_known_reporter_is_rejected(tmp_path, value):
    import shutil

    dst = tmp_path / "data"
    shutil.copytree(data_dir(), dst)
    p = dst / "cuda_only.yaml"
    doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    if value is None:
        del doc["facts"][0]["reported_by"]
    else:
        doc["facts"][0]["reported_by"] = value
    p.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    try:
        with pytest.raises(KnowledgeError, match="reported_by"):
            load_knowledge("2.8.0", data_root=dst)
    finally:
        clear_cache()
