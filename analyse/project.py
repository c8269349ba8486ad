"""Finding, reading and parsing the files of an analysed project.

Nothing here imports or executes analysed code: files are read as bytes,
decoded (PEP 263 coding cookie honoured) and parsed into astroid trees without
inference. Every failure becomes an :class:`~analyse.findings.AnalysisError`.
"""

from __future__ import annotations

import fnmatch
import io
import os
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional, Tuple

import astroid
from astroid import nodes
from astroid.builder import AstroidBuilder

from analyse.findings import AnalysisError

SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", "build", "dist", "node_modules", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "site-packages", "venv", ".venv",
    "env", ".env", "virtualenv",
}
MAX_FILE_BYTES = 5 * 1024 * 1024


def is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path / "bin" / "activate").is_file()


def iter_files(root: Path, suffixes: Tuple[str, ...] = (".py",), names: Tuple[str, ...] = ()) -> Iterator[Path]:
    """Files under *root* with the given suffixes (or a name matching one of the *names*
    globs), skipping hidden folders, VCS folders, virtualenvs and build outputs. Deterministic order."""
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in SKIP_DIRS or d.endswith(".egg-info"):
                continue
            if is_virtualenv(base / d):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            if (f.endswith(suffixes) or (names and any(fnmatch.fnmatchcase(f, g) for g in names))) and not f.startswith("."):
                yield base / f


def module_name_for(path: Path, root: Path) -> str:
    """Dotted module name of *path* inside the project rooted at *root*.

    When *root* is itself a package (has ``__init__.py``), its name is the
    first component (``site-packages/mmcv`` -> ``mmcv.ops.nms``).
    """
    if root.is_file():
        return path.stem
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if (root / "__init__.py").is_file():
        parts = [root.name] + parts
    return ".".join(parts) if parts else root.name


def decode_source(data: bytes) -> str:
    """Decode like the interpreter does (BOM, coding cookie, default utf-8)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


@dataclass
class SourceFile:
    path: Path          # absolute path on disk
    relpath: str        # '/'-separated, relative to the analysed root
    modname: str
    text: str = ""
    lines: List[str] = field(default_factory=list)
    tree: Optional[nodes.Module] = None

    @property
    def is_package_init(self) -> bool:
        return self.path.name == "__init__.py"

    def line(self, lineno: int) -> str:
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1]
        return ""


class _SyntacticBuilder(AstroidBuilder):
    """astroid's builder without the post-build steps that infer or import.

    The stock ``_post_build`` caches every module in the global manager (memory
    grows with the project), resolves ``from x import *`` by *loading x* from
    sys.path, and runs inference on every ``self.attr = ...`` to fill
    ``instance_attrs`` -- which imports and parses the standard library and can
    take seconds per file. Here imported names go to the locals without
    loading anything (star imports are left to the resolver), and
    ``instance_attrs`` is filled syntactically from ``self.<attr> = ...`` in
    methods.
    """

    def _post_build(self, module, builder, encoding):
        module.file_encoding = encoding
        for from_node, global_names in builder._import_from_nodes:
            if from_node.modname == "__future__":
                for symbol, _ in from_node.names:
                    module.future_imports.add(symbol)
            for name, asname in from_node.names:
                if name == "*":
                    continue
                local = asname or name
                target = module if local in global_names else from_node.parent
                target.set_local(local, from_node)
                target.scope().locals[local].sort(key=lambda n: n.fromlineno or 0)
        for assattr in builder._delayed_assattr:
            _syntactic_assattr(assattr)
        return module


def _syntactic_assattr(node: nodes.AssignAttr) -> None:
    expr = node.expr
    if not isinstance(expr, nodes.Name):
        return
    func = node.scope()
    if not isinstance(func, nodes.FunctionDef) or not isinstance(func.parent, nodes.ClassDef):
        return
    args = func.args.posonlyargs + func.args.args if func.args.args is not None else []
    if not args or args[0].name != expr.name:
        return
    values = func.parent.instance_attrs.setdefault(node.attrname, [])
    if node not in values:
        values.append(node)


_BUILDER = None


def _builder() -> AstroidBuilder:
    global _BUILDER
    if _BUILDER is None:
        _BUILDER = _SyntacticBuilder(astroid.MANAGER, apply_transforms=False)
    return _BUILDER


def load_source(path: Path, relpath: str, modname: str) -> Tuple[Optional[SourceFile], Optional[AnalysisError]]:
    """Read, decode and parse one file. Returns (file, None) or (None, error)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, AnalysisError(relpath, "too-large", f"{size} bytes exceeds the {MAX_FILE_BYTES}-byte limit")
        data = path.read_bytes()
    except OSError as exc:
        return None, AnalysisError(relpath, "io", f"cannot read file: {exc.strerror or exc}")
    try:
        text = decode_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return None, AnalysisError(relpath, "encoding", f"cannot decode file: {exc}")
    if "\x00" in text:
        return None, AnalysisError(relpath, "encoding", "file contains NUL bytes (binary file?)")
    return parse_source(text, path, relpath, modname)


def parse_source(text: str, path: Path, relpath: str, modname: str) -> Tuple[Optional[SourceFile], Optional[AnalysisError]]:
    try:
        tree = _builder().string_build(text, modname=modname, path=str(path))
    except astroid.AstroidSyntaxError as exc:
        err = exc.error if isinstance(getattr(exc, "error", None), SyntaxError) else None
        line = getattr(err, "lineno", None) if err else None
        msg = f"{err.msg}" if err is not None and getattr(err, "msg", None) else str(exc).splitlines()[0]
        if err is not None and _looks_like_python2(text):
            msg += " (Python 2 syntax: this file must be ported to Python 3 first)"
        return None, AnalysisError(relpath, "syntax", msg, line)
    except (RecursionError, MemoryError) as exc:
        return None, AnalysisError(relpath, "too-large", f"file too deeply nested to parse: {type(exc).__name__}")
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes, odd tokenizer failures
        return None, AnalysisError(relpath, "syntax", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    sf = SourceFile(path=path, relpath=relpath, modname=modname, text=text, lines=text.splitlines(), tree=tree)
    return sf, None


def _looks_like_python2(text: str) -> bool:
    import re

    return bool(re.search(r"^\s*print\s+[\"'\w]|^\s*exec\s+[\"']|except\s+\w+\s*,\s*\w+\s*:|\bur[\"']", text, re.M))


def discover(inputs: Iterable[Path], suffixes: Tuple[str, ...] = (".py",),
             admit: Optional[Callable[[Path, str], bool]] = None, names: Tuple[str, ...] = ()) -> List[Tuple[Path, Path, str, str]]:
    """(abs path, root, relpath, modname) for each file of each input.

    *admit(abspath, relpath)*, when given, is asked about every file; a file it
    rejects (an ``exclude`` glob of the configuration) is left out."""
    inputs = list(inputs)
    out = []
    seen = set()
    for inp in inputs:
        root = inp.resolve()
        for p in iter_files(root, suffixes, names):
            ap = p.resolve()
            if ap in seen:
                continue
            seen.add(ap)
            if root.is_file():
                rel = p.name
                if len(inputs) > 1:  # several files (pre-commit): as given, so a/utils.py and b/utils.py differ
                    rel = Path(os.path.normpath(str(inp))).as_posix()
            else:
                rel = p.relative_to(root).as_posix()
                if len(inputs) > 1:
                    rel = f"{root.name}/{rel}"
            if admit is not None and not admit(ap, rel):
                continue
            out.append((ap, root, rel, module_name_for(ap, root) if ap.suffix == ".py" else rel))
    return out
