"""Resolving operator names inside torch and producing sample inputs (worker side).

This module imports torch; only the worker (a child process) imports it.

Resolution is attribute lookup only, starting at the ``torch`` module (or
``torch.ops.aten`` for ``aten::`` names): every intermediate object must be a
module whose ``__name__`` is under ``torch``, ``torch.Tensor``, or a
``torch.ops`` namespace, so a name such as ``torch.sys.exit`` never reaches
anything outside torch.

Sample inputs come, in order of preference, from

1. PyTorch's OpInfo database (``op_db`` in
   ``torch.testing._internal.common_methods_invocations``; needs numpy and
   expecttest) for functions, Tensor methods and ``aten::`` names,
2. ``module_db`` (``torch.testing._internal.common_modules``) for ``torch.nn``
   module classes,
3. inputs derived from the operator's ATen schema (Tensor -> a small random
   4x4 tensor of the dtype, int -> 1, int[] -> [4, 4], ...),
4. for modules not in module_db, construction with small default arguments
   (``()``, ``(4,)``, ``(4, 4)``, ``(4, 4, 3)``) and small inputs.

Every sample is first run on the CPU; a sample the CPU reference cannot run is
not a valid sample for the callable and is skipped.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import itertools
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch

# Dtypes tried when the caller asked for dtypes the operator does not support.
DTYPE_PREFERENCE = ("float32", "int64", "int32", "bool", "float64", "complex64", "float16",
                    "bfloat16", "uint8", "int8", "int16", "complex128", "complex32")

_OPDB_CACHE: Dict[str, Any] = {}


class UnknownOp(Exception):
    """The name does not resolve to a torch callable."""


def dtype_of(name: str) -> torch.dtype:
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise ValueError(f"unknown dtype {name}")
    return d


def dtype_name(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


# --------------------------------------------------------------------------- databases

def opinfo_db_status() -> Optional[str]:
    """None when op_db is usable, else why not (e.g. numpy missing)."""
    _load_dbs()
    return _OPDB_CACHE.get("error")


def _load_dbs() -> None:
    if "index" in _OPDB_CACHE:
        return
    index: Dict[str, list] = {}
    aten_index: Dict[str, list] = {}
    module_index: Dict[type, Any] = {}
    try:
        from torch.testing._internal.common_methods_invocations import op_db  # noqa: WPS433
    except Exception as exc:  # numpy / expecttest missing, or a torch build without tests
        _OPDB_CACHE["error"] = f"OpInfo database unavailable ({type(exc).__name__}: {exc})"
        op_db = []
    for info in op_db:
        index.setdefault(info.name, []).append(info)
        for alias in getattr(info, "aliases", ()) or ():
            index.setdefault(alias.name, []).append(info)
        aten = getattr(info, "aten_name", None) or info.name
        aten_index.setdefault(aten, []).append(info)
    try:
        from torch.testing._internal.common_modules import module_db  # noqa: WPS433
    except Exception:
        module_db = []
    for minfo in module_db:
        module_index.setdefault(minfo.module_cls, minfo)
    _OPDB_CACHE["index"] = index
    _OPDB_CACHE["aten_index"] = aten_index
    _OPDB_CACHE["module_index"] = module_index


# --------------------------------------------------------------------------- resolution

@dataclass
class Target:
    op: str
    kind: str  # function | method | module | class | aten | custom
    fn: Any
    opinfos: List[Any] = field(default_factory=list)
    moduleinfo: Any = None
    inplace: bool = False
    aten_name: Optional[str] = None

    @property
    def source(self) -> str:
        if self.opinfos:
            return "opinfo"
        if self.moduleinfo is not None:
            return "module_db"
        return "generic"


_NAMESPACE_PREFIXES = {"nn.functional", "linalg", "fft", "special", "nn"}


def _is_torch_module(obj: Any) -> bool:
    return isinstance(obj, types.ModuleType) and (
        obj.__name__ == "torch" or obj.__name__.startswith("torch."))


def _is_torch_callable(obj: Any) -> bool:
    if isinstance(obj, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return True
    if isinstance(obj, type):
        return (obj.__module__ or "").startswith("torch")
    if not callable(obj) or isinstance(obj, types.ModuleType):
        return False
    objclass = getattr(obj, "__objclass__", None)
    if objclass is not None and objclass in (torch._C.TensorBase, torch.Tensor):
        return True
    mod = getattr(obj, "__module__", None) or ""
    if mod.startswith("torch"):
        return True
    self_ = getattr(obj, "__self__", None)  # builtins bound to torch._C modules
    return _is_torch_module(self_) or (isinstance(self_, type) and (self_.__module__ or "").startswith("torch"))


def resolve(name: str) -> Target:
    if name.startswith("aten::"):
        return _resolve_aten(name)
    parts = name.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        raise UnknownOp(f"{name} is not under the torch namespace")
    obj: Any = torch
    for i, seg in enumerate(parts[1:], start=1):
        container = obj
        if not (_is_torch_module(container) or container is torch.Tensor
                or isinstance(container, (torch._ops._OpNamespace, torch._ops._Ops,
                                          torch._ops.OpOverloadPacket))):
            raise UnknownOp(f"{'.'.join(parts[:i])} is not a torch namespace")
        try:
            obj = getattr(container, seg)
        except Exception:
            obj = _import_submodule(container, seg)
            if obj is None:
                raise UnknownOp(f"{'.'.join(parts[:i + 1])} does not exist in torch {torch.__version__}") from None
    if not _is_torch_callable(obj):
        raise UnknownOp(f"{name} is not a torch operator (resolves to {type(obj).__name__})")
    if isinstance(obj, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        ns = _qualified_name(obj).split("::")[0]
        if ns == "aten":
            return _aten_target(name, obj)
        return Target(name, "custom", obj)
    if isinstance(obj, type):
        if issubclass(obj, torch.nn.Module):
            _load_dbs()
            return Target(name, "module", obj, moduleinfo=_OPDB_CACHE["module_index"].get(obj))
        return Target(name, "class", obj)
    _load_dbs()
    index = _OPDB_CACHE["index"]
    rest = parts[1:]
    if rest[0] == "Tensor":
        meth = rest[-1]
        base = meth.rstrip("_") if meth.endswith("_") and not meth.endswith("__") else meth
        infos = [o for o in index.get(meth, []) if o.method_variant is not None]
        inplace = False
        if not infos and base != meth:
            infos = [o for o in index.get(base, []) if o.inplace_variant is not None]
            inplace = True
        if not infos and meth.startswith("__") and meth.endswith("__"):
            infos = index.get(meth, []) or index.get(meth.strip("_"), [])
        return Target(name, "method", obj, opinfos=infos, inplace=inplace or (base != meth),
                      aten_name=base.strip("_"))
    key = ".".join(rest)
    infos = list(index.get(key, []))
    inplace = False
    if not infos and key.endswith("_"):
        infos = [o for o in index.get(key[:-1], []) if o.inplace_variant is not None]
        inplace = bool(infos)
    if not infos and len(rest) > 1:  # e.g. torch.nn.functional.tanh -> "tanh"
        infos = list(index.get(rest[-1], []))
    if not infos:
        # OpInfos whose function variant is this very callable (aliases spelt differently).
        infos = [o for o in _all_opinfos() if getattr(o, "op", None) is obj]
    aten = infos[0].aten_name if infos else rest[-1]
    return Target(name, "function", obj, opinfos=infos, inplace=inplace or key.endswith("_"),
                  aten_name=aten)


def _import_submodule(container: Any, seg: str) -> Any:
    """``torch.utils.mobile_optimizer`` and other torch submodules that ``import torch`` does not load:
    imported by their full name, only under ``torch`` and only when such a module file exists."""
    if not _is_torch_module(container) or not getattr(container, "__path__", None):
        return None
    full = f"{container.__name__}.{seg}"
    try:
        if importlib.util.find_spec(full) is None:
            return None
        return importlib.import_module(full)
    except Exception:
        return None


def _all_opinfos() -> Iterator[Any]:
    seen = set()
    for lst in _OPDB_CACHE["index"].values():
        for o in lst:
            if id(o) not in seen:
                seen.add(id(o))
                yield o


def _qualified_name(obj: Any) -> str:
    if isinstance(obj, torch._ops.OpOverloadPacket):
        return obj._qualified_op_name
    return obj._schema.name


def _resolve_aten(name: str) -> Target:
    body = name[len("aten::"):]
    opname, _, overload = body.partition(".")
    try:
        packet = getattr(torch.ops.aten, opname)
    except Exception:
        raise UnknownOp(f"{name}: no ATen operator {opname!r} in torch {torch.__version__}") from None
    obj: Any = packet
    if overload:
        if overload not in packet.overloads():
            raise UnknownOp(f"{name}: ATen operator {opname} has no overload {overload!r}")
        obj = getattr(packet, overload)
    return _aten_target(name, obj)


def _aten_target(name: str, obj: Any) -> Target:
    _load_dbs()
    packet_name = _qualified_name(obj)
    base = packet_name.split("::", 1)[-1]
    aten_index = _OPDB_CACHE["aten_index"]
    infos = list(aten_index.get(base, []))
    inplace = False
    if not infos and base.endswith("_"):
        infos = [o for o in aten_index.get(base[:-1], []) if o.inplace_variant is not None]
        inplace = True
    if not infos:
        infos = list(_OPDB_CACHE["index"].get(base, []))
    return Target(name, "aten", obj, opinfos=infos, inplace=inplace or base.endswith("_"), aten_name=base)


# --------------------------------------------------------------------------- dtypes

def supported_dtypes(target: Target) -> Optional[List[str]]:
    """Dtypes the sample databases know for the operator (CPU or CUDA); None if unknown."""
    found: set = set()
    if target.opinfos:
        for o in target.opinfos:
            for dev in ("cpu", "cuda"):
                try:
                    found |= set(o.supported_dtypes(dev))
                except Exception:
                    pass
    elif target.moduleinfo is not None:
        found |= set(getattr(target.moduleinfo, "dtypes", ()) or ())
    else:
        return None
    return [n for n in DTYPE_PREFERENCE if getattr(torch, n) in found]


def plan_dtypes(target: Target, explicit: Optional[List[str]], requested: List[str]) -> List[str]:
    """The dtypes to probe: the ops-file dtypes if given, else --dtypes limited to the
    operator's known dtypes; if none of those fits, the operator's first known dtype."""
    if explicit:
        return list(explicit)
    known = supported_dtypes(target)
    if known is None:
        return list(requested)
    chosen = [d for d in requested if d in known]
    if chosen:
        return chosen
    return known[:1] if known else list(requested)


# --------------------------------------------------------------------------- samples

@dataclass
class Sample:
    """A call: ``call(*args, **kwargs)``. For modules, ``ctor`` builds the module."""

    args: tuple
    kwargs: dict
    ctor: Optional[Tuple[tuple, dict]] = None
    origin: str = "opinfo"


def make_tensor(shape, dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if not (dtype.is_floating_point or dtype.is_complex):
        lo, hi = (0, 10) if dtype == torch.uint8 else (-9, 10)
        return torch.randint(lo, hi, shape, dtype=dtype)
    if dtype == torch.complex32:
        return torch.randn(shape, dtype=torch.complex64).to(dtype)
    return torch.randn(shape, dtype=torch.float64 if dtype.is_floating_point else torch.complex128).to(dtype)


def iter_samples(target: Target, dtype: torch.dtype) -> Iterator[Sample]:
    """Candidate samples (not yet checked on the CPU), best source first."""
    if target.kind == "module":
        yield from _module_samples(target, dtype)
        return
    for info in target.opinfos:
        try:
            gen = info.sample_inputs("cpu", dtype, requires_grad=False)
            for s in gen:
                yield Sample((s.input,) + tuple(s.args), dict(s.kwargs), origin="opinfo")
        except Exception:
            continue
    yield from _schema_samples(target, dtype)


def _schemas_for(target: Target) -> List[Any]:
    fn = target.fn
    if isinstance(fn, torch._ops.OpOverload):
        return [fn._schema]
    if isinstance(fn, torch._ops.OpOverloadPacket):
        return [getattr(fn, o)._schema for o in fn.overloads()]
    name = (target.aten_name or "").strip("_") if target.kind == "method" else target.aten_name
    if name and hasattr(torch.ops.aten, name):
        try:
            packet = getattr(torch.ops.aten, name)
            return [getattr(packet, o)._schema for o in packet.overloads()]
        except Exception:
            return []
    return []


def _arg_value(typ: str, dtype: torch.dtype, shape=(4, 4)) -> Tuple[bool, Any]:
    t = typ.replace(" ", "")
    if t.endswith("?"):
        return True, None
    if t.startswith("Tensor"):
        if t.startswith("Tensor[]") or t.startswith("List[Tensor]"):
            return True, [make_tensor(shape, dtype), make_tensor(shape, dtype)]
        return True, make_tensor(shape, dtype)
    if t in ("int", "SymInt"):
        return True, 1
    if t.startswith("int[") or t.startswith("SymInt[") or t.startswith("List[int]") or t.startswith("List[SymInt]"):
        return True, [4, 4]
    if t == "float":
        return True, 0.5
    if t in ("Scalar", "number"):
        return True, 1
    if t == "bool":
        return True, False
    if t == "ScalarType":
        return True, dtype
    return False, None


_SCHEMA_SHAPES = ((4, 4), (1, 2, 4, 4), (1, 2, 8), (1, 2, 4, 4, 4), (4,))


def _schema_samples(target: Target, dtype: torch.dtype) -> Iterator[Sample]:
    tried = set()
    for shape in _SCHEMA_SHAPES:
        for schema in _schemas_for(target):
            if schema.overload_name.endswith("out") or any(getattr(a, "is_out", False) for a in schema.arguments):
                continue
            args: List[Any] = []
            kwargs: Dict[str, Any] = {}
            ok = True
            for a in schema.arguments:
                if a.has_default_value():
                    continue
                good, val = _arg_value(str(a.type), dtype, shape)
                if not good:
                    ok = False
                    break
                if a.kwarg_only:
                    kwargs[a.name] = val
                else:
                    args.append(val)
            if not ok or not any(isinstance(x, (torch.Tensor, list)) for x in list(args) + list(kwargs.values())):
                continue
            key = (shape, len(args), tuple(sorted(kwargs)), tuple(type(x).__name__ for x in args))
            if key in tried:
                continue
            tried.add(key)
            yield Sample(tuple(args), kwargs, origin="schema")
    # Last resort: unary, then binary tensor calls.
    if target.kind in ("function", "method"):
        yield Sample((make_tensor((4, 4), dtype),), {}, origin="generic")
        yield Sample((make_tensor((4, 4), dtype), make_tensor((4, 4), dtype)), {}, origin="generic")


_MODULE_CTORS = ((), (4,), (4, 4), (4, 4, 3))
_MODULE_INPUT_SHAPES = ((2, 4), (2, 4, 8), (1, 4, 8, 8), (1, 4, 4, 4, 4))


def _module_samples(target: Target, dtype: torch.dtype) -> Iterator[Sample]:
    minfo = target.moduleinfo
    if minfo is not None:
        try:
            inputs = minfo.module_inputs_func(minfo, device="cpu", dtype=dtype, requires_grad=False,
                                              training=False)
        except Exception:
            inputs = []
        for mi in inputs:
            fwd = getattr(mi, "forward_input", None)
            if fwd is None:
                continue
            c = mi.constructor_input
            yield Sample(tuple(fwd.args), dict(fwd.kwargs), ctor=(tuple(c.args), dict(c.kwargs)),
                         origin="module_db")
    for ctor, shape in itertools.product(_MODULE_CTORS, _MODULE_INPUT_SHAPES):
        yield Sample((make_tensor(shape, dtype),), {}, ctor=(ctor, {}), origin="generic")


def build_module(target: Target, sample: Sample, dtype: torch.dtype) -> torch.nn.Module:
    cargs, ckwargs = sample.ctor or ((), {})
    mod = target.fn(*copy.deepcopy(cargs), **copy.deepcopy(ckwargs))
    if dtype.is_floating_point or dtype.is_complex:
        mod = mod.to(dtype)
    mod.eval()
    return mod
