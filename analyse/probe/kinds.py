"""Runnable samples for the probe kinds beyond functions and Tensor methods (worker side, imports torch).

A :class:`Case` is one sample of one API: ``prepare(device, dtype)`` builds
everything the sample needs (a module, its inputs, a small model and its
optimizer, a process group...) with a fixed seed and returns a :class:`Prepared`
whose ``call()`` does the work being probed (forward + backward, a few
``step()``s, a collective) and whose ``collect(out)`` returns the tensors to
compare with the CPU reference. The worker prepares the same case on the CPU
(the probed dtype, and float64 where it applies) and on the device and
compares what ``collect`` returns.

Cases come from the catalogue (``data/probe_catalogue.yaml``, see
:mod:`analyse.probe.catalogue`), from PyTorch's ``module_db`` for modules the
catalogue does not list, or from small generic constructor guesses.
"""

from __future__ import annotations

import copy
import itertools
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch

from analyse.probe.catalogue import FLOAT_DTYPES


class NotProbeable(Exception):
    """The sample cannot be built for this device or dtype (the record becomes no-samples with this reason)."""


@dataclass
class Prepared:
    call: Callable[[], Any]
    collect: Callable[[Any], Any]


@dataclass
class Case:
    kind: str
    prepare: Callable[[torch.device, torch.dtype], Prepared]
    arguments: Optional[Dict[str, Any]] = None
    random: bool = False
    host_only: Optional[str] = None
    origin: str = "catalogue"
    variant: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)


class Context:
    """Per-worker state the kinds share: the probed device type, a private temp folder, the process group."""

    def __init__(self, device: str, tmpdir: str):
        self.device = device
        self.device_type = device.partition(":")[0]
        self.tmpdir = tmpdir
        self._stores = 0

    # -- collectives -------------------------------------------------------------------
    def backend(self) -> str:
        if self.device_type == "cpu":
            return "gloo"
        if self.device_type == "cuda":
            return "cpu:gloo,cuda:nccl"
        if self.device_type == "npu":
            return "cpu:gloo,npu:hccl"
        raise NotProbeable(f"a collective needs a communication backend; the {self.device_type} device has none")

    def init_group(self) -> None:
        """A single-process group (rank 0, world size 1) over a FileStore in the worker's temp folder:
        no network address is ever used."""
        import torch.distributed as dist

        if not dist.is_available():
            raise NotProbeable("torch was built without torch.distributed")
        backend = self.backend()
        if dist.is_initialized():
            dist.destroy_process_group()
        self._stores += 1
        store = dist.FileStore(os.path.join(self.tmpdir, f"pg-store-{self._stores}"), 1)
        dist.init_process_group(backend=backend, store=store, rank=0, world_size=1)

    def ensure_group(self) -> None:
        import torch.distributed as dist

        self.backend()
        if not (dist.is_available() and dist.is_initialized()):
            self.init_group()

    def group_arguments(self) -> Dict[str, Any]:
        try:
            backend = self.backend()
        except NotProbeable:
            backend = None
        return {"backend": backend, "world_size": 1, "rank": 0, "store": "FileStore"}


# --------------------------------------------------------------------------- inputs

def _gen_tensor(shape, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not (dtype.is_floating_point or dtype.is_complex):
        lo, hi = (0, 10) if dtype == torch.uint8 else (-9, 10)
        return torch.randint(lo, hi, tuple(shape), generator=g, dtype=torch.int64).to(dtype)
    if dtype.is_complex:
        return torch.randn(tuple(shape), generator=g, dtype=torch.complex128).to(dtype)
    return torch.randn(tuple(shape), generator=g, dtype=torch.float64).to(dtype)


def make_inputs(specs: List[Any], dtype: torch.dtype, device, grad: bool = True) -> List[torch.Tensor]:
    """Catalogue input specs -> tensors on ``device``; plain shapes are float inputs of ``dtype`` that
    require grad (for the backward pass), dict specs are integer or 0/1 targets without grad."""
    out = []
    for i, spec in enumerate(specs):
        if isinstance(spec, list):
            t = _gen_tensor(spec, dtype, 100 + i).to(device)
            if grad and (dtype.is_floating_point or dtype.is_complex):
                t.requires_grad_(True)
        elif spec["dtype"] == "bernoulli":
            t = (_gen_tensor(spec["shape"], torch.float64, 100 + i) > 0).to(dtype).to(device)
        else:
            g = torch.Generator().manual_seed(100 + i)
            high = int(spec.get("high", 2))
            t = torch.randint(0, high, tuple(spec["shape"]), generator=g, dtype=torch.int64)
            t = (t.bool() if spec["dtype"] == "bool" else t.to(getattr(torch, spec["dtype"]))).to(device)
        out.append(t)
    return out


def _float_leaves(out) -> List[torch.Tensor]:
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(out)
    return [x for x in leaves if isinstance(x, torch.Tensor) and x.requires_grad
            and (x.dtype.is_floating_point or x.dtype.is_complex)]


def _backward(out) -> None:
    leaves = _float_leaves(out)
    if not leaves:
        return
    loss = sum((x.real if x.dtype.is_complex else x).float().sum() for x in leaves)
    loss.backward()


def _detach(x):
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, x)


# --------------------------------------------------------------------------- modules

def module_case(cls, args, kwargs, inputs_fn: Callable[[torch.dtype, Any], List[Any]], *, random: bool = False,
                arguments: Optional[Dict[str, Any]] = None, origin: str = "catalogue", variant=None,
                train: bool = True, wrap: Optional[str] = None, ctx: Optional[Context] = None) -> Case:
    """Construct (seeded) with ``args``/``kwargs``, run forward and backward; compare outputs, parameter
    gradients and input gradients."""

    def prepare(dev, dtype) -> Prepared:
        torch.manual_seed(0)
        mod = cls(*copy.deepcopy(list(args)), **copy.deepcopy(dict(kwargs)))
        if dtype.is_floating_point or dtype.is_complex:
            mod = mod.to(dtype)
        mod = mod.to(dev)
        mod.train(train)
        if wrap == "ddp":
            assert ctx is not None
            ctx.ensure_group()
            mod = torch.nn.parallel.DistributedDataParallel(mod)
        elif wrap == "data_parallel":
            mod = torch.nn.DataParallel(mod)
        inputs = inputs_fn(dtype, dev)
        params = [p for p in mod.parameters()]

        def call():
            out = mod(*inputs)
            _backward(out)
            return out

        def collect(out):
            return {"out": _detach(out), "grads": [p.grad for p in params],
                    "input_grads": [x.grad for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]}

        return Prepared(call, collect)

    return Case("module", prepare, arguments=arguments, random=random, origin=origin, variant=variant)


def _wrapped_linear(*_a, **_k):
    return torch.nn.Linear(4, 3)


_GENERIC_CTORS = ((), (4,), (4, 4), (4, 4, 3))
_GENERIC_SHAPES = ((2, 4), (2, 4, 8), (1, 4, 8, 8), (1, 4, 4, 4, 4))


def module_db_cases(cls, moduleinfo, dtype: torch.dtype) -> Iterator[Case]:
    if moduleinfo is not None:
        try:
            items = list(moduleinfo.module_inputs_func(moduleinfo, device="cpu", dtype=dtype, requires_grad=True,
                                                      training=True))
        except Exception:
            items = []
        for mi in items:
            fwd = getattr(mi, "forward_input", None)
            if fwd is None or fwd.kwargs:
                continue
            c = mi.constructor_input
            sample_args = [x.detach() if isinstance(x, torch.Tensor) else x for x in fwd.args]

            def inputs_fn(dt, dev, sample_args=sample_args):
                out = []
                for x in sample_args:
                    if isinstance(x, torch.Tensor):
                        t = x.detach().clone()
                        if t.is_floating_point() or t.is_complex():
                            t = t.to(dt)
                        t = t.to(dev)
                        if t.is_floating_point():
                            t.requires_grad_(True)
                        out.append(t)
                    else:
                        out.append(copy.deepcopy(x))
                return out

            yield module_case(cls, tuple(c.args), dict(c.kwargs), inputs_fn, origin="module_db",
                              random="Dropout" in cls.__name__ or "RReLU" in cls.__name__,
                              arguments=_plain_arguments(c.args, c.kwargs))
    for ctor, shape in itertools.product(_GENERIC_CTORS, _GENERIC_SHAPES):
        yield module_case(cls, ctor, {}, lambda dt, dev, shape=shape: make_inputs([list(shape)], dt, dev),
                          origin="generic", random="Dropout" in cls.__name__,
                          arguments={"args": list(ctor)} if ctor else None)


def _plain_arguments(args, kwargs) -> Optional[Dict[str, Any]]:
    out: Dict[str, Any] = {}
    if args:
        plain = [a for a in args if isinstance(a, (int, float, bool, str, type(None)))]
        if len(plain) == len(args):
            out["args"] = list(args)
    for k, v in (kwargs or {}).items():
        if isinstance(v, (int, float, bool, str, type(None))):
            out[k] = v
    return out or None


# --------------------------------------------------------------------------- optimizers

def optimizer_case(cls, kwargs: Dict[str, Any], *, arguments=None, variant=None, steps: int = 3) -> Case:
    """A few step()s on a small seeded model; compare parameters and the optimizer's tensor state."""

    def prepare(dev, dtype) -> Prepared:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)).to(dtype).to(dev)
        x = _gen_tensor((6, 4), dtype, 1).to(dev)
        y = _gen_tensor((6, 2), dtype, 2).to(dev)
        opt = cls(model.parameters(), **copy.deepcopy(kwargs))

        def closure():
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            return loss

        def call():
            for _ in range(steps):
                opt.step(closure)

        def collect(_):
            state = []
            for p in model.parameters():
                st = opt.state.get(p, {})
                for k in sorted(st):
                    v = st[k]
                    if isinstance(v, torch.Tensor) and k != "step":
                        state.append(v.detach())
            return {"params": [p.detach() for p in model.parameters()], "state": state}

        return Prepared(call, collect)

    return Case("optimizer", prepare, arguments=arguments, variant=variant)


# --------------------------------------------------------------------------- factories

def _numpy_array(dtype: torch.dtype):
    import numpy as np

    names = {torch.float32: "float32", torch.float16: "float16", torch.float64: "float64", torch.int32: "int32",
             torch.int64: "int64", torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
             torch.bool: "bool", torch.complex64: "complex64", torch.complex128: "complex128"}
    if dtype not in names:
        raise NotProbeable(f"numpy has no dtype for {dtype}")
    return _gen_tensor((3, 4), dtype if dtype in (torch.bool,) else dtype, 7).numpy().astype(np.dtype(names[dtype]))


def factory_case(fn, recipe: str) -> Case:
    def prepare(dev, dtype) -> Prepared:
        if recipe == "from_numpy":
            arr = _numpy_array(dtype)
            return Prepared(lambda: fn(arr).to(dev), lambda out: out)
        if recipe == "as_tensor":
            arr = _numpy_array(dtype)
            return Prepared(lambda: fn(arr, device=dev), lambda out: out)
        if recipe == "tensor":
            values = _gen_tensor((3, 4), dtype, 7).tolist()
            return Prepared(lambda: fn(values, dtype=dtype, device=dev), lambda out: out)
        # parameter: wrap a device tensor, check it is a leaf that gets a gradient
        base = _gen_tensor((3, 4), dtype, 7)

        def call():
            p = fn(base.clone().to(dev))
            if not isinstance(p, torch.nn.Parameter) or not p.requires_grad:
                raise AssertionError(f"{fn.__name__} did not return a Parameter that requires grad")
            if dtype.is_floating_point or dtype.is_complex:
                (p * 2).real.sum().backward() if dtype.is_complex else (p * 2).sum().backward()
            return p

        return Prepared(call, lambda p: {"value": p.detach(), "grad": p.grad})

    args = {"followed_by": ".to(device)"} if recipe == "from_numpy" else (
        {"device": "probed device"} if recipe in ("as_tensor", "tensor") else None)
    return Case("factory", prepare, arguments=args)


# --------------------------------------------------------------------------- collectives

def collective_case(fn, recipe: str, ctx: Context) -> Case:
    import torch.distributed as dist

    def prepare(dev, dtype) -> Prepared:
        ctx.ensure_group()
        base = _gen_tensor((4, 3), dtype, 11)
        if recipe == "init_process_group":
            def call():
                ctx.init_group()  # destroys the current group and creates a fresh one
                t = base.clone().to(dev)
                dist.all_reduce(t)
                return t
            return Prepared(call, lambda t: t)
        if recipe == "all_reduce":
            def call():
                t = base.clone().to(dev)
                fn(t)
                return t
            return Prepared(call, lambda t: t)
        if recipe == "broadcast":
            def call():
                t = base.clone().to(dev)
                fn(t, src=0)
                return t
            return Prepared(call, lambda t: t)
        if recipe == "reduce":
            def call():
                t = base.clone().to(dev)
                fn(t, dst=0)
                return t
            return Prepared(call, lambda t: t)
        if recipe == "all_gather":
            def call():
                t = base.clone().to(dev)
                outs = [torch.empty_like(t)]
                fn(outs, t)
                return outs
            return Prepared(call, lambda outs: outs)
        if recipe == "all_gather_into_tensor":
            def call():
                t = base.clone().to(dev)
                out = torch.empty_like(t)
                fn(out, t)
                return out
            return Prepared(call, lambda out: out)
        if recipe == "barrier":
            def call():
                fn()
                return base.clone().to(dev).sum()
            return Prepared(call, lambda out: out)
        if recipe == "destroy_process_group":
            def call():
                fn()
                return dist.is_initialized()
            return Prepared(call, lambda out: out)
        # query: get_rank, get_world_size, is_initialized
        return Prepared(lambda: fn(), lambda out: out)

    return Case("collective", prepare, arguments=ctx.group_arguments())


# --------------------------------------------------------------------------- host-only and TorchScript

def _dataset(n: int = 10):
    from torch.utils.data import TensorDataset

    return TensorDataset(torch.arange(n, dtype=torch.float32).reshape(n, 1), torch.arange(n))


def host_case(fn, recipe: str, entry: Dict[str, Any]) -> Case:
    """Runs the API on the host once, checks what it returns; the record's status is host-only."""
    args = list(entry.get("args") or [])
    kwargs = dict(entry.get("kwargs") or {})

    def prepare(dev, dtype) -> Prepared:
        if recipe == "sampler":
            def call():
                idx = list(fn(_dataset(), **kwargs))
                if sorted(idx) != list(range(10)):
                    raise AssertionError(f"sampler of a 10-item dataset yielded {idx}")
                return torch.tensor(sorted(idx))
            return Prepared(call, lambda out: out)
        if recipe == "loader":
            def call():
                batches = list(fn(_dataset(), **kwargs))
                return torch.cat([b[1] for b in batches])
            return Prepared(call, lambda out: out)
        if recipe == "dataset":
            def call():
                ds = fn(torch.arange(6).reshape(3, 2), torch.arange(3))
                return torch.stack([ds[i][0] for i in range(len(ds))])
            return Prepared(call, lambda out: out)
        if recipe == "scheduler":
            def call():
                param = torch.nn.Parameter(torch.zeros(2))
                opt = torch.optim.SGD([param], lr=0.1)
                kw = dict(kwargs)
                if kw.get("lr_lambda") == "linear":
                    kw["lr_lambda"] = lambda epoch: 1.0 / (epoch + 1)
                sched = fn(opt, **kw)
                lrs = []
                for _ in range(3):
                    opt.step()
                    sched.step()
                    lrs.append(opt.param_groups[0]["lr"])
                return torch.tensor(lrs, dtype=torch.float64)
            return Prepared(call, lambda out: out)
        if recipe == "random_split":
            def call():
                parts = fn(range(10), [7, 3], generator=torch.Generator().manual_seed(0))
                return torch.tensor([len(p) for p in parts])
            return Prepared(call, lambda out: out)
        if recipe == "collate":
            return Prepared(lambda: fn([torch.ones(2), torch.zeros(2)]), lambda out: out)
        if recipe == "optimize_for_mobile":
            def call():
                m = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval())
                x = _gen_tensor((2, 4), torch.float32, 3)
                return fn(m)(x)
            return Prepared(call, lambda out: out)
        # flag: a process-wide setting called with its default value (the worker's state is unchanged)
        return Prepared(lambda: fn(*args, **kwargs), lambda out: out if isinstance(out, (bool, int, float)) else None)

    return Case("class" if recipe in ("sampler", "loader", "dataset", "scheduler") else "function", prepare,
                arguments=_plain_arguments(args, kwargs), host_only=entry.get("host_only"))


def jit_case(fn, recipe: str, ctx: Context) -> Case:
    """TorchScript on the device: trace / script / save+load a small module and run it there."""

    def prepare(dev, dtype) -> Prepared:
        torch.manual_seed(0)
        mod = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()).to(dtype).to(dev).eval()
        x = _gen_tensor((2, 4), dtype, 5).to(dev)
        if recipe == "jit_trace":
            return Prepared(lambda: fn(mod, x)(x), _detach)
        if recipe == "jit_script":
            return Prepared(lambda: fn(mod)(x), _detach)
        path = os.path.join(ctx.tmpdir, "probe-jit.pt")

        def call():
            torch.jit.save(torch.jit.script(mod), path)
            loaded = torch.jit.load(path, map_location=dev)
            return loaded(x)

        return Prepared(call, _detach)

    return Case("function", prepare, arguments={"module": "Sequential(Linear(4, 3), Tanh())"})


# --------------------------------------------------------------------------- from the catalogue

def catalogue_cases(fn, entry: Dict[str, Any], ctx: Context, variant: Optional[int]) -> List[Case]:
    """The case for the entry itself (variant None) or for one of its variants."""
    kind, recipe = entry["kind"], entry["recipe"]
    v = entry["variants"][variant] if variant is not None else None
    arguments = dict(v["arguments"]) if v else None
    random = bool(entry.get("random") or (v and v.get("random")))
    if entry.get("host_only"):
        return [host_case(fn, recipe, entry)]
    if kind == "module":
        kwargs = dict(entry["kwargs"], **(v["arguments"] if v else {}))
        specs = (v.get("inputs") if v and v.get("inputs") is not None else None) or entry["inputs"]
        if v and v.get("inputs") is not None:
            arguments = dict(arguments or {}, input_shapes=[s if isinstance(s, list) else s["shape"]
                                                           for s in v["inputs"]])
        if recipe in ("ddp", "data_parallel"):
            if recipe == "ddp":
                arguments = dict(arguments or {}, module="Linear(4, 3)", **ctx.group_arguments())
            else:
                arguments = dict(arguments or {}, module="Linear(4, 3)")
            return [module_case(_wrapped_linear, (), {}, lambda dt, dev: make_inputs(specs, dt, dev), random=random,
                                arguments=arguments, variant=variant, wrap=recipe, ctx=ctx)]
        args = entry["args"]
        shown = dict({"args": list(args)} if args else {}, **kwargs)
        if arguments:
            shown.update(arguments)
        return [module_case(fn, args, kwargs, lambda dt, dev: make_inputs(specs, dt, dev), random=random,
                            arguments=shown or None, variant=variant)]
    if kind == "optimizer":
        kwargs = dict(entry["kwargs"], **(v["arguments"] if v else {}))
        return [optimizer_case(fn, kwargs, arguments=kwargs, variant=variant)]
    if kind == "factory":
        return [factory_case(fn, recipe)]
    if kind == "collective":
        return [collective_case(fn, recipe, ctx)]
    if recipe.startswith("jit_"):
        return [jit_case(fn, recipe, ctx)]
    raise NotProbeable(f"no recipe {recipe!r} for {kind}")


def generic_entry(fn) -> Optional[Dict[str, Any]]:
    """An entry for a class the catalogue does not list: optimizers get lr=0.01."""
    if isinstance(fn, type) and issubclass(fn, torch.optim.Optimizer):
        return {"api": fn.__name__, "kind": "optimizer", "recipe": "optimizer", "args": [], "kwargs": {"lr": 0.01},
                "inputs": [], "dtypes": None, "random": False, "host_only": None, "variants": []}
    return None


def default_dtypes(entry: Dict[str, Any]) -> List[str]:
    if entry.get("dtypes"):
        return list(entry["dtypes"])
    if entry.get("host_only"):
        return ["float32"]
    return list(FLOAT_DTYPES)
