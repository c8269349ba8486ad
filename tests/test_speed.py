"""Worker processes, the per-file cache and the progress display (issue 14).

Every test that caches points the cache at its own tmp folder."""

from __future__ import annotations

import json
import os
import pickle
import pty
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from analyse import cache as cache_mod
from analyse import pipeline
from analyse.pipeline import Settings

ROOT = Path(__file__).resolve().parents[1]

# A small project touching every kind of cross-file state: classes subclassing a project nn.Module
# (resolver index), an extension built in setup.py and used elsewhere (cuda-extension pre-scan), precision
# advice once per report and project-level performance advice (finish), a file that does not parse.
PROJECT = {
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import CUDAExtension, BuildExtension
        setup(name="proj", ext_modules=[CUDAExtension("proj.fused_ops", ["csrc/fused.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "proj/__init__.py": "",
    "proj/base.py": """
        import torch.nn as nn


        class Base(nn.Module):
            pass
    """,
    "proj/net.py": """
        import torch
        from proj.base import Base
        from proj import fused_ops


        class Net(Base):
            def forward(self, x):
                idx = x.nonzero()
                y = torch.baddbmm(x, x, x)
                return fused_ops.run(idx) + y
    """,
    "proj/more.py": """
        import torch


        def f(a, b, c):
            return torch.baddbmm(a, b, c).cuda()
    """,
    "train.py": """
        import torch
        from torch.utils.data import DataLoader
        from proj.net import Net

        if __name__ == "__main__":
            model = Net().cuda()
            for x in DataLoader(range(4), batch_size=2):
                x = x.to("cuda")
                model(x).sum().backward()
    """,
    "broken.py": "def f(:\n    pass\n",
}


def write(root: Path, files=PROJECT) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def dump(result):
    return ([f.to_dict() for f in result.findings], [e.to_dict() for e in result.errors],
            result.files_analysed, result.lines_analysed)


@pytest.fixture
def parallel(monkeypatch):
    """Use worker processes even for a tiny project."""
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_BYTES", 0)


def test_fixture_project_has_cross_file_findings(tmp_path, kb):
    res = pipeline.run([write(tmp_path)], kb, settings=Settings(jobs=1))
    # one finding per place and API (#23): folded rules keep their codes in `also`
    by = {(c, f.path, f.line) for f in res.findings for c in [f.code] + [a["code"] for a in f.also]}
    assert ("NPU202", "proj/net.py", 8) in by            # x.nonzero(): x is a tensor because Base is an nn.Module
    assert ("NPU504", "proj/net.py", 10) in by           # fused_ops named by setup.py (pre-scan)
    assert [f.path for f in res.findings if f.code == "NPU801"] == ["proj/more.py"]  # once per report, first file
    assert any(f.code == "NPU808" for f in res.findings)  # project-level: trains, no TASK_QUEUE_ENABLE
    assert [(e.path, e.kind) for e in res.errors] == [("broken.py", "syntax")]
    assert len(res.summaries) == 6 and "broken" in res.failed


def test_same_report_for_every_jobs(tmp_path, kb, parallel):
    root = write(tmp_path)
    one = dump(pipeline.run([root], kb, settings=Settings(jobs=1)))
    for jobs in (2, 3, 8):
        assert dump(pipeline.run([root], kb, settings=Settings(jobs=jobs))) == one


def test_worker_death_is_redone_here(tmp_path, kb, parallel, monkeypatch):
    root = write(tmp_path)
    one = dump(pipeline.run([root], kb, settings=Settings(jobs=1)))
    real = pipeline._Worker.analyse
    main_pid = os.getpid()

    def dying(self, task):
        if os.getpid() != main_pid and task.relpath == "proj/net.py":
            os._exit(3)
        return real(self, task)

    monkeypatch.setattr(pipeline._Worker, "analyse", dying)
    assert dump(pipeline.run([root], kb, settings=Settings(jobs=2))) == one


@pytest.mark.parametrize("phase", ["prescan", "analyse"])
def test_every_worker_dying_still_gives_the_whole_report(tmp_path, kb, parallel, monkeypatch, phase):
    root = write(tmp_path)
    one = dump(pipeline.run([root], kb, settings=Settings(jobs=1)))
    real = getattr(pipeline._Worker, phase)
    main_pid = os.getpid()

    def dying(self, task):
        if os.getpid() != main_pid:
            os._exit(3)
        return real(self, task)

    monkeypatch.setattr(pipeline._Worker, phase, dying)
    assert dump(pipeline.run([root], kb, settings=Settings(jobs=2))) == one


def test_idle_worker_takes_files_of_a_busy_one(tmp_path, kb, parallel, monkeypatch):
    """All trees kept by worker 0: worker 1 still analyses some files (parsing them again)."""
    root = write(tmp_path)
    one = dump(pipeline.run([root], kb, settings=Settings(jobs=1)))
    real = pipeline._owned_queues
    seen = {}

    def lopsided(rels, tasks, n, owner):
        queues = real(rels, tasks, n, {rel: 0 for rel in rels})
        seen["queues"] = [list(q) for q in queues]
        return queues

    monkeypatch.setattr(pipeline, "_owned_queues", lopsided)
    pids = set()
    real_analyse = pipeline._Worker.analyse

    def note(self, task):
        res = real_analyse(self, task)
        res.errors.append(pipeline.AnalysisError(task.relpath, "internal", f"pid {os.getpid()}"))
        return res

    monkeypatch.setattr(pipeline._Worker, "analyse", note)
    res = pipeline.run([root], kb, settings=Settings(jobs=2))
    assert seen["queues"][1] == [] and len(seen["queues"][0]) >= 5
    pids = {e.message for e in res.errors if e.kind == "internal"}
    assert len(pids) == 2                                   # both workers analysed files
    res.errors = [e for e in res.errors if e.kind != "internal"]
    assert dump(res) == one


def test_warm_run_only_hashes_and_loads(tmp_path, kb, parallel, count_parses):
    root = write(tmp_path / "p")
    cold = pipeline.run([root], kb, settings=Settings(jobs=2, cache_dir=tmp_path / "c"))
    count_parses.clear()
    warm = pipeline.run([root], kb, settings=Settings(jobs=2, cache_dir=tmp_path / "c"))
    assert count_parses == []
    assert warm.cache_hits == 7
    assert dump(warm) == dump(cold) == dump(pipeline.run([root], kb, settings=Settings(jobs=1)))
    assert len(warm.summaries) == len(cold.summaries) == 6


def test_edit_reanalyses_only_that_file(tmp_path, kb, count_parses):
    root = write(tmp_path / "p")
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    pipeline.run([root], kb, settings=settings)
    (root / "proj/more.py").write_text("import torch\n\n\ndef f(a):\n    return a.cuda()\n")
    count_parses.clear()
    res = pipeline.run([root], kb, settings=settings)
    assert count_parses == ["proj/more.py"]
    # precision advice is once per report: now the next file using baddbmm reports it
    assert [f.path for f in res.findings if f.code == "NPU801"] == ["proj/net.py"]
    assert dump(res) == dump(pipeline.run([root], kb, settings=Settings(jobs=1)))


def test_cross_file_change_invalidates_dependent_results(tmp_path, kb):
    root = write(tmp_path / "p")
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    first = pipeline.run([root], kb, settings=settings)
    assert ("NPU202", "proj/net.py", 8) in {(c, f.path, f.line) for f in first.findings
                                           for c in [f.code] + [a["code"] for a in f.also]}
    (root / "proj/base.py").write_text("class Base:\n    pass\n")   # no longer an nn.Module: x is not a tensor
    again = pipeline.run([root], kb, settings=settings)
    assert ("NPU202", "proj/net.py", 8) not in {(c, f.path, f.line) for f in again.findings
                                               for c in [f.code] + [a["code"] for a in f.also]}
    assert dump(again) == dump(pipeline.run([root], kb, settings=Settings(jobs=1)))


def test_a_project_wide_change_is_analysed_again_in_workers(tmp_path, kb, parallel, monkeypatch):
    """The pre-scans of the unchanged files come from the cache, but a changed class base changes the facts
    every file was analysed against: the analysis of all of them runs again, in the workers (it ran in the
    main process alone, as slow as --jobs 1)."""
    root = write(tmp_path / "p")
    settings = Settings(jobs=2, cache_dir=tmp_path / "c")
    pipeline.run([root], kb, settings=settings)
    (root / "proj/base.py").write_text("class Base:\n    pass\n")
    main_pid = os.getpid()
    real = pipeline._Worker.analyse
    where = []

    def note(self, task):
        res = real(self, task)
        res.errors.append(pipeline.AnalysisError(task.relpath, "internal", "worker" if os.getpid() != main_pid
                                                 else "main"))
        return res

    monkeypatch.setattr(pipeline._Worker, "analyse", note)
    again = pipeline.run([root], kb, settings=settings)
    assert again.cache_hits == 6                       # every file but base.py: pre-scans reused
    ran = [e.message for e in again.errors if e.kind == "internal"]
    assert len(ran) == 6 and set(ran) == {"worker"}    # all six analysed again, none in this process
    again.errors = [e for e in again.errors if e.kind != "internal"]
    monkeypatch.setattr(pipeline._Worker, "analyse", real)
    assert dump(again) == dump(pipeline.run([root], kb, settings=Settings(jobs=1)))


@pytest.mark.parametrize("part", ["version", "package", "knowledge", "options", "mode"])
def test_each_key_part_invalidates(tmp_path, kb, count_parses, monkeypatch, part):
    from analyse.knowledge import load_knowledge

    root = write(tmp_path / "p")
    cache_dir = tmp_path / "c"
    pipeline.run([root], kb, settings=Settings(jobs=1, cache_dir=cache_dir))
    count_parses.clear()
    pipeline.run([root], kb, settings=Settings(jobs=1, cache_dir=cache_dir))
    assert count_parses == []
    run_kb, mode, options = kb, "script", ()
    if part == "version":
        monkeypatch.setattr("analyse.__version__", "999.0")
    elif part == "package":
        monkeypatch.setattr(cache_mod, "package_fingerprint", lambda memo=None: "a development change")
    elif part == "knowledge":
        run_kb = load_knowledge("2.1.0")
        assert run_kb.identifier != kb.identifier
    elif part == "options":
        options = (("with-thirdparty", "0123"),)
    else:
        mode = "thirdparty"
    pipeline.run([root], run_kb, mode=mode, settings=Settings(jobs=1, cache_dir=cache_dir, options=options))
    assert sorted(count_parses) == sorted(r for r in PROJECT if r.endswith(".py"))


def test_package_fingerprint_follows_source_and_data(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    data = tmp_path / "data"
    pkg.mkdir()
    data.mkdir()
    (pkg / "mod.py").write_text("X = 1\n")
    (data / "facts.yaml").write_text("a: 1\n")
    monkeypatch.setattr(cache_mod, "_PKG", pkg)
    monkeypatch.setattr("analyse.paths.data_dir", lambda: data)
    fp = cache_mod._package_fingerprint
    first = fp()
    (pkg / "mod.py").write_text("X = 2\n")
    second = fp()
    (data / "facts.yaml").write_text("a: 2\n")
    third = fp()
    assert len({first, second, third}) == 3


def test_with_thirdparty_report_change_is_seen(tmp_path, kb):
    from analyse.modes import run_script

    proj = tmp_path / "user"
    proj.mkdir()
    (proj / "use.py").write_text("from mylib.ops import fast\n\ny = fast(1)\n")
    rep = tmp_path / "lib.json"

    def report(status):
        return {"mode": "thirdparty", "inputs": ["mylib"], "thirdparty": {"functions": [
            {"qualname": "mylib.ops.fast", "path": "ops.py", "line": 1, "status": status, "reasons": ["x"],
             "via": ["mylib.ops.fast"]}], "aliases": {}}}

    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    rep.write_text(json.dumps(report("unsupported")))
    first = run_script([proj], kb, with_thirdparty=[str(rep)], settings=settings)
    rep.write_text(json.dumps(report("unknown")))
    second = run_script([proj], kb, with_thirdparty=[str(rep)], settings=settings)
    assert [f["code"] for f in first["findings"] if f["path"] == "use.py"] == ["NPU450"]
    assert [f["code"] for f in second["findings"] if f["path"] == "use.py"] == ["NPU451"]


def _sql(cache_dir, statement, *params):
    """Run one statement on a cache's database (the tests' way to damage or age its entries)."""
    import sqlite3

    db = sqlite3.connect(str(cache_dir / cache_mod.FORMAT / cache_mod.Cache.FILE), isolation_level=None)
    try:
        return db.execute(statement, params).fetchall()
    finally:
        db.close()


def test_corrupt_entries_are_misses(tmp_path, kb):
    root = write(tmp_path / "p")
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    want = dump(pipeline.run([root], kb, settings=settings))
    keys = [k for k in cache_mod.Cache(tmp_path / "c").keys() if k != cache_mod.fingerprint_memo_key()]
    assert len(keys) == 7
    for key in keys[:3]:
        _sql(tmp_path / "c", "UPDATE entries SET data = ? WHERE key = ?", b"not a pickle", key)
    _sql(tmp_path / "c", "UPDATE entries SET data = ? WHERE key = ?", pickle.dumps({"key": "another"}), keys[3])
    res = pipeline.run([root], kb, settings=settings)
    assert res.cache_hits == 3
    assert dump(res) == want


def test_a_damaged_cache_file_is_replaced(tmp_path, kb):
    root = write(tmp_path / "p")
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    want = dump(pipeline.run([root], kb, settings=settings))
    db = tmp_path / "c" / cache_mod.FORMAT / cache_mod.Cache.FILE
    for extra in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if extra.exists():
            extra.unlink()
    db.write_bytes(b"this is not an SQLite database, just 64 bytes of something else..")
    res = pipeline.run([root], kb, settings=settings)
    assert res.cache_hits == 0 and dump(res) == want          # a miss, and a fresh database made
    assert len(set(cache_mod.Cache(tmp_path / "c").keys()) - {cache_mod.fingerprint_memo_key()}) == 7
    assert pipeline.run([root], kb, settings=settings).cache_hits == 7


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root can write anywhere")
def test_an_unwritable_cache_folder_runs_without_cache(tmp_path, kb):
    root = write(tmp_path / "p")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        res = pipeline.run([root], kb, settings=Settings(jobs=1, cache_dir=ro / "c"))
    finally:
        ro.chmod(0o700)
    assert dump(res) == dump(pipeline.run([root], kb, settings=Settings(jobs=1)))


def test_a_cache_that_cannot_be_opened_is_off_for_the_run(tmp_path, kb):
    root = write(tmp_path / "p")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / cache_mod.FORMAT).write_text("a file where the cache folder should be")
    res = pipeline.run([root], kb, settings=Settings(jobs=2, cache_dir=tmp_path / "c"))
    assert dump(res) == dump(pipeline.run([root], kb, settings=Settings(jobs=1)))


def test_the_old_layout_is_removed_when_the_database_is_made(tmp_path):
    old = tmp_path / "v1" / "ab"
    old.mkdir(parents=True)
    (old / ("ab" + "0" * 38)).write_bytes(b"an entry of the file-per-entry layout")
    c = cache_mod.Cache(tmp_path)
    assert c.get("0" * 40) is None and (tmp_path / "v1").is_dir()   # reading alone makes nothing
    c.put("0" * 40, {"x": 1})
    c.flush()
    assert not (tmp_path / "v1").exists()
    assert cache_mod.Cache(tmp_path).get("0" * 40)["x"] == 1


def test_cache_is_bounded(tmp_path):
    c = cache_mod.Cache(tmp_path, max_bytes=10_000)
    for i in range(40):
        c.put(f"{i:040x}", {"blob": b"x" * 1000})
    c.flush()
    for i in range(40):   # entry i was last used at time 1,000,000 + i
        _sql(tmp_path, "UPDATE entries SET used = ? WHERE key = ?", 1_000_000 + i, f"{i:040x}")
    assert c.size() > 40_000
    removed = c.evict()
    left = c.keys()
    assert removed > 0 and len(left) == 40 - removed
    assert c.size() <= 10_000
    assert f"{39:040x}" in left and f"{0:040x}" not in left   # the oldest go first
    assert left == sorted(left)                                # and the rest keep their order of use
    assert c.get(f"{39:040x}")["blob"] == b"x" * 1000


def test_a_hit_refreshes_the_entry_for_eviction(tmp_path):
    c = cache_mod.Cache(tmp_path, max_bytes=10_000)
    for i in range(3):
        c.put(f"{i:040x}", {"blob": b"x" * 10})
    c.flush()
    for i in range(3):
        _sql(tmp_path, "UPDATE entries SET used = ? WHERE key = ?", 1_000_000 + i, f"{i:040x}")
    reader = cache_mod.Cache(tmp_path)
    assert reader.get(f"{0:040x}")["blob"] == b"x" * 10
    reader.flush()
    assert cache_mod.Cache(tmp_path).keys() == [f"{1:040x}", f"{2:040x}", f"{0:040x}"]


def _cli(args, env=None, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "analyse"] + args, cwd=str(ROOT), env=env, **kw)


def test_concurrent_runs_share_one_cache(tmp_path):
    root = write(tmp_path / "p")
    cache_dir = tmp_path / "c"
    procs = [_cli(["script", str(root), "-q", "--format", "json", "-o", str(tmp_path / f"o{i}"), "--cache-dir",
                   str(cache_dir), "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    third = _cli(["script", str(root), "-q", "--format", "json", "-o", str(tmp_path / "o2"), "--cache-dir",
                  str(cache_dir)], stderr=subprocess.PIPE)
    assert third.wait(timeout=300) == 0
    reports = [json.loads((tmp_path / f"o{i}" / "report.json").read_text()) for i in range(3)]
    ids = [sorted(f["id"] for f in r["findings"]) for r in reports]
    assert ids[0] == ids[1] == ids[2] and ids[0]
    # one entry per Python file (6 analysed, 1 that does not parse) and one for the whole report, whole
    # (and the memo of the tool's own fingerprint)
    assert len(set(cache_mod.Cache(cache_dir).keys()) - {cache_mod.fingerprint_memo_key()}) == 8
    assert _sql(cache_dir, "PRAGMA integrity_check") == [("ok",)]


def test_no_cache_writes_nothing_and_cache_dir_is_used(tmp_path):
    root = write(tmp_path / "p")
    xdg = tmp_path / "xdg"
    env_extra = {"XDG_CACHE_HOME": str(xdg)}
    p = _cli(["script", str(root), "-q", "--format", "json", "-o", str(tmp_path / "o"), "--no-cache"],
             env=env_extra)
    assert p.wait(timeout=300) == 0
    assert not xdg.exists()
    p = _cli(["script", str(root), "-q", "--format", "json", "-o", str(tmp_path / "o")],
             env=env_extra)
    assert p.wait(timeout=300) == 0
    # an entry per Python file (6 analysed, 1 that does not parse) and one for the whole report
    assert len(set(cache_mod.Cache(xdg / "npu-analyse").keys()) - {cache_mod.fingerprint_memo_key()}) == 8


@pytest.mark.parametrize("version, files, proc, expect", [
    ("v2", {"cpu.max": "150000 100000\n"}, "0::/\n", 2),
    ("v2", {"cpu.max": "max 100000\n"}, "0::/\n", None),
    ("v2 own folder", {"ci/job/cpu.max": "300000 100000\n", "cpu.max": "max 100000\n"}, "0::/ci/job\n", 3),
    ("v1", {"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"},
     "4:cpu,cpuacct:/\n1:name=systemd:/\n", 1),
    ("v1 none", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, "4:cpu,cpuacct:/\n", None),
    ("no cgroup files", {}, "0::/\n", None),
    ("unreadable quota", {"cpu.max": "lots\n"}, "0::/\n", None),
])
def test_cgroup_cpu_quota(tmp_path, version, files, proc, expect):
    """A container's CPU limit (docker --cpus, a Kubernetes limit) counts, as the quota rounded up."""
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "cgroup.proc").write_text(proc)
    assert pipeline._cgroup_cpu_quota(str(root), str(tmp_path / "cgroup.proc")) == expect


def test_default_jobs_is_the_cpus_this_process_may_use(tmp_path, monkeypatch):
    monkeypatch.delenv("NPU_ANALYSE_JOBS", raising=False)
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(pipeline.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    (tmp_path / "proc").write_text("0::/\n")
    assert pipeline.available_cpus(str(tmp_path), str(tmp_path / "proc")) == 2     # the quota
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert pipeline.available_cpus(str(tmp_path), str(tmp_path / "proc")) == 8     # the affinity mask
    assert pipeline.available_cpus(str(tmp_path), str(tmp_path / "missing")) == 8
    monkeypatch.setenv("NPU_ANALYSE_JOBS", "3")
    assert pipeline.default_jobs() == min(3, pipeline.available_cpus())   # never more than the CPUs


def test_jobs_must_be_positive(tmp_path):
    p = _cli(["script", str(tmp_path), "--jobs", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _out, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "--jobs" in err


def _run_with_stderr_tty(args):
    """Run the CLI with stderr on a pseudo-terminal; returns (stderr bytes, stdout bytes)."""
    master, slave = pty.openpty()
    p = _cli(args, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        r, _w, _x = select.select([master], [], [], 120)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = p.stdout.read()
    p.wait(timeout=120)
    os.close(master)
    return b"".join(chunks), out


def test_progress_on_a_terminal_only(tmp_path):
    root = write(tmp_path / "p")
    args = ["script", str(root), "--format", "json", "-o", str(tmp_path / "o"), "--no-cache", "--no-color"]
    err, _out = _run_with_stderr_tty(args)
    assert b"\r" in err and b"files" in err and b"ETA" in err and b"analysing" in err
    assert b"7/7 files" in err or b"6/6 files" in err
    piped = _cli(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = piped.communicate(timeout=300)
    assert piped.returncode == 0
    assert b"\r" not in err and b"\x1b" not in err and b"ETA" not in err
    assert b"\r" not in out and b"\x1b" not in out
    quiet_err, _ = _run_with_stderr_tty(args + ["-q"])
    assert b"ETA" not in quiet_err and b"\r" not in quiet_err


def test_warm_script_report_parses_nothing(tmp_path, kb, parallel, count_parses):
    """Entry points and reach read per-module facts made by the workers: no tree in the main process."""
    from analyse.modes import run_script

    root = write(tmp_path / "p")
    settings = Settings(jobs=2, cache_dir=tmp_path / "c")
    cold = run_script([root], kb, settings=settings)
    count_parses.clear()
    warm = run_script([root], kb, settings=settings)
    assert count_parses == []
    plain = run_script([root], kb, settings=Settings(jobs=1))
    for r in (cold, warm, plain):
        r["summary"].pop("duration_s", None)
    assert warm == cold == plain
    assert {f["reach"]["status"] for f in warm["findings"] if f["path"] == "proj/net.py"} == {"reachable"}


# --------------------------------------------------------------------------- whole-report records

def _invoke(args):
    from click.testing import CliRunner

    from analyse.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def analysed(monkeypatch):
    """Count the runs that analyse (a whole-report hit does not)."""
    from analyse import cli as cli_mod

    calls = []
    real = cli_mod._analyse

    def spy(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(cli_mod, "_analyse", spy)
    return calls


def _report(out: Path) -> dict:
    rep = json.loads((out / "report.json").read_text())
    rep["summary"].pop("duration_s")
    rep["summary"].pop("analysis_s", None)   # the analysis time (kept from the run that made a cached report)
    rep["summary"].pop("from_cache", None)   # set on a whole-report hit (tests/test_trust.py)
    return rep


def test_unchanged_tree_reuses_the_whole_report(tmp_path, analysed):
    root = write(tmp_path / "p")
    base = ["script", str(root), "-q", "--format", "json", "--cache-dir", str(tmp_path / "c"), "--exit-zero"]
    assert _invoke(base + ["-o", str(tmp_path / "o1")]).exit_code == 0
    assert analysed == ["script"]
    assert _invoke(base + ["-o", str(tmp_path / "o2")]).exit_code == 0
    assert analysed == ["script"]                      # the second run only hashed and loaded
    first, second = _report(tmp_path / "o1"), _report(tmp_path / "o2")
    assert first == second and any(f["code"] == "NPU002" for f in second["findings"])
    plain = _invoke(["script", str(root), "-q", "--format", "json", "--no-cache", "--exit-zero",
                     "-o", str(tmp_path / "o3")])
    assert plain.exit_code == 0 and _report(tmp_path / "o3") == first
    # the gate still applies to a reused report
    assert _invoke(base[:-1] + ["-o", str(tmp_path / "o4"), "--fail-on", "manual"]).exit_code == 1


@pytest.mark.parametrize("change", ["python", "kernel", "other-file", "new-file", "select", "torch-version",
                                    "exclude", "entry", "probe-results"])
def test_any_change_analyses_again(tmp_path, analysed, change):
    root = write(tmp_path / "p")
    (root / "csrc").mkdir()
    (root / "csrc" / "fused.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    (root / "README.md").write_text("proj\n")
    probe = tmp_path / "probe.json"
    doc = {"schema_version": "1", "tool": {"name": "npu-analyse", "version": "0"}, "device": "npu:0",
           "environment": {"torch": "2.8.0", "torch_npu": "2.8.0", "device_name": "Ascend910B", "python": "3.11"},
           "results": [{"op": "torch.baddbmm", "dtype": "float32", "status": "pass", "samples": 2}],
           "summary": {"by_status": {}}}
    probe.write_text(json.dumps(doc))
    base = ["script", str(root), "-q", "--format", "json", "--cache-dir", str(tmp_path / "c"), "--exit-zero",
            "-o", str(tmp_path / "o")]
    extra = []
    assert _invoke(base).exit_code == 0
    if change == "python":
        (root / "proj" / "more.py").write_text((root / "proj" / "more.py").read_text() + "\n# edited\n")
    elif change == "kernel":
        (root / "csrc" / "fused.cu").write_text("__global__ void k(float* x) { x[0] = 2; }\n")
    elif change == "other-file":
        (root / "README.md").write_text("proj, edited\n")
    elif change == "new-file":
        (root / "proj" / "extra.py").write_text("import torch\n")
    elif change == "select":
        extra = ["--select", "NPU0"]
    elif change == "torch-version":
        from analyse.knowledge import TORCH_VERSIONS

        extra = ["--torch-version", sorted(TORCH_VERSIONS)[0]]
    elif change == "exclude":
        extra = ["--exclude", "proj/more.py"]
    elif change == "entry":
        extra = ["--entry", str(root / "train.py")]
    elif change == "probe-results":
        extra = ["--probe-results", str(probe)]
    assert _invoke(base + extra).exit_code == 0
    assert analysed == ["script", "script"]
    assert _invoke(base + extra).exit_code == 0
    assert analysed == ["script", "script"]           # and that run's report is reused in turn
    if change == "probe-results":
        doc["results"][0]["status"] = "error"
        probe.write_text(json.dumps(doc))
        assert _invoke(base + extra).exit_code == 0
        assert analysed == ["script", "script", "script"]


def test_baseline_and_unused_ignores_always_analyse(tmp_path, analysed):
    root = write(tmp_path / "p")
    base = ["script", str(root), "-q", "--format", "json", "--cache-dir", str(tmp_path / "c"), "--exit-zero",
            "-o", str(tmp_path / "o")]
    assert _invoke(base).exit_code == 0
    assert _invoke(base + ["--write-baseline", str(tmp_path / "b.json")]).exit_code == 0
    assert _invoke(base + ["--warn-unused-ignores"]).exit_code == 0
    assert analysed == ["script"] * 3
    # a baseline file is part of the key: changing its content analyses again
    assert _invoke(base + ["--baseline", str(tmp_path / "b.json")]).exit_code == 0
    assert _invoke(base + ["--baseline", str(tmp_path / "b.json")]).exit_code == 0
    assert analysed == ["script"] * 4
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["findings"]
    doc["findings"] = doc["findings"][1:]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert _invoke(base + ["--baseline", str(tmp_path / "b.json")]).exit_code == 0
    assert analysed == ["script"] * 5


def test_thirdparty_report_is_reused_too(tmp_path, analysed):
    root = write(tmp_path / "p")
    base = ["thirdparty", str(root), "-q", "--format", "json", "--cache-dir", str(tmp_path / "c"), "--exit-zero"]
    assert _invoke(base + ["-o", str(tmp_path / "o1")]).exit_code == 0
    assert _invoke(base + ["-o", str(tmp_path / "o2")]).exit_code == 0
    assert analysed == ["thirdparty"]
    assert _report(tmp_path / "o1") == _report(tmp_path / "o2")
    (root / "csrc").mkdir()
    (root / "csrc" / "fused.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    assert _invoke(base + ["-o", str(tmp_path / "o3")]).exit_code == 0
    assert analysed == ["thirdparty", "thirdparty"]


def test_report_key_reads_sources_and_stats_other_files(tmp_path, monkeypatch):
    root = write(tmp_path / "p")
    (root / "data").mkdir()
    (root / "data" / "weights.bin").write_bytes(b"\x00" * 1000)
    (root / "csrc").mkdir()
    (root / "csrc" / "k.cu").write_text("__global__ void k() {}\n")
    before = cache_mod.tree_state([root])
    read = []
    import analyse.files as files_mod

    real_read = files_mod.read_regular_file

    def spy(path, limit=files_mod.MAX_FILE_BYTES):
        read.append(Path(path).name)
        return real_read(path, limit)

    monkeypatch.setattr(files_mod, "read_regular_file", spy)
    assert cache_mod.tree_state([root]) == before
    assert "weights.bin" not in read and {"k.cu", "net.py", "setup.py"} <= set(read)
    # content of a source counts, a data file counts by size and modification time
    os.utime(root / "data" / "weights.bin", ns=(1, 1))
    assert cache_mod.tree_state([root]) != before
    touched = cache_mod.tree_state([root])
    (root / "csrc" / "k.cu").write_text("__global__ void k() { }\n")
    assert cache_mod.tree_state([root]) not in (before, touched)


def test_collect_less_nests_and_restores_the_collector():
    import gc

    from analyse.gcpolicy import GC_THRESHOLDS, collect_less

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    with collect_less():
        assert gc.get_threshold() == GC_THRESHOLDS and gc.get_freeze_count() == frozen
        with collect_less(freeze=True):
            assert gc.get_freeze_count() > frozen
        assert gc.get_threshold() == GC_THRESHOLDS and gc.get_freeze_count() == frozen
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen


def test_kept_trees_are_out_of_the_collectors_sight_and_come_back(tmp_path, kb, monkeypatch):
    """A worker freezes each tree it keeps for the analysis; the run's end unfreezes everything."""
    import gc

    frozen_at = []
    real_prescan = pipeline._Worker.prescan

    def prescan(self, task):
        pre = real_prescan(self, task)
        if task.relpath in self.trees:
            frozen_at.append((task.relpath, gc.get_freeze_count()))
        return pre

    monkeypatch.setattr(pipeline._Worker, "prescan", prescan)
    before = gc.get_freeze_count()
    result = pipeline.run([write(tmp_path / "p")], kb, settings=Settings(jobs=1, cache_dir=None))
    assert {rel for rel, _n in frozen_at} == {"setup.py", "proj/__init__.py", "proj/base.py", "proj/net.py",
                                               "proj/more.py", "train.py"}
    counts = [n for _rel, n in frozen_at]
    assert all(b > a for a, b in zip(counts, counts[1:])), counts   # every kept tree adds to the frozen objects
    assert gc.get_freeze_count() == before
    assert any(f.path == "proj/net.py" for f in result.findings)


def test_collect_never_turns_the_collector_off_and_freezes_what_the_block_left():
    import gc

    from analyse.gcpolicy import collect_never

    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        with collect_never():
            assert not gc.isenabled()
            left = [[i] for i in range(1000)]   # tracked objects made in the block and alive at its end
        assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(left)
        gc.disable()
        with collect_never():
            pass
        assert not gc.isenabled()   # the state before the block comes back
        gc.enable()
    finally:
        gc.unfreeze()


def test_one_process_run_with_kept_trees_collects_nothing_until_its_end(tmp_path, kb, monkeypatch):
    """--jobs 1 with the trees kept: no automatic collection runs during the per-file work (each kept
    tree is frozen anyway), and the collector is on again after the run."""
    import gc

    seen = []
    real_analyse = pipeline._Worker.analyse

    def analyse(self, task):
        seen.append(gc.isenabled())
        return real_analyse(self, task)

    monkeypatch.setattr(pipeline._Worker, "analyse", analyse)
    result = pipeline.run([write(tmp_path / "p")], kb, settings=Settings(jobs=1, cache_dir=None))
    assert seen and not any(seen)
    assert gc.isenabled()
    assert any(f.path == "proj/net.py" for f in result.findings)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is a Linux feature")
def test_background_import_runs_at_the_lowest_priority_of_its_own_thread(monkeypatch):
    import threading

    calls = []
    monkeypatch.setattr(pipeline.os, "setpriority", lambda which, who, prio: calls.append((which, who, prio)))
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    pipeline._import_in_background("colorsys")
    assert "colorsys" in sys.modules
    assert calls == [(os.PRIO_PROCESS, threading.get_native_id(), 19)]   # this thread, not the process


GUARDED = {
    "lib/ops.py": """
        import torch


        def fused(x):
            return x


        def plain(x):
            return x


        def forward(x, use_fused=False):
            if use_fused:
                return fused(x)
            else:
                return plain(x)
    """,
}


def test_only_library_runs_build_call_edge_conditions(tmp_path, kb):
    """A call's edge condition is read by the library statuses only (guarded edges, external calls):
    script mode's summaries leave them out (building one per call was a tenth of a script run), a
    thirdparty run keeps them."""
    root = write(tmp_path, GUARDED)
    script = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1))
    library = pipeline.run([root], kb, mode="thirdparty", settings=Settings(jobs=1))
    (s,) = [s for s in script.summaries if s.relpath == "lib/ops.py"]
    (t,) = [t for t in library.summaries if t.relpath == "lib/ops.py"]
    assert s.calls == t.calls and s.guards == {}
    conds = {t.calls[i][3]: c for i, c in t.guards.items()}
    assert set(conds) == {"lib.ops.fused"}   # the else branch is the default path
    assert conds["lib.ops.fused"] == "only when a caller sets `use_fused` (off by default, lib/ops.py:13)"


def test_only_script_runs_build_reach_facts(tmp_path, kb):
    """Entry points and reach are script mode's: a thirdparty run's summaries carry no reach facts."""
    from analyse.reach import ModuleFacts

    root = write(tmp_path, GUARDED)
    script = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1))
    library = pipeline.run([root], kb, mode="thirdparty", settings=Settings(jobs=1))
    (s,) = [s for s in script.summaries if s.relpath == "lib/ops.py"]
    (t,) = [t for t in library.summaries if t.relpath == "lib/ops.py"]
    assert set(s.reach) == set(ModuleFacts.__annotations__) and s.reach["call_guards"]
    assert t.reach == {} and t.calls == s.calls


def test_a_builtin_call_gets_no_edge_condition_unless_the_project_defines_builtins(tmp_path, kb):
    """The linker makes no edge of ``len(x)`` (``builtins.len`` is external): its condition is never read,
    so a thirdparty run does not build it -- unless a project package is named ``builtins``."""
    files = {"lib/ops.py": GUARDED["lib/ops.py"] + """

        def size(x, use_len=False):
            if use_len:
                return len(x)
            return 0
    """}
    root = write(tmp_path / "a", files)
    (t,) = [t for t in pipeline.run([root], kb, mode="thirdparty", settings=Settings(jobs=1)).summaries
            if t.relpath == "lib/ops.py"]
    assert {t.calls[i][3] for i in t.guards} == {"lib.ops.fused"}
    assert any(c[3] == "builtins.len" for c in t.calls)
    root = write(tmp_path / "b", dict(files, **{"builtins/__init__.py": "def len(x):\n    return 0\n"}))
    (t,) = [t for t in pipeline.run([root], kb, mode="thirdparty", settings=Settings(jobs=1)).summaries
            if t.relpath == "lib/ops.py"]
    assert {t.calls[i][3] for i in t.guards} == {"lib.ops.fused", "builtins.len"}


def test_a_local_container_is_read_once_per_binding(tmp_path, kb, monkeypatch):
    """``run(opts)`` in every line of a function read ``opts = dict(lr=1)`` again each time (it registers
    no callable, so nothing said it was read): a binding's literal is read once per summary, and a name
    argument no literal is bound to is not looked up; the calls and registrations are the same."""
    from analyse import callgraph

    root = write(tmp_path, {"cli.py": """
        import fire


        def train():
            pass


        def evaluate():
            pass


        def main(cfg):
            commands = {"train": train, "eval": evaluate}
            opts = dict(lr=1)
            fire.Fire(commands)
            run(commands)
            run(opts)
            run(opts)
            run(cfg)
    """})
    reads = []
    orig = callgraph._literal_entries

    def spy(value, r, key="", depth=0):
        if depth == 0:
            reads.append(value.lineno)
        return orig(value, r, key, depth)

    monkeypatch.setattr(callgraph, "_literal_entries", spy)
    (s,) = [s for s in pipeline.run([root], kb, mode="script", settings=Settings(jobs=1)).summaries
            if s.relpath == "cli.py"]
    assert sorted(reads) == [13, 14]
    assert sorted(s.registrations) == [("cli.main#commands", "eval", "cli.evaluate"),
                                       ("cli.main#commands", "train", "cli.train")]
    lookups = sorted((line, a) for _c, line, kind, a, _b in s.calls if kind == callgraph.K_LOOKUP)
    assert lookups == [(15, "cli.main#commands"), (16, "cli.main#commands"), (17, "cli.main#opts"),
                       (18, "cli.main#opts")]
    assert not hasattr(s, "_containers_read")


def test_star_import_exports_are_made_once_per_module(monkeypatch):
    """Every name looked up through ``from pkg.ops import *`` made the exporting module's public names again."""
    from analyse import callgraph
    from analyse.callgraph import Linker, ModuleSummary

    ops = ModuleSummary(modname="pkg.ops", relpath="pkg/ops.py", is_package=False, n_lines=6, top_names={"f", "g", "_h"})
    ops.functions.update({"pkg.ops.f": (1, 2), "pkg.ops.g": (3, 4), "pkg.ops._h": (5, 6)})
    user = ModuleSummary(modname="pkg.user", relpath="pkg/user.py", is_package=False, n_lines=1,
                         star_imports=["pkg.ops"])
    made = []
    orig = ModuleSummary.exported
    monkeypatch.setattr(callgraph.ModuleSummary, "exported", lambda self: made.append(self.modname) or orig(self))
    lk = Linker([ops, user])
    assert [lk.canonical(f"pkg.user.{n}") for n in ("f", "g")] == [("def", "pkg.ops.f"), ("def", "pkg.ops.g")]
    assert lk.canonical("pkg.user._h")[0] != "def" and lk.canonical("pkg.user.x")[0] != "def"
    assert made == ["pkg.ops"]


def test_reach_asks_no_guard_of_a_line_whose_calls_all_leave_the_project(tmp_path, kb):
    """``torch.zeros(3, dtype=torch.float32)`` hands a reference (``torch.float32``) to a call: neither makes an
    edge into the project, so the line's guard is not made; a reference to a project function keeps it."""
    from analyse.reach import call_lines

    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": """
        import torch


        def step(x):
            return x


        def main(use_gpu=False):
            if use_gpu:
                x = torch.zeros(3, dtype=torch.float32)
                y = map(step, [x])
            return y
    """})
    res = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1))
    (s,) = [s for s in res.summaries if s.relpath == "pkg/train.py"]
    assert {(line, kind) for _c, line, kind, _a, _b in s.calls} >= {(10, "name"), (10, "ref"), (11, "ref")}
    assert call_lines(s, {x.modname for x in res.summaries}) == {11}
    assert set(s.reach["call_guards"]) == {11}


def _tree(text: str):
    from analyse.project import build_module

    return build_module(textwrap.dedent(text), "m", "m.py")


LOOPS = """
    for epoch in range(3):               # INVALID shape: backward two loops down
        for step in range(10):
            while True:
                loss = model(x)
                loss.backward()
                break
        for v in range(2):               # VALID shape: no backward under it
            print(v)
    while not done:                      # backward inside a function defined in the loop: still under it
        def closure():
            return model(x).sum().backward()
        opt.step(closure)
    for i in items:                      # VALID shape: `backward` as a name, not a call of an attribute
        backward = i
"""


def test_training_loops_are_found_from_their_backward_calls_not_by_walking_every_loop(monkeypatch):
    """Each ``for`` / ``while`` walked its whole subtree looking for ``.backward()`` (nested loops were walked
    once per level): the loops holding one are found by one climb from each ``backward`` call, with the same
    answer as the walk of each loop."""
    from astroid import nodes

    from analyse.passes import advice

    tree = _tree(LOOPS)
    loops = [n for n in advice.walk(tree) if isinstance(n, (nodes.For, nodes.While))]
    walked = []
    monkeypatch.setattr(advice, "walk", lambda n: walked.append(n) or iter(()))
    found = advice._backward_loops(tree)
    assert walked == []
    assert [n.lineno for n in loops if id(n) in found] == [2, 3, 4, 10]
    monkeypatch.undo()
    assert {id(n) for n in loops if advice.PerformanceAdvicePass._calls_backward(n)} == found


FLAGS = """
    class Outer:
        def __init__(self):
            self.a = 1
            self.b = other.b = 2

        class Inner:
            def f(self):
                self.a = 3

    class Other:
        def g(self):
            if ok():
                self.flag = True
            else:
                self.flag = False
"""


def test_self_assignment_tables_are_made_for_all_classes_of_a_module_at_once(monkeypatch):
    """``_branch_flag`` walked each class it asked about for its ``self.<attr> = ...`` targets; one pass over the
    module's AssignAttr nodes gives every class its table (targets in nested classes count for the outer one,
    as in the walk), and no class is walked."""
    import importlib

    from astroid import nodes

    from analyse.syntax import nodes_of

    build = importlib.import_module("analyse.conditions.build")   # the module (the package exports its function)
    tree = _tree(FLAGS)
    classes = list(nodes_of(tree, nodes.ClassDef))
    asked = []
    real = build.nodes_of
    monkeypatch.setattr(build, "nodes_of", lambda n, *cls: asked.append(type(n).__name__) or real(n, *cls))
    build._self_sets(classes[2])
    assert "ClassDef" not in asked
    tables = {c.name: {k: [a.lineno for a in v] for k, v in c.__dict__["_npu_self_sets"].items()} for c in classes}
    assert tables == {"Outer": {"a": [4, 9], "b": [5]}, "Inner": {"a": [9]}, "Other": {"flag": [14, 16]}}
    for c in classes:
        walked = {}
        for a in real(c, nodes.AssignAttr):
            if isinstance(a.expr, nodes.Name) and a.expr.name == "self":
                walked.setdefault(a.attrname, []).append(a)
        assert c.__dict__["_npu_self_sets"] == walked


def test_a_subscript_without_a_possible_mask_asks_nothing_of_its_receiver(tmp_path, kb, monkeypatch):
    """``x[0]``, ``x[:, 1:]``, ``d["key"]``: no index is a mask, so the dynamic-shape pass does not ask whether the
    receiver is a tensor (a type question per subscript); ``x[x > 0]`` is still a mask read."""
    from analyse.passes import dynamic_shape

    root = write(tmp_path, {"m.py": """
        import torch

        x = torch.ones(3)
        a = x[0]
        b = x[:, 1:]
        c = x[x > 0]
    """})
    asked = []
    real = dynamic_shape._Analysis.tensorish

    def spy(self, node, depth=0):
        if depth == 0:
            asked.append(node.lineno)
        return real(self, node, depth)

    monkeypatch.setattr(dynamic_shape._Analysis, "tensorish", spy)
    res = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1))
    assert [(f.code, f.line) for f in res.findings if f.code == "NPU602"] == [("NPU602", 6)]
    assert 4 not in asked and 6 in asked


def test_the_reads_of_a_functions_imported_names_come_from_one_walk(monkeypatch):
    """``from lib import A, B, C`` inside a function: each name's reads were found by a walk of the whole function
    (``nodes_of_class``); one walk per scope gives every name its reads, in the same order."""
    from astroid import nodes

    from analyse.passes import third_party

    tree = _tree("""
        def probe(m):
            from gpulib.layers import A, B, C
            if isinstance(m, (A, B)):
                return True
            return issubclass(type(m), C) or isinstance(m, A)
    """)
    (imp,) = [n for n in third_party.walk(tree) if isinstance(n, nodes.ImportFrom)]
    fn = imp.scope()
    walks = []
    real = third_party.nodes_of
    monkeypatch.setattr(third_party, "nodes_of", lambda n, *cls: walks.append(n) or real(n, *cls))
    monkeypatch.setattr(type(fn), "nodes_of_class", lambda *a, **k: pytest.fail("walked per name"), raising=False)
    assert third_party._type_only_import(imp) is True
    assert walks == [fn]
    reads = fn.__dict__["_npu_name_reads"]
    assert [n.lineno for n in reads["A"]] == [4, 6] and [n.lineno for n in reads["C"]] == [6]


def test_an_import_helper_method_is_told_from_its_class_frame_without_inferring_decorators(monkeypatch):
    """``import_helper_shape`` asked astroid's ``is_method()``, whose ``type`` infers every decorator (loading the
    modules they come from: a fifth of a library run on DeepSpeed); a ``def`` in a class body is a method for
    the parameter count either way, so the class frame answers."""
    from astroid import nodes

    from analyse.resolve import import_helper_shape

    tree = _tree("""
        import importlib
        from somewhere import cached


        class Loader:
            @cached
            def load(self, module):
                mod = importlib.import_module(module)
                return mod

            @staticmethod
            def load_static(module):
                mod = importlib.import_module(module)
                return mod


        def load(module, name):
            mod = importlib.import_module(module)
            return getattr(mod, name), mod
    """)
    monkeypatch.setattr(nodes.FunctionDef, "type", property(lambda self: pytest.fail("decorators inferred")))
    fns = {f.qname(): f for f in tree.nodes_of_class(nodes.FunctionDef)}
    got = {q: import_helper_shape(f) for q, f in fns.items()}
    assert got["m.Loader.load"].module == (0, "module")          # `self` is not counted
    assert got["m.Loader.load_static"].module == (0, "module")
    assert got["m.load"].module == (0, "module") and got["m.load"].item == 1


PACKAGE_ONLY = {
    "pkg/__init__.py": "from pkg import table\n",
    "pkg/table.py": "ACTS = {}\nfor k in ('relu', 'gelu'):\n    ACTS[k] = k\n",   # top-level work, imported
    "pkg/ops.py": """
        import torch

        try:
            import fused_ext
        except ImportError:
            fused_ext = None


        def helper(x):
            return x


        def run(x, fast=False):
            if fast:
                return helper(x.cuda())
            return helper(x)
    """,
}


def test_a_project_without_a_possible_program_builds_no_reach_guards(tmp_path, kb, monkeypatch):
    """The guards of calls and imports in the reach facts are read only by the walk from an entry point. A package
    folder with no ``__main__`` block, no top-level work outside modules the project imports, no packaging file
    and no ``--entry`` (timm's package: about a fifteenth of its run went to them) has no entry point: it has no
    reach facts (before speed42: facts without guards). A program added
    later is an analysis context of its own: every file is analysed again, guards included (INVALID before: the
    guards were made either way)."""
    from analyse import reach
    from analyse.entrypoints import may_have_programs

    asked = []
    real = reach.guard_of
    monkeypatch.setattr(reach, "guard_of", lambda n, memo=None: asked.append(n.lineno) or real(n, memo))
    root = write(tmp_path / "p", PACKAGE_ONLY)
    cache_dir = tmp_path / "cache"
    res = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1, cache_dir=cache_dir),
                       programs=lambda pres: may_have_programs([root], (), pres))
    (s,) = [s for s in res.summaries if s.relpath == "pkg/ops.py"]
    assert asked == []
    # no reach facts at all (speed42): without a possible program no entry point is discovered and no reach walked
    assert s.reach == {}
    # VALID: a script with a __main__ block makes the same files' guards needed (the cached results are not reused)
    (root / "train.py").write_text("from pkg.ops import run\n\nif __name__ == '__main__':\n    run(1)\n")
    res = pipeline.run([root], kb, mode="script", settings=Settings(jobs=1, cache_dir=cache_dir),
                       programs=lambda pres: may_have_programs([root], (), pres))
    (s,) = [s for s in res.summaries if s.relpath == "pkg/ops.py"]
    assert 15 in asked
    assert [ln for ln, lst in s.reach["call_guards"].items()] == [15]
    assert s.reach["imports"][1][4] is not None   # `import fused_ext` under its try


def test_may_have_programs_is_a_superset_of_entry_point_discovery(tmp_path):
    from analyse.entrypoints import may_have_programs
    from analyse.pipeline import Prescan

    root = tmp_path / "p"
    root.mkdir()
    plain = [Prescan("pkg/ops.py", "pkg.ops")]
    assert may_have_programs([root], (), plain) is False
    assert may_have_programs([root], ("pkg/ops.py",), plain) is True               # --entry
    assert may_have_programs([root / "pkg" / "ops.py"], (), plain) is True         # a file given
    assert may_have_programs([root], (), [Prescan("t.py", "t", program=True)]) is True
    assert may_have_programs([root], (), [Prescan("hubconf.py", "hubconf")]) is True
    # top-level work: a program unless a project module imports the file (or it is a package's __init__)
    top = Prescan("pkg/table.py", "pkg.table", top_level=True)
    assert may_have_programs([root], (), [top]) is True
    assert may_have_programs([root], (), [top, Prescan("pkg/__init__.py", "pkg", imports=("pkg.table",))]) is False
    assert may_have_programs([root], (), [Prescan("pkg/__init__.py", "pkg", top_level=True)]) is False
    for name in ("pyproject.toml", "setup.cfg", "setup.py", "cog.yaml"):
        (root / name).write_text("")
        assert may_have_programs([root], (), plain) is True
        (root / name).unlink()


def test_astroid_containers_have_no_subclasses():
    """The analysis tests ``type(x) is nodes.Tuple`` (and List, Set) instead of isinstance, which runs ABCMeta's
    check for these three (see analyse.syntax): right only while astroid has no subclass of them."""
    from astroid import nodes

    for cls in (nodes.List, nodes.Tuple, nodes.Set):
        assert cls.__subclasses__() == [], cls


_SCOPE_CASES = '''
import torch
@deco(lambda q: q + 1)
def f(a, b=lambda z=1: z, *, c: int = 2) -> "T":
    g = lambda x, y=(lambda w: w): [v * x for v in range(y)]
    class Inner(Base, metaclass=M):
        k = lambda self: self.k
        def m(self, t=lambda: 0):
            return {i: j for i, j in t()}
    async def h():
        async with a as b:
            await b
    return g, Inner, h
class Outer:
    attr = [lambda: 1]
    @property
    def p(self):
        return (lambda: self)()
x = lambda: (yield)
'''


def test_parse_walk_gives_the_scope_lists_of_the_separate_walk():
    """The parse walk fills the per-scope node lists of analyse.syntax.scope_nodes in post-order and reverses them;
    they must equal the separate walk's (the pre-order that takes the last child first) on every tree: this file's
    cases and the analyser's own sources."""
    from analyse.project import parse_source
    from analyse.syntax import _scope_lists

    sources = [_SCOPE_CASES] + [p.read_text(encoding="utf-8") for p in sorted(Path(pipeline.__file__).parent.rglob("*.py"))]
    for i, text in enumerate(sources):
        tree = parse_source(text, Path("m.py"), "m.py", "m")[0].tree
        got, want = tree._npu_scope_nodes, _scope_lists(tree)
        for g, w in zip(got, want):
            assert g.keys() == w.keys(), i
            for k in w:
                assert [id(n) for n in g[k]] == [id(n) for n in w[k]], (i, k)
