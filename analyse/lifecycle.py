"""Who owns the processes of a run, and how a run ends.

One owner for every process: the main process registers each group of child processes it starts (the
pipeline's worker pool, the probe's worker) with :func:`own`; :func:`end_owned` ends whatever is still
registered. The command line calls it on every exit path -- a normal end (nothing is left then: each owner
closes its own), an exception, Ctrl-C, SIGTERM, SIGHUP -- before the process leaves, so no worker outlives
the run and nothing keeps a pipe that a reader (``npu-analyse ... | cat``) waits on.

The other half is in the children: :func:`die_with_parent` makes a forked worker die when the main process
dies however it dies (``kill -9`` included): Linux's parent-death signal, and everywhere the check that
the parent is still the one that forked it (:func:`parent_alive`), which the workers repeat while they wait.

Signals (:func:`install_signal_handlers`): SIGINT raises ``KeyboardInterrupt`` (exit 130), SIGTERM and
SIGHUP raise :class:`Terminated` (exit 143 and 129: 128 + the signal number, as shells report them).
Either unwinds the main thread, so ``finally`` blocks remove temporary files; after the first such signal
the others are ignored, so that a second Ctrl-C or a SIGHUP after a SIGTERM cannot cut that cleanup short.

This module imports nothing beyond the standard library's basics: the command line imports it at start-up.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Dict, Optional

_owned: Dict[int, object] = {}
_lock = threading.Lock()
# the signals a run ends on, and the exit code of each (128 + its number)
ENDING_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class Terminated(SystemExit):
    """SIGTERM or SIGHUP: the run ends with 128 + the signal number, after its cleanup."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # pragma: no cover
            return f"signal {self.signum}"


class Cancelled(BaseException):
    """Raised in a thread still working for a run that is ending (its workers were ended under it)."""


class OutOfMemory(Exception):
    """A worker (or the main process) ran out of memory: the run cannot go on (exit 3)."""

    def __init__(self, where: str = ""):
        super().__init__(where)
        self.where = where


def own(owner: object) -> None:
    """Register *owner* (an object with ``terminate()``): it is ended by :func:`end_owned`."""
    with _lock:
        _owned[id(owner)] = owner


def disown(owner: object) -> None:
    with _lock:
        _owned.pop(id(owner), None)


def end_owned() -> None:
    """End every registered owner's processes (each owner's ``terminate()``: kill and reap, bounded in
    time). A pool that a still-running analysis thread starts after this dies with this process (the
    workers' parent-death signal and liveness checks)."""
    with _lock:
        owners = list(_owned.values())
        _owned.clear()
    for owner in owners:
        try:
            owner.terminate()
        except BaseException:  # noqa: BLE001 - the others are ended all the same
            pass


# --------------------------------------------------------------------------- signals (main process)

_received: list = []   # the ending signals this process's handler ran for, in order


def signals_received() -> int:
    """How many ending signals the handler has run for (see :func:`raise_swallowed`)."""
    return len(_received)


def raise_swallowed(since: int) -> None:
    """Raise again an ending signal whose handler ran after *since* (:func:`signals_received`) inside a C
    library's Python callback that swallows exceptions (SQLite's progress handler: the statement is aborted,
    the ``KeyboardInterrupt`` cleared). Nothing when no signal came since."""
    if len(_received) > since:
        signum = _received[-1]
        if signum == signal.SIGINT:
            raise KeyboardInterrupt()
        raise Terminated(signum)


def _on_signal(signum, frame):
    _received.append(signum)
    _ignore_ending_signals()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt()
    raise Terminated(signum)


def _ignore_ending_signals() -> None:
    for sig in ENDING_SIGNALS:
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # pragma: no cover - not the main thread
            pass


def install_signal_handlers() -> Dict[int, object]:
    """SIGINT, SIGTERM and SIGHUP end the run through the main thread's exception path (see the module's
    docstring). A signal that was ignored when the process started (``nohup``, a background job of a
    non-interactive shell) stays ignored. Only in the main thread; elsewhere nothing changes.
    Returns the handlers replaced (for :func:`restore_signal_handlers`)."""
    previous: Dict[int, object] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous
    for sig in ENDING_SIGNALS:
        try:
            current = signal.getsignal(sig)
            if sig not in _IGNORED_AT_START:
                _IGNORED_AT_START[sig] = current == signal.SIG_IGN
            if _IGNORED_AT_START[sig]:
                continue
            signal.signal(sig, _on_signal)
            previous[sig] = current
        except (ValueError, OSError):  # pragma: no cover
            pass
    return previous


def restore_signal_handlers(previous: Dict[int, object]) -> None:
    for sig, handler in previous.items():
        try:
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        except (ValueError, OSError, TypeError):  # pragma: no cover
            pass


_IGNORED_AT_START: Dict[int, bool] = {}


def leaving() -> None:
    """The process is about to leave (``os._exit``, which runs no ``atexit`` hook): every owned process ends."""
    end_owned()


# --------------------------------------------------------------------------- children

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """In a child process: be killed with *sig* when the parent (the thread that forked it, on Linux) dies;
    and if the parent is already gone (it died between the fork and this call), leave now."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the liveness checks remain
            pass
    if not parent_alive(parent_pid):
        os._exit(1)


def parent_alive(parent_pid: int) -> bool:
    """Whether the process that started this one is still its parent (an orphan is re-parented to init or
    a subreaper, so its parent pid changes)."""
    return os.getppid() == parent_pid


def detach_stdout() -> None:
    """In a forked worker: point fd 1 at /dev/null. A worker never writes to stdout, and a reader of the
    run's output (``| cat``) must see its end when the main process ends, whatever the workers do."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.dup2(fd, 1)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def signal_name(signum: Optional[int]) -> str:
    try:
        return signal.Signals(signum).name
    except (ValueError, TypeError):  # pragma: no cover
        return f"signal {signum}"
