"""The wheel is self-contained: data/, templates/, the schemas, LICENSE and py.typed; it works outside the checkout."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    wheels = list(out.glob("npu_analyse-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


def test_wheel_contains_data_and_templates(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "analyse/_data/knowledge_index.json" in names
    assert "analyse/_data/op_support/torch_2.8.0.json" in names
    assert "analyse/_templates/report.html.j2" in names
    assert any(n.endswith("entry_points.txt") for n in names)
    assert {"analyse/schemas/report.schema.json", "analyse/schemas/probe.schema.json",
            "analyse/schemas/sarif-schema-2.1.0.json", "analyse/py.typed"} <= names
    assert "npu_analyse-0.1.0.dist-info/licenses/LICENSE" in names
    assert not any(n.startswith(("tests/", "shared/")) or "/tests/" in n for n in names)
    metadata = zipfile.ZipFile(wheel).read("npu_analyse-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: BSD-3-Clause" in metadata
    assert "Requires-Python: >=3.9" in metadata


def test_installed_wheel_runs_elsewhere(wheel, tmp_path):
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    work = tmp_path / "elsewhere"
    work.mkdir()
    (work / "train.py").write_text("import torch\nmodel.cuda()\ntorch.cuda.nvtx.range_push('x')\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import analyse, analyse.paths, analyse.schemas; "
            "assert analyse.__file__.startswith(sys.argv[1]), analyse.__file__; "
            "assert analyse.schemas.load_schema('report.schema.json')['type'] == 'object'; "
            "print(analyse.paths.data_dir()); from analyse.cli import main; main(sys.argv[2:])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code, str(site), "script", "train.py", "-o", "out", "-q",
                           "--torch-version", "2.8.0"], cwd=work, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert str(site) in proc.stdout.splitlines()[0]
    report = json.loads((work / "out" / "report.json").read_text())
    assert [(f["line"], f["code"]) for f in report["findings"]] == [(2, "NPU002"), (3, "NPU001")]
    assert (work / "out" / "report.html").stat().st_size > 1000
