"""``--format junit``: JUnit XML (``report.junit.xml``) for CI test-report views.

One ``testcase`` per file with findings or errors (class name = the file);
a file with findings at or above ``--fail-on`` gets one ``failure`` listing
them, a file that could not be analysed an ``error``. Findings below the gate
are listed in ``system-out``. With no findings and no errors there is a single
passing ``npu-analyse`` testcase, so the CI view still shows the run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import OrderedDict
from typing import Dict, List

from .common import RenderOptions, column1, finding_text, gated, sorted_findings, source_path

_XML_BAD = {c: None for c in list(range(0, 9)) + [11, 12] + list(range(14, 32)) + [0xFFFE, 0xFFFF]}


def _x(text: object) -> str:
    """Text XML 1.0 can carry (control characters dropped, surrogates written as visible escapes: a
    non-UTF-8 file name's byte 0xff as ``\\xff``)."""
    from analyse.termsafe import escape_surrogates

    return escape_surrogates(str(text).translate(_XML_BAD))


def _line(report: dict, f: dict) -> str:
    return (f"{source_path(report, f.get('path', ''))}:{f.get('line', 1)}:{column1(f)}: {f.get('code', '')} "
            f"[{f.get('severity', '')}] {finding_text(f)}")


def render_junit(report: dict, options: RenderOptions) -> str:
    files: Dict[str, Dict[str, List[dict]]] = OrderedDict()
    for f in sorted_findings(report):
        files.setdefault(str(f.get("path", "")), {"findings": [], "errors": []})["findings"].append(f)
    for e in sorted(report.get("errors") or [], key=lambda e: str(e.get("path", ""))):
        files.setdefault(str(e.get("path", "")), {"findings": [], "errors": []})["errors"].append(e)
    duration = float((report.get("summary") or {}).get("duration_s") or 0)
    suites = ET.Element("testsuites", name="npu-analyse")
    suite = ET.SubElement(suites, "testsuite", name=f"npu-analyse {report.get('mode', 'script')}")
    failures = errors = 0
    for rel in sorted(files):
        data = files[rel]
        path = source_path(report, rel)
        case = ET.SubElement(suite, "testcase", classname=_x(path), name=_x(path), file=_x(path))
        gate = [f for f in data["findings"] if gated(f, options.fail_on, options.fail_on_scope)]
        if gate:
            failures += 1
            fail = ET.SubElement(case, "failure", type="npu-analyse",
                                 message=_x(f"{len(gate)} finding(s) at or above {options.fail_on}"))
            fail.text = _x("\n".join(_line(report, f) for f in gate))
        if data["errors"]:
            errors += 1
            err = ET.SubElement(case, "error", type=_x(data["errors"][0].get("kind", "error")),
                                message=_x(data["errors"][0].get("message", "")))
            err.text = _x("\n".join(f"{e.get('kind')}: {e.get('message')}" for e in data["errors"]))
        rest = [f for f in data["findings"] if not gated(f, options.fail_on, options.fail_on_scope)]
        if rest:
            ET.SubElement(case, "system-out").text = _x("\n".join(_line(report, f) for f in rest))
    if not files:
        ET.SubElement(suite, "testcase", classname="npu-analyse", name="npu-analyse")
    tests = max(1, len(files))
    for el in (suites, suite):
        el.set("tests", str(tests))
        el.set("failures", str(failures))
        el.set("errors", str(errors))
        el.set("time", f"{duration:.3f}")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
