"""Finding and reading the files of an analysed project (no parsing: see :mod:`analyse.project`).

Nothing here imports or executes analysed code: files are read as bytes and
decoded (PEP 263 coding cookie honoured). Folders are walked in a deterministic
order; what cannot or must not be read becomes an
:class:`~analyse.findings.AnalysisError`. Light on purpose (no astroid): a run
whose report is cached needs only this to check that the tree is unchanged.
"""

from __future__ import annotations

import errno
import fnmatch
import io
import os
import re
import stat
import tokenize
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from analyse.findings import AnalysisError

SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", "build", "dist", "node_modules", ".tox", ".nox",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "site-packages", "venv", ".venv",
    "env", ".env", "virtualenv",
}
# names that usually hold what a build made (``build/``, ``dist/`` of wheels and sdists) or an environment
# (``env/``): skipped for what they hold, so one that is a package (``__init__.py``: a ``dist`` sub-package of
# torch.distributed helpers the code imports) is walked like any other
_OUTPUT_NAMES = {"build", "dist", "env", "venv", "virtualenv"}

MAX_FILE_BYTES = 5 * 1024 * 1024

# The files this tool writes into an output folder (``-o``: analyse.render.FILENAMES; ``probe -o``). A folder
# that holds nothing but these (and the hidden ``.report.*.tmp`` of a write in progress) is a report folder
# the tool wrote: discovery skips it (see :func:`is_report_folder`).
REPORT_FILES = frozenset((
    "report.json", "report.html", "report.sarif", "report.csv", "report.junit.xml", "report.gitlab.json",
    "report.github.txt", "report.txt", "probe.json", "probe.html",
))


def is_report_file(name: str) -> bool:
    """A name the tool writes into an output folder (or a temporary one of an unfinished write)."""
    return name in REPORT_FILES or (name.startswith((".report.", ".probe.")) and name.endswith(".tmp"))


def is_report_folder(names: Iterable[str]) -> bool:
    """Whether a folder with these entries is one the tool wrote with ``-o`` (an ``npu-analyse-report``
    inside the analysed tree, as the README's own quick start does): every entry is a report file
    (:data:`REPORT_FILES`). Such a folder holds no file any pass reads, so skipping it hides nothing from
    the analysis; it keeps the reports of the last run out of the whole-report cache's tree hash, which
    would otherwise change on every run."""
    names = list(names)
    return bool(names) and all(is_report_file(n) for n in names)


def is_virtualenv(path: Path) -> bool:
    # os.path.isfile, not Path.is_file: an unreadable folder must not raise here (it is reported when walked)
    return os.path.isfile(os.path.join(path, "pyvenv.cfg")) or os.path.isfile(os.path.join(path, "bin", "activate"))


def _modname(path: Path, root: Path, shown: str, package: Optional[bool] = None) -> str:
    """A Python file's module name; a notebook's, with ``_ipynb`` after it (no module imports a notebook, and
    ``train.ipynb`` beside ``train.py`` is another module); other files keep their path."""
    if path.suffix == ".py":
        return module_name_for(path, root, package)
    if path.suffix == NOTEBOOK_SUFFIX:
        return module_name_for(path, root, package) + "_ipynb"
    return shown


def module_name_for(path: Path, root: Path, package: Optional[bool] = None) -> str:
    """Dotted module name of *path* inside the project rooted at *root*.

    When *root* is itself a package (has ``__init__.py``), its name is the
    first component (``site-packages/mmcv`` -> ``mmcv.ops.nms``). *package*: whether the folder *root* is
    one, when the caller knows (discovery asks once per root, not twice per file).
    """
    if package is None:
        if root.is_file():
            return path.stem
        package = (root / "__init__.py").is_file()
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if package:
        parts = [root.name] + parts
    return ".".join(parts) if parts else root.name


def _dotted(rel: str) -> str:
    parts = list(Path(rel).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


_PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


def local_imports(program: Path, limit: int = 2000) -> Tuple[List[Path], List[Tuple[str, int, str]]]:
    """For a program given as one file: the files of the modules it imports that Python finds in its folder
    (the script's folder is ``sys.path[0]``) -- plain and relative imports, then the imports of those,
    transitively -- and ``(module, line, where)`` for each import of a module of the project that lies outside
    that folder (in a folder above it, up to the project's root: a ``.git``, ``pyproject.toml``, ``setup.py``),
    which such a run cannot analyse. Read with the standard library's ``ast`` (nothing is imported or run);
    a file that does not parse contributes nothing here (the pipeline reports it)."""
    import ast

    base = program.parent
    above: List[Path] = []
    cur = base
    for _ in range(4):
        if any(os.path.exists(os.path.join(cur, m)) for m in _PROJECT_MARKERS) or cur.parent == cur:
            break
        cur = cur.parent
        above.append(cur)
    found: List[Path] = []
    missing: List[Tuple[str, int, str]] = []
    seen_missing: Set[str] = set()
    todo = [program]
    done = {os.path.realpath(program)}

    def module_files(start: Path, parts: List[str]) -> List[Path]:
        out: List[Path] = []
        cur = start
        for i, part in enumerate(parts):
            if not part:
                return out
            f = cur / f"{part}.py"
            if os.path.isfile(f):
                out.append(f)
                return out
            d = cur / part
            if not os.path.isdir(d) or _skip_dir(part, str(d)):
                return out
            init = d / "__init__.py"
            if os.path.isfile(init):
                out.append(init)
            elif i == len(parts) - 1 and not any(n.endswith(".py") for n in os.listdir(d)):
                return out
            cur = d
        return out

    def elsewhere(top: str) -> Optional[Path]:
        for anc in above:
            if os.path.isfile(anc / f"{top}.py") or os.path.isfile(anc / top / "__init__.py"):
                return anc
        return None

    while todo and len(found) < limit:
        f = todo.pop(0)
        try:
            tree = ast.parse(decode_source(read_regular_file(f)))
        except (OSError, SyntaxError, ValueError, NotRegularFile, FileTooLarge, RecursionError):
            continue
        here = f.parent
        for node in ast.walk(tree):
            targets: List[Tuple[Path, List[str], int]] = []
            if isinstance(node, ast.Import):
                targets = [(base, a.name.split("."), node.lineno) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    start = here
                    for _ in range(node.level - 1):
                        start = start.parent
                    if not _inside(os.path.realpath(start), os.path.realpath(base)):
                        continue
                else:
                    start = base
                mod = (node.module or "").split(".") if node.module else []
                targets = [(start, mod + [a.name], node.lineno) for a in node.names if a.name != "*"]
                if not targets or any(a.name == "*" for a in node.names):
                    targets.append((start, mod, node.lineno))
            for start, parts, line in targets:
                files = module_files(start, parts)
                if not files and start == base and parts and parts[0]:
                    anc = elsewhere(parts[0])
                    name = ".".join(p for p in parts if p)
                    if anc is not None and parts[0] not in seen_missing:
                        seen_missing.add(parts[0])
                        missing.append((name, line, os.path.relpath(anc / parts[0], base).replace(os.sep, "/")))
                for mf in files:
                    k = os.path.realpath(mf)
                    if k not in done and _inside(k, os.path.realpath(base)):
                        done.add(k)
                        found.append(mf)
                        todo.append(mf)
    return sorted(found), missing


def decode_source(data: bytes) -> str:
    """Decode like the interpreter does (BOM, coding cookie, default utf-8). Most sources are ASCII with no
    cookie in their first two lines: their text is known without running the tokenizer's detection."""
    if data.isascii():
        second = data.find(b"\n", data.find(b"\n") + 1) if b"\n" in data else -1
        if b"coding" not in (data if second < 0 else data[:second]):
            return data.decode("ascii")
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)


# --------------------------------------------------------------------------- Jupyter notebooks
#
# A notebook (.ipynb) is read as JSON, never executed: its code cells, in order, make one Python text that
# is analysed like a module. IPython magics (%time, %%bash cells), shell lines (!pip install ...,
# files = !ls) and help lines (obj?) are not Python: each such line becomes ``pass`` at its indentation (a
# cell magic's whole cell becomes blank lines), so every other line keeps its place and
# :func:`notebook_cells` maps a line of that text back to ``cell N, line M``.

NOTEBOOK_SUFFIX = ".ipynb"
#: Notebooks carry their outputs (images, tables) beside the code: the JSON may be larger than a source file;
#: the code taken from it is held to MAX_FILE_BYTES like any source.
MAX_NOTEBOOK_BYTES = 32 * 1024 * 1024
_MAGIC_ASSIGN = re.compile(r"^\s*[\w.,\[\]() ]+\s*=\s*[!%]")


class NotANotebook(ValueError):
    """The .ipynb file is not a notebook this tool can read (bad JSON, no cells)."""


def file_limit(path: Path) -> int:
    """The size cap for reading *path* (:data:`MAX_NOTEBOOK_BYTES` for a notebook)."""
    return MAX_NOTEBOOK_BYTES if str(path).endswith(NOTEBOOK_SUFFIX) else MAX_FILE_BYTES


def _code_line(line: str) -> str:
    body = line.strip()
    indent = line[: len(line) - len(line.lstrip())]
    if body.startswith(("%", "!")) or _MAGIC_ASSIGN.match(line) or (body.endswith("?") and not body.startswith("#")) \
            or body.startswith("?"):
        return indent + "pass"
    return line


def notebook_cells(data: bytes) -> Tuple[str, List[Tuple[int, int]]]:
    """(Python text of the code cells, [(cell number, line in the cell)] for each line of it; both 1-based).
    Raises :class:`NotANotebook`."""
    import json

    try:
        nb = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NotANotebook(f"not a readable notebook (JSON): {exc}") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if cells is None and isinstance(nb, dict) and isinstance(nb.get("worksheets"), list) and nb["worksheets"]:
        first = nb["worksheets"][0]
        cells = first.get("cells") if isinstance(first, dict) else None   # nbformat 3
    if not isinstance(cells, list):
        raise NotANotebook("not a notebook: no list of cells")
    lines: List[str] = []
    places: List[Tuple[int, int]] = []
    for n, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", cell.get("input", ""))
        text = "".join(str(x) for x in src) if isinstance(src, list) else str(src or "")
        cell_lines = text.splitlines() or [""]
        cell_magic = next((ln.strip() for ln in cell_lines if ln.strip()), "").startswith("%%")
        for m, line in enumerate(cell_lines, start=1):
            lines.append("" if cell_magic else _code_line(line))
            places.append((n, m))
    text = "\n".join(lines) + ("\n" if lines else "")
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise FileTooLarge(len(text.encode("utf-8")), MAX_FILE_BYTES)
    return text, places


def source_text(path: Path, data: bytes) -> str:
    """The Python text of a file's bytes: decoded source, or a notebook's code cells (:func:`notebook_cells`).
    Raises UnicodeDecodeError, SyntaxError, LookupError (decoding) or :class:`NotANotebook`."""
    if str(path).endswith(NOTEBOOK_SUFFIX):
        return notebook_cells(data)[0]
    return decode_source(data)


def cell_place(places: List[Tuple[int, int]], line: int) -> Optional[Tuple[int, int]]:
    """(cell, line in the cell) of *line* (1-based) of a notebook's text, or None."""
    if 1 <= int(line or 0) <= len(places):
        return places[int(line) - 1]
    return None


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
            raise NotRegularFile(file_kind(st.st_mode))
        if st.st_size > limit:
            raise FileTooLarge(st.st_size, limit)
        data = read_capped(fd, limit)
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


def read_capped(fd: int, limit: int) -> bytes:
    """At most *limit* + 1 bytes from an open file descriptor (one byte over tells the caller it is too large)."""
    chunks = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def file_kind(mode: int) -> str:
    """What a path that is not a regular file is, in words (for one-line messages)."""
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


def iter_files(root: Path, suffixes: Tuple[str, ...] = (".py",), names: Tuple[str, ...] = ()) -> Iterator[Path]:
    """Files under *root* with the given suffixes or names (see :func:`discover`); problems are skipped."""
    for path, _root, _rel, _mod in discover([root], suffixes, names=names):
        yield path


def _skip_dir(name: str, path: str) -> bool:
    if name.startswith(".") or name.endswith(".egg-info"):
        return True
    if name in SKIP_DIRS and not (name in _OUTPUT_NAMES and is_package_dir(path)):
        return True
    return is_virtualenv(Path(path))


def is_package_dir(path: str) -> bool:
    """A folder Python imports as a package (it holds ``__init__.py``), whatever its name."""
    return os.path.isfile(os.path.join(path, "__init__.py"))


def _too_long(exc: OSError) -> str:
    return (f"not read: {exc.strerror or 'file name too long'} (the path is longer than this system allows); "
            "everything below it is left out")


def _entry_is_dir(entry) -> bool:
    """What the folder listing says the entry is (no system call where the listing has the type)."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([path, root]) == root


# the files a Python package is built from (a source checkout holds one next to the package folder)
BUILD_FILES = ("setup.py", "pyproject.toml", "setup.cfg")


def package_checkout(root: str) -> Optional[str]:
    """The source checkout the package folder *root* (real path, holding ``__init__.py``) is built from: its parent
    folder, when that holds a build file (:data:`BUILD_FILES`); None otherwise (``site-packages/<pkg>``). Building
    the package there (a wheel, ``pip install .``) copies what the package's symlinks point to into the package
    (``pkg/kernel/extensions -> ../../extensions``), so a library analysed from its checkout
    follows those links (``thirdparty``: :func:`discover` with *package_links*)."""
    if not os.path.isfile(os.path.join(root, "__init__.py")):
        return None
    parent = os.path.dirname(root)
    if not parent or parent == root:
        return None
    return parent if any(os.path.isfile(os.path.join(parent, b)) for b in BUILD_FILES) else None


def _walk_tree(root: str, suffixes: Tuple[str, ...], errors: List[AnalysisError],
               names: Tuple[str, ...] = (), links_within: Optional[str] = None) -> List[Tuple[str, str, bool]]:
    """(relpath, real path, reached through a symlink) of the files under the real folder *root*.

    Iterative, in os.walk's top-down order with sorted names. Symlinks (to files
    or folders) are followed only when their target stays inside *root* (or inside
    *links_within*, a real folder holding *root*: the package's source checkout); a folder
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
        if drel and is_report_folder(e.name for e in entries):   # an earlier run's -o folder
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
                    elif exc.errno == errno.ENAMETOOLONG:
                        err(rel, _too_long(exc))
                    elif wanted(name):
                        err(rel, f"broken symlink: {exc.strerror or exc}")
                    continue
                real = os.path.realpath(full)
                if not _inside(real, root) and not (links_within and _inside(real, links_within)):
                    if stat.S_ISDIR(est.st_mode) or wanted(name):
                        err(rel, f"symlink leaves the tree (points to {real}); not followed")
                    continue
                if stat.S_ISDIR(est.st_mode):
                    if not _skip_dir(name, real):
                        pending_links.append((rel, real, folder))
                    continue
            else:
                try:
                    est = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    if exc.errno == errno.ENAMETOOLONG:   # a subtree below PATH_MAX: never dropped silently
                        err(rel, _too_long(exc))
                    elif wanted(name) or _entry_is_dir(entry):
                        err(rel, f"cannot read {'folder' if _entry_is_dir(entry) else 'file'}: {exc.strerror or exc}")
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
                err(rel, f"not read: {file_kind(est.st_mode)} is not a regular file")
                continue
            files.append((rel, real, via_link or is_link))
        stack.extend(reversed(subdirs))
    return files


def discover(inputs: Iterable[Path], suffixes: Tuple[str, ...] = (".py",),
             errors: Optional[List[AnalysisError]] = None,
             admit: Optional[Callable[[Path, str], bool]] = None,
             names: Tuple[str, ...] = (), package_links: bool = False) -> List[Tuple[Path, Path, str, str]]:
    """(path, root, relpath, modname) for each file of each input, in a deterministic order.

    *path* is the file's absolute path inside the analysed tree (a symlink's own
    path when the file is reached through one: its name, not its target's, says
    what kind of file it is). Files and folders that cannot or must not be read
    (symlinks leaving the tree, symlink loops, FIFOs and devices, unreadable
    folders) are appended to *errors* as ``io`` entries. *admit(path, relpath)*, when
    given, is asked about every file; a file it rejects (an ``exclude`` glob of the
    configuration) is left out. *names*: file-name globs taken besides the *suffixes*. *package_links*: a package
    folder given from its source checkout (:func:`package_checkout`) also follows the symlinks that point into
    that checkout, as building the package would (``thirdparty``).
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
            found = _walk_tree(str(root), suffixes, sub, names,
                               links_within=package_checkout(str(root)) if package_links else None)
            package = os.path.isfile(os.path.join(root, "__init__.py"))
            for e in sub:
                if len(inputs) > 1:
                    e = AnalysisError(f"{root.name}/{e.path}" if e.path != "." else root.name, e.kind, e.message, e.line)
                errors.append(e)
            # a file's second field is its real path already (_walk_tree resolves every link it follows and
            # walks on from real folders): files reached twice, through a link and directly, share it
            best: Dict[str, Tuple[str, str, bool]] = {}
            for item in found:
                key = item[1]
                if key not in best or (best[key][2] and not item[2]):
                    best[key] = item
            for item in found:
                rel, key, _via = item
                if best[key] is not item or key in seen:
                    continue
                path = root / rel
                shown = f"{root.name}/{rel}" if len(inputs) > 1 else rel
                if admit is not None and not admit(path, shown):
                    continue
                seen.add(key)
                out.append((path, root, shown, _modname(path, root, shown, package)))
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
            out.append((path, path, rel, _modname(path, path, rel)))
            if len(inputs) == 1 and path.suffix == ".py":
                # one program given alone: the local modules it imports run with it (its folder is sys.path[0])
                folder = path.parent
                found, missing = local_imports(path)
                for extra in found:
                    ekey = os.path.realpath(extra)
                    erel = extra.relative_to(folder).as_posix()
                    if ekey in seen or (admit is not None and not admit(extra, erel)):
                        continue
                    seen.add(ekey)
                    out.append((extra, folder, erel, _dotted(erel)))
                for name, line, where in missing:
                    errors.append(AnalysisError(
                        rel, "io", f"imports {name}, a module of the project outside {rel}'s folder ({where}): not "
                                   "analysed; give the project's folder for the whole program", line))
        else:
            errors.append(AnalysisError(label, "io", f"not read: {file_kind(st.st_mode)} is not a regular file"))
    return out
