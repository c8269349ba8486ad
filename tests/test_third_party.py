import copy

import pytest

from analyse.passes.third_party import ThirdPartyDataError, ThirdPartyPass, parse_libs
from tests.helpers import analyse_source


def _run(tmp_path, kb, src, **kw):
    res = analyse_source(tmp_path, src, kb, passes=[ThirdPartyPass()], **kw)
    assert not res.errors, res.errors
    return sorted(res.findings, key=lambda f: (f.line, f.code))


def test_flash_attn_mapping(tmp_path, kb):
    fs = _run(tmp_path, kb, "import flash_attn as fa\nout = fa.flash_attn_func(q, k, v, dropout_p=0.1, causal=True)\n")
    assert [(f.line, f.code, f.severity) for f in fs] == [(1, "NPU401", "manual"), (2, "NPU403", "manual")]
    call = fs[1]
    assert call.api == "flash_attn.flash_attn_func"
    assert "torch_npu.npu_fusion_attention(q, k, v" in call.replacement
    assert "keep_prob=0.9" in call.replacement and "sparse_mode=3" in call.replacement
    assert "input_layout='BSND'" in call.replacement and call.replacement.endswith("[0]")
    assert "scale=1 / math.sqrt(q.shape[-1])" in call.replacement
    assert "keep_prob = 1 - dropout_p" in call.message


def test_flash_attn_varlen_alias(tmp_path, kb):
    fs = _run(tmp_path, kb, "from flash_attn import flash_attn_varlen_func as attn\n"
                            "o = attn(q, k, v, cu_q, cu_k, 128, 128, dropout_p=p, softmax_scale=s)\n")
    f = [f for f in fs if f.code == "NPU403"][0]
    assert f.line == 2
    assert "input_layout='TND'" in f.replacement and "actual_seq_qlen=tuple(cu_q[1:]" in f.replacement
    assert "keep_prob=1 - p" in f.replacement and "scale=s" in f.replacement
    assert "atten_mask" not in f.replacement


def test_apex_uses_and_params(tmp_path, kb):
    fs = _run(tmp_path, kb, "from apex import amp\nimport apex\n"
                            "model, opt = amp.initialize(model, opt, opt_level='O1')\n"
                            "opt = apex.optimizers.FusedAdam(params, adam_w_mode=False)\n"
                            "from apex.multi_tensor_apply import multi_tensor_applier\n"
                            "multi_tensor_applier(op, buf, [g])\n")
    by = {(f.line, f.code): f for f in fs}
    assert by[(3, "NPU402")].api == "apex.amp.initialize" and "torch.autocast" in by[(3, "NPU402")].replacement
    assert "opt_level='O1'" in by[(3, "NPU402")].message
    assert by[(4, "NPU402")].api == "apex.optimizers.FusedAdam"
    assert "NpuFusedAdam" in by[(4, "NPU402")].replacement and "adam_w_mode=False" in by[(4, "NPU402")].message
    assert by[(5, "NPU401")].severity == "manual" and by[(6, "NPU402")].severity == "manual"


def test_guarded_import_with_fallback(tmp_path, kb):
    fs = _run(tmp_path, kb, "try:\n    import xformers.ops as xops\n    HAS = True\nexcept ImportError:\n    HAS = False\n")
    assert [(f.line, f.code, f.severity, f.confidence) for f in fs] == [(2, "NPU404", "advice", "medium")]
    assert "fallback" in fs[0].message


def test_guarded_import_without_fallback(tmp_path, kb):
    fs = _run(tmp_path, kb, "try:\n    import cupy\nexcept ImportError:\n    pass\n")
    assert [(f.code, f.severity) for f in fs] == [("NPU404", "advice")]
    assert "No working fallback" in fs[0].message


def test_mmcv_ops_table(tmp_path, kb):
    fs = _run(tmp_path, kb, "from mmcv.ops import nms, CARAFE\nkeep = nms(b, s, 0.5)\nup = CARAFE(3, 1, 2)\n")
    by = {(f.line, f.code): f for f in fs}
    assert by[(1, "NPU401")].severity == "blocker"  # CARAFE: no Ascend implementation
    assert by[(2, "NPU402")].severity == "info" and "NMS" in by[(2, "NPU402")].message
    assert by[(3, "NPU402")].severity == "blocker"


def test_no_findings_in_strings_comments_and_own_package(tmp_path, kb):
    fs = _run(tmp_path, kb, "'''import apex'''\n# from flash_attn import flash_attn_func\nx = 'triton'\n")
    assert fs == []
    fs = _run(tmp_path / "p", kb, "from flash_attn.bert_padding import pad_input\n", name="flash_attn/layers.py",
              extra_files={"flash_attn/__init__.py": ""})
    assert fs == []


def test_triton_kernel_body_not_reported(tmp_path, kb):
    fs = _run(tmp_path, kb, "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, B: tl.constexpr):\n"
                            "    i = tl.program_id(0)\n    tl.store(x + i, 1)\ngrid = (triton.cdiv(8, 4),)\n")
    # Triton compiles for Ascend with triton-ascend: the imports are informational, the uses belong to the triton pass
    assert [(f.line, f.code, f.severity) for f in fs] == [(1, "NPU401", "info"), (2, "NPU401", "info")]
    assert "triton-ascend" in fs[0].replacement


def test_malformed_data_raises(kb):
    doc = copy.deepcopy(kb.data_file("third_party_libs.yaml"))
    parse_libs(doc)
    bad = copy.deepcopy(doc)
    bad["libraries"][0]["severity"] = "fatal"
    with pytest.raises(ThirdPartyDataError, match="severity"):
        parse_libs(bad)
    bad = copy.deepcopy(doc)
    bad["libraries"][1]["modules"] = bad["libraries"][0]["modules"]
    with pytest.raises(ThirdPartyDataError, match="listed twice"):
        parse_libs(bad)
    bad = copy.deepcopy(doc)
    del bad["meta"]
    with pytest.raises(ThirdPartyDataError, match="meta"):
        parse_libs(bad)


def test_type_probe_of_a_library_that_imports_on_npu_is_not_a_use(tmp_path, kb):
    # accelerate's has_4bit_bnb_layers / has_ao_layers: a lazy import, then isinstance() against a library class.
    # bitsandbytes and torchao import on an Ascend host; comparing types runs none of their kernels (#20)
    fs = _run(tmp_path, kb,
              "def has_quantised(model):\n"
              "    import bitsandbytes as bnb\n"
              "    from torchao.float8.float8_linear import Float8Linear\n"
              "    return any(isinstance(m, (bnb.nn.Linear4bit, Float8Linear)) or issubclass(type(m), bnb.nn.Linear8bitLt)\n"
              "               for m in model.modules())\n"
              "def swap(model):\n"
              "    import bitsandbytes as bnb\n"
              "    from torchao.float8 import convert_to_float8_training\n"
              "    convert_to_float8_training(model)\n"
              "    return bnb.nn.Linear8bitLt(4, 4), bnb.optim.Adam8bit(model.parameters())\n")
    got = [(f.line, f.code, f.severity, f.api) for f in fs]
    # the `from ... import Float8Linear` whose name is only a type test is no use either (its import runs no kernel)
    assert got == [(2, "NPU401", "advice", "bitsandbytes"),
                   (7, "NPU401", "advice", "bitsandbytes"),
                   (8, "NPU401", "advice", "torchao.float8.convert_to_float8_training"),
                   (9, "NPU402", "manual", "torchao.float8.convert_to_float8_training"),
                   (10, "NPU402", "manual", "bitsandbytes.nn.Linear8bitLt"),
                   (10, "NPU402", "manual", "bitsandbytes.optim.Adam8bit")]
    assert "imports on an Ascend host" in fs[0].message


def test_type_probe_of_a_library_whose_import_fails_on_npu_reports_the_import_only(tmp_path, kb):
    # transformer_engine does not import without CUDA: the import (line 1) is the finding; isinstance() against its
    # class runs none of its code, so it is no use of its own (#30: was a second blocker on line 3)
    fs = _run(tmp_path, kb,
              "import transformer_engine.pytorch as te\n"
              "def has_te(model):\n"
              "    return any(isinstance(m, te.Linear) for m in model.modules())\n")
    assert [(f.line, f.code, f.severity) for f in fs] == [(1, "NPU401", "manual")]


def test_torchao_config_classes_are_not_float8_kernels(tmp_path, kb):
    # accelerate's AORecipeKwargs.__post_init__ builds a Float8LinearConfig: a dataclass, no fp8 matmul
    fs = _run(tmp_path, kb,
              "from torchao.float8 import Float8LinearConfig\n"
              "cfg = Float8LinearConfig(pad_inner_dim=True)\n")
    assert [(f.line, f.code, f.severity) for f in fs] == [(1, "NPU401", "info"), (2, "NPU402", "info")]


def test_imports_on_npu_must_be_a_bool(kb):
    doc = copy.deepcopy(kb.data_file("third_party_libs.yaml"))
    doc["libraries"][0]["imports_on_npu"] = "yes"
    with pytest.raises(ThirdPartyDataError, match="imports_on_npu must be a bool"):
        parse_libs(doc)


def test_cuda_only_compilers_and_kernel_libraries_are_known(tmp_path, kb):
    # nvFuser, the cuDNN frontend, RAPIDS cuGraph ops and fbgemm_gpu: CUDA-only, each with a documented way out
    src = ("import nvfuser\nimport cudnn\nfrom pylibcugraphops.pytorch import SampledCSC\nimport fbgemm_gpu\n"
           "g = SampledCSC(a, b)\n")
    fs = _run(tmp_path, kb, src)
    got = [(f.line, f.code, f.severity) for f in fs]
    assert got == [(1, "NPU401", "manual"), (2, "NPU401", "manual"), (3, "NPU401", "manual"), (4, "NPU401", "manual"),
                   (5, "NPU402", "manual")]
    assert "EmbeddingBag" in fs[3].replacement and "SAGEConv" in fs[4].replacement
    # INVALID: a module of the project's own named like none of them is not a finding
    assert not _run(tmp_path / "other", kb, "import cudnnlike\nimport fbgemm\n")


def test_tutel_moe_layer_is_a_manual_replacement(tmp_path, kb):
    # Tutel's MoE layer runs kernels of its own extension (NVRTC-compiled CUDA, or CPU fp32/fp64): no NPU backend,
    # replaced by an MoE layer in torch ops or the torch_npu MoE ops
    src = "from tutel import system\nfrom tutel import moe as tutel_moe\nlayer = tutel_moe.moe_layer(gate_type={})\n"
    fs = _run(tmp_path, kb, src)
    got = [(f.line, f.code, f.severity, f.api) for f in fs]
    assert got == [(1, "NPU401", "manual", "tutel.system"), (2, "NPU401", "manual", "tutel.moe"),
                   (3, "NPU402", "manual", "tutel.moe.moe_layer")]
    assert "npu_grouped_matmul" in fs[2].replacement and "NVRTC" in fs[2].message
    # INVALID: a project module named like it is not the library
    assert not _run(tmp_path / "other", kb, "import tutelage\n")


NERFACC = """\
def accumulate(alphas, indices, total):
    try:
        from nerfacc import render_weight_from_alpha
    except ImportError:
        raise ImportError("Please install nerfacc")
    weights, trans = render_weight_from_alpha(alphas, ray_indices=indices, n_rays=total)
    return weights
"""


def test_nerfacc_packed_scans_are_cuda_only(tmp_path, kb):
    # the import re-raises (no fallback): both the import and the call are manual, with a torch-ops replacement
    res = analyse_source(tmp_path, NERFACC, kb, passes=[ThirdPartyPass()])
    got = [(f.line, f.code, f.severity) for f in res.findings if f.api.startswith("nerfacc")]
    assert got == [(3, "NPU401", "manual"), (6, "NPU402", "manual")]
    assert "torch.cumprod" in res.findings[-1].replacement
