"""The ops-file parser: plain names only, nothing evaluated, correct line numbers."""

import json
import string

from hypothesis import given, settings, strategies as st

from analyse.probe.opsfile import (
    OpsFileError, merge, normalise_op_name, parse_dtype_list, parse_ops_text, read_ops_file, read_report_apis,
)

SPEC_EXAMPLE = """\
# comments start with '#'; blank lines are ignored
torch.matmul
torch.nn.functional.scaled_dot_product_attention   float16,bfloat16
torch.Tensor.index_put_
torch.nonzero                                      int64
aten::upsample_bicubic2d
"""


def test_spec_example():
    ops = parse_ops_text(SPEC_EXAMPLE)
    assert ops.invalid == []
    assert [(o.op, o.dtypes, o.line) for o in ops.ops] == [
        ("torch.matmul", None, 2),
        ("torch.nn.functional.scaled_dot_product_attention", ("float16", "bfloat16"), 3),
        ("torch.Tensor.index_put_", None, 4),
        ("torch.nonzero", ("int64",), 5),
        ("aten::upsample_bicubic2d", None, 6),
    ]


def test_invalid_lines_reported_with_line_numbers():
    text = "torch.add\nos.system('x')\n\n__import__\n# c\nnumpy.add\ntorch.add float99\naten::add.Tensor\n" \
           "torch.__class__\ntorch.sys.exit x y\ntorch.Tensor.__add__\ntorch.add  # trailing comment\n"
    ops = parse_ops_text(text)
    assert [o.op for o in ops.ops] == ["torch.add", "aten::add.Tensor", "torch.Tensor.__add__"]
    bad = {i.line: i.reason for i in ops.invalid}
    assert sorted(bad) == [2, 4, 6, 7, 9, 10]
    assert "not a plain dotted name" in bad[2]
    assert "torch namespace" in bad[4] and "torch namespace" in bad[6]
    assert "dtype" in bad[7]
    assert "dunder" in bad[9]
    assert "too many fields" in bad[10]


def test_names():
    assert normalise_op_name("aten::add.Tensor") == ("aten::add.Tensor", None)
    assert normalise_op_name("aten::") [0] is None
    assert normalise_op_name("torch")[0] is None
    assert normalise_op_name("torch.ops.npu_analyse_test.warns")[0] == "torch.ops.npu_analyse_test.warns"
    assert normalise_op_name("torch.nn.functional.__globals__")[0] is None
    assert parse_dtype_list("fp16, bf16,float32,float32") == (("float16", "bfloat16", "float32"), [])
    assert parse_dtype_list("float32,quux")[1] == ["quux"]


def test_duplicates_merge_dtypes():
    ops = parse_ops_text("torch.add float16\ntorch.add bfloat16\n")
    assert [(o.op, o.dtypes) for o in ops.ops] == [("torch.add", ("float16", "bfloat16"))]
    ops = parse_ops_text("torch.add float16\ntorch.add\n")
    assert ops.ops[0].dtypes is None


def test_read_file_errors(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_bytes(b"\xff\xfe\xfa")
    try:
        read_ops_file(p)
    except OpsFileError as exc:
        assert "UTF-8" in str(exc)
    else:
        raise AssertionError("expected OpsFileError")


def test_from_report(tmp_path):
    report = {"findings": [
        {"category": "unknown-api", "api": "torch.Tensor.nonzero", "path": "a.py", "line": 3},
        {"category": "unsupported-api", "api": "torch.nn.functional.relu", "path": "a.py", "line": 4},
        {"category": "cuda-api", "api": "torch.cuda.synchronize", "path": "a.py", "line": 5},
        {"category": "unknown-api", "api": "bool-mask-index", "path": "b.py", "line": 6},
        {"category": "unknown-api", "api": "torch.Tensor.nonzero", "path": "b.py", "line": 9},
    ]}
    p = tmp_path / "report.json"
    p.write_text(json.dumps(report))
    ops = read_report_apis(p)
    assert [o.op for o in ops.ops] == ["torch.Tensor.nonzero", "torch.nn.functional.relu"]
    assert ops.invalid == []
    assert [(k.api, k.source) for k in ops.skipped] == [("torch.cuda.synchronize", "report:a.py"),
                                                        ("bool-mask-index", "report:b.py")]
    assert "finding key" in ops.skipped[1].reason
    both = merge([parse_ops_text("torch.nn.functional.relu float16\ntorch.add\n"), ops])
    assert [(o.op, o.dtypes) for o in both.ops] == [("torch.nn.functional.relu", None), ("torch.add", None),
                                                    ("torch.Tensor.nonzero", None)]


# --------------------------------------------------------------------------- fuzzing

_sentinel_hits = []
_ident = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
_good = st.one_of(
    st.lists(_ident.filter(lambda s: not s.startswith("__")), min_size=1, max_size=3).map(
        lambda p: "torch." + ".".join(p)),
    _ident.filter(lambda s: not s.startswith("__")).map(lambda s: f"aten::{s}"),
)
_bad = st.one_of(
    st.sampled_from(["os.system('x')", "__import__('os').system('echo pwned')", "__import__", "eval(1)",
                     "exec('import os')", "torch.add(1)", "numpy.add", "import os", "torch.__class__",
                     "torch;os", "aten::x.y.z", "torch..add", "`id`", "$(id)", "torch.add()"]),
    st.text(alphabet=string.printable.replace("\n", "").replace("\r", "").replace("#", ""), min_size=1,
            max_size=30).filter(lambda s: s.strip() and "\x0b" not in s and "\x0c" not in s),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _good, _bad), min_size=1, max_size=25))
def test_fuzz_nothing_evaluated_and_line_numbers(lines):
    import builtins

    orig_eval, orig_exec, orig_import = builtins.eval, builtins.exec, builtins.__import__
    calls = []
    builtins.eval = lambda *a, **k: calls.append("eval")
    builtins.exec = lambda *a, **k: calls.append("exec")
    text_lines, expected_bad = [], []
    for i, (use_good, good, bad) in enumerate(lines, start=1):
        text_lines.append(good if use_good else bad)
        if not use_good:
            expected_bad.append(i)
    try:
        ops = parse_ops_text("\n".join(text_lines))
    finally:
        builtins.eval, builtins.exec, builtins.__import__ = orig_eval, orig_exec, orig_import
    assert calls == []
    good_lines = {o.line for o in ops.ops}
    bad_lines = {i.line for i in ops.invalid}
    for i, line in enumerate(text_lines, start=1):
        ok, _ = normalise_op_name(line.split()[0]) if len(line.split()) == 1 else (None, None)
        if i in expected_bad and ok is None:
            assert i in bad_lines or not line.strip()
        if i not in expected_bad:
            assert i in good_lines or any(o.op == line for o in ops.ops)  # duplicates merge into the first
    for inv in ops.invalid:
        assert text_lines[inv.line - 1].strip()[:200] == inv.text
