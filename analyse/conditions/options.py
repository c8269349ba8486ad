"""Options and their defaults: where a program's settings come from, read without running it.

:func:`collect` reads one module for option declarations (picklable: name -> default literals):

* argparse ``add_argument("--use-fp16", action="store_true")`` (dest ``use_fp16``, default False;
  ``store_false`` -> True; ``default=`` otherwise; no default -> None);
* click ``@click.option("--fp16", is_flag=True)`` / ``default=``; typer ``fp16: bool = typer.Option(False)``;
* config classes: fields with a literal default of ``@dataclass`` / attrs (``@attr.s``, ``@define``,
  ``attr.ib(default=...)``) classes, pydantic ``BaseModel`` / ``BaseSettings``, and classes derived from
  HF ``TrainingArguments`` (or any ``*Arguments`` / ``*Config`` / ``*Args`` / ``*Settings`` class) that
  ``HfArgumentParser`` reads;

:func:`collect_config_file` reads a YAML / JSON / TOML file of the repository (``yaml.safe_load`` /
``json`` / ``tomllib`` only) into the same table (keys at any depth).

The pipeline merges the tables of every module into the project's (:class:`analyse.resolve.ProjectIndex`
``option_defaults``) and hands it to :func:`configure` in each process before the passes run; the
builder (:mod:`analyse.conditions.build`) then asks :func:`option_values` for ``args.x`` / ``cfg.x``.
A name declared with different defaults in several places has no single default (conditional).
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from astroid import nodes

from analyse.syntax import nodes_of

_STATE = {"options": {}, "params_are_choices": False, "gpu_only": frozenset(), "torch_api": frozenset(),
          "config_keys": frozenset(), "config_by_module": {}, "import_helpers": frozenset(), "torch_version": None,
          "module_flags": {}, "instance_settings": {}, "generation": 0}
MAX_OPTIONS = 20000


def configure(options: Optional[Dict[str, tuple]] = None, mode: str = "script",
              gpu_only: Optional[Iterable[str]] = None, torch_api: Optional[Iterable[str]] = None,
              config_keys: Optional[Iterable[str]] = None,
              config_by_module: Optional[Dict[str, Dict[str, list]]] = None,
              import_helpers: Optional[Iterable[str]] = None, torch_version: Optional[str] = None,
              module_flags: Optional[Dict[str, tuple]] = None,
              instance_settings: Optional[Dict[str, Dict[str, tuple]]] = None) -> None:
    """Set the project's option table and the mode for the conditions built in this process.
    In ``thirdparty`` mode a parameter of a library function is its caller's choice (conditional);
    in ``script`` mode it takes its default. *gpu_only*: modules with no NPU path (from the knowledge
    base, handed in by the pipeline): a fallback that imports one is no fallback. *torch_api*: the qualified names
    of the target torch version's API list (``hasattr(F, "scaled_dot_product_attention")`` is true there).
    *config_keys*: the options declared by the configuration files the code names (YAML / JSON / TOML data read
    by :func:`read_config`), which :func:`config_value` answers for; *config_by_module*: module -> the options of
    the configuration files that module names, which :func:`config_values` answers for. *import_helpers*: the
    names of the project's functions that import the module a string names and hand it back
    (:class:`analyse.resolve.ImportHelper`), for :func:`import_helper_name`. *torch_version*: the torch
    version the run resolved (``2.13.0``), which a test of ``torch.__version__`` is valued against. *module_flags*:
    ``module.NAME`` -> (kind, values) of the flags modules define (:func:`analyse.conditions.build.collect_flags`),
    for the modules that import them. *instance_settings*: ``module.Class`` -> attribute -> (parameter, position,
    default known, default) of the attributes a class's constructor sets from its parameters
    (:func:`analyse.conditions.build.collect_instance_settings`), for tests of an instance's attribute elsewhere."""
    _STATE["generation"] += 1   # conditions memoised on the trees before (the pre-scan's) are stale
    _STATE["options"] = dict(options or {})
    _STATE["module_flags"] = dict(module_flags or {})
    _STATE["instance_settings"] = dict(instance_settings or {})
    _STATE["import_helpers"] = frozenset(import_helpers or ())
    _STATE["config_keys"] = frozenset(config_keys or ())
    _STATE["config_by_module"] = dict(config_by_module or {})
    _STATE["params_are_choices"] = mode == "thirdparty"
    if gpu_only is not None:
        _STATE["gpu_only"] = frozenset(gpu_only)
    if torch_api is not None:
        _STATE["torch_api"] = frozenset(torch_api)
    if torch_version is not None:
        _STATE["torch_version"] = torch_version


def generation() -> int:
    """How many times :func:`configure` ran in this process: a condition or guard memoised on a tree under an
    earlier generation (the pre-scan builds some before the project's options and flags are known) is recomputed."""
    return _STATE["generation"]


def instance_settings() -> Dict[str, Dict[str, tuple]]:
    """``module.Class`` -> attribute -> (parameter, position, default known, default): what each project class's
    constructor keeps of its parameters (``self.is_vllm = use_vllm``)."""
    return _STATE["instance_settings"]


def module_flags() -> Dict[str, tuple]:
    """``module.NAME`` -> (kind, (value with transfer_to_npu, without)) of the project's module-level flags."""
    return _STATE["module_flags"]


def torch_version() -> Optional[str]:
    """The torch version the run resolved (the knowledge base's), or None when none was configured."""
    return _STATE["torch_version"]


def torch_has(qualname: str) -> bool:
    """True when *qualname* (``torch.nn.functional.scaled_dot_product_attention``) is in the target torch
    version's API list."""
    return qualname in _STATE["torch_api"]


def gpu_only_module(name: str) -> bool:
    """True when module *name* (or a package above it) is a GPU-only library."""
    mods = _STATE["gpu_only"]
    if not mods or not name:
        return False
    parts = name.split(".")
    return any(".".join(parts[:i]) in mods for i in range(1, len(parts) + 1))


def import_helper_name(name: str) -> bool:
    """True when *name* is the name of one of the project's import helpers (``optional_import``): the other
    elements of the tuple it hands back (``cp, has_cp = optional_import("cupy")``) say whether the import
    worked."""
    return name in _STATE["import_helpers"]


def params_are_choices() -> bool:
    return _STATE["params_are_choices"]


def option_values(name: str) -> tuple:
    """The distinct default literals declared for option *name* in the project (empty: not declared)."""
    return _STATE["options"].get(name, ())


def config_value(name: str) -> Tuple[bool, object]:
    """(True, value) when a configuration file the program loads sets *name* to one flag, and no other declaration
    of the project gives it another default (``low_resource: True`` in the YAML an argparse default names); (False,
    None) otherwise. Flags only: a string key (``device: cuda``, ``name: tiny``) is too often an unrelated parameter's
    name. The file was read as data (:func:`read_config`), never run."""
    if name not in _STATE["config_keys"]:
        return False, None
    vals = _STATE["options"].get(name, ())
    if len(vals) != 1 or not isinstance(vals[0], bool):
        return False, None
    return True, vals[0]


def config_values(name: str, module: str) -> tuple:
    """The values the configuration files module *module* names (its default configuration, read as data by
    :func:`read_config`, never run) give option *name*; () when none of them declares it."""
    return tuple((_STATE["config_by_module"].get(module) or {}).get(name, ()))


def literal(node) -> Tuple[bool, object]:
    """(True, value) for a literal constant of the tree (numbers, strings, None, bools, tuples / lists /
    sets / dicts of literals, a negated number); (False, None) otherwise. Nothing is evaluated."""
    if node is None:
        return False, None
    if isinstance(node, nodes.Const):
        return True, node.value
    if isinstance(node, nodes.UnaryOp) and node.op == "-" and isinstance(node.operand, nodes.Const) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return True, -node.operand.value
    if type(node) in (nodes.Tuple, nodes.List, nodes.Set):
        out = []
        for e in node.elts[:64]:
            ok, v = literal(e)
            if not ok:
                return False, None
            out.append(v)
        if type(node) is nodes.Set:
            try:
                return True, frozenset(out)
            except TypeError:
                return False, None
        return True, tuple(out)
    if isinstance(node, nodes.Dict) and not node.items:
        return True, {}
    return False, None


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _add(out: Dict[str, list], name: str, value) -> None:
    if not name or not name.isidentifier() or not _hashable(value):
        return
    lst = out.setdefault(name, [])
    if value not in lst and len(lst) < 8:
        lst.append(value)


def _leaf(node) -> str:
    if isinstance(node, nodes.Attribute):
        return node.attrname
    if isinstance(node, nodes.Name):
        return node.name
    return ""


def _kw(call: nodes.Call, name: str):
    for k in call.keywords or ():
        if k.arg == name:
            return k.value
    return None


def _argparse(call: nodes.Call, out: Dict[str, list]) -> None:
    flags = [a.value for a in call.args if isinstance(a, nodes.Const) and isinstance(a.value, str)]
    if not flags:
        return
    dest_node = _kw(call, "dest")
    if isinstance(dest_node, nodes.Const) and isinstance(dest_node.value, str):
        dest = dest_node.value
    else:
        longs = [f for f in flags if f.startswith("--")]
        dest = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
    action = _kw(call, "action")
    act = action.value if isinstance(action, nodes.Const) else None
    default = _kw(call, "default")
    if default is not None:
        ok, v = literal(default)
        if ok:
            _add(out, dest, v)
        return
    if act == "store_true":
        _add(out, dest, False)
    elif act == "store_false":
        _add(out, dest, True)
    elif act in ("count",):
        _add(out, dest, None)
    elif call.keywords is not None and _kw(call, "required") is None:
        _add(out, dest, None)


def _click(call: nodes.Call, out: Dict[str, list]) -> None:
    flags = [a.value for a in call.args if isinstance(a, nodes.Const) and isinstance(a.value, str)]
    longs = [f for f in flags if f.startswith("--")]
    names = [f for f in flags if not f.startswith("-")]
    if names:
        dest = names[0]
    elif longs:
        dest = longs[0].split("/")[0].lstrip("-").replace("-", "_")
    else:
        return
    default = _kw(call, "default")
    if default is not None:
        ok, v = literal(default)
        if ok:
            _add(out, dest, v)
        return
    is_flag = _kw(call, "is_flag")
    if isinstance(is_flag, nodes.Const) and is_flag.value or (longs and "/" in longs[0]):
        _add(out, dest, False)
    else:
        _add(out, dest, None)


_CONFIG_DECORATORS = ("dataclass", "dataclasses.dataclass", "attr.s", "attrs", "attr.attrs", "define", "attrs.define",
                      "frozen", "attr.define", "mutable", "pydantic.dataclasses.dataclass")
_CONFIG_BASES = ("BaseModel", "BaseSettings", "TrainingArguments", "Seq2SeqTrainingArguments", "PretrainedConfig",
                 "Config", "ConfigMixin")


def config_class(cls: nodes.ClassDef) -> bool:
    """A config class: a ``@dataclass`` / attrs class, or one derived from a settings base (pydantic, HF arguments,
    ``*Config`` / ``*Args`` ...), whose fields are options with their defaults as written."""
    for d in (cls.decorators.nodes if cls.decorators else ()):
        f = d.func if isinstance(d, nodes.Call) else d
        try:
            s = f.as_string()
        except Exception:  # pragma: no cover
            continue
        if s in _CONFIG_DECORATORS or s.endswith(".dataclass"):
            return True
    for b in cls.bases:
        name = _leaf(b)
        if name in _CONFIG_BASES or name.endswith(("Arguments", "Args", "Config", "Settings", "Options", "Params")):
            return True
    return False


def field_default(value):
    """(True, default) of a config class field's value (a literal, ``field(default=...)``), else (False, None)."""
    ok, v = literal(value)
    if ok:
        return True, v
    if isinstance(value, nodes.Call) and _leaf(value.func) in ("field", "ib", "attrib", "Field", "Option",
                                                                   "Argument"):
        d = _kw(value, "default")
        if d is None and value.args and _leaf(value.func) in ("Field", "Option", "Argument"):
            d = value.args[0]
        return literal(d) if d is not None else (False, None)
    return False, None


def collect(tree: nodes.Module) -> Tuple[Tuple[str, tuple], ...]:
    """The option declarations of one module: ((name, (default, ...)), ...), sorted."""
    out: Dict[str, list] = {}
    for node in nodes_of(tree, nodes.Call, nodes.ClassDef, nodes.FunctionDef):
        if isinstance(node, nodes.Call):
            leaf = _leaf(node.func)
            if leaf == "add_argument":
                _argparse(node, out)
            elif leaf == "option" and isinstance(node.func, nodes.Attribute) and _leaf(node.func.expr) == "click":
                _click(node, out)
        elif isinstance(node, nodes.ClassDef):
            if config_class(node):
                for st in node.body:
                    if isinstance(st, nodes.AnnAssign) and isinstance(st.target, nodes.AssignName) and st.value is not None:
                        ok, v = field_default(st.value)
                        if ok:
                            _add(out, st.target.name, v)
                    elif isinstance(st, nodes.Assign) and len(st.targets) == 1 \
                            and isinstance(st.targets[0], nodes.AssignName):
                        ok, v = field_default(st.value)
                        if ok and not st.targets[0].name.isupper():
                            _add(out, st.targets[0].name, v)
        elif isinstance(node, nodes.FunctionDef) and node.args is not None:
            # typer: def main(fp16: bool = typer.Option(False))
            for a, d in zip(reversed(node.args.args or []), reversed(node.args.defaults or [])):
                if isinstance(d, nodes.Call) and _leaf(d.func) in ("Option", "Argument") \
                        and _leaf(getattr(d.func, "expr", d.func)) in ("typer", "Option", "Argument"):
                    ok, v = field_default(d)
                    if ok:
                        _add(out, a.name, v)
    return tuple(sorted((k, tuple(v)) for k, v in out.items()))


MAX_CONFIG_VISITS = 100_000   # values of one configuration document looked at, in all (aliases count each time)
MAX_YAML_NODES = 200_000      # YAML nodes composed for one document (an alias bomb is refused past it)


def collect_config_data(data, out: Dict[str, list], depth: int = 0, budget: Optional[List[int]] = None) -> None:
    """Keys of a parsed YAML / JSON / TOML document with scalar values (at any depth, capped).

    Depth (6), width (2,000 keys, 200 items) and the total of values visited (:data:`MAX_CONFIG_VISITS`) are
    bounded: a YAML alias bomb shares one list at every level, so width and depth alone let the walk grow as
    the width to the power of the depth."""
    budget = budget if budget is not None else [MAX_CONFIG_VISITS]
    if depth > 6 or len(out) > MAX_OPTIONS or budget[0] <= 0:
        return
    if isinstance(data, dict):
        for k, v in list(data.items())[:2000]:
            budget[0] -= 1
            if budget[0] <= 0:
                return
            if isinstance(v, (dict, list)):
                collect_config_data(v, out, depth + 1, budget)
            elif isinstance(k, str) and (v is None or isinstance(v, (bool, int, float, str))):
                _add(out, k.replace("-", "_"), v)
    elif isinstance(data, list):
        for v in data[:200]:
            budget[0] -= 1
            if budget[0] <= 0:
                return
            collect_config_data(v, out, depth + 1, budget)


class YamlTooLarge(ValueError):
    """A YAML document with more nodes (aliases counted each time they are used) than :data:`MAX_YAML_NODES`."""


def safe_yaml(text: str):
    """``yaml.safe_load`` that counts the nodes it constructs, each alias each time it is met, and stops past
    :data:`MAX_YAML_NODES` (:class:`YamlTooLarge`)."""
    import yaml

    class _Bounded(yaml.SafeLoader):
        composed = 0      # nodes of the document (an alias is not a new node)
        constructed = 0   # nodes built, an alias each time it is used

        def compose_node(self, parent, index):
            _Bounded.composed += 1
            if _Bounded.composed > MAX_YAML_NODES:
                raise YamlTooLarge(f"more than {MAX_YAML_NODES} YAML nodes")
            return super().compose_node(parent, index)

        def construct_object(self, node, deep=False):
            _Bounded.constructed += 1
            if _Bounded.constructed > MAX_YAML_NODES:
                raise YamlTooLarge(f"more than {MAX_YAML_NODES} YAML nodes (aliases counted each time)")
            return super().construct_object(node, deep)

    loader = _Bounded(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
MAX_CONFIG_BYTES = 1_000_000


def config_refs(tree: nodes.Module) -> Tuple[str, ...]:
    """Configuration files a module names with a literal path (``yaml.safe_load(open("configs/train.yaml"))``,
    ``default="configs/base.yaml"``): the default configuration the program loads."""
    out = []
    for c in nodes_of(tree, nodes.Const):
        v = c.value
        if isinstance(v, str) and v.lower().endswith(CONFIG_SUFFIXES) and len(v) < 300 and "\n" not in v \
                and "{" not in v and v not in out:
            out.append(v)
            if len(out) >= 20:
                break
    return tuple(out)


def read_config(path) -> Optional[Dict[str, list]]:
    """The option table of one configuration file (``yaml.safe_load`` / ``json`` / ``tomllib`` only), None when
    it cannot be read or is too large."""
    import json
    from pathlib import Path

    p = Path(path)
    try:
        if not p.is_file() or p.stat().st_size > MAX_CONFIG_BYTES:
            return None
        raw = p.read_bytes()
    except OSError:
        return None
    suffix = p.suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            data = safe_yaml(raw.decode("utf-8", errors="replace"))
        elif suffix == ".json":
            data = json.loads(raw.decode("utf-8", errors="replace"))
        else:
            try:
                import tomllib
            except ImportError:  # pragma: no cover - Python < 3.11
                return None
            data = tomllib.loads(raw.decode("utf-8", errors="replace"))
    except Exception:   # a malformed configuration is only lost evidence
        return None
    out: Dict[str, list] = {}
    collect_config_data(data, out)
    return out


def merge(tables: Iterable[Tuple[Tuple[str, tuple], ...]]) -> Dict[str, tuple]:
    merged: Dict[str, list] = {}
    for t in tables:
        for name, vals in t:
            for v in vals:
                _add(merged, name, v)
    return {k: tuple(v) for k, v in merged.items()}
