"""One story in every output (issue 32): the gate, SARIF, the terminal and the HTML count the same findings.

The fixture is a small project laid out like a training repository: a program (train.py) that the verdict
counts, a library module it imports (pkg/data.py), and a tool script (tools/bench.py) whose blocker and manual
change are listed off the path (tool code does not count for the product)."""

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyse.cli import cli

TRAIN = """\
import torch
from pkg.data import make_loader


def main():
    model = torch.nn.Linear(2, 2).cuda()
    net = torch.nn.DataParallel(model)
    loader = make_loader()
    extra = torch.utils.data.DataLoader(list(range(8)), batch_size=2)
    for x in loader:
        x = x.cuda()
        net(x).sum().backward()


if __name__ == "__main__":
    main()
"""
DATA = """\
import torch


def make_loader():
    return torch.utils.data.DataLoader(list(range(8)), batch_size=2)
"""
BENCH = """\
import torch

fn = torch.cuda.jiterator._create_jit_fn("template <typename T> T f(T x) { return x; }")
state = torch.load("ckpt.pt")


if __name__ == "__main__":
    print(fn)
"""


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


@pytest.fixture
def repo(tmp_path):
    p = tmp_path / "repo"
    (p / "pkg").mkdir(parents=True)
    (p / "tools").mkdir()
    (p / "train.py").write_text(TRAIN)
    (p / "pkg" / "__init__.py").write_text("")
    (p / "pkg" / "data.py").write_text(DATA)
    (p / "tools" / "bench.py").write_text(BENCH)
    return p


@pytest.fixture
def reports(repo, tmp_path):
    out = tmp_path / "out"
    r = run("script", repo, "-o", out, "--format", "json,sarif,html,github,junit", "-q", "--no-cache")
    assert r.exit_code == 0, r.output
    return json.loads((out / "report.json").read_text()), out


def test_the_fixture_has_an_off_path_blocker_and_a_counted_manual_change(reports):
    report, _out = reports
    rows = {(f["path"], f["line"], f["code"]): (f["severity"], f["counted"]) for f in report["findings"]}
    assert rows[("tools/bench.py", 3, "NPU001")] == ("blocker", False)
    assert rows[("tools/bench.py", 4, "NPU009")] == ("manual", False)
    assert rows[("train.py", 7, "NPU103")] == ("manual", True)
    assert report["summary"]["verdict"]["blockers"] == 0


def test_fail_on_gates_on_counted_findings_by_default(repo, tmp_path):
    out = tmp_path / "o"
    # the only blocker is off the path: the verdict counts none, and neither does the gate
    assert run("script", repo, "-o", out, "-q", "--fail-on", "blocker", "--no-cache").exit_code == 0
    r = run("script", repo, "-o", out, "--format", "json", "--fail-on", "manual", "--no-cache")
    assert r.exit_code == 1
    assert "npu-analyse: 1 counted finding(s) at or above 'manual' (--fail-on manual)" in r.stderr
    # every listed finding, on request (option or config key)
    r = run("script", repo, "-o", out, "-q", "--fail-on", "blocker", "--fail-on-scope", "listed", "--no-cache")
    assert r.exit_code == 1
    (repo / ".npu-analyse.toml").write_text('fail-on = "manual"\nfail-on-scope = "listed"\n')
    r = run("script", repo, "-o", out, "--format", "json", "--no-cache")
    assert r.exit_code == 1
    assert "npu-analyse: 3 listed finding(s) at or above 'manual' (--fail-on manual, --fail-on-scope listed)" in r.stderr
    (repo / ".npu-analyse.toml").write_text('fail-on-scope = "everything"\n')
    r = run("script", repo, "-o", out, "-q", "--no-cache")
    assert r.exit_code == 2 and "fail-on-scope" in r.stderr


def test_sarif_errors_are_the_counted_blockers_and_manual_changes(reports):
    report, out = reports
    sarif = json.loads((out / "report.sarif").read_text())
    results = sarif["runs"][0]["results"]
    errors = sorted((r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("repo/", 1)[-1],
                     r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results
                    if r["level"] == "error")
    counted = sorted((f["path"], f["line"]) for f in report["findings"]
                     if f["counted"] and f["severity"] in ("blocker", "manual"))
    assert errors == counted == [("train.py", 7)]
    off = {r["ruleId"]: r for r in results if r["properties"]["counted"] is False}
    assert sorted(off) == ["NPU001", "NPU009"]
    for r in off.values():
        assert r["level"] == "note"
        assert r["properties"]["off_path"] == {"reason": "role",
                                               "why": "in tool code, which does not count for the product"}
        assert r["message"]["text"].endswith("Not counted: in tool code, which does not count for the product.")
    assert all(r["properties"]["counted"] is True for r in results if r["ruleId"] not in off)


def test_sarif_gives_grouped_advice_one_result_in_every_file(reports):
    report, out = reports
    (g,) = [f for f in report["findings"] if f["code"] == "NPU802"]
    assert [loc["path"] for loc in g["locations"]] == ["pkg/data.py", "train.py"]
    sarif = json.loads((out / "report.sarif").read_text())
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "NPU802"]
    where = [(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("repo/", 1)[-1],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results]
    assert where == [("pkg/data.py", 5), ("train.py", 9)]
    # the other file's place stays a related location of each
    rel = [[(x["physicalLocation"]["artifactLocation"]["uri"].rsplit("repo/", 1)[-1],
             x["physicalLocation"]["region"]["startLine"]) for x in r["relatedLocations"]] for r in results]
    assert rel == [[("train.py", 9)], [("pkg/data.py", 5)]]
    assert len({r["partialFingerprints"]["npuAnalyseFindingId/v1"] for r in results}) == 2


def test_github_annotations_and_junit_follow_the_gate(repo, tmp_path):
    out = tmp_path / "o"
    r = run("script", repo, "-o", out, "-q", "--format", "github,junit", "--fail-on", "manual", "--no-cache")
    assert r.exit_code == 1
    lines = (out / "report.github.txt").read_text().splitlines()
    errors = [ln for ln in lines if ln.startswith("::error ")]
    assert len(errors) == 1 and "train.py,line=7" in errors[0]
    assert all(ln.startswith("::notice ") for ln in lines if "bench.py" in ln)
    junit = (out / "report.junit.xml").read_text()
    assert junit.count("<failure ") == 1 and "1 finding(s) at or above manual" in junit


def test_help_uri_is_a_public_address_or_absent(reports):
    report, _out = reports
    from analyse.render import render_format
    from analyse.render.common import RenderOptions

    rules = [{"code": "NPU103", "name": "data-parallel", "severity": "manual", "category": "distributed"}]
    for env, want in (("", None), ("/venv/lib/python3.11/site-packages/analyse/_docs/rules.md", None),
                      ("file:///venv/analyse/_docs/rules.md", None),
                      ("https://example.org/npu-analyse/blob/v1/docs/rules.md",
                       "https://example.org/npu-analyse/blob/v1/docs/rules.md#npu103-data-parallel")):
        old = os.environ.get("NPU_ANALYSE_DOCS_URL")
        os.environ["NPU_ANALYSE_DOCS_URL"] = env
        try:
            doc = json.loads(render_format(report, "sarif", options=RenderOptions(rules=rules)))
        finally:
            if old is None:
                del os.environ["NPU_ANALYSE_DOCS_URL"]
            else:
                os.environ["NPU_ANALYSE_DOCS_URL"] = old
        rule = next(r for r in doc["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "NPU103")
        assert rule.get("helpUri") == want
