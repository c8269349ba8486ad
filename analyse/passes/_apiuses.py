"""Enumerate the torch API uses of a module, once, for every pass that needs them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from astroid import nodes

from analyse.knowledge.noise import load_noise
from analyse.passes import ModuleContext
from analyse.syntax import merged, selection


@dataclass(frozen=True)
class ApiUse:
    node: object         # the astroid node (Call for calls, the Name/Attribute otherwise)
    api: str             # fully qualified, e.g. torch.Tensor.nonzero
    kind: str            # "call" | "method" | "reference"
    confidence: str      # "high" | "medium"


def _is_private(api: str) -> bool:
    return any(p.startswith("_") and not (p.startswith("__") and p.endswith("__")) for p in api.split("."))


def _in_type_check(node) -> bool:
    parent = node.parent
    if type(parent) is nodes.Tuple:
        parent = parent.parent
    return (isinstance(parent, nodes.Call) and isinstance(parent.func, nodes.Name)
            and parent.func.name in ("isinstance", "issubclass") and node is not parent.func)


def _in_type_table(node) -> bool:
    """A key of a dict literal (``{nn.AvgPool3d: pool_flops_hook}``: an identity lookup), or an element of the
    literal a ``for`` loop walks whose body never calls the loop variable (``for m in [nn.ReLU, nn.RReLU]:
    REGISTRY.register_module(module=m)``): the name is registered or looked up, and runs only where a config or
    a lookup builds it."""
    parent = node.parent
    if isinstance(parent, nodes.Dict):
        return any(k is node for k, _v in parent.items)
    loop = parent.parent if type(parent) in (nodes.List, nodes.Tuple, nodes.Set) else None
    if not isinstance(loop, nodes.For) or loop.iter is not parent or not isinstance(loop.target, nodes.AssignName):
        return False
    var = loop.target.name
    return not any(isinstance(c.func, nodes.Name) and c.func.name == var
                   for stmt in loop.body for c in stmt.nodes_of_class(nodes.Call))


def api_uses(ctx: ModuleContext, prefix: str = "torch.") -> List[ApiUse]:
    """Calls, method calls on typed receivers and references of ``torch.*`` names."""
    key = f"api_uses:{prefix}"
    cached = ctx.cache.get(key)
    if cached is not None:
        return cached
    r = ctx.resolver
    out: List[ApiUse] = []
    call_funcs = set()
    # names: only resolved ones can be a use (Resolver.outer_names), in tree order with the calls
    for node in merged(selection(ctx.tree, nodes.Call), r.outer_names()):
        if isinstance(node, nodes.Call):
            func = node.func
            call_funcs.add(id(func))
            q = r.qualname(func)
            if q is not None:
                if q.startswith(prefix) and not _is_private(q):
                    out.append(ApiUse(node, q, "call", "high"))
                continue
            if isinstance(func, nodes.Attribute):
                cands = [c for c in r.method_candidates(func) if c.startswith(prefix)]
                if not cands:
                    continue
                # the most specific documented name (torch.nn.Linear.to -> torch.nn.Module.to);
                # for a project subclass (first candidate not torch) only a documented inherited method
                # counts: self.fc(x) on a project module is not a torch API
                documented = [c for c in cands if ctx.kb.api_status(c) != "unverified"]
                if documented:
                    out.append(ApiUse(node, documented[0], "method", "high"))
                elif r.type_of(func.expr) in load_noise().containers:
                    continue   # self.transformer.wte(x) on an nn.ModuleDict: an entry the user named (data/noise.yaml)
                elif r.guessed_tensor(func.expr):
                    continue   # `mems.copy()` on a forward parameter only guessed to be a tensor: no tensor API
                elif r.method_candidates(func)[0].startswith(prefix):
                    out.append(ApiUse(node, cands[0], "method", "high"))
        elif isinstance(node, (nodes.Attribute, nodes.Name, nodes.AssignAttr)):
            if id(node) in call_funcs:
                continue
            parent = node.parent
            if isinstance(parent, (nodes.Attribute, nodes.AssignAttr)) and parent.expr is node:
                continue
            if isinstance(node, nodes.Name) and isinstance(parent, (nodes.Import, nodes.ImportFrom)):
                continue
            if isinstance(node, nodes.AssignAttr) or _in_type_check(node) or _in_type_table(node):
                continue  # monkey-patching target / isinstance(x, nn.RNN) / a registered or keyed name: no use
            q = r.qualname(node)
            if q and q.startswith(prefix) and q.count(".") >= 1 and not _is_private(q):
                out.append(ApiUse(node, q, "reference", "high"))
    ctx.cache[key] = out
    return out
