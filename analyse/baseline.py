"""Baseline files: today's findings, recorded so that only new ones gate.

Format (version 1), sorted and indented so that it diffs well in review::

    {
      "findings": [
        {"api": "torch.Tensor.cuda", "code": "NPU002", "id": "3f0c1d2e4a5b6c7d", "path": "train.py"},
        ...
      ],
      "tool": "npu-analyse",
      "version": 1
    }

Only ``id`` is used for matching; it is the finding fingerprint of
``report.schema.json`` (rule, path, API and the normalised source line plus an
occurrence counter), so adding or removing lines above a finding keeps it
baselined, while editing the offending line itself makes it new. ``code``,
``path`` and ``api`` are there for the reader. Line numbers are not recorded
(they would make every unrelated edit a baseline diff).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import FrozenSet, Iterable, Mapping

BASELINE_VERSION = 1
MAX_BASELINE_BYTES = 64 * 1024 * 1024


class BaselineError(ValueError):
    """A baseline file that cannot be read or is not a baseline."""


def render_baseline(findings: Iterable[Mapping]) -> str:
    """Baseline JSON text for *findings* (report finding dicts)."""
    entries = {}
    for f in findings:
        fid = str(f.get("id") or "")
        if not fid:
            continue
        entries[fid] = {"id": fid, "code": str(f.get("code", "")), "path": str(f.get("path", "")),
                        "api": str(f.get("api", ""))}
    rows = sorted(entries.values(), key=lambda e: (e["path"], e["code"], e["api"], e["id"]))
    doc = {"tool": "npu-analyse", "version": BASELINE_VERSION, "findings": rows}
    from analyse.termsafe import json_surrogates

    # a non-UTF-8 file name's surrogates as JSON escapes: the file stays UTF-8, the ids read back the same
    return json_surrogates(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)) + "\n"


def read_baseline(path: Path) -> FrozenSet[str]:
    """The finding ids recorded in the baseline at *path*."""
    path = Path(path)
    from analyse.inputs import InputError, load_json

    try:   # a FIFO or device named by an untrusted configuration must not hang the run, nor a nesting bomb crash it
        doc = load_json(path, "baseline", MAX_BASELINE_BYTES)
    except InputError as exc:
        raise BaselineError(str(exc)) from None
    if not isinstance(doc, dict) or doc.get("tool") != "npu-analyse" or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{path} is not an npu-analyse baseline (write one with --write-baseline)")
    if doc.get("version") != BASELINE_VERSION:
        raise BaselineError(f"baseline {path} has version {doc.get('version')!r}; this npu-analyse reads version "
                            f"{BASELINE_VERSION}")
    ids = set()
    for entry in doc["findings"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise BaselineError(f"baseline {path}: every entry needs a string 'id'")
        ids.add(entry["id"])
    return frozenset(ids)
