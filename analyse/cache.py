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
pickles kept in one SQLite database (:class:`Cache`), written in transactions,
so concurrent runs sharing one cache never see a half-written entry; an
unreadable or foreign entry is a miss. The cache is bounded: when it grows
over ``max_bytes`` the least recently used entries (by the time of their last
hit) are deleted. Only this tool's own pickles are read, from the user's own
cache folder.

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
import time
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

FORMAT = "v2"
_OLD_FORMATS = ("v1",)   # a file per entry, in <dir>/v1/<2 hex>/<key>
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
    """Pickled entries in one SQLite database, ``<dir>/v2/cache.sqlite`` (table ``entries``: key, pickled entry,
    its size, the time it was last used).

    One database instead of a file per entry: a cold run wrote one small file per analysed file, and on an
    ordinary ext4 disk each cost 0.4 to 1.5 ms of system time (a quarter of a second of a two-worker run on
    timm). Writes are buffered and go in as one transaction when :meth:`flush` is called (the pipeline's
    workers flush every :data:`FLUSH_ENTRIES` entries and before they exit, the main process at the end of
    a run), so a reader sees every entry of a transaction or none. Concurrent runs and the workers of one
    run share the database through SQLite's own locking (write-ahead log, busy timeout). A connection is
    never used across ``fork``: each process opens its own on first use. Any SQLite or OS error (read-only
    folder, full disk, a damaged database) turns the cache off for the rest of the run, which goes on
    without it; a damaged database file is replaced by a fresh one the next time it is opened."""

    FILE = "cache.sqlite"
    FLUSH_ENTRIES = 64
    FLUSH_BYTES = 16 * 1024 * 1024
    TIMEOUT_S = 60.0

    def __init__(self, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = Path(directory)
        self.root = self.directory / FORMAT
        self.path = self.root / self.FILE
        self.max_bytes = max_bytes
        self.hits = 0
        self.writes = 0
        self.usable = True
        self._db = None
        self._pid = None
        self._pending: dict = {}      # key -> pickled entry, written at the next flush
        self._pending_bytes = 0
        self._used: set = set()       # keys read in this run: their last-use time is refreshed at the flush

    # ------------------------------------------------------------------ connection
    def _connect(self, create: bool):
        """This process's connection (None: no database yet and *create* False, or the cache is off)."""
        if not self.usable:
            return None
        if self._db is not None and self._pid == os.getpid():
            return self._db
        self._db = None   # a connection made before a fork belongs to the parent
        fresh = not self.path.exists()
        if not create and fresh:
            return None
        if fresh:
            self._remove_old_formats()
        import sqlite3

        discarded = False
        deadline = time.monotonic() + self.TIMEOUT_S
        while True:
            db = None
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(str(self.path), timeout=self.TIMEOUT_S, isolation_level=None,
                                     check_same_thread=False)
                if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    db.execute("PRAGMA auto_vacuum=INCREMENTAL")   # before the first table: deletions give space back
                    db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, data BLOB NOT NULL, "
                           "size INTEGER NOT NULL, used REAL NOT NULL)")
                db.execute("CREATE INDEX IF NOT EXISTS entries_used ON entries (used)")
            except sqlite3.OperationalError as exc:
                # busy: another process is creating the database or changing its journal (SQLite does not
                # always wait for that on its own); anything else (read-only, disk full, no such folder) is final
                if db is not None:
                    db.close()
                if time.monotonic() < deadline and _busy(exc):
                    time.sleep(0.02)
                    continue
                self.usable = False
                return None
            except sqlite3.DatabaseError:   # not a database, a malformed one: start a fresh one, once
                if db is not None:
                    db.close()
                if not discarded and self._discard_damaged():
                    discarded = True
                    continue
                self.usable = False
                return None
            except OSError:
                self.usable = False
                return None
            self._db, self._pid = db, os.getpid()
            return db

    def _remove_old_formats(self) -> None:
        """Delete the folders of older cache layouts beside this one (``v1``: a file per entry), best effort:
        nothing reads them any more, and they would stay at their size for good."""
        import shutil

        for old in _OLD_FORMATS:
            folder = self.directory / old
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)

    def prepare(self) -> None:
        """Make the database, then close this process's connection: the pipeline calls it before its workers
        fork, so they find the database made instead of racing to make it, and no connection (nor SQLite's
        per-file lock bookkeeping for it) is open in the process that forks."""
        self._connect(create=True)
        self.close()

    def _discard_damaged(self) -> bool:
        try:
            for suffix in ("", "-wal", "-shm"):
                p = self.root / (self.FILE + suffix)
                if p.exists():
                    p.unlink()
        except OSError:
            return False
        return True

    # ------------------------------------------------------------------ entries
    def get(self, key: str) -> Optional[dict]:
        data = self._pending.get(key)
        if data is None:
            db = self._connect(create=False)
            if db is None:
                return None
            import sqlite3

            try:
                row = db.execute("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error:
                self.usable = False
                return None
            if row is None:
                return None
            data = row[0]
        try:
            entry = pickle.loads(data)
        except Exception:  # truncated, foreign or an old class layout: a miss
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        self._used.add(key)   # least recently *used* goes first when evicting
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict) -> None:
        if not self.usable:
            return
        data = pickle.dumps(dict(entry, key=key), protocol=pickle.HIGHEST_PROTOCOL)
        old = self._pending.get(key)
        self._pending[key] = data
        self._pending_bytes += len(data) - (len(old) if old is not None else 0)
        self.writes += 1
        if len(self._pending) >= self.FLUSH_ENTRIES or self._pending_bytes >= self.FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the buffered entries and the last-use times of the entries read, in one transaction."""
        if not self._pending and not self._used:
            return
        pending, used = self._pending, self._used
        self._pending, self._pending_bytes, self._used = {}, 0, set()
        db = self._connect(create=bool(pending))
        if db is None:
            return
        import sqlite3

        now = time.time()
        try:
            with _transaction(db):
                if pending:
                    db.executemany("INSERT OR REPLACE INTO entries (key, data, size, used) VALUES (?, ?, ?, ?)",
                                   [(k, v, len(v), now) for k, v in pending.items()])
                if used:
                    db.executemany("UPDATE entries SET used = ? WHERE key = ?", [(now, k) for k in used])
        except sqlite3.Error:   # locked past the timeout, disk full, read-only: run on without caching
            self.usable = False

    def keys(self) -> list:
        """The keys stored (after a :meth:`flush`), least recently used first."""
        self.flush()
        db = self._connect(create=False)
        if db is None:
            return []
        return [k for (k,) in db.execute("SELECT key FROM entries ORDER BY used, key")]

    def size(self) -> int:
        """Bytes of the stored entries."""
        db = self._connect(create=False)
        if db is None:
            return 0
        return int(db.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()[0])

    def evict(self) -> int:
        """Flush, then delete least recently used entries while the entries exceed the bound (down to 80%
        of it). Returns entries removed."""
        self.flush()
        db = self._connect(create=False)
        if db is None:
            return 0
        import sqlite3

        try:
            total = self.size()
            if total <= self.max_bytes:
                return 0
            target = self.max_bytes * 0.8
            doomed = []
            for key, size in db.execute("SELECT key, size FROM entries ORDER BY used, key"):
                if total <= target:
                    break
                doomed.append((key,))
                total -= size
            with _transaction(db):
                db.executemany("DELETE FROM entries WHERE key = ?", doomed)
            db.execute("PRAGMA incremental_vacuum")   # give the freed pages back to the file system
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            self.usable = False
            return 0
        return len(doomed)

    def close(self) -> None:
        """Flush, and close this process's connection (a later use opens a new one)."""
        self.flush()
        if self._db is not None and self._pid == os.getpid():
            try:
                self._db.close()
            except Exception:  # pragma: no cover - closing a broken connection
                pass
        self._db = None


def _busy(exc) -> bool:
    """Whether an SQLite OperationalError is a lock held by another connection (worth waiting for)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an error): the write lock is taken at once, so two
    writers wait for each other (busy timeout) instead of failing on a lock upgrade."""

    def __init__(self, db):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, exc, tb):
        if kind is None:
            self.db.execute("COMMIT")
        else:
            try:
                self.db.execute("ROLLBACK")
            except Exception:  # pragma: no cover - the transaction is already gone
                pass
        return False


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

