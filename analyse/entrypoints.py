"""Entry points: the programs a project runs.

Found statically (nothing is imported or run, ``setup.py`` is read as a tree):

* ``main-guard``: a module with ``if __name__ == "__main__":``;
* ``top-level-code``: a script that does work when run -- a loop, a ``with``
  block, or a call statement at module level that is not set-up (logging,
  warnings, registration) -- and that no other project module imports. A
  module of only definitions, imports, constant or registry assignments and
  decorators is a library module, never an entry point. ``__init__.py`` and
  files whose role is ``build`` or ``docs`` (``setup.py``, Sphinx ``conf.py``)
  are not programs to migrate;
* ``console-script``: ``[project.scripts]`` / ``[project.gui-scripts]`` in
  ``pyproject.toml``, ``entry_points={"console_scripts": [...]}`` in
  ``setup.py``, ``[options.entry_points] console_scripts`` in ``setup.cfg``;
  the ``module:function`` target must be an analysed file;
  also (same reason, named ``cog predict`` / ``torch.hub NAME``) a Cog predictor or trainer declared in
  ``cog.yaml`` and each public function of a torch.hub ``hubconf.py``;
* ``given``: a PATH given as a single file, or ``--entry FILE[:FUNCTION]``
  (which replaces discovery altogether).

Each program's role comes with its evidence (``role_evidence``): a line of the README, the docs, a launch
script, a Makefile, a Dockerfile or a CI workflow that runs it (:func:`invocations`), what it does (trains,
a self-test, an evaluation program named like a test), or its path.

The role of a discovered program comes from what it does (:func:`analyse.roles.program_role`):
one that trains models (``trainer.train()``, ``loss.backward()``, ``optimizer.step()``) is
``product`` under ``tools/`` or ``scripts/`` too; a module of the project's own package that
other modules import, whose ``__main__`` block only exercises it, is a ``test`` entry point (unless it
defines a command line -- argparse, click, typer, fire, ``HfArgumentParser`` -- or the packaging declares
a console script in it: then the module is one of the package's programs).
A ``roles`` override in the configuration wins.
"""

from __future__ import annotations

import configparser
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from astroid import nodes

from analyse.roles import build_by_name, program_role, program_role_evidence, role_of
from analyse.syntax import is_main_guard, nodes_of

REASONS = ("main-guard", "top-level-code", "console-script", "given")

# module-level call statements that set things up rather than do the work of a program
_SETUP_CALL = re.compile(
    r"^(_?register\w*|\w*_register|filterwarnings|simplefilter|basicConfig|setLevel|getLogger|addHandler|"
    r"setdefault|set_printoptions|use|append|extend|insert|update|add|__import__|install|patch|warn|"
    r"set_start_method|add_safe_globals|export|_init\w*|init_\w*|setup_logger|disable|enable|"
    r"add_argument|set_default\w*|setattr|seed|manual_seed|set_seed|\w*_setup|load_dotenv|require\w*|"
    r"check_requirements|_?patch\w*|monkey_patch\w*|trace|lru_cache|cache)$")
_RUN_ASSIGN = {"parse_args", "parse_known_args", "main", "run", "train", "fit", "evaluate", "launch", "spawn",
               "start", "serve", "app"}
# web applications a server runs from the module (`app = FastAPI()`, launched by `fastapi dev main.py`, `uvicorn
# main:app`, `flask run`): the module is a program whose work is done by its route and startup handlers
WEB_APPS = frozenset({"FastAPI", "Flask", "Starlette", "Quart", "Sanic", "Litestar"})


def web_app_names(tree: nodes.Module) -> Tuple[str, ...]:
    """The module-level names bound to a web application (:data:`WEB_APPS`) by a plain assignment."""
    out = []
    for st in tree.body:
        if isinstance(st, (nodes.Assign, nodes.AnnAssign)) and isinstance(st.value, nodes.Call) \
                and _leaf(st.value.func) in WEB_APPS:
            targets = st.targets if isinstance(st, nodes.Assign) else [st.target]
            out.extend(t.name for t in targets if isinstance(t, nodes.AssignName))
    return tuple(out)


@dataclass(frozen=True)
class EntryPoint:
    path: str                        # report path of the file
    reason: str
    modname: str = ""
    function: Optional[str] = None   # qualified name when the entry point is a function
    role: str = "product"
    name: str = ""                   # console-script name
    # a module others import as a library (a module of a package, a torch.hub hubconf.py):
    # its main block is a way to run it, but importing it must not change the process (migrate puts the
    # transfer_to_npu shim only in programs)
    library: bool = False
    role_evidence: str = ""          # why the program has its role (an invocation, what it does, its path)
    copies: Tuple[str, ...] = ()     # near-identical copies of this program grouped into it (archived runs)

    @property
    def id(self) -> str:
        """``path`` or ``path:function`` (the function relative to its module)."""
        if not self.function:
            return self.path
        prefix = self.modname + "."
        local = self.function[len(prefix):] if self.modname and self.function.startswith(prefix) else self.function
        return f"{self.path}:{local}"

    def to_dict(self) -> dict:
        d = {"path": self.path, "function": self.function, "reason": self.reason, "role": self.role}
        if self.name:
            d["name"] = self.name
        if self.library:
            d["library"] = True
        if self.role_evidence:
            d["role_evidence"] = self.role_evidence
        if self.copies:
            d["copies"] = list(self.copies)
        return d


MIN_COPIES = 3          # an archive: this many programs of one name
COPY_SIMILARITY = 0.8   # share of their distinct code lines two copies have in common (Jaccard)


def _code_lines(text: str) -> frozenset:
    out = set()
    for line in text.splitlines():
        t = line.strip()
        if t and not t.startswith("#"):
            out.add(t)
    return frozenset(out)


def group_copies(eps: List["EntryPoint"], sources: Mapping[str, object]) -> List["EntryPoint"]:
    """Near-identical copies of one program (``records/<run>/train.py`` archived once per run) grouped into one
    entry: programs of one file name, at least :data:`MIN_COPIES` of them, whose code lines (comments and blank
    lines aside) overlap by :data:`COPY_SIMILARITY` or more with the group's first. The first path (sorted) stands
    for the group and lists the others in ``copies``; programs named on purpose (console scripts, given files)
    are never grouped."""
    from dataclasses import replace as _replace

    by_name: Dict[str, List[EntryPoint]] = {}
    for ep in eps:
        if ep.reason in ("main-guard", "top-level-code") and not ep.function:
            by_name.setdefault(ep.path.rsplit("/", 1)[-1], []).append(ep)
    drop: Dict[str, List[str]] = {}
    for name, group in by_name.items():
        if len(group) < MIN_COPIES:
            continue
        lines = {ep.path: _code_lines(getattr(sources.get(ep.path), "text", "") or "") for ep in group}
        left = sorted(group, key=lambda e: e.path)
        while len(left) >= MIN_COPIES:
            head, rest = left[0], left[1:]
            a = lines[head.path]
            same = [ep for ep in rest if a and len(a & lines[ep.path]) >= COPY_SIMILARITY * len(a | lines[ep.path])]
            if len(same) + 1 >= MIN_COPIES:
                drop[head.path] = [ep.path for ep in same]
            taken = {ep.path for ep in same}
            left = [ep for ep in rest if ep.path not in taken]
    if not drop:
        return eps
    gone = {p for ps in drop.values() for p in ps}
    return [_replace(ep, copies=tuple(drop[ep.path])) if ep.path in drop else ep for ep in eps if ep.path not in gone]


# --------------------------------------------------------------------------- invocations

# the files where a project says how its programs are run: READMEs and docs, launch scripts, Makefiles,
# Dockerfiles, CI workflows
_DOC_FILE = re.compile(r"^(readme.*|.*\.(md|rst|txt|sh|bash|yml|yaml|cfg|toml)|makefile|dockerfile.*|.*\.dockerfile|"
                       r"justfile|procfile)$", re.I)
_LAUNCH = re.compile(r"\b(python[\d.]*|torchrun|accelerate|deepspeed|srun|mpirun|colossalai|fastapi|uvicorn|streamlit|"
                     r"torch\.distributed\.(?:launch|run)|CMD|ENTRYPOINT|run)\b")
_PY_TOKEN = re.compile(r"(?<![\w/.-])((?:\.{0,2}/)?[\w./-]*[\w-]\.py)\b")
_MODULE_TOKEN = re.compile(r"python[\d.]*\s+(?:-\w+\s+)*-m\s+([\w.]+)")
_SKIP_SCAN = {".git", "node_modules", "__pycache__", ".tox", ".venv", "venv", "site-packages", "build", "dist"}
MAX_DOC_FILES = 400
MAX_DOC_BYTES = 1_000_000


def invocations(inputs: Sequence[Path], sources: Mapping[str, object]) -> Dict[str, str]:
    """Report path -> where the project runs it (``README.md:12: python scripts/train.py ...``): a ``.py`` path or
    a ``python -m module`` on a line that launches something (python, torchrun, accelerate launch, deepspeed,
    a Dockerfile's CMD) in a README, the docs, a shell script, a Makefile, a Dockerfile or a CI workflow of an
    input folder. A mentioned path names a program when it is the program's path from the root, or ends with
    it and names no other program."""
    by_rel = {rel: sf for rel, sf in sources.items() if rel.endswith(".py")}
    by_mod = {getattr(sf, "modname", ""): rel for rel, sf in by_rel.items()}
    by_name: Dict[str, List[str]] = {}
    for rel in by_rel:
        by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
    out: Dict[str, str] = {}
    for inp in inputs:
        root = Path(inp)
        if not root.is_dir():
            continue
        for doc in _doc_files(root):
            try:
                with open(doc, "rb") as fh:
                    text = fh.read(MAX_DOC_BYTES).decode("utf-8", "replace")
            except OSError:
                continue
            shown = doc.relative_to(root).as_posix()
            for n, line in enumerate(text.splitlines(), 1):
                if ".py" not in line and "-m " not in line:
                    continue
                if not _LAUNCH.search(line):
                    continue
                hits = []
                for tok in _PY_TOKEN.findall(line):
                    hits.append(_program_of(tok, by_rel, by_name))
                for mod in _MODULE_TOKEN.findall(line):
                    hits.append(by_mod.get(mod) or by_mod.get(mod + ".__main__"))
                for rel in hits:
                    if rel and rel not in out:
                        out[rel] = f"{shown}:{n}: {line.strip()[:120]}"
    return out


def _program_of(tok: str, by_rel: Mapping[str, object], by_name: Mapping[str, List[str]]) -> Optional[str]:
    t = tok
    while t.startswith(("./", "../")):
        t = t[t.index("/") + 1:]
    if t in by_rel:
        return t
    cands = [r for r in by_name.get(t.rsplit("/", 1)[-1], ()) if r.endswith("/" + t) or r == t]
    return cands[0] if len(cands) == 1 else None


def _doc_files(root: Path) -> List[Path]:
    import os

    out: List[Path] = []
    for folder, dirs, files in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_SCAN and (not d.startswith(".") or d in (".github", ".circleci"))
                         and depth < 4)
        for f in sorted(files):
            if _DOC_FILE.match(f) and not f.endswith(".py"):
                p = Path(folder) / f
                try:
                    if p.is_file() and p.stat().st_size <= MAX_DOC_BYTES * 4:
                        out.append(p)
                except OSError:
                    continue
                if len(out) >= MAX_DOC_FILES:
                    return out
    return out


# --------------------------------------------------------------------------- module classification

def has_main_guard(tree: nodes.Module) -> bool:
    for st in tree.body:
        if is_main_guard(st):
            return True
        if isinstance(st, (nodes.Try, nodes.If)):
            if any(is_main_guard(c) for c in st.get_children()):
                return True
    return False


def _leaf(func) -> str:
    if isinstance(func, nodes.Attribute):
        return func.attrname
    if isinstance(func, nodes.Name):
        return func.name
    return ""


def _is_action(st) -> bool:
    """A module-level statement that does the work of a program when run."""
    if isinstance(st, (nodes.For, nodes.While, nodes.With, nodes.AsyncFor, nodes.AsyncWith)):
        if isinstance(st, nodes.For) and not _calls_in(st):
            return False    # `for name in NAMES: globals()[...]`-style table building has no calls... usually
        return True
    if isinstance(st, nodes.Expr):
        v = st.value
        if isinstance(v, nodes.Await):
            return True
        if isinstance(v, nodes.Call):
            leaf = _leaf(v.func)
            if leaf == "exec":
                return True
            if not leaf or _SETUP_CALL.match(leaf):
                return False
            if isinstance(v.func, nodes.Attribute) and _leaf(v.func.expr) in ("warnings", "logging", "logger",
                                                                                "torch", "np", "numpy", "os",
                                                                                "sys", "matplotlib", "plt",
                                                                                "mpl", "__all__"):
                return leaf in ("show", "savefig", "exit")
            return True
        return False
    if isinstance(st, (nodes.Assign, nodes.AnnAssign)):
        v = st.value
        if isinstance(v, nodes.Call) and (_leaf(v.func) in _RUN_ASSIGN or _leaf(v.func) in WEB_APPS):
            return True
        return False
    if isinstance(st, nodes.Try):
        return any(_is_action(c) for c in st.body)
    if isinstance(st, nodes.If):
        t = st.test
        names = {n.name for n in t.nodes_of_class(nodes.Name)} if not isinstance(t, nodes.Name) else {t.name}
        if "TYPE_CHECKING" in names or is_main_guard(st):
            return False
        return any(_is_action(c) for c in list(st.body) + list(st.orelse))
    return False


def _calls_in(node) -> bool:
    for _ in node.nodes_of_class(nodes.Call):
        return True
    return False


# calls that train a model: `trainer.train()`, `loss.backward()`, `trainer.fit(...)`, `do_train(...)`,
# `runner.train()`; `optimizer.step()` / `scaler.step(optimizer)` by their receiver
_TRAIN_CALL = re.compile(r"^(train|fit|backward|do_train|train_model|train_loop|train_one_epoch|train_epoch|"
                         r"run_training|training_loop)$")


def trains_models(tree: nodes.Module) -> bool:
    """True when the module trains a model: a training call (``trainer.train()``,
    ``loss.backward()``, ``.fit(...)``, ``optimizer.step()``) anywhere in it."""
    for call in nodes_of(tree, nodes.Call):
        leaf = _leaf(call.func)
        if _TRAIN_CALL.match(leaf):
            return True
        if leaf == "step" and isinstance(call.func, nodes.Attribute):
            recv = _leaf(call.func.expr).lower()
            if "optim" in recv or "scaler" in recv:
                return True
    return False


_CLI_MODULES = ("argparse", "click", "typer", "fire", "absl.flags", "absl.app", "jsonargparse", "docopt",
                "simple_parsing", "tyro", "hydra")
_CLI_NAMES = {"ArgumentParser", "HfArgumentParser"}


def parses_command_line(tree: nodes.Module) -> bool:
    """True when the module defines a command line (argparse, click, typer, fire, absl flags, hydra,
    ``HfArgumentParser``): it is a program offered to users, not a self-test of its definitions."""
    for node in nodes_of(tree, nodes.Import, nodes.ImportFrom):
        mods = [m for m, _a in node.names] if isinstance(node, nodes.Import) else [node.modname or ""]
        names = [] if isinstance(node, nodes.Import) else [n for n, _a in node.names]
        if any(m == c or m.startswith(c + ".") for m in mods for c in _CLI_MODULES) or _CLI_NAMES & set(names):
            return True
    return False


def has_top_level_code(tree: nodes.Module) -> bool:
    """True when running the module does the work of a program (see the module docstring)."""
    return any(_is_action(st) for st in tree.body)


# --------------------------------------------------------------------------- packaging files

def _toml_scripts(text: str) -> List[Tuple[str, str]]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - Python < 3.11
        tomllib = None
    out: List[Tuple[str, str]] = []
    if tomllib is not None:
        from analyse.inputs import MAX_DEPTH, nesting_depth

        if nesting_depth(text, toml=True) > MAX_DEPTH:   # a nesting bomb declares no scripts
            return []
        try:
            doc = tomllib.loads(text)
        except Exception:
            return []
        proj = doc.get("project") or {}
        for table in ("scripts", "gui-scripts"):
            for name, target in (proj.get(table) or {}).items():
                if isinstance(target, str):
                    out.append((str(name), target))
        poetry = ((doc.get("tool") or {}).get("poetry") or {}).get("scripts") or {}
        for name, target in poetry.items():
            if isinstance(target, str):
                out.append((str(name), target))
        return out
    # minimal reader for the two tables when tomllib is missing
    section = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("["):
            section = s.strip("[] ")
            continue
        if section in ("project.scripts", "project.gui-scripts", "tool.poetry.scripts"):
            m = re.match(r"""^["']?([\w.\-]+)["']?\s*=\s*["']([^"']+)["']""", s)
            if m:
                out.append((m.group(1), m.group(2)))
    return out


def _ini_scripts(text: str) -> List[Tuple[str, str]]:
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*([\w.\-]+)\s*=\s*([\w.]+(?::[\w.]+)?)", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def _cfg_scripts(text: str) -> List[Tuple[str, str]]:
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(text)
    except configparser.Error:
        return []
    out = []
    if cp.has_section("options.entry_points"):
        for key in ("console_scripts", "gui_scripts"):
            if cp.has_option("options.entry_points", key):
                out.extend(_ini_scripts(cp.get("options.entry_points", key)))
    return out


def _str_items(node) -> Optional[List[str]]:
    if type(node) in (nodes.List, nodes.Tuple, nodes.Set):
        return [e.value for e in node.elts if isinstance(e, nodes.Const) and isinstance(e.value, str)]
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return [node.value]
    return None


def _module_value(tree: nodes.Module, name: str):
    for st in tree.body:
        if isinstance(st, nodes.Assign):
            for t in st.targets:
                if isinstance(t, nodes.AssignName) and t.name == name:
                    return st.value
    return None


def setup_py_scripts(tree: nodes.Module) -> List[Tuple[str, str]]:
    """console_scripts of the ``setup(...)`` call, read from the tree (never run)."""
    out: List[Tuple[str, str]] = []
    for call in tree.nodes_of_class(nodes.Call):
        if _leaf(call.func) != "setup":
            continue
        for kw in call.keywords or ():
            if kw.arg != "entry_points":
                continue
            value = kw.value
            if isinstance(value, nodes.Name):
                value = _module_value(tree, value.name)
            if isinstance(value, nodes.Dict):
                for k, v in value.items:
                    if isinstance(k, nodes.Const) and k.value in ("console_scripts", "gui_scripts"):
                        if isinstance(v, nodes.Name):
                            v = _module_value(tree, v.name)
                        for item in _str_items(v) or ():
                            out.extend(_ini_scripts(item))
            elif isinstance(value, nodes.Const) and isinstance(value.value, str):
                section = None
                for line in value.value.splitlines():
                    s = line.strip()
                    if s.startswith("["):
                        section = s.strip("[] ")
                    elif section in ("console_scripts", "gui_scripts"):
                        out.extend(_ini_scripts(s))
    return out


# --------------------------------------------------------------------------- discovery

def _module_index(sources: Mapping[str, object]) -> Dict[str, object]:
    return {sf.modname: sf for sf in sources.values()}


def _target(spec: str, by_mod: Mapping[str, object]) -> Optional[Tuple[object, Optional[str]]]:
    """``pkg.mod:func`` -> (source file, qualified function name)."""
    mod, _, func = spec.strip().partition(":")
    mod = mod.strip()
    func = func.strip().split()[0] if func.strip() else ""
    sf = by_mod.get(mod)
    if sf is None:
        return None
    return sf, (f"{mod}.{func}" if func else None)


_COG_ENTRY = re.compile(r"^\s*(predict|train)\s*:\s*[\"']?([\w./-]+\.py):(\w+)[\"']?\s*$", re.M)


def declared_programs(root: Path, sources: Mapping[str, object]) -> List[Tuple[str, str]]:
    """(name, ``module:function``) of the programs a project declares outside its packaging: a Cog predictor
    or trainer (``cog.yaml``: ``predict: "predict.py:Predictor"``), and each public function of a torch.hub
    ``hubconf.py`` (``torch.hub.load(repo, "name")`` calls ``hubconf.name``)."""
    import ast

    out: List[Tuple[str, str]] = []
    by_rel = {rel: sf for rel, sf in sources.items()}
    cog = root / "cog.yaml"
    try:
        if cog.is_file() and cog.stat().st_size < 1_000_000:
            for kind, path, obj in _COG_ENTRY.findall(cog.read_text(encoding="utf-8", errors="replace")):
                sf = by_rel.get(path.lstrip("./"))
                if sf is not None:
                    out.append((f"cog {kind}", f"{sf.modname}:{obj}"))
    except OSError:
        pass
    hub = by_rel.get("hubconf.py")
    text = getattr(hub, "text", None) if hub is not None else None
    if text:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            tree = None
        names: List[str] = []
        for st in tree.body if tree is not None else ():
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and not st.name.startswith("_"):
                names.append(st.name)
            elif isinstance(st, ast.ImportFrom) and any(a.name == "*" for a in st.names):
                # `from models import *`: the public functions of that project module are hubconf's too
                names.extend(_star_functions(st, hub, sources))
        for name in list(dict.fromkeys(names))[:MAX_HUB_FUNCTIONS]:
            out.append((f"torch.hub {name}", f"{hub.modname}:{name}"))
    return out


MAX_HUB_FUNCTIONS = 64


def _star_functions(st: "ast.ImportFrom", hub, sources: Mapping[str, object]) -> List[str]:
    """The public functions ``from <module> import *`` brings into *hub* from a project module: the names of its
    literal ``__all__`` that it defines as functions, else its module-level ``def``s without a leading underscore."""
    import ast

    if st.level:
        pkg = hub.modname.split(".")[:-1]
        if st.level - 1 > len(pkg):
            return []
        base = pkg[:len(pkg) - (st.level - 1)]
        target = ".".join(base + ([st.module] if st.module else []))
    else:
        target = st.module or ""
    src = next((sf for sf in sources.values() if getattr(sf, "modname", None) == target), None)
    text = getattr(src, "text", None) if src is not None else None
    if not text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    defs = [st2.name for st2 in tree.body if isinstance(st2, (ast.FunctionDef, ast.AsyncFunctionDef))]
    listed = None
    for st2 in tree.body:
        if isinstance(st2, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in st2.targets) \
                and isinstance(st2.value, (ast.List, ast.Tuple)):
            listed = [e.value for e in st2.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if listed is not None:
        return [n for n in listed if n in defs]
    return [n for n in defs if not n.startswith("_")]


def console_scripts(inputs: Sequence[Path], sources: Mapping[str, object],
                    facts: Optional[Mapping[str, dict]] = None) -> List[Tuple[str, str]]:
    """(script name, ``module:function``) declared by the packaging files of the inputs (and the programs
    :func:`declared_programs` finds: Cog predictors, torch.hub functions)."""
    out: List[Tuple[str, str]] = []
    by_path = {getattr(sf, "path", None): sf for sf in sources.values()}
    for inp in inputs:
        root = Path(inp)
        if not root.is_dir():
            continue
        out.extend(declared_programs(root, sources))
        for fname, reader in (("pyproject.toml", _toml_scripts), ("setup.cfg", _cfg_scripts)):
            p = root / fname
            try:
                if p.is_file() and p.stat().st_size < 2_000_000:
                    out.extend(reader(p.read_text(encoding="utf-8", errors="replace")))
            except OSError:
                continue
        setup = root / "setup.py"
        sf = by_path.get(setup.resolve()) if setup.is_file() else None
        if sf is None:
            continue
        known = (facts or {}).get(sf.relpath)
        if known is not None:
            out.extend(tuple(x) for x in known.get("console_scripts") or ())
        elif getattr(sf, "tree", None) is not None:
            out.extend(setup_py_scripts(sf.tree))
    return list(dict.fromkeys(out))


# modules whose import makes a script a build script: packaging, and building extensions or kernels
_BUILD_MODULES = ("setuptools", "distutils", "torch.utils.cpp_extension", "Cython", "pybind11", "cffi",
                  "numpy.distutils", "skbuild", "mesonpy", "triton.tools.compile", "ninja", "cmake")


def _builds(sf, known: Optional[dict]) -> Optional[bool]:
    """Whether a script imports a packaging or extension-building module (:data:`_BUILD_MODULES`); None when it
    cannot be told (no tree and no facts)."""
    mods: List[str] = []
    if known is not None and known.get("imports") is not None:
        for _caller, _line, targets, _absolute, _guard in known.get("imports") or ():
            mods.extend(targets)
    elif getattr(sf, "tree", None) is not None:
        for n in nodes_of(sf.tree, nodes.Import, nodes.ImportFrom):
            mods.extend(m for m, _a in n.names) if isinstance(n, nodes.Import) else mods.append(n.modname or "")
    else:
        return None
    return any(m == b or m.startswith(b + ".") for m in mods for b in _BUILD_MODULES)


def _function_exists(tree: nodes.Module, dotted: str) -> bool:
    scope = tree
    for part in dotted.split("."):
        found = None
        for st in scope.body:
            if isinstance(st, (nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.ClassDef)) and st.name == part:
                found = st
        if found is None:
            # an imported or assigned name at module level also makes a valid target (`main = cli.main`)
            return scope is tree and part in tree.locals and dotted.count(".") == 0
        scope = found
    return True


def discover(sources: Mapping[str, object], inputs: Sequence[Path], *, imported: Iterable[str] = (),
             roles: Optional[Mapping[str, str]] = None, facts: Optional[Mapping[str, dict]] = None) -> List[EntryPoint]:
    """Entry points of an analysed project (``sources``: report path -> SourceFile).

    *facts* (report path -> :func:`analyse.reach.module_facts`) spares parsing the trees again;
    files without facts are read from their tree."""
    imported = set(imported)
    out: Dict[Tuple[str, Optional[str]], EntryPoint] = {}
    by_mod = _module_index(sources)
    file_inputs = {Path(p).resolve() for p in inputs if Path(p).is_file()}
    for rel, sf in sources.items():
        if sf.path in file_inputs:
            out[(rel, None)] = EntryPoint(rel, "given", sf.modname, None, role_of(rel, roles))
    for name, spec in console_scripts(inputs, sources, facts):
        hit = _target(spec, by_mod)
        if hit is None:
            continue
        sf, func = hit
        key = (sf.relpath, func)
        if key not in out:
            # a torch.hub function is a way to run the hubconf.py module, which torch.hub.load imports: a library
            # module (migrate puts no shim in it)
            out[key] = EntryPoint(sf.relpath, "console-script", sf.modname, func, role_of(sf.relpath, roles), name,
                                  library=sf.relpath.rsplit("/", 1)[-1] == "hubconf.py")
    script_files = {ep.path for ep in out.values() if ep.reason == "console-script"}   # a program of the package
    invoked = invocations(inputs, sources)
    for rel, sf in sorted(sources.items()):
        if (rel, None) in out:
            continue
        known = (facts or {}).get(rel)
        if known is None:
            tree = sf.tree
            if tree is None:
                continue
            main, top = has_main_guard(tree), None
            trains = trains_models(tree) if main or not sf.is_package_init else False
            cli = parses_command_line(tree) if main else False
        else:
            main, top = bool(known.get("main_guard")), bool(known.get("top_level_code"))
            trains, cli = known.get("trains"), known.get("cli")
            if (trains is None or cli is None) and getattr(sf, "tree", None) is not None:
                trains, cli = trains_models(sf.tree), parses_command_line(sf.tree)
        tests = bool(known.get("test_functions")) if known is not None and "test_functions" in known else None
        role, evidence = program_role_evidence(
            rel, roles, trains=bool(trains),
            self_test=bool(main) and not trains and not cli and rel not in script_files
            and _library_module(sf, by_mod, imported),
            invoked=invoked.get(rel), collected=tests if tests is not None else True, program=bool(main and cli),
            builds=_builds(sf, known) if build_by_name(rel) else None)
        if main:
            out[(rel, None)] = EntryPoint(rel, "main-guard", sf.modname, None, role, role_evidence=evidence,
                                          library=_importable(sf, by_mod, imported))
        elif not sf.is_package_init and role not in ("build", "docs") and sf.modname not in imported:
            if top is None:
                top = has_top_level_code(sf.tree)
            if top:
                out[(rel, None)] = EntryPoint(rel, "top-level-code", sf.modname, None, role, role_evidence=evidence)
    return group_copies(sorted(out.values(), key=lambda e: (e.path, e.function or "")), sources)


# files of an input folder that can declare a program (console_scripts, declared_programs)
_DECLARING_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "cog.yaml")


def may_have_programs(inputs: Sequence[Path], entries: Sequence[str], prescans: Sequence) -> bool:
    """False only when :func:`discover` (and ``--entry``) can find no entry point: no entry given, no input file
    (every input file is an entry point), no file of an input folder that declares programs, no ``hubconf.py``,
    no module with a ``__main__`` block (each pre-scan's ``program``) and none with top-level work that no
    project module imports (``top_level``, ``imports``; a package ``__init__`` is no program). discover's
    conditions, less its file roles: the reach facts of a project it says False for are never read."""
    if entries:
        return True
    for inp in inputs:
        root = Path(inp)
        if not root.is_dir():
            return True
        if any(os.path.lexists(root / name) for name in _DECLARING_FILES):
            return True
    parsed = [pre for pre in prescans if pre.error is None]
    if any(pre.program or pre.relpath.rsplit("/", 1)[-1] == "hubconf.py" for pre in parsed):
        return True
    imported = {m for pre in parsed for m in pre.imports}
    return any(pre.top_level and pre.relpath.rsplit("/", 1)[-1] != "__init__.py" and pre.modname not in imported
               for pre in parsed)


def project_imports(tree: nodes.Module, resolver, modules: frozenset) -> Tuple[str, ...]:
    """The project modules (of *modules*) the module imports, with their parent packages, itself left out:
    what :func:`analyse.reach.imported_modules` takes from the module's call-graph summary (every ``import`` /
    ``from ... import`` of the module, nested ones too), kept to the project's modules."""
    found: set = set()
    for imp in nodes_of(tree, nodes.Import, nodes.ImportFrom):
        if isinstance(imp, nodes.ImportFrom):
            base = resolver.absolute_import(imp.modname, imp.level)
            found.add(base)
            found.update(f"{base}.{m}" for m, _ in imp.names if m != "*")
        else:
            found.update(m for m, _ in imp.names)
    out: set = set()
    for m in found:
        parts = m.split(".")
        for i in range(1, len(parts) + 1):
            q = ".".join(parts[:i])
            if q in modules:
                out.add(q)
    out.discard(resolver.modname)
    return tuple(sorted(out))


def _importable(sf, by_mod: Mapping[str, object], imported) -> bool:
    """Whether a file with a main block is also a library module: a module of an analysed package (whoever
    imports the package imports it), or a torch.hub ``hubconf.py`` (``torch.hub.load`` imports it). A
    package's ``__main__.py`` is a program, and so is a top-level script another script imports
    (``import val`` in ``train.py``): it is run as a program and imported only by the project's programs."""
    if sf.relpath.endswith("__main__.py") or sf.is_package_init:
        return False
    if sf.relpath.rsplit("/", 1)[-1] == "hubconf.py":
        return True
    parent = sf.modname.rpartition(".")[0]
    pkg = by_mod.get(parent) if parent else None
    return pkg is not None and bool(getattr(pkg, "is_package_init", False))


def _library_module(sf, by_mod: Mapping[str, object], imported) -> bool:
    """A module of one of the project's packages (its parent is an analysed ``__init__.py``) that
    other project modules import: its ``__main__`` block is a self-test, not the product's program."""
    parent = sf.modname.rpartition(".")[0]
    if not parent or sf.is_package_init or sf.modname not in imported or sf.relpath.endswith("__main__.py"):
        return False
    pkg = by_mod.get(parent)
    return pkg is not None and bool(getattr(pkg, "is_package_init", False))


def parse_entry(spec: str) -> Tuple[str, Optional[str]]:
    """``FILE[:FUNCTION]`` -> (file, function or None); a Windows drive letter is not a function."""
    spec = spec.strip()
    if ":" in spec:
        file, _, func = spec.rpartition(":")
        if file and re.fullmatch(r"[A-Za-z_][\w.]*", func) and not re.fullmatch(r"[A-Za-z]", file):
            return file, func
    return spec, None


def given_entries(specs: Sequence[str], sources: Mapping[str, object],
                  roles: Optional[Mapping[str, str]] = None) -> List[EntryPoint]:
    """``--entry FILE[:FUNCTION]`` values -> entry points; ValueError names a value that matches nothing."""
    out: List[EntryPoint] = []
    by_abs = {Path(sf.path).resolve(): sf for sf in sources.values()}
    for spec in specs:
        file, func = parse_entry(spec)
        sf = None
        p = Path(file)
        try:
            if p.exists():
                sf = by_abs.get(p.resolve())
        except OSError:
            sf = None
        if sf is None:
            norm = file.replace("\\", "/").lstrip("./") if not file.startswith("../") else file
            cands = [s for rel, s in sources.items() if rel == norm or rel.endswith("/" + norm)]
            if len(cands) > 1:
                raise ValueError(f"--entry {spec}: {file} matches several analysed files: "
                                 f"{', '.join(sorted(c.relpath for c in cands)[:5])}")
            sf = cands[0] if cands else None
        if sf is None:
            raise ValueError(f"--entry {spec}: no analysed Python file matches {file}")
        qual = None
        if func:
            if sf.tree is None or not _function_exists(sf.tree, func):
                raise ValueError(f"--entry {spec}: {sf.relpath} has no function {func}")
            qual = f"{sf.modname}.{func}"
        ep = EntryPoint(sf.relpath, "given", sf.modname, qual, role_of(sf.relpath, roles))
        if ep not in out:
            out.append(ep)
    return out


def check_entry_files(specs: Sequence[str], inputs: Sequence[Path]) -> None:
    """Fail early (ValueError) when an ``--entry`` file exists neither as a path nor under an input."""
    for spec in specs:
        file, _func = parse_entry(spec)
        if not file.endswith((".py", ".ipynb")):
            raise ValueError(f"--entry {spec}: expected a Python file or a notebook, FILE[:FUNCTION]")
        if Path(file).is_file():
            continue
        norm = file.replace("\\", "/")
        if any(Path(inp).is_dir() and (Path(inp) / norm).is_file() for inp in inputs):
            continue
        if any(Path(inp).is_file() and Path(inp).name == Path(norm).name for inp in inputs):
            continue
        if any(Path(inp).is_dir() and any(Path(inp).rglob(Path(norm).name)) for inp in inputs):
            continue   # a path relative to a sub-folder: matched against report paths after parsing
        raise ValueError(f"--entry {spec}: file not found ({file})")
