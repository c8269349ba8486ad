"""--probe-results overlays the knowledge base in script mode (no torch needed)."""

import json

from click.testing import CliRunner

from analyse.cli import cli

SCRIPT = """\
import torch
a = torch.special.zeta(x, q)
b = torch.special.erfcx(x)
c = torch.special.i1e(x)
d = torch.heaviside(x, v)
e = torch.matmul(x, y)
"""


def probe_doc(results):
    return {
        "schema_version": "1", "tool": {"name": "npu-analyse", "version": "0"}, "device": "npu:0",
        "environment": {"torch": "2.8.0", "torch_npu": "2.8.0", "device_name": "Ascend910B", "python": "3.11"},
        "results": results, "summary": {"by_status": {}},
    }


def run(tmp_path, *extra):
    (tmp_path / "train.py").write_text(SCRIPT)
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["script", str(tmp_path / "train.py"), "-o", str(out), "-q", "--torch-version", "2.8.0",
                                 "--format", "json", *extra], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    # grouped advice/info (one rule repeated in a file) lists its places in `occurrences`; one finding per place and
    # API (#23) folds the facts of other rules on the same call into `also`
    found = {}
    for f in report["findings"]:
        for o in (f.get("occurrences") or [f]):
            place = {**f, **o}
            found[(place["line"], f["code"])] = place
            for a in f.get("also", ()):
                found.setdefault((place["line"], a["code"]), {**place, **a})
    return found, report


def test_without_probe_unknowns_are_info(tmp_path):
    f, report = run(tmp_path)
    assert f[(2, "NPU301")]["severity"] == "info"
    assert f[(3, "NPU301")]["api"] == "torch.special.erfcx"
    assert f[(5, "NPU201")]["api"] == "torch.heaviside"
    assert {u["api"] for u in report["summary"]["unknown_apis"]} >= {"torch.special.zeta", "torch.special.erfcx"}


def test_probe_results_change_the_report(tmp_path):
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps(probe_doc([
        {"op": "torch.special.zeta", "dtype": "float32", "status": "pass", "samples": 3},
        {"op": "torch.special.erfcx", "dtype": "float32", "status": "error", "samples": 1,
         "message": "RuntimeError: erfcx not implemented for NPU"},
        {"op": "torch.special.i1e", "dtype": "float32", "status": "fallback", "samples": 2,
         "message": "CAUTION: The operator 'aten::special_i1e' is not currently supported on the NPU backend"},
        {"op": "torch.heaviside", "dtype": "float32", "status": "pass", "samples": 2},
    ])))
    f, report = run(tmp_path, "--probe-results", str(probe))
    assert not any(line == 2 for line, _ in f)                      # passed: no longer unknown
    assert f[(3, "NPU302")]["category"] == "unsupported-api"      # errored: unsupported with the error text
    assert f[(3, "NPU302")]["evidence"] == "probed"
    assert "erfcx not implemented" in f[(3, "NPU302")]["message"]
    assert f[(4, "NPU303")]["category"] == "performance-advice"   # fallback: performance advice
    assert not any(line == 5 for line, _ in f)                      # documented unsupported but passed on the device
    assert "torch.special.zeta" not in {u["api"] for u in report["summary"]["unknown_apis"]}


def test_bad_probe_file_is_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    (tmp_path / "t.py").write_text("import torch\n")
    r = CliRunner().invoke(cli, ["script", str(tmp_path / "t.py"), "--probe-results", str(bad), "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "not valid JSON" in r.output
