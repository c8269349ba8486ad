"""Reach: does the code of a finding run when an entry point runs?

From each entry point the walk follows, on the static call graph of
:mod:`analyse.callgraph` (nothing is imported or run):

* calls (resolved names, ``self``/``super()`` dispatch, methods on receivers
  of known type, function references passed as arguments);
* imports: importing a module runs its top level (``<module>``), and its
  parent packages' ``__init__``;
* classes: a class that reached code instantiates or references is *live*:
  all its methods (and those of its project base classes) count as reached,
  since any of them may be called on its instances (``model(x)`` ->
  ``forward``, hooks, callbacks);
* an entry point's roots are the top level of its module and, for console
  scripts and ``--entry FILE:FUNCTION``, the named function;
* dispatch the call graph resolves (:mod:`analyse.callgraph`): containers of
  callables indexed by a known key or handed whole to a CLI, decorator
  registries, ``Registry.build(dict(type=...))``, a registry object's getter
  (``registry.get_model_class(cfg.arch)``, keyed by a literal or by the configuration
  file the looking-up module names) and the method called on the class it returns,
  ``cls(...)`` in classmethods;
  ``importlib.import_module`` over known names and ``sys.path`` edits (evaluated
  for the file, from the root) are imports; the ``_target_`` / ``target``
  entries of the YAML config a program loads by a literal name (and of Hydra's
  default config and its ``defaults`` list, and of Python-literal configs) are
  built by the function that names them; a config named on the command line (Hydra
  ``compose(config_name=args.config)``) builds the targets of the configs the project ships under
  Hydra's search path (the finding's reach ``reason`` names the shipped file);
* a live class's instance methods run; its static and class methods only where
  code names them; a method only the class's own code calls, each time under
  an option, runs through those calls;
* what code only keeps runs where it is used: the references a module-level
  binding's constructor call holds (``spec = Spec(module=Layer)``) where
  reached code reads the binding, those of a return expression where a call
  takes the result (the ``<result>`` nodes; ``callgraph.ModuleSummary.kept_refs``).

Each entry point also says how many calls of the code it reaches cannot be
followed (:meth:`Reach.unresolved`: computed ``getattr``, ``eval``, a container
indexed by a key that cannot be told, a name that does not resolve).

Each finding gets ``reach``:

* ``entry-point``: in an entry point's own top-level code, its named function,
  or a function of the entry file called directly from its top level (``main``);
* ``reachable``: a path exists; ``entry_points`` lists the entry points that
  reach it and ``path`` one shortest chain of qualified names (caller first);
* ``unknown``: the graph cannot tell -- code of a class defined in a module that
  reached code imports but never names (registries, configs, ``eval``-built
  layers, dynamic dispatch), a decorated (possibly registered) function of such
  a module, the target module of a ``getattr(module, name)`` call in reached
  code, and everything those call; also findings outside Python sources
  (kernels, build files) and every finding when there is no entry point;
* ``unreached``: none of the above: no entry point imports or calls it.

Guards travel along calls: when every call (or import) that reaches a
function sits under a guard (``if engine: export_engine(...)``), the function's
unguarded findings inherit that guard (with the call site's ``path`` and
``line``), for every entry point that reaches them.

Callers' arguments: a guard on a flag parameter that is off with the function's
default (``def forward(self, x, use_kernel=False): if use_kernel: ...``) is on
when a reached call passes a value that makes it true (``use_kernel=True``, or
``use_kernel=not use_lma`` whose ``use_lma`` is False by default or by its own
callers, up to four calls up); the guard's condition then names the call chain. Likewise a
string-keyed factory's branch (``if kind == "fused":``) is on when a reached call passes that literal
(``get_encoder("fused")``, by keyword or position).
"""

from __future__ import annotations

import posixpath
import re
from collections import deque
from itertools import chain
from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple, TypedDict

from astroid import nodes

from analyse.callgraph import (K_INST, K_LOOKUP, K_RESULT, K_METHOD, METH_SEP, K_NAME, K_REF, K_SELF, MAIN_FN, MODULE_FN, PSEUDO_FNS, RESULT_MARK,
                               FunctionLocator, ModuleSummary, build_graph)
from analyse.findings import evolve
from analyse.guards import guard_of, tree_memo
from analyse.resolve import dynamic_import
from analyse.syntax import is_main_guard, nodes_of, own_bindings

ENTRY, REACHABLE, UNREACHED, UNKNOWN = "entry-point", "reachable", "unreached", "unknown"
STATUS_RANK = {ENTRY: 0, REACHABLE: 1, UNKNOWN: 2, UNREACHED: 3}
MAX_LISTED_ENTRY_POINTS = 20
_SRC_SUFFIXES = (".py", ".ipynb")   # a notebook: its code cells, a module of their own


# the folder of the src layout, the import root of an installed project's packages
SRC_LAYOUT = "src"


@dataclass
class ScriptGraph:
    """The call graph of a script-mode run (shared by chains and reach)."""

    summaries: List[ModuleSummary]
    cg: object   # analyse.callgraph.CallGraph


# an alternative constructor by convention: a classmethod named ``from_*`` (``from_pretrained``, ``from_config``,
# ``from_single_file``, ``_from_config``) returns an instance of the class it is called on
_ALT_CONSTRUCTOR = re.compile(r"_?from_[a-z0-9_]+")


def script_graph(result) -> ScriptGraph:
    """The graph of the run's module summaries (made per module by the pipeline's workers)."""
    summaries = list(result.summaries)
    return ScriptGraph(summaries, build_graph(summaries))


def imported_modules(summaries: Iterable[ModuleSummary]) -> Set[str]:
    """Modules some project module imports (with their parent packages)."""
    out: Set[str] = set()
    for s in summaries:
        for m in s.imports:
            parts = m.split(".")
            for i in range(1, len(parts) + 1):
                q = ".".join(parts[:i])
                if q != s.modname:
                    out.add(q)
    return out


def _absolute(modname: str, is_package: bool, target: Optional[str], level: Optional[int]) -> str:
    target = target or ""
    if not level:
        return target
    pkg = modname if is_package else modname.rpartition(".")[0]
    parts = pkg.split(".") if pkg else []
    if level > 1:
        parts = parts[: max(0, len(parts) - (level - 1))]
    base = ".".join(parts)
    if target:
        return f"{base}.{target}" if base else target
    return base


def _common_base(lk, targets) -> Optional[str]:
    """The nearest project class every entry of a lookup is or derives from (``register(name, LoraTrainer)`` for
    subclasses of one ``Trainer``), or None when an entry is no project class or they share none."""
    common = None
    first = None
    for t in targets:
        try:
            k, q = lk.canonical(t)
        except RecursionError:
            return None
        if k != "class":
            return None
        chain = [c for c in lk.mro(q) if c in lk.classes]
        if first is None:
            first = chain
        common = set(chain) if common is None else common & set(chain)
        if not common:
            return None
    return next((c for c in first or () if c in common), None)


def _unalias(q: str, aliases: Dict[str, str]) -> str:
    head = q
    while head:
        real = aliases.get(head)
        if real is not None:
            return real + q[len(head):]
        head = head.rpartition(".")[0]
    return q


_PATH_SAME = ("abspath", "realpath", "normpath", "str", "Path", "PurePath", "resolve", "absolute", "expanduser", "fspath")


def sys_path_edit(call: nodes.Call, relpath: str) -> Optional[str]:
    """The folder (relative to the analysed root, "" for the root) that ``sys.path.append(X)`` /
    ``sys.path.insert(i, X)`` puts on the import path, with *X* evaluated for the file at *relpath* run from
    the root (``os.getcwd()`` and relative literals are the root; ``__file__`` is the file). None when the
    call is not such an edit or *X* cannot be told (or leaves the tree)."""
    func = call.func
    if not (isinstance(func, nodes.Attribute) and func.attrname in ("append", "insert")
            and isinstance(func.expr, nodes.Attribute) and func.expr.attrname == "path"
            and isinstance(func.expr.expr, nodes.Name) and func.expr.expr.name == "sys"):
        return None
    args = call.args
    arg = args[0] if func.attrname == "append" and args else args[1] if len(args) > 1 else None
    value = _path_value(arg, relpath, 0)
    if value is None:
        return None
    value = posixpath.normpath(value) if value else ""
    if value in (".", ""):
        return ""
    if value.startswith("../") or value == ".." or value.startswith("/"):
        return None
    return value


def _path_value(node, relpath: str, depth: int) -> Optional[str]:
    if node is None or depth > 8:
        return None
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return None if node.value.startswith("/") else node.value
    if isinstance(node, nodes.Name):
        if node.name == "__file__":
            return relpath
        try:
            defs = own_bindings(node, node.name)
        except Exception:
            return None
        if len(defs) == 1 and isinstance(defs[0], nodes.AssignName):
            parent = defs[0].parent
            if isinstance(parent, nodes.Assign) and defs[0] in parent.targets:
                return _path_value(parent.value, relpath, depth + 1)
        return None
    if isinstance(node, nodes.Attribute) and node.attrname == "parent":
        inner = _path_value(node.expr, relpath, depth + 1)
        return None if inner is None else posixpath.dirname(posixpath.normpath(inner) if inner else "")
    if isinstance(node, nodes.Subscript) and isinstance(node.value, nodes.Attribute) \
            and node.value.attrname == "parents" and isinstance(node.slice, nodes.Const) \
            and isinstance(node.slice.value, int):
        inner = _path_value(node.value.expr, relpath, depth + 1)
        if inner is None:
            return None
        for _ in range(node.slice.value + 1):
            inner = posixpath.dirname(posixpath.normpath(inner) if inner else "")
        return inner
    if isinstance(node, nodes.BinOp) and node.op in ("/", "+"):
        left = _path_value(node.left, relpath, depth + 1)
        right = node.right.value if node.op == "+" and isinstance(node.right, nodes.Const) \
            and isinstance(node.right.value, str) else _path_value(node.right, relpath, depth + 1)
        # a literal added to a folder (`os.path.dirname(os.getcwd()) + "/vim"`) is a relative suffix, whatever its
        # leading slash; on its own an absolute literal leaves the tree
        if left is None or right is None:
            return None
        if node.op == "+":
            joined = left + right
            return joined[1:] if joined.startswith("/") and not left else joined
        return posixpath.join(left, right)
    if isinstance(node, nodes.Call):
        func = node.func
        leaf = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
        if leaf in ("getcwd", "cwd") and not node.args:
            return ""
        if leaf == "dirname" and len(node.args) == 1:
            inner = _path_value(node.args[0], relpath, depth + 1)
            return None if inner is None else posixpath.dirname(posixpath.normpath(inner) if inner else "")
        if leaf == "join" and node.args:
            parts = [_path_value(a, relpath, depth + 1) for a in node.args]
            if any(p is None for p in parts):
                return None
            return posixpath.join(*parts)
        if leaf in _PATH_SAME:
            if node.args:
                return _path_value(node.args[0], relpath, depth + 1)
            if isinstance(func, nodes.Attribute):   # Path(__file__).resolve()
                return _path_value(func.expr, relpath, depth + 1)
    return None


_PYTHONPATH = re.compile(r"""(?:^|[\s;&(])(?:export\s+)?PYTHONPATH=((?:\$\([^)]*\)|"[^"]*"|'[^']*'|[^\s;&|"'])+)""")
_HERE = re.compile(r"""^(?:\$\(\s*dirname\s+["']?\$(?:0|\{?BASH_SOURCE(?:\[0\])?\}?)["']?\s*\)|\$\{?0%/\*\}?)""")
_CWD = re.compile(r"^(?:\$\(\s*pwd\s*\)|\$\{?PWD\}?|`pwd`)")
MAX_LAUNCH_SCRIPTS = 200
MAX_LAUNCH_DEPTH = 6


def launch_path_dirs(root: str) -> List[str]:
    """Folders (relative to *root*, "" for the root) that the project's shell launch scripts put on
    ``PYTHONPATH`` (``PYTHONPATH=. python tools/train.py``, ``export PYTHONPATH=$(pwd)/..:$PYTHONPATH``): each entry
    evaluated for the script's folder (``$(dirname $0)``) and, for the working folder (``$(pwd)``, a relative
    entry), both for the root and for the script's folder; entries that leave the tree or use other variables
    are dropped. Bounded in files and size; nothing is run."""
    import os

    out: List[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        depth = 0 if folder == root else os.path.relpath(folder, root).count(os.sep) + 1
        dirs[:] = [] if depth >= MAX_LAUNCH_DEPTH else sorted(d for d in dirs if not d.startswith(".") and d not in (
            "node_modules", "__pycache__", "venv", "site-packages", "build", "dist"))
        for f in sorted(files):
            if not f.endswith((".sh", ".bash")):
                continue
            seen += 1
            if seen > MAX_LAUNCH_SCRIPTS:
                return out
            path = os.path.join(folder, f)
            try:
                if os.path.getsize(path) > MAX_CONFIG_BYTES:
                    continue
                with open(path, "r", encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            if "PYTHONPATH" not in text:
                continue
            here = posixpath.normpath(os.path.relpath(folder, root).replace(os.sep, "/"))
            here = "" if here == "." else here
            for m in _PYTHONPATH.finditer(text):
                for entry in m.group(1).replace('"', "").replace("'", "").split(":"):
                    for d in _launch_entry(entry.strip(), here):
                        if d not in out:
                            out.append(d)
    return out


def _launch_entry(entry: str, here: str) -> List[str]:
    if not entry or entry.startswith("/"):
        return []
    bases: List[str]
    m = _HERE.match(entry)
    if m:
        bases, rest = [here], entry[m.end():]
    else:
        m = _CWD.match(entry)
        bases, rest = ([""] + ([here] if here else []), entry[m.end():]) if m else ([""] + ([here] if here else []), "/" + entry)
    if "$" in rest or "`" in rest:
        return []
    out = []
    for b in bases:
        d = posixpath.normpath(posixpath.join(b, rest.lstrip("/")) if rest.strip("/") else b or ".")
        if d == ".":
            d = ""
        if d == ".." or d.startswith("../"):
            continue
        out.append(d)
    return out


_CONFIG_SUFFIXES = (".yaml", ".yml")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*\.[A-Za-z_]\w*")
_TARGET_KEYS = ("_target_", "target")
MAX_CONFIG_BYTES = 1_000_000
MAX_CONFIG_FILES = 64


def _hydra_config(fn) -> Optional[str]:
    """``@hydra.main(config_path="conf", config_name="train")``: the default config file it loads
    (``conf/train.yaml``), relative to the file."""
    for d in fn.decorators.nodes if fn.decorators else ():
        if not isinstance(d, nodes.Call) or _func_leaf(d.func) != "main":
            continue
        if not (isinstance(d.func, nodes.Attribute) and _func_leaf(d.func.expr) == "hydra"):
            continue
        kw = {k.arg: k.value.value for k in d.keywords or ()
              if isinstance(k.value, nodes.Const) and isinstance(k.value.value, str)}
        path, name = kw.get("config_path", ""), kw.get("config_name")
        if name:
            name = name if name.endswith(_CONFIG_SUFFIXES) else name + ".yaml"
            return posixpath.join(path, name) if path else name
    return None


def _hydra_call(n: nodes.Call, modname: str, roots: List[Tuple[str, str]], composed: List[Tuple[str, int]]) -> None:
    """Hydra's compose API: ``initialize_config_module("pkg")`` / ``initialize(config_path="conf")`` /
    ``initialize_config_dir(config_dir="conf")`` set where configs are looked up (*roots*), and
    ``compose(config_name=args.config)`` with a name that is no literal loads one of the configs found there
    (*composed*, the function and line)."""
    leaf = _func_leaf(n.func)
    if leaf not in ("initialize_config_module", "initialize", "initialize_config_dir", "compose"):
        return

    def arg(name: str):
        for k in n.keywords or ():
            if k.arg == name:
                return k.value
        return n.args[0] if n.args else None

    if leaf == "compose":
        name = arg("config_name")
        if name is not None and not (isinstance(name, nodes.Const) and isinstance(name.value, str)):
            composed.append((_scope_fn(n, modname), n.lineno or 1))
        return
    kind, key = {"initialize_config_module": ("module", "config_module"), "initialize": ("path", "config_path"),
                 "initialize_config_dir": ("path", "config_dir")}[leaf]
    value = arg(key)
    if isinstance(value, nodes.Const) and isinstance(value.value, str) and value.value and len(value.value) < 300:
        if (kind, value.value) not in roots:
            roots.append((kind, value.value))


def shipped_configs(folder: str) -> List[str]:
    """The YAML files under *folder* (sorted, at most MAX_CONFIG_FILES), relative to it."""
    import os

    out: List[str] = []
    for d, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(x for x in subdirs if not x.startswith("."))
        for f in sorted(files):
            if f.endswith(_CONFIG_SUFFIXES):
                out.append(os.path.relpath(os.path.join(d, f), folder))
                if len(out) >= MAX_CONFIG_FILES:
                    return out
    return out


def config_targets(folder: str, rel: str, root: str) -> List[Tuple[str, str]]:
    """(dotted target, config file) of the ``_target_`` (Hydra) and ``target`` (``instantiate_from_config``)
    entries of the YAML config file *rel* a program loads -- found next to the file (*folder*) or from the root
    (the working folder) -- and of the files its Hydra ``defaults`` list composes. Read with ``yaml.safe_load``,
    bounded in size; a file that cannot be read or parsed gives nothing."""
    import os

    import yaml

    out: List[Tuple[str, str]] = []
    first = None
    for base in (folder, root):
        cand = os.path.normpath(os.path.join(base, rel))
        if os.path.isfile(cand):
            first = cand
            break
    if first is None:
        return out
    todo, seen = [first], set()
    while todo and len(seen) < MAX_CONFIG_FILES:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        try:
            if os.path.getsize(path) > MAX_CONFIG_BYTES:
                continue
            with open(path, "r", encoding="utf-8", errors="replace") as fh:
                data = yaml.safe_load(fh)
        except (OSError, yaml.YAMLError, RecursionError, ValueError):
            continue
        shown = os.path.relpath(path, root).replace(os.sep, "/")
        stack = [data]
        while stack:
            cur = stack.pop()
            if isinstance(cur, dict):
                for k, v in cur.items():
                    if k in _TARGET_KEYS and isinstance(v, str) and _DOTTED.fullmatch(v):
                        out.append((v, shown))
                    elif isinstance(v, (dict, list)):
                        stack.append(v)
            elif isinstance(cur, list):
                stack.extend(x for x in cur if isinstance(x, (dict, list)))
        defaults = data.get("defaults") if isinstance(data, dict) else None
        here = os.path.dirname(path)
        for item in defaults if isinstance(defaults, list) else ():
            group = option = None
            if isinstance(item, str) and item != "_self_":
                group, option = "", item
            elif isinstance(item, dict) and len(item) == 1:
                (group, option), = item.items()
                group = str(group).replace("override ", "").strip().lstrip("/")
                group = group.split("@", 1)[0]
            if not isinstance(option, str) or option in ("_self_", "???", "null"):
                continue
            name = option if option.endswith(_CONFIG_SUFFIXES) else option + ".yaml"
            cand = os.path.normpath(os.path.join(here, group, name))
            if os.path.isfile(cand):
                todo.append(cand)
    return out


def _binding_reads(tree: nodes.Module, modname: str, is_package: bool, gd) -> List[Tuple[str, int, str, object]]:
    """(function, line, qualified name, guard) of the reads of names that may be module-level bindings holding kept
    values: the module's own names bound at module level to a call's value, and names imported with ``from m import
    name``; a name called directly (``name(...)``) is a call, not a read of data. One per function and name."""
    own: Set[str] = set()
    for st in tree.body:
        stmts = [st] if not isinstance(st, (nodes.If, nodes.Try)) or is_main_guard(st) else list(st.get_children())
        for x in stmts:
            if isinstance(x, (nodes.Assign, nodes.AnnAssign)) and isinstance(x.value, nodes.Call):
                tgts = x.targets if isinstance(x, nodes.Assign) else [x.target]
                if len(tgts) == 1 and isinstance(tgts[0], nodes.AssignName):
                    own.add(tgts[0].name)
    imported: Set[str] = set()
    for imp in nodes_of(tree, nodes.ImportFrom):
        for n, alias in imp.names:
            if n != "*":
                imported.add(alias or n)
    names = own | imported
    if not names:
        return []
    out: List[Tuple[str, int, str, object]] = []
    seen: Set[Tuple[str, str]] = set()
    for n in nodes_of(tree, nodes.Name):
        if n.name not in names:
            continue
        parent = n.parent
        if isinstance(parent, nodes.Call) and parent.func is n:
            continue
        try:
            _scope, stmts = n.lookup(n.name)
        except Exception:   # astroid's lookup on an odd tree: no read
            continue
        if len(stmts) != 1:
            continue
        d = stmts[0]
        q = None
        if isinstance(d, nodes.ImportFrom):
            base = _absolute(modname, is_package, d.modname, d.level)
            real = next((orig for orig, alias in d.names if (alias or orig) == n.name), None)
            q = f"{base}.{real}" if base and real else None
        elif isinstance(d, nodes.AssignName) and n.name in own and d.scope() is tree:
            q = f"{modname}.{n.name}"
        if q is None:
            continue
        if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is n \
                and isinstance(parent.scope(), nodes.Module):
            continue   # a module-level alias (`old_spec = spec`): its own readers resolve through the binding
        fn = _scope_fn(n, modname)
        if fn.endswith(MODULE_FN):
            fn = _kept_by(n, modname) or fn
        if (fn, q) in seen:
            continue
        seen.add((fn, q))
        out.append((fn, n.lineno or 1, q, gd(n)))
    return out


def _kept_by(node, modname: str) -> Optional[str]:
    """The module-level binding that keeps *node* (a name handed to a constructor in the binding's value:
    ``spec = ModuleSpec(mlp=moe)`` keeps ``moe``): "<module>.NAME", None elsewhere (as
    :func:`analyse.callgraph._keeper` reads the references the binding keeps)."""
    cur, parent = node, node.parent
    while (isinstance(parent, nodes.Attribute) and parent.expr is cur) \
            or (isinstance(parent, nodes.Subscript) and parent.value is cur):
        cur, parent = parent, parent.parent   # `spec.submodules.mlp` hands on a part of the kept value
    if isinstance(parent, nodes.Keyword):
        parent = parent.parent
    if not isinstance(parent, nodes.Call) or parent.func is cur:
        return None
    func = parent.func
    leaf = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
    if not (leaf[:1].isupper() or leaf in ("partial", "partialmethod")):
        return None   # handed to a function at import time (`model = build(spec)`): used there
    cur, up = parent, parent.parent
    while up is not None and not isinstance(up, (nodes.Assign, nodes.AnnAssign)):
        if up.is_statement or isinstance(up, (nodes.Lambda, nodes.ComprehensionScope)):
            return None
        cur, up = up, up.parent
    if up is None or up.value is not cur:
        return None
    targets = up.targets if isinstance(up, nodes.Assign) else [up.target]
    if len(targets) != 1 or not isinstance(targets[0], nodes.AssignName):
        return None
    holder = up.parent
    while isinstance(holder, (nodes.If, nodes.Try)) and not is_main_guard(holder):
        holder = holder.parent
    return f"{modname}.{targets[0].name}" if isinstance(holder, nodes.Module) else None


def _runpy_target(call: nodes.Call, relpath: str) -> Optional[Tuple[str, bool, bool]]:
    """``runpy.run_path(path, run_name="__main__")`` / ``runpy.run_module("pkg.mod", run_name="__main__")``: (the
    file it runs, relative to the root, or the module's dotted name; True for a path; True when it runs as the
    program, whose main block then runs), None for another call or a target that cannot be told."""
    func = call.func
    leaf = func.attrname if isinstance(func, nodes.Attribute) else func.name if isinstance(func, nodes.Name) else ""
    if leaf not in ("run_path", "run_module") or not call.args:
        return None
    if isinstance(func, nodes.Attribute) and not (isinstance(func.expr, nodes.Name) and func.expr.name == "runpy"):
        return None
    if isinstance(func, nodes.Name):
        defs = func.root().locals.get(leaf, ())
        if not any(isinstance(d, nodes.ImportFrom) and d.modname == "runpy" for d in defs):
            return None
    run_name = next((k.value for k in call.keywords or () if k.arg == "run_name"), None)
    if run_name is None and len(call.args) > 2:
        run_name = call.args[2]
    as_main = isinstance(run_name, nodes.Const) and run_name.value == "__main__"
    if leaf == "run_module":
        a = call.args[0]
        if isinstance(a, nodes.Const) and isinstance(a.value, str) and all(p.isidentifier() for p in a.value.split(".")):
            return a.value, False, as_main
        return None
    # a path is evaluated for the running file (``os.path.join(os.path.dirname(__file__), "train.py")``)
    value = _path_value(call.args[0], relpath, 0)
    if value is None or not value.endswith(".py"):
        return None
    value = posixpath.normpath(value)
    if value.startswith("../") or value.startswith("/"):
        return None
    return value, True, as_main


def _defines_tests(tree: nodes.Module) -> bool:
    """What a test runner collects: a module-level ``test*`` function or a class ``Test*`` / ``*TestCase``."""
    for st in tree.body:
        if isinstance(st, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and st.name.startswith("test"):
            return True
        if isinstance(st, nodes.ClassDef) and (st.name.startswith("Test") or any(
                b.as_string().endswith("TestCase") for b in st.bases)):
            return True
    return False


class _RelativeTo:
    """Enough of a resolver for :func:`analyse.resolve.dynamic_import` to make a relative name absolute."""

    def __init__(self, modname: str, is_package: bool):
        self.modname, self.is_package = modname, is_package

    def absolute_import(self, target: str, level: int) -> str:
        return _absolute(self.modname, self.is_package, target, level)


def _func_leaf(func) -> str:
    if isinstance(func, nodes.Attribute):
        return func.attrname
    if isinstance(func, nodes.Name):
        return func.name
    return ""


def _scope_fn(node, modname: str) -> str:
    """Qualified name of the function whose execution runs *node* (module level -> ``<module>``, the
    top-level ``if __name__ == "__main__":`` block -> ``<main>``)."""
    cur, prev = node.parent, node
    while cur is not None:
        if isinstance(cur, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            return cur.qname()
        if isinstance(cur, nodes.Module):
            if isinstance(prev, nodes.If) and is_main_guard(prev):
                return f"{modname}.{MAIN_FN}"
            break
        cur, prev = cur.parent, cur
    return f"{modname}.{MODULE_FN}"


_PARTS: tuple = (None, 0, set())


def call_lines(summary, project_modules: Iterable[str]) -> Set[int]:
    """Lines of the summary's calls that may lead into project code (the only call sites whose guard
    the reach walk asks for): self/super/typed-receiver calls, and names or references whose first part
    is a part of a project module name (a reference handed to a call, ``dtype=torch.float32``, is
    linked like a called name: one outside the project makes no edge)."""
    global _PARTS
    if _PARTS[0] is not project_modules or _PARTS[1] != len(project_modules):
        parts: Set[str] = set()
        for m in project_modules:
            parts.update(m.split("."))
        _PARTS = (project_modules, len(project_modules), parts)
    parts = _PARTS[2]
    out: Set[int] = set()
    for _caller, line, kind, a, _b in summary.calls:
        if (kind != K_NAME and kind != K_REF) or a.split(".", 1)[0] in parts:
            out.add(line)
    return out


_GuardDict = Optional[Dict[str, object]]   # Guard.to_dict() or None


class ModuleFacts(TypedDict):
    """The shape of :func:`module_facts` (a cached summary's ``reach`` of another shape is a miss)."""
    main_guard: bool
    top_level_code: bool
    trains: bool
    cli: bool
    console_scripts: List[Tuple[str, str]]
    test_functions: bool
    sys_path: List[str]
    configs: List[Tuple[str, int, str]]
    config_dirs: List[Tuple[str, int, str, str]]
    targets: List[Tuple[str, int, str]]
    imports: List[Tuple[str, int, Tuple[str, ...], bool, _GuardDict]]
    decorated: List[str]
    plain_decorated: List[str]   # decorated only by wrappers that register nothing
    served: List[str]   # functions the module's web application serves (routes, startup handlers)
    getattr: List[Tuple[str, str]]
    # runpy: (function that runs it, line, the file (relative to the root) or module it runs, run as __main__?, guard)
    runs: List[Tuple[str, int, str, bool, bool, _GuardDict]]
    # reads of names that may be module-level bindings holding kept values (callgraph.ModuleSummary.kept_refs):
    # (function that reads it, line, the name's qualified name where it is bound, guard); one per function and name
    reads: List[Tuple[str, int, str, _GuardDict]]
    call_guards: Dict[int, List[Tuple[str, _GuardDict]]]
    # callers' arguments: line -> [(called name, ((keyword, flag value), ...))]; function -> {flag parameter: default}
    # (a flag value is a nested tuple that :meth:`Reach._evaluate` reads defensively)
    flag_args: Dict[int, List[Tuple[str, Tuple[Tuple[str, tuple], ...]]]]
    flag_params: Dict[str, Dict[str, Optional[bool]]]
    # string-keyed factories: line -> [(called name, ((keyword or position, string literal), ...))];
    # function -> {parameter: position}
    str_args: Dict[int, List[Tuple[str, Tuple[Tuple[str, str], ...]]]]
    param_pos: Dict[str, Dict[str, int]]
    class_defaults: Dict[int, str]   # line -> the class whose body gives a class attribute (or a base) there


def module_facts(tree: nodes.Module, modname: str, relpath: str, is_package: bool,
                 lines: Optional[Set[int]] = None, guards: bool = True) -> dict:
    """What entry points and reach need from one module's tree (picklable; made in the pipeline's
    per-module step, so the main process never parses again):

    * ``main_guard``, ``top_level_code``, ``trains`` and ``cli`` (entry-point roles), ``console_scripts``
      (``setup.py`` only);
    * ``imports``: (function that runs it, line, absolute targets, plain absolute import?, guard);
    * ``decorated``: top-level decorated functions and classes; ``served``: the top-level functions decorated by
      the module's web application (``app = FastAPI()``; ``@app.post(...)``), which the server calls;
    * ``getattr``: (function, module-level name) for ``getattr(name, <computed>)``;
    * ``call_guards``: line -> [(called name, guard)] for the lines with a guarded call (only the
      lines in *lines* when given).

    *guards* False (a project without an entry point: no reach walk reads them) leaves every guard None.
    """
    from analyse.entrypoints import (has_main_guard, has_top_level_code, parses_command_line, setup_py_scripts,
                                     trains_models, web_app_names)

    memo = tree_memo(tree)
    here = _RelativeTo(modname, is_package)
    sys_path: List[str] = []
    configs: List[Tuple[str, int, str]] = []
    hydra_roots: List[Tuple[str, str]] = []    # ("module", package) / ("path", folder) Hydra's search path starts at
    composed: List[Tuple[str, int]] = []       # compose(config_name=<a value the command line gives>)
    literal_targets: List[Tuple[str, int, str]] = []
    imports = []
    decorated = []
    plain_decorated = []   # decorated only by wrappers that register nothing (a cache, a property, no_grad)
    dyn = []
    runs: list = []
    calls: Dict[int, list] = {}
    flag_args: Dict[int, list] = {}
    flag_params: Dict[str, dict] = {}
    str_args: Dict[int, list] = {}
    param_pos: Dict[str, Dict[str, int]] = {}
    class_defaults: Dict[int, str] = {}

    def gd(n):
        if not guards:
            return None
        g = guard_of(n, memo)
        return g.to_dict() if g is not None else None

    for n in nodes_of(tree, nodes.Import, nodes.ImportFrom, nodes.Call, nodes.FunctionDef, nodes.AsyncFunctionDef,
                      nodes.ClassDef, nodes.Dict):
        if isinstance(n, nodes.Dict):
            for k, v in n.items:
                if isinstance(k, nodes.Const) and k.value in _TARGET_KEYS and isinstance(v, nodes.Const) \
                        and isinstance(v.value, str) and _DOTTED.fullmatch(v.value):
                    literal_targets.append((_scope_fn(n, modname), n.lineno or 1, v.value))
        elif isinstance(n, nodes.Import):
            imports.append((_scope_fn(n, modname), n.lineno or 1, tuple(m for m, _as in n.names), True, gd(n)))
        elif isinstance(n, nodes.ImportFrom):
            base = _absolute(modname, is_package, n.modname, n.level)
            targets = (base,) + tuple(f"{base}.{m}" for m, _as in n.names if m != "*")
            imports.append((_scope_fn(n, modname), n.lineno or 1, targets, not n.level, gd(n)))
        elif isinstance(n, nodes.Call):
            for a in list(n.args) + [k.value for k in n.keywords or ()]:
                if isinstance(a, nodes.Const) and isinstance(a.value, str) and a.value.endswith(_CONFIG_SUFFIXES) \
                        and len(a.value) < 300:
                    configs.append((_scope_fn(n, modname), n.lineno or 1, a.value))
            _hydra_call(n, modname, hydra_roots, composed)
            added = sys_path_edit(n, relpath)
            if added is not None and added not in sys_path:
                sys_path.append(added)
            target = dynamic_import(n, here)
            if target:
                # importlib.import_module("pkg.mod") over a known name: an import
                imports.append((_scope_fn(n, modname), n.lineno or 1, (target,), True, gd(n)))
            if lines is None or n.lineno in lines:
                calls.setdefault(n.lineno or 1, []).append((_func_leaf(n.func), gd(n)))
            kws = _flag_keywords(n)
            if kws:
                flag_args.setdefault(n.lineno or 1, []).append((_func_leaf(n.func), kws))
            lits = _string_arguments(n)
            if lits:
                str_args.setdefault(n.lineno or 1, []).append((_func_leaf(n.func), lits))
            ran = _runpy_target(n, relpath)
            if ran is not None:
                runs.append((_scope_fn(n, modname), n.lineno or 1, ran[0], ran[1], ran[2], gd(n)))
            if (isinstance(n.func, nodes.Name) and n.func.name == "getattr" and len(n.args) >= 2
                    and isinstance(n.args[0], nodes.Name) and not isinstance(n.args[1], nodes.Const)):
                dyn.append((_scope_fn(n, modname), n.args[0].name))
        if isinstance(n, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            fp = _flag_params(n)
            if fp:
                flag_params[n.qname()] = fp
            pp = _param_positions(n)
            if pp:
                param_pos[n.qname()] = pp
        if isinstance(n, nodes.ClassDef):
            # a base class (`class MaxPool3d(nn.MaxPool3d):`) runs in the instances of the class, like a default
            for b in n.bases:
                for ln in range(b.lineno or 0, (b.end_lineno or b.lineno or 0) + 1):
                    class_defaults.setdefault(ln, n.qname())
            for stmt in n.body:
                # a class attribute (a constant default, or a value such as a compiled function the methods call)
                # is used by the instances
                if isinstance(stmt, (nodes.Assign, nodes.AnnAssign)) and stmt.value is not None:
                    for ln in range(stmt.lineno or 0, (stmt.end_lineno or stmt.lineno or 0) + 1):
                        class_defaults[ln] = n.qname()
                    v = stmt.value
                    if isinstance(v, nodes.Const) and isinstance(v.value, str) and len(v.value) < 200 \
                            and _DOTTED.fullmatch(v.value):
                        # a config class naming the class that builds it by its path (`builder: ClassVar[str] =
                        # "pkg.models.gpt.GPTModelBuilder"`, imported by name where it is used): its instances
                        # build that class
                        literal_targets.append((n.qname(), stmt.lineno or 1, v.value))
        if isinstance(n, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef)) and n.decorators:
            if isinstance(n.parent, nodes.Module):
                decorated.append(n.qname())
                if all(_decorator_name(d) in _PLAIN_DECORATORS for d in n.decorators.nodes):
                    plain_decorated.append(n.qname())
            hydra = _hydra_config(n)
            if hydra:
                configs.append((n.qname(), n.lineno or 1, hydra))
    reads = _binding_reads(tree, modname, is_package, gd)
    apps = web_app_names(tree)
    served = [st.qname() for st in tree.body if apps and isinstance(st, (nodes.FunctionDef, nodes.AsyncFunctionDef))
              and st.decorators and any(_served_by(d, apps) for d in st.decorators.nodes)]
    name = relpath.rsplit("/", 1)[-1]
    return {
        "served": served,
        "main_guard": has_main_guard(tree),
        "top_level_code": has_top_level_code(tree),
        "trains": trains_models(tree),
        "cli": parses_command_line(tree),
        "console_scripts": setup_py_scripts(tree) if name == "setup.py" else [],
        "test_functions": _defines_tests(tree),
        "sys_path": sys_path,
        "configs": configs,
        "config_dirs": [(c, line, kind, value) for c, line in composed for kind, value in hydra_roots],
        "targets": literal_targets,
        "imports": imports,
        "decorated": decorated,
        "plain_decorated": plain_decorated,
        "getattr": dyn,
        "runs": runs,
        "reads": reads,
        "call_guards": {line: lst for line, lst in calls.items() if any(g is not None for _l, g in lst)},
        "flag_args": flag_args,
        "flag_params": flag_params,
        "str_args": str_args,
        "param_pos": param_pos,
        "class_defaults": class_defaults,
    }


# Callers' arguments (#30 point 4): a guard on a flag parameter (`if use_kernel:` with `use_kernel=False` by default)
# is read with the values the reached callers pass. A keyword argument is kept when its value is a bool / None
# literal, a parameter of the calling function, or not / and / or over those; a function's flag parameters are its
# parameters with a bool / None default. Both are per-module facts: the project-wide reading happens in the reach
# walk, which is made again on every run, so an edit to a caller changes no other module's cached analysis.
_PARAM = "param"


def _flag_value(node, params: Set[str], depth: int = 0):
    if depth > 4:
        return None
    if isinstance(node, nodes.Const) and (node.value is None or isinstance(node.value, bool)):
        return ("lit", node.value)
    if isinstance(node, nodes.Name) and node.name in params:
        return (_PARAM, node.name)
    if isinstance(node, nodes.UnaryOp) and node.op == "not":
        inner = _flag_value(node.operand, params, depth + 1)
        return ("not", inner) if inner is not None else None
    if isinstance(node, nodes.BoolOp) and node.op in ("and", "or"):
        parts = tuple(_flag_value(v, params, depth + 1) for v in node.values)
        return (node.op, parts) if all(p is not None for p in parts) else None
    return None


def _param_names(fn) -> Set[str]:
    a = fn.args
    if a is None:
        return set()
    return {x.name for x in list(a.posonlyargs or []) + list(a.args or []) + list(a.kwonlyargs or [])}


def _flag_keywords(call: nodes.Call) -> Tuple[Tuple[str, tuple], ...]:
    """((keyword, value), ...) for the call's keyword arguments a flag parameter can be read from."""
    if not call.keywords:
        return ()
    scope = call.scope()
    params = _param_names(scope) if isinstance(scope, (nodes.FunctionDef, nodes.AsyncFunctionDef)) else set()
    out = []
    for k in call.keywords:
        if k.arg is None:
            continue
        v = _flag_value(k.value, params)
        if v is not None:
            out.append((k.arg, v))
    return tuple(out)


def _string_arguments(call: nodes.Call) -> Tuple[Tuple[str, str], ...]:
    """((keyword, or the position as a string, string literal), ...) of a call's string-literal arguments
    (``get_encoder("hashgrid", input_dim=3)`` -> (("0", "hashgrid"),))."""
    out = []
    for i, a in enumerate(call.args):
        if isinstance(a, nodes.Const) and isinstance(a.value, str) and len(a.value) < 200:
            out.append((str(i), a.value))
    for k in call.keywords or ():
        if k.arg is not None and isinstance(k.value, nodes.Const) and isinstance(k.value.value, str) \
                and len(k.value.value) < 200:
            out.append((k.arg, k.value.value))
    return tuple(out)


def _param_positions(fn) -> Dict[str, int]:
    """A function's positional parameters -> the position a call passes them at (``self`` / ``cls`` of a method
    not counted)."""
    a = fn.args
    if a is None:
        return {}
    pos = [x.name for x in list(a.posonlyargs or []) + list(a.args or [])]
    if isinstance(fn.parent, nodes.ClassDef) and pos and not _is_staticmethod(fn):
        pos = pos[1:]
    return {name: i for i, name in enumerate(pos)}


def _is_staticmethod(fn) -> bool:
    return any(_func_leaf(d) == "staticmethod" for d in (fn.decorators.nodes if fn.decorators else ()))


def _flag_params(fn) -> Dict[str, object]:
    """The function's parameters with a bool / None default -> the default."""
    a = fn.args
    if a is None:
        return {}
    out: Dict[str, object] = {}
    pos = list(a.posonlyargs or []) + list(a.args or [])
    defaults = list(a.defaults or [])
    pairs = list(zip(pos[len(pos) - len(defaults):], defaults)) + list(zip(a.kwonlyargs or [], a.kw_defaults or []))
    for arg, d in pairs:
        if isinstance(d, nodes.Const) and (d.value is None or isinstance(d.value, bool)):
            out[arg.name] = d.value
    return out


def summary_facts(summary, sources) -> dict:
    """The summary's facts, made from the tree when an older cache entry has none."""
    facts = getattr(summary, "reach", None)
    if facts:
        return facts
    sf = sources.get(summary.relpath)
    tree = getattr(sf, "tree", None) if sf is not None else None
    if tree is None:
        return {}
    facts = module_facts(tree, summary.modname, summary.relpath, summary.is_package)
    summary.reach = facts
    return facts


@dataclass
class _EPReach:
    parent: Dict[str, Tuple[Optional[str], int]] = field(default_factory=dict)
    inherited: Dict[str, dict] = field(default_factory=dict)     # node -> guard reached only under
    unknown: Dict[str, str] = field(default_factory=dict)        # node -> reason
    # unknown nodes whose only seed is a helper class the program never names (not a model a config could build):
    # a guess, which gives the program none of the work another program reaches there
    guessed: Set[str] = field(default_factory=set)
    # unknown nodes whose seeds all come from modules the program imports only under a guard: that guard
    unknown_guard: Dict[str, dict] = field(default_factory=dict)
    roots: Set[str] = field(default_factory=set)
    switched: Dict[str, str] = field(default_factory=dict)      # node -> the caller's argument that turned it on


class Reach:
    """Reach of every node of the graph from each entry point."""

    def __init__(self, sg: ScriptGraph, sources, entry_points: Sequence):
        self.sg = sg
        self.sources = sources
        self.entry_points = list(entry_points)
        self.linker = sg.cg.linker
        self.facts_by_path: Dict[str, dict] = {su.relpath: summary_facts(su, sources) for su in sg.summaries}
        self._guard_cache: Dict[Tuple[str, int], Optional[dict]] = {}
        self.edges: Dict[str, Dict[str, Tuple[int, Optional[dict]]]] = {}
        self.dyn: Dict[str, List[str]] = {}
        # caller -> [(callable, reason)]: entries of a container the caller indexes by a key that cannot be told
        self.maybe: Dict[str, List[Tuple[str, str]]] = {}
        # caller -> [(path, line, expression)]: calls the analysis cannot follow (unresolved edges)
        self.unresolved_at: Dict[str, List[Tuple[str, int, str]]] = {}
        # caller -> {callee: class}: ``self.meth()`` edges into a subclass's override, followed only once that
        # class is live in the program (an instance of it exists: its base's code then runs its override)
        self.needs: Dict[str, Dict[str, str]] = {}
        self._followed: Set[Tuple[str, int]] = set()    # (path, line) of dispatch calls resolved exactly
        self.decorated: Dict[str, List[str]] = {}
        self.served: Dict[str, List[str]] = {}   # module -> its web application's handlers (module_facts "served")
        self.plain_decorated: Set[str] = set()
        self.classes_of: Dict[str, List[str]] = {}
        self.aliases: Dict[str, Dict[str, str]] = {}   # module -> {imported name: project module}
        self.loose: Set[str] = set()                    # modules only reached through such imports
        # caller -> {target: config file}: what a config named on the command line builds, read from the configs the
        # project ships where the program looks them up
        self.shipped: Dict[str, Dict[str, str]] = {}
        # callers' arguments: callee -> [(caller, line, path)]; function -> its flag parameters' defaults;
        # (path, line) -> [(called name, ((keyword, value), ...))]
        self.callers_of: Dict[str, List[Tuple[str, int, str]]] = {}
        self.flag_params: Dict[str, dict] = {}
        self.flag_args: Dict[Tuple[str, int], list] = {}
        self.str_args: Dict[Tuple[str, int], list] = {}
        self.param_pos: Dict[str, Dict[str, int]] = {}
        for relpath, facts in self.facts_by_path.items():
            self.flag_params.update(facts.get("flag_params") or {})
            self.param_pos.update(facts.get("param_pos") or {})
            for line, lst in (facts.get("flag_args") or {}).items():
                self.flag_args[(relpath, line)] = lst
            for line, lst in (facts.get("str_args") or {}).items():
                self.str_args[(relpath, line)] = lst
        self._build()
        self.locator = FunctionLocator(sg.summaries)
        self.per_ep: Dict[str, _EPReach] = {}
        for ep in self.entry_points:
            self.per_ep[ep.id] = self._walk(ep)

    # ------------------------------------------------------------------ callers' arguments
    def switched_on(self, fn: str, g: dict, reached) -> Optional[str]:
        """When *g* (a guard in function *fn*) tests one of *fn*'s flag parameters, is off with the defaults, and
        a call of *fn* from *reached* code passes a value that makes it true: the words that say which call
        (``use_kernel=True at path:line``); None otherwise."""
        if (g.get("on_path") or {}).get("transfer_to_npu") != "off":
            return None
        text = (g.get("condition") or "").strip()
        m = _FLAG_TEST.fullmatch(text)
        if m is None:
            # a combination of tests of one flag parameter (`use_te is None or not use_te`): valued with what each
            # reached call passes
            test = _flag_combination(text)
            params = self.flag_params.get(fn) or {}
            if test is None or len(test[1]) != 1 or not test[1] <= set(params):
                return None
            name = next(iter(test[1]))
            for value, where in self._passed(fn, name, reached, 0):
                if value is not _UNREAD and _value_flag_test(test[0], {name: value}) is True:
                    return f"{name}={value!r} from the call at {where}"
            return None
        want, name = not m.group(1), m.group(2)
        if name not in (self.flag_params.get(fn) or {}):
            return None
        for value, where in self._passed(fn, name, reached, 0):
            if value is not _UNREAD and bool(value) == want:
                return f"{name}={value!r} from the call at {where}"
        return None

    def selected_by_caller(self, fn: str, g: dict, reached) -> Optional[str]:
        """When *g* (a guard in function *fn*) compares one of *fn*'s parameters to a string
        (``if encoding == "hashgrid":`` in a factory), cannot be told by itself, and a call of *fn* from *reached*
        code passes that string (``get_encoder("hashgrid")``): the words that say which call; None otherwise."""
        if (g.get("on_path") or {}).get("transfer_to_npu") != "conditional":
            return None
        m = _STR_TEST.fullmatch((g.get("condition") or "").strip())
        if m is None:
            return None
        name, lit = m.group(1), m.group(2) if m.group(2) is not None else m.group(3)
        pos = (self.param_pos.get(fn) or {}).get(name)
        if pos is None:
            return None
        leaf = fn.rsplit(".", 1)[-1]
        for caller, line, relpath in self.callers_of.get(fn, ()):
            if caller not in reached:
                continue
            for called, args in self.str_args.get((relpath, line), ()):
                if called != leaf:
                    continue
                for key, value in args:
                    if (key == name or key == str(pos)) and value == lit:
                        return f"{name}={lit!r} from the call at {relpath}:{line}"
        return None

    def _passed(self, fn: str, name: str, reached, depth: int) -> List[Tuple[object, str]]:
        """(value, where) for each reached call of *fn* that passes parameter *name* by keyword; *where* is the
        call site, followed by the call sites up the chain the value came from (``a.py:3 <- b.py:9``)."""
        out: List[Tuple[object, str]] = []
        if depth > MAX_SWITCH_DEPTH:
            return out
        seen = set()
        for caller, line, relpath in self.callers_of.get(fn, ()):
            if caller not in reached or (caller, line) in seen:
                continue
            seen.add((caller, line))
            for _leaf, kws in self.flag_args.get((relpath, line), ()):
                for kw, expr in kws:
                    if kw != name:
                        continue
                    for v, origin in self._evaluate(expr, caller, reached, depth):
                        out.append((v, f"{relpath}:{line}" + (f" <- {origin}" if origin else "")))
                        if len(out) >= MAX_SWITCH_VALUES:
                            return out
        return out

    def _evaluate(self, expr, fn: str, reached, depth: int) -> List[Tuple[object, str]]:
        """(value, where it came from or "") for the values *expr* (a flag value of :func:`_flag_keywords`) may take
        in *fn*: a parameter takes its default and what *fn*'s reached callers pass; _UNREAD where it cannot be
        told (and for a value of another shape, as a damaged cache entry could hold)."""
        if type(expr) is not tuple or len(expr) != 2 or type(expr[0]) is not str:
            return [(_UNREAD, "")]
        kind = expr[0]
        if kind == "lit":
            return [(expr[1], "")]
        if kind == _PARAM:
            params = self.flag_params.get(fn) or {}
            if expr[1] not in params:
                return [(_UNREAD, "")]
            out = [(params[expr[1]], "")] + self._passed(fn, expr[1], reached, depth + 1)
            return list(dict.fromkeys(out)) if all(_hashable(v) for v, _w in out) else [(_UNREAD, "")]
        if kind == "not":
            return [(v if v is _UNREAD else (not v), w) for v, w in self._evaluate(expr[1], fn, reached, depth)]
        if kind in ("and", "or") and type(expr[1]) is tuple:
            combos: List[Tuple[object, str]] = [(kind == "and", "")]
            for part in expr[1]:
                vals = self._evaluate(part, fn, reached, depth)
                nxt: List[Tuple[object, str]] = []
                for a, wa in combos:
                    for b, wb in vals:
                        r = _UNREAD if a is _UNREAD or b is _UNREAD else bool((a and b) if kind == "and" else (a or b))
                        item = (r, wa or wb)
                        if item not in nxt:
                            nxt.append(item)
                combos = nxt[:MAX_SWITCH_VALUES]
            return combos
        return [(_UNREAD, "")]

    # ------------------------------------------------------------------ graph
    def _call_guard(self, relpath: str, line: int, leaf: str = "") -> Optional[dict]:
        """Guard of the call (or import) at *line* whose callee's last name is *leaf*.

        Several calls on one line (``test() if opt.test else run()``) are told apart by the called
        name; when none matches, the line is guarded only if all its calls share one guard."""
        key = (relpath, line, leaf)
        if key in self._guard_cache:
            return self._guard_cache[key]
        facts = self.facts_by_path.get(relpath) or {}
        cands = (facts.get("call_guards") or {}).get(line) or ()
        if leaf and len(cands) > 1:
            named = [c for c in cands if c[0] == leaf]
            if named:
                cands = named[:1]
        guards = [g for _leaf, g in cands]
        g = guards[0] if guards and all(x == guards[0] for x in guards) else None
        if g is not None:
            g = dict(g)
            g["path"] = relpath
        self._guard_cache[key] = g
        return g

    def _import_edge(self, caller: str, target_fn: str, line: int, relpath: str, guard: Optional[dict]) -> None:
        out = self.edges.setdefault(caller, {})
        old = out.get(target_fn)
        if old is not None and old[1] is None:
            return
        g = dict(guard, path=relpath) if guard is not None else None
        if old is None or g is None:
            out[target_fn] = (line, g)

    def _edge(self, caller: str, callee: str, line: int, relpath: str, leaf: str = "", bound: Optional[dict] = None) -> None:
        """An edge under the call's guard; *bound*: the guard of the binding that made the called local this callee
        (``if use_fsdp: DP = FSDP``), which the call's own guard, when it has one, takes precedence over."""
        out = self.edges.setdefault(caller, {})
        old = out.get(callee)
        if old is not None and old[1] is None:
            return   # already reached by an unguarded call
        g = self._call_guard(relpath, line, leaf)
        if g is None and bound is not None:
            g = dict(bound, path=relpath)
        if old is None or g is None:
            out[callee] = (line, g)

    def _script_relative(self, modname: str, is_pkg: bool, target: str, path_dirs: Sequence[str] = ()) -> Optional[str]:
        """A module imported by a plain name that is not a project module (``import model`` in
        ``word_language_model/main.py``): Python finds it next to the running script, so try the
        importing file's folder and its parents; then the folders the program puts on ``sys.path``
        (*path_dirs*: this module's own edits first, then every module's)."""
        lk = self.linker
        if not target or target in lk.modules:
            return None
        pkg = modname if is_pkg else modname.rpartition(".")[0]
        parts = pkg.split(".") if pkg else []
        while parts:
            cand = ".".join(parts) + "." + target
            if cand in lk.modules:
                return cand
            parts.pop()
        for d in path_dirs:
            prefix = self._dir_prefix.get(d)
            if prefix is None:
                continue
            cand = f"{prefix}.{target}" if prefix else target
            if cand in lk.modules:
                return cand
        return None

    def _build(self) -> None:
        lk = self.linker
        g = self.sg.cg.graph
        # folder (relative to the root) -> the dotted prefix of the modules in it, for sys.path edits
        self._dir_prefix: Dict[str, str] = {}
        for summ in self.sg.summaries:
            folder = posixpath.dirname(summ.relpath)
            if summ.is_package:
                self._dir_prefix.setdefault(folder, summ.modname)
                # the folder that holds a package is where a path entry finds it (`third/` for `third/lib/`)
                if posixpath.basename(folder) == summ.modname.rpartition(".")[2]:
                    self._dir_prefix.setdefault(posixpath.dirname(folder), summ.modname.rpartition(".")[0])
            else:
                self._dir_prefix.setdefault(folder, summ.modname.rpartition(".")[0])
        self._config_edges()
        every_dir: List[str] = []
        for d in self._launch_dirs():
            if d not in every_dir:
                every_dir.append(d)
        for summ in self.sg.summaries:
            for d in (self.facts_by_path.get(summ.relpath) or {}).get("sys_path") or ():
                if d not in every_dir:
                    every_dir.append(d)
        # the src layout (PyPA's packaging guide): a top-level src/ folder that is no package holds the project's
        # packages, and installing the project (pip install [-e] .) puts that folder on sys.path, so the programs'
        # `import pkg` finds src/pkg; searched last, only for imports no project module answers
        if SRC_LAYOUT in self._dir_prefix and not any(s.relpath == f"{SRC_LAYOUT}/__init__.py" for s in self.sg.summaries) \
                and SRC_LAYOUT not in every_dir:
            every_dir.append(SRC_LAYOUT)
        by_path = {su.relpath: su.modname for su in self.sg.summaries}
        # imports: importing a module runs its top level (and its parent packages')
        for summ in self.sg.summaries:
            facts = self.facts_by_path.get(summ.relpath) or {}
            aliases = self.aliases.setdefault(summ.modname, {})
            for fq in facts.get("decorated") or ():
                self.decorated.setdefault(summ.modname, []).append(fq)
            if facts.get("served"):
                self.served[summ.modname] = list(facts["served"])
            self.plain_decorated.update(facts.get("plain_decorated") or ())
            for caller, line, target, is_path, as_main, guard in facts.get("runs") or ():
                # runpy runs the target's top level, and its main block when it runs as the program
                mod = by_path.get(target) if is_path else target if target in lk.modules else None
                if mod is None or mod == summ.modname:
                    continue
                self._import_edge(caller, f"{mod}.{MODULE_FN}", line, summ.relpath, guard)
                if as_main and f"{mod}.{MAIN_FN}" in lk.functions:
                    self._import_edge(caller, f"{mod}.{MAIN_FN}", line, summ.relpath, guard)
            for caller, name in facts.get("getattr") or ():
                target = summ.bindings.get(name)
                if target in lk.modules or target in lk.classes:
                    self.dyn.setdefault(caller, []).append(target)
            for caller, line, targets, absolute, guard in facts.get("imports") or ():
                for t in targets:
                    # a module found next to the script or through a sys.path entry is imported under its bare
                    # name (`sys.path.append("./scene")` + `import dataset` runs scene/dataset.py as `dataset`):
                    # the packages of the folders above it (scene/__init__.py) are not imported
                    above = 0
                    if absolute and t not in lk.modules:
                        own = list(facts.get("sys_path") or ())
                        real = self._script_relative(summ.modname, summ.is_package, t,
                                                     own + [d for d in every_dir if d not in own])
                        if real is not None:
                            aliases[t] = real
                            self.loose.add(real)
                            above = real.count(".") - t.count(".")
                            t = real
                    parts = t.split(".")
                    for i in range(1 + above, len(parts) + 1):
                        m = ".".join(parts[:i])
                        if m in lk.modules and m != summ.modname:
                            self._import_edge(caller, f"{m}.{MODULE_FN}", line, summ.relpath, guard)
        # a class whose base is imported relative to the script's folder (`from trainer import Trainer`): its
        # methods come from the real module's class, so the method lookup follows the aliased base
        rebased = False
        for s in self.sg.summaries:
            aliases = self.aliases.get(s.modname)
            if not aliases:
                continue
            for q, info in s.classes.items():
                bases = tuple(_unalias(b, aliases) for b in info.bases)
                if bases != tuple(info.bases) and lk.classes.get(q) is info:
                    lk.classes[q] = replace(info, bases=bases)
                    rebased = True
        if rebased:
            lk._mro.clear()
            lk._subclasses = None
        kept: Set[str] = set()
        # methods called on the class's own instance (`self.m()`, `super().m()`) -> the guard of each such call; and
        # what any other call or reference names
        self_calls: Dict[str, List[Optional[dict]]] = {}
        elsewhere: Set[str] = set()
        results: List[Tuple[str, str, int, str, str]] = []
        took: Set[str] = set()
        for s in self.sg.summaries:
            for q, info in s.classes.items():
                self.classes_of.setdefault(s.modname, []).append(q)
            aliases = self.aliases.get(s.modname) or {}
            n_calls = len(s.calls)
            kept_calls = getattr(s, "kept_calls", None) or {}
            alt_guards = getattr(s, "alt_guards", None) or {}
            for i, (caller, line, kind, a, b) in enumerate(chain(s.calls, getattr(s, "kept_refs", None) or ())):
                if i >= n_calls:
                    kept.add(caller)   # a reference a module-level binding or a return expression keeps
                if aliases and kind in (K_NAME, K_REF, K_METHOD, K_INST, K_RESULT):
                    a = _unalias(a, aliases)
                if kind == K_LOOKUP:
                    self._lookup_edges(caller, line, a, b, s.relpath)
                    continue
                try:
                    callees, unknown, _ext = lk.resolve_call(kind, a, b)
                except RecursionError:
                    continue
                leaf = ""
                if kind in (K_NAME, K_METHOD):
                    leaf = (b if kind == K_METHOD else a.rpartition(".")[2])
                elif kind in (K_SELF, "super"):
                    leaf = b.partition("|")[0]
                found = lk.lookup_method(a, leaf) if kind == K_SELF else None
                # `self.mlp(x)` on an attribute of a class the project builds only under guards (`if n > 1:
                # self.mlp = MoE()`): the call runs the class's forward / __call__ on that instance; calling it builds
                # nothing, so the call waits until the class is live and then runs under the guard it was built under
                held = None
                if kind == K_SELF and "|" in b and not found:
                    hk, hq = lk.canonical(b.partition("|")[2])
                    held = hq if hk == "class" and self._built_only_under_guards(hq) else None
                for c in callees:
                    if c and c in g and not (c == caller and kind == K_REF):
                        fresh = c not in self.edges.get(caller, {})
                        self._edge(caller, c, line, s.relpath, leaf, bound=alt_guards.get(i) if i < n_calls else None)
                        if kind in (K_SELF, "super") and i < n_calls:
                            self_calls.setdefault(c, []).append(self._call_guard(s.relpath, line, leaf))
                        else:
                            elsewhere.add(c)
                        if kind != K_REF:
                            self.callers_of.setdefault(c, []).append((caller, line, s.relpath))
                            if i < n_calls:
                                # what the callee hands back goes to the caller, or to the binding / return
                                # expression that keeps the call's value
                                results.append((kept_calls.get(i, caller), f"{c}.{RESULT_MARK}", line, s.relpath, leaf))
                                took.add(c)
                        owner = c.rpartition(".")[0]
                        if kind == K_SELF and c != found and owner != a and owner in lk.classes and a in lk.mro(owner)[1:]:
                            if fresh:
                                self.needs.setdefault(caller, {})[c] = owner
                        elif held is not None and c != caller:
                            if fresh:
                                self.needs.setdefault(caller, {})[c] = held
                        elif caller in self.needs:
                            self.needs[caller].pop(c, None)
                if kind == K_SELF and "|" in b:
                    # `self.block(x, flag=True)` on an attribute of known class: its forward / __call__ gets the
                    # arguments (the class is reached through its own edge below)
                    for c in lk._instance_call(b.partition("|")[2]):
                        if c not in callees:
                            self.callers_of.setdefault(c, []).append((caller, line, s.relpath))
                if kind == K_SELF and not found and not callees:
                    self._attr_edges(caller, line, a, leaf, s.relpath)
                cls = None
                if kind in (K_NAME, K_METHOD, K_INST) or (kind == K_REF and not b):
                    k, q = lk.canonical(a)
                    if k == "class":
                        cls = q
                    elif k == "def" and kind == K_NAME:
                        cls = self._constructed(a, q)
                    elif k == "classattr" and kind == K_NAME:
                        cls = self._external_constructor(q)
                elif kind == K_SELF and "|" in b and held is None:
                    k, q = lk.canonical(b.partition("|")[2])
                    if k == "class":
                        cls = q
                if cls is not None and cls != caller:
                    self._edge(caller, cls, line, s.relpath, leaf, bound=alt_guards.get(i) if i < n_calls else None)
                if unknown and unknown.startswith("dynamic getattr on "):
                    self.dyn.setdefault(caller, []).append(unknown[len("dynamic getattr on "):])
                elif unknown:
                    self.unresolved_at.setdefault(caller, []).append((s.relpath, line, a))
            for caller, line, expr in s.dynamic:
                if (s.relpath, line) not in self._followed:
                    self.unresolved_at.setdefault(caller, []).append((s.relpath, line, expr))
        # what bindings and return expressions keep (callgraph.ModuleSummary.kept_refs): a function's kept result
        # runs where a call takes it (a function no project code calls hands it to whoever calls it: a framework),
        # a module-level binding's value where code reads the binding
        for src, res, line, relpath, leaf in results:
            if res in kept:
                self._edge(src, res, line, relpath, leaf)
        for res in kept:
            fn = res[: -len(RESULT_MARK) - 1] if res.endswith("." + RESULT_MARK) else None
            if fn is not None and fn not in took:
                self.edges.setdefault(fn, {}).setdefault(res, (lk.functions.get(fn, ("", 1))[1], None))
        for summ in self.sg.summaries:
            for reader, line, q, guard in (self.facts_by_path.get(summ.relpath) or {}).get("reads") or ():
                key = self._kept_binding(q, kept)
                if key is not None and key != reader:
                    self._import_edge(reader, key, line, summ.relpath, guard)
        self.kept = kept
        # what kept values name (a module-level spec's classes): named by the project's code, built where the value
        # is used; not a class a registry or a config may build out of sight
        self.kept_named: Set[str] = {c for k in kept for c in self.edges.get(k, ())}
        # live classes: every instance method and project base class (a static or class method runs only where
        # code names it: building an instance does not call it). A private method (``_name``, not a dunder) that
        # project code calls runs through those calls and under their guards: by convention only the class's own
        # code calls it (``if self.fp8 == "te": args = self._prepare_te(*args)``), so its instance is not a way in.
        called = {c for outs in self.edges.values() for c in outs}
        for q, info in lk.classes.items():
            out = self.edges.setdefault(q, {})
            statics = getattr(info, "statics", None) or ()
            for m in sorted(info.methods):
                if m in statics:
                    continue
                fq = f"{q}.{m}"
                if fq in called and m.startswith("_") and not m.endswith("__"):
                    continue
                if not m.startswith("__") and fq not in elsewhere and fq in self_calls \
                        and all(_narrower(g, None) and (g.get("on_path") or {}).get("transfer_to_npu") != "on"
                                for g in self_calls[fq]):
                    # a method only the class's own code calls, each time under an option or a test that keeps it off
                    # the default path (`if config.cuda_graph_impl == "local": self.create_graph_manager(config)`):
                    # it runs through those calls and under their guards, not because an instance exists
                    continue
                if fq in lk.functions:
                    out.setdefault(fq, (info.line, None))
            for base in lk.mro(q)[1:]:
                if base in lk.classes:
                    out.setdefault(base, (info.line, None))
        # nested functions run when their enclosing function runs (closures are called from it or returned)
        for fq, (_path, fa, _fb) in lk.functions.items():
            parent = fq.rpartition(".")[0]
            if parent in lk.functions and not fq.endswith(MODULE_FN):
                self.edges.setdefault(parent, {}).setdefault(fq, (fa, None))

    def _kept_binding(self, q: str, kept: Set[str], depth: int = 0) -> Optional[str]:
        """The module-level binding that keeps values (one of *kept*) which the read name *q* is, through
        re-exports (``from .specs import spec`` in a package ``__init__``); None when it is none."""
        lk = self.linker
        if depth > 8:
            return None
        m = lk.module_prefix(q)
        if m is None:
            return None
        first, _, tail = q[len(m) + 1:].partition(".")
        key = f"{m}.{first}"
        if key in kept:
            return key
        target = lk.modules[m].bindings.get(first)
        if target is None or target == key:
            return None
        return self._kept_binding(target + (f".{tail}" if tail else ""), kept, depth + 1)

    def _launch_dirs(self) -> List[str]:
        """The folders the project's launch scripts put on PYTHONPATH (:func:`launch_path_dirs`), from the root."""
        import os

        for summ in self.sg.summaries:
            sf = self.sources.get(summ.relpath)
            path = str(getattr(sf, "path", "") or "")
            if not path:
                continue
            root = os.path.dirname(path)
            for _ in range(summ.relpath.count("/")):
                root = os.path.dirname(root)
            return launch_path_dirs(root)
        return []

    def _attr_edges(self, caller: str, line: int, cls: str, attr: str, relpath: str) -> None:
        """``self._target(self, ...)`` where ``_target`` is a class attribute holding a project class or function
        (a config class that builds what it names): an edge to what the class (or a live subclass) holds."""
        lk = self.linker
        for held, sub in lk.attr_targets(cls, attr):
            try:
                k, q = lk.canonical(held)
            except RecursionError:
                continue
            if k not in ("def", "class") or q == caller:
                continue
            fresh = q not in self.edges.get(caller, {})
            self._edge(caller, q, line, relpath, attr)
            if sub is not None and fresh:
                self.needs.setdefault(caller, {})[q] = sub
            elif sub is None and caller in self.needs:
                self.needs[caller].pop(q, None)

    def _config_edges(self) -> None:
        """A program that loads a YAML config by a literal name (``OmegaConf.load("configs/model.yaml")``, an
        option's default, ``@hydra.main(config_path=..., config_name=...)``) builds what its ``_target_`` /
        ``target`` entries name (``instantiate`` / ``instantiate_from_config``): an edge from the function that
        names the file to each target in the project (a class is built: live; a function is called)."""
        import os

        lk = self.linker
        for summ in self.sg.summaries:
            facts = self.facts_by_path.get(summ.relpath) or {}
            # a config written as a Python literal: {"target": "pkg.mod.Class", "params": {...}}
            for caller, line, target in facts.get("targets") or ():
                self._target_edge(caller, line, target)
            configs = facts.get("configs") or ()
            if not configs and not facts.get("config_dirs"):
                continue
            sf = self.sources.get(summ.relpath)
            path = str(getattr(sf, "path", "") or "")
            if not path:
                continue
            folder = os.path.dirname(path)
            depth = summ.relpath.count("/")
            root = folder
            for _ in range(depth):
                root = os.path.dirname(root)
            for caller, line, rel in configs:
                for target, _shown in config_targets(folder, rel, root):
                    self._target_edge(caller, line, target)
            # a config named on the command line (Hydra ``compose(config_name=args.config)``): the program builds
            # what the configs the project ships under Hydra's search path name
            for caller, line, kind, value in facts.get("config_dirs") or ():
                where = self._config_dir(kind, value, folder, root)
                if where is None:
                    continue
                for rel in shipped_configs(where):
                    for target, shown in config_targets(where, rel, root):
                        q = self._target_edge(caller, line, target)
                        if q is not None:
                            self.shipped.setdefault(caller, {}).setdefault(q, shown)

    def _config_dir(self, kind: str, value: str, folder: str, root: str) -> Optional[str]:
        """The folder of Hydra's search path: a project package's folder, or a path next to the file / from the
        root; None outside the project."""
        import os

        if kind == "module":
            for summ in self.sg.summaries:
                if summ.modname == value and summ.is_package:
                    sf = self.sources.get(summ.relpath)
                    path = str(getattr(sf, "path", "") or "")
                    return os.path.dirname(path) if path else None
            return None
        for base in (folder, root):
            cand = os.path.normpath(os.path.join(base, value))
            if os.path.isdir(cand) and (cand == root or cand.startswith(root + os.sep)):
                return cand
        return None

    def _target_edge(self, caller: str, line: int, target: str) -> Optional[str]:
        """An edge from *caller* to the project function or class *target* names; its qualified name, or None."""
        try:
            k, q = self.linker.canonical(target)
        except RecursionError:
            return None
        if k in ("def", "class"):
            out = self.edges.setdefault(caller, {})
            if q not in out or out[q][1] is not None:
                out[q] = (line, None)
            return q
        return None

    def shipped_config(self, path: Sequence[str]) -> Optional[str]:
        """The shipped config file a call path goes through when a step of it is a target read from the configs the
        project ships for a config named on the command line; None otherwise."""
        for a, b in zip(path, path[1:]):
            shown = (self.shipped.get(a) or {}).get(b)
            if shown is not None:
                return shown
        return None

    def _lookup_edges(self, caller: str, line: int, container: str, keys: str, relpath: str) -> None:
        """A call through a container of callables: an edge to each entry the keys select (a class entry is
        built: the class is live), or, when the key cannot be told, each entry may run (reach unknown)."""
        lk = self.linker
        targets, exact = lk.lookup(container, keys)
        meth = keys.partition(METH_SEP)[2]
        if exact:
            self._followed.add((relpath, line))
        elif not targets:
            return
        if not exact and len(targets) > 1:
            base = _common_base(lk, targets)
            if base is not None:
                # whichever entry runs is an instance of this project base class: its code is live for sure
                self._edge(caller, base, line, relpath)
        for t in targets:
            try:
                k, q = lk.canonical(t)
            except RecursionError:
                continue
            if k not in ("def", "class"):
                continue
            if exact:
                self._edge(caller, q, line, relpath)
                # a method called on the entry (``cls.from_config(cfg)``): a class or static method runs only where
                # code names it, and this call names it
                found = lk.lookup_method(q, meth) if meth and k == "class" else None
                if found:
                    self._edge(caller, found, line, relpath, meth)
            else:
                found = lk.lookup_method(q, meth) if meth and k == "class" else None
                for callee in (q, found) if found else (q,):
                    self.maybe.setdefault(caller, []).append(
                        (callee, f"{relpath}:{line} calls an entry of {lk._container_name(container).rpartition('#')[2]} chosen at run "
                                 f"time (the key cannot be told statically); {q} is one of them"))

    def _built_only_under_guards(self, cls: str) -> bool:
        """Project code builds class *cls* (names it in a call) and every such call sits under a guard
        (``if self.num_experts > 1: self.mlp = MoE(...)``). The calls are read once per run, on the first question."""
        built = self.__dict__.get("_built")
        if built is None:
            from analyse.roles import role_of

            lk = self.linker
            built = {}
            memo: Dict[str, Optional[str]] = {}
            guarded_only = self._self_called_under_guards()
            for su in self.sg.summaries:
                if role_of(su.relpath) == "test":
                    continue   # a test builds every class it tests: no program's way in
                aliases = self.aliases.get(su.modname) or {}
                for _caller, line, kind, a, _b in su.calls:
                    if kind != K_NAME:
                        continue
                    a = _unalias(a, aliases) if aliases else a
                    if a not in memo:
                        try:
                            k, q = lk.canonical(a)
                        except RecursionError:
                            k, q = None, None
                        memo[a] = q if k == "class" else None
                    q = memo[a]
                    if q is not None and built.get(q, True):
                        built[q] = self._call_guard(su.relpath, line, a.rpartition(".")[2]) is not None \
                            or (_caller.rpartition(".")[0] in lk.classes and _caller.rpartition(".")[2] in guarded_only)
            self._built = built
        return built.get(cls, False)

    def _self_called_under_guards(self) -> Set[str]:
        """Names of the methods that project code calls only on its own instance (``self.m()``, ``super().m()``),
        each time under a guard that keeps the call off the default path or makes it a choice (``if
        config.cuda_graph_impl == "local": self.create_graph_manager(config)``); read by name, over every class: a
        call of that name anywhere else (``obj.m()``, ``m()``, a reference) keeps it out."""
        out: Set[str] = set()
        other: Set[str] = set()
        for su in self.sg.summaries:
            for _caller, line, kind, a, b in su.calls:
                if kind in (K_SELF, "super"):
                    leaf = b.partition("|")[0]
                    if leaf in other or not leaf:
                        continue
                    g = self._call_guard(su.relpath, line, leaf)
                    if g is None or (g.get("on_path") or {}).get("transfer_to_npu") == "on":
                        other.add(leaf)
                        out.discard(leaf)
                    else:
                        out.add(leaf)
                else:
                    leaf = b if kind == K_METHOD else a.rpartition(".")[2]
                    other.add(leaf)
                    out.discard(leaf)
        return {m for m in out if not m.startswith("__")}

    def _constructed(self, called: str, found: str) -> Optional[str]:
        """``Sub.from_pretrained(...)`` where the classmethod (here or inherited) builds ``cls(...)``: the class
        it is called on (``Sub``), whose instance the call returns."""
        owner, _, meth = found.rpartition(".")
        info = self.linker.classes.get(owner)
        if info is None or meth not in getattr(info, "constructors", ()):
            return None
        k, q = self.linker.canonical(called.rpartition(".")[0])
        return q if k == "class" else None

    def _external_constructor(self, q: str) -> Optional[str]:
        """``WanModel.from_pretrained(...)`` on a project class whose ``from_*`` classmethod comes from an
        external base (a diffusers ``ModelMixin``, a transformers ``PreTrainedModel``): by the Python convention
        for alternative constructors it returns an instance of the class it is called on, so it builds that class
        (its ``forward`` runs where the instance is called)."""
        owner, _, meth = q.rpartition(".")
        if not _ALT_CONSTRUCTOR.fullmatch(meth) or owner not in self.linker.classes:
            return None
        external = [b for b in self.linker.mro(owner)[1:] if b not in self.linker.classes and b not in ("object", "builtins.object")]
        return owner if external else None

    # ------------------------------------------------------------------ walks
    def roots_of(self, ep) -> List[str]:
        roots = []
        mod_fn = f"{ep.modname}.{MODULE_FN}"
        if mod_fn in self.linker.functions:
            roots.append(mod_fn)
        # the program's own main block runs; an imported module's never does (importers reach ``<module>``)
        main_fn = f"{ep.modname}.{MAIN_FN}"
        if main_fn in self.linker.functions:
            roots.append(main_fn)
        # a web application's handlers run when the server serves the program's app (routes, startup events)
        if not ep.function:
            for fq in self.served.get(ep.modname, ()):
                if fq in self.linker.functions and fq not in roots:
                    roots.append(fq)
        if ep.function:
            q = ep.function
            if q not in self.linker.functions:
                try:
                    k, cq = self.linker.canonical(q)
                except RecursionError:
                    k, cq = "unresolved", q
                if k == "def":
                    q = cq
                elif k == "class":
                    q = cq
            if q in self.linker.functions or q in self.linker.classes:
                roots.append(q)
        return roots

    def _walk(self, ep) -> _EPReach:
        st = _EPReach()
        roots = self.roots_of(ep)
        st.roots = set(roots)
        parent = st.parent
        edges = self.edges
        needs = self.needs
        # edges into a subclass's override wait until that class is live: class -> [(caller, callee, line, guard)]
        pending: Dict[str, List[Tuple[str, str, int, Optional[dict]]]] = {}
        # 1. unguarded edges
        q = deque()
        for r in roots:
            parent[r] = (None, 0)
            q.append(r)
        while q:
            n = q.popleft()
            need = needs.get(n)
            for c, (line, g) in edges.get(n, {}).items():
                if g is None and c not in parent:
                    cls = need.get(c) if need else None
                    if cls is not None and cls not in parent:
                        pending.setdefault(cls, []).append((n, c, line, None))
                        continue
                    parent[c] = (n, line)
                    q.append(c)
            for m, c, line, _g in pending.pop(n, ()):
                if c not in parent:
                    parent[c] = (m, line)
                    q.append(c)
        # 2. guarded edges: what is only reached under a guard inherits it. Code reached under a guard
        # that has no way around it (`if ckpt.version >= 4:` with no else) still runs on an NPU host, so
        # those paths are walked first (2a); what only paths through a guard with an alternative, or one
        # that keeps it off an NPU host's path, reach (2b) inherits the first such guard on its path, even
        # below a weak one (`if version >= 4: G(...)` -> ... -> `if x.device.type == "cuda" and _init():`).
        # An edge into a subclass's override waits until that class is live, as in 1.
        inherited = st.inherited
        strong: List[Tuple[str, str, int, dict]] = []
        q = deque()

        def _guarded(n: str, c: str, line: int, g: Optional[dict], inh: Optional[dict]) -> None:
            if g is not None and not _no_way_around(g):
                strong.append((n, c, line, g))
            else:
                parent[c] = (n, line)
                # the first guard on the path, unless a later one narrows it: keeps the code off an NPU host's path
                # where the first only makes it conditional (`if backend == "hf":` -> ... -> `if not
                # is_zero3_enabled(): return`), or depends on a choice where the first holds with the defaults
                # (`if runner is None:` -> ... -> `elif cfg.strategy == "megatron": import megatron_workers`)
                inherited[c] = inh if inh is not None and not _narrower(g, inh) else g
                q.append(c)

        def _waits(n: str, c: str, line: int, g: Optional[dict]) -> bool:
            need = needs.get(n)
            cls = need.get(c) if need else None
            if cls is not None and cls not in parent:
                pending.setdefault(cls, []).append((n, c, line, g))
                return True
            return False

        def _release(n: str) -> None:
            for m, c, line, g in pending.pop(n, ()):
                if c not in parent:
                    # the call runs once an instance exists: under the call's guard, else the class's
                    parent[c] = (m, line)
                    inherited[c] = g if g is not None else inherited.get(m) or inherited.get(n)
                    q.append(c)

        for n in list(parent):
            for c, (line, g) in edges.get(n, {}).items():
                if g is not None and c not in parent and not _waits(n, c, line, g):
                    _guarded(n, c, line, g, None)
        while q:
            n = q.popleft()
            for c, (line, g) in edges.get(n, {}).items():
                if c not in parent and not _waits(n, c, line, g if g is not None else inherited[n]):
                    _guarded(n, c, line, g, inherited[n])
            _release(n)
        for n, c, line, g in strong:
            if c not in parent:
                parent[c] = (n, line)
                inherited[c] = g
                q.append(c)
        while q:
            n = q.popleft()
            for c, (line, _g) in edges.get(n, {}).items():
                # below a guard with a way around, a call whose own guard keeps it off an NPU host's path (where the
                # inherited one only makes it conditional) passes that guard on instead
                g = _g if _narrower(_g, inherited[n]) else inherited[n]
                if c not in parent and not _waits(n, c, line, g):
                    parent[c] = (n, line)
                    inherited[c] = g
                    q.append(c)
            _release(n)
        # 2b. a guard on a flag parameter that a reached caller's argument turns on (callers' arguments): what
        # inherited it inherits the guard turned on
        for c in list(st.inherited):
            g = st.inherited[c]
            n = parent[c][0]
            edge = edges.get(n, {}).get(c) if n is not None else None
            if edge is None or edge[1] is not g:
                continue
            state = (g.get("on_path") or {}).get("transfer_to_npu")
            if state == "off":
                on = self.switched_on(n, g, parent)
            elif state == "conditional":
                # a string-keyed factory: the branch a reached caller's literal argument selects
                on = self.selected_by_caller(n, g, parent)
            else:
                continue
            if on is None:
                continue
            new = dict(g, on_path={k: "on" for k in g["on_path"]}, condition=f"{g.get('condition')} ({on})")
            for d in list(st.inherited):
                if st.inherited[d] is g:
                    st.inherited[d] = new
                    st.switched[d] = on
        # 3. unknown: code that reached code may run through dynamic dispatch
        lk = self.linker
        seeds: List[Tuple[str, str]] = []
        guessed_seeds: Set[Tuple[str, str]] = set()   # (node, reason) of the seeds that are guesses
        seed_mod: Dict[Tuple[str, str], str] = {}       # a seed of an imported module -> that module's top level
        for n in list(parent):
            if n.endswith("." + MODULE_FN):
                mod = n[: -len(MODULE_FN) - 1]
                for cls in self.classes_of.get(mod, ()):
                    if cls not in parent and cls not in self.kept_named:
                        seeds.append((cls, f"{cls} is defined in imported code ({mod}) but never named by "
                                           f"reached code: a registry, a config or dynamic dispatch may build it"))
                        seed_mod[seeds[-1]] = n
                        if not self._buildable_by_config(cls):
                            guessed_seeds.add(seeds[-1])
                for fq in self.decorated.get(mod, ()):
                    if fq not in parent:
                        seeds.append((fq, f"{fq} is decorated (possibly registered) in imported code ({mod})"))
                        seed_mod[seeds[-1]] = n
                        if fq in self.plain_decorated:
                            guessed_seeds.add(seeds[-1])
                if mod in self.loose:
                    for fq in lk.modules[mod].functions:
                        if fq not in parent:
                            seeds.append((fq, f"{mod} is imported relative to the script's folder; its calls "
                                              "are only partly linked"))
            seeds.extend(self.maybe.get(n, ()))
            for target in self.dyn.get(n, ()):
                if target in lk.modules:
                    s = lk.modules[target]
                    for fq in list(s.functions) + list(s.classes):
                        seeds.append((fq, f"reached code calls getattr() on module {target}"))
                elif target in lk.classes or target in lk.functions:
                    seeds.append((target, f"reached code calls getattr() on {target}"))
        # an override (or a config's target) waiting for a class the program never builds: when none of the
        # call's candidates is live, the instance comes from somewhere the model cannot see (a saved config, a
        # registry, a file): each candidate may run
        waiting: Dict[Tuple[str, int], List[str]] = {}
        for items in pending.values():
            for m, c, line, _g in items:
                waiting.setdefault((m, line), []).append(c)
        for (m, line), cands in waiting.items():
            need = needs.get(m) or {}
            if any(c in parent for c in need if edges[m][c][0] == line):
                continue
            for c in cands:
                seeds.append((c, f"{m} calls a method each subclass overrides (or the class a config names) on an "
                                 f"instance the program builds out of sight (a saved config, a registry); {c} is "
                                 "one of them"))
        unknown = st.unknown
        # the seeds of a real call the analysis cannot follow spread first, so that code both reach is not a guess
        # (code that only may run may run any override: no class is waited for here)
        # a class or decorated function of a module the program imports only under a guard (`try: from .megatron
        # import Engine / except ImportError:`) may be built only where that import ran: under its guard
        seed_guard: Dict[str, Optional[dict]] = {}
        for seed in seeds:
            node = seed[0]
            g = inherited.get(seed_mod[seed]) if seed in seed_mod else None
            seed_guard[node] = g if node not in seed_guard or seed_guard[node] == g else None
        unknown_guard = st.unknown_guard
        for guess in (False, True):
            q = deque()
            for node, reason in seeds:
                if ((node, reason) in guessed_seeds) is guess and node not in parent and node not in unknown:
                    unknown[node] = reason
                    if seed_guard.get(node) is not None:
                        unknown_guard[node] = seed_guard[node]
                    q.append(node)
            while q:
                n = q.popleft()
                if guess:
                    st.guessed.add(n)
                for c in edges.get(n, {}):
                    if c not in parent and c not in unknown:
                        unknown[c] = unknown[n]
                        if n in unknown_guard:
                            unknown_guard[c] = unknown_guard[n]
                        q.append(c)
        return st

    def _buildable_by_config(self, cls: str) -> bool:
        """Whether a class the program never names may still be what a registry, a config or a framework builds:
        one derived from another library's class (a torch module or dataset, a trainer framework's model, a
        Lightning module). A helper class of the project's own (a timer, a profiler, an experiment description
        whose other methods build a trainer) is not built that way by code that never names it."""
        for b in self.linker.mro(cls)[1:]:
            if b in self.linker.classes:
                continue
            if b.split(".", 1)[0] not in _PLAIN_BASE_MODULES and b not in _PLAIN_BASE_NAMES:
                return True
        return False

    def default_owner(self, path: str, line: int) -> Optional[str]:
        """The class whose body gives a class attribute at *line* of *path* (``device_type: str = "cuda"``,
        ``device = field(default="cuda")``, ``compiled = torch.compile(fn)``) or names a base class there, when that
        class is on the graph: the value selects nothing until an instance (or the class) is used. None otherwise."""
        q = ((self.facts_by_path.get(path) or {}).get("class_defaults") or {}).get(line)
        return q if q in self.linker.classes else None

    def unresolved(self, ep_id: str, first: int = 10) -> Tuple[int, List[dict]]:
        """(how many calls of the code the entry point reaches cannot be followed -- a computed ``getattr``,
        ``eval``, a container indexed by a key that cannot be told, a name that does not resolve --, the
        first *first* of them, nearest the entry point first, as ``{path, line, expression}``)."""
        st = self.per_ep[ep_id]
        seen: Set[Tuple[str, int]] = set()
        out: List[dict] = []
        for n in st.parent:   # in walk order: nearest first
            for path, line, expr in self.unresolved_at.get(n, ()):
                if (path, line) in seen:
                    continue
                seen.add((path, line))
                if len(out) < first:
                    out.append({"path": path, "line": line, "expression": expr})
        return len(seen), out

    def path_to(self, ep_id: str, node: str) -> List[str]:
        st = self.per_ep[ep_id]
        out = []
        cur: Optional[str] = node
        guard = 0
        while cur is not None and guard < 200:
            out.append(cur)
            cur = st.parent.get(cur, (None, 0))[0]
            guard += 1
        out.reverse()
        return out

    # ------------------------------------------------------------------ findings
    def status_for(self, ep, fn: str) -> Optional[Tuple[str, int]]:
        """(status, path length) of function *fn* for one entry point, None when unreached."""
        st = self.per_ep[ep.id]
        if fn in st.roots:
            return ENTRY, 0
        hop = st.parent.get(fn)
        if hop is not None:
            pred = hop[0]
            if pred in st.roots and pred.endswith(PSEUDO_FNS) and self.linker.functions.get(fn, ("",))[0] == ep.path:
                return ENTRY, 1
            n = 1
            cur = pred
            while cur is not None and n < 200:
                cur = st.parent.get(cur, (None, 0))[0]
                n += 1
            return REACHABLE, n
        if fn in st.unknown:
            return UNKNOWN, 10 ** 6
        return None


EVIDENCE_SEVERITIES = ("blocker", "manual", "auto")
# decorators that wrap a function without registering it anywhere: a function decorated only by them, which the
# program never calls, is not run by a registry or a config
_PLAIN_DECORATORS = frozenset(("lru_cache", "cache", "cached_property", "wraps", "staticmethod", "classmethod", "property",
                               "contextmanager", "asynccontextmanager", "no_grad", "inference_mode", "enable_grad",
                               "dataclass", "total_ordering", "abstractmethod", "overload", "deprecated"))


def _served_by(d, apps: Sequence[str]) -> bool:
    """A decorator ``@app.<anything>(...)`` / ``@app.<anything>`` of a module-level web application *apps* names
    (``@app.post("/generate")``, ``@app.on_event("startup")``, ``@app.route("/")``): the server calls the function."""
    f = d.func if isinstance(d, nodes.Call) else d
    return isinstance(f, nodes.Attribute) and isinstance(f.expr, nodes.Name) and f.expr.name in apps


def _decorator_name(d) -> str:
    """The last name of a decorator expression (`functools.lru_cache()` -> lru_cache)."""
    if isinstance(d, nodes.Call):
        d = d.func
    if isinstance(d, nodes.Attribute):
        return d.attrname
    if isinstance(d, nodes.Name):
        return d.name
    return ""


# bases that make no class a framework's: the language's own (a helper class derives from them or from nothing)
_PLAIN_BASE_MODULES = frozenset(("abc", "builtins", "typing", "typing_extensions", "enum", "collections", "dataclasses",
                                 "contextlib", "threading", "numbers"))
_PLAIN_BASE_NAMES = frozenset(("object", "ABC", "Exception", "BaseException", "RuntimeError", "ValueError", "dict", "list",
                               "tuple", "str", "int", "float", "Enum", "IntEnum", "NamedTuple", "Generic", "Protocol", "TypedDict"))
# callers' arguments: a guard `if flag:` / `if not flag:` on a parameter; how many calls up a parameter is followed,
# how many values are kept
_FLAG_TEST = re.compile(r"(not\s+)?([A-Za-z_][A-Za-z0-9_]*)")
_STR_TEST = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*==\s*(?:'([^'\\]*)'|\"([^\"\\]*)\")")
def _flag_combination(text: str):
    """(expression, names) of a guard's condition text that only combines names with ``not`` / ``and`` / ``or`` and
    compares them with None or a bool (``use_te is None or not use_te``); None for any other text."""
    import ast

    if not text or len(text) > 200:
        return None
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    names: Set[str] = set()

    def ok(n, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(n, ast.Name):
            names.add(n.id)
            return True
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return ok(n.operand, depth + 1)
        if isinstance(n, ast.BoolOp):
            return all(ok(v, depth + 1) for v in n.values)
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) \
                and isinstance(n.comparators[0], ast.Constant) and (n.comparators[0].value is None
                                                                     or isinstance(n.comparators[0].value, bool)):
            return isinstance(n.left, ast.Name) and ok(n.left, depth + 1)
        return False

    return (tree, names) if ok(tree, 0) and names else None


def _value_flag_test(n, values: Dict[str, object]) -> Optional[bool]:
    """The value of a :func:`_flag_combination` expression with *values* for its names."""
    import ast

    if isinstance(n, ast.Name):
        return bool(values[n.id]) if n.id in values else None
    if isinstance(n, ast.UnaryOp):
        v = _value_flag_test(n.operand, values)
        return None if v is None else not v
    if isinstance(n, ast.BoolOp):
        vals = [_value_flag_test(v, values) for v in n.values]
        if isinstance(n.op, ast.And):
            return False if False in vals else None if None in vals else True
        return True if True in vals else None if None in vals else False
    if isinstance(n, ast.Compare):
        if n.left.id not in values:
            return None
        left, right, op = values[n.left.id], n.comparators[0].value, n.ops[0]
        if isinstance(op, ast.Is):
            return left is right
        if isinstance(op, ast.IsNot):
            return left is not right
        return (left == right) if isinstance(op, ast.Eq) else (left != right)
    return None


MAX_SWITCH_DEPTH = 4
MAX_SWITCH_VALUES = 16
_UNREAD = object()


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _off(g: Optional[dict]) -> bool:
    """The guard keeps its code off an NPU host's path (with transfer_to_npu)."""
    return g is not None and (g.get("on_path") or {}).get("transfer_to_npu") == "off"


_PATH_RANK = {"on": 0, "conditional": 1, "off": 2}


def _narrower(g: Optional[dict], than: Optional[dict]) -> bool:
    """Guard *g* keeps its code off an NPU host's path more than guard *than* does (with transfer_to_npu): off
    over conditional over on (a guard that holds with the defaults, which narrows nothing)."""
    if g is None:
        return False
    rank = _PATH_RANK.get((g.get("on_path") or {}).get("transfer_to_npu"), 0)
    if than is None:
        return True
    return rank > _PATH_RANK.get((than.get("on_path") or {}).get("transfer_to_npu"), 0)


def _holds(g: Optional[dict]) -> bool:
    """The guard holds with the defaults on an NPU host (with transfer_to_npu): it narrows nothing."""
    return g is not None and (g.get("on_path") or {}).get("transfer_to_npu") == "on"


def _no_way_around(g: dict) -> bool:
    """A guard that neither has a working alternative nor keeps the code off an NPU host's path."""
    return not g.get("fallback") and (g.get("on_path") or {}).get("transfer_to_npu") != "off"


def finding_key(f) -> Tuple[str, int, str, str]:
    """The key of a finding in the per-entry-point paths (stable through policy filtering and sorting)."""
    return (f.path, f.line, f.code, f.api)


def annotate(findings: Sequence, reach: Optional[Reach], entry_points: Sequence, roles=None,
             ep_paths: Optional[Dict[str, Dict[tuple, List[str]]]] = None,
             ep_unknown: Optional[Dict[str, Set[tuple]]] = None,
             ep_guards: Optional[Dict[str, Dict[tuple, dict]]] = None):
    """Findings with ``reach``, ``role`` and (inherited) ``guard``; and for each entry point id the
    indexes of the findings it reaches (entry-point, reachable or unknown). *ep_paths*, when given, is
    filled with each entry point's own chain to each blocker / manual / auto finding it reaches
    (entry point id -> :func:`finding_key` -> qualified names, the entry point's root first): the
    evidence of an entry point's verdict names a path that starts at that entry point. *ep_unknown*, when given,
    is filled with the :func:`finding_key` of each blocker / manual / auto finding an entry point reaches only
    through calls the analysis could not follow (its own status ``unknown``, whatever another program's is).
    *ep_guards*, when given, is filled with the guard each entry point reaches a blocker / manual / auto finding
    under where the finding itself has none, or where that guard keeps the code off the program's path (another
    program reaches it unguarded): entry point id ->
    :func:`finding_key` -> the guard inherited on that program's own path (``try: from .te import TELinear /
    except ImportError:`` in one program, a plain call in another)."""
    from analyse.roles import role_of

    members: Dict[str, List[int]] = {ep.id: [] for ep in entry_points}
    out = []
    fn_cache: Dict[Tuple[str, int], Optional[str]] = {}
    defaults: Set[Tuple[str, int]] = set()   # findings on a class's constant default
    for i, f in enumerate(findings):
        role = role_of(f.path, roles)
        if not entry_points or reach is None:
            rs = {"status": UNKNOWN, "reason": "no entry point was found or given"}
            out.append(evolve(f, reach=rs, role=role))
            continue
        sf = reach.sources.get(f.path)
        if sf is None or not f.path.endswith(_SRC_SUFFIXES):
            # a kernel, build or data file: not on the Python call graph. Its Python users (the calls of
            # the compiled ops, the load() of the extension) are findings of their own with their reach.
            rs = {"status": UNKNOWN, "reason": "not Python: counted through the Python code that builds or "
                                               "loads it"}
            out.append(evolve(f, reach=rs, role=role))
            continue
        key = (f.path, f.line)
        if key not in fn_cache:
            got = reach.locator.locate(f.path, f.line)
            if got is not None and got.endswith("." + MODULE_FN):
                # a class's constant default (`device: str = "cuda"`) is used by its instances, not by importing it
                owner = reach.default_owner(f.path, f.line)
                if owner is not None:
                    got = owner
                    defaults.add(key)
            fn_cache[key] = got
        fn = fn_cache[key]
        best: Dict[str, List[Tuple[int, object]]] = {ENTRY: [], REACHABLE: [], UNKNOWN: []}
        for ep in entry_points:
            got = reach.status_for(ep, fn) if fn else None
            if got is None:
                continue
            status, dist = got
            best[status].append((dist, ep))
            if status != UNKNOWN or (key not in defaults and fn not in reach.per_ep[ep.id].guessed):
                # a default selects nothing by itself: it counts for the programs that surely use its class; nor
                # does code reached only through a helper class the program never names (it imports the module
                # for something else): another program's reach of it is not this program's work
                members[ep.id].append(i)
                if ep_unknown is not None and status == UNKNOWN and f.severity in EVIDENCE_SEVERITIES:
                    ep_unknown.setdefault(ep.id, set()).add(finding_key(f))
            if ep_paths is not None and status in (ENTRY, REACHABLE) and f.severity in EVIDENCE_SEVERITIES:
                ep_paths.setdefault(ep.id, {})[finding_key(f)] = reach.path_to(ep.id, fn)
        guard = f.guard
        if best[ENTRY] or best[REACHABLE]:
            status = ENTRY if best[ENTRY] else REACHABLE
            eps = sorted(best[ENTRY] + best[REACHABLE], key=lambda t: (t[1].role != "product", t[0], t[1].id))
            rs = {"status": status, "entry_points": [ep.id for _d, ep in eps[:MAX_LISTED_ENTRY_POINTS]]}
            if len(eps) > MAX_LISTED_ENTRY_POINTS:
                rs["entry_points_total"] = len(eps)
            path = reach.path_to(eps[0][1].id, fn)
            if status == REACHABLE or len(path) > 1:
                rs["path"] = path
                shown = reach.shipped_config(path)
                if shown is not None:
                    rs["reason"] = (f"built from {shown}, a config the project ships where the program looks its "
                                    f"config up (the config is named on the command line)")
            if guard is not None and (guard.get("on_path") or {}).get("transfer_to_npu") in ("off", "conditional") \
                    and guard.get("path") in (None, f.path) and guard.get("line") \
                    and reach.locator.locate(f.path, guard["line"]) == fn:
                # the function's own guard on a flag parameter that a reached caller turns on (callers' arguments),
                # or on a string parameter a reached caller passes the compared literal for (a string-keyed factory);
                # the product entry points' callers decide where there are any
                prod = [ep for _d, ep in eps if ep.role == "product"] or [ep for _d, ep in eps]
                pick = reach.switched_on if guard["on_path"]["transfer_to_npu"] == "off" else reach.selected_by_caller
                for ep in prod:
                    on = pick(fn, guard, reach.per_ep[ep.id].parent)
                    if on is not None:
                        guard = dict(guard, on_path={k: "on" for k in guard["on_path"]},
                                     condition=f"{guard.get('condition')} ({on})")
                        break
            local_off = guard is not None and (guard.get("on_path") or {}).get("transfer_to_npu") == "off"
            if guard is None or _no_way_around(guard) or not local_off:
                # a local guard with no alternative (`try: ... except: raise`) does not hide the guard of every
                # call that reaches the function (`if x.device.type == "cuda" and _init():`); nor does one that
                # holds with the defaults (`if fmt == "hybrid":`) hide the calls' guard that keeps the whole
                # function off the path (`if self.cfg.fp8: recipe = Recipe(cfg)`)
                inh = [reach.per_ep[ep.id].inherited.get(fn) for _d, ep in eps]
                if inh and all(g is not None for g in inh) and (guard is None or not _no_way_around(inh[0])) \
                        and (guard is None or _no_way_around(guard)
                             or all((g.get("on_path") or {}).get("transfer_to_npu") == "off" for g in inh)):
                    guard = dict(inh[0])
            if ep_guards is not None and not _off(guard) and f.severity in EVIDENCE_SEVERITIES:
                for ep in [ep for _d, ep in best[UNKNOWN]]:
                    own = reach.per_ep[ep.id].unknown_guard.get(fn)
                    if own is not None and (not _narrower(guard, None) or _holds(guard) or _off(own)):
                        ep_guards.setdefault(ep.id, {})[finding_key(f)] = dict(own)
                for _d, ep in eps:
                    own = reach.per_ep[ep.id].inherited.get(fn)
                    # the program's own path: a guard that keeps it off the path decides over the finding's own
                    # test; any other only where the finding has none or one that holds by default
                    if own is not None and (not _narrower(guard, None) or _holds(guard) or _off(own)):
                        ep_guards.setdefault(ep.id, {})[finding_key(f)] = dict(own)
        elif best[UNKNOWN]:
            eps = sorted((ep for _d, ep in best[UNKNOWN]), key=lambda ep: (ep.role != "product", ep.id))
            rs = {"status": UNKNOWN, "entry_points": [ep.id for ep in eps[:MAX_LISTED_ENTRY_POINTS]],
                  "reason": reach.per_ep[eps[0].id].unknown.get(fn, "")}
            if len(eps) > MAX_LISTED_ENTRY_POINTS:
                rs["entry_points_total"] = len(eps)
        else:
            rs = {"status": UNREACHED}
        out.append(evolve(f, reach=rs, role=role, guard=guard))
    return out, members
