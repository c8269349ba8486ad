"""The probe catalogue, the documented limitations and the report reader: no torch needed."""

import json

import pytest
import yaml

from analyse.probe import catalogue as C
from analyse.probe import limits as L
from analyse.probe.opsfile import read_report_apis


def _doc(entries):
    return {"meta": {"kind": "probe_catalogue", "source": "test"}, "apis": entries}


def test_shipped_catalogue_loads_and_covers_the_issue_apis():
    cat = C.load_catalogue()
    for api, kind in [("torch.optim.SGD", "optimizer"), ("torch.optim.Adam", "optimizer"),
                      ("torch.optim.AdamW", "optimizer"), ("torch.nn.GRU", "module"), ("torch.nn.LSTM", "module"),
                      ("torch.nn.MultiheadAttention", "module"), ("torch.distributed.all_reduce", "collective"),
                      ("torch.distributed.init_process_group", "collective"), ("torch.from_numpy", "factory"),
                      ("torch.nn.Parameter", "factory"), ("torch.utils.data.distributed.DistributedSampler", "class")]:
        assert cat[api].kind == kind, api
    assert cat["torch.utils.data.distributed.DistributedSampler"].host_only
    gru = cat["torch.nn.GRU"]
    assert [v.arguments for v in gru.variants] == [{"dropout": 0.1}]
    assert gru.variants[0].match == "dropout" and gru.variants[0].expect == "unsupported" and gru.variants[0].random
    lstm = {json.dumps(v.arguments, sort_keys=True): v for v in cat["torch.nn.LSTM"].variants}
    assert lstm['{"proj_size": 4}'].match == "proj_size"
    assert lstm['{"batch_first": false}'].inputs == [[5, 8]]


@pytest.mark.parametrize("entry, message", [
    ({"kind": "gadget"}, "kind must be one of"),
    ({"kind": "module", "recipe": "from_numpy"}, "recipe 'from_numpy' is not one of"),
    ({"kind": "module", "args": "8, 16"}, "args must be a list"),
    ({"kind": "module", "colour": 1}, "unknown keys ['colour']"),
    ({"kind": "module", "inputs": [[2, -1]]}, "small positive integers"),
    ({"kind": "module", "inputs": [{"shape": [2], "dtype": "float99"}]}, "dtype must be one of"),
    ({"kind": "module", "variants": [{"arguments": {}}]}, "must change something"),
    ({"kind": "module", "variants": [{"arguments": {"dropout": 0.1}, "limitation": {"expect": "maybe"}}]},
     "limitation is {match"),
    ({"kind": "factory", "recipe": "tensor", "dtypes": ["float99"]}, "dtypes must be"),
    ({"kind": "class", "recipe": "sampler", "host_only": ""}, "host_only must be"),
])
def test_bad_entries_name_the_entry(entry, message):
    with pytest.raises(C.CatalogueError) as err:
        C.parse_catalogue(_doc({"torch.nn.Thing": entry}))
    assert "apis.torch.nn.Thing" in str(err.value) and message in str(err.value)


def test_bad_catalogue_files(tmp_path):
    with pytest.raises(C.CatalogueError, match="not a dotted torch name|dotted torch name"):
        C.parse_catalogue(_doc({"os.system": {"kind": "function", "recipe": "flag"}}))
    with pytest.raises(C.CatalogueError, match="meta"):
        C.parse_catalogue({"apis": {}})
    bad = tmp_path / "c.yaml"
    bad.write_text("apis: [unclosed\n")
    with pytest.raises(C.CatalogueError, match="not valid YAML"):
        C.load_catalogue(bad)
    with pytest.raises(C.CatalogueError, match="cannot read"):
        C.load_catalogue(tmp_path / "missing.yaml")


def test_catalogue_values_are_plain_data(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(_doc({"torch.nn.GRU": {"kind": "module", "args": [8, 16],
                                                        "kwargs": {"batch_first": True}, "inputs": [[2, 5, 8]]}})))
    entry = C.load_catalogue(p)["torch.nn.GRU"]
    assert entry.recipe == "module" and entry.to_dict()["kwargs"] == {"batch_first": True}
    p.write_text("meta: {kind: probe_catalogue, source: t}\napis:\n  torch.nn.GRU: {kind: module, "
                 "args: [!!python/name:os.system '']}\n")
    with pytest.raises(C.CatalogueError, match="not valid YAML"):
        C.load_catalogue(p)


# ----------------------------------------------------------------------- documented limitations

def test_doc_dtypes_and_lines():
    assert L.doc_dtypes("- `input`仅支持bf16，fp16，fp32\n- 其他") == {
        "dtypes": ["bfloat16", "float16", "float32"], "text": "`input`仅支持bf16，fp16，fp32"}
    assert L.doc_dtypes("`input`仅支持输出fp16，fp32，fp64，uint8，bool")["dtypes"] == [
        "float16", "float32", "float64", "uint8", "bool"]
    assert L.doc_dtypes("- 支持nearest、linear、bilinear") is None
    assert L.match_line("- 不支持`dropout`参数\n- 不支持变长序列输入", "dropout") == "不支持`dropout`参数"
    assert L.kb_version_for("2.13.0+cpu", ["2.1.0", "2.8.0", "2.13.0"], "2.8.0") == "2.13.0"
    assert L.kb_version_for("2.10.1", ["2.1.0", "2.8.0", "2.13.0"], "2.13.0") == "2.8.0"
    assert L.kb_version_for(None, ["2.1.0"], "2.13.0") == "2.13.0"


def _gru_doc():
    return {"api": "torch.nn.GRU", "status": "limited", "source": "Ascend/pytorch docs torch-nn.md",
            "limitations": "- 不支持`dropout`参数\n- `input`仅支持fp16，fp32", "dtypes": ["float16", "float32"],
            "dtype_text": "`input`仅支持fp16，fp32", "torch_version": "2.13.0"}


def test_limitation_for_variant_dtype_and_unsupported():
    doc = _gru_doc()
    lim = L.limitation_for(doc, "float32", {"match": "dropout", "expect": "unsupported"})
    assert lim["text"] == "不支持`dropout`参数" and lim["expect"] == "unsupported"
    assert L.limitation_for(doc, "float32", None) is None
    assert L.limitation_for(doc, "float64", None)["text"] == "`input`仅支持fp16，fp32"
    assert L.limitation_for(dict(doc, status="unsupported", dtypes=None), "float32", None)["text"] == \
        "listed as unsupported"
    assert L.limitation_for(None, "float32", None) is None


def test_doc_conflict_only_on_the_documented_device():
    def rec(status):
        return {"op": "torch.nn.GRU", "dtype": "float32", "status": status, "arguments": {"dropout": 0.1},
                "limitation": L.limitation_for(_gru_doc(), "float32", {"match": "dropout"})}

    on_npu, failed_npu, on_cpu = rec("pass"), rec("error"), rec("pass")
    L.annotate(on_npu, "npu:0")
    L.annotate(failed_npu, "npu")
    L.annotate(on_cpu, "cpu")
    assert on_npu["doc_conflict"] is True and on_npu["limitation"]["settled"]
    assert "doc_conflict" not in failed_npu and failed_npu["limitation"]["settled"]
    assert "doc_conflict" not in on_cpu and not on_cpu["limitation"]["settled"]
    s = L.summarise([on_npu, failed_npu], "npu:0")
    assert s["probed"] == 2 and s["confirmed"] == 1 and s["note"] is None
    assert s["doc_conflicts"] == [{"op": "torch.nn.GRU", "dtype": "float32", "arguments": {"dropout": 0.1},
                                   "status": "pass", "documented": "不支持`dropout`参数",
                                   "source": "Ascend/pytorch docs torch-nn.md"}]
    assert "settles none" in L.summarise([on_cpu], "cpu")["note"]


def test_structured_checks_of_the_knowledge_base():
    doc = {"api": "torch.nn.LSTM", "status": "limited", "source": "docs torch-nn.md", "torch_version": "2.13.0",
           "limitations": "input: supports fp32\nDoes not support the proj_size parameter",
           "evidence": "- `input`仅支持fp32\n- 不支持`proj_size`参数\n- 入参`input`不支持2维",
           "checks": [{"kind": "dtype", "param": "input", "allowed": ["fp32"], "text": "input: supports fp32"},
                      {"kind": "arg", "param": "proj_size", "text": "Does not support the proj_size parameter"},
                      {"kind": "ndim", "param": "input", "forbidden": [2],
                       "text": "The input parameter does not support 2 dimensions"}]}
    doc.update(dtypes=["float32"], dtype_text="input: supports fp32")
    proj = L.limitation_for(doc, "float32", {"match": "proj_size", "expect": "unsupported"})
    assert proj["text"] == "Does not support the proj_size parameter" and proj["check"]["kind"] == "arg"
    ndim = L.limitation_for(doc, "float32", {"match": "ndim"})
    assert ndim["text"] == "The input parameter does not support 2 dimensions" and ndim["expect"] == "unsupported"
    assert L.limitation_for(doc, "float16", None)["text"] == "input: supports fp32"
    assert L._check_dtypes(doc["checks"]) == {"dtypes": ["float32"], "text": "input: supports fp32"}
    # no structured check: a word of the (Chinese) evidence text still points at the line
    assert L.limitation_for(dict(doc, checks=[]), "float32", {"match": "2维"})["text"] == "入参`input`不支持2维"


def test_documentation_from_the_knowledge_base():
    docs = L.load_documentation("2.13.0")
    gru = docs.lookup("torch.nn.GRU")
    assert gru["status"] == "limited" and L.match_line(gru["limitations"], "dropout")
    assert "Ascend/pytorch" in gru["source"]
    assert docs.lookup("torch.optim.Adam")["dtypes"] == ["bfloat16", "float16", "float32"]
    lstm = docs.lookup("torch.nn.LSTM")
    for word in ("proj_size", "dropout", "ndim"):
        assert L.limitation_for(lstm, "float32", {"match": word}) is not None, word
    assert lstm["dtypes"] == ["float32"]
    assert docs.lookup("torch.not_an_api") is None


# ----------------------------------------------------------------------- reports

def test_script_report_every_api_is_probed_or_has_a_reason(tmp_path):
    findings = [
        {"category": "unsupported-api", "api": "torch.optim.AdamW", "path": "train.py", "line": 3},
        {"category": "unknown-api", "api": "torch.nn.Parameter", "path": "m.py", "line": 9},
        {"category": "affinity", "api": "torch.optim.SGD", "path": "train.py", "line": 4},
        {"category": "dynamic-shape", "api": "torch.Tensor.nonzero", "path": "m.py", "line": 12},
        {"category": "cuda-api", "api": "torch.cuda.synchronize", "path": "train.py", "line": 5},
        {"category": "cuda-api", "api": "device:cuda", "path": "train.py", "line": 6},
        {"category": "third-party", "api": "tensorrt.Builder", "path": "export.py", "line": 7},
        {"category": "affinity", "api": "torch_npu.contrib.module.Focus", "path": "m.py", "line": 2},
        {"category": "unknown-api", "api": "torch.nn.__dict__.items", "path": "m.py", "line": 20},
        {"category": "unsupported-api", "api": "torch.optim.AdamW", "path": "other.py", "line": 1},
    ]
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"mode": "script", "target": {"torch_version": "2.8.0"}, "findings": findings}))
    ops = read_report_apis(report)
    assert [o.op for o in ops.ops] == ["torch.optim.AdamW", "torch.nn.Parameter", "torch.optim.SGD",
                                       "torch.Tensor.nonzero"]
    skipped = {s.api: s.reason for s in ops.skipped}
    assert set(skipped) == {"torch.cuda.synchronize", "device:cuda", "tensorrt.Builder",
                            "torch_npu.contrib.module.Focus"}
    assert "CUDA device-management" in skipped["torch.cuda.synchronize"]
    assert "not a torch API" in skipped["tensorrt.Builder"]
    assert [u.text for u in ops.unprobeable] == ["torch.nn.__dict__.items"]
    named = {f["api"] for f in findings}
    assert named == {o.op for o in ops.ops} | set(skipped) | {u.text for u in ops.unprobeable}


def test_thirdparty_report_reasons_and_via(tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"mode": "thirdparty", "findings": [], "thirdparty": {"functions": [
        {"qualname": "lib.ops.warp", "path": "lib/ops.py", "line": 4, "status": "unsupported",
         "reasons": ["torch.nn.functional.grid_sample", "lib._ext.warp_forward"],
         "via": ["lib.ops.warp", "torch.nn.functional.grid_sample"]},
        {"qualname": "lib.train.step", "path": "lib/train.py", "line": 8, "status": "unknown",
         "reasons": ["torch.distributed.all_reduce"], "via": ["lib.train.step", "lib.comm.reduce"]}]}}))
    ops = read_report_apis(report)
    assert [o.op for o in ops.ops] == ["torch.nn.functional.grid_sample", "torch.distributed.all_reduce"]
    assert ops.ops[0].source == "thirdparty:lib.ops.warp"
    assert {s.api for s in ops.skipped} == {"lib._ext.warp_forward", "lib.comm.reduce"}
