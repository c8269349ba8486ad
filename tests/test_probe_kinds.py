"""Probe kinds beyond functions: modules (forward + backward), optimizers, factories, collectives,
host-only APIs; limitation arguments; reports. Needs torch (skipped without it)."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyse.probe.command import probe

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "probe_fixtures"


@pytest.fixture(scope="module")
def torch_mod():
    return pytest.importorskip("torch", reason="the probe needs torch: pip install torch==2.13.0")


def _run(args):
    r = CliRunner().invoke(probe, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r


def _load(out):
    doc = json.loads((out / "probe.json").read_text())
    from analyse.schemas import load_schema   # the probe schema the package ships

    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, load_schema("probe.schema.json"))
    return doc


def _by_op(doc):
    out = {}
    for r in doc["results"]:
        out.setdefault(r["op"], []).append(r)
    return out


def test_ops_file_with_classes_optimizers_and_collectives(torch_mod, tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.optim.SGD\ntorch.optim.AdamW\ntorch.nn.GRU\ntorch.nn.LSTM\n"
                   "torch.distributed.all_reduce\ntorch.nn.MultiheadAttention\n")
    out = tmp_path / "out"
    r = _run(["--ops", str(ops), "--device", "cpu", "--dtypes", "float32", "--max-samples", "1",
              "--repeats", "1", "-o", str(out), "-q"])
    doc = _load(out)
    res = _by_op(doc)
    assert list(res) == ["torch.optim.SGD", "torch.optim.AdamW", "torch.nn.GRU", "torch.nn.LSTM",
                         "torch.distributed.all_reduce", "torch.nn.MultiheadAttention"]
    for op, recs in res.items():
        assert all(x["status"] == "pass" for x in recs), (op, recs)
        assert all(x["samples"] == 1 and x["device_time_ms"] is not None for x in recs), op
    assert {x["kind"] for x in res["torch.optim.SGD"]} == {"optimizer"}
    assert {x["kind"] for x in res["torch.nn.GRU"]} == {"module"}
    assert {x["kind"] for x in res["torch.distributed.all_reduce"]} == {"collective"}
    assert res["torch.distributed.all_reduce"][0]["arguments"] == {"backend": "gloo", "world_size": 1, "rank": 0,
                                                                  "store": "FileStore"}
    # GRU and LSTM were probed with the arguments their documented limitations name
    gru = {json.dumps(x["arguments"], sort_keys=True): x for x in res["torch.nn.GRU"]}
    drop = gru[json.dumps({"args": [8, 16], "batch_first": True, "dropout": 0.1, "num_layers": 2},
                          sort_keys=True)]
    assert "dropout" in drop["limitation"]["text"] and drop["limitation"]["expect"] == "unsupported"
    assert drop["compared"].startswith("shape-only") and drop["max_abs_error"] is None
    lstm_args = [x["arguments"] for x in res["torch.nn.LSTM"]]
    assert any(a.get("proj_size") == 4 for a in lstm_args)
    assert any(a.get("dropout") == 0.1 for a in lstm_args)
    assert any(a.get("input_shapes") == [[5, 8]] for a in lstm_args)
    two_d = next(x for x in res["torch.nn.LSTM"] if x["arguments"].get("input_shapes"))
    assert "2" in two_d["limitation"]["text"] and two_d["limitation"]["expect"] == "unsupported"
    proj = next(x for x in res["torch.nn.LSTM"] if x["arguments"].get("proj_size"))
    assert "proj_size" in proj["limitation"]["text"] and proj["max_abs_error"] < 1e-4
    # a dtype outside the documented list is probed once (float64 for LSTM: "input 仅支持fp32")
    f64 = [x for x in res["torch.nn.LSTM"] if x["dtype"] == "float64"]
    assert len(f64) == 1 and f64[0]["documented_dtype_probe"] and "fp32" in f64[0]["limitation"]["text"]
    # optimizers: state compared with the float64 CPU reference after three steps
    adamw = res["torch.optim.AdamW"]
    assert {json.dumps(x["arguments"], sort_keys=True) for x in adamw} >= {
        json.dumps({"lr": 0.01, "weight_decay": 0.01}, sort_keys=True),
        json.dumps({"lr": 0.01, "weight_decay": 0.01, "foreach": False}, sort_keys=True)}
    assert all(x["tolerance"] and x["max_abs_error"] is not None for x in adamw)
    lim = doc["summary"]["limitations"]
    assert lim["probed"] >= 5 and lim["doc_conflicts"] == [] and "settles none" in lim["note"]
    assert doc["summary"]["by_kind"]["module"] >= 6
    html = (out / "probe.html").read_text()
    assert "proj_size" in html and "optimizer" in html
    assert "documented limitations probed" in r.stdout


def test_report_apis_get_a_real_status(torch_mod, tmp_path):
    report = tmp_path / "report.json"
    apis = ["torch.optim.Adam", "torch.optim.AdamW", "torch.nn.Parameter",
            "torch.utils.data.distributed.DistributedSampler", "torch.distributed.init_process_group",
            "torch.from_numpy", "torch.use_deterministic_algorithms", "torch.jit.trace"]
    findings = [{"category": "unsupported-api", "api": a, "path": "train.py", "line": i + 1}
                for i, a in enumerate(apis)]
    findings += [{"category": "unknown-api", "api": "torch.nn.__dict__.items", "path": "m.py", "line": 3},
                 {"category": "cuda-api", "api": "torch.cuda.synchronize", "path": "m.py", "line": 4}]
    report.write_text(json.dumps({"mode": "script", "target": {"torch_version": "2.8.0"}, "findings": findings}))
    out = tmp_path / "out"
    _run(["--from-report", str(report), "--device", "cpu", "--dtypes", "float32", "--max-samples", "1",
          "--repeats", "1", "-o", str(out), "-q"])
    doc = _load(out)
    res = _by_op(doc)
    first = {op: recs[0] for op, recs in res.items()}
    for a in ("torch.optim.Adam", "torch.optim.AdamW", "torch.nn.Parameter", "torch.distributed.init_process_group",
              "torch.from_numpy", "torch.jit.trace"):
        assert first[a]["status"] == "pass", first[a]
    assert first["torch.nn.Parameter"]["kind"] == "factory"
    assert first["torch.from_numpy"]["kind"] == "factory"
    sampler = first["torch.utils.data.distributed.DistributedSampler"]
    assert sampler["status"] == "host-only" and sampler["kind"] == "class" and sampler["samples"] == 1
    assert sampler["device_time_ms"] is None and "no device kernel" in sampler["message"]
    assert first["torch.use_deterministic_algorithms"]["status"] == "host-only"
    assert first["torch.nn.__dict__.items"]["status"] == "no-samples"
    assert "dunder" in first["torch.nn.__dict__.items"]["message"]
    assert doc["skipped"] == [{"api": "torch.cuda.synchronize", "reason": doc["skipped"][0]["reason"],
                               "source": "report:m.py"}]
    assert doc["environment"]["documentation"] == "2.8.0"  # the report's target torch version
    assert doc["summary"]["operators_by_status"]["no-samples"] == 1
    assert doc["summary"]["skipped_apis"] == 1


def test_meta_device_runs_modules_and_says_why_collectives_cannot(torch_mod, tmp_path):
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.nn.GRU\ntorch.optim.Adam\ntorch.distributed.all_reduce\ntorch.nn.Linear\n")
    out = tmp_path / "out"
    _run(["--ops", str(ops), "--device", "meta", "--dtypes", "float32", "--max-samples", "1", "--repeats", "1",
          "-o", str(out), "-q"])
    res = _by_op(_load(out))
    assert all(x["status"] == "pass" and x["compared"].startswith("shape-only") for x in res["torch.nn.GRU"])
    assert res["torch.optim.Adam"][0]["status"] == "pass"
    ar = res["torch.distributed.all_reduce"][0]
    assert ar["status"] == "no-samples" and "communication backend" in ar["message"]
    assert res["torch.nn.Linear"][0]["status"] == "pass" and res["torch.nn.Linear"][0]["kind"] == "module"


def test_npu_path_reports_doc_conflicts(torch_mod, tmp_path):
    """Through a fake torch_npu whose device is the CPU: an NPU run that passes what the documentation
    lists as unsupported is a doc conflict in the summary."""
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.nn.GRU float32\n")
    out = tmp_path / "out"
    r = _run(["--ops", str(ops), "--device", "npu", "--max-samples", "1", "--repeats", "1",
              "--setup-file", str(FIXTURES / "fake_npu_setup.py"), "-o", str(out)])
    doc = _load(out)
    assert doc["device"] == "npu" and doc["environment"]["torch_npu"] == "2.13.0.post1"
    drop = next(x for x in doc["results"] if (x["arguments"] or {}).get("dropout"))
    assert drop["status"] == "pass" and drop["doc_conflict"] is True and drop["limitation"]["settled"]
    conflicts = doc["summary"]["limitations"]["doc_conflicts"]
    assert [(c["op"], c["arguments"]["dropout"]) for c in conflicts] == [("torch.nn.GRU", 0.1)]
    assert "dropout" in conflicts[0]["documented"] and doc["summary"]["limitations"]["note"] is None
    assert "doc conflict" in r.stdout and "doc conflict" in (out / "probe.html").read_text()


def test_every_catalogue_entry_runs_on_the_cpu(torch_mod, tmp_path):
    """Each non-collective catalogue entry (and variant) builds and runs its sample on the CPU."""
    from analyse.probe import kinds, samples
    from analyse.probe.catalogue import load_catalogue

    ctx = kinds.Context("cpu", str(tmp_path))
    cpu = torch_mod.device("cpu")
    failures = []
    for api, entry in load_catalogue().items():
        if entry.kind == "collective" or entry.recipe in ("ddp", "optimize_for_mobile"):
            continue
        fn = samples.resolve(api).fn
        d = entry.to_dict()
        dtype = getattr(torch_mod, kinds.default_dtypes(d)[0] if kinds.default_dtypes(d)[0] != "any" else "float32")
        for variant in [None] + list(range(len(entry.variants))):
            try:
                for case in kinds.catalogue_cases(fn, d, ctx, variant):
                    prep = case.prepare(cpu, dtype)
                    prep.collect(prep.call())
            except Exception as exc:  # collected so one failure names all
                failures.append(f"{api}[{variant}]: {type(exc).__name__}: {exc}")
    assert failures == []


def test_module_db_modules_get_forward_and_backward(torch_mod, tmp_path):
    from analyse.probe import worker as W

    w = W.Worker()
    assert w.init({"device": "cpu", "home": str(tmp_path)})["ok"]
    assert w.ctx.tmpdir.startswith(str(tmp_path))
    rec = w.probe({"op": "torch.nn.Conv1d", "dtype": "float32", "max_samples": 1, "repeats": 1})["record"]
    assert rec["status"] == "pass" and rec["kind"] == "module" and rec["sample_source"] == "module_db"
    plan = w.plan({"op": "torch.utils.data.Sampler", "requested": ["float32"]})
    assert "no_samples" in plan and "catalogue" in plan["no_samples"]
    rec = w.probe({"op": "torch.optim.NAdam", "dtype": "float32", "max_samples": 1, "repeats": 1})["record"]
    assert rec["status"] == "pass" and rec["kind"] == "optimizer" and rec["arguments"] == {"lr": 0.01}
