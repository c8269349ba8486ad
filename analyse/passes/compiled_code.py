"""compiled-code: compiled code a project reaches without an extension import, and the devices its
``torch.library`` kernels serve.

* ``torch.library`` registrations (``register_kernel("ns::op", "default")``, ``Library.impl``,
  ``@custom_op(..., device_types="cuda")``; see :mod:`analyse.passes._oplib`) are collected project-wide
  before any module is analysed (``project.store["torch-library"]``: op -> device classes). The
  cuda-extension pass reads them for ``torch.ops.<ns>.<op>`` calls (NPU505): an op with a default /
  composite / device-agnostic Python kernel, or an NPU kernel, runs on an NPU and is no finding; an op
  registered for CUDA (or CPU, XPU ...) only stays a blocker that names the devices it has.
* NPU468: a call into a native library loaded with ``ctypes`` (``lib = ctypes.cdll.LoadLibrary(...)``,
  or a loader function that does it, then ``lib.cquantize(...)``): compiled code, usually the CUDA build.
* NPU469: a custom op reached through a lookup helper (``get_operator("xformers", "swiglu")``, a function
  that returns ``getattr(getattr(torch.ops, library), name)``) that the project registers no NPU-capable
  kernel for, or a kernel fetched from a kernel hub at run time (``kernels.get_kernel("org/name")``), judged by
  its id (``data/kernel_hub.yaml``): an id with an Ascend build (``kernels-ext-npu/*``) is no finding, a
  CUDA-only id names why and its NPU counterpart, any other id has no NPU build on record.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.knowledge.kernel_hub import HubKernel, hub_kernel
from analyse.passes import ModuleContext, Pass, ProjectContext, nodes_of
from analyse.passes import _oplib
from analyse.passes._oplib import BUILTIN_OP_NS

OPS_KEY = "torch-library"            # project.store: {"ns::op[.overload]": {device classes}}
OPS_WHERE_KEY = "torch-library-where"   # project.store: {"ns::op": "path:line"} of a registration
NATIVE_KEY = "native-libraries"      # project.store: set of module-level names bound to a ctypes library
HELPERS_KEY = "op-lookup-helpers"    # project.store: {function: (namespace or parameter index, name index)}

R_NATIVE = Rule(
    code="NPU468", name="native-library-call", category="cuda-extension", severity="blocker",
    summary="A call into a native library loaded with ctypes (`lib = ctypes.cdll.LoadLibrary(...)`; `lib.cfunc(...)`).",
    why="The shared library is compiled code (for GPU libraries the CUDA build: kernels, managed memory, streams); "
        "an Ascend host has no build of it unless the library ships one, and transfer_to_npu cannot redirect it.",
    example="lib = ct.cdll.LoadLibrary(path)\nlib.cquantize_blockwise_fp16(ptr_a, ptr_out, n)",
    fix="call the library's torch-level op (with an NPU or default kernel) instead, or build the native library "
        "for Ascend (CANN)",
)
R_LOOKUP = Rule(
    code="NPU469", name="compiled-op-lookup", category="cuda-extension", severity="blocker",
    summary="A compiled operator fetched by name at run time: a custom op through a lookup helper "
            "(`get_operator(\"xformers\", \"op\")`) or a kernel from a kernel hub (`get_kernel(\"org/name\")`).",
    why="The helper returns `torch.ops.<library>.<op>`, a compiled operator, and a hub kernel is a CUDA build "
        "downloaded at run time; without a kernel for the NPU (PrivateUse1) or a device-agnostic default kernel "
        "the call fails on an Ascend host.",
    example="OPERATOR = get_operator(\"xformers\", \"efficient_attention_forward_cutlass\")\n"
            "flash = get_kernel(\"kernels-community/flash-attn\")",
    fix="register an NPU (PrivateUse1) or default kernel for the op, or call torch / torch_npu ops instead",
)
HUB_LOADERS = {"kernels.get_kernel", "kernels.get_local_kernel", "kernels.load_kernel"}
_HUB_LEAVES = {q.rsplit(".", 1)[-1] for q in HUB_LOADERS}


class CompiledCodePass(Pass):
    name = "compiled-code"
    rules = (R_NATIVE, R_LOOKUP)

    VALID = (
        "import torch\n"
        "@torch.library.custom_op('mylib::scale', mutates_args=())\n"
        "def scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n\n"
        "def get_operator(library, name):\n    return getattr(getattr(torch.ops, library), name)\n\n"
        "op = get_operator('mylib', 'scale')\n"
        "aten = get_operator('aten', 'add')\n",
        "import ctypes\nlib = ctypes.CDLL('libc.so.6')\nx = lib_other.cfoo(1)\n",
        "from kernels import get_kernel\n\n"
        "def norm(x):\n    rms = get_kernel('kernels-ext-npu/RMSNorm')\n    return rms.forward(x)\n",
    )
    INVALID = (
        "import ctypes as ct\n\n"
        "def get_native_library():\n    return ct.cdll.LoadLibrary('libfoo_cuda.so')\n\n"
        "lib = get_native_library()\n\n"
        "def prefetch(ptr, n):\n    lib.cprefetch(ptr, ct.c_size_t(n))  # expect: NPU468\n",
        "import torch\n\n"
        "def get_operator(library, name):\n    return getattr(getattr(torch.ops, library), name)\n\n"
        "def get_xformers_operator(name):\n    return get_operator('xformers', name)\n\n"
        "fw = get_xformers_operator('efficient_attention_forward_cutlass')  # expect: NPU469\n"
        "op = get_operator('mylib', 'fused')  # expect: NPU469\n",
        "from kernels import get_kernel\n\n"
        "def forward(x):\n    k = get_kernel('kernels-community/activation')  # expect: NPU469\n    return k.gelu(x)\n",
        "from kernels import get_kernel\n\n"
        "def attention(q, k, v):\n    fa = get_kernel('kernels-community/flash-attn3')  # expect: NPU469\n"
        "    return fa.flash_attn_func(q, k, v)\n",
    )

    prescan_shape = Optional[Tuple[
        Tuple[Tuple[str, str, str, int], ...],                    # registrations (op key, device class, path, line)
        Tuple[str, ...], Tuple[str, ...],                         # loaders, native libraries
        Tuple[Tuple[str, str], ...],                              # module-level `name = loader()` candidates
        Tuple[Tuple[str, Union[str, int], int], ...],             # op lookup helpers
        Tuple[Tuple[str, str, str], ...],                         # Library objects (name, ns, key)
        Tuple[Tuple[str, str, Optional[str], str, int], ...]]]    # impl() on another module's Library

    def prescan(self, ctx: ModuleContext):
        tree = ctx.tree
        q = ctx.resolver.qualname
        libraries: list = []
        pending: list = []
        text = ctx.source.text
        regs = tuple(_oplib.registrations(tree, ctx.path, q, ctx.source.modname, libraries, pending, text))
        loaders, natives = _oplib.native_libraries(tree, ctx.source.modname, q, text)
        candidates = []     # module-level `name = loader()` with a loader of another module
        for asg in nodes_of(tree, nodes.Assign):
            if isinstance(asg.value, nodes.Call) and isinstance(asg.scope(), nodes.Module):
                callee = q(asg.value.func) or ""
                leaf = callee.rsplit(".", 1)[-1].lower()
                if callee and ("lib" in leaf or "load" in leaf or "dll" in leaf):
                    for t in asg.targets:
                        if isinstance(t, nodes.AssignName):
                            candidates.append((f"{ctx.source.modname}.{t.name}", callee))
        helpers = _oplib.lookup_helpers(tree, ctx.source.modname, text)
        if not (regs or loaders or natives or candidates or helpers or libraries or pending):
            return None
        return regs, loaders, natives, tuple(sorted(candidates)), helpers, tuple(libraries), tuple(pending)

    def combine(self, project: ProjectContext, prescans) -> None:
        ops: Dict[str, Set[str]] = {}
        where: Dict[str, str] = {}
        loaders: Set[str] = set()
        natives: Set[str] = set()
        candidates: List[Tuple[str, str]] = []
        helpers: Dict[str, Tuple[object, int]] = {}
        libraries: list = []
        pending: list = []
        for _rel, data in prescans:
            if data is None:
                continue
            regs, lds, nats, cands, hs, libs, pend = data
            libraries.extend(libs)
            pending.extend(pend)
            for op, dev, path, line in regs:
                ops.setdefault(op, set()).add(dev)
                where.setdefault(op, f"{path}:{line}")
            loaders.update(lds)
            natives.update(nats)
            candidates.extend(cands)
            for qual, ns, idx in hs:
                helpers[qual] = (ns, idx)
        natives.update(name for name, callee in candidates if callee in loaders)
        for op, dev, path, line in _oplib.resolve_pending(libraries, pending):
            ops.setdefault(op, set()).add(dev)
            where.setdefault(op, f"{path}:{line}")
        project.store[OPS_KEY] = ops
        project.store[OPS_WHERE_KEY] = where
        project.store[NATIVE_KEY] = natives
        project.store[HELPERS_KEY] = helpers

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        store = ctx.project.store
        natives = store.get(NATIVE_KEY) or set()
        helpers = store.get(HELPERS_KEY) or {}
        text = ctx.source.text
        hub = "get_kernel" in text or "load_kernel" in text or "get_local_kernel" in text
        if not (natives or helpers or hub):
            return
        r = ctx.resolver
        ops = store.get(OPS_KEY) or {}
        hub_bound = _hub_bindings(ctx.tree, r) if hub else {}
        for call in nodes_of(ctx.tree, nodes.Call):
            func = call.func
            if hub_bound and isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) \
                    and func.expr.name in hub_bound and _module_binding(func.expr, ctx.source.modname):
                repo, known, chain = hub_bound[func.expr.name]
                graded = _graded_by_library(ctx, known, chain + (func.attrname,))
                if graded is not None:   # a function of a library the table knows (flash_attn_varlen_func): its entry
                    lib, qual = graded
                    yield ctx.finding(R_LOOKUP, call, f"{func.expr.name}.{func.attrname}",
                                      f"`{func.as_string()}(...)` calls `{qual}` of the kernel `{repo}` that "
                                      f"`{func.expr.name}` holds (fetched from a kernel hub at module level): "
                                      f"{lib.reason} (data/third_party_libs.yaml, {lib.id})",
                                      replacement=lib.replacement, severity=lib.severity, confidence="medium")
                    continue
                why = (f"{known.reason} (data/kernel_hub.yaml, {known.id})" if known is not None
                       else "a compiled CUDA build with no NPU kernel on record")
                yield ctx.finding(R_LOOKUP, call, f"{func.expr.name}.{func.attrname}",
                                  f"`{func.as_string()}(...)` calls `{func.attrname}` of the kernel `{repo}` that "
                                  f"`{func.expr.name}` holds (fetched from a kernel hub at module level): {why}.",
                                  replacement=known.replacement if known is not None else R_LOOKUP.fix,
                                  confidence="medium")
                continue
            if natives and isinstance(func, nodes.Attribute) and isinstance(func.expr, (nodes.Name, nodes.Attribute)):
                owner = r.qualname(func.expr) or _module_binding(func.expr, ctx.source.modname)
                if owner in natives:
                    yield ctx.finding(R_NATIVE, call, f"{owner}.{func.attrname}",
                                      f"`{func.as_string()}(...)` calls `{func.attrname}` of the native library bound to "
                                      f"`{owner}` (loaded with ctypes): compiled code with no NPU build.",
                                      replacement=R_NATIVE.fix, confidence="medium")
                    continue
            leaf = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
            q = r.qualname(func) if (helpers or (hub and leaf in _HUB_LEAVES)) else None
            if q in HUB_LOADERS:
                repo = _const(call.args[0]) if call.args else None
                known = hub_kernel(repo) if isinstance(repo, str) else None
                if known is not None and known.runs_on_npu:
                    continue   # the hub publishes an Ascend build of this kernel (data/kernel_hub.yaml)
                what = f"`{repo}`" if repo else "a kernel"
                if known is not None:
                    msg = (f"`{func.as_string()}(...)` downloads {what} from a kernel hub at run time: {known.reason} "
                           f"(data/kernel_hub.yaml, {known.id}).")
                    fix = known.replacement
                else:
                    msg = (f"`{func.as_string()}(...)` downloads {what} from a kernel hub at run time: a compiled build "
                           "with no NPU kernel on record (the loader itself has an Ascend backend; check the hub "
                           "repository for an npu / cann build variant).")
                    fix = R_LOOKUP.fix
                yield ctx.finding(R_LOOKUP, call, f"{q}({repo!r})" if repo else q, msg, replacement=fix,
                                  severity=known.severity if known is not None else None)
                continue
            if helpers:
                spec = helpers.get(q) if q else None
                if spec is None:
                    continue
                ns_spec, name_idx = spec
                ns = ns_spec if isinstance(ns_spec, str) else (
                    _const(call.args[ns_spec]) if ns_spec < len(call.args) else None)
                name = _const(call.args[name_idx]) if name_idx < len(call.args) else None
                if not ns or not name or ns in BUILTIN_OP_NS:
                    continue
                devices = _oplib.op_devices(ops, f"torch.ops.{ns}.{name}")
                if devices is not None and _oplib.runs_on_npu(devices):
                    continue
                has = f"; the project registers it for {_oplib.describe(devices)} only" if devices else ""
                yield ctx.finding(R_LOOKUP, call, f"torch.ops.{ns}.{name}",
                                  f"`{func.as_string()}(...)` returns the compiled operator `{ns}::{name}`{has}: no "
                                  "NPU kernel.", replacement=R_LOOKUP.fix)


def _hub_bindings(tree: nodes.Module, r) -> Dict[str, Tuple[str, Optional[HubKernel]]]:
    """Module-level names bound to a kernel-hub download (``ops = get_kernel("Isotr0py/ggml")`` under the module's
    own ``if``, ``ops = None`` otherwise; ``ops = get_kernel(repo).ops``): name -> (the kernel id or the loader's
    name, its ``data/kernel_hub.yaml`` entry). A kernel the hub publishes an Ascend build of (an entry with
    ``builds: npu``) binds nothing: its calls run on an NPU host, as the same id fetched inside a function does."""
    out: Dict[str, Tuple[str, Optional[HubKernel], Tuple[str, ...]]] = {}
    for asg in nodes_of(tree, nodes.Assign):
        value = asg.value
        chain: Tuple[str, ...] = ()
        while isinstance(value, nodes.Attribute):   # `get_kernel(repo).ops`: the kernel's op namespace
            chain = (value.attrname,) + chain
            value = value.expr
        if not (isinstance(value, nodes.Call) and isinstance(asg.scope(), nodes.Module)):
            continue
        q = r.qualname(value.func)
        if q not in HUB_LOADERS:
            continue
        repo = _const(value.args[0]) if value.args else None
        known = hub_kernel(repo) if repo else None
        if known is not None and known.runs_on_npu:
            continue
        for t in asg.targets:
            if isinstance(t, nodes.AssignName):
                out[t.name] = (repo or q, known, chain)
    return out


def _graded_by_library(ctx: ModuleContext, known: Optional[HubKernel], chain: Tuple[str, ...]):
    """(the data/third_party_libs.yaml entry, the name) of a call of a hub kernel that exposes a known library's API
    (data/kernel_hub.yaml ``python_api``): ``fa.flash_attn_interface.flash_attn_varlen_func`` of a FlashAttention
    kernel is ``flash_attn.flash_attn_interface.flash_attn_varlen_func``, graded as that function; None otherwise."""
    if known is None or not known.python_api:
        return None
    from analyse.passes._libtable import lib_table

    qual = ".".join((known.python_api,) + chain)
    hit = lib_table(ctx.kb).match(qual)
    return (hit[0], qual) if hit is not None else None


def _module_binding(node, modname: str):
    """``mod.name`` for a name bound at module level of this module (the resolver names imports only)."""
    if not isinstance(node, nodes.Name):
        return None
    try:
        scope, binders = node.lookup(node.name)
    except Exception:  # pragma: no cover - astroid lookup on odd trees
        return None
    if isinstance(scope, nodes.Module) and binders and all(isinstance(b, nodes.AssignName) for b in binders):
        return f"{modname}.{node.name}"
    return None


def _const(node):
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None
