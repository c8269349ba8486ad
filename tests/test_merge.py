"""One finding per place and API (#23 point 1): the merge at the end of the pipeline."""

from __future__ import annotations

from analyse.findings import Finding, merge_same_place, restrict, unmerge
from tests.helpers import analyse_source


def _f(code, severity, category, api="torch.unique_consecutive", line=3, message="m", replacement=None):
    return Finding(code=code, category=category, severity=severity, path="a.py", line=line, api=api,
                   message=message, replacement=replacement)


def test_same_line_and_api_fold_into_the_worst_with_every_code():
    a = _f("NPU202", "info", "unsupported-api", api="torch.optim.AdamW", message="limited: fused=True lacks grad_scale.")
    b = _f("NPU710", "advice", "affinity", api="torch.optim.AdamW", message="fused twin NpuFusedAdamW.",
           replacement="torch_npu.optim.NpuFusedAdamW(params)")
    other_line = _f("NPU202", "info", "unsupported-api", api="torch.optim.AdamW", line=4)
    out = merge_same_place([a, b, other_line])
    assert len(out) == 2
    m = out[0]
    assert (m.code, m.severity) == ("NPU710", "advice")
    assert m.message == "fused twin NpuFusedAdamW. Also (NPU202): limited: fused=True lacks grad_scale."
    assert m.replacement == "torch_npu.optim.NpuFusedAdamW(params)"
    d = m.to_dict()
    assert d["codes"] == ["NPU202", "NPU710"]
    assert d["also"][0]["code"] == "NPU202" and "superseded" not in d["also"][0]
    assert "codes" not in out[1].to_dict()


def test_limitation_wins_over_advice_that_assumes_the_op_runs():
    u = _f("NPU201", "manual", "unsupported-api", message="not supported on Ascend NPU.",
           replacement="torch.unique(x, sorted=True) on sorted input")
    d = _f("NPU601", "advice", "dynamic-shape", message="On an Ascend NPU the op runs, but the host must wait.",
           replacement="compute run boundaries as a mask")
    [m] = merge_same_place([d, u])
    assert m.code == "NPU201"
    assert "the op runs" not in m.message
    assert m.replacement == "torch.unique(x, sorted=True) on sorted input"
    assert m.to_dict()["also"][0]["superseded"].startswith("NPU601 assumes")
    assert m.to_dict()["codes"] == ["NPU201", "NPU601"]


def test_restrict_keeps_the_selected_codes_facts():
    a = _f("NPU202", "info", "unsupported-api", api="torch.optim.AdamW", message="limited.")
    b = _f("NPU710", "advice", "affinity", api="torch.optim.AdamW", message="fused twin.")
    [m] = merge_same_place([a, b])
    assert [p.code for p in unmerge(m)] == ["NPU710", "NPU202"]
    only = restrict(m, lambda c: c != "NPU710")
    assert (only.code, only.message, only.also) == ("NPU202", "limited.", ())
    assert restrict(m, lambda c: False) is None
    assert restrict(m, lambda c: True) is m


def test_pipeline_reports_one_finding_per_place(tmp_path, kb):
    src = (
        "import torch\n"
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, batch_size=8)\n"
        "def f(x):\n"
        "    return torch.unique_consecutive(x)\n"
    )
    res = analyse_source(tmp_path, src, kb)
    places = [(f.path, f.line, f.api) for f in res.findings]
    assert len(places) == len(set(places))
    loader = [f for f in res.findings if f.line == 3]
    assert len(loader) == 1
    assert "num_workers to a value greater than 0" not in loader[0].message


def test_suppressing_one_code_of_a_folded_finding_keeps_the_others(tmp_path):
    from click.testing import CliRunner

    from analyse.cli import cli

    (tmp_path / "t.py").write_text("import torch\nfrom torch.utils.data import DataLoader\n"
                                   "loader = DataLoader(ds, batch_size=8)  # npu-analyse: ignore[NPU802]\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["script", str(tmp_path / "t.py"), "-o", str(out), "-q", "--format", "json",
                                 "--torch-version", "2.13.0"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    import json

    report = json.loads((out / "report.json").read_text())
    [f] = [f for f in report["findings"] if f["line"] == 3]
    assert f["code"] == "NPU202" and "codes" not in f  # the DataLoader limitation stays, the advice is suppressed
    r = CliRunner().invoke(cli, ["script", str(tmp_path / "t.py"), "-o", str(out), "-q", "--format", "json",
                                 "--torch-version", "2.13.0", "--ignore", "NPU202"], catch_exceptions=False)
    report = json.loads((out / "report.json").read_text())
    assert [f["line"] for f in report["findings"] if f["line"] == 3] == []
