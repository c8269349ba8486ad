"""Start-up of a whole-report cache hit (issue 24 point 5): the package fingerprint is memoised in the cache
by the tool files' stat signatures (so a warm run reads none of the tool's own files), the memo is safe
(any write to a tool file misses it, a damaged memo entry is a miss), and a warm run imports neither
astroid nor networkx nor jinja2."""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import analyse.cache as cache_mod
from analyse.cache import Cache

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """\
import torch

model = torch.nn.Linear(4, 2).cuda()
torch.cuda.synchronize()
"""


@pytest.fixture
def fresh_fingerprint(monkeypatch):
    """A process-wide fingerprint not yet computed, and tool files of any age memoised."""
    monkeypatch.setattr(cache_mod, "_FINGERPRINT", None)
    monkeypatch.setattr(cache_mod, "FINGERPRINT_SOURCE", "")
    monkeypatch.setattr(cache_mod, "_RACY_NS", 0)


@pytest.fixture
def tool(tmp_path, monkeypatch):
    """A small stand-in for the package and its data folder."""
    pkg, data = tmp_path / "pkg", tmp_path / "data"
    (pkg / "sub").mkdir(parents=True)
    data.mkdir()
    (pkg / "mod.py").write_text("X = 1\n")
    (pkg / "sub" / "other.py").write_text("Y = 2\n")
    (data / "facts.yaml").write_text("a: 1\n")
    monkeypatch.setattr(cache_mod, "_PKG", pkg)
    monkeypatch.setattr("analyse.paths.data_dir", lambda: data)
    monkeypatch.setattr(cache_mod, "_RACY_NS", 0)
    return pkg, data


def fingerprint(memo):
    value = cache_mod._package_fingerprint(memo)
    memo.close()
    return value, cache_mod.FINGERPRINT_SOURCE


def memo_keys(directory: Path) -> list:
    return Cache(directory, plain=True).keys()


def _run_cli(argv) -> int:
    from analyse.cli import main

    try:
        main(argv)
    except SystemExit as exc:
        return exc.code or 0
    return 0


def test_warm_run_takes_the_fingerprint_from_the_memo_and_reads_no_tool_file(tmp_path, monkeypatch,
                                                                             fresh_fingerprint):
    from analyse.paths import data_dir

    (tmp_path / "train.py").write_text(SCRIPT)
    argv = ["script", str(tmp_path / "train.py"), "-o", str(tmp_path / "out"), "--format", "json",
            "--cache-dir", str(tmp_path / "c"), "-q"]
    assert _run_cli(argv) == 0
    assert cache_mod.FINGERPRINT_SOURCE == "hashed"
    cold = cache_mod._FINGERPRINT
    assert cold == cache_mod._package_fingerprint()   # the memo does not change the value

    monkeypatch.setattr(cache_mod, "_FINGERPRINT", None)
    tool_roots = (str(cache_mod._PKG) + os.sep, str(data_dir()) + os.sep)
    opened = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(os.fspath(file)).startswith(tool_roots):
            opened.append(os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    assert _run_cli(argv) == 0
    assert cache_mod.FINGERPRINT_SOURCE == "memo"
    assert cache_mod._FINGERPRINT == cold
    assert opened == []
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["summary"]["from_cache"] is True


def test_memo_hit_and_same_value(tmp_path, tool):
    first = fingerprint(Cache(tmp_path / "c", plain=True))
    second = fingerprint(Cache(tmp_path / "c", plain=True))
    assert first[1] == "hashed" and second == (first[0], "memo")
    assert first[0] == cache_mod._package_fingerprint()   # without a memo: the same hash
    assert len(memo_keys(tmp_path / "c")) == 1


def test_a_write_with_the_modification_time_restored_misses_the_memo(tmp_path, tool):
    pkg, data = tool
    target = data / "facts.yaml"
    before = os.stat(target)
    first = fingerprint(Cache(tmp_path / "c", plain=True))
    time.sleep(0.05)   # past the file system's clock tick, so the write gets another ctime
    target.write_text("a: 2\n")   # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert after.st_ctime_ns != before.st_ctime_ns
    second = fingerprint(Cache(tmp_path / "c", plain=True))
    assert second[1] == "hashed" and second[0] != first[0]
    assert second[0] == cache_mod._package_fingerprint()
    assert fingerprint(Cache(tmp_path / "c", plain=True)) == (second[0], "memo")


@pytest.mark.parametrize("change", ["add", "remove", "replace"])
def test_files_added_removed_or_replaced_miss_the_memo(tmp_path, tool, change):
    pkg, _data = tool
    first = fingerprint(Cache(tmp_path / "c", plain=True))
    if change == "add":
        (pkg / "new.py").write_text("Z = 3\n")
    elif change == "remove":
        (pkg / "sub" / "other.py").unlink()
    else:   # a new file (another inode) renamed over the old one, same bytes, size and times
        old = pkg / "mod.py"
        st = os.stat(old)
        tmp = pkg / "mod.py.new"
        tmp.write_text("X = 1\n")
        os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(tmp, old)
    second = fingerprint(Cache(tmp_path / "c", plain=True))
    assert second[1] == "hashed"
    if change != "replace":
        assert second[0] != first[0]
    else:
        assert second[0] == first[0]


def test_fresh_files_are_not_memoised(tmp_path, tool, monkeypatch):
    monkeypatch.setattr(cache_mod, "_RACY_NS", 3600 * 10**9)   # every file "changed within the hour"
    fingerprint(Cache(tmp_path / "c", plain=True))
    assert fingerprint(Cache(tmp_path / "c", plain=True))[1] == "hashed"
    assert memo_keys(tmp_path / "c") == []


@pytest.mark.parametrize("bad", [{"digest": 5}, {"digest": "zz" * 20}, {"digest": "ab" * 19},
                                 {"digest": "ab" * 20, "more": 1}, {"value": "ab" * 20}])
def test_a_damaged_memo_entry_is_a_miss(tmp_path, tool, bad):
    value, _ = fingerprint(Cache(tmp_path / "c", plain=True))
    (key,) = memo_keys(tmp_path / "c")
    c = Cache(tmp_path / "c", plain=True)
    c.put(key, bad)
    c.close()
    again = fingerprint(Cache(tmp_path / "c", plain=True))
    assert again == (value, "hashed")
    assert fingerprint(Cache(tmp_path / "c", plain=True)) == (value, "memo")   # the miss wrote it again


def test_memo_entry_of_another_format_is_a_miss(tmp_path, tool):
    """The per-file cache (tagged data, not plain JSON) keeps the memo as a plain entry too."""
    from analyse.pipeline import open_cache

    value, _ = fingerprint(open_cache(tmp_path / "c"))
    assert fingerprint(open_cache(tmp_path / "c")) == (value, "memo")
    assert fingerprint(Cache(tmp_path / "c", plain=True)) == (value, "memo")


def test_untrusted_cache_folder_is_not_used_for_the_memo(tmp_path, tool, capsys):
    folder = tmp_path / "c"
    folder.mkdir()
    os.chmod(folder, 0o777)
    value, source = fingerprint(Cache(folder, plain=True))
    assert source == "hashed" and value == cache_mod._package_fingerprint()
    assert not (folder / cache_mod.FORMAT).exists()


def test_warm_run_imports_no_astroid_networkx_nor_jinja2(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    argv = ["script", str(tmp_path / "train.py"), "-o", "-", "--format", "json", "--cache-dir", str(tmp_path / "c")]
    code = ("import sys\nfrom analyse.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "import analyse.cache as c\n"
            "sys.stderr.write('MODULES ' + ' '.join(m for m in ('astroid', 'networkx', 'jinja2') if m in sys.modules)"
            " + ' SOURCE ' + c.FINGERPRINT_SOURCE + '\\n')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env,
                           cwd=str(tmp_path), timeout=300) for _ in range(2)]
    cold, warm = [next(ln for ln in r.stderr.splitlines() if ln.startswith("MODULES")) for r in runs]
    assert "astroid" in cold and "networkx" in cold   # the cold run analyses and builds the call graph
    assert json.loads(runs[1].stdout)["summary"]["from_cache"] is True
    assert warm.split(" SOURCE ")[0].split() == ["MODULES"]   # none of the three


def test_a_hit_on_a_recently_used_entry_writes_nothing(tmp_path):
    """A whole-report hit run again within the hour is a read-only run (no transaction, no checkpoint)."""
    c = Cache(tmp_path, plain=True)
    c.put("a" * 40, {"v": 1})
    c.put("b" * 40, {"v": 2})
    c.close()
    db = tmp_path / cache_mod.FORMAT / Cache.FILE
    import sqlite3

    def used():
        con = sqlite3.connect(str(db))
        try:
            return dict(con.execute("SELECT key, used FROM entries"))
        finally:
            con.close()

    recent = time.time() - 60
    old = time.time() - 2 * Cache.REFRESH_S
    con = sqlite3.connect(str(db), isolation_level=None)
    con.execute("UPDATE entries SET used = ? WHERE key = ?", (recent, "a" * 40))
    con.execute("UPDATE entries SET used = ? WHERE key = ?", (old, "b" * 40))
    con.close()
    c = Cache(tmp_path, plain=True)
    assert c.get("a" * 40)["v"] == 1 and c.get("b" * 40)["v"] == 2
    c.close()
    after = used()
    assert after["a" * 40] == recent        # used a minute ago: left as it is
    assert after["b" * 40] > old + Cache.REFRESH_S   # used two hours ago: refreshed
