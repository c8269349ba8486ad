"""third-party: GPU-only third-party libraries and every place they are used.

Detects imports (``import``, ``from ... import``, ``importlib.import_module('x')``)
and every use site (names, attribute chains, calls -- resolved through
imports and aliases, reported once per chain at its outermost name) of
libraries that need CUDA: NVIDIA apex (amp, fused optimizers, fused norms,
apex.parallel, multi_tensor_applier, amp_C and the other apex extensions),
flash-attn, xFormers, bitsandbytes (only NF4 works), Triton, CuPy,
numba.cuda, PyCUDA, NVML (pynvml), NVIDIA DALI, TensorRT, Transformer
Engine, DeepSpeed's CUDA-only ops, PyG extension libraries, spconv,
``mmcv.ops`` (per Ascend's MMCV op support table) and more.

All library facts (module prefixes, severity, replacement, parameter mapping,
source) live in ``data/third_party_libs.yaml``; this module validates the
file and raises :class:`ThirdPartyDataError` on a malformed entry.

Attention kernels (``flash_attn_func``, ``flash_attn_varlen_func``,
``xformers.ops.memory_efficient_attention``) get NPU403 with a replacement
``torch_npu.npu_fusion_attention(...)`` call written from the actual call's
arguments (dropout_p -> keep_prob = 1 - p, softmax_scale -> scale, causal ->
atten_mask + sparse_mode, varlen -> input_layout='TND' + actual_seq_qlen).

Imports inside ``try: ... except ImportError:`` are NPU404 (lower severity,
medium confidence); when the except branch provides a fallback (assigns a
name, sets a flag, imports something else) the message says so and the use
sites of that import are downgraded too. In library mode a function that stops when such an import failed
(``if not HAS_X: raise ...`` with the flag set only by it) needs the library as much as a call of it would; in
both modes a presence test that stops the code when the library is missing (``assert x is not None``,
``if x is None: raise``) is a use with no fallback (:func:`_requires_library`). Imports under ``if TYPE_CHECKING:``,
comments, docstrings and strings are never findings; a library's own source
(analysing flash-attn itself) does not report its own package.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Iterator, List, Optional, Set, Tuple

from astroid import nodes

from analyse.conditions.build import leaf_name
from analyse.findings import Finding, Rule, SEVERITIES
from analyse.guards import _is_none, _needs_gpu_only, _only_raises, guard_of, handler_catches_import, is_probe, keeps_prior_bindings, tree_memo
from analyse.knowledge.noise import load_noise
from analyse.passes import ModuleContext, Pass, nodes_of, walk
# the library table and the project scan live below the passes (no pass imports another pass)
from analyse.passes._libtable import (  # noqa: F401  (re-exported for callers of the old names)
    DATA_FILE, LibEntry, LibTable, MmcvOp, ThirdPartyDataError, lib_table, parse_libs)
from analyse.passes._project_scan import project_scan   # the extensions the project builds (its own names)
from analyse.resolve import raising_stand_in
from analyse.syntax import lookup, merged, selection

STORE_KEY = "third-party"
# the absolute import names of the analysed package inside its parent package (library mode sets them)
OWN_PACKAGE_KEY = "own-package-names"

R_IMPORT = Rule(
    code="NPU401", name="gpu-only-library-import", category="third-party", severity="blocker",
    summary="A GPU-only third-party library (or a CUDA-only part of one) is imported.",
    why="The library is built from CUDA kernels (or talks to the NVIDIA driver) and has no Ascend build, so the import "
        "fails on an NPU host or the library cannot be installed at all. transfer_to_npu does not touch third-party "
        "kernels.",
    example="from apex import amp\nimport flash_attn",
    fix="# native mixed precision instead of apex.amp\nscaler = torch.npu.amp.GradScaler()\n"
        "# flash-attn -> torch_npu.npu_fusion_attention",
)
R_USE = Rule(
    code="NPU402", name="gpu-only-library-use", category="third-party", severity="blocker",
    summary="A function, class or module of a GPU-only library is used.",
    why="Every use site must be rewritten with the NPU replacement (or removed); the import alone is not the whole "
        "migration. Severity is blocker when there is no NPU path and manual when a documented replacement exists.",
    example="model, optimizer = amp.initialize(model, optimizer, opt_level='O1')\n"
            "optimizer = apex.optimizers.FusedAdam(model.parameters(), lr=1e-3)",
    fix="with torch.autocast(device_type='npu', dtype=torch.float16):\n    loss = model(x)\n"
        "optimizer = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-3)",
)
R_ATTN = Rule(
    code="NPU403", name="gpu-attention-kernel", category="third-party", severity="manual",
    summary="A flash-attn / xFormers attention kernel call that maps to `torch_npu.npu_fusion_attention`.",
    why="flash-attn and xFormers kernels are CUDA-only. On Ascend the fused attention is "
        "`torch_npu.npu_fusion_attention`, whose arguments differ: keep_prob = 1 - dropout_p, softmax_scale -> scale "
        "(default 1.0, not 1/sqrt(d)), causal -> a triu bool atten_mask plus sparse_mode, varlen -> input_layout='TND' "
        "with cumulative actual_seq_qlen / actual_seq_kvlen, head_num is required and the output is element [0].",
    example="out = flash_attn_func(q, k, v, dropout_p=0.1, softmax_scale=None, causal=True)",
    fix="mask = torch.triu(torch.ones(2048, 2048, device='npu'), diagonal=1).bool()\n"
        "out = torch_npu.npu_fusion_attention(q, k, v, head_num=q.shape[2], input_layout='BSND', keep_prob=1 - 0.1,\n"
        "                                     scale=1 / math.sqrt(q.shape[-1]), atten_mask=mask, sparse_mode=3)[0]",
)
R_GUARDED = Rule(
    code="NPU404", name="guarded-gpu-only-import", category="third-party", severity="advice",
    summary="A GPU-only library imported inside `try: ... except ImportError:`.",
    why="The import fails on an Ascend host, so the except branch runs. With a fallback (a flag, an alternative "
        "implementation) the code still works but silently takes the slower or different path; without one, later "
        "uses of the name fail.",
    example="try:\n    from apex.normalization import FusedLayerNorm as LayerNorm\nexcept ImportError:\n"
            "    from torch.nn import LayerNorm",
    fix="# make the NPU path explicit\nfrom torch.nn import LayerNorm   # or torch_npu.npu_rms_norm for RMSNorm",
)

_DOWNGRADE = {"blocker": "manual", "manual": "advice", "advice": "info", "info": "info", "auto": "info"}


# --------------------------------------------------------------------------- helpers

def _with_rework(table: LibTable, f: Finding) -> Finding:
    """*f* with the rework its library entry states (``rework: high``: no drop-in NPU replacement, the code around
    the use is restructured), when the finding stays a manual change (a use behind a working fallback does not), and
    with the entry's ``npu_support`` (``native``: the library's own NPU support runs the use unchanged)."""
    if f.severity not in ("manual", "auto", "advice", "info"):
        return f
    m = table.match(f.api)
    if m is None:
        return f
    e = m[0]
    if f.severity == "manual":
        return f if e.rework is None else replace(f, rework=e.rework)
    if e.npu_support is not None:
        return replace(f, npu_support=e.npu_support)
    return f


@dataclass(frozen=True)
class Guard:
    fallback: bool
    line: int
    condition: str = ""   # GPU_ONLY_HANDLER: the except branch imports GPU-only code too


def _enclosing_try(node) -> Optional[nodes.Try]:
    """The ``try`` statement whose body or handlers hold *node* in the same function or module, or None."""
    t = node.parent
    while t is not None and not isinstance(t, (nodes.Try, nodes.Module, nodes.FunctionDef)):
        t = t.parent
    return t if isinstance(t, nodes.Try) else None


def _placeholder_fallback(defs, name: str) -> bool:
    """The except branch of the guarded import binds *name* to a placeholder (None / False) and to nothing
    usable: a later unconditional use calls the placeholder."""
    for d in defs:
        t = _enclosing_try(d)
        if t is None:
            continue
        for h in t.handlers:
            for st in h.body:
                if isinstance(st, nodes.Assign) and any(isinstance(x, nodes.AssignName) and x.name == name
                                                        for x in st.targets):
                    return isinstance(st.value, nodes.Const) and st.value.value in (None, False)
    return False


_MOCKS = ("MagicMock", "Mock", "NonCallableMock", "NonCallableMagicMock")


def _mock_placeholder(defs, name: str) -> bool:
    """The except branch of the guarded import binds *name* to a mock object (``te = MagicMock()``, also under an
    ``if`` there): the import then works without the library, and every use of the name runs the mock, not the
    library, so no use has a fallback."""
    for d in defs:
        t = _enclosing_try(d)
        if t is None:
            continue
        for h in t.handlers:
            for st in h.nodes_of_class(nodes.Assign):
                if any(isinstance(x, nodes.AssignName) and x.name == name for x in st.targets):
                    v = st.value
                    return isinstance(v, nodes.Call) and isinstance(v.func, (nodes.Name, nodes.Attribute)) \
                        and (v.func.name if isinstance(v.func, nodes.Name) else v.func.attrname) in _MOCKS
    return False


def _runs_only_after_import(node, defs) -> bool:
    """*node* sits in the body or the ``else`` of the ``try`` that holds its guarded import (one of *defs*):
    an import that fails jumps to the handler, so on an Ascend host this line never runs
    (``try: import cudnn; return cudnn.__version__ / except ImportError: pass``). A use that binds a name
    (``Norm = partial(FusedNorm, ...)`` in the try) is left to the import's guard: that name may be missing later."""
    st = node.statement()
    if isinstance(st, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign, nodes.FunctionDef, nodes.ClassDef)):
        return False
    for d in defs:
        if not isinstance(d, (nodes.Import, nodes.ImportFrom)):
            continue
        cur, parent = d, d.parent
        while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
            if isinstance(parent, nodes.Try) and cur in parent.body:
                break
            cur, parent = parent, parent.parent
        if not isinstance(parent, nodes.Try):
            continue
        first = d.fromlineno or 0
        n = node
        while n is not None and n is not parent:
            if n in parent.body or n in parent.orelse:
                return n in parent.orelse or (n.fromlineno or 0) >= first
            n = n.parent
    return False


def _unbound_after_failure(defs, name: str) -> bool:
    """When the guarded import of *name* fails, *name* is left unbound or bound to a placeholder: its except
    branch binds only a flag (``except ImportError: HAS_FA3 = False``) and every other binding of *name* is
    ``None`` / ``False`` (``xentropy_cuda = None`` before a guarded ``import xentropy_cuda``)."""
    imports = [d for d in defs if isinstance(d, (nodes.Import, nodes.ImportFrom))]
    if not imports:
        return False
    for d in defs:
        if isinstance(d, (nodes.Import, nodes.ImportFrom)):
            continue
        st = d.parent if isinstance(d, nodes.AssignName) else None
        if not isinstance(st, (nodes.Assign, nodes.AnnAssign)) or not isinstance(st.value, nodes.Const) \
                or st.value.value not in (None, False):
            return False
    for d in imports:
        t = _enclosing_try(d)
        if t is None:
            return False
        for h in t.handlers:
            for n in h.nodes_of_class((nodes.AssignName, nodes.Import, nodes.ImportFrom, nodes.FunctionDef,
                                       nodes.ClassDef)):
                bound = ([alias or m.split(".")[0] for m, alias in n.names]
                         if isinstance(n, (nodes.Import, nodes.ImportFrom)) else [n.name])
                if name in bound and not (isinstance(n, nodes.AssignName) and isinstance(n.parent, nodes.Assign)
                                          and isinstance(n.parent.value, nodes.Const)
                                          and n.parent.value.value in (None, False)):
                    return False
    return True


def _in_other_method(node, defs) -> bool:
    """*node* sits in a method of a class (at any depth) that does not also hold the import: the method runs
    only when a caller builds the class and calls it, and that caller is where the optional library is chosen
    (timm's ``ApexScaler``, built only where apex AMP is picked), so its placeholder use keeps the import guard
    (#20). A module-level function or the import's own scope keeps the placeholder rule."""
    import_scopes = {id(d.scope()) for d in defs}
    cur, seen_def = node.parent, False
    while cur is not None and not isinstance(cur, nodes.Module):
        if id(cur) in import_scopes:
            return False        # same scope as the import: the try / except and the use run together
        if isinstance(cur, nodes.FunctionDef):
            seen_def = True
        elif isinstance(cur, nodes.ClassDef) and seen_def:
            return not _built_unchecked(cur)
        cur = cur.parent
    return False


_BUILT_MEMO = "_npu_built_unchecked"


def _built_unchecked(cls: nodes.ClassDef) -> bool:
    """The module of *cls* builds it itself (``builder = EngineBuilder(...)`` in its ``main``), outside the class
    and under no test at all: the choice of the wrapper is made there, unconditionally, so its methods' uses of a
    placeholder bound by a failed import run with nothing checking it. Memoised per module."""
    module = cls.root()
    memo = module.__dict__.get(_BUILT_MEMO)
    if memo is None:
        classes = {c.name for c in module.body if isinstance(c, nodes.ClassDef)}
        memo = set()
        tm = tree_memo(module)
        for call in nodes_of(module, nodes.Call):
            f = call.func
            if not isinstance(f, nodes.Name) or f.name not in classes or f.name in memo:
                continue
            owner = call.parent
            while owner is not None and not isinstance(owner, (nodes.ClassDef, nodes.Module)):
                owner = owner.parent
            if isinstance(owner, nodes.ClassDef) and owner.name == f.name:
                continue
            if guard_of(call, tm) is None:
                memo.add(f.name)
        module.__dict__[_BUILT_MEMO] = memo
    return cls.name in memo and isinstance(cls.parent, nodes.Module)


GPU_ONLY_HANDLER = "gpu-only-handler"   # Guard.condition of a try-import whose except branch imports GPU-only code
UNBOUND = "unbound-after-failure"       # library mode: a function uses the name a failed guarded import leaves unbound
AFTER_IMPORT = "after-import"           # a use in the body / else of the try that holds its guarded import
GUARDED_CLASS = "guarded-class"         # library mode: a use in a class defined only when the optional import works
REQUIRED = "required"                   # a presence test that stops the code (assert / raise) when the library is missing
MOCKED = "mocked"                       # the except branch binds the module to a mock: the import works, the uses do not


def _in_guarded_class(node) -> bool:
    """*node* sits in a class whose definition runs only under an optional library's import or availability
    check, with no other definition of the name (:func:`analyse.guards.guard_of` gives the class statement a guard
    without fallback)."""
    cur = node.parent
    while cur is not None and not isinstance(cur, nodes.Module):
        if isinstance(cur, nodes.ClassDef):
            g = guard_of(cur, tree_memo(cur.root()))
            return g is not None and not g.fallback and g.kind in ("import-fallback", "availability-check")
        cur = cur.parent
    return False


def _tested_prefix(call: nodes.Call) -> Optional[str]:
    """The module a call's first argument names by the prefix the enclosing branch tested: ``if
    name.startswith("apex."): f(name)`` -> ``apex`` (the call in the branch's body, the test on the same
    expression); None otherwise."""
    arg = call.args[0]
    if not isinstance(arg, (nodes.Name, nodes.Attribute)):
        return None
    text = None
    cur, parent = call, call.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If) and cur in parent.body:
            t = parent.test
            if isinstance(t, nodes.Call) and isinstance(t.func, nodes.Attribute) and t.func.attrname == "startswith" \
                    and len(t.args) == 1 and isinstance(t.args[0], nodes.Const) and isinstance(t.args[0].value, str) \
                    and t.func.expr.as_string() == (text if text is not None else (text := arg.as_string())):
                mod = t.args[0].value.rstrip(".")
                return mod if mod and all(p.isidentifier() for p in mod.split(".")) else None
        cur, parent = parent, parent.parent
    return None


def _imports_its_argument(ctx, call: nodes.Call) -> bool:
    """*call* is ``importlib.import_module(x)`` / ``__import__(x)``, or calls a function of this module whose
    body imports a name made from its first parameter (``module_name, _ = class_string.rsplit(".", 1);
    importlib.import_module(module_name)``)."""
    q = ctx.resolver.qualname(call.func)
    if q in ("importlib.import_module", "__import__"):
        return True
    leaf = call.func.name if isinstance(call.func, nodes.Name) else None
    if leaf is None:
        return False
    defs = [d for d in ctx.tree.locals.get(leaf, ()) if isinstance(d, nodes.FunctionDef)]
    if len(defs) != 1:
        return False
    fn = defs[0]
    params = [a.name for a in (fn.args.posonlyargs or []) + (fn.args.args or [])]
    if not params:
        return False
    derived = {params[0]}
    for st in fn.nodes_of_class(nodes.Assign):
        if any(isinstance(n, nodes.Name) and n.name in derived for n in st.value.nodes_of_class(nodes.Name)):
            for t in st.targets:
                derived.update(n.name for n in t.nodes_of_class(nodes.AssignName))
    for c in fn.nodes_of_class(nodes.Call):
        f = c.func
        name = f.attrname if isinstance(f, nodes.Attribute) else f.name if isinstance(f, nodes.Name) else ""
        if name in ("import_module", "__import__") and c.args and isinstance(c.args[0], nodes.Name) \
                and c.args[0].name in derived:
            return True
    return False


def import_guard(node) -> Optional[Guard]:
    """How *node* (an import) is guarded: None when not inside ``try`` with an ImportError handler."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.Try) and cur in parent.body:
            hs = [h for h in parent.handlers if handler_catches_import(h)]
            if hs:
                h = hs[0]
                reraises = any(isinstance(s, nodes.Raise) for s in h.body)
                if reraises and not any(isinstance(s, (nodes.Assign, nodes.AnnAssign, nodes.Import, nodes.ImportFrom))
                                        for s in h.body):
                    return None
                fallback = any(isinstance(s, (nodes.Assign, nodes.AnnAssign, nodes.AugAssign, nodes.Import, nodes.ImportFrom,
                                              nodes.FunctionDef, nodes.ClassDef, nodes.Return))
                               for s in walk(h) if s is not h)
                if not fallback and not reraises and keeps_prior_bindings(parent):
                    fallback = True   # `except ImportError: pass` keeps the definitions made before the try
                if fallback and _raising_stand_ins(h, node):
                    fallback = False   # `except ImportError: def f(*a): raise ImportError(...)`: the name only fails later
                if fallback and _needs_gpu_only(h.body):
                    # `except ImportError: from flash_attn.flash_attn_interface import g as f`: GPU-only in both
                    return Guard(fallback=False, line=h.lineno, condition=GPU_ONLY_HANDLER)
                return Guard(fallback=fallback, line=h.lineno)
        cur, parent = parent, parent.parent
    return None


def _raising_stand_ins(handler, imp) -> bool:
    """The handler defines every name the import *imp* binds as a function that only raises (or only calls another
    such stand-in, :func:`analyse.resolve.raising_stand_in`): a call of the name fails without the library as it
    would with the import missing, so the stand-ins are no fallback (a flag the handler also sets guards only the
    uses that test it)."""
    if not isinstance(imp, (nodes.Import, nodes.ImportFrom)):
        return False
    names = [(alias or name).split(".")[0] for name, alias in imp.names if name != "*"]
    defs = {st.name: st for st in handler.body if isinstance(st, nodes.FunctionDef)}
    for st in handler.body:   # `make_q4 = error_raiser` beside `def error_raiser(*a, **k): raise ...`
        if isinstance(st, nodes.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], nodes.AssignName):
            defs.setdefault(st.targets[0].name, st.targets[0])
    return bool(names) and all(n in defs and raising_stand_in(defs[n]) for n in names)


def _import_quals(r, node, star: bool = True) -> List[str]:
    """The absolute names an import statement binds: ``import a.b`` -> ``a.b``; ``from .m import x`` -> ``pkg.m.x``
    (``from m import *`` -> ``m`` when *star*, nothing otherwise); none for a relative import that leaves the tree."""
    if isinstance(node, nodes.Import):
        return [mod for mod, _as in node.names]
    base = r.absolute_import(node.modname, node.level)
    if not base:
        return []
    return [base if name == "*" else f"{base}.{name}" for name, _as in node.names if star or name != "*"]


def _tests_availability(g) -> bool:
    """*g* (the use's own guard) is a presence test with a fallback (``if HAS_X:``, ``try: ... except ImportError``):
    the use runs only where the library imported. A caller's option with a fallback (``if use_xformers:``) is not
    one: the library is still missing when the caller turns the option on."""
    return bool(g) and bool(g.fallback) and g.kind in ("availability-check", "import-fallback")


def _negated_flags(test) -> List[nodes.Name]:
    """The flags of ``not A`` / ``not A and not B`` (the test holds when every flag is false); empty otherwise."""
    parts = test.values if isinstance(test, nodes.BoolOp) and test.op == "and" else [test]
    out = []
    for p in parts:
        if not (isinstance(p, nodes.UnaryOp) and p.op == "not" and isinstance(p.operand, nodes.Name)):
            return []
        out.append(p.operand)
    return out


def _asserted_flags(test) -> List[nodes.Name]:
    """The flags an ``assert A`` / ``assert A and B`` requires true (plain names only); empty otherwise."""
    parts = test.values if isinstance(test, nodes.BoolOp) and test.op == "and" else [test]
    return [p for p in parts if isinstance(p, nodes.Name)]


def _presence_test_of(value) -> Optional[nodes.Name]:
    """The name *value* tests for presence (``x is not None``, ``None is not x``), or None."""
    if isinstance(value, nodes.Compare) and len(value.ops) == 1 and value.ops[0][0] == "is not":
        left, right = value.left, value.ops[0][1]
        if isinstance(left, nodes.Name) and _is_none(right):
            return left
        if isinstance(right, nodes.Name) and _is_none(left):
            return right
    return None


def _type_checking_only(node, r) -> bool:
    cur = node.parent
    while cur is not None and not isinstance(cur, (nodes.FunctionDef, nodes.ClassDef, nodes.Module)):
        if isinstance(cur, nodes.If):
            t = cur.test
            q = r.qualname(t) if isinstance(t, (nodes.Name, nodes.Attribute)) else None
            if q in ("typing.TYPE_CHECKING", "TYPE_CHECKING") or (isinstance(t, nodes.Name) and t.name == "TYPE_CHECKING"):
                return True
        cur = cur.parent
    return False


_IMPORTS_ON_NPU = (" The module imports on an Ascend host; the calls that need CUDA are reported where they are"
                   " made.")


def _stops(block) -> bool:
    """The block stops the program: it raises or exits (after messages), with no alternative path."""
    if not block or not _only_raises(block):
        return False
    return any(isinstance(st, nodes.Raise) or isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Call)
               and leaf_name(st.value.func) in ("exit", "_exit", "abort") for st in block)


def _requires_library(node) -> bool:
    """True when *node*, a presence test of an optional library (:func:`analyse.guards.is_probe`), stops the code
    when the library is missing: ``assert apex_amp is not None``, ``assert flash_attn``, ``if xformers is None:
    raise ImportError(...)``, ``if HAS_X: ... else: raise``. A "fallback" that asserts or raises is no fallback:
    the code holding the test needs the library (JUDGING: a fallback that asserts, raises, or calls GPU-only code
    is none). ``and`` chains in an assert and ``or`` chains in a raising ``if`` require every name they test."""
    cur, parent = node, node.parent
    present = True
    if isinstance(parent, nodes.Compare) and len(parent.ops) == 1:
        op, right = parent.ops[0]
        if op not in ("is", "is not", "==", "!=") or not (_is_none(right) or _is_none(parent.left)):
            return False
        present = op in ("is not", "!=")
        cur, parent = parent, parent.parent
    ops = set()
    while isinstance(parent, nodes.UnaryOp) and parent.op == "not" or isinstance(parent, nodes.BoolOp):
        if isinstance(parent, nodes.UnaryOp):
            present = not present
        else:
            ops.add(parent.op)
        cur, parent = parent, parent.parent
    if isinstance(parent, nodes.Assert) and cur is parent.test:
        return present and ops <= {"and"}
    if isinstance(parent, nodes.If) and cur is parent.test:
        if not present:
            return ops <= {"or"} and _stops(parent.body)
        return ops <= {"and"} and _stops(parent.orelse)
    return False


def _type_probe(node) -> bool:
    """True when *node* is the class argument of ``isinstance(x, C)`` / ``issubclass(x, C)``
    (also one element of a tuple there): a type comparison, which runs none of the class's code. A class kept in
    a local list or tuple of types that is only ever such an argument counts too (``checklist.append(C)`` then
    ``isinstance(m, tuple(checklist))``)."""
    cur, parent = node, node.parent
    if type(parent) in (nodes.Tuple, nodes.List) and cur in parent.elts:
        cur, parent = parent, parent.parent
    if _type_argument(cur):
        return True
    if isinstance(parent, nodes.Compare) and len(parent.ops) == 1 and parent.ops[0][0] in ("is", "is not") \
            and cur is not node.root():
        return True   # `optimizer_cls is bnb.optim.Adam8bit`: an identity test runs none of the class's code
    if type(cur) in (nodes.Tuple, nodes.List):
        return _types_tuple(cur)
    if _introspected(cur):
        return True
    # `checklist.append(C)` / `checklist.extend((C, D))` on a local list of types
    if isinstance(parent, nodes.Call) and cur in parent.args and isinstance(parent.func, nodes.Attribute) \
            and parent.func.attrname in ("append", "extend", "add") and isinstance(parent.func.expr, nodes.Name):
        return _types_name(parent.scope(), parent.func.expr.name)
    return False


_INTROSPECTION = {"dir", "vars", "hasattr", "callable", "getmembers", "isclass", "ismodule", "isfunction",
                  "signature", "getdoc", "getsourcefile"}


def _introspected(node) -> bool:
    """*node* is what ``inspect.getmembers(bnb.optim, ...)`` / ``dir(mod)`` / ``hasattr(mod, name)`` looks at: listing
    or testing a module's or a class's members runs none of its code."""
    parent = node.parent
    if not (isinstance(parent, nodes.Call) and parent.args and parent.args[0] is node):
        return False
    func = parent.func
    if isinstance(func, nodes.Name):
        return func.name in ("dir", "vars", "hasattr", "callable")
    return isinstance(func, nodes.Attribute) and isinstance(func.expr, nodes.Name) and func.expr.name == "inspect" \
        and func.attrname in _INTROSPECTION


def _type_argument(node) -> bool:
    parent = node.parent
    if isinstance(parent, nodes.Call) and isinstance(parent.func, nodes.Name) and parent.func.name == "tuple" \
            and len(parent.args) == 1 and parent.args[0] is node and not parent.keywords:
        node, parent = parent, parent.parent   # isinstance(m, tuple(checklist))
    return (isinstance(parent, nodes.Call) and isinstance(parent.func, nodes.Name)
            and parent.func.name in ("isinstance", "issubclass") and len(parent.args) == 2 and parent.args[1] is node)


def _types_tuple(tup) -> bool:
    """*tup* (a tuple or list display) builds a local collection of classes that is only ever a type filter::

        allowed = (nn.Linear, nn.Conv1d)
        if Linear4bit is not None:
            allowed = allowed + (Linear4bit,)
        ... isinstance(layer, allowed)

    every read of the name is the class argument of ``isinstance`` / ``issubclass`` or extends the tuple itself."""
    cur, parent = tup, tup.parent
    while isinstance(parent, nodes.BinOp) and parent.op == "+":
        cur, parent = parent, parent.parent
    if isinstance(parent, nodes.Assign) and parent.value is cur and len(parent.targets) == 1 \
            and isinstance(parent.targets[0], nodes.AssignName):
        name = parent.targets[0].name
    elif isinstance(parent, nodes.AugAssign) and parent.op == "+=" and isinstance(parent.target, nodes.AssignName):
        name = parent.target.name
    else:
        return False
    return _types_name(parent.scope(), name)


def _name_reads(scope) -> Dict[str, List[nodes.Name]]:
    """name -> the Name nodes under *scope* (the scope's subtree in pre-order, as ``nodes_of_class`` gives them),
    made by one walk and kept on the scope: each imported name of a function walked the whole function."""
    got = scope.__dict__.get("_npu_name_reads")
    if got is None:
        got = {}
        for n in nodes_of(scope, nodes.Name):
            got.setdefault(n.name, []).append(n)
        scope.__dict__["_npu_name_reads"] = got
    return got


def _types_name(scope, name: str) -> bool:
    """Every read of the local *name* in *scope* is the class argument of ``isinstance`` / ``issubclass`` (also
    through ``tuple(name)``), extends the collection itself (``name = name + (C,)``), or adds to it
    (``name.append(C)``): a collection of types used only for type tests."""
    reads = _name_reads(scope).get(name, ())
    for n in reads:
        if _type_argument(n):
            continue
        up, p = n, n.parent
        if isinstance(p, nodes.Attribute) and p.attrname in ("append", "extend", "add") \
                and isinstance(p.parent, nodes.Call) and p.parent.func is p and isinstance(p.parent.parent, nodes.Expr):
            continue
        while isinstance(p, nodes.BinOp) and p.op == "+":
            up, p = p, p.parent
        if isinstance(p, nodes.Assign) and p.value is up and all(isinstance(t, nodes.AssignName) and t.name == name
                                                                 for t in p.targets):
            continue
        return False
    return bool(reads)


def _type_only_import(node) -> bool:
    """``from gpu_lib.ops import SyncBatchNorm`` inside a function whose every read of each name it binds is a
    type test (:func:`_type_probe`): importing a class to compare types with runs none of its kernels."""
    if not isinstance(node, nodes.ImportFrom) or any(name == "*" for name, _ in node.names):
        return False
    scope = node.scope()
    if not isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return False
    for name, alias in node.names:
        bound = alias or name
        reads = _name_reads(scope).get(bound, ())
        if not reads or not all(_type_probe(n) for n in reads):
            return False
    return True


def _arg(call: nodes.Call, pos: int, name: str):
    for kw in call.keywords or ():
        if kw.arg == name:
            return kw.value
    if pos is not None and pos < len(call.args) \
            and not any(isinstance(a, nodes.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


def _src(node) -> str:
    try:
        return node.as_string()
    except Exception:  # pragma: no cover - defensive
        return "..."


def _const(node):
    return node.value if isinstance(node, nodes.Const) else ...


CAUSAL_MASK = "torch.triu(torch.ones(2048, 2048, device='npu'), diagonal=1).bool()"


def attention_replacement(call: nodes.Call, kind: str, qual: str) -> Tuple[str, List[str]]:
    """The npu_fusion_attention call for a flash-attn / xformers call, and notes on the mapping."""
    notes: List[str] = []
    leaf = qual.rsplit(".", 1)[-1]
    qs = ks = vs = None  # source text of q, k, v (packed forms set them from qkv / kv)
    if kind == "xformers":
        q, k, v = (_arg(call, 0, "query"), _arg(call, 1, "key"), _arg(call, 2, "value"))
        p, scale, causal, bias = _arg(call, 4, "p"), _arg(call, 5, "scale"), None, _arg(call, 3, "attn_bias")
        layout, head = "BSND", 2
    elif kind == "varlen":
        if "qkvpacked" in leaf:
            qkv = _src(_arg(call, 0, "qkv") or call)
            q = k = v = None
            qs, ks, vs = f"{qkv}[:, 0]", f"{qkv}[:, 1]", f"{qkv}[:, 2]"
            cu_q = _arg(call, 1, "cu_seqlens")
            cu_k = cu_q
            p, scale, causal = _arg(call, 3, "dropout_p"), _arg(call, 4, "softmax_scale"), _arg(call, 5, "causal")
        elif "kvpacked" in leaf:
            q = _arg(call, 0, "q")
            kv = _src(_arg(call, 1, "kv") or call)
            k = v = None
            qs, ks, vs = _src(q) if q is not None else "q", f"{kv}[:, 0]", f"{kv}[:, 1]"
            cu_q, cu_k = _arg(call, 2, "cu_seqlens_q"), _arg(call, 3, "cu_seqlens_k")
            p, scale, causal = _arg(call, 6, "dropout_p"), _arg(call, 7, "softmax_scale"), _arg(call, 8, "causal")
        else:
            q, k, v = _arg(call, 0, "q"), _arg(call, 1, "k"), _arg(call, 2, "v")
            cu_q, cu_k = _arg(call, 3, "cu_seqlens_q"), _arg(call, 4, "cu_seqlens_k")
            p, scale, causal = _arg(call, 7, "dropout_p"), _arg(call, 8, "softmax_scale"), _arg(call, 9, "causal")
        bias = None
        layout, head = "TND", 1
    else:
        if "qkvpacked" in leaf:
            qkv = _src(_arg(call, 0, "qkv") or call)
            q = k = v = None
            qs, ks, vs = f"{qkv}[:, :, 0]", f"{qkv}[:, :, 1]", f"{qkv}[:, :, 2]"
            p, scale, causal = _arg(call, 1, "dropout_p"), _arg(call, 2, "softmax_scale"), _arg(call, 3, "causal")
        elif "kvpacked" in leaf:
            q = _arg(call, 0, "q")
            kv = _src(_arg(call, 1, "kv") or call)
            k = v = None
            qs, ks, vs = _src(q) if q is not None else "q", f"{kv}[:, :, 0]", f"{kv}[:, :, 1]"
            p, scale, causal = _arg(call, 2, "dropout_p"), _arg(call, 3, "softmax_scale"), _arg(call, 4, "causal")
        else:
            q, k, v = _arg(call, 0, "q"), _arg(call, 1, "k"), _arg(call, 2, "v")
            p, scale, causal = _arg(call, 3, "dropout_p"), _arg(call, 4, "softmax_scale"), _arg(call, 5, "causal")
        bias = None
        layout, head = "BSND", 2
    if qs is None:
        qs = _src(q) if q is not None else "q"
    if ks is None:
        ks = _src(k) if k is not None else "k"
    if vs is None:
        vs = _src(v) if v is not None else "v"
    args = [qs, ks, vs, f"head_num={qs}.shape[{head}]", f"input_layout='{layout}'"]
    # scale
    if scale is None or _const(scale) is None:
        args.append(f"scale=1 / math.sqrt({qs}.shape[-1])")
        notes.append("softmax scale: the NPU default is 1.0, so 1/sqrt(head_dim) (the GPU default) is passed explicitly")
    else:
        args.append(f"scale={_src(scale)}")
        notes.append(f"softmax_scale={_src(scale)} -> scale")
    # dropout
    pname = "p" if kind == "xformers" else "dropout_p"
    pv = _const(p) if p is not None else 0.0
    if p is not None and pv not in (0, 0.0):
        args.append(f"keep_prob=1 - {_src(p)}" if not isinstance(pv, (int, float)) or isinstance(pv, bool)
                    else f"keep_prob={1 - pv:g}")
        notes.append(f"{pname}={_src(p)} -> keep_prob = 1 - {pname}")
    else:
        notes.append(f"{pname}=0 -> keep_prob=1 (default)")
    # varlen
    if kind == "varlen":
        cq = _src(cu_q) if cu_q is not None else "cu_seqlens_q"
        ck = _src(cu_k) if cu_k is not None else "cu_seqlens_k"
        args.append(f"actual_seq_qlen=tuple({cq}[1:].cpu().numpy().tolist())")
        args.append(f"actual_seq_kvlen=tuple({ck}[1:].cpu().numpy().tolist())")
        notes.append("cu_seqlens_q/k -> actual_seq_qlen/actual_seq_kvlen (host-side cumulative lengths without the leading 0); "
                     "max_seqlen_q/k are not needed")
    # causal / bias
    cv = _const(causal) if causal is not None else False
    if kind == "xformers" and bias is not None:
        bq = bias.func.as_string() if isinstance(bias, nodes.Call) else _src(bias)
        if "LowerTriangular" in bq or "Causal" in bq:
            args += [f"atten_mask={CAUSAL_MASK}", "sparse_mode=3"]
            notes.append(f"attn_bias={_src(bias)} -> causal atten_mask (triu bool, True = masked) with sparse_mode=3")
        else:
            args.append(f"atten_mask=<bool mask from {_src(bias)}, True = masked>")
            notes.append(f"attn_bias={_src(bias)} -> a bool atten_mask (True = masked) or an additive pse")
    elif cv is True:
        args += [f"atten_mask={CAUSAL_MASK}", "sparse_mode=3"]
        notes.append("causal=True -> atten_mask = triu(ones(2048, 2048), diagonal=1).bool() with sparse_mode=3 "
                     "(bottom-right aligned as flash-attn>=2.1; sparse_mode=2 for flash-attn<=2.0)")
    elif causal is not None and cv is not False:
        args += [f"atten_mask={CAUSAL_MASK} if {_src(causal)} else None", f"sparse_mode=3 if {_src(causal)} else 0"]
        notes.append(f"causal={_src(causal)} -> atten_mask (triu bool) + sparse_mode=3 when true")
    for kw in call.keywords or ():
        if kw.arg == "window_size":
            notes.append(f"window_size={_src(kw.value)} -> pre_tockens/next_tockens with sparse_mode=4 (band)")
        elif kw.arg == "alibi_slopes":
            notes.append("alibi_slopes -> an ALiBi bias tensor passed as pse")
        elif kw.arg in ("return_attn_probs", "deterministic", "return_softmax_lse"):
            notes.append(f"{kw.arg}: no equivalent - drop")
    notes.append("the result is a tuple: element [0] is the attention output")
    return f"torch_npu.npu_fusion_attention({', '.join(args)})[0]", notes


def _other_vendor_op(q: str) -> Optional[dict]:
    """The facts of ``torch.ops.<ns>.<op>`` when ``<ns>`` is another accelerator's device (``torch.ops.hpu.*``, the
    ``torch.hpu`` namespace of data/noise.yaml other_vendor_namespaces): an operator registered only by that
    vendor's extension, absent on an Ascend host. None otherwise."""
    parts = q.split(".")
    if len(parts) < 4 or parts[0] != "torch" or parts[1] != "ops" or not load_noise().other_vendor(f"torch.{parts[2]}"):
        return None
    return dict(severity="manual", library=f"torch.ops.{parts[2]}", entry=None, evidence="inferred",
                source=load_noise().vendor_source,
                reason=f"`torch.ops.{parts[2]}` operators are registered by another accelerator vendor's extension; "
                       "they do not exist on an Ascend host",
                replacement="the torch_npu counterpart of the operation (or the plain PyTorch path) on the NPU")


def _no_alternative(value, tree: nodes.Module) -> bool:
    """*value* (bound to a module-level name) is no working stand-in for a library function: ``None``, or a
    function of the module whose body only raises (``def _needs_library(*a, **k): raise RuntimeError(...)``)."""
    if _is_none(value):
        return True
    if not isinstance(value, nodes.Name):
        return False
    fns = [d for d in tree.locals.get(value.name, ()) if isinstance(d, (nodes.FunctionDef, nodes.AsyncFunctionDef))]
    return len(fns) == len(tree.locals.get(value.name, ())) == 1 and _only_raises(fns[0].body)


# --------------------------------------------------------------------------- the pass


class ThirdPartyPass(Pass):
    name = "third-party"
    rules = (R_IMPORT, R_USE, R_ATTN, R_GUARDED)

    VALID = (
        "import numba\nfrom mmcv import Config\n@numba.njit\ndef f(x):\n    return x\n",
        "'''Uses apex.amp and flash_attn on GPUs.'''\n# import apex\nprint('install flash_attn for speed')\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import apex\nimport torch\n",
        # an availability probe is not a use
        "import importlib.util\nHAVE_FLASH = importlib.util.find_spec('flash_attn') is not None\n",
    )
    INVALID = (
        # DeepSpeed itself runs through its NPU accelerator: an auto note (install torch_npu beside it), no edit
        "import deepspeed  # expect: NPU401\n",
        "from deepspeed.ops.adam import DeepSpeedCPUAdam  # expect: NPU401\nopt = DeepSpeedCPUAdam(params)  # expect: NPU402\n",
        "from apex import amp  # expect: NPU401\n"
        "model, opt = amp.initialize(model, opt, opt_level='O1')  # expect: NPU402\n"
        "with amp.scale_loss(loss, opt) as scaled:  # expect: NPU402\n    scaled.backward()\n",
        "import flash_attn as fa  # expect: NPU401\nout = fa.flash_attn_func(q, k, v, dropout_p=0.1, causal=True)  # expect: NPU403\n",
        "from flash_attn import flash_attn_varlen_func as attn  # expect: NPU401\n"
        "o = attn(q, k, v, cu_q, cu_k, mq, mk, causal=True)  # expect: NPU403\n",
        "import apex  # expect: NPU401\nopt = apex.optimizers.FusedAdam(params, lr=1e-3)  # expect: NPU402\n"
        "model = apex.parallel.convert_syncbn_model(model)  # expect: NPU402\n",
        "try:\n    from apex.normalization import FusedLayerNorm as LN  # expect: NPU404\nexcept ImportError:\n"
        "    from torch.nn import LayerNorm as LN\n",
        "import xformers.ops as xops  # expect: NPU401\ny = xops.memory_efficient_attention(q, k, v, p=0.0)  # expect: NPU403\n",
        "import pynvml  # expect: NPU401\npynvml.nvmlInit()  # expect: NPU402\n",
        "from mmcv.ops import nms, CARAFE  # expect: NPU401\nkeep = nms(boxes, scores, 0.5)  # expect: NPU402\n",
        # the probe `apex is not None` is not a use; the call under it is
        "try:\n    import apex  # expect: NPU404\nexcept ImportError:\n    apex = None\n"
        "if apex is not None:\n    model = apex.parallel.convert_syncbn_model(model)  # expect: NPU402\n",
    )

    # ------------------------------------------------------------------ project info
    def _project_tops(self, ctx: ModuleContext) -> Set[str]:
        store = ctx.project.store.setdefault(STORE_KEY, {})
        tops = store.get("tops")
        if tops is None:
            mods = set(ctx.project.modules.values()) | {sf.modname for sf in ctx.project.files.values()}
            tops = {m.split(".")[0] for m in mods if m}
            store["tops"] = tops
        return tops

    def _own(self, ctx: ModuleContext, qual: str) -> bool:
        """The name belongs to the analysed project itself (a local module shadowing / being the library, or the
        analysed package under its absolute name inside its parent package: ``transformer_engine.pytorch.*``
        when ``transformer_engine/pytorch`` is the library)."""
        for outer in ctx.project.store.get(OWN_PACKAGE_KEY) or ():
            if qual == outer or qual.startswith(outer + "."):
                return True
        top = qual.split(".")[0]
        mod = ctx.source.modname or ""
        if mod == top or mod.startswith(top + "."):
            return True
        return top in self._project_tops(ctx)

    @staticmethod
    def _project_extension(ctx: ModuleContext, qual: str) -> bool:
        """The name is a compiled extension the project's own build declares (the cuda-extension pass reports it)."""
        names = project_scan(ctx.project).ext_names
        if not names:
            return False
        parts = qual.split(".")
        return any(".".join(parts[:i]) in names for i in range(1, len(parts) + 1))

    # ------------------------------------------------------------------ lookup
    def _lookup(self, ctx: ModuleContext, table: LibTable, qual: str):
        """(severity, replacement, reason, api, library, entry-or-None, evidence, source)."""
        if self._own(ctx, qual) or self._project_extension(ctx, qual):
            return None
        op = table.mmcv_op(qual)
        if op is not None:
            kind = "supported" if op.npu else "unsupported"
            sev, repl = table.mmcv_policy[kind]
            if op.npu:
                reason = f"mmcv op {op.op} has an Ascend implementation in mmcv's NPU build"
                if op.constraints:
                    reason += f"; Ascend constraints: {op.constraints}"
            else:
                reason = f"mmcv op {op.op} has no Ascend implementation (Ascend MMCV op list)"
            return dict(severity=sev, replacement=repl, reason=reason, library="mmcv", entry=None,
                        evidence="documented", source=table.mmcv_source)
        if qual.startswith(table.mmcv_package + ".") and qual.count(".") >= 2:
            last = qual.rsplit(".", 1)[-1]
            if last[:1].isupper() or "_" in last or last.islower():
                sev, repl = table.mmcv_policy["unlisted"]
                return dict(severity=sev, replacement=repl,
                            reason=f"`{qual}` is an mmcv op that Ascend's MMCV op list does not mention", library="mmcv",
                            entry=None, evidence="inferred", source=table.mmcv_source, confidence="medium")
        m = table.match(qual)
        if m is None:
            return None
        e, _prefix = m
        return dict(severity=e.severity, replacement=e.replacement, reason=e.reason, library=e.library, entry=e,
                    evidence=e.evidence, source=e.source)

    # ------------------------------------------------------------------ main
    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        table = lib_table(ctx.kb)
        for f in self._findings(ctx, table):
            yield _with_rework(table, f)

    def _findings(self, ctx: ModuleContext, table: LibTable) -> Iterator[Finding]:
        r = ctx.resolver
        guarded: Dict[int, Guard] = {}
        for node in nodes_of(ctx.tree, nodes.Import, nodes.ImportFrom):
            f = self._import(ctx, table, node, guarded)
            if f is not None:
                yield f
        if ctx.project.mode == "thirdparty" and (guarded or self._imports_in_try(ctx)):
            yield from self._required_by_flag(ctx, table)
        yield from self._kernel_launches(ctx, table)
        if ctx.project.mode == "thirdparty":
            yield from self._held_library_calls(ctx, table)
        names = [item for item in r.outer_names() if not isinstance(item[1], nodes.AssignAttr)]
        for node in merged(names, selection(ctx.tree, nodes.Call)):
            if isinstance(node, (nodes.Name, nodes.Attribute)):
                f = self._use(ctx, table, node, guarded)
                if f is not None:
                    yield f
            elif isinstance(node, nodes.Call):
                f = self._dynamic_import(ctx, table, node)
                if f is not None:
                    yield f

    def _kernel_launches(self, ctx, table: LibTable) -> Iterator[Finding]:
        """``kernel[grid, block](args)`` where ``kernel`` is a function of this module decorated by a library's kernel
        decorator (``@numba.cuda.jit``; ``kernel_decorators`` in data/third_party_libs.yaml): the launch runs the
        GPU kernel, so the function that writes it uses the library as much as the kernel's body does."""
        decos = {d: e for e in table.entries for d in e.kernel_decorators}
        if not decos or not any(d.split(".", 1)[0] in ctx.source.text for d in decos):
            return
        r = ctx.resolver
        kernels: Dict[int, Tuple[str, LibEntry, nodes.FunctionDef]] = {}
        for fn in nodes_of(ctx.tree, nodes.FunctionDef):
            for d in fn.decorators.nodes if fn.decorators else ():
                q = r.qualname(d.func if isinstance(d, nodes.Call) else d)
                if q in decos:
                    kernels[id(fn)] = (q, decos[q], fn)
                    break
        if not kernels:
            return
        for call in nodes_of(ctx.tree, nodes.Call):
            func = call.func
            if not (isinstance(func, nodes.Subscript) and isinstance(func.value, nodes.Name)):
                continue
            try:
                _scope, defs = lookup(func.value, func.value.name)
            except Exception:
                continue
            hit = next((kernels[id(d)] for d in defs if id(d) in kernels), None)
            if hit is None or self._own(ctx, hit[0]):
                continue
            deco, entry, fn = hit
            msg = (f"`{func.value.name}[...](...)` launches `{fn.name}`, a {entry.library} kernel (`@{deco}` at "
                   f"{ctx.path}:{fn.lineno}): {entry.reason}")
            yield ctx.finding(R_USE, call, deco, msg, replacement=entry.replacement, severity=entry.severity,
                              evidence="knowledge")
    def _held_library_calls(self, ctx, table) -> Iterator[Finding]:
        """Library mode: a call, inside a function, of a module-level name that the module binds more than once
        (so the resolver names none of its values), one binding a GPU-only library's function
        (``cfunc = bnb_functional.lib.cdequantize_blockwise_fp32``) and every other one no working alternative: a
        function of this module that only raises (``cfunc = _needs_library``), ``None``, or another GPU-only
        function. Whichever binding the module made, the call needs the library: it is a use of it, where the
        function makes it (its own tests -- ``if quant_state is None: return W`` -- decide when it runs)."""
        held = self._held_libraries(ctx, table)
        if not held:
            return
        for call in nodes_of(ctx.tree, nodes.Call):
            func = call.func
            if not isinstance(func, nodes.Name) or func.name not in held:
                continue
            scope = call.scope()
            if not isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda)):
                continue   # the module's own level: the binding's branch is the import's, reported there
            try:
                bound_scope, _defs = lookup(func, func.name)
            except Exception:
                continue
            if bound_scope is not ctx.tree:
                continue   # a local of the same name
            q, info, line = held[func.name]
            msg = (f"`{func.name}` holds `{q}` ({info['library']}, bound at {ctx.path}:{line}); the module's other "
                   f"binding of it is no working alternative (it raises or is None), so this call needs the library. "
                   f"{info['reason']}")
            yield ctx.finding(R_USE, call, q, msg, replacement=info["replacement"], severity=info["severity"],
                              confidence="medium", evidence="knowledge")

    def _held_libraries(self, ctx, table) -> Dict[str, Tuple[str, dict, int]]:
        """Module-level names bound twice or more, one binding a GPU-only library's function and none a working
        alternative (:meth:`_held_library_calls`): name -> (the library qualname, its facts, the binding's line)."""
        memo = ctx.cache.get("third-party-held")
        if memo is not None:
            return memo  # type: ignore[return-value]
        out: Dict[str, Tuple[str, dict, int]] = {}
        r = ctx.resolver
        tree = ctx.tree
        for name, defs in tree.locals.items():
            if len(defs) < 2 or not all(isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign)
                                        and d.scope() is tree for d in defs):
                continue
            lib = None
            working = False
            for d in defs:
                value = d.parent.value
                q = r.qualname(value) if isinstance(value, (nodes.Name, nodes.Attribute)) else None
                info = (self._lookup(ctx, table, q) or _other_vendor_op(q)) if q else None
                if info is not None and info["severity"] in ("blocker", "manual"):
                    lib = lib or (q, info, d.lineno)
                elif not _no_alternative(value, tree):
                    working = True
                    break
            if lib is not None and not working:
                out[name] = lib
        ctx.cache["third-party-held"] = out
        return out

    @staticmethod
    def _imports_in_try(ctx) -> bool:
        """The module imports something inside a ``try`` (where an availability flag can come from)."""
        return any(isinstance(imp.parent, nodes.Try) for imp in nodes_of(ctx.tree, nodes.Import, nodes.ImportFrom))

    def _required_by_flag(self, ctx, table) -> Iterator[Finding]:
        """Library mode: ``if not HAS_PYLIBCUGRAPHOPS and not LEGACY_MODE: raise ModuleNotFoundError(...)`` in a
        function, where every flag is set true only inside a ``try`` that imports a GPU-only library: on an Ascend
        host the import failed, so the function raises -- it needs that library as much as a call of it would.
        ``assert HAS_X, msg`` (``assert HAS_X and other``) is the same stop: one such flag in the asserted ``and``
        chain fails it (an assert is no fallback)."""
        memo: Dict[tuple, object] = {}
        for node in nodes_of(ctx.tree, nodes.If, nodes.Assert):
            if not isinstance(node.scope(), nodes.FunctionDef):
                continue
            if isinstance(node, nodes.Assert):
                found = [(f, lib) for f, lib in ((f, self._flag_library(ctx, table, f, memo))
                                                 for f in _asserted_flags(node.test)) if lib]
                if not found:
                    continue
                flag, (q, info, line) = found[0]
                lead = f"Asserts that `{q}` ({info['library']}) was imported"
            else:
                if node.orelse or not _only_raises(node.body):
                    continue
                flags = _negated_flags(node.test)
                if not flags:
                    continue
                libs = [self._flag_library(ctx, table, f, memo) for f in flags]
                if not all(libs):
                    continue
                flag, (q, info, line) = flags[0], libs[0]
                lead = f"Raises unless `{q}` ({info['library']}) was imported"
            msg = (f"{lead}: the flag `{flag.name}` is set only by "
                   f"the import at {ctx.path}:{line}, which fails on an Ascend host. {info['reason']}")
            yield ctx.finding(R_USE, node, q, msg, replacement=info["replacement"], severity=info["severity"],
                              confidence="medium", evidence="knowledge")

    def _flag_library(self, ctx, table, flag: nodes.Name, memo: Dict[tuple, object]):
        """(library qualname, its facts, import line) when every assignment of *flag* to ``True`` sits in the body
        of a ``try`` that imports a GPU-only library, or the flag is bound only to a presence test of a name such
        an import binds (``HAS_X = x is not None`` after ``try: import x except ImportError: x = None``); None
        otherwise (*memo*: the answers by the flag's scope and name, for one module)."""
        key = (flag.scope().qname(), flag.name)
        if key not in memo:
            memo[key] = self._flag_library_uncached(ctx, table, flag)
        return memo[key]

    def _flag_library_uncached(self, ctx, table, flag: nodes.Name):
        try:
            _scope, defs = lookup(flag, flag.name)
        except Exception:
            return None
        tested = [d for d in defs if isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign)
                  and _presence_test_of(d.parent.value) is not None]
        if tested and len(tested) == len([d for d in defs if isinstance(d, nodes.AssignName)]):
            return self._presence_library(ctx, table, tested)
        trues = [d for d in defs if isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign)
                 and isinstance(d.parent.value, nodes.Const) and d.parent.value.value is True]
        if not trues:
            return None
        found = None
        for d in trues:
            cur, got = d.parent, None
            while cur is not None and not isinstance(cur, (nodes.FunctionDef, nodes.ClassDef)):
                parent = cur.parent
                if isinstance(parent, nodes.Try) and cur in parent.body:
                    got = self._try_library(ctx, table, parent)
                    break
                cur = parent
            if got is None:
                return None
            found = found or got
        return found

    def _presence_library(self, ctx, table, tested):
        """(library qualname, facts, import line) when every ``FLAG = x is not None`` in *tested* tests a name that
        only imports of GPU-only libraries (and their ``x = None`` fallbacks) bind; None otherwise."""
        found = None
        for d in tested:
            name = _presence_test_of(d.parent.value)
            try:
                _scope, binds = lookup(name, name.name)
            except Exception:
                return None
            got = None
            for b in binds:
                if isinstance(b, (nodes.Import, nodes.ImportFrom)):
                    for q in _import_quals(ctx.resolver, b, star=False):
                        info = self._absent_on_npu(ctx, table, q)
                        if info is not None:
                            got = got or (q, info, b.lineno)
                    if got is None:
                        return None
                elif not (isinstance(b, nodes.AssignName) and isinstance(b.parent, nodes.Assign)
                          and _is_none(b.parent.value)):
                    return None
            if got is None:
                return None
            found = found or got
        return found

    def _try_library(self, ctx, table, trynode):
        for imp in nodes_of(trynode, nodes.Import, nodes.ImportFrom):
            for q in _import_quals(ctx.resolver, imp, star=False):
                info = self._absent_on_npu(ctx, table, q)
                if info is not None:
                    return q, info, imp.lineno
        return None

    def _absent_on_npu(self, ctx, table, q: str):
        """The facts of *q* when its import fails on an Ascend host: a GPU-only library (blocker or manual, not
        one that imports there), or a package of another accelerator vendor (``data/noise.yaml``
        other_vendor_namespaces, a top-level package outside torch: IPEX, torch_xla, habana_frameworks), whose
        uses are not findings but whose import-availability flag is False there. None otherwise."""
        info = self._lookup(ctx, table, q)
        if info is not None:
            if info["severity"] in ("blocker", "manual") \
                    and not (info.get("entry") is not None and info["entry"].imports_on_npu):
                return info
            return None
        if q.partition(".")[0] == "torch" or self._own(ctx, q) or not load_noise().other_vendor(q):
            return None
        top = q.partition(".")[0]
        return dict(severity="manual", library=top, entry=None, evidence="inferred", source=load_noise().vendor_source,
                    reason=f"`{top}` is another accelerator vendor's extension; it is not installed on an Ascend host "
                           "and has no NPU build",
                    replacement="the torch_npu counterpart of the operation (or the plain PyTorch path) on the NPU")

    def _import(self, ctx, table, node, guarded) -> Optional[Finding]:
        r = ctx.resolver
        if _type_checking_only(node, r) or _type_only_import(node):
            return None
        quals = _import_quals(r, node)
        hits = []
        for q in quals:
            info = self._lookup(ctx, table, q)
            if info is not None:
                e = info.get("entry")
                if e is not None and e.imports_on_npu and info["severity"] in ("blocker", "manual"):
                    # the import succeeds on an Ascend host; the calls that need CUDA are reported where they are made
                    info = dict(info, severity="advice", reason=info["reason"] + _IMPORTS_ON_NPU)
                hits.append((q, info))
        if not hits:
            return None
        hits.sort(key=lambda h: SEVERITIES.index(h[1]["severity"]))
        q, info = hits[0]
        names = ", ".join(f"`{h[0]}`" for h in hits)
        guard = import_guard(node)
        libs = sorted({h[1]["library"] for h in hits})
        repl = info["replacement"] if len(hits) == 1 else "; ".join(
            dict.fromkeys(f"{h[0].rsplit('.', 1)[-1]}: {h[1]['replacement']}" for h in hits))
        if guard is not None:
            guarded[id(node)] = guard
            if guard.fallback:
                sev = "advice" if info["severity"] in ("blocker", "manual") else info["severity"]
                msg = (f"Guarded import of {names} ({', '.join(libs)}): {info['reason']} On an Ascend host the import "
                       f"fails and the fallback in the except branch (line {guard.line}) runs instead - make that the "
                       f"deliberate NPU path.")
            elif guard.condition == GPU_ONLY_HANDLER:
                # both branches need a GPU-only library: the import fails on an Ascend host whichever runs
                sev = info["severity"]
                msg = (f"Import of {names} ({', '.join(libs)}) in try/except: {info['reason']} No working fallback: "
                       f"the except branch ({ctx.path}:{guard.line}) imports a GPU-only library too, so the import "
                       "fails on an Ascend host either way.")
            else:
                sev = _DOWNGRADE[info["severity"]]
                msg = (f"Guarded import of {names} ({', '.join(libs)}): {info['reason']} No working fallback: the "
                       f"except branch ({ctx.path}:{guard.line}) does not provide one, so later uses of the name fail "
                       "on an Ascend host.")
            return ctx.finding(R_GUARDED, node, q, msg, replacement=repl, severity=sev, confidence="medium",
                               evidence="knowledge")
        msg = f"Import of {names} ({', '.join(libs)}): {info['reason']}"
        if info["severity"] in ("info", "advice"):
            msg = f"Import of {names} ({', '.join(libs)}): {info['reason']}"
        return ctx.finding(R_IMPORT, node, q, msg, replacement=repl, severity=info["severity"],
                           confidence=info.get("confidence", "high"), evidence="knowledge")

    def _dynamic_import(self, ctx, table, call: nodes.Call) -> Optional[Finding]:
        q = ctx.resolver.qualname(call.func)
        if not call.args:
            return None
        if q not in ("importlib.import_module", "__import__"):
            return self._prefixed_import(ctx, table, call)
        if not isinstance(call.args[0], nodes.Const) or not isinstance(call.args[0].value, str):
            return self._prefixed_import(ctx, table, call)
        mod = call.args[0].value
        info = self._lookup(ctx, table, mod)
        if info is None:
            return None
        return self._dynamic_finding(ctx, info, call, mod)

    def _prefixed_import(self, ctx, table, call: nodes.Call) -> Optional[Finding]:
        """``if name.startswith("apex."): cls = _import_class(name)``: a dotted name held in data (a registry's
        table of class paths) imported by ``importlib.import_module`` or by a function of this module that imports
        what its parameter names, inside the branch that tested the name's prefix: the branch imports that
        library (the branch's own test is its condition)."""
        mod = _tested_prefix(call)
        if mod is None or not _imports_its_argument(ctx, call):
            return None
        info = self._lookup(ctx, table, mod)
        if info is None:
            return None
        return self._dynamic_finding(ctx, info, call, mod)

    def _dynamic_finding(self, ctx, info, call: nodes.Call, mod: str) -> Finding:
        guard = import_guard(call.statement())
        if guard is not None:
            return ctx.finding(R_GUARDED, call, mod, f"Guarded dynamic import of `{mod}` ({info['library']}): {info['reason']}",
                               replacement=info["replacement"], severity="advice" if guard.fallback else _DOWNGRADE[info["severity"]],
                               confidence="medium", evidence="knowledge")
        return ctx.finding(R_IMPORT, call, mod, f"Dynamic import of `{mod}` ({info['library']}): {info['reason']}",
                           replacement=info["replacement"], severity=info["severity"], evidence="knowledge")

    def _use(self, ctx, table, node, guarded) -> Optional[Finding]:
        defs = ()
        parent = node.parent
        if isinstance(parent, (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr)) and parent.expr is node:
            return None  # only the outermost name of a chain
        r = ctx.resolver
        q = r.qualname(node)
        if not q:
            return None
        info = self._lookup(ctx, table, q)
        if info is None:
            return None
        required = False
        if is_probe(node):
            if not _requires_library(node):
                return None  # `if apex is not None:` tests whether the library is installed; it does not use it
            required = True  # `assert apex_amp is not None`: the code stops without the library
        if not required and _type_probe(node):
            # isinstance(m, bnb.nn.Linear4bit) / isinstance(m, SyncBatchNorm) compares types and runs none of the
            # class's code: not a use (the import that binds the name is reported where it is made) (#30)
            return None
        if q == "triton" or q.startswith("triton."):
            return None  # kernels, launches and Triton settings are graded by the triton pass; the import says how to install it
        # the import that binds the root name
        root = node
        while isinstance(root, nodes.Attribute):
            root = root.expr
        guard = None
        if isinstance(root, nodes.Name):
            try:
                _scope, defs = lookup(root, root.name)
            except Exception:
                defs = ()
            for d in defs:
                g = guarded.get(id(d))
                if g is not None:
                    guard = g
                    break
            if defs and all(isinstance(d, (nodes.FunctionDef, nodes.ClassDef)) for d in defs):
                return None
        sev = info["severity"]
        conf = info.get("confidence", "high")
        entry: Optional[LibEntry] = info["entry"]
        call = parent if isinstance(parent, nodes.Call) and parent.func is node else None
        suffix = ""
        if guard is not None and guard.fallback and isinstance(root, nodes.Name) \
                and isinstance(node.scope(), (nodes.FunctionDef, nodes.AsyncFunctionDef)) \
                and _mock_placeholder(defs, root.name):
            # `except ImportError: te = MagicMock()`: the import works, and this function runs the mock, not the
            # library (a module-level class statement over the mock still runs: it builds nothing)
            guard = Guard(fallback=False, line=guard.line, condition=MOCKED)
        elif guard is not None and guard.fallback and ctx.project.mode == "thirdparty" and _in_guarded_class(node):
            # `try: import bnb / class QuantLinear: ... bnb.matmul(...)`: the class exists only with the library,
            # and once it is built its methods call it with no fallback
            guard = Guard(fallback=False, line=guard.line, condition=GUARDED_CLASS)
        elif guard is not None and guard.fallback and isinstance(root, nodes.Name) \
                and _placeholder_fallback(defs, root.name) and guard_of(node, tree_memo(node.root())) is None \
                and not _in_other_method(node, defs):
            # `except ImportError: fn = None` then an unconditional `fn(...)`: the placeholder is called (#20);
            # not in a method of a wrapper class, which runs only where a caller builds it
            guard = Guard(fallback=False, line=guard.line)
        elif guard is not None and guard.fallback and isinstance(root, nodes.Name) \
                and (ctx.project.mode == "thirdparty" or not _in_other_method(node, defs)) \
                and _unbound_after_failure(defs, root.name) \
                and not _tests_availability(guard_of(node, tree_memo(node.root()))):
            # a function that calls the optional library unconditionally (or after `if not HAS_X: raise`, or
            # `assert HAS_X`) fails without it (``except ImportError: HAS_FA3 = False`` then ``_flash_attn_forward(...)``);
            # its callers that check the flag first are conditional through the guarded call (a library's callers,
            # or a program's call edges in script mode, where a wrapper class's methods keep the import's guard as
            # for a placeholder: the caller that builds the class chose the library)
            guard = Guard(fallback=False, line=guard.line, condition=UNBOUND)
        if required:
            if guard is None:
                return None   # the name is bound by an unguarded import: that import is the finding
            guard = Guard(fallback=False, line=guard.line, condition=REQUIRED)
        elif guard is not None and guard.condition != GUARDED_CLASS and _runs_only_after_import(node, defs):
            guard = Guard(fallback=True, line=guard.line, condition=AFTER_IMPORT)
        if guard is not None:
            sev = _DOWNGRADE[sev] if guard.fallback else sev
            conf = "medium"
            if guard.condition == AFTER_IMPORT:
                suffix = (f" This line runs only after the guarded import succeeded (the except branch at "
                          f"{ctx.path}:{guard.line} handles its failure): on an Ascend host it is not reached.")
            elif guard.fallback:
                suffix = (f" The import is guarded, with a fallback in the except branch at {ctx.path}:{guard.line}: on an "
                          "Ascend host this line is only reached if the guard is bypassed.")
            elif guard.condition == GPU_ONLY_HANDLER:
                suffix = (f" No working fallback: the except branch at {ctx.path}:{guard.line} imports a GPU-only "
                          "library too, so this line fails on an Ascend host.")
            elif guard.condition == GUARDED_CLASS:
                suffix = (" No working fallback here: the class is defined only when the optional import succeeds "
                          f"(the except branch at {ctx.path}:{guard.line} defines no alternative), and its methods "
                          "call the library once a caller builds it.")
            elif guard.condition == REQUIRED:
                suffix = (f" No working fallback here: the import is guarded (except branch at {ctx.path}:{guard.line}), "
                          "but this test stops the code (assert / raise) when the library is missing, so on an Ascend "
                          "host this code needs it.")
            elif guard.condition == MOCKED:
                suffix = (f" No working fallback here: the except branch at {ctx.path}:{guard.line} binds the module to a "
                          "mock, so the import works on an Ascend host but this code runs the mock instead of the "
                          "library.")
            elif guard.condition == UNBOUND:
                suffix = (f" No working fallback here: the except branch at {ctx.path}:{guard.line} leaves the name "
                          "unbound (or None), and this function uses it without checking, so it fails on an Ascend "
                          "host; callers that test the import first take their fallback.")
            else:
                suffix = (f" No working fallback: the except branch at {ctx.path}:{guard.line} leaves no usable "
                          "alternative, so this line fails on an Ascend host.")
        if call is not None and entry is not None and entry.attention:
            repl, notes = attention_replacement(call, entry.attention, q)
            msg = (f"`{q}` ({info['library']}) is a CUDA attention kernel; use torch_npu.npu_fusion_attention. "
                   f"Mapping: {'; '.join(notes)}.{suffix}")
            return ctx.finding(R_ATTN, call, q, msg, replacement=repl, severity=sev if guard else entry.severity,
                               confidence=conf, evidence="knowledge")
        msg = f"`{q}` ({info['library']}): {info['reason']}"
        if entry is not None and entry.params:
            params = dict(entry.params)
            used = []
            if call is not None:
                for kw in call.keywords or ():
                    if kw.arg in params:
                        used.append(f"{kw.arg}={_src(kw.value)}: {params[kw.arg]}")
            leaf = q.rsplit(".", 1)[-1]
            if leaf in params:
                used.append(f"{leaf}: {params[leaf]}")
            if used:
                msg += " Parameter mapping: " + "; ".join(used) + "."
            elif call is not None:
                msg += " Parameter mapping: " + "; ".join(f"{k}: {v}" for k, v in entry.params[:6]) + "."
        target = call if call is not None else node
        return ctx.finding(R_USE, target, q, msg + suffix, replacement=info["replacement"], severity=sev, confidence=conf,
                           evidence="knowledge")
