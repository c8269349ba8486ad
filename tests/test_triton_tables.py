"""Every Triton-Ascend dtype table of data/triton_ascend.yaml matches its page (#31 point 2).

The builder keeps each op page's header and Atlas A2/A3 row (``dtype_table``) as evidence; this test reads
them again with a parser of its own -- cells by position, one boundary pipe dropped at each end -- and checks
the generated supported/unsupported lists. The 23 pages whose table opens with ``||`` (an empty first header
cell) were read one column off before: int32 for ``tl.zeros`` / ``tl.full`` was called unsupported.
Where the upstream snapshot is present (``../shared/upstream``) the evidence rows are checked against the pages.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from analyse.knowledge import data_dir
from tests.helpers import analyse_source

NAMES = {"fp16": "fp16", "float16": "fp16", "fp32": "fp32", "float32": "fp32", "fp64": "fp64", "float64": "fp64",
         "bf16": "bf16", "bfloat16": "bf16", "bool": "bool", "bool/int1": "bool", "int1": "bool", "float8e4": "fp8",
         "float8e5": "fp8", "fp8": "fp8", "fp4": "fp4",
         **{f"{u}int{n}": f"{u}int{n}" for u in ("", "u") for n in (8, 16, 32, 64)}}


def _cells(line: str) -> list:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [c.strip() for c in body.split("|")]


def _ops():
    return yaml.safe_load((data_dir() / "triton_ascend.yaml").read_text(encoding="utf-8"))["ops"]


def test_every_op_page_table_matches_its_evidence():
    checked = 0
    for op, e in _ops().items():
        if e["dtype_source"] != "op page":
            continue
        header, row = (_cells(x) for x in e["dtype_table"])
        assert row[0].replace(" ", "").startswith("AscendA2/A3"), op
        yes, no = set(), set()
        for name, cell in zip(header, row):
            col = NAMES.get(name)
            if col is None or not cell:
                continue
            if cell[0] in "√✓":
                yes.add(col)
            elif cell[0] == "×" or cell in ("x", "X"):
                no.add(col)
        assert set(e["a2a3"]["supported"]) == yes - no or set(e["a2a3"]["supported"]) == yes, (op, e["a2a3"], yes, no)
        assert set(e["a2a3"]["unsupported"]) <= no, (op, e["a2a3"], no)
        checked += 1
    assert checked > 100


def test_pages_opening_with_an_empty_header_cell_are_aligned():
    ops = _ops()
    opened = [op for op, e in ops.items() if e.get("dtype_table") and e["dtype_table"][0].startswith("||")]
    assert len(opened) >= 20
    for op in ("zeros", "full", "zeros_like", "cumsum", "sum", "max"):
        assert "int32" in ops[op]["a2a3"]["supported"], (op, ops[op]["a2a3"])
        assert "uint32" in ops[op]["a2a3"]["unsupported"], (op, ops[op]["a2a3"])


@pytest.mark.needs_upstream
def test_evidence_rows_are_the_pages_rows(upstream):
    upstream = upstream / "triton_ascend"
    for op, e in _ops().items():
        if not e.get("dtype_table"):
            continue
        page = (upstream / "zh" / "triton_api" / e["doc"].split("triton_api/", 1)[1]).read_text(encoding="utf-8")
        # the header's first cell ships in English (tools/build_knowledge.py): compare with the same word
        lines = {" ".join(ln.split()).replace("支持情况", "Support").replace("输入类型", "Input type")
                 for ln in page.splitlines()}
        assert e["dtype_table"][0] in lines and e["dtype_table"][1] in lines, op


INT32_TILES = """\
import torch
import triton
import triton.language as tl


@triton.jit
def count_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    one = tl.full((BLOCK,), 1, tl.int32)
    tl.store(out_ptr + offs, acc + one, mask=offs < n)


def run(n):
    out = torch.empty(n, dtype=torch.int32, device="cuda")
    count_kernel[(triton.cdiv(n, 128),)](out, n, BLOCK=128)
    return out


run(1000)
"""


def test_int32_tiles_are_not_a_blocker(tmp_path, kb):
    findings = analyse_source(tmp_path, INT32_TILES, kb, name="kern.py").findings
    assert not [f for f in findings if f.code == "NPU511"], [(f.line, f.message) for f in findings if f.code == "NPU511"]


def test_uint32_tile_is_still_a_blocker(tmp_path, kb):
    src = INT32_TILES.replace("acc = tl.zeros((BLOCK,), dtype=tl.int32)", "acc = tl.zeros((BLOCK,), dtype=tl.uint32)")
    findings = analyse_source(tmp_path, src, kb, name="kern.py").findings
    assert [f.line for f in findings if f.code == "NPU511"][:1] == [9]
