"""unknown-api: torch APIs the Ascend docs do not list for the target version.

An API that the official native-API support list does not mention is
*unverified*: it may work (most composite ops do), fall back to the CPU, or
fail. Each called ``torch.*`` API (and method called on a known tensor /
module / optimizer) that is not documented becomes an ``info`` finding; the
report's summary lists each such API once (``summary.unknown_apis``) so the
list can be handed to ``npu-analyse probe --from-report``.

With ``--probe-results``, probed APIs leave this category: a pass on the device
drops the finding (evidence ``probed``), an error on the device turns it into
an unsupported-api finding, and a CPU fallback into performance advice.
"""

from __future__ import annotations

from typing import Iterator

from analyse.passes._apiuses import api_uses
from analyse.findings import Finding, Rule
from analyse.conditions.build import other_accelerator_probe
from analyse.knowledge.noise import load_noise
from analyse.passes import ModuleContext, Pass
from analyse.passes.unsupported_api import probe_verdict
from analyse.passes._oplib import registered_devices

R_UNKNOWN = Rule(
    code="NPU301", name="unverified-api", category="unknown-api", severity="info",
    summary="A torch API that the Ascend support list does not document for the target version.",
    why="Undocumented means unverified on NPU: it may work, fall back to the CPU (slow) or fail. "
        "Probing it on a device turns the uncertainty into evidence.",
    example="y = torch.special.zeta(x, q)",
    fix="npu-analyse probe --from-report npu-analyse-report/report.json --device npu:0",
)
R_PROBE_FAILED = Rule(
    code="NPU302", name="probe-failed-api", category="unsupported-api", severity="manual",
    summary="A torch API the docs do not list and that failed when probed on a device.",
    why="`npu-analyse probe` ran the operator on the device and it raised; the code will fail at that call.",
    example="y = torch.special.zeta(x, q)   # probe: error on npu:0",
    fix="Rewrite with supported APIs or run this step on the CPU explicitly.",
)
R_PROBE_FALLBACK = Rule(
    code="NPU303", name="probe-cpu-fallback", category="performance-advice", severity="advice",
    summary="A torch API that runs, but falls back to the CPU on the device (probe result).",
    why="A CPU fallback copies the inputs to the host and back at every call: correct but slow.",
    example="y = torch.special.zeta(x, q)   # probe: fallback on npu:0",
    fix="Keep it out of the hot loop, or replace it with an op that has an NPU kernel.",
)

# torch.distributed.is_hccl_available: added to torch.distributed by torch_npu (the HCCL twin of is_nccl_available)
# torch.ops.npu.*: torch_npu's own operators (the NPU is their device); torch.__version__ / torch.version.*: strings
SKIP_PREFIXES = ("torch.cuda", "torch.backends", "torch.npu", "torch.Tensor.npu", "torch.distributed.is_hccl_available",
                 "torch.ops.npu.", "torch.__version__", "torch.version.")
# Names that are not operators to verify: types, dtypes, context managers of the frontend.
SKIP_SUFFIX_TYPES = ("Tensor", "dtype", "Size", "device")


class UnknownApiPass(Pass):
    name = "unknown-api"
    rules = (R_UNKNOWN, R_PROBE_FAILED, R_PROBE_FALLBACK)

    VALID = (
        "import torch\ny = torch.matmul(a, b)\n",
    )
    INVALID = (
        "import torch\ny = torch.special.zeta_not_documented(x)  # expect: NPU301\n",
    )
    # VALID too: torch_npu's own operators, the version string, a function whose tensor method is documented
    VALID = VALID + (
        "import torch\nw = torch.ops.npu.npu_convert_weight_to_int4pack(x)\n",
        "import torch\nmajor = torch.__version__.split('.')[0]\n",
        "import torch\nparts = torch.unbind(x, dim=0)\n",
        # another accelerator's namespace is not a torch API to verify (data/noise.yaml)
        "import torch\nif torch.xpu.is_available():\n    torch.xpu.synchronize()\ntorch.musa.empty_cache()\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        kb = ctx.kb
        for use in api_uses(ctx):
            if use.kind == "reference":
                continue
            api = use.api
            if api.startswith(SKIP_PREFIXES) or api.rsplit(".", 1)[-1] in SKIP_SUFFIX_TYPES:
                continue
            if api.startswith("torch.ops.") and registered_devices(ctx.project, api) is not None:
                continue  # the project's own torch.library op: the cuda-extension pass judges its kernels
            if load_noise().other_vendor(api):
                continue   # torch.mlu / torch.musa / torch.xpu ...: another accelerator's API, not one to verify (data/noise.yaml)
            if other_accelerator_probe(api):
                continue   # `torch.xpu.is_available()`: a condition (false on an NPU host), not an API to port (#20)
            probed = probe_verdict(ctx, api)
            if probed is not None and probed.status == "fallback":
                # documented or not: the device says it runs on the CPU
                yield ctx.finding(self.rule("NPU303"), use.node, api,
                                  f"`{api}` falls back to the CPU on {probed.device}"
                                  + (f": {probed.message}" if probed.message else "."),
                                  replacement="keep it out of the hot loop or replace it with an op that has an NPU kernel",
                                  evidence="probed", confidence=use.confidence)
                continue
            if kb.is_documented(api) or kb.is_documented(api.replace("torch.Tensor.", "torch.", 1)):
                continue
            if kb.cuda_only(api) is not None or api in ("torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel"):
                continue  # a known CUDA-only name (NPU006 / NPU103 says what to do): not "unverified"
            if probed is not None:
                if probed.status == "supported":
                    continue  # verified on the device: no longer unknown
                yield ctx.finding(self.rule("NPU302"), use.node, api,
                                  f"`{api}` is not in the Ascend docs and "
                                  f"{'failed' if probed.status == 'unsupported' else 'gave wrong numbers'} on {probed.device}"
                                  + (f": {probed.message}" if probed.message else "."),
                                  replacement="rewrite with supported APIs or run this step on the CPU explicitly",
                                  evidence="probed", confidence=use.confidence)
                continue
            yield ctx.finding(self.rule("NPU301"), use.node, api,
                              f"`{api}` is not listed in the Ascend native-API support list for torch {kb.torch_version}: "
                              "unverified on NPU.",
                              replacement=f"probe it: put `{api}` in an ops file and run `npu-analyse probe --ops FILE`",
                              confidence=use.confidence, evidence="knowledge")
