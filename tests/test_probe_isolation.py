"""The probe never imports files from the working folder or the analysed project (issue 12 item 4)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHADOWS = ("json", "statistics", "tempfile", "random")


def _hostile_project(folder: Path) -> None:
    """Modules named like the standard library that leave a marker file when imported."""
    folder.mkdir()
    for name in SHADOWS:
        marker = folder / f"IMPORTED_{name}"
        (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    (folder / "ops.txt").write_text("torch.add float32\ntorch.nn.Linear float32\n")


def test_worker_command_is_isolated():
    from analyse.probe.runner import worker_command, worker_environment

    cmd = worker_command()
    assert cmd[0] == sys.executable and cmd[1] == "-I" and cmd[2] == "-c"
    assert cmd[-1] == str(ROOT / "analyse")
    os.environ["PYTHONPATH_PROBE_TEST"] = "x"
    try:
        env = worker_environment()
    finally:
        del os.environ["PYTHONPATH_PROBE_TEST"]
    assert not any(k.startswith("PYTHON") for k in env)


def test_files_in_the_working_folder_are_never_imported(tmp_path):
    pytest.importorskip("torch", reason="the probe needs torch: pip install torch==2.13.0")
    proj = tmp_path / "project"
    _hostile_project(proj)
    report = tmp_path / "worker.json"
    setup = tmp_path / "record_worker.py"
    setup.write_text(
        "import os, sys, json\n"
        f"open({str(report)!r}, 'w').write(json.dumps({{'path': sys.path, 'cwd': os.getcwd(),\n"
        "    'isolated': sys.flags.isolated, 'json': json.__file__}))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "analyse", "probe", "--ops", "ops.txt", "--device", "cpu",
                        "--max-samples", "1", "--repeats", "1", "-o", "out", "-q", "--setup-file", str(setup)],
                       cwd=str(proj), env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in proj.iterdir() if p.name.startswith("IMPORTED_")) == []
    doc = json.loads((proj / "out" / "probe.json").read_text())
    assert [x["status"] for x in doc["results"]][:2] == ["pass", "pass"]
    seen = json.loads(report.read_text())
    assert seen["isolated"] == 1
    cwd = Path(seen["cwd"]).resolve()
    assert cwd != proj.resolve() and proj.resolve() not in cwd.parents
    entries = {str(Path(p).resolve()) for p in seen["path"] if p}
    assert str(proj.resolve()) not in entries and str(ROOT) not in entries
    assert "" not in seen["path"] and "." not in seen["path"]
    assert not seen["json"].startswith(str(proj))
    assert not Path(seen["cwd"]).exists()  # the worker's private folder is removed after the run
