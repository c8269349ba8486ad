"""``--format sarif``: SARIF 2.1.0 (``report.sarif``), for GitHub code scanning and other viewers.

* ``tool.driver.rules``: every rule with its name, short and full description,
  help text (why / example / fix, also as Markdown), a ``helpUri`` into
  ``docs/rules.md`` and the default level; ``properties.tags`` carry the category.
* ``results``: rule id and index, level (blocker/manual -> ``error``, auto ->
  ``warning``, advice/info -> ``note``; a finding the verdict does not count, off
  the path, is always ``note``, with ``properties.counted`` false and
  ``properties.off_path`` giving the reason), the message with the suggested
  replacement, a region (1-based line/column, end line, source snippet),
  ``partialFingerprints`` with the stable finding id, and ``fixes`` when the
  replacement is a plain text edit of the line (a dotted name for the API it
  replaces, or a string literal for a string).
* a grouped finding (one advice/info rule repeated in one file, ``lines``) is
  one result: its first place is the location, the other places are
  ``relatedLocations`` and ``properties.lines`` lists them all; the
  fingerprint is the group's id (its first occurrence's). A finding grouped
  across files is one result per file (each file gets its annotation): the
  first place in that file is the location, every other place of the group
  stays a related location, and the fingerprint is the id of the group's first
  occurrence in that file.
* ``helpUri``: the rule's section of docs/rules.md at a public address
  (``NPU_ANALYSE_DOCS_URL``, an http(s) URL); without one the field is absent
  (the help text carries the documentation), never a path on this machine.
* suppressed findings (``--show-suppressed``) are results with ``suppressions``
  of kind ``inSource``; analysis errors are ``toolExecutionNotifications``.
"""

from __future__ import annotations

import re
from typing import List, Optional
from urllib.parse import quote

from .json_report import dumps_indented
from .common import (RenderOptions, cell_text, column1, counted, docs_url, finding_paths, one_line, other_places,
                     places_note, rule_help_uri, sorted_findings, source_path)

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"blocker": "error", "manual": "error", "auto": "warning", "advice": "note", "info": "note"}
_NAME = re.compile(r"^[A-Za-z_][\w.]*$")
_LITERAL = re.compile(r"^'([\w:.\-]+)'$")


def _u16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def text_edit(finding: dict) -> Optional[dict]:
    """(start column, end column, new text) of the line when the replacement is a text edit, else None.

    Only unambiguous edits: the replacement is a dotted name and the API appears
    exactly once on the line, or it is a simple string literal ('hccl') and the
    old value appears as exactly one string literal on the line.
    """
    line = finding.get("snippet") or ""
    repl = (finding.get("replacement") or "").strip()
    api = str(finding.get("api") or "")
    if not line or not repl or not api or "\n" in line:
        return None
    if _NAME.match(repl):
        spots = [m.start() for m in re.finditer(r"(?<![\w.])" + re.escape(api) + r"(?![\w])", line)]
        if len(spots) == 1:
            start = spots[0]
            return {"start": start, "end": start + len(api), "text": repl}
        return None
    m = _LITERAL.match(repl)
    if m and ":" in api:
        old = api.rsplit(":", 1)[1]
        spots = list(re.finditer(r"(?<![\w'\"])([\"'])" + re.escape(old) + r"\1", line))
        if len(spots) == 1:
            q = spots[0].group(1)
            return {"start": spots[0].start(), "end": spots[0].end(), "text": f"{q}{m.group(1)}{q}"}
    return None


def _uri(path: str) -> str:
    # errors="surrogateescape": a non-UTF-8 file name's byte is percent-encoded as itself (bad%FF.py)
    if path.startswith("/"):
        return "file://" + quote(path, safe="/", errors="surrogateescape")
    return quote(path, safe="/", errors="surrogateescape")


def _rule(r: dict) -> dict:
    code = str(r.get("code"))
    name = str(r.get("name") or code)
    text = (f"{r.get('summary', '')}\n\nWhy: {r.get('why', '')}\n\nExample:\n{r.get('example', '')}\n\n"
            f"Fix:\n{r.get('fix', '')}")
    markdown = (f"**{code} {name}**: {r.get('summary', '')}\n\n**Why.** {r.get('why', '')}\n\n"
                f"**Example**\n```python\n{r.get('example', '')}\n```\n\n**Fix**\n```python\n{r.get('fix', '')}\n```")
    out = {
        "id": code,
        "name": name,
        "shortDescription": {"text": one_line(r.get("summary") or name)},
        "fullDescription": {"text": one_line(r.get("why") or r.get("summary") or name)},
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS.get(str(r.get("severity")), "warning")},
        "properties": {"tags": [str(r.get("category", "")), str(r.get("severity", ""))],
                       "category": r.get("category"), "severity": r.get("severity")},
    }
    uri = rule_help_uri(code, name)
    if uri:
        out["helpUri"] = uri
    return out


def _places(f: dict) -> List[tuple]:
    """Every (path, line) of a finding, its own place first."""
    return [(str(f.get("path", "")), int(f.get("line") or 1))] + other_places(f)


def _related(report: dict, f: dict, primary: Optional[tuple] = None) -> List[dict]:
    """The other places of a grouped finding (all but *primary*, the result's own location), as
    ``relatedLocations``; a finding grouped across files names each place's own file."""
    out = []
    own = str(f.get("path", ""))
    primary = primary or (own, int(f.get("line") or 1))
    occ = {(str(o.get("path", own)), int(o.get("line") or 0)): o
           for o in (f.get("occurrences") or []) if isinstance(o, dict)}
    others = [pl for pl in _places(f) if pl != primary]
    for n, (p, other) in enumerate(others, start=1):
        o = occ.get((p, other), {})
        region = {"startLine": other}
        if o.get("snippet"):
            region["snippet"] = {"text": str(o["snippet"])}
        api = o.get("api") or f.get("api") or ""
        where = f"line {other}" if p == primary[0] else f"{p}:{other}"
        out.append({"id": n, "physicalLocation": {"artifactLocation": {"uri": _uri(source_path(report, p))},
                                                  "region": region},
                    "message": {"text": f"the same {f.get('code', '')} advice for `{api}` ({where})"}})
    return out


def _result(report: dict, f: dict, rule_index: dict, suppression: Optional[dict] = None,
            place: Optional[dict] = None) -> dict:
    """One result. *place* (an occurrence of a finding grouped across files: path, line, column, snippet, id) is
    the result's own location instead of the finding's first place; the group's other places are related."""
    place = place or {}
    own_path = str(place.get("path", f.get("path", "")))
    path = source_path(report, own_path)
    snippet = place.get("snippet", f.get("snippet")) or ""
    line = int(place.get("line", f.get("line")) or 1)
    region = {"startLine": line}
    col = int(place.get("column", f.get("column")) or 0)
    if snippet and col <= len(snippet):
        region["startColumn"] = _u16(snippet[:col]) + 1
    else:
        region["startColumn"] = col + 1 if place else column1(f)
    if not place and f.get("end_line") and int(f["end_line"]) > line:
        region["endLine"] = int(f["end_line"])
    if snippet:
        region["snippet"] = {"text": snippet}
    message = one_line(f.get("message")) + places_note(f)
    if f.get("replacement"):
        message += f" Suggested: {one_line(f['replacement'])}"
    if cell_text(place or f):   # a notebook: the line is the code cells' own numbering
        message += f" (notebook {cell_text(place or f)})"
    code = str(f.get("code", ""))
    is_counted = counted(f)
    off = f.get("off_path") if isinstance(f.get("off_path"), dict) else {}
    if not is_counted and off.get("why"):
        message += f" Not counted: {one_line(off['why'])}."
    res = {
        "ruleId": code,
        # what the verdict does not count (off the path) is a note, whatever its severity: one story with the gate
        "level": LEVELS.get(str(f.get("severity")), "warning") if is_counted else "note",
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}, "region": region}}],
        "partialFingerprints": {"npuAnalyseFindingId/v1": str(place.get("id") or f.get("id", ""))},
        "properties": {k: f[k] for k in ("severity", "category", "api", "confidence", "evidence") if f.get(k)},
    }
    res["properties"]["counted"] = is_counted
    if not is_counted and off:
        res["properties"]["off_path"] = {k: off[k] for k in ("reason", "why") if off.get(k)}
    related = _related(report, f, (own_path, line))
    if related:
        res["relatedLocations"] = related
        res["properties"]["lines"] = sorted({ln for p, ln in _places(f) if p == own_path})
        if f.get("locations"):
            res["properties"]["locations"] = f["locations"]
    if code in rule_index:
        res["ruleIndex"] = rule_index[code]
    if f.get("chain"):
        res["properties"]["chain"] = list(f["chain"])
    edit = text_edit({**f, **{k: place[k] for k in ("snippet", "api") if k in place}})
    if edit is not None:
        res["fixes"] = [{
            "description": {"text": f"Replace with {edit['text']}"},
            "artifactChanges": [{
                "artifactLocation": {"uri": _uri(path)},
                "replacements": [{
                    "deletedRegion": {"startLine": line, "startColumn": _u16(snippet[:edit["start"]]) + 1,
                                      "endLine": line, "endColumn": _u16(snippet[:edit["end"]]) + 1},
                    "insertedContent": {"text": edit["text"]},
                }],
            }],
        }]
    if suppression is not None:
        res["suppressions"] = [{"kind": "inSource", "justification": suppression.get("comment", "")}]
    return res


def _per_file(f: dict) -> List[Optional[dict]]:
    """The places a finding's results stand at: None (its own first place) for a finding in one file; for one
    grouped across files, its own place, then the first occurrence in each other file."""
    paths = finding_paths(f)
    if len(paths) < 2:
        return [None]
    occ = [o for o in (f.get("occurrences") or []) if isinstance(o, dict)]
    out: List[Optional[dict]] = [None]
    for p in paths[1:]:
        first = next((o for o in occ if str(o.get("path", f.get("path", ""))) == p), None)
        if first is None:   # no occurrence record: the file's first line from locations
            lines = next((loc.get("lines") for loc in f.get("locations") or () if isinstance(loc, dict)
                          and str(loc.get("path", "")) == p), None) or [1]
            first = {"path": p, "line": lines[0]}
        out.append({"path": p, **{k: first[k] for k in ("line", "column", "snippet", "id", "api", "cell") if k in first}})
    return out


def build_sarif(report: dict, options: RenderOptions) -> dict:
    rules = sorted((r for r in options.rules if r.get("code")), key=lambda r: str(r["code"]))
    known = {str(r["code"]) for r in rules}
    for f in list(report.get("findings") or []) + list(report.get("suppressed") or []):
        code = str(f.get("code", ""))
        if code and code not in known:  # a code without docs still gets a descriptor
            known.add(code)
            rules.append({"code": code, "name": code, "category": f.get("category"), "severity": f.get("severity"),
                          "summary": code})
    rule_index = {str(r["code"]): i for i, r in enumerate(rules)}
    results: List[dict] = []
    for f in sorted_findings(report):   # advice and info after what blocks
        for place in _per_file(f):   # a finding grouped across files: one result in each of its files
            results.append(_result(report, f, rule_index, place=place))
    for f in report.get("suppressed") or []:
        results.append(_result(report, f, rule_index, suppression=f.get("suppression") or {}))
    notes = []
    for e in report.get("errors") or []:
        note = {"level": "error" if e.get("kind") == "internal" else "warning",
                "message": {"text": f"{e.get('kind', 'error')}: {one_line(e.get('message'))}"}}
        if e.get("path") and not str(e["path"]).startswith("<"):
            loc = {"physicalLocation": {"artifactLocation": {"uri": _uri(source_path(report, e["path"]))}}}
            if e.get("line"):
                loc["physicalLocation"]["region"] = {"startLine": int(e["line"])}
            note["locations"] = [loc]
        notes.append(note)
    tool = report.get("tool") or {}
    target = report.get("target") or {}
    info = docs_url()
    run = {
        "tool": {"driver": {
            "name": "npu-analyse",
            "version": str(tool.get("version", "")),
            "rules": [_rule(r) for r in rules],
        }},
        "invocations": [{"executionSuccessful": not any(e.get("kind") == "internal" for e in report.get("errors") or []),
                         "toolExecutionNotifications": notes}],
        "results": results,
        "columnKind": "utf16CodeUnits",
        "properties": {"mode": report.get("mode"), "torch_version": target.get("torch_version"),
                       "torch_npu_version": target.get("torch_npu_version"),
                       "knowledge_base": target.get("knowledge_base"),
                       "summary": {k: v for k, v in (report.get("summary") or {}).items()
                                   if k in ("files_analysed", "files_failed", "by_severity", "suppressed",
                                            "baselined")}},
    }
    if info:
        run["tool"]["driver"]["informationUri"] = info
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render_sarif(report: dict, options: RenderOptions) -> str:
    return dumps_indented(build_sarif(report, options)) + "\n"
