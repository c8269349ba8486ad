"""Writes never replace what the tool does not own (issue 33, point 1): regular files are replaced atomically
with the umask's mode, a device or FIFO is written in place, a symlink, a socket or a FIFO nobody reads is
refused, and ``migrate --in-place`` edits only files git holds an unmodified copy of."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from analyse.atomic import WriteRefused, refusal, write_atomic
from analyse.cli import main

TRAIN = "import torch\nx = torch.zeros(1).cuda()\n"


def _migrate(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["migrate", "--no-cache", *map(str, args)])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(TRAIN)
    return root


def _git(root: Path, *args):
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(git + list(args), cwd=root, check=True, capture_output=True)


@pytest.fixture
def git_env(monkeypatch, tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def test_a_new_file_gets_the_umask_mode_and_a_replaced_one_keeps_its_own(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.txt", b"one")
        (tmp_path / "kept.txt").write_bytes(b"x")
        os.chmod(tmp_path / "kept.txt", 0o604)
        write_atomic(tmp_path / "kept.txt", b"two")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "kept.txt").stat().st_mode) == 0o604
    assert (tmp_path / "kept.txt").read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt", "new.txt"]   # no temporary file left


def test_a_symlink_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("keep")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with pytest.raises(WriteRefused) as exc:
        write_atomic(link, b"new")
    assert "symbolic link" in str(exc.value) and "\n" not in str(exc.value)
    assert link.is_symlink() and target.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "real.txt"]


def test_a_character_device_is_written_in_place_never_replaced():
    before = os.stat("/dev/null")
    write_atomic("/dev/null", b"patch")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_a_fifo_with_a_reader_is_written_in_place_and_one_without_is_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(WriteRefused) as exc:
        write_atomic(fifo, b"nobody reads")
    assert "FIFO that nobody reads" in str(exc.value)
    got = []
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # a reader is there before the write starts
    try:
        reader = threading.Thread(target=lambda: got.append(_read_all(rfd)))
        write_atomic(fifo, b"hello")
        reader.start()
        reader.join()
    finally:
        os.close(rfd)
    assert got == [b"hello"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _read_all(fd: int) -> bytes:
    os.set_blocking(fd, True)
    out = b""
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return out
        out += chunk


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        assert refusal(path) == "is a socket: not written"
        with pytest.raises(WriteRefused):
            write_atomic(path, b"x")
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        s.close()


def test_migrate_output_to_dev_null_keeps_the_device(tmp_path, capsys):
    root = _project(tmp_path)
    before = os.stat("/dev/null")
    code, out, _ = _migrate([root, "-o", "/dev/null", "--changes", "/dev/null", "-q"], capsys)
    after = os.stat("/dev/null")
    assert code == 0 and out == ""
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_migrate_output_to_a_symlink_is_a_usage_error_before_the_analysis(tmp_path, capsys):
    root = _project(tmp_path)
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    (tmp_path / "link.patch").symlink_to(target)
    code, _, err = _migrate([root, "-o", tmp_path / "link.patch"], capsys)
    assert code == 2 and "is a symbolic link" in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "link.patch").is_symlink() and target.read_text() == "keep"
    code, _, err = _migrate([root, "--changes", tmp_path / "link.patch"], capsys)
    assert code == 2 and "--changes" in err and target.read_text() == "keep"


def test_write_baseline_to_a_symlink_is_a_usage_error(tmp_path):
    root = _project(tmp_path)
    target = tmp_path / "b.json"
    target.write_text("{}")
    (tmp_path / "link.json").symlink_to(target)
    with pytest.raises(SystemExit) as exc:
        main(["script", str(root), "--no-cache", "-q", "-o", str(tmp_path / "rep"), "--write-baseline",
              str(tmp_path / "link.json")])
    assert exc.value.code == 2 and target.read_text() == "{}" and (tmp_path / "link.json").is_symlink()


def test_in_place_refuses_a_symlinked_file_counts_it_not_edited_and_exits_3(tmp_path, capsys):
    root = _project(tmp_path)
    (root / ".store").mkdir()
    outside = root / ".store" / "real.py"   # in the tree, in a folder the analysis does not walk
    outside.write_text(TRAIN)
    (root / "linked.py").symlink_to(outside)
    code, _, err = _migrate([root, "--in-place", "--force", "--strategy", "explicit", "--changes", tmp_path / "c.json"], capsys)
    import json

    doc = json.loads((tmp_path / "c.json").read_text())
    assert code == 3
    assert "linked.py is a symbolic link" in err and "1 file(s) not edited" in err
    assert outside.read_text() == TRAIN and (root / "linked.py").is_symlink()
    assert ".npu()" in (root / "train.py").read_text()
    assert doc["summary"]["files_changed"] == 1 and doc["summary"]["files_refused"] == ["linked.py"]
    assert {c["file"] for c in doc["changes"]} == {"train.py"}
    assert any(x["file"] == "linked.py" and "symbolic link" in x["reason"] for x in doc["left"])


def test_in_place_skips_a_file_changed_during_the_run_and_exits_3(tmp_path, capsys, monkeypatch):
    from analyse.migrate import output

    root = _project(tmp_path)
    (root / "other.py").write_text(TRAIN)
    real = output.write_in_place

    def edit_first(mig):
        (root / "other.py").write_text(TRAIN + "# edited meanwhile\n")
        return real(mig)

    monkeypatch.setattr(output, "write_in_place", edit_first)
    code, _, err = _migrate([root, "--in-place", "--force", "--strategy", "explicit", "--changes",
                             tmp_path / "c.json"], capsys)
    import json

    doc = json.loads((tmp_path / "c.json").read_text())
    assert code == 3 and "other.py changed since the analysis: not edited" in err
    assert (root / "other.py").read_text() == TRAIN + "# edited meanwhile\n"
    assert doc["summary"]["files_changed"] == 1 and doc["summary"]["files_refused"] == ["other.py"]
    assert "1 file(s) changed" in err


@pytest.mark.parametrize("how", ["untracked", "ignored"])
def test_in_place_treats_an_untracked_or_ignored_file_it_would_edit_as_dirty(tmp_path, capsys, git_env, how):
    root = _project(tmp_path)
    (root / ".gitignore").write_text("gen_*.py\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    name = "new.py" if how == "untracked" else "gen_model.py"
    (root / name).write_text(TRAIN)
    code, _, err = _migrate([root, "--in-place", "--strategy", "explicit"], capsys)
    word = "untracked" if how == "untracked" else "ignored by git"
    assert code == 2 and f"{name} is {word}" in err
    assert (root / name).read_text() == TRAIN and (root / "train.py").read_text() == TRAIN
    code, _, _ = _migrate([root, "--in-place", "--strategy", "explicit", "--force"], capsys)
    assert code == 0 and ".npu()" in (root / name).read_text()


def test_in_place_in_a_clean_tree_with_an_untracked_file_it_does_not_edit(tmp_path, capsys, git_env):
    root = _project(tmp_path)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (root / "notes.txt").write_text("not python\n")
    code, _, _ = _migrate([root, "--in-place", "--strategy", "explicit"], capsys)
    assert code == 0 and ".npu()" in (root / "train.py").read_text()


def test_apply_copies_a_tree_holding_a_fifo_without_waiting_on_it(tmp_path, capsys):
    root = _project(tmp_path)
    os.mkfifo(root / "queue")
    code, _, _ = _migrate([root, "--apply", tmp_path / "copy", "--strategy", "explicit"], capsys)
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["train.py"]
    assert ".npu()" in (tmp_path / "copy" / "train.py").read_text()
