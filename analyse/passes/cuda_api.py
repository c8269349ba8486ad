"""cuda-api: every use of CUDA-specific PyTorch API.

Detects ``torch.cuda.*`` (calls, attributes, imports), ``.cuda()`` / ``.is_cuda``
on tensors and modules, ``'cuda'`` / ``'cuda:N'`` / ``f'cuda:{rank}'`` device
strings used as devices (also through variables, argparse defaults and
``torch.device``), device-type comparisons (``x.device.type == 'cuda'``),
``torch.backends.cudnn.*`` / ``torch.backends.cuda.*``, CUDA-only features
transfer_to_npu does not cover (nvtx, jit.script, channels_last ...),
``CUDA_VISIBLE_DEVICES`` and ``nvidia-smi``.

Severity is ``auto`` when ``from torch_npu.contrib import transfer_to_npu``
rewrites the use for the target torch_npu version (knowledge:
``transfer_to_npu`` facts), else ``manual`` with the replacement. Comments,
docstrings and log/exception strings are never findings.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from astroid import nodes

from analyse.conditions import NO_TRANSFER as NO_TRANSFER_SCENARIO, TRANSFER as TRANSFER_SCENARIO, \
    build as build_condition, evaluate as evaluate_condition
from analyse.conditions.model import CUDA as CUDA_ATOM, CUDA_BUILD as CUDA_BUILD_ATOM, UNKNOWN as UNKNOWN_ATOM, \
    atoms as condition_atoms
from analyse.findings import Finding, Rule
from analyse.knowledge.noise import env_is_written, load_noise
from analyse.guards import _only_raises as only_raises, chain_stops, cuda_probe_settled, path_choice
from analyse.passes import ModuleContext, Pass, in_log_or_docstring, nodes_of, walk
from analyse.passes._limits import evaluate_checks
from analyse.syntax import merged, selection, whole_test
from analyse.resolve import is_cuda_device_string

TRANSFER = "from torch_npu.contrib import transfer_to_npu"

R_TORCH_CUDA = Rule(
    code="NPU001", name="torch-cuda-api", category="cuda-api", severity="manual",
    summary="A `torch.cuda.*` function, class, attribute or module is used.",
    why="`torch.cuda` talks to the CUDA runtime, which does not exist on an Ascend host. transfer_to_npu "
        "copies the names of `torch_npu.npu.__all__` onto `torch.cuda` (auto); any other `torch.cuda.X` keeps "
        "its CUDA implementation and fails or reports no device.",
    example="torch.cuda.set_device(local_rank)\nwith torch.cuda.nvtx.range('fwd'):\n    y = model(x)",
    fix="torch.npu.set_device(local_rank)   # or keep it and use transfer_to_npu\n# nvtx: use torch_npu.npu.mstx ranges or drop the range",
)
R_DOT_CUDA = Rule(
    code="NPU002", name="tensor-module-cuda", category="cuda-api", severity="auto",
    summary="`.cuda()` / `.is_cuda` on a tensor or module.",
    why="`Tensor.cuda()` and `Module.cuda()` move data to a CUDA device. transfer_to_npu replaces them with "
        "`.npu()`; without it they raise because no CUDA device exists.",
    example="model = model.cuda()\nimages = images.cuda(non_blocking=True)",
    fix="model = model.npu()            # or model.to(device) with device = 'npu:0'\nimages = images.npu(non_blocking=True)",
)
R_DEVICE_STR = Rule(
    code="NPU003", name="cuda-device-string", category="cuda-api", severity="auto",
    summary="A 'cuda' / 'cuda:N' device string used as a device.",
    why="Device strings select the backend. transfer_to_npu rewrites 'cuda' to 'npu' only in the device "
        "arguments of the functions it wraps (factories, .to, autocast, torch.load map_location ...); strings "
        "passed anywhere else keep meaning CUDA.",
    example="device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\nx = torch.zeros(3, device=f'cuda:{rank}')",
    fix="device = torch.device('npu' if torch.npu.is_available() else 'cpu')\nx = torch.zeros(3, device=f'npu:{rank}')",
)
R_DEVICE_CMP = Rule(
    code="NPU004", name="cuda-device-check", category="cuda-api", severity="manual",
    summary="Logic that tests whether a device is CUDA (`device.type == 'cuda'`, `'cuda' in str(device)`).",
    why="On an NPU the device type is 'npu', so the CUDA branch is silently skipped (or the CPU branch is "
        "taken). transfer_to_npu does not rewrite comparisons. The test is valued on an Ascend host: info when it "
        "has its CUDA-host value there (`'cuda' in device` with `device = 'cuda'`, a set that lists 'npu'), advice "
        "when the branch an NPU takes completes (a memory printout skipped), manual when that branch raises, "
        "asserts or exits.",
    example="if x.device.type == 'cuda':\n    torch.cuda.synchronize()",
    fix="if x.device.type == 'npu':\n    torch.npu.synchronize()",
)
R_BACKENDS = Rule(
    code="NPU005", name="cuda-backends-flag", category="cuda-api", severity="manual",
    summary="`torch.backends.cudnn.*` / `torch.backends.cuda.*` settings.",
    why="cuDNN and CUDA backend switches have no effect on an NPU: the intent (determinism, TF32, SDPA kernel "
        "choice, autotuning) must be expressed with the NPU equivalent, or it is silently lost.",
    example="torch.backends.cudnn.benchmark = True\ntorch.backends.cuda.matmul.allow_tf32 = True",
    fix="# determinism: torch.use_deterministic_algorithms(True)\n# TF32-like matmul: torch.npu.matmul.allow_hf32 = True\n# autotuning: not needed; drop the line",
)
R_CUDA_ONLY = Rule(
    code="NPU006", name="cuda-only-feature", category="cuda-api", severity="manual",
    summary="A CUDA-only feature that transfer_to_npu does not handle (or disables).",
    why="Some features exist only for CUDA or are switched off by transfer_to_npu: NVTX ranges, "
        "`torch.jit.script` (becomes a no-op), the channels_last memory format, CUDA graphs, CUDA-capability "
        "checks (`get_device_capability()` returns None), float64 CUDA tensor types (downgraded to float32), "
        "the NVTX profiler (`emit_nvtx`), symmetric memory. Names outside `torch.cuda` are reported "
        "when their fact in `data/cuda_only.yaml` says `reported_by: cuda-api`.",
    example="model = model.to(memory_format=torch.channels_last)\nscripted = torch.jit.script(model)",
    fix="model = model.contiguous()   # channels_last is not supported by automatic migration\n# keep eager mode (or torch.compile) instead of TorchScript",
)
R_ENV = Rule(
    code="NPU007", name="cuda-env-or-tool", category="cuda-api", severity="manual",
    summary="`CUDA_VISIBLE_DEVICES` (and other CUDA environment variables) or `nvidia-smi`.",
    why="The Ascend runtime reads `ASCEND_RT_VISIBLE_DEVICES`, not `CUDA_VISIBLE_DEVICES`; `nvidia-smi` does "
        "not exist on an Ascend host (`npu-smi` does).",
    example="os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'\nsubprocess.run(['nvidia-smi'])",
    fix="os.environ['ASCEND_RT_VISIBLE_DEVICES'] = '0,1'\nsubprocess.run(['npu-smi', 'info'])",
)

# CUDA environment variables -> their Ascend replacement (data/noise.yaml env_vars, which also says what each does
# and what a write or a read costs on an NPU host: a device mask, a log switch or an allocator hint is advice)
CUDA_ENV_VARS = {k: v.replacement for k, v in load_noise().env.items() if k.startswith(("CUDA_", "PYTORCH_CUDA_"))}


def _env_finding_fields(var: str, write: bool) -> tuple:
    """(severity, message) of a CUDA environment variable's access, judged by what the variable does."""
    e = load_noise().env[var]
    sev = load_noise().env_severity(var, write)
    what = "sets" if write else "reads"
    msg = f"`{var}` ({e.does}) is read by the CUDA runtime only; the Ascend runtime ignores it."
    if sev == "advice":
        msg += f" The code {what} it; nothing breaks on an NPU" + (f"; the Ascend equivalent is `{e.replacement}`."
                                                                   if e.replacement else ".")
    return sev, msg

# device-argument keyword names (transfer_to_npu's device_kwargs_list plus common ones)
DEVICE_KWARGS = {"device", "device_type", "map_location", "device_id", "device_ids", "output_device"}
# calls that are device-taking even when not in the rewrite lists
DEVICE_CALLS = {"torch.device", "torch.cuda.device"}
# CUDA-only facts about names outside torch.cuda / torch.backends: this pass reports those whose `reported_by` in
# data/cuda_only.yaml is "cuda-api" (the others belong to the distributed, dtypes, triton and cuda-extension passes)
# what only a ScriptModule has: code that reads these (or saves / freezes the scripted object) relies on TorchScript
_SCRIPT_MODULE_ATTRS = frozenset({"graph", "code", "inlined_graph", "code_with_constants", "save_to_buffer",
                                  "graph_for", "_c"})
_SCRIPT_MODULE_CALLS = frozenset({"save", "freeze", "optimize_for_inference", "export_opnames", "load"})
_SCRIPT_MEMO = "_npu_uses_script_module"


def _uses_script_module(tree: nodes.Module) -> bool:
    """The module reads what only a ScriptModule has: ``torch.jit.save`` / ``freeze`` / ``load``, or an attribute
    named like a ScriptModule's graph or code (``.graph``, ``.code``, ``.inlined_graph``): memoised on the tree."""
    got = tree.__dict__.get(_SCRIPT_MEMO)
    if got is None:
        got = False
        for a in nodes_of(tree, nodes.Attribute):
            if a.attrname in _SCRIPT_MODULE_ATTRS:
                got = True
                break
            if a.attrname in _SCRIPT_MODULE_CALLS and (
                    (isinstance(a.expr, nodes.Attribute) and a.expr.attrname == "jit")
                    or (isinstance(a.expr, nodes.Name) and a.expr.name == "jit")):
                got = True
                break
        tree.__dict__[_SCRIPT_MEMO] = got
    return got


_COMPARE_METHODS = {"startswith", "endswith", "__eq__", "find", "index", "count"}


def _rewritten(kb, target: Optional[str]) -> bool:
    if not target:
        return False
    fns = kb.device_rewrite_functions
    if target in fns:
        return True
    aliases = {
        "torch.autocast": "torch.amp.autocast_mode.autocast",
        "torch.amp.autocast": "torch.amp.autocast_mode.autocast",
        "torch.cuda.amp.autocast": "torch.amp.autocast_mode.autocast",
    }
    alias = aliases.get(target)
    if alias and (alias in fns or f"{alias}.__init__" in fns):
        return True
    return f"{target}.__init__" in fns


# check_module's node kinds by type (filled as types are met): one type test per node of its merged walk
# instead of a chain of isinstance calls, in the chain's order
_K_OTHER, _K_NAME, _K_IMPORT_FROM, _K_IMPORT, _K_CALL, _K_COMPARE, _K_STRING = range(7)
_NODE_KINDS: dict = {}


def _node_kind(t: type) -> int:
    for kind, classes in ((_K_NAME, (nodes.Attribute, nodes.Name, nodes.AssignAttr)),
                          (_K_IMPORT_FROM, nodes.ImportFrom), (_K_IMPORT, nodes.Import), (_K_CALL, nodes.Call),
                          (_K_COMPARE, nodes.Compare), (_K_STRING, (nodes.Const, nodes.JoinedStr))):
        if issubclass(t, classes):
            return kind
    return _K_OTHER


class CudaApiPass(Pass):
    name = "cuda-api"
    rules = (R_TORCH_CUDA, R_DOT_CUDA, R_DEVICE_STR, R_DEVICE_CMP, R_BACKENDS, R_CUDA_ONLY, R_ENV)

    VALID = (
        "import torch\nx = torch.zeros(3, device='npu')\nprint('running on cuda')\n",
        "import torch\n\ndef f():\n    '''Moves the model to cuda.'''\n    return torch.npu.device_count()\n",
        "import logging\nlogging.info('cuda is %s', 'cuda')\nraise RuntimeError('cuda device not found')\n",
        "import torch\nif x.device.type == 'npu':\n    pass\n",
        # an implementation selector, not a device (StyleGAN-style upfirdn2d / bias_act)
        "import torch\n\ndef op(x, impl='cuda'):\n    assert impl in ['ref', 'cuda']\n    if impl == 'cuda':\n"
        "        return x * 2\n    return x + x\n\ny = op(x, impl='cuda')\n",
    )
    INVALID = (
        "import torch\ntorch.cuda.synchronize()  # expect: NPU001\n",
        "import torch\nmodel = torch.nn.Linear(2, 2).cuda()  # expect: NPU002\n",
        "import torch\ndevice = 'cuda'  # expect: NPU003\nx = torch.zeros(2).to(device)\n",
        "import torch\nif x.device.type == 'cuda':  # expect: NPU004\n    pass\n",
        "import torch\n\ndef op(x, impl='cuda'):\n    assert impl in ['ref', 'cuda']\n"
        "    if impl == 'cuda' and x.device.type == 'cuda':  # expect: NPU004\n        return x * 2\n    return x + x\n",
        "import torch\ntorch.backends.cudnn.benchmark = True  # expect: NPU005\n",
        "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '0'  # expect: NPU007\n",
        "import shutil\nsmi = shutil.which('nvidia-smi')  # expect: NPU007\n",
        "import torch\nwith torch.cuda.nvtx.range('x'):  # expect: NPU001\n    pass\n",
        "from torch.cuda import amp  # expect: NPU001\nscaler = amp.GradScaler()  # expect: NPU001\n",
        "import torch\ntorch.set_default_tensor_type('torch.cuda.FloatTensor')  # expect: NPU001\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        # names: only those that resolve or read `.is_cuda` can give a finding (see _name_use)
        tree = ctx.tree
        is_cuda = []
        for pos, n in selection(tree, nodes.Attribute):
            if n.attrname == "is_cuda":
                is_cuda.append((pos, n))
            elif n.attrname == "type" and isinstance(n.parent, nodes.Subscript) and n.parent.slice is n:
                f = self._device_table(ctx, n.parent)
                if f is not None:
                    yield f
        kinds = _NODE_KINDS
        for node in merged(ctx.resolver.outer_names(), is_cuda,
                           selection(tree, nodes.ImportFrom, nodes.Import, nodes.Call, nodes.Compare, nodes.Const,
                                     nodes.JoinedStr)):
            t = type(node)
            kind = kinds.get(t)
            if kind is None:
                kind = kinds[t] = _node_kind(t)
            if kind == _K_NAME:
                f = self._name_use(ctx, node)
                if f is not None:
                    yield f
            elif kind == _K_IMPORT_FROM:
                yield from self._import_from(ctx, node)
            elif kind == _K_IMPORT:
                for mod, _as in node.names:
                    if mod == "torch.cuda" or mod.startswith("torch.cuda."):
                        yield self._torch_cuda_finding(ctx, node, mod)
            elif kind == _K_CALL:
                yield from self._call(ctx, node)
            elif kind == _K_COMPARE:
                f = self._compare(ctx, node)
                if f is not None:
                    yield f
            elif kind == _K_STRING:
                yield from self._string(ctx, node)
        for _pos, ifn in selection(tree, nodes.If):
            f = self._flag_stop(ctx, ifn)
            if f is not None:
                yield f

    # --------------------------------------------------------------- CUDA flags that stop the code
    def _flag_stop(self, ctx: ModuleContext, ifn: nodes.If) -> Optional[Finding]:
        """``if not _SUPPORTS_FLEX: raise ValueError(...)`` where the flag is a CUDA availability test (bound in this
        module or imported from the module that binds it, :func:`analyse.conditions.build.imported_flag`) that is
        false on an NPU host without transfer_to_npu and not known to hold with it: the code stops on an NPU. The
        test names no CUDA API itself, so nothing else reports it."""
        test = ifn.test
        inner = test.operand if isinstance(test, nodes.UnaryOp) and test.op == "not" else test
        if not isinstance(inner, nodes.Name) or ifn.orelse or not _fails(ifn.body):
            return None
        try:
            c = build_condition(test)
        except (RecursionError, ValueError, TypeError, AttributeError):
            return None
        if c is None or not any(a.kind in _CUDA_FLAG_KINDS for a in condition_atoms(c)) \
                or any(a.kind not in _CUDA_FLAG_KINDS + (UNKNOWN_ATOM,) for a in condition_atoms(c)):
            return None
        if evaluate_condition(c, NO_TRANSFER_SCENARIO) is not True:
            return None
        line = ifn.body[-1].lineno or ifn.lineno
        if evaluate_condition(c, TRANSFER_SCENARIO) is False:
            return ctx.finding(self.rule("NPU004"), ifn.test, "cuda-availability-flag",
                               f"`{inner.name}` is a CUDA availability test, false on an Ascend NPU host: the code stops "
                               f"there ({ctx.path}:{line}) unless transfer_to_npu makes the test answer for the NPU.",
                               replacement="test for the NPU too (or import transfer_to_npu)", severity="auto")
        return ctx.finding(self.rule("NPU004"), ifn.test, "cuda-availability-flag",
                           f"`{inner.name}` is a CUDA availability test, false on an Ascend NPU host (without "
                           f"transfer_to_npu, and not known to hold with it): {NPU_BRANCH_STOPS} ({ctx.path}:{line})"
                           f"{_every_call(ifn)}.",
                           replacement="give the NPU its own path (or test for the NPU too) instead of stopping",
                           severity="manual")

    # --------------------------------------------------------------- device-type tables
    def _device_table(self, ctx: ModuleContext, sub: nodes.Subscript) -> Optional[Finding]:
        """``TABLE[x.device.type]`` where TABLE is a dict literal (of the module, the class body or ``self.TABLE =
        {...}`` in the class) keyed by device types with no ``'npu'`` key: a KeyError for an NPU device, which
        transfer_to_npu does not rename (its type stays 'npu')."""
        dev = sub.slice.expr
        if not ((isinstance(dev, nodes.Name) and "device" in dev.name.lower())
                or (isinstance(dev, nodes.Attribute) and dev.attrname == "device")):
            return None
        table = _dict_literal(sub.value)
        if table is None:
            return None
        keys = [k.value for k, _v in table.items if isinstance(k, nodes.Const) and isinstance(k.value, str)]
        if len(keys) != len(table.items) or "npu" in keys or not any(is_cuda_device_string(k) for k in keys) \
                or _catches_key_error(sub):
            return None
        shown = ", ".join(repr(k) for k in keys[:6])
        return ctx.finding(self.rule("NPU004"), sub, DEVICE_TABLE,
                           f"`{sub.as_string()[:80]}` looks the device type up in a table keyed by {shown} "
                           f"({ctx.path}:{table.lineno}); an NPU device's type is 'npu', which is no key: KeyError "
                           "(transfer_to_npu does not rename the device type).",
                           replacement="add an 'npu' entry to the table (or look it up with .get(..., default))",
                           severity="manual")

    # --------------------------------------------------------------- names
    def _name_use(self, ctx: ModuleContext, node) -> Optional[Finding]:
        parent = node.parent
        # only the outermost name of an attribute chain
        if isinstance(parent, (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr)) and parent.expr is node:
            return None
        if isinstance(node, nodes.Attribute) and node.attrname == "is_cuda" and not (
                isinstance(node.expr, nodes.Name) and node.expr.name in ("self", "cls")):
            choice = _is_cuda_path_choice(node)
            if choice:
                return ctx.finding(self.rule("NPU002"), node, "torch.Tensor.is_cuda",
                                   f"`.is_cuda` chooses a path here: {choice}. False for an NPU tensor without "
                                   "transfer_to_npu, true with it; both paths run on an NPU, so nothing must change "
                                   "(test `.is_npu` too where the CUDA path is the faster one).",
                                   replacement=None, severity="advice")
            return ctx.finding(self.rule("NPU002"), node, "torch.Tensor.is_cuda",
                               "`.is_cuda` is False for NPU tensors; transfer_to_npu maps it to `.is_npu`.",
                               replacement="x.is_npu", severity="auto" if self._transfer_maps(ctx, "torch.Tensor.is_cuda") else "manual",
                               confidence="medium" if not ctx.resolver.is_tensor(node.expr) else "high")
        q = ctx.resolver.qualname(node)
        if not q:
            return None
        if q == "torch.cuda" or q.startswith("torch.cuda."):
            if isinstance(node, nodes.Name) and isinstance(parent, (nodes.Import, nodes.ImportFrom)):
                return None
            if isinstance(node, nodes.AssignAttr):
                # `torch.cuda.is_available = lambda: False`: the program replaces the CUDA API (a monkey patch,
                # usually to keep CUDA off); nothing of CUDA runs at the assignment
                return None
            if q == "torch.cuda.is_available" and ctx.project.mode == "thirdparty" \
                    and isinstance(parent, nodes.Call) and parent.func is node:
                choice = cuda_probe_settled(parent) or _reported_only(parent, ctx.resolver) or _stored_probe(parent)
                if choice:
                    # library mode: a function that asks whether CUDA is there and completes either way (`if not
                    # torch.cuda.is_available(): return None`, `assert torch.cuda.is_available() or
                    # is_npu_available()`) runs on an NPU as it stands
                    return ctx.finding(self.rule("NPU001"), node, q,
                                       f"`{q}()` chooses a path here: {choice}. False on an NPU host without "
                                       "transfer_to_npu (true with it); both paths run, so nothing must change.",
                                       replacement=None, severity="advice", evidence="knowledge")
            return self._torch_cuda_finding(ctx, node, q)
        if q.startswith("torch.backends.cudnn") or q.startswith("torch.backends.cuda"):
            return self._backends_finding(ctx, node, q)
        # which CUDA-only facts this pass reports outside torch.cuda is data: the fact's reported_by
        fact = ctx.kb.cuda_only(q)
        if fact is not None and fact.reported_by == self.name:
            if fact.id == "jit-script-disabled" and not _uses_script_module(ctx.tree):
                # nothing here reads the ScriptModule (saved, its graph or code): the scripted code runs eagerly
                # under transfer_to_npu, a speed difference and no change to make
                return ctx.finding(self.rule("NPU006"), node, q,
                                   f"`{q}`: {fact.reason} Nothing in this module saves the scripted object or reads its "
                                   "graph or code, so it runs eagerly: slower, with no change to make.",
                                   replacement=fact.replacement, severity="advice", evidence="knowledge")
            return ctx.finding(self.rule("NPU006"), node, q, f"`{q}`: {fact.reason}", replacement=fact.replacement,
                               severity=fact.severity, evidence="knowledge")
        return None

    def _transfer_maps(self, ctx, name: str) -> bool:
        fact = ctx.kb.cuda_only(name)
        return fact is None

    def _torch_cuda_finding(self, ctx: ModuleContext, node, q: str) -> Finding:
        kb = ctx.kb
        rule = self.rule("NPU001")
        parts = q.split(".")
        attr = parts[2] if len(parts) > 2 else None
        fact = kb.cuda_only(q)
        npu = kb.npu_equivalent(q) if attr else "torch.npu"
        if fact is not None:
            return ctx.finding(rule, node, q, f"`{q}`: {fact.reason}", replacement=fact.replacement,
                               severity=fact.severity, evidence="knowledge")
        limited = self._unfilled_attributes(ctx, node, q)
        if limited is not None:
            return limited
        if attr is None:
            return ctx.finding(rule, node, q, "The `torch.cuda` module is used; transfer_to_npu aliases it to `torch.npu`.",
                               replacement="torch.npu", severity="auto", evidence="knowledge")
        handled = kb.cuda_attr_handled(attr)
        if handled:
            msg = (f"`{q}` is CUDA-specific; {TRANSFER} maps it to `{npu or 'torch.npu.' + '.'.join(parts[2:])}` "
                   f"for torch_npu {kb.torch_npu_version}.")
            return ctx.finding(rule, node, q, msg, replacement=npu or "torch.npu." + ".".join(parts[2:]),
                               severity="auto", evidence="knowledge")
        msg = (f"`{q}` has no NPU counterpart that transfer_to_npu maps for torch_npu {kb.torch_npu_version}: "
               "it keeps calling the CUDA runtime and fails or reports no device on an Ascend host.")
        return ctx.finding(rule, node, q, msg,
                           replacement=npu or "remove it, or guard it with `if torch.cuda.is_available():` and add the NPU path",
                           severity="manual", evidence="knowledge")

    def _unfilled_attributes(self, ctx: ModuleContext, node, q: str) -> Optional[Finding]:
        """A call whose result the code reads an attribute of that the support list says is empty on an NPU
        (an ``attribute`` check: ``torch.cuda.get_device_properties(d).major``, the CUDA compute capability):
        the name is mapped, the value it answers is not (manual)."""
        call = node.parent
        if not (isinstance(call, nodes.Call) and call.func is node):
            return None
        info = ctx.kb.api(q)
        checks = [c for c in getattr(info, "checks", None) or () if c["kind"] == "attribute"]
        if not checks:
            return None
        hits, _unknown = evaluate_checks(checks, call, ctx.resolver)
        if not hits:
            return None
        check, shown = hits[0]
        npu = getattr(info, "npu_name", None) or ctx.kb.npu_equivalent(q) or q
        msg = (f"`{q}(...)` is mapped to `{npu}` by transfer_to_npu, but the code reads `{shown}` from its result: "
               f"{check['text'].rstrip('.')} on an NPU (Ascend support list for torch {ctx.kb.torch_version}), so the "
               "value is empty and code that compares or computes with it fails or takes the wrong branch.")
        fix = (f"read only {', '.join(check['allowed'])} on an NPU; branch on the device type "
               "(torch.npu.is_available()) instead of CUDA hardware attributes such as the compute capability")
        return ctx.finding(self.rule("NPU006"), node, q, msg, replacement=fix, severity="manual", evidence="knowledge")

    def _backends_finding(self, ctx: ModuleContext, node, q: str) -> Finding:
        fact = ctx.kb.cuda_only(q)
        if fact is not None:
            return ctx.finding(self.rule("NPU005"), node, q, f"`{q}`: {fact.reason}", replacement=fact.replacement,
                               severity=fact.severity, evidence="knowledge")
        return ctx.finding(self.rule("NPU005"), node, q,
                           f"`{q}` configures cuDNN/CUDA kernels and has no effect on an NPU.",
                           replacement="remove it, or express the intent with the NPU equivalent", severity="info")

    def _import_from(self, ctx: ModuleContext, node: nodes.ImportFrom) -> Iterator[Finding]:
        base = ctx.resolver.absolute_import(node.modname, node.level)
        if base == "torch" :
            for name, _as in node.names:
                if name == "cuda":
                    yield self._torch_cuda_finding(ctx, node, "torch.cuda")
            return
        if base == "torch.cuda" or base.startswith("torch.cuda."):
            names = [n for n, _ in node.names]
            q = f"{base}.{names[0]}" if len(names) == 1 and names[0] != "*" else base
            yield self._torch_cuda_finding(ctx, node, q)

    # --------------------------------------------------------------- calls
    def _call(self, ctx: ModuleContext, call: nodes.Call) -> Iterator[Finding]:
        func = call.func
        r = ctx.resolver
        if isinstance(func, nodes.Attribute) and func.attrname == "cuda":
            if isinstance(func.expr, nodes.Call) and isinstance(func.expr.func, nodes.Name) and func.expr.func.name == "super":
                return  # an overriding cuda() delegating to nn.Module.cuda: a definition, not a use
            if (r.qualname(func) or "").startswith("torch.cuda"):
                return  # torch.cuda (the module) is reported as a name, not as a .cuda() call
            t = r.type_of(func.expr)
            if t == "torch.Tensor":
                api, conf = "torch.Tensor.cuda", "high"
            elif t and r.is_module_type(t):
                api, conf = "torch.nn.Module.cuda", "high"
            else:
                api, conf = "torch.Tensor.cuda", "medium"
            yield ctx.finding(self.rule("NPU002"), call, api,
                              f"`.cuda()` moves data to a CUDA device; {TRANSFER} replaces it with `.npu()`.",
                              replacement=".npu()  (or .to(device) with device = 'npu:<N>')", confidence=conf,
                              evidence="inferred" if conf == "high" and t else "syntax")
            return
        # nvidia-smi via subprocess / os.system
        q = r.qualname(func)
        if q == "shutil.which" and call.args:
            for tool in _device_query_tools(ctx.kb):
                if _mentions(call.args[0], tool):
                    # the path of the GPU tool, to run it: None on an Ascend host (the code raises or skips its stats)
                    yield ctx.finding(self.rule("NPU007"), call, tool,
                                      f"`shutil.which('{tool}')` looks up a GPU vendor's tool, which does not exist on "
                                      "an Ascend host.", replacement="npu-smi info")
                    break
        if q in ("os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_output",
                 "subprocess.check_call", "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput"):
            found = next((tool for a in call.args for tool in _device_query_tools(ctx.kb)
                          if _mentions(a, tool) or _command_mentions(r, a, tool) or _helper_returns(r, a, tool)), None)
            if found:
                yield ctx.finding(self.rule("NPU007"), call, found,
                                  f"`{found}` does not exist on an Ascend host.", replacement="npu-smi info")
        # env vars: os.environ.get / os.getenv / os.putenv / os.environ.setdefault
        if q in ("os.environ.get", "os.getenv", "os.putenv", "os.environ.setdefault", "os.environ.pop", "os.unsetenv") and call.args:
            yield from self._env(ctx, call.args[0])

    def _env(self, ctx: ModuleContext, node) -> Iterator[Finding]:
        vals = ctx.resolver.strings(node)
        if not vals:
            return
        for v in vals:
            if v in CUDA_ENV_VARS:
                repl = CUDA_ENV_VARS[v]
                sev, msg = _env_finding_fields(v, env_is_written(node, ctx.resolver.qualname(node.parent.func)))
                yield ctx.finding(self.rule("NPU007"), node, v, msg, replacement=repl or "no NPU equivalent: drop it",
                                  severity=sev)
                return

    # --------------------------------------------------------------- compares
    def _compare(self, ctx: ModuleContext, node: nodes.Compare) -> Optional[Finding]:
        operands = [node.left] + [o for _op, o in node.ops]
        ops = [op for op, _o in node.ops]
        if not any(op in ("==", "!=", "in", "not in", "is", "is not") for op in ops):
            return None
        r = ctx.resolver
        cuda_side = None
        for o in operands:
            o = _device_type_operand(o, r) or o
            vals = r.strings(o) if isinstance(o, (nodes.Const, nodes.JoinedStr)) else None
            if vals and any(is_cuda_device_string(v) for v in vals):
                cuda_side = o
            elif type(o) in (nodes.List, nodes.Tuple, nodes.Set):
                for e in o.elts:
                    s = r.strings(e) if isinstance(e, nodes.Const) else None
                    if s and any(is_cuda_device_string(v) for v in s):
                        cuda_side = o
        if cuda_side is None:
            return None
        if in_log_or_docstring(node):
            return None
        if _selects_implementation(node, cuda_side):
            return None  # `impl == 'cuda'`: picks the compiled or the reference implementation, not a device
        branch = _cuda_only_branch(node, r)
        if branch:
            return ctx.finding(self.rule("NPU004"), node, "device-type-check",
                               "This comparison tests for a CUDA device; on an Ascend NPU the device type is 'npu', so "
                               f"the non-CUDA branch runs. Keep it: the CUDA branch uses {branch}, which has no NPU "
                               "implementation, and the other branch is the portable one.",
                               replacement=None, severity="info")
        old_torch = _old_torch_fallback(node, ctx)
        if old_torch:
            return ctx.finding(self.rule("NPU004"), node, "device-type-check",
                               f"This comparison names a CUDA device, but {old_torch}: nothing changes on an Ascend "
                               "NPU.", replacement=None, severity="info")
        repl = _swap_in_line(ctx.snippet(node.lineno).splitlines()[0], node)
        sev, effect = device_check_effect(node, ctx.path, library=ctx.project.mode == "thirdparty")
        if sev == "info":
            return ctx.finding(self.rule("NPU004"), node, "device-type-check",
                               f"This comparison names a CUDA device, but {effect}: nothing changes on an Ascend NPU.",
                               replacement=None, severity="info")
        if sev == "advice":
            return ctx.finding(self.rule("NPU004"), node, "device-type-check",
                               f"This comparison tests for a CUDA device; on an Ascend NPU {effect}. The program runs; "
                               "test for the NPU too where the skipped branch matters (transfer_to_npu does not "
                               "rewrite the comparison).", replacement=repl, severity="advice")
        return ctx.finding(self.rule("NPU004"), node, "device-type-check",
                           "This comparison tests for a CUDA device; on an Ascend NPU the device type is 'npu', "
                           "so the check silently takes the non-CUDA branch (transfer_to_npu does not rewrite it)"
                           + (f"; {effect}." if effect else "."), replacement=repl)

    # --------------------------------------------------------------- strings
    def _string(self, ctx: ModuleContext, node) -> Iterator[Finding]:
        if isinstance(node, nodes.Const):
            if not isinstance(node.value, str):
                return
            if isinstance(node.parent, nodes.JoinedStr):
                return
            text = node.value
            if text in CUDA_ENV_VARS and isinstance(node.parent, nodes.Subscript) and node.parent.slice is node:
                q = ctx.resolver.qualname(node.parent.value)
                if q == "os.environ":
                    repl = CUDA_ENV_VARS[text]
                    sev, msg = _env_finding_fields(text, env_is_written(node))
                    yield ctx.finding(self.rule("NPU007"), node, text, msg,
                                      replacement=f"os.environ['{repl}']" if repl else "no NPU equivalent: drop it",
                                      severity=sev)
                return
            if text.startswith("torch.cuda.") and text[len("torch.cuda."):].isidentifier() and not in_log_or_docstring(node):
                # torch.set_default_tensor_type('torch.cuda.FloatTensor'), x.type('torch.cuda.HalfTensor')
                yield ctx.finding(self.rule("NPU001"), node, text,
                                  f"The type name '{text}' is a string: transfer_to_npu does not rewrite it, so it still "
                                  "names a CUDA tensor type.",
                                  replacement="'" + text.replace("torch.cuda.", "torch.npu.", 1) + "'", severity="manual")
                return
            if not is_cuda_device_string(text):
                return
        else:
            vals = ctx.resolver.strings(node)
            if not vals or not any(is_cuda_device_string(v) for v in vals):
                return
            text = sorted(vals)[0]
        if in_log_or_docstring(node):
            return
        if isinstance(node, nodes.Const) and _is_impl_default(node):
            return  # impl='cuda': an implementation name, not a device (see _selects_implementation)
        parent = node.parent
        # comparisons are NPU004; dict keys / membership tests are not device uses
        if isinstance(parent, nodes.Compare):
            return
        if type(parent) in (nodes.List, nodes.Tuple, nodes.Set) and isinstance(parent.parent, nodes.Compare):
            return
        if isinstance(parent, nodes.Call) and parent.args and parent.args[0] is node \
                and isinstance(parent.parent, nodes.Attribute) and isinstance(parent.parent.parent, nodes.Compare) \
                and _device_type_operand(parent.parent, ctx.resolver) is node:
            return   # `x.device.type == torch.device("cuda").type`: the comparison's (NPU004), no device is made
        if isinstance(parent, nodes.Dict) and any(k is node for k, _v in parent.items):
            return
        if isinstance(parent, nodes.Call) and isinstance(parent.func, nodes.Attribute) and parent.func.attrname in _COMPARE_METHODS:
            f = ctx.finding(self.rule("NPU004"), parent, "device-type-check",
                            "This string test looks for a CUDA device; on an Ascend NPU the device type is 'npu'.",
                            replacement=_swap(ctx.snippet(parent.lineno)))
            yield f
            return
        if type(parent) in (nodes.List, nodes.Tuple, nodes.Set) and not _device_list(parent):
            return
        if _is_key_or_name(node):
            return
        call, kw = _enclosing_call(node)
        r = ctx.resolver
        target = r.call_target(call) if call is not None else None
        if call is not None and isinstance(call.func, nodes.Attribute) and call.func.attrname in ("to", "to_empty") and target is None:
            target = "torch.Tensor.to"
        severity = "auto"
        note = ""
        if call is not None:
            if target in DEVICE_CALLS or _rewritten(ctx.kb, target):
                severity = "auto"
            elif target and kw in DEVICE_KWARGS and target.startswith("torch.") and not _rewritten(ctx.kb, target):
                severity = "manual"
                note = f" `{target}` is not among the functions whose device arguments transfer_to_npu rewrites."
        new = text.replace("cuda", "npu", 1)
        if ctx.project.mode == "thirdparty" and call is None:
            later = _replaced_when_cuda_absent(node, ctx.resolver)
            if later:
                # library mode: `device = "cuda"` ... `if device.type == "cuda" and not torch.cuda.is_available():
                # return torch.device("cpu")`: the string is a first choice the function itself replaces on a host
                # without CUDA, so it runs on an NPU host as it stands (transfer_to_npu rewrites the string)
                yield ctx.finding(self.rule("NPU003"), node, "device:cuda",
                                  f"Device string '{text}' is a first choice: {later}, so the function runs on an "
                                  f"NPU host as it stands; {TRANSFER} rewrites it to '{new}'.",
                                  replacement=f"'{new}'", severity="advice", confidence="high")
                return
        if call is not None and _disabled_autocast(target, call):
            # `@autocast('cuda', enabled=False)`: a region that turns CUDA autocast off runs as plain code on an NPU
            # host (no CUDA autocast is on there); only under NPU autocast does it no longer keep the region in fp32
            yield ctx.finding(self.rule("NPU003"), node, "device:cuda",
                              f"Autocast for '{text}' is switched off here: on an NPU the region runs unchanged, but "
                              "it no longer turns an enclosing NPU autocast off.",
                              replacement=f"'{new}', to keep the region in full precision under NPU autocast",
                              severity="advice", confidence="high")
            return
        yield ctx.finding(self.rule("NPU003"), node, "device:cuda",
                          f"Device string '{text}' selects a CUDA device." + (note or
                          f" {TRANSFER} rewrites it to '{new}' where it reaches a wrapped device argument."),
                          replacement=f"'{new}'", severity=severity,
                          confidence="high" if call is not None or _is_device_context(node) else "medium")


_OLD_API_ERRORS = {"AttributeError", "TypeError"}


def _old_torch_fallback(node, ctx) -> str:
    """Words when *node* sits in an ``except AttributeError`` / ``except TypeError`` handler (those only) of a
    ``try`` whose body calls torch APIs that the pinned torch version has (documented for it in the knowledge
    base): ``try: return torch.get_autocast_dtype(device) except (AttributeError, TypeError): ... assert device ==
    "cuda"`` is the fallback for an older torch, not the path taken. "" otherwise."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef,
                                                         nodes.Module, nodes.Lambda)):
        if isinstance(parent, nodes.ExceptHandler) and cur in parent.body:
            t = parent.type
            names = t.elts if isinstance(t, nodes.Tuple) else [t] if t is not None else []
            if not names or not all(isinstance(n, nodes.Name) and n.name in _OLD_API_ERRORS for n in names):
                return ""
            trynode = parent.parent
            if not isinstance(trynode, nodes.Try):
                return ""
            apis = []
            for st in trynode.body:
                for call in nodes_of(st, nodes.Call):
                    q = ctx.resolver.qualname(call.func)
                    if q and q.startswith("torch."):
                        apis.append(q)
            if apis and all(ctx.kb.is_documented(q) for q in apis):
                return (f"it sits in the `except` at line {parent.lineno}, the fallback for a torch without "
                        f"`{apis[0]}`, which torch {ctx.kb.torch_version} has")
            return ""
        cur, parent = parent, parent.parent
    return ""


def _device_type_operand(node, resolver):
    """The string constant of ``torch.device("cuda").type`` (a comparison operand that is only the device type
    string), else None."""
    if not (isinstance(node, nodes.Attribute) and node.attrname == "type" and isinstance(node.expr, nodes.Call)):
        return None
    call = node.expr
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], nodes.Const) \
            or not isinstance(call.args[0].value, str):
        return None
    return call.args[0] if resolver.qualname(call.func) == "torch.device" else None


_REPORT_CALLS = {"str", "repr", "print", "format"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "log", "exception", "write", "format"}


def _reported_only(call, resolver) -> str:
    """Words when the answer of the probe *call* (``torch.cuda.is_available()``) is only written out: an argument of
    ``str()`` / ``print()`` / a logger call, a value of an f-string. It is a bool on any host, and nothing is
    chosen with it. "" otherwise."""
    cur, up = call, call.parent
    if isinstance(up, nodes.FormattedValue):
        return "its answer is only formatted into a string"
    if isinstance(up, nodes.Keyword):
        cur, up = up, up.parent
    if not (isinstance(up, nodes.Call) and cur is not up.func):
        return ""
    f = up.func
    name = f.name if isinstance(f, nodes.Name) else f.attrname if isinstance(f, nodes.Attribute) else ""
    if isinstance(f, nodes.Name) and name in _REPORT_CALLS and resolver.qualname(f) in (None, "builtins." + name, name):
        return f"its answer is only reported (`{name}(...)`)"
    if isinstance(f, nodes.Attribute) and name in _LOG_METHODS:
        return f"its answer is only reported (`.{name}(...)`)"
    return ""


def _stored_probe(call) -> str:
    """Words when the answer of the probe *call* is bound to a flag (``has_cuda = torch.cuda.is_available()``, or
    ``self.has_cuda = ...`` set once in its class) that only ``if`` s whose branches complete test: each takes one
    path or the other on an NPU host, and both run (:func:`_flag_branches_complete`). "" otherwise."""
    holder = call.parent
    if not (isinstance(holder, nodes.Assign) and holder.value is call):
        return ""
    flag = _flag_branches_complete(holder)
    return f"its answer is stored in `{flag}` (line {holder.lineno}), which only branches that complete test" \
        if flag else ""


def _replaced_when_cuda_absent(node, resolver) -> str:
    """Words when the device string *node* is the value of ``NAME = "cuda"`` (or ``NAME = torch.device("cuda")``)
    in a function whose later ``if`` tests CUDA availability (``torch.cuda.is_available()``) and, in the branch it
    takes without CUDA, gives NAME another value or returns: ``if device.type == "cuda" and not
    torch.cuda.is_available(): return torch.device("cpu")``. "" otherwise."""
    cur = node
    if isinstance(cur.parent, nodes.Call) and cur.parent.args and cur.parent.args[0] is cur \
            and resolver.qualname(cur.parent.func) == "torch.device":
        cur = cur.parent
    assign = cur.parent
    if not (isinstance(assign, nodes.Assign) and assign.value is cur and len(assign.targets) == 1
            and isinstance(assign.targets[0], nodes.AssignName)):
        return ""
    var = assign.targets[0].name
    fn = assign.scope()
    if not isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return ""
    after = assign.lineno or 0
    for ifn in fn.nodes_of_class(nodes.If):
        if (ifn.lineno or 0) <= after or ifn.scope() is not fn:
            continue
        probes = [c for c in ifn.test.nodes_of_class(nodes.Call)
                  if resolver.qualname(c.func) == "torch.cuda.is_available"]
        if not probes:
            continue
        negated = any(isinstance(p.parent, nodes.UnaryOp) and p.parent.op == "not" for p in probes)
        branch = ifn.body if negated else ifn.orelse
        if not branch:
            continue
        last = branch[-1]
        if isinstance(last, nodes.Return) and last.value is not None:
            return f"without CUDA the `if` at line {ifn.lineno} returns another device"
        if any(isinstance(t, nodes.AssignName) and t.name == var for st in branch if isinstance(st, nodes.Assign)
               for t in st.targets):
            return f"without CUDA the `if` at line {ifn.lineno} sets `{var}` to another device"
    return ""


_NAME_ARG_CALLS = {"getattr", "hasattr", "setattr", "delattr"}
_CONTAINER_METHODS = {"add", "append", "extend", "remove", "discard", "insert", "index", "count", "pop", "setdefault",
                      "__contains__"}


def _is_key_or_name(node) -> bool:
    """A string used as a mapping key, an attribute name or a container element, not as a device."""
    parent = node.parent
    if isinstance(parent, nodes.Subscript) and parent.slice is node:
        return True
    if isinstance(parent, nodes.Call) and node in parent.args:
        f = parent.func
        if isinstance(f, nodes.Name) and f.name in _NAME_ARG_CALLS:
            return True
        if isinstance(f, nodes.Attribute) and f.attrname in _CONTAINER_METHODS:
            return True
    return False


_DEVICE_TYPES = {"cpu", "cuda", "mps", "xpu", "hpu", "xla", "mlu", "musa", "meta", "sdaa", "ipu", "privateuseone"}


def _device_list(seq) -> bool:
    """A list/tuple of device names that does not already include the NPU.

    ``["to", "cuda", "npu"]`` (method names) or ``("cuda", "npu", "xpu")`` (already NPU-aware) are not
    device uses to change; ``["cuda", "cpu"]`` is."""
    values = []
    for e in seq.elts:
        if not (isinstance(e, nodes.Const) and isinstance(e.value, str)):
            return False
        values.append(e.value.split(":")[0])
    return "npu" not in values and all(v in _DEVICE_TYPES for v in values)


_AUTOCASTS = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast_mode.autocast"}


def _disabled_autocast(target: Optional[str], call) -> bool:
    """``autocast('cuda', enabled=False)`` (a call, a decorator or a ``with`` item): the keyword is the constant False."""
    if target not in _AUTOCASTS:
        return False
    return any(k.arg == "enabled" and isinstance(k.value, nodes.Const) and k.value.value is False
               for k in call.keywords or [])


def _enclosing_call(node):
    """(call, keyword name) when *node* is (part of) an argument of a call."""
    cur = node
    parent = node.parent
    kw = None
    for _ in range(4):
        if parent is None:
            return None, None
        if isinstance(parent, nodes.Keyword):
            kw = parent.arg
        elif isinstance(parent, nodes.Call):
            if cur is parent.func:
                return None, None
            return parent, kw
        elif not isinstance(parent, (nodes.IfExp, nodes.BoolOp, nodes.JoinedStr, nodes.FormattedValue, nodes.BinOp)):
            return None, None
        cur = parent
        parent = parent.parent
    return None, None


def _is_device_context(node) -> bool:
    parent = node.parent
    while isinstance(parent, (nodes.IfExp, nodes.BoolOp, nodes.BinOp)):
        parent = parent.parent
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
        targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
        for t in targets:
            name = getattr(t, "name", None) or getattr(t, "attrname", None) or ""
            if "device" in name or "dev" == name:
                return True
    if isinstance(parent, nodes.Keyword) and parent.arg in DEVICE_KWARGS | {"default"}:
        return True
    return False


def _device_query_tools(kb) -> Tuple[str, ...]:
    """The GPU vendors' device tools a program runs to query its GPUs (data/manifests.yaml ``tools`` entries
    with ``device_query``: nvidia-smi, rocm-smi ...), nvidia-smi first."""
    doc = kb.data_file("manifests.yaml")
    got = _DEVICE_QUERY.get(id(doc))
    if got is None:
        got = _DEVICE_QUERY[id(doc)] = tuple(n for t in (doc.get("tools") or ()) if isinstance(t, dict)
                                             and t.get("device_query") for n in t.get("names") or ())
    return got


_DEVICE_QUERY: dict = {}


def _command_mentions(resolver, node, text: str) -> bool:
    """The command a subprocess call runs names *text* through a variable: ``CMD = 'nvidia-smi --query-gpu=...'``
    then ``check_output(CMD.split())`` / ``check_output(shlex.split(CMD))`` / ``os.popen(CMD)``."""
    if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname == "split" \
            and not node.args:
        node = node.func.expr
    elif isinstance(node, nodes.Call) and _leaf_name(node.func) == "split" and len(node.args) == 1:
        node = node.args[0]
    if not isinstance(node, (nodes.Name, nodes.Attribute)):
        return False
    vals = resolver.strings(node)
    return bool(vals) and any(text in v for v in vals)


def _helper_returns(resolver, node, text: str) -> bool:
    """The command names *text* through a call of a function of the same module that returns it
    (``check_output([_nvidia_smi(), "--query-gpu=name"])`` with ``def _nvidia_smi(): ... return "nvidia-smi"``,
    or a local set to it): a string constant, or a name whose string values mention it."""
    for call in walk(node):
        if not isinstance(call, nodes.Call) or not isinstance(call.func, nodes.Name):
            continue
        try:
            _scope, defs = call.func.lookup(call.func.name)
        except Exception:
            continue
        if len(defs) != 1 or not isinstance(defs[0], nodes.FunctionDef):
            continue
        fn = defs[0]
        for ret in fn.nodes_of_class(nodes.Return):
            if ret.value is None or ret.scope() is not fn:
                continue
            if _mentions(ret.value, text):
                return True
            if isinstance(ret.value, nodes.Name):
                vals = resolver.strings(ret.value)
                if vals and any(text in v for v in vals):
                    return True
    return False


def _leaf_name(func) -> str:
    return func.attrname if isinstance(func, nodes.Attribute) else (func.name if isinstance(func, nodes.Name) else "")


def _mentions(node, text: str) -> bool:
    for n in walk(node):
        if isinstance(n, nodes.Const) and isinstance(n.value, str) and text in n.value:
            return True
    return False


def _swap(line: str) -> str:
    return line.strip().replace("'cuda", "'npu").replace('"cuda', '"npu')


def _swap_in_line(line: str, node) -> str:
    """The line with 'cuda' swapped for 'npu' inside this comparison only (other comparisons on the
    line, such as ``impl == 'cuda'``, keep their meaning). The whole line when the comparison spans lines."""
    start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if start is None or end is None or getattr(node, "end_lineno", node.lineno) != node.lineno:
        return _swap(line)
    b = line.encode("utf-8")
    if end > len(b):
        return _swap(line)
    return (b[:start].decode("utf-8", "replace") + _swap(b[start:end].decode("utf-8", "replace"))
            + b[end:].decode("utf-8", "replace")).strip()


_DEVICE_VALUES = {"npu", "gpu", "hip", "lazy", "vulkan", "ve", "mtia", "opengl", "opencl", "ideep", "fpga", "maia"}
_DEVICE_WORDS = ("device", "dev", "place", "accelerator", "backend_device")


def _is_device_value(v: str) -> bool:
    head = v.split(":")[0].strip().lower()
    return head in _DEVICE_TYPES or head in _DEVICE_VALUES


def _str_values(node) -> Optional[List[str]]:
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return [node.value]
    if type(node) in (nodes.List, nodes.Tuple, nodes.Set):
        out = []
        for e in node.elts:
            if not (isinstance(e, nodes.Const) and isinstance(e.value, str)):
                return None
            out.append(e.value)
        return out
    return None


def name_values(name: str, scope) -> List[str]:
    """Every string the name is given or compared with in its scope: parameter defaults, plain assignments,
    ``name == 's'`` / ``name in ('a', 'b')`` tests (``assert impl in ['ref', 'cuda']``)."""
    vals: List[str] = []
    args = getattr(scope, "args", None)
    if isinstance(args, nodes.Arguments):
        params = list(args.posonlyargs or []) + list(args.args or [])
        for a, d in zip(params[len(params) - len(args.defaults or []):], args.defaults or []):
            if a.name == name:
                vals.extend(_str_values(d) or [])
        for a, d in zip(args.kwonlyargs or [], args.kw_defaults or []):
            if a.name == name and d is not None:
                vals.extend(_str_values(d) or [])
    for n in walk(scope):
        if isinstance(n, nodes.Compare):
            operands = [n.left] + [o for _op, o in n.ops]
            if any(isinstance(o, nodes.Name) and o.name == name for o in operands):
                for o in operands:
                    vals.extend(_str_values(o) or [])
        elif isinstance(n, nodes.Assign) and any(isinstance(t, nodes.AssignName) and t.name == name for t in n.targets):
            vals.extend(_str_values(n.value) or [])
    return vals


def _selects_implementation(node: nodes.Compare, cuda_side) -> bool:
    """A comparison of a string that is not a device value: ``impl in ['ref', 'cuda']`` (a container with a
    non-device name), or ``impl == 'cuda'`` where ``impl`` is a plain name (not called device...) whose other
    values in its scope ('ref', 'triton', ...) are not device names either."""
    vals = _str_values(cuda_side)
    if vals and any(not _is_device_value(v) for v in vals):
        return True
    operands = [node.left] + [o for _op, o in node.ops]
    others = [o for o in operands if o is not cuda_side]
    if len(others) != 1 or not isinstance(others[0], nodes.Name):
        return False
    name = others[0].name
    if any(w in name.lower() for w in _DEVICE_WORDS):
        return False
    try:
        scope = others[0].scope()
    except Exception:
        return False
    values = name_values(name, scope)
    return any(not _is_device_value(v) for v in values) or (
        isinstance(scope, nodes.FunctionDef) and name in _selector_names(node.root())
        and name in [a.name for a in list(scope.args.args or []) + list(scope.args.kwonlyargs or [])])


def _selector_names(root) -> set:
    """Parameter names that some function of the module compares with, or defaults to, a string that is not a
    device ('ref', 'triton' ...): ``impl`` of ``def upfirdn2d(..., impl='cuda'): assert impl in ['ref', 'cuda']``.
    A parameter of the same name elsewhere in the module (``def filter2d(..., impl='cuda')`` forwarding it) is
    the same implementation selector."""
    memo = getattr(root, "_npu_selector_names", None)
    if memo is not None:
        return memo
    names = set()
    for fn in nodes_of(root, nodes.FunctionDef):
        args = fn.args
        params = [a.name for a in list(args.posonlyargs or []) + list(args.args or []) + list(args.kwonlyargs or [])]
        for name in params:
            if any(w in name.lower() for w in _DEVICE_WORDS):
                continue
            vals = name_values(name, fn)
            if any(is_cuda_device_string(v) for v in vals) and any(not _is_device_value(v) for v in vals):
                names.add(name)
    try:
        root._npu_selector_names = names
    except Exception:  # pragma: no cover - astroid nodes accept attributes
        pass
    return names


def _is_impl_default(node: nodes.Const) -> bool:
    """``impl='cuda'``: a parameter default or keyword argument whose name is not device-like and whose other
    values in the function (or in another function of the module with that parameter) are implementation
    names ('ref'), not devices."""
    parent = node.parent
    if isinstance(parent, nodes.Keyword) and parent.arg in _selector_names(node.root()):
        return True
    if isinstance(parent, nodes.Arguments):
        params = list(parent.posonlyargs or []) + list(parent.args or [])
        name = None
        for a, d in zip(params[len(params) - len(parent.defaults or []):], parent.defaults or []):
            if d is node:
                name = a.name
        for a, d in zip(parent.kwonlyargs or [], parent.kw_defaults or []):
            if d is node:
                name = a.name
        if name is None or any(w in name.lower() for w in _DEVICE_WORDS):
            return False
        return name in _selector_names(node.root()) or any(not _is_device_value(v) for v in name_values(name, parent.parent))
    if isinstance(parent, nodes.Keyword) and parent.arg and not any(w in parent.arg.lower() for w in _DEVICE_WORDS):
        call = parent.parent
        if isinstance(call, nodes.Call) and isinstance(call.func, (nodes.Name, nodes.Attribute)):
            fname = call.func.name if isinstance(call.func, nodes.Name) else call.func.attrname
            for fn in nodes_of(node.root(), nodes.FunctionDef):
                if fn.name == fname and any(not _is_device_value(v) for v in name_values(parent.arg, fn)):
                    return True
    return False


_JIT_BUILDS = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}


def _fails(block) -> bool:
    """The block stops the program: it raises, asserts false or exits (a non-empty block that only does that)."""
    if not block:
        return False
    if any(isinstance(st, nodes.Assert) and isinstance(st.test, nodes.Const) and not st.test.value for st in block):
        return True
    return only_raises(block)


def _names_npu(node: nodes.Compare) -> bool:
    """One side of the comparison is (or lists) an NPU device string."""
    for o in [node.left] + [o for _op, o in node.ops]:
        elts = o.elts if type(o) in (nodes.List, nodes.Tuple, nodes.Set) else [o]
        if any(isinstance(e, nodes.Const) and isinstance(e.value, str) and e.value.split(":")[0].lower() == "npu"
               for e in elts):
            return True
    return False


NPU_BRANCH_STOPS = "the branch that runs on an NPU stops the program"   # read by library mode
ASSERT_REJECTS_NPU = "rejects an NPU device"   # read by library mode
EVERY_CALL = "whenever the function runs"   # read by library mode: the stop is not behind another test of the function


def _every_call(stmt) -> str:
    """`` whenever the function runs`` when no other ``if`` / ``while`` / ``except`` of the function holds *stmt*
    (``if device.type != "cuda": raise`` at the top of the function, not under ``if torch.is_autocast_enabled():``)."""
    cur, parent = stmt, stmt.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Module,
                                                         nodes.ClassDef, nodes.Lambda)):
        if isinstance(parent, (nodes.If, nodes.While, nodes.ExceptHandler, nodes.IfExp, nodes.BoolOp)) \
                and not (isinstance(parent, (nodes.If, nodes.While)) and cur is parent.test):
            return ""
        cur, parent = parent, parent.parent
    return f", {EVERY_CALL}"
DEVICE_TABLE = "device-type-table"   # the api of NPU004 on a device-type table with no 'npu' key
_CUDA_FLAG_KINDS = (CUDA_ATOM, CUDA_BUILD_ATOM)


def _dict_literal(node) -> Optional[nodes.Dict]:
    """The dict literal a name (module level), ``self.NAME`` / ``cls.NAME`` (the class body or ``self.NAME = {...}``
    in a method of the class) is bound to, when it is bound once."""
    if isinstance(node, nodes.Dict):
        return node
    found: List = []
    if isinstance(node, nodes.Name):
        scope = node.root()
        for asg in scope.body:
            targets = asg.targets if isinstance(asg, nodes.Assign) else [asg.target] if isinstance(asg, nodes.AnnAssign) else []
            if any(isinstance(t, nodes.AssignName) and t.name == node.name for t in targets):
                found.append(asg.value)
    elif isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name in ("self", "cls"):
        cls = node.frame()
        cls = cls.parent.frame() if isinstance(cls, nodes.FunctionDef) and cls.parent is not None else None
        if not isinstance(cls, nodes.ClassDef):
            return None
        for st in cls.body:
            targets = st.targets if isinstance(st, nodes.Assign) else [st.target] if isinstance(st, nodes.AnnAssign) else []
            if any(isinstance(t, nodes.AssignName) and t.name == node.attrname for t in targets):
                found.append(st.value)
        for fn in cls.body:
            if isinstance(fn, nodes.FunctionDef):
                for at in nodes_of(fn, nodes.AssignAttr):
                    if at.attrname == node.attrname and isinstance(at.expr, nodes.Name) and at.expr.name == "self":
                        asg = at.parent
                        found.append(asg.value if isinstance(asg, (nodes.Assign, nodes.AnnAssign)) else None)
    return found[0] if len(found) == 1 and isinstance(found[0], nodes.Dict) else None


def _catches_key_error(node) -> bool:
    """*node* sits in the body of a ``try`` whose handlers catch KeyError (or LookupError / Exception / all)."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.Try) and cur in parent.body:
            for h in parent.handlers:
                names = [h.type] if h.type is not None and type(h.type) is not nodes.Tuple else \
                    (h.type.elts if h.type is not None else [])
                if h.type is None or any(isinstance(n, nodes.Name) and n.name in ("KeyError", "LookupError", "Exception",
                                                                                   "BaseException") for n in names):
                    return True
        cur, parent = parent, parent.parent
    return False


def device_check_effect(node: nodes.Compare, path: str, library: bool = False):
    """(severity, words) of a device-type comparison on an Ascend host, valued with the conditions model in the
    transfer_to_npu scenario: ``info`` when the test has the value it has on a CUDA host (``'cuda' in device``
    with ``device = 'cuda'``, ``device.type in ('cuda', 'npu')``); ``advice`` when the other branch of its
    ``if`` runs and completes (a memory printout or a FLOPs table skipped); ``manual`` when that branch raises,
    asserts or exits, when the comparison is asserted, or when its effect cannot be valued."""
    try:
        cond = build_condition(node)
    except (RecursionError, ValueError, TypeError, AttributeError):
        cond = None
    if cond is None:
        return "manual", ""
    op = node.ops[0][0] if node.ops else "=="
    on_cuda = op in ("==", "in", "is")
    v = evaluate_condition(cond, TRANSFER_SCENARIO)
    if v is None:
        return "manual", ""
    top = whole_test(node)
    if isinstance(top.parent, nodes.Assert) and top.parent.test is top and not _names_npu(node):
        # `assert device in ["cpu", "cuda"]`: a caller that passes the NPU device stops here
        return "manual", f"the assert ({path}:{top.parent.lineno}) {ASSERT_REJECTS_NPU}{_every_call(top.parent)}"
    if v is on_cuda:
        return "info", f"`{node.as_string()[:80]}` holds on an Ascend host as on a CUDA one (with transfer_to_npu)" \
            if on_cuda else f"`{node.as_string()[:80]}` is false on an Ascend host as on a CUDA one"
    test = whole_test(node)
    holder = test.parent
    if isinstance(holder, nodes.IfExp) and holder.test is test:
        return "advice", f"the other alternative of the expression at {path}:{holder.lineno} is taken"
    if isinstance(holder, nodes.Return) and holder.value is test:
        # a predicate (`return q.device.type == "cuda" and ...`): it answers False on an NPU and completes; the
        # caller that branches on the answer is where a path is skipped
        return "advice", (f"the function returns the test's NPU value ({path}:{holder.lineno}: the device type is "
                          "'npu') and completes; its callers decide which path runs")
    if library and not v and (isinstance(holder, nodes.Keyword) and holder.value is test
                              or isinstance(holder, nodes.Call) and test in holder.args):
        # library mode: `set_random_seed(seed, using_cuda=self.device.type == "cuda")` hands the test's NPU value
        # (False) to the callee, which completes with it; where the callee branches on it is judged there
        return "advice", (f"the call at {path}:{holder.lineno} gets the test's NPU value (the device type is 'npu') "
                          "and completes; the callee decides which path runs")
    if isinstance(holder, nodes.Assign) and holder.value is test and not v and _and_operand(node, test):
        flag = _flag_branches_complete(holder)
        if flag:
            return "advice", (f"`{flag}` ({path}:{holder.lineno}) is false on an NPU (the device type is 'npu'), and "
                              "the tests of it take branches that complete")
    if library and isinstance(holder, nodes.Assign) and holder.value is test:
        # library mode: `non_blocking = x.device.type == "cuda"` only handed to calls (`.to(d, non_blocking=...)`):
        # each call gets the flag's NPU value and completes with it; where a callee branches on it is judged there
        flag = _flag_only_passed(holder)
        if flag:
            return "advice", (f"`{flag}` ({path}:{holder.lineno}) takes the test's NPU value (the device type is "
                              "'npu') and is only handed to calls, which complete with it")
    if not isinstance(holder, nodes.If) or holder.test is not test:
        return "manual", ""
    whole = v if test is node else None
    if whole is None:
        try:
            whole = evaluate_condition(build_condition(test), TRANSFER_SCENARIO)
        except (RecursionError, ValueError, TypeError, AttributeError):
            whole = None
    if whole is None:
        if library and not chain_stops(holder):
            # `if device is not None and device.type != "cuda":`: the comparison has its non-CUDA value on an NPU,
            # so the test's other operands choose the branch, as for a CPU device; every branch completes
            return "advice", (f"the other operands of the test at {path}:{holder.lineno} choose the branch, as for "
                              "a non-CUDA device, and every branch of the `if` completes")
        return "manual", ""
    runs, skipped = (holder.body, holder.orelse) if whole else (holder.orelse, holder.body)
    while not whole and len(runs) == 1 and isinstance(runs[0], nodes.If):
        # `elif x.device.type == 'cpu': ... else: raise`: follow the chain while its tests are valued on an Ascend host
        try:
            nxt = evaluate_condition(build_condition(runs[0].test), TRANSFER_SCENARIO)
        except (RecursionError, ValueError, TypeError, AttributeError):
            nxt = None
        if nxt is None:
            break
        whole = nxt
        runs = runs[0].body if nxt else runs[0].orelse
    if _fails(runs):
        line = runs[-1].lineno if runs else holder.lineno
        return "manual", f"{NPU_BRANCH_STOPS} ({path}:{line}){_every_call(holder)}"
    if runs:
        where = f"the branch at {path}:{runs[0].lineno} runs instead"
    else:
        where = "the branch is skipped"
    what = f" and the CUDA branch at {path}:{skipped[0].lineno} is skipped" if skipped and runs else \
        (f" (the CUDA branch at {path}:{skipped[0].lineno})" if skipped else "")
    return "advice", where + what


def _is_cuda_path_choice(node: nodes.Attribute) -> str:
    """Words for a ``x.is_cuda`` that only picks between two paths that both complete: the test (alone or in
    ``and`` / ``or`` / ``not``) of an ``if`` whose chain of branches neither raises nor exits, of a conditional
    expression, or of a flag bound once (``use_x = ... and x.is_cuda``) whose tests take branches that complete.
    An NPU host takes one path or the other (the CUDA one with transfer_to_npu, the other without), and both run:
    a path choice, not a change to make. "" otherwise (asserted, passed on as a value, returned, a branch that
    stops)."""
    got = path_choice(node)
    if got:
        return got
    test = whole_test(node)
    holder = test.parent
    if isinstance(holder, nodes.Assign) and holder.value is test and test is not node:
        flag = _flag_branches_complete(holder)
        if flag:
            return f"`{flag}` (line {holder.lineno}) is tested only by branches that complete"
    return ""


def _and_operand(node, test) -> bool:
    """*node* is *test* or one of the operands of *test*, an ``and`` (the whole is false when *node* is)."""
    return node is test or (isinstance(test, nodes.BoolOp) and test.op == "and" and node in test.values)


def _flag_branches_complete(assign: nodes.Assign) -> str:
    """The name ``use_x = <...> and t.device.type == "cuda"`` binds, when it is bound once in its function and every
    ``if`` of the function that tests it has branches that complete (neither raises nor exits): an NPU host takes the
    other path of each, which runs. "" otherwise."""
    if len(assign.targets) != 1:
        return ""
    if _is_self_attr(assign.targets[0]):
        return _attr_flag_branches_complete(assign)
    if not isinstance(assign.targets[0], nodes.AssignName):
        return ""
    name = assign.targets[0].name
    scope = assign.scope()
    if not isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)) or len(scope.locals.get(name, ())) != 1:
        return ""
    tested = False
    for ifnode in nodes_of(scope, nodes.If):
        if not any(isinstance(n, nodes.Name) and n.name == name for n in walk(ifnode.test)):
            continue
        if _fails(ifnode.body) or _fails(ifnode.orelse):
            return ""
        tested = True
    return name if tested else ""


def _flag_only_passed(assign: nodes.Assign) -> str:
    """The name ``flag = <test>`` binds, when each read of it in its function is an argument of a call
    (``t.to(device, non_blocking=flag)``, ``f(x, flag)``): never tested, never returned, so whatever it is bound to
    (here or at another assignment) is only handed on. "" otherwise."""
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], nodes.AssignName):
        return ""
    name = assign.targets[0].name
    scope = assign.scope()
    if not isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return ""
    used = False
    for n in nodes_of(scope, nodes.Name):
        if n.name != name:
            continue
        up = n.parent
        if not ((isinstance(up, nodes.Keyword) and up.value is n and isinstance(up.parent, nodes.Call))
                or (isinstance(up, nodes.Call) and n in up.args)):
            return ""
        used = True
    return name if used else ""


def _is_self_attr(node) -> bool:
    return isinstance(node, (nodes.AssignAttr, nodes.Attribute)) and isinstance(node.expr, nodes.Name) \
        and node.expr.name == "self"


def _attr_flag_branches_complete(assign: nodes.Assign) -> str:
    """``self.is_cuda = device.type == "cuda" and ...`` in a method: the flag is an attribute of the instance, set
    once in the class, and every ``if`` of the class's methods that tests ``self.is_cuda`` has branches that complete
    (the tests of :func:`_flag_branches_complete`, followed across the methods). "" otherwise."""
    target = assign.targets[0]
    name = target.attrname
    meth = assign.scope()
    cls = meth.parent.frame() if isinstance(meth, (nodes.FunctionDef, nodes.AsyncFunctionDef)) \
        and meth.parent is not None else None
    if not isinstance(cls, nodes.ClassDef):
        return ""
    sets = [a for a in nodes_of(cls, nodes.AssignAttr) if a.attrname == name and _is_self_attr(a)]
    if sets != [target] or name in cls.locals:
        return ""
    tested = False
    for ifnode in nodes_of(cls, nodes.If):
        if not any(isinstance(n, nodes.Attribute) and n.attrname == name and _is_self_attr(n) for n in walk(ifnode.test)):
            continue
        if _fails(ifnode.body) or _fails(ifnode.orelse):
            return ""
        tested = True
    return f"self.{name}" if tested else ""


def _cuda_only_branch(node: nodes.Compare, resolver) -> Optional[str]:
    """What CUDA-only code the branch this comparison guards uses: a name bound to a JIT-built extension
    (``cpp_extension.load``), a function that builds one, or a custom ``torch.ops`` namespace. None when the
    branch is plain torch code (then testing for the NPU too is the fix)."""
    test = whole_test(node)
    holder = test.parent
    if not isinstance(holder, (nodes.If, nodes.IfExp)) or holder.test is not test:
        return None
    # `impl == 'cuda' and x.device.type == 'cuda'`: the branch is the CUDA implementation the caller picked
    parent = node.parent
    if isinstance(parent, nodes.BoolOp) and parent.op == "and":
        for other in parent.values:
            if other is node or not isinstance(other, nodes.Compare):
                continue
            operands = [other.left] + [o for _op, o in other.ops]
            cuda = next((o for o in operands if isinstance(o, nodes.Const) and isinstance(o.value, str)
                         and is_cuda_device_string(o.value)), None)
            if cuda is not None and _selects_implementation(other, cuda):
                return f"the CUDA implementation selected by `{other.as_string()}`"
    root = node.root()
    plugins = set()
    builders = set()
    for call in nodes_of(root, nodes.Call):
        if resolver.call_target(call) not in _JIT_BUILDS:
            continue
        a = call.parent
        if isinstance(a, nodes.Assign):
            plugins.update(t.name for t in a.targets if isinstance(t, (nodes.AssignName, nodes.Name)))
        fn = call.scope()
        if isinstance(fn, nodes.FunctionDef):
            builders.add(fn.name)
    parts = [test] + (list(holder.body) if isinstance(holder, nodes.If) else [holder.body])
    for part in parts:
        for n in walk(part):
            if isinstance(n, nodes.Name) and n.name in plugins:
                return f"the JIT-built extension `{n.name}`"
            if isinstance(n, nodes.Call) and isinstance(n.func, nodes.Name) and n.func.name in builders:
                return f"`{n.func.name}()`, which builds a CUDA extension"
            if isinstance(n, nodes.Attribute) and isinstance(n.expr, nodes.Attribute) and \
                    isinstance(n.expr.expr, nodes.Name) and n.expr.expr.name == "torch" and n.expr.attrname == "ops" \
                    and n.attrname not in ("aten", "prims", "npu"):
                return f"the custom operators `torch.ops.{n.attrname}`"
    return None
