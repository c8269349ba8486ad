"""What a project registers and loads as compiled code, read from its Python (never run).

* ``torch.library`` registrations: ``torch.library.register_kernel("ns::op", "cuda")`` (also through an
  alias such as bitsandbytes' ``register_kernel = torch.library.register_kernel``), ``torch.library.impl``,
  ``Library("ns", "IMPL").impl("op", fn, "CUDA")``, ``@torch.library.custom_op("ns::op", device_types=...)``
  and ``@op.register_kernel("cuda")`` on such an op. Each gives the device class of a kernel of one op
  overload: ``any`` (``"default"``, ``CompositeExplicitAutograd`` / ``CompositeImplicitAutograd``, a
  ``custom_op`` or ``register_kernel`` without device types: a Python kernel that runs on every device, the
  NPU included), ``npu`` (``"npu"``, ``PrivateUse1``), ``cuda``, ``cpu`` or ``other`` (xpu, mps, hpu ...).
  ``Meta`` / fake kernels run no device code and are left out.
* native libraries loaded with ``ctypes`` (``ctypes.cdll.LoadLibrary``, ``ctypes.CDLL``,
  ``numpy.ctypeslib.load_library``), bound to a module-level name directly or through a loader function of
  the same module (bitsandbytes' ``lib = get_native_library()``): calls ``lib.cfunc(...)`` run compiled code.
* lookup helpers that return a custom op by name (xformers' ``get_operator(library, name)`` doing
  ``getattr(getattr(torch.ops, library), name)``, and one-line wrappers fixing the library).

The facts are picklable tuples, made per module (a pass's prescan) and merged project-wide.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from astroid import nodes

from analyse.syntax import nodes_of

# torch.ops namespaces that are PyTorch's own (or another device vendor's), never a project's compiled extension
BUILTIN_OP_NS = {
    "aten", "prims", "prim", "quantized", "_quantized", "quantized_decomposed", "rngprims", "higher_order",
    "_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "c10d", "_dtensor", "profiler", "mkldnn",
    "_caffe2", "debugprims", "_test", "inductor", "_inductor_test", "npu", "npu_graph", "torchvision", "image",
    "torchaudio", "_torch_testing", "hpu", "torch_mlu", "mlu", "xpu", "habana", "ipex", "torch_ipex", "neuron", "_functorch", "_higher_order_ops", "_mkldnn", "onednn", "_native",
    "_quantized_decomposed", "_export", "_prims", "_refs", "_nvfuser", "symm_mem", "_allgather_base",
    # ao::offload / ao::reload / ao::wait_tensor: torch/_functorch/_activation_offloading/offload_ops.py (torch 2.13)
    # defines them with torch.library custom_op / Library("ao", "DEF"), one device-generic implementation over
    # torch.accelerator streams and a CompositeExplicitAutograd wait_tensor
    "ao",
}

ANY, NPU = "any", "npu"
_ANY_KEYS = {"default", "compositeexplicitautograd", "compositeimplicitautograd",
             "compositeexplicitautogradnonfunctional", "autograd", ""}
_NPU_KEYS = {"npu", "privateuse1", "autogradprivateuse1"}
_CUDA_KEYS = {"cuda", "autogradcuda", "sparsecuda", "quantizedcuda"}
_CPU_KEYS = {"cpu", "autogradcpu", "sparsecpu", "quantizedcpu"}
_NO_DEVICE = {"meta", "fake", "functionalize", "autocast", "autocastcuda", "autocastcpu"}
_CTYPES_LOADS = {"ctypes.cdll.LoadLibrary", "ctypes.CDLL", "ctypes.WinDLL", "ctypes.PyDLL", "ctypes.windll.LoadLibrary",
                 "numpy.ctypeslib.load_library", "ctypes.cdll.__getattr__"}

Registration = Tuple[str, str, str, int]          # (op key "ns::op[.overload]", device class, path, line)


def device_class(key) -> Optional[str]:
    """The device class of one dispatch key / device type string (None: not a device kernel)."""
    if key is None:
        return ANY
    k = str(key).strip().lower()
    if k in _NO_DEVICE:
        return None
    if k in _ANY_KEYS:
        return ANY
    if k in _NPU_KEYS:
        return NPU
    if k in _CUDA_KEYS:
        return "cuda"
    if k in _CPU_KEYS:
        return "cpu"
    return "other"


def _str(node) -> Optional[str]:
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None


def _strs(node) -> Optional[List[Optional[str]]]:
    """Device types as written: a string, a list / tuple of strings, None (every device)."""
    if node is None or (isinstance(node, nodes.Const) and node.value is None):
        return [None]
    s = _str(node)
    if s is not None:
        return [s]
    if type(node) in (nodes.List, nodes.Tuple, nodes.Set):
        out = [_str(e) for e in node.elts]
        return out if all(x is not None for x in out) else None
    return None


def _arg(call: nodes.Call, pos: int, name: str, missing=None):
    for kw in call.keywords or ():
        if kw.arg == name:
            return kw.value
    if pos < len(call.args) and not any(isinstance(a, nodes.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return missing


def _op_key(name: str) -> str:
    """``ns::op`` / ``ns::op.default`` -> ``ns::op``; ``ns::op.out`` stays."""
    return name[:-len(".default")] if name.endswith(".default") else name


def _leaf(func) -> str:
    if isinstance(func, nodes.Attribute):
        return func.attrname
    if isinstance(func, nodes.Name):
        return func.name
    return ""


def registrations(tree: nodes.Module, relpath: str, qualname, modname: str = "",
                  libraries: Optional[list] = None, pending: Optional[list] = None,
                  text: Optional[str] = None) -> List[Registration]:
    """The ``torch.library`` kernels a module registers (*qualname*: node -> dotted name or None).

    *libraries* receives ``(module.name, namespace, dispatch key)`` of the module-level ``Library`` objects,
    *pending* ``(receiver, op, key or None, path, line)`` of ``X.impl("op", ...)`` on a receiver made
    elsewhere (see :func:`resolve_pending`)."""
    out: List[Registration] = []
    libs: Dict[str, Tuple[str, str]] = {}        # name bound to Library("ns", kind, key) -> (ns, default key)
    custom_ops: Dict[str, str] = {}              # function name -> "ns::op" of its @custom_op decorator
    if text is not None and not any(w in text for w in ("library", "register_kernel", "custom_op", "triton_op",
                                                           ".impl(")):
        return out     # nothing to register: spare resolving every call
    calls = nodes_of(tree, nodes.Call)
    for call in calls:
        q = qualname(call.func) or ""
        if q in ("torch.library.Library", "torch.library.Library.__init__") or (not q and _leaf(call.func) == "Library"):
            ns = _str(_arg(call, 0, "ns"))
            parent = call.parent
            if ns and isinstance(parent, nodes.Assign):
                key = _str(_arg(call, 2, "dispatch_key")) or ""
                for t in parent.targets:
                    if isinstance(t, (nodes.AssignName, nodes.AssignAttr)):
                        libs[t.as_string()] = (ns, key)
                        if libraries is not None and isinstance(t, nodes.AssignName) \
                                and isinstance(parent.scope(), nodes.Module):
                            libraries.append((f"{modname}.{t.name}", ns, key))
    for call in calls:
        q = qualname(call.func) or ""
        leaf = q.rsplit(".", 1)[-1] if q else _leaf(call.func)
        line = call.lineno or 1
        first = _str(_arg(call, 0, "qualname")) or _str(_arg(call, 0, "op")) or _str(_arg(call, 0, "name"))
        if leaf in ("custom_op", "triton_op") and first and "::" in first:
            if leaf == "triton_op":
                devs = ["cuda"]
            else:
                devs = _strs(next((k.value for k in call.keywords or () if k.arg == "device_types"), None))
            fn = call.parent if isinstance(call.parent, nodes.Decorators) else None
            if fn is not None and isinstance(fn.parent, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                custom_ops[fn.parent.name] = _op_key(first)
            for d in devs or ["other"]:
                c = device_class(d)
                if c:
                    out.append((_op_key(first), c, relpath, line))
        elif leaf == "register_kernel":
            if first and "::" in first:
                devs = _strs(_arg(call, 1, "device_types", None))
                op = _op_key(first)
            elif isinstance(call.func, nodes.Attribute) and _leaf(call.func.expr) in custom_ops:
                op = custom_ops[_leaf(call.func.expr)]
                devs = _strs(_arg(call, 0, "device_types", None))
            else:
                continue
            for d in devs or ["other"]:
                c = device_class(d)
                if c:
                    out.append((op, c, relpath, line))
        elif leaf == "impl":
            recv = call.func.expr.as_string() if isinstance(call.func, nodes.Attribute) else ""
            if first and "::" in first and q.startswith("torch.library"):
                devs = _strs(_arg(call, 1, "types", None))
                for d in devs or ["other"]:
                    c = device_class(d)
                    if c:
                        out.append((_op_key(first), c, relpath, line))
            elif recv in libs and first:        # lib.impl("op", fn, "CUDA")
                ns, default_key = libs[recv]
                key = _arg(call, 2, "dispatch_key", None)
                c = device_class(_str(key) if key is not None else default_key)
                if c:
                    out.append((_op_key(f"{ns}::{first}"), c, relpath, line))
            elif first and isinstance(call.func, nodes.Attribute) and pending is not None:
                # lib.impl("op", fn, key) on a Library made in another module: resolved project-wide
                owner = qualname(call.func.expr)
                key = _arg(call, 2, "dispatch_key", None)
                if owner and (key is None or _str(key) is not None):
                    pending.append((owner, first, _str(key) if key is not None else None, relpath, line))
            elif q == "torch.library.impl":      # torch.library.impl(lib, "op", "CUDA")
                lib = _arg(call, 0, "qualname_or_lib")
                name = _str(_arg(call, 1, "name"))
                lib_key = lib.as_string() if isinstance(lib, (nodes.Name, nodes.Attribute)) else ""
                if lib_key in libs and name:
                    c = device_class(_str(_arg(call, 2, "dispatch_key")) or libs[lib_key][1])
                    if c:
                        out.append((_op_key(f"{libs[lib_key][0]}::{name}"), c, relpath, line))
    return sorted(set(out))


def resolve_pending(libraries, pending) -> List[Registration]:
    """Registrations of ``X.impl("op", fn, key)`` whose receiver is a ``Library`` made in another module."""
    libs = {q: (ns, key) for q, ns, key in libraries}
    out = []
    for owner, op, key, path, line in pending:
        hit = libs.get(owner)
        if hit is None:
            continue
        c = device_class(key if key is not None else hit[1])
        if c:
            out.append((_op_key(f"{hit[0]}::{op}"), c, path, line))
    return out


def op_devices(regs: Dict[str, Set[str]], q: str) -> Optional[Set[str]]:
    """The device classes registered for the op a ``torch.ops.ns.op[.overload]`` name calls (None: the
    project registers no kernel for it)."""
    parts = q.split(".")
    if len(parts) < 4 or parts[0] != "torch" or parts[1] != "ops":
        return None
    ns, op = parts[2], parts[3]
    overload = parts[4] if len(parts) > 4 else ""
    key = f"{ns}::{op}" + (f".{overload}" if overload and overload != "default" else "")
    return regs.get(key)


def runs_on_npu(devices: Iterable[str]) -> bool:
    return any(d in (ANY, NPU) for d in devices)


def describe(devices: Iterable[str]) -> str:
    return ", ".join(sorted(devices))


# --------------------------------------------------------------------------- ctypes native libraries

def native_libraries(tree: nodes.Module, modname: str, qualname,
                     text: Optional[str] = None) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """(loader functions, module-level names bound to a loaded native library) of one module."""
    loaders: Set[str] = set()
    if text is not None and "ctypes" not in text:
        return (), ()
    for fn in nodes_of(tree, nodes.FunctionDef):
        if not isinstance(fn.parent, nodes.Module):
            continue
        for call in nodes_of(fn, nodes.Call):
            if (qualname(call.func) or "") in _CTYPES_LOADS:
                loaders.add(f"{modname}.{fn.name}")
                break
    names: Set[str] = set()
    for asg in nodes_of(tree, nodes.Assign):
        if not isinstance(asg.scope(), nodes.Module) or not isinstance(asg.value, nodes.Call):
            continue
        q = qualname(asg.value.func) or ""
        if q in _CTYPES_LOADS or q in loaders:
            for t in asg.targets:
                if isinstance(t, nodes.AssignName):
                    names.add(f"{modname}.{t.name}")
    return tuple(sorted(loaders)), tuple(sorted(names))


# --------------------------------------------------------------------------- op lookup helpers

def _getattr_ops(node, params: List[str]) -> Optional[Tuple[object, int]]:
    """``getattr(getattr(torch.ops, P1), P2)`` -> (index of P1, index of P2); ``getattr(torch.ops.ns, P)``
    -> ("ns", index of P)."""
    if not (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Name) and node.func.name == "getattr"
            and len(node.args) >= 2 and isinstance(node.args[1], nodes.Name) and node.args[1].name in params):
        return None
    name_idx = params.index(node.args[1].name)
    inner = node.args[0]
    if isinstance(inner, nodes.Attribute) and inner.expr.as_string() == "torch.ops":
        return inner.attrname, name_idx
    if isinstance(inner, nodes.Call) and isinstance(inner.func, nodes.Name) and inner.func.name == "getattr" \
            and len(inner.args) >= 2 and inner.args[0].as_string() == "torch.ops" \
            and isinstance(inner.args[1], nodes.Name) and inner.args[1].name in params:
        return params.index(inner.args[1].name), name_idx
    return None


def lookup_helpers(tree: nodes.Module, modname: str, text: Optional[str] = None) -> Tuple[Tuple[str, object, int], ...]:
    """(qualified function, namespace: parameter index or fixed name, op-name parameter index) of the
    module's functions that return a custom op by name."""
    found: Dict[str, Tuple[object, int]] = {}
    if text is not None and "torch.ops" not in text:
        return ()
    fns = [fn for fn in nodes_of(tree, nodes.FunctionDef) if isinstance(fn.parent, nodes.Module)]
    for fn in fns:
        params = [a.name for a in fn.args.args]
        for call in nodes_of(fn, nodes.Call):
            hit = _getattr_ops(call, params)
            if hit is not None:
                found[fn.name] = hit
                break
    for fn in fns:          # one-line wrappers: return get_operator("xformers", name)
        if fn.name in found:
            continue
        params = [a.name for a in fn.args.args]
        for ret in nodes_of(fn, nodes.Return):
            v = ret.value
            if isinstance(v, nodes.Call) and isinstance(v.func, nodes.Name) and v.func.name in found:
                ns_spec, name_idx = found[v.func.name]
                args = v.args
                if not isinstance(ns_spec, int) or len(args) <= max(ns_spec, name_idx):
                    continue
                ns = _str(args[ns_spec])
                nm = args[name_idx]
                if ns and isinstance(nm, nodes.Name) and nm.name in params:
                    found[fn.name] = (ns, params.index(nm.name))
    return tuple(sorted((f"{modname}.{k}", ns, i) for k, (ns, i) in found.items()))


def registered_devices(project, q: str):
    """Device classes of the project's ``torch.library`` kernels for the op *q* calls (the compiled-code
    pass collects them before any module is analysed); None when it registers none."""
    regs = project.store.get("torch-library")
    return op_devices(regs, q) if regs else None
