"""probe.json, probe.html and the terminal summary."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

STATUSES = ("pass", "fallback", "mismatch", "error", "unsupported-dtype", "unknown-op", "no-samples", "timeout",
            "host-only")
KINDS = ("function", "method", "module", "optimizer", "class", "collective", "factory")
# Most to least worrying, for the "worst operators" list.
SEVERITY = ("error", "timeout", "unsupported-dtype", "mismatch", "fallback", "unknown-op", "no-samples", "host-only",
            "pass")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITY)}


def by_operator(results: List[Dict[str, Any]]) -> Dict[str, int]:
    """Distinct operators by their worst status (an operator with one error record counts as error)."""
    worst_of: Dict[str, str] = {}
    for r in results:
        prev = worst_of.get(r["op"])
        if prev is None or SEVERITY_RANK.get(r["status"], 99) < SEVERITY_RANK.get(prev, 99):
            worst_of[r["op"]] = r["status"]
    counts = Counter(worst_of.values())
    return {s: counts.get(s, 0) for s in STATUSES}


def build_document(*, version: str, device: str, environment: Dict[str, Any], results: List[Dict[str, Any]],
                   duration_s: float, invalid_lines: List[Dict[str, Any]], options: Dict[str, Any],
                   skipped: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    from analyse.probe.limits import summarise

    counts = Counter(r["status"] for r in results)
    kinds = Counter(r.get("kind") for r in results if r.get("kind"))
    env = {"torch": environment.get("torch"), "torch_npu": environment.get("torch_npu"),
           "cann": environment.get("cann"), "device_name": environment.get("device_name"),
           "python": environment.get("python") or ""}
    for k, v in environment.items():
        env.setdefault(k, v)
    return {
        "schema_version": "1",
        "tool": {"name": "npu-analyse", "version": version},
        "device": device,
        "environment": env,
        "options": options,
        "results": results,
        "summary": {
            "by_status": {s: counts.get(s, 0) for s in STATUSES},
            "operators_by_status": by_operator(results),
            "by_kind": {k: kinds.get(k, 0) for k in KINDS if kinds.get(k)},
            "operators": len({r["op"] for r in results}),
            "records": len(results),
            "skipped_apis": len(skipped or []),
            "limitations": summarise(results, device),
            "duration_s": round(float(duration_s), 3),
        },
        "invalid_lines": invalid_lines,
        "skipped": list(skipped or []),
    }


def write_json(doc: Dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")


def write_html(doc: Dict[str, Any], path: Path) -> None:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from analyse.paths import templates_dir

    env = Environment(loader=FileSystemLoader(str(templates_dir())),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    tpl = env.get_template("probe.html.j2")
    path.write_text(tpl.render(doc=doc, statuses=STATUSES), encoding="utf-8")


def worst(results: List[Dict[str, Any]], n: int = 10) -> List[Dict[str, Any]]:
    bad = [r for r in results if r["status"] != "pass"]
    bad.sort(key=lambda r: (SEVERITY_RANK.get(r["status"], 99), r["op"], r["dtype"]))
    return bad[:n]


def terminal_summary(doc: Dict[str, Any], out_dir: Path) -> str:
    s = doc["summary"]
    lines = [f"npu-analyse probe on {doc['device']} ({doc['environment'].get('device_name') or 'unknown device'}): "
             f"{s['operators']} operator(s), {s['records']} record(s) in {s['duration_s']:.1f} s"]
    counts = ", ".join(f"{k} {v}" for k, v in s["by_status"].items() if v)
    lines.append(f"  by status: {counts or 'nothing probed'}")
    ops = ", ".join(f"{k} {v}" for k, v in s.get("operators_by_status", {}).items() if v)
    if ops:
        lines.append(f"  operators by worst status: {ops}")
    lim = s.get("limitations") or {}
    if lim.get("probed"):
        line = f"  documented limitations probed: {lim['probed']}"
        if lim.get("doc_conflicts"):
            line += f", {len(lim['doc_conflicts'])} doc conflict(s) (listed unsupported, passed on the device)"
        lines.append(line)
        for c in lim.get("doc_conflicts") or []:
            lines.append(f"    doc conflict      {c['op']} [{c['dtype']}] {c.get('arguments') or ''}: {c['documented']}")
        if lim.get("note"):
            lines.append(f"  ({lim['note']})")
    if doc.get("skipped"):
        lines.append(f"  {len(doc['skipped'])} API(s) of the report not probed, each with its reason (probe.json: skipped)")
    w = worst(doc["results"])
    if w:
        lines.append("  worst:")
        for r in w:
            msg = (r.get("message") or "").replace("\n", " ")
            if len(msg) > 100:
                msg = msg[:97] + "..."
            lines.append(f"    {r['status']:<17} {r['op']} [{r['dtype']}]" + (f"  {msg}" if msg else ""))
    if doc.get("invalid_lines"):
        lines.append(f"  {len(doc['invalid_lines'])} invalid line(s) skipped (see stderr / probe.json)")
    lines.append(f"  wrote {out_dir / 'probe.json'} and {out_dir / 'probe.html'}")
    return "\n".join(lines)


def markdown_summary(doc: Dict[str, Any]) -> str:
    """A README-ready summary of a probe.json: device, versions, counts, and one row per record."""
    env = doc["environment"]
    s = doc["summary"]
    out = [f"- device: `{doc['device']}` ({env.get('device_name') or 'unknown'})",
           f"- torch {env.get('torch')}, torch_npu {env.get('torch_npu') or 'not installed'}, "
           f"CANN {env.get('cann') or 'not installed'}, Python {env.get('python')}, "
           f"npu-analyse {doc['tool']['version']}",
           f"- documentation compared with: torch_npu native-API tables for torch {env.get('documentation')}",
           f"- {s['operators']} APIs, {s['records']} records in {s['duration_s']:.1f} s; "
           f"{s.get('skipped_apis', 0)} APIs of the reports not probed (each with its reason in `skipped`)",
           "- records by status: " + ", ".join(f"{k} {v}" for k, v in s["by_status"].items() if v),
           "- APIs by worst status: " + ", ".join(f"{k} {v}" for k, v in s.get("operators_by_status", {}).items()
                                                   if v),
           "- records by kind: " + ", ".join(f"{k} {v}" for k, v in s.get("by_kind", {}).items()),
           f"- documented limitations probed: {s.get('limitations', {}).get('probed', 0)}, doc conflicts: "
           f"{len(s.get('limitations', {}).get('doc_conflicts') or [])}",
           "",
           "| API | kind | dtype | arguments | status | max abs error | device time (ms) |",
           "|---|---|---|---|---|---|---|"]
    for r in doc["results"]:
        args = json.dumps(r.get("arguments"), ensure_ascii=False) if r.get("arguments") else ""
        err = f"{r['max_abs_error']:.3g}" if r.get("max_abs_error") is not None else ""
        t = f"{r['device_time_ms']:.3f}" if r.get("device_time_ms") is not None else ""
        status = r["status"] + (" (doc conflict)" if r.get("doc_conflict") else "")
        out.append(f"| `{r['op']}` | {r.get('kind') or ''} | {r['dtype']} | {args.replace('|', '/')} | {status} "
                   f"| {err} | {t} |")
    return "\n".join(out) + "\n"
