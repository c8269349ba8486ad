"""Knowledge rows of stop 43 (data/curation.yaml, the limitations parser).

* A module class and its functional form (``torch.nn.MaxPool3d`` / ``torch.nn.functional.max_pool3d``) run the
  same kernel; where one side is documented No and the other Yes in the same release, the build lists the pair as a
  ``functional`` self-contradiction, and an override with ``same_as`` gives the No side the documented side's
  status, limitations and products (its checks match by keyword: the two take their parameters in other orders).
* ``torch.renorm``: in no table, with direct NPU kernels in op-plugin (renorm, renorm_, renorm.out): supported.
* ``torch.nested.nested_tensor``: "nested tensors can only be created; other operations are not supported" is the
  ``result`` check: a call whose result the code operates on is NPU203 (manual), one only returned stays a note.

The rows both tables mark No (``torch.nn.AvgPool3d`` and ``avg_pool3d``, ``pack_padded_sequence``) stay No.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import analyse_source, library_report

from analyse.knowledge import load_knowledge
from analyse.knowledge import curation as cur

TOOLS = Path(__file__).resolve().parents[1] / "tools"


# --------------------------------------------------------------------------- the detector and the file

def test_functional_pairs_both_ways():
    t = {"torch.nn.MaxPool3d": "unsupported", "torch.nn.functional.max_pool3d": "limited",
         "torch.nn.RReLU": "unsupported", "torch.nn.functional.rrelu": "limited",
         "torch.nn.Linear": "supported", "torch.nn.Module.cuda": "supported", "torch.nn.functional.gelu": "supported"}
    pairs = cur.functional_pairs(t)
    assert pairs["torch.nn.MaxPool3d"] == "torch.nn.functional.max_pool3d"
    assert pairs["torch.nn.functional.max_pool3d"] == "torch.nn.MaxPool3d"
    assert pairs["torch.nn.RReLU"] == "torch.nn.functional.rrelu"
    assert "torch.nn.Linear" not in pairs and "torch.nn.functional.gelu" not in pairs   # no other side in the table


def test_functional_contradiction_listed_and_covered():
    tables = {"2.6.0": {"torch.nn.MaxPool3d": "unsupported", "torch.nn.functional.max_pool3d": "limited",
                        "torch.nn.AvgPool3d": "unsupported", "torch.nn.functional.avg_pool3d": "unsupported",
                        "torch.nn.functional.embedding_bag": "unsupported", "torch.nn.EmbeddingBag": "limited"}}
    found = cur.contradictions(tables, ["2.6.0"])
    fun = sorted((c.api, c.other) for c in found if c.kind == "functional")
    assert fun == [("torch.nn.MaxPool3d", "torch.nn.functional.max_pool3d"),
                   ("torch.nn.functional.embedding_bag", "torch.nn.EmbeddingBag")]   # VALID: both No is no contradiction
    doc = cur.load_curation()
    for c in found:
        if c.kind == "functional":
            assert cur.covering_entry(doc, c) is not None, c


def test_same_as_is_validated():
    base = {"meta": {"source": "s", "date": "d"}, "reviewed": [],
            "overrides": [{"id": "x", "apis": ["torch.nn.MaxPool3d"], "official": "unsupported",
                           "same_as": "torch.nn.functional.max_pool3d", "contradicted_by": "c", "advice": "a",
                           "evidence": [{"kind": "functional-row", "source": "s", "fact": "f"}]}]}
    cur.validate_curation(base)
    bad = dict(base, overrides=[dict(base["overrides"][0], status="supported")])
    with pytest.raises(cur.CurationError, match="same_as"):
        cur.validate_curation(bad)
    bad = dict(base, overrides=[dict(base["overrides"][0], same_as="torch.nn.functional.*")])
    with pytest.raises(cur.CurationError, match="same_as"):
        cur.validate_curation(bad)
    no_status = dict(base, overrides=[{k: v for k, v in base["overrides"][0].items() if k != "same_as"}])
    with pytest.raises(cur.CurationError, match="status"):
        cur.validate_curation(no_status)


def test_apply_same_as_takes_the_other_row_release_by_release():
    sys.path.insert(0, str(TOOLS))
    import build_knowledge as bk

    check = {"kind": "value", "param": "dilation", "position": 4, "default": 1, "allowed": [1], "text": "dilation 1"}
    tables = {v: {"meta": {}, "apis": {"torch.nn.MaxPool3d": {"status": "unsupported", "file": "torch-nn.md"},
                                       "torch.nn.functional.max_pool3d": {"status": "unsupported"}}}
              for v in bk.TORCH_VERSIONS}
    tables["2.13.0"]["apis"]["torch.nn.functional.max_pool3d"] = {
        "status": "limited", "limitations": "dilation 1", "checks": [check], "file": "torch-nn-functional.md"}
    aten = {"by_torch_version": {v: [] for v in bk.TORCH_VERSIONS}}
    transfer = {"branches": {b: {"device_rewrite_functions": []} for b in bk.TRANSFER_BRANCH.values()}}
    doc = {"overrides": [{"id": "m", "apis": ["torch.nn.MaxPool3d"], "official": "unsupported",
                          "same_as": "torch.nn.functional.max_pool3d", "contradicted_by": "the functional row",
                          "advice": "probe", "evidence": [{"kind": "functional-row", "source": "s", "fact": "f"}]}]}
    applied = bk.apply_curation(tables, aten, transfer, doc)
    assert applied == {"m": ["2.13.0"]}
    row = tables["2.13.0"]["apis"]["torch.nn.MaxPool3d"]
    assert row["status"] == "limited" and row["limitations"] == "dilation 1" and row["file"] == "torch-nn.md"
    assert row["checks"] == [{k: v for k, v in check.items() if k != "position"}]   # by keyword only
    assert row["curation"]["official"] == "unsupported"
    assert tables["2.6.0"]["apis"]["torch.nn.MaxPool3d"]["status"] == "unsupported"   # VALID: both No there


def test_result_check_parsed():
    sys.path.insert(0, str(TOOLS))
    import limitations as lim

    assert lim.parse_line("目前嵌套张量只支持创建，不支持其他操作") == {"kind": "result"}
    assert lim.parse_line("不支持其他操作") is None


def test_the_generated_rows():
    kb = load_knowledge("2.13.0")
    mp = kb.api("torch.nn.MaxPool3d")
    assert mp.status == "limited" and mp.curation["id"] == "module-max-pool3d"
    assert {c["kind"] for c in mp.checks} >= {"value"} and all("position" not in c for c in mp.checks)
    assert kb.api_status("torch.nn.AvgPool3d") == "unsupported"          # VALID: both forms documented No
    assert kb.api_status("torch.nn.functional.avg_pool3d") == "unsupported"
    assert kb.api_status("torch.nn.utils.rnn.pack_padded_sequence") == "unsupported"
    assert kb.api_status("torch.renorm") == "supported" and kb.api("torch.renorm").curation["id"] == "renorm"
    assert kb.api_status("torch.Tensor.renorm_") == "supported"
    assert [c["kind"] for c in kb.api("torch.nested.nested_tensor").checks] == ["result"]
    assert load_knowledge("2.6.0").api_status("torch.nn.functional.conv3d") == "limited"
    assert load_knowledge("2.8.0").api_status("torch.nn.MaxPool1d") == "unsupported"   # functional No there too


# --------------------------------------------------------------------------- at the call

SRC = """
import torch
from torch import nn
from torch.nested import nested_tensor


def pooled(x):
    return nn.MaxPool3d(2)(x)


def dilated(x):
    return nn.MaxPool3d(2, dilation=2)(x)  # expect: NPU203


def rows(xs):
    return nested_tensor(xs)


def attend(xs, layer):
    t = torch.cat(xs)
    t = nested_tensor(t.split([1, 2]))  # expect: NPU203
    t = layer(t)
    return t


def clipped(d, r):
    return torch.renorm(d, 2, 0, r)
"""


def test_findings_at_the_calls(tmp_path):
    kb = load_knowledge("2.13.0")
    findings = analyse_source(tmp_path, SRC, kb).findings
    got = {}
    for f in findings:
        got.setdefault(f.line, set()).add(f.code)
    assert "NPU203" in got[12] and "NPU203" in got[21]
    assert "NPU205" in got[8] and "NPU201" not in got[8] and "NPU203" not in got[8]   # the curated row: a note
    assert got[16] == {"NPU202"}                      # VALID: returned only, the caller operates on it
    assert not any(f.line == 27 and f.code in ("NPU201", "NPU301") for f in findings)   # renorm: curated supported
    hit = next(f for f in findings if f.line == 21 and f.code == "NPU203")
    assert "layer(t)" in hit.message


LIB = {
    "__init__.py": "",
    "m.py": SRC.replace("  # expect: NPU203", ""),
}


def test_library_statuses(tmp_path):
    rep = library_report(tmp_path, load_knowledge("2.13.0"), LIB, "vidlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "vidlib.m.pooled" not in by and "vidlib.m.clipped" not in by and "vidlib.m.rows" not in by   # supported
    assert by["vidlib.m.dilated"]["status"] == "unsupported"
    assert by["vidlib.m.attend"]["status"] == "unsupported"
    assert by["vidlib.m.attend"]["reasons"] == ["torch.nested.nested_tensor"]
