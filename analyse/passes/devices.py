"""Device hand-over hazards: integer device indices (NPU008) and checkpoints loaded without
``map_location`` (NPU009).

* NPU008: ``x.to(0)``, ``model.to(device=1)``, ``torch.device(0)``, ``torch.zeros(3, device=0)``. A bare int
  device means a CUDA ordinal. transfer_to_npu turns it into ``'npu:N'`` only in the functions the knowledge
  lists (``int_device_rewrite_functions``: Tensor.to, Module.to, Module.to_empty); everywhere else it stays a
  CUDA device. ``.cuda(N)`` is left to NPU002 (transfer_to_npu maps it to ``.npu(N)``, which takes an int).
* NPU009: ``torch.load(f)`` / ``torch.hub.load_state_dict_from_url(url)`` without ``map_location``: a
  checkpoint saved on a GPU restores its tensors to ``cuda:N``, which an Ascend host cannot do;
  transfer_to_npu only rewrites a ``map_location`` that is given. Advice (#30): whether it fails depends on where
  the checkpoint was saved, which the code does not say; a checkpoint saved on the CPU (or by the project on the
  NPU) loads as is, so it is a precaution, not a change the verdict counts.

Values count as ints when they are int literals or names bound (once, in their scope) to one.
"""

from __future__ import annotations

from typing import Iterator, Optional

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, in_log_or_docstring, nodes_of
from analyse.passes._limits import _literal

R_INT_DEVICE = Rule(
    code="NPU008", name="integer-device-index", category="cuda-api", severity="manual",
    summary="A bare integer used as a device (`.to(0)`, `torch.device(0)`, `device=0`).",
    why="An int device is a CUDA ordinal. transfer_to_npu rewrites it to 'npu:N' only for Tensor.to, Module.to and "
        "Module.to_empty; torch.device(0) and device=0 arguments keep pointing at a CUDA device that an Ascend host "
        "does not have.",
    example="x = torch.zeros(3, device=0)",
    fix="x = torch.zeros(3, device=f'npu:{0}')",
)
R_LOAD = Rule(
    code="NPU009", name="load-without-map-location", category="cuda-api", severity="advice",
    summary="`torch.load` of a checkpoint without `map_location`.",
    why="torch.load restores every tensor to the device it was saved from. A checkpoint written on a GPU holds "
        "'cuda:N' storages, and loading it on an Ascend host fails (no CUDA). transfer_to_npu rewrites a 'cuda' "
        "map_location, but only one that is given.",
    example="state = torch.load('ckpt.pt')",
    fix="state = torch.load('ckpt.pt', map_location='cpu')",
)

DEVICE_KWARGS = ("device",)
LOADERS = {"torch.load": 1, "torch.hub.load_state_dict_from_url": 2, "torch.serialization.load": 1}


def _chips(kb, api: str) -> str:
    """Which products the support list documents the API for: the facts hold on each of them."""
    info = kb.api(api)
    if info is None or not info.hardware:
        return ""
    on = [p for p, ok in info.hardware.items() if ok]
    off = [p for p, ok in info.hardware.items() if not ok]
    return (f" (`{api}` is documented for {', '.join(on) or 'no product'}" + (f"; not for {', '.join(off)}" if off else "")
            + f" in torch {kb.torch_version}; this holds on each of them)")


def _int_value(node, resolver) -> Optional[int]:
    v = _literal(node, resolver)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return None


class DeviceHandOverPass(Pass):
    name = "device-handover"
    rules = (R_INT_DEVICE, R_LOAD)
    VALID = (
        "import torch\nx = torch.zeros(3).to('npu:0')\ny = x.to(torch.float16)\nz = x.cuda(0)\n",
        "import torch\nstate = torch.load('ckpt.pt', map_location='cpu')\nother = torch.load('b.pt', 'cpu')\n",
        "import torch\nkw = {}\nstate = torch.load('ckpt.pt', **kw)\n",
    )
    INVALID = (
        "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.to(0)  # expect: NPU008\n",
        "import torch\ndev = torch.device(0)  # expect: NPU008\nrank = 1\nx = torch.zeros(3, device=rank)  # expect: NPU008\n",
        "import torch\nstate = torch.load('ckpt.pt')  # expect: NPU009\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        r = ctx.resolver
        kb = ctx.kb
        for call in nodes_of(ctx.tree, nodes.Call):
            target = r.call_target(call)
            func = call.func
            method = func.attrname if isinstance(func, nodes.Attribute) else None
            # the text test (a walk up to the statement) only for a call one of the cases below can report: a
            # loader, torch.device, .to / .to_empty, a torch call with keywords (a tenth of a library's calls)
            if not (target in LOADERS or target == "torch.device" or method in ("to", "to_empty")
                    or target and call.keywords and target.startswith("torch.")) or in_log_or_docstring(call):
                continue
            if target in LOADERS:
                yield from self._load(ctx, call, target)
                continue
            if target == "torch.device" and call.args and len(call.args) == 1 and not call.keywords:
                n = _int_value(call.args[0], r)
                if n is not None:
                    yield ctx.finding(self.rule("NPU008"), call, "torch.device",
                                      f"`torch.device({n})` is CUDA device {n}; transfer_to_npu does not rewrite integer "
                                      "devices here, so on an Ascend host it names a device that does not exist."
                                      + _chips(kb, "torch.device"),
                                      replacement=f"torch.device('npu', {n})", evidence="knowledge")
                continue
            if method in ("to", "to_empty") and (target is None or target.startswith("torch.")):
                arg = call.args[0] if call.args else next((k.value for k in call.keywords or () if k.arg == "device"), None)
                n = _int_value(arg, r) if arg is not None else None
                if n is None:
                    continue
                t = r.type_of(func.expr)
                api = f"torch.nn.Module.{method}" if t and r.is_module_type(t) else f"torch.Tensor.{method}"
                handled = api in kb.int_device_rewrite_functions or (
                    method == "to" and not (t and r.is_module_type(t)) and "torch.Tensor.to" in kb.int_device_rewrite_functions)
                note = (f"transfer_to_npu (torch_npu {kb.torch_npu_version}) turns a bare int into 'npu:{n}' for "
                        "Tensor.to / Module.to / Module.to_empty, so this works only with it imported; without it, "
                        f"and in any other call (torch.device({n}), device={n}), it is CUDA device {n}."
                        if handled else
                        f"transfer_to_npu (torch_npu {kb.torch_npu_version}) does not rewrite integer devices here.")
                yield ctx.finding(self.rule("NPU008"), call, api, f"`.{method}({n})` moves to device index {n}, a CUDA "
                                  f"ordinal. {note}" + _chips(kb, api), replacement=f".{method}('npu:{n}')",
                                  severity="auto" if handled else "manual", evidence="knowledge")
                continue
            if target and target.startswith("torch.") and not target.startswith(("torch.cuda", "torch.npu")):
                for kw in call.keywords or ():
                    if kw.arg in DEVICE_KWARGS:
                        n = _int_value(kw.value, r)
                        if n is not None:
                            yield ctx.finding(self.rule("NPU008"), call, target,
                                              f"`{kw.arg}={kw.value.as_string()}` is CUDA device {n}: transfer_to_npu "
                                              f"does not rewrite integer devices in `{target}`.",
                                              replacement=f"{kw.arg}='npu:{n}'", evidence="knowledge")

    def _load(self, ctx, call: nodes.Call, target: str) -> Iterator[Finding]:
        if any(kw.arg in ("map_location", None) for kw in call.keywords or ()):
            return
        if len(call.args) > LOADERS[target] or any(isinstance(a, nodes.Starred) for a in call.args):
            return
        src = call.as_string()
        repl = src[:-1] + (", " if call.args or call.keywords else "") + "map_location='cpu')" if src.endswith(")") else None
        yield ctx.finding(self.rule("NPU009"), call, target,
                          f"`{target}` without map_location: if the checkpoint was saved on a GPU, its tensors restore to "
                          "'cuda:N', which fails on an Ascend host (transfer_to_npu rewrites only a map_location that "
                          "is given). Load to the CPU, then move the model to the NPU." + _chips(ctx.kb, target),
                          replacement=repl, confidence="medium", evidence="knowledge")
