"""Building a :class:`~analyse.conditions.model.Cond` from a test expression, by data flow.

:func:`build` reads an ``if`` / ``while`` / conditional-expression test and follows what it names:

* flags through variables: ``has_gpu = torch.cuda.is_available()``; ``X_AVAILABLE = True`` in
  ``try`` and ``False`` in ``except ImportError``; a name bound by an import in ``try`` (or set to
  None in its handler, or before it with ``except ImportError: pass``) is ``importable(lib)``;
* availability helpers, summarised from their own bodies when defined in the module
  (``return importlib.util.find_spec("x") is not None``, a try-import returning True / False,
  ``_is_package_available("x")``), otherwise by their name (``is_bnb_available()``);
* device predicates: ``torch.cuda.is_available()``, ``device_count() > 0``, ``x.is_cuda``,
  ``x.device.type == "cuda"``, ``"cuda" in str(device)``, ``torch.version.cuda``; probes of other
  accelerators (``torch.xpu.is_available()``, ``torch.backends.mps.is_available()``, ``is_mlu_available()``)
  and of the NPU itself;
* options with their default: parameters of the function holding the branch, attributes set from
  them (``self.emit_nvtx = emit_nvtx``), dataclass / attrs / pydantic fields of the class, and
  the project's option table (argparse, click, typer, config classes: :mod:`analyse.conditions.options`)
  for ``args.x`` / ``cfg.x`` / ``self.args.x`` / ``cfg["x"]`` / ``getattr(args, "x", d)``;
* environment variables (``os.environ.get``, ``os.getenv``, ``parse_flag_from_env(...)``, ``"X" in
  os.environ``): unset, so the code's default;
* comparisons of any of these with literals, computed on the default, and of a module constant as written
  (``impl: Literal["bf16", "fp8"] = "bf16"`` bound once at module level, never declared ``global``, tested in a
  function as ``impl == "bf16"``: :func:`module_constant`); ``and`` / ``or`` / ``not``;
  alternatives ``v = a if t else b`` (the value the default picks);
* versions and platforms (``sys.platform``, ``platform.system()``, ``os.name``).

Nothing is imported or evaluated: only literal constants of the tree are read.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from astroid import nodes

from analyse.conditions import model as m
from analyse.conditions.options import (config_class, config_value, field_default, gpu_only_module, import_helper_name, literal, option_values, params_are_choices,
                                        torch_has)
from analyse.conditions.options import torch_version as _resolved_torch_version
from analyse.conditions.options import generation as _generation, instance_settings, module_flags
from analyse.syntax import nodes_of, own_bindings

_MISSING = object()
MAX_DEPTH = 6

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError", "RuntimeError",
                 "AttributeError"}
_OTHER = r"xpu|mps|mlu|musa|hpu|ipu|dipu|neuron|habana|camb|xla|hip|rocm|tpu|sdaa|gcu|mtia"
OTHER_DEVICE_RE = re.compile(rf"^(?:{_OTHER})$", re.I)
_AVAIL_FN = re.compile(r"^_?(?:is_)?(?:torch_)?(\w+?)_(?:available|installed)$", re.I)
_SETTING_FN = re.compile(r"^_?is_\w+_enabled$")
_ENV_FNS = re.compile(r"(^|_)(from_env|env_flag|env_var|getenv|get_env\w*|parse_flag\w*|str_to_bool_env)$")
DEVICE_WORDS = {"cuda", "cpu", "gpu", "npu", "meta", "nccl", "gloo", "hccl"}
_CUDA_DEVICE_ATTRS = {"is_cuda"}


def _text(node, limit: int = 100) -> str:
    got = node.__dict__.get("_npu_text")
    if got is None:
        try:
            got = " ".join(node.as_string().split())
        except Exception:  # pragma: no cover - defensive
            got = "?"
        node.__dict__["_npu_text"] = got
    return got if len(got) <= limit else got[: limit - 3] + "..."


def dotted_name(node) -> str:
    """``a.b.c`` for Name/Attribute chains (calls are looked through: ``platform.system()`` -> ``platform.system``)."""
    parts = []
    cur = node
    while True:
        if isinstance(cur, nodes.Attribute):
            parts.append(cur.attrname)
            cur = cur.expr
        elif isinstance(cur, nodes.Name):
            parts.append(cur.name)
            break
        elif isinstance(cur, nodes.Call):
            cur = cur.func
        else:
            parts.append("?")
            break
    return ".".join(reversed(parts))


def leaf_name(node) -> str:
    """The last name of a Name/Attribute chain (``torch.cuda.is_available()`` -> ``is_available``)."""
    if isinstance(node, nodes.Attribute):
        return node.attrname
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Call):
        return leaf_name(node.func)
    return ""


_dotted, _leaf = dotted_name, leaf_name


def _str(node) -> Optional[str]:
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None


def _kwarg(call: nodes.Call, name: str, pos: Optional[int] = None):
    for kw in call.keywords or ():
        if kw.arg == name:
            return kw.value
    if pos is not None and len(call.args) > pos:
        return call.args[pos]
    return None


# --------------------------------------------------------------------------- atoms

def device_atom(kind: str, text: str, neg_text: str = "") -> m.Atom:
    vals = {m.CUDA: (True, False), m.CUDA_TYPE: (False, False), m.CUDA_BUILD: (False, False),
            m.NPU: (True, True), m.OTHER_DEVICE: (False, False)}[kind]
    return m.Atom(kind, text, vals, neg_text)


def importable(lib: str, text: str, neg_text: str = "") -> m.Atom:
    low = lib.lower()
    if low in ("cuda", "gpu", "cudnn", "nccl", "triton_cuda"):
        return device_atom(m.CUDA, text, neg_text)
    if low in ("npu", "torch_npu", "ascend"):
        return device_atom(m.NPU, text, neg_text)
    if OTHER_DEVICE_RE.match(low) or low in ("xpu", "mps", "ipex", "intel_extension_for_pytorch", "torch_mlu",
                                               "torch_musa", "habana", "habana_frameworks", "torch_xla"):
        return device_atom(m.OTHER_DEVICE, text, neg_text)
    if params_are_choices() and gpu_only_module(lib):
        # library mode: a GPU-only library (no NPU build) is not installed on an NPU host, so its availability test
        # is false there (script mode keeps a program's test of what its own host has installed open)
        return m.Atom(m.IMPORTABLE, text, (False, False), neg_text)
    return m.Atom(m.IMPORTABLE, text, (None, None), neg_text)


def _choice_atom(kind: str, text: str, value, known: bool, neg_text: str = "", default_words: str = "") -> m.Atom:
    if not known:
        return m.Atom(kind, text, (None, None), neg_text, default_words)
    if kind == m.PARAM and params_are_choices():
        return m.Atom(kind, text, (None, None), neg_text, default_words, bool(value))
    b = bool(value)
    return m.Atom(kind, text, (b, b), neg_text, default_words)


def _unknown(node) -> m.Atom:
    neg_text = ""
    if isinstance(node, nodes.Compare) and len(node.ops) == 1 and node.ops[0][0] in _NEG_OP:
        neg_text = f"{_text(node.left)} {_NEG_OP[node.ops[0][0]]} {_text(node.ops[0][1])}"
    return m.Atom(m.UNKNOWN, _text(node), (None, None), neg_text)


# --------------------------------------------------------------------------- values (what an expression holds)

class _Val:
    """The value an expression holds: a literal default (``known``), with the atom kind it comes from."""

    __slots__ = ("kind", "value", "known", "words")

    def __init__(self, kind: str, value=None, known: bool = False, words: str = ""):
        self.kind, self.value, self.known, self.words = kind, value, known, words


def _param_default(name: str, node):
    """(is a parameter of the enclosing function, (found, default literal))."""
    cur = node.parent
    while cur is not None and not isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda,
                                                   nodes.Module, nodes.ClassDef)):
        cur = cur.parent
    if not isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return False, (False, None)
    args = cur.args
    if args is None:
        return False, (False, None)
    pos = list(args.posonlyargs or []) + list(args.args or [])
    defaults = list(args.defaults or [])
    off = len(pos) - len(defaults)
    for i, a in enumerate(pos):
        if a.name == name:
            return True, (literal(defaults[i - off]) if i >= off else (False, None))
    for a, d in zip(args.kwonlyargs or [], args.kw_defaults or []):
        if a.name == name:
            return True, (literal(d) if d is not None else (False, None))
    return False, (False, None)


def _keeps_none(call: nodes.Call, name: str) -> bool:
    """``x = sample(x, mode=...)`` where every function *sample* can be (a ``def`` of the module or the function,
    or a name bound to a conditional expression choosing between such defs) begins with ``if <its parameter> is
    None: return <it>``: a None argument comes back as None, so the parameter's None default still decides."""
    pos = [i for i, a in enumerate(call.args) if isinstance(a, nodes.Name) and a.name == name]
    if len(pos) != 1 or not isinstance(call.func, nodes.Name):
        return False
    fns = _callables(call.func)
    if not fns:
        return False
    for fn in fns:
        params = list(fn.args.posonlyargs or []) + list(fn.args.args or []) if fn.args is not None else []
        if pos[0] >= len(params) or not fn.body:
            return False
        p = params[pos[0]].name
        first = fn.body[0]
        if not (isinstance(first, nodes.If) and isinstance(first.test, nodes.Compare) and len(first.test.ops) == 1
                and first.test.ops[0][0] == "is" and isinstance(first.test.left, nodes.Name)
                and first.test.left.name == p and isinstance(first.test.ops[0][1], nodes.Const)
                and first.test.ops[0][1].value is None and len(first.body) == 1
                and isinstance(first.body[0], nodes.Return)):
            return False
        ret = first.body[0].value
        if not (ret is None or isinstance(ret, nodes.Const) and ret.value is None
                or isinstance(ret, nodes.Name) and ret.name == p):
            return False
    return True


def _callables(func: nodes.Name) -> list:
    """The defs a called name can be: its own ``def`` bindings, or the defs a conditional expression bound to it
    chooses between (``sample = sample_packed if packed else sample_full``); empty when anything else."""
    try:
        defs = own_bindings(func, func.name)
    except Exception:
        return []
    out = []
    for d in defs:
        if isinstance(d, nodes.FunctionDef):
            out.append(d)
            continue
        st = d.parent if isinstance(d, nodes.AssignName) else None
        if not (isinstance(st, nodes.Assign) and isinstance(st.value, nodes.IfExp)):
            return []
        for branch in (st.value.body, st.value.orelse):
            if not isinstance(branch, nodes.Name):
                return []
            try:
                inner = own_bindings(branch, branch.name)
            except Exception:
                return []
            if not inner or not all(isinstance(x, nodes.FunctionDef) for x in inner):
                return []
            out.extend(inner)
    return out


def _rebound(name: nodes.Name) -> bool:
    """The use *name* of a parameter no longer sees the parameter itself: every binding it sees is an assignment
    in the function's body before it (``names = resolve(self, names)``). A rebinding on one branch only (``if
    is_fp16_enabled(): use_kernel = False``) leaves the parameter's value on the other path: not rebound."""
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return False
    return bool(defs) and not any(isinstance(d.parent, nodes.Arguments) for d in defs)


def _bool_annotated(name: str, node) -> bool:
    """Parameter *name* of the function enclosing *node* is annotated ``bool``."""
    cur = node.parent
    while cur is not None and not isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Lambda,
                                                   nodes.Module, nodes.ClassDef)):
        cur = cur.parent
    if not isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef)) or cur.args is None:
        return False
    args = cur.args
    pos = list(args.posonlyargs or []) + list(args.args or [])
    notes = list(args.posonlyargs_annotations or []) + list(args.annotations or [])
    pairs = list(zip(pos, notes)) + list(zip(args.kwonlyargs or [], args.kwonlyargs_annotations or []))
    for a, ann in pairs:
        if a.name == name:
            return isinstance(ann, nodes.Name) and ann.name == "bool"
    return False


def _command_function(node) -> bool:
    """The enclosing function is a click / typer command (decorated, or with ``typer.Option`` defaults)."""
    fn = node.scope()
    if not isinstance(fn, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
        return False
    for d in (fn.decorators.nodes if fn.decorators else ()):
        f = d.func if isinstance(d, nodes.Call) else d
        if _leaf(f) in ("option", "command", "argument") or _dotted(f).startswith(("click.", "app.", "cli.")):
            return True
    return any(isinstance(d, nodes.Call) and _leaf(d.func) in ("Option", "Argument")
               for d in list(fn.args.defaults or []) + [k for k in fn.args.kw_defaults or [] if k is not None])


def _env_value(call: nodes.Call) -> Optional[_Val]:
    """``os.environ.get("X", d)`` / ``os.getenv("X", d)`` / ``parse_flag_from_env("X", d)``: unset -> d."""
    d = _dotted(call.func)
    leaf = _leaf(call.func)
    if d in ("os.environ.get", "environ.get", "os.getenv", "getenv") or d.endswith(".environ.get"):
        name = _str(call.args[0]) if call.args else None
        default = _kwarg(call, "default", 1)
        ok, v = literal(default) if default is not None else (True, None)
        return _Val(m.ENV, v, ok, f"${name or '?'} unset")
    if _ENV_FNS.search(leaf) and call.args and _str(call.args[0]):
        name = _str(call.args[0])
        default = _kwarg(call, "default", 1)
        if default is None:
            ok, v = True, (False if "flag" in leaf or "bool" in leaf else None)
        else:
            ok, v = literal(default)
        return _Val(m.ENV, v, ok, f"${name} unset")
    if leaf in ("str_to_bool", "strtobool", "bool", "int", "float", "str") and call.args:
        inner = value_of(call.args[0])
        if inner is not None and inner.kind == m.ENV:
            if not inner.known:
                return inner
            try:
                v = inner.value
                if leaf in ("str_to_bool", "strtobool"):
                    v = str(v).lower() in ("1", "true", "yes", "y", "on", "t") if v is not None else False
                elif leaf == "bool":
                    v = bool(v)
                elif v is not None:
                    v = {"int": int, "float": float, "str": str}[leaf](v)
                return _Val(m.ENV, v, True, inner.words)
            except (TypeError, ValueError):
                return _Val(m.ENV, None, False, inner.words)
    return None


def _self_attr_value(node: nodes.Attribute, depth: int) -> Optional[_Val]:
    """``self.x``: what the class assigns to it (a constructor parameter's default, a literal, an option),
    or its field default (dataclass / attrs / pydantic style class-level annotations)."""
    cls = node.frame()
    while cls is not None and not isinstance(cls, nodes.ClassDef):
        cls = cls.parent.frame() if cls.parent is not None else None
    if cls is None:
        return None
    name = node.attrname
    for st in cls.body:
        if isinstance(st, nodes.AnnAssign) and isinstance(st.target, nodes.AssignName) and st.target.name == name \
                and st.value is not None:
            ok, v = literal(st.value)
            if not ok and isinstance(st.value, nodes.Call) and _leaf(st.value.func) in ("field", "ib", "attrib", "Field"):
                d = _kwarg(st.value, "default", 0 if _leaf(st.value.func) == "Field" else None)
                ok, v = literal(d) if d is not None else (False, None)
            return _Val(m.OPTION, v, ok, f"{name} = {v!r} by default" if ok else "")
        if isinstance(st, nodes.Assign) and any(isinstance(t, nodes.AssignName) and t.name == name for t in st.targets):
            ok, v = literal(st.value)
            if ok:
                return _Val(m.OPTION, v, ok, f"{name} = {v!r} by default")
    found = _self_assignments(cls).get(name)
    if found is None or len(found) > 4:
        return None
    if not found or any(v is None for _init, v in found):
        return None
    init = [v for is_init, v in found if is_init]
    if len(found) > 1 and (len(init) != 1 or len(found) - len(init) > 0):
        # assigned again outside __init__: a state, not a setting
        return None
    expr = init[0] if init else found[0][1]
    if depth >= MAX_DEPTH:
        return None
    inner = value_of(expr, depth + 1)
    if inner is None:
        return None
    # attributes set from constructor defaults are options (self.emit_nvtx = emit_nvtx, emit_nvtx=False)
    kind = m.OPTION if inner.kind in (m.PARAM, m.OPTION) else inner.kind
    return _Val(kind, inner.value, inner.known, inner.words)


def _self_attr_expr(node: nodes.Attribute):
    """The one expression the class assigns to ``self.<attr>`` (in ``__init__``, never again elsewhere), or None."""
    cls = node.frame()
    while cls is not None and not isinstance(cls, nodes.ClassDef):
        cls = cls.parent.frame() if cls.parent is not None else None
    if cls is None:
        return None
    found = _self_assignments(cls).get(node.attrname)
    if not found or len(found) != 1 or found[0][1] is None or not found[0][0]:
        return None
    return found[0][1]


def _self_assignments(cls: nodes.ClassDef) -> dict:
    """attribute -> [(assigned in __init__, value or None)] for every ``self.x = ...`` of the class's methods
    (one walk per class, kept on the node)."""
    got = cls.__dict__.get("_npu_self_assign")
    if got is not None:
        return got
    root = cls.root()
    if isinstance(root, nodes.Module):
        # every class of the module from one pass over the module's attribute assignments (shared index)
        tables = root.__dict__.get("_npu_self_assigns")
        if tables is None:
            tables = root.__dict__["_npu_self_assigns"] = _module_self_assignments(root)
        table = tables.get(id(cls)) or {}
    else:   # pragma: no cover - a class outside a module tree
        table = {}
        for meth in cls.body:
            if isinstance(meth, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                for a in nodes_of(meth, nodes.AssignAttr):
                    _add_self_assignment(table, a, meth)
    cls.__dict__["_npu_self_assign"] = table
    return table


def _module_self_assignments(module: nodes.Module) -> dict:
    """id(class) -> :func:`_self_assignments`' table, for every class of *module*: each ``self.x = ...`` counts
    for every class whose method (a ``def`` in the class body) holds it, in the order of the module."""
    out: dict = {}
    for a in nodes_of(module, nodes.AssignAttr):
        if not (isinstance(a.expr, nodes.Name) and a.expr.name == "self"):
            continue
        cur, parent = a, a.parent
        while parent is not None:
            if isinstance(parent, nodes.ClassDef) and isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                _add_self_assignment(out.setdefault(id(parent), {}), a, cur)
            cur, parent = parent, parent.parent
    return out


def _add_self_assignment(table: dict, a: nodes.AssignAttr, meth) -> None:
    if not (isinstance(a.expr, nodes.Name) and a.expr.name == "self"):
        return
    st = a.parent
    lst = table.setdefault(a.attrname, [])
    if len(lst) > 5:
        return
    if isinstance(st, (nodes.Assign, nodes.AnnAssign)) and st.value is not None:
        lst.append((meth.name == "__init__", st.value))
    else:
        lst.append((False, None))


def _option_name_value(name: str, words_root: str) -> Optional[_Val]:
    vals = option_values(name)
    if not vals:
        return None
    if len(vals) == 1:
        v = vals[0]
        return _Val(m.OPTION, v, True, f"{words_root}{name} = {v!r} by default")
    return _Val(m.OPTION, None, False, "")


_OPTION_ROOTS = {"args", "opt", "opts", "option", "options", "cfg", "config", "conf", "configs", "hparams", "hp",
                 "params", "flags", "FLAGS", "settings", "cmd_args", "parsed_args", "arguments", "hyp",
                 "training_args", "model_args", "data_args", "train_cfg", "model_cfg", "run_config", "script_args",
                 "train_args", "trainer_args", "cli_args"}


def value_of(node, depth: int = 0) -> Optional[_Val]:
    """The value *node* holds, when it is a setting, an environment variable or a literal."""
    if depth > MAX_DEPTH or node is None:
        return None
    ok, v = literal(node)
    if ok:
        return _Val("literal", v, True)
    if isinstance(node, nodes.Name):
        is_param, (found, default) = _param_default(node.name, node)
        if is_param and _rebound(node):
            # `names = resolve(self, names)` before `if not names:`: the value a call returns, not the parameter's
            # default, decides it (a rebinding the model can value, or one that keeps the default's reading such as
            # `x = env_default() if x is None else x.lower()`, is read as before)
            bound = _single_assignment(node)
            got = value_of(bound, depth + 1) if bound is not None else None
            if got is not None or bound is None or isinstance(bound, nodes.Call) and not (
                    found and default is None and _keeps_none(bound, node.name)):
                return got
        if is_param:
            # a setting: a parameter with a flag / string / None default (others are data)
            if found and (default is None or isinstance(default, (bool, str))):
                if not params_are_choices():
                    # a parameter named as a key of the configuration the program loads is threaded from it
                    # (`low_resource = cfg.get("low_resource")` -> `init_llm(low_resource=low_resource)`)
                    ok, v = config_value(node.name)
                    if ok and (default is None or type(v) is type(default)):
                        return _Val(m.OPTION, v, True, f"{node.name} = {v!r} in the configuration file the code names")
                return _Val(m.PARAM, default, True, f"{node.name}={default!r} by default")
            if _command_function(node):   # click / typer: the parameter is the declared option
                return _option_name_value(node.name, "")
            if not found and params_are_choices() and _bool_annotated(node.name, node):
                # a library's `flag: bool` without a default: the caller chooses, there is no default path
                return _Val(m.PARAM, None, False, f"{node.name} (a bool the caller passes)")
            return None
        if node.name in _OPTION_ROOTS:
            return _Val(m.OPTION, None, False)
        bound = _single_assignment(node)
        if bound is not None:
            return value_of(bound, depth + 1)
        return None
    if isinstance(node, nodes.Attribute):
        root = node.expr
        if isinstance(root, nodes.Name) and root.name == "self":
            got = _self_attr_value(node, depth)
            if got is not None:
                return got
            got = _option_name_value(node.attrname, "")
            return got
        rootname = _dotted(root).split(".")
        base = _root_of(root)
        if rootname and (rootname[0] in _OPTION_ROOTS or rootname[-1] in _OPTION_ROOTS
                         or (base is not None and _config_bound(base))):
            got = _option_name_value(node.attrname, "")
            return got if got is not None else _Val(m.OPTION, None, False)
        if isinstance(root, nodes.Name):
            is_param, _d = _param_default(root.name, root)
            if is_param:   # cfg.x where cfg is a parameter: an option object
                got = _option_name_value(node.attrname, "")
                if got is not None:
                    return got
            else:
                bound = _single_assignment(root)
                inner = _root_of(bound) if isinstance(bound, nodes.Attribute) else None
                if inner is not None and (inner.name in _OPTION_ROOTS or inner.name == "self"
                                          or _param_default(inner.name, inner)[0]):
                    # `tcfg = config.transformer` then `tcfg.transformer_impl`: a part of the option object
                    got = _option_name_value(node.attrname, "")
                    if got is not None:
                        return got
                return _instance_attr_value(root, node.attrname, depth)
        elif _held_options(root):
            # self.cfg.x where the constructor keeps a parameter (self.cfg = cfg): the same option object
            return _option_name_value(node.attrname, "")
        elif isinstance(root, nodes.Attribute) and isinstance(root.expr, nodes.Name) and root.expr.name == "self":
            return _instance_attr_value(root, node.attrname, depth)
        return None
    if isinstance(node, nodes.Subscript):
        d = _dotted(node.value)
        key = _str(node.slice)
        if d in ("os.environ", "environ"):
            return _Val(m.ENV, None, True, f"${key or '?'} unset")
        root = _root_of(node.value)
        if key and root is not None and (root.name in _OPTION_ROOTS or d.split(".")[-1] in _OPTION_ROOTS
                                         or _config_bound(root)):
            got = _option_name_value(key, "")
            return got if got is not None else _Val(m.OPTION, None, False)
        return None
    if isinstance(node, nodes.Call):
        env = _env_value(node)
        if env is not None:
            return env
        leaf = _leaf(node.func)
        if leaf == "getattr" and len(node.args) >= 2 and _str(node.args[1]):
            name = _str(node.args[1])
            got = _option_name_value(name, "")
            if got is not None:
                return got
            if len(node.args) >= 3:
                ok, v = literal(node.args[2])
                if ok:
                    return _Val(m.OPTION, v, True, f"{name} = {v!r} by default")
            return None
        if leaf == "get" and isinstance(node.func, nodes.Attribute) and node.args and _str(node.args[0]):
            base = _dotted(node.func.expr).split(".")
            if base and (base[0] in _OPTION_ROOTS or base[-1] in _OPTION_ROOTS or base[-1] == "kwargs"):
                name = _str(node.args[0])
                got = _option_name_value(name, "")
                if got is not None:
                    return got
                if len(node.args) >= 2:
                    ok, v = literal(node.args[1])
                    return _Val(m.OPTION, v, ok, f"{name} = {v!r} by default" if ok else "")
                return _Val(m.OPTION, None, True, f"{name} unset")
        if leaf == "lower" or leaf == "upper" or leaf == "strip":
            inner = value_of(node.func.expr, depth + 1) if isinstance(node.func, nodes.Attribute) else None
            if inner is not None and inner.known and isinstance(inner.value, str):
                return _Val(inner.kind, getattr(inner.value, leaf)(), True, inner.words)
            return inner
        return None
    if isinstance(node, nodes.IfExp):
        # the alternative the default picks: `cls = A if opt.ff else B`, `x = env(...) if x is None else x`
        c = build(node.test, depth + 1)
        v = m.evaluate(c, m.TRANSFER) if c is not None else None
        if v is None:
            # a test that cannot be told, between alternatives of one known value
            # (`n = cfg.num_experts if layer % cfg.interval == 0 else 1`, num_experts 1 by default): that value
            a, b = value_of(node.body, depth + 1), value_of(node.orelse, depth + 1)
            if a is not None and b is not None and a.known and b.known and type(a.value) is type(b.value) \
                    and a.value == b.value:
                return _Val(m.OPTION if m.OPTION in (a.kind, b.kind) else a.kind, a.value, True, a.words or b.words)
            return None
        return value_of(node.body if v else node.orelse, depth + 1)
    if isinstance(node, nodes.BoolOp) and node.op == "or" and len(node.values) == 2:
        # `x = args.x or default`
        first = value_of(node.values[0], depth + 1)
        if first is not None and first.known:
            return first if first.value else value_of(node.values[1], depth + 1)
    return None


# methods of a module that hand back the module itself: `gpt = GPT(...).eval()` is still the GPT instance
_SELF_RETURNING = frozenset({"eval", "train", "to", "cuda", "cpu", "npu", "half", "float", "double", "bfloat16",
                             "requires_grad_", "share_memory", "to_empty"})


def _constructor_call(node, depth: int):
    """The ``C(...)`` call an instance expression holds: through a local bound once (``gpt = self.gpt``), an
    attribute the class assigns once (``self.gpt = gpt``, in any method) and module methods that return the
    instance (``GPT(...).eval()``); None when it is a parameter, is bound more than once or is no call."""
    for _hop in range(6):
        if depth > MAX_DEPTH or node is None:
            return None
        if isinstance(node, nodes.Call):
            f = node.func
            if isinstance(f, nodes.Attribute) and f.attrname in _SELF_RETURNING:
                node, depth = f.expr, depth + 1
                continue
            return node if isinstance(f, nodes.Name) else None
        if isinstance(node, nodes.Name):
            if node.name == "self" or _param_default(node.name, node)[0]:
                return None
            node, depth = _single_assignment(node), depth + 1
            continue
        if isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self":
            cls = node.frame()
            while cls is not None and not isinstance(cls, nodes.ClassDef):
                cls = cls.parent.frame() if cls.parent is not None else None
            if cls is None:
                return None
            found = _self_assignments(cls).get(node.attrname)
            if not found or len(found) != 1 or found[0][1] is None:
                return None
            node, depth = found[0][1], depth + 1
            continue
        return None
    return None


def _class_settings(call: nodes.Call) -> Optional[Tuple[str, dict]]:
    """(class name, attribute -> (parameter, position, default known, default)) of the project class *call*
    constructs, from :func:`collect_instance_settings`' table: the class the name is bound to by a ``class``
    statement of the module or by ``from <module> import <Class>`` (a package that re-exports the class from one
    of its modules: the one class of that name under the package)."""
    table = instance_settings()
    if not table:
        return None
    name = call.func
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return None
    if len(defs) != 1:
        return None
    d = defs[0]
    if isinstance(d, nodes.ClassDef):
        q = f"{d.root().name}.{d.name}"
        got = table.get(q)
        return (d.name, got) if got is not None else None
    if not isinstance(d, nodes.ImportFrom):
        return None
    orig = next((n for n, alias in d.names if (alias or n) == name.name), None)
    mod = _absolute_from(d)
    if not orig or orig == "*" or not mod:
        return None
    got = table.get(f"{mod}.{orig}")
    if got is not None:
        return orig, got
    under = [q for q in table if q.startswith(mod + ".") and q.rsplit(".", 1)[-1] == orig]
    return (orig, table[under[0]]) if len(under) == 1 else None


def _instance_attr_value(holder, attr: str, depth: int) -> Optional[_Val]:
    """``inst.flag`` where *holder* (``inst``, ``self.inst``) holds an instance of a project class whose constructor
    keeps a setting parameter (``self.is_vllm = use_vllm``, ``use_vllm=False``): the value the constructing call
    passes for it (valued where the call is made), else the parameter's default."""
    call = _constructor_call(holder, depth + 1)
    if call is None:
        return None
    got = _class_settings(call)
    if got is None:
        return None
    cname, attrs = got
    spec = attrs.get(attr)
    if spec is None:
        return None
    param, pos, known, default = spec
    arg = None
    for kw in call.keywords or ():
        if kw.arg == param:
            arg = kw.value
        elif kw.arg is None:   # **kwargs: the setting may be in it
            return None
    if arg is None and pos is not None:
        if any(isinstance(a, nodes.Starred) for a in call.args):
            return None
        if pos < len(call.args):
            arg = call.args[pos]
    if arg is not None:
        inner = value_of(arg, depth + 1)
        if inner is None:
            return None
        kind = m.OPTION if inner.kind in (m.PARAM, m.OPTION, "literal") else inner.kind
        words = inner.words or (f"{param}={inner.value!r} where {cname}(...) is made" if inner.known else "")
        return _Val(kind, inner.value, inner.known, words)
    if not known:
        return None
    return _Val(m.OPTION, default, True, f"{cname}({param}={default!r}) by default")


def collect_instance_settings(tree: nodes.Module) -> Tuple[Tuple[str, str, str, Optional[int], bool, object], ...]:
    """``(Class, attribute, parameter, position, default known, default)`` for each attribute a module-level class
    sets once, in ``__init__``, to one of the constructor's setting parameters (a flag / string / None default:
    ``self.is_vllm = use_vllm`` with ``use_vllm=False``) and never assigns again: what an instance of the class
    holds, read by :func:`_instance_attr_value` through :func:`analyse.conditions.options.configure` wherever the
    instance is tested (``gpt = self.gpt; if gpt.is_vllm:``). *position* counts the parameters after ``self``."""
    out = []
    for cls in tree.body:
        if not isinstance(cls, nodes.ClassDef):
            continue
        init = next((st for st in cls.body if isinstance(st, nodes.FunctionDef) and st.name == "__init__"), None)
        if init is None and config_class(cls):
            out.extend(_field_settings(cls))
            if len(out) >= 400:
                return tuple(out[:400])
            continue
        if init is None or init.args is None:
            continue
        pos = list(init.args.posonlyargs or []) + list(init.args.args or [])
        names = [a.name for a in pos[1:]]
        for attr, found in sorted(_self_assignments(cls).items()):
            if len(found) != 1 or not found[0][0] or not isinstance(found[0][1], nodes.Name):
                continue
            value = found[0][1]
            if value.frame() is not init:
                continue
            is_param, (ok, default) = _param_default(value.name, value)
            if not is_param or _rebound(value) or (ok and not (default is None or isinstance(default, (bool, str)))):
                continue
            where = names.index(value.name) if value.name in names else None
            out.append((cls.name, attr, value.name, where, ok, default))
            if len(out) >= 400:
                return tuple(out)
    return tuple(out)


def _field_settings(cls: nodes.ClassDef) -> list:
    """The settings of a config class whose constructor is generated from its fields (``@dataclass`` / attrs /
    pydantic, :func:`analyse.conditions.options.config_class`; no ``__init__`` of its own): each field with a flag /
    string / None default as written (``quantization: str = None``), that no method of the class assigns again,
    is a constructor parameter of the same name. *position*: the field's place among the annotated fields of a
    ``@dataclass`` without bases (a base's fields come first), else None (matched by keyword only)."""
    plain = not cls.bases and any(_leaf(d.func if isinstance(d, nodes.Call) else d) == "dataclass"
                                  for d in (cls.decorators.nodes if cls.decorators else ()))
    assigned = _self_assignments(cls)
    out = []
    pos = 0
    for st in cls.body:
        if not (isinstance(st, nodes.AnnAssign) and isinstance(st.target, nodes.AssignName)):
            continue
        name, where = st.target.name, pos
        pos += 1
        if st.value is None or name in assigned:
            continue
        ok, default = field_default(st.value)
        if ok and (default is None or isinstance(default, (bool, str))):
            out.append((cls.name, name, name, where if plain else None, True, default))
    return out


def _held_options(node) -> bool:
    """``self.<attr>`` that the class sets once, in ``__init__``, to one of the constructor's parameters (or to an
    option root): an option object kept on the instance, whose fields read as the project's declared options."""
    if not (isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name == "self"):
        return False
    expr = _self_attr_expr(node)
    if not isinstance(expr, nodes.Name):
        return False
    return expr.name in _OPTION_ROOTS or _param_default(expr.name, expr)[0]


def default_value(node) -> Optional[_Val]:
    """What *node* holds with every choice at its default: :func:`value_of`, or for a test over settings
    (``args.bits == 8`` with ``--bits`` 16 by default) the test's value with the defaults; None when it rests on
    something without a readable default."""
    got = value_of(node)
    if got is not None:
        return got
    try:
        c = build(node)
    except (RecursionError, ValueError, TypeError, AttributeError):
        return None
    if c is None or not all(a.kind in m.CHOICE_KINDS for a in m.atoms(c)):
        return None
    v = m.evaluate(c, m.TRANSFER, defaults=True)
    if v is None:
        return None
    return _Val("test", v, True, "; ".join(dict.fromkeys(a.default for a in m.atoms(c) if a.default)))


_CONFIG_LOADERS = {"safe_load", "load", "full_load", "loads", "load_config", "load_yaml", "read_config",
                   "parse_args", "parse_known_args", "parse_args_into_dataclasses", "fromfile", "from_file",
                   "load_cfg", "get_config", "get_cfg", "merge_from_file", "OmegaConf"}


def _root_of(node) -> Optional[nodes.Name]:
    cur = node
    while isinstance(cur, (nodes.Attribute, nodes.Subscript)):
        cur = cur.expr if isinstance(cur, nodes.Attribute) else cur.value
    return cur if isinstance(cur, nodes.Name) else None


def _config_bound(name: nodes.Name) -> bool:
    """The name holds a loaded configuration (``cfg = yaml.safe_load(fh)``, ``args = parser.parse_args()``)."""
    value = _single_assignment(name)
    if isinstance(value, nodes.Call):
        return _leaf(value.func) in _CONFIG_LOADERS
    return False


def _single_assignment(name: nodes.Name):
    """The value of the one plain assignment of *name* in its scope (None when it has several or another kind)."""
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return None
    vals = []
    for d in defs:
        st = d.parent
        if isinstance(d, nodes.AssignName) and isinstance(st, (nodes.Assign, nodes.AnnAssign)) and st.value is not None:
            if isinstance(st, nodes.Assign) and not all(isinstance(t, nodes.AssignName) for t in st.targets):
                return None
            vals.append(st.value)
        elif isinstance(d, nodes.AssignName) and _parallel_value(d) is not None:
            vals.append(_parallel_value(d))   # `a, b = A(), B()`: a holds A()
        else:
            return None
    return vals[0] if len(vals) == 1 else None


def _parallel_value(d: nodes.AssignName):
    """The element of a tuple / list display that a parallel assignment binds *d* to (``a, b = A(), B()``: ``A()``
    for ``a``); None for any other unpacking (a starred target, a value that is not a display of the same length)."""
    tup = d.parent
    if type(tup) not in (nodes.Tuple, nodes.List):
        return None
    st = tup.parent
    if not isinstance(st, nodes.Assign) or len(st.targets) != 1 or st.targets[0] is not tup \
            or type(st.value) not in (nodes.Tuple, nodes.List):
        return None
    elts, vals = tup.elts, st.value.elts
    if len(elts) != len(vals) or any(isinstance(x, nodes.Starred) for x in list(elts) + list(vals)):
        return None
    return vals[elts.index(d)]


_GLOBALS_MEMO = "_npu_global_names"


def _declared_global(module: nodes.Module) -> frozenset:
    """The names some function of *module* declares ``global`` (it may rebind them), memoised on the module."""
    got = module.__dict__.get(_GLOBALS_MEMO)
    if got is None:
        got = frozenset(n for g in nodes_of(module, nodes.Global) for n in g.names)
        module.__dict__[_GLOBALS_MEMO] = got
    return got


def module_constant(name: nodes.Name) -> Optional[Tuple[bool, object]]:
    """(True, value) when *name* is a module constant as written: bound once, at module level, by a plain
    assignment of a literal (``USE_CUDA_KERNEL = True``), and never declared ``global`` by a function of the
    module (which could rebind it); None otherwise: a name assigned twice (``if len(sys.argv) > 1: X = False``),
    from an expression, or in a function stays a value the analysis cannot see."""
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return None
    if len(defs) != 1:
        return None
    d = defs[0]
    st = d.parent
    if not (isinstance(d, nodes.AssignName) and isinstance(st, (nodes.Assign, nodes.AnnAssign))
            and isinstance(st.parent, nodes.Module) and st.value is not None):
        return None
    if isinstance(st, nodes.Assign) and (len(st.targets) != 1 or st.targets[0] is not d):
        return None
    ok, v = literal(st.value)
    if not ok or name.name in _declared_global(st.parent):
        return None
    return True, v


# --------------------------------------------------------------------------- the try-import flag family

def _try_of(node):
    """(try node, in handler?) when *node* sits in a try body / else or an except handler (same scope)."""
    cur, parent = node, node.parent
    while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef,
                                                         nodes.Module, nodes.Lambda)):
        if isinstance(parent, nodes.ExceptHandler):
            t = parent.parent
            if isinstance(t, nodes.Try) and handler_catches_import(parent):
                return t, True
        if isinstance(parent, nodes.Try) and (cur in parent.body or cur in parent.orelse):
            if any(handler_catches_import(h) for h in parent.handlers):
                return parent, False
        cur, parent = parent, parent.parent
    return None, False


def handler_catches_import(h: nodes.ExceptHandler) -> bool:
    if h.type is None:
        return True
    names = []
    for n in ([h.type] if type(h.type) is not nodes.Tuple else h.type.elts):
        if isinstance(n, nodes.Name):
            names.append(n.name)
        elif isinstance(n, nodes.Attribute):
            names.append(n.attrname)
    return any(x in IMPORT_ERRORS for x in names)


def _imported_lib(trynode) -> Optional[str]:
    for st in trynode.body:
        for n in ([st] if isinstance(st, (nodes.Import, nodes.ImportFrom)) else
                  st.nodes_of_class((nodes.Import, nodes.ImportFrom))):
            if isinstance(n, nodes.Import):
                return n.names[0][0]
            if isinstance(n, nodes.ImportFrom) and n.modname and not n.level:
                return n.modname
        if isinstance(st, nodes.Expr) and isinstance(st.value, nodes.Call) and _leaf(st.value.func) == "import_module":
            s = _str(st.value.args[0]) if st.value.args else None
            if s:
                return s
    return None


def _helper_flag_lib(d) -> Optional[str]:
    """The module an import helper was asked for when *d* binds the flag it hands back beside the module
    (``has_cp`` of ``cp, has_cp = optional_import("cupy")``, the helper one of the project's
    :class:`analyse.resolve.ImportHelper`) or the module itself (None when the import failed: ``ext is not
    None`` tests it the same way), else None."""
    tup = d.parent
    if not isinstance(d, nodes.AssignName) or type(tup) is not nodes.Tuple or not tup.elts:
        return None
    stmt = tup.parent
    if not isinstance(stmt, nodes.Assign) or not isinstance(stmt.value, nodes.Call) or not stmt.value.args \
            or not import_helper_name(_leaf(stmt.value.func)):
        return None
    return _str(stmt.value.args[0])


def _flag_from_bindings(name: nodes.Name, text: str, neg_text: str = "") -> Optional[m.Cond]:
    """``X = True`` in try / ``X = False`` in except; a name bound by a guarded import; a placeholder set
    to None before ``try: import X except ImportError: pass``."""
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return None
    if not defs:
        return None
    if len(defs) == 1:
        lib = _helper_flag_lib(defs[0])
        if lib:
            return importable(lib.split(".")[0] if not lib.startswith("torch.") else lib.split(".")[1], text, neg_text)
    lib = None
    saw_import = False
    for d in defs:
        t, in_handler = _try_of(d)
        if isinstance(d, (nodes.Import, nodes.ImportFrom)):
            if t is None or in_handler:
                return None
            saw_import = True
            lib = lib or (d.names[0][0] if isinstance(d, nodes.Import) else (d.modname or d.names[0][0]))
            continue
        if isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Assign):
            ok, v = literal(d.parent.value)
            if not ok:
                return None
            if t is not None:
                lib = lib or _imported_lib(t)
                if in_handler and v not in (None, False):
                    return None
                if not in_handler and v is not True and not isinstance(v, str):
                    return None
                saw_import = saw_import or not in_handler
            elif v not in (None, False):
                return None
            continue
        return None
    if lib and saw_import:
        return importable(lib.split(".")[0] if not lib.startswith("torch.") else lib.split(".")[1], text, neg_text)
    return None


# --------------------------------------------------------------------------- calls

_HELPER_MEMO = "_npu_cond_summary"


_CUDA_SOURCE = (".cu", ".cuh")


def _cuda_build_or_none(trynode) -> bool:
    """The ``try`` JIT-builds CUDA sources (a ``load(...)`` / ``load_inline(...)`` call naming ``.cu`` files) and
    a handler that does not re-raise binds the result to None."""
    built = False
    for st in trynode.body:
        for call in ([st] if isinstance(st, nodes.Call) else []) + list(st.nodes_of_class(nodes.Call)):
            if _leaf(call.func) in ("load", "load_inline") and any(
                    isinstance(c, nodes.Const) and isinstance(c.value, str) and c.value.endswith(_CUDA_SOURCE)
                    for c in call.nodes_of_class(nodes.Const)):
                built = True
                break
        if built:
            break
    if not built:
        return False
    for h in trynode.handlers:
        if any(isinstance(x, nodes.Raise) for x in h.body):
            continue
        for x in h.body:
            if isinstance(x, nodes.Assign) and isinstance(x.value, nodes.Const) and x.value.value is None:
                return True
    return False


def _self_sets(cls: nodes.ClassDef) -> dict:
    """attribute -> the `self.<attr> = ...` targets anywhere under *cls* (its subtree's pre-order, as a walk of
    the class gives them), kept on the class. Made for every class of the module at once from the module's
    AssignAttr nodes (one climb each through their parents) instead of one walk of each class asked about: a
    walk of a large class cost more than all the module's climbs."""
    root = cls.root()
    tables = {}
    for a in nodes_of(root, nodes.AssignAttr) if isinstance(root, nodes.Module) else nodes_of(cls, nodes.AssignAttr):
        if not (isinstance(a.expr, nodes.Name) and a.expr.name == "self"):
            continue
        p = a.parent
        while p is not None:
            if isinstance(p, nodes.ClassDef):
                t = tables.get(id(p))
                if t is None:
                    t = tables[id(p)] = (p, {})
                t[1].setdefault(a.attrname, []).append(a)
            p = p.parent
    for c in nodes_of(root, nodes.ClassDef) if isinstance(root, nodes.Module) else ():
        if "_npu_self_sets" not in c.__dict__:
            got = tables.get(id(c))
            c.__dict__["_npu_self_sets"] = got[1] if got is not None else {}
    table = cls.__dict__.get("_npu_self_sets")
    if table is None:   # not reached from the module's classes (no module root): this class alone
        got = tables.get(id(cls))
        table = cls.__dict__["_npu_self_sets"] = got[1] if got is not None else {}
    return table


def _branch_flag(node: nodes.Attribute, depth: int) -> Optional[m.Cond]:
    """``self.<flag>`` that the class (or a base class of the same module) sets only to ``True`` / ``False`` in
    the two branches of one ``if T:`` (``if not get_ext(): self.ext_available = False / else: ... = True``):
    the flag holds T's value (negated for the branch that sets False)."""
    cls = node.frame()
    while cls is not None and not isinstance(cls, nodes.ClassDef):
        cls = cls.parent.frame() if cls.parent is not None else None
    if cls is None:
        return None
    classes = cls.__dict__.get("_npu_flag_classes")
    if classes is None:   # the class and its bases of the same module, looked up once per class
        classes, todo = [], [cls]
        while todo and len(classes) < 8:
            c = todo.pop()
            if c in classes:
                continue
            classes.append(c)
            for b in c.bases:
                if isinstance(b, nodes.Name):
                    try:   # only the module's own classes count: a base no scope binds (`object`) needs no lookup
                        defs = own_bindings(b, b.name)
                    except Exception:
                        defs = ()
                    todo.extend(d for d in defs if isinstance(d, nodes.ClassDef) and d.root() is cls.root())
        cls.__dict__["_npu_flag_classes"] = classes
    sets = []
    for c in classes:
        table = c.__dict__.get("_npu_self_sets")
        if table is None:
            table = _self_sets(c)
        sets.extend(table.get(node.attrname, ()))
    if len(sets) != 2:
        return None
    out = []
    for a in sets:
        st = a.parent
        if not (isinstance(st, nodes.Assign) and isinstance(st.value, nodes.Const)
                and isinstance(st.value.value, bool) and isinstance(st.parent, nodes.If)):
            return None
        out.append((st.parent, st in st.parent.body, st.value.value))
    (if1, body1, v1), (if2, body2, v2) = out
    if if1 is not if2 or body1 == body2 or v1 == v2:
        return None
    test = build(if1.test, depth + 1)
    if test is None or not m.known(test):
        return None
    # the flag is True exactly where the branch that sets True runs
    true_in_body = (v1 and body1) or (v2 and body2)
    return test if true_in_body else m.neg(test)


def _helper_summary(fn: nodes.FunctionDef, depth: int) -> Optional[m.Cond]:
    """What an availability helper returns, from its body: the one non-constant return, or a
    try-import that returns True / False."""
    got = fn.__dict__.get(_HELPER_MEMO, _MISSING)
    gen = _generation()
    if got is not _MISSING and got[0] == gen:
        return got[1]
    fn.__dict__[_HELPER_MEMO] = (gen, None)   # recursion guard
    out = None
    rets = [r for r in fn.nodes_of_class(nodes.Return) if r.value is not None]
    if len(fn.body) <= 12 and rets:
        tries = [t for t in fn.body if isinstance(t, nodes.Try)]
        if tries and _cuda_build_or_none(tries[0]):
            # `try: ext = load(name=..., sources=[..., "kernel.cu"]) / except Exception: ext = None ... return ext`:
            # a CUDA JIT build cannot succeed on an Ascend host, so the helper hands back None there
            out = m.Atom(m.CUDA_BUILD, f"{fn.name}()", (False, False), f"not {fn.name}()")
        elif tries and _imported_lib(tries[0]):
            out = importable(_imported_lib(tries[0]).split(".")[0], f"{fn.name}()")
        else:
            conds = [build(r.value, depth + 1) for r in rets if not isinstance(r.value, nodes.Const)]
            conds = [c for c in conds if c is not None and m.known(c)]
            if len(conds) == 1:
                c = conds[0]
                if isinstance(c, m.Atom):
                    c = m.Atom(c.kind, f"{fn.name}()", c.values)
                out = c
    fn.__dict__[_HELPER_MEMO] = (gen, out)
    return out


def _call_cond(call: nodes.Call, depth: int) -> Optional[m.Cond]:
    d = _dotted(call.func)
    leaf = _leaf(call.func)
    parts = d.split(".")
    text = _text(call)
    if leaf in ("is_available", "device_count", "is_initialized", "current_device", "is_built"):
        owner = parts[-2] if len(parts) >= 2 else ""
        if owner in ("cuda", "cudnn", "nccl"):
            return device_atom(m.CUDA, text)
        if owner == "npu":
            return device_atom(m.NPU, text)
        if OTHER_DEVICE_RE.match(owner) or owner in ("xpu", "mps", "mlu", "musa", "hpu"):
            return device_atom(m.OTHER_DEVICE, text)
        if owner == "distributed" or owner == "dist":
            return None
    if leaf in ("find_spec", "find_loader", "get_loader") and call.args and _str(call.args[0]):
        return importable(_str(call.args[0]).split(".")[0], text)
    if leaf in ("_is_package_available", "is_package_available", "package_available", "_is_package_installed",
                "is_module_available", "module_available", "_module_available", "RequirementCache") and call.args \
            and _str(call.args[0]):
        return importable(_str(call.args[0]).split(".")[0], text)
    if leaf == "hasattr" and len(call.args) >= 2:
        owner = _dotted(call.args[0])
        attr = _str(call.args[1]) or ""
        if owner in ("torch", "torch.backends") and attr in ("xpu", "mps", "mlu", "musa", "hpu"):
            return device_atom(m.OTHER_DEVICE, text)
        if owner == "torch" and attr == "npu":
            return device_atom(m.NPU, text)
        q = _imported_qualname(call.args[0])
        if q and (q == "torch" or q.startswith("torch.")) and attr and torch_has(f"{q}.{attr}"):
            # `hasattr(F, "scaled_dot_product_attention")`: in the target torch version's API list, so true
            return m.Atom(m.VERSION, text, (True, True), f"not {text}")
        return m.Atom(m.VERSION, text)
    env = _env_value(call)
    if env is not None:
        return _truth_atom(env, call)
    # availability helpers: summarised from their bodies when defined in this module
    if isinstance(call.func, nodes.Name):
        try:
            defs = own_bindings(call.func, call.func.name)
        except Exception:
            defs = ()
        if len(defs) == 1 and isinstance(defs[0], nodes.FunctionDef) and depth < MAX_DEPTH:
            got = _helper_summary(defs[0], depth)
            if got is not None:
                if isinstance(got, m.Atom):
                    return m.Atom(got.kind, text, got.values)
                return got
    mm = _AVAIL_FN.match(leaf)
    if mm:
        return importable(mm.group(1), text)
    if _SETTING_FN.match(leaf) and not _torch_state(call.func):
        # `is_deepspeed_zero3_enabled()` / `is_fsdp_enabled()`: a setting the user turns on (a launcher or config
        # file), read like an unset environment variable: off by default (torch's own `is_*_enabled()` report a
        # run-time state such as grad mode instead, and stay unknown)
        return _truth_atom(_Val(m.OPTION, False, True, f"{leaf}() off unless configured"), call)
    if d in ("platform.system", "platform.machine", "platform.platform"):
        return m.Atom(m.PLATFORM, text)
    return None


def _torch_state(func) -> bool:
    """*func* (a called name or attribute chain) is torch's own: ``torch.is_grad_enabled``, ``from torch import
    is_autocast_enabled``."""
    if _dotted(func).split(".")[0] == "torch":
        return True
    return _imported_qualname(func).split(".")[0] == "torch"


def _imported_qualname(node, depth: int = 0) -> str:
    """The module path a Name / Attribute chain names through the module's imports (``F`` after
    ``from torch.nn import functional as F`` -> ``torch.nn.functional``); "" when it is not an import."""
    if depth > 8:
        return ""
    if isinstance(node, nodes.Attribute):
        base = _imported_qualname(node.expr, depth + 1)
        return f"{base}.{node.attrname}" if base else ""
    if not isinstance(node, nodes.Name):
        return ""
    try:
        defs = own_bindings(node, node.name)
    except Exception:
        return ""
    if len(defs) != 1:
        return ""
    d = defs[0]
    if isinstance(d, nodes.Import):
        for mod, alias in d.names:
            if (alias or mod.split(".")[0]) == node.name:
                return mod if alias else mod.split(".")[0]
    if isinstance(d, nodes.ImportFrom) and d.modname and not d.level:
        for name, alias in d.names:
            if (alias or name) == node.name:
                return f"{d.modname}.{name}"
    return ""


_PROBE_LEAVES = ("is_available", "device_count", "is_built", "is_initialized", "is_bf16_supported")


def other_accelerator_probe(api: str) -> bool:
    """``torch.xpu.is_available`` / ``torch.backends.mps.is_available`` / ``torch.mps.device_count``: a probe
    of another accelerator, a condition that is false on an NPU host."""
    parts = api.split(".")
    if len(parts) < 3 or parts[0] != "torch" or parts[-1] not in _PROBE_LEAVES:
        return False
    owner = parts[-2]
    return bool(OTHER_DEVICE_RE.match(owner)) or owner in ("xpu", "mps", "mlu", "musa", "hpu")


def _truth_atom(val: _Val, node, neg_text: str = "") -> m.Atom:
    kind = val.kind if val.kind in m.CHOICE_KINDS else m.OPTION
    return _choice_atom(kind, _text(node), val.value, val.known, neg_text, val.words)


# --------------------------------------------------------------------------- comparisons

_NEG_OP = {"==": "!=", "!=": "==", "is": "is not", "is not": "is", "in": "not in", "not in": "in",
           "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def _compare(op: str, a, b):
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "is":
        return a is b if (a is None or b is None or isinstance(a, bool)) else a == b
    if op == "is not":
        return not _compare("is", a, b)
    if op == "in":
        return a in b
    if op == "not in":
        return a not in b
    return {"<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[op]()


_BACKEND_MEMBERS = {"NCCL": "nccl", "GLOO": "gloo", "HCCL": "hccl", "MPI": "mpi"}


def _device_type_of_string(node) -> Optional[str]:
    """The string of ``torch.device("cuda").type``: the device type a literal names (``th.device`` too)."""
    if isinstance(node, nodes.Attribute) and node.attrname == "type" and isinstance(node.expr, nodes.Call) \
            and _leaf(node.expr.func) == "device" and len(node.expr.args) == 1 and not node.expr.keywords \
            and isinstance(node.expr.args[0], nodes.Const) and isinstance(node.expr.args[0].value, str):
        return node.expr.args[0].value.split(":")[0]
    return None


def _device_strings(node):
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return [node.value]
    lit = _device_type_of_string(node)
    if lit is not None:
        return [lit]
    if isinstance(node, nodes.Attribute) and node.attrname in _BACKEND_MEMBERS \
            and _dotted(node.expr).split(".")[-1] == "Backend":
        return [_BACKEND_MEMBERS[node.attrname]]   # `dist.Backend.NCCL` is the string "nccl"
    if type(node) in (nodes.Tuple, nodes.List, nodes.Set):
        return [e.value for e in node.elts if isinstance(e, nodes.Const) and isinstance(e.value, str)]
    return []


def _device_kind(word: str) -> Optional[str]:
    w = word.split(":")[0].lower()
    if w in ("cuda", "gpu", "nccl"):
        return "cuda"
    if w in ("npu", "hccl"):
        return m.NPU
    if w in ("cpu", "gloo", "meta"):
        return "cpu"
    if OTHER_DEVICE_RE.match(w):
        return m.OTHER_DEVICE
    return None


def _is_device_expr(node) -> Optional[str]:
    """'type' for ``x.device.type`` / ``device_type`` style strings, 'device' for a device value."""
    d = _dotted(node) if isinstance(node, (nodes.Name, nodes.Attribute, nodes.Call)) else ""
    if d.endswith(".type") or d.endswith("device_type") or d in ("device_type", "accelerator"):
        return "type"
    if "device" in d.lower() or d.endswith(("dev", ".dev")):
        return "device"
    if isinstance(node, nodes.Call) and _leaf(node.func) == "str" and node.args:
        return _is_device_expr(node.args[0]) or "device"
    return None


def _compare_cond(test: nodes.Compare, depth: int) -> Optional[m.Cond]:
    if len(test.ops) != 1:
        return None
    op, right = test.ops[0]
    left = test.left
    text = _text(test)
    neg_text = f"{_text(left)} {_NEG_OP[op]} {_text(right)}" if op in _NEG_OP else ""
    # device strings: x.device.type == "cuda", "cuda" in str(device), device != "cpu", and membership in a set of
    # device types (`device.type in ("cuda", "npu", "xpu")`: true on an NPU host), valued per scenario
    for side, other in ((right, left), (left, right)):
        words = _device_strings(side)
        kinds = {_device_kind(w) for w in words}
        if not words or None in kinds or op not in ("==", "!=", "in", "not in", "is", "is not"):
            continue
        if side is left and op in ("in", "not in") and type(right) in (nodes.Tuple, nodes.List, nodes.Set):
            continue
        if len(kinds) > 1 and not (side is right and op in ("in", "not in")
                                   and type(side) in (nodes.Tuple, nodes.List, nodes.Set)):
            break
        positive = op in ("==", "in", "is")
        pos_text, pos_neg = (text, neg_text) if positive else (neg_text, text)
        setting = False   # the other side is a device setting (its default / the device the program picks)
        if "cuda" in kinds:
            how = _is_device_expr(other)
            if how is None and not (side is left and op in ("in", "not in")):
                how = "type" if isinstance(other, (nodes.Attribute, nodes.Name, nodes.Call)) else None
            if how is None:
                break
            # x.device.type == "cuda" / "cuda" in str(x.device): a tensor's device reads "npu" on an NPU;
            # a device setting (`device = "cuda"`, args.device) keeps the user's string: its default, or the
            # CUDA device the program picks when one is available (transfer_to_npu: the NPU)
            dd = _dotted(other) if isinstance(other, (nodes.Name, nodes.Attribute)) else ""
            if isinstance(other, (nodes.Name, nodes.Attribute)) and not dd.endswith(".type") \
                    and not dd.endswith("device_type") or dd == "device_type":
                val = value_of(other, depth + 1)
                if val is not None and val.known and isinstance(val.value, str):
                    try:
                        res = _compare(op, val.value, side_val(side)) if side is right else \
                            _compare(op, side_val(side), val.value)
                    except TypeError:
                        res = None
                    if res is not None:
                        kind = val.kind if val.kind in m.CHOICE_KINDS else m.OPTION
                        return _choice_atom(kind, text, res, True, neg_text, val.words)
                setting = not dd.endswith(".type")
        if len(kinds) == 1:
            k = next(iter(kinds))
            if k == "cuda":
                atom = device_atom(m.CUDA if setting else m.CUDA_TYPE, pos_text, pos_neg)
            elif k in (m.NPU, m.OTHER_DEVICE):
                atom = device_atom(k, pos_text, pos_neg)
            else:   # cpu: not an accelerator; with transfer_to_npu the program picked the (CUDA ->) NPU device
                atom = m.Atom(m.CUDA, pos_text, (False, True), pos_neg)
            return atom if positive else m.neg(atom)
        # membership in a set of device types: true when any member is the device the NPU host has
        per = {"cuda": (True, False) if setting else (False, False), m.NPU: (True, True),
               m.OTHER_DEVICE: (False, False), "cpu": (False, True)}
        vals = tuple(any(per[k][i] for k in kinds) for i in (0, 1))
        kind = m.NPU if m.NPU in kinds else (m.CUDA if vals != (False, False) else m.CUDA_TYPE) if "cuda" in kinds \
            else m.CUDA if "cpu" in kinds else m.OTHER_DEVICE
        atom = m.Atom(kind, pos_text, vals, pos_neg)
        return atom if positive else m.neg(atom)
    # device_count() > 0
    if isinstance(left, nodes.Call) and _leaf(left.func) == "device_count":
        base = _call_cond(left, depth)
        ok, n = literal(right)
        if isinstance(base, m.Atom) and ok and isinstance(n, int):
            try:
                v_t, v_n = (_compare(op, 1 if base.values[0] else 0, n), _compare(op, 1 if base.values[1] else 0, n))
            except TypeError:
                return None
            if op in (">", ">=") and n >= 1 and not (op == ">=" and n == 1):
                return m.Atom(m.UNKNOWN if base.kind == m.CUDA else base.kind, text, (None if base.values[0] else False,
                                                                                      None if base.values[1] else False),
                              neg_text)   # several devices: the host's choice
            return m.Atom(base.kind, text, (v_t, v_n), neg_text)
        return None
    # X is None / X is not None
    none_side = right if isinstance(right, nodes.Const) and right.value is None else \
        left if isinstance(left, nodes.Const) and left.value is None else None
    if none_side is not None and op in ("is", "is not", "==", "!="):
        other = left if none_side is right else right
        positive = op in ("is not", "!=")
        inner = None
        if isinstance(other, nodes.Name):
            inner = _flag_from_bindings(other, text if positive else neg_text, neg_text if positive else text)
        if inner is None and isinstance(other, nodes.Call):
            inner = _call_cond(other, depth)
            if isinstance(inner, m.Atom) and inner.kind == m.IMPORTABLE:
                inner = m.Atom(inner.kind, text if positive else neg_text, inner.values, neg_text if positive else text)
        if inner is None and isinstance(other, nodes.Attribute) and \
                _dotted(other) in ("torch.version.cuda", "torch.version.hip", "torch.version.xpu"):
            # `torch.version.hip is not None`: the build's toolkit version, None on an Ascend host's torch build
            inner = build(other, depth + 1)
            if isinstance(inner, m.Atom):
                inner = m.Atom(inner.kind, text if positive else neg_text, inner.values, neg_text if positive else text)
        if inner is not None and m.known(inner):
            return inner if positive else m.neg(inner)
    # versions and platforms
    d_left = _dotted(left) if isinstance(left, (nodes.Name, nodes.Attribute, nodes.Call)) else ""
    if d_left in ("sys.platform", "os.name", "platform.system", "platform.machine") or \
            (isinstance(right, (nodes.Name, nodes.Attribute, nodes.Call)) and
             _dotted(right) in ("sys.platform", "os.name", "platform.system")):
        words = _device_strings(right) or _device_strings(left)
        host = {"sys.platform": "linux", "os.name": "posix", "platform.system": "Linux"}.get(d_left)
        if words and host is not None:
            try:
                if op in ("in", "not in") and side_is_sub(left, right):
                    v = _compare(op, host, right.value if isinstance(right, nodes.Const) else words)
                elif op in ("==", "!="):
                    v = _compare(op, host, words[0])
                else:
                    v = None
            except TypeError:
                v = None
            if isinstance(left, nodes.Call) and _leaf(left.func) == "startswith":
                v = None
            return m.Atom(m.PLATFORM, text, (v, v), neg_text)
        return m.Atom(m.PLATFORM, text, (None, None), neg_text)
    if d_left.endswith("startswith") and _dotted(getattr(left.func, "expr", left)) == "sys.platform":
        word = _str(left.args[0]) if left.args else None
        v = "linux".startswith(word) if word else None
        return m.Atom(m.PLATFORM, text, (v, v), neg_text)
    if _is_version(test):
        return m.Atom(m.VERSION, text, (None, None), neg_text)
    # a setting compared with a member of a settings enum (`self.fp8_backend == FP8BackendType.TE`): the user's
    # configuration picks it (conditional)
    if op in ("==", "!=", "is", "is not", "in", "not in"):
        for a, b in ((left, right), (right, left)):
            if _enum_member(b) and isinstance(a, (nodes.Attribute, nodes.Name)) and not _dispatch_name(a) \
                    and not isinstance(a, nodes.Const):
                return m.Atom(m.OPTION, text, (None, None), neg_text)
    # an option / env / parameter compared with a literal: computed on the default
    for a, b, flip in ((left, right, False), (right, left, True)):
        ok, lit = literal(b)
        if not ok:
            continue
        val = value_of(a, depth + 1)
        if val is not None and val.kind == "literal" and isinstance(a, nodes.Name) and not _dispatch_name(a):
            # a module constant as written (`impl: Literal["bf16", "fp8"] = "bf16"` at module level, never declared
            # global, tested in a function as `if impl == "bf16":`): the module's default chooses the branch, the
            # same reading as a bare `if USE_X:` (module_constant); a local literal stays a value, not a setting
            const = module_constant(a)
            if const is not None:
                try:
                    res = _compare(op, lit, const[1]) if flip else _compare(op, const[1], lit)
                except (TypeError, KeyError):
                    res = None
                if res is not None:
                    return _choice_atom(m.OPTION, text, res, True, neg_text,
                                        f"{a.name} = {const[1]!r} as the module sets it")
        if val is None or val.kind == "literal":
            continue
        if _dispatch_name(a):
            return None
        kind = val.kind if val.kind in m.CHOICE_KINDS else m.OPTION
        if not val.known:
            return _choice_atom(kind, text, None, False, neg_text)
        try:
            res = _compare(op, lit, val.value) if flip else _compare(op, val.value, lit)
        except (TypeError, KeyError):
            return _choice_atom(kind, text, None, False, neg_text)
        return _choice_atom(kind, text, res, True, neg_text, val.words)
    return None


def _enum_member(node) -> bool:
    """``FP8BackendType.TE`` / ``DistributedType.DEEPSPEED``: a member of a settings enum."""
    return isinstance(node, nodes.Attribute) and isinstance(node.expr, nodes.Name) and node.expr.name[:1].isupper() \
        and not node.expr.name.isupper() and (node.attrname.isupper() or node.attrname[:1].isupper())


def side_val(node):
    lit = _device_type_of_string(node)
    if lit is not None:
        return lit
    ok, v = literal(node)
    return v if ok else None


def side_is_sub(left, right) -> bool:
    return isinstance(right, nodes.Const) and isinstance(right.value, str)


_VERSION_RE = re.compile(r"(^|_)version(_|s?$)|^version|^_?(IS_)?TORCH_(GE|LT|GT|LE|GREATER|LESS|\d)|^_?TORCH\d|"
                         r"LooseVersion|digit_version|check_version|^parse_version$|version_info", re.I)
DISPATCH_NAMES = {"subcommand", "command", "cmd", "mode", "action", "task", "phase", "stage", "split", "job",
                  "run_mode", "operation", "op"}


def _dispatch_name(node) -> bool:
    return _leaf(node).lower() in DISPATCH_NAMES


_VERSION_WRAPPERS = {"digit_version", "parse", "Version", "LooseVersion", "StrictVersion", "parse_version"}
_TORCH_VERSION_NAME = re.compile(r"^_?torch_version$", re.I)


def _unwrap_version(node):
    """``digit_version(x)`` / ``version.parse(x)`` / ``LooseVersion(x)`` -> x (one call deep)."""
    if isinstance(node, nodes.Call) and len(node.args) == 1 and not node.keywords \
            and _leaf(node.func) in _VERSION_WRAPPERS:
        return node.args[0], True
    return node, False


def _version_literal(node) -> Optional[Tuple[Tuple[int, ...], bool]]:
    """((1, 10, 0), padded) for ``digit_version('1.10.0')`` / ``version.parse("1.10")`` / ``(1, 10)``; the bool says
    whether shorter versions are padded with zeros (strings) or the torch version cut to its length (tuples)."""
    inner, wrapped = _unwrap_version(node)
    if isinstance(inner, nodes.Const) and isinstance(inner.value, str) and wrapped:
        nums = re.match(r"^v?(\d+(?:\.\d+)*)", inner.value.strip())
        return (tuple(int(x) for x in nums.group(1).split(".")), True) if nums else None
    if type(inner) is nodes.Tuple and inner.elts and all(isinstance(e, nodes.Const) and type(e.value) is int
                                                              for e in inner.elts):
        return tuple(e.value for e in inner.elts), False
    return None


def _is_torch_version(node) -> bool:
    """``torch.__version__`` / ``TORCH_VERSION`` (a name or a module's attribute), bare or in a version wrapper."""
    inner, _wrapped = _unwrap_version(node)
    if isinstance(inner, (nodes.Name, nodes.Attribute)):
        d = _dotted(inner)
        return d == "torch.__version__" or bool(_TORCH_VERSION_NAME.match(_leaf(inner)))
    return False


def _torch_version_test(test: nodes.Compare) -> Optional[bool]:
    """The value of a test of the torch version against literal versions (``digit_version(TORCH_VERSION) <
    digit_version('1.10.0')``, ``'1.5' <= ... < '1.10'`` chained, ``TORCH_VERSION >= (1, 8)``) on the torch version the
    run resolved; None when the test has another shape or no version was resolved."""
    resolved = _resolved_torch_version()
    if not resolved:
        return None
    m_ = re.match(r"^(\d+(?:\.\d+)*)", resolved)
    if m_ is None:
        return None
    have = tuple(int(x) for x in m_.group(1).split("."))
    operands = [test.left] + [r for _op, r in test.ops]
    result = True
    seen = False
    for i, (op, _r) in enumerate(test.ops):
        if op not in ("<", "<=", ">", ">=", "==", "!="):
            return None
        a, b = operands[i], operands[i + 1]
        if _is_torch_version(a):
            lit, tv_left = _version_literal(b), True
        elif _is_torch_version(b):
            lit, tv_left = _version_literal(a), False
        else:
            return None
        if lit is None:
            return None
        want, padded = lit
        if padded:
            n = max(len(want), len(have))
            mine, want = have + (0,) * (n - len(have)), want + (0,) * (n - len(want))
        else:
            mine = have[:len(want)] + (0,) * max(0, len(want) - len(have))
        seen = True
        result = result and (_compare(op, mine, want) if tv_left else _compare(op, want, mine))
    return result if seen else None


def _is_version(node) -> bool:
    for n in node.nodes_of_class((nodes.Name, nodes.Attribute)):
        name = n.name if isinstance(n, nodes.Name) else n.attrname
        if _VERSION_RE.search(name):
            return True
        if isinstance(n, nodes.Attribute) and n.attrname == "cuda" and _dotted(n) == "torch.version.cuda":
            return True
    return False


# --------------------------------------------------------------------------- entry point

def build(test, depth: int = 0) -> Optional[m.Cond]:
    """The condition *test* expresses (atoms the model does not know become UNKNOWN atoms), or None."""
    if test is None or depth > MAX_DEPTH:
        return None
    if depth == 0:
        got = test.__dict__.get("_npu_cond", _MISSING)
        gen = _generation()
        if got is not _MISSING and got[0] == gen:
            return got[1]
        out = _build(test, depth)
        test.__dict__["_npu_cond"] = (gen, out)
        return out
    return _build(test, depth)


def _build(test, depth: int) -> Optional[m.Cond]:
    if isinstance(test, nodes.UnaryOp) and test.op == "not":
        inner = build(test.operand, depth + 1)
        return None if inner is None else m.neg(inner)
    if isinstance(test, nodes.BoolOp):
        parts = [build(v, depth + 1) for v in test.values]
        parts = [p if p is not None else _unknown(v) for p, v in zip(parts, test.values)]
        return m.And(tuple(parts)) if test.op == "and" else m.Or(tuple(parts))
    if isinstance(test, nodes.NamedExpr):
        return build(test.value, depth + 1)
    if isinstance(test, nodes.Const):
        return m.Const(bool(test.value))
    text = _text(test)
    if isinstance(test, nodes.Compare):
        tv = _torch_version_test(test)
        if tv is not None:
            return m.Atom(m.VERSION, text, (tv, tv), _unknown(test).neg_text)
        got = _compare_cond(test, depth)
        return got if got is not None else _unknown(test)
    if isinstance(test, nodes.Call):
        got = _call_cond(test, depth)
        if got is not None:
            return got
        val = value_of(test, depth)
        if val is not None and val.kind != "literal":
            return _truth_atom(val, test)
        return _unknown(test)
    if isinstance(test, nodes.Attribute):
        if test.attrname in _CUDA_DEVICE_ATTRS:
            return device_atom(m.CUDA, text)
        if test.attrname == "is_npu":
            return device_atom(m.NPU, text)
        if test.attrname == "is_cpu":
            return m.Atom(m.CUDA, text, (False, True))
        if test.attrname in ("is_mps", "is_xpu", "is_xla", "is_mlu", "is_hpu"):
            return device_atom(m.OTHER_DEVICE, text)
        dd = _dotted(test)
        if dd == "torch.version.cuda":
            return device_atom(m.CUDA_BUILD, text)
        if dd in ("torch.version.hip", "torch.version.xpu"):
            return device_atom(m.OTHER_DEVICE, text)
        if dd == "torch.backends.mps" or dd.startswith("torch.xpu") or dd.startswith("torch.mps"):
            return device_atom(m.OTHER_DEVICE, text)
        if _is_version(test):
            return m.Atom(m.VERSION, text)
        val = value_of(test, depth)
        if val is not None and val.kind != "literal":
            return _truth_atom(val, test)
        if isinstance(test.expr, nodes.Name) and test.expr.name == "self" and depth < MAX_DEPTH:
            # `self.flash = hasattr(F, "scaled_dot_product_attention")`, `self.use_cuda = torch.cuda.is_available()`
            expr = _self_attr_expr(test)
            if expr is not None:
                inner = build(expr, depth + 1)
                if inner is not None and m.known(inner):
                    return _renamed(inner, text)
            elif params_are_choices():
                inner = _branch_flag(test, depth)
                if inner is not None:
                    return _renamed(inner, text)
        return _unknown(test)
    if isinstance(test, nodes.Name):
        if test.name in ("__name__", "TYPE_CHECKING"):
            return None
        flag = _flag_from_bindings(test, text)
        if flag is not None:
            return flag
        flag = imported_flag(test, text)
        if flag is not None:
            return flag
        if _is_version(test):
            return m.Atom(m.VERSION, text)
        val = value_of(test, depth)
        if val is not None and val.kind != "literal":
            return _truth_atom(val, test)
        if val is not None and val.known:
            const = module_constant(test)
            if const is not None:
                return _choice_atom(m.OPTION, text, const[1], True, "",
                                    f"{test.name} = {const[1]!r} as the module sets it")
        bound = _single_assignment(test)
        if bound is not None and depth < MAX_DEPTH:
            inner = build(bound, depth + 1)
            if inner is not None and m.known(inner):
                return _renamed(inner, text)
        return _unknown(test)
    if isinstance(test, nodes.Subscript):
        val = value_of(test, depth)
        if val is not None and val.kind != "literal":
            return _truth_atom(val, test)
        return _unknown(test)
    return _unknown(test)


# --------------------------------------------------------------------------- flags other modules import

_FLAG_KINDS = frozenset(m.DEVICE_KINDS + (m.IMPORTABLE, m.VERSION, m.PLATFORM, m.UNKNOWN))


def collect_flags(tree: nodes.Module) -> Tuple[Tuple[str, str, Tuple], ...]:
    """The module's flags that another module may import and test, as plain data: ``(name, kind, (value with
    transfer_to_npu, value without))`` for each name bound once, at module level, by a plain assignment of a device,
    availability, version or platform test (``_SUPPORTS_FLEX = torch.cuda.is_available() and
    torch.cuda.get_device_capability() >= (7, 5)``), never declared ``global``, whose value on an NPU host is known
    in at least one scenario. Read by :func:`imported_flag` through :func:`analyse.conditions.options.configure`."""
    out = []
    glob = _declared_global(tree)
    for st in tree.body:
        if not isinstance(st, (nodes.Assign, nodes.AnnAssign)) or st.value is None:
            continue
        targets = st.targets if isinstance(st, nodes.Assign) else [st.target]
        if len(targets) != 1 or not isinstance(targets[0], nodes.AssignName):
            continue
        name = targets[0].name
        if name in glob or len(tree.locals.get(name, ())) != 1:
            continue
        if isinstance(st.value, (nodes.Const, nodes.Name)) and not isinstance(st.value, nodes.Name):
            continue   # a literal is a module constant (module_constant), not a test
        try:
            c = build(st.value, 1)   # depth 1: nothing is memoised on the node before the options are configured
        except (RecursionError, ValueError, TypeError, AttributeError):
            continue
        if c is None or not any(a.kind != m.UNKNOWN for a in m.atoms(c)) \
                or any(a.kind not in _FLAG_KINDS for a in m.atoms(c)):
            continue
        vals = (m.evaluate(c, m.TRANSFER), m.evaluate(c, m.NO_TRANSFER))
        if vals == (None, None):
            continue
        kinds = [a.kind for a in m.atoms(c) if a.kind != m.UNKNOWN]
        out.append((name, kinds[0], vals))
    return tuple(out)


_CONSTANT_NAME = re.compile(r"^_?[A-Z][A-Z0-9_]*$")


def collect_flag_imports(tree: nodes.Module) -> Tuple[Tuple[str, str], ...]:
    """``(name, "source.module.NAME")`` for each constant-style name (``_SUPPORTS_FLEX``) the module binds only by
    one module-level ``from <module> import NAME``: a flag it may hand on to the modules that import it from
    here (the pipeline follows these to the module that defines the flag)."""
    out = []
    for st in tree.body:
        if not isinstance(st, nodes.ImportFrom):
            continue
        mod = _absolute_from(st)
        if not mod:
            continue
        for n, alias in st.names:
            local = alias or n
            if n != "*" and _CONSTANT_NAME.match(local) and len(tree.locals.get(local, ())) == 1:
                out.append((local, f"{mod}.{n}"))
    return tuple(out)


def _absolute_from(imp: nodes.ImportFrom) -> str:
    """The absolute module name of ``from <module> import ...`` (relative levels resolved against the module)."""
    if not imp.level:
        return imp.modname or ""
    root = imp.root()
    parts = (root.name or "").split(".")
    pkg = parts if getattr(root, "package", False) else parts[:-1]
    if imp.level - 1 > len(pkg):
        return ""
    base = pkg[:len(pkg) - (imp.level - 1)]
    return ".".join(base + ([imp.modname] if imp.modname else []))


def imported_flag(name: nodes.Name, text: str) -> Optional[m.Atom]:
    """The flag *name* holds when it is bound only by ``from <module> import <flag>`` of a flag that module
    defines (:func:`collect_flags`): the defining expression's kind and values, under the importing name."""
    table = module_flags()
    if not table:
        return None
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return None
    if len(defs) != 1 or not isinstance(defs[0], nodes.ImportFrom):
        return None
    imp = defs[0]
    orig = next((n for n, alias in imp.names if (alias or n) == name.name), None)
    mod = _absolute_from(imp)
    got = table.get(f"{mod}.{orig}") if orig and mod else None
    if got is None:
        return None
    kind, vals = got
    return m.Atom(kind, text, tuple(vals))


def _renamed(c: m.Cond, text: str) -> m.Cond:
    """A flag that holds a condition (``has_gpu = torch.cuda.is_available()``) reads as the flag's name."""
    if isinstance(c, m.Atom):
        return m.Atom(c.kind, text, c.values, "", c.default)
    if isinstance(c, m.Not) and isinstance(c.arg, m.Atom):
        a = c.arg
        return m.Atom(a.kind, text, tuple(None if v is None else not v for v in a.values), "", a.default)
    vals = (m.evaluate(c, m.TRANSFER), m.evaluate(c, m.NO_TRANSFER))
    kinds = [a.kind for a in m.atoms(c) if a.kind != m.UNKNOWN]
    return m.Atom(kinds[0] if kinds else m.UNKNOWN, text, vals)


def classify(c: Optional[m.Cond]) -> Optional[Tuple[str, bool, bool]]:
    """(guard kind, negated, about CUDA) of a built condition whose atoms the model knows; None otherwise."""
    if c is None:
        return None
    if isinstance(c, m.Not):
        got = classify(c.arg)
        return None if got is None else (got[0], not got[1], got[2])
    if isinstance(c, m.Atom):
        if c.kind == m.UNKNOWN:
            return None
        return m.GUARD_KIND[c.kind], False, c.kind in (m.CUDA, m.CUDA_TYPE, m.CUDA_BUILD)
    if isinstance(c, (m.And, m.Or)):
        order = ("device-branch", "availability-check", "version-check", "platform-check", "option")
        found = [g for g in (classify(a) for a in c.args) if g is not None]
        if not found:
            return None
        found.sort(key=lambda g: order.index(g[0]))
        return found[0]
    return None
