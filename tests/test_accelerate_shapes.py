"""Example scripts shaped like huggingface/accelerate's examples/ (#23 done-when): the boilerplate of every script
(two or three DataLoaders, batches moved to ``accelerator.device``, an AdamW, ``mixed_precision=args...``) gives
one finding per rule and file, nothing on a copy accelerate already makes, and one finding per line.

The fixture (tests/fixtures/accelerate_examples) is written for this test, modelled on accelerate 16cb6eb
examples/nlp_example.py, complete_cv_example.py, by_feature/cross_validation.py and the torch-native scripts."""

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyse.cli import cli
from analyse.explain import explain_name

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "accelerate_examples"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("acc")
    r = CliRunner().invoke(cli, ["script", str(FIXTURE), "-o", str(out), "--format", "json,text", "-q", "--no-cache"],
                           catch_exceptions=False)
    assert r.exit_code in (0, 1), r.output
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def by_file(report):
    counts = {}
    for f in report["findings"]:
        counts.setdefault(f["path"], Counter())[f["code"]] += 1
    return counts


def one(report, path, code):
    fs = [f for f in report["findings"] if f["path"] == path and f["code"] == code]
    assert len(fs) == 1, fs
    return fs[0]


def test_grouped_counts_per_file(report):
    assert by_file(report) == {
        "nlp_example.py": Counter({"NPU802": 1, "NPU710": 1, "NPU466": 1}),
        "cv_example.py": Counter({"NPU802": 1, "NPU710": 1, "NPU466": 2, "NPU001": 2, "NPU808": 1}),
        "by_feature/cross_validation.py": Counter({"NPU802": 1, "NPU710": 1, "NPU466": 1}),
        "plain_loop.py": Counter({"NPU802": 1, "NPU710": 1, "NPU803": 1, "NPU003": 1}),
        "by_feature/peak_memory.py": Counter({"NPU001": 3, "NPU301": 2}),
    }
    assert len(report["findings"]) == 22


def test_every_dataloader_of_a_file_is_one_finding_with_the_num_workers_limitation(report):
    for path, lines in (("nlp_example.py", [11, 12]), ("cv_example.py", [17, 18]),
                        ("by_feature/cross_validation.py", [11, 12, 13])):
        f = one(report, path, "NPU802")
        assert f["lines"] == lines
        assert [o["line"] for o in f["occurrences"]] == lines
        assert "NPU202" in f["codes"] and "num_workers only supports 0" in f["message"]
        assert f["replacement"] == "pin_memory=True"
    assert "lines" not in one(report, "plain_loop.py", "NPU802")      # one DataLoader: one place


def test_copies_to_the_accelerator_device_get_no_non_blocking_advice(report):
    # accelerator.prepare(loader) already puts each batch on accelerator.device (send_to_device)
    assert not [f for f in report["findings"] if f["code"] == "NPU803" and f["path"] != "plain_loop.py"]
    f = one(report, "plain_loop.py", "NPU803")
    assert f["lines"] == [12, 13]
    assert f["replacement"] == "x.to(device, non_blocking=True)"
    assert {o.get("replacement", f["replacement"]) for o in f["occurrences"]} == \
        {"x.to(device, non_blocking=True)", "y.to(device, non_blocking=True)"}


def test_blockers_stay_one_per_place_and_keep_the_users_choice(report):
    fs = [f for f in report["findings"] if f["code"] == "NPU466"]
    assert sorted((f["path"], f["line"]) for f in fs) == [
        ("by_feature/cross_validation.py", 18), ("cv_example.py", 11), ("cv_example.py", 13), ("nlp_example.py", 17)]
    for f in fs:
        assert f["severity"] == "blocker" and "lines" not in f
        assert f["message"].startswith("only when `args.mixed_precision` is 'fp8' (a user's choice)")
        # never a literal written over the option: "bf16" in place of a user's "no" changes the run
        assert f["replacement"].startswith("keep the option; on an NPU choose another value than 'fp8'")
        assert f["counted"] is False


def test_a_group_never_mixes_off_path_places_with_counted_ones(report):
    # the XPU-only branch is off the path on an NPU host; the FSDP settings are on it: two findings, one status each
    xpu, fsdp = sorted((f for f in report["findings"] if f["path"] == "by_feature/peak_memory.py"
                        and f["code"] == "NPU301"), key=lambda f: f["line"])
    assert (xpu["lines"], xpu["api"], xpu["counted"]) == ([14, 15], "torch.xpu.empty_cache", False)
    assert xpu["off_path"]["reason"] == "off-by-default" and "is_xpu_available()" in xpu["off_path"]["why"]
    assert {o["api"] for o in xpu["occurrences"]} == {"torch.xpu.empty_cache", "torch.xpu.memory_allocated"}
    assert (fsdp["lines"], fsdp["counted"]) == ([23, 24], True) and "off_path" not in fsdp
    assert fsdp["api"] == "torch.distributed.fsdp.fully_sharded_data_parallel.FullStateDictConfig"


def test_one_finding_per_line(report):
    places = Counter((f["path"], line) for f in report["findings"] for line in (f.get("lines") or [f["line"]]))
    assert [p for p, n in places.items() if n > 1] == []


def test_explain_answers_every_api_of_the_report(report):
    apis = {f["api"] for f in report["findings"]} | \
        {o["api"] for f in report["findings"] for o in f.get("occurrences") or ()}
    assert "mixed_precision=..." in apis
    for api in sorted(apis):
        text, status = explain_name(api)
        assert status == 0, (api, text)
        assert "shared/upstream" not in text
