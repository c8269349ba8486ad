"""Parent side of the probe: drives one reusable worker subprocess.

The worker (``python -m analyse.probe.worker``) is started once and reused for
every operator. When it dies (segfault, ``abort()``, ``os._exit``) the record
being probed becomes ``error`` with the exit signal in its message; when it
does not answer within ``--timeout-per-op`` seconds it is killed and the record
becomes ``timeout``. Either way a fresh worker is started for the next request.
This module never imports torch.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from analyse.probe.opsfile import OpSpec

STARTUP_TIMEOUT_S = 180.0
SETUP_ENV = "NPU_ANALYSE_PROBE_SETUP"


class ProbeFatal(Exception):
    """The probe cannot run at all (no torch, device not usable). Exit 2."""


class _WorkerDied(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class _WorkerTimeout(Exception):
    pass


def _signal_name(rc: int) -> str:
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit code {rc}"


class WorkerProcess:
    def __init__(self, device: str, setup_files: List[str]):
        self.device = device
        self.setup_files = list(setup_files)
        self.proc: Optional[subprocess.Popen] = None
        self._buf = b""
        self._log = None
        self.environment: Optional[Dict[str, Any]] = None
        self.starts = 0

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        self._log = tempfile.TemporaryFile()
        env = dict(os.environ)
        pkg_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONFAULTHANDLER", "1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "analyse.probe.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
        )
        self._buf = b""
        self.starts += 1
        reply = self._request({"cmd": "init", "device": self.device, "setup": self.setup_files},
                              STARTUP_TIMEOUT_S)
        if not reply.get("ok"):
            raise ProbeFatal(reply.get("fatal") or reply.get("error") or "probe worker failed to start")
        if self.environment is None:
            self.environment = reply["environment"]

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"cmd": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=5)
            except Exception:
                self.kill()
        self._cleanup()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._cleanup()

    def _cleanup(self) -> None:
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except Exception:
                    pass
        self.proc = None

    def _stderr_tail(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.seek(0, os.SEEK_END)
            size = self._log.tell()
            self._log.seek(max(0, size - 4000))
            return self._log.read().decode("utf-8", "replace")
        except Exception:
            return ""

    # -- requests -----------------------------------------------------------------------
    def request(self, msg: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._cleanup()
            self.start()
        return self._request(msg, timeout)

    def _request(self, msg: dict, timeout: float) -> dict:
        proc = self.proc
        assert proc is not None
        try:
            proc.stdin.write((json.dumps(msg) + "\n").encode("utf-8"))
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise _WorkerTimeout()
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                if proc.poll() is not None:
                    raise self._died()
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._died()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line.decode("utf-8"))

    def _died(self) -> _WorkerDied:
        proc = self.proc
        rc = None
        if proc is not None:
            try:
                rc = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
        tail = [ln.strip() for ln in self._stderr_tail().splitlines() if ln.strip()]
        hint = next((ln for ln in tail if ln.startswith(("Fatal Python error", "Segmentation", "terminate called"))),
                    None)
        self._cleanup()
        how = _signal_name(rc) if rc is not None else "unknown cause"
        msg = f"worker process crashed ({how})"
        if hint:
            msg += f": {hint}"
        return _WorkerDied(msg)


@dataclass
class ProbeOptions:
    device: str = "cpu"
    dtypes: List[str] = field(default_factory=lambda: ["float32", "float16", "bfloat16"])
    timeout_per_op: float = 60.0
    max_samples: int = 4
    repeats: int = 3
    setup_files: List[str] = field(default_factory=list)


def _record(op: str, dtype: str, status: str, message: Optional[str]) -> Dict[str, Any]:
    return {"op": op, "dtype": dtype, "status": status, "samples": 0, "max_abs_error": None,
            "max_rel_error": None, "tolerance": None, "device_time_ms": None, "message": message}


def run_probe(specs: List[OpSpec], options: ProbeOptions,
              progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Probe every operator; returns {"environment", "results", "worker_starts", "duration_s"}."""
    t0 = time.monotonic()
    worker = WorkerProcess(options.device, options.setup_files)
    worker.start()  # raises ProbeFatal with one clear line
    environment = dict(worker.environment or {})
    results: List[Dict[str, Any]] = []

    def emit(rec: Dict[str, Any]) -> None:
        results.append(rec)
        if progress:
            progress(rec)

    try:
        for spec in specs:
            explicit = list(spec.dtypes) if spec.dtypes else None
            try:
                plan = worker.request({"cmd": "plan", "op": spec.op, "dtypes": explicit,
                                       "requested": options.dtypes}, options.timeout_per_op)
            except _WorkerTimeout:
                emit(_record(spec.op, (explicit or ["any"])[0], "timeout",
                             f"resolving the operator exceeded {options.timeout_per_op:g} s"))
                continue
            except _WorkerDied as exc:
                emit(_record(spec.op, (explicit or ["any"])[0], "error", exc.message))
                continue
            if not plan.get("ok"):
                emit(_record(spec.op, (explicit or ["any"])[0], "error", plan.get("error")))
                continue
            if "unknown" in plan:
                for d in explicit or ["any"]:
                    emit(_record(spec.op, d, "unknown-op", plan["unknown"]))
                continue
            for dtype in plan["dtypes"]:
                msg = {"cmd": "probe", "op": spec.op, "dtype": dtype, "max_samples": options.max_samples,
                       "repeats": options.repeats}
                try:
                    reply = worker.request(msg, options.timeout_per_op)
                except _WorkerTimeout:
                    emit(_record(spec.op, dtype, "timeout",
                                 f"no result within --timeout-per-op {options.timeout_per_op:g} s; worker restarted"))
                    continue
                except _WorkerDied as exc:
                    emit(_record(spec.op, dtype, "error", exc.message))
                    continue
                if not reply.get("ok"):
                    emit(_record(spec.op, dtype, "error", reply.get("error")))
                    continue
                rec = reply["record"]
                rec.setdefault("source", spec.source)
                emit(rec)
    finally:
        worker.stop()
    return {"environment": environment, "results": results, "worker_starts": worker.starts,
            "duration_s": round(time.monotonic() - t0, 3)}
