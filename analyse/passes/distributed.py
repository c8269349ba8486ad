"""distributed: multi-device training particulars that differ on Ascend.

Detects the ``nccl`` backend (literal, argparse default, ``Backend.NCCL``,
``is_nccl_available``), code that compares a backend name with ``'nccl'``,
``torch.nn.DataParallel``, DistributedDataParallel with several devices per
process, ``NCCL_*`` environment variables, and ``init_process_group`` calls
whose backend is left to the default (which picks NCCL for CUDA).

Replacements: ``hccl``, ``DistributedDataParallel`` with one process per NPU,
``HCCL_*`` variables. transfer_to_npu rewrites ``'nccl'`` to ``'hccl'`` only in
the backend argument of ``init_process_group`` / ``new_group``: those uses are
``auto``, comparisons are ``manual``.
"""

from __future__ import annotations

from typing import Iterator, Optional

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.guards import path_choice
from analyse.knowledge.noise import env_is_written, load_noise
from analyse.passes import ModuleContext, Pass, in_log_or_docstring, walk
from analyse.syntax import merged, selection, whole_test

R_NCCL = Rule(
    code="NPU101", name="nccl-backend", category="distributed", severity="auto",
    summary="The `nccl` communication backend is selected.",
    why="NCCL is NVIDIA's collective library. On Ascend the backend is `hccl`. transfer_to_npu rewrites "
        "'nccl' to 'hccl' in the backend argument of `init_process_group` / `new_group` only; a backend passed "
        "elsewhere (a launcher, a config object) stays 'nccl'.",
    example="dist.init_process_group(backend='nccl', init_method='env://')",
    fix="dist.init_process_group(backend='hccl', init_method='env://')",
)
R_NCCL_CMP = Rule(
    code="NPU102", name="nccl-backend-check", category="distributed", severity="manual",
    summary="Code compares a backend name with 'nccl'.",
    why="After migration the backend is 'hccl', so `backend == 'nccl'` and `assert backend in ['gloo', 'nccl']` "
        "take the wrong branch or fail. transfer_to_npu does not rewrite comparisons (documented restriction).",
    example="if dist.get_backend() == 'nccl':\n    torch.cuda.synchronize()",
    fix="if dist.get_backend() in ('nccl', 'hccl'):\n    torch.npu.synchronize()",
)
R_DP = Rule(
    code="NPU103", name="data-parallel", category="distributed", severity="manual",
    summary="`torch.nn.DataParallel` is used.",
    why="DataParallel is not supported on Ascend NPUs (it is listed as unsupported for every documented torch "
        "version and in the migration guide's unsupported scenarios).",
    example="model = torch.nn.DataParallel(model)",
    fix="# one process per NPU, launched with torchrun\nmodel = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])",
)
R_MULTI_DEV = Rule(
    code="NPU104", name="multi-device-per-process", category="distributed", severity="manual",
    summary="DistributedDataParallel given several devices for one process.",
    why="Ascend runs one training process per device; several devices in `device_ids` (single-process "
        "multi-device DDP) is not supported.",
    example="DistributedDataParallel(model, device_ids=[0, 1])",
    fix="DistributedDataParallel(model, device_ids=[local_rank])  # one process per NPU",
)
R_NCCL_ENV = Rule(
    code="NPU105", name="nccl-env", category="distributed", severity="manual",
    summary="An `NCCL_*` environment variable is set or read.",
    why="HCCL ignores NCCL variables; the equivalent settings have HCCL names (or do not exist).",
    example="os.environ['NCCL_SOCKET_IFNAME'] = 'eth0'",
    fix="os.environ['HCCL_SOCKET_IFNAME'] = 'eth0'",
)
R_NCCL_API = Rule(
    code="NPU106", name="nccl-specific-api", category="distributed", severity="auto",
    summary="An NCCL-specific distributed API (`is_nccl_available`, `Backend.NCCL`, `ProcessGroupNCCL`).",
    why="These names refer to NCCL. transfer_to_npu maps `is_nccl_available` and `ProcessGroupNCCL` to their "
        "HCCL twins; `Backend.NCCL` still means 'nccl'.",
    example="if dist.is_nccl_available():\n    backend = dist.Backend.NCCL",
    fix="if dist.is_hccl_available():\n    backend = 'hccl'",
)

# NCCL environment variables -> their HCCL replacement (data/noise.yaml env_vars, which also says what each does and
# what a write or a read costs on an NPU host: a log level or a transport switch is advice)
NCCL_ENV = {k: v.replacement for k, v in load_noise().env.items() if "NCCL" in k}

BACKEND_CALLS = {
    "torch.distributed.init_process_group", "torch.distributed.new_group",
    "torch.distributed.distributed_c10d.init_process_group", "torch.distributed.distributed_c10d.new_group",
}
DP_NAMES = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
            "torch.nn.parallel.data_parallel"}
DDP_NAMES = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
NCCL_APIS = {
    "torch.distributed.is_nccl_available": ("torch.distributed.is_hccl_available()", "auto"),
    "torch.distributed.Backend.NCCL": ("'hccl'", "manual"),
    "torch.distributed.ProcessGroupNCCL": ("torch_npu._C._distributed_c10d.ProcessGroupHCCL", "auto"),
    "torch.distributed.distributed_c10d.ProcessGroupNCCL": ("torch_npu._C._distributed_c10d.ProcessGroupHCCL", "auto"),
}


def _is_nccl(value: str) -> bool:
    return value.strip() in ("nccl", "cuda:nccl", "cpu:gloo,cuda:nccl")


# check_module's node kinds by type (filled as types are met): one type test per node of its merged walk
# instead of a chain of isinstance calls, in the chain's order
_K_OTHER, _K_CALL, _K_COMPARE, _K_CONST, _K_NAME = range(5)
_NODE_KINDS: dict = {}


def _node_kind(t: type) -> int:
    for kind, classes in ((_K_CALL, nodes.Call), (_K_COMPARE, nodes.Compare), (_K_CONST, nodes.Const),
                          (_K_NAME, (nodes.Attribute, nodes.Name, nodes.AssignAttr))):
        if issubclass(t, classes):
            return kind
    return _K_OTHER


class DistributedPass(Pass):
    name = "distributed"
    rules = (R_NCCL, R_NCCL_CMP, R_DP, R_MULTI_DEV, R_NCCL_ENV, R_NCCL_API)

    VALID = (
        "import torch.distributed as dist\ndist.init_process_group(backend='hccl')\n",
        "import torch\nmodel = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])\n",
        "print('use nccl on GPUs')\n",
        "BACKENDS = {'cuda': 'nccl', 'npu': 'hccl'}\nbackend = BACKENDS.get(device_type, 'gloo')\n",
    )
    INVALID = (
        "import torch.distributed as dist\ndist.init_process_group(backend='nccl')  # expect: NPU101\n",
        "BACKENDS = {'cuda': 'nccl', 'cpu': 'gloo'}  # expect: NPU101\nbackend = BACKENDS.get(device_type, 'gloo')\n",
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--dist-backend', default='nccl')  # expect: NPU101\n",
        "import torch.distributed as dist\nif dist.get_backend() == 'nccl':  # expect: NPU102\n    pass\n",
        "import torch.nn as nn\nmodel = nn.DataParallel(model)  # expect: NPU103\n",
        "from torch.nn.parallel import DistributedDataParallel as DDP\nm = DDP(model, device_ids=[0, 1])  # expect: NPU104\n",
        "import os\nos.environ['NCCL_SOCKET_IFNAME'] = 'eth0'  # expect: NPU105\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        # names: only resolved ones can be an NCCL API (see _name)
        kinds = _NODE_KINDS
        for node in merged(ctx.resolver.outer_names(),
                           selection(ctx.tree, nodes.Call, nodes.Compare, nodes.Const)):
            t = type(node)
            kind = kinds.get(t)
            if kind is None:
                kind = kinds[t] = _node_kind(t)
            if kind == _K_CALL:
                yield from self._call(ctx, node)
            elif kind == _K_COMPARE:
                f = self._compare(ctx, node)
                if f:
                    yield f
            elif kind == _K_CONST:
                if isinstance(node.value, str):
                    yield from self._const(ctx, node)
            elif kind == _K_NAME:
                f = self._name(ctx, node)
                if f:
                    yield f

    def _call(self, ctx: ModuleContext, call: nodes.Call) -> Iterator[Finding]:
        r = ctx.resolver
        q = r.qualname(call.func)
        if q in DP_NAMES:
            yield ctx.finding(self.rule("NPU103"), call, "torch.nn.DataParallel",
                              "`torch.nn.DataParallel` is not supported on Ascend NPUs.",
                              replacement="torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank]) "
                                          "with one process per NPU (torchrun)", evidence="knowledge")
        elif q in DDP_NAMES:
            ids = None
            for kw in call.keywords or ():
                if kw.arg == "device_ids":
                    ids = kw.value
            if ids is None and len(call.args) >= 2:
                ids = call.args[1]
            if type(ids) in (nodes.List, nodes.Tuple) and len(ids.elts) > 1:
                yield ctx.finding(self.rule("NPU104"), call, "torch.nn.parallel.DistributedDataParallel",
                                  "DistributedDataParallel with several devices per process is not supported on Ascend "
                                  "(one process per device).", replacement="device_ids=[local_rank]")
            elif ids is not None and _is_range_over_devices(ids, r):
                yield ctx.finding(self.rule("NPU104"), call, "torch.nn.parallel.DistributedDataParallel",
                                  "DistributedDataParallel given every visible device in one process; Ascend needs one "
                                  "process per device.", replacement="device_ids=[local_rank]", confidence="medium")
        if q in ("os.environ.get", "os.getenv", "os.environ.setdefault", "os.putenv", "os.environ.pop") and call.args:
            vals = r.strings(call.args[0])
            for v in vals or ():
                if v in NCCL_ENV:
                    yield self._env(ctx, call.args[0], v, env_is_written(call.args[0], q))
                    break

    def _env(self, ctx: ModuleContext, node, var: str, write: bool) -> Finding:
        """Judged by what the variable does (data/noise.yaml): a log level or a transport switch is advice."""
        repl = NCCL_ENV[var]
        e = load_noise().env[var]
        sev = load_noise().env_severity(var, write)
        msg = f"`{var}` ({e.does}) configures NCCL; HCCL ignores it."
        if sev == "advice":
            msg += " Nothing breaks on an NPU."
        return ctx.finding(self.rule("NPU105"), node, var, msg,
                           replacement=(repl.strip() if repl else "no HCCL equivalent: drop it"), severity=sev)

    def _const(self, ctx: ModuleContext, node: nodes.Const) -> Iterator[Finding]:
        text = node.value
        parent = node.parent
        if text in NCCL_ENV and isinstance(parent, nodes.Subscript) and parent.slice is node:
            if ctx.resolver.qualname(parent.value) == "os.environ":
                yield self._env(ctx, node, text, env_is_written(node))
            return
        if not _is_nccl(text):
            return
        if in_log_or_docstring(node):
            return
        if isinstance(parent, nodes.Compare) or (
                type(parent) in (nodes.List, nodes.Tuple, nodes.Set) and isinstance(parent.parent, nodes.Compare)):
            return  # NPU102
        if isinstance(parent, nodes.Dict) and any(k is node for k, _v in parent.items):
            return
        if type(parent) in (nodes.List, nodes.Tuple, nodes.Set) and any(
                isinstance(e, nodes.Const) and e.value == "hccl" for e in parent.elts):
            return  # a list of backends that already includes hccl
        if isinstance(parent, nodes.Dict) and any(
                isinstance(k, nodes.Const) and isinstance(k.value, str) and k.value.split(":")[0] == "npu"
                and isinstance(v, nodes.Const) and v.value == "hccl" for k, v in parent.items):
            return  # a device-type -> backend table with the NPU's own entry ({"cuda": "nccl", "npu": "hccl"})
        if isinstance(parent, nodes.Subscript) and parent.slice is node:
            return
        if isinstance(parent, nodes.Call) and isinstance(parent.func, nodes.Attribute) and parent.func.attrname in ("startswith", "endswith", "find"):
            return
        call = parent if isinstance(parent, nodes.Call) else (parent.parent if isinstance(parent, nodes.Keyword) else None)
        severity, conf = "auto", "high"
        note = " transfer_to_npu rewrites it to 'hccl' in init_process_group/new_group."
        if isinstance(call, nodes.Call) and call is not node:
            target = ctx.resolver.qualname(call.func)
            if target in BACKEND_CALLS:
                pass
            elif target and not (isinstance(call.func, nodes.Attribute) and call.func.attrname == "add_argument"):
                severity = "manual"
                note = f" It is passed to `{target}`, whose arguments transfer_to_npu does not rewrite."
        yield ctx.finding(self.rule("NPU101"), node, "torch.distributed.backend:nccl",
                          "The 'nccl' backend does not exist on Ascend NPUs; use 'hccl'." + note,
                          replacement="'hccl'", severity=severity, confidence=conf, evidence="knowledge")

    def _compare(self, ctx: ModuleContext, node: nodes.Compare) -> Optional[Finding]:
        operands = [node.left] + [o for _op, o in node.ops]
        hit = False
        for o in operands:
            if isinstance(o, nodes.Const) and isinstance(o.value, str) and _is_nccl(o.value):
                hit = True
            elif type(o) in (nodes.List, nodes.Tuple, nodes.Set):
                hit = hit or any(isinstance(e, nodes.Const) and isinstance(e.value, str) and _is_nccl(e.value) for e in o.elts)
            elif isinstance(o, (nodes.Attribute, nodes.Name)) and ctx.resolver.qualname(o) == "torch.distributed.Backend.NCCL":
                hit = True
        if not hit or in_log_or_docstring(node):
            return None
        choice = path_choice(node, other_path=True)
        if choice and _cuda_detail_branch(ctx, node):
            # `if dist.get_backend() == "nccl": barrier(device_ids=...) else: barrier()`: false on an NPU host (the
            # group is HCCL), and the other branch completes: a path choice, nothing to change
            return ctx.finding(self.rule("NPU102"), node, "torch.distributed.backend:nccl",
                               f"This test compares the backend with 'nccl'; on an NPU the backend is 'hccl', so the "
                               f"other branch runs, and {choice}: nothing must change (test 'hccl' too where the "
                               "NCCL branch is the faster one).", replacement=None, severity="advice")
        return ctx.finding(self.rule("NPU102"), node, "torch.distributed.backend:nccl",
                           "This test compares the backend with 'nccl'; after migration the backend is 'hccl', so it "
                           "takes the other branch (transfer_to_npu does not rewrite comparisons).",
                           replacement=ctx.snippet(node.lineno).strip().replace("'nccl'", "'hccl'").replace('"nccl"', '"hccl"'))

    def _name(self, ctx: ModuleContext, node) -> Optional[Finding]:
        parent = node.parent
        if isinstance(parent, (nodes.Attribute, nodes.AssignAttr)) and parent.expr is node:
            return None
        q = ctx.resolver.qualname(node)
        if q not in NCCL_APIS:
            return None
        if isinstance(parent, nodes.Compare):
            return None  # reported by NPU102
        repl, sev = NCCL_APIS[q]
        return ctx.finding(self.rule("NPU106"), node, q, f"`{q}` is NCCL-specific.", replacement=repl, severity=sev,
                           evidence="knowledge")


def _is_range_over_devices(node, r) -> bool:
    """``list(range(torch.cuda.device_count()))``-like."""
    for n in walk(node):
        if isinstance(n, nodes.Call):
            q = r.qualname(n.func)
            if q in ("torch.cuda.device_count", "torch.npu.device_count"):
                return True
    return False


def _cuda_detail_branch(ctx: ModuleContext, node: nodes.Compare) -> bool:
    """A branch of the ``if`` that *node* tests names the CUDA device (``torch.cuda.current_device()`` handed to
    ``barrier(device_ids=...)``): the NCCL case is the CUDA device's variant of the other branch, not a different
    job (``return dist.new_group(backend="gloo")`` for CPU collectives is one: an HCCL group cannot do it)."""
    test = whole_test(node)
    holder = test.parent
    if not isinstance(holder, nodes.If):
        return False
    for st in list(holder.body) + list(holder.orelse):
        for n in walk(st):
            if isinstance(n, (nodes.Attribute, nodes.Name)):
                q = ctx.resolver.qualname(n)
                if q and (q == "torch.cuda" or q.startswith("torch.cuda.")):
                    return True
    return False
