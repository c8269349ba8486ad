"""Op-table rows that a library function's status reads (stop 43).

INVALID (before):

* ``F.interpolate(x, scale_factor=2)`` made a library function ``unsupported`` on the row's "Does not support
  scale_factors": the list marks interpolate supported and names the ATen overload's ``scale_factors``, not the Python
  ``scale_factor`` -- not certain, so the hit stays listed (NPU203, confidence medium, "Not certain") and the
  function stays supported;
* ``x.coalesce()`` was unverified for torch 2.10 and later, whose lists spell torch-sparse.md's rows
  ``torch.sparse.Tensor.coalesce`` (torch.sparse re-exports ``Tensor``: data/torch_reexports.yaml).

VALID: a limitation the row words with the parameter's own name (``nn.GRU(..., dropout=0.1)``) keeps its high
confidence and the function unsupported; an API the row marks unsupported outright (``Tensor.to_dense``) stays so.
"""

from __future__ import annotations

from helpers import library_report

from analyse.knowledge import load_knowledge
from analyse.passes.unsupported_api import names_param

LIB = {
    "__init__.py": "",
    "arch.py": """
        import torch
        import torch.nn.functional as F


        def upsample(x):
            return F.interpolate(x, scale_factor=2, mode="nearest")


        def resize(x):
            return F.interpolate(x, size=(64, 64), mode="bilinear")


        def recurrent(x):
            rnn = torch.nn.GRU(16, 16, num_layers=2, dropout=0.1)
            return rnn(x)


        def dense(a, b):
            return torch.mm(a, b).to_dense()
    """,
}


def test_the_sparse_rows_of_newer_lists_answer_for_tensor_methods():
    for v in ("2.8.0", "2.10.0", "2.13.0"):
        kb = load_knowledge(v)
        assert kb.api_status("torch.Tensor.coalesce") == "supported", v
    assert load_knowledge("2.13.0").api_status("torch.Tensor.to_dense") == "unsupported"


def test_a_limitation_worded_for_another_argument_is_not_certain(tmp_path):
    kb = load_knowledge("2.13.0")
    rep = library_report(tmp_path, kb, LIB, "srlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    hits = [f for f in rep["findings"] if f["code"] == "NPU203" and f["api"] == "torch.nn.functional.interpolate"]
    assert len(hits) == 1 and hits[0]["confidence"] == "medium" and "Not certain" in hits[0]["message"]
    assert "srlib.arch.upsample" not in by and "srlib.arch.resize" not in by
    assert by["srlib.arch.recurrent"]["status"] == "unsupported"
    assert by["srlib.arch.dense"]["status"] == "unsupported"
    assert by["srlib.arch.dense"]["reasons"] == ["torch.Tensor.to_dense"]


def test_names_param_reads_the_row_text():
    assert names_param({"kind": "arg", "param": "dropout", "text": "dropout is not supported"})
    assert not names_param({"kind": "arg", "param": "scale_factor", "text": "Does not support scale_factors"})
    assert names_param({"kind": "dtype", "text": "Supports fp16, fp32"})
