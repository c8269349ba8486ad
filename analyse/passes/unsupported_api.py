"""unsupported-api: torch APIs the Ascend docs mark unsupported (or limited).

Every ``torch.*`` call, reference, and method call on a receiver whose type
is known (tensor, module, optimizer) is looked up in the native-API support
list of the target torch version. ``unsupported`` uses are ``manual``
findings; ``supported with limitations`` uses are ``info`` findings carrying
the documented limitations text (and the products that support the API, when
the docs give a per-chip answer). CUDA namespaces and DataParallel are left
to the cuda-api and distributed passes.

A row the curation layer overrides (``data/curation.yaml``: ``torch.optim.Adam.step`` documented No while its
class is Yes, ``torch.compiler.disable``, ``RowwiseParallel``, ...) is an ``info`` note once per file: "documented
No, contradicted by ...; probe to confirm"; it never drives a verdict, and no advice of this pass tells anyone to
run an optimizer step, a decorator or autocast on the CPU.

With ``--probe-results``, a device run overrides the documentation: an API the
probe saw pass on the device is no longer reported as unsupported.
"""

from __future__ import annotations

import re
from typing import Iterator, Optional

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.knowledge.markdown import one_line, to_plain
from analyse.passes import ModuleContext, Pass, nodes_of
from analyse.passes._apiuses import api_uses
from analyse.passes._limits import evaluate_checks

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
R_CONTRADICTED = Rule(
    code="NPU205", name="contradicted-row", category="unsupported-api", severity="info",
    summary="A torch API whose official support-list row is contradicted by other evidence (curated): listed, to probe.",
    why="The support list marks it No (or does not list it) while its class row, a sibling, a later release, PyTorch's "
        "own source, an op-plugin NPU kernel or transfer_to_npu says it runs; data/curation.yaml records the evidence "
        "and the resulting status. Only a device run settles it.",
    example="optimizer = torch.optim.Adam(model.parameters())\noptimizer.step()",
    fix="Keep the call as written; confirm on a device with `npu-analyse probe --from-report report.json`.",
)
R_LIMIT_HIT = Rule(
    code="NPU203", name="limitation-hit", category="unsupported-api", severity="manual",
    summary="A call passes an argument, value or dtype that the Ascend support list says the API does not support on NPU.",
    why="The support list turns this limitation into a concrete rule (an unsupported argument such as `dropout` or "
        "`proj_size`, a value outside the supported ones, a dtype outside the supported list); the call hits it with "
        "a literal (or resolved) value, so it fails, falls back to the CPU or computes something else on NPU.",
    example="rnn = torch.nn.GRU(16, 16, num_layers=2, dropout=0.1)",
    fix="Change the argument as the finding says (leave it at its default, pick a supported value or dtype), or "
        "implement the feature around the API (e.g. nn.Dropout between single-layer RNNs instead of `dropout=`).",
)

# method names that only one torch class has: a call on a receiver of unknown type is still that API
UNAMBIGUOUS_METHODS = {"flatten_parameters": "torch.nn.RNNBase.flatten_parameters"}

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


_BENIGN = re.compile(r"^(?:supports? named tensors?|input: supports named tensor|支持named tensor)\.?$"
                     r"|consistent with backend"  # torch.compile: npugraphs works like cudagraphs
                     r"|^the (?:index dimension|number of dimensions of index) must be consistent with"  # as in PyTorch
                     r"|^index must have the same number of dimensions as input", re.I)
_ADVISORY = re.compile(r"建议|recommend|suggest|for example:?$|例如|performance|性能|fall back to (?:the )?CPU|回退至CPU", re.I)
_PRODUCT_ONLY = re.compile(r"^(?:针对|for )?(?:Ascend 950DT|Atlas )", re.I)
_DTYPE_LINE = re.compile(r"^(?:\w+: )?(?:only )?supports? ((?:bf16|fp16|fp32|fp64|u?int\d+|bool|complex\d+)(?:,\s*)?)+(?: only)?\.?$", re.I)


def is_material(limitations: Optional[str]) -> bool:
    """Whether limitation text lines can matter for training code.

    Not material: "supports Named Tensor", recommendations and tuning hints, lines about one
    product only (the product list is given separately), code samples, and plain dtype lists
    that include fp32 (what nearly every documented API says). Everything else is.
    """
    if not limitations:
        return False
    for line in to_plain(limitations).splitlines():
        if line.startswith("    "):
            continue  # code sample
        line = re.sub(r"\(https?://[^)\s]*\)", "", line).strip()  # link targets say nothing about the API
        if not line or _BENIGN.match(line) or _ADVISORY.search(line) or _PRODUCT_ONLY.match(line):
            continue
        if _DTYPE_LINE.match(line):
            if "fp32" in line.lower():
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
    rules = (R_UNSUPPORTED, R_LIMITED, R_LIMIT_HIT, R_CONTRADICTED)

    VALID = (
        "import torch\ntorch.manual_seed(0)\ny = torch.zeros(3)\n",
        "import torch\nx = torch.zeros(3)\nprint(x.sum())\n",
    )
    INVALID = (
        "import torch\nm, s = torch.std_mean(torch.randn(4))  # expect: NPU201\n",
        "import torch\nv, i = torch.topk(torch.randn(8), 3, sorted=False)  # expect: NPU203\n",
        "import torch\nx = torch.randn(8)\nv = x.unique_consecutive()  # expect: NPU201\n",
        "import torch\nm = torch.nn.Linear(2, 2)\nopt = torch.optim.Adam(m.parameters())\nopt.step()  # expect: NPU205\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        kb = ctx.kb
        noted: set = set()  # APIs that already have their one NPU202 note in this file
        for use in api_uses(ctx):
            api = use.api
            if api in SKIP or api.startswith(SKIP_PREFIXES):
                continue
            info = kb.api(api)
            if info is not None and info.curation is not None:
                if api not in noted:
                    noted.add(api)
                    yield self._contradicted(ctx, use, info)
                if info.status == "limited" and info.checks and use.kind != "reference":
                    # a curated row that takes another row's limits (a module and its functional form): its checks
                    # hold at each call as they do for that row; what they cannot read stays in the note above
                    yield from self._hits(ctx, use, info)
                continue
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
                    msg += f" Note: {one_line(info.limitations)}"
                if probed is not None and probed.status in ("unsupported", "mismatch", "fallback"):
                    msg += f" The probe on {probed.device} confirms it: {probed.status}" + (f" ({probed.message})" if probed.message else "") + "."
                yield ctx.finding(self.rule("NPU201"), use.node, api, msg, replacement=self.replacement(ctx, api),
                                  confidence=use.confidence, evidence="probed" if probed is not None else "knowledge")
            elif info.status == "limited" and use.kind != "reference":
                yield from self._limited(ctx, use, info, noted)
        yield from self._type_checks(ctx)
        yield from self._unambiguous_methods(ctx)

    def _contradicted(self, ctx: ModuleContext, use, info) -> Finding:
        """A curated row: what the list says, what contradicts it, the resulting status (info, once per file)."""
        msg = (f"`{use.api}`: {info.contradicted()} (data/curation.yaml, {info.curation['id']}; resulting status: "
               f"{info.status}).")
        if info.status == "limited" and info.limitations:
            msg += f" Note: {one_line(info.limitations)}"
        msg += " (Noted once per file.)"
        return ctx.finding(self.rule("NPU205"), use.node, use.api, msg, replacement=info.curation["advice"],
                           confidence=use.confidence, evidence="knowledge")

    def _type_checks(self, ctx: ModuleContext) -> Iterator[Finding]:
        """isinstance / issubclass against a class the support list marks unsupported: the code handles it."""
        kb = ctx.kb
        for call in nodes_of(ctx.tree, nodes.Call):
            if not (isinstance(call.func, nodes.Name) and call.func.name in ("isinstance", "issubclass") and len(call.args) == 2):
                continue
            arg = call.args[1]
            for cls in (arg.elts if type(arg) is nodes.Tuple else [arg]):
                q = ctx.resolver.qualname(cls)
                if not q or not q.startswith("torch.") or q in SKIP or q.startswith(SKIP_PREFIXES):
                    continue
                info = kb.api(q)
                if info is None or info.status != "unsupported":
                    continue
                msg = (f"`{call.func.name}(..., {cls.as_string()})`: the code handles `{q}`, which is not supported on Ascend NPU "
                       f"for torch {kb.torch_version} (official native-API support list); where the project creates it, "
                       "that is the place to change.")
                yield ctx.finding(self.rule("NPU201"), cls, q, msg, replacement=self.replacement(ctx, q), severity="info",
                                  confidence="medium", evidence="knowledge")

    def _unambiguous_methods(self, ctx: ModuleContext) -> Iterator[Finding]:
        """Methods whose name belongs to one torch class only, on receivers of unknown type."""
        kb = ctx.kb
        for call in nodes_of(ctx.tree, nodes.Call):
            func = call.func
            if not isinstance(func, nodes.Attribute) or func.attrname not in UNAMBIGUOUS_METHODS:
                continue
            if ctx.resolver.qualname(func) is not None or ctx.resolver.method_candidates(func):
                continue  # resolved (and reported) as an API use
            api = UNAMBIGUOUS_METHODS[func.attrname]
            info = kb.api(api)
            if info is None or info.status != "unsupported":
                continue
            msg = (f"`.{func.attrname}()` is `{api}` (no other library has this method), which is not supported on "
                   f"Ascend NPU for torch {kb.torch_version} (official native-API support list).")
            yield ctx.finding(self.rule("NPU201"), call, api, msg, replacement=self.replacement(ctx, api),
                              confidence="medium", evidence="knowledge")

    def _hits(self, ctx: ModuleContext, use, info, hits=None) -> Iterator[Finding]:
        """NPU203 (manual) for each limitation check the call breaks."""
        if hits is None:
            call = use.node if isinstance(use.node, nodes.Call) else None
            hits, _unknown = evaluate_checks(info.checks, call, ctx.resolver, method=use.kind == "method")
        for check, shown in hits:
            param = check.get("param") or "dtype"
            passes = f"the code reads `{shown}` from its result" if check["kind"] == "attribute" else \
                f"the code operates on its result (`{shown}`)" if check["kind"] == "result" else \
                f"this call passes `{param}={shown}`"
            msg = (f"`{use.api}` on NPU: {check['text'].rstrip('.')} -- {passes}"
                   f" (Ascend support list for torch {ctx.kb.torch_version}).")
            confidence = use.confidence
            if not names_param(check):
                # "Does not support scale_factors": the list names the ATen overload's argument, not this Python
                # parameter, on an API it marks supported -- whether this call reaches that overload is not certain
                msg += (f" Not certain: the list's text does not name `{param}` itself, and it marks the API "
                        "supported; confirm on a device (`npu-analyse probe`).")
                confidence = "medium" if confidence == "high" else confidence
            yield ctx.finding(self.rule("NPU203"), use.node, use.api, msg, replacement=_hit_fix(check),
                              confidence=confidence, evidence="knowledge")

    def _limited(self, ctx: ModuleContext, use, info, noted: set) -> Iterator[Finding]:
        """Checks first: a hit is NPU203 (manual); unknown values and unparsed text give one NPU202 per API and file."""
        call = use.node if isinstance(use.node, nodes.Call) else None
        hits, unknown = evaluate_checks(info.checks, call, ctx.resolver, method=use.kind == "method")
        yield from self._hits(ctx, use, info, hits)
        if hits or use.api in noted:
            return
        rest = info.remainder_text()
        if not unknown and not is_material(rest):
            return
        noted.add(use.api)
        parts = [c["text"] for c in unknown]
        # only the lines that matter (no tuning hints, code samples or one-product notes)
        parts += [ln for ln in to_plain(rest).splitlines() if not ln.startswith("    ") and is_material(ln)]
        text = one_line("\n".join(parts))
        msg = f"`{use.api}` is supported on NPU with limitations: {text}" if text else \
            f"`{use.api}` is supported on NPU with limitations."
        msg += _hardware_note(info)
        msg += " (Noted once per file.)"
        checked = [c["param"] for c in info.checks if c.get("param") and c["kind"] in ("arg", "value") and c not in unknown]
        fix = "keep it; check the arguments and dtypes against the limitations"
        if checked:
            fix += f" (already checked here: {', '.join(dict.fromkeys(checked))})"
        yield ctx.finding(self.rule("NPU202"), use.node, use.api, msg, replacement=fix,
                          confidence=use.confidence, evidence="knowledge")

    @staticmethod
    def replacement(ctx: ModuleContext, api: str) -> Optional[str]:
        known = REPLACEMENTS.get(api)
        if known:
            return known
        short = api.rsplit(".", 1)[-1]
        if short.startswith("to_sparse") or "sparse" in api:
            return "keep the tensor dense on the NPU, or do the sparse step on the CPU (x.cpu())"
        if api.startswith(_NOT_TENSOR_OPS) or _NO_CPU_ADVICE.match(api):
            # a build, runtime or tooling API: "run this step on the CPU" means nothing for it (#23)
            return "rewrite it with APIs the NPU supports; verify with `npu-analyse probe`"
        return "rewrite with supported APIs, or run this step on the CPU explicitly (tensor.cpu() ... .to(device)); verify with `npu-analyse probe`"


# optimizer steps, AMP contexts and decorators: "run this step on the CPU" is harmful advice for them (#31)
_NO_CPU_ADVICE = re.compile(r"^torch\.(?:optim\.|amp\.|autocast|cpu\.amp\.|nn\.utils\.clip_grad|autograd\.(?:grad_mode|"
                            r"profiler|anomaly_mode)|no_grad|enable_grad|inference_mode|set_grad_enabled)"
                            r"|(?:^|\.)(?:step|zero_grad|disable|wraps)$")

# APIs that do not compute on tensors: moving "this step" to the CPU is no answer for them
_NOT_TENSOR_OPS = ("torch.utils.", "torch.cuda.", "torch.backends.", "torch.distributed.", "torch.jit.", "torch.profiler.",
                   "torch.multiprocessing.", "torch.package.", "torch.hub.", "torch.onnx.", "torch.export.", "torch.compiler.",
                   "torch._dynamo.", "torch.fx.", "torch.mps.", "torch.xpu.", "torch.library.")


REPLACEMENTS = {
    "torch.utils.cpp_extension.load": "build the operator for Ascend (an Ascend C kernel registered through op-plugin / a "
                                      "torch_npu custom op), or rewrite it with torch / torch_npu ops",
    "torch.utils.cpp_extension.load_inline": "build the operator for Ascend (an Ascend C kernel registered through op-plugin "
                                             "/ a torch_npu custom op), or rewrite it with torch / torch_npu ops",
    "torch.nn.RNNBase.flatten_parameters": "drop the call on NPU (it only compacts cuDNN RNN weights): "
                                           "`if rnn.weight_ih_l0.is_cuda: rnn.flatten_parameters()`",
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


def names_param(check) -> bool:
    """An ``arg`` limitation whose text names its parameter as written (``dropout``, ``proj_size``); False for one
    the list words differently (``scale_factors`` for ``scale_factor``: the ATen overload's argument). Other kinds
    (dtype, value, ndim, attribute) are concrete and count as named."""
    p = check.get("param")
    if check.get("kind") != "arg" or not p:
        return True
    return re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", check.get("text") or "") is not None


def _hit_fix(check) -> str:
    p = check.get("param")
    kind = check["kind"]
    if kind == "arg":
        d = check.get("default")
        return (f"drop `{p}=` (leave it at its default {d!r})" if "default" in check else f"drop `{p}=`") + \
            (": for RNN dropout put nn.Dropout between single-layer RNN modules" if p == "dropout" else "") + \
            (": project the LSTM output with a separate nn.Linear" if p == "proj_size" else "") + \
            (": pass `size=` (the output size) instead" if p == "scale_factor" else "") + \
            (": cast the result instead, e.g. torch.sum(x).to(dtype)" if p == "dtype" else "")
    if kind == "value":
        if check.get("allowed"):
            vals = " or ".join(v["name"] if isinstance(v, dict) else repr(v) for v in check["allowed"])
            return f"use `{p}={vals}`"
        vals = " or ".join(v["name"] if isinstance(v, dict) else repr(v) for v in check["forbidden"])
        return f"do not pass `{p}={vals}`"
    if kind == "attribute":
        return f"read only {', '.join(check['allowed'])} from the result on an NPU"
    if kind == "result":
        return ("keep the data dense on the NPU (pad the sequences and pass a mask, or loop over them), or run this "
                "step on the CPU")
    if kind == "dtype":
        allowed = check.get("allowed")
        return f"use a supported dtype ({', '.join(allowed)})" if allowed else \
            f"use a dtype other than {', '.join(check.get('forbidden') or ())}"
    return "change the call to stay inside the documented limits"
