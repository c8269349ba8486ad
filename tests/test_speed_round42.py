"""Issue 33 (speed42): the rebuilder's compound nodes made directly, and script runs that build no call graph.

Both are speed cuts that must not change a report: the rebuilder's trees stay astroid's, attribute by attribute,
and a run that makes no summaries writes the report a run that makes them writes."""

import ast

import astroid
import pytest

from analyse import project


COMPOUND_SHAPES = '''\
a = b = c[1:2:3]  # type: int
a, (b, *c) = [d[e], f[::2]], -g
del a[0], (b, c)
x += y ** 2 // (not z) if w else ~v
if a is not b and (c or d) and not e in f < g:
    pass
elif h:
    return_ = [*i, (j,)]
else:
    k(l)[m] = n(*o, **p)
def fn(q):
    q.method()
    return
'''


def test_compound_nodes_are_the_trees_astroid_builds():
    """VALID: with the direct compound visits on (the installed astroid), every node's attributes and the
    locals equal those astroid's own rebuilder makes."""
    from astroid.rebuilder import TreeRebuilder

    if not project._COMPOUND_ON:
        pytest.skip("this Python's ast or the installed astroid builds one of these nodes otherwise, so the import-time "
                    "check left astroid's own visits in place (the designed fallback)")
    assert project._COMPOUND_ON is True
    ours = project._Rebuilder(astroid.MANAGER).visit_module(ast.parse(COMPOUND_SHAPES, type_comments=True), "m",
                                                            "m.py", False)
    theirs = TreeRebuilder(astroid.MANAGER, data=COMPOUND_SHAPES).visit_module(
        ast.parse(COMPOUND_SHAPES, type_comments=True), "m", "m.py", False)
    assert project._tree_attributes(ours) == project._tree_attributes(theirs)
    kinds = {type(n).__name__ for n in ours.nodes_of_class(astroid.nodes.NodeNG)}
    assert {"Assign", "Subscript", "Slice", "Tuple", "List", "Starred", "UnaryOp", "BinOp", "AugAssign", "IfExp",
            "BoolOp", "Compare", "If", "Pass", "Return", "Expr"} <= kinds
    assign = ours.body[0]
    assert assign.type_annotation is not None and assign.type_annotation.name == "int"


def test_a_compound_visit_that_differs_from_astroids_turns_them_off(monkeypatch):
    """INVALID: a visit that sets an attribute astroid sets otherwise (here a BinOp's operator) fails the
    import-time check, which would leave astroid's own visits in place."""
    if not project._COMPOUND_ON:
        pytest.skip("this Python's ast or the installed astroid builds one of these nodes otherwise, so the import-time "
                    "check left astroid's own visits in place (the designed fallback)")
    right = project._Rebuilder.visit_binop

    def wrong(self, node, parent):
        n = right(self, node, parent)
        n.op = "-"
        return n

    assert project._compound_is_exact() is True
    monkeypatch.setattr(project._Rebuilder, "visit_binop", wrong)
    assert project._compound_is_exact() is False

    def reordered(self, node, parent):   # same values, another attribute order
        n = right(self, node, parent)
        n.__dict__["left"] = n.__dict__.pop("left")
        return n

    monkeypatch.setattr(project._Rebuilder, "visit_binop", reordered)
    assert project._compound_is_exact() is False


# ---- script mode makes no call-graph summaries where nothing reads them

def _package(root, extra=None):
    pkg = root / "lib"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .ops import fused\nfrom .model import Net\n")
    (pkg / "ops.py").write_text("import torch\n\n\ndef fused(x):\n    return x.cuda() * 2\n")
    (pkg / "model.py").write_text("import torch\nfrom .ops import fused\n\n\nclass Net(torch.nn.Module):\n"
                                  "    def forward(self, x):\n        torch.cuda.synchronize()\n"
                                  "        return fused(x)\n")
    for name, text in (extra or {}).items():
        (pkg / name).write_text(text)
    return pkg


def _run(folder, kb, monkeypatch, force=None):
    from analyse import callgraph, modes, pipeline

    made = []
    real = pipeline.run

    def spy(*args, **kwargs):
        if force is not None:
            kwargs["graph_read"] = lambda prescans, programs: force
        res = real(*args, **kwargs)
        made.append((res.summaries_made, len(res.summaries)))
        return res

    monkeypatch.setattr(pipeline, "run", spy)
    monkeypatch.setattr(callgraph, "may_have_chain_starts", callgraph.may_have_chain_starts)
    rep = modes.run_script([folder], kb, settings=pipeline.Settings(jobs=1))
    for f in rep["findings"]:
        f.pop("id", None)
    return rep, made[0]


def test_a_package_of_imported_modules_makes_no_summaries_and_the_same_report(tmp_path, kb, monkeypatch):
    """VALID: a package folder whose modules are all imported by the package and has no program: no entry point
    and no chain start is possible, so no summary is made, and the report is the one a run with the call graph
    gives (no chains, reach unknown)."""
    pkg = _package(tmp_path)
    rep, (made, n) = _run(pkg, kb, monkeypatch)
    assert (made, n) == (False, 0)
    full, (made_full, n_full) = _run(pkg, kb, monkeypatch, force=True)
    assert made_full is True and n_full == 3
    assert rep["findings"] == full["findings"] and rep["findings"]
    assert {f["reach"]["status"] for f in rep["findings"]} == {"unknown"}
    assert all(not f.get("chain") for f in rep["findings"])
    assert rep.get("entry_points", []) == full.get("entry_points", [])


@pytest.mark.parametrize("extra", [
    {"tool.py": "from lib.model import Net\n\n\ndef run(x):\n    return Net()(x)\n"},            # nothing imports it
    {"ops.py": "import torch\n\n\ndef fused(x):\n    return x.cuda() * 2\n\n\nif __name__ == '__main__':\n"
               "    fused(torch.ones(1))\n"},                                                    # a __main__ block
])
def test_a_possible_chain_start_or_program_makes_the_summaries(tmp_path, kb, monkeypatch, extra):
    """INVALID for the cut: a module no project module imports starts call chains, a ``__main__`` block is a
    program: the summaries are made and read as before."""
    pkg = _package(tmp_path, extra)
    rep, (made, n) = _run(pkg, kb, monkeypatch)
    assert made is True and n == 3 + ("tool.py" in extra)
    full, _ = _run(pkg, kb, monkeypatch, force=True)
    assert rep["findings"] == full["findings"]


def test_chain_starts_from_the_prescans_are_those_add_chains_finds(tmp_path, kb):
    """may_have_chain_starts is True wherever _add_chains's own test on the summaries finds a script (a __main__
    block, or a non-package module no project module imports), nested and relative imports included; it may say
    True where that test says no (a module-level `if __name__ == "__main__":` is a program for the pre-scan), never
    the other way round."""
    from analyse import pipeline
    from analyse.callgraph import may_have_chain_starts

    cases = {   # name -> (files, may_have_chain_starts)
        "all imported": ({"__init__.py": "from . import a\n", "a.py": "def f():\n    from .sub import b\n",
                         "sub/__init__.py": "", "sub/b.py": "X = 1\n"}, False),
        "one left out": ({"__init__.py": "from . import a\n", "a.py": "X = 1\n", "c.py": "import os\n"}, True),
        "main block": ({"__init__.py": "from . import a\n", "a.py": "if __name__ == '__main__':\n    pass\n"}, True),
        "nested main": ({"__init__.py": "from . import a\n",
                     "a.py": "try:\n    import x\nexcept ImportError:\n    pass\nif True:\n"
                             "    if __name__ == '__main__':\n        pass\n"}, True),
    }
    for name, (files, want) in cases.items():
        root = tmp_path / name.replace(" ", "_") / "pkg"
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        got = []
        res = pipeline.run([root], kb, mode="script", settings=pipeline.Settings(jobs=1),
                           graph_read=lambda prescans, programs: got.append(may_have_chain_starts(prescans)) or True)
        imported = {".".join(m.split(".")[:i + 1]) for s in res.summaries for m in s.imports
                    for i in range(len(m.split(".")))}
        scripts = [s for s in res.summaries if s.has_main_guard or (s.modname not in imported and not s.is_package)]
        assert got == [want], name
        assert want or not scripts, name


FLAG_BASES = '''\
import torch


class Base(object):
    def __init__(self):
        if torch.cuda.is_available():
            self.fast = True
        else:
            self.fast = False


class Child(Base, object):
    def run(self, x):
        if self.fast:
            return x
        return -x
'''


def test_a_branch_flag_of_a_base_class_needs_no_lookup_of_a_base_no_scope_binds(monkeypatch):
    """VALID: the flag set in the two branches of a test in a base class of the same module holds that test in the
    subclass (library mode: a parameter-like setting is a choice); the base `object` (bound by no scope of the
    module: only the builtins could answer, and they are never the module's own class) is not looked up."""
    import importlib

    import astroid.nodes._base_nodes as base_nodes

    from astroid import nodes

    from analyse import conditions
    from analyse.conditions import model
    from analyse.syntax import nodes_of

    monkeypatch.setattr(importlib.import_module("analyse.conditions.build"), "params_are_choices", lambda: True)
    tree = project.build_module(FLAG_BASES, "m", "m.py")
    asked = []
    real = base_nodes.LookupMixIn.lookup
    monkeypatch.setattr(base_nodes.LookupMixIn, "lookup", lambda self, name: asked.append(name) or real(self, name))
    test = [n for n in nodes_of(tree, nodes.If) if n.test.as_string() == "self.fast"][0].test
    got = conditions.build(test)
    assert got is not None and model.known(got)
    assert got.kind == model.CUDA and got.values == (True, False)   # the flag holds the base's CUDA test
    assert "object" not in asked


def test_a_flag_set_outside_two_branches_is_no_branch_flag(monkeypatch):
    """INVALID: set once, without the other branch, the flag holds no test (unknown)."""
    import importlib

    from astroid import nodes

    from analyse import conditions
    from analyse.conditions import model
    from analyse.syntax import nodes_of

    monkeypatch.setattr(importlib.import_module("analyse.conditions.build"), "params_are_choices", lambda: True)
    text = FLAG_BASES.replace("        else:\n            self.fast = False\n", "")
    tree = project.build_module(text, "m", "m.py")
    test = [n for n in nodes_of(tree, nodes.If) if n.test.as_string() == "self.fast"][0].test
    got = conditions.build(test)
    assert got is None or not model.known(got)


RETURNS = '''\
class Made:
    pass


class Other:
    pass


def factory(flag):
    post = Made()
    if flag:
        return post

    def inner():
        return Other()

    return Made()


def builds_nothing():
    def inner():
        return Other()
    return inner
'''


def test_returned_objects_come_from_the_functions_own_returns():
    """VALID: ``return Cls()`` and a returned local bound to ``Cls()`` make *factory* a builder of ``Made``; the
    ``return Other()`` of a nested function is no return of it (INVALID: *builds_nothing* builds nothing), and the
    returns come from one grouping of the module's returns, in the tree's order."""
    from analyse.callgraph import _own_returns, _returned_objects
    from analyse.resolve import ProjectIndex, Resolver

    tree = project.build_module(RETURNS, "m", "m.py")
    index = ProjectIndex()
    r = Resolver(tree, "m", index)
    index.add_module("m", tree, r)
    fns = {f.name: f for f in tree.body if isinstance(f, astroid.nodes.FunctionDef)}
    assert _returned_objects(fns["factory"], r) == ("m.Made",)
    assert _returned_objects(fns["builds_nothing"], r) == ()
    for fn in fns.values():
        walked = [n for n in fn.nodes_of_class(astroid.nodes.Return) if n.scope() is fn]
        assert list(_own_returns(fn)) == walked
    assert [n.lineno for n in _own_returns(fns["factory"])] == [12, 17]
