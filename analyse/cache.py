"""A content-addressed cache of per-file analysis results.

One entry per analysed Python file, named by a hash of

* the file's bytes, its path relative to the analysed root and its module name,
* the *run key*: the tool version, a hash of the package's own source and data
  files (any development change invalidates everything; the hash itself is kept in
  the cache, keyed by those files' stat signatures: :func:`package_fingerprint`), the knowledge-base id,
  the target torch / torch_npu versions, the analysis mode, the passes that run,
  the options that change results (probe results, thirdparty reports), and the
  Python and astroid versions.

An entry holds what the pipeline computes for the file (its pre-scan and, when
the project-wide facts it was computed against are unchanged, its findings,
errors and call-graph summary; see :mod:`analyse.pipeline`). Entries are
kept in one SQLite database (:class:`Cache`), written in transactions,
so concurrent runs sharing one cache never see a half-written entry; an
unreadable or foreign entry is a miss. The cache is bounded: when it grows
over ``max_bytes`` the least recently used entries (by the time of their last
hit, to the hour: :attr:`Cache.REFRESH_S`) are deleted.

**Data, not code.** An entry is JSON text (:func:`encode` / :func:`decode`): plain values, tagged tuples,
sets and dicts, and the few dataclasses the cache's user names (``types``), rebuilt field by field and
checked against their annotations. Nothing read from the cache can run code (no pickle), and an entry of
the wrong shape is a miss, never an error. The folder is trusted only when it is the user's own and
nobody else may write to it (:func:`untrusted_reason`): a cache folder owned by another user, or writable
by its group or by everyone (a shared ``/tmp`` folder, a restored CI cache unpacked with loose
permissions), is refused with one warning and the run goes on without the cache.

Besides the per-file entries, one entry holds the whole report of a run (:func:`report_key`): keyed by
the hash of every file under the inputs (:func:`tree_state`), the tool, and the run's effective
configuration and option files, it lets a run on an unchanged tree skip parsing, the passes and the
cross-file steps altogether (the command line checks it first; see ``analyse.cli._cached_report``).

The folder is ``$XDG_CACHE_HOME/npu-analyse`` (default ``~/.cache/npu-analyse``),
or ``--cache-dir DIR``; ``--no-cache`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import time
from dataclasses import fields, is_dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional, Sequence, Tuple

FORMAT = "v3"
# v1: a file per entry, in <dir>/v1/<2 hex>/<key>; v2: pickled entries in <dir>/v2/cache.sqlite (never read again)
_OLD_FORMATS = ("v1", "v2")
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
    """SHA-256 of a file named on the command line (``--probe-results``, a baseline), or ``unreadable``
    (read like every input file: regular files only, bounded; see :mod:`analyse.inputs`)."""
    from analyse.inputs import MAX_JSON_BYTES, InputError, read_bytes

    try:
        return hashlib.sha256(read_bytes(path, "file", MAX_JSON_BYTES)).hexdigest()
    except InputError:
        return "unreadable"


# The package fingerprint of this process (computed once; forked workers inherit it).
_FINGERPRINT: Optional[str] = None
# What the last computation did: "memo" (taken from the cache's memo entry), "hashed" (files read), or "" (not yet).
FINGERPRINT_SOURCE = ""
_MEMO_VERSION = "1"
_RACY_NS = 2_000_000_000   # a tool file changed less than this before it was hashed is not memoised


def package_fingerprint(memo: Optional["Cache"] = None) -> str:
    """Hash of the package's own Python sources and shipped data files (about 9 MB: a few hundredths of a
    second of CPU), computed once per process.

    With *memo* (the run's cache), the hash is memoised in the cache folder, keyed by every file's stat
    signature (:func:`_memo_key`): a run whose tool files are all unchanged stats them and reads one entry
    instead of reading them (a whole-report hit reads nothing of the tool's own). See :func:`_memo_key`
    for why that is safe."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = _package_fingerprint(memo)
    return _FINGERPRINT


def _tool_files() -> list:
    """(root, path) of every file the fingerprint hashes, in hashing order."""
    from analyse.paths import data_dir

    roots = [_PKG]
    try:
        roots.append(data_dir())
    except FileNotFoundError:  # pragma: no cover - incomplete installation
        pass
    out = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            for f in sorted(filenames):
                if f.endswith((".pyc", ".pyo")) or f.startswith("."):
                    continue
                out.append((root, Path(dirpath) / f))
    return out


def _stat_sig(root: Path, path: Path, st) -> tuple:
    return (str(root), path.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
            st.st_dev)


def _memo_key(sigs: list) -> str:
    """The memo entry's key: every tool file's (root, relative path, size, mtime, ctime, inode, device).

    Safe: any write to a file changes its ctime (status-change time), which no user can set (``touch`` and
    ``os.utime`` set only the access and modification times), so content changed with its modification
    time restored (``cp -p``, ``tar``, a checkout) still gives another key; a file replaced by another
    (rename, a new checkout) has another inode; a file added or removed changes the list. Only where ctime
    means that (POSIX): elsewhere (Windows, where it is the creation time) nothing is memoised."""
    return digest("tool-files", _MEMO_VERSION, FORMAT, *("\0".join(map(str, s)) for s in sigs))


def fingerprint_memo_key() -> Optional[str]:
    """The key of the memo entry for the tool files as they are now (None where nothing is memoised)."""
    if os.name != "posix":
        return None
    try:
        return _memo_key([_stat_sig(root, p, os.stat(p)) for root, p in _tool_files()])
    except OSError:   # a file that cannot be stat'ed (it is left out of the hash): no memo
        return None


def _memo_ok(entry: dict) -> bool:
    d = entry.get("digest")
    return (isinstance(d, str) and len(d) == 40 and all(c in "0123456789abcdef" for c in d)
            and set(entry) == {"key", "digest"})


def _package_fingerprint(memo: Optional["Cache"] = None) -> str:
    global FINGERPRINT_SOURCE
    key = fingerprint_memo_key() if memo is not None else None
    if key is None:
        memo = None
    else:
        own = memo if memo.plain else Cache(memo.directory, plain=True)
        entry = own.get(key, check=_memo_ok)
        if own is not memo:
            own.close()
        if entry is not None:
            FINGERPRINT_SOURCE = "memo"
            return entry["digest"]
    h = hashlib.blake2b(digest_size=20)
    sigs = []
    complete = True
    settled = time.time_ns() - _RACY_NS   # files changed after this are too fresh to memoise (see below)
    for root, p in _tool_files():
        try:
            with open(p, "rb") as fh:
                st = os.fstat(fh.fileno())   # the signature of the very file read: a later write changes it
                data = fh.read()
        except OSError:
            complete = False
            continue
        sigs.append(_stat_sig(root, p, st))
        h.update(p.relative_to(root).as_posix().encode())
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    value = h.hexdigest()
    FINGERPRINT_SOURCE = "hashed"
    # Racy files (as git calls them): file systems stamp times from a coarse clock, so a second write in the
    # same tick as the one before the read (ctime unchanged, mtime restored) would go unseen; a memo is
    # written only when every file's last change is older than that.
    if memo is not None and complete and all(sig[4] < settled for sig in sigs):
        own = memo if memo.plain else Cache(memo.directory, plain=True)
        own.put(_memo_key(sigs), {"digest": value})
        if own is not memo:
            own.close()
    return value


def run_key(kb, mode: str, pass_names: Iterable[str], options: Iterable = (), memo: Optional["Cache"] = None) -> str:
    """Everything besides the file itself that the per-file results depend on (*memo*: the cache that
    memoises :func:`package_fingerprint`)."""
    import astroid

    from analyse import __version__

    return digest(FORMAT, __version__, package_fingerprint(memo), getattr(kb, "identifier", ""),
                  getattr(kb, "torch_version", ""), getattr(kb, "torch_npu_version", ""), mode,
                  ",".join(pass_names), repr(tuple(options)), sys.version_info[:2], astroid.__version__)


# --------------------------------------------------------------------------- data-only entries
#
# An entry is JSON. Strings, numbers, booleans, None and lists are themselves; every other value is a JSON
# object with one tag: {"t": [...]} a tuple, {"s": [...]} a set, {"f": [...]} a frozenset, {"d": [k1, v1,
# k2, v2, ...]} a dict (any hashable keys: line numbers, tuples), {"x": [hex]} bytes, {"c": name, "v": [field
# values]} an instance of one of the dataclasses the caller names, its fields written by their annotations
# (_Codec.field_codec: plain lists, checked and converted back when read). Strings keep lone surrogates
# (file names decoded with surrogateescape): JSON's \udcxx escapes round-trip them.

class NotPlainData(TypeError):
    """A value the cache cannot store as data (an object of a type nobody declared)."""


class BadEntry(ValueError):
    """Cached text that is not a well-formed entry (a miss)."""


_SCALAR_OK = {str: (str,), int: (int, bool), float: (float, int), bool: (bool,), type(None): (type(None),)}


def _identity(v):
    return v


class _Codec:
    """Encoder, decoder hook and per-dataclass field codecs for one set of declared dataclasses.

    A dataclass's fields are written by their annotations (:meth:`field_codec`): a ``Tuple[str, int]`` is a
    plain JSON list, read back into a tuple after its items' types are checked; only values annotated
    ``object`` (or not annotated precisely) carry the generic tags. Most of an entry is thus plain lists, which
    the JSON parser builds without calling back into Python."""

    def __init__(self, types: tuple):
        self.names = {t: t.__name__ for t in types}
        self.by_name = {t.__name__: t for t in types}
        self._shapes: Dict[type, "_Shape"] = {}

    def shape(self, cls: type) -> "_Shape":
        s = self._shapes.get(cls)
        if s is None:
            s = self._shapes[cls] = _Shape(cls, self)
        return s

    # ---------------------------------------------------------------- generic values
    def enc(self, o):
        t = type(o)
        if t in _SCALAR_OK:
            return o
        if t is list:
            return [self.enc(x) for x in o]
        if t is tuple:
            return {"t": [self.enc(x) for x in o]}
        if t is dict:
            flat = []
            for k, v in o.items():
                flat.append(self.enc(k))
                flat.append(self.enc(v))
            return {"d": flat}
        if t is set or t is frozenset:
            return {"s" if t is set else "f": [self.enc(x) for x in o]}
        if t is bytes:
            return {"x": [o.hex()]}
        name = self.names.get(t)
        if name is not None:
            return {"c": name, "v": self.shape(t).enc_fields(o)}
        raise NotPlainData(f"cannot cache a {t.__module__}.{t.__qualname__}")

    def hook(self, d: dict):
        if len(d) == 1:
            v = d.get("t")
            if type(v) is list:
                return tuple(v)
            v = d.get("d")
            if type(v) is list and not len(v) % 2:
                return dict(zip(v[0::2], v[1::2]))
            v = d.get("s")
            if type(v) is list:
                return set(v)
            v = d.get("f")
            if type(v) is list:
                return frozenset(v)
            v = d.get("x")
            if type(v) is list and len(v) == 1 and type(v[0]) is str:
                return bytes.fromhex(v[0])
        elif len(d) == 2:
            cls = self.by_name.get(d.get("c"))
            if cls is not None:
                return self.shape(cls).dec_fields(d.get("v"))
        raise BadEntry("not an entry's object")

    # ---------------------------------------------------------------- annotated fields
    def field_codec(self, hint) -> Tuple[Callable, Callable]:
        """(encode, decode) for values of the annotation *hint*; both raise on a value of another type."""
        import typing

        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint in _SCALAR_OK:
            ok = _SCALAR_OK[hint]

            def scalar(v, ok=ok, exc=NotPlainData):
                if not isinstance(v, ok):
                    raise exc(f"expected {hint.__name__}, got {type(v).__name__}")
                return v

            def scalar_in(v, ok=ok):
                if not isinstance(v, ok):
                    raise BadEntry(f"expected {hint.__name__}, got {type(v).__name__}")
                return v
            return scalar, scalar_in
        if origin is typing.Union or type(hint).__name__ == "UnionType":
            rest = [a for a in args if a is not type(None)]
            if len(rest) == 1 and len(args) == 2:   # Optional[X]
                e, d = self.field_codec(rest[0])
                return (lambda v: None if v is None else e(v)), (lambda v: None if v is None else d(v))
            if all(a in _SCALAR_OK for a in args):
                ok = tuple(t for a in args for t in _SCALAR_OK[a])

                def union(v, exc):
                    if not isinstance(v, ok):
                        raise exc(f"unexpected {type(v).__name__}")
                    return v
                return (lambda v: union(v, NotPlainData)), (lambda v: union(v, BadEntry))
            return self.enc, _identity
        if origin in (tuple, list, set, frozenset) and args:
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                return self._fixed_tuple(args)
            return self._sequence(origin, args[0])
        if origin is dict and len(args) == 2:
            ek, dk = self.field_codec(args[0])
            ev, dv = self.field_codec(args[1])

            def enc_dict(v):
                if type(v) is not dict:
                    raise NotPlainData(f"expected dict, got {type(v).__name__}")
                flat = []
                for k, x in v.items():
                    flat.append(ek(k))
                    flat.append(ev(x))
                return flat

            def dec_dict(v):
                if type(v) is not list or len(v) % 2:
                    raise BadEntry("expected a dict")
                return dict(zip(map(dk, v[0::2]), map(dv, v[1::2])))
            return enc_dict, dec_dict
        if isinstance(hint, type) and hint in self.names:
            cls = hint

            def enc_obj(v):
                if type(v) is not cls:
                    raise NotPlainData(f"expected {cls.__name__}, got {type(v).__name__}")
                return self.shape(cls).enc_fields(v)
            return enc_obj, (lambda v: self.shape(cls).dec_fields(v))
        # object, Any, a bare dict / list, an undeclared class: generic, tagged (decoded by the hook), and of
        # the annotated type where that is a class
        want = origin or hint
        if isinstance(want, type) and want is not object:
            def dec_generic(v):
                if not isinstance(v, want):
                    raise BadEntry(f"expected {want.__name__}, got {type(v).__name__}")
                return v
            return self.enc, dec_generic
        return self.enc, _identity

    def _sequence(self, origin, item) -> Tuple[Callable, Callable]:
        import typing

        row = typing.get_args(item) if typing.get_origin(item) is tuple else ()
        if row and Ellipsis not in row and all(a in (str, int, bool) for a in row):
            # a list of records like (caller, line, kind, a, b): one comprehension each way (json.dumps
            # writes a tuple as a list)
            want = tuple(row)

            def enc_rows(v):
                if type(v) is not origin or not all(type(x) is tuple and tuple(map(type, x)) == want for x in v):
                    raise NotPlainData(f"expected {origin.__name__} of tuples of {want}")
                return v if origin is list else list(v)

            def dec_rows(v):
                if type(v) is not list or not all(type(x) is list and tuple(map(type, x)) == want for x in v):
                    raise BadEntry(f"expected {origin.__name__} of tuples of {want}")
                return origin(map(tuple, v)) if origin is not list else [tuple(x) for x in v]
            return enc_rows, dec_rows
        if item in _SCALAR_OK:   # checked and converted in C-level calls
            ok = set(_SCALAR_OK[item])

            def enc_seq(v):
                if type(v) is not origin or not set(map(type, v)) <= ok:
                    raise NotPlainData(f"expected {origin.__name__} of {item.__name__}")
                return v if origin is list or origin is tuple else list(v)   # json.dumps writes tuples as lists

            def dec_seq(v):
                if type(v) is not list or not set(map(type, v)) <= ok:
                    raise BadEntry(f"expected {origin.__name__} of {item.__name__}")
                return v if origin is list else origin(v)
            return enc_seq, dec_seq
        e, d = self.field_codec(item)

        def enc_items(v):
            if type(v) is not origin:
                raise NotPlainData(f"expected {origin.__name__}, got {type(v).__name__}")
            return [e(x) for x in v]

        def dec_items(v):
            if type(v) is not list:
                raise BadEntry(f"expected {origin.__name__}")
            return origin(map(d, v)) if origin is not list else [d(x) for x in v]
        return enc_items, dec_items

    def _fixed_tuple(self, args) -> Tuple[Callable, Callable]:
        if all(a in (str, int, bool) for a in args):   # (str, int, str, str, str): one C-level comparison
            want = tuple(args)

            def enc_t(v):
                if type(v) is not tuple or tuple(map(type, v)) != want:
                    raise NotPlainData(f"expected a tuple of {want}")
                return v   # json.dumps writes it as a list

            def dec_t(v):
                if type(v) is not list or tuple(map(type, v)) != want:
                    raise BadEntry(f"expected a tuple of {want}")
                return tuple(v)
            return enc_t, dec_t
        codecs = [self.field_codec(a) for a in args]
        encs, decs = [c[0] for c in codecs], [c[1] for c in codecs]

        def enc_items(v):
            if type(v) is not tuple or len(v) != len(encs):
                raise NotPlainData("expected a tuple")
            return [e(x) for e, x in zip(encs, v)]

        def dec_items(v):
            if type(v) is not list or len(v) != len(decs):
                raise BadEntry("expected a tuple")
            return tuple(d(x) for d, x in zip(decs, v))
        return enc_items, dec_items


@lru_cache(maxsize=None)
def _codec(types: tuple) -> _Codec:
    return _Codec(types)


def encode(value, types: Sequence[type] = ()) -> bytes:
    """*value* as data-only JSON (ASCII bytes). Raises :class:`NotPlainData` for a value of another type
    than the plain ones and the dataclasses in *types* (or a dataclass field not of its annotated type)."""
    return json.dumps(_codec(tuple(types)).enc(value), separators=(",", ":"), ensure_ascii=True,
                      check_circular=False).encode("ascii")


class _Shape:
    """The fields of one dataclass, each with the codec of its annotation."""

    def __init__(self, cls: type, codec: _Codec):
        import typing

        self.cls = cls
        self.fields = list(fields(cls))
        try:
            hints = typing.get_type_hints(cls)
        except Exception:   # an annotation that does not resolve: such fields are generic plain data
            hints = {}
        self.codecs = [codec.field_codec(hints.get(f.name, object)) for f in self.fields]
        self.plain_init = all(f.init for f in self.fields)

    def enc_fields(self, o) -> list:
        return [e(getattr(o, f.name)) for f, (e, _d) in zip(self.fields, self.codecs)]

    def dec_fields(self, values):
        if type(values) is not list or len(values) != len(self.fields):
            raise BadEntry(f"{self.cls.__name__}: wrong number of fields")
        values = [d(v) for (_e, d), v in zip(self.codecs, values)]
        if self.plain_init:
            return self.cls(*values)   # __post_init__ checks run (a finding's category, severity, line ...)
        obj = self.cls(**{f.name: v for f, v in zip(self.fields, values) if f.init})
        for f, v in zip(self.fields, values):
            if not f.init:
                object.__setattr__(obj, f.name, v)
        return obj


def conforms(value, hint) -> bool:
    """Whether *value* (decoded from the cache) has the shape of the typing annotation *hint*: ``object`` /
    ``Any`` take anything; ``Optional`` / ``Union`` one of theirs; ``Tuple[X, ...]``, ``Tuple[X, Y]``,
    ``List[X]``, ``Set[X]``, ``FrozenSet[X]``, ``Dict[K, V]`` their container and every item; a ``TypedDict``
    exactly its keys, each of its shape; a class its
    instances (``bool`` is not an ``int`` here). Used for the values a dataclass field annotates only as
    ``object`` (a pass's pre-scan data): a wrong one makes the entry a miss, never a traceback later."""
    import typing

    if hint is object or hint is typing.Any:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        return any(conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if origin is tuple:
        if type(value) is not tuple:
            return False
        if not args:
            return True
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(conforms(v, a) for v, a in zip(value, args))
    if origin in (list, set, frozenset):
        return type(value) is origin and (not args or all(conforms(v, args[0]) for v in value))
    if origin is dict:
        return type(value) is dict and (not args or all(conforms(k, args[0]) and conforms(v, args[1])
                                                        for k, v in value.items()))
    if isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__"):
        # a TypedDict: exactly its keys, each of its shape
        fields = typing.get_type_hints(hint)
        return type(value) is dict and set(value) == set(fields) and all(conforms(value[k], h)
                                                                          for k, h in fields.items())
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True   # pragma: no cover - an annotation this checker does not know: not judged


def decode(data, types: Sequence[type] = ()):
    """The value :func:`encode` made. Raises :class:`BadEntry` (or ``ValueError`` / ``TypeError`` /
    ``RecursionError``: callers treat any exception as a miss) for anything else."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data).decode("ascii")
    return json.loads(data, object_hook=_codec(tuple(types)).hook)


# --------------------------------------------------------------------------- whose folder

_WARNED: set = set()


def untrusted_reason(directory: Path) -> Optional[str]:
    """Why the cache folder *directory* must not be used, or None when it may.

    Refused: the folder, its ``FORMAT`` sub-folder or the database files in it owned by another user,
    writable by group or others, or (below the folder itself) a symbolic link; or something other than a
    folder / regular file. The folder itself may be a symbolic link the user owns to a folder that passes.
    Missing parts pass (this tool makes them, private). Nothing to check where there are no user ids."""
    if not hasattr(os, "getuid"):
        return None
    uid = os.getuid()
    directory = Path(directory)
    root = directory / FORMAT
    checks = [(directory, True, True), (root, True, False)]
    checks += [(root / (Cache.FILE + sfx), False, False) for sfx in ("", "-wal", "-shm")]
    for path, folder, may_link in checks:
        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                if not may_link:
                    return f"{path} is a symbolic link"
                if st.st_uid != uid:
                    return f"{path} is a symbolic link owned by another user (uid {st.st_uid})"
                st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{path} cannot be checked ({exc.strerror or exc})"
        if folder and not stat.S_ISDIR(st.st_mode):
            return f"{path} is not a folder"
        if not folder and not stat.S_ISREG(st.st_mode):
            return f"{path} is not a regular file"
        if st.st_uid != uid:
            return f"{path} is owned by another user (uid {st.st_uid})"
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return f"{path} is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'}"
    return None


def _warn_untrusted(directory: Path, reason: str) -> None:
    """One line on stderr, once per folder and process tree (workers inherit the record)."""
    key = str(directory)
    if key in _WARNED:
        return
    _WARNED.add(key)
    try:
        sys.stderr.write(f"npu-analyse: warning: cache not used: {reason} (the cache folder must be yours and "
                         f"writable only by you; chmod go-w it, or use --cache-dir / --no-cache)\n")
        sys.stderr.flush()
    except (OSError, ValueError):   # pragma: no cover - stderr closed
        pass


_TABLE_SQL = ("CREATE TABLE entries (key TEXT PRIMARY KEY, data BLOB NOT NULL, size INTEGER NOT NULL, "
              "used REAL NOT NULL)")
_INDEX_SQL = "CREATE INDEX entries_used ON entries (used)"
# every row sqlite_master may hold: the tool's table, its primary key's index and the last-use index
_SCHEMA_ROWS = frozenset({("table", "entries", "entries", _TABLE_SQL),
                          ("index", "sqlite_autoindex_entries_1", "entries", None),
                          ("index", "entries_used", "entries", _INDEX_SQL)})


def foreign_schema(db) -> Optional[str]:
    """What in the database's schema this tool does not make (a trigger, a view, a virtual or extra table,
    a changed column list), or None. Read before any statement that could run a trigger or a view."""
    rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    for row in rows:
        if tuple(row) not in _SCHEMA_ROWS:
            kind, name = row[0], row[1]
            return f"{kind} {str(name)[:80]!r}"
    return None


class Cache:
    """Entries in one SQLite database, ``<dir>/v3/cache.sqlite`` (table ``entries``: key, the entry as
    data-only JSON (:func:`encode`), its size, the time it was last used). *types*: the dataclasses entries
    may hold (a callable giving them is called on first use, so the classes' modules load only then).
    *check(entry)*: an entry it refuses is a miss. *plain*: entries are JSON documents as they are (no tags:
    tuples come back as lists; ten times faster to load), for values that are JSON already (whole reports).

    One database instead of a file per entry: a cold run wrote one small file per analysed file, and on an
    ordinary ext4 disk each cost 0.4 to 1.5 ms of system time (a quarter of a second of a two-worker run on
    timm). Writes are buffered and go in as one transaction when :meth:`flush` is called (the pipeline's
    workers flush every :data:`FLUSH_ENTRIES` entries and before they exit, the main process at the end of
    a run), so a reader sees every entry of a transaction or none. Concurrent runs and the workers of one
    run share the database through SQLite's own locking (write-ahead log, busy timeout). A connection is
    never used across ``fork``: each process opens its own on first use. Any SQLite or OS error (read-only
    folder, full disk, a damaged database) turns the cache off for the rest of the run, which goes on
    without it; a damaged database file is replaced by a fresh one the next time it is opened. A folder that is
    not the user's own, or that others may write (:func:`untrusted_reason`), is never read nor written: one
    warning, and the run goes on without the cache.

    The database is data, never code: before any other statement its schema must be exactly the tool's
    (:func:`foreign_schema`: no trigger, view, virtual or extra table), else it is replaced by a fresh one with
    one warning; the connection runs with ``trusted_schema`` off, SQLite's defensive mode where Python offers
    it, and extension loading off; and a progress handler aborts any statement that runs longer than
    :attr:`STATEMENT_S` (the cache is then off for the run), while letting a pending SIGINT / SIGTERM end the
    run at once (:func:`analyse.lifecycle.raise_swallowed`)."""

    FILE = "cache.sqlite"
    FLUSH_ENTRIES = 64
    FLUSH_BYTES = 16 * 1024 * 1024
    TIMEOUT_S = 60.0
    # SQLite waits for another connection's lock in C, where no signal handler runs: it waits at most this
    # long at a time, and the rest of TIMEOUT_S is waited in Python (time.sleep), so Ctrl-C / SIGTERM end a
    # run that waits for a busy cache within a fraction of a second
    BUSY_SLICE_S = 0.25
    # A hit refreshes an entry's last-use time only when it is older than this: eviction needs no finer
    # order, and a run whose hits were all used recently (a whole-report hit run again) writes nothing.
    REFRESH_S = 3600.0
    # No statement of this cache runs longer than this (the progress handler aborts it): eviction of a full
    # cache takes well under a second.
    STATEMENT_S = 20.0
    PROGRESS_OPS = 2000   # SQLite virtual-machine steps between two progress-handler calls

    def __init__(self, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES, types=(),
                 check: Optional[Callable[[dict], bool]] = None, plain: bool = False):
        self.directory = Path(directory)
        self.plain = plain
        self._types = types
        self._check = check
        self.skipped = 0              # entries not stored: a value that is not plain data (see encode)
        self.root = self.directory / FORMAT
        self.path = self.root / self.FILE
        self.max_bytes = max_bytes
        self.hits = 0
        self.writes = 0
        self.usable = True
        self._db = None
        self._pid = None
        self._pending: dict = {}      # key -> encoded entry, written at the next flush
        self._pending_bytes = 0
        self._used: set = set()       # keys read in this run, last used over REFRESH_S ago: refreshed at the flush
        self._deadline = 0.0          # the running statement is aborted after this (time.monotonic)
        self._signals = 0             # lifecycle.signals_received() when the statement started

    # ------------------------------------------------------------------ guarding statements
    def _arm(self) -> None:
        """Before a statement (or a few): its time limit starts now."""
        from analyse.lifecycle import signals_received

        self._deadline = time.monotonic() + self.STATEMENT_S
        self._signals = signals_received()

    def _progress(self) -> int:
        # A pending signal's handler runs here (Python code) and raises; SQLite's module swallows that and
        # aborts the statement: _failed raises it again.
        return 1 if time.monotonic() > self._deadline else 0

    def _failed(self, exc: BaseException) -> None:
        """After an SQLite error: a signal swallowed by the progress handler ends the run; a statement aborted
        for its time turns the cache off with one warning; anything else turns it off quietly."""
        from analyse.lifecycle import raise_swallowed

        self.usable = False
        raise_swallowed(self._signals)
        if "interrupt" in str(exc).lower():
            _warn_once(str(self.path), f"npu-analyse: warning: cache not used: a statement on {self.path} ran "
                                       f"longer than {self.STATEMENT_S:g} s and was stopped")

    def _harden(self, db) -> None:
        """Defensive settings, before the first statement that reads the schema."""
        import sqlite3

        if hasattr(db, "enable_load_extension"):
            db.enable_load_extension(False)
        if hasattr(db, "setconfig"):   # Python >= 3.12
            for name in ("SQLITE_DBCONFIG_DEFENSIVE", "SQLITE_DBCONFIG_TRUSTED_SCHEMA",
                         "SQLITE_DBCONFIG_ENABLE_TRIGGER", "SQLITE_DBCONFIG_ENABLE_VIEW"):
                op = getattr(sqlite3, name, None)
                if op is not None:
                    try:
                        db.setconfig(op, name == "SQLITE_DBCONFIG_DEFENSIVE")
                    except sqlite3.Error:   # pragma: no cover - an SQLite without that option
                        pass
        db.set_progress_handler(self._progress, self.PROGRESS_OPS)
        db.execute("PRAGMA trusted_schema=OFF")

    # ------------------------------------------------------------------ connection
    def _connect(self, create: bool):
        """This process's connection (None: no database yet and *create* False, or the cache is off)."""
        if not self.usable:
            return None
        if self._db is not None and self._pid == os.getpid():
            return self._db
        self._db = None   # a connection made before a fork belongs to the parent
        reason = untrusted_reason(self.directory)
        if reason is not None:
            self.usable = False
            _warn_untrusted(self.directory, reason)
            return None
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
                if not self.root.is_dir():   # made private: nobody else may write the entries
                    self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    self.root.mkdir(mode=0o700, exist_ok=True)
                    reason = untrusted_reason(self.directory)
                    if reason is not None:
                        self.usable = False
                        _warn_untrusted(self.directory, reason)
                        return None
                db = sqlite3.connect(str(self.path), timeout=self.BUSY_SLICE_S, isolation_level=None,
                                     check_same_thread=False)
                self._arm()
                self._harden(db)
                foreign = foreign_schema(db)
                if foreign is not None:
                    db.close()
                    db = None
                    _warn_once(str(self.path), f"npu-analyse: warning: cache database {self.path} holds a {foreign} "
                                               f"this tool does not make: not used, replaced by a fresh one")
                    if not discarded and self._discard_damaged():
                        discarded = True
                        continue
                    self.usable = False
                    return None
                if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    db.execute("PRAGMA auto_vacuum=INCREMENTAL")   # before the first table: deletions give space back
                    db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.execute(_TABLE_SQL.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))
                db.execute(_INDEX_SQL.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1))
            except sqlite3.OperationalError as exc:
                # busy: another process is creating the database or changing its journal (SQLite does not
                # always wait for that on its own); anything else (read-only, disk full, no such folder) is final
                if db is not None:
                    db.close()
                if time.monotonic() < deadline and _busy(exc):
                    time.sleep(0.02)
                    continue
                self._failed(exc)
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
    def types(self) -> tuple:
        if callable(self._types):
            self._types = tuple(self._types())
        return tuple(self._types)

    def get(self, key: str, check: Optional[Callable[[dict], bool]] = None) -> Optional[dict]:
        """The entry stored under *key*, or None (a miss: absent, unreadable, of the wrong shape, refused by
        *check*, or by the cache's own check when *check* is not given)."""
        data = self._pending.get(key)
        stale = False
        if data is None:
            db = self._connect(create=False)
            if db is None:
                return None
            import sqlite3

            try:
                self._arm()
                row = _waiting(lambda: db.execute("SELECT data, used FROM entries WHERE key = ?", (key,)).fetchone(),
                               self.TIMEOUT_S)
            except sqlite3.Error as exc:
                self._failed(exc)
                return None
            if row is None:
                return None
            data = row[0]
            stale = not isinstance(row[1], (int, float)) or time.time() - row[1] > self.REFRESH_S
        try:
            if self.plain:
                entry = json.loads(bytes(data).decode("ascii"))
            else:
                entry = decode(data, self.types())
            if not isinstance(entry, dict) or entry.get("key") != key:
                return None
            check = check if check is not None else self._check
            if check is not None and not check(entry):
                return None
        except Exception:  # truncated, foreign, of another shape (RecursionError included): a miss
            return None
        if stale:   # least recently *used* goes first when evicting
            self._used.add(key)
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict) -> None:
        if not self.usable:
            return
        try:
            if self.plain:
                data = json.dumps(dict(entry, key=key), separators=(",", ":"), ensure_ascii=True,
                                  allow_nan=False).encode("ascii")
            else:
                data = encode(dict(entry, key=key), self.types())
        except (NotPlainData, TypeError, ValueError, RecursionError):   # not storable as data: this file is not cached
            self.skipped += 1
            return
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
            self._arm()
            with _transaction(db, self.TIMEOUT_S):
                if pending:
                    db.executemany("INSERT OR REPLACE INTO entries (key, data, size, used) VALUES (?, ?, ?, ?)",
                                   [(k, v, len(v), now) for k, v in pending.items()])
                if used:
                    db.executemany("UPDATE entries SET used = ? WHERE key = ?", [(now, k) for k in used])
        except sqlite3.Error as exc:   # locked past the timeout, disk full, read-only: run on without caching
            self._failed(exc)

    def keys(self) -> list:
        """The keys stored (after a :meth:`flush`), least recently used first."""
        self.flush()
        db = self._connect(create=False)
        if db is None:
            return []
        self._arm()
        return [k for (k,) in db.execute("SELECT key FROM entries ORDER BY used, key")]

    def size(self) -> int:
        """Bytes of the stored entries."""
        db = self._connect(create=False)
        if db is None:
            return 0
        self._arm()
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
            self._arm()
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
            with _transaction(db, self.TIMEOUT_S):
                db.executemany("DELETE FROM entries WHERE key = ?", doomed)
            db.execute("PRAGMA incremental_vacuum")   # give the freed pages back to the file system
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            self._failed(exc)
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


def _warn_once(key: str, line: str) -> None:
    """*line* on stderr, once per *key* and process tree."""
    if ("db", key) in _WARNED:
        return
    _WARNED.add(("db", key))
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):   # pragma: no cover - stderr closed
        pass


def _waiting(statement, timeout: float):
    """Run *statement* (a callable), again after a short sleep while another connection holds the lock, up to
    *timeout* seconds: the waiting is done in Python, where a signal's handler runs (see BUSY_SLICE_S)."""
    import sqlite3

    deadline = time.monotonic() + timeout
    while True:
        try:
            return statement()
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.05)


class _transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an error): the write lock is taken at once, so two
    writers wait for each other (:func:`_waiting`, up to *timeout* seconds) instead of failing on a lock
    upgrade."""

    def __init__(self, db, timeout: float = 60.0):
        self.db = db
        self.timeout = timeout

    def __enter__(self):
        _waiting(lambda: self.db.execute("BEGIN IMMEDIATE"), self.timeout)
        return self.db

    def __exit__(self, kind, exc, tb):
        if kind is None:
            _waiting(lambda: self.db.execute("COMMIT"), self.timeout)
        else:
            try:
                self.db.execute("ROLLBACK")
            except Exception:  # pragma: no cover - the transaction is already gone
                pass
        return False


# --------------------------------------------------------------------------- whole reports

# Sources, text files and every file a pass reads are hashed by content; any other file (images, weights,
# archives) by size and modification time, so a data folder beside the code costs a stat per file, not a
# read. Content, not times: a same-size edit whose time was restored (cp -p, tar, a restored CI cache) must
# change the key. tests/test_trust.py checks that every pass's file_suffixes and file_names are covered.
_HASHED_SUFFIXES = frozenset((
    "", ".py", ".pyi", ".pyx", ".pxd", ".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx",
    ".inl", ".txt", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".json", ".in", ".md", ".rst", ".sh", ".cmake",
    ".bash", ".zsh", ".ksh", ".mk", ".pip", ".lock", ".dockerfile", ".containerfile", ".bzl", ".bazel", ".build",
    ".gradle", ".slurm", ".sbatch", ".pbs", ".lsf", ".job", ".env", ".conf", ".ipynb", ".hip", ".proto", ".triton",
))
# Names read by content whatever their suffix (Dockerfile.gpu, requirements-dev.pip, Makefile.am ...).
_HASHED_NAMES = ("dockerfile*", "*.dockerfile", "containerfile*", "*requirements*", "constraints*", "environment*",
                 "conda*", "env.y*ml", "makefile*", "gnumakefile*", "*.mk", "build*", "workspace*", "sconstruct*",
                 "sconscript*", "meson.build", "cmakelists*", "setup.*", "pyproject*", "jenkinsfile*", "justfile*",
                 "launch*", "run*", "train*", "*.sh.*")


def content_keyed(name: str) -> bool:
    """Whether :func:`tree_state` hashes a file of this name by its bytes (else by size and time)."""
    import fnmatch

    if os.path.splitext(name)[1].lower() in _HASHED_SUFFIXES:
        return True
    low = name.lower()
    return any(fnmatch.fnmatchcase(low, g) for g in _HASHED_NAMES)


def tree_state(inputs: Iterable[Path], admit=None, package_links: bool = False) -> str:
    """Hash of every file under *inputs* (any name; the folders discovery skips are skipped here too).

    Source and text files and every file a pass reads (:func:`content_keyed`) are hashed by content, other
    files (and any over the size limit) by size and modification time; every file's relative path and module name count, and an unreadable file by its
    error, like a folder discovery cannot enter. Any file counts, not only the ones the passes read, so
    the hash changes whenever anything the analysis could look at changes (a ``.cu`` kernel, a
    ``setup.py``, a requirements file). *package_links*: as :func:`analyse.files.discover` (``thirdparty``).
    """
    from analyse.files import MAX_FILE_BYTES, FileTooLarge, NotRegularFile, discover, read_regular_file

    errors: list = []
    h = hashlib.blake2b(digest_size=20)
    for path, _root, rel, modname in discover(list(inputs), ("",), errors, admit=admit, package_links=package_links):
        for part in (rel.encode("utf-8", "surrogatepass"), modname.encode("utf-8", "surrogatepass")):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        if not content_keyed(path.name):
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


def report_key(state: str, *parts, memo: Optional["Cache"] = None) -> str:
    """Key of a whole report: the tool, its sources and data, Python and astroid, the tree's
    :func:`tree_state` and *parts* (mode, inputs, the effective configuration, option files). *memo*: the
    cache that memoises :func:`package_fingerprint`."""
    from analyse import __version__

    return digest("report", FORMAT, __version__, package_fingerprint(memo), sys.version_info[:2], _astroid_version(),
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

