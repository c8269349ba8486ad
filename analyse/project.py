"""Finding, reading and parsing the files of an analysed project.

Nothing here imports or executes analysed code: files are read as bytes,
decoded (PEP 263 coding cookie honoured) and parsed into astroid trees without
inference. Every failure becomes an :class:`~analyse.findings.AnalysisError`.
"""

from __future__ import annotations

import ast
import errno
import fnmatch
import functools
import io
import os
import platform
import re
import stat
import sys
import threading
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple, TypeVar

import astroid
from astroid import nodes
from astroid.rebuilder import TreeRebuilder

from analyse.findings import AnalysisError

SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", "build", "dist", "node_modules", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "site-packages", "venv", ".venv",
    "env", ".env", "virtualenv",
}
MAX_FILE_BYTES = 5 * 1024 * 1024
# Deeper trees are refused: valid Python, but generated (a 1,000-term sum), and the passes' lookups walk
# up the parents of every name, so time grows with the square of the depth.
MAX_NESTING = 1000


def is_virtualenv(path: Path) -> bool:
    # os.path.isfile, not Path.is_file: an unreadable folder must not raise here (it is reported when walked)
    return os.path.isfile(os.path.join(path, "pyvenv.cfg")) or os.path.isfile(os.path.join(path, "bin", "activate"))


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


def build_module(text: str, modname: str, path: str, package: bool = False) -> nodes.Module:
    """Parse *text* into an astroid module without inference and without imports.

    Python's own :func:`ast.parse` parses; astroid's public ``TreeRebuilder``
    turns the tree into astroid nodes; :func:`_fill_syntactic_locals` then does
    what astroid's builder would do after building, but syntactically: names
    imported with ``from x import y`` go to the locals without loading ``x``
    (star imports are left to the resolver), and ``instance_attrs`` is filled
    from ``self.<attr> = ...`` in methods. astroid's own post-build step would
    cache every module in the global manager, load star-imported modules from
    sys.path and run inference on every attribute assignment.

    Raises :class:`SyntaxError` (or ``ValueError`` for NUL bytes and the like,
    ``RecursionError`` / ``MemoryError`` beyond the interpreter's nesting limits).
    """
    try:
        tree = ast.parse(text + "\n", filename=path, type_comments=True)
    except SyntaxError as exc:
        # a misplaced "# type:" comment must not lose the file: parse again without type comments
        if not re.search(r"#\s+type:", exc.text or ""):
            raise
        tree = ast.parse(text + "\n", filename=path, type_comments=False)
    depth = _nesting_depth(tree, MAX_NESTING)
    if depth > MAX_NESTING:
        raise NestingTooDeep(depth)
    module = TreeRebuilder(astroid.MANAGER, data=text).visit_module(tree, modname, path, package)
    module.file_encoding = "utf-8"
    _fill_syntactic_locals(module)
    return module


class NestingTooDeep(Exception):
    def __init__(self, depth: int):
        super().__init__(f"syntax tree nested more than {MAX_NESTING} levels deep; not analysed "
                         "(generated code? the analysis is quadratic in nesting depth)")
        self.depth = depth


def _nesting_depth(tree: ast.AST, limit: int) -> int:
    """Depth of *tree*, counted up to the first node deeper than *limit* (iterative)."""
    best = 0
    stack = [(tree, 0)]
    children = ast.iter_child_nodes
    while stack:
        node, depth = stack.pop()
        if depth > best:
            best = depth
            if best > limit:
                return best
        depth += 1
        for child in children(node):
            stack.append((child, depth))
    return best


def _fill_syntactic_locals(module: nodes.Module) -> None:
    stack: List[nodes.NodeNG] = [module]
    imports: List[nodes.ImportFrom] = []
    assattrs: List[nodes.AssignAttr] = []
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.ImportFrom):
            imports.append(node)
        elif isinstance(node, nodes.AssignAttr) and not isinstance(node.parent, nodes.ExceptHandler):
            assattrs.append(node)
        children = list(node.get_children())
        children.reverse()
        stack.extend(children)
    for from_node in imports:
        if from_node.modname == "__future__":
            for symbol, _ in from_node.names:
                module.future_imports.add(symbol)
        declared_global = _global_names(from_node.scope())
        for name, asname in from_node.names:
            if name == "*":
                continue
            local = asname or name
            target = module if local in declared_global else from_node.parent
            target.set_local(local, from_node)
            target.scope().locals[local].sort(key=lambda n: n.fromlineno or 0)
    for assattr in assattrs:
        _syntactic_assattr(assattr)


def _global_names(scope: nodes.NodeNG) -> Set[str]:
    """Names declared ``global`` directly in a function *scope* (not in nested scopes)."""
    if not isinstance(scope, (nodes.FunctionDef, nodes.Lambda)):
        return set()
    out: Set[str] = set()
    stack = list(scope.get_children())
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.Global):
            out.update(node.names)
        elif isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            continue
        stack.extend(node.get_children())
    return out


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


def read_regular_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of *path* if it is a regular file of at most *limit* bytes.

    Opened without blocking (a FIFO named ``x.py`` must not hang the run) and
    checked on the open descriptor, so a file swapped for a device or FIFO after
    discovery is refused too. Raises :class:`NotRegularFile`,
    :class:`FileTooLarge` or :class:`OSError`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(str(path), flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(_file_kind(st.st_mode))
        if st.st_size > limit:
            raise FileTooLarge(st.st_size, limit)
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise FileTooLarge(len(data), limit)
        return data
    finally:
        os.close(fd)


class NotRegularFile(Exception):
    """A path that is a FIFO, device, socket or folder where a file was expected."""


class FileTooLarge(Exception):
    def __init__(self, size: int, limit: int):
        super().__init__(f"{size} bytes exceeds the {limit}-byte limit")
        self.size = size
        self.limit = limit


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def load_source(path: Path, relpath: str, modname: str) -> Tuple[Optional[SourceFile], Optional[AnalysisError]]:
    """Read, decode and parse one file. Returns (file, None) or (None, error)."""
    try:
        data = read_regular_file(path, MAX_FILE_BYTES)
    except FileTooLarge as exc:
        return None, AnalysisError(relpath, "too-large", f"file too large to analyse: {exc}")
    except NotRegularFile as exc:
        return None, AnalysisError(relpath, "io", f"not read: {exc} is not a regular file")
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
    package = path.name == "__init__.py"
    name = modname
    if name.endswith(".__init__"):
        name, package = name[: -len(".__init__")], True
    try:
        tree = with_deep_stack(build_module, text, name, os.path.abspath(str(path)), package)
    except SyntaxError as exc:
        msg = exc.msg or str(exc).splitlines()[0]
        if _looks_like_python2(text):
            msg += " (Python 2 syntax: this file must be ported to Python 3 first)"
        return None, AnalysisError(relpath, "syntax", msg, exc.lineno)
    except NestingTooDeep as exc:
        return None, AnalysisError(relpath, "too-large", str(exc))
    except (RecursionError, MemoryError) as exc:
        return None, AnalysisError(relpath, "too-large",
                                   f"nested deeper than this Python ({platform.python_version()}) can parse: "
                                   f"{type(exc).__name__}: {exc}")
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes, odd tokenizer failures
        return None, AnalysisError(relpath, "syntax", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    sf = SourceFile(path=path, relpath=relpath, modname=modname, text=text, lines=text.splitlines(), tree=tree)
    return sf, None


def _looks_like_python2(text: str) -> bool:
    return bool(re.search(r"^\s*print\s+[\"'\w]|^\s*exec\s+[\"']|except\s+\w+\s*,\s*\w+\s*:|\bur[\"']", text, re.M))


def iter_files(root: Path, suffixes: Tuple[str, ...] = (".py",), names: Tuple[str, ...] = ()) -> Iterator[Path]:
    """Files under *root* with the given suffixes or names (see :func:`discover`); problems are skipped."""
    for path, _root, _rel, _mod in discover([root], suffixes, names=names):
        yield path


def _skip_dir(name: str, path: str) -> bool:
    if name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    return is_virtualenv(Path(path))


def _inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([path, root]) == root


def _walk_tree(root: str, suffixes: Tuple[str, ...], errors: List[AnalysisError],
               names: Tuple[str, ...] = ()) -> List[Tuple[str, str, bool]]:
    """(relpath, real path, reached through a symlink) of the files under the real folder *root*.

    Iterative, in os.walk's top-down order with sorted names. Symlinks (to files
    or folders) are followed only when their target stays inside *root*; a folder
    is entered once (by device and inode), so symlink cycles end; real paths are
    preferred over symlinked ones when both reach the same file. Only regular
    files are returned; everything refused becomes an ``io`` error entry.
    """
    def err(rel: str, msg: str) -> None:
        errors.append(AnalysisError(rel or ".", "io", msg))

    def wanted(name: str) -> bool:
        return ((name.endswith(suffixes) or bool(names) and any(fnmatch.fnmatchcase(name, g) for g in names))
                and not name.startswith("."))

    try:
        st = os.stat(root)
    except OSError as exc:
        err("", f"cannot read folder: {exc.strerror or exc}")
        return []
    visited = {(st.st_dev, st.st_ino)}
    files: List[Tuple[str, str, bool]] = []
    # folders reached through symlinks are walked after every real folder, so a file keeps its real path
    pending_links: List[Tuple[str, str, str]] = []       # (rel of the link, real target, real parent)
    stack: List[Tuple[str, str, bool]] = [(root, "", False)]   # (real folder, rel, via link)
    while stack or pending_links:
        if not stack:
            rel, target, parent = pending_links.pop(0)
            try:
                tst = os.stat(target)
            except OSError as exc:
                err(rel, f"cannot read folder: {exc.strerror or exc}")
                continue
            key = (tst.st_dev, tst.st_ino)
            if key in visited:
                if _inside(parent, target):
                    err(rel, f"symlink loop: points back to the enclosing folder {os.path.relpath(target, root)!s}; "
                             "not followed")
                continue
            visited.add(key)
            stack.append((target, rel, True))
            continue
        folder, drel, via_link = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            err(drel, f"cannot read folder: {exc.strerror or exc}")
            continue
        subdirs: List[Tuple[str, str, bool]] = []
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            rel = f"{drel}/{name}" if drel else name
            full = os.path.join(folder, name)
            try:
                is_link = entry.is_symlink()
            except OSError:
                is_link = False
            if is_link:
                try:
                    est = os.stat(full)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        err(rel, "symlink loop: the link never reaches a file; not followed")
                    elif wanted(name):
                        err(rel, f"broken symlink: {exc.strerror or exc}")
                    continue
                real = os.path.realpath(full)
                if not _inside(real, root):
                    if stat.S_ISDIR(est.st_mode) or wanted(name):
                        err(rel, f"symlink leaves the tree (points to {real}); not followed")
                    continue
                if stat.S_ISDIR(est.st_mode):
                    if not (name in SKIP_DIRS or name.endswith(".egg-info") or is_virtualenv(Path(real))):
                        pending_links.append((rel, real, folder))
                    continue
            else:
                try:
                    est = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    if wanted(name):
                        err(rel, f"cannot read file: {exc.strerror or exc}")
                    continue
                real = full
                if stat.S_ISDIR(est.st_mode):
                    if _skip_dir(name, full):
                        continue
                    key = (est.st_dev, est.st_ino)
                    if key in visited:
                        continue
                    visited.add(key)
                    subdirs.append((full, rel, via_link))
                    continue
            if not wanted(name):
                continue
            if not stat.S_ISREG(est.st_mode):
                err(rel, f"not read: {_file_kind(est.st_mode)} is not a regular file")
                continue
            files.append((rel, real, via_link or is_link))
        stack.extend(reversed(subdirs))
    return files


def discover(inputs: Iterable[Path], suffixes: Tuple[str, ...] = (".py",),
             errors: Optional[List[AnalysisError]] = None,
             admit: Optional[Callable[[Path, str], bool]] = None,
             names: Tuple[str, ...] = ()) -> List[Tuple[Path, Path, str, str]]:
    """(path, root, relpath, modname) for each file of each input, in a deterministic order.

    *path* is the file's absolute path inside the analysed tree (a symlink's own
    path when the file is reached through one: its name, not its target's, says
    what kind of file it is). Files and folders that cannot or must not be read
    (symlinks leaving the tree, symlink loops, FIFOs and devices, unreadable
    folders) are appended to *errors* as ``io`` entries. *admit(path, relpath)*, when
    given, is asked about every file; a file it rejects (an ``exclude`` glob of the
    configuration) is left out. *names*: file-name globs taken besides the *suffixes*.
    """
    inputs = [Path(p) for p in inputs]
    errors = errors if errors is not None else []
    out: List[Tuple[Path, Path, str, str]] = []
    seen: Set[str] = set()
    for inp in inputs:
        label = inp.name or str(inp)
        try:
            st = os.stat(inp)
        except OSError as exc:
            why = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            errors.append(AnalysisError(label, "io", f"cannot read {inp}: {why}"))
            continue
        if stat.S_ISDIR(st.st_mode):
            root = Path(os.path.realpath(inp))
            sub: List[AnalysisError] = []
            found = _walk_tree(str(root), suffixes, sub, names)
            for e in sub:
                if len(inputs) > 1:
                    e = AnalysisError(f"{root.name}/{e.path}" if e.path != "." else root.name, e.kind, e.message, e.line)
                errors.append(e)
            best: Dict[str, Tuple[str, str, bool]] = {}
            for item in found:
                key = os.path.realpath(item[1])
                if key not in best or (best[key][2] and not item[2]):
                    best[key] = item
            for item in found:
                rel, real, _via = item
                key = os.path.realpath(real)
                if best[key] is not item or key in seen:
                    continue
                path = root / rel
                shown = f"{root.name}/{rel}" if len(inputs) > 1 else rel
                if admit is not None and not admit(path, shown):
                    continue
                seen.add(key)
                out.append((path, root, shown, module_name_for(path, root) if path.suffix == ".py" else shown))
        elif stat.S_ISREG(st.st_mode):
            key = os.path.realpath(inp)
            if key in seen:
                continue
            path = Path(os.path.abspath(inp))
            rel = inp.name
            if len(inputs) > 1:  # several files (pre-commit): as given, so a/utils.py and b/utils.py differ
                rel = Path(os.path.normpath(str(inp))).as_posix()
            if admit is not None and not admit(path, rel):
                continue
            seen.add(key)
            out.append((path, path, rel, module_name_for(path, path) if path.suffix == ".py" else rel))
        else:
            errors.append(AnalysisError(label, "io", f"not read: {_file_kind(st.st_mode)} is not a regular file"))
    return out


T = TypeVar("T")
DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000
_deep = threading.local()


def with_deep_stack(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call ``fn(*args, **kwargs)`` in a thread with a large C stack and a raised recursion limit.

    Parsing and the syntactic walks recurse once per nesting level; deep but valid
    code (long operator chains, deep walrus nesting, long class hierarchies) must
    not end in RecursionError. Nested calls run directly in the deep thread.
    Exceptions propagate; a KeyboardInterrupt in the waiting thread propagates too.
    """
    if getattr(_deep, "active", False):
        return fn(*args, **kwargs)
    result: Dict[str, Any] = {}

    def target() -> None:
        _deep.active = True
        try:
            result["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    with _DEEP_LOCK:
        if not _DEEP_STATE["running"]:
            _DEEP_STATE["saved_limit"] = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_DEEP_STATE["saved_limit"], DEEP_RECURSION_LIMIT))
        _DEEP_STATE["running"] += 1
        worker: Optional[threading.Thread] = threading.Thread(target=target, name="npu-analyse-deep", daemon=True)
        try:
            old_size = threading.stack_size(DEEP_STACK_BYTES)
            try:
                worker.start()
            finally:
                threading.stack_size(old_size)
        except (ValueError, RuntimeError, MemoryError):  # no adjustable or reservable thread stack here
            worker = None
            _DEEP_STATE["running"] -= 1
            if not _DEEP_STATE["running"]:
                sys.setrecursionlimit(_DEEP_STATE["saved_limit"])
    if worker is None:
        return fn(*args, **kwargs)
    try:
        worker.join()
    finally:
        if not worker.is_alive():
            with _DEEP_LOCK:
                _DEEP_STATE["running"] -= 1
                if not _DEEP_STATE["running"]:
                    sys.setrecursionlimit(_DEEP_STATE["saved_limit"])
    if "error" in result:
        raise result["error"]
    return result["value"]


def deep_stack(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorator: the function always runs through :func:`with_deep_stack`."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return with_deep_stack(fn, *args, **kwargs)
    return wrapper


_DEEP_LOCK = threading.Lock()
_DEEP_STATE: Dict[str, int] = {"running": 0, "saved_limit": 1000}
