"""dtype hazards: data types the NPU lacks or emulates, where the code introduces them (NPU204).

Detects ``torch.float64`` / ``torch.double``, the complex types (``complex64``, ``complex128``,
``complex32``), the wide unsigned integers (``uint16``, ``uint32``, ``uint64``) and the fp8 types
(``float8_e4m3fn``, ``float8_e5m2`` ...) at the places that create tensors of that type:

* a ``dtype=`` argument of any torch call (``torch.zeros(3, dtype=torch.float64)``, ``x.to(dtype=...)``),
* ``.to(torch.float64)`` / ``.type(torch.float64)`` / ``.type(torch.DoubleTensor)``,
* ``.double()`` / ``.cdouble()`` on a tensor or module,
* ``torch.set_default_dtype(torch.float64)``, ``torch.DoubleTensor(...)``.

The facts are per op and per chip, from the native-API support list of the target torch version:
whether the op at the site accepts the dtype, how many of the APIs whose dtypes the list documents
accept it, and which APIs a chip (Atlas A2 / A3 training, Ascend 950DT) excludes it for. The finding's
``api`` is the called API, so it folds into NPU202/NPU203 findings of the same call.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Tuple

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, in_log_or_docstring, nodes_of

R_DTYPE = Rule(
    code="NPU204", name="dtype-hazard", category="unsupported-api", severity="manual",
    summary="A tensor of a dtype the NPU lacks or only partly supports (float64, complex, uint16/32/64, fp8) is created.",
    why="Ascend NPUs compute in fp32/fp16/bf16 and the integer types; the native-API support list accepts float64 and "
        "complex for a minority of ops, the wide unsigned types almost nowhere and fp8 only in the scaled matmuls. Ops "
        "without the dtype fail, compute in float32 or fall back to the CPU, and the lists differ per chip.",
    example="x = torch.zeros(3, dtype=torch.float64)",
    fix="x = torch.zeros(3, dtype=torch.float32)",
)

# torch dtype attribute -> (short name used by the support lists, shown name)
HAZARDS: Dict[str, str] = {
    "float64": "fp64", "double": "fp64",
    "complex64": "complex64", "cfloat": "complex64", "complex128": "complex128", "cdouble": "complex128",
    "complex32": "complex32", "chalf": "complex32",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8",
    "float8_e8m0fnu": "fp8",
}
TENSOR_TYPES = {"torch.DoubleTensor": "fp64", "torch.cuda.DoubleTensor": "fp64"}
METHODS = {"double": ("fp64", "torch.float64"), "cdouble": ("complex128", "torch.complex128")}
# what a site's own API is checked against when the call is a method of unknown receiver
METHOD_APIS = {"to": "torch.Tensor.to", "type": "torch.Tensor.type", "double": "torch.Tensor.double",
               "cdouble": "torch.Tensor.cdouble"}
CHIPS = ("Atlas A2 training", "Atlas A3 training", "Ascend 950DT")
_FACTS: Dict[Tuple[str, str], dict] = {}
# everyday ops named as examples of what refuses a dtype
_COMMON_OPS = ("torch.matmul", "torch.bmm", "torch.mm", "torch.nn.functional.conv2d", "torch.nn.functional.linear",
               "torch.nn.functional.softmax", "torch.nn.functional.layer_norm", "torch.nn.Conv2d", "torch.nn.Linear",
               "torch.sum", "torch.mean", "torch.exp", "torch.sort", "torch.topk", "torch.cumsum", "torch.einsum")


def dtype_facts(kb, short: str) -> dict:
    """Per dtype, over the whole support list of the target torch version: how many APIs with a documented
    dtype list accept it (and examples that do not), the APIs each chip's lines exclude it for, and the APIs
    whose limitation text names it (fp8)."""
    key = (kb.torch_version, short)
    if key in _FACTS:
        return _FACTS[key]
    with_list = 0
    accepting = 0
    refusing: List[str] = []
    per_chip: Dict[str, List[str]] = {c: [] for c in CHIPS}
    mentions: List[str] = []
    words = {"fp8": ("fp8", "float8"), "fp64": ("fp64", "float64", "double")}.get(short, (short,))
    for name in sorted(kb.documented_names()):
        info = kb.api(name)
        if info is None:
            continue
        lists = [c for c in info.checks if c.get("kind") == "dtype" and c.get("allowed") and not c.get("when")
                 and c.get("param") in (None, "self", "input", "dtype")]
        if lists:
            with_list += 1
            if any(short in c["allowed"] for c in lists):
                accepting += 1
            elif name in _COMMON_OPS:
                refusing.append(name)
        text = info.limitations or ""
        for line in text.splitlines():
            low = line.lower()
            if not any(w in low for w in words):
                continue
            for chip in CHIPS:
                if chip.split()[0] in line and chip.split()[1] in line and ("not support" in low or "does not" in low):
                    per_chip[chip].append(name)
        if short == "fp8" and any(w in text.lower() for w in words):
            mentions.append(name)
    refusing = [n for n in _COMMON_OPS if n in refusing][:3]
    facts = {"with_list": with_list, "accepting": accepting, "refusing": refusing,
             "per_chip": {c: sorted(set(v)) for c, v in per_chip.items()}, "mentions": sorted(set(mentions))}
    _FACTS[key] = facts
    return facts


def _site_fact(kb, api: Optional[str], short: str) -> str:
    """What the site's own API's support list says about the dtype, with the products it is documented for."""
    if not api:
        return ""
    info = kb.api(api)
    if info is None:
        return f"`{api}` is not in the support list for torch {kb.torch_version}"
    lists = [c for c in info.checks if c.get("kind") == "dtype" and c.get("allowed") and not c.get("when")]
    hw = ""
    if info.hardware:
        on = [p for p, ok in info.hardware.items() if ok]
        off = [p for p, ok in info.hardware.items() if not ok]
        hw = f" (documented for {', '.join(on) or 'no product'}" + (f"; not on {', '.join(off)}" if off else "") + ")"
    if not lists:
        return f"`{api}` itself takes it{hw}"
    allowed = sorted({d for c in lists for d in c["allowed"]})
    if any(short in c["allowed"] for c in lists):
        return f"`{api}` itself accepts {short}{hw}"
    return f"`{api}` itself does not list {short} (it supports {', '.join(allowed)}){hw}"


# fp64 and complex tensors exist on Atlas A2/A3 and a minority of ops take them; the narrow unsigned and fp8 types
# are (nearly) unsupported, so they always need a change
_PARTLY = {"fp64", "complex64", "complex128"}
_CASTS = {"to", "type", "double", "cdouble"}


def _site_takes(kb, api: Optional[str], short: str, call: nodes.Call) -> bool:
    """True when the hazard is downstream, not at this call: an fp64 / complex tensor that the call's own API creates
    or casts to on the NPU (its support list accepts the dtype, or documents no dtype list). A cast of a tensor
    (``x.double()``, ``x.to(torch.float64)``) works: its list names the input dtypes it casts from. A whole module
    cast (``model.double()``) or a new default dtype changes every op, so it stays a change to make."""
    if short not in _PARTLY or not api or api.startswith("torch.nn.Module.") or api == "torch.set_default_dtype":
        return False
    method = call.func.attrname if isinstance(call.func, nodes.Attribute) else None
    if api.startswith("torch.Tensor.") and method in _CASTS:
        return True
    info = kb.api(api)
    if info is None or info.status == "unsupported":
        return False
    lists = [c for c in info.checks if c.get("kind") == "dtype" and c.get("allowed") and not c.get("when")]
    return not lists or any(short in c["allowed"] for c in lists)


def _chip_fact(kb, short: str) -> str:
    f = dtype_facts(kb, short)
    parts = []
    if short == "fp8":
        if f["mentions"]:
            infos = [(n, kb.api(n)) for n in f["mentions"][:3]]
            chips = []
            for n, i in infos:
                if i is not None and i.hardware:
                    on = [p for p, ok in i.hardware.items() if ok]
                    off = [p for p, ok in i.hardware.items() if not ok]
                    chips.append(f"{n} on {', '.join(on)}" + (f", not on {', '.join(off)}" if off else ""))
            parts.append("fp8 appears in the support list only for " + "; ".join(chips or f["mentions"][:3]))
        else:
            parts.append("no API of the support list documents fp8")
    else:
        parts.append(f"{f['accepting']} of the {f['with_list']} torch APIs whose dtypes the support list documents "
                     f"accept {short}" + (f" (e.g. {', '.join(f['refusing'])} do not)" if f["refusing"] else ""))
    for chip in CHIPS:
        apis = f["per_chip"].get(chip) or []
        if apis:
            parts.append(f"{chip}: {len(apis)} more API(s) exclude {short} ({', '.join(apis[:3])})")
    if len(parts) == 1 and short != "fp8":
        parts.append("the lists are the same for Atlas A2 training, Atlas A3 training and Ascend 950DT")
    return "; ".join(parts)


_FIX = {"fp64": "torch.float32", "complex128": "a real (float32) pair, e.g. torch.view_as_real",
        "complex64": "a real (float32) pair, e.g. torch.view_as_real", "complex32": "a real (float16) pair",
        "uint16": "torch.int32", "uint32": "torch.int64", "uint64": "torch.int64",
        "fp8": "torch.bfloat16 (fp8 matmuls only through the documented scaled matmuls)"}


class DtypeHazardPass(Pass):
    name = "dtype-hazard"
    rules = (R_DTYPE,)
    VALID = (
        "import torch\nx = torch.zeros(3, dtype=torch.float32)\ny = x.to(torch.bfloat16).float()\n",
        "import numpy as np\na = np.zeros(3, dtype=np.float64)\n",
        "import torch\nprint(torch.float64)\nok = x.dtype == torch.float64\n",
        "import torch\nstep = torch.tensor(0.0, device='cpu', dtype=torch.float64)\n",
        "import torch\nstep = init_scalar(device=torch.device('cpu'), dtype=torch.float64)\n",
    )
    INVALID = (
        "import torch\nx = torch.zeros(3, dtype=torch.float64)  # expect: NPU204\n",
        "import torch\ny = x.double()  # expect: NPU204\nz = x.to(torch.complex128)  # expect: NPU204\n",
        "import torch\ntorch.set_default_dtype(torch.float64)  # expect: NPU204\n",
        "import torch\nw = x.to(dtype=torch.float8_e4m3fn)  # expect: NPU204\nu = torch.ones(2, dtype=torch.uint32)  # expect: NPU204\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        r = ctx.resolver
        for call in nodes_of(ctx.tree, nodes.Call):
            hit = self._hazard(ctx, call)   # first: the text test below walks up to the statement
            if hit is None or in_log_or_docstring(call) or _on_cpu(r, call):
                continue
            short, shown, api = hit
            site = _site_fact(ctx.kb, api, short)
            msg = (f"`{shown}` ({short}) on an Ascend NPU (torch_npu {ctx.kb.torch_npu_version}): "
                   + (site + "; " if site else "") + _chip_fact(ctx.kb, short) + ". Ops without it fail, compute in "
                   "float32 or fall back to the CPU; keep this dtype on the CPU or change it.")
            sev = "advice" if _site_takes(ctx.kb, api, short, call) else "manual"
            if sev == "advice":
                msg += (" The call itself works on the NPU; the ops that later consume the tensor decide (and a "
                        "tensor that stays on the CPU is not affected).")
            yield ctx.finding(self.rule("NPU204"), call, api or shown, msg, replacement=_replacement(call, shown, short),
                              severity=sev, confidence="medium", evidence="knowledge")
        del r

    def _hazard(self, ctx, call: nodes.Call) -> Optional[Tuple[str, str, Optional[str]]]:
        r = ctx.resolver
        target = r.call_target(call)
        func = call.func
        method = func.attrname if isinstance(func, nodes.Attribute) else None
        api = target if target and target.startswith("torch.") else (METHOD_APIS.get(method) if method else None)
        if target in TENSOR_TYPES:
            return TENSOR_TYPES[target], target, target
        for kw in call.keywords or ():
            if kw.arg == "dtype":
                d = _dtype(r, kw.value)
                if d:
                    return HAZARDS[d], f"torch.{d}", api
        if method in ("to", "type") and call.args and (target is None or target.startswith("torch.")):
            d = _dtype(r, call.args[0])
            if d:
                return HAZARDS[d], f"torch.{d}", api
            q = r.qualname(call.args[0]) if isinstance(call.args[0], (nodes.Attribute, nodes.Name)) else None
            if q in TENSOR_TYPES:
                return TENSOR_TYPES[q], q, api
        if target == "torch.set_default_dtype" and call.args:
            d = _dtype(r, call.args[0])
            if d:
                return HAZARDS[d], f"torch.{d}", target
        if method in METHODS and not call.args and not call.keywords and (target is None or target.startswith("torch.")):
            if r.qualname(func.expr) in ("numpy", "np") or (r.qualname(func) or "").startswith(("numpy.", "np.")):
                return None
            short, shown = METHODS[method]
            t = r.type_of(func.expr)
            if t and r.is_module_type(t):
                api = f"torch.nn.Module.{method}"
            return short, f".{method}()", api
        return None


def _on_cpu(r, call: nodes.Call) -> bool:
    """The call names the CPU as its device (``device='cpu'``, ``torch.device('cpu')``): the tensor never reaches the
    NPU, so its dtype is no hazard there (an optimizer's fp64 step counter kept on the CPU)."""
    for kw in call.keywords or ():
        if kw.arg == "device":
            vals = r.strings(kw.value) if not isinstance(kw.value, nodes.Call) else \
                (r.strings(kw.value.args[0]) if kw.value.args else None)
            return bool(vals) and all(v == "cpu" for v in vals)
    return False


def _dtype(r, node) -> Optional[str]:
    if not isinstance(node, (nodes.Attribute, nodes.Name)):
        return None
    q = r.qualname(node)
    if q and q.startswith("torch.") and q.count(".") == 1 and q[len("torch."):] in HAZARDS:
        return q[len("torch."):]
    return None


def _replacement(call: nodes.Call, shown: str, short: str) -> str:
    if short in ("fp64",) and shown.startswith(".double"):
        return ".float()"
    if short == "complex128" and shown.startswith(".cdouble"):
        return ".cfloat()  (or keep the complex step on the CPU)"
    fix = _FIX.get(short, "torch.float32")
    if fix.startswith("torch.") and " " not in fix and shown.startswith("torch.") and shown != "torch.DoubleTensor":
        return fix
    if shown == "torch.DoubleTensor":
        return "torch.FloatTensor"
    return f"use {fix} on the NPU, or keep this step on the CPU"
