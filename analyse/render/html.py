"""Single-file HTML report: inline CSS and vanilla JS, no network access.

The findings and library-function tables are rendered in the browser from a
JSON blob embedded in a ``<script type="application/json">`` tag (so the page
stays small and fast with thousands of rows); everything else is rendered
server-side by the Jinja template ``templates/report.html.j2`` with
autoescaping on.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Dict, List

import re

import jinja2
from markupsafe import Markup, escape

from ..paths import templates_dir
from .common import finding_paths

SEVERITY_ORDER = ("blocker", "manual", "auto", "advice", "info")
SEVERITY_LABELS = {
    "blocker": "Blocker",
    "manual": "Manual change",
    "auto": "Automatic",
    "advice": "Advice",
    "info": "Info",
}
SEVERITY_HELP = {
    "blocker": "will not run on NPU without new work",
    "manual": "needs a code change",
    "auto": "transfer_to_npu handles it",
    "advice": "runs; precision or performance can improve",
    "info": "worth knowing",
}
EFFORT_LABELS = {
    "none": "No migration effort",
    "low": "Low migration effort",
    "medium": "Medium migration effort",
    "high": "High migration effort",
    "blocked": "Blocked",
    "unknown": "Migration effort unknown",
}
EFFORT_RANK = {"none": 0, "low": 1, "medium": 2, "high": 3, "blocked": 4, "unknown": 5}
STATUS_ORDER = ("unsupported", "conditional", "needs-migration", "unknown")

_KNOWN_SUMMARY_KEYS = {
    "files_analysed", "files_failed", "lines_analysed", "duration_s",
    "by_category", "by_severity", "verdict", "unknown_apis",
    "complete", "entry_points", "off_path", "incomplete_files", "min_severity", "baselined",
    "from_cache", "analysis_s",
}

_LABELS = {
    "functions_total": "Library functions",
    "affected": "Affected functions",
    "public_entry_points": "Public entry points",
    "public_affected": "Affected public entry points",
    "call_graph": "Call graph",
    "nodes": "Nodes",
    "edges": "Edges",
    "cpu_fallback": "Falls back to the CPU (aten ops without an NPU kernel that the code reaches, by call sites)",
}


def label(key: Any) -> str:
    """A human label for a machine key (``public_affected`` -> ``Public affected``)."""
    key = str(key)
    if key in _LABELS:
        return _LABELS[key]
    text = key.replace("_", " ").replace("-", " ").strip()
    return text[:1].upper() + text[1:]


def fmt_number(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        text = f"{value:,.2f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return str(value)


_BREAK_AFTER = re.compile(r"([._/:,])")


def wbr(text: Any) -> Markup:
    """*text* escaped, with a line-break opportunity (<wbr>) after every ".", "_", "/", ":" and ","."""
    return Markup(_BREAK_AFTER.sub(r"\1<wbr>", str(escape(str(text)))))


def _embed_json(data: Any) -> str:
    """JSON safe to put inside a <script> element (no ``</``, ``<!--`` or ``]]>``)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.ChainableUndefined,
    )
    env.filters["label"] = label
    env.filters["num"] = fmt_number
    env.filters["wbr"] = wbr
    env.tests["mapping"] = lambda v: isinstance(v, dict)
    env.tests["seq"] = lambda v: isinstance(v, (list, tuple))
    env.tests["scalar"] = lambda v: not isinstance(v, (dict, list, tuple))
    return env


def _ordered_counts(counts: Dict[str, int], order) -> List[tuple]:
    keys = [k for k in order] + sorted(k for k in counts if k not in order)
    return [(k, int(counts.get(k, 0) or 0)) for k in keys]


def _standing(findings: List[dict], summary: dict) -> Any:
    """Counted and listed-off-the-path findings per severity, with the reasons (None for reports without
    the per-finding ``counted`` field)."""
    if not any("counted" in f for f in findings) and not summary.get("baselined"):
        return None
    rows = []
    by_sev = summary.get("by_severity") if isinstance(summary.get("by_severity"), dict) else None
    off = summary.get("off_path") if isinstance(summary.get("off_path"), dict) else None
    if by_sev is not None and off is not None and isinstance(off.get("by_severity"), dict):
        # the summary's numbers: the same as the terminal's and the JSON's, whatever --min-severity lists
        for sev in SEVERITY_ORDER:
            n, n_off = int(by_sev.get(sev) or 0), int(off["by_severity"].get(sev) or 0)
            if n:
                rows.append({"key": sev, "label": SEVERITY_LABELS.get(sev, label(sev)), "counted": n - n_off,
                             "off": n_off})
    else:
        for sev in SEVERITY_ORDER:
            these = [f for f in findings if f.get("severity") == sev]
            if these:
                n_in = sum(1 for f in these if f.get("counted", True))
                rows.append({"key": sev, "label": SEVERITY_LABELS.get(sev, label(sev)), "counted": n_in,
                             "off": len(these) - n_in})
    why = Counter(str((f.get("off_path") or {}).get("why") or "not counted") for f in findings
                  if f.get("counted") is False)
    ms = summary.get("min_severity")
    return {
        "rows": rows,
        "counted": sum(r["counted"] for r in rows),
        "off": sum(r["off"] for r in rows),
        "reasons": [{"why": w, "count": n} for w, n in why.most_common()],
        "baselined": int(summary.get("baselined") or 0),
        "hidden": ms if isinstance(ms, dict) and ms.get("hidden") else None,
    }


#: How many files the "findings by file" picture shows.
TOP_FILES = 15
#: How many entry points the "effort per entry point" picture shows.
TOP_ENTRY_POINTS = 15


def _charts(report: dict, findings: List[dict], entry_points: List[dict], by_category: Dict[str, int],
            story: Dict[str, Any], functions: List[dict]) -> Dict[str, Any]:
    """The pictures (inline SVG, :mod:`analyse.render.svg`), each from the numbers the page's tables show."""
    from .svg import hbars, share_bar

    charts: Dict[str, Any] = {}
    eps = sorted(entry_points, key=lambda e: (-e["effort_rank"] if e["effort_rank"] < 9 else 0,
                                              -(e["blockers"] + e["manual"] + e["auto"]), e["name"]))
    rows = [(f"{e['name']} ({e['effort']})", [(int(e["blockers"] or 0), "sev-blocker", "blockers counted"),
                                              (int(e["manual"] or 0), "sev-manual", "manual changes counted"),
                                              (int(e["auto"] or 0), "sev-auto", "automatic changes counted")])
            for e in eps[:TOP_ENTRY_POINTS]]
    if any(sum(p[0] for p in parts) for _n, parts in rows):
        more = len(eps) - TOP_ENTRY_POINTS
        charts["entry_points"] = hbars(rows, "Effort per entry point: counted blockers, manual and automatic "
                                       "changes", "chart-entry-points",
                                       f"and {more:,} more entry points in the table" if more > 0 else None)
    cats = sorted(((k, int(v or 0)) for k, v in by_category.items() if v), key=lambda kv: (-kv[1], kv[0]))
    if cats:
        charts["categories"] = hbars([(k, [(v, "cat-bar", "findings")]) for k, v in cats],
                                     "Findings by category", "chart-categories")
    per_file: Dict[str, List[int]] = {}
    for f in findings:
        for p in finding_paths(f):
            slot = per_file.setdefault(p, [0, 0])
            slot[0 if f.get("counted", True) is not False else 1] += 1
    files = sorted(per_file.items(), key=lambda kv: (-(kv[1][0] + kv[1][1]), kv[0]))
    if files:
        more = len(files) - TOP_FILES
        charts["files"] = hbars([(p, [(c, "counted-bar", "counted"), (o, "offpath-bar", "off the path")])
                                 for p, (c, o) in files[:TOP_FILES]],
                                f"Findings by file (top {TOP_FILES}): counted and off the path", "chart-files",
                                f"and {more:,} more files" if more > 0 else None)
    if story["listed"]:
        charts["share"] = share_bar([(story["counted"], "counted-bar", "counted"),
                                     (story["not_counted"], "offpath-bar", "off the path, not counted")],
                                    "Counted against off the path", "chart-share")
    if functions:
        st = Counter(str(fn.get("status", "unknown")) for fn in functions)
        charts["functions"] = hbars([(k, [(n, f"st-bar st-{k}", "functions")])
                                     for k, n in _ordered_counts(st, STATUS_ORDER) if n],
                                    "Library functions by status", "chart-functions")
    return charts


def build_context(report: dict, rules: List[dict]) -> Dict[str, Any]:
    findings = list(report.get("findings") or [])
    errors = list(report.get("errors") or [])
    summary = dict(report.get("summary") or {})
    verdict = dict(summary.get("verdict") or {})
    effort = verdict.get("effort") or ("none" if not findings else "medium")

    by_severity = summary.get("by_severity") or Counter(f.get("severity", "info") for f in findings)
    by_category = summary.get("by_category") or Counter(f.get("category", "") for f in findings)
    has_counted = any("counted" in f for f in findings)
    off_sum = (summary.get("off_path") or {}).get("by_severity") if isinstance(summary.get("off_path"), dict) else None
    off_by_sev = Counter(off_sum) if isinstance(off_sum, dict) else \
        Counter(f.get("severity") for f in findings if f.get("counted") is False)
    severity_cards = [
        {"key": k, "count": n, "label": SEVERITY_LABELS.get(k, label(k)), "help": SEVERITY_HELP.get(k, ""),
         "off": off_by_sev.get(k, 0) if has_counted else None}
        for k, n in _ordered_counts(by_severity, SEVERITY_ORDER)
    ]
    category_cards = sorted(
        ({"key": k, "count": int(n or 0)} for k, n in by_category.items() if n),
        key=lambda c: (-c["count"], c["key"]),
    )

    # Rule docs: every documented rule, plus a stub for any code used but undocumented,
    # so that every #rule-NPUxxx link in the page has a target.
    code_counts = Counter(f.get("code") for f in findings if f.get("code"))
    rule_list = []
    seen = set()
    for r in sorted(rules or [], key=lambda r: str(r.get("code", ""))):
        code = str(r.get("code", ""))
        if not code or code in seen:
            continue
        seen.add(code)
        rule_list.append({**r, "count": code_counts.get(code, 0), "documented": True})
    for code in sorted(c for c in code_counts if c not in seen):
        sample = next(f for f in findings if f.get("code") == code)
        rule_list.append({
            "code": code, "name": "", "category": sample.get("category", ""),
            "severity": sample.get("severity", ""), "summary": "", "why": "", "example": "", "fix": "",
            "count": code_counts[code], "documented": False,
        })

    thirdparty = report.get("thirdparty")
    if report.get("mode") == "thirdparty" and not isinstance(thirdparty, dict):
        thirdparty = {}
    tp_ctx = None
    functions: List[dict] = []
    if isinstance(thirdparty, dict):
        functions = list(thirdparty.get("functions") or [])
        status_counts = Counter(fn.get("status", "unknown") for fn in functions)
        tp_ctx = {
            "total": len(functions),
            "status_cards": [{"key": k, "count": n} for k, n in _ordered_counts(status_counts, STATUS_ORDER)],
            "summary": thirdparty.get("summary") if isinstance(thirdparty.get("summary"), dict) else {},
            "extra": {k: v for k, v in thirdparty.items()
                      if k not in ("functions", "summary", "aliases", "library", "coverage")},
            "library": thirdparty.get("library") if isinstance(thirdparty.get("library"), dict) else None,
            "coverage": thirdparty.get("coverage") if isinstance(thirdparty.get("coverage"), dict) else None,
            "aliases_total": len(thirdparty.get("aliases") or {}) if isinstance(thirdparty.get("aliases"), dict) else 0,
        }

    unknown_apis = summary.get("unknown_apis")
    if isinstance(unknown_apis, list):
        norm = []
        for item in unknown_apis:
            if isinstance(item, dict):
                norm.append({"api": str(item.get("api", "")), "count": item.get("count"),
                             "extra": {k: v for k, v in item.items() if k not in ("api", "count")}})
            else:
                norm.append({"api": str(item), "count": None, "extra": {}})
        unknown_apis = norm
    else:
        unknown_apis = []

    extra_summary = {k: v for k, v in summary.items() if k not in _KNOWN_SUMMARY_KEYS}
    extra_verdict = {k: v for k, v in verdict.items()
                     if k not in ("effort", "blockers", "manual_changes", "auto_migratable", "explanation", "drivers",
                                  "scope")}
    entry_points = []
    for e in summary.get("entry_points") or []:
        if not isinstance(e, dict):
            continue
        v = e.get("verdict") or {}
        drivers = v.get("drivers") or []
        fn = e.get("function")
        entry_points.append({
            "name": str(e.get("path", "")) + (f":{str(fn)[len(str(fn).rsplit('.', 1)[0]) + 1:]}" if fn else ""),
            "path": e.get("path", ""), "function": fn, "reason": e.get("reason", ""), "role": e.get("role", ""),
            "effort": v.get("effort", "unknown"), "effort_rank": EFFORT_RANK.get(v.get("effort"), 9),
            "blockers": v.get("blockers", 0), "manual": v.get("manual_changes", 0), "auto": v.get("auto_migratable", 0),
            "top": drivers[0] if drivers else None,
        })
    incomplete = None
    if summary.get("complete") is False:
        incomplete = list(summary.get("incomplete_files") or sorted({str(e.get("path", "")) for e in errors}))

    aliases = thirdparty.get("aliases") if isinstance(thirdparty, dict) else None
    standing = _standing(findings, summary)
    from .story import counts, first_driver, library_headline, support_words, timing, timing_text

    story = counts(report)
    charts = _charts(report, findings, entry_points, dict(by_category), story, functions)
    library_head = library_headline(report) if isinstance(thirdparty, dict) and \
        isinstance(thirdparty.get("library"), dict) else None
    data = {
        "findings": findings,
        "functions": functions,
        "aliases": [[str(k), [str(x) for x in (v if isinstance(v, list) else [v])]]
                    for k, v in sorted(aliases.items())] if isinstance(aliases, dict) else [],
        "rules": {r["code"]: r.get("name", "") for r in rule_list},
        "severities": list(SEVERITY_ORDER),
        "statuses": list(STATUS_ORDER),
    }
    tool = report.get("tool") or {}
    return {
        "report": report,
        "tool": tool,
        "mode": report.get("mode", "script"),
        "target": report.get("target") or {},
        "inputs": report.get("inputs") or [],
        "summary": summary,
        "verdict": verdict,
        "effort": effort,
        "effort_label": EFFORT_LABELS.get(effort, label(effort)),
        "extra_verdict": extra_verdict,
        "drivers": [d for d in verdict.get("drivers") or [] if isinstance(d, dict)],
        "scope": verdict.get("scope"),
        "entry_points": entry_points,
        "off_path": summary.get("off_path") if isinstance(summary.get("off_path"), dict) else None,
        "incomplete": incomplete,
        "severity_cards": severity_cards,
        "category_cards": category_cards,
        "findings_total": len(findings),
        "files_with_findings": len({p for f in findings for p in finding_paths(f)}),
        "errors": errors,
        "rules": rule_list,
        "thirdparty": tp_ctx,
        "unknown_apis": unknown_apis,
        "extra_summary": extra_summary,
        "data_json": _embed_json(data),
        "severity_labels": SEVERITY_LABELS,
        "migration": report.get("migration") if isinstance(report.get("migration"), dict) else None,  # script --with-migration
        "standing": standing,
        "story": story,
        "charts": charts,
        "timing": timing(summary),
        "timing_text": timing_text(summary),
        "first_driver": first_driver(report),
        "library_head": library_head,
        "support_words": support_words(str(library_head["support"])) if library_head else "",
    }


def render_html(report: dict, rules: List[dict]) -> str:
    """The whole report as one self-contained HTML page."""
    template = _env().get_template("report.html.j2")
    return template.render(**build_context(report, rules or []))
