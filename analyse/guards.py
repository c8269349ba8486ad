"""Guards: the condition under which a piece of code runs.

:func:`guard_of` answers, for any astroid node, "is this code only run under a
condition that an Ascend NPU host would normally not meet, and is there an
alternative path?" It walks up from the node to the module and returns the
innermost :class:`Guard`:

* ``import-fallback``: inside ``try: import X`` with an ``except ImportError``
  (or ``contextlib.suppress(ImportError)``); *fallback* when the handler does
  something other than re-raise (assigns ``X = None``, imports another module,
  sets a flag);
* ``availability-check``: ``if torch.cuda.is_available():``, ``if HAVE_APEX:``,
  ``if amp is not None:``, ``importlib.util.find_spec("flash_attn")``,
  ``is_flash_attn_available()``, ``hasattr(torch, "compile")``;
* ``device-branch``: ``if device.type == "cuda":``, ``if x.is_cuda:``,
  ``"cuda" in str(device)``;
* ``option``: a user flag or setting: ``if args.trt:``, ``if engine == "tensorrt":``,
  ``if self.use_cuda_kernel:``, a boolean parameter, ``os.environ.get(...)``;
* ``version-check``: ``torch.__version__``, ``TORCH_VERSION``, ``version.parse``,
  ``TORCH_1_9``, ``sys.version_info``;
* ``platform-check``: ``sys.platform``, ``platform.system()``, ``os.name``,
  ``MACOS`` / ``WINDOWS``.

A test of the *layout* of the data a caller passes (``x.is_sparse``, ``x.layout == torch.sparse_csr``,
``isinstance(x, SparseTensor)``, ``is_torch_sparse_tensor(x)``, ``x.is_quantized``, ``x.is_nested``) is an
``option`` too: the branch runs only for that kind of input, and skipping it (the dense path after an early
exit, or the ``else``) is the fallback.

Which branch is guarded follows the test's polarity: ``if not HAVE_X: fallback
else: use X`` guards the ``else`` branch; for version and platform tests both
branches are guarded. An early exit counts too: in ``if not HAVE_X: return``
the rest of the block is guarded.

*fallback* is true when the guarded code has an alternative that runs on an
NPU: an ``else`` branch (that does more than raise), an ``except`` body that does
more than re-raise, the default of an option (off), or -- for an optional
library's availability check -- simply skipping the branch. A CUDA availability
or device test without an ``else`` has no fallback: skipping it skips the
accelerator.

The test expression of a guard is not itself guarded by it, and
:func:`is_probe` tells whether a name is only *tested* for presence
(``if apex is not None``), which the passes must not report as a use.

Depends on astroid only (usable by the passes, the verdict and the library mode).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from typing import List, Optional, Set, Tuple

from astroid import nodes

from analyse import conditions as C
from analyse.conditions import build as build_condition
from analyse.conditions.build import IMPORT_ERRORS, handler_catches_import  # noqa: F401 (re-exported)
from analyse.conditions.build import dotted_name as _dotted, imported_flag, leaf_name as _leaf
from analyse.conditions import classify as classify_condition
from analyse.conditions import model as _CM
from analyse.conditions.options import import_helper_name, params_are_choices
from analyse.syntax import own_bindings, sole_assigned_value, whole_test

GUARD_KINDS = ("import-fallback", "availability-check", "device-branch", "option", "version-check",
               "platform-check")

DEVICE_WORDS = {"cuda", "cpu", "gpu", "npu", "mps", "xla", "xpu", "hpu", "meta", "nccl", "gloo", "hccl"}
OPTION_ROOTS = {"args", "opt", "opts", "option", "options", "cfg", "config", "conf", "configs", "hparams", "hp",
                "params", "flags", "FLAGS", "settings", "kwargs", "cmd_args", "parsed_args", "arguments", "hyp",
                "training_args", "model_args", "data_args", "train_cfg", "model_cfg", "run_config"}
OPTION_ATTR_RE = re.compile(
    r"^_?(use|enable|enabled|with|do|apply|allow|fuse|fused|export|compile|trt|tensorrt|onnx|engine|half|fp16|bf16|"
    r"amp|cuda_graph|cudnn|benchmark|deterministic|flash|xformers|triton|deepspeed|apex|sync_bn|distributed|dist|"
    r"profile|debug|fast|quant|int8)(_|$)|_enabled$|_mode$|_backend$|^backend$|^engine$|^impl$|^mode$",
    re.IGNORECASE)
AVAIL_NAME_RE = re.compile(
    r"^_?(HAVE|HAS)_[A-Z0-9_]+$|^_?have_\w+|\w*_(AVAILABLE|available|INSTALLED|installed|SUPPORTED|supported)$")
AVAIL_CALL_RE = re.compile(r"^(is_\w*_?available|\w*_available|is_\w+_installed|has_\w+|available|is_available|"
                           r"find_spec|find_loader|device_count|is_built|is_compiled)$")
VERSION_NAME_RE = re.compile(r"(^|_)version(_|s?$)|^version|^_?(IS_)?TORCH_(GE|LT|GT|LE|GREATER|LESS|\d)|^_?TORCH\d|"
                             r"LooseVersion|digit_version|check_version|^parse_version$", re.IGNORECASE)
PLATFORM_NAMES = {"MACOS", "WINDOWS", "LINUX", "IS_WINDOWS", "IS_MACOS", "IS_LINUX", "ON_WINDOWS", "IS_MAC", "IS_WIN",
                  "WIN32", "IS_DARWIN", "is_windows", "is_macos", "is_linux", "is_mac", "IS_JETSON", "IS_COLAB",
                  "ARM64", "IS_ARM", "is_arm", "is_jetson", "is_colab", "is_docker", "is_kaggle", "IS_KAGGLE"}
PLATFORM_WORDS = {"win32", "cygwin", "darwin", "linux", "linux2", "nt", "posix", "windows", "Windows", "Darwin",
                  "Linux", "aarch64", "arm64", "x86_64", "AMD64"}

# polarity: which branch of an ``if`` is the guarded one
BODY, ORELSE, BOTH = "body", "orelse", "both"


@dataclass(frozen=True)
class Guard:
    """The innermost condition a piece of code runs under.

    ``condition`` is the source text of the test (shortened), ``line`` the line
    of the ``if`` / ``try`` / ``except``.
    """

    kind: str
    line: int
    fallback: bool
    condition: str = ""
    # the whole path condition (this guard and every enclosing branch, early exit and try-import up to the
    # module), as a conditions value; None: only this guard's test is known
    path: Optional[object] = field(default=None, compare=False, repr=False)
    # a call tried for a value whose failure the handler answers (:func:`_tried_call_guard`): it runs or the
    # handler's value does, on any host
    tried: bool = False
    # the guard's own test is a CUDA test that is false on an NPU host as the code stands (no transfer_to_npu) and
    # the guarded code has a working fallback: the NPU takes the fallback (analyse.callgraph.npu_takes_fallback)
    npu_fallback: bool = field(default=False, compare=False)
    # library mode: an `if <CUDA test>:` with no else and code after it that completes (:func:`_completes_after`):
    # an NPU without transfer_to_npu skips the block, with it the block runs there. What transfer_to_npu rewrites in
    # the block needs nothing (the fallback or the NPU runs it); CUDA-only code in it still fails on the default path
    skipped_block: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in GUARD_KINDS:
            raise ValueError(f"unknown guard kind {self.kind!r}")

    @property
    def on_path(self) -> dict:
        """{scenario: "on" | "off" | "conditional"} on an NPU host (see :mod:`analyse.conditions.model`)."""
        return C.on_path(self.path) if self.path is not None else {s: C.CONDITIONAL for s in C.SCENARIOS}

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "line": self.line, "fallback": self.fallback}
        if self.condition:
            d["condition"] = self.condition
        if self.tried:
            d["tried"] = True
        if self.npu_fallback:
            d["npu_fallback"] = True
        if self.skipped_block:
            d["skipped_block"] = True
        if self.path is not None:
            op = self.on_path
            d["on_path"] = op
            if op[C.TRANSFER] == C.OFF and self.kind == "option" and C.model.off_whatever_chosen(self.path):
                d["off_whatever_chosen"] = True   # an enclosing host test keeps it off, not the option's default
            if op[C.TRANSFER] == C.CONDITIONAL:
                w = C.words(self.path, C.TRANSFER)
                if w:
                    d["depends_on"] = w
                if C.model.off_by_default(self.path):
                    d["by_default"] = C.OFF
                    d["unless"] = C.model.default_off_words(self.path)
        return d


# --------------------------------------------------------------------------- helpers

def _text(node, limit: int = 80) -> str:
    try:
        s = node.as_string()
    except Exception:  # pragma: no cover - defensive
        return ""
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _root_name(node) -> str:
    cur = node
    while isinstance(cur, (nodes.Attribute, nodes.Call, nodes.Subscript)):
        cur = cur.func if isinstance(cur, nodes.Call) else (cur.value if isinstance(cur, nodes.Subscript) else cur.expr)
    return cur.name if isinstance(cur, nodes.Name) else ""


def _strings(node):
    """String constants of a Const or a tuple/list/set of them."""
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return [node.value]
    if type(node) in (nodes.Tuple, nodes.List, nodes.Set):
        return [e.value for e in node.elts if isinstance(e, nodes.Const) and isinstance(e.value, str)]
    return []


def _is_none(node) -> bool:
    return isinstance(node, nodes.Const) and node.value is None


def _only_raises(body) -> bool:
    """True when a block does nothing but raise / exit / log (no alternative path). A block that ends by
    raising (a bare ``raise`` after a message or a clean-up) is no alternative path either (#23)."""
    if not body:
        return True
    if isinstance(body[-1], nodes.Raise):
        return True
    last = body[-1]
    if isinstance(last, nodes.If) and last.orelse and _only_raises(last.body) and _only_raises(last.orelse):
        # `else: if te_installed: raise RuntimeError(...) else: raise ImportError(...)`: every branch raises
        return True
    for st in body:
        if isinstance(st, (nodes.Raise, nodes.Pass)):
            continue
        if isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Call):
            leaf = _leaf(st.value.func)
            if leaf in ("exit", "_exit", "abort") or leaf in ("print", "warn", "warning", "error", "info", "debug",
                                                             "critical", "exception", "log"):
                continue
        if isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Const):
            continue  # a docstring / bare string
        return False
    return True


def block_stops(block) -> bool:
    """The block stops the program: it raises, asserts false or exits at its top level (one that only logs or
    warns completes: ``if x.is_cuda and x.requires_grad: warnings.warn(...)``)."""
    if not block:
        return False
    if any(isinstance(st, nodes.Assert) and isinstance(st.test, nodes.Const) and not st.test.value for st in block):
        return True
    # a nested `if ...: raise ... else: raise ...` at the end stops too
    return _stops(block) or (isinstance(block[-1], nodes.If) and _only_raises(block))


def chain_stops(ifnode) -> bool:
    """Some path through the ``if`` / ``elif`` / ``else`` chain stops the program: a branch stops
    (:func:`block_stops`), or a path falls through the chain (no final ``else``, or a branch that does not return)
    to statements after it that stop (``if cuda: return "cuda" / elif xpu: return "xpu"`` then ``raise``)."""
    cur = ifnode
    falls_through = False
    while True:
        if block_stops(cur.body):
            return True
        falls_through = falls_through or not _ends_the_block(cur.body)
        if len(cur.orelse) == 1 and isinstance(cur.orelse[0], nodes.If):
            cur = cur.orelse[0]
            continue
        if block_stops(cur.orelse):
            return True
        falls_through = falls_through or not cur.orelse or not _ends_the_block(cur.orelse)
        return falls_through and block_stops(_after_chain(ifnode))


def _ends_the_block(block) -> bool:
    """The block leaves the enclosing code at its end (return, raise, continue, break): nothing after its ``if``
    chain runs from there."""
    return bool(block) and isinstance(block[-1], (nodes.Return, nodes.Raise, nodes.Continue, nodes.Break))


def _chain_top(ifnode):
    """The first ``if`` of the ``if`` / ``elif`` chain that *ifnode* belongs to."""
    top = ifnode
    while isinstance(top.parent, nodes.If) and top.parent.orelse == [top]:
        top = top.parent
    return top


def _after_chain(ifnode) -> list:
    """The statements after the whole ``if`` / ``elif`` chain that *ifnode* belongs to, in its block."""
    top = _chain_top(ifnode)
    rest = []
    sib = top.next_sibling()
    while sib is not None:
        rest.append(sib)
        sib = sib.next_sibling()
    return rest


def stopping_chain_arm(node) -> Optional[Tuple[int, int, int]]:
    """(line of the chain's first ``if``, the arm, the number of arms) when *node* sits, in its function, in an arm
    of an ``if`` / ``elif`` chain whose final ``else`` only stops the program (``else: raise ValueError``) and whose
    arms all end the function (return or raise): whichever arm a caller's value picks, the function runs that arm
    or stops, so no arm is a working fallback for another (library mode reads the arms' callees together). None
    otherwise (no final ``else``, an ``else`` that runs code, an arm that falls through to later statements)."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda,
                                                         nodes.ClassDef, nodes.Module)):
        if isinstance(parent, nodes.If) and cur is not parent.test:
            break
        cur, parent = parent, parent.parent
    else:
        return None
    if not isinstance(parent, nodes.If):
        return None
    top = _chain_top(parent)
    arms, mine, it = [], None, top
    while True:
        arms.append(it.body)
        if cur in it.body:
            mine = len(arms) - 1
        if len(it.orelse) == 1 and isinstance(it.orelse[0], nodes.If):
            it = it.orelse[0]
            continue
        final = it.orelse
        break
    if mine is None or not final or not _only_raises(final) or len(arms) < 2:
        return None
    if not all(arm and isinstance(arm[-1], (nodes.Return, nodes.Raise)) for arm in arms):
        return None
    working = [i for i, arm in enumerate(arms) if not _only_raises(arm)]   # an arm that only raises is a stop too
    if mine not in working:
        return None
    return (top.lineno or 1, working.index(mine), len(working))


def path_choice(node, other_path: bool = False) -> str:
    """Words when *node* (a device or backend test: ``x.is_cuda``, ``dist.get_backend() == "nccl"``) is the test,
    alone or inside ``and`` / ``or`` / ``not``, of an ``if`` whose chain of branches neither raises nor exits, or of
    a conditional expression: whichever way an NPU host answers it, a path that completes runs, so the test is a
    path choice and no change to make. "" otherwise (asserted, a value passed on, a branch that stops).
    *other_path*: the ``if`` must also write the path taken when the test fails (an ``else``, or a body that returns
    so that the rest of the block is that path): a test that only skips its body (``if backend == "nccl":
    torch.cuda.set_device(rank)``) may skip set-up the other device needs too."""
    test = whole_test(node)
    holder = test.parent
    if isinstance(holder, nodes.IfExp) and holder.test is test:
        return f"the alternatives of the expression at line {holder.lineno}"
    if isinstance(holder, nodes.If) and holder.test is test and not chain_stops(holder):
        if other_path and not holder.orelse and not (holder.body and isinstance(holder.body[-1], nodes.Return)):
            return ""
        return f"the branches of the `if` at line {holder.lineno} complete"
    return ""


def cuda_probe_settled(call) -> str:
    """Words when *call* is a CUDA availability probe (``torch.cuda.is_available()``, or a helper the conditions
    model reads as one: ``is_cuda_available()`` summarised from its body or named so) whose answer changes nothing
    on an NPU host: it is a path choice (:func:`path_choice`), or the whole test it sits in (an ``assert``, an
    ``if``, a value) has the same value on an NPU host with and without transfer_to_npu (``assert
    is_cuda_available() or is_npu_available()``: the NPU alternative holds). A probe returns a bool on any host;
    what the caller does with the answer is judged where it acts. "" otherwise."""
    if not isinstance(call, nodes.Call):
        return ""
    up = call.parent
    if not (isinstance(up, (nodes.BoolOp, nodes.UnaryOp))
            or (isinstance(up, (nodes.If, nodes.IfExp, nodes.Assert, nodes.While)) and up.test is call)):
        return ""   # not a test (cheap check first: this runs for every call site of a library)
    try:
        atom = build_condition(call)
    except (RecursionError, ValueError, TypeError, AttributeError):
        return ""
    if not isinstance(atom, C.Atom) or atom.kind != _CM.CUDA:
        return ""
    choice = path_choice(call)
    if choice:
        return choice
    test = whole_test(call)
    if test is call:
        return ""
    try:
        cond = build_condition(test)
    except (RecursionError, ValueError, TypeError, AttributeError):
        return ""
    if cond is None:
        return ""
    vals = {C.evaluate(cond, s) for s in C.SCENARIOS}
    if vals == {True}:
        return (f"the test at line {test.lineno} holds on an NPU host whichever way `{_text(call, 60)}` answers "
                "(another alternative answers for the NPU)")
    return ""


def _needs_gpu_only(body) -> bool:
    """The block imports a GPU-only library (the knowledge base's, see :func:`analyse.conditions.configure`)."""
    from analyse.conditions.options import gpu_only_module

    for st in body:
        for n in ([st] if isinstance(st, (nodes.Import, nodes.ImportFrom)) else
                  st.nodes_of_class((nodes.Import, nodes.ImportFrom))):
            names = [m for m, _as in n.names] if isinstance(n, nodes.Import) else \
                ([n.modname] if n.modname and not n.level else [])
            if any(gpu_only_module(m) for m in names) and not _import_caught_within(n, st) \
                    and not _type_checking_block(n, st):
                return True
    return False


def _type_checking_block(node, top) -> bool:
    """*node* sits in the body of an ``if TYPE_CHECKING:`` (``typing.TYPE_CHECKING``) at or below *top*: it never
    runs (only a type checker reads it)."""
    cur, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, nodes.If) and cur in parent.body and _leaf(parent.test) == "TYPE_CHECKING":
            return True
        if cur is top:
            break
        cur, parent = parent, parent.parent
    return False


def _import_caught_within(node, top) -> bool:
    """*node* (an import inside the statement *top*) sits in the body of a ``try`` below *top* whose
    ``except ImportError`` handler neither re-raises nor imports GPU-only code itself: its failure is caught
    there (``except ImportError: try: import nvfuser / except ImportError: pass``), so the block does not need it."""
    cur, parent = node, node.parent
    while parent is not None and cur is not top:
        if isinstance(parent, nodes.Try) and cur in parent.body:
            for h in parent.handlers:
                if handler_catches_import(h) and not any(isinstance(s, nodes.Raise) for s in h.body) \
                        and not _needs_gpu_only(h.body):
                    return True
        cur, parent = parent, parent.parent
    return False


def _has_import(body) -> bool:
    for st in body:
        if isinstance(st, (nodes.Import, nodes.ImportFrom)):
            return True
        for n in st.nodes_of_class((nodes.Import, nodes.ImportFrom, nodes.Call)):
            if isinstance(n, (nodes.Import, nodes.ImportFrom)):
                return True
            if _leaf(n.func) in ("import_module", "__import__", "load", "load_ext", "load_inline"):
                return True
    return False


def _terminates(body) -> bool:
    return bool(body) and isinstance(body[-1], (nodes.Return, nodes.Raise, nodes.Continue, nodes.Break))


def _enclosing_function(node):
    cur = node.parent
    while cur is not None and not isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda,
                                                   nodes.Module)):
        cur = cur.parent
    return cur if isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef)) else None


def _param_default(name: str, node):
    """(is a parameter of the enclosing function, its default node or None)."""
    fn = _enclosing_function(node)
    while fn is not None:
        args = fn.args
        if args is not None:
            pos = list(args.posonlyargs or []) + list(args.args or [])
            defaults = list(args.defaults or [])
            off = len(pos) - len(defaults)
            for i, a in enumerate(pos):
                if a.name == name:
                    return True, (defaults[i - off] if i >= off else None)
            for a, d in zip(args.kwonlyargs or [], args.kw_defaults or []):
                if a.name == name:
                    return True, d
        fn = _enclosing_function(fn)
    return False, None


def _helper_flag(d) -> bool:
    """*d* binds an element of the tuple an import helper hands back: the flag beside the module (``has_cp`` of
    ``cp, has_cp = optional_import("cupy")``), whether the import worked, or the module itself, None when it
    failed (``ext, msg = try_import("ext")`` then ``if ext is not None:``)."""
    tup = d.parent
    if type(tup) is not nodes.Tuple or not tup.elts:
        return False
    stmt = tup.parent
    return isinstance(stmt, nodes.Assign) and isinstance(stmt.value, nodes.Call) \
        and import_helper_name(_leaf(stmt.value.func))


def _bound_by_guarded_import(name: nodes.Name) -> bool:
    """The name is bound by an import inside ``try`` (or set to None in its handler), or is the flag an import
    helper hands back (:func:`_helper_flag`)."""
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return False
    for d in defs:
        if _helper_flag(d):
            return True
        cur = d
        while cur is not None and not isinstance(cur, (nodes.Module, nodes.FunctionDef, nodes.ClassDef)):
            if isinstance(cur, (nodes.Try, nodes.ExceptHandler)):
                return True
            cur = cur.parent
    return False


# --------------------------------------------------------------------------- test classification

def _classify(test, ctx) -> Optional[Tuple[str, str, bool]]:
    """(kind, polarity, cuda) of an ``if`` test; None when the test is not a guard.

    *cuda* marks tests of the CUDA device itself (``torch.cuda.is_available()``,
    ``device.type == 'cuda'``): skipping their branch is no fallback.
    """
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        got = _classify(test.operand, ctx)
        if got is None:
            return None
        kind, pol, cuda = got
        return kind, {BODY: ORELSE, ORELSE: BODY, BOTH: BOTH}[pol], cuda
    if isinstance(test, nodes.BoolOp):
        found = [g for g in (_classify(v, ctx) for v in test.values) if g is not None]
        if not found:
            return None
        order = ("device-branch", "availability-check", "version-check", "platform-check", "option")
        found.sort(key=lambda g: order.index(g[0]))
        if test.op == "and":
            # `if ops is not None and x.is_cuda:` needs every operand: an operand that is off on an NPU host with a
            # fallback (an optional kernel, an option) decides it even beside a CUDA test
            found.sort(key=lambda g: g[2] and g[1] == BODY)
        kind, pol, cuda = found[0]
        if test.op == "or" and pol != BOTH:
            # `if not HAVE_X or args.cpu:` -> the else branch needs every operand false: keep the polarity
            return kind, pol, cuda
        return kind, pol, cuda
    if isinstance(test, nodes.NamedExpr):
        return _classify(test.value, ctx)
    names = _names_in(test)
    if "TYPE_CHECKING" in names or "__name__" in names and any(
            isinstance(n, nodes.Name) and n.name == "__name__" for n in test.nodes_of_class(nodes.Name)):
        # the main guard and typing-only imports are not run-time conditions (`cls.__name__ == "Adam8bit"`,
        # a class's name, is one)
        return None
    text_names = names
    # version checks first: torch.version.cuda, TORCH_VERSION, version.parse(...)
    if any(VERSION_NAME_RE.search(n) for n in text_names) or _dotted(test).endswith("version_info"):
        return "version-check", BOTH, False
    if _is_platform(test, text_names):
        return "platform-check", BOTH, False
    dev = _device_test(test)
    if dev is not None:
        return dev
    if _input_layout_test(test):
        return "option", BODY, False
    if params_are_choices() and _input_size_test(test):
        return "option", BODY, False
    if params_are_choices() and _input_dtype_test(test):
        return "option", (ORELSE if test.ops[0][0] in ("!=", "is not", "not in") else BODY), False
    if params_are_choices() and _table_membership_test(test):
        return "option", (ORELSE if test.ops[0][0] == "not in" else BODY), False
    if params_are_choices() and _class_identity_test(test):
        return "option", (ORELSE if isinstance(test, nodes.Compare) and test.ops[0][0] in ("is not", "!=") else BODY), \
            False
    if _dotted_prefix_test(test):
        return "option", BODY, False
    avail = _availability_test(test, ctx)
    if avail is not None:
        return avail
    return _option_test(test, ctx)


def _dotted_prefix_test(test) -> bool:
    """``name.startswith("apex.")``: a test of the package a dotted path held in data names (a registry entry's
    class path), which chooses the entry's branch: an option, whose other branches are its alternatives."""
    if not (isinstance(test, nodes.Call) and isinstance(test.func, nodes.Attribute) and test.func.attrname == "startswith"
            and len(test.args) == 1 and not test.keywords):
        return False
    arg = test.args[0]
    if not (isinstance(arg, nodes.Const) and isinstance(arg.value, str) and arg.value.endswith(".")):
        return False
    head = arg.value[:-1]
    return bool(head) and all(p.isidentifier() for p in head.split(".")) and head.lower() not in DEVICE_WORDS


def _names_in(test):
    out = []
    stack = [test]
    while stack:
        n = stack.pop()
        if isinstance(n, nodes.Name):
            out.append(n.name)
        elif isinstance(n, nodes.Attribute):
            out.append(n.attrname)
        if isinstance(n, (nodes.Lambda, nodes.FunctionDef)):
            continue
        stack.extend(n.get_children())
    return out


def _is_platform(test, names) -> bool:
    d = _dotted(test) if isinstance(test, (nodes.Name, nodes.Attribute, nodes.Call)) else ""
    if any(n in PLATFORM_NAMES for n in names):
        return True
    for n in test.nodes_of_class((nodes.Attribute, nodes.Name)) if not isinstance(test, (nodes.Name,)) else [test]:
        dd = _dotted(n)
        if dd in ("sys.platform", "os.name", "platform.system", "platform.machine", "platform.platform",
                  "platform.processor", "platform.uname"):
            return True
    return d in ("sys.platform", "os.name", "platform.system")


def _device_test(test) -> Optional[Tuple[str, str, bool]]:
    if isinstance(test, nodes.Attribute) and test.attrname in ("is_cuda", "is_npu", "is_cpu", "is_mps", "is_xla"):
        return "device-branch", (ORELSE if test.attrname == "is_cpu" else BODY), test.attrname == "is_cuda"
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        op, right = test.ops[0]
        left = test.left
        for side, other in ((right, left), (left, right)):
            consts = _strings(side)
            words = {c.split(":")[0].lower() for c in consts}
            if consts and words & DEVICE_WORDS and words <= DEVICE_WORDS | {""}:
                cuda = bool(words & {"cuda", "gpu", "nccl"})
                pol = BODY
                if op in ("!=", "not in", "is not"):
                    pol = ORELSE
                if not cuda and words & {"cpu", "gloo", "meta"}:
                    pol = ORELSE if pol == BODY else BODY   # `if device == 'cpu': ... else: <gpu code>`
                    cuda = True
                return "device-branch", pol, cuda
            if op == "in" and isinstance(left, nodes.Const) and isinstance(left.value, str) \
                    and left.value.lower() in DEVICE_WORDS:
                cuda = left.value.lower() in ("cuda", "gpu")
                return "device-branch", BODY if left.value.lower() != "cpu" else ORELSE, cuda or left.value.lower() == "cpu"
    return None


def _self_attr(node) -> bool:
    return isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"


def _opens_cache_fill(test) -> bool:
    """``self._x is None``, ``refresh or any(v is None for v in [self._a, self._b])`` (or its negation, an early
    exit) where the function holding the test assigns one of those attributes: a lazily computed value. Its
    branch runs on the first call whatever the caller chose, so the test is no guard."""
    while isinstance(test, nodes.UnaryOp) and test.op == "not":
        test = test.operand
    parts = test.values if isinstance(test, nodes.BoolOp) and test.op == "or" else [test]
    names = set()
    for p in parts:
        names |= _cache_miss(p)
    if not names:
        return False
    fn = _enclosing_function(test)
    if fn is None:
        return False
    for a in fn.nodes_of_class(nodes.AssignAttr):
        if a.attrname in names and isinstance(a.expr, nodes.Name) and a.expr.name == "self":
            return True
    return False


def _cache_miss(test) -> set:
    """A lazily computed attribute's miss test: ``self._x is None``, ``any(v is None for v in [self._a,
    self._b])``, ``not hasattr(self, "_x")``. The branch it opens computes the value on the first call, so it is
    the ordinary path, not a condition."""
    if isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in ("is", "=="):
        right = test.ops[0][1]
        for a, b in ((test.left, right), (right, test.left)):
            if _is_none(b) and _self_attr(a):
                return {a.attrname}
        return set()
    if isinstance(test, nodes.Call) and _leaf(test.func) == "any" and len(test.args) == 1 \
            and isinstance(test.args[0], nodes.GeneratorExp):
        gen = test.args[0]
        comp = gen.generators[0] if gen.generators else None
        it = comp.iter if comp is not None else None
        elt = gen.elt
        if type(it) in (nodes.List, nodes.Tuple) and it.elts and all(_self_attr(e) for e in it.elts) \
                and isinstance(elt, nodes.Compare) and len(elt.ops) == 1 and elt.ops[0][0] == "is" \
                and _is_none(elt.ops[0][1]):
            return {e.attrname for e in it.elts}
        return set()
    if isinstance(test, nodes.UnaryOp) and test.op == "not" and isinstance(test.operand, nodes.Call):
        call = test.operand
        if _leaf(call.func) == "hasattr" and len(call.args) == 2 and isinstance(call.args[0], nodes.Name) \
                and call.args[0].name == "self" and isinstance(call.args[1], nodes.Const) \
                and isinstance(call.args[1].value, str):
            return {call.args[1].value}
    return set()


LAYOUT_ATTRS = {"is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn"}
LAYOUT_WORD_RE = re.compile(r"sparse|nested|quantiz|mkldnn", re.IGNORECASE)
CONTAINER_TYPES = {"list", "tuple", "dict", "set"}


def _input_layout_test(test) -> bool:
    """A test of the layout of a caller's data: ``x.is_sparse``, ``x.layout == torch.sparse_csr`` /
    ``str(layout) == "torch.sparse_csr"``, ``isinstance(x, SparseTensor)``, ``is_torch_sparse_tensor(x)``."""
    if isinstance(test, nodes.Attribute):
        return test.attrname in LAYOUT_ATTRS
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        sides = (test.left, test.ops[0][1])
        for side in sides:
            elts = side.elts if type(side) in (nodes.Tuple, nodes.List, nodes.Set) else [side]
            for e in elts:
                if isinstance(e, nodes.Attribute) and e.attrname == "layout":
                    return True
                if isinstance(e, nodes.Attribute) and _dotted(e).startswith("torch.") \
                        and LAYOUT_WORD_RE.search(e.attrname):
                    return True   # torch.sparse_csr, torch.sparse_coo
        return False
    if isinstance(test, nodes.Call) and test.args:
        leaf = _leaf(test.func)
        if leaf == "isinstance" and len(test.args) == 2:
            t = test.args[1]
            elts = t.elts if type(t) in (nodes.Tuple, nodes.List) else [t]
            if any(isinstance(e, (nodes.Name, nodes.Attribute)) and LAYOUT_WORD_RE.search(_leaf(e)) for e in elts):
                return True
            # library mode: `isinstance(x_or_list, list)` -- the caller passes a container instead of a tensor
            return params_are_choices() and isinstance(test.args[0], nodes.Name) \
                and all(isinstance(e, nodes.Name) and e.name in CONTAINER_TYPES for e in elts) \
                and _param_default(test.args[0].name, test.args[0])[0]
        return bool(re.match(r"^is_\w+$", leaf)) and bool(LAYOUT_WORD_RE.search(leaf))
    return False


# torch dtypes (torch.<name>) a test of a caller's data compares with
TORCH_DTYPE_RE = re.compile(r"^(?:u?int(?:8|16|32|64)|float(?:8_\w+|16|32|64)?|bfloat16|half|double|bool|"
                            r"complex(?:32|64|128)?|q(?:u?int8|int32|uint4x2))$")


def _dtype_side(node) -> bool:
    """*node* is the dtype of some data: ``x.dtype`` / ``self.linear.weight.data.dtype``, or a local name bound
    once in its function to such an attribute (``pretrained_dtype = self.weight.dtype``)."""
    if isinstance(node, nodes.Attribute):
        return node.attrname == "dtype"
    if isinstance(node, nodes.Name):
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return False
        return len(defs) == 1 and isinstance(defs[0], nodes.AssignName) and isinstance(defs[0].parent, nodes.Assign) \
            and isinstance(defs[0].parent.value, nodes.Attribute) and defs[0].parent.value.attrname == "dtype" \
            and _enclosing_function(defs[0]) is not None and _enclosing_function(defs[0]) is _enclosing_function(node)
    return False


def _torch_dtype(node) -> bool:
    elts = node.elts if type(node) in (nodes.Tuple, nodes.List, nodes.Set) else [node]
    return bool(elts) and all(isinstance(e, nodes.Attribute) and isinstance(e.expr, nodes.Name)
                              and e.expr.name == "torch" and TORCH_DTYPE_RE.match(e.attrname) for e in elts)


def _input_dtype_test(test) -> bool:
    """A library function's branch on the dtype of a caller's data against a torch dtype (``if W.dtype ==
    torch.float8_e4m3fn:``, ``if weight_dtype == torch.uint8:`` for a bitsandbytes-packed weight, ``x.dtype in
    (torch.float16, torch.bfloat16)``): it runs for some inputs only, as a layout or size test does (library mode,
    where the data is the caller's)."""
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1
            and test.ops[0][0] in ("==", "!=", "is", "is not", "in", "not in")):
        return False
    right = test.ops[0][1]
    return any(_dtype_side(a) and _torch_dtype(b) for a, b in ((test.left, right), (right, test.left)))


_SIZE_CALLS = {"numel", "size", "dim", "nelement"}


def _sized_param(node) -> bool:
    """``p.numel()``, ``p.size(0)``, ``p.shape[0]``, ``len(p)``, ``p.dim()`` of a parameter *p* of the enclosing
    function (the size of the data a caller passes)."""
    if isinstance(node, nodes.Subscript):
        node = node.value
    if isinstance(node, nodes.Call):
        if isinstance(node.func, nodes.Name) and node.func.name == "len" and len(node.args) == 1:
            target = node.args[0]
        elif isinstance(node.func, nodes.Attribute) and node.func.attrname in _SIZE_CALLS:
            target = node.func.expr
        else:
            return False
    elif isinstance(node, nodes.Attribute) and node.attrname in ("shape", "ndim"):
        target = node.expr
    else:
        return False
    if not isinstance(target, nodes.Name):
        return False
    return _param_default(target.name, target)[0]


def _table_membership_test(test) -> bool:
    """``backend in _HUB_KERNELS_REGISTRY`` / ``if name not in _REGISTRY: return``: a library function's test of a
    parameter (the caller's value) against a table of its module (a dict / set / list / tuple display, or a
    registry built by a call): the branch runs for the caller's values that the table lists, the rest for the
    others (library mode, where parameters are the caller's)."""
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in ("in", "not in")):
        return False
    left, right = test.left, test.ops[0][1]
    if isinstance(left, nodes.Attribute) and _param_root(left) and _literal_table(right):
        # `optimizer_cls.__name__ in eight_bit_names` (a local list of names): which class the caller passed
        return True
    if not (isinstance(left, nodes.Name) and isinstance(right, nodes.Name) and _param_default(left.name, left)[0]):
        return False
    try:
        _scope, defs = right.lookup(right.name)
    except Exception:
        return False
    return bool(defs) and all(
        isinstance(d, nodes.AssignName) and isinstance(d.scope(), nodes.Module)
        and isinstance(getattr(d.parent, "value", None), (nodes.Dict, nodes.Set, nodes.List, nodes.Tuple, nodes.Call))
        for d in defs)


def _param_root(node) -> bool:
    """*node* is an attribute chain on a parameter of the enclosing function (``optimizer_cls.__name__``)."""
    root = node
    while isinstance(root, nodes.Attribute):
        root = root.expr
    return isinstance(root, nodes.Name) and root.name not in ("self", "cls") and _param_default(root.name, root)[0]


_DISPLAYS = (nodes.List, nodes.Tuple, nodes.Set, nodes.Dict)


def _literal_table(node) -> bool:
    """A display of constants, or a name bound once (in its scope) to one."""
    if isinstance(node, nodes.Name):
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return False
        if len(defs) != 1 or not isinstance(defs[0], nodes.AssignName) \
                or not isinstance(defs[0].parent, nodes.Assign):
            return False
        node = defs[0].parent.value
    if not isinstance(node, _DISPLAYS):
        return False
    elts = [k for k, _v in node.items] if isinstance(node, nodes.Dict) else node.elts
    return bool(elts) and all(isinstance(e, nodes.Const) for e in elts)


def _class_identity_test(test) -> bool:
    """Library mode: ``optimizer_cls is bnb.optim.Adam8bit`` / ``issubclass(optimizer_cls, bnb.optim.Adam8bit)``:
    a test of which class the caller passed (a parameter against a named class), the caller's choice."""
    if isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in ("is", "is not", "==", "!="):
        sides = (test.left, test.ops[0][1])
    elif isinstance(test, nodes.Call) and isinstance(test.func, nodes.Name) and test.func.name == "issubclass" \
            and len(test.args) == 2:
        sides = tuple(test.args)
    else:
        return False
    a, b = sides
    for p, c in ((a, b), (b, a)):
        if isinstance(p, nodes.Name) and _param_default(p.name, p)[0] and p.name not in ("self", "cls") \
                and isinstance(c, (nodes.Attribute, nodes.Name)) and not _is_none(c) \
                and _leaf(c)[:1].isupper():
            return True
    return False


def _input_size_test(test) -> bool:
    """A library function's branch on the size of a caller's data (``if inverse_indices.numel() > 0:``,
    ``if len(lengths) == 0:``): it runs for some inputs only (library mode, where parameters are the caller's)."""
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        right = test.ops[0][1]
        for a, b in ((test.left, right), (right, test.left)):
            if _sized_param(a) and isinstance(b, nodes.Const) and isinstance(b.value, int) \
                    and not isinstance(b.value, bool):
                return True
        return False
    return _sized_param(test)


def _optional_module_object(name: nodes.Name) -> bool:
    """*name* is bound only at module level, once to ``None`` and otherwise to something made at import under the
    module's own choice (``if USE_HUB: ops = get_kernel(...) else: ops = None``): an optional object, so
    ``ops is not None`` tests whether it was made."""
    try:
        scope, defs = name.lookup(name.name)
    except Exception:
        return False
    if not isinstance(scope, nodes.Module) or len(defs) < 2:
        return False
    values = []
    for d in defs:
        if not (isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign)):
            return False
        values.append(d.parent.value)
    return any(_is_none(v) for v in values) and not all(_is_none(v) for v in values)


def _availability_test(test, ctx) -> Optional[Tuple[str, str, bool]]:
    # X is None / X is not None for a guarded-import name or a module-level name
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        op, right = test.ops[0]
        left = test.left
        if op in ("is", "is not", "==", "!=") and (_is_none(right) or _is_none(left)):
            other = left if _is_none(right) else right
            inner = _availability_test(other, ctx)
            if inner is not None:
                return inner[0], (BODY if op in ("is not", "!=") else ORELSE), inner[2]
            if isinstance(other, nodes.Name) and (_bound_by_guarded_import(other) or AVAIL_NAME_RE.match(other.name)
                                                  or _optional_module_object(other)):
                return "availability-check", (BODY if op in ("is not", "!=") else ORELSE), False
            if isinstance(other, nodes.Call) and _leaf(other.func) in ("find_spec", "find_loader", "get_loader"):
                return "availability-check", (BODY if op in ("is not", "!=") else ORELSE), False
            return None
        if op in (">", ">=", "!=", "==") and isinstance(left, nodes.Call) and _leaf(left.func) == "device_count":
            return "availability-check", (BODY if op != "==" else ORELSE), "cuda" in _dotted(left.func)
        return None
    if isinstance(test, nodes.Call):
        leaf = _leaf(test.func)
        if leaf == "hasattr" and len(test.args) >= 2:
            return "availability-check", BODY, False
        if AVAIL_CALL_RE.match(leaf):
            d = _dotted(test.func)
            return "availability-check", BODY, ("cuda" in d.split(".")[:-1] or d in ("cuda.is_available",))
        return None
    if isinstance(test, nodes.Name):
        if AVAIL_NAME_RE.match(test.name) and not test.name.lower().startswith(("is_training", "has_bias")):
            return "availability-check", BODY, "CUDA" in test.name.upper().split("_")
        if _bound_by_guarded_import(test):
            return "availability-check", BODY, False
    if isinstance(test, nodes.Attribute) and AVAIL_NAME_RE.match(test.attrname):
        return "availability-check", BODY, "CUDA" in test.attrname.upper().split("_")
    return None


def _optionish(node, ctx) -> bool:
    """A name or attribute that reads a user setting."""
    if isinstance(node, nodes.Attribute):
        if _root_name(node) in OPTION_ROOTS or OPTION_ATTR_RE.search(node.attrname):
            return True
        return any(a.attrname in OPTION_ROOTS for a in _chain(node.expr))
    if isinstance(node, nodes.Name):
        if node.name in OPTION_ROOTS or OPTION_ATTR_RE.search(node.name):
            return True
        is_param, default = _param_default(node.name, node)
        if is_param and isinstance(default, nodes.Const) and (isinstance(default.value, (bool, str))):
            return True
        return False
    if isinstance(node, nodes.Call):
        d = _dotted(node.func)
        if d in ("os.environ.get", "os.getenv", "environ.get", "getenv") or d.endswith(".getenv"):
            return True
        if _leaf(node.func) == "get" and isinstance(node.func, nodes.Attribute):
            return _root_name(node.func) in OPTION_ROOTS or _optionish(node.func.expr, ctx)
        if _leaf(node.func) == "getattr" and node.args and _root_name(node.args[0]) in OPTION_ROOTS:
            return True
        return False
    if isinstance(node, nodes.Subscript):
        d = _dotted(node.value)
        return d in ("os.environ",) or _root_name(node.value) in OPTION_ROOTS
    return False


def _chain(node):
    cur = node
    while isinstance(cur, nodes.Attribute):
        yield cur
        cur = cur.expr


# a choice between jobs of the program (`if args.subcommand == "train"`), not an optional feature
DISPATCH_NAMES = {"subcommand", "command", "cmd", "mode", "action", "task", "phase", "stage", "split", "job",
                  "run_mode", "operation", "op"}


def _option_test(test, ctx) -> Optional[Tuple[str, str, bool]]:
    if isinstance(test, nodes.Compare) and any(_leaf(side).lower() in DISPATCH_NAMES
                                               for side in [test.left] + [o for _op, o in test.ops]):
        return None   # `args.task == "train"`, `"eval" in args.task`: which job the program runs, on either side
    if isinstance(test, (nodes.Name, nodes.Attribute, nodes.Call, nodes.Subscript)):
        if _optionish(test, ctx):
            return "option", BODY, False
        # a bare flag in a multi-way dispatch: `if pt: ... elif engine: ... else: ...`
        if isinstance(test, nodes.Name) and isinstance(ctx, nodes.If) and ctx.orelse:
            return "option", BODY, False
        return None
    if isinstance(test, nodes.Compare) and len(test.ops) == 1:
        op, right = test.ops[0]
        left = test.left
        consts = _strings(right) or _strings(left)
        other = left if _strings(right) else right
        if consts and isinstance(other, (nodes.Name, nodes.Attribute, nodes.Call, nodes.Subscript)):
            pol = ORELSE if op in ("!=", "not in", "is not") else BODY
            return "option", pol, False
        if op in ("is", "is not", "==", "!=") and (_is_none(right) or _is_none(left)):
            o = left if _is_none(right) else right
            if _optionish(o, ctx) and not isinstance(o, nodes.Name):
                return "option", (BODY if op in ("is not", "!=") else ORELSE), False
    return None


# --------------------------------------------------------------------------- public API

def _branch_fallback(other_branch) -> bool:
    return bool(other_branch) and not _only_raises(other_branch)


def _stub_in_other_branch(ifnode, fld: str, cur) -> bool:
    """*cur* defines a function in one branch of *ifnode* and the other branch defines the same name as a stub that
    only raises (``if _kernels_available: def op(...): <kernel>`` / ``else: def op(...): raise
    AssertionError("needs triton")``), or the other branch holds nothing but such stubs: callers get no working
    alternative, so the guard is no fallback for the code in this branch."""
    other = ifnode.orelse if fld == "body" else ifnode.body
    defs = [st for st in other or () if isinstance(st, (nodes.FunctionDef, nodes.AsyncFunctionDef))]
    if defs and len(defs) == len(other) and all(_only_raises(d.body) for d in defs):
        return True   # the other branch only defines raising stubs: nothing in this branch has a working twin
    if not isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return False
    for st in defs:
        if st.name == cur.name:
            return _only_raises(st.body)
    return False


def _lone_class_definition(owner, fld: str, cur, g: Guard) -> bool:
    """*cur* is a class definition that exists only when an optional library is there: ``if is_x_available():
    class XLinear(...)`` (or in the body of ``try: import x``) with no other branch defining the same name. Without
    the library the class is not defined, so nobody can build it; with it, its methods run the library. The check
    is no fallback for the code inside the class: its calls are unconditional once an instance exists, and its
    builders carry their own guard (library mode: a library's classes are entry points)."""
    if not isinstance(cur, nodes.ClassDef) or g.kind not in _VALIDATIONS or not params_are_choices():
        return False
    if isinstance(owner, nodes.If):
        other = owner.orelse if fld == "body" else owner.body
    elif isinstance(owner, nodes.Try) and fld in ("body", "orelse"):
        other = [st for h in owner.handlers for st in h.body]
    else:
        return False
    for st in other or ():
        for n in [st] + list(st.nodes_of_class((nodes.ClassDef, nodes.AssignName))):
            if getattr(n, "name", None) == cur.name:
                return False
    return True


_MISSING = object()


def _classify_any(test, ctx):
    """The shape classification of a test, else the conditions model's (flags through variables,
    availability helpers, environment variables, options with their default)."""
    if _opens_cache_fill(test):
        return None
    got = None if _imported_flag_test(test) else _classify(test, ctx)
    if got is not None:
        return got
    cond = _cond(test)
    c = classify_condition(cond)
    if c is None:
        return None
    kind, negated, cuda = c
    if kind in ("version-check", "platform-check"):
        return kind, BOTH, cuda
    return kind, (ORELSE if negated else BODY), cuda


def _imported_flag_test(test) -> bool:
    """``FLAG`` / ``not FLAG`` where the flag is imported from the project module that binds it to a test
    (:func:`analyse.conditions.build.imported_flag`): the model reads it from its definition, before any guess
    from its name."""
    inner = test.operand if isinstance(test, nodes.UnaryOp) and test.op == "not" else test
    return isinstance(inner, nodes.Name) and bool(C.model_module_flags()) \
        and imported_flag(inner, inner.name) is not None


def _classified(owner):
    """_classify of an if / conditional expression's test, kept on the node (trees are not changed after
    parsing; the same test is asked about once per statement under it), made again once the options are
    configured (the pre-scan may ask first)."""
    got = getattr(owner, "_npu_guard_test", _MISSING)
    gen = C.options_generation()
    if got is _MISSING or got[0] != gen:
        got = (gen, _classify_any(owner.test, owner))
        try:
            owner._npu_guard_test = got
        except AttributeError:  # pragma: no cover - slotted node classes
            pass
    return got[1]


def _cond(test):
    """The conditions value of a test (None when it cannot be built)."""
    try:
        return build_condition(test)
    except (RecursionError, ValueError, TypeError, AttributeError):
        return None


def _known(c) -> bool:
    return c is not None and any(a.kind != "unknown" for a in C.model.atoms(c))


def _branch_cond(test, in_body: bool):
    c = _cond(test)
    if c is None:
        return None
    return c if in_body else C.neg(c)


def _if_guard(ifnode, in_body: bool) -> Optional[Guard]:
    got = _classified(ifnode)
    if got is None:
        if params_are_choices() and _required_param_none_test(ifnode.test):
            # library mode: `if quant_state is None: <torch> else: <GPU-only>` on a parameter without a default --
            # each side runs for the callers that pass (or not) the argument; the other side is its fallback
            other = ifnode.orelse if in_body else ifnode.body
            if _branch_fallback(other):
                return Guard("option", ifnode.lineno or 1, True, _condition_text(ifnode.test, in_body))
        return None
    kind, pol, cuda = got
    if pol == BODY and not in_body or pol == ORELSE and in_body:
        # the node is on the ordinary path of this test, unless the test is decided on an NPU host: the `else` of
        # `if self.flash:` with `self.flash = hasattr(F, "scaled_dot_product_attention")` never runs there
        bc = _branch_cond(ifnode.test, in_body)
        if bc is not None and params_are_choices() and kind == "option" \
                and (C.model.off_by_default(bc) or _required_param_none_test(ifnode.test)) \
                and all(a.kind == C.model.PARAM for a in C.model.atoms(bc)):
            # library mode: `if scaling_vector is None: <torch> else: <GPU-only kernel>` -- the else runs only for a
            # caller that passes the argument, and the default branch is its fallback
            other = ifnode.body if not in_body else ifnode.orelse
            return Guard("option", ifnode.lineno or 1, _branch_fallback(other), _condition_text(ifnode.test, in_body))
        if bc is None or any(C.evaluate(bc, s) is not False for s in C.SCENARIOS):
            return None
        if params_are_choices() and any(a.kind == C.model.NPU for a in C.model.atoms(bc)):
            return None   # a library's own NPU probe: its backend is judged as a whole (analyse.library, npu_support)
        if any(a.kind == C.model.PARAM for a in C.model.atoms(bc)) and not _bool_flag_test(ifnode.test):
            return None   # `if attention_mask is None:` decided by a parameter's default: callers pass data there
        # `def f(..., quick=True): if quick: A / else: B`: the else is the side a caller must switch to (`quick=False`);
        # off with the default, and the reach turns it on where a reached call passes that value
        other = ifnode.body if not in_body else ifnode.orelse
        if kind == "option" and params_are_choices():
            kind = _decided_kind(ifnode.test, in_body) or kind
        return Guard(kind, ifnode.lineno or 1, _branch_fallback(other), _condition_text(ifnode.test, in_body))
    other = ifnode.orelse if in_body else ifnode.body
    if other:
        fallback = _branch_fallback(other)
        if not fallback and kind == "option":
            # `if impl == "a": ... elif impl == "b": ... else: raise` -- the earlier branches are the alternatives
            fallback = any(_branch_fallback(b) for b in _chain_branches(ifnode))
    elif kind in ("option", "availability-check") and not cuda and not _cuda_valued(ifnode.test, in_body):
        fallback = True   # default off / optional library absent: the branch is skipped
    elif in_body and params_are_choices() and _completes_after(ifnode) and _off_without_transfer(ifnode.test, True):
        # library mode: `if torch.cuda.is_available(): states["cuda_rng"] = torch.cuda.get_rng_state_all()` with
        # no else, and code after it that completes: skipping the block is a working path (the fallback an NPU
        # takes as the code stands; transfer_to_npu makes the test true and runs it)
        return Guard(kind, ifnode.lineno or 1, True, _condition_text(ifnode.test, in_body), npu_fallback=True,
                     skipped_block=True)
    else:
        fallback = False
    if kind == "option" and params_are_choices():
        kind = _decided_kind(ifnode.test, in_body) or kind
    return Guard(kind, ifnode.lineno or 1, fallback, _condition_text(ifnode.test, in_body),
                 npu_fallback=fallback and _off_without_transfer(ifnode.test, in_body))


def _bool_flag_test(test, depth: int = 0) -> bool:
    """*test* is ``flag`` or ``not flag`` for a parameter of the enclosing function whose default is a bool literal
    (``def segments(path, quick=True)``): a switch the caller sets, not data it passes. So is a combination of such
    tests with ``and`` / ``or`` and a comparison of the flag with None or a bool (``use_te is not None and use_te``,
    ``fused is True``): every name it reads is such a switch."""
    while isinstance(test, nodes.UnaryOp) and test.op == "not":
        test = test.operand
    if isinstance(test, nodes.BoolOp) and depth < 4:
        return all(_bool_flag_test(v, depth + 1) for v in test.values)
    if isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in ("is", "is not", "==", "!=") \
            and isinstance(test.ops[0][1], nodes.Const) and (test.ops[0][1].value is None
                                                            or isinstance(test.ops[0][1].value, bool)):
        test = test.left
    if not isinstance(test, nodes.Name):
        return False
    is_param, default = _param_default(test.name, test)
    return is_param and isinstance(default, nodes.Const) and isinstance(default.value, bool)


def _completes_after(ifnode) -> bool:
    """The ``if`` (no ``else``) is followed in its block by statements that do not only raise, inside a function:
    the code after it is the path taken when its test is false."""
    parent = ifnode.parent
    if ifnode.orelse or not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return False
    body = parent.body
    try:
        rest = body[body.index(ifnode) + 1:]
    except ValueError:
        return False
    return _branch_fallback(rest)


def _off_without_transfer(test, in_body: bool) -> bool:
    """The branch of *test* (its body when *in_body*) is a CUDA test, false on an NPU host without transfer_to_npu,
    with no choice or optional library beside it (``ops is not None and x.is_cuda``, a hub kernel a setting loads,
    is the setting's: the caller's choice stays conditional)."""
    bc = _branch_cond(test, in_body)
    if bc is None or C.evaluate(bc, C.NO_TRANSFER) is not False:
        return False
    kinds = {a.kind for a in C.model.atoms(bc)}
    cuda = {C.model.CUDA, C.model.CUDA_TYPE, C.model.CUDA_BUILD}
    return bool(kinds & cuda) and kinds <= cuda | {C.model.VERSION} and not _compares_with_host_device(test)


_HOST_DEVICES = frozenset({"cpu", "meta"})


def _compares_with_host_device(test) -> bool:
    """*test* compares a device with ``"cpu"`` / ``"meta"`` (``str(device) == "cpu"``, ``x.device.type != "meta"``).
    The conditions read "not the CPU" as the CUDA device a program picked, but a device a library's caller passes
    may be an NPU, which takes neither the CPU branch nor the CUDA one: the CPU branch is no fallback the NPU takes."""
    for cmp in test.nodes_of_class(nodes.Compare):
        for side in [cmp.left] + [other for _op, other in cmp.ops]:
            if isinstance(side, nodes.Const) and isinstance(side.value, str) and side.value in _HOST_DEVICES:
                return True
    return False


def _absent_only(c) -> bool:
    """The condition is false on every NPU host because it needs a GPU-only library that is not installed there."""
    if any(C.evaluate(c, sc) is not False for sc in C.SCENARIOS):
        return False
    return any(a.kind == C.model.IMPORTABLE and a.values == (False, False) for a in C.model.atoms(c))


def _absent_texts(c) -> frozenset:
    """The texts of the tests of absent GPU-only libraries in a condition."""
    return frozenset(a.text for a in C.model.atoms(c) if a.kind == C.model.IMPORTABLE and a.values == (False, False))


def _decided_kind(test, in_body: bool) -> Optional[str]:
    """Library mode: the kind of a flag's test (``if use_cp:``) that is off on every NPU host by value: an
    availability check when it needs a GPU-only library that is not installed there (``use_cp = has_cp and ...``
    with ``has_cp`` the flag of the cupy import), a device branch when it needs a CUDA device type (``use_cucim =
    ... and t.device.type == "cuda"``). Not an option a caller turns on. None otherwise."""
    bc = _branch_cond(test, in_body)
    if bc is None or any(C.evaluate(bc, sc) is not False for sc in C.SCENARIOS):
        return None
    kinds = {a.kind for a in C.model.atoms(bc) if a.values == (False, False)}
    if _absent_only(bc):
        return "availability-check"
    if C.model.CUDA_TYPE in kinds or _cuda_type_flag(test):
        return "device-branch"
    return None


def _cuda_type_flag(test) -> bool:
    """``use_x`` (or ``not use_x``) bound once in its function to an ``and`` that compares a device's type with
    ``"cuda"`` (``use_cucim = ... and t.device.type == "cuda"``): a device branch under another name."""
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        test = test.operand
    if not isinstance(test, nodes.Name):
        return False
    value = sole_assigned_value(test)
    if not isinstance(value, nodes.BoolOp) or value.op != "and":
        return False
    for v in value.values:
        if isinstance(v, nodes.Compare) and len(v.ops) == 1 and v.ops[0][0] == "==" \
                and isinstance(v.left, nodes.Attribute) and v.left.attrname == "type" \
                and isinstance(v.ops[0][1], nodes.Const) and v.ops[0][1].value == "cuda":
            return True
    return False


def _cuda_valued(test, in_body: bool) -> bool:
    """Library mode: the branch's condition is a CUDA test by value, not by name (``self.gpu_available`` set from
    ``torch.cuda.is_available()``): true with transfer_to_npu, false without it. Skipping such a branch skips the
    accelerator, so it is no fallback: on the default path (transfer_to_npu) the branch runs."""
    if not params_are_choices():
        return False
    key = "_npu_cuda_valued_body" if in_body else "_npu_cuda_valued_else"
    got = test.__dict__.get(key)
    if got is None:
        c = _branch_cond(test, in_body)
        got = test.__dict__[key] = (c is not None and C.evaluate(c, C.TRANSFER) is True
                                    and C.evaluate(c, C.NO_TRANSFER) is False)
    return got


def _condition_text(test, in_body: bool) -> str:
    """The condition under which the branch runs, as code: the test for the body, its negation (pushed
    into the atoms, never ``not not``) for the ``else`` branch and the rest of a block after an early exit."""
    c = _branch_cond(test, in_body)
    if c is None:
        return _text(test) if in_body else f"not ({_text(test)})"
    s = " ".join(C.render(c).split())
    return s if len(s) <= 100 else s[:97] + "..."


def _render(c) -> str:
    s = " ".join(C.render(c).split())
    return s if len(s) <= 100 else s[:97] + "..."


def _chain_branches(ifnode):
    """Bodies of the earlier branches of an ``if/elif`` chain that *ifnode* is an ``elif`` of."""
    cur = ifnode
    while isinstance(cur.parent, nodes.If) and cur.parent.orelse == [cur]:
        cur = cur.parent
        yield cur.body


def _try_lib(trynode) -> str:
    from analyse.conditions.build import _imported_lib

    lib = _imported_lib(trynode)
    return lib or ""


def keeps_prior_bindings(trynode) -> bool:
    """Every name the ``try`` binds that the code reads after it already had a binding before it (attributes it
    sets keep the library's own): an ``except ImportError: pass`` then keeps the earlier definitions, a working
    fallback::

        class RMSNorm(nn.Module): ...
        try:
            from apex.normalization import FusedRMSNorm
            RMSNorm = partial(FusedRMSNorm, eps=1e-6)
        except ImportError:
            pass
    """
    got = trynode.__dict__.get("_npu_keeps_prior")
    if got is not None:
        return got
    out = False
    scope = trynode.scope()
    first, last = trynode.fromlineno or 0, trynode.tolineno or 0
    imported, assigned = set(), set()
    for st in trynode.body:
        for n in ([st] if isinstance(st, (nodes.Import, nodes.ImportFrom)) else
                  list(st.nodes_of_class((nodes.Import, nodes.ImportFrom)))):
            for name, alias in n.names:
                imported.add(alias or name.split(".")[0])
        for n in ([st] if isinstance(st, (nodes.Assign, nodes.ClassDef, nodes.FunctionDef)) else []):
            if isinstance(n, nodes.Assign):
                assigned.update(t.name for t in n.targets if isinstance(t, nodes.AssignName))
            else:
                assigned.add(n.name)
    replaces = bool(assigned) or any(isinstance(t, nodes.AssignAttr) for st in trynode.body
                                     if isinstance(st, nodes.Assign) for t in st.targets)
    bound = imported | assigned
    if replaces:   # an import-only try keeps its old reading: its handler must provide the fallback
        prior = set()
        for name in bound:
            for d in scope.locals.get(name, ()):
                if (getattr(d, "lineno", None) or 10 ** 9) < first:
                    prior.add(name)
        # a name the try binds and the code reads after it must have had a definition before it (attributes it
        # sets, `transformers.models.llama.modeling_llama.LlamaRMSNorm = ...`, keep the library's own)
        used_after = {n.name for n in scope.nodes_of_class(nodes.Name)
                      if n.name in bound - prior and (n.lineno or 0) > last}
        out = not used_after
    trynode.__dict__["_npu_keeps_prior"] = out
    return out


def _call_fails_by_import(trynode) -> bool:
    """``try: return _load_native() is not None / except ImportError: return False``: no import in the body, but a
    handler that names ``ImportError`` / ``ModuleNotFoundError`` itself says the call imports lazily and fails that way
    when the optional dependency is missing -- on an NPU host, the GPU-only one -- so the handler is its fallback."""
    named = {_leaf(t) for h in trynode.handlers if h.type is not None
             for t in (h.type.elts if type(h.type) is nodes.Tuple else [h.type])}
    if not named & {"ImportError", "ModuleNotFoundError"}:
        return False
    return any(isinstance(n, nodes.Call) for st in trynode.body for n in st.nodes_of_class(nodes.Call))


def _try_guard(trynode, in_orelse: bool, imports: bool) -> Optional[Guard]:
    """*in_orelse*: the statement is in the ``else`` block (else in the body); *imports*: ``_has_import(trynode.body)``."""
    handlers = [h for h in trynode.handlers if handler_catches_import(h)]
    if not handlers:
        return None
    if not (imports or _call_fails_by_import(trynode)):
        return _tried_call_guard(trynode, handlers) if not in_orelse else None
    h = handlers[0]
    where, text = h.lineno or trynode.lineno or 1, _text(h.type) if h.type else "except"
    # a fallback that itself needs GPU-only code (`except ImportError: import xformers.ops`) is no fallback; one
    # that passes while earlier definitions (or a patched library's own attributes) stay in place is one
    fallback = any(not _only_raises(h.body) and not _needs_gpu_only(h.body) for h in handlers) or \
        (all(not _needs_gpu_only(h.body) and not any(isinstance(x, nodes.Raise) for x in h.body) for h in handlers)
         and keeps_prior_bindings(trynode))
    return Guard("import-fallback", where, fallback, text)


def _stops(body) -> bool:
    """The block raises or exits the program (at its top level)."""
    for st in body:
        if isinstance(st, nodes.Raise):
            return True
        if isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Call) and \
                _leaf(st.value.func) in ("exit", "_exit", "abort"):
            return True
    return False


_VALUE_STATEMENTS = (nodes.Assign, nodes.AnnAssign, nodes.Return)


def _swallowed_block(trynode, handlers) -> bool:
    """Library mode: ``try: <probe of the GPUs> / except Exception: pass`` followed in the function by code that
    completes (``return True``): whatever fails in the block (a missing ``nvidia-smi``, no CUDA device), the function
    goes on as if it had not run. Every handler only passes, and there is no ``else`` / ``finally``. The block may
    sit in an ``if`` / ``with`` / loop of the function: what follows those completes the function as well."""
    if not params_are_choices() or trynode.orelse or trynode.finalbody or len(handlers) != len(trynode.handlers):
        return False
    if not all(h.body and all(isinstance(st, nodes.Pass) for st in h.body) for h in handlers):
        return False
    # the statements that run after the block: those after it in its own block, then after each enclosing
    # statement (an ``if`` / ``with`` / loop the try sits in) up to the function (``if is_dist: try: <bootstrap> /
    # except: pass`` then ``return result``); a block inside another try or a handler is left to that one
    rest: list = []
    cur, parent = trynode, trynode.parent
    for _ in range(_MAX_SWALLOW_DEPTH):
        if not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.If, nodes.With, nodes.For,
                                   nodes.While)):
            return False
        block = next((b for b in (parent.body, getattr(parent, "orelse", None)) if isinstance(b, list) and cur in b),
                     None)
        if block is None:
            return False
        rest.extend(block[block.index(cur) + 1:])
        if isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            return _branch_fallback(rest)
        cur, parent = parent, parent.parent
    return False


_MAX_SWALLOW_DEPTH = 8


def _bound_names(block) -> Set[str]:
    """The names the assignments of *block* bind at its top level, unpacked ones too (``major, _ = f()``)."""
    out: Set[str] = set()
    for st in block:
        if isinstance(st, (nodes.Assign, nodes.AnnAssign)):
            todo = list(st.targets if isinstance(st, nodes.Assign) else [st.target])
            while todo:
                t = todo.pop()
                if isinstance(t, nodes.AssignName):
                    out.add(t.name)
                elif isinstance(t, (nodes.Tuple, nodes.List)):
                    todo.extend(t.elts)
                elif isinstance(t, nodes.Starred):
                    todo.append(t.value)
    return out


def _tried_call_guard(trynode, handlers) -> Optional[Guard]:
    """``try: flag = lib.has_feature() / except (AttributeError, RuntimeError, OSError): flag = False``: a call
    tried for a value, whose failure (a missing symbol, a CUDA-only build, no device: what a GPU-only library
    raises on an NPU host) the handler answers with a value of its own. The function completes either way, so the
    call is *tried*: guarded with a fallback whatever the call does. Only the small shape counts -- a body of at
    most two statements that bind or return, and a handler that binds the same names or returns -- so a broad
    ``except Exception`` around a block of work is not taken for a fallback."""
    body = trynode.body
    if _swallowed_block(trynode, handlers):
        h = handlers[0]
        return Guard("import-fallback", h.lineno or trynode.lineno or 1, True, _text(h.type) if h.type else "except",
                     tried=True)
    if not body or len(body) > 2 or not all(isinstance(st, _VALUE_STATEMENTS) for st in body):
        return None
    bound = _bound_names(body)
    returns = any(isinstance(st, nodes.Return) for st in body)
    if not bound and not returns:
        return None

    def answers(h) -> bool:
        if _stops(h.body) or _needs_gpu_only(h.body):
            return False
        got = _bound_names(h.body)
        ret = any(isinstance(st, nodes.Return) and st.value is not None for st in h.body)
        # the handler binds what the body binds, or returns a value of its own (`major, _ = cap() / except
        # Exception: return False`): the function completes either way
        return (bool(bound) and bound <= got) or ret

    if not all(answers(h) for h in handlers):
        return None
    h = handlers[0]
    return Guard("import-fallback", h.lineno or trynode.lineno or 1, True, _text(h.type) if h.type else "except",
                 tried=True)


def _try_cond(trynode):
    lib = _try_lib(trynode)
    if not lib:
        return None
    from analyse.conditions.build import importable

    top = lib.split(".")[0] if not lib.startswith("torch.") else lib
    return importable(top, f"importable({lib})", f"not importable({lib})")


def _with_guard(withnode) -> Optional[Guard]:
    for item, _as in withnode.items:
        if isinstance(item, nodes.Call) and _leaf(item.func) == "suppress":
            names = {_leaf(a) for a in item.args}
            if names & IMPORT_ERRORS:
                return Guard("import-fallback", withnode.lineno or 1, True, _text(item))
    return None


def _early_exits(block, idx: int, tables: Optional[dict] = None) -> List:
    """The ``if T: return`` statements (no else) among the 25 before *idx* in *block*, nearest first.
    *tables* (:func:`block_tables`) keeps the positions of a block's early exits, found on its first
    question: every statement of the block asks."""
    key = ("exits", id(block))
    positions = tables.get(key) if tables is not None else None
    if positions is None:
        positions = [i for i, prev in enumerate(block)
                     if isinstance(prev, nodes.If) and not prev.orelse and _terminates(prev.body)]
        if tables is not None:
            tables[key] = positions
    lo = bisect_left(positions, max(0, idx - 25))
    hi = bisect_left(positions, idx)
    return [block[positions[i]] for i in range(hi - 1, lo - 1, -1)]


def _early_exit_guard(block, idx: int, exits: Optional[List] = None) -> Optional[Guard]:
    """``if not HAVE_X: return fallback`` before the statement at *idx* of *block* guards it: the rest of
    the block runs only when ``HAVE_X`` (the condition is printed the way the rest runs, never inverted)."""
    for prev in (exits if exits is not None else _early_exits(block, idx)):
        got = _classified(prev)
        if got is None:
            if params_are_choices() and _required_param_none_test(prev.test) and not _only_raises(prev.body):
                # library mode: `def fast_gemv(X, W, quant_state): if quant_state is None: return X @ W` -- the rest
                # runs for a caller that passes the argument, the early return is the fallback
                return Guard("option", prev.lineno or 1, True, _condition_text(prev.test, False))
            continue
        kind, pol, cuda = got
        if pol in (ORELSE, BOTH):
            fallback = not _only_raises(prev.body)
            if kind == "option" and not fallback:
                continue   # `if args.x is None: raise ...` validates the options; it guards nothing
            return Guard(kind, prev.lineno or 1, fallback, _condition_text(prev.test, False),
                         npu_fallback=fallback and _off_without_transfer(prev.test, False))
        if kind == "option" and params_are_choices() and not _only_raises(prev.body):
            # library mode, the early-exit form of `if quant_state is None: <torch> else: <GPU-only kernel>`
            # (:func:`_if_guard`): `if quant_state is None: return W` -- the rest runs only for a caller that passes
            # the argument, and the early return is its fallback
            bc = _branch_cond(prev.test, False)
            if bc is not None and (C.model.off_by_default(bc) or _required_param_none_test(prev.test)) \
                    and all(a.kind == C.model.PARAM for a in C.model.atoms(bc)):
                return Guard("option", prev.lineno or 1, True, _condition_text(prev.test, False))
    return None


def _required_param_none_test(test) -> bool:
    """``quant_state is None`` (``is not None``, ``== None``) on a parameter of the enclosing function that has no
    default: whether the argument is None is the caller's choice at every call, so neither side is the default path
    and the side that needs a GPU-only library is a choice of the caller (library mode)."""
    if not (isinstance(test, nodes.Compare) and len(test.ops) == 1 and test.ops[0][0] in ("is", "is not", "==", "!=")
            and isinstance(test.left, nodes.Name) and _is_none_const(test.ops[0][1])):
        return False
    fn = test.scope()
    if not isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)) or fn.args is None:
        return False
    args = list(fn.args.posonlyargs or []) + list(fn.args.args or [])
    required = [a.name for a in args[:len(args) - len(fn.args.defaults or [])]]
    required += [a.name for a, d in zip(fn.args.kwonlyargs or [], fn.args.kw_defaults or []) if d is None]
    name = test.left.name
    return name in required and name not in ("self", "cls") and _only_param_binding(test.left, fn)


def _is_none_const(node) -> bool:
    return isinstance(node, nodes.Const) and node.value is None


def _only_param_binding(name: nodes.Name, fn) -> bool:
    """The parameter *name* is not rebound in *fn* before the test (``x = x or default`` makes it no choice)."""
    for d in fn.locals.get(name.name, ()):
        if not (isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Arguments)) \
                and (d.lineno or 0) < (name.lineno or 0):
            return False
    return True


def _early_exit_cond(block, idx: int, exits: Optional[List] = None):
    """The conjunction of "not T" for the early exits before *idx* (validations that only raise excluded:
    they stop a misconfigured run, they do not pick a path)."""
    parts = []
    for prev in (exits if exits is not None else _early_exits(block, idx)):
        if _only_raises(prev.body):
            continue
        c = _cond(prev.test)
        if _known(c):
            parts.append(C.neg(c))
    return C.conj(*parts) if parts else None


_BLOCK_FIELDS = ("body", "orelse", "finalbody")


_SCOPES = (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef, nodes.Module, nodes.Lambda)


def npu_alternative(node) -> Optional[Tuple[int, int, str]]:
    """(line of the CUDA ``if``, line and test of the ``elif``) that runs on an NPU host when *node* sits in the test or the body of the CUDA
    branch of an ``if``/``elif`` chain::

        if torch.cuda.is_available(): torch.cuda.empty_cache()   # node
        elif is_xpu_available(): torch.xpu.empty_cache()
        elif is_npu_available(): torch.npu.empty_cache()          # -> (1, 3, "is_npu_available()")

    Without transfer_to_npu the CUDA test is false on an NPU host and the NPU branch runs; with it the CUDA branch
    runs and transfer_to_npu maps its calls to torch.npu. Either way the CUDA uses need no change. The CUDA test
    must be true with transfer_to_npu and false without it, and the ``elif`` true on an NPU host without it; the
    walk stops at the enclosing function.

    The NPU case may also sit in the CUDA test itself: ``if (x.is_cuda) or (HAVE_NPU and x.device.type == 'npu'):``
    or ``if not x.is_cuda and x.device.type != 'npu': return reference(x)`` name an NPU tensor explicitly, so the
    CUDA test needs no change for it (-> the ``if``'s line twice and the NPU test), unless the test's value on an
    NPU host is known to differ with and without transfer_to_npu."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, _SCOPES):
        if isinstance(parent, nodes.If) and cur in parent.orelse:
            # `elif is_npu_available(): torch.npu.set_device(r) ... else: torch.cuda.set_device(r)`: an earlier
            # branch of the chain is the NPU's, true on an NPU host either way, so the CUDA code after it never runs
            c = _cond(parent.test)
            if c is not None and any(a.kind == C.model.NPU for a in C.model.atoms(c)) \
                    and C.evaluate(c, C.NO_TRANSFER) is True and C.evaluate(c, C.TRANSFER) is True:
                return parent.lineno or 1, parent.lineno or 1, _text(parent.test)
        if isinstance(parent, nodes.If) and (cur is parent.test or cur in parent.body):
            c = _cond(parent.test)
            if cur is parent.test:
                same = _npu_case_in_test(c)
                if same is not None:
                    return parent.lineno or 1, parent.lineno or 1, same
            if c is not None and C.evaluate(c, C.TRANSFER) is True and C.evaluate(c, C.NO_TRANSFER) is False:
                alt = parent
                while len(alt.orelse) == 1 and isinstance(alt.orelse[0], nodes.If):
                    alt = alt.orelse[0]
                    ac = _cond(alt.test)
                    if ac is not None and C.evaluate(ac, C.NO_TRANSFER) is True \
                            and any(a.kind == C.model.NPU for a in C.model.atoms(ac)):
                        return parent.lineno or 1, alt.lineno or 1, _text(alt.test)
        cur, parent = parent, parent.parent
    return None


def _npu_case_in_test(c) -> Optional[str]:
    """The text of the explicit NPU test in a device test *c* (a condition) that also tests CUDA (see
    :func:`npu_alternative`)."""
    if c is None:
        return None
    atoms = list(C.model.atoms(c))
    npu = [a for a in atoms if a.kind == C.model.NPU]
    if not npu or not any(a.kind == C.model.CUDA for a in atoms):
        return None
    with_t, without = C.evaluate(c, C.TRANSFER), C.evaluate(c, C.NO_TRANSFER)
    if with_t is not None and without is not None and with_t != without:
        return None
    return npu[0].text


def tree_memo(tree: nodes.Module) -> dict:
    """The :func:`guard_of` memo of one tree, kept on it: the passes, the call-graph summary and the
    reach facts ask about the same calls and share the walks."""
    memo = getattr(tree, "_npu_guard_memo", None)
    gen = C.options_generation()
    if memo is None or memo.get(_GENERATION) != gen:
        # none yet, or made before the project's options and flags were configured (the pre-scan): made again
        memo = tree._npu_guard_memo = {_GENERATION: gen}
    return memo


_GENERATION = "generation"


def _level(parent, cur, tables):
    """(guard, condition) that *parent* puts on its child statement *cur*: the innermost-guard of the
    shape rules, and the condition value for the path (both may be None)."""
    g = None
    c = None
    if isinstance(parent, nodes.IfExp):
        if cur is parent.body or cur is parent.orelse:
            g = _ifexp_guard(parent, cur is parent.body)
            bc = _branch_cond(parent.test, cur is parent.body)
            c = bc if _known(bc) or _classified(parent) is not None else None
        return g, c
    if isinstance(parent, nodes.BoolOp):
        # short-circuit: `a and b` evaluates b only when a holds, `a or b` only when a does not
        try:
            i = parent.values.index(cur)
        except ValueError:
            return None, None
        if i == 0:
            return None, None
        parts = []
        for v in parent.values[:i]:
            c = _cond(v)
            if c is not None:
                parts.append(c if parent.op == "and" else C.neg(c))
        c = C.conj(*parts)
        cls = classify_condition(c)
        if cls is None:
            return None, None
        kind = cls[0]
        if cls[2] and kind == "availability-check":   # a CUDA test: skipping it is no fallback
            return Guard(kind, parent.lineno or 1, False, _render(c)), c
        return Guard(kind, parent.lineno or 1, True, _render(c)), c
    owner = _BLOCK_OWNERS.get(type(parent))
    if owner is None:
        owner = _BLOCK_OWNERS[type(parent)] = _block_owner(type(parent))
    if not owner:   # an expression around the node (a call, an attribute ...): it holds no statement block
        return None, None
    at = block_position(parent, cur, tables)
    if at is None:
        return None, None
    fld, idx = at
    if isinstance(parent, nodes.If):
        if fld != "finalbody":
            g = _if_guard(parent, fld == "body")
            if g is not None and g.fallback and _stub_in_other_branch(parent, fld, cur):
                g = replace(g, fallback=False)
            elif g is not None and g.fallback and _lone_class_definition(parent, fld, cur, g):
                g = replace(g, fallback=False)
            bc = _branch_cond(parent.test, fld == "body")
            # a test the shape rules call a guard counts even when the model cannot value it (conditional)
            c = bc if _known(bc) or _classified(parent) is not None else None
    elif isinstance(parent, nodes.Try):
        if fld != "finalbody":
            imports = tables.get(("imports", id(parent)))
            if imports is None:
                imports = tables[("imports", id(parent))] = _has_import(parent.body)
            g = _try_guard(parent, fld == "orelse", imports)
            if g is not None:
                c = _try_cond(parent)
                if g.fallback and _lone_class_definition(parent, fld, cur, g):
                    g = replace(g, fallback=False)
    elif isinstance(parent, nodes.With):
        if fld == "body":
            g = _with_guard(parent)
    elif isinstance(parent, nodes.ExceptHandler):
        if fld == "body" and _missing_device_namespace(parent):
            c = C.model.FALSE
            g = Guard("device-branch", parent.lineno or 1, True, "the device's torch namespace is missing", path=c)
    block = getattr(parent, fld)
    exits = _early_exits(block, idx, tables)
    if not exits:
        return g, c
    if g is None:
        g = _early_exit_guard(block, idx, exits)
    ec = _early_exit_cond(block, idx, exits)
    if ec is not None:
        c = C.conj(c, ec)
    return g, c


def _missing_device_namespace(handler: nodes.ExceptHandler) -> bool:
    """``try: return getattr(torch, device_type) / except AttributeError: <fallback, often torch.cuda>``: the
    handler runs only for a device type torch has no namespace for; the NPU has one (``torch.npu``, from torch_npu),
    so on an NPU host the handler is off the path."""
    t = handler.type
    names = [t] if type(t) is not nodes.Tuple else list(t.elts)
    if not any(_leaf(n) == "AttributeError" for n in names if isinstance(n, (nodes.Name, nodes.Attribute))):
        return False
    trynode = handler.parent
    if not isinstance(trynode, nodes.Try) or len(trynode.body) != 1:
        return False
    st = trynode.body[0]
    value = st.value if isinstance(st, (nodes.Return, nodes.Assign)) else None
    return isinstance(value, nodes.Call) and _leaf(value.func) == "getattr" and len(value.args) == 2 \
        and _dotted(value.args[0]) == "torch" and not isinstance(value.args[1], nodes.Const)


_BLOCK_OWNERS: dict = {}   # node type -> whether its fields include a statement block (filled as types are met)


def _block_owner(t: type) -> bool:
    """Whether nodes of type *t* can hold a ``body`` / ``orelse`` / ``finalbody`` statement list (astroid's
    fields of the type; a type without the field list counts as one, and :func:`block_position` answers)."""
    fields = getattr(t, "_astroid_fields", None)
    return fields is None or any(f in fields for f in _BLOCK_FIELDS)


_VALIDATIONS = ("import-fallback", "availability-check")   # inner guards without a fallback that yield to an outer one


def guard_of(node, memo: Optional[dict] = None) -> Optional[Guard]:
    """The innermost guard of *node*, or None when it runs unconditionally.

    The walk goes through functions and classes up to the module: a ``def``
    inside ``if HAVE_X:`` is guarded by it. The test of an ``if`` is not
    guarded by that ``if``; an ``except`` body is the fallback, not guarded by
    its ``try``. The guard's ``path`` is the conjunction of the conditions of
    every level up to the module (:mod:`analyse.conditions`), so its ``on_path``
    says whether an NPU host runs the code with the defaults. *memo* (a dict kept
    for one tree) shares the walk between nodes under the same statements.
    """
    if node is None:
        return None
    tables = block_tables(memo)
    chain = []          # (statement, level guard, level condition), innermost first
    cur = node
    parent = node.parent
    top = (None, None, False, frozenset())   # (guard, condition, guard decided off, library tests that must hold)
    # of the statement above the chain
    while parent is not None:
        if memo is not None:
            hit = memo.get(cur, _MISSING)   # keyed by the statement itself (nodes hash by identity)
            if hit is not _MISSING:
                top = hit
                break
        g, c = _level(parent, cur, tables)
        chain.append((cur, g, c))
        cur, parent = parent, parent.parent
    guard, cond, absent, required = top
    for key, g, c in reversed(chain):
        if c is not None and g is not None and g.kind == "availability-check" and _absent_only(c) \
                and (not g.fallback or _absent_texts(c) <= required):
            # `if te_installed: <TE> else: raise ImportError(...)`: the test does not take the code off an NPU host's
            # path; the program stops there instead (no fallback), as it does on any host without the library. A
            # test of the same library again inside (`if not is_x_available(): raise ... else: if is_x_available():`)
            # is decided by the outer one
            if not g.fallback:
                required = required | _absent_texts(c)
            c = None
        cond = C.conj(c, cond) if c is not None else cond
        if g is not None and not absent and (guard is None or g.fallback or g.kind not in _VALIDATIONS
                                             or not guard.fallback):
            # an inner try whose handler re-raises (`try: ... except Exception: raise`), an import's own try/except
            # that fails loudly (`elif args.optim == "apex": try: import apex / except ImportError: raise`), or an
            # availability check whose other branch raises (`if not is_xformers_available(): raise ...`), is no
            # fallback and leaves the code under the outer guard that has one: it still runs only when that guard's
            # condition holds, and the other choices are the fallback
            guard = g
            # an availability check that no NPU host passes (a GPU-only library that is not installed there) decides
            # everything under it: an inner option (`if use_cp: ... if return_distances:`) is no caller's choice
            absent = g.kind == "availability-check" and g.fallback and c is not None and _absent_only(c)
        state = (guard, cond, absent, required)
        if memo is not None:
            memo[key] = state
    if guard is None:
        return None
    return replace(guard, path=cond) if cond is not None else guard


_BLOCKS = "blocks"   # guard_of's memo: the statement positions of each block owner (str: never a node id)


def block_tables(memo: Optional[dict]) -> dict:
    """The tables of :func:`block_position` kept in a :func:`guard_of` memo (a fresh dict without one)."""
    return memo.setdefault(_BLOCKS, {}) if memo is not None else {}


def block_position(parent, cur, tables: dict):
    """(field, index) of statement *cur* in the ``body`` / ``orelse`` / ``finalbody`` list of *parent* (the
    first that holds it), or None. One table per parent, made on its first question: a position found
    by scanning the list each time made a block of n statements cost n squared (a module of 20,000
    top-level statements took 8.5 s, 4.8 s with the tables)."""
    table = tables.get(parent)   # nodes as keys: they hash by identity (an id() call each before)
    if table is None:
        table = {}
        for fld in _BLOCK_FIELDS:
            block = getattr(parent, fld, None)
            if isinstance(block, list):
                for i, st in enumerate(block):
                    table.setdefault(st, (fld, i))
        tables[parent] = table
    return table.get(cur)


def _ifexp_guard(ifexp, in_body: bool) -> Optional[Guard]:
    got = _classified(ifexp)
    if got is None:
        return None
    kind, pol, _cuda = got
    if pol == BODY and not in_body or pol == ORELSE and in_body:
        return None
    # the other alternative is the fallback (`"cuda" if torch.cuda.is_available() else "cpu"`), as for an `if`
    return Guard(kind, ifexp.lineno or 1, True, _condition_text(ifexp.test, in_body),
                 npu_fallback=_off_without_transfer(ifexp.test, in_body))


def is_probe(node) -> bool:
    """True when *node* (a Name or Attribute) is only tested for presence:
    ``if apex is not None``, ``if amp:``, ``hasattr(apex, 'amp')``,
    ``assert flash_attn is not None``, ``x = apex is None``.

    Such a test probes whether an optional library is installed; it is not a
    use of the library.
    """
    cur, parent = node, node.parent
    while isinstance(parent, nodes.UnaryOp) and parent.op == "not" or isinstance(parent, nodes.BoolOp):
        cur, parent = parent, parent.parent
    if isinstance(parent, nodes.Compare) and len(parent.ops) == 1:
        op, right = parent.ops[0]
        if op in ("is", "is not", "==", "!=") and (_is_none(right) or _is_none(parent.left)):
            return True
        return False
    if isinstance(parent, (nodes.If, nodes.IfExp, nodes.While)) and cur is parent.test:
        return isinstance(node, nodes.Name) or isinstance(node, nodes.Attribute) and node is cur
    if isinstance(parent, nodes.Assert) and cur is parent.test:
        return True
    if isinstance(parent, nodes.Call) and parent.args and parent.args[0] is cur \
            and _leaf(parent.func) in ("hasattr", "bool", "callable"):
        return True
    return False

