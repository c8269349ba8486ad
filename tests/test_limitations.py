"""Structured limitations: English texts, checks parsed from the docs, evaluated at call sites (NPU202/NPU203)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from analyse.knowledge import TORCH_VERSIONS, load_knowledge
from analyse.knowledge.markdown import one_line, to_html, to_plain
from analyse.passes.unsupported_api import UnsupportedApiPass
from tests.helpers import analyse_source

CJK = re.compile(r"[\u4e00-\u9fff]")


def _run(tmp_path, src, version):
    res = analyse_source(tmp_path, src, load_knowledge(version), passes=[UnsupportedApiPass()])
    return [f for f in res.findings if f.code in ("NPU201", "NPU202", "NPU203")]


RNN_SRC = """\
import torch.nn as nn

class Encoder(nn.Module):
    def __init__(self, hidden=16, layers=2):
        super().__init__()
        self.gru = nn.GRU(16, hidden, num_layers=layers, dropout=0.1)
        self.plain = nn.GRU(16, 16)
"""


def test_gru_dropout_is_a_manual_hit_at_default_version(tmp_path):
    found = _run(tmp_path, RNN_SRC, "2.13.0")
    hits = [f for f in found if f.code == "NPU203"]
    assert [(f.line, f.severity, f.api) for f in hits] == [(6, "manual", "torch.nn.GRU")]
    assert "dropout" in hits[0].message and "dropout=0.1" in hits[0].message
    assert "nn.Dropout" in hits[0].replacement
    # nn.GRU(16, 16): no manual finding (at most the one info note per API and file)
    assert not [f for f in found if f.line == 7 and f.severity == "manual"]
    assert len([f for f in found if f.code == "NPU202" and f.api == "torch.nn.GRU"]) <= 1


def test_gru_dropout_positional_and_resolved_values(tmp_path):
    src = "import torch.nn as nn\nP = 0.3\na = nn.GRU(16, 16, 2, True, False, P)\nb = nn.GRU(16, 16, 2, True, False, 0.0)\n"
    found = _run(tmp_path, src, "2.13.0")
    assert [(f.line, f.code) for f in found if f.code == "NPU203"] == [(3, "NPU203")]
    assert "dropout=0.3" in [f for f in found if f.code == "NPU203"][0].message


def test_lstm_proj_size_at_2_8(tmp_path):
    src = "import torch.nn as nn\na = nn.LSTM(10, 20, proj_size=5)\nb = nn.LSTM(10, 20)\nc = nn.LSTM(10, 20)\n"
    found = _run(tmp_path, src, "2.8.0")
    hits = [f for f in found if f.code == "NPU203"]
    assert [(f.line, f.severity) for f in hits] == [(2, "manual")]
    assert "proj_size" in hits[0].message
    assert not [f for f in found if f.line in (3, 4) and f.severity == "manual"]
    # the input-dimension limit cannot be seen at a call: one info note for the file, not one per call
    notes = [f for f in found if f.code == "NPU202"]
    assert len(notes) == 1 and "2 dimensions" in notes[0].message and not CJK.search(notes[0].message)


def test_unknown_value_gives_one_note_per_api_and_file(tmp_path):
    src = ("import torch.nn as nn\n"
           "def make(p):\n"
           "    return nn.GRU(16, 16, dropout=p), nn.GRU(8, 8, dropout=p)\n")
    found = _run(tmp_path, src, "2.13.0")
    assert [f.code for f in found] == ["NPU202"]
    assert "dropout" in found[0].message


def test_value_checks_topk_sorted_and_sum_dtype(tmp_path):
    src = ("import torch\nx = torch.randn(8)\n"
           "v, i = torch.topk(x, 3, sorted=False)\n"
           "w, j = torch.topk(x, 3, sorted=True)\n"
           "s = torch.sum(x, dtype=torch.float32)\n")
    found = _run(tmp_path, src, "2.8.0")
    hits = {(f.line, f.api) for f in found if f.code == "NPU203"}
    assert hits == {(3, "torch.topk"), (5, "torch.sum")}


def test_no_chinese_in_limitation_texts_for_versions_with_official_english():
    for v in ("2.7.1", "2.8.0", "2.9.0", "2.10.0"):
        kb = load_knowledge(v)
        names = [n for n in kb.documented_names() if (kb.api(n).limitations or "")]
        zh = [n for n in names if CJK.search(kb.api(n).limitations)]
        assert len(zh) <= 0.03 * len(names), (v, len(zh), zh[:5])
    info = load_knowledge("2.8.0").api("torch.nn.LSTM")
    assert info.limitations.splitlines()[1] == "Does not support the proj_size parameter"
    assert "不支持proj_size参数" in info.evidence


def test_checks_are_data_with_positions():
    info = load_knowledge("2.13.0").api("torch.nn.GRU")
    (check,) = [c for c in info.checks if c["kind"] == "arg"]
    assert dict(check) == {"kind": "arg", "param": "dropout", "position": 5, "default": 0.0,
                           "text": "Does not support the dropout parameter"}
    assert info.remainder == ("Does not support variable-length (packed) sequence input",)


@pytest.mark.needs_upstream
def test_build_script_reports_checks(tmp_path, upstream):
    import subprocess

    out = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "tools" / "build_knowledge.py"),
                          "--upstream", str(upstream), "--out", str(tmp_path / "d")], check=True, capture_output=True, text=True).stdout
    for v in TORCH_VERSIONS:
        m = re.search(rf"torch {re.escape(v)}\s+limitation texts\s+(\d+):\s+(\d+) became checks", out)
        assert m and 0 < int(m.group(2)) <= int(m.group(1))


def test_markdown_rendering():
    md = "- `input` supports fp32 only\n- see [guide](https://example.org/x)\n```python\nimport torch_npu\n```\n| a | b |\n|--|--|\n| 1 | 2 |"
    plain = to_plain(md)
    assert "`" not in plain and "- " not in plain and "```" not in plain
    assert "input supports fp32 only" in plain and "guide (https://example.org/x)" in plain
    assert "    import torch_npu" in plain and "1 | 2" in plain
    assert one_line("- a\n- b") == "a; b."
    h = to_html(md + "\n<script>")
    assert "<code>input</code>" in h and "<pre><code>import torch_npu</code></pre>" in h and "<table>" in h
    assert "<script>" not in h and "&lt;script&gt;" in h


# --------------------------------------------------------------------------- explain


def _explain(*args):
    from click.testing import CliRunner

    from analyse.cli import cli

    return CliRunner().invoke(cli, ["explain", *args])


def test_explain_shows_every_version_side_by_side():
    r = _explain("torch.nn.GRU")
    assert r.exit_code == 0
    rows = [ln for ln in r.output.splitlines() if re.match(r"\s+2\.\d+\.\d+\*?\s", ln)]
    assert len(rows) == len(TORCH_VERSIONS) >= 5
    assert any("2.8.0" in ln and "UNSUPPORTED" in ln for ln in rows)
    assert any("2.13.0*" in ln and "limited" in ln for ln in rows)
    assert "param=dropout" in r.output and "transfer_to_npu" in r.output
    assert not CJK.search(r.output)


def test_explain_third_party_and_unknown():
    r = _explain("flash_attn.flash_attn_func")
    assert r.exit_code == 0 and "npu_fusion_attention" in r.output and "torch.flash_attn" not in r.output
    r = _explain("no_such_lib.thing")
    assert r.exit_code == 1 and "unknown" in r.output
    # an undocumented torch name is what NPU301 reports: explain answers it as unverified (#23)
    r = _explain("torch.no_such_api")
    assert r.exit_code == 0 and "unverified on NPU" in r.output and "NPU301" in r.output
    r = _explain("torch.cuda.nvtx.range_push", "--torch-version", "2.8.0")
    assert r.exit_code == 0 and "does NOT handle it" in r.output and "mstx" in r.output
