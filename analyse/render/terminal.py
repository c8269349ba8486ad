"""The short summary printed to the terminal after a run."""

from __future__ import annotations

import shutil
import textwrap
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

from ..termsafe import safe
from .common import finding_paths, other_places

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


#: Paragraphs (the verdict explanation) wrap at most this wide, however wide the terminal: long lines of prose
#: are hard to read. Finding lines use the whole width.
PROSE_WIDTH = 120
#: How many off-path findings the terminal lists under the counted ones.
OFF_PATH_SHOWN = 5


def terminal_width(stream=None) -> int:
    """The width of the terminal *stream* writes to: ``COLUMNS`` when set, else the terminal's own width, else 100
    (not a terminal). :func:`shutil.get_terminal_size` reads stdout only; the summary goes to stderr with ``-o -``."""
    import os

    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return os.get_terminal_size(stream.fileno()).columns if stream is not None else \
            shutil.get_terminal_size((100, 24)).columns
    except (AttributeError, ValueError, OSError):
        return 100


def _width(width: Optional[int]) -> int:
    """The terminal's width (``COLUMNS`` wins, as :func:`shutil.get_terminal_size` reads it; 100 when the output
    is not a terminal)."""
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    return max(40, int(width))


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
        name = safe(str(e.get("path", "?")) + (f":{str(e['function']).rsplit('.', 1)[-1]}" if e.get("function") else ""))
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


def _counted_line(findings: List[dict], summary: dict) -> str:
    """"Counted: 12 · listed, off the path: 5 (unreached 3, guarded 2)": the two sides of the verdict."""
    if not findings or not any("counted" in f for f in findings):
        return ""
    n_in = sum(1 for f in findings if f.get("counted"))
    off = Counter(str((f.get("off_path") or {}).get("reason", "other")) for f in findings if not f.get("counted"))
    text = f"Counted: {n_in:,} finding(s) · listed, off the path (not counted): {sum(off.values()):,}"
    if off:
        text += " (" + ", ".join(f"{k} {v}" for k, v in off.most_common()) + ")"
    return text


def _finding_line(f: dict, width: int, c, sev, badge: str = "") -> List[str]:
    """One finding: severity, place, code, API and message on one line (cut to *width*); under it the
    replacement and, for a finding off the path, why it does not count."""
    loc = safe(f"{f.get('path', '?')}:{f.get('line', '?')}")
    more = len(other_places(f))
    files = len(finding_paths(f))
    if more and files > 1:
        loc += f" ({more + 1} places in {files} files)"
    elif more:
        loc += f" (+{more} line{'s' if more > 1 else ''})"
    code = safe(f.get("code", ""))
    api = safe(f.get("api", ""))
    s = str(f.get("severity", ""))
    head = f"  {s:<7} "
    rest = f"{badge}{loc} {code} {api} — "
    msg = safe(f.get("message", ""))
    if len(head) + len(rest) >= width - 10:   # very long path/API: cut the whole line
        body = _truncate(rest + msg, width - len(head))
    else:
        body = rest + _truncate(msg, width - len(head) - len(rest))
    if code and body.find(code) >= 0 and color_ok(c):
        i = body.find(" " + code + " ")
        if i >= 0:
            body = body[:i + 1] + c(_BOLD, code) + body[i + 1 + len(code):]
    lines = ["  " + sev(s, f"{s:<7}") + " " + body]
    pad = " " * len(head)
    if f.get("replacement"):
        fix = "; ".join(x.strip() for x in str(f["replacement"]).splitlines() if x.strip())   # one line
        lines.append(_truncate_line(pad + "fix: " + safe(fix), width))
    if not f.get("counted", True) and (f.get("off_path") or {}).get("why"):
        lines.append(_truncate_line(pad + "not counted: " + safe(f["off_path"]["why"]), width))
    return lines


def color_ok(c) -> bool:
    return c(_BOLD, "x") != "x"


def _truncate_line(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _rank(f: dict):
    return (_SEV_RANK.get(f.get("severity"), 99), str(f.get("path", "")), f.get("line", 0), f.get("column", 0) or 0)


def _top_lines(findings: List[dict], top: int, width: int, c, sev) -> List[str]:
    """The top findings: those that count first (they make the verdict), then a few listed off the path."""
    has_counted = any("counted" in f for f in findings)
    counted = sorted((f for f in findings if f.get("counted", True)), key=_rank)
    off = sorted((f for f in findings if not f.get("counted", True)), key=_rank)
    out: List[str] = []
    shown = counted[:top]
    if shown:
        what = "that count for the verdict" if has_counted else ""
        total = len(counted)
        title = (f"Top {len(shown)} of {total:,} findings {what}" if total > len(shown) else
                 f"Findings {what}" if what else "Findings").rstrip() + ":"
        out.append(title)
        for f in shown:
            out.extend(_finding_line(f, width, c, sev))
    if off:
        n = min(len(off), max(OFF_PATH_SHOWN, top - len(shown)))
        out.append(f"Listed, off the path (not counted): {n} of {len(off):,}" + (":" if n else ""))
        for f in off[:n]:
            out.extend(_finding_line(f, width, c, sev, badge="[off path] "))
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
    if str(target.get("torch_version_choice") or "").startswith("auto:"):
        out.append(c(_DIM, "  torch version " + safe(str(target["torch_version_choice"]))))

    out.extend(_entry_point_lines(summary, width, c))
    label = f"Verdict: {effort.upper()} effort" if effort not in ("none", "blocked") else (
        "Verdict: NO migration effort" if effort == "none" else "Verdict: BLOCKED")
    counts = (f" ({verdict.get('blockers', 0)} blockers, {verdict.get('manual_changes', 0)} manual,"
              f" {verdict.get('auto_migratable', 0)} automatic)")
    out.append(c(_EFFORT_COLOR.get(effort, _BOLD), label) + counts)
    prose = min(width, PROSE_WIDTH)
    counted_line = _counted_line(findings, summary)
    if counted_line:
        out.append("  " + counted_line)
    explanation = safe(str(verdict.get("explanation") or "").strip())
    if explanation:
        out.extend(textwrap.wrap(explanation, width=prose, initial_indent="  ", subsequent_indent="  "))
    if summary.get("complete") is False:
        bad = list(summary.get("incomplete_files") or sorted({str(e.get("path", "?")) for e in errors}))
        shown = ", ".join(bad[:8]) + (f" ... and {len(bad) - 8} more" if len(bad) > 8 else "")
        out.extend(textwrap.wrap(c("\033[1;31m", "Analysis incomplete:") + f" {len(bad)} file(s) could not be analysed"
                                 f" ({shown}); the verdict may miss problems there.", width=width + (11 if color else 0),
                                 subsequent_indent="  "))

    ms = summary.get("min_severity") if isinstance(summary.get("min_severity"), dict) else {}
    below = f" (listed at or above {ms.get('level')}; {int(ms.get('hidden') or 0):,} below it not listed)" \
        if ms.get("hidden") else ""
    out.append(f"Findings: {len(findings):,}" + (" — nothing to migrate" if not findings and not below else "") + below)
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
        out.extend(_top_lines(findings, top, width, c, sev))

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
