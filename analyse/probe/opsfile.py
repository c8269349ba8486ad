"""The ops file (see shared/spec/OPS_FILE.md) and operator names.

Parsing is purely textual: a line is accepted only if its first field is a plain
dotted name under ``torch`` or an ATen name ``aten::name[.overload]``. Nothing is
evaluated, imported or looked up here; resolution happens later in the worker by
attribute lookup inside the ``torch`` namespace only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

# dtype names accepted in the ops file and on --dtypes (torch attribute names).
KNOWN_DTYPES = (
    "float32", "float16", "bfloat16", "float64",
    "complex32", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "bool",
)
DTYPE_ALIASES = {
    "float": "float32", "half": "float16", "double": "float64", "fp32": "float32",
    "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "int": "int32",
    "long": "int64", "short": "int16", "cfloat": "complex64", "cdouble": "complex128",
    "chalf": "complex32",
}

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED_RE = re.compile(rf"^{_IDENT}(?:\.{_IDENT})*$")
_ATEN_RE = re.compile(rf"^aten::({_IDENT})(?:\.({_IDENT}))?$")
# Tensor dunders that are real operators (torch.Tensor.__add__ ...); every other
# dunder segment (__import__, __class__, __globals__ ...) is rejected.
_TENSOR_DUNDERS = frozenset(
    f"__{n}__" for n in (
        "add radd iadd sub rsub isub div rdiv idiv mul rmul imul matmul rmatmul truediv rtruediv itruediv "
        "floordiv rfloordiv ifloordiv mod rmod imod pow rpow ipow and rand iand or ror ior "
        "xor rxor ixor lshift rlshift ilshift rshift rrshift irshift neg pos abs invert "
        "eq ne lt le gt ge getitem setitem len contains"
    ).split()
)
MAX_LINE = 500
MAX_OPS_FILE_BYTES = 16 * 1024 * 1024   # an ops file names operators, one a line


class OpsFileError(ValueError):
    """The ops file cannot be used at all (unreadable, empty, only invalid lines)."""


@dataclass(frozen=True)
class OpSpec:
    """One operator to probe. ``dtypes`` is None when the line gave none."""

    op: str
    dtypes: Optional[Tuple[str, ...]]
    line: Optional[int] = None
    source: str = "ops-file"


@dataclass(frozen=True)
class InvalidLine:
    line: Optional[int]
    text: str
    reason: str
    source: str = "ops-file"

    def to_dict(self) -> dict:
        return {"line": self.line, "text": self.text, "reason": self.reason, "source": self.source}


@dataclass(frozen=True)
class Skipped:
    """An API a report names that the probe does not run, with the reason."""

    api: str
    reason: str
    source: str

    def to_dict(self) -> dict:
        return {"api": self.api, "reason": self.reason, "source": self.source}


@dataclass
class OpsList:
    ops: List[OpSpec] = field(default_factory=list)
    invalid: List[InvalidLine] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)
    # Names from a report that are not operator names: each becomes a no-samples record with the reason.
    unprobeable: List[InvalidLine] = field(default_factory=list)


def normalise_dtype(name: str) -> Optional[str]:
    n = name.strip().lower()
    if n.startswith("torch."):
        n = n[len("torch."):]
    n = DTYPE_ALIASES.get(n, n)
    return n if n in KNOWN_DTYPES else None


def parse_dtype_list(text: str) -> Tuple[Tuple[str, ...], List[str]]:
    """Split ``"float32,fp16"`` into (normalised dtypes, unknown names)."""
    good: List[str] = []
    bad: List[str] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        d = normalise_dtype(part)
        if d is None:
            bad.append(part)
        elif d not in good:
            good.append(d)
    return tuple(good), bad


def normalise_op_name(name: str) -> Tuple[Optional[str], Optional[str]]:
    """Return (normalised name, None) or (None, reason). Purely textual."""
    name = name.strip()
    if not name:
        return None, "empty operator name"
    if len(name) > MAX_LINE:
        return None, "operator name too long"
    m = _ATEN_RE.match(name)
    if m:
        return name, None
    if name.startswith("aten::"):
        return None, "not a valid ATen name (expected aten::name or aten::name.overload)"
    if not _DOTTED_RE.match(name):
        return None, "not a plain dotted name (nothing in the ops file is evaluated)"
    parts = name.split(".")
    if parts[0] != "torch":
        return None, "outside the torch namespace (only torch.* and aten::* names are probed)"
    if len(parts) < 2:
        return None, "names the torch module itself, not an operator"
    for i, seg in enumerate(parts):
        if seg.startswith("__") and seg.endswith("__") and len(seg) > 4:
            if not (i == len(parts) - 1 and parts[1:-1] == ["Tensor"] and seg in _TENSOR_DUNDERS):
                return None, f"dunder attribute {seg!r} is not an operator"
        elif seg.startswith("__"):
            return None, f"private attribute {seg!r} is not an operator"
    # Common spellings: torch.nn.functional == F in code; keep the long form.
    return name, None


def parse_ops_text(text: str) -> OpsList:
    """Parse the ops file text; never evaluates anything."""
    out = OpsList()
    seen: Dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        fields = line.split()
        if len(fields) > 2:
            out.invalid.append(InvalidLine(lineno, raw.strip()[:200],
                                           "too many fields (expected: operator [dtypes])"))
            continue
        op, reason = normalise_op_name(fields[0])
        if op is None:
            out.invalid.append(InvalidLine(lineno, raw.strip()[:200], reason or "invalid"))
            continue
        dtypes: Optional[Tuple[str, ...]] = None
        if len(fields) == 2:
            dtypes, bad = parse_dtype_list(fields[1])
            if bad or not dtypes:
                out.invalid.append(InvalidLine(lineno, raw.strip()[:200],
                                               f"unknown dtype(s): {', '.join(bad) or fields[1]}"))
                continue
        key = op
        if key in seen:
            # Merge dtypes of duplicate lines into the first occurrence.
            idx = seen[key]
            prev = out.ops[idx]
            if prev.dtypes is not None and dtypes is not None:
                merged = tuple(dict.fromkeys(prev.dtypes + dtypes))
                out.ops[idx] = OpSpec(prev.op, merged, prev.line, prev.source)
            elif dtypes is None:
                out.ops[idx] = OpSpec(prev.op, None, prev.line, prev.source)
            continue
        seen[key] = len(out.ops)
        out.ops.append(OpSpec(op, dtypes, lineno))
    return out


def read_ops_file(path: Path) -> OpsList:
    from analyse.inputs import InputError, read_text

    try:   # a regular file, bounded (/dev/zero, a FIFO: one line at once)
        text = read_text(path, "ops file", MAX_OPS_FILE_BYTES)
    except InputError as exc:
        raise OpsFileError(str(exc)) from None
    return parse_ops_text(text)


REPORT_CATEGORIES = ("unknown-api", "unsupported-api")
# Other finding categories whose torch APIs are probed too (a sort, an optimizer, a wrapper the report
# flags for another reason still has to run on the device).
EXTRA_CATEGORIES = ("dynamic-shape", "affinity", "performance-advice", "distributed", "precision")


TRITON_SKIP = ("a Triton kernel or Triton setting: needs a Triton-Ascend device run (triton-ascend compiles kernels only on "
               "an Ascend NPU host; not probeable on CPU)")


def skip_reason(api: str, category: Optional[str]) -> Optional[str]:
    """Why a report's API is not probed, or None when it is."""
    if api.startswith(("triton-kernel:", "triton-grid:", "triton-launch:", "triton.")) or api == "triton":
        return TRITON_SKIP
    if (":" in api and not api.startswith("aten::")) or not re.match(r"^[A-Za-z_][\w.:]*$", api):
        return "not an API name (a finding key of the static analysis)"
    from analyse.knowledge.noise import load_noise

    if load_noise().other_vendor(api):
        return "another accelerator's namespace (torch.mlu, torch.musa, torch.hpu, torch.xpu ...): not an NPU API to probe"
    head = api.split(".", 1)[0]
    if head == "torch_npu":
        return "a torch_npu API: it exists only where torch_npu is installed (checked statically)"
    if head != "torch" and not api.startswith("aten::"):
        return "not a torch API (a third-party library or the project's own code); the probe runs torch only"
    if category == "cuda-api" or api.startswith(("torch.cuda.", "torch.backends.cuda", "torch.backends.cudnn")):
        return ("a CUDA device-management API: on an NPU its torch.npu counterpart runs (transfer_to_npu or a "
                "rewrite); checked statically, not a kernel")
    if category not in REPORT_CATEGORIES + EXTRA_CATEGORIES:
        return f"a {category} finding: checked statically"
    return None


def _items(v) -> list:
    """A report's array, or nothing when the field holds anything else (a crafted report is data to check)."""
    return v if isinstance(v, list) else []


def _report_apis(doc: dict) -> Iterable[Tuple[str, Optional[str], Optional[int], str]]:
    """(api, category, line, source) of a script or thirdparty report, in report order. Fields of another
    type than the report schema's are passed over."""
    for f in _items(doc.get("findings")):
        if not isinstance(f, dict):
            continue
        category = f.get("category") if isinstance(f.get("category"), str) else None
        path = f.get("path") if isinstance(f.get("path"), str) else "?"
        # a grouped finding (one rule repeated in one file) lists every place, each with its API
        places = [o for o in _items(f.get("occurrences")) if isinstance(o, dict)] or [f]
        for o in places:
            if isinstance(o.get("api"), str):
                line = o.get("line") if type(o.get("line")) is int else None
                yield o["api"], category, line, f"report:{path[:200]}"
    tp = doc.get("thirdparty")
    if isinstance(tp, dict):
        for fn in _items(tp.get("functions")):
            if not isinstance(fn, dict):
                continue
            line = fn.get("line") if type(fn.get("line")) is int else None
            qual = fn.get("qualname") if isinstance(fn.get("qualname"), str) else "?"
            where = f"thirdparty:{qual[:200]}"
            for api in _items(fn.get("reasons")) + _items(fn.get("via"))[-1:]:
                if isinstance(api, str):
                    yield api, "unsupported-api", line, where


def read_report_apis(path: Path) -> OpsList:
    """The APIs of a script or thirdparty report.json: the torch APIs of its findings (unknown-api,
    unsupported-api and the categories in EXTRA_CATEGORIES) and of ``thirdparty.functions`` (their
    ``reasons`` and the callee ending their ``via`` chain). Every other API it names is listed in
    ``skipped`` with the reason."""
    from analyse.inputs import InputError, load_json

    try:   # a regular file, bounded in size and nesting
        doc = load_json(path, "report")
    except InputError as exc:
        raise OpsFileError(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        raise OpsFileError(f"report {path} has no 'findings' list (expected an npu-analyse report.json)")
    out = OpsList()
    entries = list(_report_apis(doc))
    categories: Dict[str, set] = {}
    for api, category, _line, _source in entries:
        categories.setdefault(api, set()).add(category)
    probed = REPORT_CATEGORIES + EXTRA_CATEGORIES
    seen = set()
    for api, category, line, source in entries:
        if api in seen:
            continue
        seen.add(api)
        reason = skip_reason(api, next((c for c in probed if c in categories[api]), category))
        if reason is not None:
            out.skipped.append(Skipped(api[:200], reason, source))
            continue
        op, why = normalise_op_name(api)
        if op is None:
            out.unprobeable.append(InvalidLine(line, api[:200], why or "invalid", source=source))
            continue
        if any(o.op == op for o in out.ops):
            continue
        out.ops.append(OpSpec(op, None, line, source=source))
    return out


def report_torch_version(path: Path) -> Optional[str]:
    """target.torch_version of a report (the version whose NPU documentation applies), or None."""
    from analyse.inputs import load_json

    try:
        doc = load_json(path, "report")
    except Exception:
        return None
    target = doc.get("target") if isinstance(doc, dict) else None
    v = target.get("torch_version") if isinstance(target, dict) else None
    return v if isinstance(v, str) else None


def merge(lists: Iterable[OpsList]) -> OpsList:
    out = OpsList()
    index: Dict[str, int] = {}
    for ol in lists:
        out.invalid.extend(ol.invalid)
        known = {k.api for k in out.skipped}
        out.skipped.extend(k for k in ol.skipped if k.api not in known)
        out.unprobeable.extend(ol.unprobeable)
        for spec in ol.ops:
            if spec.op in index:
                prev = out.ops[index[spec.op]]
                if prev.dtypes is not None and spec.dtypes is None:
                    out.ops[index[spec.op]] = OpSpec(prev.op, None, prev.line, prev.source)
                elif prev.dtypes is not None and spec.dtypes is not None:
                    out.ops[index[spec.op]] = OpSpec(prev.op, tuple(dict.fromkeys(prev.dtypes + spec.dtypes)),
                                                     prev.line, prev.source)
                continue
            index[spec.op] = len(out.ops)
            out.ops.append(spec)
    return out
