"""unsupported-api: torch APIs the Ascend docs mark unsupported (or limited).

Every ``torch.*`` call, reference, and method call on a receiver whose type
is known (tensor, module, optimizer) is looked up in the native-API support
list of the target torch version. ``unsupported`` uses are ``manual``
findings; ``supported with limitations`` uses are ``info`` findings carrying
the documented limitations text (and the products that support the API, when
the docs give a per-chip answer). CUDA namespaces and DataParallel are left
to the cuda-api and distributed passes.

With ``--probe-results``, a device run overrides the documentation: an API the
probe saw pass on the device is no longer reported as unsupported.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from analyse.passes._apiuses import api_uses
from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass

R_UNSUPPORTED = Rule(
    code="NPU201", name="unsupported-api", category="unsupported-api", severity="manual",
    summary="A torch API that the Ascend native-API support list marks as not supported.",
    why="The official support list for the target torch version says this API does not work on an NPU "
        "(no kernel, no adaptation); calls raise or silently fall back to the CPU.",
    example="vals, counts = torch.unique_consecutive(x, return_counts=True)",
    fix="Rewrite with supported APIs (e.g. torch.unique(..., sorted=True) on sorted input), move this step to the "
        "CPU explicitly (x.cpu()), or probe it on a device with `npu-analyse probe`.",
)
R_LIMITED = Rule(
    code="NPU202", name="api-with-limitations", category="unsupported-api", severity="info",
    summary="A torch API that is supported on NPU with documented limitations.",
    why="The support list restricts this API on NPU (dtypes, arguments, products). Code outside the "
        "limits fails or falls back to the CPU.",
    example="y = torch.nn.functional.interpolate(x, scale_factor=2, mode='bicubic')",
    fix="Check the call against the limitations text in the finding (dtype, mode, shape); cast or change "
        "arguments where needed.",
)

SKIP_PREFIXES = ("torch.cuda", "torch.backends.cuda", "torch.backends.cudnn")
SKIP = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.distributed.is_nccl_available",
        "torch.Tensor.cuda", "torch.nn.Module.cuda", "torch.Tensor.is_cuda"}


def _hardware_note(info) -> str:
    hw = getattr(info, "hardware", None)
    if not hw:
        return ""
    yes = [k for k, v in hw.items() if v]
    no = [k for k, v in hw.items() if not v]
    if not no:
        return ""
    if yes:
        return f" Supported on: {', '.join(yes)}; not on: {', '.join(no)}."
    return f" Not supported on: {', '.join(no)}."


_DTYPE_WORDS = re.compile(r"^(?:支持)?(?:\s*[,，、/]?\s*(?:bf16|fp16|fp32|fp64|uint8|int8|int16|int32|int64|bool|complex64|complex128|"
                          r"complex32|float8\w*|double|float|half|bfloat16|hifloat8|uint16|uint32|uint64|int4|qint8|quint8|qint32))+\s*[。.]?$", re.I)
_BENIGN = {"支持named tensor", "支持named tensor。"}


def _clean(line: str) -> str:
    line = line.strip().lstrip("-*").strip()
    line = re.sub(r"`[^`]*`", "", line)       # parameter names: `input`, `self`
    return line.replace("仅", "").strip()


def is_material(limitations: Optional[str]) -> bool:
    """Whether a limitations text can matter for training code.

    A plain dtype list that includes fp32 is what nearly every documented API
    says (often boilerplate) and is not reported, nor are "supports Named
    Tensor", tuning suggestions (建议...) and code samples; constraints on
    arguments, shapes or modes, and dtype lists without fp32, are.
    """
    if not limitations:
        return False
    in_code = False
    for raw in limitations.splitlines():
        if raw.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        line = _clean(raw)
        if not line or line.lower() in _BENIGN or "建议" in line:
            continue
        if _DTYPE_WORDS.match(line):
            if "fp32" not in line.lower():
                return True
            continue
        return True
    return False


def probe_verdict(ctx: ModuleContext, api: str):
    overlay = ctx.project.probe
    if overlay is None:
        return None
    try:
        return overlay.verdict(api)
    except Exception:
        return None


class UnsupportedApiPass(Pass):
    name = "unsupported-api"
    rules = (R_UNSUPPORTED, R_LIMITED)

    VALID = (
        "import torch\ntorch.manual_seed(0)\ny = torch.zeros(3)\n",
        "import torch\nx = torch.zeros(3)\nprint(x.sum())\n",
    )
    INVALID = (
        "import torch\nm, s = torch.std_mean(torch.randn(4))  # expect: NPU201\n",
        "import torch\nx = torch.randn(8)\nv = x.unique_consecutive()  # expect: NPU201\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        kb = ctx.kb
        for use in api_uses(ctx):
            api = use.api
            if api in SKIP or api.startswith(SKIP_PREFIXES):
                continue
            info = kb.api(api)
            if info is None or info.status == "supported":
                continue
            probed = probe_verdict(ctx, api)
            if info.status == "unsupported":
                if probed is not None and probed.status == "supported":
                    continue
                msg = (f"`{api}` is not supported on Ascend NPU for torch {kb.torch_version} "
                       f"(official native-API support list).")
                msg += _hardware_note(info)
                if info.limitations:
                    msg += f" Note: {info.limitations}"
                if probed is not None and probed.status in ("unsupported", "mismatch", "fallback"):
                    msg += f" The probe on {probed.device} confirms it: {probed.status}" + (f" ({probed.message})" if probed.message else "") + "."
                yield ctx.finding(self.rule("NPU201"), use.node, api, msg, replacement=self.replacement(ctx, api),
                                  confidence=use.confidence, evidence="probed" if probed is not None else "knowledge")
            elif info.status == "limited" and use.kind != "reference" and is_material(info.limitations):
                msg = f"`{api}` is supported on NPU with limitations: {info.limitations}" if info.limitations else \
                    f"`{api}` is supported on NPU with limitations."
                msg += _hardware_note(info)
                yield ctx.finding(self.rule("NPU202"), use.node, api, msg,
                                  replacement="keep it; check the arguments and dtypes against the limitations",
                                  confidence=use.confidence, evidence="knowledge")

    @staticmethod
    def replacement(ctx: ModuleContext, api: str) -> Optional[str]:
        known = REPLACEMENTS.get(api)
        if known:
            return known
        short = api.rsplit(".", 1)[-1]
        if short.startswith("to_sparse") or "sparse" in api:
            return "keep the tensor dense on the NPU, or do the sparse step on the CPU (x.cpu())"
        return "rewrite with supported APIs, or run this step on the CPU explicitly (tensor.cpu() ... .to(device)); verify with `npu-analyse probe`"


REPLACEMENTS = {
    "torch.std_mean": "torch.std(x, dim) and torch.mean(x, dim) as two calls",
    "torch.var_mean": "torch.var(x, dim) and torch.mean(x, dim) as two calls",
    "torch.unique_consecutive": "torch.unique(x, sorted=True, return_counts=...) on sorted input, or run it on the CPU",
    "torch.Tensor.unique_consecutive": "torch.unique(x, sorted=True, return_counts=...) on sorted input, or run it on the CPU",
    "torch.heaviside": "torch.where(x > 0, 1.0, torch.where(x == 0, values, 0.0))",
    "torch.nanquantile": "mask NaNs and use torch.quantile, or run on the CPU",
    "torch.scatter_reduce": "torch.Tensor.scatter_add_ (sum) / index_reduce, or run on the CPU",
    "torch.Tensor.share_memory_": "not needed with one process per NPU; drop it",
    "torch.from_dlpack": "torch.from_numpy / torch.as_tensor on host data, then .to(device)",
    "torch.Tensor.to_mkldnn": "drop it: MKL-DNN layout is CPU-only",
    "torch.poisson": "sample on the CPU: torch.poisson(rates.cpu()).to(device)",
    "torch.jit.ScriptModule": "plain torch.nn.Module (TorchScript is disabled by transfer_to_npu); use torch.compile if needed",
}
