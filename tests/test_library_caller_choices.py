"""Library mode: branches decided by what the caller passes are conditions, not the default path.

* a ``flag: bool`` parameter without a default (``x if variable_stride else y``): the caller chooses, so an
  fbgemm-only op behind it makes the function ``conditional`` (INVALID: ``unsupported``);
* a test of the size of the caller's data (``if inverse_indices.numel() > 0:``): the branch runs for some
  inputs only, the rest of the function for all of them.

VALID: the same op on the function's own path stays ``unsupported``; an un-annotated parameter without a
default is data, not a choice; an early exit for empty input does not make the main path conditional.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import torch
        from typing import List


        def _from_stride(lengths, stride_per_key):
            return torch.ops.fbgemm.segment_sum_csr(1, lengths, stride_per_key)


        def per_key(keys: List[str], stride: int, variable_stride_per_key: bool, lengths):
            return (
                _from_stride(lengths, stride)
                if variable_stride_per_key
                else torch.sum(lengths.view(len(keys), stride), dim=1).tolist()
            )


        def per_key_untyped(keys, stride, variable, lengths):
            return _from_stride(lengths, stride) if variable else lengths.sum()


        def process(pooled: List[torch.Tensor], inverse_indices: torch.Tensor) -> torch.Tensor:
            if inverse_indices.numel() > 0:
                pooled = torch.ops.fbgemm.group_index_select_dim0(pooled, list(torch.unbind(inverse_indices)))
            return torch.cat(pooled, dim=1)


        def offsets(lengths: torch.Tensor) -> torch.Tensor:
            if lengths.numel() == 0:
                return lengths
            return torch.ops.fbgemm.asynchronous_complete_cumsum(lengths)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "choicelib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_bool_the_caller_passes_is_a_condition(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert by["choicelib.per_key"]["status"] == "conditional"
    assert any("`variable_stride_per_key`" in c for c in by["choicelib.per_key"]["conditions"])
    assert by["choicelib.per_key_untyped"]["status"] == "unsupported"
    assert by["choicelib._from_stride"]["status"] == "unsupported"


def test_a_branch_on_the_size_of_the_callers_data_is_a_condition(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert by["choicelib.process"]["status"] == "conditional"
    assert any("`inverse_indices.numel() > 0`" in c for c in by["choicelib.process"]["conditions"])
    assert by["choicelib.offsets"]["status"] == "unsupported"   # the early exit for empty input guards nothing
