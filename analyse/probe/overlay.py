"""Feeding probe results back into static analysis (script mode).

``load_probe_results(path)`` reads a probe.json (checked by hand against the
structure of probe.schema.json; jsonschema is only a test dependency) and
returns a :class:`ProbeOverlay`. ``overlay.verdict(api)`` aggregates the
records of one API over its dtypes:

* ``unsupported``: some dtype raised on the device (``error`` or
  ``unsupported-dtype``); ``message`` is the error text, ``dtypes`` those that failed;
* ``fallback``: otherwise, some dtype ran (partly) on the CPU; ``message`` is the warning line;
* ``mismatch``: otherwise, some dtype gave numbers beyond tolerance;
* ``supported``: every probed dtype passed (``host-only``: the API ran on the host and runs no
  device kernel, so it works wherever torch does).

Records that carry no evidence about the device (``unknown-op``,
``no-samples``, ``timeout``) are ignored; an API with only such records, or
not probed at all, has no verdict (``None``). Does not import torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

STATUSES = ("pass", "fallback", "mismatch", "error", "unsupported-dtype", "unknown-op", "no-samples", "timeout",
            "host-only")
VERDICTS = ("supported", "unsupported", "fallback", "mismatch")
_NO_EVIDENCE = {"unknown-op", "no-samples", "timeout"}


class ProbeFileError(ValueError):
    """The file is not a usable probe.json."""


@dataclass(frozen=True)
class ProbeVerdict:
    api: str
    status: str  # one of VERDICTS
    device: str
    dtypes: Tuple[str, ...]
    message: Optional[str] = None


def normalise_api(api: str) -> str:
    """Spellings that name the same operator map to one key."""
    a = api.strip()
    if a.startswith("torch.ops.aten."):
        rest = a[len("torch.ops.aten."):]
        name, _, overload = rest.partition(".")
        a = f"aten::{name}" + (f".{overload}" if overload and overload != "default" else "")
    elif a.startswith("aten::") and a.endswith(".default"):
        a = a[: -len(".default")]
    for short, full in (("F.", "torch.nn.functional."), ("nn.", "torch.nn.")):
        if a.startswith(short):
            a = full + a[len(short):]
    return a


class ProbeOverlay:
    def __init__(self, device: str, records: List[Dict[str, Any]], environment: Optional[Dict[str, Any]] = None):
        self.device = device
        self.environment = environment or {}
        self._by_api: Dict[str, List[Dict[str, Any]]] = {}
        for rec in records:
            self._by_api.setdefault(normalise_api(rec["op"]), []).append(rec)

    def apis(self) -> List[str]:
        return sorted(self._by_api)

    def __contains__(self, api: str) -> bool:
        return self._lookup(api) is not None

    def _lookup(self, api: str) -> Optional[List[Dict[str, Any]]]:
        key = normalise_api(api)
        recs = self._by_api.get(key)
        if recs is None and key.startswith("aten::") and "." in key:
            recs = self._by_api.get(key.split(".", 1)[0])  # aten::add.Tensor -> aten::add
        return recs

    def verdict(self, api: str) -> Optional[ProbeVerdict]:
        recs = self._lookup(api)
        if not recs:
            return None
        useful = [r for r in recs if r["status"] not in _NO_EVIDENCE]
        if not useful:
            return None

        def pick(statuses: Iterable[str]) -> List[Dict[str, Any]]:
            st = set(statuses)
            return [r for r in useful if r["status"] in st]

        for verdict, statuses in (("unsupported", ("error", "unsupported-dtype")), ("fallback", ("fallback",)),
                                  ("mismatch", ("mismatch",))):
            hits = pick(statuses)
            if hits:
                msg = next((r.get("message") for r in hits if r.get("message")), None)
                return ProbeVerdict(api, verdict, self.device, _dtypes(hits), msg)
        return ProbeVerdict(api, "supported", self.device, _dtypes(useful), None)


def _dtypes(recs: List[Dict[str, Any]]) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(r["dtype"] for r in recs))


def _check(cond: bool, path: Union[str, Path], what: str) -> None:
    if not cond:
        raise ProbeFileError(f"{path}: not a valid probe.json: {what}")


def validate_probe_document(doc: Any, path: Union[str, Path] = "probe.json") -> None:
    """The checks of probe.schema.json that matter to readers, by hand."""
    _check(isinstance(doc, dict), path, "top level is not an object")
    for key in ("schema_version", "tool", "device", "environment", "results", "summary"):
        _check(key in doc, path, f"missing '{key}'")
    _check(doc["schema_version"] == "1", path, f"schema_version {doc['schema_version']!r} is not '1'")
    _check(isinstance(doc["tool"], dict) and "name" in doc["tool"] and "version" in doc["tool"], path,
           "'tool' needs name and version")
    _check(isinstance(doc["device"], str), path, "'device' is not a string")
    env = doc["environment"]
    _check(isinstance(env, dict), path, "'environment' is not an object")
    for key in ("torch", "torch_npu", "device_name"):
        _check(key in env and (env[key] is None or isinstance(env[key], str)), path,
               f"environment.{key} missing or not a string/null")
    _check(isinstance(doc["summary"], dict) and isinstance(doc["summary"].get("by_status"), dict), path,
           "summary.by_status missing")
    _check(isinstance(doc["results"], list), path, "'results' is not a list")
    for i, rec in enumerate(doc["results"]):
        where = f"results[{i}]"
        _check(isinstance(rec, dict), path, f"{where} is not an object")
        for key in ("op", "dtype", "status", "samples"):
            _check(key in rec, path, f"{where} missing '{key}'")
        _check(isinstance(rec["op"], str) and isinstance(rec["dtype"], str), path, f"{where}: op/dtype not strings")
        _check(rec["status"] in STATUSES, path, f"{where}: unknown status {rec['status']!r}")
        _check(isinstance(rec["samples"], int) and not isinstance(rec["samples"], bool) and rec["samples"] >= 0,
               path, f"{where}: samples is not a non-negative integer")
        msg = rec.get("message")
        _check(msg is None or isinstance(msg, str), path, f"{where}: message is not a string/null")


def load_probe_results(path: Union[str, Path]) -> ProbeOverlay:
    """Read and check a probe.json; raises ProbeFileError with one clear line."""
    from analyse.inputs import InputError, load_json

    p = Path(path)
    try:   # a regular file, bounded in size and nesting
        doc = load_json(p, "probe results")
    except InputError as exc:
        raise ProbeFileError(str(exc)) from None
    validate_probe_document(doc, p)
    return ProbeOverlay(doc["device"], doc["results"], doc.get("environment"))
