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
    assert b'["m.f",2,"name","g",""]' in data and b'"m.py",false,9' in data   # annotated fields: plain lists
    assert cache_mod.decode(data, types) == entry
    # wrong shapes are refused (the cache turns any exception into a miss)
    for bad in (data.replace(b'"c":"Finding"', b'"c":"Popen"'),          # a type nobody declared
                data.replace(b'"c":"Finding","v":["NPU001"', b'"c":"Finding","v":[1'),   # a field of a wrong type
                data.replace(b'"cuda-api"', b'"no-such-category"'),      # refused by the class's own checks
                data.replace(b'["m.f",2,"name","g",""]', b'["m.f","2","name","g",""]'),   # a call's line
                data.replace(b'"m.py",false,9', b'"m.py",0,9'),         # ModuleSummary.is_package
                b'{"t": 1}', b'{"os": ["system"]}', b"[" * 100000 + b"]" * 100000):
        with pytest.raises(Exception):
            cache_mod.decode(bad, types)
    with pytest.raises(cache_mod.NotPlainData):
        cache_mod.encode({"x": object()}, types)


# --------------------------------------------------------------------------- content keys, report folders

@pytest.mark.parametrize("name, before, after", [
    ("Dockerfile.gpu", "FROM ubuntu:22.04.1\n", "FROM nvidia/cuda:12\n"),
    ("requirements-gpu.pip", "numpy==1.26.4\n", "flash-attn==2\n"),
    ("launch.bash", "echo starting\n", "nvidia-smi -L\n"),
])
def test_a_same_size_edit_with_its_time_restored_is_seen(tmp_path, name, before, after):
    assert len(before) == len(after)
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text("import torch\n")
    target = tmp_path / "p" / name
    target.write_text(before)
    cache_dir = tmp_path / "cache"
    cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o1", "--cache-dir", cache_dir)
    assert finding_ids(tmp_path / "o1" / "report.json") == []
    st = os.stat(target)
    target.write_text(after)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))   # cp -p, tar, a restored CI cache
    assert os.stat(target).st_size == st.st_size and os.stat(target).st_mtime_ns == st.st_mtime_ns
    cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o2", "--cache-dir", cache_dir)
    report = json.loads((tmp_path / "o2" / "report.json").read_text())
    assert "from_cache" not in report["summary"]
    assert [f["path"] for f in report["findings"]] == [name]


def test_every_file_a_pass_reads_is_content_keyed():
    from analyse.passes import discover_passes

    names = set()
    for p in discover_passes():
        names.update("x" + s for s in p.file_suffixes)
        names.update(g.replace("*", "x") for g in getattr(p, "file_names", ()))
        names.update(g.replace("*", "") for g in getattr(p, "file_names", ()) if g.replace("*", ""))
    names |= {"setup.py", "setup.cfg", "pyproject.toml", "CMakeLists.txt", "Dockerfile.gpu", "run.sh"}
    assert names and [n for n in sorted(names) if not cache_mod.content_keyed(n)] == []
    assert not cache_mod.content_keyed("weights.pt") and not cache_mod.content_keyed("cat.jpg")


def test_the_quickstart_run_twice_hits_the_whole_report_cache(tmp_path):
    """README quick start, with the report folder inside the analysed tree: the second run is a hit."""
    import shutil

    tree = tmp_path / "ddp_torchrun"
    shutil.copytree(REPO / "examples" / "ddp_torchrun", tree, ignore=shutil.ignore_patterns("expected_report.json"))
    cache_dir = tmp_path / "cache"
    for fmt in ("json,html", "json,html,sarif,csv,junit,gitlab,github,text"):
        runs = []
        for _ in range(2):
            r = cli("script", tree, "-q", "--format", fmt, "-o", tree / "npu-analyse-report", "--cache-dir", cache_dir)
            assert r.returncode == 0, r.stderr
            runs.append(json.loads((tree / "npu-analyse-report" / "report.json").read_text()))
        assert runs[1]["summary"].get("from_cache") is True, fmt
        assert [f["id"] for f in runs[1]["findings"]] == [f["id"] for f in runs[0]["findings"]]
        assert not any(f["path"].startswith("npu-analyse-report") for f in runs[0]["findings"])
    # -o the analysed folder itself: its report files stay out of the hash too
    for _ in range(2):
        r = cli("script", tree, "-q", "--format", "json", "-o", tree, "--cache-dir", cache_dir)
    assert json.loads((tree / "report.json").read_text())["summary"].get("from_cache") is True
    # a folder with anything besides report files is analysed as usual
    (tree / "npu-analyse-report" / "helper.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    r = cli("script", tree, "-q", "--format", "json", "-o", tmp_path / "out", "--cache-dir", cache_dir)
    assert "npu-analyse-report/helper.py" in {f["path"] for f in json.loads((tmp_path / "out" / "report.json")
                                                                           .read_text())["findings"]}


def test_report_file_names_match_the_renderers():
    from analyse.files import REPORT_FILES
    from analyse.render import FILENAMES

    assert set(FILENAMES.values()) <= REPORT_FILES


# --------------------------------------------------------------------------- bounded input

BOMB = 50_000


def _one_error_line(r) -> str:
    lines = [ln for ln in r.stderr.decode().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr.decode()[-2000:]
    return lines[0]


def test_a_nesting_bomb_in_the_analysed_pyproject_is_a_usage_error(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    (tmp_path / "p" / "pyproject.toml").write_text("[tool.npu-analyse]\nselect = " + "[" * BOMB + "]" * BOMB + "\n")
    r = cli("script", tmp_path / "p", "-q", "-o", tmp_path / "o", "--no-cache")
    assert r.returncode == 2
    assert "nests arrays or tables more than" in _one_error_line(r)


def test_a_nesting_bomb_in_a_baseline_is_a_usage_error(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    (tmp_path / "bl.json").write_text("[" * BOMB + "]" * BOMB)
    r = cli("script", tmp_path / "p", "-q", "-o", tmp_path / "o", "--no-cache", "--baseline", tmp_path / "bl.json")
    assert r.returncode == 2
    assert "baseline" in _one_error_line(r) and "levels deep" in _one_error_line(r)


def test_a_nesting_bomb_in_a_pyproject_that_is_not_the_configuration_declares_no_scripts(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    (tmp_path / "p" / ".npu-analyse.toml").write_text('fail-on = "never"\n')
    (tmp_path / "p" / "pyproject.toml").write_text("[project]\nname = " + "[" * BOMB + "]" * BOMB + "\n")
    r = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o", "--no-cache")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert len(finding_ids(tmp_path / "o" / "report.json")) == 2


def test_depth_counting_ignores_brackets_in_strings():
    from analyse.inputs import nesting_depth

    assert nesting_depth('{"a": "[[[[[[", "b": [[1]]}') == 3
    assert nesting_depth('a = "[[[[" # [[[[[\nb = \'[[[\'\nc = """\n[[[\n"""\n[t]\nd = [[1], {x = 2}]\n',
                         toml=True) == 2


@pytest.mark.parametrize("option", ["--ops", "--from-report"])
@pytest.mark.parametrize("source", ["/dev/zero", "fifo", "folder"])
def test_probe_inputs_must_be_regular_files(tmp_path, option, source):
    if source == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        path = tmp_path / "ops.fifo"
        os.mkfifo(path)
    elif source == "folder":
        path = tmp_path
    else:
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero here")
        path = source
    r = cli("probe", option, path, "-o", tmp_path / "out", timeout=60)   # a hang or 20 GB would time out
    assert r.returncode == 2
    line = _one_error_line(r)
    if source != "folder":   # click refuses a folder itself (dir_okay=False)
        assert "not a regular file" in line


@pytest.mark.parametrize("option", ["--with-thirdparty", "--probe-results", "--baseline"])
def test_script_option_files_are_bounded(tmp_path, option):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    (tmp_path / "deep.json").write_text("[" * BOMB + "]" * BOMB)
    r = cli("script", tmp_path / "p", "-q", "-o", tmp_path / "o", "--no-cache", option, tmp_path / "deep.json")
    assert r.returncode == 2 and "levels deep" in _one_error_line(r)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "f.json")
        r = cli("script", tmp_path / "p", "-q", "-o", tmp_path / "o", "--no-cache", option, tmp_path / "f.json",
                timeout=60)
        assert r.returncode == 2
        _one_error_line(r)


# --------------------------------------------------------------------------- hostile names and paths

FORMATS = ("json", "html", "sarif", "csv", "junit", "gitlab", "github", "text")
SHOWN = {"json": "bad\\udcff.py", "gitlab": "bad\\udcff.py", "sarif": "bad%FF.py"}   # else bad\xff.py


@pytest.fixture()
def bad_name_tree(tmp_path):
    if sys.platform in ("darwin", "win32"):
        pytest.skip("this file system refuses non-UTF-8 names")
    root = tmp_path / "p"
    root.mkdir()
    try:
        with open(os.path.join(os.fsencode(root), b"bad\xff.py"), "w") as fh:
            fh.write(CUDA_SCRIPT)
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")
    return root


def test_a_non_utf8_file_name_in_every_format(tmp_path, bad_name_tree):
    out = tmp_path / "o"
    r = cli("script", bad_name_tree, "--no-cache", "--format", ",".join(FORMATS), "-o", out)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    r.stdout.decode("utf-8")                       # the terminal summary too
    assert "bad\\xff.py" in r.stdout.decode()
    from analyse.render import FILENAMES

    for fmt in FORMATS:
        text = (out / FILENAMES[fmt]).read_bytes().decode("utf-8")   # valid UTF-8
        assert SHOWN.get(fmt, "bad\\xff.py") in text, fmt
    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    paths = {f["path"] for f in doc["findings"]}
    assert paths == {"bad\udcff.py"}                                    # the surrogateescape round trip
    assert os.fsencode(paths.pop()) == b"bad\xff.py"
    for fmt in FORMATS:   # -o -: one format on stdout, always valid UTF-8
        r = cli("script", bad_name_tree, "--no-cache", "--format", fmt, "-o", "-")
        assert r.returncode == 0, (fmt, r.stderr.decode()[-2000:])
        assert SHOWN.get(fmt, "bad\\xff.py") in r.stdout.decode("utf-8"), fmt
    r = cli("script", bad_name_tree, "--no-cache", "-q", "-o", out, "--write-baseline", tmp_path / "bl.json")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    assert "bad\\udcff.py" in (tmp_path / "bl.json").read_bytes().decode("utf-8")
    r = cli("script", bad_name_tree, "--no-cache", "--format", "json", "-o", "-", "--baseline", tmp_path / "bl.json")
    assert r.returncode == 0 and json.loads(r.stdout)["findings"] == []


def test_an_over_long_path_is_an_io_error_and_the_report_incomplete(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "train.py").write_text("import torch\n")
    fd = os.open(root, os.O_RDONLY)
    try:   # made with *at() calls, one level at a time: the whole path is longer than PATH_MAX (4,096 bytes)
        for _ in range(20):
            name = "d" * 250
            os.mkdir(name, dir_fd=fd)
            new = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
        leaf = os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, CUDA_SCRIPT.encode())
        os.close(leaf)
    finally:
        os.close(fd)
    r = cli("script", root, "-q", "--no-cache", "--format", "json", "-o", tmp_path / "o")
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    doc = json.loads((tmp_path / "o" / "report.json").read_text())
    assert doc["summary"]["complete"] is False
    io_errors = [e for e in doc["errors"] if e["kind"] == "io"]
    assert len(io_errors) == 1 and "too long" in io_errors[0]["message"].lower(), doc["errors"]
    assert io_errors[0]["path"].startswith("d" * 250 + "/")


@pytest.mark.parametrize("example", ["project", "ddp_torchrun"])
def test_a_whole_report_hit_writes_the_same_reports(tmp_path, example):
    """The whole report is stored as plain JSON: every format written from a hit equals the analysed one
    (but for the run's duration and the from_cache flag)."""
    import re

    from analyse.render import FILENAMES

    cache_dir = tmp_path / "cache"
    outs = []
    for i in range(2):
        out = tmp_path / f"o{i}"
        r = cli("script", REPO / "examples" / example, "-q", "--format", ",".join(FORMATS), "-o", out,
                "--cache-dir", cache_dir)
        assert r.returncode in (0, 1), r.stderr.decode()[-2000:]
        outs.append(out)
    hit = json.loads((outs[1] / "report.json").read_text())
    assert hit["summary"].pop("from_cache") is True

    def norm(text: str) -> str:
        # the HTML says how long the analysis took and whether the report came from the cache
        text = re.sub(r'<span id="timing"[^>]*>[^<]*</span>', "", text)
        text = re.sub(r'time="[0-9.]+"', "", text)
        return re.sub(r"\s+", " ", re.sub(r"[0-9]+(\.[0-9]+)? ?s\b|duration[^<\n]*", "", text))

    for fmt in FORMATS:
        a = (outs[0] / FILENAMES[fmt]).read_text(encoding="utf-8")
        b = (outs[1] / FILENAMES[fmt]).read_text(encoding="utf-8")
        if fmt == "json":
            a, b = json.loads(a), json.loads(b)
            for doc in (a, b):
                doc["summary"].pop("duration_s")
                doc["summary"].pop("from_cache", None)
            assert a == b
            continue
        assert norm(a) == norm(b), fmt


@pytest.mark.parametrize("example", ["project", "ddp_torchrun", "amp_loop", "image_classifier"])
def test_every_per_file_entry_is_stored_as_data(tmp_path, kb, example, monkeypatch):
    """Every per-file result of the examples is plain data the cache can store (a pass that put an object of
    an undeclared type into its facts would lose its files' entries: NotPlainData), and a warm run gives the
    same findings from the stored entries alone."""
    from analyse import pipeline
    from analyse.pipeline import Settings

    refused = []
    real = cache_mod.encode

    def spy(value, types=()):
        try:
            return real(value, types)
        except cache_mod.NotPlainData as exc:
            refused.append(str(exc))
            raise

    monkeypatch.setattr(cache_mod, "encode", spy)
    root = REPO / "examples" / example
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    cold = pipeline.run([root], kb, settings=settings)
    warm = pipeline.run([root], kb, settings=settings)
    assert refused == []
    n_py = len([p for p in root.rglob("*.py")])
    assert warm.cache_hits == n_py
    assert [f.to_dict() for f in warm.findings] == [f.to_dict() for f in cold.findings]
    assert [s.modname for s in warm.summaries] == [s.modname for s in cold.summaries]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a folder away")
def test_a_cache_folder_of_another_user_is_refused(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    cache_dir = tmp_path / "cache"
    cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o1", "--cache-dir", cache_dir)
    marker = tmp_path / "MARKER"
    _poison(cache_dir, marker)
    os.chown(cache_dir, 65534, 65534)   # nobody's folder, mode 0700: writable by nobody but its owner
    r = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o2", "--cache-dir", cache_dir)
    assert r.returncode == 0 and not marker.exists()
    assert "is owned by another user (uid 65534)" in _one_error_line(r)
