"""End-to-end `npu-analyse probe` on cpu and meta, with crash/timeout isolation.

The worker loads tests/probe_fixtures/custom_ops.py through the hidden, test-only
--setup-file option, which registers npu_analyse_test::{warns,prints,aborts,sleeps}.
"""

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyse.probe.command import probe

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "probe_fixtures"
SCHEMA = next((p / "shared" / "spec" / "probe.schema.json" for p in Path(__file__).resolve().parents
               if (p / "shared" / "spec" / "probe.schema.json").is_file()), HERE / "missing-probe.schema.json")


def _invoke(args):
    return CliRunner().invoke(probe, args, catch_exceptions=False)


def _stderr(result):
    return getattr(result, "stderr", None) or result.output


def _validate(doc):
    if not SCHEMA.is_file():
        return
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))


# ----------------------------------------------------------------------- without torch needed

def test_importing_command_does_not_import_torch():
    import subprocess

    code = "import sys, analyse.probe.command, analyse.probe.overlay; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(HERE.parent))
    assert out.stdout.strip() == "False"


def test_usage_errors(tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\n")
    assert _invoke([]).exit_code == 2
    assert _invoke(["--ops", str(ops), "--device", "tpu"]).exit_code == 2
    assert _invoke(["--ops", str(ops), "--device", "cuda:x"]).exit_code == 2
    assert _invoke(["--ops", str(ops), "--dtypes", "float99"]).exit_code == 2
    r = _invoke(["--ops", str(tmp_path / "missing.txt")])
    assert r.exit_code == 2 and "cannot read" in _stderr(r)


def test_empty_and_invalid_only(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    r = _invoke(["--ops", str(empty), "--device", "cpu", "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "empty" in _stderr(r)
    bad = tmp_path / "bad.txt"
    bad.write_text("os.system('rm -rf /')\n__import__\n")
    r = _invoke(["--ops", str(bad), "--device", "cpu", "-o", str(tmp_path / "o")])
    assert r.exit_code == 2
    err = _stderr(r)
    assert "bad.txt:1" in err and "bad.txt:2" in err and "no valid operator" in err
    assert not (tmp_path / "o").exists()


def test_without_torch(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\n")
    r = _invoke(["--ops", str(ops), "--device", "cpu"])
    assert r.exit_code == 2
    err = _stderr(r).strip().splitlines()
    assert len(err) == 1 and "pip install torch==2.13.0" in err[0]


# ----------------------------------------------------------------------- with torch

@pytest.fixture(scope="module")
def torch_mod():
    torch = pytest.importorskip("torch", reason="the probe needs torch: pip install torch==2.13.0")
    try:
        from torch.testing._internal.common_methods_invocations import op_db  # noqa: F401
    except Exception as exc:  # numpy / expecttest missing
        pytest.skip(f"OpInfo database unavailable: {exc}")
    return torch


def test_cpu_pipeline(torch_mod, tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\ntorch.nn.functional.relu\ntorch.matmul float32\ntorch.Tensor.index_put_ float32\n"
                   "aten::nonzero float32\ntorch.nn.Linear float32\ntorch.does_not_exist\n"
                   "os.system('x')\n")
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"findings": [
        {"category": "unknown-api", "api": "torch.Tensor.nonzero", "path": "a.py", "line": 1},
        {"category": "cuda-api", "api": "torch.cuda.synchronize", "path": "a.py", "line": 2}]}))
    out = tmp_path / "out"
    r = _invoke(["--ops", str(ops), "--from-report", str(report), "--device", "cpu", "--dtypes", "float32,float16",
                 "--repeats", "2", "--max-samples", "2", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "probe.json").read_text())
    _validate(doc)
    status = {(x["op"], x["dtype"]): x["status"] for x in doc["results"]}
    for key in [("torch.add", "float32"), ("torch.add", "float16"), ("torch.nn.functional.relu", "float32"),
                ("torch.matmul", "float32"), ("torch.Tensor.index_put_", "float32"), ("aten::nonzero", "float32"),
                ("torch.nn.Linear", "float32"), ("torch.Tensor.nonzero", "float32")]:
        assert status[key] == "pass", (key, doc["results"])
    assert ("torch.matmul", "float16") not in status  # the line's dtypes win over --dtypes
    assert status[("torch.does_not_exist", "any")] == "unknown-op"
    assert doc["invalid_lines"] == [{"line": 8, "text": "os.system('x')", "reason": doc["invalid_lines"][0]["reason"],
                                     "source": "ops-file"}]
    add = next(x for x in doc["results"] if x["op"] == "torch.add" and x["dtype"] == "float32")
    assert add["samples"] >= 1 and add["device_time_ms"] is not None and add["tolerance"]["atol"] > 0
    assert doc["environment"]["torch"] == torch_mod.__version__ and doc["environment"]["torch_npu"] is None
    n_pass = doc["summary"]["by_status"]["pass"]
    assert n_pass == len(doc["results"]) - 1  # all but the unknown op
    html = (out / "probe.html").read_text()
    assert "torch.nn.functional.relu" in html and "<script" in html and "http" not in html.replace(
        "https://json", "")
    assert f"pass {n_pass}" in r.stdout and "probe.json" in r.stdout


def test_meta_pipeline(torch_mod, tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\ntorch.nonzero\ntorch.unique\ntorch.nn.functional.relu\n")
    out = tmp_path / "out"
    r = _invoke(["--ops", str(ops), "--device", "meta", "--dtypes", "float32", "--max-samples", "2",
                 "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "probe.json").read_text())
    _validate(doc)
    res = {x["op"]: x for x in doc["results"]}
    assert res["torch.add"]["status"] == "pass" and res["torch.add"]["max_abs_error"] is None
    assert res["torch.add"]["compared"].startswith("shape-only")
    assert res["torch.nonzero"]["status"] == "error" and "NotImplementedError" in res["torch.nonzero"]["message"]
    assert res["torch.unique"]["status"] == "error"
    assert res["torch.nn.functional.relu"]["status"] == "pass"
    assert doc["device"] == "meta" and doc["environment"]["device_name"] == "meta"


def test_fallback_crash_and_timeout_isolation(torch_mod, tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.ops.npu_analyse_test.warns\ntorch.ops.npu_analyse_test.aborts\n"
                   "torch.ops.npu_analyse_test.segfaults\n"
                   "torch.ops.npu_analyse_test.sleeps\ntorch.ops.npu_analyse_test.prints\n")
    out = tmp_path / "out"
    r = _invoke(["--ops", str(ops), "--device", "cpu", "--dtypes", "float32", "--timeout-per-op", "4",
                 "--setup-file", str(FIXTURES / "custom_ops.py"), "--max-samples", "1", "--repeats", "1",
                 "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "probe.json").read_text())
    _validate(doc)
    res = {x["op"].rsplit(".", 1)[-1]: x for x in doc["results"]}
    assert res["warns"]["status"] == "fallback"
    assert res["warns"]["message"].startswith("CAUTION: The operator 'aten::npu_analyse_fake' is not currently")
    assert res["prints"]["status"] == "fallback" and "fall back to run on the CPU" in res["prints"]["message"]
    assert res["aborts"]["status"] == "error" and "SIGABRT" in res["aborts"]["message"]
    assert res["segfaults"]["status"] == "error" and "SIGSEGV" in res["segfaults"]["message"]
    assert res["sleeps"]["status"] == "timeout"
    assert [x["op"].rsplit(".", 1)[-1] for x in doc["results"]] == ["warns", "aborts", "segfaults", "sleeps",
                                                                     "prints"]
    assert doc["options"]["worker_starts"] == 4
