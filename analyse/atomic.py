"""Writing a file so that readers see the old content or the new, never half of it, and never replacing
what the tool does not own.

* A regular file (or a new one) is written to a temporary file in the target's folder, which is then moved
  over the target with ``os.replace`` (atomic on one file system). On any failure, Ctrl-C included, the
  temporary file is removed and the target is untouched. A new file gets the permission bits the umask
  allows (``0o666 & ~umask``, like the reports); a replaced file keeps its own.
* A character device (``/dev/null``, ``/dev/stdout``, a terminal) or a FIFO with a reader is written in
  place: it is opened and written, never replaced by a regular file.
* A symbolic link is refused: the link is not replaced and its target is not written (it may point
  anywhere, outside the analysed tree included). So are a socket, a block device, a folder and a FIFO
  that nobody reads (writing it would wait forever). A refusal is :class:`WriteRefused`, an ``OSError``
  whose message is one line.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Optional, Union

from analyse.files import file_kind


class WriteRefused(OSError):
    """The target is not a file this tool replaces or writes (a symlink, a socket, a block device ...)."""

    def __init__(self, path: Union[str, Path], why: str) -> None:
        super().__init__(errno.EPERM, why, str(path))
        self.why = why

    def __str__(self) -> str:
        return f"{self.filename}: {self.why}"


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def refusal(path: Union[str, Path]) -> Optional[str]:
    """Why *path* would not be written (one line), or None. Does not open anything."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot inspect it ({exc.strerror or exc})"
    return _refusal(st)


def _refusal(st: os.stat_result) -> Optional[str]:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return "is a symbolic link: not replaced nor written through (name the file it points to)"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return None
    return f"is {file_kind(mode)}: not written"   # a socket, a block device, anything else


def write_atomic(path: Union[str, Path], data: bytes, *, prefix: str = "", suffix: str = ".tmp") -> None:
    """Write *data* to *path* (see the module's rules). Raises :class:`WriteRefused` or another ``OSError``."""
    path = Path(path)
    try:
        st: Optional[os.stat_result] = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        why = _refusal(st)
        if why:
            raise WriteRefused(path, why)
        if not stat.S_ISREG(st.st_mode):
            _write_in_place(path, data, fifo=stat.S_ISFIFO(st.st_mode))
            return
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~umask()
    fd, tmp = tempfile.mkstemp(prefix=prefix or f".{path.name}.", suffix=suffix, dir=str(path.parent or Path(".")))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
        # the target may have been swapped for something else since it was looked at: look again, last
        try:
            again: Optional[os.stat_result] = os.lstat(path)
        except FileNotFoundError:
            again = None
        if again is not None and not stat.S_ISREG(again.st_mode):
            raise WriteRefused(path, _refusal(again) or "is no longer a regular file: not replaced")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_in_place(path: Path, data: bytes, *, fifo: bool) -> None:
    """A character device or a FIFO: opened (never created, never followed if a link) and written."""
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_NOFOLLOW", 0)
    if fifo:
        flags |= os.O_NONBLOCK   # no reader: ENXIO at once instead of waiting forever
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if fifo and exc.errno == errno.ENXIO:
            raise WriteRefused(path, "is a FIFO that nobody reads: not written")
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) or not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise WriteRefused(path, "changed while it was opened: not written")
        if fifo:
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
