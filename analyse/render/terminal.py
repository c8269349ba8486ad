"""The short summary printed to the terminal after a run."""

from __future__ import annotations

import shutil
import textwrap
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

from ..termsafe import safe
from .common import finding_paths, other_places, place_text

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


#: The width used when the terminal's own is 0 (a 0x0 pseudo-terminal: ``docker run -t``, ``script``) or unknown
#: (not a terminal).
DEFAULT_WIDTH = 80


def terminal_width(stream=None) -> int:
    """The width of the terminal *stream* writes to: ``COLUMNS`` when set, else the terminal's own width, else
    :data:`DEFAULT_WIDTH` (not a terminal, or a terminal that reports 0 columns).
    :func:`shutil.get_terminal_size` reads stdout only; the summary goes to stderr with ``-o -``."""
    import os

    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cols = os.get_terminal_size(stream.fileno()).columns if stream is not None else \
            shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    except (AttributeError, ValueError, OSError):
        return DEFAULT_WIDTH
    return cols if cols > 0 else DEFAULT_WIDTH


def _width(width: Optional[int]) -> int:
    """The width to render at: *width*, else the terminal's (``COLUMNS`` wins); 0 or unknown is
    :data:`DEFAULT_WIDTH`, and never narrower than 40."""
    if width is None:
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    width = int(width or 0)
    if width <= 0:
        width = DEFAULT_WIDTH
    return max(40, width)


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


def _why_table(n: dict, width: int) -> List[str]:
    """"Why not counted" as a table by reason (:func:`analyse.render.story.counts`): its rows add up to the
    number not counted, the same numbers as the JSON's summary.off_path and the HTML's table."""
    if not n["not_counted"]:
        return []
    out = [f"Why not counted: {n['not_counted']:,} of {n['listed']:,} listed finding(s)"]
    num_w = max(len("findings"), len(f"{n['not_counted']:,}"))
    label_w = max(10, min(width - num_w - 5, max(len(r["label"]) for r in n["reasons"])))
    out.append(f"  {'reason':<{label_w}} {'findings':>{num_w}}")
    for r in n["reasons"]:
        out.append(f"  {_truncate(r['label'], label_w):<{label_w}} {r['count']:>{num_w},}")
    out.append(f"  {'total':<{label_w}} {n['not_counted']:>{num_w},}")
    return out


def _blockers(verdict: dict) -> str:
    n = int(verdict.get("blockers", 0) or 0)
    return f"{n} blocker" + ("" if n == 1 else "s")


def _verdict_lines(report: dict, n: dict, width: int, c, verbose: bool) -> List[str]:
    """script mode: one headline, then what drives the grade, where, and what to do first."""
    from .story import first_driver

    summary = report.get("summary") or {}
    verdict = summary.get("verdict") or {}
    findings = report.get("findings") or []
    effort = str(verdict.get("effort") or ("none" if not findings else "unknown"))
    label = f"Verdict: {effort.upper()} effort" if effort not in ("none", "blocked") else (
        "Verdict: NO migration effort" if effort == "none" else "Verdict: BLOCKED")
    counts = f" — {_blockers(verdict)}, {verdict.get('manual_changes', 0)} manual, " \
             f"{verdict.get('auto_migratable', 0)} automatic counted"
    out = [c(_EFFORT_COLOR.get(effort, _BOLD), label) + counts]
    pad = "  "
    drivers = [d for d in verdict.get("drivers") or [] if isinstance(d, dict)]
    if drivers and effort not in ("none", "unknown"):
        d = drivers[0]
        also = [str(x.get("api")) for x in drivers[1:3]]
        more = len(drivers) - 1 - len(also)
        text = f"{d.get('api')} ({d.get('severity')}, {d.get('count')} place(s))"
        if also:
            text += "; also " + ", ".join(also) + (f" and {more} more" if more > 0 else "")
        out.append(_truncate_line(pad + "What drives it: " + safe(text), width))
        f = first_driver(report)
        if f is not None:
            where = place_text(f)
            eps = list((f.get("reach") or {}).get("entry_points") or ())
            if eps and str(eps[0]).split(":")[0] != str(f.get("path")):
                where += f" (run by {eps[0]})"
            out.append(_truncate_line(pad + "Where: " + safe(where), width))
            fix = "; ".join(x.strip() for x in str(f.get("replacement") or "").splitlines() if x.strip())
            if fix:
                out.append(_truncate_line(pad + "Do first: " + safe(fix), width))
    eps = [e for e in summary.get("entry_points") or [] if isinstance(e, dict)]
    if eps:
        product = sum(1 for e in eps if e.get("role") == "product")
        scope = f"{product:,} product entry point(s)" if product else f"{len(eps):,} entry point(s), none product code"
    elif effort != "unknown":
        scope = "the whole tree (no entry point found or given: --entry FILE[:FUNCTION])"
    else:
        scope = ""
    if scope:
        out.append(_truncate_line(pad + f"Counted: {n['counted']:,} of {n['listed']:,} listed finding(s), over "
                                  + scope, width))
    low = sum(1 for f in findings if f.get("counted", True) is not False and f.get("confidence") == "low"
              and f.get("severity") in ("blocker", "manual"))
    if low and not verbose:   # the explanation's caveat, kept in the short list
        out.append(_truncate_line(pad + f"{low:,} low-confidence finding(s) cannot on their own raise the effort "
                                  "above medium", width))
    if effort == "unknown" or verbose or not drivers:   # no drivers (nothing counted, an older report): the prose
        explanation = safe(str(verdict.get("explanation") or "").strip())
        if explanation:
            out.extend(textwrap.wrap(explanation, width=min(width, PROSE_WIDTH), initial_indent=pad,
                                     subsequent_indent=pad))
    elif summary.get("baselined"):
        out.append(_truncate_line(pad + f"{summary['baselined']:,} finding(s) accepted by the baseline: not listed, "
                                  "never gate, still counted", width))
    return out


def _library_lines(report: dict, n: dict, width: int, c, verbose: bool) -> List[str]:
    """thirdparty mode: one headline, the library verdict (its own NPU support, the share of functions
    affected, what blocks and where); the findings in its code come after, without a grade of their own."""
    from .story import library_headline, rows_of_status, support_words

    h = library_headline(report)
    summary = report.get("summary") or {}
    verdict = summary.get("verdict") or {}
    name = safe(str(h["name"] or "the library"))
    color = {"native": "\033[1;32m", "partial": "\033[1;33m"}.get(str(h["support"]), _BOLD)
    out = [c(color, f"Library: {name} has {support_words(str(h['support']))}")]
    sentence = safe(str(h["verdict"]))
    if sentence:
        out.extend(textwrap.wrap(sentence, width=min(width, PROSE_WIDTH), initial_indent="  ", subsequent_indent="  "))
    pad = "  "
    if h["evidence"]:
        out.append(_truncate_line(pad + "NPU support evidence: " + safe(str(h["evidence"][0]))
                                  + (f" (+{len(h['evidence']) - 1} more)" if len(h["evidence"]) > 1 else ""), width))
    if h["functions_total"]:
        st = ", ".join(f"{k} {v:,}" for k, v in rows_of_status(h["by_status"]))
        out.append(_truncate_line(pad + f"Functions affected: {h['affected']:,} of {h['functions_total']:,} "
                                  f"({h['share']:.0f}%)" + (f"; by status: {st}" if st else ""), width))
    if h["blocking"]:
        out.append(pad + f"What blocks ({h['blocking_total']:,} function(s) reach CUDA-only code):")
        for b in h["blocking"]:
            out.append(_truncate_line(pad + "  " + safe(f"{b['qualname']} ({b['where']})"
                                                       + (f" — {b['why']}" if b["why"] else "")), width))
    out.append(_truncate_line(pad + f"Findings in its code: {_blockers(verdict)}, "
                              f"{verdict.get('manual_changes', 0)} manual, {verdict.get('auto_migratable', 0)} "
                              f"automatic counted ({n['counted']:,} of {n['listed']:,} listed)", width))
    if verbose:
        explanation = safe(str(verdict.get("explanation") or "").strip())
        if explanation:
            out.extend(textwrap.wrap(explanation, width=min(width, PROSE_WIDTH), initial_indent=pad,
                                     subsequent_indent=pad))
    return out


def _finding_line(f: dict, width: int, c, sev, badge: str = "") -> List[str]:
    """One finding: severity, place, code, API and message on one line (cut to *width*); under it the
    replacement and, for a finding off the path, why it does not count."""
    loc = safe(place_text(f))
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
                    width: Optional[int] = None, verbose: bool = False) -> str:
    """A few lines for the terminal: one headline (the verdict; in thirdparty mode the library verdict) with a
    short list under it, why findings are not counted (a table), counts, top findings, errors, report paths.
    *verbose* (``-v``) adds the verdict's full explanation and thirdparty's own statistics."""
    from .story import counts, timing_text

    width = _width(width)

    def c(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color and code else text

    def sev(name: str, text: str) -> str:
        return c(_SEV_COLOR.get(name, ""), text)

    findings: List[dict] = list(report.get("findings") or [])
    errors = list(report.get("errors") or [])
    summary = report.get("summary") or {}
    by_sev = dict(summary.get("by_severity") or Counter(f.get("severity", "info") for f in findings))
    by_cat = dict(summary.get("by_category") or Counter(f.get("category", "") for f in findings))
    n = counts(report)

    out: List[str] = []
    mode = report.get("mode", "script")
    tool = report.get("tool") or {}
    head = f"{tool.get('name', 'npu-analyse')} {tool.get('version', '')}".strip()
    parts = [f"{mode} mode", f"{summary.get('files_analysed', 0):,} files, {summary.get('lines_analysed', 0):,} lines",
             timing_text(summary)]
    target = report.get("target") or {}
    if target.get("torch_version"):
        parts.append(f"torch {target['torch_version']}")
    # broken between the parts, never inside one ("torch 2.13.0" stays whole)
    line, lines = head + " —", []
    for part in parts:
        sep = " " if line.endswith("—") else " · "
        if len(line) + len(sep) + len(part) > width and line.strip():
            lines.append(line)
            line = "  " + part
        else:
            line += sep + part
    lines.append(line)
    first = lines[0][len(head):]
    out.append(c(_BOLD, head) + c(_DIM, first))
    out.extend(c(_DIM, ln) for ln in lines[1:])
    choice = str(target.get("torch_version_choice") or "")
    # the version a project pin chose, and why (with no pin the header's newest version says it all; the JSON
    # report keeps the reason either way)
    if choice and target.get("torch_version_source") == "pin":
        out.append(c(_DIM, _truncate_line("  torch version " + safe(str(target["torch_version_choice"])), width)))

    if isinstance(report.get("thirdparty"), dict) and isinstance(report["thirdparty"].get("library"), dict):
        out.extend(_library_lines(report, n, width, c, verbose))
    else:
        out.extend(_verdict_lines(report, n, width, c, verbose))
    out.extend(_entry_point_lines(summary, width, c))
    if summary.get("complete") is False:
        bad = list(summary.get("incomplete_files") or sorted({str(e.get("path", "?")) for e in errors}))
        shown = ", ".join(bad[:8]) + (f" ... and {len(bad) - 8} more" if len(bad) > 8 else "")
        out.extend(textwrap.wrap(c("\033[1;31m", "Analysis incomplete:") + f" {len(bad)} file(s) could not be analysed"
                                 f" ({shown}); the verdict may miss problems there.", width=width + (11 if color else 0),
                                 subsequent_indent="  "))
    out.extend(_why_table(n, width))

    line = f"Findings: {n['listed']:,} listed"
    if any("counted" in f for f in findings) or n["not_counted"]:
        line += f" ({n['counted']:,} counted, {n['not_counted']:,} not counted)"
    if not n["listed"]:
        line += " — nothing to migrate"
    out.append(_truncate_line(line, width))
    if n["hidden"]:
        out.append(_truncate_line(f"  shown below: {len(findings):,} at or above {n['hidden_level']}; "
                                  f"{n['hidden']:,} below it not shown (--min-severity)", width))
    if findings or by_sev:
        out.append(_truncate_line("  by severity: " + _counts_line(by_sev, SEVERITY_ORDER, lambda k, t: t), width)
                   if not color else "  by severity: " + _counts_line(by_sev, SEVERITY_ORDER, sev))
        out.extend(textwrap.wrap("by category: " + _counts_line(by_cat, (), lambda k, t: t), width=width,
                                 initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False))
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
    if isinstance(tp, dict) and not isinstance(tp.get("library"), dict):   # a report without the library verdict
        fns = tp.get("functions") or []
        st = Counter(fn.get("status", "unknown") for fn in fns)
        line = f"Library functions not plainly supported: {len(fns):,}"
        if st:
            line += " (" + _counts_line(st, ("unsupported", "needs-migration", "unknown"),
                                        lambda k, t: c(_STATUS_COLOR.get(k, ""), t)) + ")"
        out.append(line)
    if isinstance(tp, dict) and verbose:   # the analysis's own statistics (call graph, timings): -v only
        extra = tp.get("summary")
        if isinstance(extra, dict) and extra:
            parts = []
            for k, v in extra.items():
                if isinstance(v, dict):
                    v = ", ".join(f"{kk} {vv}" for kk, vv in v.items())
                elif isinstance(v, (list, tuple)):
                    v = len(v)
                parts.append(f"{str(k).replace('_', ' ')} {v}")
            out.extend(textwrap.wrap("Statistics: " + "; ".join(parts), width=width, subsequent_indent="  "))

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
