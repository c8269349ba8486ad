"""Finding and reading the files of an untrusted tree (issue 12): symlinks, loops, FIFOs, devices,
unreadable folders, size and nesting limits, deterministic order -- and the run is never lost."""

import json
import os
import stat
import sys
import threading
from pathlib import Path

import astroid
import pytest

import analyse.files as files
import analyse.project as project
from analyse.cli import main
from analyse.files import FileTooLarge, NotRegularFile, discover, read_regular_file
from analyse.project import load_source, parse_source

needs_symlinks = pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="POSIX symlinks")
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")

MAIN = "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"


def _rels(found):
    return [rel for _p, _root, rel, _mod in found]


def _errors(errors):
    return {(e.path, e.kind): e.message for e in errors}


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "evil.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    return d


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "proj"
    t.mkdir()
    (t / "main.py").write_text(MAIN)
    return t


# ----------------------------------------------------------------------------------------- symlinks

@needs_symlinks
def test_symlink_leaving_the_tree_is_an_io_error_not_followed(tree, outside):
    (tree / "evil.py").symlink_to(outside / "evil.py")
    (tree / "vendored").symlink_to(outside, target_is_directory=True)
    errors = []
    found = discover([tree], (".py",), errors)
    assert _rels(found) == ["main.py"]
    errs = _errors(errors)
    assert set(errs) == {("evil.py", "io"), ("vendored", "io")}
    assert errs[("evil.py", "io")].startswith("symlink leaves the tree")
    assert str(outside) in errs[("vendored", "io")]


@needs_symlinks
def test_cu_symlink_leaving_the_tree_is_not_followed(tree, outside):
    """Issue 12 item 13: the C++/CUDA sources go through the same discovery."""
    (outside / "kernel.cu").write_text("__global__ void k(float *x) {}\n")
    (tree / "csrc").mkdir()
    (tree / "csrc" / "kernel.cu").symlink_to(outside / "kernel.cu")
    (tree / "csrc" / "local.cu").write_text("__global__ void j(float *x) {}\n")
    errors = []
    found = discover([tree], (".py", ".cu", ".cuh"), errors)
    assert _rels(found) == ["main.py", "csrc/local.cu"]
    assert _errors(errors)[("csrc/kernel.cu", "io")].startswith("symlink leaves the tree")


@needs_symlinks
def test_symlink_loops_are_errors_not_tracebacks(tree):
    (tree / "a.py").symlink_to("b.py")
    (tree / "b.py").symlink_to("a.py")
    (tree / "self.py").symlink_to("self.py")
    sub = tree / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    (sub / "up").symlink_to("..", target_is_directory=True)
    errors = []
    found = discover([tree], (".py",), errors)
    assert _rels(found) == ["main.py", "pkg/mod.py"]
    errs = _errors(errors)
    assert errs[("a.py", "io")].startswith("symlink loop")
    assert errs[("b.py", "io")].startswith("symlink loop")
    assert errs[("self.py", "io")].startswith("symlink loop")
    assert errs[("pkg/up", "io")].startswith("symlink loop: points back to the enclosing folder")


@needs_symlinks
def test_symlinks_inside_the_tree_are_followed_once_and_real_paths_win(tree):
    (tree / "a_alias.py").symlink_to("main.py")          # sorts before main.py: the real path still wins
    real = tree / "zlib"
    real.mkdir()
    (real / "ops.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    (tree / "alib").symlink_to("zlib", target_is_directory=True)
    hidden = tree / ".generated"
    hidden.mkdir()
    (hidden / "gen.py").write_text("y = 2\n")
    (tree / "gen").symlink_to(".generated", target_is_directory=True)   # a link into a skipped folder is followed
    errors = []
    found = discover([tree], (".py",), errors)
    assert errors == []
    assert _rels(found) == ["main.py", "zlib/ops.py", "gen/gen.py"]
    assert [m for *_x, m in found] == ["main", "zlib.ops", "gen.gen"]


@needs_symlinks
def test_py_symlink_to_a_file_without_suffix_is_analysed_as_its_content(tree):
    (tree / "bin").mkdir()
    (tree / "bin" / "train").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    (tree / "train.py").symlink_to("bin/train")
    errors = []
    found = discover([tree], (".py",), errors)
    assert errors == []
    assert _rels(found) == ["main.py", "train.py"]
    path, _root, rel, modname = found[1]
    assert path.suffix == ".py" and modname == "train"
    sf, err = load_source(path, rel, modname)
    assert err is None and sf.lines[1] == "x = torch.zeros(1).cuda()"


@needs_symlinks
def test_input_that_is_a_py_symlink_keeps_its_own_name(tmp_path):
    (tmp_path / "launcher").write_text(MAIN)
    (tmp_path / "run.py").symlink_to("launcher")
    found = discover([tmp_path / "run.py"])
    assert [(p.name, rel, mod) for p, _r, rel, mod in found] == [("run.py", "run.py", "run")]


# ------------------------------------------------------------------------------- non-regular files

@needs_fifo
def test_fifo_named_py_is_refused_without_blocking(tree):
    os.mkfifo(tree / "fifo.py")
    errors = []
    found = discover([tree], (".py",), errors)
    assert _rels(found) == ["main.py"]
    assert _errors(errors) == {("fifo.py", "io"): "not read: a FIFO is not a regular file"}
    # even if a FIFO is handed to the reader directly, it returns at once
    done = []
    t = threading.Thread(target=lambda: done.append(load_source(tree / "fifo.py", "fifo.py", "fifo")), daemon=True)
    t.start()
    t.join(20)
    assert done, "reading a FIFO blocked"
    sf, err = done[0]
    assert sf is None and err.kind == "io" and "FIFO" in err.message


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_device_nodes_are_never_read():
    with pytest.raises(NotRegularFile, match="character device"):
        read_regular_file(Path("/dev/zero"), 1024)
    sf, err = load_source(Path("/dev/zero"), "zero.py", "zero")
    assert sf is None and (err.kind, err.message) == ("io", "not read: a character device is not a regular file")


@pytest.mark.skipif(not hasattr(os, "mknod") or os.geteuid() != 0, reason="creating a device node needs root")
def test_device_node_inside_the_tree_is_an_error(tree):
    os.mknod(tree / "null.py", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    errors = []
    assert _rels(discover([tree], (".py",), errors)) == ["main.py"]
    assert _errors(errors) == {("null.py", "io"): "not read: a character device is not a regular file"}


def test_size_cap(tmp_path, monkeypatch):
    f = tmp_path / "big.py"
    f.write_text("x = 1\n" * 100)
    with pytest.raises(FileTooLarge):
        read_regular_file(f, 599)
    assert read_regular_file(f, 600) == b"x = 1\n" * 100
    import analyse.files

    monkeypatch.setattr(analyse.files, "MAX_FILE_BYTES", 100)   # the cap analyse.files.file_limit gives a .py
    sf, err = load_source(f, "big.py", "big")
    assert sf is None and err.kind == "too-large" and "600 bytes exceeds the 100-byte limit" in err.message


# ----------------------------------------------------------------------------------------- folders

def test_unreadable_folder_is_an_error_not_a_crash_nor_a_silent_skip(tree, monkeypatch):
    locked = tree / "locked"
    locked.mkdir()
    (locked / "hidden_from_us.py").write_text(MAIN)
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(files.os, "scandir", scandir)
    errors = []
    found = discover([tree], (".py",), errors)
    assert _rels(found) == ["main.py"]
    assert _errors(errors) == {("locked", "io"): "cannot read folder: Permission denied"}


def test_unreadable_folder_as_a_real_non_root_user(tmp_path):
    """The mode-000 case for real, when the suite runs as a normal user (as root it skips: root reads anything)."""
    if not hasattr(os, "geteuid") or os.geteuid() == 0:
        pytest.skip("runs as root: a mode-000 folder is readable")
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "main.py").write_text(MAIN)
    locked.chmod(0)
    try:
        errors = []
        found = discover([tmp_path], (".py",), errors)
    finally:
        locked.chmod(0o755)
    assert _rels(found) == ["main.py"]
    assert _errors(errors) == {("locked", "io"): "cannot read folder: Permission denied"}


def test_order_is_deterministic_and_top_down(tmp_path):
    for rel in ("b/z.py", "b/a.py", "a.py", "c/d/e.py", "c/b.py", "B.py", "build/x.py", ".hidden/y.py", "venv/z.py"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")
    first = _rels(discover([tmp_path]))
    assert first == ["B.py", "a.py", "b/a.py", "b/z.py", "c/b.py", "c/d/e.py"]
    assert _rels(discover([tmp_path])) == first


# ------------------------------------------------------------------------------------------ limits

def _source(text, name="m.py"):
    sf, err = parse_source(text, Path(name), name, name[:-3])
    assert err is None, err
    return sf


def test_deep_but_valid_code_parses():
    terms = " + ".join(["t"] * 900)          # 900-level BinOp chain: RecursionError before
    sf = _source(f"import torch\nt = torch.ones(1)\ny = {terms}\n")
    assert len(sf.tree.body) == 3
    walrus = "".join(f"(a{i} := " for i in range(150)) + "'cuda'" + ")" * 150
    assert _source(f"dev = {walrus}\n").tree.body[0].lineno == 1


def test_truly_too_deep_code_is_a_clear_too_large_error():
    sf, err = parse_source("y = " + " + ".join(["t"] * 1500) + "\n", Path("gen.py"), "gen.py", "gen")
    assert sf is None
    assert err.kind == "too-large" and err.message.startswith("syntax tree nested more than 1000 levels deep")


def test_nesting_limit_is_exact():
    # Module > Assign > n-1 nested BinOps > Name: a sum of n terms is n + 1 levels deep
    ok, err = parse_source("y = " + " + ".join(["t"] * 999) + "\n", Path("gen.py"), "gen.py", "gen")
    assert err is None and len(ok.tree._npu_preorder) == 2 + 998 + 999 + 1
    sf, err = parse_source("y = " + " + ".join(["t"] * 1000) + "\n", Path("gen.py"), "gen.py", "gen")
    assert sf is None and err.kind == "too-large"
    with pytest.raises(project.NestingTooDeep) as info:
        project.with_deep_stack(lambda: project.build_module("y = " + " + ".join(["t"] * 1000) + "\n", "gen", "gen.py"))
    assert info.value.depth == project.MAX_NESTING + 1


def test_with_deep_stack_restores_the_recursion_limit_and_reraises():
    before = sys.getrecursionlimit()
    assert project.with_deep_stack(lambda: sys.getrecursionlimit()) >= project.DEEP_RECURSION_LIMIT
    assert sys.getrecursionlimit() == before
    with pytest.raises(KeyError):
        project.with_deep_stack(lambda: {}["x"])
    assert sys.getrecursionlimit() == before


def _hierarchy(n):
    lines = ["import torch", "", "class C0(torch.nn.Module):", "    def forward(self, x):", "        return x", ""]
    for i in range(1, n):
        lines += [f"class C{i}(C{i - 1}):", "    def forward(self, x):", "        return super().forward(x)", ""]
    lines += [f"model = C{n - 1}().cuda()", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("mode", ["script", "thirdparty"])
def test_deep_code_in_both_modes_without_recursion_errors(tmp_path, mode, report_schema):
    jsonschema = pytest.importorskip("jsonschema")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "hier.py").write_text(_hierarchy(1500))
    walrus = "".join(f"(a{i} := " for i in range(180)) + "torch.zeros(3).cuda()" + ")" * 180
    (proj / "walrus.py").write_text(f"import torch\nx = {walrus}\n")
    (proj / "sums.py").write_text("import torch\nt = torch.ones(1)\ny = " + " + ".join(["t"] * 700)
                                  + "\nz = torch.zeros(2).cuda()\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main([mode, str(proj), "-o", str(out), "-q", "--format", "json", "--torch-version", "2.8.0"])
    assert exc.value.code in (0, None)
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, report_schema)
    assert report["errors"] == []
    got = {(f["path"], f["line"], f["code"]) for f in report["findings"]}
    assert {("hier.py", 6003, "NPU002"), ("walrus.py", 2, "NPU002"), ("sums.py", 4, "NPU002")} <= got


# ------------------------------------------------------------------------ the whole run is not lost

@needs_symlinks
@needs_fifo
@pytest.mark.parametrize("mode", ["script", "thirdparty"])
def test_hostile_tree_yields_a_report_in_both_modes(tmp_path, outside, mode, report_schema):
    """Outside symlink, loop, FIFO, flash_attn_func(*args) and a good main.py: main.py's findings and
    the errors, no traceback, no hang."""
    jsonschema = pytest.importorskip("jsonschema")
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "main.py").write_text(MAIN)
    (proj / "evil.py").symlink_to(outside / "evil.py")
    (proj / "loop.py").symlink_to("loop.py")
    (proj / "ring").symlink_to(".", target_is_directory=True)
    os.mkfifo(proj / "fifo.py")
    (proj / "attn.py").write_text("from flash_attn import flash_attn_func\n\n\ndef attend(*args):\n"
                                  "    return flash_attn_func(*args)\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main([mode, str(proj), "-o", str(out), "-q", "--format", "json", "--torch-version", "2.8.0"])
    assert exc.value.code in (0, None)
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, report_schema)
    got = {(f["path"], f["line"], f["code"]) for f in report["findings"]}
    assert {("main.py", 2, "NPU002"), ("attn.py", 1, "NPU401"), ("attn.py", 5, "NPU403")} <= got
    assert [e for e in report["errors"] if e["kind"] == "internal"] == []   # flash_attn_func(*args) no longer crashes a pass
    assert not any(f["path"] in ("evil.py", "fifo.py", "loop.py") or f["path"].startswith("ring/")
                   for f in report["findings"])
    errs = {(e["path"], e["kind"]): e["message"] for e in report["errors"]}
    assert errs[("evil.py", "io")].startswith("symlink leaves the tree")
    assert errs[("loop.py", "io")].startswith("symlink loop")
    assert errs[("ring", "io")].startswith("symlink loop")
    assert errs[("fifo.py", "io")] == "not read: a FIFO is not a regular file"
    assert report["summary"]["files_analysed"] >= 2  # main.py and attn.py


REBUILD_SAMPLE = '''\
import functools, torch
from torch import nn as tnn
x: int = 1
del x
y = z = [a for a in range(3)]
y[0], (p, *q) = 1, (2, 3, 4)
obj.attr = obj.other.attr
del obj.attr


@functools.lru_cache()
@staticmethod
def decorated(a, b=1, *args, c, d=2, **kw) -> int:
    global g
    g = a
    return (lambda t: t + 1)(b)


class C(tnn.Module):
    def forward(self, x):
        self.cache = x
        with torch.no_grad() as ng:
            for i, j in enumerate(x):
                del i
        return x


async def coro():
    async for item in aiter():
        yield item


print(u"kind", b"bytes", 1.5, None, *args, sep="", **kw)
obj.method(1, key=obj.attr.deeper).result[0].name = f"{x!r:>{width}}"
'''


def _shape(node):
    """Every node of a tree with what the analysis reads: type, name or attribute, lines, keyword position."""
    out = []
    for n in [node] + list(node.nodes_of_class(astroid.nodes.NodeNG)):
        pos = getattr(n, "position", None)
        out.append((type(n).__name__, getattr(n, "name", None), getattr(n, "attrname", None), n.lineno,
                    n.col_offset, n.end_lineno, pos.lineno if pos else None, pos.col_offset if pos else None))
    return out


def _attributes(tree):
    """Every node's class and attributes, in order: child nodes by class and position, the parent by class,
    a def's or class's keyword position by line (the one part of it the analysis reads)."""
    def norm(v):
        if isinstance(v, astroid.nodes.NodeNG):
            return (type(v).__name__, v.lineno, v.col_offset)
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    return [(type(n).__name__, [(k, v.lineno if k == "position" and v is not None else norm(v))
                                for k, v in n.__dict__.items()])
            for n in [tree] + list(tree.nodes_of_class(astroid.nodes.NodeNG))]


def test_fast_rebuilder_builds_the_trees_astroid_builds():
    """project._Rebuilder overrides private helpers of astroid's TreeRebuilder (CONTRIBUTING.md): the trees,
    the keyword positions and the locals must stay those of astroid's own rebuilder."""
    import ast

    from astroid.rebuilder import TreeRebuilder

    ours = project._Rebuilder(astroid.MANAGER).visit_module(ast.parse(REBUILD_SAMPLE), "m", "m.py", False)
    theirs = TreeRebuilder(astroid.MANAGER, data=REBUILD_SAMPLE).visit_module(ast.parse(REBUILD_SAMPLE), "m",
                                                                            "m.py", False)
    assert _shape(ours) == _shape(theirs)
    assert _attributes(ours) == _attributes(theirs)

    def local_names(tree):
        return sorted((type(s).__name__, s.lineno or 0, name, [type(b).__name__ for b in binds])
                      for s in [tree] + list(tree.nodes_of_class((astroid.nodes.FunctionDef, astroid.nodes.ClassDef,
                                                                  astroid.nodes.Lambda, astroid.nodes.ListComp)))
                      for name, binds in s.locals.items())

    assert local_names(ours) == local_names(theirs)
    kinds = {type(n).__name__ for n in ours.nodes_of_class(astroid.nodes.NodeNG)}
    assert {"AssignName", "DelName", "DelAttr", "AssignAttr", "Starred", "Keyword", "Const", "Call"} <= kinds


def test_direct_node_construction_is_on_and_equals_the_constructors(monkeypatch):
    """The rebuilder makes names, constants, attributes, calls and keywords by setting their attributes
    (project._DIRECT); on the supported astroid releases that must be on, and the trees must be those the
    constructors make (the same tree with it off)."""
    import ast

    assert project._DIRECT is True
    assert project._direct_construction_is_exact()
    fast = project._Rebuilder(astroid.MANAGER).visit_module(ast.parse(REBUILD_SAMPLE), "m", "m.py", False)
    monkeypatch.setattr(project, "_DIRECT", False)

    class Slow(project._Rebuilder):   # the class body's `if _DIRECT:` ran at import: ask astroid's visits
        visit_assignname = project.TreeRebuilder.visit_assignname
        visit_constant = project.TreeRebuilder.visit_constant
        visit_attribute = project.TreeRebuilder.visit_attribute
        visit_call = project.TreeRebuilder.visit_call
        visit_keyword = project.TreeRebuilder.visit_keyword

    slow = Slow(astroid.MANAGER).visit_module(ast.parse(REBUILD_SAMPLE), "m", "m.py", False)
    assert _attributes(fast) == _attributes(slow)
    # a node made directly is a full astroid node: its methods work
    call = next(n for n in fast.nodes_of_class(astroid.nodes.Call) if getattr(n.func, "name", None) == "print")
    assert call.as_string() == 'print(\'kind\', b\'bytes\', 1.5, None, *args, sep=\'\', **kw)'
    assert [k.arg for k in call.keywords] == ["sep", None]
    assert call.func.lookup("print")[0].name == "builtins"


def test_out_of_memory_while_parsing_says_so_not_nested(monkeypatch, tmp_path):
    """A 5 MB flat list ran out of memory and was reported as 'nested deeper than this Python can parse'."""
    from analyse import project

    def no_memory(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(project, "build_module", no_memory)
    text = "x = [" + "1, " * 10 + "]\n"
    sf, err = project.parse_source(text, tmp_path / "big.py", "big.py", "big")
    assert sf is None and err.kind == "too-large"
    assert err.message == f"too large to parse in the memory available ({len(text)} characters, 2 lines)"
