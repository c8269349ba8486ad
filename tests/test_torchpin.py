"""--torch-version auto (the default, #31 point 5): the version the project pins, and why."""

from __future__ import annotations

import json

import pytest

from analyse.knowledge import DEFAULT_TORCH_VERSION, TORCH_VERSIONS
from analyse.torchpin import choose, find_pins


@pytest.mark.parametrize("files, version, words", [
    ({"requirements.txt": "numpy\ntorch==2.4.1+cu121\n"}, "2.6.0", "no Ascend support list is published for torch 2.2"),
    ({"Dockerfile": "FROM pytorch/pytorch:2.7.0-cuda12.6-cudnn9-runtime\nRUN pip install x\n"}, "2.7.1",
     "Dockerfile:1"),
    ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch>=2.1,<2.9", "numpy"]\n'}, "2.8.0",
     "pyproject.toml:3"),
    ({"setup.py": "from setuptools import setup\nsetup(install_requires=['torch==2.9.0'])\n"}, "2.9.0", "setup.py:2"),
    ({"environment.yml": "dependencies:\n  - python=3.10\n  - pytorch=2.1.2\n"}, "2.1.0", "environment.yml:3"),
    ({"requirements/base.txt": "torch>=1.8\n"}, DEFAULT_TORCH_VERSION, "newest documented version inside it"),
    ({"requirements.txt": "torch==1.7.1\n"}, DEFAULT_TORCH_VERSION, "older than every torch_npu release"),
    ({"train.py": "import torch\n"}, DEFAULT_TORCH_VERSION, "no torch pin found"),
])
def test_pins_choose_a_documented_version(tmp_path, files, version, words):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    got, why = choose(find_pins([tmp_path]), TORCH_VERSIONS, DEFAULT_TORCH_VERSION)
    assert got == version and words in why, why


def test_exact_pin_wins_over_a_range(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["torch>=2.1"]\n')
    (tmp_path / "requirements.txt").write_text("torch==2.8.0\n")
    assert choose(find_pins([tmp_path]), TORCH_VERSIONS, DEFAULT_TORCH_VERSION)[0] == "2.8.0"


def test_script_reports_the_chosen_version_and_why(tmp_path):
    from click.testing import CliRunner

    from analyse.cli import cli

    (tmp_path / "requirements.txt").write_text("torch==2.8.0\n")
    (tmp_path / "train.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["script", str(tmp_path), "-o", str(out), "--format", "json", "--no-cache", "-q"])
    assert r.exit_code == 0, r.output
    target = json.loads((out / "report.json").read_text())["target"]
    assert target["torch_version"] == "2.8.0"
    assert target["torch_version_choice"] == "auto: torch==2.8.0 pinned in requirements.txt:1: torch 2.8.0"
    assert target["torch_version_source"] == "pin"
    r = CliRunner().invoke(cli, ["script", str(tmp_path), "-o", str(out), "--format", "json", "--no-cache", "-q",
                                 "--torch-version", "2.6.0"])
    target = json.loads((out / "report.json").read_text())["target"]
    assert target["torch_version"] == "2.6.0" and target["torch_version_choice"] == "--torch-version 2.6.0 (given)"
    assert target["torch_version_source"] == "given"


@pytest.mark.parametrize("files, source, shown", [
    ({"requirements.txt": "torch>=2.1,<2.9\n"}, "pin", "torch version auto: torch>=2.1,<2.9 required in requirements.txt:1"),
    ({"requirements.txt": "torch==0.4.1\n"}, "pin", "torch version auto: torch==0.4.1 pinned in requirements.txt:1"),
    ({}, "default", None),
])
def test_terminal_names_the_pin_from_the_structured_source(tmp_path, files, source, shown):
    """The terminal's 'torch version' line is decided by target.torch_version_source, not by the wording of the
    reason: a project pin is named (with its file:line), the newest-by-default version is already in the header."""
    from click.testing import CliRunner

    from analyse.cli import cli

    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    (tmp_path / "train.py").write_text("import torch\nprint(torch.cuda.is_available())\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["script", str(tmp_path), "-o", str(out), "--format", "json", "--no-cache", "-q"])
    assert r.exit_code == 0, r.output
    target = json.loads((out / "report.json").read_text())["target"]
    assert target["torch_version_source"] == source
    r = CliRunner().invoke(cli, ["script", str(tmp_path), "--no-cache", "--no-color"])
    lines = [ln.strip() for ln in r.output.splitlines() if ln.strip().startswith("torch version")]
    if shown is None:
        assert lines == [], r.output
    else:
        assert len(lines) == 1 and lines[0].startswith(shown), r.output


@pytest.mark.parametrize("name, close", [("torch.cuda.set_devic", "torch.cuda.set_device"),
                                         ("torch.nn.Linaer", "torch.nn.Linear"), ("vlm", "vllm")])
def test_explain_suggests_close_names_for_an_unknown_one(name, close):
    from analyse.explain import explain_name

    text, status = explain_name(name)
    assert status == 1 and "did you mean" in text and close in text, text
    assert "status per torch version" not in text


def test_explain_keeps_real_names():
    from analyse.explain import explain_name

    assert explain_name("torch.cuda.set_device")[1] == 0
    assert "status per torch version" in explain_name("torch.cuda.set_device")[0]
