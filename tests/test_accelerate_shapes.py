"""Example scripts shaped like huggingface/accelerate's examples/ (#23 done-when): the boilerplate of every script
(two or three DataLoaders, batches moved to ``accelerator.device``, an AdamW, ``mixed_precision=args...``) gives
one finding per rule and file, the same advice in several files as one finding with every place, nothing on a copy
accelerate already makes, and one finding per line.

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
    """Per file, the rules that have a place in it (a finding grouped across files counts in each of its files)."""
    counts = {}
    for f in report["findings"]:
        for p in [loc["path"] for loc in f.get("locations") or ()] or [f["path"]]:
            counts.setdefault(p, Counter())[f["code"]] += 1
    return counts


def one(report, path, code):
    fs = [f for f in report["findings"] if f["code"] == code
          and path in ([loc["path"] for loc in f.get("locations") or ()] or [f["path"]])]
    assert len(fs) == 1, fs
    return fs[0]


def places(f):
    """{path: lines} of a finding."""
    return {loc["path"]: loc["lines"] for loc in f["locations"]} if f.get("locations") else \
        {f["path"]: f.get("lines") or [f["line"]]}


def test_grouped_counts_per_file(report):
    assert by_file(report) == {
        "nlp_example.py": Counter({"NPU802": 1, "NPU710": 1, "NPU466": 1}),
        "cv_example.py": Counter({"NPU802": 1, "NPU710": 1, "NPU466": 1, "NPU001": 2, "NPU808": 1}),
        "by_feature/cross_validation.py": Counter({"NPU802": 1, "NPU710": 1, "NPU466": 1}),
        "by_feature/mocked_loaders.py": Counter({"NPU802": 1, "NPU710": 1}),
        "plain_loop.py": Counter({"NPU802": 1, "NPU710": 1, "NPU803": 1, "NPU003": 1}),
        # torch.xpu.*: no finding (#31 noise); the FSDP config is documented (data/torch_reexports.yaml, stop 41)
        "by_feature/peak_memory.py": Counter({"NPU001": 3}),
    }
    # the same advice in five scripts is one finding; so is the one user choice (fp8) passed on in three
    assert len(report["findings"]) == 13   # the torch.xpu.* group is gone (#31 noise rule), the FSDP config documented


def test_the_same_advice_in_several_files_is_one_finding_with_every_place(report):
    f = one(report, "nlp_example.py", "NPU802")
    assert places(f) == {"by_feature/cross_validation.py": [11, 12, 13], "by_feature/mocked_loaders.py": [12, 13],
                         "cv_example.py": [17, 18], "nlp_example.py": [11, 12], "plain_loop.py": [8]}
    # the finding sits at its first place; `lines` stay the lines of its own file, each occurrence names its file
    assert (f["path"], f["line"], f["lines"]) == ("by_feature/cross_validation.py", 11, [11, 12, 13])
    assert [(o["path"], o["line"]) for o in f["occurrences"]] == \
        [(p, n) for p, ls in places(f).items() for n in ls]
    assert "NPU202" in f["codes"] and "num_workers only supports 0" in f["message"]
    assert f["replacement"] == "pin_memory=True" and f["counted"] is True
    # every entry point that reaches one of the places is named
    assert {"nlp_example.py", "cv_example.py", "plain_loop.py"} <= set(f["reach"]["entry_points"])
    # the same advice in one file only stays a per-file finding
    assert "locations" not in one(report, "plain_loop.py", "NPU803")


def test_a_loader_rebound_to_a_mock_under_a_test_switch_is_still_reached(report):
    # `if os.environ.get("TESTING_MOCKED_DATALOADERS") == "1": get_dataloaders = mocked_dataloaders`: with the
    # defaults the def runs, so its DataLoaders are on the path (they were "unreached" when the rebinding won)
    f = one(report, "by_feature/mocked_loaders.py", "NPU802")
    assert f["counted"] is True
    assert "by_feature/mocked_loaders.py" in f["reach"]["entry_points"]


def test_copies_to_the_accelerator_device_get_no_non_blocking_advice(report):
    # accelerator.prepare(loader) already puts each batch on accelerator.device (send_to_device)
    assert not [f for f in report["findings"] if f["code"] == "NPU803" and f["path"] != "plain_loop.py"]
    f = one(report, "plain_loop.py", "NPU803")
    assert f["lines"] == [12, 13]
    assert f["replacement"] == "x.to(device, non_blocking=True)"
    assert {o.get("replacement", f["replacement"]) for o in f["occurrences"]} == \
        {"x.to(device, non_blocking=True)", "y.to(device, non_blocking=True)"}


def test_a_users_choice_is_one_finding_off_the_path_and_keeps_the_choice(report):
    fs = [f for f in report["findings"] if f["code"] == "NPU466"]
    assert len(fs) == 1
    f = fs[0]
    assert places(f) == {"by_feature/cross_validation.py": [18], "cv_example.py": [11, 13], "nlp_example.py": [17]}
    assert f["severity"] == "manual"
    assert f["message"].startswith("only when `args.mixed_precision` is 'fp8' (a user's choice)")
    # never a literal written over the option: "bf16" in place of a user's "no" changes the run
    assert f["replacement"].startswith("keep the option; on an NPU choose another value than 'fp8'")
    # off the path with the defaults (argparse default None), said as the condition that would run it
    assert f["counted"] is False and f["off_path"]["reason"] == "off-by-default"
    assert f["off_path"]["why"].startswith("runs only when `args.mixed_precision == 'fp8'`")
    assert "None by default" in f["off_path"]["why"]
    assert f["guard"]["condition"] == "args.mixed_precision == 'fp8'" and f["guard"]["choice"] is True


def test_a_choice_whose_default_switches_the_library_on_counts(tmp_path):
    (tmp_path / "train.py").write_text(
        "import argparse\n"
        "from accelerate import Accelerator\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--mixed_precision', default='fp8')\n"
        "args = p.parse_args()\n"
        "accelerator = Accelerator(mixed_precision=args.mixed_precision)\n", encoding="utf-8")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["script", str(tmp_path / "train.py"), "-o", str(out), "--format", "json", "-q",
                                 "--no-cache"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    (f,) = [f for f in json.loads((out / "report.json").read_text(encoding="utf-8"))["findings"]
            if f["code"] == "NPU466"]
    assert f["line"] == 6 and f["counted"] is True and f["severity"] == "manual"
    assert "mixed_precision = 'fp8' by default" in f["message"] and not f.get("guard")


def test_a_group_never_mixes_off_path_places_with_counted_ones(report):
    # the XPU-only branch's torch.xpu.* calls are another accelerator's namespace: no finding at all since #31
    # (data/noise.yaml); the FSDP settings on the path are one counted group of their own
    fs = [f for f in report["findings"] if f["path"] == "by_feature/peak_memory.py" and f["code"] == "NPU301"]
    assert not [f for f in fs if f["api"].startswith("torch.xpu")]
    # torch.distributed.fsdp.fully_sharded_data_parallel.FullStateDictConfig is the table's
    # torch.distributed.fsdp.FullStateDictConfig (the package re-exports it, data/torch_reexports.yaml): documented
    assert not fs


def test_one_finding_per_line(report):
    seen = Counter((p, line) for f in report["findings"] for p, ls in places(f).items() for line in ls)
    assert [p for p, n in seen.items() if n > 1] == []


def test_explain_answers_every_api_of_the_report(report):
    apis = {f["api"] for f in report["findings"]} | \
        {o["api"] for f in report["findings"] for o in f.get("occurrences") or ()}
    assert "mixed_precision=..." in apis
    for api in sorted(apis):
        text, status = explain_name(api)
        assert status == 0, (api, text)
        assert "shared/upstream" not in text


def test_cuda_calls_beside_an_npu_branch_are_listed_not_counted(report):
    # `if torch.cuda.is_available(): torch.cuda.X ... elif is_npu_available(): torch.npu.X`: without
    # transfer_to_npu the NPU branch runs, with it the CUDA branch runs as torch.npu -- nothing to change
    fs = sorted((f for f in report["findings"] if f["path"] == "by_feature/peak_memory.py" and f["code"] == "NPU001"),
                key=lambda f: f["line"])
    assert [f["line"] for f in fs] == [10, 11, 12]
    for f in fs:
        assert f["counted"] is False and f["off_path"]["reason"] == "guarded"
        assert f["guard"]["npu_branch"] == {"line": 16, "condition": "is_npu_available()"}
        assert f["off_path"]["why"].startswith("the `is_npu_available()` branch at by_feature/peak_memory.py:16 runs on an "
                                               "NPU host")
    (ep,) = [e for e in report["summary"]["entry_points"] if e["path"] == "by_feature/peak_memory.py"]
    assert ep["verdict"]["effort"] == "none"
    # cv_example's CUDA seed has only an XPU branch beside it: it counts
    assert all(f["counted"] for f in report["findings"] if f["path"] == "cv_example.py" and f["code"] == "NPU001")
