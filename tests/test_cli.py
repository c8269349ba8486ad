"""The command line: exit codes, outputs, bad input."""

import json
import os
import stat
import sys

import pytest
from click.testing import CliRunner

from analyse.cli import cli


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_version():
    r = run("--version")
    assert r.exit_code == 0 and "npu-analyse" in r.output


def test_unknown_torch_version_is_usage_error(tmp_path):
    (tmp_path / "a.py").write_text("import torch\n")
    r = run("script", str(tmp_path), "--torch-version", "9.9.9", "-o", str(tmp_path / "o"))
    assert r.exit_code == 2
    assert "unknown --torch-version" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_missing_path_is_usage_error(tmp_path):
    r = run("script", str(tmp_path / "nope.py"))
    assert r.exit_code == 2 and "does not exist" in r.output


def test_script_writes_reports_and_validates(tmp_path, report_schema):
    import jsonschema

    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text("import torch\nmodel = model.cuda()\ntorch.cuda.synchronize()\n")
    out = tmp_path / "out"
    r = run("script", str(src), "-o", str(out), "--torch-version", "2.8.0")
    assert r.exit_code == 0, r.output
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, report_schema)
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert report["target"]["torch_version"] == "2.8.0"
    assert [(f["line"], f["code"]) for f in report["findings"]] == [(2, "NPU002"), (3, "NPU001")]
    assert "Verdict" in r.output and str(out / "report.json") in r.output


def test_format_and_quiet(tmp_path):
    (tmp_path / "a.py").write_text("import torch\n")
    out = tmp_path / "o"
    r = run("script", str(tmp_path / "a.py"), "-o", str(out), "--format", "json", "-q")
    assert r.exit_code == 0 and r.output == ""
    assert (out / "report.json").exists() and not (out / "report.html").exists()


def test_bad_input_becomes_errors_and_rest_is_analysed(tmp_path, report_schema):
    import jsonschema

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "good.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    (proj / "broken.py").write_text("def f(:\n    pass\n")
    (proj / "py2.py").write_text("print 'hello'\n")
    (proj / "latin.py").write_bytes(b"x = '\xff\xfe caf\xe9'\n")
    (proj / "nul.py").write_bytes(b"x = 1\x00\n")
    unreadable = proj / "secret.py"
    unreadable.write_text("x = 1\n")
    unreadable.chmod(0)
    (proj / ".venv").mkdir()
    (proj / ".venv" / "skip.py").write_text("torch.cuda.synchronize()\n")
    (proj / "build").mkdir()
    (proj / "build" / "skip.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    out = tmp_path / "out"
    try:
        r = run("script", str(proj), "-o", str(out), "-q")
    finally:
        unreadable.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert r.exit_code == 0
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, report_schema)
    errors = {e["path"]: e for e in report["errors"]}
    assert errors["broken.py"]["kind"] == "syntax" and errors["broken.py"]["line"] == 1
    assert errors["py2.py"]["kind"] == "syntax" and "Python 2" in errors["py2.py"]["message"]
    assert errors["latin.py"]["kind"] == "encoding"
    assert errors["nul.py"]["kind"] == "encoding"
    if os.geteuid() != 0:  # root can read a 000 file
        assert errors["secret.py"]["kind"] == "io"
    paths = {f["path"] for f in report["findings"]}
    assert paths == {"good.py"}
    assert report["summary"]["files_failed"] >= 4


def test_explain(tmp_path):
    r = run("explain", "torch.cuda.nvtx.range_push", "--torch-version", "2.8.0")
    assert r.exit_code == 0
    assert "does NOT handle it" in r.output and "mstx" in r.output
    r = run("explain", "torch.std_mean", "--torch-version", "2.8.0")
    assert any("2.8.0*" in ln and "UNSUPPORTED" in ln for ln in r.output.splitlines())
    r = run("explain", "torch.cuda.set_device", "--torch-version", "2.8.0")
    assert "maps it to torch.npu.set_device" in r.output


def test_rules_command():
    r = run("rules")
    assert r.exit_code == 0 and "NPU001" in r.output and "NPU101" in r.output
    r = run("rules", "NPU003")
    assert "Why:" in r.output and "Fix:" in r.output


def test_nothing_is_imported_or_executed(tmp_path):
    marker = tmp_path / "executed"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nimport torch\ntorch.cuda.synchronize()\n")
    before = set(sys.modules)
    r = run("script", str(tmp_path), "-o", str(tmp_path / "o"), "-q")
    assert r.exit_code == 0
    assert not marker.exists()
    assert "evil" not in set(sys.modules) - before


def test_the_command_leaves_with_mains_exit_code_and_flushed_output(tmp_path):
    """``python -m analyse`` (and the console script) skip the interpreter's teardown; the exit code,
    the report on stdout and a usage error's one line must still all arrive."""
    import subprocess

    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    base = [sys.executable, "-m", "analyse", "script", str(tmp_path / "train.py"), "--no-cache"]
    found = subprocess.run(base + ["--format", "json", "-o", "-", "--fail-on", "info"], capture_output=True,
                           text=True, env=env, cwd=tmp_path)
    assert found.returncode == 1, found.stderr
    report = json.loads(found.stdout)
    assert any(f["path"] == "train.py" and f["line"] == 2 for f in report["findings"])
    clean = subprocess.run(base + ["--format", "json", "-o", "-", "--exit-zero"], capture_output=True, text=True,
                           env=env, cwd=tmp_path)
    assert clean.returncode == 0 and json.loads(clean.stdout)["findings"]
    usage = subprocess.run(base + ["--jobs", "0"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert usage.returncode == 2 and len(usage.stderr.strip().splitlines()) == 1 and "--jobs" in usage.stderr


def test_console_main_turns_a_message_exit_into_code_1(monkeypatch, capsys):
    from analyse import cli as cli_mod

    def fake_main():
        sys.exit("npu-analyse: gone")

    left = []
    monkeypatch.setattr(cli_mod, "main", fake_main)
    monkeypatch.setattr(cli_mod.os, "_exit", left.append)
    cli_mod.console_main()
    assert left == [1] and "npu-analyse: gone" in capsys.readouterr().err
