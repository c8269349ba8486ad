"""cuda-api and distributed passes on realistic snippets: positives with severities and negatives."""

from analyse.passes.cuda_api import CudaApiPass
from analyse.passes.distributed import DistributedPass
from tests.helpers import analyse_source


def findings(tmp_path, kb, src, passes=None):
    r = analyse_source(tmp_path, src, kb, passes=passes or [CudaApiPass(), DistributedPass()])
    assert not r.errors
    return [(f.line, f.code, f.severity, f.api) for f in r.findings]


def test_library_style_false_positive_guards(tmp_path, kb):
    got = findings(tmp_path, kb, """
        import torch
        rng_states = {}
        rng_states["cuda"] = torch.get_rng_state()
        v = getattr(torch.version, "cuda", None)
        attrs = ["to", "cuda", "npu"]
        supported = ("xpu", "cuda", "npu")
        devices = set()
        devices.add("cuda")
        choices = ["nccl", "gloo", "hccl"]

        class M(torch.nn.Module):
            def cuda(self, *a):
                return super().cuda(*a)
            def f(self):
                if self.is_cuda:
                    pass
    """)
    assert got == []


def test_positive_device_and_backend_uses(tmp_path, kb):
    got = findings(tmp_path, kb, """
        import os, torch
        import torch.distributed as dist
        dev = kwargs.get("device", "cuda")
        devs = ["cuda", "cpu"]
        dist.init_process_group("nccl", init_method="env://")
        torch.distributed.new_group(backend="nccl")
        ok = dist.is_nccl_available()
        os.environ.get("CUDA_VISIBLE_DEVICES")
        t = torch.ones(2).cuda()
        ready = t.is_cuda
    """)
    assert (4, "NPU003", "auto", "device:cuda") in got
    assert (5, "NPU003", "auto", "device:cuda") in got
    assert (6, "NPU101", "auto", "torch.distributed.backend:nccl") in got
    assert (7, "NPU101", "auto", "torch.distributed.backend:nccl") in got
    assert (8, "NPU106", "auto", "torch.distributed.is_nccl_available") in got
    assert (9, "NPU007", "manual", "CUDA_VISIBLE_DEVICES") in got
    assert (10, "NPU002", "auto", "torch.Tensor.cuda") in got
    assert (11, "NPU002", "auto", "torch.Tensor.is_cuda") in got


def test_transfer_to_npu_handled_vs_not(tmp_path, kb):
    got = findings(tmp_path, kb, """
        import torch
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("a")
        torch.cuda.jiterator._create_jit_fn("x")
        s = torch.cuda.Stream()
        g = torch.cuda.CUDAGraph()
        torch.backends.cudnn.deterministic = True
        x = x.to(memory_format=torch.channels_last)
        f = torch.jit.script(f)
    """)
    sev = {line: (code, s) for line, code, s, _api in got}
    assert sev[3] == ("NPU001", "auto")
    assert sev[4] == ("NPU001", "manual")
    assert sev[5][1] == "blocker"       # jiterator: CUDA-only JIT kernels
    assert sev[6] == ("NPU001", "auto")
    assert sev[8][0] == "NPU005"
    assert sev[9] == ("NPU006", "manual")
    # nothing here saves the scripted object or reads its graph/code: it runs eagerly, a speed note (round 37)
    assert sev[10] == ("NPU006", "advice")


def test_torch_version_changes_the_answer(tmp_path):
    from analyse.knowledge import load_knowledge

    src = "import torch\nm, s = torch.std_mean(torch.randn(3))\n"
    a = analyse_source(tmp_path / "a", src, load_knowledge("2.8.0"))
    b = analyse_source(tmp_path / "b", src, load_knowledge("2.1.0"))
    assert [f.code for f in a.findings if f.category == "unsupported-api"] == ["NPU201"]
    # 2.1.0 docs did not test it: unverified, not unsupported
    assert [f.code for f in b.findings if f.category == "unsupported-api"] == []
    assert "torch.std_mean" in [f.api for f in b.findings if f.category == "unknown-api"]


def test_type_checks_and_monkey_patching_are_not_api_uses(tmp_path, kb):
    from analyse.passes.unsupported_api import UnsupportedApiPass

    r = analyse_source(tmp_path, """
        import torch.nn as nn
        import torch.nn.functional as F
        if isinstance(m, (nn.RNN, nn.GRU)):
            pass
        F.adaptive_max_pool1d = wrap(F.adaptive_max_pool1d)
        y = F.adaptive_max_pool1d(x, 2)
        env_prefixes = ['NCCL', 'PATH']
    """, kb, passes=[UnsupportedApiPass(), DistributedPass()])
    got = [(f.line, f.code, f.api) for f in r.findings if f.severity != "info"]
    assert (7, "NPU201", "torch.nn.functional.adaptive_max_pool1d") in got
    # line 6: only the wrapped function passed on the right counts, not the patched attribute
    assert [c for line, c, _a in got if line == 6] == ["NPU201"]
    assert not any(line == 4 or line == 9 for line, _c, _a in got)


def test_a_monkey_patch_of_a_cuda_function_is_no_cuda_use(tmp_path, kb):
    got = findings(tmp_path, kb, """
        import torch

        torch.cuda.is_available = lambda: False
        torch.backends.cudnn.benchmark = True
        ok = torch.cuda.is_available()
    """)
    # VALID (old: NPU001 at line 4): the assignment replaces the API, it runs nothing of CUDA
    assert not any(line == 4 for line, *_r in got), got
    # INVALID: a cuDNN setting and a call of the (patched or not) API are still uses
    assert any(line == 5 for line, *_r in got) and any(line == 6 and api == "torch.cuda.is_available"
                                                       for line, _c, _s, api in got), got
