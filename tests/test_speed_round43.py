"""Issue 33 (speed43): cuts that must leave every answer as it was.

A function's walk and node selections are slices of its module's pre-order list (kept by the parse walk), and
local names that astroid answered are answered without its search where its filter provably gives the same."""

from pathlib import Path

import pytest
from astroid import nodes

from analyse import syntax
from analyse.project import parse_source


FUNCTIONS = '''\
import os

def outer(a, b=len("x"), *args, **kw):
    """Doc."""
    from json import dumps
    def inner(c):
        return [c for c in range(a) if c]
    class Local:
        def method(self):
            return os.path.join("a", dumps(self))
    try:
        import yaml
    except ImportError:
        yaml = None
    return inner, Local, lambda d: d + a

async def coro(x):
    async with x as y:
        return await y

@staticmethod
def decorated():
    return
'''


def _tree(source: str):
    return parse_source(source, Path("m.py"), "m.py", "m")[0].tree


def test_a_functions_walk_and_selections_are_slices_of_the_module_preorder(monkeypatch):
    """VALID: walk() and nodes_of() of each function (nested ones, methods, an async def) give what a walk of the
    function's own subtree gives, in the same pre-order, without walking the subtree again."""
    tree = _tree(FUNCTIONS)
    fns = list(syntax.nodes_of(tree, nodes.FunctionDef))
    assert {f.name for f in fns} == {"outer", "inner", "method", "coro", "decorated"}
    want = {f: syntax._preorder(f) for f in fns}
    selections = [(nodes.Return,), (nodes.Import, nodes.ImportFrom), (nodes.Call,), (nodes.FunctionDef,),
                  (nodes.Name, nodes.AssignName), (nodes.Lambda, nodes.ClassDef)]

    def no_walk(node):
        raise AssertionError(f"walked {node!r} again")

    monkeypatch.setattr(syntax, "_preorder", no_walk)
    for f in fns:
        assert list(syntax.walk(f)) == want[f]
        assert list(syntax.walk(f))[0] is f and len(want[f]) > 1
        for classes in selections:
            got = syntax.nodes_of(f, *classes)
            assert isinstance(got, list)
            assert got == [n for n in want[f] if isinstance(n, classes)], (f.name, classes)
    outer = next(f for f in fns if f.name == "outer")
    assert [r.lineno for r in syntax.nodes_of(outer, nodes.Return)] == [7, 10, 15]
    assert [i.lineno for i in syntax.nodes_of(outer, nodes.Import, nodes.ImportFrom)] == [5, 12]


def test_other_subtrees_and_foreign_trees_are_walked_as_before():
    """INVALID for the slices: a class, a statement, or a function of a tree the parse walk did not make (no
    spans kept) is walked node by node, with the same result."""
    import astroid

    tree = _tree(FUNCTIONS)
    cls = syntax.nodes_of(tree, nodes.ClassDef)[0]
    assert syntax._function_span(cls) is None
    assert list(syntax.walk(cls)) == syntax._preorder(cls)
    foreign = astroid.parse(FUNCTIONS).body[1]
    assert syntax._function_span(foreign) is None
    assert [n.lineno for n in syntax.nodes_of(foreign, nodes.Return)] == [7, 10, 15]
