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


# --------------------------------------------------------------------------- settings and the tool's own package
def test_readme_runs_the_tool_in_a_way_no_working_folder_package_can_replace():
    """`python -m analyse` imports an `analyse/` package of the working folder before the tool's own: the README
    documents `npu-analyse` (or `python -I -m analyse`) only, and says why."""
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in readme.splitlines() if re.match(r"\s*(\$ )?python3? -m analyse\b", line)]
    assert commands == []
    assert "`python -I -m analyse`" in readme and "inside an analysed tree" in readme


def test_python_isolated_m_analyse_ignores_an_analyse_package_of_the_working_folder(tmp_path):
    fake = tmp_path / "analyse"
    fake.mkdir()
    marker = tmp_path / "RAN"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (fake / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run([sys.executable, "-I", "-m", "analyse", "--version"], capture_output=True, cwd=tmp_path,
                          env=env, timeout=120)
    if proc.returncode != 0 and b"No module named" in proc.stderr:
        pytest.skip("npu-analyse is not installed in this interpreter (only on PYTHONPATH)")
    assert proc.returncode == 0 and b"npu-analyse, version" in proc.stdout and not marker.exists()


def _settings_tree(tmp_path: Path) -> Path:
    root = tmp_path / "shared"
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    proj = root / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(CUDA_SCRIPT)
    (root / ".npu-analyse.toml").write_text('select = ["NPU9"]\nfail-on = "never"\n')
    return proj


def _show_select(proj: Path, capsys):
    from analyse.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["script", str(proj), "--show-config", "--no-cache"])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_a_settings_file_others_may_write_is_ignored_with_one_warning(tmp_path, capsys):
    proj = _settings_tree(tmp_path)
    cfg_file = proj.parent / ".npu-analyse.toml"
    os.chmod(cfg_file, 0o666)
    code, out, err = _show_select(proj, capsys)
    assert code == 0 and 'select = ["ALL"]  # default' in out and "configuration file: none found" in out
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert warnings == [f"npu-analyse: warning: settings file {cfg_file} ignored: writable by everyone (mode 666)"]
    os.chmod(cfg_file, 0o644)
    code, out, err = _show_select(proj, capsys)
    assert code == 0 and 'select = ["NPU9"]' in out and err == ""


def test_a_settings_file_in_a_folder_others_may_write_is_ignored(tmp_path, capsys):
    proj = _settings_tree(tmp_path)
    os.chmod(proj.parent, 0o777)
    code, out, err = _show_select(proj, capsys)
    assert code == 0 and 'select = ["ALL"]' in out and "in a folder others may write" in err
    os.chmod(proj.parent, 0o1777)   # sticky, like /tmp: others cannot replace the file
    code, out, err = _show_select(proj, capsys)
    assert 'select = ["NPU9"]' in out and err == ""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_settings_file_of_another_user_is_ignored_and_the_gate_holds(tmp_path, capsys):
    from analyse.cli import main

    proj = _settings_tree(tmp_path)
    cfg_file = proj.parent / ".npu-analyse.toml"
    cfg_file.write_text('select = ["NPU9"]\n')
    os.chown(cfg_file, 4242, 4242)
    with pytest.raises(SystemExit) as exc:
        main(["script", str(proj), "--no-cache", "--fail-on", "auto", "-o", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert exc.value.code == 1   # the findings the foreign file would have silenced still gate
    assert f"settings file {cfg_file} ignored: owned by another user (uid 4242)" in err


# --------------------------------------------------------------------------- the cache database is validated
_SPIN = "SELECT count(*) FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c)"
_POISONS = {
    "trigger": f"CREATE TRIGGER spin AFTER INSERT ON entries BEGIN {_SPIN}; END",
    "update-trigger": f"CREATE TRIGGER spin2 BEFORE UPDATE ON entries BEGIN {_SPIN}; END",
    "view": f"CREATE VIEW spinning AS {_SPIN}",
    "extra-table": "CREATE TABLE notes (x)",
}


@pytest.mark.parametrize("what", sorted(_POISONS))
def test_a_cache_database_with_a_foreign_schema_is_replaced_with_one_warning(tmp_path, what):
    """A trigger with an endless recursive query made `Cache.flush` spin forever, deaf to SIGINT and SIGTERM."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    cache_dir = tmp_path / "cache"
    first = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o1", "--cache-dir", cache_dir)
    assert first.returncode == 0, first.stderr
    db_path = next(cache_dir.rglob("cache.sqlite"))
    db = sqlite3.connect(str(db_path), isolation_level=None)
    db.execute(_POISONS[what])
    db.close()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT + "y = 1\n")   # a miss: the run writes entries
    again = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o2", "--cache-dir", cache_dir,
                timeout=60)
    assert again.returncode == 0, again.stderr
    lines = [ln for ln in again.stderr.decode().splitlines() if ln.strip()]
    assert len(lines) == 1 and "this tool does not make: not used, replaced by a fresh one" in lines[0]
    kind = {"trigger": "trigger 'spin'", "update-trigger": "trigger 'spin2'", "view": "view 'spinning'",
            "extra-table": "table 'notes'"}[what]
    assert f"holds a {kind} this tool does not make" in lines[0]
    cold = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o3", "--no-cache")
    assert finding_ids(tmp_path / "o2" / "report.json") == finding_ids(tmp_path / "o3" / "report.json")
    db = sqlite3.connect(str(db_path))
    names = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master"))
    db.close()
    assert names == ["entries", "entries_used", "sqlite_autoindex_entries_1"]
    third = cli("script", tmp_path / "p", "-q", "--format", "json", "-o", tmp_path / "o4", "--cache-dir", cache_dir)
    assert third.returncode == 0 and third.stderr == b""


def test_the_cache_connection_is_defensive_and_aborts_a_long_statement(tmp_path, capsys):
    c = cache_mod.Cache(tmp_path / "c")
    c.put("k" * 40, {"a": 1})
    c.flush()
    db = c._connect(create=False)
    assert db.execute("PRAGMA trusted_schema").fetchone()[0] == 0
    c.STATEMENT_S = 0.05
    c._arm()
    with pytest.raises(sqlite3.OperationalError) as exc:
        db.execute(_SPIN).fetchone()
    c._failed(exc.value)
    assert not c.usable and c.get("k" * 40) is None
    assert "ran longer than 0.05 s and was stopped" in capsys.readouterr().err


def test_sigterm_ends_a_long_cache_statement(tmp_path):
    script = (
        "import sqlite3, sys\n"
        "from analyse import lifecycle\n"
        "from analyse.cache import Cache\n"
        "lifecycle.install_signal_handlers()\n"
        "c = Cache(sys.argv[1]); c.put('k' * 40, {'a': 1}); c.flush()\n"
        "db = c._connect(create=False)\n"
        "c.STATEMENT_S = 3600.0\n"
        "c._arm()\n"
        "print('running', flush=True)\n"
        "try:\n"
        f"    db.execute({_SPIN!r}).fetchone()\n"
        "except sqlite3.Error as exc:\n"
        "    c._failed(exc)\n"
        "print('not ended', flush=True)\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "c")], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline() == b"running\n"
        proc.send_signal(15)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 143 and b"not ended" not in proc.stdout.read()


def test_a_whole_report_entry_of_the_wrong_shape_is_a_miss(tmp_path):
    """`findings = "notalist"` in a cached report was a traceback in the HTML renderer on every later run."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "train.py").write_text(CUDA_SCRIPT)
    cache_dir = tmp_path / "cache"
    first = cli("script", tmp_path / "p", "-q", "-o", tmp_path / "o1", "--cache-dir", cache_dir)
    assert first.returncode == 0, first.stderr
    db_path = next(cache_dir.rglob("cache.sqlite"))
    db = sqlite3.connect(str(db_path), isolation_level=None)
    changed = 0
    for key, data in db.execute("SELECT key, data FROM entries").fetchall():
        try:
            doc = json.loads(bytes(data).decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("report"), dict):
            doc["report"]["findings"] = "notalist"
            db.execute("UPDATE entries SET data = ? WHERE key = ?", (json.dumps(doc).encode("ascii"), key))
            changed += 1
    db.close()
    assert changed == 1
    again = cli("script", tmp_path / "p", "-q", "-o", tmp_path / "o2", "--cache-dir", cache_dir)
    assert again.returncode == 0 and again.stderr == b""
    assert finding_ids(tmp_path / "o2" / "report.json") == finding_ids(tmp_path / "o1" / "report.json")
    assert "from_cache" not in json.loads((tmp_path / "o2" / "report.json").read_text())["summary"]


def test_report_shapes_name_the_first_wrong_field():
    from analyse.shapes import problem, report_problem

    assert report_problem({"report": {"findings": []}, "rules": []}).startswith("$: ")
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer", "minimum": 0}}}}
    assert problem({"a": [1, 2, -1]}, schema) == "$.a[2]: below 0"
    assert problem({"a": [1, "x"]}, schema) == "$.a[1]: expected integer, not str"
    assert problem({"a": [0] * 10}, schema, limit=5).endswith(": more than 5 values")


# --------------------------------------------------------------------------- readers bounded by total work
def _alias_bomb(levels: int = 7, width: int = 200) -> str:
    lines = ["a0: &a0 {" + ", ".join(f"k{j}: 1" for j in range(width)) + "}"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_a_program_loads_costs_a_bounded_walk(tmp_path, monkeypatch):
    """Width and depth were capped, total visits were not: 200 references a level, 6 levels deep."""
    from analyse.conditions import options

    bomb = tmp_path / "train.yaml"
    bomb.write_text(_alias_bomb())
    assert bomb.stat().st_size < 8000
    calls = [0]
    real = options.collect_config_data

    def counting(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(options, "collect_config_data", counting)
    table = options.read_config(bomb)
    assert sorted(table) == sorted(f"k{j}" for j in range(200)) and table["k0"] == [1]
    assert calls[0] <= options.MAX_CONFIG_VISITS


def test_a_yaml_document_with_too_many_nodes_is_refused(monkeypatch):
    from analyse.conditions import options

    monkeypatch.setattr(options, "MAX_YAML_NODES", 1000)
    assert options.safe_yaml("a: [" + ", ".join(["1"] * 500) + "]\n") == {"a": [1] * 500}
    with pytest.raises(options.YamlTooLarge):
        options.safe_yaml("a: [" + ", ".join(["1"] * 2000) + "]\n")
    with pytest.raises(options.YamlTooLarge):   # aliases count each time they are used
        options.safe_yaml("x: &x [1, 2, 3]\ny: [" + ", ".join(["*x"] * 1500) + "]\n")


def _run_script(proj: Path, tmp_path: Path, *extra):
    from analyse.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["script", str(proj), "--no-cache", "-q", "-o", str(tmp_path / "rep"), *map(str, extra)])
    return exc.value.code


def test_a_dotted_key_thousands_of_levels_deep_is_one_line(tmp_path, capsys):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text(CUDA_SCRIPT)
    (proj / "pyproject.toml").write_text("[tool.npu-analyse]\nfail-on." + ".".join(["a"] * 3000) + " = 1\n")
    assert _run_script(proj, tmp_path) == 2
    err = capsys.readouterr().err
    assert err == (f"npu-analyse: error: configuration {proj / 'pyproject.toml'} nests tables more than 100 levels "
                   f"deep (dotted keys included)\n")


@pytest.mark.parametrize("key", ["exclude", "roles"])
def test_100k_globs_in_the_analysed_pyproject_are_one_line(tmp_path, capsys, key):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text(CUDA_SCRIPT)
    if key == "exclude":
        body = "exclude = [" + ", ".join(f'"gen{i}/*.py"' for i in range(100_000)) + "]\n"
    else:
        body = "[tool.npu-analyse.roles]\n" + "".join(f'"gen{i}/*.py" = "test"\n' for i in range(100_000))
    (proj / "pyproject.toml").write_text("[tool.npu-analyse]\n" + body)
    assert _run_script(proj, tmp_path) == 2
    err = capsys.readouterr().err
    assert err == f"npu-analyse: error: {key} in {proj / 'pyproject.toml'} [tool.npu-analyse] has 100000 entries; at most 1000\n"


def test_a_glob_longer_than_the_cap_is_one_line(tmp_path, capsys):
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text(CUDA_SCRIPT)
    assert _run_script(proj, tmp_path, "--exclude", "a" * 5000) == 2
    assert capsys.readouterr().err == ("npu-analyse: error: exclude in command line (--exclude) has an entry of 5000 "
                                       "characters; at most 1024\n")


def test_exclude_globs_are_one_compiled_matcher_equal_to_glob_match():
    import itertools

    from analyse.policy import GlobSet, glob_match

    pats = ["tests", "tests/*", "**/gen_*.py", "a*", "*.py", "src/**/x.py", "b?/c", "[ab]/d", "./build/", "x\\y",
            "*/vendor", "vendor/*/z.py", "a/b", "d[!0-9]", ""]
    paths = ["tests/a.py", "src/tests/b.py", "gen_x.py", "q/gen_y.py", "abc/d.py", "b1/c/e.py", "a/d", "b/d/e",
             "build/x.py", "x/y", "v/vendor/q.py", "vendor/k/z.py", "a/b/c.py", "ab/bc", "d5", "dx/y.py", "src/k/x.py",
             "src/x.py", "tests"]
    for combo in itertools.chain(((p,) for p in pats), itertools.combinations(pats, 3)):
        g = GlobSet(combo)
        for path in paths:
            assert g.match(path) == any(glob_match(path, p) for p in combo), (combo, path)


def test_role_globs_the_longest_wins_with_the_compiled_matcher():
    from analyse.roles import role_of

    overrides = {"src/*": "tool", "src/models/*": "test", "docs": "docs", "x*": "example", "y*": "build"}
    assert role_of("src/models/a.py", overrides) == "test"
    assert role_of("src/b.py", overrides) == "tool"
    assert role_of("docs/conf2.py", overrides) == "docs"
    assert role_of("xa.py", overrides) == "example"
    assert role_of("lib/a.py", overrides) == "product"


def test_a_crafted_report_for_probe_is_read_without_a_traceback(tmp_path):
    from analyse.probe.opsfile import read_report_apis

    crafted = {"findings": [3, {"category": ["x"], "api": "torch.add", "line": "7", "occurrences": 5,
                                "path": {"a": 1}},
                            {"category": "unsupported-api", "api": "torch.mul", "occurrences": [{"api": 9}, "x"]}],
               "thirdparty": {"functions": [{"reasons": 7, "via": "torch.sub", "qualname": ["q"]}, 4,
                                            {"reasons": ["torch.div"], "via": [1, "torch.neg"], "line": True}]}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(crafted))
    ops = read_report_apis(path)
    assert [o.op for o in ops.ops] == ["torch.div", "torch.neg"]   # torch.mul's only place names no API
    assert [(s.api, s.reason, s.source) for s in ops.skipped] == [
        ("torch.add", "a None finding: checked statically", "report:?")]


_SHAPED_PROJECT = {
    "setup.py": "from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension, BuildExtension\n"
                "setup(name='mypkg', ext_modules=[CUDAExtension('mypkg._C', ['csrc/a.cpp', 'csrc/a_kernel.cu'])],\n"
                "      cmdclass={'build_ext': BuildExtension})\n",
    "mypkg/__init__.py": "",
    "mypkg/ops.py": "import torch\nimport ctypes\n\nlib = torch.library.Library('qlib', 'FRAGMENT')\n"
                    "lib.define('comp(Tensor x) -> Tensor')\n\n\ndef _comp(x):\n    return x * 2\n\n\n"
                    "lib.impl('comp', _comp, 'CUDA')\nnative = ctypes.CDLL('libqlib_cuda.so')\n",
    "mypkg/kernels.py": "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                        "def add_kernel(x, BLOCK: tl.constexpr):\n    v = tl.load(x).to(tl.float64)\n",
    "train.py": "import torch\nfrom mypkg import ops, kernels\nfrom mypkg import _C\n\n"
                "x = torch.ops.qlib.comp(torch.ones(2).cuda())\n",
}


def _edit_cached_entries(cache_dir: Path, edit) -> int:
    """Decode every per-file entry of the cache under *cache_dir* and hand it to *edit*; write back each entry
    *edit* changed (it returns True). Returns how many were written."""
    from analyse import pipeline

    types = pipeline._cache_types()
    db = sqlite3.connect(str(next(cache_dir.rglob("cache.sqlite"))), isolation_level=None)
    written = 0
    try:
        for key, data in db.execute("SELECT key, data FROM entries").fetchall():
            try:
                entry = cache_mod.decode(data, types)
            except Exception:   # noqa: BLE001 - the memo and other entries
                continue
            if isinstance(entry, dict) and edit(entry):
                db.execute("UPDATE entries SET data = ? WHERE key = ?", (cache_mod.encode(entry, types), key))
                written += 1
    finally:
        db.close()
    return written


def test_a_cached_prescan_of_the_wrong_shape_is_a_miss(tmp_path, kb):
    """A per-file entry whose pass data had another shape ended in 'not enough values to unpack (expected 7,
    got 2)' in the compiled-code pass's combine step, reported as a usage error (exit 2)."""
    import dataclasses

    from analyse import pipeline
    from analyse.cache import conforms
    from analyse.passes import PRESCAN_SHAPES
    from analyse.pipeline import Settings

    root = tmp_path / "p"
    for rel, text in _SHAPED_PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    cold = pipeline.run([root], kb, settings=settings)
    warm = pipeline.run([root], kb, settings=settings)
    assert warm.cache_hits == 5   # the shapes the passes declare fit what they store
    declared = set()

    def poison(entry) -> bool:
        pre = entry.get("prescan")
        if not isinstance(pre, pipeline.Prescan):
            return False
        for name, d in pre.passes:
            if d is not None and name in PRESCAN_SHAPES:
                assert conforms(d, PRESCAN_SHAPES[name]), (name, d)
                declared.add(name)
        if not any(name == "compiled-code" and d is not None for name, d in pre.passes):
            return False
        entry["prescan"] = dataclasses.replace(pre, passes=tuple(
            (name, (1, 2) if name == "compiled-code" else d) for name, d in pre.passes))
        return True

    poisoned = _edit_cached_entries(tmp_path / "c", poison)
    assert declared == {"compiled-code", "cuda-extension", "triton"} and poisoned == 1
    again = pipeline.run([root], kb, settings=settings)
    assert again.cache_hits == 4
    assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in cold.findings]


def test_sigterm_ends_a_run_waiting_for_a_cache_another_process_holds(tmp_path):
    """SQLite waited for a lock in C (busy timeout 60 s), where no signal handler runs; the wait is now done
    in Python between short C waits."""
    c = cache_mod.Cache(tmp_path / "c")
    c.put("k" * 40, {"a": 1})
    c.close()
    holder = sqlite3.connect(str(tmp_path / "c" / cache_mod.FORMAT / cache_mod.Cache.FILE), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")   # another run writing: the child's flush must wait for it
    script = ("import sys\n"
              "from analyse import lifecycle\n"
              "from analyse.cache import Cache\n"
              "lifecycle.install_signal_handlers()\n"
              "c = Cache(sys.argv[1]); c.get('k' * 40); c.put('j' * 40, {'b': 2})\n"
              "print('flushing', flush=True)\n"
              "c.flush()\n"
              "print('not ended', flush=True)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "c")], stdout=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert proc.stdout.readline() == b"flushing\n"
        proc.send_signal(15)
        code = proc.wait(timeout=30)   # the lock is never released: only the signal can end the wait
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 143 and b"not ended" not in proc.stdout.read()


@pytest.mark.parametrize("poison", ["facts-type", "facts-value", "facts-name", "summary", "summary-reach"])
def test_a_cached_result_with_a_badly_shaped_field_is_a_miss(tmp_path, kb, poison):
    """A per-file entry whose result had a pass's facts or the call-graph summary of another shape was
    accepted (the fields are typed ``object``) and ended the run later, in a pass's finish step or the
    call graph, with exit 3. Such an entry is now a miss: the file is analysed again and the findings
    equal those of a run without the cache."""
    import dataclasses

    from analyse import pipeline
    from analyse.pipeline import Settings

    root = tmp_path / "p"
    files = dict(_SHAPED_PROJECT)
    files["train.py"] += ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n"
                          "z = torch.lgamma(x)\n")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings = Settings(jobs=1, cache_dir=tmp_path / "c")
    cold = pipeline.run([root], kb, settings=settings)
    assert pipeline.run([root], kb, settings=settings).cache_hits == 5

    def edit(entry) -> bool:
        res = entry.get("result")
        if not isinstance(res, pipeline.ModuleResult) or res.relpath != "train.py":
            return False
        assert set(res.facts) >= {"performance-advice", "cpu-fallback"}
        if poison == "facts-type":
            res = dataclasses.replace(res, facts={**res.facts, "performance-advice": "notadict"})
        elif poison == "facts-value":
            res = dataclasses.replace(res, facts={**res.facts, "cpu-fallback": {"lgamma": [("x", 1)]}})
        elif poison == "facts-name":
            res = dataclasses.replace(res, facts={**res.facts, "no-such-pass": [1, 2]})
        elif poison == "summary":
            res = dataclasses.replace(res, summary=(1, 2))
        else:
            res.summary.reach = {"imports": "notalist"}
        entry["result"] = res
        return True

    assert _edit_cached_entries(tmp_path / "c", edit) == 1
    again = pipeline.run([root], kb, settings=settings)
    assert again.cache_hits == 4
    assert [f.to_dict() for f in again.findings] == [f.to_dict() for f in cold.findings]
