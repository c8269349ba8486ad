"""Name, type and string resolution without running or importing anything.

Resolution order (fast and exact first):

1. **Import tables and scopes**: a ``Name`` is looked up in its lexical scope
   (astroid's ``lookup``, which walks function, enclosing and module scopes);
   imports give a dotted name (``import torch.nn as nn`` -> ``torch.nn``,
   ``from torch.cuda import amp`` -> ``torch.cuda.amp``, relative imports
   resolved against the module's package); simple assignments are followed
   (``F = torch.nn.functional``); ``importlib.import_module("pkg")`` with a known name, and calls of the
   project's own import helpers (:class:`ImportHelper`: a function that imports the module a parameter names
   and hands it back, alone or in a tuple: ``_C, _ = optional_import("pkg._C")``), recognised by that shape
   when the project is indexed.
2. **Light type tracking** for receivers of method calls: results of
   ``torch.*`` functions are tensors, calls of ``torch.nn.X`` classes are
   modules, ``self`` inside an ``nn.Module`` subclass is a module,
   ``self.attr = nn.Linear(...)`` makes ``self.attr`` a module, parameters
   annotated ``torch.Tensor`` are tensors, and so on.
3. **String values** through assignments, conditional expressions, ``or``
   defaults, f-strings / ``str.format`` / ``+`` concatenation (unknown parts
   become ``{}``), ``os.environ.get`` defaults and argparse ``default=`` values
   (``args.dist_backend`` -> ``'nccl'``).

astroid inference is deliberately not used: inferring through ``import torch``
makes astroid load and parse the installed torch sources (seconds per
module), and the syntactic rules above decide the receivers that matter. The
parser (analyse/project.py) likewise skips astroid's inferring post-build.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import astroid
from astroid import nodes

from analyse.syntax import annotation_nodes, lookup, nodes_of, own_bindings, positions_of

_MAX_DEPTH = 12
_MISSING = object()
_SCOPE_TYPES = (nodes.Module, nodes.FunctionDef, nodes.ClassDef, nodes.Lambda, nodes.GeneratorExp, nodes.ListComp,
                nodes.SetComp, nodes.DictComp)
_BUILTINS = frozenset(dir(__import__("builtins")))

# torch functions that do not return a tensor (everything else under these
# namespaces is assumed to).
_NON_TENSOR_TORCH = {
    "torch.device", "torch.dtype", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
    "torch.set_grad_enabled", "torch.is_tensor", "torch.is_floating_point", "torch.is_complex",
    "torch.numel", "torch.manual_seed", "torch.seed", "torch.initial_seed", "torch.save", "torch.load",
    "torch.compile", "torch.get_default_dtype", "torch.set_default_dtype", "torch.set_printoptions",
    "torch.set_num_threads", "torch.get_num_threads", "torch.is_grad_enabled", "torch.autocast",
    "torch.use_deterministic_algorithms", "torch.are_deterministic_algorithms_enabled",
    "torch.set_float32_matmul_precision", "torch.get_float32_matmul_precision", "torch.Generator",
    "torch.finfo", "torch.iinfo", "torch.Size", "torch.set_default_tensor_type", "torch.get_rng_state",
    "torch.set_rng_state", "torch.broadcast_shapes", "torch.typename", "torch.is_storage",
    "torch.set_default_device", "torch.get_default_device",
}
_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")
# Tensor methods whose result is not a tensor.
_NON_TENSOR_METHODS = {
    "item", "tolist", "size", "dim", "numel", "ndimension", "element_size", "nelement", "numpy",
    "is_contiguous", "is_floating_point", "is_complex", "get_device", "data_ptr", "storage",
    "untyped_storage", "stride", "storage_offset", "type", "backward", "register_hook", "__len__",
    "equal", "is_pinned", "is_set_to", "is_shared", "has_names", "dim_order", "nbytes", "itemsize",
}
# Module methods that return the module itself.
_MODULE_SELF_METHODS = {
    "cuda", "npu", "cpu", "to", "half", "float", "double", "bfloat16", "train", "eval", "requires_grad_",
    "to_empty", "share_memory", "apply", "type", "xpu", "ipu",
}
_TENSOR_ATTRS = {"data", "T", "mT", "H", "mH", "grad", "real", "imag"}


def is_module_class_name(qual: str) -> bool:
    """True for ``torch.nn.Linear``-like class names (``torch.nn.*.Capitalised``)."""
    if not qual.startswith("torch.nn.") or qual.startswith("torch.nn.functional."):
        return False
    last = qual.rsplit(".", 1)[-1]
    return last[:1].isupper() and last not in {"Parameter", "ParameterList", "ParameterDict", "Buffer"}


def is_optimizer_class_name(qual: str) -> bool:
    if not qual.startswith("torch.optim.") and not qual.startswith("torch_npu.optim."):
        return False
    last = qual.rsplit(".", 1)[-1]
    return last[:1].isupper() and ".lr_scheduler." not in qual


def returns_tensor(qual: str) -> bool:
    if qual in _NON_TENSOR_TORCH:
        return False
    if qual.startswith(_TENSOR_NAMESPACES):
        return True
    parts = qual.split(".")
    return len(parts) == 2 and parts[0] == "torch" and parts[1][:1].islower() and not parts[1].startswith(("is_", "set_", "get_", "_"))


@dataclass
class ClassInfo:
    qualname: str
    bases: Tuple[str, ...]


@dataclass
class ProjectIndex:
    """Facts gathered from every file of the project before the passes run."""

    classes: Dict[str, ClassInfo] = field(default_factory=dict)
    argparse_defaults: Dict[str, Set[str]] = field(default_factory=dict)  # dest -> string defaults
    option_defaults: Dict[str, tuple] = field(default_factory=dict)  # option -> default literals (analyse.conditions)
    config_keys: Set[str] = field(default_factory=set)  # options declared by the configuration files the code names
    config_by_module: Dict[str, Dict[str, list]] = field(default_factory=dict)  # module -> options of the files it names
    module_flags: Dict[str, tuple] = field(default_factory=dict)  # module.NAME -> (kind, values): conditions.build.collect_flags
    # module.Class -> attribute -> (parameter, position, default known, default): conditions.build.collect_instance_settings
    instance_settings: Dict[str, Dict[str, tuple]] = field(default_factory=dict)
    modules: Set[str] = field(default_factory=set)
    import_helpers: Dict[str, "ImportHelper"] = field(default_factory=dict)  # qualname -> helper shape
    programs: bool = True   # script mode: the project may have an entry point (analyse.pipeline.run's *programs*)
    summaries: bool = True  # whether anything reads the call-graph summaries (analyse.pipeline.run's *graph_read*)

    _helper_leaves: Tuple[int, Dict[str, list]] = (-1, {})
    _module_cache: Dict[str, bool] = field(default_factory=dict)
    _roots: Tuple[int, frozenset] = (-1, frozenset())   # (len(modules) when made, top-level names of modules)

    def has_root(self, name: str) -> bool:
        """True when a project module is *name* or inside it (``builtins`` shadowed by a project package)."""
        n, roots = self._roots
        if n != len(self.modules):
            roots = frozenset(m.partition(".")[0] for m in self.modules)
            self._roots = (len(self.modules), roots)
        return name in roots

    def helpers_by_leaf(self) -> Dict[str, list]:
        """The import helpers by function name (built again when helpers were added)."""
        n, table = self._helper_leaves
        if n != len(self.import_helpers):
            table = {}
            for h in self.import_helpers.values():
                table.setdefault(h.qualname.rpartition(".")[2], []).append(h)
            self._helper_leaves = (len(self.import_helpers), table)
        return table

    def add_module(self, modname: str, tree: nodes.Module, resolver: "Resolver") -> None:
        self.modules.add(modname)
        tried: Set[int] = set()
        for cls in nodes_of(tree, nodes.ClassDef):
            bases = tuple(filter(None, (resolver.qualname(b) for b in cls.bases)))
            self.classes[cls.qname()] = ClassInfo(cls.qname(), bases)
        for call in nodes_of(tree, nodes.Call):
            func = call.func
            if isinstance(func, nodes.Attribute) and func.attrname == "add_argument":
                dest, default = _argparse_dest_default(call)
                if dest and default:
                    self.argparse_defaults.setdefault(dest, set()).update(default)
            elif (func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")) in _IMPORT_FUNCS:
                fn = call.scope()
                if isinstance(fn, nodes.FunctionDef) and id(fn) not in tried \
                        and isinstance(fn.parent, (nodes.Module, nodes.ClassDef)):
                    tried.add(id(fn))
                    helper = import_helper_shape(fn)
                    if helper is not None:
                        self.import_helpers[helper.qualname] = helper
        for imp in nodes_of(tree, nodes.Import, nodes.ImportFrom):
            fn = imp.scope()
            if isinstance(fn, nodes.FunctionDef) and id(fn) not in tried \
                    and isinstance(fn.parent, (nodes.Module, nodes.ClassDef)):
                tried.add(id(fn))
                helper = fixed_import_helper_shape(fn, resolver)
                if helper is not None:
                    self.import_helpers[helper.qualname] = helper

    def is_module_class(self, qual: str, _depth: int = 0) -> bool:
        if is_module_class_name(qual):
            return True
        if _depth > 20:
            return False
        cached = self._module_cache.get(qual)
        if cached is not None:
            return cached
        info = self.classes.get(qual)
        result = bool(info) and any(self.is_module_class(b, _depth + 1) for b in info.bases)
        self._module_cache[qual] = result
        return result

    def is_class(self, qual: str) -> bool:
        return qual in self.classes


_IMPORT_FUNCS = ("import_module", "__import__")


@dataclass(frozen=True)
class ImportHelper:
    """A function of the analysed code that imports the module a parameter names and hands it back
    (``def optional_import(module, version="", name=""): ... the_module = import_module(module) ...
    the_module = getattr(the_module, name) ... return the_module, True``): a call of it with a known string
    is an import of that module. *module* / *attr*: (position, name) of the parameter naming the module and
    of the one naming an attribute taken from it (``getattr(module, name)``), *attr* (-1, "") when none;
    *item*: the position of the module in the tuple the function returns, -1 when it returns the module
    itself. *fixed*: for a helper that imports one module by its own import statement (``def _get_ext(): try:
    import pkg._C as _C / except ImportError: _C = None / return _C``), that module's absolute name: a call of it
    is an import of that module (None where the import failed); *module* is then (-1, "")."""

    qualname: str
    module: Tuple[int, str]
    attr: Tuple[int, str] = (-1, "")
    item: int = -1
    fixed: str = ""   # the module the function imports by an import statement of its own (no parameter names it)


def import_helper_shape(fn: nodes.FunctionDef) -> Optional[ImportHelper]:
    """The :class:`ImportHelper` *fn* is, or None: a parameter is passed to ``import_module`` / ``__import__``,
    the result is bound to a local name (optionally replaced by ``getattr(that, <parameter>)``), and a
    ``return`` hands back that name or a tuple that holds it. No inference: the function's own statements."""
    params = [a.name for a in (fn.args.posonlyargs or []) + (fn.args.args or [])]
    if not params:
        return None
    # astroid's ``fn.is_method()`` is ``fn.type != "function"`` and a class frame around ``fn``, and its ``type`` is
    # never "function" in a class frame (method, classmethod or staticmethod) -- but it infers every decorator to
    # tell those apart (loading the modules they come from: a fifth of a DeepSpeed run went there). The class
    # frame alone is the same answer, without inference.
    offset = 1 if fn.parent is not None and isinstance(fn.parent.frame(), nodes.ClassDef) \
        and params[0] in ("self", "cls") else 0
    module_param = None
    held: Set[str] = set()
    attr_param = None
    for assign in fn.nodes_of_class(nodes.Assign):
        if len(assign.targets) != 1 or not isinstance(assign.targets[0], nodes.AssignName):
            continue
        value, target = assign.value, assign.targets[0].name
        if not isinstance(value, nodes.Call) or not value.args or not isinstance(value.args[0], nodes.Name):
            continue
        func = value.func
        leaf = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
        arg = value.args[0].name
        if leaf in _IMPORT_FUNCS and arg in params:
            if module_param not in (None, arg):
                return None
            module_param = arg
            held.add(target)
        elif leaf == "getattr" and arg in held and len(value.args) >= 2 and isinstance(value.args[1], nodes.Name) \
                and value.args[1].name in params and value.args[1].name != module_param:
            attr_param = value.args[1].name
            held.add(target)
    if module_param is None:
        return None
    item = None
    for ret in fn.nodes_of_class(nodes.Return):
        if ret.scope() is not fn:
            continue
        v = ret.value
        if isinstance(v, nodes.Name) and v.name in held:
            got = -1
        elif type(v) is nodes.Tuple and any(isinstance(e, nodes.Name) and e.name in held for e in v.elts):
            got = next(i for i, e in enumerate(v.elts) if isinstance(e, nodes.Name) and e.name in held)
        else:
            continue
        if item not in (None, got):
            return None
        item = got
    if item is None:
        return None
    pos = params.index(module_param) - offset
    attr = (params.index(attr_param) - offset, attr_param) if attr_param else (-1, "")
    return ImportHelper(fn.qname(), (pos, module_param), attr, item)


def fixed_import_helper_shape(fn: nodes.FunctionDef, resolver: "Resolver") -> Optional[ImportHelper]:
    """The :class:`ImportHelper` with a *fixed* module *fn* is, or None: a name of *fn* is bound by one import
    statement of its own (``import pkg._C as _C`` / ``from . import _C``) and otherwise only to ``None`` (the
    handler of a failed import, a failed check after it), and every ``return`` with a value hands back that name.
    The module it returns is what the import names (None where the import failed: callers test it). No inference:
    the function's own statements."""
    held = None
    for imp in nodes_of(fn, nodes.Import, nodes.ImportFrom):
        if imp.scope() is not fn:
            continue
        if isinstance(imp, nodes.Import):
            names = [(asname or mod.split(".")[0], mod if asname else mod.split(".")[0]) for mod, asname in imp.names]
        else:
            base = resolver.absolute_import(imp.modname, imp.level)
            names = [(asname or mod, f"{base}.{mod}" if base else mod) for mod, asname in imp.names if mod != "*"]
        for bound, mod in names:
            if held is not None and held[0] == bound:
                return None   # bound by two imports: which one is handed back is a choice
            if held is None and _returns_only(fn, bound):
                held = (bound, mod)
    if held is None:
        return None
    name, mod = held
    for b in fn.locals.get(name, ()):
        if isinstance(b, (nodes.Import, nodes.ImportFrom)):
            continue
        value = Resolver.assigned_value(b) if isinstance(b, nodes.AssignName) else _MISSING
        if not (isinstance(value, nodes.Const) and value.value is None):
            return None
    if not mod or mod.startswith(".") or mod.endswith("."):
        return None
    return ImportHelper(fn.qname(), (-1, ""), (-1, ""), -1, mod)


def _returns_only(fn: nodes.FunctionDef, name: str) -> bool:
    """Every ``return`` of *fn* with a value hands back *name*, and there is one."""
    seen = False
    for ret in nodes_of(fn, nodes.Return):
        if ret.scope() is not fn or ret.value is None:
            continue
        if not (isinstance(ret.value, nodes.Name) and ret.value.name == name):
            return False
        seen = True
    return seen


def _helper_arg(call: nodes.Call, where: Tuple[int, str]) -> Optional[str]:
    pos, name = where
    for kw in call.keywords or ():
        if kw.arg == name:
            return _const_str(kw.value)
    if 0 <= pos < len(call.args):
        return _const_str(call.args[pos])
    return None


def helper_import(value, r: Optional["Resolver"], item: int = -1) -> Optional[str]:
    """The module (or ``module.attr``) a call of one of the project's import helpers (:class:`ImportHelper`)
    imports, when its names are literal strings, and the value bound from it is the module: the call itself
    for a helper that returns the module (*item* -1), or element *item* of the tuple a helper hands back
    (``_C, _ = optional_import("pkg._C")`` is element 0)."""
    index = getattr(r, "index", None)
    if index is None or not index.import_helpers or not isinstance(value, nodes.Call):
        return None
    func = value.func
    leaf = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
    cands = index.helpers_by_leaf().get(leaf)
    if not cands:
        return None
    q = r.qualname(func)
    if q is None:
        return None
    helper = next((h for h in cands if h.qualname == q), None)
    if helper is None:
        # re-exported by a package above the defining module (`from pkg.utils import optional_import` of
        # pkg/utils/module.py's function)
        pkg = q.rpartition(".")[0]
        found = [h for h in cands if pkg and h.qualname.startswith(pkg + ".")]
        helper = found[0] if len(found) == 1 else None
    if helper is None or helper.item != item:
        return None
    if helper.fixed:
        return helper.fixed
    mod = _helper_arg(value, helper.module)
    if not mod or "{" in mod or mod.startswith(".") or mod.endswith("."):
        return None
    if helper.attr[1]:
        attr = _helper_arg(value, helper.attr)
        if attr:
            return f"{mod}.{attr}"
        if any(kw.arg == helper.attr[1] for kw in value.keywords or ()) or len(value.args) > helper.attr[0] >= 0:
            return None   # an attribute named by something not literal
    return mod


def unpacked_import(assign_name, r: Optional["Resolver"]) -> Optional[str]:
    """The module an element of a tuple target receives from an import helper that hands back a tuple
    (``_C, _ = optional_import("pkg._C")``), or None."""
    tup = assign_name.parent
    if type(tup) is not nodes.Tuple:
        return None
    stmt = tup.parent
    if not isinstance(stmt, nodes.Assign) or tup not in stmt.targets or not isinstance(stmt.value, nodes.Call):
        return None
    try:
        item = tup.elts.index(assign_name)
    except ValueError:
        return None
    return helper_import(stmt.value, r, item)


def dynamic_import(value, r: Optional["Resolver"] = None) -> Optional[str]:
    """The module ``importlib.import_module("pkg.mod")`` / ``__import__("pkg.mod")`` imports when its name is a
    known string (a literal or a name bound once to one); a relative name (``import_module(".mod",
    __package__)``) is made absolute against the importing module (*r*); and the module a call of one of the
    project's import helpers that returns it imports (:func:`helper_import`). None otherwise."""
    if not isinstance(value, nodes.Call):
        return None
    func = value.func
    leaf = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
    if leaf not in _IMPORT_FUNCS:
        return helper_import(value, r) if r is not None else None
    if not value.args:
        return None
    arg = value.args[0]
    name = _const_str(arg)
    if name is None and isinstance(arg, nodes.Name):
        try:
            defs = own_bindings(arg, arg.name)
        except Exception:
            defs = ()
        if len(defs) == 1 and isinstance(defs[0], nodes.AssignName):
            name = _const_str(Resolver.assigned_value(defs[0]))
    if not name or "{" in name or name.endswith("."):
        return None
    if name.startswith("."):
        if r is None:
            return None
        level = len(name) - len(name.lstrip("."))
        return r.absolute_import(name[level:], level) or None
    return name


def _const_str(node) -> Optional[str]:
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return node.value
    return None


def _argparse_dest_default(call: nodes.Call) -> Tuple[Optional[str], Set[str]]:
    dest = None
    names = [_const_str(a) for a in call.args]
    for kw in call.keywords or ():
        if kw.arg == "dest":
            dest = _const_str(kw.value)
    if dest is None:
        longs = [n for n in names if n and n.startswith("--")]
        shorts = [n for n in names if n and n.startswith("-") and not n.startswith("--")]
        plain = [n for n in names if n and not n.startswith("-")]
        pick = (longs or plain or shorts or [None])[0]
        if pick:
            dest = pick.lstrip("-").replace("-", "_")
    defaults: Set[str] = set()
    for kw in call.keywords or ():
        if kw.arg == "default":
            s = _const_str(kw.value)
            if s is not None:
                defaults.add(s)
    return dest, defaults


def _base_instance_attrs(cls: nodes.ClassDef, attr: str, depth: int = 0) -> list:
    """The assignments of ``self.<attr>`` in a base class defined in the same module (``class Extra(Block)``
    calling ``self.attn(...)`` that ``Block.__init__`` sets): no inference, module-level names only."""
    if depth > 3:
        return []
    root = cls.root()
    for b in cls.bases:
        if not isinstance(b, nodes.Name):
            continue
        defs = [d for d in root.locals.get(b.name, ()) if isinstance(d, nodes.ClassDef)]
        if len(defs) != 1 or defs[0] is cls:
            continue
        found = defs[0].instance_attrs.get(attr) or _base_instance_attrs(defs[0], attr, depth + 1)
        if found:
            return found
    return []


class Resolver:
    """Resolution for one module. Cheap to create; caches per node."""

    def __init__(self, tree: nodes.Module, modname: str, index: Optional[ProjectIndex] = None,
                 is_package: bool = False):
        self.tree = tree
        self.modname = modname
        self.index = index or ProjectIndex()
        self.is_package = is_package
        self._qual_cache: Dict[object, Optional[str]] = {}   # node -> qualname
        self._scope_memo: Dict[tuple, Optional[str]] = {}
        self._bindable: Optional[Set[str]] = None
        self._bindable_scoped: Optional[Set[Tuple[int, str]]] = None
        self._verdicts: Optional[Dict[int, bool]] = None   # _can_resolve of the AssignNames, made by _bindable_names
        self._type_cache: Dict[object, Optional[str]] = {}   # node -> type_of (nodes hash by identity)
        self._outer: Optional[List[Tuple[int, object, str]]] = None
        self._param_memo: Dict[tuple, Optional[str]] = {}
        # call_target per call, kept only when no qualname / type_of was under way (their cycle guards
        # answer None meanwhile): every pass asks about every call, and a later question reads the cached
        # name and receiver type again, so it gets the same answer
        self._target_cache: Dict[object, Optional[str]] = {}   # call node -> call_target
        self._busy = 0
        self._if_nodes: Dict[int, nodes.If] = {}

    # ------------------------------------------------------------------ names
    def absolute_import(self, modname: Optional[str], level: Optional[int]) -> str:
        modname = modname or ""
        if not level:
            return modname
        pkg = self.modname if self.is_package else self.modname.rpartition(".")[0]
        parts = pkg.split(".") if pkg else []
        if level > 1:
            parts = parts[: max(0, len(parts) - (level - 1))]
        base = ".".join(parts)
        if modname:
            return f"{base}.{modname}" if base else modname
        return base

    def qualname(self, node, _depth: int = 0) -> Optional[str]:
        """Dotted name an expression stands for, or None."""
        key = node   # astroid's nodes hash by identity (an id() call per question before)
        if key in self._qual_cache:
            return self._qual_cache[key]
        self._qual_cache[key] = None  # cycle guard
        self._busy += 1
        try:
            result = self._qualname(node, _depth)
        finally:
            self._busy -= 1
        self._qual_cache[key] = result
        return result

    def _qualname(self, node, depth: int) -> Optional[str]:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, nodes.Name):
            return self._lookup_name(node, node.name, depth)
        if isinstance(node, (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr)):
            base = self.qualname(node.expr, depth + 1)
            if base is not None:
                return f"{base}.{node.attrname}"
            if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self":
                return self._self_attr_import(node, depth)
            return None
        return None

    def self_attr_held(self, node: nodes.Attribute) -> Optional[str]:
        """:meth:`_self_attr_import` that also reads an attribute of an imported name (``self.op = ext_module.op``,
        ``import ext_module`` in ``__init__``): what the call graph links a call or a hand-on of ``self.op`` to (the
        passes keep naming the API where it is written)."""
        if not (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
            return None
        return self._self_attr_import(node, 0, chains=True)

    def _self_attr_import(self, node: nodes.Attribute, depth: int, chains: bool = False) -> Optional[str]:
        """``self.op`` of a class whose only assignment of it is ``self.op = GATConvFuse``, a
        name bound by imports alone (``from dgNN.operators import GATConvFuse`` in ``__init__``): the imported object, so
        ``self.op(...)`` in another method is a call of it."""
        scope = node.scope()
        cls = scope.parent if isinstance(scope, nodes.FunctionDef) else None
        if not isinstance(cls, nodes.ClassDef):
            return None
        assigns = cls.instance_attrs.get(node.attrname)
        if not assigns or len(assigns) != 1:
            return None
        parent = assigns[0].parent
        value = parent.value if isinstance(parent, nodes.Assign) and len(parent.targets) == 1 else None
        base = value
        while chains and isinstance(base, nodes.Attribute):   # ``self.op = ext_module.op``
            base = base.expr
        if not isinstance(base, nodes.Name):
            return None
        try:
            _scope, defs = lookup(base, base.name)
        except Exception:
            return None
        if not defs or not all(isinstance(d, (nodes.Import, nodes.ImportFrom)) for d in defs):
            return None
        return self.qualname(value, depth + 1)

    def outer_names(self) -> List[Tuple[int, object, str]]:
        """(pre-order position, node, dotted name) of every Name / Attribute / AssignAttr of the module
        that is not the object of an enclosing attribute (only ``a.b.c`` of ``a.b.c``, not ``a.b`` or
        ``a``) and resolves (:meth:`qualname`). Computed once per module for the passes that report
        uses of names; merge it with another selection by position (:func:`analyse.syntax.positions_of`)
        to keep the tree's order."""
        if self._outer is None:
            kinds = (nodes.Name, nodes.Attribute, nodes.AssignAttr)
            attr_like = (nodes.Attribute, nodes.AssignAttr)
            out: List[Tuple[int, object, str]] = []
            annotations = annotation_nodes(self.tree)   # ids of the nodes syntax.in_annotation holds for
            bindable = self._bindable_names()
            chain, name_t = (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr), nodes.Name
            for pos, node in zip(positions_of(self.tree, *kinds), nodes_of(self.tree, *kinds)):
                parent = node.parent
                if isinstance(parent, attr_like) and parent.expr is node:
                    continue
                # what qualname answers without a question: a name (or the innermost name of an attribute chain)
                # that nothing in the module can bind to a dotted name, no builtin and not `self`, resolves to
                # nothing (_lookup_name's first test), nor does a chain on a call, subscript or literal
                root = node
                while type(root) in chain:
                    root = root.expr
                if type(root) is not name_t:
                    continue
                name = root.name
                if name not in bindable and name not in _BUILTINS and name != "self":
                    continue
                q = self.qualname(node)
                if q and id(node) not in annotations:   # a type named in an annotation is no use of it
                    out.append((pos, node, q))
            self._outer = out
        return self._outer

    def _bindable_names(self) -> Set[str]:
        """Names that can resolve to a dotted name somewhere in this module: bound by an
        import, a def/class, or an assignment of a name/attribute (an alias). Any other
        name (a variable holding a call result, a loop variable ...) never resolves, so
        its scope lookup -- the costliest step -- is skipped."""
        if self._bindable is None:
            # the same for every resolver of the tree whose index knows the same import helpers
            kept = self.tree.__dict__.get("_npu_bindable")
            if kept is not None and kept[0] == self._helper_key():
                self._bindable = kept[1]
        if self._bindable is None:
            out: Set[str] = set()
            verdicts = self._verdicts = {}   # id of each AssignName -> _can_resolve (read again by _bindable_scopes)
            for n in nodes_of(self.tree, nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.ClassDef,
                              nodes.AssignName):
                if isinstance(n, nodes.Import):
                    for mod, asname in n.names:
                        out.add(asname or mod.split(".")[0])
                elif isinstance(n, nodes.ImportFrom):
                    for mod, asname in n.names:
                        out.add(asname or mod)
                elif isinstance(n, (nodes.FunctionDef, nodes.ClassDef)):
                    out.add(n.name)
                else:
                    ok = verdicts[id(n)] = self._can_resolve(n)
                    if ok:
                        out.add(n.name)
            self._bindable = out
            self.tree._npu_bindable = (self._helper_key(), out)
        return self._bindable

    def _helper_key(self) -> FrozenSet[str]:
        return frozenset(self.index.helpers_by_leaf()) if self.index.import_helpers else frozenset()

    def _bindable_scopes(self) -> Set[Tuple[int, str]]:
        """(scope id, name) for every scope of the module whose own bindings of the name include one
        that can resolve (:meth:`_bindable_names`). astroid's lookup only ever returns bindings from
        the scopes enclosing a use (or builtins), so a use none of whose enclosing scopes has such a
        binding never resolves either."""
        if self._bindable_scoped is None:
            kept = self.tree.__dict__.get("_npu_bindable_scoped")
            if kept is not None and kept[0] == self._helper_key():
                self._bindable_scoped = kept[1]
        if self._bindable_scoped is None:
            out: Set[Tuple[int, str]] = set()
            verdicts = self._verdicts or {}
            can = self._can_resolve
            for sc in nodes_of(self.tree, *_SCOPE_TYPES):
                for name, binds in sc.locals.items():
                    for b in binds:
                        ok = verdicts.get(id(b))
                        if ok is None:
                            ok = can(b)
                        if ok:
                            out.add((id(sc), name))
                            break
            self._bindable_scoped = out
            self.tree._npu_bindable_scoped = (self._helper_key(), out)
        return self._bindable_scoped

    def _can_resolve(self, binding) -> bool:
        if isinstance(binding, (nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.ClassDef)):
            return True
        if isinstance(binding, nodes.AssignName):
            value = self.assigned_value(binding)
            if value is None and type(binding.parent) is nodes.Tuple and self.index.import_helpers:
                stmt = binding.parent.parent
                value = stmt.value if isinstance(stmt, nodes.Assign) else None
            if isinstance(value, nodes.Call) and self.index.import_helpers:
                func = value.func
                leaf = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
                if leaf in self.index.helpers_by_leaf():
                    return True   # maybe a call of an import helper: decided when the name is looked up
            return isinstance(value, (nodes.Name, nodes.Attribute)) or dynamic_import(value, self) is not None
        return False

    def _lookup_name(self, node, name: str, depth: int) -> Optional[str]:
        if name not in self._bindable_names():
            return f"builtins.{name}" if name in _BUILTINS else None
        # Names bound only by imports / defs are position independent inside a scope:
        # memoise them per (scope, name); that covers most names in real code.
        try:
            scope = node.scope()
        except Exception:
            return None
        key = (id(scope), name)
        hit = self._scope_memo.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        scoped = self._bindable_scopes()
        sc = scope
        while sc is not None and (id(sc), name) not in scoped:
            parent = sc.parent
            sc = parent.scope() if parent is not None else None
        if sc is None:  # bound (if at all) only by plain values in the enclosing scopes: as above
            return f"builtins.{name}" if name in _BUILTINS else None
        try:
            _scope, defs = lookup(node, name)
        except Exception:  # astroid lookup failure on odd trees
            return None
        if defs and all(isinstance(d, (nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.ClassDef)) for d in defs):
            result = self._lookup_defs(defs, name, depth)
            self._scope_memo[key] = result
            return result
        return self._lookup_defs(defs, name, depth)

    def _lookup_defs(self, defs, name: str, depth: int) -> Optional[str]:
        if not defs:
            return None
        results = set()
        primary = set()
        for d in defs:
            r = self._def_qualname(d, name, depth)
            if r is None:
                if isinstance(d, (nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.ClassDef)):
                    return None
                continue
            results.add(r)
            if _in_try_body(d):
                primary.add(r)
        if len(results) == 1:
            return results.pop()
        if len(primary) == 1 and all(isinstance(d, (nodes.Import, nodes.ImportFrom)) for d in defs if _in_try_body(d)) \
                and all(_in_try_body(d) or raising_stand_in(d) for d in defs):
            # `try: from lib import f / except ImportError: def f(*a, **k): raise ImportError(...)`: the stand-in
            # only fails, so the name stands for the import (a call of it needs the library)
            return primary.pop()
        # `try: from flash_attn import f (v2) / except ImportError: from flash_attn.x import f (v1)`:
        # the name stands for the import of the try body when all bindings are imports of one package
        if len(primary) == 1 and all(isinstance(d, (nodes.Import, nodes.ImportFrom)) for d in defs) \
                and len({r.split(".", 1)[0] for r in results}) == 1:
            return primary.pop()
        if all(isinstance(d, (nodes.Import, nodes.ImportFrom)) for d in defs):
            return self._selected_import(defs, name, depth)
        return None

    def _selected_import(self, defs, name: str, depth: int) -> Optional[str]:
        """A name bound by alternative imports in the branches of an ``if``/``elif`` chain on an option
        (``if opt.backbone == 'grid': from .grid import Net`` / ``elif ...: from .plain import Net``): the
        import of the branch the option's default (argparse ``default=``, a literal, read as written) selects,
        when every other binding sits in a branch that default rules out. None when any test that tells the
        bindings apart cannot be told (tests around all of them, ``if __name__ == "__main__"``, do not matter)."""
        chains = [self._branches(d) for d in defs]
        common = set.intersection(*(set(c) for c in chains))
        chosen = set()
        for d, chain in zip(defs, chains):
            taken = True
            for test_id, in_body in chain:
                if (test_id, in_body) in common:
                    continue
                value = self._option_test(self._if_nodes[test_id].test)
                if value is None:
                    return None
                if value != in_body:
                    taken = False
            if taken:
                chosen.add(self._def_qualname(d, name, depth))
        return chosen.pop() if len(chosen) == 1 and None not in chosen else None

    def _branches(self, stmt) -> List[Tuple[int, bool]]:
        """The ``if`` statements around *stmt* in its own scope, innermost first: (id of the ``if``, whether
        *stmt* is in its body rather than its ``else``)."""
        out = []
        node, parent = stmt, stmt.parent
        while parent is not None and not isinstance(parent, _SCOPE_TYPES):
            if isinstance(parent, nodes.If) and node is not parent.test:
                self._if_nodes[id(parent)] = parent
                out.append((id(parent), any(node is b for b in parent.body)))
            node, parent = parent, parent.parent
        return out

    def _option_test(self, test) -> Optional[bool]:
        """The value of ``X == 'lit'`` / ``!=`` / ``in ('a', 'b')`` / ``not in`` whose X has one known string
        value (an option's default); None otherwise."""
        if not isinstance(test, nodes.Compare) or len(test.ops) != 1:
            return None
        op, right = test.ops[0]
        if op not in ("==", "!=", "in", "not in"):
            return None
        left = test.left
        lits = self._literal_strings(right)
        subject = left
        if lits is None and op in ("==", "!="):
            lits, subject = self._literal_strings(left), right
        if lits is None or isinstance(subject, nodes.Const):
            return None
        vals = self.strings(subject)
        if not vals or len(vals) != 1 or any("{}" in v for v in vals):
            return None
        hit = next(iter(vals)) in lits
        return hit if op in ("==", "in") else not hit

    @staticmethod
    def _literal_strings(node) -> Optional[Set[str]]:
        if isinstance(node, nodes.Const) and isinstance(node.value, str):
            return {node.value}
        if type(node) in (nodes.Tuple, nodes.List, nodes.Set) and node.elts \
                and all(isinstance(e, nodes.Const) and isinstance(e.value, str) for e in node.elts):
            return {e.value for e in node.elts}
        return None

    def _def_qualname(self, d, name: str, depth: int) -> Optional[str]:
        if isinstance(d, nodes.Import):
            for mod, asname in d.names:
                if asname == name:
                    return mod
                if asname is None and mod.split(".")[0] == name:
                    return name
            return None
        if isinstance(d, nodes.ImportFrom):
            base = self.absolute_import(d.modname, d.level)
            for mod, asname in d.names:
                if (asname or mod) == name and mod != "*":
                    return f"{base}.{mod}" if base else mod
            return None
        if isinstance(d, (nodes.FunctionDef, nodes.ClassDef)):
            return d.qname()
        if isinstance(d, nodes.AssignName):
            value = self.assigned_value(d)
            if value is not None and isinstance(value, (nodes.Name, nodes.Attribute)):
                return self.qualname(value, depth + 1)
            if value is None:
                return unpacked_import(d, self)
            return dynamic_import(value, self)
        return None

    @staticmethod
    def assigned_value(assign_name: nodes.AssignName):
        """The expression bound to a name by a plain ``x = expr`` / ``x: T = expr``."""
        parent = assign_name.parent
        if isinstance(parent, nodes.Assign) and assign_name in parent.targets:
            return parent.value
        if isinstance(parent, nodes.AnnAssign) and parent.target is assign_name:
            return parent.value
        if isinstance(parent, nodes.NamedExpr) and parent.target is assign_name:
            return parent.value
        return None

    # ------------------------------------------------------------------ calls
    def call_target(self, call: nodes.Call) -> Optional[str]:
        """Qualified name of the callee: a plain dotted name, or a method on a
        receiver whose type is known (``torch.Tensor.nonzero``)."""
        key = call
        got = self._target_cache.get(key, _MISSING)
        if got is not _MISSING:
            return got
        top = self._busy == 0
        result = self.qualname(call.func)
        if result is None:
            func = call.func
            if isinstance(func, nodes.Attribute):
                cands = self.method_candidates(func)
                if cands:
                    result = cands[0]
        if top:
            self._target_cache[key] = result
        return result

    def method_candidates(self, attr: nodes.Attribute) -> List[str]:
        """API names a method access may stand for, most specific first."""
        t = self.type_of(attr.expr)
        if t is None:
            return []
        return method_names_for_type(t, attr.attrname, self.index)

    # ------------------------------------------------------------------ types
    def type_of(self, node, _depth: int = 0) -> Optional[str]:
        key = node
        if key in self._type_cache:
            return self._type_cache[key]
        self._type_cache[key] = None
        result = None
        self._busy += 1
        try:
            result = self._type_of(node, _depth) if _depth <= _MAX_DEPTH else None
        except RecursionError:
            result = None
        finally:
            self._busy -= 1
        self._type_cache[key] = result
        return result

    def _type_of(self, node, depth: int) -> Optional[str]:
        if isinstance(node, nodes.Call):
            return self._call_type(node, depth)
        if isinstance(node, nodes.Name):
            return self._name_type(node, depth)
        if isinstance(node, nodes.Attribute):
            if isinstance(node.expr, nodes.Name) and node.expr.name in ("self", "cls"):
                return self._self_attr_type(node, depth)
            if node.attrname in _TENSOR_ATTRS and self.type_of(node.expr, depth + 1) == "torch.Tensor":
                return "torch.Tensor"
            if node.attrname == "module" and self.is_module_type(self.type_of(node.expr, depth + 1)):
                return "torch.nn.Module"
            return None
        if isinstance(node, nodes.Subscript):
            if self.type_of(node.value, depth + 1) == "torch.Tensor":
                return "torch.Tensor"
            return None
        if isinstance(node, nodes.BinOp):
            if "torch.Tensor" in (self.type_of(node.left, depth + 1), self.type_of(node.right, depth + 1)):
                return "torch.Tensor"
            return None
        if isinstance(node, nodes.UnaryOp):
            return self.type_of(node.operand, depth + 1)
        return None

    def _call_type(self, call: nodes.Call, depth: int) -> Optional[str]:
        q = self.qualname(call.func)
        if q is not None:
            if q == "torch.device":
                return "torch.device"
            if q == "torch.nn.Parameter" or q == "torch.nn.parameter.Parameter":
                return "torch.Tensor"
            if q in ("torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
                     "torch.nn.parallel.DataParallel"):
                return q
            if is_module_class_name(q) or is_optimizer_class_name(q):
                return q
            if q.startswith("torch.") and returns_tensor(q):
                return "torch.Tensor"
            if q.startswith("torch.Tensor.") and q.rsplit(".", 1)[1] not in _NON_TENSOR_METHODS:
                return "torch.Tensor"
            if self.index.is_class(q):
                return q
            return None
        func = call.func
        if isinstance(func, nodes.Attribute):
            recv = self.type_of(func.expr, depth + 1)
            if recv == "torch.Tensor":
                return None if func.attrname in _NON_TENSOR_METHODS else "torch.Tensor"
            if recv and self.is_module_type(recv) and func.attrname in _MODULE_SELF_METHODS:
                return recv
            return None
        # model(x): calling a module instance gives a tensor
        recv = self.type_of(func, depth + 1)
        if recv and self.is_module_type(recv):
            return "torch.Tensor"
        return None

    def _name_type(self, node: nodes.Name, depth: int) -> Optional[str]:
        param = self._only_a_parameter(node)
        if param is not None:
            # a name bound only as a parameter of its function: every use in the body sees that parameter,
            # so astroid's (position-dependent, costly) lookup is the same for all of them
            key = (id(param.parent), node.name)
            hit = self._param_memo.get(key, _MISSING)
            if hit is _MISSING:
                hit = self._param_memo[key] = self._param_type(param, param.parent, depth)
            return hit
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return None
        types = set()
        for d in defs:
            t = None
            if isinstance(d, nodes.AssignName):
                if isinstance(d.parent, nodes.Arguments):
                    t = self._param_type(d, d.parent, depth)
                else:
                    value = self.assigned_value(d)
                    if value is not None:
                        t = self.type_of(value, depth + 1)
            types.add(t)
        if len(types) == 1:
            return types.pop()
        types.discard(None)
        return types.pop() if len(types) == 1 else None

    @staticmethod
    def _only_a_parameter(node: nodes.Name) -> Optional[nodes.AssignName]:
        """The parameter *node* names when that is the only binding of the name in its function (not
        for names in the parameter list itself: defaults and annotations are looked up outside)."""
        try:
            scope = node.scope()
        except Exception:
            return None
        if not isinstance(scope, (nodes.FunctionDef, nodes.Lambda)):
            return None
        binds = scope.locals.get(node.name)
        if not binds or len(binds) != 1:
            return None
        b = binds[0]
        if type(b) is not nodes.AssignName or not isinstance(b.parent, nodes.Arguments):
            return None
        cur = node.parent
        while cur is not None and cur is not scope:
            if isinstance(cur, nodes.Arguments):
                return None
            cur = cur.parent
        return b

    def _param_type(self, name: nodes.AssignName, args: nodes.Arguments, depth: int) -> Optional[str]:
        func = args.parent
        ann = None
        all_args = list(args.posonlyargs or []) + list(args.args or []) + list(args.kwonlyargs or [])
        anns = list(args.posonlyargs_annotations or []) + list(args.annotations or []) + list(args.kwonlyargs_annotations or [])
        for a, an in zip(all_args, anns):
            if a is name:
                ann = an
        if ann is not None:
            q = self.qualname(ann)
            if q in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
                return "torch.Tensor"
            if q and (is_module_class_name(q) or self.index.is_module_class(q)):
                return q
            if q == "torch.device":
                return "torch.device"
            return None
        if not isinstance(func, nodes.FunctionDef):
            return None
        cls = func.parent if isinstance(func.parent, nodes.ClassDef) else None
        first = all_args[0] if all_args else None
        if cls is not None and first is name and name.name in ("self",) and not _is_static(func):
            return cls.qname()
        if _forward_param_guess(name, func, cls, first, self.index):
            return "torch.Tensor"
        return None

    def guessed_tensor(self, node) -> bool:
        """True when *node* is a name whose ``torch.Tensor`` type is only the guess for an unannotated parameter of
        an ``nn.Module.forward`` (:meth:`_param_type`): a list of memories or a positional-bias module passed in is
        such a parameter too, so a method torch.Tensor does not document called on it is no tensor API."""
        if not isinstance(node, nodes.Name):
            return False
        param = self._only_a_parameter(node)
        if param is not None:
            return self._guessed_param(param)
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return False
        guessed = False
        for d in defs:   # `mems = mems.copy() if mems else [...]`: the parameter's guess is the only type the name has
            if isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Arguments):
                if not self._guessed_param(d):
                    return False
                guessed = True
            elif isinstance(d, nodes.AssignName):
                value = self.assigned_value(d)
                if value is not None and self.type_of(value) is not None:
                    return False
        return guessed

    def _guessed_param(self, param: nodes.AssignName) -> bool:
        args = param.parent
        func = args.parent
        if not isinstance(func, nodes.FunctionDef):
            return False
        all_args = list(args.posonlyargs or []) + list(args.args or []) + list(args.kwonlyargs or [])
        anns = list(args.posonlyargs_annotations or []) + list(args.annotations or []) + list(args.kwonlyargs_annotations or [])
        if any(a is param and an is not None for a, an in zip(all_args, anns)):
            return False
        cls = func.parent if isinstance(func.parent, nodes.ClassDef) else None
        return _forward_param_guess(param, func, cls, all_args[0] if all_args else None, self.index)

    def _self_attr_type(self, node: nodes.Attribute, depth: int) -> Optional[str]:
        scope = node.scope()
        cls = scope.parent if isinstance(scope, nodes.FunctionDef) else None
        if not isinstance(cls, nodes.ClassDef):
            return None
        assigns = cls.instance_attrs.get(node.attrname)
        if not assigns:
            assigns = _base_instance_attrs(cls, node.attrname)
        if not assigns:
            return None
        types = set()
        for a in assigns:
            parent = a.parent
            value = parent.value if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) else None
            types.add(self.type_of(value, depth + 1) if value is not None else None)
        types.discard(None)
        return types.pop() if len(types) == 1 else None

    def is_module_type(self, t: Optional[str]) -> bool:
        return bool(t) and (t in ("torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel")
                            or self.index.is_module_class(t))

    def is_tensor(self, node) -> bool:
        return self.type_of(node) == "torch.Tensor"

    # ---------------------------------------------------------------- strings
    def strings(self, node, _depth: int = 0) -> Optional[Set[str]]:
        """Possible string values of an expression, or None when unknown.
        Unknown parts of formatted strings are rendered as ``{}``."""
        if _depth > _MAX_DEPTH or node is None:
            return None
        s = _const_str(node)
        if s is not None:
            return {s}
        if isinstance(node, nodes.JoinedStr):
            out = [""]
            for part in node.values:
                if isinstance(part, nodes.Const):
                    piece = {str(part.value)}
                else:
                    inner = self.strings(part.value, _depth + 1) if isinstance(part, nodes.FormattedValue) else None
                    piece = inner if inner and len(inner) <= 4 else {"{}"}
                out = [o + p for o in out for p in piece][:16]
            return set(out)
        if isinstance(node, nodes.IfExp):
            return _union(self.strings(node.body, _depth + 1), self.strings(node.orelse, _depth + 1))
        if isinstance(node, nodes.BoolOp):
            acc: Optional[Set[str]] = None
            for v in node.values:
                acc = _union(acc, self.strings(v, _depth + 1))
            return acc
        if isinstance(node, nodes.BinOp) and node.op == "+":
            left = self.strings(node.left, _depth + 1)
            right = self.strings(node.right, _depth + 1)
            if left is None and right is None:
                return None
            left = left or {"{}"}
            right = right or {"{}"}
            return {a + b for a in left for b in right}
        if isinstance(node, nodes.BinOp) and node.op == "%":
            left = self.strings(node.left, _depth + 1)
            if left:
                return {re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdifr]", "{}", x) for x in left}
            return None
        if isinstance(node, nodes.Call):
            func = node.func
            if isinstance(func, nodes.Attribute) and func.attrname == "format":
                base = self.strings(func.expr, _depth + 1)
                if base:
                    return {re.sub(r"\{[^{}]*\}", "{}", b) for b in base}
                return None
            q = self.qualname(func)
            if q in ("os.environ.get", "os.getenv") and len(node.args) >= 2:
                return self.strings(node.args[1], _depth + 1)
            if q == "str" and node.args:
                return self.strings(node.args[0], _depth + 1)
            return None
        if isinstance(node, nodes.Name):
            try:
                defs = own_bindings(node, node.name)
            except Exception:
                return None
            acc = None
            any_known = False
            for d in defs:
                if isinstance(d, nodes.AssignName):
                    value = self.assigned_value(d)
                    if value is None and isinstance(d.parent, nodes.Arguments):
                        value = _param_default(d, d.parent)
                    if value is not None:
                        vals = self.strings(value, _depth + 1)
                        if vals is not None:
                            any_known = True
                            acc = _union(acc, vals)
            return acc if any_known else None
        if isinstance(node, nodes.Attribute):
            defaults = self.index.argparse_defaults.get(node.attrname)
            if defaults and isinstance(node.expr, nodes.Name) and node.expr.name not in ("self", "cls"):
                return set(defaults)
            if isinstance(node.expr, nodes.Name) and node.expr.name == "self":
                return self._self_attr_strings(node, _depth)
            return None
        return None

    def _self_attr_strings(self, node: nodes.Attribute, depth: int) -> Optional[Set[str]]:
        scope = node.scope()
        cls = scope.parent if isinstance(scope, nodes.FunctionDef) else None
        if not isinstance(cls, nodes.ClassDef):
            return None
        acc = None
        for a in cls.instance_attrs.get(node.attrname, ()):
            parent = a.parent
            if isinstance(parent, nodes.Assign):
                acc = _union(acc, self.strings(parent.value, depth + 1))
        return acc

    def device_strings(self, node) -> Optional[Set[str]]:
        """Strings an expression may denote as a device (also through ``torch.device(...)``)."""
        if isinstance(node, nodes.Call) and self.qualname(node.func) == "torch.device" and node.args:
            return self.strings(node.args[0])
        return self.strings(node)


def raising_stand_in(fd, _seen=None) -> bool:
    """*fd* is a function defined in an ImportError handler whose body only raises, or only calls another such
    stand-in of the same handler (``def g(**kw): f(**kw)``): a placeholder for a missing library, not an alternative."""
    if isinstance(fd, nodes.AssignName) and isinstance(fd.parent, nodes.Assign) \
            and isinstance(fd.parent.parent, nodes.ExceptHandler) and isinstance(fd.parent.value, nodes.Name):
        # `make_q4 = error_raiser` in the handler, `def error_raiser(*a, **k): raise ...` beside it
        handler = fd.parent.parent
        target = fd.parent.value.name
        return any(isinstance(st, nodes.FunctionDef) and st.name == target and raising_stand_in(st, _seen)
                   for st in handler.body)
    if not isinstance(fd, nodes.FunctionDef) or not isinstance(fd.parent, nodes.ExceptHandler):
        return False
    body = [st for st in fd.body if not (isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Const))]
    if not body:
        return False
    if isinstance(body[-1], nodes.Raise):
        return True
    seen = (_seen or frozenset()) | {fd.name}
    siblings = {st.name: st for st in fd.parent.body if isinstance(st, nodes.FunctionDef)}
    return all(isinstance(st, (nodes.Expr, nodes.Return)) and isinstance(st.value, nodes.Call)
               and isinstance(st.value.func, nodes.Name) and st.value.func.name in siblings
               and st.value.func.name not in seen and raising_stand_in(siblings[st.value.func.name], seen)
               for st in body)


def _in_try_body(node) -> bool:
    """Whether *node* is a statement of the body of a ``try`` that has an ImportError handler."""
    parent = node.parent
    try_cls = getattr(nodes, "Try", None) or getattr(nodes, "TryExcept")
    if not isinstance(parent, try_cls):
        return False
    body = parent.__dict__.get("_npu_body_ids")
    if body is None:   # a set per try: `node in parent.body` for each binding made a long try quadratic
        body = parent._npu_body_ids = frozenset(map(id, parent.body))
    if id(node) not in body:
        return False
    for h in parent.handlers:
        names = [h.type] if h.type is not None and type(h.type) is not nodes.Tuple else (h.type.elts if h.type is not None else [])
        if h.type is None or any(getattr(n, "name", getattr(n, "attrname", "")) in ("ImportError", "ModuleNotFoundError") for n in names):
            return True
    return False


def _param_default(name: nodes.AssignName, args: nodes.Arguments):
    positional = list(args.posonlyargs or []) + list(args.args or [])
    defaults = list(args.defaults or [])
    offset = len(positional) - len(defaults)
    for i, a in enumerate(positional):
        if a is name and i >= offset:
            return defaults[i - offset]
    for a, d in zip(args.kwonlyargs or [], args.kw_defaults or []):
        if a is name:
            return d
    return None


def _forward_param_guess(name: nodes.AssignName, func: nodes.FunctionDef, cls, first, index: ProjectIndex) -> bool:
    """An unannotated parameter (not the first) of a project ``nn.Module``'s ``forward`` whose name does not say it
    is a flag, a count or a mask: guessed to be a tensor."""
    if cls is None or func.name != "forward" or first is name or not index.is_module_class(cls.qname()):
        return False
    return name.name not in ("mask", "attention_mask", "training", "inplace") and not name.name.startswith(
        ("is_", "use_", "return_", "num_", "n_"))


def _is_static(func: nodes.FunctionDef) -> bool:
    if not func.decorators:
        return False
    for d in func.decorators.nodes:
        if isinstance(d, nodes.Name) and d.name in ("staticmethod", "classmethod"):
            return True
    return False


def _union(a: Optional[Set[str]], b: Optional[Set[str]]) -> Optional[Set[str]]:
    if a is None:
        return set(b) if b is not None else None
    if b is None:
        return a
    return a | b


def method_names_for_type(t: str, meth: str, index: ProjectIndex) -> List[str]:
    if t == "torch.Tensor":
        return [f"torch.Tensor.{meth}"]
    if t == "torch.device":
        return [f"torch.device.{meth}"]
    if is_optimizer_class_name(t):
        return [f"{t}.{meth}", f"torch.optim.Optimizer.{meth}"]
    if t in ("torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel"):
        return [f"{t}.{meth}", f"torch.nn.Module.{meth}"]
    if is_module_class_name(t):
        return [f"{t}.{meth}", f"torch.nn.Module.{meth}"]
    if index.is_module_class(t):
        # a project subclass: its own methods first, then torch.nn.Module's
        return [f"{t}.{meth}", f"torch.nn.Module.{meth}"]
    if index.is_class(t):
        return [f"{t}.{meth}"]
    return []


CUDA_DEVICE_RE = re.compile(r"^cuda(?::(?:\d+|\{\}))?$")


def is_cuda_device_string(s: str) -> bool:
    return bool(CUDA_DEVICE_RE.match(s.strip()))
