"""The YAML configurations a program loads, read for the objects they build (``_target_`` / ``target`` entries).

A program names its configuration in its code: ``@hydra.main(config_path="configs", config_name="train")`` (the
default config, with the files of its Hydra ``defaults`` list), or a literal path in a call
(``OmegaConf.load("configs/model.yaml")``, an option's ``default="configs/base.yaml"``). Where the default Hydra
config does not exist in the project, the run names one on the command line (``--config-name``): every config the
project ships under ``config_path`` is one it may load. :func:`config_loads` lists those references of one module
(plain data, cached with the module); :func:`built_objects` reads the files (``yaml`` composed with line numbers,
bounded) and yields each mapping that builds an object: the dotted target, its keyword arguments (the sibling keys of
a Hydra ``_target_``, the ``params`` of an ``instantiate_from_config`` ``target``) and where each is written.

Used by the implicit-gpu-libs pass: a Lightning ``Trainer`` built from ``trainer: {_target_: ...Trainer,
accelerator: gpu}`` asks for the GPU accelerator as much as ``Trainer(accelerator="gpu")`` in the code does.
"""

from __future__ import annotations

import os
from typing import Dict, Iterator, List, Optional, Tuple

from astroid import nodes

from analyse.guards import guard_of, tree_memo
from analyse.syntax import nodes_of

SUFFIXES = (".yaml", ".yml")
TARGET_KEYS = ("_target_", "target")
MAX_REFS = 20            # config references of one module
MAX_FILES = 64           # files read for one reference (a config directory, a defaults list)
MAX_BYTES = 1_000_000
MAX_NODES = 200_000      # YAML nodes composed for one document


def _leaf(func) -> str:
    if isinstance(func, nodes.Attribute):
        return func.attrname
    if isinstance(func, nodes.Name):
        return func.name
    return ""


def _str_kw(call: nodes.Call, name: str) -> Optional[str]:
    for k in call.keywords or ():
        if k.arg == name and isinstance(k.value, nodes.Const) and isinstance(k.value.value, str):
            return k.value.value
    return None


def config_loads(tree: nodes.Module, text: str) -> List[Tuple[int, str, str, str, Optional[dict]]]:
    """(line, kind, folder or path, config name, guard) of the configurations the module loads: ``hydra`` (a
    ``@hydra.main`` decorator: its config_path and config_name) and ``file`` (a literal ``.yaml`` argument of a
    call). The guard is the code's own at that line (a dict, or None)."""
    if "hydra" not in text and ".yaml" not in text and ".yml" not in text:
        return []
    memo = tree_memo(tree)
    out: List[Tuple[int, str, str, str, Optional[dict]]] = []

    def guard(n) -> Optional[dict]:
        g = guard_of(n, memo)
        return g.to_dict() if g is not None else None

    for n in nodes_of(tree, nodes.Call):
        if len(out) >= MAX_REFS:
            break
        if _leaf(n.func) == "main" and isinstance(n.func, nodes.Attribute) and _leaf(n.func.expr) == "hydra" \
                and isinstance(n.parent, nodes.Decorators):
            name = _str_kw(n, "config_name")
            if name:
                out.append((n.lineno or 1, "hydra", _str_kw(n, "config_path") or "", name, guard(n)))
            continue
        for a in list(n.args) + [k.value for k in n.keywords or ()]:
            if isinstance(a, nodes.Const) and isinstance(a.value, str) and a.value.endswith(SUFFIXES) \
                    and len(a.value) < 300 and "\n" not in a.value and "{" not in a.value:
                out.append((n.lineno or 1, "file", a.value, "", guard(n)))
                break
    return out


# --------------------------------------------------------------------------- reading the files

def _compose(path: str):
    """The composed YAML node tree of one file (line numbers kept), or None (unreadable, too large, malformed)."""
    import yaml

    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None

    class _Bounded(yaml.SafeLoader):
        count = 0

        def compose_node(self, parent, index):
            _Bounded.count += 1
            if _Bounded.count > MAX_NODES:
                raise yaml.YAMLError("too many nodes")
            return super().compose_node(parent, index)

    loader = _Bounded(text)
    try:
        return loader.get_single_node()
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    finally:
        loader.dispose()


def _scalar(node):
    """The value of a scalar node as YAML types it (str, bool, int, float, None)."""
    tag, v = node.tag or "", node.value
    if tag.endswith(":bool"):
        return v.lower() in ("true", "yes", "on")
    if tag.endswith(":null"):
        return None
    if tag.endswith(":int"):
        try:
            return int(v, 0)
        except ValueError:
            return v
    if tag.endswith(":float"):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _mapping(node) -> Dict[str, tuple]:
    """key -> (value node, key line) of a mapping node (string keys only)."""
    import yaml

    out: Dict[str, tuple] = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and isinstance(k.value, str):
                out[k.value] = (v, k.start_mark.line + 1)
    return out


def _defaults(root, here: str, config_dir: str) -> List[str]:
    """The files a Hydra ``defaults`` list composes (looked up in the config folder, then next to the file)."""
    import yaml

    entry = _mapping(root).get("defaults")
    if entry is None or not isinstance(entry[0], yaml.SequenceNode):
        return []
    out = []
    for item in entry[0].value:
        group, option = None, None
        if isinstance(item, yaml.ScalarNode):
            group, option = "", item.value
        elif isinstance(item, yaml.MappingNode) and len(item.value) == 1:
            k, v = item.value[0]
            if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                group = k.value.replace("override ", "").strip().lstrip("/").split("@", 1)[0]
                option = v.value
        if not isinstance(option, str) or option in ("_self_", "???", "null", ""):
            continue
        name = option if option.endswith(SUFFIXES) else option + ".yaml"
        for base in dict.fromkeys((config_dir, here)):
            cand = os.path.normpath(os.path.join(base, group or "", name))
            if os.path.isfile(cand):
                out.append(cand)
                break
    return out


def _inside(path: str, root: str) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top + os.sep)


def _shipped(folder: str) -> List[str]:
    out: List[str] = []
    for d, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(x for x in subdirs if not x.startswith("."))
        for f in sorted(files):
            if f.endswith(SUFFIXES):
                out.append(os.path.join(d, f))
                if len(out) >= MAX_FILES:
                    return out
    return out


def config_files(kind: str, where: str, name: str, folder: str, root: str) -> Tuple[List[str], bool]:
    """(the files a reference loads, named on the command line?) for one :func:`config_loads` entry of a module in
    *folder* (the analysed *root* bounds every path): the file and its defaults list; for a Hydra default config the
    project does not have, the configs shipped under its config_path."""
    if kind == "hydra":
        config_dir = os.path.normpath(os.path.join(folder, where))
        if not (os.path.isdir(config_dir) and _inside(config_dir, root)):
            return [], False
        first = os.path.join(config_dir, name if name.endswith(SUFFIXES) else name + ".yaml")
        if not os.path.isfile(first):
            return _shipped(config_dir), True
        starts = [first]
    else:
        config_dir = ""
        starts = [c for c in (os.path.normpath(os.path.join(b, where)) for b in (folder, root)) if os.path.isfile(c)][:1]
    return [p for p in starts if _inside(p, root)], False


def built_objects(path: str, root: str, config_dir: str = "", memo: Optional[dict] = None
                  ) -> Iterator[Tuple[str, str, int, Dict[str, Tuple[object, int]]]]:
    """(shown file, dotted target, its line, {keyword: (value, line)}) for each mapping of the file -- and of the
    files its defaults list composes -- that builds an object; a keyword's value is a scalar, or None for a mapping
    or list (what it is, is not read here). Files are read once per *memo*."""
    import yaml

    memo = memo if memo is not None else {}
    todo, seen = [path], set()
    while todo and len(seen) < MAX_FILES:
        p = os.path.normpath(todo.pop(0))
        if p in seen or not _inside(p, root):
            continue
        seen.add(p)
        if p not in memo:
            memo[p] = _compose(p)
        doc = memo[p]
        if doc is None:
            continue
        shown = os.path.relpath(p, root).replace(os.sep, "/")
        stack = [doc]
        visited = 0
        while stack and visited < MAX_NODES:
            cur = stack.pop()
            visited += 1
            if isinstance(cur, yaml.MappingNode):
                m = _mapping(cur)
                for tk in TARGET_KEYS:
                    t = m.get(tk)
                    if t is None or not isinstance(t[0], yaml.ScalarNode) or "." not in t[0].value:
                        continue
                    args = m if tk == "_target_" else _mapping((m.get("params") or (None,))[0])
                    kws = {k: (_scalar(v) if isinstance(v, yaml.ScalarNode) else None, line)
                           for k, (v, line) in args.items() if k not in TARGET_KEYS}
                    yield shown, t[0].value, t[1], kws
                    break
                stack.extend(v for _k, v in reversed(cur.value))
            elif isinstance(cur, yaml.SequenceNode):
                stack.extend(reversed(cur.value))
        todo.extend(_defaults(doc, os.path.dirname(p), config_dir or os.path.dirname(path)))
