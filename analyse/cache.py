"""A content-addressed cache of per-file analysis results.

One entry per analysed Python file, named by a hash of

* the file's bytes, its path relative to the analysed root and its module name,
* the *run key*: the tool version, a hash of the package's own source and data
  files (any development change invalidates everything), the knowledge-base id,
  the target torch / torch_npu versions, the analysis mode, the passes that run,
  the options that change results (probe results, thirdparty reports), and the
  Python and astroid versions.

An entry holds what the pipeline computes for the file (its pre-scan and, when
the project-wide facts it was computed against are unchanged, its findings,
errors and call-graph summary; see :mod:`analyse.pipeline`). Entries are
pickles written to a temporary file and moved into place with ``os.replace``,
so concurrent runs sharing one cache never see a half-written entry; an
unreadable or foreign entry is a miss. The cache is bounded: when it grows
over ``max_bytes`` the least recently used entries (by modification time,
refreshed on every hit) are deleted. Only this tool's own pickles are read,
from the user's own cache folder.

Besides the per-file entries, one entry holds the whole report of a run (:func:`report_key`): keyed by
the hash of every file under the inputs (:func:`tree_state`), the tool, and the run's effective
configuration and option files, it lets a run on an unchanged tree skip parsing, the passes and the
cross-file steps altogether (the command line checks it first; see ``analyse.cli._cached_report``).

The folder is ``$XDG_CACHE_HOME/npu-analyse`` (default ``~/.cache/npu-analyse``),
or ``--cache-dir DIR``; ``--no-cache`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from analyse.atomic import write_atomic

FORMAT = "v1"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
_PKG = Path(__file__).resolve().parent


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "npu-analyse"


def digest(*parts) -> str:
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        if not isinstance(p, bytes):
            p = str(p).encode("utf-8", "surrogatepass")
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def file_digest(path) -> str:
    """SHA-256 of a file named on the command line (``--probe-results``, a baseline), or ``unreadable``."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


@lru_cache(maxsize=None)
def package_fingerprint() -> str:
    """Hash of the package's own Python sources and shipped data files."""
    from analyse.paths import data_dir

    h = hashlib.blake2b(digest_size=20)
    roots = [_PKG]
    try:
        roots.append(data_dir())
    except FileNotFoundError:  # pragma: no cover - incomplete installation
        pass
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for f in sorted(filenames):
                if f.endswith((".pyc", ".pyo")) or f.startswith("."):
                    continue
                p = Path(dirpath) / f
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                h.update(p.relative_to(root).as_posix().encode())
                h.update(len(data).to_bytes(8, "little"))
                h.update(data)
    return h.hexdigest()


def run_key(kb, mode: str, pass_names: Iterable[str], options: Iterable = ()) -> str:
    """Everything besides the file itself that the per-file results depend on."""
    import astroid

    from analyse import __version__

    return digest(FORMAT, __version__, package_fingerprint(), getattr(kb, "identifier", ""),
                  getattr(kb, "torch_version", ""), getattr(kb, "torch_npu_version", ""), mode,
                  ",".join(pass_names), repr(tuple(options)), sys.version_info[:2], astroid.__version__)


class Cache:
    """Pickled entries in ``<dir>/v1/<2 hex>/<key>``."""

    def __init__(self, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = Path(directory)
        self.root = self.directory / FORMAT
        self.max_bytes = max_bytes
        self.hits = 0
        self.writes = 0
        self.usable = True

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> Optional[dict]:
        p = self._path(key)
        try:
            with open(p, "rb") as fh:
                entry = pickle.load(fh)
        except FileNotFoundError:
            return None
        except Exception:  # truncated by a crash, foreign file, old class layout: a miss
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        try:
            os.utime(p)  # least recently *used* goes first when evicting
        except OSError:
            pass
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict) -> None:
        if not self.usable:
            return
        entry = dict(entry, key=key)
        p = self._path(key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(p, pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), prefix=".tmp-", suffix="")
        except OSError:
            self.usable = False  # read-only or full disk: run on without caching
            return
        self.writes += 1

    def evict(self) -> int:
        """Delete least recently used entries while the cache is over its bound. Returns entries removed."""
        entries = []
        total = 0
        try:
            subdirs = list(os.scandir(self.root))
        except OSError:
            return 0
        for sub in subdirs:
            if not sub.is_dir(follow_symlinks=False):
                continue
            try:
                for e in os.scandir(sub.path):
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    entries.append((st.st_mtime, st.st_size, e.path))
                    total += st.st_size
            except OSError:
                continue
        if total <= self.max_bytes:
            return 0
        removed = 0
        entries.sort()
        target = self.max_bytes * 0.8
        for _mtime, size, path in entries:
            if total <= target:
                break
            try:
                os.unlink(path)
            except OSError:
                continue
            total -= size
            removed += 1
        return removed


# --------------------------------------------------------------------------- whole reports

# Sources and text files are hashed by content; any other file (images, weights, archives) by size and
# modification time, so a data folder beside the code costs a stat per file, not a read.
_HASHED_SUFFIXES = frozenset((
    "", ".py", ".pyi", ".pyx", ".pxd", ".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx",
    ".inl", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".json", ".in", ".md", ".rst", ".sh", ".cmake",
))


def tree_state(inputs: Iterable[Path], admit=None) -> str:
    """Hash of every file under *inputs* (any name; the folders discovery skips are skipped here too).

    Source and text files are hashed by content, other files (and any over the size limit) by size and
    modification time; every file's relative path and module name count, and an unreadable file by its
    error, like a folder discovery cannot enter. Any file counts, not only the ones the passes read, so
    the hash changes whenever anything the analysis could look at changes (a ``.cu`` kernel, a
    ``setup.py``, a requirements file).
    """
    from analyse.files import MAX_FILE_BYTES, FileTooLarge, NotRegularFile, discover, read_regular_file

    errors: list = []
    h = hashlib.blake2b(digest_size=20)
    for path, _root, rel, modname in discover(list(inputs), ("",), errors, admit=admit):
        for part in (rel.encode("utf-8", "surrogatepass"), modname.encode("utf-8", "surrogatepass")):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        if path.suffix.lower() not in _HASHED_SUFFIXES:
            h.update(_stat_part("S", path))
            continue
        try:
            data = read_regular_file(path, MAX_FILE_BYTES)
            h.update(b"B" + len(data).to_bytes(8, "little"))
            h.update(data)
        except FileTooLarge:
            h.update(_stat_part("L", path))
        except NotRegularFile as exc:
            h.update(f"N{exc}".encode())
        except OSError as exc:
            h.update(f"E{exc.errno}".encode())
    h.update(repr([(e.path, e.kind, e.message) for e in errors]).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _stat_part(tag: str, path: Path) -> bytes:
    """A file's part of :func:`tree_state` when it is not read: its mode, size and modification time."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"E{exc.errno}".encode()
    return f"{tag}{st.st_mode}:{st.st_size}:{st.st_mtime_ns}".encode()


def report_key(state: str, *parts) -> str:
    """Key of a whole report: the tool, its sources and data, Python and astroid, the tree's
    :func:`tree_state` and *parts* (mode, inputs, the effective configuration, option files)."""
    from analyse import __version__

    return digest("report", FORMAT, __version__, package_fingerprint(), sys.version_info[:2], _astroid_version(),
                  state, *parts)


def _astroid_version() -> str:
    """astroid's version without importing astroid (a whole-report hit never needs it): its
    ``__pkginfo__.py`` is read as text; importlib.metadata if that fails."""
    import importlib.util
    import re

    try:
        spec = importlib.util.find_spec("astroid")
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                text = (Path(folder) / "__pkginfo__.py").read_text(encoding="utf-8")
                m = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", text, re.M)
                if m:
                    return m.group(1)
    except (OSError, ImportError, ValueError):
        pass
    try:
        from importlib.metadata import version

        return version("astroid")
    except Exception:  # pragma: no cover - not installed as a distribution
        import astroid

        return astroid.__version__

