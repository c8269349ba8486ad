"""Kernel-hub kernels are judged by their id, not by the loader (#31, data/kernel_hub.yaml)."""

from __future__ import annotations

import pytest

from analyse.explain import explain_name
from analyse.knowledge.kernel_hub import KernelHubError, hub_kernel, validate_kernel_hub
from analyse.passes.compiled_code import CompiledCodePass
from tests.helpers import analyse_source

SRC = """\
from kernels import get_kernel


def norm(x):
    return get_kernel("kernels-ext-npu/RMSNorm").forward(x)


def attention(q, k, v):
    fa = get_kernel("kernels-community/flash-attn3")
    return fa.flash_attn_func(q, k, v)


def act(x):
    return get_kernel("kernels-community/activation").gelu(x)
"""


def test_the_kernel_id_decides(tmp_path, kb):
    found = analyse_source(tmp_path, SRC, kb, passes=[CompiledCodePass()]).findings
    got = [(f.line, f.code, f.severity) for f in found]
    # kernels-ext-npu/RMSNorm: an Ascend build; the flash-attn kernel's functions have a documented NPU replacement
    assert got == [(9, "NPU469", "manual"), (14, "NPU469", "blocker")]
    fa = found[0]
    assert "FlashAttention" in fa.message and "flash-attention-cuda" in fa.message
    assert "kernels-ext-npu/flash-attn2-npu" in fa.replacement
    assert "no NPU kernel on record" in found[1].message


def test_hub_ids_lookup_exact_before_organisation():
    assert hub_kernel("kernels-ext-npu/SwiGlu").runs_on_npu
    assert hub_kernel("kernels-community/vllm-flash-attn3").builds == "gpu-only"
    assert hub_kernel("kernels-community/activation") is None


@pytest.mark.parametrize("doc, what", [
    ({"meta": {"kind": "kernel_hub", "source": "x"}, "kernels": [{"id": "a", "ids": ["no-slash"], "builds": "npu",
                                                                  "reason": "r", "replacement": "p", "source": "s"}]},
     "ids must be"),
    ({"meta": {"kind": "kernel_hub", "source": "x"}, "kernels": [{"id": "a", "ids": ["o/n"], "builds": "cuda",
                                                                  "reason": "r", "replacement": "p", "source": "s"}]},
     "builds must be"),
])
def test_the_data_is_validated(doc, what):
    with pytest.raises(KernelHubError, match=what):
        validate_kernel_hub(doc)


def test_explain_a_kernel_id():
    text, rc = explain_name("kernels-community/flash-attn3")
    assert rc == 0 and "GPU-only (NPU469, blocker)" in text and "Hopper" in text
    text, rc = explain_name("kernels-ext-npu/RMSNorm")
    assert rc == 0 and "runs on an NPU" in text
    text, rc = explain_name("kernels-community/activation")
    assert rc == 0 and "no NPU build on record" in text


MODULE_LEVEL = """\
from kernels import get_kernel

npu_norm = get_kernel("kernels-ext-npu/RMSNorm")
fa = get_kernel("kernels-community/flash-attn3")


def norm(x):
    return npu_norm.forward(x)


def attention(q, k, v):
    return fa.flash_attn_func(q, k, v)
"""


def test_a_kernel_bound_at_module_level_is_judged_by_its_id(tmp_path, kb):
    # INVALID: the Ascend build bound at module level (line 8) is no finding; VALID: the CUDA-only id bound at module
    # level is found where it is fetched (line 4) and where it is called (line 12), with the data's reason
    found = analyse_source(tmp_path, MODULE_LEVEL, kb, passes=[CompiledCodePass()]).findings
    got = [(f.line, f.code, f.api) for f in found]
    assert got == [(4, "NPU469", "kernels.get_kernel('kernels-community/flash-attn3')"),
                   (12, "NPU469", "fa.flash_attn_func")]
    # the call is flash_attn.flash_attn_func of the kernel (data/kernel_hub.yaml python_api): graded by its entry
    assert "flash_attn.flash_attn_func" in found[1].message and "data/third_party_libs.yaml" in found[1].message
    assert "npu_fusion_attention" in found[1].replacement and found[1].severity == "manual"
