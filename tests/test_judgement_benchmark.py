"""The judgement benchmark's own tooling (benchmarks/judgement/judgement.py): every expectation file is valid and
frozen (its SHA-256 recorded before its first run, never edited after), and the scoring compares a report with the
expectations as the README says. The scoring of real repositories needs the network (materialize) and is not run
here."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("judgement", ROOT / "benchmarks" / "judgement" / "judgement.py")
J = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(J)


def test_every_file_is_valid_and_frozen():
    targets = J.load_targets()
    projects = [t for t in targets if t["kind"] == "project"]
    libraries = [t for t in targets if t["kind"] == "library"]
    assert len(projects) >= 40 and sum(len(t["expectations"]) for t in projects) >= 140
    assert len(libraries) >= 10 and sum(len(t["labels"]) for t in libraries) >= 250
    assert sum(t["heldout"] for t in projects) >= 10 and sum(t["heldout"] for t in libraries) >= 2


def test_an_edited_file_is_refused(tmp_path):
    (tmp_path / "projects").mkdir()
    (tmp_path / "libraries").mkdir()
    obj = {"repo": "o/p", "commit": "a" * 40, "folder": "p", "root": "", "heldout": False,
           "expectations": [{"entry": None, "effort": ["low"], "drivers_any": ["cuda"], "not_drivers": [],
                             "evidence": "train.py:1"}]}
    f = tmp_path / "projects" / "p.json"
    f.write_text(json.dumps(obj))
    (tmp_path / "FROZEN-x.sha256").write_text(f"{J.sha256(f)}  projects/p.json\n")
    assert J.load_targets(tmp_path)[0]["folder"] == "p"
    obj["expectations"][0]["effort"] = ["none"]
    f.write_text(json.dumps(obj))
    with pytest.raises(J.Invalid, match="edited after it was frozen"):
        J.load_targets(tmp_path)
    (tmp_path / "FROZEN-x.sha256").write_text("")
    with pytest.raises(J.Invalid, match="not frozen"):
        J.load_targets(tmp_path)


def _target():
    return {"folder": "p", "repo": "o/p", "heldout": False, "expectations": [
        {"entry": None, "effort": ["medium", "high"], "drivers_any": ["flash_attn"], "not_drivers": ["apex"],
         "evidence": "x"},
        {"entry": "train.py", "effort": ["low"], "drivers_any": ["cuda"], "not_drivers": [], "evidence": "x"},
        {"entry": "eval.py", "effort": ["none"], "drivers_any": [], "not_drivers": [], "evidence": "x"},
        {"entry": "lib.py", "effort": ["none"], "drivers_any": [], "not_drivers": [], "evidence": "x",
         "withdrawn": True, "corrected": ["not a program"]},
    ]}


def test_project_checks_effort_drivers_and_decoys():
    rep = {"summary": {"verdict": {"effort": "medium", "drivers": [{"api": "apex.amp"}, {"api": "flash_attn.f"}]},
                       "entry_points": [{"path": "train.py", "verdict": {"effort": "low", "drivers": [{"api": "device:cuda"}]}},
                                        {"path": "eval.py", "verdict": {"effort": "low", "drivers": []}}]}}
    res = J.score_project(_target(), rep, "")
    got = {(c["label"], c["check"]): c["met"] for c in res["checks"]}
    assert got == {("p (project)", "effort"): True, ("p (project)", "drivers"): True,
                   ("p (project)", "decoys"): False,   # apex is among the top three drivers
                   ("p train.py", "effort"): True, ("p train.py", "drivers"): True,
                   ("p eval.py", "effort"): False}
    assert (res["met"], res["total"]) == (4, 6)
    assert res["withdrawn"] == [{"entry": "lib.py", "why": "not a program"}]


def test_an_entry_under_the_analysed_root_is_read_from_the_repository_root_or_from_the_root():
    # the report lists paths relative to the analysed sub-folder; the judging brief writes them from the
    # repository root, earlier judges from the sub-folder: both name the same program
    t = {"folder": "p", "repo": "o/p", "root": "sub", "heldout": False, "expectations": [
        {"entry": "sub/train.py", "effort": ["low"], "drivers_any": [], "not_drivers": [], "evidence": "x"},
        {"entry": "train.py", "effort": ["low"], "drivers_any": [], "not_drivers": [], "evidence": "x"},
        {"entry": "other/train.py", "effort": ["low"], "drivers_any": [], "not_drivers": [], "evidence": "x"}]}
    rep = {"summary": {"verdict": {"effort": "low", "drivers": []},
                       "entry_points": [{"path": "train.py", "verdict": {"effort": "low", "drivers": []}}]}}
    got = [c["met"] for c in J.score_project(t, rep, "")["checks"]]
    assert got == [True, True, False]


def test_a_missing_report_fails_every_check():
    res = J.score_project(_target(), None, "no report")
    assert res["met"] == 0 and res["total"] == 6


def test_library_labels():
    t = {"folder": "l", "repo": "o/l", "heldout": True, "labels": [
        {"qualname": "l.a", "expect": "unsupported", "accept": [], "why": "x"},
        {"qualname": "l.b", "expect": "supported", "accept": ["needs-migration"], "why": "x"},
        {"qualname": "l.c", "expect": "conditional", "accept": [], "why": "x"},
        {"qualname": "l.d", "expect": "supported", "accept": [], "why": "x"}]}
    rep = {"thirdparty": {"functions": [{"qualname": "l.a", "status": "unsupported"},
                                        {"qualname": "l.b", "status": "needs-migration"},
                                        {"qualname": "l.c", "status": "unknown"}]}}
    res = J.score_library(t, rep, "")
    assert [c["met"] for c in res["checks"]] == [True, True, False, True]


def test_held_out_files_belong_to_exactly_one_batch(tmp_path):
    (tmp_path / "projects").mkdir()
    (tmp_path / "libraries").mkdir()
    for name, heldout, frozen in (("a", True, "FROZEN-J1.sha256"), ("b", True, "FROZEN-J7.sha256"),
                                  ("c", False, "FROZEN-J7.sha256")):
        obj = {"repo": f"o/{name}", "commit": "a" * 40, "folder": name, "root": "", "heldout": heldout,
               "expectations": [{"entry": None, "effort": ["low"], "drivers_any": ["cuda"], "not_drivers": [],
                                 "evidence": "train.py:1"}]}
        f = tmp_path / "projects" / f"{name}.json"
        f.write_text(json.dumps(obj))
        with open(tmp_path / frozen, "a") as fz:
            fz.write(f"{J.sha256(f)}  projects/{name}.json\n")
    batches = [{"name": "H1", "judged": "first", "frozen_in": ["FROZEN-J1.sha256"]},
               {"name": "H2", "judged": "second", "frozen_in": ["FROZEN-J7.sha256"]}]
    (tmp_path / "heldout_batches.json").write_text(json.dumps(batches))
    got = {t["folder"]: t["batch"] for t in J.load_targets(tmp_path)}
    assert got == {"a": "H1", "b": "H2", "c": None}
    assert [t["heldout"] for t in sorted(J.load_targets(tmp_path), key=lambda t: t["folder"])] == [True, True, False]
    # a batch released to the tuned part keeps its name but is no longer held out; the others stay held out
    released = [dict(batches[0], released="stop 37: misses read and tuned on"), batches[1]]
    (tmp_path / "heldout_batches.json").write_text(json.dumps(released))
    got = {t["folder"]: (t["batch"], t["heldout"]) for t in J.load_targets(tmp_path)}
    assert got == {"a": ("H1", False), "b": ("H2", True), "c": (None, False)}
    (tmp_path / "heldout_batches.json").write_text(json.dumps([dict(batches[0], released=""), batches[1]]))
    with pytest.raises(J.Invalid, match="released must say"):
        J.load_targets(tmp_path)
    # a held-out file frozen in no batch's FROZEN file is refused
    (tmp_path / "heldout_batches.json").write_text(json.dumps(batches[:1]))
    with pytest.raises(J.Invalid, match="exactly one batch"):
        J.load_targets(tmp_path)


def test_results_print_each_held_out_batch_apart(capsys):
    def res(name, batch, met):
        return {"name": name, "repo": f"o/{name}", "kind": "project", "heldout": True, "batch": batch,
                "effort": "low", "seconds": 0.1, "withdrawn": [], "met": met, "total": 4,
                "checks": [{"label": name, "check": "effort", "met": True, "expected": "low", "got": "low",
                            "expected_why": ""}]}
    J.print_results([res("a", "H1", 3), res("b", "H2", 1)])
    out = capsys.readouterr().out
    assert "[held-out H2]" in out
    lines = {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if ln.strip().startswith("H")}
    assert lines == {"H1": "3/4", "H2": "1/4"}
    assert "4/8 (50%)" in out


def test_a_released_batch_is_shown_with_the_tuned_part(capsys):
    def res(name, batch, heldout, met):
        return {"name": name, "repo": f"o/{name}", "kind": "project", "heldout": heldout, "batch": batch,
                "effort": "low", "seconds": 0.1, "withdrawn": [], "met": met, "total": 4,
                "checks": [{"label": name, "check": "effort", "met": True, "expected": "low", "got": "low",
                            "expected_why": ""}]}
    J.print_results([res("a", None, False, 4), res("b", "H1", False, 2), res("c", "H3", True, 1)])
    out = capsys.readouterr().out
    assert "[tuned, released H1]" in out and "[held-out H3]" in out
    assert "tuned            6/8 (75%)" in out and "held-out         1/4 (25%)" in out
    sub = {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if ln.startswith(" ") and ln.split()[0] in ("own", "H1")}
    assert sub == {"own": "4/4", "H1": "2/4"}


def test_an_api_the_explanation_names_as_not_counted_is_no_driver():
    """A program's explanation lists what needs no change and what does not count after what it counts: an
    expected driver named only there does not meet the drivers check (INVALID), one it counts does (VALID)."""
    def rep(expl):
        return {"summary": {"verdict": {"effort": "medium", "drivers": [{"api": "flash_attn.f"}]},
                            "entry_points": [{"path": "train.py", "verdict": {"effort": "low", "drivers": [],
                                                                              "explanation": expl}}]}}
    def drivers_met(expl):
        res = J.score_project(_target(), rep(expl), "")
        return {(c["label"], c["check"]): c["met"] for c in res["checks"]}[("p train.py", "drivers")]
    assert drivers_met("LOW: rewritten by transfer_to_npu: device:cuda (2).")
    assert not drivers_met("NONE: nothing this program reaches needs changing. Advice and notes that need no "
                           "change: torch.amp.autocast (device:cuda).")
    assert not drivers_met("NONE: nothing this program reaches needs changing. Not counted, off with the defaults: "
                           "torch.Tensor.cuda (3).")
