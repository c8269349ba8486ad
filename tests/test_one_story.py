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
state = torch.zeros(3, device=0)


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
    r = run("script", repo, "-o", out, "--format", "json,sarif,html,github,junit,gitlab", "-q", "--no-cache")
    assert r.exit_code == 0, r.output
    return json.loads((out / "report.json").read_text()), out


def test_the_fixture_has_an_off_path_blocker_and_a_counted_manual_change(reports):
    report, _out = reports
    rows = {(f["path"], f["line"], f["code"]): (f["severity"], f["counted"]) for f in report["findings"]}
    assert rows[("tools/bench.py", 3, "NPU001")] == ("blocker", False)
    assert rows[("tools/bench.py", 4, "NPU008")] == ("manual", False)
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
    assert sorted(off) == ["NPU001", "NPU008"]
    for r in off.values():
        assert r["level"] == "note"
        assert r["properties"]["off_path"] == {"reason": "role",
                                               "why": "in tool code, which does not count for the product"}
        assert r["message"]["text"].endswith("Not counted: in tool code, which does not count for the product.")
    assert all(r["properties"]["counted"] is True for r in results if r["ruleId"] not in off)


def test_gitlab_code_quality_rates_off_path_findings_info(reports):
    report, out = reports
    issues = {(i["location"]["path"].rsplit("repo/", 1)[-1], i["location"]["lines"]["begin"]): i
              for i in json.loads((out / "report.gitlab.json").read_text())}
    assert issues[("tools/bench.py", 3)]["severity"] == "info"   # an off-path blocker
    assert issues[("tools/bench.py", 3)]["description"].endswith(
        "Not counted: in tool code, which does not count for the product.")
    assert issues[("train.py", 7)]["severity"] == "major"   # the counted manual change


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


# --------------------------------------------------------------------------- every count, in every view

def _html_why_table(html: str) -> dict:
    table = html.split('id="why-not-counted"', 1)[1].split("</table>", 1)[0]
    return {m.group(1): int(m.group(2).replace(",", "")) for m in
            re.finditer(r'<tr data-reason="([\w-]+)">.*?<td class="num">(?:<b>)?([\d,]+)', table, re.S)}


def _terminal_why_table(text: str) -> dict:
    from analyse.render.story import REASON_LABELS

    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("Why not counted:"))
    out = {}
    for ln in lines[start + 2:]:
        if not ln.startswith("  "):
            break
        label, _, num = ln.strip().rpartition(" ")
        label = label.strip()
        key = "total" if label == "total" else next(k for k, v in REASON_LABELS.items() if v == label)
        out[key] = int(num.replace(",", ""))
    return out


def test_terminal_json_and_html_tell_the_same_numbers(repo, tmp_path):
    out = tmp_path / "o"
    r = run("script", repo, "-o", out, "--format", "json,html", "--no-cache", "--no-color", env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    html = (out / "report.html").read_text()
    text = r.output
    findings = report["findings"]
    # JSON: the summary's reasons add up, and they are the findings' own reasons
    off = report["summary"]["off_path"]
    per_finding = {}
    for f in findings:
        if not f["counted"]:
            per_finding[f["off_path"]["reason"]] = per_finding.get(f["off_path"]["reason"], 0) + 1
    assert off["by_reason"] == per_finding == {"role": 2}
    assert off["count"] == sum(off["by_reason"].values()) == 2
    listed, counted = len(findings), sum(1 for f in findings if f["counted"])
    assert (listed, counted) == (7, 5)   # the advice grouped across two files is one finding
    # the terminal and the HTML: the same table, the same totals
    want = {**off["by_reason"], "total": off["count"]}
    assert _terminal_why_table(text) == want
    assert _html_why_table(html) == want
    assert f"Why not counted: 2 of {listed} listed finding(s)" in text
    assert f"Findings: {listed} listed ({counted} counted, 2 not counted)" in text
    assert f"Why not counted: 2 of {listed} listed findings" in html
    assert f"<b>Counted:</b> {counted} of {listed} listed findings" in html
    # the verdict's counts: terminal headline, HTML numbers, JSON
    v = report["summary"]["verdict"]
    assert (v["blockers"], v["manual_changes"], v["auto_migratable"]) == (0, 1, 2)
    assert "Verdict: LOW effort — 0 blockers, 1 manual, 2 automatic counted" in text
    nums = re.findall(r'<span class="v">(\d+)</span><span class="k">(blockers|manual|automatic) counted', html)
    assert nums == [("0", "blockers"), ("1", "manual"), ("2", "automatic")]
    # by severity and by category: JSON summary, terminal lines, HTML cards and category picture
    by_sev, by_cat = report["summary"]["by_severity"], report["summary"]["by_category"]
    assert by_sev == {"blocker": 1, "manual": 2, "auto": 2, "advice": 2}
    assert "  by severity: " + ", ".join(f"{k} {v}" for k, v in by_sev.items()) in text
    assert "  by category: " + ", ".join(f"{k} {v}" for k, v in by_cat.items()) in text
    sev_cards = html.split('id="sev-cards"', 1)[1].split("</div>\n    </div>", 1)[0]
    cards = dict((k, int(v)) for v, k in re.findall(r'<span class="v">(\d+)</span><span class="k">([^<]+)</span>',
                                                     sev_cards))
    assert cards == {"Blocker": 1, "Manual change": 2, "Automatic": 2, "Advice": 2, "Info": 0}
    cats = dict(re.findall(r'<g class="bar-row" data-name="([^"]+)" data-total="(\d+)"',
                           html.split('id="chart-categories"', 1)[1].split("</svg>", 1)[0]))
    assert {k: int(v) for k, v in cats.items()} == by_cat
    # the pictures draw the same numbers: counted against off the path, files, entry points
    share = html.split('id="chart-share"', 1)[1].split("</svg>", 1)[0]
    assert re.findall(r'data-value="(\d+)"', share) == [str(counted), "2"]
    files = dict(re.findall(r'<g class="bar-row" data-name="([^"]+)" data-total="(\d+)"',
                            html.split('id="chart-files"', 1)[1].split("</svg>", 1)[0]))
    assert files == {"train.py": "5", "pkg/data.py": "1", "tools/bench.py": "2"}
    eps = dict(re.findall(r'<g class="bar-row" data-name="([^"]+)" data-total="(\d+)"',
                          html.split('id="chart-entry-points"', 1)[1].split("</svg>", 1)[0]))
    assert eps == {"tools/bench.py (blocked)": "2", "train.py (low)": "3"}


def test_min_severity_shortens_the_listing_but_not_the_numbers(repo, tmp_path):
    out = tmp_path / "o"
    r = run("script", repo, "-o", out, "--format", "json,html", "--no-cache", "--no-color", "--min-severity", "manual",
            env={"COLUMNS": "120"})
    report = json.loads((out / "report.json").read_text())
    html = (out / "report.html").read_text()
    assert report["summary"]["min_severity"] == {"level": "manual", "hidden": 4}
    assert "Findings: 7 listed (5 counted, 2 not counted)" in r.output
    assert "  shown below: 3 at or above manual; 4 below it not shown (--min-severity)" in r.output
    assert _terminal_why_table(r.output) == _html_why_table(html) == {"role": 2, "total": 2}
    panel = html.split('id="standing"', 1)[1].split("</table>", 1)[0]
    assert re.search(r'<tr class="counted">.*?<td class="num"><b>5</b>', panel, re.S)
    assert re.search(r'<tr class="offpath">.*?<td class="num"><b>2</b>', panel, re.S)


def test_the_verdict_is_a_headline_and_a_short_list(repo, tmp_path):
    r = run("script", repo, "-o", tmp_path / "o", "--format", "json", "--no-cache", "--no-color",
            env={"COLUMNS": "200"})
    lines = r.output.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("Verdict:"))
    assert lines[i + 1] == "  What drives it: torch.nn.DataParallel (manual, 1 place(s)); also torch.Tensor.cuda, " \
                           "torch.nn.Module.cuda"
    assert lines[i + 2] == "  Where: train.py:7"
    assert lines[i + 3].startswith("  Do first: torch.nn.parallel.DistributedDataParallel(")
    assert lines[i + 4] == "  Counted: 5 of 7 listed finding(s), over 1 product entry point(s)"
    # the prose explanation: -v only
    assert "transfer_to_npu" not in "\n".join(lines[i:i + 6])
    rv = run("script", repo, "-o", tmp_path / "o", "--format", "json", "--no-cache", "--no-color", "-v",
             env={"COLUMNS": "200"})
    assert "Verdict over 1 product entry point(s)" in " ".join(rv.output.split())


def test_a_cached_run_shows_the_real_analysis_time_and_says_so(repo, tmp_path):
    cache = tmp_path / "cache"
    wide = {"COLUMNS": "200"}
    first = run("script", repo, "-o", tmp_path / "a", "--format", "json,html", "--cache-dir", cache, "--no-color",
                env=wide)
    second = run("script", repo, "-o", tmp_path / "b", "--format", "json,html", "--cache-dir", cache, "--no-color",
                 env=wide)
    a = json.loads((tmp_path / "a" / "report.json").read_text())["summary"]
    b = json.loads((tmp_path / "b" / "report.json").read_text())["summary"]
    assert "from_cache" not in a and b["from_cache"] is True
    assert b["analysis_s"] == a["analysis_s"] == a["duration_s"] > 0
    from analyse.render.story import seconds

    took = seconds(a["analysis_s"])
    assert f"analysed in {took}" in first.output
    assert re.search(r"from the cache in [\d.]+ s \(the analysis took " + re.escape(took) + r"\)", second.output)
    html = (tmp_path / "b" / "report.html").read_text()
    assert re.search(r'<span id="timing" data-from-cache="yes"[^>]*>from the cache in [\d.]+ s \(the analysis '
                     r'took ' + re.escape(took) + r"\)</span>", html)


def test_a_zero_width_terminal_gets_80_columns(repo, tmp_path):
    """A fresh pseudo-terminal is 0x0 (docker run -t, script): the summary is 80 columns wide, not 40."""
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["NO_COLOR"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "analyse", "script", str(repo), "-o", str(tmp_path / "o"),
                             "--format", "json", "--no-cache"], stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r[^\n]*\r|\r", "", text)   # the progress display, if any
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("  json")]
    assert proc.returncode == 0, text
    assert max(len(ln) for ln in lines) == 80, text
    from analyse.render.terminal import terminal_width

    class ZeroTTY:
        def fileno(self):
            return slave_fd

    m2, slave_fd = pty.openpty()
    try:
        old = os.environ.pop("COLUMNS", None)
        assert terminal_width(ZeroTTY()) == 80
    finally:
        if old is not None:
            os.environ["COLUMNS"] = old
        os.close(m2)
        os.close(slave_fd)


# --------------------------------------------------------------------------- thirdparty: one headline

LIB = {
    "__init__.py": "from .engine import initialize, fused_gelu\n",
    "accel/__init__.py": "",
    "accel/npu_accelerator.py": "import torch_npu\n\n\nclass NPU_Accelerator(Accelerator):\n"
                                "    def device_name(self):\n        return 'npu'\n",
    "engine.py": "import torch\n\n\ndef initialize(model):\n    return model.to('cuda')\n\n\n"
                 "def fused_gelu(x):\n"
                 "    fn = torch.cuda.jiterator._create_jit_fn('template <typename T> T g(T x) { return x; }')\n"
                 "    return fn(x)\n\n\ndef helper(x):\n    return x + 1\n",
}


@pytest.fixture
def lib(tmp_path):
    p = tmp_path / "npulib"
    for rel, text in LIB.items():
        (p / rel).parent.mkdir(parents=True, exist_ok=True)
        (p / rel).write_text(text)
    return p


def test_thirdparty_leads_with_the_library_verdict(lib, tmp_path):
    out = tmp_path / "o"
    r = run("thirdparty", lib, "-o", out, "--format", "json,html", "--no-cache", "--no-color",
            env={"COLUMNS": "120"})
    report = json.loads((out / "report.json").read_text())
    libv = report["thirdparty"]["library"]
    assert libv["npu_support"]["level"] == "native"
    assert report["summary"]["verdict"]["effort"] == "blocked"   # its own code, ported by hand, would be
    lines = r.output.splitlines()
    assert lines[1] == "Library: npulib has its own NPU support"
    assert "BLOCKED" not in r.output and "Verdict:" not in r.output
    assert "The library has its own NPU support; blocked in part: 1 of 4 functions" in " ".join(r.output.split())
    assert "  Functions affected: 2 of 4 (50%); by status: unsupported 1, needs-migration 1" in lines
    i = lines.index("  What blocks (1 function(s) reach CUDA-only code):")
    assert lines[i + 1] == "    npulib.engine.fused_gelu (engine.py:8) — torch.cuda.jiterator._create_jit_fn"
    assert "  Findings in its code: 1 blocker, 0 manual, 1 automatic counted (2 of 2 listed)" in lines
    # the analysis's own statistics: -v only
    assert "call graph" not in r.output and "timings" not in r.output
    rv = run("thirdparty", lib, "-o", out, "--format", "json", "--no-cache", "--no-color", "-v",
             env={"COLUMNS": "120"})
    flat = " ".join(rv.output.split())
    assert "call graph nodes" in flat and "timings parse_s" in flat
    # the HTML: the same headline, and the functions by status in a picture
    html = (out / "report.html").read_text()
    assert '<div class="headline" id="headline">npulib has its own NPU support</div>' in html
    assert "<title>NPU migration report — npulib has its own NPU support" in html
    bars = dict(re.findall(r'<g class="bar-row" data-name="([^"]+)" data-total="(\d+)"',
                           html.split('id="chart-functions"', 1)[1].split("</svg>", 1)[0]))
    assert bars == {"unsupported": "1", "needs-migration": "1"}


# --------------------------------------------------------------------------- the default report folder

def test_the_default_report_folder_never_lands_in_the_analysed_repository(repo, tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.chdir(repo)
    r = run("script", ".", "--format", "json", "--no-cache", "--no-color")
    assert r.exit_code == 0, r.output
    assert not (repo / "npu-analyse-report").exists()
    (written,) = list((state / "npu-analyse" / "reports").glob("repo-*/report.json"))
    assert str(written) in " ".join(r.output.split())   # the terminal says where it went
    # from a sub-folder of the analysed folder too
    monkeypatch.chdir(repo / "pkg")
    assert run("script", "..", "--format", "json", "-q", "--no-cache").exit_code == 0
    assert not (repo / "pkg" / "npu-analyse-report").exists()
    # asked for (-o): where asked
    assert run("script", ".", "--format", "json", "-q", "--no-cache", "-o", "npu-analyse-report").exit_code == 0
    assert (repo / "pkg" / "npu-analyse-report" / "report.json").is_file()
    # from outside the analysed folder: ./npu-analyse-report, as before
    monkeypatch.chdir(tmp_path)
    assert run("script", repo, "--format", "json", "-q", "--no-cache").exit_code == 0
    assert (tmp_path / "npu-analyse-report" / "report.json").is_file()
