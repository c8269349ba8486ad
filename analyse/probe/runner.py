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
import shutil
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
PARENT_ENV = "NPU_ANALYSE_PROBE_PARENT"   # the pid of the process that started the worker


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
        self._home: Optional[str] = None  # the worker's working folder: empty, private, removed at the end

    # -- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        from analyse import lifecycle

        lifecycle.own(self)   # killed, and its folder removed, on every exit path of the command line
        self._log = tempfile.TemporaryFile()
        if self._home is None:
            self._home = tempfile.mkdtemp(prefix="npu-analyse-worker-")
        env = worker_environment()
        env[PARENT_ENV] = str(os.getpid())   # the worker removes its folder and leaves when this process dies
        self.proc = subprocess.Popen(
            worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            cwd=self._home, env=env,
        )
        self._buf = b""
        self.starts += 1
        reply = self._request({"cmd": "init", "device": self.device, "setup": self.setup_files, "home": self._home},
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

    def remove_home(self) -> None:
        from analyse import lifecycle

        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None
        lifecycle.disown(self)

    def terminate(self) -> None:
        """The run is ending (Ctrl-C, SIGTERM, SIGHUP, an error): kill the worker, remove its folder."""
        self.kill()
        self.remove_home()

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


# The worker loads exactly this package (by file location) and nothing else from the folder that holds it:
# `python -I` keeps PYTHONPATH, the user site folder and the current folder off sys.path, and the worker
# runs in an empty private folder.
_BOOTSTRAP = (
    "import importlib.util, sys\n"
    "pkg = sys.argv[1]\n"
    "spec = importlib.util.spec_from_file_location('analyse', pkg + '/__init__.py', "
    "submodule_search_locations=[pkg])\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "sys.modules['analyse'] = mod\n"
    "spec.loader.exec_module(mod)\n"
    "from analyse.probe.worker import main\n"
    "main()\n"
)


def worker_command() -> List[str]:
    """``python -I -c BOOTSTRAP <package folder>``: an isolated interpreter that imports only this
    ``analyse`` package and what is installed (torch, numpy), never the working folder's files."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [sys.executable, "-I", "-c", _BOOTSTRAP, pkg]


def worker_environment() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return env


@dataclass
class ProbeOptions:
    device: str = "cpu"
    dtypes: List[str] = field(default_factory=lambda: ["float32", "float16", "bfloat16"])
    timeout_per_op: float = 60.0
    max_samples: int = 4
    repeats: int = 3
    setup_files: List[str] = field(default_factory=list)
    # The torch version whose NPU documentation the limitations come from (None: the probed torch's).
    kb_torch_version: Optional[str] = None


def _record(op: str, dtype: str, status: str, message: Optional[str], kind: Optional[str] = None) -> Dict[str, Any]:
    rec = {"op": op, "dtype": dtype, "status": status, "samples": 0, "max_abs_error": None,
           "max_rel_error": None, "tolerance": None, "device_time_ms": None, "message": message, "arguments": None}
    if kind:
        rec["kind"] = kind
    return rec


def run_probe(specs: List[OpSpec], options: ProbeOptions,
              progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Probe every operator; returns {"environment", "results", "worker_starts", "duration_s"}."""
    from analyse.probe.limits import annotate, limitation_for, load_documentation

    t0 = time.monotonic()
    worker = WorkerProcess(options.device, options.setup_files)
    try:
        worker.start()  # raises ProbeFatal with one clear line
    except BaseException:
        worker.kill()
        worker.remove_home()
        raise
    environment = dict(worker.environment or {})
    docs = load_documentation(options.kb_torch_version or environment.get("torch"))
    environment["documentation"] = docs.version
    results: List[Dict[str, Any]] = []

    def emit(rec: Dict[str, Any], doc=None, variant=None) -> None:
        variant = rec.pop("_variant", None) or variant
        if doc and rec.get("status") != "host-only":
            lim = limitation_for(doc, rec["dtype"], variant)
            if lim:
                rec["limitation"] = lim
                annotate(rec, options.device)
        results.append(rec)
        if progress:
            progress(rec)

    try:
        for spec in specs:
            explicit = list(spec.dtypes) if spec.dtypes else None
            doc = docs.lookup(spec.op)
            try:
                plan = worker.request({"cmd": "plan", "op": spec.op, "dtypes": explicit,
                                       "requested": options.dtypes, "doc": doc}, options.timeout_per_op)
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
            if "no_samples" in plan:
                emit(_record(spec.op, (explicit or ["any"])[0], "no-samples", plan["no_samples"], plan.get("kind")))
                continue
            kind = plan.get("kind")
            jobs = plan.get("jobs") or [{"dtype": d, "variant": None} for d in plan["dtypes"]]
            for job in jobs:
                dtype = job["dtype"]
                msg = {"cmd": "probe", "op": spec.op, "dtype": dtype, "variant": job.get("variant"),
                       "max_samples": options.max_samples, "repeats": options.repeats}
                try:
                    reply = worker.request(msg, options.timeout_per_op)
                except _WorkerTimeout:
                    rec = _record(spec.op, dtype, "timeout",
                                  f"no result within --timeout-per-op {options.timeout_per_op:g} s; worker restarted",
                                  kind)
                except _WorkerDied as exc:
                    rec = _record(spec.op, dtype, "error", exc.message, kind)
                else:
                    rec = reply["record"] if reply.get("ok") else _record(spec.op, dtype, "error",
                                                                           reply.get("error"), kind)
                vinfo = plan.get("variants", {}).get(str(job.get("variant")))
                if vinfo and rec.get("arguments") is None:
                    rec["arguments"] = vinfo.get("arguments")
                if job.get("doc_dtype"):
                    rec["documented_dtype_probe"] = True
                rec.setdefault("source", spec.source)
                emit(rec, doc, vinfo)
    finally:
        worker.stop()
        worker.remove_home()
    return {"environment": environment, "results": results, "worker_starts": worker.starts,
            "duration_s": round(time.monotonic() - t0, 3)}
