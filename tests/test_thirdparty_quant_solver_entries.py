"""Knowledge rows (data/third_party_libs.yaml) for GPU-only paths that an umbrella entry hid or that no entry knew:
torchao's float8 inference API and float8-activation quantize_ configs (the same torch._scaled_mm fp8 GEMM as float8
training), torchao's int4 weight-only configs (tinygemm / fbgemm kernels), SwissArmyTransformer's JIT-built
FusedEmaAdam, and torch-linear-assignment (its host path calls .numpy() on a non-CUDA device tensor)."""

from analyse.passes.third_party import ThirdPartyPass
from tests.helpers import analyse_source, library_report


def uses(tmp_path, kb, src):
    r = analyse_source(tmp_path, src, kb, passes=[ThirdPartyPass()])
    assert not r.errors
    return {(f.line, f.severity, f.api) for f in r.findings}


def test_torchao_float8_inference_is_the_float8_entry_not_the_umbrella(tmp_path, kb):
    got = uses(tmp_path, kb, """
        from torchao.quantization import quantize_, int8_weight_only
        from torchao.float8.inference import ActivationCasting, QuantConfig, quantize_to_float8

        def quantize_model(part, scheme="fp8"):
            if scheme == "int8":
                quantize_(part, int8_weight_only())
            elif scheme == "fp8":
                quantize_to_float8(part, QuantConfig(ActivationCasting.DYNAMIC))
            return part
    """)
    # INVALID: the fp8 GEMM swap is a manual replacement
    assert (9, "manual", "torchao.float8.inference.quantize_to_float8") in got
    # VALID: the plain configs and the int8 weight-only path stay under the info umbrella
    assert not any(sev == "manual" and api.endswith(("QuantConfig", "ActivationCasting.DYNAMIC", "int8_weight_only", "quantize_"))
                   for _l, sev, api in got)


def test_torchao_float8_activation_config_and_int4_configs(tmp_path, kb):
    got = uses(tmp_path, kb, """
        from torchao.quantization import (Float8DynamicActivationFloat8WeightConfig, Float8WeightOnlyConfig,
                                          Int4WeightOnlyConfig, quantize_)

        def fp8(model):
            quantize_(model, Float8DynamicActivationFloat8WeightConfig())

        def int4(model):
            quantize_(model, Int4WeightOnlyConfig(group_size=128))

        def fp8_weight_only(model):
            quantize_(model, Float8WeightOnlyConfig())
    """)
    assert (6, "manual", "torchao.quantization.Float8DynamicActivationFloat8WeightConfig") in got
    assert (9, "manual", "torchao.quantization.Int4WeightOnlyConfig") in got
    # VALID: weight-only float8 dequantises and runs F.linear (the umbrella's info)
    assert not any(line == 12 and sev == "manual" for line, sev, _a in got)


def test_sat_fused_ema_adam_and_linear_assignment(tmp_path, kb):
    got = uses(tmp_path, kb, """
        import torch
        import sat.ops
        from sat.ops.layernorm import LayerNorm
        from torch_linear_assignment import batch_linear_assignment

        def build(model):
            norm = LayerNorm(16)
            return sat.ops.FusedEmaAdam(model.parameters(), lr=1e-4), norm

        def match(cost):
            return batch_linear_assignment(cost)
    """)
    assert (9, "manual", "sat.ops.FusedEmaAdam") in got
    assert (12, "manual", "torch_linear_assignment.batch_linear_assignment") in got
    # VALID: sat.ops.LayerNorm falls back to torch.nn.LayerNorm without apex; the imports load on an NPU host
    assert not any(line in (3, 4, 5, 8) and sev in ("manual", "blocker") for line, sev, _a in got)


def test_a_library_solving_assignments_on_the_device_is_unsupported(tmp_path, kb):
    files = {
        "__init__.py": "",
        "cluster.py": """
import torch


def _compute(confmat):
    from torch_linear_assignment import batch_linear_assignment

    return batch_linear_assignment(confmat[None])


def accuracy(preds, target, num_classes):
    confmat = torch.zeros(num_classes, num_classes, device=preds.device)
    confmat.index_put_((preds, target), torch.ones_like(preds, dtype=torch.float), accumulate=True)
    return _compute(confmat)


def plain(preds):
    return preds.float().mean()
""",
    }
    res = library_report(tmp_path, kb, files, "clusterlib")
    st = {d["qualname"]: d["status"] for d in res["thirdparty"]["functions"]}
    assert st["clusterlib.cluster._compute"] == "unsupported"
    assert st["clusterlib.cluster.accuracy"] == "unsupported"
    assert "clusterlib.cluster.plain" not in st or st["clusterlib.cluster.plain"] == "supported"
