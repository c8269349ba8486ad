"""Nothing trusted that should not be (issue 24, points 2-4): a cache that stores data, not code, in a folder
only the user may write; content keys for every file that feeds a finding; report folders inside the
analysed tree; one bounded reader for config, baseline, ops files and reports; non-UTF-8 file names in
every format; over-long paths.

The end-to-end tests run the command in a fresh process (``python -m analyse``), as a user or CI does."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from analyse import cache as cache_mod

REPO = Path(__file__).resolve().parent.parent
CUDA_SCRIPT = "import torch\nx = torch.randn(2).cuda()\ntorch.cuda.synchronize()\n"


def cli(*args, cwd=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    env.pop("NPU_ANALYSE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "analyse", *map(str, args)], capture_output=True, cwd=cwd,
                          env=env, timeout=timeout)


def finding_ids(report_path: Path):
    return sorted(f["id"] for f in json.loads(report_path.read_text(encoding="utf-8"))["findings"])


class _Payload:
    """Unpickling this runs ``open(marker, 'w')``: what an attacker would put in a cache row."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _poison(cache_dir: Path, marker: Path) -> int:
    """Replace every row of every cache database under *cache_dir* by a pickle that creates *marker*."""
    payload = pickle.dumps(_Payload(marker))
    rows = 0
    for db_path in cache_dir.rglob("cache.sqlite"):
        db = sqlite3.connect(str(db_path), isolation_level=None)
        try:
            rows += db.execute("UPDATE entries SET data = ?", (payload,)).rowcount
        finally:
            db.close()
    return rows


# --------------------------------------------------------------------------- the cache stores data

def test_a_poisoned_cache_row_runs_no_code(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    cache_dir = tmp_path / "cache"
    first = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o1", "--cache-dir", cache_dir)
    assert first.returncode == 0, first.stderr
    marker = tmp_path / "MARKER"
    assert _poison(cache_dir, marker) >= 2        # the whole report and the file's entry
    again = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o2", "--cache-dir", cache_dir)
    assert not marker.exists()
    assert again.returncode == 0, again.stderr
    assert finding_ids(tmp_path / "o2" / "report.json") == finding_ids(tmp_path / "o1" / "report.json")
    assert len(finding_ids(tmp_path / "o2" / "report.json")) == 2


def test_a_world_writable_cache_folder_is_refused(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    cache_dir = tmp_path / "cache"
    first = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o1", "--cache-dir", cache_dir)
    assert first.returncode == 0, first.stderr
    marker = tmp_path / "MARKER"
    _poison(cache_dir, marker)
    os.chmod(cache_dir, 0o777)
    again = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o2", "--cache-dir", cache_dir)
    assert not marker.exists()
    assert again.returncode == 0
    warnings = [ln for ln in again.stderr.decode().splitlines() if ln.strip()]
    assert len(warnings) == 1 and "warning: cache not used" in warnings[0] and "writable by others" in warnings[0]
    assert finding_ids(tmp_path / "o2" / "report.json") == finding_ids(tmp_path / "o1" / "report.json")


@pytest.mark.parametrize("what", ["folder-group", "database", "format-folder-link"])
def test_untrusted_cache_parts(tmp_path, what):
    c = cache_mod.Cache(tmp_path / "c")
    c.put("k" * 40, {"a": 1})
    c.close()
    assert cache_mod.untrusted_reason(tmp_path / "c") is None
    if what == "folder-group":
        os.chmod(tmp_path / "c", 0o770)
        want = "writable by its group"
    elif what == "database":
        os.chmod(tmp_path / "c" / cache_mod.FORMAT / cache_mod.Cache.FILE, 0o666)
        want = "writable by others"
    else:
        os.rename(tmp_path / "c" / cache_mod.FORMAT, tmp_path / "elsewhere")
        os.symlink(tmp_path / "elsewhere", tmp_path / "c" / cache_mod.FORMAT)
        want = "is a symbolic link"
    assert want in cache_mod.untrusted_reason(tmp_path / "c")
    cache_mod._WARNED.discard(str(tmp_path / "c"))
    assert cache_mod.Cache(tmp_path / "c").get("k" * 40) is None


def test_cache_folders_are_made_private_and_a_linked_own_folder_is_used(tmp_path):
    old = os.umask(0o002)   # a user-private-group umask: folders would be group-writable
    try:
        c = cache_mod.Cache(tmp_path / "real")
        c.put("k" * 40, {"a": (1, 2)})
        c.close()
    finally:
        os.umask(old)
    assert (tmp_path / "real").stat().st_mode & 0o077 == 0
    assert (tmp_path / "real" / cache_mod.FORMAT).stat().st_mode & 0o077 == 0
    os.symlink(tmp_path / "real", tmp_path / "link")   # ~/.cache/npu-analyse -> a folder of one's own
    assert cache_mod.Cache(tmp_path / "link").get("k" * 40) == {"a": (1, 2), "key": "k" * 40}


def test_data_round_trip_and_shape_checks():
    from analyse.callgraph import ClassSummary, ModuleSummary
    from analyse.findings import AnalysisError, Finding
    from analyse.pipeline import ModuleResult, Prescan, _cache_types

    f = Finding("NPU001", "cuda-api", "auto", "bad\udcff.py", 3, "torch.cuda.x", "m", chain=("a", "b"),
                reach={"status": "reachable"})
    summary = ModuleSummary("m", "m.py", False, 9, functions={"m.f": (1, 3)},
                            classes={"m.C": ClassSummary("m.C", 4, ("object",), {"f"})},
                            calls=[("m.f", 2, "name", "g", "")], guards={0: "x is None"}, top_names={"f"},
                            reach={"call_guards": {2: [("g", None)]}})
    entry = {"prescan": Prescan("m.py", "m", 9, classes=(("m.C", ("object",)),),
                                passes=(("p", (("a", 1),)),), errors=(AnalysisError("m.py", "syntax", "e", 1),)),
             "context": "abc",
             "result": ModuleResult("m.py", findings=[f], facts={"advice": [("q", f)], "s": frozenset({1})},
                                    summary=summary), "blob": b"\x00\xff"}
    types = _cache_types()
    data = cache_mod.encode(entry, types)
    assert b"__reduce__" not in data and data.decode("ascii")
    assert cache_mod.decode(data, types) == entry
    # wrong shapes are refused (the cache turns any exception into a miss)
    for bad in (data.replace(b'"c":"Finding"', b'"c":"Popen"'),          # a type nobody declared
                data.replace(b'"c":"Finding","v":["NPU001"', b'"c":"Finding","v":[1'),   # a field of a wrong type
                data.replace(b'"cuda-api"', b'"no-such-category"'),      # refused by the class's own checks
                b'{"t": 1}', b'{"os": ["system"]}', b"[" * 100000 + b"]" * 100000):
        with pytest.raises(Exception):
            cache_mod.decode(bad, types)
    with pytest.raises(cache_mod.NotPlainData):
        cache_mod.encode({"x": object()}, types)
