"""ProbeOverlay: verdicts fed back into script mode (no torch needed)."""

import json

import pytest

from analyse.probe.overlay import ProbeFileError, ProbeVerdict, load_probe_results


def _rec(op, dtype, status, message=None):
    return {"op": op, "dtype": dtype, "status": status, "samples": 1, "message": message}


def _doc(results):
    return {"schema_version": "1", "tool": {"name": "npu-analyse", "version": "0.1.0"}, "device": "npu:0",
            "environment": {"torch": "2.13.0", "torch_npu": "2.13.0", "device_name": "Ascend910B", "cann": None,
                            "python": "3.11"},
            "results": results, "summary": {"by_status": {}}}


def test_verdicts(tmp_path):
    p = tmp_path / "probe.json"
    p.write_text(json.dumps(_doc([
        _rec("torch.add", "float32", "pass"), _rec("torch.add", "float16", "pass"),
        _rec("torch.nonzero", "float32", "pass"), _rec("torch.nonzero", "bfloat16", "error", "RuntimeError: boom"),
        _rec("torch.Tensor.index_put_", "float32", "fallback", "CAUTION: ... fall back to run on the CPU"),
        _rec("torch.Tensor.index_put_", "float16", "mismatch", "3 values differ"),
        _rec("torch.cumsum", "float16", "mismatch", "3 values differ"), _rec("torch.cumsum", "float32", "pass"),
        _rec("torch.bogus", "any", "unknown-op", "nope"),
        _rec("aten::upsample_bicubic2d", "float32", "unsupported-dtype", "not implemented for 'Float'"),
        _rec("torch.slow", "float32", "timeout"),
    ])))
    ov = load_probe_results(p)
    assert ov.verdict("torch.add") == ProbeVerdict("torch.add", "supported", "npu:0", ("float32", "float16"), None)
    v = ov.verdict("torch.nonzero")
    assert (v.status, v.dtypes, v.message) == ("unsupported", ("bfloat16",), "RuntimeError: boom")
    v = ov.verdict("torch.Tensor.index_put_")
    assert v.status == "fallback" and "fall back" in v.message
    assert ov.verdict("torch.cumsum").status == "mismatch"
    assert ov.verdict("torch.bogus") is None
    assert ov.verdict("torch.slow") is None
    assert ov.verdict("torch.never_probed") is None
    assert ov.verdict("torch.ops.aten.upsample_bicubic2d").status == "unsupported"
    assert ov.verdict("aten::upsample_bicubic2d.vec").status == "unsupported"
    with pytest.raises(Exception):
        v.status = "x"  # frozen


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.pop("results"), "results"),
    (lambda d: d.update(schema_version="2"), "schema_version"),
    (lambda d: d["results"].append({"op": "x", "dtype": "f", "status": "great", "samples": 1}), "status"),
    (lambda d: d["results"].append({"op": "x", "dtype": "f", "status": "pass", "samples": -1}), "samples"),
    (lambda d: d["environment"].pop("torch"), "torch"),
])
def test_invalid_files(tmp_path, mutate, needle):
    doc = _doc([_rec("torch.add", "float32", "pass")])
    mutate(doc)
    p = tmp_path / "probe.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ProbeFileError, match=needle):
        load_probe_results(p)


def test_not_json(tmp_path):
    p = tmp_path / "probe.json"
    p.write_text("{nope")
    with pytest.raises(ProbeFileError, match="not valid JSON"):
        load_probe_results(p)
    with pytest.raises(ProbeFileError, match="cannot read"):
        load_probe_results(tmp_path / "missing.json")
