"""Every suggested replacement is checked (#23 point 2).

Each replacement the fixtures (the bundled examples and ``tests/fixtures``) produce is applied to its
file where it is code for the reported place (a device string, a method, a rewritten line) and the file
must still parse; code that stands alone must parse alone; prose is advice. Applying one never changes
the meaning of the code around it: an implementation selector (``impl == 'cuda'``) keeps its value, and a
device check whose CUDA branch calls a JIT-built CUDA extension gets no replacement (on an NPU the
portable branch must keep running).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from analyse import pipeline

REPO = Path(__file__).resolve().parent.parent
FIXTURES = sorted([p for p in (REPO / "examples").iterdir() if p.is_dir()]
                  + [p for p in (REPO / "tests" / "fixtures").iterdir() if p.is_dir()])
_WORDS = re.compile(r"\b[a-zA-Z]{2,}\s+[a-zA-Z]{2,}")


def _parses(text: str) -> bool:
    for candidate in (text, text + "\n    pass"):
        try:
            ast.parse(candidate)
            return True
        except SyntaxError:
            continue
    return False


def apply(source: str, f) -> tuple:
    """(kind, new file text or None). kinds: literal, method, line, standalone, prose."""
    r = f.replacement
    lines = source.splitlines()
    line = lines[f.line - 1]
    indent = line[: len(line) - len(line.lstrip())]
    try:
        value = ast.literal_eval(r)
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, str) and r[:1] in "'\"":
        col = f.column
        m = re.match(r"""(?:[rbuf]?)('([^'\\]|\\.)*'|"([^"\\]|\\.)*")""", line[col:])
        assert m, f"no string literal at {f.path}:{f.line}:{col} for {f.code}"
        new = line[:col] + r + line[col + m.end():]
        return "literal", "\n".join(lines[: f.line - 1] + [new] + lines[f.line:])
    m = re.match(r"^\.(\w+)\(.*\)", r)
    if m:
        old = f.api.rsplit(".", 1)[-1]
        assert f".{old}(" in line, (f.code, line)
        code = r.split("  (")[0].strip()  # ".cfloat()  (or keep ...)": the code part
        if code.endswith("()"):
            new = line.replace(f".{old}(", f".{m.group(1)}(", 1)
        else:  # the whole call with its arguments: `.to(0)` -> `.to('npu:0')`
            start = line.index(f".{old}(")
            depth, end = 0, None
            for i in range(start + len(old) + 1, len(line)):
                depth += {"(": 1, ")": -1}.get(line[i], 0)
                if depth == 0:
                    end = i + 1
                    break
            assert end is not None, (f.code, line)
            new = line[:start] + code + line[end:]
        return "method", "\n".join(lines[: f.line - 1] + [new] + lines[f.line:])
    first = r.splitlines()[0]
    if len(r.splitlines()) == 1 and first.split()[:1] == line.split()[:1] and _parses(first) \
            and first.rstrip().endswith(":") == line.rstrip().endswith(":") and first.strip() != line.strip():
        new = indent + first.strip()
        return "line", "\n".join(lines[: f.line - 1] + [new] + lines[f.line:])
    if _parses(r):
        return "standalone", None
    assert _WORDS.search(r), f"{f.code} at {f.path}:{f.line}: replacement {r!r} is neither code that parses nor advice"
    return "prose", None


def _findings(folder, kb):
    res = pipeline.run([folder], kb)
    assert not [e for e in res.errors if e.kind == "internal"], res.errors
    return res


@pytest.mark.parametrize("folder", FIXTURES, ids=[p.name for p in FIXTURES])
def test_every_replacement_applies_and_parses(folder, kb):
    res = _findings(folder, kb)
    applied = 0
    for f in res.findings:
        for repl in [f.replacement] + [a.get("replacement") for a in f.also if not a.get("superseded")]:
            if not repl or f.path.endswith((".txt", ".toml", ".cfg", ".yaml", ".yml", ".sh")) or f.api.startswith("project:"):
                continue
            path = folder / f.path
            if path.suffix != ".py":
                continue
            source = path.read_text(encoding="utf-8")
            g = f if repl == f.replacement else type(f)(**{**f.__dict__, "replacement": repl})
            kind, new = apply(source, g)
            if new is not None:
                applied += 1
                try:
                    ast.parse(new)
                except SyntaxError as exc:  # pragma: no cover - the assertion message
                    pytest.fail(f"{f.code} at {f.path}:{f.line}: applying {repl!r} ({kind}) breaks the file: {exc}")
    assert applied or not res.findings or folder.name in ("project",)


def test_implementation_selectors_keep_their_meaning(kb):
    folder = REPO / "tests" / "fixtures" / "impl_select"
    res = _findings(folder, kb)
    source = (folder / "ops.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    by_line = {}
    for f in res.findings:
        by_line.setdefault(f.line, []).append(f)
    # `impl='cuda'` defaults, `assert impl in ['ref', 'cuda']`, `impl == 'cuda'`, `impl='ref'`: no device finding
    for no, text in enumerate(lines, 1):
        if "impl" in text and "device" not in text and "_plugin" not in text:
            assert [f.code for f in by_line.get(no, ()) if f.code in ("NPU003", "NPU004")] == [], (no, text)
    # the lines with `impl == 'cuda' and x.device.type == 'cuda'`: one NPU004, no replacement (keep the
    # portable branch on an NPU), said once
    guarded = [no for no, text in enumerate(lines, 1) if "impl == 'cuda' and x.device.type == 'cuda'" in text]
    assert len(guarded) == 2
    for no in guarded:
        device_checks = [f for f in by_line.get(no, ()) if f.code == "NPU004"]
        assert len(device_checks) == 1
        assert device_checks[0].replacement is None
        assert "Keep it" in device_checks[0].message
    # a plain device check on its own still gets the NPU test, and applying it keeps every impl test
    plain = [f for f in res.findings if f.code == "NPU004" and f.replacement]
    assert [(f.line, f.replacement) for f in plain] == [(40, "if device.type == 'npu':")]
    for f in res.findings:
        if f.replacement:
            kind, new = apply(source, f)
            if new is not None:
                assert new.count("impl == 'cuda'") == source.count("impl == 'cuda'")
                assert new.count("['ref', 'cuda']") == source.count("['ref', 'cuda']")


def test_a_line_rewrite_touches_only_the_device_comparison(tmp_path, kb):
    (tmp_path / "m.py").write_text(
        "import torch\n\n"
        "def f(x, kernel_name):\n"
        "    if x.device.type == 'cuda' and kernel_name != 'cuda_graphs':\n"
        "        torch.cuda.synchronize()\n\n\n"
        "def g(x, mode='cuda'):\n"
        "    assert mode in ('ref', 'cuda')\n"
        "    if mode == 'cuda' and x.device.type == 'cuda':\n"
        "        torch.cuda.synchronize()\n")
    res = _findings(tmp_path, kb)
    checks = {f.line: f for f in res.findings if f.code == "NPU004"}
    assert sorted(checks) == [4, 10]
    # the other string on the line keeps its text
    assert checks[4].replacement == "if x.device.type == 'npu' and kernel_name != 'cuda_graphs':"
    # the caller picked the CUDA implementation (mode == 'cuda'): the branch is kept as it is
    assert checks[10].replacement is None and "mode == 'cuda'" in checks[10].message


def test_cpp_extension_load_is_never_told_to_run_on_the_cpu(kb):
    res = _findings(REPO / "tests" / "fixtures" / "impl_select", kb)
    [load] = [f for f in res.findings if f.api == "torch.utils.cpp_extension.load"]
    texts = [load.message, load.replacement or ""] + [a["message"] + (a.get("replacement") or "") for a in load.also]
    assert not any("on the CPU" in t for t in texts), texts
