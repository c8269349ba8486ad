"""Documented NPU limitations the probe settles on the device (parent side, no torch).

For every operator the probe asks the knowledge base (``analyse.knowledge``,
the torch_npu native API support tables) what it documents: the status, the
dtypes a limitation allows (its structured ``dtype`` check, or a text such as
``仅支持bf16，fp16，fp32``), and the check a catalogue variant's ``match`` word
names (the ``arg`` check of ``dropout``, the ``ndim`` check of a 2-D input). The
worker probes those arguments and dtypes; :func:`annotate` then attaches the
limitation to the record and flags a **doc conflict** when an NPU run passes
something the documentation lists as unsupported.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

DTYPE_WORDS = {
    "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16", "half": "float16",
    "fp32": "float32", "float32": "float32", "float": "float32", "fp64": "float64", "float64": "float64",
    "double": "float64", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "bool": "bool", "complex64": "complex64", "complex128": "complex128",
}
# The knowledge base's structured dtype checks use short names (bf16, fp16 ...).
CHECK_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64"}
_ONLY_RE = re.compile(r"(?:仅支持|只支持|支持)(?:输出)?\s*([A-Za-z0-9_，,、/ ]+)")
# The devices whose documentation the knowledge base holds: a pass elsewhere settles nothing.
DOCUMENTED_DEVICE_TYPES = ("npu",)


def kb_version_for(torch_version: Optional[str], known: List[str], default: str) -> str:
    """The knowledge-base version closest to (not above) a torch version string such as '2.13.0+cpu'."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", torch_version or "")
    if not m:
        return default
    want = tuple(int(x or 0) for x in m.groups())

    def key(v: str):
        return tuple(int(x) for x in v.split("."))

    below = [v for v in known if key(v) <= want]
    return max(below, key=key) if below else default


def _lines(text: str) -> List[str]:
    out = []
    for line in (text or "").splitlines():
        line = line.strip().lstrip("-*").strip()
        if line and not line.startswith("```"):
            out.append(line)
    return out


def doc_dtypes(text: Optional[str]) -> Optional[Dict[str, Any]]:
    """The dtype list of a limitation text (``仅支持bf16，fp16，fp32``), with the line it came from."""
    for line in _lines(text or ""):
        m = _ONLY_RE.search(line)
        if not m:
            continue
        words = [w.strip().lower() for w in re.split(r"[，,、/ ]+", m.group(1)) if w.strip()]
        dtypes = [DTYPE_WORDS[w] for w in words if w in DTYPE_WORDS]
        if dtypes and len(dtypes) == len([w for w in words if w]):
            return {"dtypes": list(dict.fromkeys(dtypes)), "text": line}
    return None


def match_line(text: Optional[str], word: str) -> Optional[str]:
    for line in _lines(text or ""):
        if word.lower() in line.lower():
            return line
    return None


class Documentation:
    """What the knowledge base documents for the probed operators (one torch version)."""

    def __init__(self, kb: Any):
        self.kb = kb
        self.version = getattr(kb, "torch_version", None)

    def lookup(self, op: str) -> Optional[Dict[str, Any]]:
        """Plain data for the worker and :func:`annotate`: status, source, limitation text, structured
        checks (``checks`` of the knowledge base: dtype / arg / value / ndim), dtypes."""
        if self.kb is None:
            return None
        try:
            info = self.kb.api(op)
        except Exception:
            info = None
        if info is None:
            return None
        checks = [dict(c) for c in (getattr(info, "checks", None) or ())]
        dt = _check_dtypes(checks) or doc_dtypes(info.limitations) or doc_dtypes(getattr(info, "evidence", None))
        return {"api": info.name, "status": info.status, "source": info.source,
                "limitations": info.limitations, "evidence": getattr(info, "evidence", None), "checks": checks,
                "dtypes": dt["dtypes"] if dt else None, "dtype_text": dt["text"] if dt else None,
                "torch_version": self.version}


def _check_dtypes(checks: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The allowed dtypes of the first dtype check that names only dtypes torch has."""
    for c in checks:
        if c.get("kind") != "dtype" or not c.get("allowed"):
            continue
        names = [CHECK_DTYPES.get(d, d) for d in c["allowed"]]
        known = [n for n in names if n in DTYPE_WORDS.values()]
        if known:
            return {"dtypes": list(dict.fromkeys(known)), "text": c.get("text") or ""}
    return None


def _match(doc: Dict[str, Any], word: str) -> Optional[Dict[str, Any]]:
    """The documented limit a catalogue variant's ``match`` names: a structured check whose param or
    kind is ``word`` (``dropout``, ``proj_size``, ``ndim``), else a text line containing it."""
    for c in doc.get("checks") or ():
        if c.get("kind") in ("arg", "value") and c.get("param") == word or c.get("kind") == word:
            return {"text": c.get("text"), "check": c}
    line = match_line(doc.get("limitations"), word) or match_line(doc.get("evidence"), word)
    return {"text": line} if line else None


def load_documentation(torch_version: Optional[str]) -> Documentation:
    """The knowledge base for the torch version (nearest known); an empty Documentation if it cannot load."""
    try:
        from analyse.knowledge import DEFAULT_TORCH_VERSION, TORCH_VERSIONS, load_knowledge

        return Documentation(load_knowledge(kb_version_for(torch_version, list(TORCH_VERSIONS), DEFAULT_TORCH_VERSION)))
    except Exception:
        return Documentation(None)


def limitation_for(doc: Optional[Dict[str, Any]], dtype: str, variant: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The documented limitation one (dtype, variant) sample exercises, or None."""
    if not doc:
        return None
    base = {"api": doc["api"], "source": doc["source"], "documented_status": doc["status"],
            "torch_version": doc.get("torch_version")}
    if variant and variant.get("match"):
        found = _match(doc, variant["match"])
        if found:
            return dict(base, **found, expect=variant.get("expect") or "unsupported")
    if doc["status"] == "unsupported":
        return dict(base, text="listed as unsupported", expect="unsupported")
    if doc.get("dtypes") and dtype in DTYPE_WORDS.values() and dtype not in doc["dtypes"]:
        return dict(base, text=doc["dtype_text"], expect="unsupported")
    return None


def annotate(rec: Dict[str, Any], device: str) -> None:
    """Mark a doc conflict: the limitation says unsupported, the documented device ran it and matched."""
    lim = rec.get("limitation")
    if not lim:
        return
    on_documented = device.partition(":")[0] in DOCUMENTED_DEVICE_TYPES
    lim["settled"] = on_documented and rec["status"] in ("pass", "mismatch", "error", "unsupported-dtype", "fallback")
    if on_documented and lim.get("expect") == "unsupported" and rec["status"] == "pass":
        rec["doc_conflict"] = True
    elif on_documented and lim.get("expect") == "supported" and rec["status"] in ("error", "unsupported-dtype"):
        rec["doc_conflict"] = True


def summarise(results: List[Dict[str, Any]], device: str) -> Dict[str, Any]:
    """summary.limitations: what was probed against the documentation, and the conflicts."""
    probed = [r for r in results if r.get("limitation")]
    conflicts = [{"op": r["op"], "dtype": r["dtype"], "arguments": r.get("arguments"), "status": r["status"],
                  "documented": r["limitation"].get("text"), "source": r["limitation"].get("source")}
                 for r in probed if r.get("doc_conflict")]
    confirmed = sum(1 for r in probed if r["limitation"].get("settled") and not r.get("doc_conflict"))
    on_documented = device.partition(":")[0] in DOCUMENTED_DEVICE_TYPES
    note = None if on_documented else (
        f"the limitations are documented for Ascend NPUs; this run on {device} shows what the samples do "
        "but settles none of them")
    return {"probed": len(probed), "confirmed": confirmed, "doc_conflicts": conflicts, "note": note}
