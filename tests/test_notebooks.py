"""Jupyter notebooks (issue 32): code cells analysed (read as JSON, never executed), magics and shell lines
skipped, places shown as ``cell N, line M`` in every view; migrate leaves them for Jupyter."""

import json
import re

import pytest
from click.testing import CliRunner

from analyse.cli import cli

CELLS = [
    ("markdown", ["# Scaling laws\n", "device = 'cuda'  (prose, not code)\n"]),
    ("code", ["%matplotlib inline\n", "!pip install tiktoken\n", "import torch\n", "device = 'cuda'\n"]),
    ("code", ["%%bash\n", "nvidia-smi\n", "torch.cuda.synchronize()\n"]),
    ("code", ["files = !ls\n", "x = torch.zeros(3).cuda()\n", "torch.cuda.synchronize()\n", "if True:\n",
              "    %time y = x * 2\n", "x?\n"]),
]


def notebook(cells=CELLS) -> str:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": kind, "metadata": {}, "source": src, **({"outputs": [], "execution_count": None}
                                                                if kind == "code" else {})}
        for kind, src in cells]})


def run(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False, env=env)


@pytest.fixture
def nbdir(tmp_path):
    p = tmp_path / "nanolike"
    p.mkdir()
    (p / "scaling_laws.ipynb").write_text(notebook())
    (p / "train.py").write_text("import torch\n\n\nif __name__ == '__main__':\n    torch.zeros(2).cuda()\n")
    return p


def test_notebook_cells_are_code_and_magics_are_skipped():
    from analyse.files import notebook_cells

    text, places = notebook_cells(notebook().encode())
    assert text.splitlines() == ["pass", "pass", "import torch", "device = 'cuda'",
                                 "", "", "",
                                 "pass", "x = torch.zeros(3).cuda()", "torch.cuda.synchronize()", "if True:",
                                 "    pass", "pass"]
    assert places[:4] == [(2, 1), (2, 2), (2, 3), (2, 4)] and places[8] == (4, 2)
    compile(text, "nb", "exec")   # the text is Python


def test_notebook_findings_have_cells_in_every_view(nbdir, tmp_path):
    out = tmp_path / "o"
    r = run("script", nbdir, "-o", out, "--format", "json,html,text,sarif", "--no-cache", "--no-color",
            env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    nb = [(f["line"], f["code"], f["cell"], f["counted"]) for f in report["findings"]
          if f["path"] == "scaling_laws.ipynb"]
    # the %%bash cell's torch.cuda.synchronize() is shell text, not code: no finding in cell 3
    assert nb == [(4, "NPU003", {"cell": 2, "line": 4}, True), (9, "NPU002", {"cell": 4, "line": 2}, True),
                  (10, "NPU001", {"cell": 4, "line": 3}, True)]
    assert not report["errors"]
    assert "scaling_laws.ipynb, cell 4, line 2 NPU002" in r.output
    assert "  Where: train.py:5" in r.output or "  Where: scaling_laws.ipynb, cell " in r.output
    text = (out / "report.txt").read_text()
    assert "(" + str(nbdir / "scaling_laws.ipynb") + ", cell 4, line 3)" in text
    sarif = json.loads((out / "report.sarif").read_text())
    assert any("(notebook cell 2, line 4)" in x["message"]["text"] for x in sarif["runs"][0]["results"])
    html = (out / "report.html").read_text()
    assert '"cell":{"cell":4,"line":2}' in html and "function placeText(f)" in html
    # the notebook is a program of its own: an entry point
    assert "scaling_laws.ipynb" in [e["path"] for e in report["summary"]["entry_points"]]


def test_a_broken_notebook_is_an_error_not_a_crash(tmp_path):
    p = tmp_path / "nb"
    p.mkdir()
    (p / "bad.ipynb").write_text("{not json")
    (p / "empty.ipynb").write_text('{"metadata": {}}')
    (p / "ok.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    out = tmp_path / "o"
    r = run("script", p, "-o", out, "--format", "json", "-q", "--no-cache")
    assert r.exit_code == 0
    errors = {e["path"]: (e["kind"], e["message"]) for e in json.loads((out / "report.json").read_text())["errors"]}
    assert errors["bad.ipynb"][0] == "syntax" and errors["bad.ipynb"][1].startswith("not a readable notebook (JSON)")
    assert errors["empty.ipynb"] == ("syntax", "not a notebook: no list of cells")


def test_migrate_leaves_notebooks_for_jupyter(nbdir, tmp_path):
    ch = tmp_path / "changes.json"
    r = run("migrate", nbdir, "--changes", ch, "-o", tmp_path / "d.patch")
    assert r.exit_code == 0, r.output
    doc = json.loads(ch.read_text())
    left = [(x["file"], x["code"], x["reason"]) for x in doc["left"] if x["file"].endswith(".ipynb")]
    assert ("scaling_laws.ipynb", "NPU002", "in a notebook (cell 4, line 2): edit the cell in Jupyter; migrate "
                                           "edits .py files only") in left
    assert "ipynb" not in (tmp_path / "d.patch").read_text()


def test_the_expanded_view_has_three_lines_of_context(tmp_path):
    p = tmp_path / "ctx"
    p.mkdir()
    (p / "train.py").write_text("import torch\n# 2\n# 3\n# 4\n# 5\nx = torch.zeros(1).cuda()\n# 7\n# 8\n# 9\n# 10\n")
    out = tmp_path / "o"
    run("script", p, "-o", out, "--format", "json,html", "-q", "--no-cache")
    report = json.loads((out / "report.json").read_text())
    (f,) = [f for f in report["findings"] if f["code"] == "NPU002"]
    assert f["context"] == {"start": 3, "lines": ["# 3", "# 4", "# 5", "x = torch.zeros(1).cuda()", "# 7", "# 8",
                                                  "# 9"]}
    html = (out / "report.html").read_text()
    assert '"context":{"start":3,"lines":["# 3","# 4","# 5"' in html
    assert "var first = ctx ? f.context.start : (f.line || 1);" in html


def test_a_notebook_can_be_the_given_entry_point(nbdir, tmp_path):
    out = tmp_path / "o"
    r = run("script", nbdir, "--entry", "scaling_laws.ipynb", "-o", out, "--format", "json", "-q", "--no-cache")
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    assert [(e["path"], e["reason"]) for e in report["summary"]["entry_points"]] == [("scaling_laws.ipynb", "given")]
    assert {f["path"] for f in report["findings"] if f["counted"]} == {"scaling_laws.ipynb"}
