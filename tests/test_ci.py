"""CI use (issue 11): exit codes, formats, configuration, suppressions, baselines, integrations, terminal manners."""

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyse.cli import cli

ROOT = Path(__file__).resolve().parents[1]

TRAIN = """\
import torch
import torch.distributed as dist

model = torch.nn.Linear(2, 2).cuda()
net = torch.nn.DataParallel(model)
dist.init_process_group(backend="nccl")
torch.cuda.synchronize()
"""
# line 4: NPU002 auto; line 5: NPU103 manual; line 6: NPU101 auto (+ NPU202 info); line 7: NPU001


def spec(name):
    """A schema the package ships (analyse/schemas: the report, probe, changes and SARIF 2.1.0 schemas)."""
    from analyse.schemas import load_schema

    return load_schema(name)


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


@pytest.fixture
def proj(tmp_path):
    p = tmp_path / "proj"
    p.mkdir()
    (p / "train.py").write_text(TRAIN)
    return p


def report_of(out):
    return json.loads((Path(out) / "report.json").read_text(encoding="utf-8"))


def codes(report):
    return sorted((f["line"], f["code"]) for f in report["findings"])


# ------------------------------------------------------------------ exit codes

def test_fail_on_manual_blocker_and_exit_zero(proj, tmp_path):
    out = tmp_path / "o"
    r = run("script", proj, "-o", out, "-q", "--fail-on", "manual")
    assert r.exit_code == 1
    assert any(f["severity"] == "manual" for f in report_of(out)["findings"])
    assert run("script", proj, "-o", out, "-q", "--fail-on", "blocker").exit_code == 0
    assert run("script", proj, "-o", out, "-q", "--fail-on", "manual", "--exit-zero").exit_code == 0
    assert run("script", proj, "-o", out, "-q").exit_code == 0  # default: never
    assert run("script", proj, "-o", out, "-q", "--fail-on", "never").exit_code == 0
    assert run("script", proj, "-o", out, "-q", "--fail-on", "AUTO").exit_code == 1


def test_fail_on_message_counts_gated_findings(proj, tmp_path):
    r = run("script", proj, "-o", tmp_path / "o", "--fail-on", "manual", "--format", "json")
    assert r.exit_code == 1
    assert "npu-analyse: 1 counted finding(s) at or above 'manual' (--fail-on manual)" in r.stderr


def test_fail_on_in_thirdparty_mode(proj, tmp_path):
    out = tmp_path / "o"
    assert run("thirdparty", proj, "-o", out, "-q", "--fail-on", "manual").exit_code == 1
    assert report_of(out)["mode"] == "thirdparty"
    assert run("thirdparty", proj, "-o", out, "-q", "--fail-on", "blocker").exit_code == 0


@pytest.mark.parametrize("args, message", [
    (["--format", "pdf"], "unknown --format 'pdf'"),
    (["--format", "json,sarif", "-o", "-"], "-o - writes one format to stdout"),
    (["--select", "NPU999"], "unknown rule code 'NPU999'"),
    (["--ignore", "E501"], "unknown rule code 'E501'"),
    (["--per-file-ignores", "tests"], "--per-file-ignores expects GLOB:VALUE"),
    (["--role", "tests/*=unit"], "role 'unit'"),
    (["--torch-version", "9.9"], "unknown --torch-version"),
])
def test_usage_errors_are_one_line_exit_2(proj, tmp_path, args, message):
    r = run("script", proj, "-o", tmp_path / "o", *args)
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_fail_on_value_is_one_line_exit_2(proj, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "analyse", "script", str(proj), "--fail-on", "major"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "'major' is not one of" in proc.stderr


def test_output_naming_a_file_fails_before_the_analysis(proj, tmp_path, monkeypatch):
    import analyse.modes

    def boom(*a, **k):
        raise AssertionError("the analysis must not start")

    monkeypatch.setattr(analyse.modes, "run_script", boom)
    existing = tmp_path / "existing"
    existing.write_text("keep me")
    r = run("script", proj, "-o", existing)
    assert r.exit_code == 2 and "is a file, not a folder" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("script", proj, "-o", existing / "sub")
    assert r.exit_code == 2 and "is a file" in r.stderr
    assert existing.read_text() == "keep me"


def test_output_naming_a_file_exits_2_fast_in_a_real_process(proj, tmp_path):
    existing = tmp_path / "existing"
    existing.write_text("x")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "analyse", "script", str(proj), "-o", str(existing)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert time.perf_counter() - t0 < 30  # generous bound: the check happens before any analysis


def test_nothing_analysable_exits_3(tmp_path):
    p = tmp_path / "p"
    p.mkdir()
    (p / "broken.py").write_text("def f(:\n")
    out = tmp_path / "o"
    r = run("script", p, "-o", out, "-q", "--exit-zero")
    assert r.exit_code == 3
    assert "no input file could be analysed" in r.stderr
    assert report_of(out)["errors"][0]["kind"] == "syntax"  # the report says why


def test_internal_failure_exits_3_with_one_line(proj, tmp_path, monkeypatch):
    import analyse.modes

    def crash(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(analyse.modes, "run_script", crash)
    monkeypatch.delenv("NPU_ANALYSE_DEBUG", raising=False)
    r = run("script", proj, "-o", tmp_path / "o")
    assert r.exit_code == 3
    assert "analysis failed: RuntimeError: disk on fire" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_unwritable_report_exits_3(proj, tmp_path, monkeypatch):
    import analyse.render as render

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(render, "write_reports", full_disk)
    r = run("script", proj, "-o", tmp_path / "o")
    assert r.exit_code == 3 and "No space left on device" in r.stderr


_INTERRUPT = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {root!r})
    import analyse.{module} as target
    real = target.{func}
    def interrupted(*a, **k):
        {before}
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        raise SystemExit("SIGINT was not delivered")
    target.{func} = interrupted
    from analyse.cli import main
    main({argv!r})
""")


def _interrupt(tmp_path, module, func, argv, before="pass"):
    code = _INTERRUPT.format(root=str(ROOT), module=module, func=func, argv=argv, before=before)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_ctrl_c_during_analysis_exits_130_and_writes_nothing(proj, tmp_path):
    out = tmp_path / "o"
    proc = _interrupt(tmp_path, "modes", "run_script", ["script", str(proj), "-o", str(out)])
    assert proc.returncode == 130, proc.stderr
    assert "interrupted" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_ctrl_c_while_writing_leaves_no_partial_report(proj, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "report.json").write_text('{"previous": true}')
    argv = ["script", str(proj), "-o", str(out), "--format", "json,html,sarif,csv"]
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        import analyse.render as render
        def interrupted(report, options):  # the CSV is rendered after json, html and sarif were written
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
            raise SystemExit("SIGINT was not delivered")
        render._RENDERERS["csv"] = interrupted
        from analyse.cli import main
        main({argv!r})
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert json.loads((out / "report.json").read_text()) == {"previous": True}  # old report untouched
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]  # no temporary files, no new reports


# ------------------------------------------------------------------ formats

ALL = "json,html,sarif,csv,junit,gitlab,github,text"


@pytest.fixture
def all_formats(proj, tmp_path):
    out = tmp_path / "o"
    r = run("script", proj, "-o", out, "--format", ALL, "--fail-on", "manual", "-q")
    assert r.exit_code == 1
    return out


def test_every_format_is_written(all_formats):
    names = sorted(p.name for p in all_formats.iterdir())
    assert names == sorted(["report.json", "report.html", "report.sarif", "report.csv", "report.junit.xml",
                            "report.gitlab.json", "report.github.txt", "report.txt"])


def test_sarif_validates_and_has_rules_fingerprints_regions_and_fixes(all_formats):
    import jsonschema

    doc = json.loads((all_formats / "report.sarif").read_text())
    jsonschema.validate(doc, spec("sarif-schema-2.1.0.json"))
    assert doc["version"] == "2.1.0"
    run_ = doc["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    from analyse.passes import all_rules

    assert [r["id"] for r in rules] == sorted(r.code for r in all_rules())
    npu002 = next(r for r in rules if r["id"] == "NPU002")
    # no public address configured: no helpUri (never a file inside the installation), the help text is there
    assert "Why:" in npu002["help"]["text"] and "helpUri" not in npu002
    assert "informationUri" not in run_["tool"]["driver"] and not any("rules.md" in r.get("helpUri", "") for r in rules)
    assert npu002["defaultConfiguration"]["level"] == "warning"
    report = json.loads((all_formats / "report.json").read_text())
    by_id = {f["id"]: f for f in report["findings"]}
    assert len(run_["results"]) == len(by_id)
    for res in run_["results"]:
        f = by_id[res["partialFingerprints"]["npuAnalyseFindingId/v1"]]
        assert res["ruleId"] == f["code"] and rules[res["ruleIndex"]]["id"] == f["code"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == f["line"] and region["startColumn"] == f["column"] + 1
        assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "proj/train.py" or \
            res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("/proj/train.py")
    levels = {r["ruleId"]: r["level"] for r in run_["results"]}
    assert levels["NPU103"] == "error" and levels["NPU002"] == "warning" and levels["NPU202"] == "note"
    # torch.cuda.synchronize -> torch.npu.synchronize is a plain text edit of line 7
    sync = next(r for r in run_["results"] if r["ruleId"] == "NPU001")
    rep = sync["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert rep["deletedRegion"] == {"startLine": 7, "startColumn": 1, "endLine": 7, "endColumn": 23}
    assert rep["insertedContent"]["text"] == "torch.npu.synchronize"
    # backend="nccl" -> "hccl": the string literal is replaced, with its own quotes
    nccl = next(r for r in run_["results"] if r["ruleId"] == "NPU101")
    rep = nccl["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert rep["insertedContent"]["text"] == '"hccl"'
    assert TRAIN.splitlines()[5][rep["deletedRegion"]["startColumn"] - 1:rep["deletedRegion"]["endColumn"] - 1] == '"nccl"'
    # prose replacements are not offered as fixes
    assert "fixes" not in next(r for r in run_["results"] if r["ruleId"] == "NPU103")


def test_sarif_help_uri_follows_docs_url(proj, tmp_path):
    from analyse.render import render_format
    from analyse.render.common import RenderOptions

    report = report_of_run(proj, tmp_path)
    os.environ["NPU_ANALYSE_DOCS_URL"] = "https://example.org/npu-analyse/docs/rules.md"
    try:
        doc = json.loads(render_format(report, "sarif", options=RenderOptions(
            rules=[{"code": "NPU002", "name": "tensor-module-cuda", "severity": "auto", "category": "cuda-api"}])))
    finally:
        del os.environ["NPU_ANALYSE_DOCS_URL"]
    rule = next(r for r in doc["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "NPU002")
    assert rule["helpUri"] == "https://example.org/npu-analyse/docs/rules.md#npu002-tensor-module-cuda"


def report_of_run(proj, tmp_path):
    out = tmp_path / "r"
    assert run("script", proj, "-o", out, "-q", "--format", "json").exit_code == 0
    return report_of(out)


def test_rule_doc_anchors_exist_in_docs_rules_md():
    from analyse.passes import all_rules
    from analyse.render.common import rule_anchor

    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for r in all_rules():
        assert f"## {r.code} {r.name}\n" in text
        assert f"(#{rule_anchor(r.code, r.name)})" in text


def test_csv_columns_and_rows(all_formats):
    rows = list(csv.DictReader(io.StringIO((all_formats / "report.csv").read_text())))
    assert list(rows[0])[:6] == ["file", "line", "column", "api", "support_status", "suggestion"]
    assert {"code", "severity", "category", "message", "id"} <= set(rows[0])
    report = report_of(all_formats)
    assert len(rows) == len(report["findings"])
    dp = next(r for r in rows if r["code"] == "NPU103")
    assert dp["line"] == "5" and dp["api"] == "torch.nn.DataParallel" and dp["severity"] == "manual"
    assert dp["support_status"] == "supported after a manual change" and "DistributedDataParallel" in dp["suggestion"]
    assert dp["file"].endswith("proj/train.py")


def test_csv_defuses_formulas(tmp_path):
    from analyse.render.csv_report import render_csv
    from analyse.render.common import RenderOptions

    report = {"inputs": ["."], "findings": [{"path": "a.py", "line": 1, "column": 0, "code": "NPU001",
                                             "severity": "manual", "api": "=cmd|' /C calc'!A0", "message": "m",
                                             "replacement": "+1", "id": "x"}]}
    row = list(csv.reader(io.StringIO(render_csv(report, RenderOptions()))))[1]
    assert row[3] == "'=cmd|' /C calc'!A0" and row[5] == "'+1"


def test_junit_testcase_per_file_and_failures_for_gated(all_formats):
    root = ET.fromstring((all_formats / "report.junit.xml").read_text())
    cases = root.findall(".//testcase")
    assert len(cases) == 1 and cases[0].get("name").endswith("proj/train.py")
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message") == "1 finding(s) at or above manual"
    assert "NPU103" in failure.text and "NPU002" not in failure.text
    assert "NPU002" in cases[0].find("system-out").text
    assert root.get("failures") == "1" and root.get("tests") == "1"


def test_junit_without_gate_has_no_failures(proj, tmp_path):
    out = tmp_path / "o"
    assert run("script", proj, "-o", out, "-q", "--format", "junit").exit_code == 0
    root = ET.fromstring((out / "report.junit.xml").read_text())
    assert root.get("failures") == "0" and root.find(".//failure") is None


def test_gitlab_code_quality(all_formats):
    issues = json.loads((all_formats / "report.gitlab.json").read_text())
    report = report_of(all_formats)
    assert len(issues) == len(report["findings"])
    assert {i["fingerprint"] for i in issues} == {f["id"] for f in report["findings"]}
    dp = next(i for i in issues if i["check_name"] == "NPU103")
    assert dp["severity"] == "major" and dp["location"]["lines"]["begin"] == 5
    assert dp["location"]["path"].endswith("proj/train.py") and dp["description"].startswith("NPU103 ")
    for i in issues:
        assert set(i) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert i["severity"] in ("info", "minor", "major", "critical", "blocker")


def test_github_annotations(all_formats):
    lines = (all_formats / "report.github.txt").read_text().splitlines()
    assert all(re.match(r"^::(error|warning|notice) file=[^,]+,line=\d+,col=\d+", l) for l in lines)
    dp = next(l for l in lines if "NPU103" in l)
    assert dp.startswith("::error file=") and ",line=5,col=7," in dp  # gated by --fail-on manual
    assert next(l for l in lines if "NPU002" in l).startswith("::warning ")
    assert next(l for l in lines if "NPU202" in l).startswith("::notice ")


def test_github_escapes_workflow_command_injection():
    from analyse.render.github import render_github
    from analyse.render.common import RenderOptions

    report = {"inputs": ["."], "findings": [{"path": "a,b:c.py", "line": 1, "column": 0, "code": "NPU001",
                                             "severity": "manual", "api": "x",
                                             "message": "evil\n::error file=x::owned 100%", "id": "1"}]}
    (line,) = render_github(report, RenderOptions(fail_on="manual")).splitlines()
    assert line.startswith("::error file=a%2Cb%3Ac.py,line=1,")  # the message's newline cannot start a command
    assert line.endswith("::NPU001 evil ::error file=x::owned 100%25")


def test_text_format(all_formats):
    lines = (all_formats / "report.txt").read_text().splitlines()
    report = report_of(all_formats)
    assert len(lines) == len(report["findings"])
    assert all(re.match(r"^\S+:\d+:\d+: NPU\d{3} ", l) for l in lines)
    assert any(re.match(r"^\S*proj/train\.py:5:7: NPU103 \[manual\] ", l) for l in lines)


def test_json_to_stdout_is_json_only(proj, tmp_path):
    r = run("script", proj, "--format", "json", "-o", "-")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["mode"] == "script" and doc["findings"]
    assert "Verdict" in r.stderr  # the summary goes to stderr
    # in a real process too, with nothing else on stdout
    proc = subprocess.run([sys.executable, "-m", "analyse", "script", str(proj), "--format", "json", "-o", "-"],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0 and json.loads(proc.stdout)["findings"]
    assert not (tmp_path / "npu-analyse-report").exists()


@pytest.mark.parametrize("fmt", ["sarif", "csv", "junit", "gitlab", "github", "text", "html"])
def test_every_format_to_stdout(proj, fmt):
    r = run("script", proj, "--format", fmt, "-o", "-", "-q")
    assert r.exit_code == 0 and r.stdout and r.stderr == ""
    if fmt in ("sarif", "gitlab"):
        json.loads(r.stdout)
    if fmt == "junit":
        ET.fromstring(r.stdout.split("\n", 1)[1])


def test_report_validates_with_summary_counts(proj, tmp_path):
    import jsonschema

    (proj / "train.py").write_text(TRAIN.replace("torch.cuda.synchronize()", "torch.cuda.synchronize()  # npu-analyse: ignore"))
    out = tmp_path / "o"
    assert run("script", proj, "-o", out, "-q", "--format", "json", "--show-suppressed").exit_code == 0
    report = report_of(out)
    jsonschema.validate(report, spec("report.schema.json"))
    assert report["summary"]["suppressed"] == 1
    assert [(s["line"], s["code"], s["suppression"]["kind"]) for s in report["suppressed"]] == [(7, "NPU001", "line")]


# ------------------------------------------------------------------ suppressions

def test_ignore_code_removes_exactly_that_finding(proj, tmp_path):
    out = tmp_path / "o"
    run("script", proj, "-o", out, "-q", "--format", "json")
    before = codes(report_of(out))
    src = TRAIN.replace('dist.init_process_group(backend="nccl")',
                        'dist.init_process_group(backend="nccl")  # npu-analyse: ignore[NPU101]')
    (proj / "train.py").write_text(src)
    run("script", proj, "-o", out, "-q", "--format", "json")
    after = report_of(out)
    assert (6, "NPU101") in before and (6, "NPU202") in before
    assert codes(after) == [c for c in before if c != (6, "NPU101")]
    assert after["summary"]["suppressed"] == 1


def test_ignore_npu002_on_its_line(proj, tmp_path):
    (proj / "train.py").write_text(TRAIN.replace(".cuda()\n", ".cuda()  # npu-analyse: ignore[NPU002]\n", 1))
    out = tmp_path / "o"
    run("script", proj, "-o", out, "-q", "--format", "json")
    got = codes(report_of(out))
    assert (4, "NPU002") not in got and (5, "NPU103") in got


def test_bare_ignore_and_ignore_file_and_strings(tmp_path):
    p = tmp_path / "p"
    p.mkdir()
    (p / "a.py").write_text(textwrap.dedent("""\
        import torch
        x = torch.zeros(1).cuda(); torch.cuda.synchronize()  # npu-analyse: ignore
        y = torch.zeros(1).cuda()
        s = "# npu-analyse: ignore"; z = torch.zeros(1).cuda()
        """))
    (p / "b.py").write_text(textwrap.dedent("""\
        # npu-analyse: ignore-file[NPU002]
        import torch
        x = torch.zeros(1).cuda()
        torch.cuda.synchronize()
        """))
    out = tmp_path / "o"
    run("script", p, "-o", out, "-q", "--format", "json")
    report = report_of(out)
    got = sorted((f["path"], f["line"], f["code"]) for f in report["findings"] if f["code"] in ("NPU001", "NPU002"))
    assert got == [("a.py", 3, "NPU002"), ("a.py", 4, "NPU002"), ("b.py", 4, "NPU001")]
    assert report["summary"]["suppressed"] == 3


def test_multi_line_finding_suppressed_on_its_first_line(tmp_path):
    from analyse.suppress import scan_python

    fd = scan_python("x = f(  # npu-analyse: ignore[NPU002, NPU101]\n  1,\n)\n")
    assert fd.match("NPU002", 1) is not None and fd.match("NPU101", 1) is not None
    assert fd.match("NPU002", 2) is None and fd.match("NPU001", 1) is None
    p = tmp_path / "p"
    p.mkdir()
    (p / "m.py").write_text("import torch\nmodel = torch.nn.DataParallel(  # npu-analyse: ignore[NPU103]\n    model,\n)\n")
    out = tmp_path / "o"
    run("script", p, "-o", out, "-q", "--format", "json")
    assert [f["code"] for f in report_of(out)["findings"] if f["code"] == "NPU103"] == []


def test_show_suppressed_and_warn_unused(proj, tmp_path):
    (proj / "train.py").write_text(TRAIN.replace(".cuda()\n", ".cuda()  # npu-analyse: ignore[NPU002,NPU005]\n", 1)
                                   + "x = 1  # npu-analyse: ignore\n")
    (proj / "other.py").write_text("y = 2  # npu-analyse: ignore[NPU001]\n")
    r = run("script", proj, "-o", tmp_path / "o", "--format", "json", "--show-suppressed", "--warn-unused-ignores")
    assert r.exit_code == 0
    assert "Suppressed: 1" in r.stdout and "NPU002" in r.stdout
    warnings = [l for l in r.stderr.splitlines() if "unused suppression" in l]
    assert len(warnings) == 3
    assert any(re.search(r"proj/train\.py:4: .*\(NPU005 unused\)", w) for w in warnings)
    assert any(re.search(r"proj/train\.py:8: warning: unused suppression # npu-analyse: ignore$", w) for w in warnings)
    assert any(re.search(r"proj/other\.py:1: .*NPU001", w) for w in warnings)


# ------------------------------------------------------------------ baseline

def test_baseline_round_trip_and_line_shift(proj, tmp_path):
    base = tmp_path / "baseline.json"
    out = tmp_path / "o"
    r = run("script", proj, "-o", out, "-q", "--format", "json", "--write-baseline", base, "--fail-on", "info")
    assert r.exit_code == 0  # writing a baseline never fails the run
    doc = json.loads(base.read_text())
    assert doc["version"] == 1 and doc["tool"] == "npu-analyse"
    assert doc["findings"] == sorted(doc["findings"], key=lambda e: (e["path"], e["code"], e["api"], e["id"]))
    assert base.read_text() == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    n = len(doc["findings"])
    assert n == len(report_of(out)["findings"])
    # two blank lines at the top and one new .cuda()
    (proj / "train.py").write_text("\n\n" + TRAIN + "extra = torch.zeros(3).cuda()\n")
    r = run("script", proj, "-o", out, "-q", "--format", "json", "--baseline", base, "--fail-on", "auto")
    assert r.exit_code == 1
    report = report_of(out)
    gating = [f for f in report["findings"] if f["severity"] in ("blocker", "manual", "auto")]
    assert [(f["line"], f["code"]) for f in gating] == [(10, "NPU002")]
    assert report["summary"]["baselined"] == n
    assert run("script", proj, "-o", out, "-q", "--baseline", base, "--fail-on", "manual").exit_code == 0


def test_baseline_ids_survive_line_shifts(tmp_path, kb):
    from analyse.modes import run_script

    p = tmp_path / "p"
    p.mkdir()
    (p / "train.py").write_text(TRAIN)
    ids = {f["id"] for f in run_script([p], kb)["findings"] if not f["code"].startswith("NPU8")}
    (p / "train.py").write_text("# a comment\n\nimport os\n" + TRAIN)
    assert ids <= {f["id"] for f in run_script([p], kb)["findings"]}


@pytest.mark.parametrize("content, message", [
    ("not json", "is not valid JSON"),
    ('{"tool": "other", "findings": []}', "is not an npu-analyse baseline"),
    ('{"tool": "npu-analyse", "version": 9, "findings": []}', "has version 9"),
    ('{"tool": "npu-analyse", "version": 1, "findings": [{"code": "NPU001"}]}', "needs a string 'id'"),
])
def test_bad_baseline_is_exit_2(proj, tmp_path, content, message):
    base = tmp_path / "b.json"
    base.write_text(content)
    r = run("script", proj, "-o", tmp_path / "o", "--baseline", base)
    assert r.exit_code == 2 and message in r.stderr
    r = run("script", proj, "-o", tmp_path / "o", "--baseline", tmp_path / "missing.json")
    assert r.exit_code == 2 and "cannot read baseline" in r.stderr


def test_write_baseline_into_a_folder_is_usage_error(proj, tmp_path):
    r = run("script", proj, "-o", tmp_path / "o", "--write-baseline", tmp_path)
    assert r.exit_code == 2 and "is a folder" in r.stderr


# ------------------------------------------------------------------ configuration

def write_config(proj, body, name="pyproject.toml"):
    header = "[tool.npu-analyse]\n" if name == "pyproject.toml" else ""
    (proj / name).write_text(header + textwrap.dedent(body))


def test_config_torch_version_and_ignore_take_effect(proj, tmp_path):
    write_config(proj, """\
        torch-version = "2.8.0"
        ignore = ["NPU101"]
        """)
    out = tmp_path / "o"
    assert run("script", proj, "-o", out, "-q", "--format", "json").exit_code == 0
    report = report_of(out)
    assert report["target"]["torch_version"] == "2.8.0"
    assert "NPU101" not in {f["code"] for f in report["findings"]}
    assert "NPU103" in {f["code"] for f in report["findings"]}
    # the command line wins
    assert run("script", proj, "-o", out, "-q", "--format", "json", "--torch-version", "2.6.0").exit_code == 0
    assert report_of(out)["target"]["torch_version"] == "2.6.0"


def test_config_found_from_a_subfolder_and_npu_analyse_toml_wins(proj, tmp_path):
    sub = proj / "src"
    sub.mkdir()
    (sub / "m.py").write_text("import torch\nx = torch.zeros(1).cuda()\ntorch.cuda.synchronize()\n")
    write_config(proj, 'ignore = ["NPU002"]\n')
    write_config(proj, 'ignore = ["NPU001"]\n', name=".npu-analyse.toml")
    out = tmp_path / "o"
    run("script", sub, "-o", out, "-q", "--format", "json")
    assert {f["code"] for f in report_of(out)["findings"]} >= {"NPU002"}
    assert "NPU001" not in {f["code"] for f in report_of(out)["findings"]}
    run("script", sub, "-o", out, "-q", "--format", "json", "--isolated")
    assert {"NPU001", "NPU002"} <= {f["code"] for f in report_of(out)["findings"]}
    run("script", sub, "-o", out, "-q", "--format", "json", "--config", proj / "pyproject.toml")
    got = {f["code"] for f in report_of(out)["findings"]}
    assert "NPU001" in got and "NPU002" not in got


def test_config_select_extend_select_and_prefixes(proj, tmp_path):
    out = tmp_path / "o"
    write_config(proj, 'select = ["NPU1"]\nextend-select = ["NPU002"]\nignore = ["NPU103"]\n')
    run("script", proj, "-o", out, "-q", "--format", "json")
    assert {f["code"] for f in report_of(out)["findings"]} == {"NPU002", "NPU101"}
    r = run("script", proj, "-o", out, "-q", "--format", "json", "--select", "NPU001")
    assert {f["code"] for f in report_of(out)["findings"]} == {"NPU001", "NPU002"}


def test_config_exclude_and_per_file_ignores(proj, tmp_path):
    (proj / "tests").mkdir()
    (proj / "tests" / "test_x.py").write_text("import torch\nx = torch.zeros(1).cuda()\ntorch.cuda.synchronize()\n")
    (proj / "vendor").mkdir()
    (proj / "vendor" / "lib.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    write_config(proj, """\
        exclude = ["vendor/"]
        per-file-ignores = { "tests/*" = ["NPU002"] }
        """)
    out = tmp_path / "o"
    run("script", proj, "-o", out, "-q", "--format", "json")
    report = report_of(out)
    got = {(f["path"], f["code"]) for f in report["findings"]}
    assert not any(path.startswith("vendor/") for path, _ in got)
    assert ("tests/test_x.py", "NPU001") in got and ("tests/test_x.py", "NPU002") not in got
    assert ("train.py", "NPU002") in got
    assert report["summary"]["files_analysed"] == 3  # train.py, tests/test_x.py and pyproject.toml (read for its dependencies)
    # globs are relative to the configuration file, also when a subfolder is analysed
    run("script", proj / "tests", "-o", out, "-q", "--format", "json")
    assert {f["code"] for f in report_of(out)["findings"]} == {"NPU001"}
    # --exclude adds to the file's list
    run("script", proj, "-o", out, "-q", "--format", "json", "--exclude", "tests")
    assert {f["path"] for f in report_of(out)["findings"]} == {"train.py"}


def test_config_fail_on_and_baseline(proj, tmp_path):
    base = proj / "npu-baseline.json"
    write_config(proj, 'fail-on = "manual"\n')
    assert run("script", proj, "-o", tmp_path / "o", "-q").exit_code == 1
    assert run("script", proj, "-o", tmp_path / "o", "-q", "--fail-on", "blocker").exit_code == 0
    assert run("script", proj, "-o", tmp_path / "o", "-q", "--write-baseline", base).exit_code == 0
    write_config(proj, 'fail-on = "manual"\nbaseline = "npu-baseline.json"\n')  # relative to the config file
    out = tmp_path / "o"
    assert run("script", proj, "-o", out, "-q", "--format", "json").exit_code == 0
    assert report_of(out)["findings"] == [] and report_of(out)["summary"]["baselined"] > 0


def test_config_entry_and_roles_reach_run_script(proj, tmp_path, monkeypatch):
    import analyse.modes

    seen = {}
    real = analyse.modes.run_script

    def spy(inputs, kb, **kwargs):
        seen.update(kwargs)
        return real(inputs, kb, **kwargs)

    monkeypatch.setattr(analyse.modes, "run_script", spy)
    (proj / "tools").mkdir()
    (proj / "tools" / "run.py").write_text("import torch\n\ndef main():\n    torch.cuda.synchronize()\n")
    (proj / "other.py").write_text("import torch\nif __name__ == '__main__':\n    torch.zeros(1).cuda()\n")
    write_config(proj, 'entry = ["train.py", "tools/run.py:main"]\nroles = { "tools/*" = "tool" }\n')
    assert run("script", proj, "-o", tmp_path / "o", "-q").exit_code == 0
    assert seen["entries"] == [str(proj / "train.py"), str(proj / "tools/run.py:main")]
    assert seen["roles"] == {"tools/*": "tool"}
    out = tmp_path / "o"
    report = report_of(out)
    assert {e["path"] for e in report["summary"]["entry_points"]} == {"train.py", "tools/run.py"}
    assert {f["role"] for f in report["findings"] if f["path"] == "tools/run.py"} == {"tool"}
    r = run("script", proj, "-o", out, "-q", "--entry", str(proj / "other.py"), "--role", "train.py=example")
    assert r.exit_code == 0, r.output
    assert seen["entries"] == [str(proj / "other.py")]
    assert seen["roles"] == {"tools/*": "tool", "train.py": "example"}
    assert {f["role"] for f in report_of(out)["findings"] if f["path"] == "train.py"} == {"example"}
    write_config(proj, 'entry = ["missing.py"]\n')
    r = run("script", proj, "-o", out, "-q")
    assert r.exit_code == 2 and "missing.py" in r.stderr


def test_show_config_lists_sources(proj, tmp_path):
    write_config(proj, 'torch-version = "2.8.0"\nignore = ["NPU101"]\n')
    r = run("script", proj, "--show-config", "--fail-on", "manual")
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"# configuration file: {proj / 'pyproject.toml'}"
    assert any(l.startswith('torch-version = "2.8.0"  # ') and "pyproject.toml [tool.npu-analyse]" in l for l in lines)
    assert any(l.startswith('fail-on = "manual"  # command line (--fail-on)') for l in lines)
    assert any(l.startswith('select = ["ALL"]  # default') for l in lines)
    assert not (tmp_path / "npu-analyse-report").exists()


@pytest.mark.parametrize("body, message", [
    ('colour = "always"\n', "unknown key 'colour'"),
    ('torch_version = "2.8.0"\n', "did you mean 'torch-version'"),
    ('torch-version = 2.8\n', "torch-version in"),
    ('ignore = "NPU101"\n', "must be a list of strings"),
    ('ignore = ["NPU999"]\n', "unknown rule code 'NPU999'"),
    ('select = ["XYZ"]\n', "unknown rule code 'XYZ'"),
    ('fail-on = "major"\n', "fail-on in"),
    ('per-file-ignores = { "tests/*" = "NPU002" }\n', "per-file-ignores"),
    ('per-file-ignores = { "tests/*" = ["NPU998"] }\n', "unknown rule code 'NPU998'"),
    ('exclude = [1]\n', "exclude in"),
    ('entry = "train.py"\n', "entry in"),
    ('roles = { "tests/*" = "unit" }\n', "role 'unit'"),
    ('baseline = ["a"]\n', "baseline in"),
    ('ignore = [\n', "invalid TOML"),
])
def test_bad_config_is_one_line_exit_2(proj, tmp_path, body, message):
    write_config(proj, body)
    r = run("script", proj, "-o", tmp_path / "o")
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_npu_analyse_toml_and_missing_config_file(proj, tmp_path):
    write_config(proj, '[tool.npu-analyse]\nignore = []\n', name=".npu-analyse.toml")
    r = run("script", proj, "-o", tmp_path / "o")
    assert r.exit_code == 2 and "unknown key 'tool'" in r.stderr
    r = run("script", proj, "--config", tmp_path / "nope.toml")
    assert r.exit_code == 2 and "config file does not exist" in r.stderr


def test_pyproject_without_table_is_passed_over(proj, tmp_path):
    (proj / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / ".npu-analyse.toml").write_text('ignore = ["NPU002"]\n')
    out = tmp_path / "o"
    run("script", proj, "-o", out, "-q", "--format", "json")
    assert "NPU002" not in {f["code"] for f in report_of(out)["findings"]}


# ------------------------------------------------------------------ terminal manners

def test_help_of_every_command_ends_with_examples():
    assert {"script", "thirdparty", "explain", "rules", "probe"} <= set(cli.commands)
    for cmd in [[]] + [[name] for name in sorted(cli.commands)]:
        r = run(*cmd, "--help")
        assert r.exit_code == 0
        tail = r.output[r.output.rindex("Examples:"):]
        examples = [l for l in tail.splitlines()[1:] if l.strip().startswith("npu-analyse ")]
        assert 2 <= len(examples) <= 4, (cmd, tail)
        assert [l for l in tail.splitlines()[1:] if l.strip()] == examples  # the help ends with them
    text = run("script", "--help").output
    assert "Exit codes: 0 ok, 1 findings at or above --fail-on, 2 usage" in text


def test_help_examples_are_real_commands():
    """Every example line parses: its command and options exist."""
    for cmd in [[name] for name in sorted(cli.commands) if name != "probe"]:
        text = run(*cmd, "--help").output
        for line in text[text.rindex("Examples:"):].splitlines()[1:]:
            line = line.split("#")[0].split("|")[0].strip()
            if not line.startswith("npu-analyse "):
                continue
            args = line.split()[1:]
            ctx = cli.make_context("npu-analyse", list(args), resilient_parsing=True)
            sub = cli.get_command(ctx, args[0])
            assert sub is not None
            sub.make_context(args[0], args[1:])  # raises on an unknown option


def test_colour_rules(proj, tmp_path, monkeypatch):
    from analyse.cli import use_color

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    assert use_color(None, Tty()) is True and use_color(None, io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(None, Tty()) is False and use_color(True, Tty()) is True
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_color(None, io.StringIO()) is True and use_color(False, io.StringIO()) is False
    r = run("script", proj, "-o", tmp_path / "o", "--format", "json", env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[" in r.stdout
    r = run("script", proj, "-o", tmp_path / "o", "--format", "json", env={"FORCE_COLOR": "", "NO_COLOR": ""})
    assert "\x1b[" not in r.stdout
    r = run("script", proj, "-o", tmp_path / "o", "--format", "json", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in r.stdout


def test_file_names_and_snippets_are_escaped_for_the_terminal(tmp_path):
    p = tmp_path / "p"
    p.mkdir()
    evil = "x\x1b]0;owned\x07\u202e.py"
    (p / evil).write_text("import torch\nx = torch.zeros(1).cuda()  # \x1b[31m\n")
    r = run("script", p, "-o", tmp_path / "o", "--format", "json,text")
    assert r.exit_code == 0
    for text in (r.stdout, r.stderr, (tmp_path / "o" / "report.txt").read_text()):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "x\\x1b]0;owned\\x07\\u202e.py:2" in r.stdout
    assert (tmp_path / "o" / "report.txt").read_text().startswith(str(p / "x\\x1b]0;owned\\x07\\u202e.py").replace("\\\\", "\\"))
    # the JSON report keeps the real name
    assert report_of(tmp_path / "o")["findings"][0]["path"] == evil


def test_termsafe():
    from analyse.termsafe import safe

    assert safe("a\x1b[2Jb\tc\u2028\x9b") == "a\\x1b[2Jb\\x09c\\u2028\\x9b"
    assert safe("line1\nline2", keep_newlines=True) == "line1\nline2"
    assert safe("ok: 中文 é") == "ok: 中文 é"


# ------------------------------------------------------------------ atomic writes

def test_reports_are_replaced_atomically(proj, tmp_path, monkeypatch):
    import analyse.render as render

    out = tmp_path / "o"
    assert run("script", proj, "-o", out, "-q", "--format", "json,csv").exit_code == 0
    old = (out / "report.json").read_text()

    def broken(report, options):
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(render._RENDERERS, "csv", broken)
    (proj / "train.py").write_text(TRAIN + "y = torch.zeros(1).cuda()\n")
    r = run("script", proj, "-o", out, "-q", "--format", "json,csv")
    assert r.exit_code == 3
    assert (out / "report.json").read_text() == old  # nothing replaced, no temporary file left
    assert sorted(p.name for p in out.iterdir()) == ["report.csv", "report.json"]


# ------------------------------------------------------------------ integrations

def test_pre_commit_hook_definition():
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "npu-analyse"]
    assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter"]   # notebooks too
    assert hook["entry"].startswith("npu-analyse script ")
    assert "--fail-on" not in hook["entry"]  # the project's configuration decides (args may add it)


def test_action_definition():
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"path", "fail-on", "mode", "upload-sarif"} <= set(action["inputs"])
    steps = action["runs"]["steps"]
    run_step = next(s for s in steps if s.get("id") == "run")
    assert "--format \"sarif" in run_step["run"] and "--fail-on" in run_step["run"]
    assert any(s.get("uses", "").startswith("github/codeql-action/upload-sarif") for s in steps)


def test_docs_ci_has_the_three_integrations():
    text = (ROOT / "docs" / "ci.md").read_text()
    for needle in ("upload-sarif", "codequality:", "id: npu-analyse", "--fail-on", "--write-baseline",
                   "npu-analyse: ignore[", "[tool.npu-analyse]"):
        assert needle in text
    readme = (ROOT / "README.md").read_text()
    assert "docs/ci.md" in readme and "`3` the analysis could not run" in readme


def test_pre_commit_try_repo(tmp_path):
    exe = shutil.which("pre-commit") or (shutil.which("pre-commit", path=str(Path(sys.executable).parent)))
    if exe is None:
        pytest.skip("pre-commit is not installed")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    # try-repo needs a git repository holding the hook files: a throwaway clone of this working tree's files
    repo = tmp_path / "tool"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "npu-analyse-report",
                                                               ".pytest_cache", "node_modules"))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "tool"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env, capture_output=True)
    user = tmp_path / "user"
    user.mkdir()
    (user / "train.py").write_text(TRAIN)
    (user / "pyproject.toml").write_text('[tool.npu-analyse]\nfail-on = "manual"\n')
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(cmd, cwd=user, check=True, env=env, capture_output=True)
    proc = subprocess.run([exe, "try-repo", str(repo), "npu-analyse", "--files", "train.py"], cwd=user, env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 and ("Could not find a version" in out or "Failed to establish a new connection" in out
                                 or "No matching distribution" in out):
        pytest.skip("pre-commit could not install the hook's dependencies (no access to PyPI)")
    assert proc.returncode == 1, out  # the config's fail-on = "manual" gates
    assert "train.py:5:7: NPU103 [manual]" in out
    (user / "pyproject.toml").write_text('[tool.npu-analyse]\nfail-on = "blocker"\n')
    proc = subprocess.run([exe, "try-repo", str(repo), "npu-analyse", "--files", "train.py"], cwd=user, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_show_config_is_valid_toml(proj):
    from analyse.config import tomllib

    write_config(proj, 'per-file-ignores = { "tests/*" = ["NPU002"] }\nroles = { "tools/*" = "tool" }\n')
    r = run("script", proj, "--show-config", "--ignore", "NPU1")
    table = tomllib.loads(r.stdout)["tool"]["npu-analyse"]
    assert table["ignore"] == ["NPU1"] and table["per-file-ignores"] == {"tests/*": ["NPU002"]}
    assert table["roles"] == {"tools/*": "tool"} and "torch-version" not in table


def test_several_files_with_the_same_name_keep_their_own_suppressions(tmp_path):
    for d, src in (("a", "import torch\nx = torch.zeros(1).cuda()  # npu-analyse: ignore[NPU002]\n"),
                   ("b", "import torch\nx = torch.zeros(1).cuda()\n")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "utils.py").write_text(src)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = run("script", "a/utils.py", "b/utils.py", "--format", "text", "-o", "-", "-q", "--no-cache")
    finally:
        os.chdir(cwd)
    assert [l.split(" ")[0] for l in r.stdout.splitlines()] == ["b/utils.py:2:5:"]


def test_thirdparty_honours_config(tmp_path):
    lib = tmp_path / "lib"
    (lib / "mylib" / "vendored").mkdir(parents=True)
    (lib / "mylib" / "__init__.py").write_text("")
    (lib / "mylib" / "ops.py").write_text("import torch\n\ndef f(x):\n    torch.cuda.synchronize()\n"
                                          "    return x.cuda()  # npu-analyse: ignore[NPU002]\n")
    (lib / "mylib" / "vendored" / "v.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    (lib / ".npu-analyse.toml").write_text('exclude = ["vendored"]\nfail-on = "auto"\n')
    out = tmp_path / "o"
    r = run("thirdparty", lib / "mylib", "-o", out, "-q", "--format", "json")
    assert r.exit_code == 1
    report = report_of(out)
    assert {(f["path"], f["line"], f["code"]) for f in report["findings"]} == {("ops.py", 4, "NPU001")}
    assert report["summary"]["suppressed"] == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_baseline_or_config_never_hangs(proj, tmp_path):
    os.mkfifo(proj / "base.json")
    write_config(proj, 'baseline = "base.json"\n')
    r = run("script", proj, "-o", tmp_path / "o")
    assert r.exit_code == 2 and "not a regular file" in r.stderr
    (proj / "pyproject.toml").unlink()
    os.mkfifo(tmp_path / "cfg.toml")
    r = run("script", proj, "-o", tmp_path / "o", "--config", tmp_path / "cfg.toml")
    assert r.exit_code == 2 and "not a regular file" in r.stderr


def test_probe_honours_130_and_one_line_usage_errors(tmp_path):
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (the probe needs it before it runs anything)")
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\n")
    proc = _interrupt(tmp_path, "probe.runner", "run_probe",
                      ["probe", "--ops", str(ops), "--device", "cpu", "-o", str(tmp_path / "p")])
    assert proc.returncode == 130, proc.stderr
    assert not (tmp_path / "p" / "probe.json").exists()
    proc = subprocess.run([sys.executable, "-m", "analyse", "probe", "--device", "tpu", "--ops", str(ops)],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
