"""Grouped advice, counted vs off-path findings, --min-severity, the baseline and the verdict (#23 points 3, 4, 7)."""

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyse.cli import cli

ROOT = Path(__file__).resolve().parents[1]

TRAIN = """\
import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(2, 2).cuda()
train = DataLoader(range(10), batch_size=2)
val = DataLoader(range(10), batch_size=2)
test = DataLoader(range(10), batch_size=2)
torch.cuda.synchronize()
"""
# line 4: NPU002 auto; lines 5, 6, 7: NPU802 advice (one finding); line 5: NPU202 info; line 8: NPU001 auto

ALL = "json,html,sarif,csv,junit,gitlab,github,text"


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def spec(name):
    """A schema the package ships (analyse/schemas)."""
    from analyse.schemas import load_schema

    return load_schema(name)


@pytest.fixture
def proj(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    (p / "train.py").write_text(TRAIN)
    return p


@pytest.fixture
def out(proj, tmp_path):
    o = tmp_path / "o"
    r = run("script", proj, "-o", o, "--format", ALL, "-q", "--no-cache")
    assert r.exit_code == 0, r.output
    return o


def report_of(o):
    return json.loads((Path(o) / "report.json").read_text(encoding="utf-8"))


def test_repeated_advice_is_one_finding_with_every_line(out):
    report = report_of(out)
    npu802 = [f for f in report["findings"] if f["code"] == "NPU802"]
    assert len(npu802) == 1
    g = npu802[0]
    assert g["line"] == 5 and g["lines"] == [5, 6, 7]
    assert [o["line"] for o in g["occurrences"]] == [5, 6, 7]
    ids = [o["id"] for o in g["occurrences"]]
    assert len(set(ids)) == 3 and g["id"] == ids[0]   # the group keeps its first occurrence's id
    # changes stay one per place, without lines
    assert [(f["line"], f["code"]) for f in report["findings"] if f["severity"] == "auto"] == [(4, "NPU002"),
                                                                                             (8, "NPU001")]
    assert all("lines" not in f for f in report["findings"] if f["code"] != "NPU802")
    import jsonschema

    jsonschema.validate(report, spec("report.schema.json"))


def test_grouped_lines_in_every_format(out):
    text = (out / "report.txt").read_text()
    line = next(l for l in text.splitlines() if "NPU802" in l)
    assert "3 places in this file: lines 5, 6, 7" in line
    rows = list(csv.DictReader(io.StringIO((out / "report.csv").read_text())))
    assert next(r for r in rows if r["code"] == "NPU802")["lines"] == "5 6 7"
    assert next(r for r in rows if r["code"] == "NPU002")["lines"] == ""
    gitlab = json.loads((out / "report.gitlab.json").read_text())
    issue = next(i for i in gitlab if i["check_name"] == "NPU802")
    assert "lines 5, 6, 7" in issue["description"] and issue["location"]["lines"]["begin"] == 5
    assert len([i for i in gitlab if i["check_name"] == "NPU802"]) == 1
    github = (out / "report.github.txt").read_text()
    assert len(re.findall(r"NPU802", github)) == 2 and "lines 5, 6, 7" in github   # title + message of one line
    junit = ET.parse(out / "report.junit.xml").getroot()
    assert "lines 5, 6, 7" in "".join(junit.itertext())
    html = (out / "report.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html,
                                re.S).group(1))
    assert next(f for f in data["findings"] if f["code"] == "NPU802")["lines"] == [5, 6, 7]


def test_grouped_finding_in_sarif_keeps_one_location_and_validates(out):
    import jsonschema

    doc = json.loads((out / "report.sarif").read_text())
    jsonschema.validate(doc, spec("sarif-schema-2.1.0.json"))
    results = [r for r in doc["runs"][0]["results"] if r["ruleId"] == "NPU802"]
    assert len(results) == 1
    res = results[0]
    assert len(res["locations"]) == 1 and res["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert [r["physicalLocation"]["region"]["startLine"] for r in res["relatedLocations"]] == [6, 7]
    assert [r["id"] for r in res["relatedLocations"]] == [1, 2]
    assert res["properties"]["lines"] == [5, 6, 7]
    assert "lines 5, 6, 7" in res["message"]["text"]


def test_listings_put_advice_and_info_after_changes(out):
    codes = [l.split(": ", 1)[1].split()[0] for l in (out / "report.txt").read_text().splitlines()]
    # the DataLoader's NPU202 limitation note sits on the NPU802 lines: one finding per place and API folds it in
    assert codes == ["NPU002", "NPU001", "NPU802"]
    rows = list(csv.DictReader(io.StringIO((out / "report.csv").read_text())))
    assert [r["severity"] for r in rows] == ["auto", "auto", "advice"]


def test_baselines_match_per_occurrence_and_survive_grouping(proj, tmp_path):
    base = tmp_path / "baseline.json"
    o = tmp_path / "o"
    assert run("script", proj, "-o", o, "-q", "--format", "json", "--write-baseline", base).exit_code == 0
    report = report_of(o)
    entries = json.loads(base.read_text())["findings"]
    # the baseline holds one id per place (what baselines written before grouping hold too)
    group = next(f for f in report["findings"] if f["code"] == "NPU802")
    assert {o_["id"] for o_ in group["occurrences"]} == {e["id"] for e in entries if e["code"] == "NPU802"}
    assert len(entries) == 5   # NPU002, NPU001 and three NPU802 places (each with the NPU202 note folded in)
    # a fourth DataLoader: only the new place is reported, as a finding of its own
    (proj / "train.py").write_text(TRAIN + "more = DataLoader(range(3))\n")
    r = run("script", proj, "-o", o, "-q", "--format", "json", "--baseline", base, "--fail-on", "advice", "--no-cache")
    assert r.exit_code == 1
    new = report_of(o)["findings"]
    assert [(f["line"], f["code"]) for f in new] == [(9, "NPU802")] and "lines" not in new[0]
    assert report_of(o)["summary"]["baselined"] == 5


def test_a_baseline_changes_the_gate_never_the_verdict(proj, tmp_path):
    base = tmp_path / "baseline.json"
    o = tmp_path / "o"
    run("script", proj, "-o", o, "-q", "--format", "json", "--write-baseline", base)
    before = report_of(o)["summary"]["verdict"]
    r = run("script", proj, "-o", o, "--format", "json", "--baseline", base, "--fail-on", "auto", "--no-cache")
    assert r.exit_code == 0   # nothing new gates
    after = report_of(o)
    assert after["findings"] == []
    v = after["summary"]["verdict"]
    assert (v["effort"], v["auto_migratable"]) == (before["effort"], before["auto_migratable"]) == ("low", 2)
    assert "accepted by the baseline" in v["explanation"]
    assert "Verdict: LOW effort" in r.output and "NO migration effort" not in r.output


def test_min_severity_shortens_listings_not_the_verdict_or_the_gate(proj, tmp_path):
    o = tmp_path / "o"
    r = run("script", proj, "-o", o, "--format", "json,text,sarif", "--min-severity", "auto", "--fail-on", "advice",
            "--no-cache")
    assert r.exit_code == 1   # the hidden advice still gates
    report = report_of(o)
    assert [f["code"] for f in report["findings"]] == ["NPU002", "NPU001"]
    assert report["summary"]["min_severity"] == {"level": "auto", "hidden": 1}
    assert report["summary"]["by_severity"]["advice"] == 1   # counts describe the analysis
    assert "NPU802" not in (o / "report.txt").read_text()
    assert "shown below: 2 at or above auto; 1 below it not shown (--min-severity)" in r.output
    assert "Findings: 3 listed (3 counted, 0 not counted)" in r.output   # the summary's numbers, which add up
    # the same from the configuration file
    (proj / ".npu-analyse.toml").write_text('min-severity = "manual"\n')
    run("script", proj, "-o", o, "--format", "json", "-q", "--no-cache")
    assert report_of(o)["findings"] == []
    (proj / ".npu-analyse.toml").write_text('min-severity = "loud"\n')
    bad = run("script", proj, "-o", o, "--format", "json", "-q")
    assert bad.exit_code == 2 and "min-severity" in bad.output


OFFPATH = {
    "train.py": "import torch\nfrom helpers import used\n\nif __name__ == '__main__':\n    used()\n",
    "helpers.py": ("import torch\n\n\ndef used():\n    return torch.zeros(2).cuda()\n\n\n"
                   "def unused():\n    return torch.cuda.current_blas_handle()\n"),
    "tests/test_x.py": "import torch\n\n\ndef test_it():\n    torch.zeros(2).cuda()\n",
}


@pytest.fixture
def offpath(tmp_path):
    p = tmp_path / "op"
    for rel, text in OFFPATH.items():
        (p / rel).parent.mkdir(parents=True, exist_ok=True)
        (p / rel).write_text(text)
    return p


def test_each_finding_says_whether_it_counts_and_why_not(offpath, tmp_path):
    o = tmp_path / "o"
    r = run("script", offpath, "-o", o, "--format", "json", "--no-cache")
    report = report_of(o)
    by = {(f["path"], f["line"]): f for f in report["findings"]}
    assert by[("helpers.py", 5)]["counted"] is True and "off_path" not in by[("helpers.py", 5)]
    unreached = by[("helpers.py", 9)]
    assert unreached["counted"] is False and unreached["off_path"]["reason"] == "unreached"
    assert unreached["off_path"]["why"] == "no product entry point reaches this code"
    test = by[("tests/test_x.py", 5)]
    assert test["counted"] is False and test["off_path"]["reason"] in ("role", "other-entry-points")
    assert test["off_path"]["why"]
    off = report["summary"]["off_path"]
    assert off["count"] == sum(1 for f in report["findings"] if not f["counted"])
    # the terminal: counted and off-path side by side, counted findings first, each off-path one with its why
    text = r.output
    n = len(report["findings"])
    assert f"Findings: {n} listed ({n - off['count']} counted, {off['count']} not counted)" in text
    assert f"Why not counted: {off['count']} of {n} listed finding(s)" in text
    assert text.index("helpers.py:5") < text.index("helpers.py:9")
    assert "[off path] helpers.py:9" in text
    assert "not counted: no product entry point reaches this code" in text


def test_driver_count_matches_the_sentence(tmp_path):
    p = tmp_path / "d"
    p.mkdir()
    # one manual comparison and one automatic nccl string of the same API
    (p / "train.py").write_text(
        "import torch.distributed as dist\n\n"
        "if __name__ == '__main__':\n"
        "    dist.init_process_group(backend='nccl')\n"
        "    assert dist.get_backend() == 'nccl'\n")
    o = tmp_path / "o"
    run("script", p, "-o", o, "--format", "json", "-q", "--no-cache")
    v = report_of(o)["summary"]["verdict"]
    for d in v["drivers"]:
        m = re.search(re.escape(d["api"]) + r" \((\d+)\)", v["explanation"])
        if m:
            assert int(m.group(1)) == d["count"], (d, v["explanation"])
        m = re.search(re.escape(d["api"]) + r" \(" + d["severity"] + r", (\d+) place", v["explanation"])
        if m:
            assert int(m.group(1)) == d["count"]


def test_terminal_width_follows_the_terminal_and_shows_the_fix(monkeypatch):
    from analyse.render import render_terminal

    report = {"tool": {"name": "npu-analyse"}, "summary": {"verdict": {"effort": "low"}}, "findings": [
        {"severity": "auto", "path": "train.py", "line": 3, "code": "NPU001", "api": "torch.cuda.synchronize",
         "message": "word " * 60, "replacement": "torch.npu.synchronize", "counted": True}]}
    monkeypatch.setenv("COLUMNS", "160")
    wide = render_terminal(report, {})
    assert max(len(l) for l in wide.splitlines()) == 160
    assert "fix: torch.npu.synchronize" in wide
    monkeypatch.setenv("COLUMNS", "70")
    narrow = render_terminal(report, {})
    assert max(len(l) for l in narrow.splitlines()) <= 70
    assert "fix: torch.npu.synchronize" in narrow


def test_every_api_of_a_grouped_unknown_api_finding_is_counted_and_probed(tmp_path):
    from analyse.probe.opsfile import read_report_apis

    p = tmp_path / "u"
    p.mkdir()
    # two torch APIs the support list does not document (torch.xpu.* is another accelerator's namespace since #31)
    (p / "train.py").write_text("import torch\n\ntorch.special.airy_ai(x)\ntorch.special.bessel_j0(x)\n")
    o = tmp_path / "o"
    run("script", p, "-o", o, "--format", "json", "-q", "--no-cache")
    report = report_of(o)
    (group,) = [f for f in report["findings"] if f["category"] == "unknown-api"]
    assert group["lines"] == [3, 4] and group["apis"] == ["torch.special.airy_ai", "torch.special.bessel_j0"]
    assert "Also at line 4 (`torch.special.bessel_j0`)" in group["message"]   # the second API's own message
    assert {u["api"] for u in report["summary"]["unknown_apis"]} == set(group["apis"])
    listed = read_report_apis(o / "report.json")
    names = {x.op for x in listed.ops} | {x.api for x in listed.skipped} | {x.text for x in listed.unprobeable}
    assert set(group["apis"]) <= names


def test_html_shows_counted_and_off_path_side_by_side(offpath, tmp_path):
    o = tmp_path / "o"
    run("script", offpath, "-o", o, "--format", "json,html", "-q", "--no-cache")
    report = report_of(o)
    html = (o / "report.html").read_text(encoding="utf-8")
    panel = html.split('id="standing"', 1)[1].split('class="grid two"', 1)[0]
    off = report["summary"]["off_path"]["count"]
    counted = len(report["findings"]) - off
    assert re.search(r'<tr class="counted">.*?<td class="num"><b>' + str(counted) + "</b>", panel, re.S)
    assert re.search(r'<tr class="offpath">.*?<td class="num"><b>' + str(off) + "</b>", panel, re.S)
    assert re.search(r'<tr data-reason="unreached"><td>.*?no entry point that sets the grade reaches it.*?'
                     r'<td class="num">1</td>', panel, re.S)   # "why not counted", a table by reason
    assert "blockers counted" in html and "off the path, not counted" in html


# --------------------------------------------------------------------------- the same advice in several files

SCRIPT = """\
import torch
from torch.utils.data import DataLoader


def main():
    loader = DataLoader(range(10), batch_size=2)
    other = DataLoader(range(10), batch_size=2)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
"""
# in each of a.py, b.py, c.py: lines 6, 7 NPU802 advice (with the NPU202 note); line 8 NPU001 auto


@pytest.fixture
def three(tmp_path):
    p = tmp_path / "three"
    p.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (p / name).write_text(SCRIPT)
    o = tmp_path / "o3"
    r = run("script", p, "-o", o, "--format", ALL, "-q", "--no-cache")
    assert r.exit_code == 0, r.output
    return p, o


def test_the_same_advice_in_three_files_is_one_finding_in_every_format(three):
    proj, out = three
    report = report_of(out)
    (g,) = [f for f in report["findings"] if f["code"] == "NPU802"]
    assert (g["path"], g["line"], g["lines"]) == ("a.py", 6, [6, 7])
    assert g["locations"] == [{"path": "a.py", "lines": [6, 7]}, {"path": "b.py", "lines": [6, 7]},
                              {"path": "c.py", "lines": [6, 7]}]
    assert [(o["path"], o["line"]) for o in g["occurrences"]] == [(f"{p}.py", n) for p in "abc" for n in (6, 7)]
    assert sorted(g["reach"]["entry_points"]) == ["a.py", "b.py", "c.py"]
    # changes stay one per place and file
    assert sorted((f["path"], f["line"]) for f in report["findings"] if f["code"] == "NPU001") == \
        [("a.py", 8), ("b.py", 8), ("c.py", 8)]
    assert "in 3 of 3 file(s)" in report["summary"]["verdict"]["explanation"]
    import jsonschema

    jsonschema.validate(report, spec("report.schema.json"))
    text = next(l for l in (out / "report.txt").read_text().splitlines() if "NPU802" in l)
    assert "(6 places in 3 files: a.py:6, 7, b.py:6, 7, c.py:6, 7)" in text
    rows = [r for r in csv.DictReader(io.StringIO((out / "report.csv").read_text())) if r["code"] == "NPU802"]
    assert len(rows) == 1
    # the path column's form (relative to where the tool runs) for the places in the other files
    prefix = rows[0]["file"][:-len("a.py")]
    assert rows[0]["lines"].split() == ["6", "7"] + [f"{prefix}{p}.py:{n}" for p in "bc" for n in (6, 7)]
    sarif = json.loads((out / "report.sarif").read_text())
    jsonschema.validate(sarif, spec("sarif-schema-2.1.0.json"))
    # one result per file the group names (each file gets its annotation); every other place stays related
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "NPU802"]
    where = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results]
    assert where == [("a.py", 6), ("b.py", 6), ("c.py", 6)]
    related = [(r["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
                r["physicalLocation"]["region"]["startLine"]) for r in results[0]["relatedLocations"]]
    assert related == [("a.py", 7), ("b.py", 6), ("b.py", 7), ("c.py", 6), ("c.py", 7)]
    related_b = [(r["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1],
                  r["physicalLocation"]["region"]["startLine"]) for r in results[1]["relatedLocations"]]
    assert related_b == [("a.py", 6), ("a.py", 7), ("b.py", 7), ("c.py", 6), ("c.py", 7)]
    assert results[1]["properties"]["lines"] == [6, 7]
    ids = {o["path"]: o["id"] for o in reversed(g["occurrences"])}   # each file's first occurrence
    assert [r["partialFingerprints"]["npuAnalyseFindingId/v1"] for r in results] == [g["id"], ids["b.py"], ids["c.py"]]
    gitlab = [i for i in json.loads((out / "report.gitlab.json").read_text()) if i["check_name"] == "NPU802"]
    assert len(gitlab) == 1 and "6 places in 3 files" in gitlab[0]["description"]


def test_the_terminal_says_how_many_places_and_files(three):
    proj, _out = three
    r = CliRunner().invoke(cli, ["script", str(proj), "--format", "json", "-o", str(proj.parent / "o4"),
                                 "--no-cache", "--no-color"], catch_exceptions=False, env={"COLUMNS": "160"})
    assert "a.py:6 (6 places in 3 files) NPU802" in r.output


def test_migrate_acts_at_every_place_of_a_group_across_files(tmp_path):
    from analyse.report import places_of

    g = {"id": "x1", "code": "NPU466", "severity": "blocker", "path": "a.py", "line": 3, "column": 0, "api": "k",
         "message": "m", "lines": [3], "locations": [{"path": "a.py", "lines": [3]}, {"path": "b.py", "lines": [9]}],
         "occurrences": [{"path": "a.py", "id": "x1", "line": 3, "column": 0, "api": "k", "snippet": "s"},
                         {"path": "b.py", "id": "x2", "line": 9, "column": 4, "api": "k", "snippet": "t",
                          "replacement": "r2"}]}
    places = places_of(g)
    assert [(p["path"], p["line"], p["id"], p.get("replacement")) for p in places] == \
        [("a.py", 3, "x1", None), ("b.py", 9, "x2", "r2")]
    assert all("occurrences" not in p and "locations" not in p for p in places)
    assert places_of({"id": "y", "path": "c.py", "line": 1}) == [{"id": "y", "path": "c.py", "line": 1}]


def test_a_baseline_accepts_every_place_of_a_group_across_files(three, tmp_path):
    proj, _out = three
    base = tmp_path / "b3.json"
    o = tmp_path / "o5"
    assert run("script", proj, "-o", o, "-q", "--format", "json", "--no-cache", "--write-baseline", base).exit_code == 0
    entries = [e for e in json.loads(base.read_text())["findings"] if e["code"] == "NPU802"]
    assert sorted(e["path"] for e in entries) == ["a.py", "a.py", "b.py", "b.py", "c.py", "c.py"]   # one id a place
    # a third DataLoader in b.py: only the new place is reported, in its own file
    (proj / "b.py").write_text(SCRIPT.replace("    torch.cuda.synchronize()\n",
                                              "    third = DataLoader(range(4))\n    torch.cuda.synchronize()\n"))
    r = run("script", proj, "-o", o, "-q", "--format", "json", "--no-cache", "--baseline", base)
    assert r.exit_code == 0, r.output
    new = [f for f in report_of(o)["findings"] if f["code"] == "NPU802"]
    assert [(f["path"], f["line"]) for f in new] == [("b.py", 8)] and "locations" not in new[0]


class _CountingPath(str):
    """A path that counts how often it is compared (a group across N files compared every place with every
    file: N x N)."""

    compared = 0

    def __eq__(self, other):
        _CountingPath.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_one_advice_in_many_files_is_grouped_in_linear_work():
    from analyse.findings import Finding
    from analyse.report import group_findings

    n = 3000
    findings = [Finding(code="NPU808", category="performance-advice", severity="advice",
                        path=_CountingPath(f"pkg/m{i:05d}.py"), line=3 + (i % 2), api="torch.cuda.synchronize",
                        message="Synchronising every step stalls the device.", role="product",
                        reach={"status": "reachable"})
                for i in range(n)]
    _CountingPath.compared = 0
    out, flags, _eps, extras = group_findings(findings, [False] * n, None)
    assert _CountingPath.compared < 4 * n   # was n * n (9,000,000)
    assert len(out) == 1 and flags == [False] and out[0].path == "pkg/m00000.py"
    assert len(out[0].other_paths) == n - 1
    locs = extras[0]["locations"]
    assert len(locs) == n and locs[0] == {"path": "pkg/m00000.py", "lines": [3]}
    assert locs[1] == {"path": "pkg/m00001.py", "lines": [4]} and extras[0]["lines"] == [3]
