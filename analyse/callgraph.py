"""A static call graph of every function and method of a set of modules.

Nothing is imported or executed: each module is parsed (astroid, no
inference) and reduced to a small, picklable :class:`ModuleSummary`

* the functions and methods it defines with their line ranges (module-level
  code is the pseudo-function ``<modname>.<module>``),
* its classes with resolved bases and method names,
* its module-level bindings (imports, aliases, ``functools.partial``,
  ``X = Fn.apply``), ``from .x import *`` sources and ``__all__``,
* what each function builds or loads of compiled code (``builds``: a CUDA or C++ extension, a torch_npu
  kernel) and the class attributes listing classes that methods read (``ClassSummary.lists`` / ``reads``),
  so the linker can tell kernel builders and the loaders that choose among them
  (:meth:`Linker.builder_kinds`, :meth:`Linker.kernel_loader`),
* each call site, with the callee as far as it can be told statically:
  a dotted name, ``self.m()`` / ``cls.m()``, ``super().m()``, a method on a
  receiver whose class is known, a call of a compiled extension module
  (``ext_module = ext_loader.load_ext('_ext', [...])``), or a dynamic call.

so the trees can be dropped right after (whole libraries stay in bounded
memory). :func:`build_graph` links the summaries into a ``networkx.DiGraph``
(nodes: qualnames such as ``mmcv.ops.roi_align.RoIAlign.forward``; edges:
caller -> callee with the call ``line``), following re-exports through
``__init__`` modules, star imports, class hierarchies (``self`` / ``cls`` /
``super()`` dispatch) and ``torch.autograd.Function.apply`` -> ``forward`` /
``backward``. Calls that point into the analysed code but cannot be resolved
(dynamic ``getattr``, ambiguous star imports, a module that failed to parse)
are recorded as *unknown* marks on the caller -- never as a wrong edge.

:func:`propagate` spreads root reasons to all transitive callers, and
:func:`add_chains` gives script-mode findings inside project functions the
call chain from the script that reaches them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from astroid import nodes

from analyse.conditions.model import off_whatever_set_in_code
from analyse.conditions.options import config_values, params_are_choices
from analyse.guards import block_position, block_tables, cuda_probe_settled, guard_of, stopping_chain_arm, tree_memo
from analyse.resolve import Resolver, _const_str, dynamic_import, unpacked_import
from analyse.syntax import LEAVES, NPU_WORD, is_main_guard, mentions_npu, nodes_of, own_bindings, \
    sole_assigned_value, walk

if TYPE_CHECKING:  # networkx is imported where a graph is built: the per-file summaries (worker processes) need none
    import networkx as nx

MODULE_FN = "<module>"
# the ``if __name__ == "__main__":`` block of a module: it runs only when the module is the program, never when
# another module imports it (its calls belong to this pseudo-function, which only the module's own entry point
# has as a root)
MAIN_FN = "<main>"
PSEUDO_FNS = (MODULE_FN, MAIN_FN)
# call-edge data: SELF_OF = the caller's class when the call is on the caller's own instance (``self.m()``,
# ``super().m()``) and runs a method of that class's hierarchy; STUB_OF = (override class, method) of an edge from
# ``self.m()`` that finds a stub to a subclass's override (taken only when ``self`` is an instance of that class)
SELF_OF, STUB_OF = "self_of", "stub_of"
STATUS_ORDER = ("unsupported", "conditional", "unknown", "needs-migration")
MAX_REASONS = 20

AUTOGRAD_FUNCTION_BASES = {
    "torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction",
    "torch.autograd.InplaceFunction", "torch.autograd.function._SingleLevelFunction",
}
PARTIAL_NAMES = {"functools.partial", "partial", "functools.partialmethod"}
EXT_LOADERS_SUFFIX = ("load_ext", "cpp_extension.load", "cpp_extension.load_inline")

# call kinds
K_NAME, K_SELF, K_SUPER, K_METHOD, K_INST, K_EXT, K_DYN, K_REF = "name", "self", "super", "method", "inst", "ext", "dyn", "ref"
# a method called on what a call of one of the project's functions returns (``make_spec(name).build()``): a = the
# function, b = the method; the linker follows the objects the function builds and returns (``made_by``)
K_RESULT = "result"
# a call into what an instance attribute holds (``self._module.run(x)`` / ``self._fn(x)``, the attribute set with
# ``self._module = get_module(...)`` in another method): a = the class, b = the attribute; no edge of its own, the
# library's statuses read the values the class assigns to it (``ModuleSummary.held``)
K_HELD = "held"
HELD_SEP = "\x1f"
# a call through a container of callables (``COMMANDS[args.cmd](...)``, ``MODELS.build(dict(type="X"))``,
# ``REGISTRY.get(name)(...)``): a = the container's qualified name, b = the keys it is indexed by (joined by
# KEY_SEP; "" when they cannot be told, ALL_KEYS when the whole container is handed to a call that dispatches)
K_LOOKUP = "lookup"
KEY_SEP = "\x1f"
ALL_KEYS = "*"
# b of a lookup may also hold, after METH_SEP, the method called on the entry (``cls = REG.get(k); cls.from_config()``);
# a container ending in KIND_SEP + kind is the part of a registry object filled by its ``register_<kind>`` decorator
# and read by its ``get_<kind>[_class]`` method
METH_SEP = "\x1d"
# b of an ext / dynamic call whose op name is a parameter of the enclosing function (``getattr(_C, name)`` in the
# function a factory ``make(name)`` returns): PARAM_MARK + the parameter's name; the factory's call site names the op
PARAM_MARK = "$"
# a container of a lookup named by its getter: GETTER_MARK + the qualname of a function that may return an entry
# of a module-level container (``return SUPPORTED[name][kind]``); the linker reads the container it returns from
GETTER_MARK = "&"
KIND_SEP = ":"
_GETTER = re.compile(r"^get_(\w+?)(?:_class|_cls)?$")
_REGISTER = re.compile(r"^register_(\w+)$")

# What a function builds or loads of compiled code (ModuleSummary.builds), read by the linker to tell what a kernel
# builder class makes (Linker.builder_kinds): a CUDA extension (``CUDAExtension(...)``, ``cpp_extension.load`` of CUDA
# sources or with nvcc flags), a C++ one for the host (``CppExtension(...)``, ``load`` of C++ sources only), or a use
# of torch_npu (an NPU kernel: ``import torch_npu``, ``torch_npu.npu_fusion_attention(...)``)
BUILD_CUDA, BUILD_CPP, BUILD_NPU = "cuda", "cpp", "npu"
_CUDA_BUILD_CALLS = {"torch.utils.cpp_extension.CUDAExtension"}
_CPP_BUILD_CALLS = {"torch.utils.cpp_extension.CppExtension"}
_JIT_BUILD_CALLS = {"torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"}
_CUDA_JIT_KEYWORDS = {"cuda_sources", "extra_cuda_cflags"}


@dataclass
class ClassSummary:
    qualname: str
    line: int
    bases: Tuple[str, ...]
    methods: Set[str] = field(default_factory=set)
    stubs: Set[str] = field(default_factory=set)     # methods with no body of their own (abstract, pass, raise)
    constructors: Set[str] = field(default_factory=set)   # classmethods that build ``cls(...)``
    statics: Set[str] = field(default_factory=set)        # static and class methods (not run through an instance)
    # class attributes holding a callable by name (``_target: Type = field(default_factory=lambda: Model)``,
    # ``_target = Writer``): attribute -> the dotted name it holds, which ``self._target(...)`` calls
    attrs: Dict[str, str] = field(default_factory=dict)
    # class attributes set to a call's result in the class body (``OPERATOR = get_operator("lib", "op")``):
    # attribute -> (line, end line) of the assignment; ``Cls.OPERATOR(...)`` / ``self.OPERATOR(...)`` runs that value
    values: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    # class attributes set in the class body to a list or tuple of names (``REGISTRY = [CudaExt, NpuExt]``, also
    # ``REGISTRY: List[Ext] = []``): attribute -> the qualified names listed
    lists: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # method -> the attributes of :attr:`lists` it reads on its class (``self.REGISTRY``, ``cls.REGISTRY``,
    # ``self.__class__.REGISTRY``, ``type(self).REGISTRY``): a subclass's own list is what it reads there
    reads: Dict[str, Tuple[str, ...]] = field(default_factory=dict)


@dataclass
class ModuleSummary:
    modname: str
    relpath: str
    is_package: bool
    n_lines: int
    functions: Dict[str, Tuple[int, int]] = field(default_factory=dict)   # qualname -> (line, end_line)
    classes: Dict[str, ClassSummary] = field(default_factory=dict)
    bindings: Dict[str, str] = field(default_factory=dict)                # top-level name -> target qualname
    star_imports: List[str] = field(default_factory=list)
    all_names: Optional[List[str]] = None
    top_names: Set[str] = field(default_factory=set)                     # names defined at top level
    imports: Set[str] = field(default_factory=set)                       # absolute modules imported
    ext_aliases: Dict[str, Tuple[str, Tuple[str, ...]]] = field(default_factory=dict)
    # (caller, line, kind, a, b)
    calls: List[Tuple[str, int, str, str, str]] = field(default_factory=list)
    has_main_guard: bool = False
    guards: Dict[int, str] = field(default_factory=dict)                 # index in calls -> condition text
    # index in calls -> how the caller uses the returned value: RESULT_CALLED (`f().forward(x)`, `f()(x)`) or
    # RESULT_TESTED (`if not f():`, `if f() is None:`)
    result_uses: Dict[int, str] = field(default_factory=dict)
    # functions whose except branch (one that does not re-raise) binds None or returns None: on failure they
    # hand None to their caller (`except Exception: fbd = None` ... `return fbd`)
    none_on_failure: Set[str] = field(default_factory=set)
    dynamic: List[Tuple[str, int, str]] = field(default_factory=list)    # (caller, line, expression)
    untyped_calls: int = 0                                               # method calls on receivers of unknown type
    npu_evidence: Dict[str, List[str]] = field(default_factory=dict)    # kind -> ["path:line: what"]
    # (container, key, target): the callables a module puts in a container -- a dict / list literal, ``C[k] = f``,
    # a decorator that registers its target (container "@" + the decorator's qualname when the decorator is a
    # function that stores its argument: the linker finds its container)
    registrations: List[Tuple[str, str, str]] = field(default_factory=list)
    storers: Dict[str, str] = field(default_factory=dict)               # function -> module container it fills
    getters: Dict[str, str] = field(default_factory=dict)               # function -> module container it reads
    # functions that build and hand back a function of their own (``def make(name): def call(*a): ...;
    # return call``): factory -> (the inner function, the factory's positional parameters)
    closures: Dict[str, Tuple[str, Tuple[str, ...]]] = field(default_factory=dict)
    # module-level names bound by alternative imports that the resolver cannot tell apart (``if USE_X: from a
    # import k as backend`` / ``else: import b_cuda as backend``): name -> [(target, condition of its binding or
    # None)]; a call of the name (or of an attribute of it) may run each target
    alt_bindings: Dict[str, List[Tuple[str, Optional[str]]]] = field(default_factory=dict)
    # operators the module registers with the dispatcher by decorating a function (``@torch.library.custom_op(
    # "ns::name", ...)``, or a wrapper of it called the same way): "torch.ops.ns.name" -> the decorated function
    custom_ops: Dict[str, str] = field(default_factory=dict)
    # index in calls -> the condition of the alternative binding (alt_bindings) the call runs; two alternatives
    # of one call that reach the same function make its edge unconditional
    alt_conds: Dict[int, Optional[str]] = field(default_factory=dict)
    # index in calls -> (line of the chain, arm, arms) of a guarded call in an arm of an ``if`` / ``elif`` chain whose
    # final ``else`` only stops (analyse.guards.stopping_chain_arm): the arms are no fallbacks for each other
    chains: Dict[int, Tuple[int, int, int]] = field(default_factory=dict)
    # index in calls -> (positional arguments, keyword names, whether *args / **kwargs are passed)
    call_args: Dict[int, Tuple[int, Tuple[str, ...], bool]] = field(default_factory=dict)
    params: Dict[str, Tuple[str, ...]] = field(default_factory=dict)     # function -> its parameter names
    # module-level names bound to a call's result (``contract = make("contract")``): name -> (the callee as
    # written, its literal string arguments by position (None where not one), its literal keyword arguments)
    factory_calls: Dict[str, Tuple[str, Tuple[Optional[str], ...], Tuple[Tuple[str, str], ...]]] = \
        field(default_factory=dict)
    # module-level functions that hand back an object they build (``return Cls(...)``, ``p = Cls(...); return p``):
    # function -> the project names it builds (classes, or other such factories)
    made_by: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # class + HELD_SEP + attribute -> one entry per value the class's methods assign to ``self.<attribute>``: the
    # project calls that compute it, each (K_NAME, function) or (K_RESULT, function, method); an empty entry for a
    # value that needs none of them (a literal, a parameter, an outside object); ``None`` values and
    # ``self.<other>`` values are left out / followed (analyse.library: a call into the attribute needs one of them)
    held: Dict[str, List[Tuple[Tuple[str, ...], ...]]] = field(default_factory=dict)
    # script mode (analyse.reach): references handed to calls whose value is kept for later rather than used where
    # it is made -- in the value of a module-level binding (keeper "<module path>.NAME", run where code reads NAME) or
    # in a function's return expression (keeper "<function>" + RESULT_MARK, run where a caller takes the result):
    # (keeper, line, kind, a, b); and index in calls -> keeper, for a call made there (its callee runs, what the
    # callee hands back is kept)
    kept_refs: List[Tuple[str, int, str, str, str]] = field(default_factory=list)
    kept_calls: Dict[int, str] = field(default_factory=dict)
    # script mode: index in calls -> the guard (a dict, analyse.guards.Guard.to_dict) of the binding that makes a
    # local one of several classes (``if use_fsdp: DP = FSDP`` / ``else: DP = DDP``, then ``DP(...)``): the call
    # builds that class only where the binding's guard holds
    alt_guards: Dict[int, dict] = field(default_factory=dict)
    # per-module facts for entry points and reach (analyse.reach.module_facts), made with the summary
    reach: Dict[str, object] = field(default_factory=dict)
    # function -> what it builds or loads of compiled code (BUILD_CUDA / BUILD_CPP / BUILD_NPU)
    builds: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # indices in calls of calls that run on host tensors: an argument is a host copy (``x.cpu()``, ``x.to("cpu")``),
    # or the call sits in the branch of a CPU device test (``if x.device.type == "cpu":``); a CPU-only compiled op
    # called so runs on the host whatever device the caller's tensors are on (analyse.library)
    host_calls: Set[int] = field(default_factory=set)
    # decorated functions -> the dotted names of their decorators as written (``@dispatch("op")`` -> the name
    # ``dispatch`` resolves to); read with :attr:`name_dispatchers` (:meth:`Linker.name_dispatched`)
    decorated: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # functions of the module that dispatch a decorated function by its own name: somewhere inside (a nested
    # wrapper) they look the wrapped function's name up on another object, ``getattr(backend, func.__name__)``
    # (or a local bound to ``func.__name__``), and call what they find instead of the function's own body
    name_dispatchers: Set[str] = field(default_factory=set)

    @property
    def module_fn(self) -> str:
        return f"{self.modname}.{MODULE_FN}"

    def exported(self) -> Set[str]:
        """Names ``from m import *`` gives: ``__all__`` or the public top-level names."""
        if self.all_names is not None:
            return set(self.all_names)
        return {n for n in self.top_names if not n.startswith("_")}


# --------------------------------------------------------------------------- extraction

def _decorator_names(fn) -> Set[str]:
    out = set()
    if fn.decorators:
        for d in fn.decorators.nodes:
            if isinstance(d, nodes.Name):
                out.add(d.name)
            elif isinstance(d, nodes.Attribute):
                out.add(d.attrname)
    return out


def _decorator_targets(fn, r: Resolver) -> Tuple[str, ...]:
    """The dotted names *fn*'s decorators resolve to (``@dispatch("op")`` and ``@dispatch`` -> ``dispatch``'s)."""
    out: List[str] = []
    for d in fn.decorators.nodes:
        target = d.func if isinstance(d, nodes.Call) else d
        if isinstance(target, (nodes.Name, nodes.Attribute)):
            q = r.qualname(target)
            if q and q not in out:
                out.append(q)
    return tuple(out)


def _names_wrapped_function(node) -> bool:
    """*node* is the name of a function handed to an enclosing function: ``func.__name__`` with ``func`` a
    parameter of a function around it, or a local bound once to such an expression (``name = func.__name__``)."""
    if isinstance(node, nodes.Name):
        node = sole_assigned_value(node)
    if not (isinstance(node, nodes.Attribute) and node.attrname == "__name__" and isinstance(node.expr, nodes.Name)):
        return False
    try:
        defs = own_bindings(node.expr, node.expr.name)
    except Exception:
        return False
    return len(defs) == 1 and isinstance(defs[0], nodes.AssignName) and isinstance(defs[0].parent, nodes.Arguments)


def _find_name_dispatchers(tree: nodes.Module, s: "ModuleSummary") -> None:
    """:attr:`ModuleSummary.name_dispatchers`: the outermost function (module level or a method) around a
    ``getattr(obj, <the wrapped function's name>)`` inside a nested function -- a decorator (factory) whose wrapper
    runs ``obj``'s method of the decorated function's name (a backend registry's implementation) in its place."""
    for call in nodes_of(tree, nodes.Call):
        func = call.func
        if not (isinstance(func, nodes.Name) and func.name == "getattr" and len(call.args) >= 2):
            continue
        if not _names_wrapped_function(call.args[1]):
            continue
        scope = call.scope()
        depth = 0
        outer = None
        while isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda)):
            depth += 1
            if isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                outer = scope
            parent = scope.parent
            if parent is None:
                break
            scope = parent.scope()
        if outer is not None and depth >= 2 and isinstance(scope, (nodes.Module, nodes.ClassDef)):
            s.name_dispatchers.add(outer.qname())


def _is_stub(fn) -> bool:
    """A method with no body of its own: ``@abstractmethod``, or only a docstring, ``pass``, ``...``,
    ``raise NotImplementedError``."""
    if "abstractmethod" in _decorator_names(fn):
        return True
    for st in fn.body:
        if isinstance(st, nodes.Pass):
            continue
        if isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Const) and (
                isinstance(st.value.value, str) or st.value.value is Ellipsis):
            continue
        if isinstance(st, nodes.Raise) and st.exc is not None and "NotImplementedError" in st.exc.as_string():
            continue
        return False
    return True


def _first_arg(fn) -> Optional[str]:
    args = fn.args
    if args is None:
        return None
    pos = list(args.posonlyargs or []) + list(args.args or [])
    return pos[0].name if pos else None


def _held_callable(value, r: Resolver) -> Optional[str]:
    """The dotted name a class attribute's value holds: ``X`` / ``mod.X``, a dataclass field's
    ``field(default=X)`` or ``field(default_factory=lambda: X)``; None for anything else."""
    if isinstance(value, nodes.Call) and isinstance(value.func, (nodes.Name, nodes.Attribute)) \
            and (value.func.name if isinstance(value.func, nodes.Name) else value.func.attrname) == "field":
        for kw in value.keywords or ():
            if kw.arg == "default_factory" and isinstance(kw.value, nodes.Lambda) and not kw.value.args.args:
                value = kw.value.body
                break
            if kw.arg == "default":
                value = kw.value
                break
        else:
            return None
    if isinstance(value, (nodes.Name, nodes.Attribute)):
        return r.qualname(value)
    return None


def _module_str(node) -> Optional[str]:
    """The string a name stands for when the module binds it once, at top level, to a literal
    (``name = "ext_cuda"`` ... ``load(name=name, ...)``)."""
    if not isinstance(node, nodes.Name):
        return None
    try:
        defs = node.root().locals.get(node.name, ())
    except Exception:
        return None
    if len(defs) != 1 or not isinstance(defs[0], nodes.AssignName) or node.name in node.scope().locals \
            and node.scope() is not node.root():
        return None
    return _const_str(Resolver.assigned_value(defs[0]))


def _returned_closure(fn) -> Optional[str]:
    """The name of the function *fn* defines in its own body and hands back (``def make(name): def call(*a): ...;
    return call``), when every ``return`` of *fn*'s body returns it; None otherwise."""
    inner = {st.name for st in fn.body if isinstance(st, (nodes.FunctionDef, nodes.AsyncFunctionDef))}
    if not inner:
        return None
    rets = [st for st in fn.body if isinstance(st, nodes.Return)]
    names = {st.value.name if isinstance(st.value, nodes.Name) else None for st in rets}
    if len(names) != 1:
        return None
    name = names.pop()
    if name not in inner or any(isinstance(n, nodes.Return) and n.scope() is fn for n in _nested_returns(fn)):
        return None
    return name


def _returned_objects(fn, r: Resolver) -> Tuple[str, ...]:
    """The project names whose call builds what *fn* returns: ``return Cls(...)``, or a local bound to ``Cls(...)``
    and returned (``post = PostProcessor(...); return post``), over every ``return`` of its own body."""
    out: List[str] = []
    for ret in _own_returns(fn):
        if ret.value is None:
            continue
        calls = []
        if isinstance(ret.value, nodes.Call):
            calls = [ret.value]
        elif isinstance(ret.value, nodes.Name):
            try:
                defs = own_bindings(ret.value, ret.value.name)
            except Exception:
                defs = ()
            for d in defs:
                value = r.assigned_value(d) if isinstance(d, nodes.AssignName) and d.scope() is fn else None
                if isinstance(value, nodes.Call):
                    calls.append(value)
        for call in calls:
            for c in _class_names(call.func, r):
                if c != fn.qname() and c not in out:
                    out.append(c)
    return tuple(out)


def _own_returns(fn) -> Sequence:
    """The ``return`` statements whose scope is *fn*, in pre-order (``fn.nodes_of_class(Return)`` less those of
    nested functions): the module's returns grouped by scope once, kept on the module, instead of a walk of every
    function's whole subtree (each module-level function of a module was walked, nested ones again)."""
    tree = fn.root()
    by_scope = tree.__dict__.get("_npu_returns_by_scope")
    if by_scope is None:
        by_scope = {}
        for ret in nodes_of(tree, nodes.Return):
            by_scope.setdefault(ret.scope(), []).append(ret)
        tree.__dict__["_npu_returns_by_scope"] = by_scope
    return by_scope.get(fn, ())


def _nested_returns(fn):
    """``return`` statements of *fn* below its top level (in an ``if``, a loop, a ``with``, a ``try``)."""
    for st in fn.body:
        if isinstance(st, (nodes.If, nodes.For, nodes.While, nodes.With, nodes.Try)):
            yield from nodes_of(st, nodes.Return)


def _closure_param(name_arg) -> Optional[str]:
    """``name`` in ``getattr(_C, name)`` inside a function nested in another, when ``name`` is a parameter of the
    enclosing function (a closure variable): the op is chosen by the enclosing call's argument."""
    if not isinstance(name_arg, nodes.Name):
        return None
    try:
        scope = name_arg.scope()
        if name_arg.name in scope.locals or scope.parent is None:
            return None
        outer = scope.parent.scope()
    except Exception:
        return None
    if isinstance(outer, nodes.FunctionDef) and name_arg.name in outer.argnames():
        return name_arg.name
    return None


CONTAINER_CTORS = {"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.modules.container.ModuleList",
                   "torch.nn.modules.container.Sequential", "builtins.list", "builtins.tuple"}
SEQUENTIAL_CTORS = {"torch.nn.Sequential", "torch.nn.modules.container.Sequential"}   # calling one runs each element


def _class_names(func, r: Resolver) -> List[str]:
    """The project classes a constructor expression stands for: ``Net`` / ``mod.Net``, or a local name every
    binding of which is a class (``op = Modulated if flag else Plain``, ``if flag: op = A`` / ``else: op = B``)."""
    q = r.qualname(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
    if q:   # a project name (the linker tells a class, a re-export of one, from a function)
        return [q] if r.index.is_class(q) or r.index.has_root(q.partition(".")[0]) else []
    if not isinstance(func, nodes.Name):
        return []
    try:
        defs = own_bindings(func, func.name)
    except Exception:
        return []
    out: List[str] = []
    for d in defs:
        value = r.assigned_value(d) if isinstance(d, nodes.AssignName) else None
        vals = [value.body, value.orelse] if isinstance(value, nodes.IfExp) else [value]
        for v in vals:
            vq = r.qualname(v) if isinstance(v, (nodes.Name, nodes.Attribute)) else None
            if not vq or not (r.index.is_class(vq) or r.index.has_root(vq.partition(".")[0])):
                return []
            if vq not in out:
                out.append(vq)
    return out


def _binding_guards(func: nodes.Name, r: Resolver) -> Dict[str, Optional[dict]]:
    """Script mode: class -> the guard (as a dict) of the binding that makes the local *func* that class (None for
    a class bound unguarded somewhere); see :attr:`ModuleSummary.alt_guards`."""
    out: Dict[str, Optional[dict]] = {}
    try:
        defs = own_bindings(func, func.name)
    except Exception:
        return out
    memo = tree_memo(func.root())
    for d in defs:
        value = r.assigned_value(d) if isinstance(d, nodes.AssignName) else None
        vals = [value.body, value.orelse] if isinstance(value, nodes.IfExp) else [value]
        for v in vals:
            vq = r.qualname(v) if isinstance(v, (nodes.Name, nodes.Attribute)) else None
            if not vq:
                continue
            g = guard_of(v, memo)
            gd = g.to_dict() if g is not None else None
            if gd is not None:
                gd["path"] = func.root().file or ""
            if vq in out and (out[vq] is None or gd is None):
                out[vq] = None
            elif vq not in out:
                out[vq] = gd
    return out


def _alternative_arms(name: nodes.Name, r: Resolver, s: "ModuleSummary") -> List[Tuple[str, Optional[str]]]:
    """A local every binding of which is a module-level name bound by alternative imports, or an if-expression of
    such names (``fn = TrainFn if self.trainable else InferFn``): the (target, condition) of each alternative."""
    if not s.alt_bindings:
        return []
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return []
    out: List[Tuple[str, Optional[str]]] = []
    for d in defs:
        value = r.assigned_value(d) if isinstance(d, nodes.AssignName) else None
        vals = [value.body, value.orelse] if isinstance(value, nodes.IfExp) else [value]
        for v in vals:
            if not (isinstance(v, nodes.Name) and v.name in s.alt_bindings and _module_global(v)):
                return []
            for t, cond in s.alt_bindings[v.name]:
                if (t, cond) not in out:
                    out.append((t, cond))
    return out


def _binding_conditions(s: "ModuleSummary", r: Resolver, func: nodes.Name) -> Dict[str, Optional[str]]:
    """For a local bound to one of several callables in the branches of an ``if`` (``if logits.is_cuda: fn = fused``
    / ``else: fn = plain``): callable -> the condition its binding runs under (:func:`_condition`; None where one
    of its bindings runs unconditionally or is an ``a if c else b``)."""
    try:
        defs = own_bindings(func, func.name)
    except Exception:
        return {}
    out: Dict[str, Optional[str]] = {}
    for d in defs:
        st = d.parent if isinstance(d, nodes.AssignName) else None
        if not isinstance(st, nodes.Assign) or not isinstance(st.value, (nodes.Name, nodes.Attribute)):
            return {}
        vq = r.qualname(st.value)
        if not vq:
            return {}
        cond = _condition(st, s.relpath, tree_memo(st.root()), True)
        if vq in out and out[vq] != cond:
            cond = None
        out[vq] = cond
    return out


def _built(value, r: Resolver, container: bool) -> List[Tuple[str, nodes.Call]]:
    """(class, constructor call) for each object an assigned value builds: ``Cls(...)`` (*container* False), or
    the elements of ``nn.ModuleList(Cls(...) for s in scales)`` / ``nn.Sequential(A(), B())`` / ``[Cls(...), ...]``
    (*container* True)."""
    calls: List[nodes.Call] = []
    if container:
        elts = []
        if type(value) in (nodes.List, nodes.Tuple):
            elts = value.elts
        elif isinstance(value, (nodes.ListComp, nodes.GeneratorExp)):
            elts = [value.elt]
        elif isinstance(value, nodes.Call) and (r.qualname(value.func) or "") in CONTAINER_CTORS:
            for a in value.args:
                if isinstance(a, (nodes.ListComp, nodes.GeneratorExp)):
                    elts.append(a.elt)
                elif type(a) in (nodes.List, nodes.Tuple):
                    elts.extend(a.elts)
                elif isinstance(a, nodes.Name):
                    elts.extend(_local_list_elts(a))
                else:
                    elts.append(a)
        calls = [e for e in elts if isinstance(e, nodes.Call)]
    elif isinstance(value, nodes.Call) and (r.qualname(value.func) or "") not in CONTAINER_CTORS:
        calls = [value]
    elif isinstance(value, nodes.Name):   # `sel = make_selector(...)`, then `self.sel = sel`
        try:
            defs = own_bindings(value, value.name)
        except Exception:
            defs = ()
        for d in defs:
            v = r.assigned_value(d) if isinstance(d, nodes.AssignName) and d.scope() is value.scope() else None
            if isinstance(v, nodes.Call) and (r.qualname(v.func) or "") not in CONTAINER_CTORS:
                calls.append(v)
    return [(c, call) for call in calls for c in _class_names(call.func, r)]


def _registered_submodules(selfname: nodes.Name, r: Resolver) -> Optional[List[Tuple[str, nodes.Call]]]:
    """(class, constructor call) of the modules the class of the method *selfname* is the first parameter of
    registers under names it computes: ``self.add_module(name, module)`` / ``setattr(self, name, module)`` in its
    methods. None when it registers none (a ``getattr(self, name)`` is then dynamic dispatch); the list may be
    empty when no registered value is a project class the call graph can name."""
    try:
        fn = selfname.scope()
        cls = fn.parent if isinstance(fn, nodes.FunctionDef) else None
    except Exception:
        return None
    if not isinstance(cls, nodes.ClassDef):
        return None
    memo = cls.__dict__.get("_npu_registered", _MISSING_REG)
    if memo is not _MISSING_REG:
        return memo
    values = []
    for meth in cls.mymethods():
        args = meth.args.args or []
        if not args:
            continue
        me = args[0].name
        for call in meth.nodes_of_class(nodes.Call):
            f = call.func
            if isinstance(f, nodes.Attribute) and f.attrname == "add_module" and isinstance(f.expr, nodes.Name) \
                    and f.expr.name == me and len(call.args) == 2 and not isinstance(call.args[0], nodes.Const):
                values.append(call.args[1])
            elif isinstance(f, nodes.Name) and f.name == "setattr" and len(call.args) == 3 \
                    and isinstance(call.args[0], nodes.Name) and call.args[0].name == me \
                    and not isinstance(call.args[1], nodes.Const):
                values.append(call.args[2])
    out: Optional[List[Tuple[str, nodes.Call]]] = None
    if values:
        out = []
        for v in values:
            for got in _built(v, r, False):
                if got[0] not in [c for c, _ in out]:
                    out.append(got)
    cls._npu_registered = out
    return out


_MISSING_REG = object()


def _local_list_elts(name: nodes.Name) -> list:
    """The elements a local list holds when it is handed to a container: ``poolers = []`` filled by
    ``poolers.append(Cls(...))`` (or ``.extend([...])`` / ``.insert(i, ...)`` / ``+= [...]``) in a loop of the same
    function, or bound to a literal or a comprehension."""
    try:
        scope = name.scope()
        defs = own_bindings(name, name.name)
    except Exception:
        return []
    if not isinstance(scope, nodes.FunctionDef) or not defs:
        return []
    out: list = []
    for d in defs:
        if not isinstance(d, nodes.AssignName) or d.scope() is not scope:
            return []
        value = d.parent.value if isinstance(d.parent, (nodes.Assign, nodes.AnnAssign)) else None
        if isinstance(value, (nodes.List, nodes.Tuple)):
            out.extend(value.elts)
        elif isinstance(value, (nodes.ListComp, nodes.GeneratorExp)):
            out.append(value.elt)
        elif isinstance(d.parent, nodes.AugAssign) and isinstance(d.parent.value, (nodes.List, nodes.Tuple)):
            out.extend(d.parent.value.elts)
    for call in scope.nodes_of_class(nodes.Call):
        f = call.func
        if not (isinstance(f, nodes.Attribute) and isinstance(f.expr, nodes.Name) and f.expr.name == name.name
                and call.scope() is scope and call.args):
            continue
        if f.attrname == "append":
            out.append(call.args[0])
        elif f.attrname == "insert" and len(call.args) > 1:
            out.append(call.args[1])
        elif f.attrname == "extend":
            a = call.args[0]
            if isinstance(a, (nodes.List, nodes.Tuple)):
                out.extend(a.elts)
            elif isinstance(a, (nodes.ListComp, nodes.GeneratorExp)):
                out.append(a.elt)
    return out


def _attr_candidates(s: "ModuleSummary", r: Resolver, attr: nodes.Attribute,
                     container: bool) -> List[Tuple[str, Optional[str]]]:
    """(class, condition) of the objects ``self.<attr>`` may hold, from the assignments of the class's methods
    (``self.conv = op(...)`` with ``op`` one of two classes; ``self.poolers = nn.ModuleList(ROIAlign(...) for ...)``
    in one branch of an ``if``/``elif`` on a constructor argument, ``RoIPool(...)`` in another). When the attribute
    is assigned in several places, each candidate carries the condition its assignment runs under (when the
    summary keeps conditions);
    a candidate from a local name bound to one of several classes does not (the class is the worst of them).
    Memoised per (class, attribute) on the summary."""
    scope = attr.scope()
    cls = scope.parent if isinstance(scope, nodes.FunctionDef) else None
    if not isinstance(cls, nodes.ClassDef):
        return []
    memo = s.__dict__.setdefault("_attr_candidates", {})
    key = (id(cls), attr.attrname, container)
    got = memo.get(key)
    if got is None:
        got = []
        assigns = cls.instance_attrs.get(attr.attrname) or []
        for a in assigns:
            parent = a.parent
            value = parent.value if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) else None
            if value is None:
                continue
            for c, call in _built(value, r, container):
                cond = None
                if s.__dict__.get("_guards_on") and len(assigns) > 1:
                    cond = _condition(call, s.relpath, tree_memo(call.root()), True)
                if cond == UNREACHABLE:
                    continue
                if (c, cond) not in got:
                    got.append((c, cond))
        memo[key] = got
    return got


def _iterated_attr(name: nodes.Name) -> Optional[nodes.Attribute]:
    """``self.X`` when *name* is bound only as the loop variable of ``for name in self.X`` /
    ``for i, name in enumerate(self.X)`` (or ``zip(self.X, ...)``'s first)."""
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return None
    if len(defs) != 1 or not isinstance(defs[0], nodes.AssignName):
        return None
    d = defs[0]
    loop = d.parent
    path: List[int] = []   # positions in the (nested) target tuples, outermost first
    cur = d
    while type(loop) is nodes.Tuple:
        if cur not in loop.elts:
            return None
        path.insert(0, loop.elts.index(cur))
        cur, loop = loop, loop.parent
    if not isinstance(loop, (nodes.For, nodes.Comprehension)):
        return None
    it = loop.iter
    for pos in path:   # `for level, (feat, pool) in enumerate(zip(xs, self.pools))`
        if not (isinstance(it, nodes.Call) and isinstance(it.func, nodes.Name) and it.args):
            return None
        if it.func.name == "enumerate" and pos == 1:
            it = it.args[0]
        elif it.func.name == "zip" and pos < len(it.args):
            it = it.args[pos]
        else:
            return None
    if isinstance(it, nodes.Attribute) and isinstance(it.expr, nodes.Name) and it.expr.name == "self":
        return it
    return None


def _is_partial_call(value, r: Resolver) -> bool:
    return isinstance(value, nodes.Call) and value.args and (r.qualname(value.func) or "").endswith("partial")


def _wraps_own_callable(value, r: Resolver) -> bool:
    """``nms = amp.float_function(_C.nms)`` / ``fast = torch.jit.script(slow)``: a module-level name bound to what an
    outside wrapper (not the project's own: its factories are read as closures) makes of one of the project's own
    callables. A call of the name runs the wrapped callable, as for ``functools.partial``."""
    if not (isinstance(value, nodes.Call) and len(value.args) == 1 and isinstance(value.func, (nodes.Name, nodes.Attribute))
            and isinstance(value.args[0], (nodes.Name, nodes.Attribute))):
        return False
    fq = r.qualname(value.func)
    if not fq or fq.startswith(("builtins.", "typing.")) or r.index.has_root(fq.partition(".")[0]):
        return False
    inner = r.qualname(value.args[0])
    return bool(inner) and r.index.has_root(inner.partition(".")[0])


def _ext_load(value, r: Resolver, modname: str) -> Optional[Tuple[str, Tuple[str, ...]]]:
    """``load_ext('_ext', ['op', ...])`` (mmcv) / ``cpp_extension.load(name='x', ...)``."""
    if not isinstance(value, nodes.Call):
        return None
    f = value.func
    fname = r.qualname(f) or (f.attrname if isinstance(f, nodes.Attribute) else getattr(f, "name", "")) or ""
    if not fname.endswith(EXT_LOADERS_SUFFIX):
        return None
    name = None
    ops: Tuple[str, ...] = ()
    if value.args and isinstance(value.args[0], nodes.Const) and isinstance(value.args[0].value, str):
        name = value.args[0].value
    elif value.args:
        name = _module_str(value.args[0])
    for kw in value.keywords or ():
        if kw.arg == "name":
            name = _const_str(kw.value) or _module_str(kw.value) or name
    if len(value.args) > 1 and type(value.args[1]) in (nodes.List, nodes.Tuple):
        ops = tuple(e.value for e in value.args[1].elts if isinstance(e, nodes.Const) and isinstance(e.value, str))
    if name is None:
        name = "<extension>"
    if fname.endswith("load_ext"):
        top = modname.split(".")[0]
        name = name if "." in name else f"{top}.{name}"
    return name, ops


def _str_list(value) -> Optional[List[str]]:
    if type(value) in (nodes.List, nodes.Tuple):
        out = []
        for e in value.elts:
            if isinstance(e, nodes.Const) and isinstance(e.value, str):
                out.append(e.value)
            else:
                return None
        return out
    return None


# --------------------------------------------------------------------------- containers of callables

_CONTAINER_LITERALS = (nodes.Dict, nodes.List, nodes.Tuple, nodes.Set)


def _is_dict_call(value) -> bool:
    return isinstance(value, nodes.Call) and isinstance(value.func, nodes.Name) and value.func.name == "dict"


_CONTAINER_TYPES: Dict[type, bool] = {}   # node type -> a container literal type (astroid's are ABCs: slow isinstance)


def _is_container_literal(value) -> bool:
    t = type(value)
    hit = _CONTAINER_TYPES.get(t)
    if hit is None:
        hit = _CONTAINER_TYPES[t] = issubclass(t, _CONTAINER_LITERALS)
    return hit or _is_dict_call(value)


def _literal_entries(value, r: Resolver, key: str = "", depth: int = 0) -> List[Tuple[str, str]]:
    """(key, qualified name) of the callables a dict / list / tuple literal holds. A nested container's
    entries keep the outer key (``{"finetune": {"lora": fn}}``: ``fn`` under ``finetune``); a list's key is
    the index."""
    out: List[Tuple[str, str]] = []
    if depth > 4:
        return out
    if isinstance(value, nodes.Dict):
        for k, v in value.items:
            kk = key
            if not kk and isinstance(k, nodes.Const) and isinstance(k.value, (str, int)) \
                    and not isinstance(k.value, bool):
                kk = str(k.value)
            out.extend(_literal_entries(v, r, kk, depth + 1))
    elif type(value) in (nodes.List, nodes.Tuple, nodes.Set):
        for i, e in enumerate(value.elts):
            out.extend(_literal_entries(e, r, key or str(i), depth + 1))
    elif _is_dict_call(value) and not value.args:
        for kw in value.keywords or ():
            if kw.arg:
                out.extend(_literal_entries(kw.value, r, key or kw.arg, depth + 1))
    elif isinstance(value, (nodes.Name, nodes.Attribute)):
        q = r.qualname(value)
        if q:
            out.append((key, q))
    elif _is_partial_call(value, r):
        q = r.qualname(value.args[0])
        if q:
            out.append((key, q))
    return out


def _container_of(node, r: Resolver, s: "ModuleSummary", caller: str) -> Optional[str]:
    """The qualified name of the container a name stands for: a module-level name of this module, an imported
    one, or a local name bound once to a literal (registered here as ``caller#name`` with its entries)."""
    if isinstance(node, nodes.Attribute):
        return r.qualname(node)
    if not isinstance(node, nodes.Name):
        return None
    try:
        defs = own_bindings(node, node.name)
    except Exception:
        defs = ()
    if not defs:
        return None
    if all(isinstance(d, (nodes.Import, nodes.ImportFrom)) for d in defs):
        return r.qualname(node)
    if not all(isinstance(d, nodes.AssignName) for d in defs):
        return None
    if all(d.scope() is d.root() for d in defs):
        return f"{s.modname}.{node.name}"
    if len(defs) == 1:
        value = r.assigned_value(defs[0])
        if value is not None and _is_container_literal(value):
            name = f"{caller}#{node.name}"
            # once per name and binding (a set kept on the summary while it is made): `dict(model_args, **kwargs)`
            # in every factory of a module read the same literal again, and again when it holds no callable
            done = s.__dict__.setdefault("_containers_read", set())
            if (name, id(defs[0])) not in done:
                done.add((name, id(defs[0])))
                if not any(c == name for c, _k, _t in s.registrations):
                    s.registrations.extend((name, k, q) for k, q in _literal_entries(value, r))
            return name
    return None


def _keys(node, r: Resolver) -> Optional[Set[str]]:
    """The keys an index expression can have: a literal, or a name / option whose values are known
    (``args.cmd`` with ``add_argument("--cmd", default="train")``)."""
    if node is None:
        return None
    if isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return {str(node.value)}
    try:
        vals = r.strings(node)
    except Exception:
        return None
    if not vals or any("{}" in v for v in vals):
        return None
    return set(vals)


def _cfg_type(node, r: Resolver, depth: int = 0) -> Optional[Set[str]]:
    """``type`` of a config literal handed to a registry's ``build``: ``dict(type="ResNet", ...)`` /
    ``{"type": "ResNet"}``, or a name bound to one."""
    if node is None or depth > 3:
        return None
    if isinstance(node, nodes.Dict):
        for k, v in node.items:
            if isinstance(k, nodes.Const) and k.value == "type":
                return _keys(v, r)
        return None
    if _is_dict_call(node):
        for kw in node.keywords or ():
            if kw.arg == "type":
                return _keys(kw.value, r)
        return None
    if isinstance(node, nodes.Name):
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return None
        if len(defs) == 1 and isinstance(defs[0], nodes.AssignName):
            return _cfg_type(r.assigned_value(defs[0]), r, depth + 1)
    return None


def _lookup_keys(node, r: Resolver, s: "ModuleSummary") -> Optional[Set[str]]:
    """The keys of a lookup (:func:`_keys`), or, when they cannot be told and the key is read from an option
    (``cfg.arch``, ``cfg["arch"]``, ``cfg.get("arch")``), the values the configuration files this module names
    (the configuration it loads by default, read as data) give that option. A module that names no such file
    (``--cfg-path`` required, or a library function handed the config) cannot tell the key."""
    keys = _keys(node, r)
    if keys:
        return keys
    name = None
    if isinstance(node, nodes.Attribute):
        name = node.attrname
    elif isinstance(node, nodes.Subscript) and isinstance(node.slice, nodes.Const):
        name = node.slice.value
    elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) and node.func.attrname == "get" \
            and node.args and isinstance(node.args[0], nodes.Const):
        name = node.args[0].value
    if isinstance(name, str):
        vals = {v for v in config_values(name, s.modname) if isinstance(v, str)}
        if vals:
            return vals
    return keys


def _lookup_expr(expr, r: Resolver, s: "ModuleSummary", caller: str, depth: int = 0):
    """(container, keys) of a callee taken from a container: ``C[key]``, ``C.get(key)``, or a local name bound
    once to one of them (``cls = MODELS[name]; cls(...)``). None when *expr* is none of these."""
    if isinstance(expr, nodes.Subscript):
        cont = _container_of(expr.value, r, s, caller)
        return (cont, _keys(expr.slice, r)) if cont else None
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute) and expr.func.attrname == "get" \
            and expr.args:
        cont = _container_of(expr.func.expr, r, s, caller)
        return (cont, _lookup_keys(expr.args[0], r, s)) if cont else None
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute) and len(expr.args) == 1:
        # a registry object's getter: ``registry.get_model_class(name)`` reads what ``@registry.register_model``
        # filled
        kind = _GETTER.match(expr.func.attrname)
        if kind and not isinstance(expr.func.expr, nodes.Call):
            cont = _container_of(expr.func.expr, r, s, caller)
            return (f"{cont}{KIND_SEP}{kind.group(1)}", _lookup_keys(expr.args[0], r, s)) if cont else None
        return None
    if isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Name) and depth == 1:
        # ``cls = get_model_cls(name, kind); cls(...)``: a function that may be a container's getter
        # (:attr:`ModuleSummary.getters`, told by the linker); the result is untyped otherwise
        q = r.qualname(expr.func)
        if q and not q.startswith(("builtins.", "torch.")) and not _is_partial_call(expr, r) \
                and r.index.has_root(q.partition(".")[0]) and r.type_of(expr) is None:
            return (GETTER_MARK + q, _lookup_keys(expr.args[0], r, s) if expr.args else None)
        return None
    if isinstance(expr, nodes.Name) and depth == 0:
        try:
            defs = own_bindings(expr, expr.name)
        except Exception:
            return None
        if len(defs) == 1 and isinstance(defs[0], nodes.AssignName):
            value = r.assigned_value(defs[0])
            if isinstance(value, (nodes.Subscript, nodes.Call)):
                return _lookup_expr(value, r, s, caller, depth + 1)
    return None


def _record_lookup(s: "ModuleSummary", r: Resolver, call: nodes.Call, caller: str) -> bool:
    """A call through a container of callables (:data:`K_LOOKUP`); True when recorded."""
    func = call.func
    got = None
    if isinstance(func, nodes.Attribute) and func.attrname in ("build", "build_from_cfg") and call.args:
        cont = _container_of(func.expr, r, s, caller)
        if cont:
            got = (cont, _cfg_type(call.args[0], r))
    elif isinstance(func, nodes.Name) and func.name == "build_from_cfg" and len(call.args) > 1:
        cont = _container_of(call.args[1], r, s, caller)
        if cont:
            got = (cont, _cfg_type(call.args[0], r))
    else:
        got = _lookup_expr(func, r, s, caller)
    meth = ""
    if got is None and isinstance(func, nodes.Attribute) and isinstance(func.expr, (nodes.Name, nodes.Call)):
        # a method of the entry: ``cls = registry.get_model_class(cfg.arch); cls.from_config(cfg)``
        got = _lookup_expr(func.expr, r, s, caller)
        meth = func.attrname
    if got is None:
        return False
    cont, keys = got
    b = KEY_SEP.join(sorted(keys)) if keys else ""
    s.calls.append((caller, call.lineno or 1, K_LOOKUP, cont, f"{b}{METH_SEP}{meth}" if meth else b))
    return True


def _registrations(tree: nodes.Module, r: Resolver, s: "ModuleSummary") -> None:
    """The module's own registrations: module-level container literals and ``C[key] = f``; functions and
    classes registered by a decorator (``@register("name")``, ``@MODELS.register_module()``); and the
    functions that store their argument in a module-level container (the decorator registries)."""
    mod = s.modname
    for st in tree.body:
        stmts = [st]
        if isinstance(st, (nodes.If, nodes.Try)):
            stmts = list(st.body) + list(getattr(st, "orelse", []) or [])
        for node in stmts:
            if isinstance(node, (nodes.Assign, nodes.AnnAssign)):
                tgts = node.targets if isinstance(node, nodes.Assign) else [node.target]
                for tg in tgts:
                    if isinstance(tg, nodes.AssignName) and node.value is not None \
                            and _is_container_literal(node.value):
                        s.registrations.extend((f"{mod}.{tg.name}", k, q)
                                               for k, q in _literal_entries(node.value, r))
                    elif isinstance(tg, nodes.Subscript) and isinstance(tg.value, nodes.Name):
                        keys = _keys(tg.slice, r) or {""}
                        for k, q in _literal_entries(node.value, r):
                            s.registrations.extend((f"{mod}.{tg.value.name}", key, q) for key in keys)
            elif isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef)) and node.decorators:
                for d in node.decorators.nodes:
                    _decorator_registration(d, node, r, s)
            if isinstance(node, nodes.Expr) and isinstance(node.value, nodes.Call):
                _call_registration(node.value, r, s)
            if isinstance(node, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                cont = _returned_entry(node, r, s)
                if cont:
                    s.getters[node.qname()] = cont
    # functions that put a parameter into a module-level container: decorator registries
    for node in nodes_of(tree, nodes.Assign, nodes.Call):
        target = value = None
        if isinstance(node, nodes.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], nodes.Subscript):
            target, value = node.targets[0].value, node.value
            while isinstance(target, nodes.Subscript):   # ``C[name][kind] = cls``: a nested table
                target = target.value
        elif isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute) \
                and node.func.attrname in ("append", "add") and len(node.args) == 1:
            target, value = node.func.expr, node.args[0]
        if not isinstance(target, nodes.Name) or not isinstance(value, nodes.Name):
            continue
        fn = node.scope()
        if not isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            continue
        try:
            cdefs = own_bindings(target, target.name)
            vdefs = own_bindings(value, value.name)
        except Exception:
            continue
        if not cdefs or not all(isinstance(d, nodes.AssignName) and d.scope() is tree for d in cdefs):
            continue
        if not vdefs or not all(isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Arguments)
                                for d in vdefs):
            continue
        while isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            s.storers[fn.qname()] = f"{mod}.{target.name}"
            fn = fn.parent.scope() if fn.parent is not None else None


def _call_registration(call: nodes.Call, r: Resolver, s: "ModuleSummary") -> None:
    """A module-level call that may register a project class or function (``register("name", "lora", Trainer)``):
    recorded as a registration through the callee (``"@" + its qualname``), which the linker keeps only when the
    callee stores its argument in a module-level container (:attr:`ModuleSummary.storers`); the key is the call's
    first string argument."""
    func = call.func
    q = r.qualname(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
    if not q or not r.index.has_root(q.partition(".")[0]):
        return
    key = next((a.value for a in call.args if isinstance(a, nodes.Const) and isinstance(a.value, str)), "")
    for a in list(call.args) + [k.value for k in call.keywords or ()]:
        if isinstance(a, (nodes.Name, nodes.Attribute)):
            t = r.qualname(a)
            if t and t != q and r.index.has_root(t.partition(".")[0]):
                s.registrations.append(("@" + q, key, t))


def _returned_entry(fn, r: Resolver, s: "ModuleSummary") -> Optional[str]:
    """The module-level container a function hands an entry of back (``return SUPPORTED[name][kind]``,
    ``return TABLE.get(name)``), when every value it returns is one: the function is the container's getter."""
    last = fn.body[-1] if fn.body else None
    if not (isinstance(last, nodes.Return) and isinstance(last.value, (nodes.Subscript, nodes.Call))):
        return None   # (cheap test first: a getter ends by handing the entry back)
    rets = [n for n in nodes_of(fn, nodes.Return) if n.scope() is fn]
    conts = set()
    for ret in rets:
        v = ret.value
        if isinstance(v, nodes.Call) and isinstance(v.func, nodes.Attribute) and v.func.attrname == "get":
            v = v.func.expr
        elif isinstance(v, nodes.Subscript):
            while isinstance(v, nodes.Subscript):
                v = v.value
        else:
            return None
        if not isinstance(v, nodes.Name):
            return None
        try:
            defs = own_bindings(v, v.name)
        except Exception:
            return None
        if not defs or not all(isinstance(d, nodes.AssignName) and d.scope() is d.root() for d in defs):
            return None
        conts.add(f"{s.modname}.{v.name}")
    return conts.pop() if len(conts) == 1 else None


def _decorator_registration(d, target, r: Resolver, s: "ModuleSummary") -> None:
    call = d if isinstance(d, nodes.Call) else None
    func = d.func if call is not None else d
    key = target.name
    if call is not None:
        named = [kw.value for kw in call.keywords or () if kw.arg in ("name", "key")]
        for cand in named + list(call.args[:1]):
            if isinstance(cand, nodes.Const) and isinstance(cand.value, str):
                key = cand.value
                break
    if isinstance(func, nodes.Attribute) and func.attrname.startswith("register"):
        # a registry object's method (``@MODELS.register_module()``): the object is the container
        cont = _container_of(func.expr, r, s, f"{s.modname}.{MODULE_FN}")
        if cont:
            s.registrations.append((cont, key, target.qname()))
            kind = _REGISTER.match(func.attrname)
            if kind and kind.group(1) != "module":
                # ``@registry.register_model("name")``: also the part its ``get_model_class(name)`` reads
                s.registrations.append((f"{cont}{KIND_SEP}{kind.group(1)}", key, target.qname()))
        return
    q = r.qualname(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
    if q and not q.startswith(("builtins.", "torch.", "functools.", "typing.", "abc.", "dataclasses.")):
        s.registrations.append(("@" + q, key, target.qname()))


def _listed_names(value, r: Resolver) -> Optional[Tuple[str, ...]]:
    """The qualified names a class attribute lists (``[CudaExt, NpuExt]``, ``(A, B)``, ``[]``), or None when the
    value is no list / tuple of plain names."""
    if not isinstance(value, (nodes.List, nodes.Tuple)):
        return None
    out: List[str] = []
    for e in value.elts:
        if not isinstance(e, (nodes.Name, nodes.Attribute)):
            return None
        q = r.qualname(e)
        if not q:
            return None
        out.append(q)
    return tuple(out)


def _add_build(s: "ModuleSummary", fn: str, kind: str) -> None:
    have = s.builds.get(fn, ())
    if kind not in have:
        s.builds[fn] = have + (kind,)


def _build_kind(call: nodes.Call, q: str) -> Optional[str]:
    """BUILD_CUDA / BUILD_CPP / BUILD_NPU when the call *q* builds or loads compiled code, None otherwise."""
    if q in _CUDA_BUILD_CALLS:
        return BUILD_CUDA
    if q in _CPP_BUILD_CALLS:
        return BUILD_CPP
    if q in _JIT_BUILD_CALLS:
        for kw in call.keywords or ():
            if kw.arg in _CUDA_JIT_KEYWORDS or (kw.arg == "with_cuda" and isinstance(kw.value, nodes.Const)
                                                 and kw.value.value is True):
                return BUILD_CUDA
        srcs = next((kw.value for kw in call.keywords or () if kw.arg == "sources"), None)
        if srcs is None and len(call.args) > 1:
            srcs = call.args[1]
        if srcs is not None and any(isinstance(n, nodes.Const) and isinstance(n.value, str)
                                    and n.value.strip().lower().endswith((".cu", ".cuh")) for n in walk(srcs)):
            return BUILD_CUDA
        return BUILD_CPP
    if q.startswith("torch_npu."):
        return BUILD_NPU
    return None


def _host_copy(expr) -> bool:
    """*expr* is a tensor copied to the host: a chain of method calls with ``.cpu()`` or ``.to("cpu")`` /
    ``.to(device="cpu")`` / ``.to(torch.device("cpu"))`` in it (``x.detach().cpu()``, ``x.cpu().contiguous()``)."""
    for _ in range(8):
        if not (isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Attribute)):
            return False
        name = expr.func.attrname
        if name == "cpu" and not expr.args:
            return True
        if name == "to":
            vals = list(expr.args[:1]) + [k.value for k in expr.keywords or () if k.arg == "device"]
            for v in vals:
                if isinstance(v, nodes.Call) and isinstance(v.func, (nodes.Attribute, nodes.Name)) and v.args \
                        and (v.func.attrname if isinstance(v.func, nodes.Attribute) else v.func.name) == "device":
                    v = v.args[0]
                if isinstance(v, nodes.Const) and v.value == "cpu":
                    return True
        expr = expr.func.expr
    return False


def _cpu_device_test(test) -> bool:
    """An ``if`` test that holds only for tensors on the host: ``x.device.type == "cpu"`` (either side), ``x.is_cpu``,
    alone or as a term of an ``and``."""
    if isinstance(test, nodes.BoolOp) and test.op == "and":
        return any(_cpu_device_test(v) for v in test.values)
    if isinstance(test, nodes.Attribute):
        return test.attrname == "is_cpu"
    if isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] == "==":
        sides = (test.left, test.ops[0][1])
        return any(isinstance(a, nodes.Const) and a.value == "cpu" for a in sides) \
            and any(isinstance(b, nodes.Attribute) and b.attrname == "type" and isinstance(b.expr, nodes.Attribute)
                    and b.expr.attrname == "device" for b in sides)
    return False


def _host_call(call: nodes.Call, cpu_ifs) -> bool:
    """The call runs on host tensors (ModuleSummary.host_calls): an argument is a host copy, or the call sits in the
    body of an ``if`` whose test holds only for host tensors (*cpu_ifs*, the module's such tests)."""
    args = list(call.args) + [k.value for k in call.keywords or ()]
    if any(_host_copy(a.value if isinstance(a, nodes.Starred) else a) for a in args):
        return True
    if not cpu_ifs:
        return False
    cur, parent = call, call.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda,
                                                         nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If) and cur is not parent.test:
            return parent in cpu_ifs and cur in parent.body
        cur, parent = parent, parent.parent
    return False


def _record_list_read(s: "ModuleSummary", node: nodes.Attribute, here) -> None:
    """A method reading a list attribute of its own class on ``self`` / ``cls`` (``self.__class__.REGISTRY``,
    ``type(self).REGISTRY``): ClassSummary.reads."""
    caller, cls, selfname, clsname = here
    info = s.classes.get(cls)
    if info is None or not info.lists or node.attrname not in info.lists or not caller.startswith(cls + "."):
        return
    expr = node.expr
    if isinstance(expr, nodes.Attribute) and expr.attrname == "__class__":
        expr = expr.expr
    elif isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Name) and expr.func.name == "type" \
            and len(expr.args) == 1:
        expr = expr.args[0]
    if not isinstance(expr, nodes.Name) or expr.name not in (selfname, clsname) or expr.name is None:
        return
    meth = caller[len(cls) + 1:].partition(".")[0]
    have = info.reads.get(meth, ())
    if node.attrname not in have:
        info.reads[meth] = have + (node.attrname,)


def summarise_module(tree: nodes.Module, modname: str, relpath: str, resolver: Resolver,
                     is_package: bool = False, n_lines: int = 0, guards: bool = True,
                     kept: bool = False) -> ModuleSummary:
    """Reduce one parsed module to what the call graph needs.

    *guards* False leaves :attr:`ModuleSummary.guards` empty: the conditions of the call edges are read by the
    library statuses only (:meth:`CallGraph.guarded_edges`, :attr:`CallGraph.ext_calls`); script mode's reach
    keeps its own guards (:func:`analyse.reach.module_facts`), and building one per call was a tenth of a
    script run. *kept* (script mode) records what a module-level binding or a return expression keeps
    (:attr:`ModuleSummary.kept_refs`) apart from the calls."""
    r = resolver
    s = ModuleSummary(modname=modname, relpath=relpath, is_package=is_package,
                      n_lines=n_lines or (tree.tolineno or 1))
    s.functions[s.module_fn] = (1, max(1, s.n_lines))
    s.__dict__["_guards_on"] = guards
    s.__dict__["_kept_on"] = kept

    # ---- module level: bindings, star imports, __all__, ext modules
    alt_defs: Dict[str, List[Tuple[str, object]]] = {}
    for name, defs in tree.locals.items():
        s.top_names.add(name)
        targets = set()
        # a module-level def or class of the same name (`def get_dataloaders` rebound to a mock under a test-only
        # `if`): the name is not an alias of the other target alone
        own_def = any(isinstance(d, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef))
                      and d.parent is tree for d in defs)
        per_def = []   # (target, binding) of the imports and plain aliases
        for d in defs:
            t = None
            if isinstance(d, (nodes.Import, nodes.ImportFrom)):
                t = r._def_qualname(d, name, 0)
                per_def.append((t, d))
            elif isinstance(d, nodes.AssignName) and d.scope() is tree:
                value = r.assigned_value(d)
                if value is None:
                    t = unpacked_import(d, r)
                elif isinstance(value, (nodes.Name, nodes.Attribute)):
                    t = r.qualname(value)
                    per_def.append((t, d))
                elif _is_partial_call(value, r) or _wraps_own_callable(value, r):
                    t = r.qualname(value.args[0])
                elif dynamic_import(value, r) is not None:
                    t = dynamic_import(value, r)
                else:
                    ext = _ext_load(value, r, modname)
                    if ext is not None:
                        s.ext_aliases[name] = ext
                    elif len(defs) == 1 and isinstance(value, nodes.Call) \
                            and isinstance(value.func, (nodes.Name, nodes.Attribute)):
                        fq = r.qualname(value.func)
                        if fq:
                            s.factory_calls[name] = (fq, tuple(_const_str(a) for a in value.args),
                                                     tuple((k.arg, _const_str(k.value)) for k in value.keywords or ()
                                                           if k.arg and _const_str(k.value) is not None))
            if t and t != f"{modname}.{name}":
                targets.add(t)
        if len(targets) == 1 and not own_def:
            s.bindings[name] = targets.pop()
        elif len(targets) > 1 and not own_def and len(per_def) == len(defs):
            # every binding an import or an alias of another name, in the branches of a test
            alt_defs[name] = [(t, d) for t, d in per_def if t and t != f"{modname}.{name}"]
    for node in tree.body:
        stmts = [node]
        if isinstance(node, (nodes.If, nodes.Try)):
            stmts = list(node.get_children())
        for st in stmts:
            if isinstance(st, nodes.ImportFrom):
                base = r.absolute_import(st.modname, st.level)
                s.imports.add(base)
                for mod, _as in st.names:
                    if mod == "*":
                        s.star_imports.append(base)
                    else:
                        s.imports.add(f"{base}.{mod}")
            elif isinstance(st, nodes.Import):
                for mod, _as in st.names:
                    s.imports.add(mod)
            elif isinstance(st, (nodes.Assign, nodes.AugAssign, nodes.AnnAssign)):
                tgts = st.targets if isinstance(st, nodes.Assign) else [st.target]
                if any(isinstance(t, nodes.AssignName) and t.name == "__all__" for t in tgts):
                    names = _str_list(st.value)
                    if names is None:
                        s.all_names = None if not isinstance(st, nodes.AugAssign) else s.all_names
                    elif isinstance(st, nodes.AugAssign) and s.all_names is not None:
                        s.all_names = s.all_names + names
                    else:
                        s.all_names = names
            if is_main_guard(st):
                s.has_main_guard = True
    # nested imports count as imports too (for "imported by" of scripts)
    for imp in nodes_of(tree, nodes.Import, nodes.ImportFrom):
        if isinstance(imp, nodes.ImportFrom):
            base = r.absolute_import(imp.modname, imp.level)
            s.imports.add(base)
            s.imports.update(f"{base}.{m}" for m, _ in imp.names if m != "*")
            npu = base == "torch_npu" or base.startswith("torch_npu.")
        else:
            s.imports.update(m for m, _ in imp.names)
            npu = any(m == "torch_npu" or m.startswith("torch_npu.") for m, _ in imp.names)
        if npu:   # a function that imports torch_npu uses an NPU kernel (a builder's NPU implementation)
            scope = imp.scope()
            if isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                _add_build(s, scope.qname(), BUILD_NPU)

    mentions_npu = _mentions_npu(tree)
    if mentions_npu:
        s.npu_evidence = npu_evidence(tree, relpath)
    guard_memo = tree_memo(tree)
    for name, alt in (alt_defs.items() if guards else ()):   # library mode (the conditions decide what runs)
        kept: List[Tuple[str, Optional[str]]] = []
        for t, d in alt:
            cond = _condition(d, relpath, guard_memo, mentions_npu)
            if cond != UNREACHABLE and (t, cond) not in kept:
                kept.append((t, cond))
        if kept:
            s.alt_bindings[name] = kept
    builtins_own = guards and r.index.has_root("builtins")

    # ---- walk with scope tracking
    # stack items: (iterator of nodes, context); context: (caller qualname, enclosing class qualname for
    # self/cls, self-name, cls-name), one tuple shared by every node of a scope. A function's body is
    # walked first, then its defaults (last first) and decorators in the enclosing context; a class's
    # body, then its bases (last first). Childless nodes are skipped.
    leaves = LEAVES
    kinds = _WALK_KINDS
    cpu_ifs: Set[nodes.If] = set()   # `if x.device.type == "cpu":` tests met so far (visited before their bodies)
    list_attrs: Set[str] = set()     # the list attributes of the module's classes (ClassSummary.lists) met so far
    top = (s.module_fn, None, None, None)
    stack = [(tree.get_children(), top)]
    push, pop = stack.append, stack.pop
    it, here = stack[-1]
    while True:
        node = next(it, None)
        if node is None:
            pop()
            if not stack:
                break
            it, here = stack[-1]
            continue
        t = type(node)
        if t in leaves:
            continue
        if t is nodes.Lambda and here[0] == s.module_fn and _stored_lambda(node):
            continue   # a module-level table's lambda runs when looked up and called, not when the module is imported
        kind = kinds.get(t)
        if kind is None:
            kind = kinds[t] = (1 if issubclass(t, nodes.FunctionDef)
                               else 2 if issubclass(t, nodes.ClassDef) else 3 if issubclass(t, nodes.Call)
                               else 4 if issubclass(t, nodes.Assign)
                               else 5 if t in _ONE_EXPR else 6 if t is nodes.Keyword else 0)
        if kind > 4 and type(node.expr if kind == 5 else node.value) in leaves:
            continue   # an attribute of a name (self.x, torch.cuda), a keyword of a name or constant: nothing below
        if kind == 1:
            caller, cls, selfname, clsname = here
            q = node.qname()
            s.functions[q] = (node.lineno or 1, node.end_lineno or node.lineno or 1)
            if node.args is not None and node.args.args is not None:
                s.params[q] = tuple(a.name for a in (node.args.posonlyargs or []) + (node.args.args or [])
                                    + (node.args.kwonlyargs or []))
            inner = _returned_closure(node)
            if inner is not None:
                s.closures[q] = (f"{q}.{inner}", tuple(a.name for a in (node.args.posonlyargs or []) + (node.args.args or [])))
            elif isinstance(node.parent, nodes.Module):
                made = _returned_objects(node, r)
                if made:
                    s.made_by[q] = made
            parent_cls = node.parent if isinstance(node.parent, nodes.ClassDef) else None
            new_cls, new_self, new_clsname = cls, selfname, clsname
            if parent_cls is not None:
                new_cls = parent_cls.qname()
                decos = _decorator_names(node)
                first = _first_arg(node)
                if "staticmethod" in decos:
                    new_self = new_clsname = None
                elif "classmethod" in decos:
                    new_self, new_clsname = None, first
                else:
                    new_self, new_clsname = first, None
            # decorators and defaults run in the enclosing scope
            outside = []
            if node.args is not None:
                outside = list(node.args.defaults or []) + [d for d in (node.args.kw_defaults or []) if d is not None]
                outside.reverse()
            if node.decorators:
                outside.append(node.decorators)
                decos = _decorator_targets(node, r)
                if decos:
                    s.decorated[q] = decos
                op, kernel = _custom_op_name(node)
                if op:
                    s.custom_ops.setdefault(op, q)
                if kernel:
                    s.custom_ops[kernel + KERNELS_MARK] = q
                other = _extra_kernel_of(node)
                if other:
                    s.custom_ops[f"{s.modname}.{other}" + KERNELS_MARK] = q
            if outside:
                push((iter(outside), here))
            it, here = iter(node.body), (q, new_cls, new_self, new_clsname)
            push((it, here))
            continue
        if kind == 2:
            q = node.qname()
            bases = tuple(b for b in (r.qualname(b) for b in node.bases) if b)
            cs = ClassSummary(q, node.lineno or 1, bases)
            own_defs = {c.name for c in node.body if isinstance(c, (nodes.FunctionDef, nodes.AsyncFunctionDef))}
            for c in node.body:
                if isinstance(c, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                    cs.methods.add(c.name)
                    if _is_stub(c):
                        cs.stubs.add(c.name)
                    if _decorator_names(c) & {"staticmethod", "classmethod"}:
                        cs.statics.add(c.name)
                elif isinstance(c, nodes.Assign):
                    # method aliases in the class body: __call__ = forward
                    for tg in c.targets:
                        if isinstance(tg, nodes.AssignName) and isinstance(c.value, nodes.Name) \
                                and c.value.name in own_defs:
                            cs.methods.add(tg.name)
                            s.functions.setdefault(f"{q}.{tg.name}", (c.lineno, c.lineno))
                            s.calls.append((f"{q}.{tg.name}", c.lineno, K_SELF, q, c.value.name))
                        held = _held_callable(c.value, r)
                        if isinstance(tg, nodes.AssignName) and held:
                            cs.attrs[tg.name] = held
                        elif isinstance(tg, nodes.AssignName) and isinstance(c.value, nodes.Call) \
                                and len(c.targets) == 1 and tg.name not in own_defs:
                            cs.values[tg.name] = (c.lineno or 1, c.end_lineno or c.lineno or 1)
                elif isinstance(c, nodes.AnnAssign) and isinstance(c.target, nodes.AssignName) and c.value is not None:
                    held = _held_callable(c.value, r)
                    if held:
                        cs.attrs[c.target.name] = held
                if isinstance(c, (nodes.Assign, nodes.AnnAssign)):
                    names = _listed_names(c.value, r)
                    tgts = c.targets if isinstance(c, nodes.Assign) else [c.target]
                    if names is not None and len(tgts) == 1 and isinstance(tgts[0], nodes.AssignName):
                        cs.lists[tgts[0].name] = names
                        list_attrs.add(tgts[0].name)
            s.classes[q] = cs
            if node.bases:
                push((reversed(node.bases), here))
            it, here = iter(node.body), (here[0], here[1], None, None)
            push((it, here))
            continue
        if kind == 3:
            caller, cls, selfname, clsname = here
            before = len(s.calls)
            _record_call(s, r, node, caller, cls, selfname, clsname)
            if len(s.calls) > before and s.__dict__.get("_kept_on"):
                keeper = _keeper(node, caller, s)
                if keeper is not None:
                    for i in range(before, len(s.calls)):
                        if s.calls[i][2] != K_REF:
                            s.kept_calls[i] = keeper
            if len(s.calls) > before:
                info = _passed(node)
                for i in range(before, len(s.calls)):
                    if s.calls[i][2] != K_REF:
                        s.call_args[i] = info
                use = _result_use(node)
                if use:
                    for i in range(before, len(s.calls)):
                        if s.calls[i][2] != K_REF:
                            s.result_uses[i] = use
            if guards and any(_may_take_edge(c, builtins_own) for c in s.calls[before:]):
                # only a call's callees carry its guard (references handed to it do not): no callee, no question
                cond = _condition(node, relpath, guard_memo, mentions_npu)
                if cond:   # a reference's condition is read only when it names a compiled op (the linker's ext call)
                    for i in range(before, len(s.calls)):
                        # a candidate of an attribute built per branch keeps the branch it was built under
                        # (what decides whether the op is there at all), unless the call itself never runs here
                        if i not in s.guards or cond == UNREACHABLE:
                            s.guards[i] = cond
                    arm = stopping_chain_arm(node) if cond != UNREACHABLE else None
                    if arm is not None:
                        for i in range(before, len(s.calls)):
                            s.chains[i] = arm
            dyn = _dynamic_dispatch(node, r)
            if dyn:
                s.dynamic.append((caller, node.lineno or 1, dyn))
            host = None
            for i in range(before, len(s.calls)):
                c = s.calls[i]
                if c[2] == K_NAME:
                    bk = _build_kind(node, c[3])
                    if bk:
                        _add_build(s, caller, bk)
                if c[2] in (K_NAME, K_EXT) and (node.args or node.keywords):
                    if host is None:
                        host = _host_call(node, cpu_ifs)
                    if host:
                        s.host_calls.add(i)
        if t is nodes.If and _cpu_device_test(node.test):
            cpu_ifs.add(node)
        if t is nodes.Attribute and list_attrs and node.attrname in list_attrs and here[1] is not None:
            _record_list_read(s, node, here)
        if kind == 4 and isinstance(node.value, (nodes.Name, nodes.Attribute)):
            _patch_ref(s, r, node, here)
        if t is nodes.ExceptHandler and here is not top and _hands_none(node):
            s.none_on_failure.add(here[0])
        if t is nodes.If and here is top and isinstance(node.parent, nodes.Module) and is_main_guard(node):
            main_fn = f"{s.modname}.{MAIN_FN}"
            s.functions[main_fn] = (node.lineno or 1, node.end_lineno or node.lineno or 1)
            it, here = node.get_children(), (main_fn, None, None, None)
            push((it, here))
            continue
        it = node.get_children()
        push((it, here))
    _registrations(tree, r, s)
    _find_name_dispatchers(tree, s)
    s.__dict__.pop("_containers_read", None)   # _container_of's memo: not part of the summary
    s.__dict__.pop("_attr_candidates", None)
    s.__dict__.pop("_guards_on", None)
    s.__dict__.pop("_kept_on", None)
    return s


RESULT_CALLED, RESULT_TESTED = "called", "tested"


def _result_use(call: nodes.Call) -> Optional[str]:
    """How the code uses the value *call* returns: RESULT_CALLED when it calls it or a method of it
    (``get_ext().forward(x)``, ``make()(x)``), RESULT_TESTED when it only tests it (``if not get_ext():``,
    ``if get_ext() is None:``, ``bool(get_ext())``); None otherwise."""
    parent = call.parent
    if isinstance(parent, nodes.Call) and parent.func is call:
        return RESULT_CALLED
    if isinstance(parent, nodes.Attribute) and isinstance(parent.parent, nodes.Call) and parent.parent.func is parent:
        return RESULT_CALLED
    cur = call
    while isinstance(parent, nodes.UnaryOp) and parent.op == "not":
        cur, parent = parent, parent.parent
    if isinstance(parent, nodes.Compare) and len(parent.ops) == 1 and parent.left is cur \
            and parent.ops[0][0] in ("is", "is not") and isinstance(parent.ops[0][1], nodes.Const) \
            and parent.ops[0][1].value is None:
        cur, parent = parent, parent.parent
    if isinstance(parent, (nodes.If, nodes.IfExp, nodes.While)) and parent.test is cur:
        return RESULT_TESTED
    return None


def _hands_none(handler: nodes.ExceptHandler) -> bool:
    """An except branch that does not re-raise and binds a name to None or returns None (no value)."""
    body = handler.body
    if any(isinstance(st, nodes.Raise) for st in body):
        return False
    for st in body:
        if isinstance(st, nodes.Assign) and isinstance(st.value, nodes.Const) and st.value.value is None \
                and all(isinstance(tg, nodes.AssignName) for tg in st.targets):
            return True
        if isinstance(st, nodes.Return) and (st.value is None or isinstance(st.value, nodes.Const)
                                             and st.value.value is None):
            return True
    return False


def _may_take_edge(call: Tuple[str, int, str, str, str], builtins_own: bool) -> bool:
    """False for a recorded call the linker never makes an edge or an external call of, so its condition
    is never read: a reference handed to a call, a dynamic dispatch (:data:`K_DYN`), a builtin
    (``builtins.len``; its qualname is external unless a project package is named ``builtins``, *builtins_own*).
    A third of a library's calls are builtins."""
    kind = call[2]
    if kind == K_DYN:
        return False
    if kind == K_REF:   # a compiled op handed on runs where the call runs (a torch API or builtin handed on is none)
        return not call[4] and not call[3].startswith(("torch.", "builtins."))
    return not (kind == K_NAME and not builtins_own and call[3].startswith("builtins."))


# node type -> 1 function, 2 class, 3 call, 4 assignment, 5 attribute (its one child in .expr), 6 keyword (its one
# child in .value), 0 any other node with children (filled as types are met)
_WALK_KINDS: Dict[type, int] = {}
_ONE_EXPR = frozenset((nodes.Attribute, nodes.AssignAttr, nodes.DelAttr))
_NPU_AVAIL = re.compile(r"^(is_npu_available|is_torch_npu_available|npu_is_available|is_npu)$")


def _mentions_npu(tree: nodes.Module) -> bool:
    """False when the module's text cannot hold an NPU test or NPU evidence (no :data:`~analyse.syntax.NPU_WORD`)."""
    known = getattr(tree, "_npu_mentions", None)   # set by analyse.project.build_module
    if known is not None:
        return known
    try:
        text = tree.file_bytes
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
    except Exception:
        text = None
    if not text:
        return True   # no source at hand: look at the tree
    return mentions_npu(text)


def npu_evidence(tree: nodes.Module, relpath: str) -> Dict[str, List[str]]:
    """The module's own NPU support: NPU accelerator / backend classes, ``torch_npu``
    imports, ``device.type == "npu"`` branches, NPU availability checks."""
    ev: Dict[str, List[str]] = {}

    def add(kind: str, text: str) -> None:
        ev.setdefault(kind, []).append(text)

    for node in walk(tree):
        if isinstance(node, nodes.ClassDef) and NPU_WORD.search(node.name):
            bases = [b.as_string() for b in node.bases]
            if any(re.search(r"Accelerator|Backend|Platform|Device|Engine", b) for b in bases) \
                    or "accelerator" in relpath.lower():
                add("accelerator", f"{relpath}:{node.lineno}: class {node.name}({', '.join(bases)})")
        elif isinstance(node, (nodes.Import, nodes.ImportFrom)):
            mods = [m for m, _a in node.names] if isinstance(node, nodes.Import) else [node.modname or ""]
            if any(m == "torch_npu" or m.startswith("torch_npu.") for m in mods):
                add("torch_npu", f"{relpath}:{node.lineno}: imports torch_npu")
            # an Ascend kernel package swapped in: `from torch_npu import npu_fusion_attention`, MindSpeed
            names = [n for n, _a in node.names] if isinstance(node, nodes.ImportFrom) else []
            if any(m.split(".")[0] == "mindspeed" for m in mods) or (
                    any(m.split(".")[0] == "torch_npu" for m in mods) and any(n.startswith("npu_") for n in names)):
                add("kernels", f"{relpath}:{node.lineno}: imports Ascend kernels")
        elif isinstance(node, nodes.Compare):
            consts = [c for c in [node.left] + [o for _op, o in node.ops] if isinstance(c, nodes.Const)]
            if any(isinstance(c.value, str) and c.value.lower() == "npu" for c in consts):
                add("device_branch", f"{relpath}:{node.lineno}: {node.as_string()[:80]}")
        elif isinstance(node, nodes.Call):
            name = node.func.attrname if isinstance(node.func, nodes.Attribute) else getattr(node.func, "name", "")
            if name and _NPU_AVAIL.match(name):
                add("availability", f"{relpath}:{node.lineno}: {name}()")
            backend = _npu_backend_kind(node)
            if backend:
                add(backend, f"{relpath}:{node.lineno}: {node.func.as_string()[:60]}()")
        elif isinstance(node, nodes.Const) and isinstance(node.value, str) and node.value in _NPU_BACKEND_STRINGS:
            add(_NPU_BACKEND_STRINGS[node.value], f"{relpath}:{node.lineno}: {node.value!r}")
    return ev


# the pieces of a real NPU backend in a library (library.npu_support): its device type, its communication
# backend, RNG and memory calls on torch.npu, and Ascend kernels it swaps in (torch_npu.npu_* fused ops)
_NPU_BACKEND_STRINGS = {"npu": "device_type", "hccl": "comm_backend"}
_NPU_RNG = re.compile(r"^(manual_seed|manual_seed_all|seed|seed_all|initial_seed|get_rng_state|set_rng_state|"
                      r"get_rng_state_all|set_rng_state_all)$")
_NPU_MEMORY = re.compile(r"^(empty_cache|memory_allocated|max_memory_allocated|memory_reserved|max_memory_reserved|"
                         r"mem_get_info|memory_stats|reset_peak_memory_stats|reset_max_memory_allocated)$")


def _npu_backend_kind(call: nodes.Call) -> Optional[str]:
    """``torch.npu.manual_seed_all(...)`` -> "rng", ``torch.npu.empty_cache()`` -> "memory",
    ``torch_npu.npu_fusion_attention(...)`` -> "kernels", ``torch.device("npu")`` -> "device_type"."""
    func = call.func
    if not isinstance(func, nodes.Attribute):
        return None
    owner = func.expr.as_string() if isinstance(func.expr, (nodes.Name, nodes.Attribute)) else ""
    if owner in ("torch.npu", "torch_npu.npu"):
        if _NPU_RNG.match(func.attrname):
            return "rng"
        if _NPU_MEMORY.match(func.attrname):
            return "memory"
    elif owner == "torch_npu" and func.attrname.startswith("npu_"):
        return "kernels"
    return None


UNREACHABLE = "\x00unreachable"   # condition of code that only runs on another accelerator
OFF_BY_DEFAULT = "\x00off-by-default\x00"   # prefix of the condition of a call behind a default-off option
_OTHER_DEVICE = re.compile(r"musa|mlu|xpu|mps|hpu|ipu|dipu|neuron|habana|camb|\bxla\b|\bhip\b|rocm|tpu", re.I)
_NPU_OR_CUDA = re.compile(r"(?<!i)npu|npu(?!t)|cuda|gpu|ascend", re.I)   # not the "npu" of "input"


def other_device_only(kind: Optional[str], condition: Optional[str]) -> bool:
    """A guard that only lets another accelerator in (``elif is_musa_available():``,
    ``if x.device.type == 'mlu':``): the code behind it never runs on an NPU host."""
    if kind not in ("availability-check", "device-branch") or not condition:
        return False
    return bool(_OTHER_DEVICE.search(condition)) and not _NPU_OR_CUDA.search(condition)


def _npu_test(test) -> Optional[bool]:
    """True for a test that holds on an NPU (``x.device.type == 'npu'``, ``is_npu_available()``),
    False for one that fails on it (``device != 'npu'``), None when it says nothing about NPUs."""
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        inner = _npu_test(test.operand)
        return None if inner is None else not inner
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        op, right = test.ops[0]
        consts = [c for c in (test.left, right) if isinstance(c, nodes.Const) and isinstance(c.value, str)]
        if any(c.value.lower() == "npu" for c in consts):
            if op in ("==", "is", "in"):
                return True
            if op in ("!=", "is not", "not in"):
                return False
        return None
    if isinstance(test, nodes.Call):
        name = test.func.attrname if isinstance(test.func, nodes.Attribute) else getattr(test.func, "name", "")
        if name and _NPU_AVAIL.match(name):
            return True
    if isinstance(test, (nodes.Name, nodes.Attribute)):
        name = test.attrname if isinstance(test, nodes.Attribute) else test.name
        if name in ("is_npu", "IS_NPU", "on_npu", "use_npu"):
            return True
    return None


def _off_npu_path(node, memo: Optional[dict] = None) -> bool:
    """*node* only runs when the device is not an NPU: the other branch of an NPU test
    (``if x.device.type == 'npu': return npu_path(...)`` then the CUDA op). *memo*: the tree's
    :func:`analyse.guards.guard_of` memo (the blocks' tables are kept there: a scan of the block per
    question made a long block in a module that mentions NPUs cost the square of its length)."""
    tables = block_tables(memo)
    cur, parent = node, node.parent
    depth = 0
    while parent is not None and depth < 60 and not isinstance(cur, (nodes.FunctionDef, nodes.ClassDef)):
        at = block_position(parent, cur, tables)
        if at is not None and at[0] in ("body", "orelse"):
            fld, idx = at
            if isinstance(parent, nodes.If):
                t = _npu_test(parent.test)
                if t is not None and (t == (fld == "orelse")):
                    return True
            first = tables.get(("npu-exit", fld, id(parent)), _NO_EXIT)
            if first is _NO_EXIT:   # the first `if <npu test>: return / raise` (no else) of the block
                first = tables[("npu-exit", fld, id(parent))] = next(
                    (i for i, prev in enumerate(getattr(parent, fld))
                     if isinstance(prev, nodes.If) and not prev.orelse and prev.body
                     and isinstance(prev.body[-1], (nodes.Return, nodes.Raise)) and _npu_test(prev.test)), None)
            if first is not None and first < idx:
                return True
        cur, parent = parent, parent.parent
        depth += 1
    return False


_NO_EXIT = object()
_CUDA_EXITS = "cuda-exits"


def _not_is_cuda(test) -> bool:
    """``not x.is_cuda`` (a tensor's, not ``self.is_cuda``), alone or as a disjunct of an ``or``: true for any
    tensor that is not a CUDA tensor, an NPU tensor among them."""
    parts = test.values if isinstance(test, nodes.BoolOp) and test.op == "or" else [test]
    for p in parts:
        if isinstance(p, nodes.UnaryOp) and p.op == "not" and isinstance(p.operand, nodes.Attribute) \
                and p.operand.attrname == "is_cuda" \
                and not (isinstance(p.operand.expr, nodes.Name) and p.operand.expr.name in ("self", "cls")):
            return True
    return False


def _cuda_exits(tree, memo: Optional[dict]) -> dict:
    """{id(block owner): {field: index}} of the first ``if ... or not x.is_cuda: return <value>`` (no ``else``) of
    each block of *tree*, found in one walk and kept in the tree's guard memo."""
    got = memo.get(_CUDA_EXITS) if memo is not None else None
    if got is None:
        got = {}
        for ifn in nodes_of(tree, nodes.If):
            if ifn.orelse or not ifn.body or not isinstance(ifn.body[-1], nodes.Return) \
                    or ifn.body[-1].value is None or not _not_is_cuda(ifn.test):
                continue
            parent = ifn.parent
            for fld in ("body", "orelse"):
                block = getattr(parent, fld, None)
                if isinstance(block, list) and any(st is ifn for st in block):
                    idx = next(i for i, st in enumerate(block) if st is ifn)
                    own = got.setdefault(id(parent), {})
                    if idx < own.get(fld, idx + 1):
                        own[fld] = idx
                    break
        if memo is not None:
            memo[_CUDA_EXITS] = got
    return got


def _after_cuda_exit(node, memo: Optional[dict] = None) -> bool:
    """*node* runs only after an early return for a tensor that is not a CUDA tensor (``if torch.jit.is_scripting()
    or not x.is_cuda: return F.layer_norm(x, ...)`` and then the fused kernel): an NPU tensor is not a CUDA tensor,
    so it takes that return (a working path of its own) and *node* is off the NPU path. An exit that raises is a
    stop, not a path (:mod:`analyse.passes.cuda_api`)."""
    exits = _cuda_exits(node.root(), memo)
    if not exits:
        return False
    tables = block_tables(memo)
    cur, parent = node, node.parent
    depth = 0
    while parent is not None and depth < 60 and not isinstance(cur, (nodes.FunctionDef, nodes.ClassDef)):
        own = exits.get(id(parent))
        if own:
            at = block_position(parent, cur, tables)
            if at is not None and at[0] in own and own[at[0]] < at[1]:
                return True
        cur, parent = parent, parent.parent
        depth += 1
    return False


def npu_takes_fallback(kind: Optional[str], on_path: Optional[dict], fallback: bool, own: bool = True) -> bool:
    """Library mode: a CUDA device or availability test with a working fallback that is false on an NPU host as the
    code stands (no transfer_to_npu): the library runs there through its fallback, with nothing to change, so the
    CUDA path is no work of the NPU port (``if not x.is_cuda: return <torch>`` / ``if x.is_cuda: <kernel> else:
    <torch>``, ``if _SUPPORTS_FLEX: <flex> else: <dense>``). transfer_to_npu would make the test answer for the NPU
    and take the CUDA path; that is the importing program's choice, not the library's. Judges read these functions
    as supported (stop 39). *own*: the guard's own test is that CUDA test (Guard.npu_fallback); a CUDA test further
    out whose other side stops (``elif not torch.cuda.is_available(): raise``) is no fallback."""
    if not own or not fallback or not on_path or kind not in ("device-branch", "availability-check"):
        return False
    return on_path.get("no_transfer") == "off" and on_path.get("transfer_to_npu") in ("on", "conditional")


def transfer_only_condition(kind: Optional[str], condition: Optional[str], on_path: Optional[dict],
                            fallback: bool, where: str) -> Optional[str]:
    """The condition text of a CUDA device branch that an NPU host takes only with transfer_to_npu
    (``if x.is_cuda: <CUDA kernel> else: <PyTorch code>``, ``if not x.is_cuda: return <PyTorch code>``): with it
    ``is_cuda`` / ``torch.cuda.is_available()`` answer for the NPU and the CUDA path runs; without it the
    fallback runs. None for any other guard."""
    if not fallback or not on_path or kind not in ("device-branch", "availability-check"):
        return None
    if on_path.get("transfer_to_npu") != "on" or on_path.get("no_transfer") != "off":
        return None
    what = f"`{condition}`" if condition else "its CUDA test"
    return (f"only under transfer_to_npu, where {what} answers for the NPU ({kind}, {where}); "
            "without it the fallback runs")


def _condition(call: nodes.Call, relpath: str = "", memo: Optional[dict] = None,
               mentions_npu: bool = True) -> Optional[str]:
    """The condition text when *call* only runs under a guard that has a working
    alternative (an ``else`` / ``except`` fallback, a default-off option);
    :data:`UNREACHABLE` when it only runs on another accelerator or off the NPU path.
    *memo*: :func:`analyse.guards.guard_of`'s memo for the tree; *mentions_npu* False skips
    looking for NPU tests (a module without the word cannot have one)."""
    try:
        if mentions_npu and _off_npu_path(call, memo):
            return UNREACHABLE
        if _after_cuda_exit(call, memo):
            return UNREACHABLE
        g = guard_of(call, memo)
    except (RecursionError, ValueError):
        return None
    if g is not None and other_device_only(g.kind, g.condition):
        return UNREACHABLE
    if params_are_choices() and cuda_probe_settled(call):
        # library mode: a CUDA availability helper asked for a path choice (`if is_cuda_available(): <skipped
        # block>`) or in a test an NPU alternative settles: its answer changes nothing on an NPU, so its own CUDA
        # probe is no step for the caller (the guarded code is judged where it is)
        return UNREACHABLE
    if g is None:
        return None
    if g.tried and g.fallback:
        return UNREACHABLE   # a call tried for a value whose failure the handler answers: the caller completes
    scen = g.on_path.get("transfer_to_npu") if g.path is not None else None
    where = f"{relpath}:{g.line}" if relpath else f"line {g.line}"
    if scen == "off":
        if g.kind == "option" and g.fallback and g.condition and g.path is not None \
                and not off_whatever_set_in_code(g.path):
            # an option a user of the library can turn on (off with its default, a setting in code rather than an
            # environment switch): the caller's choice, as for the findings behind it (analyse.library); only what
            # is CUDA-only there makes the caller conditional
            return (f"{OFF_BY_DEFAULT}only when `{g.condition}` is turned on (off by default, {where}; otherwise the "
                    "fallback runs)")
        return UNREACHABLE   # false on an NPU host with the defaults (an unset environment flag, another device)
    if scen == "conditional" and g.to_dict().get("by_default") == "off":
        # off unless the caller asks for it (`mixed_precision == "fp8"` two levels up): a choice, not a blocker
        return f"only when a caller sets {g.to_dict().get('unless') or 'a non-default value'} (off by default, {where})"
    if g.skipped_block:
        return None   # a call in a skipped CUDA block: it runs on the default path (transfer_to_npu) as written
    if g.path is not None and params_are_choices() and npu_takes_fallback(g.kind, g.on_path, g.fallback,
                                                                            g.npu_fallback):
        return UNREACHABLE   # library mode: the NPU takes the fallback as the code stands
    if scen == "on" and g.path is not None:
        # the CUDA path runs only where transfer_to_npu makes the CUDA test true; without it the fallback does
        return transfer_only_condition(g.kind, g.condition, g.on_path, g.fallback, where)
    if scen == "on" or not g.fallback:
        return None          # runs on an NPU host (transfer_to_npu makes the CUDA test true), or no alternative
    if g.kind == "import-fallback":
        return f"only when the optional import succeeds (fallback in the except branch at {where})"
    what = f"`{g.condition}`" if g.condition else "its guard"
    return f"only when {what} ({g.kind}, {where}; otherwise the fallback runs)"


# the text the line above writes, read back where two branches of one test are compared (analyse.library): the
# condition, the guard's kind and where its test is; written and read here, so that the two stay one format
FALLBACK_CONDITION = re.compile(r"^only when `(?P<cond>.+)` \((?P<kind>[\w-]+), (?P<where>[^;]+); otherwise the fallback runs\)$")


_DYNAMIC_CALLEES = {"eval", "exec", "builtins.eval", "builtins.exec", "build_from_cfg"}


def _dynamic_dispatch(call: nodes.Call, r: Resolver) -> Optional[str]:
    """Source text of a call whose callee is chosen at run time: ``getattr(obj, name)(...)``
    with a computed name, ``eval``/``exec``, a subscripted registry ``OPS[name](...)``,
    ``registry.get(name)(...)``, ``REGISTRY.build(cfg)`` / ``build_from_cfg``."""
    func = call.func
    text = None
    if isinstance(func, nodes.Call):
        inner = func.func
        if isinstance(inner, nodes.Name) and inner.name == "getattr" and len(func.args) > 1 \
                and not (isinstance(func.args[1], nodes.Const) and isinstance(func.args[1].value, str)):
            text = func
        elif isinstance(inner, nodes.Attribute) and inner.attrname == "get" and func.args:
            text = func
    elif isinstance(func, nodes.Subscript) and not isinstance(func.slice, nodes.Const):
        text = func
    elif isinstance(func, nodes.Name) and func.name in ("eval", "exec", "build_from_cfg"):
        text = call
    elif isinstance(func, nodes.Attribute) and func.attrname in ("build", "build_from_cfg") and call.args \
            and isinstance(func.expr, nodes.Name) and func.expr.name.isupper():
        text = call
    elif _runs_a_loaded_config(call, r):
        text = call
    if text is None:
        return None
    try:
        out = text.as_string()
    except Exception:  # pragma: no cover - odd trees
        return None
    return out if len(out) <= 120 else out[:117] + "..."


def _runs_a_loaded_config(call: nodes.Call, r: Resolver) -> bool:
    """``runner = Runner.from_cfg(cfg)`` with ``cfg = Config.fromfile(args.config)``: a method of an external class
    handed a configuration read from a file the command line names builds whatever that file declares
    (registries of the project's modules), which the call graph cannot tell."""
    func = call.func
    if not (isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name[:1].isupper()) \
            or not call.args or not isinstance(call.args[0], nodes.Name):
        return False   # a class's constructor classmethod (`Runner.from_cfg`), not a print or a log of the config
    q = r.qualname(func)
    if not q or r.index.has_root(q.partition(".")[0]):
        return False   # a project function: its own body is followed
    return _loaded_config(call.args[0], 0)


def _loaded_config(name: nodes.Name, depth: int) -> bool:
    """*name* holds ``X.fromfile(<not a literal>)``, directly or through calls that take it and hand it back
    (``cfg = merge_args(cfg, args)``)."""
    if depth > 3:
        return False
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return False
    for d in defs:
        if isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign):
            v = d.parent.value
            if not isinstance(v, nodes.Call):
                continue
            if isinstance(v.func, nodes.Attribute) and v.func.attrname == "fromfile" and v.args \
                    and _const_str(v.args[0]) is None:
                return True
            for a in v.args:
                if isinstance(a, nodes.Name) and a.name == name.name and a is not name and _loaded_config(a, depth + 1):
                    return True
    return False


def _stored_lambda(node: nodes.Lambda) -> bool:
    """A lambda kept in a variable or a literal container (``FUNCS = {"ring": lambda *a: kernel()(*a)}``), with
    no call between it and its statement: its body runs when the stored callable is called."""
    cur, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
            return cur is parent.value
        if not isinstance(parent, (nodes.Dict, nodes.List, nodes.Tuple, nodes.Set)):
            return False
        cur, parent = parent, parent.parent
    return False


_OP_NAME = re.compile(r"^(\w+)::(\w+)$")
KERNELS_MARK = "#kernels"   # custom_ops key suffix: the operator (or custom-op function) has kernels of its own


def _custom_op_name(fn) -> Tuple[Optional[str], Optional[str]]:
    """(``torch.ops.ns.name`` of the operator a function defines, of the operator it adds a kernel to): the first
    for a function decorated with a ``custom_op`` call whose first argument is the operator name ``"ns::name"``
    (``@torch.library.custom_op("ns::name", mutates_args=())``, or a module's wrapper named so), the second for
    ``@register_kernel("ns::name", device)`` / ``@lib.impl("ns::name", ...)``."""
    defined = kernel = None
    for d in fn.decorators.nodes:
        if not isinstance(d, nodes.Call):
            continue
        leaf = d.func.attrname if isinstance(d.func, nodes.Attribute) else getattr(d.func, "name", "")
        m = _OP_NAME.match(_const_str(d.args[0]) or "") if d.args else None
        if m is None:
            continue
        op = f"torch.ops.{m.group(1)}.{m.group(2)}"
        if "custom_op" in leaf:
            defined = op
        elif "register_kernel" in leaf or leaf in ("impl", "register_autograd"):
            kernel = op
    return defined, kernel


def _extra_kernel_of(fn) -> Optional[str]:
    """``@f.register_kernel("npu")`` on a function: the name ``f`` of the custom op it adds a kernel to."""
    for d in fn.decorators.nodes:
        if isinstance(d, nodes.Call) and isinstance(d.func, nodes.Attribute) and d.func.attrname == "register_kernel" \
                and isinstance(d.func.expr, nodes.Name):
            return d.func.expr.name
    return None


def _passed(call: nodes.Call) -> Tuple[int, Tuple[str, ...], bool]:
    """(positional arguments, keyword names, *args / **kwargs passed) of a call."""
    star = any(isinstance(a, nodes.Starred) for a in call.args or ()) \
        or any(k.arg is None for k in call.keywords or ())
    return (len(call.args or ()), tuple(k.arg for k in call.keywords or () if k.arg), star)


def _module_global(name: nodes.Name) -> bool:
    """*name* is not bound in any function scope around it: it reads the module's binding."""
    try:
        sc = name.scope()
        while sc is not None and not isinstance(sc, nodes.Module):
            if name.name in sc.locals and not isinstance(sc, nodes.ClassDef):
                return False
            sc = sc.parent.scope() if sc.parent is not None else None
    except Exception:
        return False
    return True


def _record_call(s: ModuleSummary, r: Resolver, call: nodes.Call, caller: str, cls: Optional[str],
                 selfname: Optional[str], clsname: Optional[str]) -> None:
    line = call.lineno or 1
    func = call.func
    add = s.calls.append
    if _may_look_up(func) and _record_lookup(s, r, call, caller):
        _arg_refs(s, r, call, caller, cls, selfname, clsname)
        return
    # ext_module.op(...)
    if isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name in s.ext_aliases:
        ext, _ops = s.ext_aliases[func.expr.name]
        add((caller, line, K_EXT, ext, func.attrname))
        return
    # getattr(obj, name)(...)
    if isinstance(func, nodes.Call) and isinstance(func.func, nodes.Name) and func.func.name == "getattr" and func.args:
        obj = func.args[0]
        name_arg = func.args[1] if len(func.args) > 1 else None
        param = _closure_param(name_arg)
        if isinstance(obj, nodes.Name) and obj.name in s.ext_aliases:
            ext = s.ext_aliases[obj.name][0]
            if isinstance(name_arg, nodes.Const) and isinstance(name_arg.value, str):
                add((caller, line, K_EXT, ext, name_arg.value))
            else:
                add((caller, line, K_EXT, ext, PARAM_MARK + param if param else "*"))
            return
        q = r.qualname(obj)
        if q:
            if isinstance(name_arg, nodes.Const) and isinstance(name_arg.value, str):
                add((caller, line, K_NAME, f"{q}.{name_arg.value}", ""))
            else:
                add((caller, line, K_DYN, q, PARAM_MARK + param if param else ""))
        elif isinstance(obj, nodes.Name) and obj.name in (selfname, clsname) and cls:
            if isinstance(name_arg, nodes.Const) and isinstance(name_arg.value, str):
                add((caller, line, K_SELF, cls, name_arg.value))
            else:
                held = _registered_submodules(obj, r)
                if held is None:
                    add((caller, line, K_DYN, cls, ""))
                else:   # `getattr(self, stage)(x)` over the modules the class registers with add_module / setattr
                    for c, _call in held:
                        add((caller, line, K_INST, c, ""))
        return
    q = r.qualname(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
    if q is None and isinstance(func, nodes.Name):
        # local functools.partial alias
        try:
            defs = own_bindings(func, func.name)
        except Exception:
            defs = ()
        if len(defs) == 1 and isinstance(defs[0], nodes.AssignName):
            value = r.assigned_value(defs[0])
            if _is_partial_call(value, r):
                q = r.qualname(value.args[0])
    if q is None and isinstance(func, nodes.Name):
        # a module-level def rebound under a condition (`if TESTING: get_dataloaders = mocked_dataloaders`):
        # the name is ambiguous for the resolver, but the def is what runs with the defaults
        top = [d for d in func.root().locals.get(func.name, ())
               if isinstance(d, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef))]
        if len(top) == 1 and func.scope() is not func.root() and func.name not in func.scope().locals:
            q = top[0].qname()
    if q is None and isinstance(func, nodes.Name) and s.__dict__.get("_kept_on"):
        # script mode: a parameter whose default is a project class or function (`def config_from_args(args,
        # config_cls=GPTConfig): return config_cls(**kw)`): with the defaults the call runs that default (a caller
        # that passes another hands it over as a reference of its own)
        q = _param_default_callable(func, r)
    if q is None and isinstance(func, nodes.Name) and cls and clsname and func.name == clsname:
        # `cls(...)` in a classmethod builds the class it is called on (`Model.from_pretrained(...)`)
        q = cls
        info = s.classes.get(cls)
        if info is not None and caller.startswith(cls + "."):
            info.constructors.add(caller[len(cls) + 1:].partition(".")[0])
    if q is None and isinstance(func, nodes.Name):
        # `cls = Cutlass if backend == "cutlass" else Sparse; cls(...)`: a local bound to one of several classes
        cands = _class_names(func, r)
        if len(cands) > 1:
            conds = _binding_conditions(s, r, func) if s.__dict__.get("_guards_on") else {}
            held = _binding_guards(func, r) if s.__dict__.get("_kept_on") else {}
            for c in cands:
                cond = conds.get(c)
                if cond == UNREACHABLE:
                    continue   # `if x.is_cuda: fn = fused else: fn = plain`: an NPU binds the other one
                if cond:
                    s.guards[len(s.calls)] = cond
                if held.get(c) is not None:
                    s.alt_guards[len(s.calls)] = held[c]
                add((caller, line, K_NAME, c, ""))
            _arg_refs(s, r, call, caller, cls, selfname, clsname)
            return
    if q is None and s.alt_bindings:
        # `backend.fwd(x)` / `backend(x)`, the module-level name bound by alternative imports: each target, under
        # the condition of its binding
        head = func.expr if isinstance(func, nodes.Attribute) else func
        if isinstance(head, nodes.Name) and head.name in s.alt_bindings and _module_global(head):
            suffix = f".{func.attrname}" if isinstance(func, nodes.Attribute) else ""
            for t, cond in s.alt_bindings[head.name]:
                s.alt_conds[len(s.calls)] = cond
                add((caller, line, K_NAME, t + suffix, ""))
            _arg_refs(s, r, call, caller, cls, selfname, clsname)
            return
    if q is None and isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) \
            and not (cls and func.expr.name in (selfname, clsname)) and r.qualname(func.expr) is None:
        # `fn = TrainFunction if self.trainable else InferenceFunction; fn.apply(x)`: a local bound to one of
        # several project classes, the method of each (an autograd Function's `apply` runs its forward)
        cands = _class_names(func.expr, r)
        alts = _alternative_arms(func.expr, r, s) if not cands else []
        if cands:
            conds = _binding_conditions(s, r, func.expr) if s.__dict__.get("_guards_on") and len(cands) > 1 else {}
            for c in cands:
                cond = conds.get(c)
                if cond == UNREACHABLE:
                    continue
                if cond:
                    s.guards[len(s.calls)] = cond
                add((caller, line, K_NAME, f"{c}.{func.attrname}", ""))
            _arg_refs(s, r, call, caller, cls, selfname, clsname)
            return
        if alts:
            # the arms are module-level names bound by alternative imports (`try: from .kernels import Fn` /
            # `except ImportError: Fn = Fake`): each target, under the condition of its binding
            for t, cond in alts:
                s.alt_conds[len(s.calls)] = cond
                add((caller, line, K_NAME, f"{t}.{func.attrname}", ""))
            _arg_refs(s, r, call, caller, cls, selfname, clsname)
            return
    if q is None and isinstance(func, nodes.Name) and s.star_imports and s.__dict__.get("_guards_on") \
            and func.name not in _BUILTIN_NAMES and not _bound_anywhere(func):
        # library mode: `from ..kernels import *` then `fast_linear_forward(...)` -- a name no scope binds comes from
        # a star import; the linker finds the star source that defines it (no edge, and no unknown, when none does)
        add((caller, line, K_NAME, f"{s.modname}.{func.name}", STAR_MARK))
        _arg_refs(s, r, call, caller, cls, selfname, clsname)
        return
    if q is not None:
        add((caller, line, K_NAME, q, ""))
    elif isinstance(func, nodes.Attribute):
        expr = func.expr
        if isinstance(expr, nodes.Name) and cls and expr.name in (selfname, clsname):
            t = None
            if expr.name == selfname:
                try:
                    t = r.type_of(func)
                except Exception:
                    t = None
            held = r.self_attr_held(func) if expr.name == selfname and not t else None
            cands = _attr_candidates(s, r, func, False) if expr.name == selfname and not t and not held else ()
            if t in SEQUENTIAL_CTORS and expr.name == selfname:
                # `self.stem(x)` with `self.stem = nn.Sequential(Block(...), nn.ReLU())`: calling a Sequential runs
                # the forward of every module built into it
                cands = _attr_candidates(s, r, func, True)
            if held:   # `self.op(x)` with `self.op = ext_module.op` in __init__
                add((caller, line, K_NAME, held, ""))
            elif cands:   # `self.conv(x)`, the attribute built as one of several classes
                for c, cond in cands:
                    if cond:
                        s.guards[len(s.calls)] = cond
                    add((caller, line, K_SELF, cls, f"{func.attrname}|{c}"))
            else:
                add((caller, line, K_SELF, cls, func.attrname if not t else f"{func.attrname}|{t}"))
                if not t and expr.name == selfname and _record_held(s, r, func, cls, selfname):
                    add((caller, line, K_HELD, cls, func.attrname))
        elif (isinstance(expr, nodes.Call) and isinstance(expr.func, nodes.Name) and expr.func.name == "super"
              and cls):
            add((caller, line, K_SUPER, cls, func.attrname))
        else:
            try:
                t = r.type_of(expr)
            except Exception:
                t = None
            if t and not t.startswith("torch."):
                add((caller, line, K_METHOD, t, func.attrname))
            elif not t:
                made = _made_by_call(r, expr)
                if made and r.index.has_root(made.partition(".")[0]):
                    add((caller, line, K_RESULT, made, func.attrname))
                elif cls and selfname and _record_held(s, r, expr, cls, selfname):
                    add((caller, line, K_HELD, cls, expr.attrname))
                    # `self._mod = make_spec(...)` elsewhere, `self._mod.build()` here: the method of what the
                    # factory returns (the linker follows its made_by)
                    for made in _held_factories(s, cls, expr.attrname):
                        add((caller, line, K_RESULT, made, func.attrname))
                else:
                    s.untyped_calls += 1
    else:
        try:
            t = r.type_of(func)
        except Exception:
            t = None
        if t and not t.startswith("torch."):
            add((caller, line, K_INST, t, ""))
        elif not t and cls and selfname:
            # `self.poolers[0](x)`, `for p in self.poolers: p(x)`: an element of a container of modules the class
            # builds in __init__
            held = None
            if isinstance(func, nodes.Subscript) and isinstance(func.value, nodes.Attribute) \
                    and isinstance(func.value.expr, nodes.Name) and func.value.expr.name == selfname:
                held = func.value
            elif isinstance(func, nodes.Name) and selfname == "self":
                held = _iterated_attr(func)
            for c, cond in (_attr_candidates(s, r, held, True) if held is not None else ()):
                if cond:
                    s.guards[len(s.calls)] = cond
                add((caller, line, K_INST, c, ""))
    # function references passed as arguments (callbacks, checkpoint(fn, ...), map(fn, xs)); a
    # registration (register_compile_pass(name, fn), register_forward_hook(fn)) stores the function, it does not run it
    _arg_refs(s, r, call, caller, cls, selfname, clsname)


_MAX_HELD_VALUES = 8
# b of a K_NAME call whose name comes from one of the module's star imports (library mode): resolved when a star
# source defines it, else dropped without an unknown (:meth:`Linker.resolve_call`)
STAR_MARK = "*star"
import builtins as _builtins_module   # noqa: E402  (the names a bare call may mean without any binding)
_BUILTIN_NAMES = frozenset(dir(_builtins_module))


def _bound_anywhere(name: nodes.Name) -> bool:
    try:
        return bool(own_bindings(name, name.name))
    except Exception:
        return True


def _made_by_call(r: Resolver, expr) -> Optional[str]:
    """The function whose call produced *expr*: ``make(...)`` itself, or a local bound once, in the same function,
    to ``make(...)`` (``mod = make(...)`` ... ``mod.build()``); None otherwise."""
    if isinstance(expr, nodes.Name):
        try:
            defs = own_bindings(expr, expr.name)
        except Exception:
            return None
        if len(defs) != 1 or not isinstance(defs[0], nodes.AssignName) or defs[0].scope() is not expr.scope():
            return None
        expr = r.assigned_value(defs[0])
    if isinstance(expr, nodes.Call) and isinstance(expr.func, (nodes.Name, nodes.Attribute)):
        return r.qualname(expr.func)
    return None


def _record_held(s: ModuleSummary, r: Resolver, attr, cls: str, selfname: str) -> bool:
    """``self.<attr>`` (*attr*, an Attribute on the method's *selfname*) is an instance attribute the class assigns
    in its methods (not a method): its values go in ``s.held`` (once per class and attribute); True when there are
    any."""
    if not (isinstance(attr, nodes.Attribute) and isinstance(attr.expr, nodes.Name) and attr.expr.name == selfname):
        return False
    key = f"{cls}{HELD_SEP}{attr.attrname}"
    if key in s.held:
        return bool(s.held[key])
    info = s.classes.get(cls)
    if info is not None and attr.attrname in info.methods:
        s.held[key] = []
        return False
    scope = attr.scope()
    node = scope.parent if isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)) else None
    out: List[Tuple[Tuple[str, ...], ...]] = []
    if isinstance(node, nodes.ClassDef):
        _held_values(r, node, attr.attrname, out, set())
    s.held[key] = out
    return bool(out)


def _held_values(r: Resolver, cls: nodes.ClassDef, name: str, out: list, seen: set, depth: int = 0) -> None:
    if depth > 2 or name in seen:
        return
    seen.add(name)
    for a in (cls.instance_attrs.get(name) or ())[:_MAX_HELD_VALUES]:
        parent = a.parent
        while isinstance(parent, (nodes.Tuple, nodes.List)):
            parent = parent.parent
        value = parent.value if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) else None
        if value is None:
            if not isinstance(parent, (nodes.Assign, nodes.AnnAssign)):
                out.append(())   # bound by a loop, a with, an augmented assignment: a value of its own
            continue
        if isinstance(value, nodes.Const) and value.value is None:
            continue   # None has no method to call: no alternative
        if isinstance(value, nodes.Attribute) and isinstance(value.expr, nodes.Name) and value.expr.name == "self":
            _held_values(r, cls, value.attrname, out, seen, depth + 1)
            continue
        needs: List[Tuple[str, ...]] = []
        for call in value.nodes_of_class(nodes.Call):
            func = call.func
            q = r.qualname(func) if isinstance(func, (nodes.Name, nodes.Attribute)) else None
            if q and r.index.has_root(q.partition(".")[0]):
                needs.append((K_NAME, q))
            elif isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Call) \
                    and isinstance(func.expr.func, (nodes.Name, nodes.Attribute)):
                made = r.qualname(func.expr.func)
                if made and r.index.has_root(made.partition(".")[0]):
                    needs.append((K_RESULT, made, func.attrname))
        entry = tuple(dict.fromkeys(needs))
        if isinstance(value, nodes.Call) and needs and needs[0][0] == K_NAME and needs[0][1] == r.qualname(value.func):
            entry = (("factory",) + needs[0][1:],) + entry   # the value is the factory's result itself
        if entry not in out or not entry:
            out.append(entry)


def _held_factories(s: ModuleSummary, cls: str, attr: str) -> List[str]:
    """The project functions whose result is assigned to ``self.<attr>`` itself (``self._mod = make_spec(...)``),
    when that is the attribute's only value: where the class assigns one of several values (``self.engine = A(...)``
    under one option, ``B(...)`` under another), which one a call on it meets is the caller's choice, so no edge is
    drawn to any (library statuses read every value through ``CallGraph.held_uses``)."""
    out: List[str] = []
    entries = s.held.get(f"{cls}{HELD_SEP}{attr}") or ()
    if len(entries) != 1:
        return out
    for entry in entries:
        if entry and entry[0][0] == "factory" and entry[0][1] not in out:
            out.append(entry[0][1])
    return out


def _patch_ref(s: ModuleSummary, r: Resolver, node: nodes.Assign, here) -> None:
    """A monkey patch: ``transformers...LlamaAttention.forward = xformers_forward`` (an attribute of an imported
    module or class, not of ``self`` / ``cls``, set to a function): whoever calls the patched attribute runs the
    function from then on, so the patching code reaches it (a reference, like a callback passed on)."""
    caller, _cls, selfname, clsname = here
    for tg in node.targets:
        if not isinstance(tg, nodes.AssignAttr):
            continue
        base = tg.expr
        if isinstance(base, nodes.Name) and base.name in (selfname, clsname, "self", "cls"):
            continue
        if not isinstance(base, (nodes.Name, nodes.Attribute)) or not r.qualname(base):
            continue
        q = r.qualname(node.value)
        if q:
            s.calls.append((caller, node.lineno or 1, K_REF, q, ""))
        return


def _may_look_up(func) -> bool:
    """Cheap test before :func:`_record_lookup`: ``C[k](...)``, ``C.get(k)(...)``, ``C.build(...)``,
    ``build_from_cfg(...)``, or a local name bound once to ``C[k]`` / ``C.get(k)``."""
    if isinstance(func, nodes.Subscript):
        return True
    if isinstance(func, nodes.Call):
        return isinstance(func.func, nodes.Attribute) and func.func.attrname == "get"
    if isinstance(func, nodes.Attribute):
        if func.attrname in ("build", "build_from_cfg"):
            return True
        inner = func.expr
        if isinstance(inner, nodes.Call):   # ``registry.get_model_class(k).from_config(...)``
            return isinstance(inner.func, nodes.Attribute) and _GETTER.match(inner.func.attrname) is not None
        if not isinstance(inner, nodes.Name):
            return False
        func = inner
    if isinstance(func, nodes.Name):
        if func.name == "build_from_cfg":
            return True
        try:
            defs = func.scope().locals.get(func.name, ())
        except Exception:
            return False
        if len(defs) != 1 or not isinstance(defs[0], nodes.AssignName):
            return False
        value = Resolver.assigned_value(defs[0])
        return isinstance(value, nodes.Subscript) or (
            isinstance(value, nodes.Call) and (isinstance(value.func, nodes.Name) or (
                isinstance(value.func, nodes.Attribute)
                and (value.func.attrname == "get" or _GETTER.match(value.func.attrname) is not None))))
    return False


RESULT_MARK = "<result>"
_STORING_METHODS = frozenset(("append", "extend", "insert", "add"))
PARTIAL_LEAVES = ("partial", "partialmethod")


def _keeper(call: nodes.Call, caller: str, s: ModuleSummary) -> Optional[str]:
    """Where the value of *call* is kept, when it is kept rather than used where it is made: the binding of a
    module-level assignment whose value holds the call (``hybrid_spec = ModuleSpec(...)``, outside the main block):
    "<module>.NAME"; a function's return expression: "<function>.<result>". None for any other place (a statement of
    its own, a test, an assignment to a local, an argument of a call made for its effect)."""
    cur, parent = call, call.parent
    while parent is not None:
        t = type(parent)
        if t is nodes.Return:
            if caller.endswith(PSEUDO_FNS) or caller not in s.functions:
                return None
            return f"{caller}.{RESULT_MARK}"
        if t in (nodes.Assign, nodes.AnnAssign):
            targets = parent.targets if t is nodes.Assign else [parent.target]
            if parent.value is not cur or len(targets) != 1 or not isinstance(targets[0], nodes.AssignName):
                return None
            if caller != s.module_fn:
                # a local the function only hands back (``experts = partial(MLP, ...)`` ... ``return
                # Spec(experts=experts)``): kept with the result
                return f"{caller}.{RESULT_MARK}" if _only_returned(targets[0], parent) else None
            holder = parent.parent
            while isinstance(holder, (nodes.If, nodes.Try)) and not is_main_guard(holder):
                holder = holder.parent
            if not isinstance(holder, nodes.Module):
                return None
            return f"{s.modname}.{targets[0].name}"
        if parent.is_statement or isinstance(parent, (nodes.Lambda, nodes.Comprehension, nodes.ListComp,
                                                      nodes.DictComp, nodes.SetComp, nodes.GeneratorExp)):
            return None
        cur, parent = parent, parent.parent
    return None


def _param_default_callable(name: nodes.Name, r: Resolver) -> Optional[str]:
    """The qualified name of the default of the enclosing function's parameter *name* when that default is a name
    (``config_cls=GPTConfig``) and the function never rebinds the parameter; None otherwise."""
    fn = name.scope()
    if not isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)) or fn.args is None:
        return None
    args = fn.args
    pos = list(args.posonlyargs or []) + list(args.args or [])
    defaults = list(args.defaults or [])
    default = None
    for i, a in enumerate(pos):
        if a.name == name.name:
            off = len(pos) - len(defaults)
            default = defaults[i - off] if i >= off else None
            break
    else:
        for a, d in zip(args.kwonlyargs or [], args.kw_defaults or []):
            if a.name == name.name:
                default = d
                break
    if not isinstance(default, (nodes.Name, nodes.Attribute)) or len(fn.locals.get(name.name, ())) != 1:
        return None
    return r.qualname(default)


def _only_returned(target: nodes.AssignName, assign) -> bool:
    """The local *target* (bound once, by *assign*, in a function) is read only inside the function's return
    expressions, or handed to a constructor there (a class by Python's naming convention, or functools.partial)."""
    fn = assign.scope()
    if not isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)) or len(fn.locals.get(target.name, ())) != 1:
        return False
    reads = [n for n in fn.nodes_of_class(nodes.Name) if n.name == target.name]
    if not reads:
        return False
    for n in reads:
        cur = n.parent
        while cur is not None and cur is not fn and not cur.is_statement:
            cur = cur.parent
        if not isinstance(cur, nodes.Return) or n.scope() is not fn:
            return False
    return True


# builtins that call none of their arguments (nor the entries of a container they are handed): type tests and
# conversions
_INERT_BUILTINS = frozenset(("isinstance", "issubclass", "tuple", "list", "set", "frozenset", "len", "sorted",
                             "reversed", "iter", "enumerate", "zip", "print", "repr", "str", "id", "hash", "type",
                             "hasattr", "callable", "vars", "dir"))


def _arg_refs(s: ModuleSummary, r: Resolver, call: nodes.Call, caller: str, cls: Optional[str],
              selfname: Optional[str], clsname: Optional[str]) -> None:
    add = s.calls.append
    line = call.lineno or 1
    func = call.func
    leaf = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "") or ""
    if leaf.startswith(("register", "_register")) or leaf.endswith(("_hook", "_hooks")):
        return
    if leaf in _INERT_BUILTINS and isinstance(func, nodes.Name) and r.qualname(func) == f"builtins.{leaf}":
        # a type test or a conversion (``isinstance(m, (Linear, Conv))``, ``tuple(types)``) calls nothing it is
        # handed: a class named there is tested against, not built
        return
    if leaf in _STORING_METHODS and isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) \
            and func.expr.name not in (selfname, clsname) and func.expr.name in func.scope().locals:
        # a local list of types grown for a type test (``types.extend([TELinear, TENorm])``): the classes are kept in
        # it, not built; callables of another kind handed to it stay references
        first = len(s.calls)
        _arg_refs_of(s, r, call, caller, cls, selfname, clsname, line)
        s.calls[first:] = [c for c in s.calls[first:] if c[2] != K_REF or not c[3].rpartition(".")[2][:1].isupper()]
        return
    if isinstance(call.parent, nodes.Decorators) and isinstance(call.parent.parent, (nodes.FunctionDef, nodes.ClassDef)):
        # what a decorator factory is handed (``@copy_signature(other)``, ``@retry(on_error=handler)``) runs, if at
        # all, when the decorated function does: the wrapper holds it; defining the function runs none of it
        caller = call.parent.parent.qname()
    first = len(s.calls)
    _arg_refs_of(s, r, call, caller, cls, selfname, clsname, line)
    if len(s.calls) > first and s.__dict__.get("_kept_on"):
        keeper = _keeper(call, caller, s)
        if keeper is not None:
            # handed to a call whose value is kept (``spec = ModuleSpec(module=MambaMixer)`` at module level, ``return
            # partial(MLP, linear=ColumnLinear)``): the references run where the kept value is used. A constructor (a
            # class by Python's naming convention, or functools.partial) keeps whatever it is handed; another call
            # there keeps the classes it is handed (``spec = make_layer_spec(TELinear)``), which it has no instance of
            keeps_all = leaf[:1].isupper() or leaf in PARTIAL_LEAVES
            moved = [c for c in s.calls[first:] if keeps_all or c[3].rpartition(".")[2][:1].isupper()]
            if moved:
                s.kept_refs.extend((keeper,) + tuple(c[1:]) for c in moved)
                s.calls[first:] = [c for c in s.calls[first:] if c not in moved]


def _arg_refs_of(s: ModuleSummary, r: Resolver, call: nodes.Call, caller: str, cls: Optional[str],
                 selfname: Optional[str], clsname: Optional[str], line: int) -> None:
    add = s.calls.append
    _container_args(s, r, call, caller)
    for a in list(call.args) + [k.value for k in (call.keywords or ())]:
        if isinstance(a, (nodes.Name, nodes.Attribute)):
            if isinstance(a, nodes.Attribute) and isinstance(a.expr, nodes.Name) and cls and a.expr.name in (selfname, clsname):
                held = r.self_attr_held(a)   # ``self.op = ext_module.op`` in __init__
                add((caller, line, K_REF, held, "") if held else (caller, line, K_REF, f"{cls}", a.attrname))
                continue
            aq = r.qualname(a)
            if aq:
                add((caller, line, K_REF, aq, ""))


def _container_args(s: ModuleSummary, r: Resolver, call: nodes.Call, caller: str) -> None:
    """A container of callables handed whole to a call (``CLI(COMMANDS)``, ``fire.Fire({"train": train})``):
    the callee picks an entry at run time (a subcommand), so each entry is a callable of the program."""
    line = call.lineno or 1
    names = None
    for a in list(call.args) + [k.value for k in (call.keywords or ())]:
        if _is_container_literal(a):
            for _k, q in _literal_entries(a, r):
                s.calls.append((caller, line, K_REF, q, ""))
        elif isinstance(a, nodes.Name):
            if names is None:
                names = _container_names(r.tree)
            if a.name not in names:
                continue
            try:   # the scope's or the module's own binding (dict lookups: this runs for every argument)
                defs = a.scope().locals.get(a.name) or a.root().locals.get(a.name) or ()
            except Exception:
                continue
            if len(defs) == 1 and isinstance(defs[0], nodes.AssignName) \
                    and _is_container_literal(r.assigned_value(defs[0])):
                cont = _container_of(a, r, s, caller)
                if cont:
                    s.calls.append((caller, line, K_LOOKUP, cont, ALL_KEYS))


def _container_names(tree: nodes.Module) -> Set[str]:
    """Names some plain ``x = <literal>`` / ``x: T = <literal>`` / ``(x := <literal>)`` of the module binds to a
    dict / list / tuple / set literal or ``dict(...)`` (what :meth:`Resolver.assigned_value` reads): a name
    argument outside this set is no container, and its scope lookup is skipped (kept on the tree)."""
    got = tree.__dict__.get("_npu_container_names")
    if got is None:
        got = set()
        for st in nodes_of(tree, nodes.Assign, nodes.AnnAssign, nodes.NamedExpr):
            if st.value is None or not _is_container_literal(st.value):
                continue
            for t in (st.targets if isinstance(st, nodes.Assign) else (st.target,)):
                if isinstance(t, nodes.AssignName):
                    got.add(t.name)
        tree.__dict__["_npu_container_names"] = got
    return got


# --------------------------------------------------------------------------- linking

@dataclass
class Unknown:
    caller: str
    line: int
    reason: str


class Linker:
    """Resolves names across the summaries (re-exports, star imports, MRO)."""

    def __init__(self, summaries: Iterable[ModuleSummary], failed_modules: Iterable[str] = (),
                 ext_modules: Iterable[str] = (), module_aliases: Optional[Dict[str, str]] = None):
        self.aliases: Dict[str, str] = dict(module_aliases or {})   # symlinked package -> its target module
        self.modules: Dict[str, ModuleSummary] = {}
        self.functions: Dict[str, Tuple[str, int, int]] = {}   # qual -> (relpath, line, end)
        self.classes: Dict[str, ClassSummary] = {}
        for s in summaries:
            self.modules[s.modname] = s
            for q, (a, b) in s.functions.items():
                self.functions[q] = (s.relpath, a, b)
            self.classes.update(s.classes)
        self.failed = set(failed_modules)
        self.ext_modules = set(ext_modules)
        self.tops = {m.split(".")[0] for m in self.modules} | {m.split(".")[0] for m in self.failed}
        self._canon: Dict[str, Tuple[str, str]] = {}
        self._exports: Dict[str, Set[str]] = {}
        self._mro: Dict[str, List[str]] = {}
        self._subclasses: Optional[Dict[str, List[str]]] = None
        self._registry: Optional[Dict[str, List[Tuple[str, str]]]] = None
        self._getters: Optional[Dict[str, str]] = None
        # class attribute values (ClassSummary.values): "Cls.ATTR" -> (relpath, line, end); a node of the graph
        # that a call through the attribute reaches and the findings of the value's expression are roots of
        self.values: Dict[str, Tuple[str, int, int]] = {}
        for s in self.modules.values():
            for cq, info in s.classes.items():
                for attr, (a, b) in (getattr(info, "values", None) or {}).items():
                    self.values.setdefault(f"{cq}.{attr}", (s.relpath, a, b))
        self.closures: Dict[str, Tuple[str, Tuple[str, ...]]] = {}
        self.made_by: Dict[str, Tuple[str, ...]] = {}
        self.custom_ops: Dict[str, str] = {}
        self.params: Dict[str, Tuple[str, ...]] = {}
        for s in self.modules.values():
            self.params.update(getattr(s, "params", None) or {})
            self.closures.update(getattr(s, "closures", None) or {})
            self.made_by.update(getattr(s, "made_by", None) or {})
            for op, fq in (getattr(s, "custom_ops", None) or {}).items():
                self.custom_ops.setdefault(op, fq)
        # an operator with kernels registered apart (`@register_kernel("ns::f", "npu")`, `@f.register_kernel(...)`):
        # the dispatcher picks one per device, the custom-op pass judges the call; no edge to the function
        kernels = {k[:-len(KERNELS_MARK)] for k in self.custom_ops if k.endswith(KERNELS_MARK)}
        self.custom_ops = {op: fq for op, fq in self.custom_ops.items()
                           if not op.endswith(KERNELS_MARK) and op not in kernels and fq not in kernels}
        self._closure_exts: Optional[Dict[str, Tuple[List[Tuple[str, str]], bool]]] = None
        # what each function builds or loads of compiled code, a nested function's kinds its enclosing function's too
        # (a builder's ``load()`` that defines and hands back a function calling torch_npu)
        self.builds: Dict[str, Set[str]] = {}
        for s in self.modules.values():
            for fq, kinds in (getattr(s, "builds", None) or {}).items():
                q = fq
                while q:
                    self.builds.setdefault(q, set()).update(kinds)
                    q = q.rpartition(".")[0]
                    if q not in self.functions or q.endswith(PSEUDO_FNS):
                        break
        self._builder_kinds: Dict[str, Tuple[str, ...]] = {}
        self._kernel_loaders: Dict[Tuple[str, str], Optional[Tuple[str, Tuple[Tuple[str, Tuple[str, ...]], ...]]]] = {}

    def closure_of(self, factory: str) -> Optional[str]:
        """The inner function a factory (as written at a module-level call) hands back, or None."""
        if not self.closures:
            return None
        k, q = self.canonical(factory)
        got = self.closures.get(q) if k == "def" else None
        return got[0] if got else None

    def closure_exts(self, fn: str) -> Tuple[List[Tuple[str, str]], bool]:
        """([(compiled module, parameter)], trampoline) for a factory's inner function *fn* that calls an op of a
        compiled module named by a parameter of the factory (``getattr(_C, name)(*args)``); trampoline when those
        calls are all it makes."""
        if self._closure_exts is None:
            inner = {v[0] for v in self.closures.values()}
            got: Dict[str, Tuple[List[Tuple[str, str]], bool]] = {}
            for s in self.modules.values():
                for caller, _line, kind, a, b in s.calls:
                    if caller not in inner or kind == K_REF or (kind == K_NAME and a.startswith("builtins.")):
                        continue
                    ops, tramp = got.get(caller, ([], True))
                    if kind in (K_EXT, K_DYN) and b.startswith(PARAM_MARK):
                        ext = a if kind == K_EXT else None
                        if ext is None:
                            k, q = self.canonical(a)
                            ext = q if k == "ext" else None
                        if ext is not None:
                            ops.append((ext, b[len(PARAM_MARK):]))
                            got[caller] = (ops, tramp)
                            continue
                    got[caller] = (ops, False)
            self._closure_exts = got
        return self._closure_exts.get(fn, ([], False))

    def bound_ops(self, q: str, fn: str) -> List[str]:
        """The compiled ops a call of *q* runs when *q* is a module-level name bound to a factory's result and
        *fn* (the factory's inner function) calls the op its parameter names: ``contract = make("contract")``
        -> ``<ext>.contract``."""
        ops, _tramp = self.closure_exts(fn)
        if not ops:
            return []
        made = self._factory_binding(q)
        if made is None:
            return []
        fq, pos, kw = made
        k, fq = self.canonical(fq)
        params = self.closures.get(fq, (None, ()))[1]
        args = dict(zip(params, pos))
        args.update(dict(kw))
        return [f"{ext}.{args[p]}" for ext, p in ops if args.get(p)]

    def _factory_binding(self, q: str):
        for _ in range(12):
            m = self.module_prefix(q)
            if m is None:
                return None
            first, _, tail = q[len(m) + 1:].partition(".")
            s = self.modules[m]
            if tail:
                return None
            if first in s.factory_calls:
                return s.factory_calls[first]
            if first in s.bindings:
                q = s.bindings[first]
                continue
            cands = [src for src in s.star_imports if src in self.modules and first in self._exported(src)]
            if len(cands) != 1:
                return None
            q = f"{cands[0]}.{first}"
        return None

    # ---- names
    def module_prefix(self, q: str) -> Optional[str]:
        parts = q.split(".")
        for i in range(len(parts), 0, -1):
            m = ".".join(parts[:i])
            if m in self.modules:
                return m
        return None

    def in_library(self, q: str) -> bool:
        return q.split(".")[0] in self.tops

    def _exported(self, modname: str) -> Set[str]:
        """:meth:`ModuleSummary.exported` of a module, made once (every name looked up through a star import
        asked again, and each answer is a new set of the module's public names). With no ``__all__`` the public
        names a module's own star imports bring are its names too (``functional/__init__``: ``from .conv import
        *``, whose ``__init__`` does ``from .kmap import *``), transitively."""
        got = self._exports.get(modname)
        if got is None:
            s = self.modules[modname]
            got = self._exports[modname] = s.exported()   # also the guard of a star-import cycle
            if s.all_names is None and (s.star_imports or s.is_package):
                more = set(got)
                for src in s.star_imports:
                    if src in self.modules and src != modname:
                        more |= {n for n in self._exported(src) if not n.startswith("_")}
                if s.is_package:
                    # a submodule the package's __init__ imports (`from .conv_config import Dataflow`) is an
                    # attribute of the package, so `*` with no __all__ hands it on too (`F.conv_config.f()`)
                    pref = modname + "."
                    for tgt in list(s.bindings.values()) + list(s.star_imports):
                        if tgt.startswith(pref):
                            child = tgt[len(pref):].partition(".")[0]
                            if not child.startswith("_") and pref + child in self.modules:
                                more.add(child)
                got = self._exports[modname] = more
        return got

    def canonical(self, q: str) -> Tuple[str, str]:
        """(kind, qualname): kind is def, class, module, external, ext, unresolved, ambiguous or broken."""
        hit = self._canon.get(q)
        if hit is None:
            self._canon[q] = ("unresolved", q)  # cycle guard
            hit = self._canonical(q, 0)
            self._canon[q] = hit
        return hit

    def _canonical(self, q: str, depth: int) -> Tuple[str, str]:
        if depth > 12:
            return ("unresolved", q)
        if self.aliases:
            for a, tgt in self.aliases.items():
                if (q == a or q.startswith(a + ".")) and a not in self.modules:
                    return self._canonical(tgt + q[len(a):], depth + 1)
        if q in self.functions or q in self.values:
            return ("def", q)
        if self.custom_ops and q.startswith("torch.ops."):
            # an operator the library registers itself (`torch.ops.ns.name`, its `.default` overload): its function
            fq = self.custom_ops.get(q[:-len(".default")] if q.endswith(".default") else q)
            if fq is not None:
                return ("def", fq)
        if q in self.classes:
            return ("class", q)
        if q in self.modules:
            # `from .roi_align import roi_align` in the package rebinds the submodule's name
            parent, _, last = q.rpartition(".")
            ps = self.modules.get(parent)
            if ps is not None and last in ps.bindings and ps.bindings[last] != q:
                return self._canonical(ps.bindings[last], depth + 1)
            if ps is not None and last not in ps.bindings:
                # `from .to_dense import *` in the package, where to_dense.py defines `to_dense`: the star import
                # runs after the submodule is bound, so the package's name is the function
                for src in ps.star_imports:
                    if src in self.modules and last in self._exported(src):
                        k = self._canonical(f"{src}.{last}", depth + 1)
                        if k[0] in ("def", "class"):
                            return k
            return ("module", q)
        for e in self.ext_modules:
            if q.startswith(e + "."):
                return ("ext", q)
        m = self.module_prefix(q)
        if m is None:
            if any(q == f or q.startswith(f + ".") for f in self.failed):
                return ("broken", q)
            return ("unresolved", q) if self.in_library(q) and self._looks_internal(q) else ("external", q)
        rest = q[len(m) + 1:]
        first, _, tail = rest.partition(".")
        if any((m + "." + first) == f or (m + "." + first).startswith(f + ".") for f in self.failed):
            return ("broken", q)
        s = self.modules[m]
        suffix = f".{tail}" if tail else ""
        # a method inherited from a base class: Cls.method
        cls_q = f"{m}.{first}"
        if cls_q in self.classes and tail:
            meth, _, more = tail.partition(".")
            found = self.lookup_method(cls_q, meth) or (self.lookup_value(cls_q, meth) if self.values else None)
            if found and not more:
                return ("def", found)
            if not more:
                return ("classattr", f"{cls_q}.{meth}")
        if first in s.bindings:
            target = s.bindings[first] + suffix
            if target != q:
                k = self._canonical(target, depth + 1)
                return k
        if first in s.ext_aliases:   # `from ._backend import _C`, where _backend binds _C to a compiled-module load
            return ("ext", s.ext_aliases[first][0] + suffix)
        made = s.factory_calls.get(first)
        if made is not None:
            inner = self.closure_of(made[0]) if not tail else None
            if inner is not None:   # `contract = make("contract")`: the function the factory hands back
                return ("def", inner)
            k, cq = self.canonical(made[0])
            if k == "class" and "." not in tail:
                # `applier = Applier(2048)`, a module-level instance: calling it runs `__call__`, `applier.m` is
                # the method
                found = self.lookup_method(cq, tail or "__call__")
                if found:
                    return ("def", found)
        if first in s.top_names:
            return ("other", q)   # a variable / constant of the module
        cands = [src for src in s.star_imports if src in self.modules and first in self._exported(src)]
        unknown_src = [src for src in s.star_imports if src not in self.modules and self.in_library(src)]
        if len(cands) == 1 and not any(src in self.failed for src in unknown_src):
            # a star source the tree does not hold (a module generated at build time, `from .version import *`)
            # cannot be read; the one module that is read and defines the name gives it. One the caller names as
            # failed (failed_modules) is there and may define it: ambiguous, below
            return self._canonical(f"{cands[0]}.{rest}", depth + 1)
        if len(cands) > 1:
            kinds = {self._canonical(f"{c}.{rest}", depth + 1) for c in cands}
            if len(kinds) == 1:
                return kinds.pop()
            return ("ambiguous", q)
        if unknown_src or any(src in self.failed for src in s.star_imports):
            return ("ambiguous", q)
        if not self.in_library(q):
            return ("external", q)
        return ("unresolved", q)

    def _looks_internal(self, q: str) -> bool:
        # pkg.something that is neither a module nor a known name: a compiled module or a dynamic attribute
        return True

    def name_dispatched(self) -> Dict[str, str]:
        """The functions decorated by one of the library's name dispatchers (:attr:`ModuleSummary.name_dispatchers`):
        function -> the name the dispatcher looks up in its place (the function's own name)."""
        dispatchers: Set[str] = set()
        for s in self.modules.values():
            dispatchers.update(getattr(s, "name_dispatchers", None) or ())
        if not dispatchers:
            return {}
        out: Dict[str, str] = {}
        for s in self.modules.values():
            for q, decos in (getattr(s, "decorated", None) or {}).items():
                for d in decos:
                    k, dq = self.canonical(d)
                    if k == "def" and dq in dispatchers:
                        out[q] = q.rpartition(".")[2]
                        break
        return out

    # ---- classes
    def mro(self, cls: str) -> List[str]:
        hit = self._mro.get(cls)
        if hit is not None:
            return hit
        self._mro[cls] = [cls]
        out: List[str] = [cls]
        info = self.classes.get(cls)
        if info is not None:
            for b in info.bases:
                k, bq = self.canonical(b)
                if k == "class":
                    for c in self.mro(bq):
                        if c not in out:
                            out.append(c)
                else:
                    out.append(bq)   # external base, kept as a marker
        self._mro[cls] = out
        return out

    def lookup_method(self, cls: str, meth: str, after: bool = False) -> Optional[str]:
        chain = self.mro(cls)
        if after:
            chain = chain[1:]
        for c in chain:
            info = self.classes.get(c)
            if info is not None and meth in info.methods:
                return f"{c}.{meth}"
        return None

    def constructor(self, cls: str) -> Optional[str]:
        """What ``cls(...)`` runs of the project's code: its ``__init__``, or, for a class without one (a
        dataclass, whose generated ``__init__`` calls it), its ``__post_init__``."""
        return self.lookup_method(cls, "__init__") or self.lookup_method(cls, "__post_init__")

    def lookup_value(self, cls: str, attr: str) -> Optional[str]:
        """The class attribute value (:attr:`values`) *cls* has or inherits for *attr*, unless a method of that
        name comes first."""
        for c in self.mro(cls):
            info = self.classes.get(c)
            if info is None:
                continue
            if attr in info.methods:
                return None
            if attr in (getattr(info, "values", None) or {}):
                return f"{c}.{attr}"
        return None

    # ---- kernel builders and loaders
    def builder_kinds(self, cls: str) -> Tuple[str, ...]:
        """What a class builds or loads of compiled code, over the methods an instance of it runs (each name
        resolved along its MRO, so a subclass's override replaces the base's): a subclass of a C++ builder that
        overrides its build with a CUDA one (``GpuBuilder(HostBuilder)``) builds CUDA. () for a class that
        builds nothing (a pure-torch implementation, a third-party kernel)."""
        got = self._builder_kinds.get(cls)
        if got is None:
            kinds: Set[str] = set()
            if self.builds:
                seen: Set[str] = set()
                for c in self.mro(cls):
                    info = self.classes.get(c)
                    for m in (info.methods if info is not None else ()):
                        if m in seen:
                            continue
                        seen.add(m)
                        owner = self.lookup_method(cls, m)
                        if owner:
                            kinds |= self.builds.get(owner, set())
            got = self._builder_kinds[cls] = tuple(k for k in (BUILD_NPU, BUILD_CUDA, BUILD_CPP) if k in kinds)
        return got

    def kernel_loader(self, cls: str, meth: str) -> Optional[Tuple[str, Tuple[Tuple[str, Tuple[str, ...]], ...]]]:
        """``Loader().load()``: when the method *meth* that an instance of *cls* runs reads a class attribute listing
        classes (``REGISTRY = [FusedCudaExtension]``, the subclass's own list) and some of them build or load
        compiled code (:meth:`builder_kinds`), the call loads a kernel from one of those builders, chosen where it
        runs (by device or host): (the attribute, ((builder class, its kinds), ...)). None otherwise."""
        key = (cls, meth)
        if key in self._kernel_loaders:
            return self._kernel_loaders[key]
        self._kernel_loaders[key] = None
        found = self.lookup_method(cls, meth)
        if not found or not self.builds:
            return None
        owner = found.rpartition(".")[0]
        info = self.classes.get(owner)
        out = None
        for attr in (getattr(info, "reads", None) or {}).get(meth, ()):
            listed = next((self.classes[c].lists[attr] for c in self.mro(cls)
                           if c in self.classes and attr in (getattr(self.classes[c], "lists", None) or {})), ())
            entries = []
            for name in listed:
                k, q = self.canonical(name)
                if k == "class":
                    entries.append((q, self.builder_kinds(q)))
            if any(kinds for _q, kinds in entries):
                out = (attr, tuple(entries))
                break
        self._kernel_loaders[key] = out
        return out

    def is_autograd_function(self, cls: str) -> bool:
        return any(b in AUTOGRAD_FUNCTION_BASES for b in self.mro(cls))

    def subclasses(self, cls: str) -> List[str]:
        if self._subclasses is None:
            sub: Dict[str, List[str]] = {}
            for c in self.classes:
                for b in self.mro(c)[1:]:
                    sub.setdefault(b, []).append(c)
            self._subclasses = sub
        return self._subclasses.get(cls, [])

    # ---- containers of callables
    def _container_name(self, c: str) -> str:
        if c.startswith(GETTER_MARK):
            if self._getters is None:
                self._getters = {}
                for s in self.modules.values():
                    self._getters.update(getattr(s, "getters", None) or {})
            try:
                k, q = self.canonical(c[1:])
            except RecursionError:
                return c
            return self._container_name(self._getters[q]) if k == "def" and q in self._getters else c
        if "#" in c:
            return c   # a function's local literal
        base, sep, kind = c.partition(KIND_SEP)
        try:
            return self.canonical(base)[1] + sep + kind
        except RecursionError:
            return c

    def registry(self) -> Dict[str, List[Tuple[str, str]]]:
        """Container -> [(key, callable)]: literals, ``C[k] = f`` and decorator registrations of every module
        (a registration through a decorator function lands in the container that function fills)."""
        if self._registry is None:
            storers: Dict[str, str] = {}
            for s in self.modules.values():
                storers.update(getattr(s, "storers", None) or {})
            reg: Dict[str, List[Tuple[str, str]]] = {}
            for s in self.modules.values():
                for c, key, t in getattr(s, "registrations", None) or ():
                    if c.startswith("@"):
                        try:
                            k, q = self.canonical(c[1:])
                        except RecursionError:
                            continue
                        c = storers.get(q) if k == "def" else None
                        if c is None:
                            continue
                    reg.setdefault(self._container_name(c), []).append((key, t))
            self._registry = reg
        return self._registry

    def lookup(self, container: str, keys: str) -> Tuple[List[str], bool]:
        """(callables, exact) a call through *container* indexed by *keys* may run: exact when the keys are
        known and registered (or the whole container is handed over), else every entry, none of them sure."""
        keys = keys.partition(METH_SEP)[0]
        entries = self.registry().get(self._container_name(container))
        if not entries:
            return [], False
        if keys == ALL_KEYS:
            return list(dict.fromkeys(t for _k, t in entries)), True
        if keys:
            wanted = set(keys.split(KEY_SEP))
            hits = [t for k, t in entries if k in wanted]
            if hits:
                return list(dict.fromkeys(hits)), True
        return list(dict.fromkeys(t for _k, t in entries)), False

    # ---- calls
    def resolve_call(self, kind: str, a: str, b: str) -> Tuple[List[str], Optional[str], Optional[str]]:
        """(callee nodes, unknown reason, ext target) for one recorded call."""
        if kind == K_EXT:
            return [], None, f"{a}.{'*' if b.startswith(PARAM_MARK) else b}"
        if kind == K_LOOKUP:
            targets, exact = self.lookup(a, b)
            meth = b.partition(METH_SEP)[2]
            if not targets and meth and a.startswith(GETTER_MARK):
                # the "getter" fills no container: a factory (`mod = make_spec(); mod.build()`), whose result's
                # method runs
                return self._result_method(a[len(GETTER_MARK):], meth), None, None
            if not targets:
                return [], None, None
            if not exact:
                # one entry runs, which one is chosen at run time: no edge (script-mode reach lists each entry as
                # unknown, analyse.reach); a library function's status is not made unknown by it
                return [], None, None
            meth = b.partition(METH_SEP)[2]
            out = []
            for t in targets:
                k, q = self.canonical(t)
                if k == "def" and not meth:
                    out.append(q)
                elif k == "class":
                    found = self.lookup_method(q, meth) if meth else self.constructor(q)
                    if found:
                        out.append(found)
            return out, None, None
        if kind == K_DYN:
            k, q = self.canonical(a)
            if k == "ext":   # getattr(_C, name)(...) on a compiled module: some op of it
                return [], None, f"{q}.*"
            if k in ("module", "class", "def") and self.in_library(q):
                return [], f"dynamic getattr on {q}", None
            return [], None, None
        if kind == K_REF and b:
            found = self.lookup_method(a, b)
            return ([found] if found else []), None, None
        if kind == K_NAME and b == STAR_MARK:
            k, q = self.canonical(a)
            if k == "def":
                return [q], None, None
            if k == "class":
                init = self.constructor(q)
                return ([init] if init else []), None, None
            return [], None, None
        if kind == K_NAME or kind == K_REF:
            k, q = self.canonical(a)
            if k == "def":
                return [q], None, None
            if k == "class":
                if kind == K_REF:
                    return [], None, None
                init = self.constructor(q)
                return ([init] if init else []), None, None
            if k == "classattr":
                cls, _, meth = q.rpartition(".")
                if meth == "apply" and self.is_autograd_function(cls):
                    return [x for x in (self.lookup_method(cls, "forward"), self.lookup_method(cls, "backward")) if x], None, None
                return [], None, None
            if k == "ext" and not (kind == K_REF and q in self.ext_modules):
                # a compiled op handed to a call (``applier(ext.op, bufs, ...)``, a callback): the callee runs it
                # (the compiled module itself handed on, ``getattr(_C, name)``, is no op)
                return [], None, q
            if kind == K_REF:
                return [], None, None   # a function named as a value is not called here
            if k == "broken":
                return [], f"calls {q}, in a module that failed to parse", None
            if k == "ambiguous":
                return [], f"calls {q}, ambiguous through star imports", None
            if k == "unresolved" and self.in_library(q):
                return [], f"calls {q}, which cannot be resolved statically", None
            return [], None, None
        if kind == K_SELF:
            meth, _, t = b.partition("|")
            found = self.lookup_method(a, meth)
            if found:
                return [found] + self._stub_overrides(a, found, meth), None, None
            value = self.lookup_value(a, meth) if self.values else None
            if value:   # self.OPERATOR(x): a class attribute set to a call's result (an op looked up by name)
                return [value], None, None
            if t:  # self.layer(x): an instance attribute holding a project object
                return self._instance_call(t), None, None
            overrides = [f"{c}.{meth}" for c in self.subclasses(a) if meth in self.classes[c].methods]
            return overrides, None, None
        if kind == K_SUPER:
            found = self.lookup_method(a, b, after=True)
            return ([found] if found else []), None, None
        if kind == K_METHOD:
            k, cls = self.canonical(a)
            if k == "class":
                found = self.lookup_method(cls, b)
                if found:
                    return [found], None, None
                if b == "apply" and self.is_autograd_function(cls):
                    return [x for x in (self.lookup_method(cls, "forward"), self.lookup_method(cls, "backward")) if x], None, None
            return [], None, None
        if kind == K_INST:
            return self._instance_call(a), None, None
        if kind == K_RESULT:
            return self._result_method(a, b), None, None
        return [], None, None

    def attr_targets(self, cls: str, attr: str) -> List[Tuple[str, Optional[str]]]:
        """``self.attr(...)`` in *cls* where *attr* is a class attribute holding a callable by name (a config's
        ``_target``): (the dotted name held, None) for the one *cls* inherits or defines, and (name, subclass) for
        each subclass that sets its own -- those run only for an instance of that subclass."""
        out: List[Tuple[str, Optional[str]]] = []
        for c in self.mro(cls):
            held = (getattr(self.classes.get(c), "attrs", None) or {}).get(attr)
            if held:
                out.append((held, None))
                break
        for c in self.subclasses(cls):
            held = (getattr(self.classes[c], "attrs", None) or {}).get(attr)
            if held:
                out.append((held, c))
        return out

    def same_instance(self, cls: str, callee: str) -> bool:
        """Whether *callee* (a method's qualname) is defined in *cls*'s hierarchy: in a class of its MRO or in a
        subclass of it, so that a ``self.m()`` / ``super().m()`` in *cls* that runs it keeps the same ``self``."""
        owner = callee.rpartition(".")[0]
        return owner in self.classes and (owner in self.mro(cls) or cls in self.mro(owner))

    def self_feasible(self, ctx: str, override: str, meth: str) -> Optional[bool]:
        """For ``self.meth()`` dispatched to *override*'s definition, seen from a method of class *ctx* whose
        ``self`` the call's is: None when *override* is *ctx*'s own resolution of the name (the call runs it for
        every instance of *ctx*), True when only some instances run it (*override* derives from *ctx*), False when
        no instance of *ctx* can (*override* is a class of another branch of the hierarchy, or *ctx* resolves the
        name to a definition that comes before *override*'s)."""
        if override == ctx or ctx in self.mro(override):
            return True if override != ctx else None
        if override in self.mro(ctx):
            return None if self.lookup_method(ctx, meth) == f"{override}.{meth}" else False
        return False

    def stub_dispatch(self, cls: str, b: str) -> Dict[str, str]:
        """For ``self.meth()`` in *cls* that finds a stub: subclass override -> the condition under which the
        call reaches it (the instance is of that subclass)."""
        meth = b.partition("|")[0]
        found = self.lookup_method(cls, meth)
        if not found:
            return {}
        return {o: f"only when `self` is an instance of {o.rsplit('.', 2)[-2]} (`self.{meth}()` runs its override)"
                for o in self._stub_overrides(cls, found, meth)}

    def _stub_overrides(self, cls: str, found: str, meth: str) -> List[str]:
        """``self.meth()`` that finds a stub (abstract, ``pass``, ``raise NotImplementedError``): the
        subclasses' own definitions are what runs, so the call reaches them too."""
        owner = found.rpartition(".")[0]
        info = self.classes.get(owner)
        if info is None or meth not in getattr(info, "stubs", ()):
            return []
        return [f"{c}.{meth}" for c in self.subclasses(cls) if meth in self.classes[c].methods
                and meth not in getattr(self.classes[c], "stubs", ())]

    def _result_method(self, fn: str, meth: str) -> List[str]:
        """Method *meth* of the objects a call of function *fn* hands back: the classes it builds and returns
        (``made_by``), through the project's factories it returns the result of (``return make_spec(...)``)."""
        out: List[str] = []
        for c in self.result_classes(fn):
            found = self.lookup_method(c, meth)
            if found and found not in out:
                out.append(found)
        return out

    def result_classes(self, fn: str, depth: int = 0) -> List[str]:
        """The project classes whose instances a call of *fn* hands back (a class: itself)."""
        k, q = self.canonical(fn)
        if k == "class":
            return [q]
        if k != "def" or q not in self.made_by or depth >= 4:
            return []
        out: List[str] = []
        for c in self.made_by[q]:
            out.extend(x for x in self.result_classes(c, depth + 1) if x not in out)
        return out

    def instance_overrides(self, classes: Sequence[str], meth: str) -> List[str]:
        """For a call of method *meth* on an instance of one of *classes* that finds the method in a base class:
        the overrides, in the instance's class, of the stubs the base's method calls on ``self``
        (``spec.build_and_load()`` on a ``NvccSpec``: the base's ``self.build()`` runs ``NvccSpec.build``, not
        every subclass's). The graph's own ``self.build()`` edges reach each override only under the condition
        that ``self`` is of its class; the instance tells which."""
        out: List[str] = []
        for c in classes:
            found = self.lookup_method(c, meth)
            owner = found.rpartition(".")[0] if found else ""
            if not found or owner == c:
                continue
            for m in self._self_calls().get(found, ()):
                base = self.lookup_method(owner, m)
                binfo = self.classes.get(base.rpartition(".")[0]) if base else None
                if binfo is None or m not in getattr(binfo, "stubs", ()):
                    continue
                o = self.lookup_method(c, m)
                if o and o != base and o not in out:
                    out.append(o)
        return out

    def _self_calls(self) -> Dict[str, List[str]]:
        """function -> the methods it calls on ``self`` (one pass over every module's calls, kept)."""
        got = self.__dict__.get("_self_calls_memo")
        if got is None:
            got = {}
            for s in self.modules.values():
                for caller, _line, kind, _a, b in s.calls:
                    if kind == K_SELF:
                        m = b.partition("|")[0]
                        lst = got.setdefault(caller, [])
                        if m not in lst:
                            lst.append(m)
            self.__dict__["_self_calls_memo"] = got
        return got

    def _instance_call(self, t: str, depth: int = 0) -> List[str]:
        k, cls = self.canonical(t)
        if k == "def" and cls in self.made_by and depth < 4:
            # `self.head = make_head(cfg)`: a factory of the project hands back one of the objects it builds
            out: List[str] = []
            for c in self.made_by[cls]:
                out.extend(x for x in self._instance_call(c, depth + 1) if x not in out)
            return out
        if k != "class":
            return []
        found = self.lookup_method(cls, "__call__") or self.lookup_method(cls, "forward")
        return [found] if found else []


# the condition :meth:`Linker.stub_dispatch` writes, read back where the instance's class is known (analyse.library)
STUB_CONDITION = re.compile(r"^only when `self` is an instance of (?P<cls>\w+) \(`self\.\w+\(\)` runs its override\)$")


@dataclass
class CallGraph:
    graph: nx.DiGraph
    linker: Linker
    unknowns: List[Unknown]
    ext_calls: List[Tuple[str, int, str, Optional[str]]]   # (caller, line, ext qualname, condition or None)
    resolved_calls: int = 0
    unresolved_calls: int = 0
    dynamic: List[Tuple[str, int, str]] = field(default_factory=list)   # (path, line, expression)
    # calls into an instance attribute (K_HELD): (caller, line, condition or None, attribute, one list per value
    # the class assigns to it of the functions that compute that value)
    held_uses: List[Tuple[str, int, Optional[str], str, List[List[str]]]] = field(default_factory=list)
    # calls of a kernel loader (Linker.kernel_loader): (caller, line, condition or None, the loader's method as
    # ``Loader.load``, its builders with what each builds)
    kernel_loads: List[Tuple[str, int, Optional[str], str, Tuple[Tuple[str, Tuple[str, ...]], ...]]] = \
        field(default_factory=list)
    # (caller, line, ext qualname) of compiled-op calls on host tensors (ModuleSummary.host_calls)
    host_ext_calls: Set[Tuple[str, int, str]] = field(default_factory=set)

    def guarded_edges(self) -> List[Tuple[str, str, str]]:
        """(caller, callee, condition) of edges taken only under a guard with a fallback."""
        return [(u, v, d["cond"]) for u, v, d in self.graph.edges(data=True) if d.get("cond")]


def _shared_alternatives(s: ModuleSummary, linker: "Linker") -> Dict[int, bool]:
    """For each call through an alternative binding (:attr:`ModuleSummary.alt_conds`): whether another alternative
    of the same call site reaches the same function or compiled op (`X = torch.ops.ns.f` if a version test holds,
    else `X = f`: either way `f` runs)."""
    reached: Dict[int, Set[str]] = {}
    by_site: Dict[Tuple[str, int], List[int]] = {}
    for i in s.alt_conds:
        caller, line, kind, a, b = s.calls[i]
        try:
            callees, _unknown, ext = linker.resolve_call(kind, a, b)
        except RecursionError:
            callees, ext = [], None
        reached[i] = set(callees) | ({ext} if ext else set())
        by_site.setdefault((caller, line), []).append(i)
    out: Dict[int, bool] = {}
    for idx in by_site.values():
        for i in idx:
            out[i] = any(reached[i] & reached[j] for j in idx if j != i)
    return out


def build_graph(summaries: Sequence[ModuleSummary], failed_modules: Iterable[str] = (),
                ext_modules: Iterable[str] = (), module_aliases: Optional[Dict[str, str]] = None) -> CallGraph:
    linker = Linker(summaries, failed_modules, ext_modules, module_aliases)
    import networkx as nx

    g = nx.DiGraph()
    for q, (path, a, _b) in linker.functions.items():
        g.add_node(q, path=path, line=a)
    for q, (path, a, _b) in linker.values.items():
        if q not in g:
            g.add_node(q, path=path, line=a, value=True)
    unknowns: List[Unknown] = []
    ext_calls: List[Tuple[str, int, str, Optional[str]]] = []
    held_uses: List[Tuple[str, int, Optional[str], str, List[List[str]]]] = []
    kernel_loads: List[Tuple[str, int, Optional[str], str, Tuple[Tuple[str, Tuple[str, ...]], ...]]] = []
    host_ext_calls: Set[Tuple[str, int, str]] = set()
    resolved = unresolved = 0
    dynamic: List[Tuple[str, int, str]] = []
    for s in summaries:
        unresolved += s.untyped_calls
        dynamic.extend((s.relpath, line, expr) for _caller, line, expr in s.dynamic)
        shared = _shared_alternatives(s, linker) if s.alt_conds else {}
        chains = getattr(s, "chains", None) or {}
        for i, (caller, line, kind, a, b) in enumerate(s.calls):
            cond = s.guards.get(i)
            if i in s.alt_conds and cond is None:
                alt = s.alt_conds[i]   # the binding's condition, unless another alternative reaches the same
                cond = alt if alt and not shared.get(i) else None
            try:
                callees, unknown, ext = linker.resolve_call(kind, a, b)
            except RecursionError:
                callees, unknown, ext = [], f"calls {a}, which cannot be resolved statically", None
            stub = linker.stub_dispatch(a, b) if kind == K_SELF and len(callees) > 1 else {}
            inst: List[str] = []   # the instance's classes, when a stub its inherited method calls is overridden
            more: List[str] = []
            if kind in (K_RESULT, K_METHOD) and callees:
                # the instance's class is known: the stubs its inherited method calls on `self` run its overrides
                held = linker.result_classes(a) if kind == K_RESULT else [linker.canonical(a)[1]]
                more = linker.instance_overrides(held, b)
                inst = [c.rpartition(".")[2] for c in held] if more else []
                callees = callees + [o for o in more if o not in callees]
            elif kind == K_LOOKUP and callees and a.startswith(GETTER_MARK) and METH_SEP in b:
                made = linker.result_classes(a[len(GETTER_MARK):])
                more = linker.instance_overrides(made, b.partition(METH_SEP)[2])
                inst = [c.rpartition(".")[2] for c in made] if more else []
                callees = callees + [o for o in more if o not in callees]
            if kind == K_NAME and len(callees) == 1 and linker.closures:
                # a name bound to a factory's result whose function calls the op the factory's argument names:
                # the call runs that op (and, for a function that does nothing else, no more)
                ops = linker.bound_ops(a, callees[0])
                if ops:
                    ext_calls.extend((caller, line, op, cond) for op in ops)
                    if linker.closure_exts(callees[0])[1]:
                        callees = []
            for c in callees:
                if not c or c not in g or (c == caller and kind == K_REF):
                    continue
                ec = (cond if kind != K_REF else None) or stub.get(c)
                use = s.result_uses.get(i)
                passed = s.call_args.get(i) if kind in (K_NAME, K_SELF, K_SUPER, K_METHOD, K_INST) else None
                arm = chains.get(i) if ec else None
                # an edge into an inherited method called on an instance of known class: the method's stub
                # dispatch to other subclasses does not run there (analyse.library reads it)
                einst = inst if inst and not ec and c not in more else None
                # a call on the caller's own instance (`self.m()`, `super().m()`) that runs a method of its class
                # hierarchy: the callee's `self` is the caller's (SELF_OF, read by :func:`self_dispatch_context`)
                own = a if kind in (K_SELF, K_SUPER) and linker.same_instance(a, c) else None
                if not g.has_edge(caller, c):
                    g.add_edge(caller, c, line=line, cond=ec, use=use, passed=[passed])
                    d = g.edges[caller, c]
                    if own:
                        d[SELF_OF] = own
                    if c in stub and not cond:
                        d[STUB_OF] = (c.rpartition(".")[0], c.rpartition(".")[2])
                    if arm is not None:
                        d["arms"] = [(s.relpath,) + arm]
                    if einst:
                        d["inst"] = einst
                else:
                    d = g.edges[caller, c]
                    if d.get(SELF_OF) != own:
                        d.pop(SELF_OF, None)   # also called on another object
                    d.setdefault("passed", []).append(passed)
                    if not einst:
                        d.pop("inst", None)
                    if ec is None:
                        d["cond"] = None   # also called unconditionally
                    elif arm is not None:
                        d.setdefault("arms", []).append((s.relpath,) + arm)
                    if d.get("use") != use:
                        # called at several sites: a site that uses the result as it comes decides
                        d["use"] = RESULT_CALLED if RESULT_CALLED in (use, d.get("use")) else None
            if unknown:
                unknowns.append(Unknown(caller, line, unknown))
                unresolved += 1
            elif kind != K_REF:
                resolved += 1
            if ext:
                ext_calls.append((caller, line, ext, cond))
                if i in (getattr(s, "host_calls", None) or ()):
                    host_ext_calls.add((caller, line, ext))
            if callees and kind in (K_METHOD, K_RESULT) and linker.builds:
                for lc in (linker.result_classes(a) if kind == K_RESULT else [linker.canonical(a)[1]]):
                    got = linker.kernel_loader(lc, b)
                    if got is not None:
                        kernel_loads.append((caller, line, cond, f"{lc}.{b}", got[1]))
            if kind == K_HELD and cond != UNREACHABLE:
                values = _held_functions(linker, s.held.get(f"{a}{HELD_SEP}{b}") or (), g)
                if values:
                    held_uses.append((caller, line, cond, b, values))
    return CallGraph(g, linker, unknowns, ext_calls, resolved, unresolved, dynamic, held_uses, kernel_loads,
                     host_ext_calls)


def _held_functions(linker: "Linker", entries, g) -> List[List[str]]:
    """Per value of an instance attribute, the functions of the graph its computation calls."""
    out: List[List[str]] = []
    for entry in entries:
        fns: List[str] = []
        for e in entry:
            if e[0] == "factory":
                continue   # a marker: the call itself is the entry after it
            try:
                callees, _unknown, _ext = linker.resolve_call(e[0], e[1], e[2] if len(e) > 2 else "")
            except RecursionError:
                callees = []
            if e[0] == K_RESULT:
                classes = linker.result_classes(e[1])
                callees = callees + [o for o in linker.instance_overrides(classes, e[2]) if o not in callees]
            fns.extend(c for c in callees if c in g and c not in fns)
        out.append(fns)
    return out


# --------------------------------------------------------------------------- findings -> functions

class FunctionLocator:
    """Innermost enclosing function of a (path, line), by line ranges.

    A file's function ranges nest (a ``def`` inside another is inside its range): sorted by start, each
    range keeps the index of the nearest range around it, and a question bisects for the last range that
    starts at or before the line, then climbs to the first that holds it. (Each question scanned all the
    file's ranges before: a library file of 12,000 functions with a finding in each took 8.7 s.)"""

    def __init__(self, summaries: Iterable[ModuleSummary]):
        self._by_path: Dict[str, tuple] = {}
        for s in summaries:
            ranges = sorted(((a, b, q) for q, (a, b) in s.functions.items()), key=lambda t: (t[0], -t[1]))
            # stable: among equal ranges, the later one is the innermost
            module_fn = next((q for _a, _b, q in ranges if q.endswith("." + MODULE_FN)), None)
            ranges = [r for r in ranges if not r[2].endswith("." + MODULE_FN)]
            starts = [a for a, _b, _q in ranges]
            outer: List[int] = []
            open_: List[int] = []
            for i, (a, b, _q) in enumerate(ranges):
                while open_ and ranges[open_[-1]][1] < a:
                    open_.pop()
                outer.append(open_[-1] if open_ else -1)
                open_.append(i)
            self._by_path[s.relpath] = (ranges, starts, outer, module_fn)

    def locate(self, path: str, line: int) -> Optional[str]:
        entry = self._by_path.get(path)
        if entry is None:
            return None
        ranges, starts, outer, module_fn = entry
        i = bisect_right(starts, line) - 1
        while i >= 0:
            a, b, q = ranges[i]
            if a <= line <= b:
                return q
            i = outer[i]
        return module_fn


# findings on an API that runs on an NPU, where only an argument needs the change: the function runs once it
# is made (``torch.load`` without ``map_location`` fails only for a checkpoint saved on a GPU); a CUDA environment
# variable or tool name (NPU007, NPU904: CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES) is renamed, not rewritten
_CHANGE_ONLY = {"NPU009", "NPU007", "NPU904"}


def _is_env_name(api: str) -> bool:
    """``CUDA_VISIBLE_DEVICES`` / ``env:NCCL_DEBUG``: the name of an environment variable."""
    name = api[len("env:"):] if api.startswith("env:") else api
    return bool(name) and name.replace("_", "").isalnum() and name.isupper()


def classify(f) -> Optional[str]:
    """The status a finding gives the function it sits in (None: no effect)."""
    if f.category == "unknown-api":
        return "unknown"
    if f.code in _CHANGE_ONLY and (f.code == "NPU009" or _is_env_name(f.api)):
        # an environment variable is renamed; a tool (nvidia-smi) that does not exist on the host is not
        return None if f.severity in ("advice", "info") else "needs-migration"   # a log level: nothing to change
    if f.severity in ("blocker", "manual") and f.category in ("unsupported-api", "third-party", "cuda-extension", "cuda-api"):
        return "unsupported"
    if f.npu_support == "native":
        # the library runs on Ascend through its own NPU support (DeepSpeed's NPU accelerator), the code unchanged:
        # nothing to migrate in the function; the finding's replacement is the install / accelerator step
        return None
    if f.severity == "auto" or (f.severity == "manual" and f.category == "distributed"):
        return "needs-migration"
    return None


# --------------------------------------------------------------------------- self dispatch in context

def self_dispatch_context(g: nx.DiGraph, linker: "Linker", u: str, override: str, meth: str,
                          limit: int = 5000) -> Tuple[List[Tuple[str, str]], List[str]]:
    """The callers of *u* whose ``self`` decides whether *u*'s ``self.meth()`` runs *override*'s definition (a
    :data:`STUB_OF` edge): walking up the calls on the same instance (:data:`SELF_OF` edges: ``super().__init__()``
    in a subclass's ``__init__``, ``self.setup()``), a caller in class C either leaves the choice open (*override*
    derives from C), or settles it: C resolves ``meth`` to *override* (every instance of C runs it) or cannot run it
    (*override* is in another branch of the hierarchy: ``self`` in a ``GymEnv`` method is never a ``BraxWrapper``).

    Returns (the edges that do not carry the override's condition to their caller: the call is on an instance
    that never runs it, or always does; the callers that run it for every instance of their class). A caller
    through another kind of call (a function, another object) keeps the condition as it is."""
    blocked: List[Tuple[str, str]] = []
    always: List[str] = []
    seen = {u}
    q = deque([u])
    while q and len(seen) < limit:
        n = q.popleft()
        for p, _n, d in g.in_edges(n, data=True):
            ctx = d.get(SELF_OF)
            if not ctx or d.get("cond"):
                continue
            feasible = linker.self_feasible(ctx, override, meth)
            if feasible:
                if p not in seen:
                    seen.add(p)
                    q.append(p)
                continue
            blocked.append((p, n))
            if feasible is None and p not in always:
                always.append(p)
    return blocked, always


# --------------------------------------------------------------------------- propagation

@dataclass
class Status:
    status: str
    reasons: List[str]
    via: List[str]


def propagate(g: nx.DiGraph, roots: Dict[str, Dict[str, List[str]]], condensed: Optional[list] = None,
              stops: Optional[Dict[Tuple[str, str], Set[str]]] = None) -> Dict[str, Status]:
    """Spread root reasons to every transitive caller.

    *roots*: node -> {status: [reasons]}. Each status spreads separately
    (strongly connected components make cycles and recursion one unit);
    a node's status is the most serious one it reaches
    (unsupported > unknown > needs-migration), its reasons the union of the
    reachable roots' reasons of that status (nearest first, capped), and its
    ``via`` the shortest chain to such a root (itself first, the root last).

    *condensed*: a one-item list that keeps the graph's condensation and its topological order between
    calls on the same, unchanged graph (``[None]`` at first); a call that adds a root node makes it again.

    *stops*: edge -> reasons the edge does not carry to its caller (:func:`self_dispatch_context`); a reason still
    reaches the caller through any other edge between the two components.
    """
    import networkx as nx

    grew = False
    for n in roots:
        if n not in g:
            g.add_node(n)
            grew = True
    if condensed is not None and condensed[0] is not None and not grew and condensed[0][0] is g:
        _g, cond, order = condensed[0]
    else:
        cond = nx.condensation(g)
        order = list(nx.topological_sort(cond))
        if condensed is not None:
            condensed[0] = (g, cond, order)
    members = cond.graph["mapping"]   # node -> component
    comp_stops = _component_stops(g, cond, members, stops) if stops else {}
    out: Dict[str, Status] = {}
    per_status: Dict[str, Dict[int, List[str]]] = {}
    for st in STATUS_ORDER:
        own: Dict[int, List[str]] = {}
        for n, by in roots.items():
            rs = by.get(st)
            if rs:
                lst = own.setdefault(members[n], [])
                for r in rs:
                    if r not in lst:
                        lst.append(r)
        if not own:
            continue
        acc: Dict[int, List[str]] = {}
        for c in reversed(order):   # callees before callers
            lst = list(own.get(c, ()))
            for succ in cond.successors(c):
                sub = acc.get(succ)
                if not sub:
                    continue
                stop = comp_stops.get((c, succ))
                for r in sub:
                    if len(lst) >= MAX_REASONS:
                        break
                    if r not in lst and not (stop and r in stop):
                        lst.append(r)
            if lst:
                acc[c] = lst
        per_status[st] = acc
    # shortest via chains: multi-source BFS on the reverse graph per status
    for st in STATUS_ORDER:
        acc = per_status.get(st)
        if not acc:
            continue
        sources = [n for n, by in roots.items() if by.get(st)]
        nxt: Dict[str, Optional[str]] = {n: None for n in sources}
        q = deque(sources)
        while q:
            n = q.popleft()
            for p in g.predecessors(n):
                if p not in nxt:
                    nxt[p] = n
                    q.append(p)
        for n, hop in nxt.items():
            if n in out:
                continue
            comp = members[n]
            reasons = acc.get(comp)
            if not reasons:
                continue
            via = [n]
            cur = hop
            guard = 0
            while cur is not None and guard < 10000:
                via.append(cur)
                cur = nxt.get(cur)
                guard += 1
            out[n] = Status(st, list(reasons), via)
    return out


def _component_stops(g, cond, members, stops: Dict[Tuple[str, str], Set[str]]) -> Dict[Tuple[int, int], Set[str]]:
    """*stops* per pair of components: the reasons that no edge from the one to the other carries (edges inside one
    component carry everything: the cycle reaches its members anyway)."""
    out: Dict[Tuple[int, int], Set[str]] = {}
    for (p, n), rs in stops.items():
        if p not in members or n not in members:
            continue
        cp, cn = members[p], members[n]
        if cp == cn or (cp, cn) in out:
            continue
        common = set(rs)
        small, big = cond.nodes[cp]["members"], cond.nodes[cn]["members"]
        for a in small:
            for b in g.successors(a):
                if b in big:
                    common &= stops.get((a, b), set())
                    if not common:
                        break
            if not common:
                break
        if common:
            out[(cp, cn)] = common
    return out


# --------------------------------------------------------------------------- script mode chains

def add_chains(result, graph=None) -> list:
    """Script mode: findings inside project functions that a script calls get the
    call chain (script call site -> ... -> offending line). Returns all findings.
    *graph*: the run's ``(summaries, CallGraph)`` when already built.

    Scripts are the files with an ``if __name__ == "__main__":`` block or that no
    other project file imports. Chains are a bonus: on any internal failure the
    findings are returned unchanged."""
    try:
        return _add_chains(result, graph)
    except Exception:  # pragma: no cover - defensive
        return list(result.findings)


def may_have_chain_starts(prescans: Sequence) -> bool:
    """Whether :func:`add_chains` can find a script to start a chain from, told from the pre-scans (before any
    summary is made): a module with a ``__main__`` block, or a module (not a package ``__init__``) that no project
    module imports -- :func:`_add_chains`'s test, with the pre-scan's ``program`` (the same ``__main__`` test as the
    summary's) and ``imports`` (every import of the module, nested ones too, kept to the project's modules and
    their packages: the same answer for a project module's name as the summary's imports with their prefixes).
    False: every finding keeps its chain-less form, whatever the call graph holds."""
    parsed = [pre for pre in prescans if pre.error is None]
    if any(pre.program for pre in parsed):
        return True
    imported = {m for pre in parsed for m in pre.imports}
    return any(pre.modname not in imported and pre.relpath.rsplit("/", 1)[-1] != "__init__.py" for pre in parsed)


def _add_chains(result, graph=None) -> list:
    from analyse.findings import evolve

    sources = result.sources
    summaries = list(result.summaries)   # made by the pipeline's per-module step
    if len(sources) < 2 or not summaries:
        return list(result.findings)
    if graph is not None:   # (summaries, CallGraph) already built for this run (analyse.reach.script_graph)
        summaries, cg = graph
    else:
        cg = build_graph(summaries)
    g = cg.graph
    imported: Set[str] = set()
    for s in summaries:
        for m in s.imports:
            parts = m.split(".")
            for i in range(1, len(parts) + 1):
                imported.add(".".join(parts[:i]))
    scripts = [s for s in summaries if s.has_main_guard or (s.modname not in imported and not s.is_package)]
    script_paths = {s.relpath for s in scripts}
    # BFS from every function of the scripts
    parent: Dict[str, Tuple[Optional[str], int]] = {}
    q = deque()
    for s in scripts:
        for fn in s.functions:
            if fn in g and fn not in parent:
                parent[fn] = (None, 0)
                q.append(fn)
    while q:
        n = q.popleft()
        for c in g.successors(n):
            if c not in parent:
                parent[c] = (n, g.edges[n, c].get("line", 0))
                q.append(c)
    locator = FunctionLocator(summaries)
    out = []
    for f in result.findings:
        if f.chain or f.path in script_paths or f.path not in sources:
            out.append(f)
            continue
        fn = locator.locate(f.path, f.line)
        if fn is None or fn not in parent or parent[fn][0] is None:
            out.append(f)
            continue
        hops = []
        cur = fn
        while parent[cur][0] is not None and len(hops) < 100:
            caller, line = parent[cur]
            cpath = g.nodes[caller].get("path", "?")
            hops.append(f"{cpath}:{line} {cur}")
            cur = caller
        hops.reverse()
        hops.append(f"{f.path}:{f.line} {f.api}")
        out.append(evolve(f, chain=tuple(hops)))
    return out
