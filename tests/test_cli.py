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


def test_a_value_error_inside_the_analysis_is_a_failure_not_a_usage_error(tmp_path, monkeypatch, capsys):
    """A bad cached per-file entry ended in 'not enough values to unpack' reported as a usage error (exit 2)."""
    from analyse import modes
    from analyse.cli import main

    (tmp_path / "train.py").write_text("import torch\n")

    def broken(*args, **kwargs):
        raise ValueError("not enough values to unpack (expected 7, got 2)")

    monkeypatch.setattr(modes.pipeline, "run", broken)
    with pytest.raises(SystemExit) as exc:
        main(["script", str(tmp_path), "--no-cache", "-q", "-o", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert exc.value.code == 3
    assert err == ("npu-analyse: error: analysis failed: ValueError: not enough values to unpack (expected 7, got 2) "
                   "(set NPU_ANALYSE_DEBUG=1 for a traceback)\n")
    with pytest.raises(SystemExit) as exc:   # an option that names nothing usable is still a usage error
        main(["script", str(tmp_path), "--no-cache", "-q", "-o", str(tmp_path / "rep"), "--entry", "nothere.py"])
    assert exc.value.code == 2 and "--entry nothere.py" in capsys.readouterr().err


def test_explain_refuses_control_characters_and_over_long_names():
    r = run("explain", "torch.\x1b[31madd\x07\nrm -rf")
    assert r.exit_code == 2 and "\x1b" not in r.output and "\x07" not in r.output
    assert r.output == "npu-analyse: error: explain: torch.\\x1b[31madd\\x07\\x0arm -rf is not an API name (control characters)\n"
    r = run("explain", "torch." + "a" * 5000)
    assert r.exit_code == 2 and r.output == "npu-analyse: error: explain: an API name is at most 512 characters, not 5006\n"


def test_a_huge_torch_version_gives_a_short_error(tmp_path):
    huge = "9" * 3_000_000
    r = run("explain", "torch.add", "--torch-version", huge)
    assert r.exit_code == 2 and len(r.output) < 300
    assert r.output.startswith("npu-analyse: error: unknown --torch-version '" + "9" * 40 + "'... (3000000 characters)")
    (tmp_path / "a.py").write_text("import torch\n")
    r = run("script", str(tmp_path), "--torch-version", huge, "-o", str(tmp_path / "o"))
    assert r.exit_code == 2 and r.output == ("npu-analyse: error: torch-version in command line (--torch-version) is "
                                             "3000000 characters long; at most 256\n")


def _command(args, **kwargs):
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "analyse", *args], env=env, timeout=120, **kwargs)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["rules"], ["explain", "torch.add"], ["script", "{tree}", "--no-cache", "--format",
                                                                         "json", "-o", "-"]])
def test_stdout_on_a_full_device_is_one_line_and_exit_3(tmp_path, args):
    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    args = [a.replace("{tree}", str(tmp_path)) for a in args]
    with open("/dev/full", "wb") as full:
        r = _command(args, stdout=full, stderr=-1, cwd=tmp_path)
    assert r.returncode == 3 and b"Traceback" not in r.stderr
    assert r.stderr.decode().strip().splitlines()[-1].startswith("npu-analyse: error: cannot write")
    with open("/dev/full", "wb") as full:   # the error line cannot be written either: still exit 3, nothing else
        r = _command(args, stdout=full, stderr=full, cwd=tmp_path)
    assert r.returncode == 3


@pytest.mark.parametrize("closed", ["stdout", "both"])
def test_closed_stdout_or_stderr_is_no_traceback(tmp_path, closed):
    """A run started with `>&-` (and `2>&-`): /dev/null takes the closed descriptors, so the cache database
    cannot take descriptor 1 and receive what is printed; the exit code is the run's own."""
    import subprocess

    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    close = "1" if closed == "stdout" else "1, 2"
    code = (f"import os, subprocess, sys\n"
            f"r = subprocess.run([sys.executable, '-m', 'analyse', 'script', {str(tmp_path)!r}, '-o', "
            f"{str(tmp_path / 'rep')!r}, '--cache-dir', {str(tmp_path / 'cache')!r}], close_fds=False, "
            f"preexec_fn=lambda: [os.close(fd) for fd in ({close},)], stdin=subprocess.DEVNULL)\n"
            f"sys.exit(r.returncode)\n")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                       capture_output=True, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert any(f["path"] == "train.py" and f["line"] == 2 for f in report["findings"])
    import sqlite3

    db = sqlite3.connect(str(next((tmp_path / "cache").rglob("cache.sqlite"))))
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


def test_duration_covers_the_report_building(tmp_path, monkeypatch):
    """summary.duration_s left out the report building; the clock here moves only while the report is built."""
    import analyse.cli as cli_mod
    from analyse import modes

    class Clock:
        now = 1000.0

        @staticmethod
        def perf_counter():
            return Clock.now

        def __getattr__(self, name):
            import time
            return getattr(time, name)

    real = modes.build_report

    def slow_build(*args, **kwargs):
        Clock.now += 100.0
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_mod, "time", Clock())
    monkeypatch.setattr(modes, "build_report", slow_build)
    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    r = run("script", str(tmp_path), "--no-cache", "-q", "--format", "json", "-o", str(tmp_path / "o"))
    assert r.exit_code == 0
    assert json.loads((tmp_path / "o" / "report.json").read_text())["summary"]["duration_s"] == 100.0
