"""The short summary printed to the terminal after a run."""

from __future__ import annotations

import shutil
import textwrap
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

from ..termsafe import safe

SEVERITY_ORDER = ("blocker", "manual", "auto", "advice", "info")
_SEV_RANK = {s: i for i, s in enumerate(SEVERITY_ORDER)}

_RESET = "\033[0m"
_BOLD = "\033[1m"
_DIM = "\033[2m"
_SEV_COLOR = {
    "blocker": "\033[1;31m",
    "manual": "\033[33m",
    "auto": "\033[32m",
    "advice": "\033[35m",
    "info": "\033[36m",
}
_EFFORT_COLOR = {
    "none": "\033[1;32m",
    "low": "\033[1;32m",
    "medium": "\033[1;33m",
    "high": "\033[1;31m",
    "blocked": "\033[1;41;97m",
    "unknown": "\033[1;35m",
}
MAX_ENTRY_POINT_LINES = 15
_STATUS_COLOR = {"unsupported": "\033[31m", "needs-migration": "\033[33m", "unknown": "\033[36m"}


def _width(width: Optional[int]) -> int:
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    return max(40, min(int(width), 100))


def _truncate(text: str, room: int) -> str:
    text = " ".join(str(text).split())
    if room <= 1:
        return "…" if text else ""
    return text if len(text) <= room else text[: room - 1] + "…"


def _counts_line(counts: Dict[str, int], order, paint) -> str:
    keys = [k for k in order if counts.get(k)] + sorted(k for k in counts if k not in order and counts.get(k))
    if not keys:
        return "none"
    return ", ".join(f"{paint(k, k)} {counts[k]}" for k in keys)


def _entry_point_lines(summary: dict, width: int, c) -> List[str]:
    """One line per entry point (effort, path, top driver), product code first, capped."""
    eps = [e for e in (summary.get("entry_points") or []) if isinstance(e, dict)]
    if not eps:
        return []
    n_product = sum(1 for e in eps if e.get("role") == "product")
    out = [f"Entry points: {len(eps):,}" + (f" ({n_product:,} product)" if n_product != len(eps) else "")]
    for e in eps[:MAX_ENTRY_POINT_LINES]:
        v = e.get("verdict") or {}
        effort = str(v.get("effort") or "unknown")
        name = str(e.get("path", "?")) + (f":{str(e['function']).rsplit('.', 1)[-1]}" if e.get("function") else "")
        role = e.get("role") or "product"
        drivers = v.get("drivers") or []
        top = ""
        if drivers:
            d = drivers[0]
            top = f"{d.get('api', '')} ({d.get('severity', '')} x{d.get('count', 0)})"
        head = f"  {effort.upper():<8} "
        tail = f"{name}" + (f" [{role}]" if role != "product" else "")
        line = _truncate(tail + (f" — {top}" if top else ""), width - len(head))
        out.append(c(_EFFORT_COLOR.get(effort, ""), head) + line)
    if len(eps) > MAX_ENTRY_POINT_LINES:
        out.append(f"  ... {len(eps) - MAX_ENTRY_POINT_LINES:,} more (see the report)")
    return out


def render_terminal(report: dict, written: Dict[str, Path], color: bool = False, top: int = 10,
                    width: Optional[int] = None) -> str:
    """A few lines for the terminal: verdict, counts, top findings, errors, report paths."""
    width = _width(width)

    def c(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color and code else text

    def sev(name: str, text: str) -> str:
        return c(_SEV_COLOR.get(name, ""), text)

    findings: List[dict] = list(report.get("findings") or [])
    errors = list(report.get("errors") or [])
    summary = report.get("summary") or {}
    verdict = summary.get("verdict") or {}
    effort = str(verdict.get("effort") or ("none" if not findings else "unknown"))
    by_sev = dict(summary.get("by_severity") or Counter(f.get("severity", "info") for f in findings))
    by_cat = dict(summary.get("by_category") or Counter(f.get("category", "") for f in findings))

    out: List[str] = []
    mode = report.get("mode", "script")
    tool = report.get("tool") or {}
    head = f"{tool.get('name', 'npu-analyse')} {tool.get('version', '')}".strip()
    stats = (f"{mode} mode · {summary.get('files_analysed', 0):,} files, {summary.get('lines_analysed', 0):,} lines"
             f" in {float(summary.get('duration_s', 0) or 0):.1f}s")
    target = report.get("target") or {}
    if target.get("torch_version"):
        stats += f" · torch {target['torch_version']}"
    out.append(c(_BOLD, head) + c(_DIM, " — " + stats))

    out.extend(_entry_point_lines(summary, width, c))
    label = f"Verdict: {effort.upper()} effort" if effort not in ("none", "blocked") else (
        "Verdict: NO migration effort" if effort == "none" else "Verdict: BLOCKED")
    counts = (f" ({verdict.get('blockers', 0)} blockers, {verdict.get('manual_changes', 0)} manual,"
              f" {verdict.get('auto_migratable', 0)} automatic)")
    out.append(c(_EFFORT_COLOR.get(effort, _BOLD), label) + counts)
    explanation = safe(str(verdict.get("explanation") or "").strip())
    if explanation:
        out.extend(textwrap.wrap(explanation, width=width, initial_indent="  ", subsequent_indent="  "))
    if summary.get("complete") is False:
        bad = list(summary.get("incomplete_files") or sorted({str(e.get("path", "?")) for e in errors}))
        shown = ", ".join(bad[:8]) + (f" ... and {len(bad) - 8} more" if len(bad) > 8 else "")
        out.extend(textwrap.wrap(c("\033[1;31m", "Analysis incomplete:") + f" {len(bad)} file(s) could not be analysed"
                                 f" ({shown}); the verdict may miss problems there.", width=width + (11 if color else 0),
                                 subsequent_indent="  "))

    out.append(f"Findings: {len(findings):,}" + (" — nothing to migrate" if not findings else ""))
    if findings or by_sev:
        out.append("  by severity: " + _counts_line(by_sev, SEVERITY_ORDER, sev))
        out.append("  by category: " + _counts_line(by_cat, (), lambda k, t: t))
    hidden = [f"{summary[k]:,} {k}" for k in ("suppressed", "baselined") if summary.get(k)]
    if hidden:
        out.append("  not shown: " + ", ".join(hidden) + (" (--show-suppressed lists them)"
                                                          if summary.get("suppressed") and not report.get("suppressed")
                                                          else ""))

    fallback = summary.get("cpu_fallback") or []
    if fallback:  # the ranked CPU-fallback section (summary.cpu_fallback), one line
        ranked = ", ".join(f"{safe(str(e.get('op')))} ({e.get('call_sites')})" for e in fallback[:5])
        out.extend(textwrap.wrap(f"Falls back to the CPU (aten ops without an NPU kernel, by call sites): {ranked}"
                                 + (f" ... and {len(fallback) - 5} more" if len(fallback) > 5 else ""),
                                 width=width, subsequent_indent="  "))

    tp = report.get("thirdparty")
    if isinstance(tp, dict):
        fns = tp.get("functions") or []
        st = Counter(fn.get("status", "unknown") for fn in fns)
        line = f"Library functions not plainly supported: {len(fns):,}"
        if st:
            line += " (" + _counts_line(st, ("unsupported", "needs-migration", "unknown"),
                                        lambda k, t: c(_STATUS_COLOR.get(k, ""), t)) + ")"
        out.append(line)
        extra = tp.get("summary")
        if isinstance(extra, dict) and extra:
            parts = []
            for k, v in extra.items():
                if isinstance(v, dict):
                    v = ", ".join(f"{kk} {vv}" for kk, vv in v.items())
                elif isinstance(v, (list, tuple)):
                    v = len(v)
                parts.append(f"{str(k).replace('_', ' ')} {v}")
            out.extend(textwrap.wrap("; ".join(parts), width=width, initial_indent="  ", subsequent_indent="  "))

    unknown = summary.get("unknown_apis")
    if isinstance(unknown, list) and unknown:
        out.append(f"APIs the docs do not list (hand to the probe): {len(unknown):,} — see the report")

    if findings and top > 0:
        ranked = sorted(findings, key=lambda f: (_SEV_RANK.get(f.get("severity"), 99), str(f.get("path", "")),
                                                 f.get("line", 0), f.get("column", 0) or 0))
        shown = ranked[:top]
        out.append(f"Top {len(shown)} of {len(findings):,}:" if len(findings) > len(shown) else "Findings:")
        for f in shown:
            loc = safe(f"{f.get('path', '?')}:{f.get('line', '?')}")
            code = safe(f.get("code", ""))
            api = safe(f.get("api", ""))
            s = str(f.get("severity", ""))
            plain_prefix = f"  {s:<7} {loc} {code} {api} — "
            msg = _truncate(safe(f.get("message", "")), width - len(plain_prefix))
            if len(plain_prefix) > width:  # very long path/api: cut the whole line
                line = _truncate(plain_prefix + msg, width)
                out.append(sev(s, line[:9]) + line[9:] if color else line)
                continue
            out.append(f"  {sev(s, f'{s:<7}')} {loc} {c(_BOLD, code)} {api} — {msg}")

    suppressed = report.get("suppressed")
    if isinstance(suppressed, list) and suppressed:
        out.append(f"Suppressed: {len(suppressed):,}")
        for f in suppressed:
            where = (f.get("suppression") or {})
            out.append(safe(f"  {f.get('severity', ''):<7} {f.get('path', '?')}:{f.get('line', '?')} {f.get('code', '')} "
                            f"{f.get('api', '')} — by {where.get('comment', '')} (line {where.get('line', '?')})"))

    if errors:
        kinds = Counter(e.get("kind", "?") for e in errors)
        out.append(c("\033[31m", f"Errors: {len(errors):,}") + " (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
                   + ") — inputs that could not be fully analysed")
    else:
        out.append("Errors: 0")

    if written:
        out.append("Reports written:")
        for fmt, path in written.items():
            out.append(f"  {fmt:<6} {safe(path)}")
    return "\n".join(out) + "\n"
