"""Per-file overhead and memory that grows with the number of files (issue 33: 128,000 four-line files in
under 5 minutes and 1.5 GB). Each test pins one mechanism; benchmarks/bench_scaling.py measures the whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyse import knowledge, pipeline, render, torchpin
from analyse.pipeline import Settings
from analyse.render import json_report, write_reports
from analyse.render.json_report import iter_json, render_json

FILE = "import torch\n\ndef step{i}(x):\n    return x.cuda() + torch.cuda.synchronize()\n"


def _files(root: Path, n: int) -> Path:
    for i in range(n):
        (root / f"m{i}.py").write_text(FILE.format(i=i))
    return root



@pytest.fixture
def is_file_calls(monkeypatch):
    """The names of the paths asked whether they are files (``Path.is_file``), in order."""
    asked = []
    real = Path.is_file

    def spy(self):
        asked.append(self.name)
        return real(self)

    monkeypatch.setattr(Path, "is_file", spy)
    return asked

def test_knowledge_data_file_is_loaded_once_per_base(kb, monkeypatch):
    """Every pass asks for its table once per module: the knowledge base answers from its own dict (it built
    and resolved paths on every call: six calls per file)."""
    calls = []
    real = knowledge.data_file

    def spy(name, data_root=None):
        calls.append(name)
        return real(name, data_root)

    monkeypatch.setattr(knowledge, "data_file", spy)
    kb.__dict__.pop("_data_files", None)
    first = kb.data_file("advice.yaml")
    for _ in range(50):
        assert kb.data_file("advice.yaml") is first
    assert calls == ["advice.yaml"]
    assert "precision" in first


def test_torch_pins_look_at_names_before_asking_the_disk(tmp_path, is_file_calls):
    """Only a file whose name may pin torch is stat'ed: the other files of a large tree cost a name check."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    _files(pkg, 300)
    _files(tmp_path, 300)
    (tmp_path / "requirements.txt").write_text("numpy\ntorch==2.4.1\n")
    (pkg / "setup.py").write_text("install_requires=['torch>=2.1']\n")
    asked = is_file_calls
    pins = torchpin.find_pins([tmp_path])
    assert [(p.spec, p.path, p.line) for p in pins] == [("==2.4.1", "requirements.txt", 2),
                                                        (">=2.1", "pkg/setup.py", 1)]
    assert len(asked) <= 4, asked   # the roots and the two candidates, not 600 modules


def _report(n: int) -> dict:
    finding = {"id": "x", "code": "NPU002", "message": "m\u00e9ssage with \"quotes\" and a\nnewline",
               "context": {"start": 1, "lines": ["import torch", "", "    return x.cuda()"]},
               "reach": {"status": "unknown"}, "chain": []}
    return {"schema_version": "3", "summary": {"counts": {"a": 1}, "empty": {}, "list": []},
            "findings": [dict(finding, id=str(i), path=f"m{i}.py") for i in range(n)], "errors": [],
            "bad\udcffname": "\udcff"}


def test_json_report_text_is_unchanged():
    for report in ({}, {"a": []}, {"a": [{}], "b": {}}, _report(3), {1: [1, [2, []]], None: {"x": [{}]}}):
        assert render_json(report) == json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def test_json_report_is_written_a_finding_at_a_time(tmp_path, monkeypatch):
    """No piece of the JSON report is larger than one finding's text (json.dumps with an indent held a token
    list of the whole report, then the whole text: several times the report's size for 128,000 files)."""
    report = _report(2000)
    expected = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    sizes = []
    real = json_report.iter_json

    def spy(*args, **kwargs):
        for piece in real(*args, **kwargs):
            sizes.append(len(piece))
            yield piece

    monkeypatch.setattr(json_report, "iter_json", spy)
    monkeypatch.setitem(render._PIECES, "json", lambda report, options: json_report.iter_json(report))
    written = write_reports(report, [], tmp_path / "out", ["json"])
    monkeypatch.undo()
    text = written["json"].read_text(encoding="utf-8")
    assert text == expected.replace("\udcff", "\\udcff")
    assert json.loads(text)["bad\udcffname"] == "\udcff"
    assert len(sizes) > 2000 and max(sizes) < 1000 < len(expected) // 100


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                     st.text(max_size=8))
_keys = st.one_of(st.text(max_size=6), st.integers(), st.booleans(), st.none(),
                  st.floats(allow_nan=False, allow_infinity=True))
_json_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                                st.tuples(inner, inner),
                                                                st.dictionaries(_keys, inner, max_size=4)),
                            max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_indented_json_is_the_standard_librarys_text(value):
    """The report's own indenting encoder writes exactly what json.dumps(indent=2, ensure_ascii=False) writes,
    for every JSON value (nested lists, tuples and dicts, non-string keys, NaN and infinities, any text)."""
    assert json_report.dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_indented_json_refuses_what_json_refuses():
    import enum

    class Level(enum.IntEnum):
        HIGH = 3

    assert json_report.dumps_indented({"a": Level.HIGH, Level.HIGH: [True]}) == \
        json.dumps({"a": Level.HIGH, Level.HIGH: [True]}, indent=2, ensure_ascii=False)
    for bad in ({"a": object()}, [1, {2, 3}], {(1, 2): 1}):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            json_report.dumps_indented(bad)


def test_one_job_run_holds_no_trees_for_the_report(tmp_path, kb):
    """With --jobs 1 the analysed trees were all kept in the main process until the report was written (7 KB
    per four-line file); the cross-file steps read the summaries' facts and parse a tree again only on use."""
    root = _files(tmp_path, 20)
    res = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1))
    assert len(res.sources) == 20
    assert [r for r, sf in res.sources.items() if sf._tree is not None] == []
    assert len([f for f in res.findings if f.code == "NPU002"]) == 20
    assert res.sources["m3.py"].tree is not None   # parsed on use


def test_kept_trees_count_a_cost_per_file():
    """Trees are kept between the pre-scan and the analysis only while their memory is bounded: a tree costs
    about 4 KB whatever the file's size, so many small files count more than their bytes."""
    limit = pipeline.KEEP_TREES_MAX_BYTES
    assert pipeline.keep_trees(limit // 2, 100, 1)
    assert pipeline.keep_trees(limit, 0, 1)
    # 128,000 four-line files (95 bytes each: 12 MB) on two workers: 0.9 GB of trees; parsed again instead
    assert not pipeline.keep_trees(128_000 * 95, 128_000, 2)
    assert pipeline.keep_trees(32_000 * 95, 32_000, 2)


def test_discovery_asks_once_per_root_whether_it_is_a_package(tmp_path, is_file_calls):
    """A module name needs to know whether the analysed folder is a package: asked once per root (it was two
    stats per file), and the names are the same."""
    from analyse.files import discover

    root = tmp_path / "proj"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    _files(root / "sub", 200)
    asked = is_file_calls
    found = discover([root], (".py",))
    names = {rel: mod for _p, _r, rel, mod in found}
    assert names["sub/m7.py"] == "proj.sub.m7" and names["__init__.py"] == "proj"
    assert len(asked) <= 2, len(asked)


def test_results_held_by_the_main_process_share_their_texts(tmp_path, kb):
    """Every file's result carried its own copy of each message, snippet and API name (unpickled from a worker
    or the cache: a new string each); the main process keeps one copy of each text for all files, and the
    findings are the same."""
    import pickle

    from analyse.pipeline import ModuleResult, _Sharer

    root = _files(tmp_path, 3)
    res = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1))
    cuda = sorted((f for f in res.findings if f.code == "NPU002"), key=lambda f: f.path)
    assert [f.path for f in cuda] == ["m0.py", "m1.py", "m2.py"]
    assert cuda[0].message is cuda[1].message is cuda[2].message
    assert cuda[0].snippet is cuda[2].snippet
    # results as they arrive from a worker: equal texts, distinct objects, until shared
    sharer = _Sharer()
    shipped = [pickle.loads(pickle.dumps(ModuleResult(f.path, findings=[f], facts={"k": [f.api]}))) for f in cuda]
    assert shipped[0].findings[0].message is not shipped[1].findings[0].message
    shared = [sharer.result(r) for r in shipped]
    assert shared[0].findings[0].message is shared[1].findings[0].message
    assert next(iter(shared[0].facts)) is next(iter(shared[1].facts))
    assert shared[0].facts["k"][0] is shared[1].findings[0].api
    assert [r.findings for r in shared] == [[f] for f in cuda]
    assert res.project.facts == {}   # read by the passes' finish, then released


def test_policy_keeps_only_what_the_baseline_file_needs(tmp_path):
    """--write-baseline writes each kept finding's id, code, path and API: the whole finding dict of every
    finding (about 1 KB) was kept to the end of every run."""
    from analyse.baseline import render_baseline
    from analyse.findings import Finding
    from analyse.policy import Locator, Policy

    f = Finding(code="NPU002", category="cuda-api", severity="auto", path="m.py", line=4,
                api="torch.Tensor.cuda", message="moves data", snippet="x.cuda()", id="abc")
    policy = Policy(locator=Locator([tmp_path]), suppressions=False)
    kept, _summary, _sections = policy.apply([f])
    assert kept == [f]
    assert policy.before_baseline == [{"id": "abc", "code": "NPU002", "path": "m.py", "api": "torch.Tensor.cuda"}]
    assert render_baseline(policy.before_baseline) == render_baseline([f.to_dict()])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"x = 1", b"# coding: latin-1", b"# -*- coding: utf-8 -*-", b"# coding: bogus",
                                 b"\xef\xbb\xbf", b"s = '\xc3\xa9'", b"s = '\xe9'", b"#!/usr/bin/env python", b"",
                                 b"\r", b"pass"]), max_size=5),
       st.sampled_from([b"\n", b"\r\n", b"\r"]))
def test_decoding_a_source_is_the_interpreters(parts, sep):
    """decode_source's ASCII shortcut (no tokenizer detection for an ASCII file with no cookie in its first two
    lines) gives what the interpreter's detection gives: the same text, or the same kind of error."""
    import io
    import tokenize

    from analyse.files import decode_source

    data = sep.join(parts)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        want = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        want = type(exc)
    try:
        got = decode_source(data)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        got = type(exc)
    assert got == want


def test_evolve_is_dataclasses_replace_for_a_finding():
    """findings.evolve (the report's cheap copy of a finding with some fields changed) gives what
    dataclasses.replace gives, checks a changed checked field like __init__ does, and refuses unknown fields."""
    import dataclasses

    from analyse.findings import Finding, evolve

    f = Finding(code="NPU001", category="cuda-api", severity="auto", confidence="high", path="a.py", line=3,
                column=4, api="torch.cuda.synchronize", message="m", snippet="torch.cuda.synchronize()")
    for changes in ({"id": "abc"}, {"reach": {"status": "reachable"}, "role": "product"}, {"line": 7},
                    {"chain": ("a", "b")}):
        got, want = evolve(f, **changes), dataclasses.replace(f, **changes)
        assert got == want and got.to_dict() == want.to_dict() and got is not f
    assert f.id != "abc" and f.line == 3
    with pytest.raises(ValueError, match="line must be"):
        evolve(f, line=0)
    with pytest.raises(ValueError, match="unknown severity"):
        evolve(f, severity="fatal")
    with pytest.raises(TypeError, match="no field"):
        evolve(f, colour="red")
