"""The probe worker: ``python -m analyse.probe.worker``, one JSON object per line.

The parent (:mod:`analyse.probe.runner`) keeps one worker alive for the whole
run and restarts it only when it dies (segfault, abort) or exceeds the per-op
timeout, so torch and the OpInfo database are imported once, not per operator.

Protocol (stdin -> stdout, one JSON object per line):

* ``{"cmd": "init", "device": "cpu", "setup": [paths]}`` ->
  ``{"ok": true, "environment": {...}}`` or ``{"ok": false, "fatal": "..."}``
* ``{"cmd": "plan", "op": "torch.add", "dtypes": null|[...], "requested": [...]}`` ->
  ``{"ok": true, "dtypes": [...], "source": "opinfo"}`` or a finished record
  ``{"ok": true, "record": {...}}`` (unknown-op)
* ``{"cmd": "probe", "op": ..., "dtype": ..., "max_samples": N, "repeats": R}`` ->
  ``{"ok": true, "record": {...}}``

The protocol uses a private duplicate of the original stdout; file descriptor 1
is pointed at stderr so that anything an operator prints cannot corrupt it, and
file descriptor 2 is captured around every device call so that fallback
warnings printed by C++ code (not only Python warnings) are seen.

Test hook: the init command's ``setup`` list (filled by the parent from the
environment variable ``NPU_ANALYSE_PROBE_SETUP``, ``os.pathsep``-separated
file paths, or the hidden ``--setup-file`` option) names Python files executed
in the worker before probing. The test suite uses it to register custom test
operators with ``torch.library`` and to install a fake ``torch_npu``. It is not
meant for users.
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Dict, List, Optional, Tuple

from analyse.probe.patterns import DTYPE_ERROR_PATTERNS, FALLBACK_PATTERNS, NONDETERMINISTIC_PATTERNS

# --------------------------------------------------------------------------- tolerances

# (atol, rtol) against a float64 reference (or the same-dtype CPU result).
TOLERANCES: Dict[str, Tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "complex64": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "complex32": (1e-2, 1e-2),
    "bfloat16": (1e-1, 5e-2),
}
EXACT = (0.0, 0.0)


def tolerance_for(dtype: str) -> Tuple[float, float]:
    return TOLERANCES.get(dtype, EXACT)


def first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()[:500]
    return str(text).strip()[:500]


def match_any(patterns, text: str) -> Optional[str]:
    for line in text.splitlines():
        for pat in patterns:
            if re.search(pat, line):
                return line.strip()[:500]
    return None


# --------------------------------------------------------------------------- device backends

def read_cann_version() -> Optional[str]:
    """CANN version from the toolkit's version files, else None."""
    homes = []
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        if os.environ.get(var):
            homes.append(os.environ[var])
    homes.append("/usr/local/Ascend/ascend-toolkit/latest")
    for home in homes:
        if not os.path.isdir(home):
            continue
        candidates = []
        try:
            for entry in sorted(os.listdir(home)):
                p = os.path.join(home, entry, "ascend_toolkit_install.info")
                if os.path.isfile(p):
                    candidates.append(p)
        except OSError:
            pass
        candidates += [os.path.join(home, "version.cfg"), os.path.join(home, "compiler", "version.info"),
                       os.path.join(home, "runtime", "version.info")]
        for path in candidates:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(65536)
            except OSError:
                continue
            m = re.search(r"^\s*(?:version|Version)\s*=\s*\[?([^\]\s:]+)", text, re.M)
            if m:
                return m.group(1)
            m = re.search(r"running_version\s*=\s*\[([^\]]+)\]", text)
            if m:
                return m.group(1).split(":")[-1]
    return None


class DeviceError(Exception):
    """The device cannot be used (missing backend, not visible)."""


class Backend:
    """The boundary between the probe and a device type."""

    def __init__(self, device: str):
        import torch

        self.torch = torch
        self.device = device
        self.type, _, idx = device.partition(":")
        self.index = int(idx) if idx else 0

    def setup(self) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def device_name(self) -> Optional[str]:
        return None

    def torch_device(self):
        return self.torch.device(self.device)

    def compares_values(self) -> bool:
        return True

    def environment(self) -> Dict[str, Any]:
        torch_npu = sys.modules.get("torch_npu")
        return {
            "torch": getattr(self.torch, "__version__", None),
            "torch_npu": getattr(torch_npu, "__version__", None) if torch_npu else _dist_version("torch_npu"),
            "cann": read_cann_version(),
            "device_name": self.device_name(),
            "python": sys.version.split()[0],
        }


def _dist_version(name: str) -> Optional[str]:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


class CpuBackend(Backend):
    def device_name(self) -> Optional[str]:
        import platform
        return platform.processor() or platform.machine() or "cpu"


class MetaBackend(Backend):
    """The meta device has shapes and dtypes but no data: values are never compared."""

    def device_name(self) -> Optional[str]:
        return "meta"

    def compares_values(self) -> bool:
        return False


class CudaBackend(Backend):
    def setup(self) -> None:
        cuda = self.torch.cuda
        if not cuda.is_available():
            raise DeviceError(f"--device {self.device}: no CUDA device is visible to torch "
                              f"{self.torch.__version__} (torch.cuda.is_available() is False)")
        if self.index >= cuda.device_count():
            raise DeviceError(f"--device {self.device}: only {cuda.device_count()} CUDA device(s) visible")
        cuda.set_device(self.index)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize(self.index)

    def device_name(self) -> Optional[str]:
        return self.torch.cuda.get_device_name(self.index)


class NpuBackend(Backend):
    """Ascend NPU through torch_npu: ``import torch_npu`` registers ``torch.npu``."""

    def setup(self) -> None:
        if "torch_npu" not in sys.modules and importlib.util.find_spec("torch_npu") is None:
            raise DeviceError(f"--device {self.device} needs torch_npu: install the torch_npu build matching "
                              f"torch {self.torch.__version__} and the CANN toolkit")
        try:
            import torch_npu  # noqa: F401
        except Exception as exc:
            raise DeviceError(f"--device {self.device}: import torch_npu failed: {first_line(str(exc))}") from None
        npu = getattr(self.torch, "npu", None)
        if npu is None or not npu.is_available():
            raise DeviceError(f"--device {self.device}: no Ascend NPU is visible (torch.npu.is_available() is False)")
        if self.index >= npu.device_count():
            raise DeviceError(f"--device {self.device}: only {npu.device_count()} NPU device(s) visible")
        npu.set_device(self.index)

    def synchronize(self) -> None:
        self.torch.npu.synchronize()

    def device_name(self) -> Optional[str]:
        return self.torch.npu.get_device_name(self.index)


BACKENDS = {"cpu": CpuBackend, "meta": MetaBackend, "cuda": CudaBackend, "npu": NpuBackend}


def make_backend(device: str) -> Backend:
    kind = device.partition(":")[0]
    if kind not in BACKENDS:
        raise DeviceError(f"unsupported device {device!r}")
    return BACKENDS[kind](device)


# --------------------------------------------------------------------------- capture

class Capture:
    """Records Python warnings and whatever is written to file descriptor 2."""

    def __init__(self, fd_capture: bool = True):
        self.fd_capture = fd_capture
        self.warnings: List[str] = []
        self.text = ""

    def __enter__(self):
        self._wctx = warnings.catch_warnings(record=True)
        self._records = self._wctx.__enter__()
        warnings.simplefilter("always")
        if self.fd_capture:
            try:
                sys.stderr.flush()
            except Exception:
                pass
            self._tmp = tempfile.TemporaryFile()
            self._saved = os.dup(2)
            os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        if self.fd_capture:
            try:
                sys.stderr.flush()
            except Exception:
                pass
            os.dup2(self._saved, 2)
            os.close(self._saved)
            self._tmp.seek(0)
            self.text = self._tmp.read(1 << 20).decode("utf-8", "replace")
            self._tmp.close()
        self.warnings = [str(w.message) for w in self._records]
        self._wctx.__exit__(*exc)
        return False

    def fallback_line(self) -> Optional[str]:
        return match_any(FALLBACK_PATTERNS, "\n".join(self.warnings + [self.text]))


# --------------------------------------------------------------------------- comparison

def _to_ref_dtype(x, torch):
    if isinstance(x, torch.Tensor):
        if x.dtype.is_complex:
            return x.to(torch.complex128)
        if x.dtype.is_floating_point:
            return x.to(torch.float64)
    return x


def _densify(t, torch):
    if t.is_sparse or t.layout != torch.strided:
        try:
            t = t.to_dense()
        except Exception:
            return None
    if t.is_quantized:
        t = t.dequantize()
    return t


class Comparison:
    def __init__(self):
        self.ok = True
        self.message: Optional[str] = None
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.compared = False

    def fail(self, msg: str) -> None:
        if self.ok:
            self.message = msg
        self.ok = False


def compare(out, ref, atol: float, rtol: float, values: bool, torch, check_dtype: bool) -> Comparison:
    from torch.utils._pytree import tree_flatten

    res = Comparison()
    a, _ = tree_flatten(out)
    b, _ = tree_flatten(ref)
    if len(a) != len(b):
        res.fail(f"output structure differs: {len(a)} vs {len(b)} leaves")
        return res
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if tuple(x.shape) != tuple(y.shape):
                res.fail(f"output shape {tuple(x.shape)} differs from the CPU reference {tuple(y.shape)}")
                continue
            if check_dtype and x.dtype != y.dtype:
                res.fail(f"output dtype {x.dtype} differs from the CPU reference {y.dtype}")
                continue
            if not values or x.device.type == "meta" or y.device.type == "meta":
                continue
            xd = _densify(x.detach().cpu(), torch)
            yd = _densify(y.detach().cpu(), torch)
            if xd is None or yd is None or xd.numel() == 0:
                continue
            if xd.dtype == torch.bool or yd.dtype == torch.bool:
                xd, yd = xd.to(torch.int64), yd.to(torch.int64)
            target = torch.complex128 if (xd.dtype.is_complex or yd.dtype.is_complex) else torch.float64
            try:
                xd, yd = xd.to(target), yd.to(target)
            except Exception:
                continue
            res.compared = True
            close = torch.isclose(xd, yd, rtol=rtol, atol=atol, equal_nan=True)
            diff = (xd - yd).abs()
            finite = torch.isfinite(diff)
            if finite.any():
                d = diff[finite]
                rel = d / yd.abs()[finite].clamp_min(1e-30)
                res.max_abs = max(res.max_abs, float(d.max()))
                res.max_rel = max(res.max_rel, float(rel.max()))
            if not bool(close.all()):
                res.fail(f"{int((~close).sum())} of {close.numel()} values differ beyond atol={atol}, rtol={rtol}")
        elif isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            res.fail(f"output type {type(x).__name__} differs from the CPU reference {type(y).__name__}")
        elif isinstance(x, (int, float, complex)) and isinstance(y, (int, float, complex)) and values:
            res.compared = True
            if not (x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
                    or abs(complex(x) - complex(y)) <= atol + rtol * abs(complex(y))):
                res.fail(f"scalar output {x!r} differs from the CPU reference {y!r}")
    return res


# --------------------------------------------------------------------------- the worker

class Worker:
    def __init__(self):
        self.backend: Optional[Backend] = None
        self.torch = None
        self.fallback_seen: Dict[str, str] = {}  # aten op name -> first fallback line
        self.ctx = None  # analyse.probe.kinds.Context, made at init
        self._catalogue_by_obj: Optional[Dict[int, Dict[str, Any]]] = None

    # -- commands ---------------------------------------------------------------------
    def init(self, msg: dict) -> dict:
        for path in msg.get("setup") or []:
            spec = importlib.util.spec_from_file_location(f"_npu_analyse_probe_setup_{abs(hash(path))}", path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
        try:
            import torch
        except Exception as exc:
            return {"ok": False, "fatal": f"cannot import torch: {first_line(str(exc))}", "kind": "no-torch"}
        self.torch = torch
        try:
            self.backend = make_backend(msg["device"])
            self.backend.setup()
        except DeviceError as exc:
            return {"ok": False, "fatal": str(exc), "kind": "device"}
        except Exception as exc:
            return {"ok": False, "fatal": f"--device {msg['device']}: {first_line(str(exc))}", "kind": "device"}
        from analyse.probe import kinds, samples

        home = msg.get("home")
        self.ctx = kinds.Context(msg["device"], tempfile.mkdtemp(prefix="probe-", dir=home)
                                 if home and os.path.isdir(home) else tempfile.mkdtemp(prefix="npu-analyse-probe-"))
        env = self.backend.environment()
        # Loads op_db (seconds) here, under the start-up time limit, not under an op's timeout.
        env["sample_source"] = samples.opinfo_db_status() or "opinfo"
        return {"ok": True, "environment": env}

    # -- the catalogue ----------------------------------------------------------------
    def entry_for(self, target) -> Optional[Dict[str, Any]]:
        """The catalogue entry for the object a name resolves to (aliases share the entry), or a generic one."""
        from analyse.probe import kinds, samples
        from analyse.probe.catalogue import load_catalogue

        if self._catalogue_by_obj is None:
            by_obj: Dict[int, Dict[str, Any]] = {}
            for name, entry in load_catalogue().items():
                try:
                    obj = samples.resolve(name).fn
                except samples.UnknownOp:
                    continue
                by_obj.setdefault(id(obj), entry.to_dict())
            self._catalogue_by_obj = by_obj
        return self._catalogue_by_obj.get(id(target.fn)) or kinds.generic_entry(target.fn)

    def plan(self, msg: dict) -> dict:
        """The (dtype, variant) jobs for one operator: the base dtypes, one job per catalogue variant,
        and one job with a dtype the documentation excludes when no base dtype does."""
        from analyse.probe import kinds, samples

        try:
            target = samples.resolve(msg["op"])
        except samples.UnknownOp as exc:
            return {"ok": True, "unknown": str(exc)}
        explicit = msg.get("dtypes")
        requested = msg.get("requested") or ["float32"]
        entry = self.entry_for(target)
        if entry is None and target.kind == "class":
            return {"ok": True, "no_samples": f"{msg['op']} is a class the probe catalogue "
                    "(data/probe_catalogue.yaml) has no constructor arguments for", "kind": "class"}
        if entry is not None:
            known = kinds.default_dtypes(entry)
            if entry.get("host_only"):
                dtypes = ["any"]
            elif explicit:
                dtypes = list(explicit)
            else:
                dtypes = [d for d in requested if d in known] or known[:1]
            kind = entry["kind"]
        else:
            dtypes = samples.plan_dtypes(target, explicit, requested)
            known = samples.supported_dtypes(target) or list(dtypes)
            kind = {"aten": "function", "custom": "function"}.get(target.kind, target.kind)
        jobs: List[Dict[str, Any]] = [{"dtype": d, "variant": None} for d in dtypes]
        if entry is not None and not entry.get("host_only"):
            for i, v in enumerate(entry.get("variants") or []):
                jobs.append({"dtype": v.get("dtype") or dtypes[0], "variant": i})
        doc = msg.get("doc") or {}
        allowed = doc.get("dtypes")
        if allowed and not explicit and not (entry or {}).get("host_only") and not any(
                d not in allowed for d in dtypes if d != "any"):
            outside = [d for d in ("float64",) + samples.DTYPE_PREFERENCE if d in known and d not in allowed]
            if outside:
                jobs.append({"dtype": outside[0], "variant": None, "doc_dtype": True})
        variants = {str(i): {"match": v.get("match"), "expect": v.get("expect"), "arguments": v.get("arguments")}
                    for i, v in enumerate((entry or {}).get("variants") or [])}
        return {"ok": True, "dtypes": dtypes, "jobs": jobs, "source": target.source, "kind": kind,
                "variants": variants}

    def probe(self, msg: dict) -> dict:
        from analyse.probe import samples

        op, dtype_name = msg["op"], msg["dtype"]
        rec: Dict[str, Any] = {"op": op, "dtype": dtype_name, "status": "pass", "samples": 0,
                               "max_abs_error": None, "max_rel_error": None, "tolerance": None,
                               "device_time_ms": None, "message": None}
        try:
            target = samples.resolve(op)
        except samples.UnknownOp as exc:
            rec.update(status="unknown-op", message=first_line(str(exc)))
            return {"ok": True, "record": rec}
        rec["sample_source"] = target.source
        entry = self.entry_for(target)
        rec["kind"] = (entry or {}).get("kind") or {"aten": "function", "custom": "function"}.get(
            target.kind, target.kind)
        if rec["kind"] is None:
            del rec["kind"]
        rec["arguments"] = None
        if entry is None and target.kind == "class":
            rec.update(status="no-samples", message=f"{op} is a class the probe catalogue "
                       "(data/probe_catalogue.yaml) has no constructor arguments for")
            return {"ok": True, "record": rec}
        variant = msg.get("variant")
        try:
            dtype = samples.dtype_of("float32" if dtype_name == "any" else dtype_name)
        except ValueError as exc:
            rec.update(status="unsupported-dtype", message=str(exc))
            return {"ok": True, "record": rec}
        try:
            if entry is not None or target.kind == "module":
                from analyse.probe import kinds

                if entry is not None:
                    rec["sample_source"] = "catalogue"
                    cases = kinds.catalogue_cases(target.fn, entry, self.ctx, variant)
                    if variant is not None:
                        v = entry["variants"][variant]
                        rec["_variant"] = {"match": v.get("match"), "expect": v.get("expect")}
                else:
                    cases = kinds.module_db_cases(target.fn, target.moduleinfo, dtype)
                self._probe_cases(op, cases, dtype, dtype_name, rec, int(msg.get("max_samples", 4)),
                                  int(msg.get("repeats", 3)))
            else:
                self._probe(target, dtype, dtype_name, rec, int(msg.get("max_samples", 4)),
                            int(msg.get("repeats", 3)))
        except Exception as exc:  # a bug in the probe itself must not stop the run
            rec.update(status="error", message=f"probe internal error: {first_line(repr(exc))}")
            rec["traceback"] = traceback.format_exc()[-2000:]
        return {"ok": True, "record": rec}

    # -- catalogue kinds: modules, optimizers, factories, collectives, host-only ------------------------
    def _run_case(self, case, dev, dtype):
        prep = case.prepare(dev, dtype)
        out = prep.call()
        return prep.collect(out)

    def _probe_cases(self, op, cases, dtype, dtype_name, rec, max_samples, repeats):
        torch = self.torch
        from analyse.probe.kinds import NotProbeable

        backend = self.backend
        dev = backend.torch_device()
        cpu = torch.device("cpu")
        values = backend.compares_values()
        atol, rtol = tolerance_for(dtype_name)
        cpu_errors: List[str] = []
        reasons: List[str] = []
        outcomes: List[Tuple[str, Optional[str]]] = []
        tried = 0
        max_abs = max_rel = None
        fallback_msg = None
        first_valid = None
        random = False
        for n, case in enumerate(cases):
            if tried >= max_samples or n >= 40:
                break
            if case.host_only:
                rec["kind"] = case.kind
                rec["arguments"] = case.arguments
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        self._run_case(case, cpu, dtype)
                except NotProbeable as exc:
                    rec.update(status="no-samples", message=str(exc))
                    return
                except Exception as exc:
                    rec.update(status="error", samples=1, message=first_line(f"{type(exc).__name__}: {exc}"))
                    return
                rec.update(status="host-only", samples=1, message=f"runs no device kernel: {case.host_only}")
                rec["compared"] = "ran on the host"
                return
            ref_same = ref64 = None
            ok_same = ok64 = False
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref_same = self._run_case(case, cpu, dtype)
                ok_same = True
            except NotProbeable as exc:
                reasons.append(str(exc))
                continue
            except Exception as exc:
                cpu_errors.append(first_line(f"{type(exc).__name__}: {exc}"))
            if values and not case.random and dtype.is_floating_point and dtype != torch.float64:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ref64 = self._run_case(case, cpu, torch.float64)
                    ok64 = True
                except Exception:
                    ok64 = False
            if not ok_same and not ok64:
                continue
            tried += 1
            if first_valid is None:
                first_valid = case
                rec["kind"] = case.kind
                rec["arguments"] = case.arguments
                rec["sample_source"] = case.origin
            random = random or case.random
            cap = Capture()
            try:
                with cap:
                    out = self._run_case(case, dev, dtype)
                    backend.synchronize()
            except NotProbeable as exc:
                tried -= 1
                reasons.append(str(exc))
                continue
            except Exception as exc:
                msg = first_line(f"{type(exc).__name__}: {exc}")
                status = "unsupported-dtype" if match_any(DTYPE_ERROR_PATTERNS, str(exc)) else "error"
                outcomes.append((status, msg))
                continue
            fb = cap.fallback_line()
            if fb:
                fallback_msg = fallback_msg or fb
            if case.random or not values:
                cmp_same = compare(out, ref_same, atol, rtol, False, torch, True) if ok_same else None
                outcomes.append(("mismatch", cmp_same.message) if cmp_same is not None and not cmp_same.ok
                                else ("pass", None))
                continue
            results = []
            if ok64:
                results.append(compare(out, ref64, atol, rtol, True, torch, False))
            if ok_same:
                results.append(compare(out, ref_same, atol, rtol, True, torch, True))
            best = next((r for r in results if r.ok), results[0])
            if best.compared:
                max_abs = max(max_abs or 0.0, best.max_abs)
                max_rel = max(max_rel or 0.0, best.max_rel)
            outcomes.append(("pass", None) if best.ok else ("mismatch", best.message))
        rec["samples"] = tried
        if tried == 0:
            if reasons:
                rec.update(status="no-samples", message=reasons[0])
            elif cpu_errors:
                rec.update(status="no-samples",
                           message=f"no sample input ran on the CPU reference for {dtype_name}: {cpu_errors[0]}")
            else:
                rec.update(status="no-samples", message=f"no sample inputs known for {op} and {dtype_name}")
            return
        self._finish(rec, outcomes, fallback_msg)
        if values and not random:
            rec["tolerance"] = {"atol": atol, "rtol": rtol}
            rec["max_abs_error"] = max_abs
            rec["max_rel_error"] = max_rel
        elif random:
            rec["compared"] = "shape-only (random output)"
        else:
            rec["compared"] = "shape-only (meta device has no data)"
        if rec["status"] in ("pass", "fallback", "mismatch") and first_valid is not None:
            rec["device_time_ms"] = self._time_case(first_valid, dtype, dev, repeats)

    @staticmethod
    def _finish(rec, outcomes, fallback_msg) -> None:
        statuses = [s for s, _ in outcomes]
        for status in ("error", "unsupported-dtype", "mismatch"):
            if status in statuses:
                rec.update(status=status, message=next(m for s, m in outcomes if s == status))
                break
        else:
            if fallback_msg:
                rec.update(status="fallback", message=fallback_msg)
        if fallback_msg:
            rec["fallback"] = True
            if rec["status"] != "fallback":
                rec["fallback_message"] = fallback_msg

    def _time_case(self, case, dtype, dev, repeats) -> Optional[float]:
        """Median of ``repeats`` synchronised calls of the prepared sample (after one warm-up call)."""
        times = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prep = case.prepare(dev, dtype)
                prep.call()
                for _ in range(max(1, repeats)):
                    self.backend.synchronize()
                    t0 = time.perf_counter()
                    prep.call()
                    self.backend.synchronize()
                    times.append((time.perf_counter() - t0) * 1000.0)
        except Exception:
            return None
        return round(statistics.median(times), 6) if times else None

    # -- one (op, dtype) ---------------------------------------------------------------
    def _call(self, target, sample, dtype, device, module=None):
        """Apply the target to (a copy of) the sample, with tensors moved to ``device``
        (a torch.device) or converted with ``conv`` (a function)."""
        torch = self.torch
        from torch.utils._pytree import tree_map
        from analyse.probe import samples

        def move(x):
            if isinstance(x, torch.Tensor):
                return device(x) if callable(device) else x.detach().clone().to(device)
            return x

        args = tree_map(move, sample.args)
        kwargs = tree_map(move, sample.kwargs)
        if target.kind == "module":
            return module(*args, **kwargs), args
        return target.fn(*args, **kwargs), args

    def _module_copy(self, base, to):
        import copy
        return copy.deepcopy(base).to(to) if base is not None else None

    def _probe(self, target, dtype, dtype_name, rec, max_samples, repeats):
        torch = self.torch
        from analyse.probe import samples

        backend = self.backend
        dev = backend.torch_device()
        values = backend.compares_values()
        nondet = any(re.search(p, target.op) for p in NONDETERMINISTIC_PATTERNS)
        atol, rtol = tolerance_for(dtype_name)
        cpu_errors: List[str] = []
        outcomes: List[Tuple[str, Optional[str]]] = []
        tried = 0
        max_abs = max_rel = None
        fallback_msg = None
        first_valid = None
        inplace = target.inplace
        seen_candidates = 0
        for sample in samples.iter_samples(target, dtype):
            if tried >= max_samples or seen_candidates >= 40:
                break
            seen_candidates += 1
            module = ref_mod = ref64_mod = None
            if target.kind == "module":
                try:
                    ref_mod = samples.build_module(target, sample, dtype)
                except Exception as exc:
                    cpu_errors.append(first_line(f"{type(exc).__name__}: {exc}"))
                    continue
            # CPU references: the same dtype, and float64/complex128 where the op allows it.
            torch.manual_seed(0)
            ref_same = ref64 = None
            ok_same = ok64 = False
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ref_same, args_same = self._call(target, sample, dtype, torch.device("cpu"), ref_mod)
                ok_same = True
            except Exception as exc:
                cpu_errors.append(first_line(f"{type(exc).__name__}: {exc}"))
            if values and not nondet and (dtype.is_floating_point or dtype.is_complex) and dtype != torch.float64:
                try:
                    ref64_mod = self._module_copy(ref_mod, torch.float64)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ref64, args64 = self._call(target, sample, dtype, lambda x: _to_ref_dtype(x.detach().clone(), torch),
                                                   ref64_mod)
                    ok64 = True
                except Exception:
                    ok64 = False
            if not ok_same and not ok64:
                continue
            tried += 1
            if first_valid is None:
                first_valid = sample
            # The device call, with warnings and fd 2 captured.
            cap = Capture()
            try:
                module = self._module_copy(ref_mod, dev) if ref_mod is not None else None
                torch.manual_seed(0)
                with cap:
                    out, args_dev = self._call(target, sample, dtype, dev, module)
                    backend.synchronize()
            except Exception as exc:
                msg = first_line(f"{type(exc).__name__}: {exc}")
                status = "unsupported-dtype" if match_any(DTYPE_ERROR_PATTERNS, str(exc)) else "error"
                outcomes.append((status, msg))
                continue
            fb = cap.fallback_line()
            if fb:
                fallback_msg = fallback_msg or fb
                m = re.search(r"'(?:aten::)?([A-Za-z0-9_]+)", fb)
                if m:
                    self.fallback_seen.setdefault(m.group(1), fb)
            elif target.aten_name and target.aten_name in self.fallback_seen:
                # torch_npu warns once per operator and process: remember earlier warnings.
                fallback_msg = fallback_msg or self.fallback_seen[target.aten_name]
            if nondet or not values:
                cmp_same = compare(out, ref_same, atol, rtol, False, torch, True) if ok_same else None
                if cmp_same is not None and not cmp_same.ok:
                    outcomes.append(("mismatch", cmp_same.message))
                else:
                    outcomes.append(("pass", None))
                continue
            dev_obj = (out, args_dev) if inplace else out
            results = []
            if ok64:
                results.append(compare(dev_obj, (ref64, args64) if inplace else ref64, atol, rtol, True, torch, False))
            if ok_same:
                results.append(compare(dev_obj, (ref_same, args_same) if inplace else ref_same, atol, rtol, True,
                                       torch, True))
            best = next((r for r in results if r.ok), results[0])
            if best.compared:
                max_abs = max(max_abs or 0.0, best.max_abs)
                max_rel = max(max_rel or 0.0, best.max_rel)
            outcomes.append(("pass", None) if best.ok else ("mismatch", best.message))
        rec["samples"] = tried
        if tried == 0:
            why = cpu_errors[0] if cpu_errors else "no sample inputs known"
            rec.update(status="no-samples",
                       message=f"no sample input ran on the CPU reference for {dtype_name}: {why}"
                       if cpu_errors else f"no sample inputs known for this operator and {dtype_name}")
            return
        statuses = [s for s, _ in outcomes]
        for status in ("error", "unsupported-dtype", "mismatch"):
            if status in statuses:
                rec.update(status=status, message=next(m for s, m in outcomes if s == status))
                break
        else:
            if fallback_msg:
                rec.update(status="fallback", message=fallback_msg)
        if fallback_msg:
            rec["fallback"] = True
            if rec["status"] != "fallback":
                rec["fallback_message"] = fallback_msg
        if values and not nondet:
            rec["tolerance"] = {"atol": atol, "rtol": rtol}
            rec["max_abs_error"] = max_abs
            rec["max_rel_error"] = max_rel
        elif nondet:
            rec["compared"] = "shape-only (random or uninitialised output)"
        else:
            rec["compared"] = "shape-only (meta device has no data)"
        if rec["status"] in ("pass", "fallback", "mismatch") and first_valid is not None:
            rec["device_time_ms"] = self._time(target, first_valid, dtype, dev, repeats)

    def _time(self, target, sample, dtype, dev, repeats) -> Optional[float]:
        from analyse.probe import samples

        times = []
        mod = None
        try:
            if target.kind == "module":
                mod = samples.build_module(target, sample, dtype).to(dev)
            for _ in range(max(1, repeats)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from torch.utils._pytree import tree_map
                    torch = self.torch
                    args = tree_map(lambda x: x.detach().clone().to(dev) if isinstance(x, torch.Tensor) else x,
                                    sample.args)
                    kwargs = tree_map(lambda x: x.detach().clone().to(dev) if isinstance(x, torch.Tensor) else x,
                                      sample.kwargs)
                    self.backend.synchronize()
                    t0 = time.perf_counter()
                    (mod if mod is not None else target.fn)(*args, **kwargs)
                    self.backend.synchronize()
                    times.append((time.perf_counter() - t0) * 1000.0)
        except Exception:
            return None
        return round(statistics.median(times), 6) if times else None


def serve(inp, out) -> None:
    worker = Worker()
    for line in inp:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
            cmd = msg.get("cmd")
            if cmd == "init":
                reply = worker.init(msg)
            elif cmd == "plan":
                reply = worker.plan(msg)
            elif cmd == "probe":
                reply = worker.probe(msg)
            elif cmd == "exit":
                return
            else:
                reply = {"ok": False, "error": f"unknown command {cmd!r}"}
        except Exception as exc:
            reply = {"ok": False, "error": first_line(repr(exc))}
        out.write(json.dumps(reply, default=str) + "\n")
        out.flush()


def isolate() -> None:
    """Nothing from the working folder or an analysed project is importable in the worker.

    The parent starts the worker with ``python -I`` (no PYTHONPATH, no user site, no script folder on
    sys.path) in a private temp folder; this drops any remaining sys.path entry that is the current
    folder ('' or its path), which ``python -m`` or ``-c`` would otherwise put first.
    """
    cwd = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != cwd]


def watch_parent(parent: int, home: str, interval: float = 0.5) -> None:
    """The process that started this worker owns it: when that process is gone (killed, even with
    SIGKILL, which runs none of its cleanup), the worker removes its private folder and leaves -- also in
    the middle of an operator (this runs in its own thread)."""
    import shutil

    while os.getppid() == parent:
        time.sleep(interval)
    if os.path.basename(home).startswith("npu-analyse-worker-"):   # the runner's folder, never anything else
        shutil.rmtree(home, ignore_errors=True)
    os._exit(1)


def main() -> None:
    import faulthandler
    import threading

    parent = os.environ.get("NPU_ANALYSE_PROBE_PARENT", "")
    if parent.isdigit():
        threading.Thread(target=watch_parent, args=(int(parent), os.getcwd()), name="npu-analyse-parent-watch",
                         daemon=True).start()
    isolate()
    faulthandler.enable()  # -I ignores PYTHONFAULTHANDLER; a segfault's traceback goes to stderr
    # Keep a private copy of stdout for the protocol; point fd 1 at stderr.
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    proto = os.fdopen(proto_fd, "w", encoding="utf-8", buffering=1)
    serve(sys.stdin, proto)


if __name__ == "__main__":
    main()
