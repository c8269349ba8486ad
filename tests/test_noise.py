"""Noise rules as data (data/noise.yaml, #31 point 3): each false positive of the issue is an INVALID example.

* attributes of the user's own modules are never torch APIs (``self.transformer.wte`` on an nn.ModuleDict);
* other accelerators' namespaces (torch.mlu / musa / hpu / xpu) are not torch APIs to verify or probe;
* environment variables are judged by what they do: a log level or an allocator hint is advice; a device mask is a
  manual rename, which a library function survives (needs-migration, not unsupported).
"""

from __future__ import annotations

import pytest

from analyse.knowledge.noise import NoiseError, load_noise, validate_noise
from tests.helpers import analyse_source

NANOGPT_SHAPE = """\
import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(n, 8),
            wpe=nn.Embedding(n, 8),
            drop=nn.Dropout(0.1),
            ln_f=nn.LayerNorm(8),
        ))
        self.head = nn.Linear(8, n)

    def forward(self, idx):
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(idx))
        for name in self.transformer.keys():
            print(name)
        self.head.reset_parameters_for_npu_test()
        return self.transformer.ln_f(x)


m = GPT(10)
print(m(torch.zeros(2, dtype=torch.long)))
"""


def test_module_dict_entries_are_not_torch_apis(tmp_path, kb):
    findings = analyse_source(tmp_path, NANOGPT_SHAPE, kb, name="model.py").findings
    apis = {f.api for f in findings}
    assert not [a for a in apis if a.startswith("torch.nn.ModuleDict.")], sorted(apis)
    # VALID: an undocumented method of a torch module class (not a container) is still listed as unverified
    assert ("torch.nn.Linear.reset_parameters_for_npu_test", 20) in {(f.api, f.line) for f in findings if f.code == "NPU301"}


OTHER_VENDORS = """\
import torch


def pick():
    if torch.xpu.is_available():
        torch.xpu.synchronize()
        return "xpu"
    torch.musa.empty_cache()
    torch.mlu.set_device(0)
    torch.hpu.synchronize()
    torch.special.zeta_not_documented(torch.ones(2))
    return "cpu"


pick()
"""


def test_other_vendor_namespaces_are_not_apis_to_verify(tmp_path, kb):
    findings = analyse_source(tmp_path, OTHER_VENDORS, kb, name="dev.py").findings
    unverified = {f.api for f in findings if f.code == "NPU301"}
    assert unverified == {"torch.special.zeta_not_documented"}


@pytest.mark.parametrize("api", ["torch.mlu.set_device", "torch.musa.empty_cache", "torch.hpu.synchronize",
                                 "torch.xpu.synchronize", "torch_mlu.core"])
def test_probe_lists_never_hold_other_vendors(api):
    from analyse.probe.opsfile import skip_reason

    assert "another accelerator" in skip_reason(api, "unknown-api")


def test_probe_lists_keep_torch_apis():
    from analyse.probe.opsfile import skip_reason

    assert skip_reason("torch.special.zeta", "unknown-api") is None


ENV = """\
import os

os.environ["NCCL_DEBUG"] = "INFO"
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
os.environ.setdefault("NCCL_SOCKET_IFNAME", "eth0")


def rank_device(rank):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)
"""


def test_env_vars_judged_by_what_they_do(tmp_path, kb):
    findings = analyse_source(tmp_path, ENV, kb, name="env.py").findings
    sev = {f.api: f.severity for f in findings}
    assert sev["NCCL_DEBUG"] == "advice"               # a log level
    assert sev["PYTORCH_CUDA_ALLOC_CONF"] == "advice"  # an allocator hint
    assert sev["NCCL_SOCKET_IFNAME"] == "manual"       # the collectives' network interface
    assert sev["CUDA_VISIBLE_DEVICES"] == "manual"     # "cuda:0" after it is every rank's npu:0


def test_env_var_in_a_library_needs_migration_not_unsupported(tmp_path, kb):
    from analyse.callgraph import classify

    findings = analyse_source(tmp_path, ENV, kb, name="env.py").findings
    by_api = {f.api: f for f in findings}
    assert classify(by_api["CUDA_VISIBLE_DEVICES"]) == "needs-migration"
    assert classify(by_api["NCCL_DEBUG"]) is None
    assert classify(by_api["PYTORCH_CUDA_ALLOC_CONF"]) is None


def test_noise_file_is_validated():
    base = {"meta": {"source": "s", "date": "d"},
            "user_named_containers": {"classes": ["torch.nn.ModuleDict"], "source": "s"},
            "other_vendor_namespaces": {"prefixes": ["torch.mlu"], "source": "s"},
            "env_vars": {"NCCL_DEBUG": {"does": "log", "write": "advice", "read": "advice", "replacement": None}}}
    assert validate_noise(base).other_vendor("torch.mlu.x")
    with pytest.raises(NoiseError, match="write/read"):
        validate_noise({**base, "env_vars": {"NCCL_DEBUG": {"does": "log", "write": "never", "read": "advice"}}})
    with pytest.raises(NoiseError, match="NPU's own namespace"):
        validate_noise({**base, "other_vendor_namespaces": {"prefixes": ["torch.npu"], "source": "s"}})
    assert load_noise().env_severity("NCCL_DEBUG", write=True) == "advice"


REL_POS_ATTENTION = """\
import torch
import torch.nn as nn


def add_rel_pos(attn, q, rel_h):
    return attn + (q @ rel_h).unsqueeze(-1)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.rel_h = nn.Parameter(torch.zeros(dim, 4))

    def forward(self, q, k, v):
        attn = (q * 0.5) @ k.transpose(-2, -1)
        attn = add_rel_pos(attn, q, self.rel_h)
        attn = attn.softmax(dim=-1)
        return attn @ v


class Plain(nn.Module):
    def forward(self, q, k, v):
        attn = (q @ k.transpose(-2, -1)) * 0.1
        return attn.softmax(dim=-1) @ v


Attention(4)(torch.rand(4, 4), torch.rand(4, 4), torch.rand(4, 4))
Plain()(torch.rand(2, 2), torch.rand(2, 2), torch.rand(2, 2))
"""


def test_attention_with_an_additive_bias_is_not_sent_to_the_training_kernel(tmp_path, kb):
    from analyse.passes.affinity import AffinityPass

    findings = analyse_source(tmp_path, REL_POS_ATTENTION, kb, name="attn.py", passes=[AffinityPass()]).findings
    by_line = {f.line: f for f in findings if f.code == "NPU704"}
    # INVALID: relative-position bias -> SDPA with a float mask, never npu_fusion_attention (training only)
    assert by_line[9].replacement.startswith("F.scaled_dot_product_attention(q, k, v, attn_mask=bias)")
    assert "training only" in by_line[9].message
    # VALID: plain attention keeps the fused-kernel advice
    assert by_line[21].replacement.startswith("torch_npu.npu_fusion_attention(")


def test_nvidia_smi_lookup_stays_unsupported_in_a_library(tmp_path, kb):
    from analyse.callgraph import classify

    src = ("import os\nimport shutil\nimport subprocess\n\n\ndef gpu_stats(index):\n"
           "    smi = shutil.which('nvidia-smi')\n    if smi is None:\n        raise FileNotFoundError('nvidia-smi')\n"
           "    gpu = os.environ['CUDA_VISIBLE_DEVICES'].split(',')[index]\n"
           "    return subprocess.run([smi, f'--id={gpu}'], capture_output=True).stdout\n")
    findings = analyse_source(tmp_path, src, kb, name="stats.py").findings
    by = {(f.api, f.line): f for f in findings}
    assert classify(by[("nvidia-smi", 7)]) == "unsupported"            # the tool does not exist on the host
    assert classify(by[("CUDA_VISIBLE_DEVICES", 10)]) == "needs-migration"   # a variable to rename
