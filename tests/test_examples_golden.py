"""pylint-style functional tests: each bundled example has a golden report.

Regenerate after an intended change with ``pytest tests/test_examples_golden.py --regen-goldens``
and review the diff.
"""

import json
from pathlib import Path

import pytest

from analyse.knowledge import load_knowledge
from analyse.modes import run_script

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir())


def normalise(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    report["summary"].pop("duration_s", None)
    report["tool"].pop("version", None)
    report["inputs"] = [Path(p).name for p in report["inputs"]]
    return report


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_matches_golden(example, regen_goldens, report_schema):
    import jsonschema

    kb = load_knowledge("2.8.0")
    raw = run_script([example], kb, input_names=[str(example)])
    jsonschema.validate(raw, report_schema)
    report = normalise(raw)
    golden = example / "expected_report.json"
    if regen_goldens or not golden.exists():
        golden.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if not regen_goldens:
            pytest.fail(f"golden {golden} was missing and has been written; review and commit it")
    expected = json.loads(golden.read_text(encoding="utf-8"))
    got_keys = [(f["path"], f["line"], f["code"], f["api"], f["severity"]) for f in report["findings"]]
    exp_keys = [(f["path"], f["line"], f["code"], f["api"], f["severity"]) for f in expected["findings"]]
    assert got_keys == exp_keys
    assert report == expected


def test_examples_cover_the_promised_scenarios():
    names = {p.name for p in EXAMPLES}
    assert {"image_classifier", "ddp_torchrun", "amp_loop", "project"} <= names


def test_ddp_example_key_findings():
    kb = load_knowledge("2.8.0")
    report = run_script([ROOT / "examples" / "ddp_torchrun"], kb)
    by = {(f["line"], f["code"]) for f in report["findings"]}
    assert (18, "NPU101") in by      # argparse default='nccl'
    assert (29, "NPU102") in by      # assert backend in ("nccl", "gloo")
    assert (28, "NPU001") in by      # torch.cuda.set_device
    assert (36, "NPU003") in by      # f"cuda:{local_rank}"
    assert (25, "NPU105") in by      # NCCL_SOCKET_IFNAME


def test_amp_example_key_findings():
    kb = load_knowledge("2.8.0")
    report = run_script([ROOT / "examples" / "amp_loop"], kb)
    f = {(x["line"], x["code"]): x for x in report["findings"]}
    assert f[(17, "NPU001")]["api"] == "torch.cuda.amp.GradScaler"
    assert f[(17, "NPU001")]["severity"] == "auto"
    assert f[(23, "NPU001")]["severity"] == "manual"        # nvtx is not handled by transfer_to_npu
    assert "mstx" in f[(23, "NPU001")]["replacement"]
    assert f[(43, "NPU001")]["api"] == "torch.cuda.get_device_capability"
