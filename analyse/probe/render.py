"""probe.json, probe.html and the terminal summary."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List

STATUSES = ("pass", "fallback", "mismatch", "error", "unsupported-dtype", "unknown-op", "no-samples", "timeout")
# Most to least worrying, for the "worst operators" list.
SEVERITY = ("error", "timeout", "unsupported-dtype", "mismatch", "fallback", "unknown-op", "no-samples", "pass")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITY)}


def build_document(*, version: str, device: str, environment: Dict[str, Any], results: List[Dict[str, Any]],
                   duration_s: float, invalid_lines: List[Dict[str, Any]], options: Dict[str, Any]) -> Dict[str, Any]:
    counts = Counter(r["status"] for r in results)
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
            "operators": len({r["op"] for r in results}),
            "records": len(results),
            "duration_s": round(float(duration_s), 3),
        },
        "invalid_lines": invalid_lines,
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
