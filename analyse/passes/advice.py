"""precision-advice / performance-advice: the documented Ascend tuning advice at the call sites it concerns.

Facts: ``data/advice.yaml`` (MindStudio msfmktransplt ``precision_performance_advice.json``).

precision-advice (NPU801): ``torch.baddbmm``, ``torch.reshape``, ``nn.Embedding`` /
``F.embedding``, ``torch.matmul`` / ``Tensor.matmul`` -- reported ONCE per file and
API (first use; the message counts the others) so a model file yields a
handful, not hundreds.

performance-advice:

* NPU802 ``DataLoader`` without ``pin_memory=True``; calls passing ``**kwargs`` are skipped (no
  ``num_workers`` advice: the support list allows only ``num_workers=0`` for NPU data, and a documented
  limitation wins over tuning advice);
* NPU803 ``.to(device)`` / ``.cuda()`` without ``non_blocking=True`` inside a
  training loop (a loop whose body calls ``.backward()``); not on copies to an accelerate
  ``Accelerator``'s ``.device``: ``accelerator.prepare(loader)`` already puts every batch on the
  device (``send_to_device``, asynchronous with ``DataLoaderConfiguration(non_blocking=True)``), so
  ``batch.to(accelerator.device)`` copies nothing and ``non_blocking`` there changes nothing;
* NPU804 ``DistributedDataParallel`` without ``bucket_cap_mb`` (facts: 500);
* NPU805 DDP with gradient accumulation (``if step % n == 0: optimizer.step()``
  in a backward loop) and no ``no_sync()`` anywhere in the project;
* NPU806 ``torch.autograd.set_detect_anomaly(True)`` / ``detect_anomaly`` /
  ``gradcheck`` (not in test files);
* project level, once per report, at line 1 of the main script (the first file
  with ``if __name__ == "__main__"`` that trains, else the first with the guard,
  else the first training file, else the first file), only when it applies:
  NPU807 ``project:compile-mode`` when the project has dynamic-shape ops
  (``nonzero``, ``masked_select``, ``unique``, 1-arg ``torch.where``) and never
  calls ``set_compile_mode`` (advice: ``jit_compile=False``); NPU808
  ``project:task-queue`` when it trains and never mentions
  ``TASK_QUEUE_ENABLE``; NPU809 ``project:hccl-ffts`` when it is distributed and
  never mentions ``HCCL_OP_BASE_FFTS_MODE_ENABLE``.

torch.optim optimizers with fused twins are reported by the affinity pass
(NPU710) only, never here.
"""

from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple, TypedDict

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, ProjectContext, nodes_of, walk


# accelerate's Accelerator (and its subclass for notebooks): prepared DataLoaders place batches on its .device
ACCELERATORS = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")


def _r(code, name, cat, summary, why, example, fix):
    return Rule(code=code, name=name, category=cat, severity="advice", summary=summary, why=why, example=example, fix=fix)


R_PREC = _r("NPU801", "precision-sensitive-api", "precision-advice",
            "An API the Ascend analyser flags for precision (overflow or non-deterministic results).",
            "MindStudio's migration analyser lists baddbmm (overflow), reshape (backward overflow), embedding "
            "(non-deterministic backward) and matmul (non-deterministic results) as worth checking on NPU.",
            "out = torch.baddbmm(bias, q, k)", "out = torch.bmm(q, k) + bias")
R_LOADER = _r("NPU802", "dataloader-pin-memory", "performance-advice",
              "DataLoader without pin_memory=True.",
              "Pinned host memory makes host-to-NPU copies asynchronous. (The msfmktransplt advice to raise num_workers "
              "is not given: the support list says multi-process loading of NPU data is not supported.)",
              "loader = DataLoader(ds, batch_size=32)", "loader = DataLoader(ds, batch_size=32, pin_memory=True)")
R_NONBLOCK = _r("NPU803", "blocking-copy", "performance-advice",
                "A host-to-device copy in the training loop without non_blocking=True.",
                "A blocking copy stalls the host until the transfer ends; with pinned memory, non_blocking=True overlaps it.",
                "for x, y in loader:\n    x = x.to(device)\n    loss = model(x).sum()\n    loss.backward()",
                "x = x.to(device, non_blocking=True)")
R_BUCKET = _r("NPU804", "ddp-bucket-cap", "performance-advice",
              "DistributedDataParallel without bucket_cap_mb.",
              "Larger gradient buckets mean fewer HCCL all-reduce calls; the Ascend advice is bucket_cap_mb=500 (default 25).",
              "model = DDP(model, device_ids=[rank])", "model = DDP(model, device_ids=[rank], bucket_cap_mb=500)")
R_NOSYNC = _r("NPU805", "ddp-no-sync", "performance-advice",
              "Gradient accumulation under DDP without no_sync().",
              "Without no_sync() every micro-step all-reduces gradients; only the step that updates needs it.",
              "loss.backward()\nif (i + 1) % accum == 0:\n    optimizer.step()",
              "ctx = model.no_sync() if (i + 1) % accum else contextlib.nullcontext()\nwith ctx:\n    loss.backward()")
R_ANOMALY = _r("NPU806", "anomaly-detection", "performance-advice",
               "Autograd anomaly detection / gradcheck is enabled.",
               "Anomaly detection checks every backward op (used for overflow checking) and slows training a lot.",
               "torch.autograd.set_detect_anomaly(True)", "# remove it (or set_detect_anomaly(False)) for training runs")
R_COMPILE = _r("NPU807", "compile-mode", "performance-advice",
               "Dynamic shapes and no torch_npu compile-mode setting.",
               "With dynamic shapes, operator JIT compilation recompiles for every new shape; the advice is "
               "torch_npu.npu.set_compile_mode(jit_compile=False) in the training entry file.",
               "idx = torch.nonzero(mask)", "torch_npu.npu.set_compile_mode(jit_compile=False)  # top of the entry script")
R_TASKQ = _r("NPU808", "task-queue", "performance-advice",
             "TASK_QUEUE_ENABLE is never set.",
             "The task queue pipelines operator dispatch; the Ascend analyser advises export TASK_QUEUE_ENABLE=1.",
             "python train.py", "export TASK_QUEUE_ENABLE=1\npython train.py")
R_FFTS = _r("NPU809", "hccl-ffts", "performance-advice",
            "Distributed training without HCCL_OP_BASE_FFTS_MODE_ENABLE.",
            "The Ascend analyser advises export HCCL_OP_BASE_FFTS_MODE_ENABLE=TRUE for HCCL performance.",
            "torchrun --nproc_per_node 8 train.py", "export HCCL_OP_BASE_FFTS_MODE_ENABLE=TRUE\ntorchrun --nproc_per_node 8 train.py")

DYNAMIC = {"torch.nonzero", "torch.Tensor.nonzero", "torch.masked_select", "torch.Tensor.masked_select", "torch.unique",
           "torch.Tensor.unique", "torch.unique_consecutive", "torch.argwhere"}
ANOMALY = {"torch.autograd.set_detect_anomaly", "torch.autograd.detect_anomaly", "torch.autograd.gradcheck",
           "torch.autograd.anomaly_mode.set_detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly",
           "torch.autograd.gradcheck.gradcheck"}
DIST = {"torch.distributed.init_process_group"}


def _kw(call: nodes.Call, name: str):
    for kw in call.keywords or ():
        if kw.arg == name:
            return kw.value
    return None


def _has_star_kwargs(call: nodes.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords or ())


# check_module's node kinds by type (filled as types are met): one type test per node instead of a chain of
# isinstance calls (the loop sees every constant, attribute and call of the module)
_K_OTHER, _K_IF, _K_LOOP, _K_CONST, _K_ATTR, _K_CALL = 0, 1, 2, 3, 4, 5
_NODE_KINDS: dict = {}


def _node_kind(t: type) -> int:
    if issubclass(t, nodes.If):
        return _K_IF
    if issubclass(t, (nodes.For, nodes.While)):
        return _K_LOOP
    if issubclass(t, nodes.Const):
        return _K_CONST
    if issubclass(t, nodes.Attribute):
        return _K_ATTR
    if issubclass(t, nodes.Call):
        return _K_CALL
    return _K_OTHER


class _ModuleState(TypedDict):
    """What PerformanceAdvicePass keeps of one module (its ``ctx.facts``)."""
    trains: List[str]
    main: List[str]
    dynamic: Optional[Tuple[str, int, str]]
    compile_mode: bool
    env: Set[str]
    ddp: List[Tuple[str, int, str]]
    dist: List[Tuple[str, int]]
    accum: bool
    no_sync: bool
    files: List[str]
    first_line: str


def _new_state() -> dict:
    return {"trains": [], "main": [], "dynamic": None, "compile_mode": False, "env": set(), "ddp": [], "dist": [],
            "accum": False, "no_sync": False, "files": []}


def _merge_states(states) -> dict:
    """One project state from the per-module states, in file order."""
    st = _new_state()
    for s in states:
        for k in ("trains", "main", "ddp", "dist", "files"):
            st[k].extend(s[k])
        st["env"] |= set(s["env"])
        for k in ("compile_mode", "accum", "no_sync"):
            st[k] = st[k] or s[k]
        if st["dynamic"] is None:
            st["dynamic"] = s["dynamic"]
    return st


def _backward_loops(tree) -> Set[int]:
    """Ids of the ``for`` / ``while`` loops of *tree* with an ``x.backward(...)`` call under them (anywhere in
    the loop's subtree: what :meth:`PerformanceAdvicePass._calls_backward` asks of one loop): found from the
    module's calls upwards, one climb per ``backward`` call, not a walk of every loop (nested loops walked
    their inner loops once per level)."""
    out: Set[int] = set()
    for c in nodes_of(tree, nodes.Call):
        f = c.func
        if not (isinstance(f, nodes.Attribute) and f.attrname == "backward"):
            continue
        p = c.parent
        while p is not None:
            if isinstance(p, (nodes.For, nodes.While)):
                if id(p) in out:
                    break   # marked by an earlier climb, which went on to the module: so are the loops above it
                out.add(id(p))
            p = p.parent
    return out


class PrecisionAdvicePass(Pass):
    name = "precision-advice"
    facts_shape = List[Tuple[str, Finding]]   # (api, the finding its first use in the module gives)
    # once per report: each module offers its first use of each API (ctx.facts); finish keeps the first file's
    rules = (R_PREC,)
    VALID = (
        "import torch\ny = torch.bmm(a, b)\nz = x.view(2, 3)\n",
    )
    INVALID = (
        "import torch\n"
        "y = torch.baddbmm(c, a, b)  # expect: NPU801\n"
        "z = torch.baddbmm(c, a, b)\n"
        "emb = torch.nn.Embedding(10, 4)  # expect: NPU801\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        table = ctx.kb.data_file("advice.yaml")["precision"]
        r = ctx.resolver
        first: Dict[str, nodes.Call] = {}
        count: Dict[str, int] = {}
        for node in nodes_of(ctx.tree, nodes.Call):
            q = r.call_target(node)
            if q not in table:
                continue
            count[q] = count.get(q, 0) + 1
            first.setdefault(q, node)
        offers = []
        for q, call in first.items():
            item = table[q]
            more = f" ({count[q] - 1} more use(s) in this file.)" if count[q] > 1 else ""
            offers.append((q, ctx.finding(self.rule("NPU801"), call, q, f"`{q}`: {item['advice']}.{more}",
                                          replacement=item["replacement"], confidence="medium", evidence="knowledge")))
        if offers:
            ctx.facts[self.name] = offers
        return ()

    def finish(self, project: ProjectContext) -> Iterable[Finding]:
        done: Set[str] = set()
        out: List[Finding] = []
        for _rel, offers in project.facts.get(self.name, ()):
            for q, finding in offers:
                if q not in done:  # once per report: the first file that uses it
                    done.add(q)
                    out.append(finding)
        return out


class PerformanceAdvicePass(Pass):
    name = "performance-advice"
    facts_shape = _ModuleState
    # each module's facts (training loops, DDP, env vars ...) go to ctx.facts; finish() merges them
    rules = (R_LOADER, R_NONBLOCK, R_BUCKET, R_NOSYNC, R_ANOMALY, R_COMPILE, R_TASKQ, R_FFTS)
    VALID = (
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True, num_workers=4)\n",
        "import torch\ntorch.autograd.set_detect_anomaly(False)\n",
        "import os\nos.environ['TASK_QUEUE_ENABLE'] = '1'\nfor x in loader:\n    x = x.to(device, non_blocking=True)\n"
        "    model(x).sum().backward()\n",
        # accelerate's prepared loaders already put the batch on accelerator.device: no copy to advise on
        "import os\nfrom accelerate import Accelerator\nos.environ['TASK_QUEUE_ENABLE'] = '1'\n"
        "accelerator = Accelerator()\nloader = accelerator.prepare(loader)\nfor batch in loader:\n"
        "    batch.to(accelerator.device)\n    accelerator.backward(model(batch).sum())\n",
    )
    INVALID = (
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)  # expect: NPU802\n",
        "import torch\ntorch.autograd.set_detect_anomaly(True)  # expect: NPU806\n",
        "import torch  # expect: NPU808\n"
        "for x, y in loader:\n"
        "    x = x.to(device)  # expect: NPU803\n"
        "    loss = model(x).sum()\n"
        "    loss.backward()\n",
        "import torch  # expect: NPU808, NPU809\n"
        "import torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(model, device_ids=[rank])  # expect: NPU804, NPU805\n"
        "for i, x in enumerate(loader):\n"
        "    model(x).sum().backward()\n"
        "    if (i + 1) % 4 == 0:\n"
        "        opt.step()\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        facts = ctx.kb.data_file("advice.yaml")
        params = facts["parameters"]
        st = _new_state()
        st["files"].append(ctx.path)
        st["first_line"] = ctx.source.line(1)
        ctx.facts[self.name] = st
        r = ctx.resolver
        is_test = "test" in ctx.path.rsplit("/", 1)[-1] or "/tests/" in "/" + ctx.path
        training_loops = []
        backward_loops = _backward_loops(ctx.tree)
        kinds = _NODE_KINDS
        for node in nodes_of(ctx.tree, nodes.If, nodes.For, nodes.While, nodes.Const, nodes.Attribute, nodes.Call):
            t = type(node)
            kind = kinds.get(t)
            if kind is None:
                kind = kinds[t] = _node_kind(t)
            if kind == _K_IF:
                if self._is_main_guard(node):
                    st["main"].append(ctx.path)
                continue
            if kind == _K_LOOP:
                if id(node) in backward_loops:
                    training_loops.append(node)
                    if self._accumulates(node):
                        st["accum"] = True
                continue
            if kind == _K_CONST:
                if isinstance(node.value, str):
                    for var in ("TASK_QUEUE_ENABLE", "HCCL_OP_BASE_FFTS_MODE_ENABLE"):
                        if var in node.value:
                            st["env"].add(var)
                continue
            if kind == _K_ATTR:
                if node.attrname == "no_sync":
                    st["no_sync"] = True
                continue
            if kind != _K_CALL:
                continue
            q = r.call_target(node)
            if q is None:
                continue
            if q in params["dataloader"]["apis"] and not _has_star_kwargs(node):
                yield from self._loader(ctx, node, params["dataloader"])
            elif q in params["ddp"]["apis"]:
                st["dist"].append((ctx.path, node.lineno))
                st["ddp"].append((ctx.path, node.lineno, ctx.snippet(node.lineno)))
                if _kw(node, "bucket_cap_mb") is None and len(node.args) < 8 and not _has_star_kwargs(node):
                    v = params["ddp"]["bucket_cap_mb"]["expected"]
                    yield ctx.finding(self.rule("NPU804"), node, q,
                                      f"DistributedDataParallel uses the default bucket_cap_mb "
                                      f"({params['ddp']['bucket_cap_mb']['default']} MB); Ascend advice: "
                                      f"{params['ddp']['bucket_cap_mb']['advice']}.",
                                      replacement=f"bucket_cap_mb={v}", evidence="knowledge")
            elif q in ANOMALY:
                if q.endswith("set_detect_anomaly"):
                    arg = node.args[0] if node.args else _kw(node, "mode")
                    if not (isinstance(arg, nodes.Const) and arg.value is True):
                        continue
                if q.endswith("gradcheck") and is_test:
                    continue
                yield ctx.finding(self.rule("NPU806"), node, q,
                                  f"`{q}`: {facts['anomaly'][q.replace('.anomaly_mode', '').replace('gradcheck.gradcheck', 'gradcheck')]}.",
                                  replacement="remove it for training runs (keep it only while debugging)", evidence="knowledge")
            elif q in DIST:
                st["dist"].append((ctx.path, node.lineno))
            elif q == "torch_npu.npu.set_compile_mode" or q.endswith(".set_compile_mode"):
                st["compile_mode"] = True
            elif q in DYNAMIC or (q == "torch.where" and len(node.args) == 1 and not node.keywords):
                if st["dynamic"] is None:
                    st["dynamic"] = (ctx.path, node.lineno, q)
        if training_loops:
            st["trains"].append(ctx.path)
        for loop in training_loops:
            yield from self._copies(ctx, loop, params["to"]["non_blocking"])

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _is_main_guard(node: nodes.If) -> bool:
        t = node.test
        return isinstance(t, nodes.Compare) and "__name__" in t.as_string() and "__main__" in t.as_string()

    @staticmethod
    def _calls_backward(loop) -> bool:   # one loop's answer; check_module reads _backward_loops' set instead
        return any(isinstance(n, nodes.Call) and isinstance(n.func, nodes.Attribute) and n.func.attrname == "backward"
                   for n in walk(loop))

    @staticmethod
    def _accumulates(loop) -> bool:
        for n in walk(loop):
            if isinstance(n, nodes.If) and any(isinstance(b, nodes.BinOp) and b.op == "%" for b in walk(n.test)):
                if any(isinstance(c, nodes.Call) and isinstance(c.func, nodes.Attribute) and c.func.attrname == "step"
                       for st in n.body for c in walk(st)):
                    return True
        return False

    def _loader(self, ctx, call: nodes.Call, p) -> Iterator[Finding]:
        problems = []
        fixes = []
        pin = _kw(call, "pin_memory")
        if len(call.args) > 8:
            pin = call.args[8]
        if pin is None or (isinstance(pin, nodes.Const) and pin.value is False):
            problems.append(p["pin_memory"]["advice"])
            fixes.append("pin_memory=True")
        nw = _kw(call, "num_workers")
        if len(call.args) > 6:
            nw = call.args[6]
        # no num_workers advice unless the knowledge has one: the support list limits DataLoader to
        # num_workers=0 for NPU data, and a documented limitation wins over tuning advice (#23)
        if "num_workers" in p and (nw is None or (isinstance(nw, nodes.Const) and nw.value == 0)):
            problems.append(p["num_workers"]["advice"])
            fixes.append("num_workers=<cpu cores per device, e.g. 8>")
        if problems:
            yield ctx.finding(self.rule("NPU802"), call, "torch.utils.data.DataLoader",
                              "DataLoader: " + "; ".join(problems) + ".", replacement=", ".join(fixes), evidence="knowledge")

    def _copies(self, ctx, loop, p) -> Iterator[Finding]:
        r = ctx.resolver
        for n in walk(loop):
            if not (isinstance(n, nodes.Call) and isinstance(n.func, nodes.Attribute)):
                continue
            name = n.func.attrname
            if name not in ("to", "cuda", "npu") or _kw(n, "non_blocking") is not None or _has_star_kwargs(n):
                continue
            if r.is_module_type(r.type_of(n.func.expr)):
                continue
            if name == "to":
                if not n.args and _kw(n, "device") is None:
                    continue
                dev = n.args[0] if n.args else _kw(n, "device")
                if not self._looks_like_device(r, dev) or len(n.args) > 2 or self._accelerator_device(r, dev):
                    continue
            elif len(n.args) > 1:
                continue
            # report each copy once even when loops nest
            key = ("nb", n.lineno, n.col_offset)
            seen = ctx.cache.setdefault("performance-advice:nb", set())
            if key in seen:
                continue
            seen.add(key)
            text = n.as_string()
            repl = text[:-1] + (", non_blocking=True)" if (n.args or n.keywords) else "non_blocking=True)")
            yield ctx.finding(self.rule("NPU803"), n, f"torch.Tensor.{name}",
                              f"`.{name}(...)` in the training loop copies without non_blocking=True; {p['advice']} "
                              "(with pin_memory=True in the DataLoader).",
                              replacement=repl if len(repl) < 160 else "non_blocking=True", confidence="medium")

    @staticmethod
    def _accelerator_device(r, node) -> bool:
        """``<accelerate.Accelerator>.device``: where accelerate's prepared DataLoaders already put the batches."""
        if not (isinstance(node, nodes.Attribute) and node.attrname == "device"):
            return False
        expr = node.expr
        if (r.type_of(expr) or "") in ACCELERATORS:
            return True
        if not isinstance(expr, nodes.Name):
            return False
        try:
            _scope, assigns = expr.lookup(expr.name)
        except Exception:  # astroid raises a few kinds on odd scopes
            return False
        values = [a.parent.value for a in assigns
                  if isinstance(a, nodes.AssignName) and isinstance(a.parent, nodes.Assign)]
        return bool(values) and len(values) == len(assigns) and all(
            isinstance(v, nodes.Call) and r.call_target(v) in ACCELERATORS for v in values)

    @staticmethod
    def _looks_like_device(r, node) -> bool:
        if isinstance(node, nodes.Const):
            return isinstance(node.value, str) and (node.value.startswith(("cuda", "npu")) or node.value == "cpu" and False)
        if isinstance(node, nodes.Call):
            return r.qualname(node.func) in ("torch.device",)
        text = node.as_string().lower()
        if "dtype" in text:
            return False
        return any(w in text for w in ("device", "rank", "gpu", "cuda", "npu")) or text in ("dev",)

    # ------------------------------------------------------------------ project level
    def finish(self, project: ProjectContext) -> Iterable[Finding]:
        states = [s for _rel, s in project.facts.get(self.name, ())]
        st = _merge_states(states)
        if not st["files"]:
            return []
        first_lines = {s["files"][0]: s.get("first_line", "") for s in states}
        out: List[Finding] = []
        # NPU805 at the DDP site
        if st["ddp"] and st["accum"] and not st["no_sync"]:
            path, line, snip = st["ddp"][0]
            out.append(Finding(code="NPU805", category="performance-advice", severity="advice", path=path, line=line,
                               api="torch.nn.parallel.DistributedDataParallel.no_sync",
                               message="Gradients are accumulated over several backward passes under DistributedDataParallel "
                                       "but no_sync() is never used, so every micro-step all-reduces.",
                               replacement="with model.no_sync():  # every micro-step except the one that calls optimizer.step()",
                               confidence="medium", evidence="inferred", snippet=snip))
        main = self._main(st)
        snippet = first_lines.get(main, "")

        def proj(rule: Rule, api: str, msg: str, repl: str) -> Finding:
            return Finding(code=rule.code, category=rule.category, severity="advice", path=main, line=1, api=api,
                           message=msg, replacement=repl, confidence="medium", evidence="knowledge", snippet=snippet)

        cfg = project.kb.data_file("advice.yaml")["configuration"]
        if st["dynamic"] and not st["compile_mode"]:
            path, line, q = st["dynamic"]
            out.append(proj(R_COMPILE, "project:compile-mode",
                            f"The project has dynamic-shape operations (first: `{q}` at {path}:{line}). {cfg['compile_mode']['advice']}.",
                            "import torch_npu\ntorch_npu.npu.set_compile_mode(jit_compile=False)"))
        if st["trains"] and "TASK_QUEUE_ENABLE" not in st["env"]:
            out.append(proj(R_TASKQ, "project:task-queue",
                            f"The project trains (backward loop in {st['trains'][0]}) and never sets TASK_QUEUE_ENABLE; "
                            f"{cfg['TASK_QUEUE_ENABLE']['advice']}.",
                            f"export TASK_QUEUE_ENABLE={cfg['TASK_QUEUE_ENABLE']['value']}"))
        if st["dist"] and "HCCL_OP_BASE_FFTS_MODE_ENABLE" not in st["env"]:
            path, line = st["dist"][0]
            out.append(proj(R_FFTS, "project:hccl-ffts",
                            f"The project is distributed ({path}:{line}) and never sets HCCL_OP_BASE_FFTS_MODE_ENABLE; "
                            f"{cfg['HCCL_OP_BASE_FFTS_MODE_ENABLE']['advice']}.",
                            f"export HCCL_OP_BASE_FFTS_MODE_ENABLE={cfg['HCCL_OP_BASE_FFTS_MODE_ENABLE']['value']}"))
        return out

    @staticmethod
    def _main(st) -> str:
        for p in st["main"]:
            if p in st["trains"]:
                return p
        if st["main"]:
            return st["main"][0]
        if st["trains"]:
            return st["trains"][0]
        return st["files"][0]
