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


REBOUND_BELOW = '''\
def f(x, y, flag):
    a = x + 1
    b = y
    c = a + b
    if flag:
        x = x[:, 0]
        y = 2
    d = x
    for i in range(3):
        e = i + y
        i = 0
    return a, b, c, d, e


def g(x):
    print(z)
    if x:
        z = 1
    z = 2
    return z
'''


def test_a_use_above_a_nested_rebinding_is_answered_as_astroids_lookup():
    """VALID: a local bound again further down in a nested block (``x = x[:, 0]`` under an ``if``) is answered
    without astroid's search for the uses above that block -- astroid's filter stops at the first binding on a
    later line -- and the answer is astroid's, name by name (the parameter, or the own-list assignment before).
    INVALID: a use at or below the nested rebinding, a use in the loop that rebinds its variable below it, and a
    use before any binding (astroid looks further out) are left to astroid."""
    tree = _tree(REBOUND_BELOW)
    answered = {}
    for n in tree._npu_preorder:
        if type(n) is not nodes.Name:
            continue
        want = n.lookup(n.name)
        got = syntax.frame_binding(n, n.name)
        if got is not None:
            assert got[0] is want[0] and [id(d) for d in got[1]] == [id(d) for d in want[1]], (n.lineno, n.name)
            answered[(n.lineno, n.name)] = got[1][0].lineno
    # x and y on lines 2-3 see the parameters
    assert answered[(2, "x")] == 1 and answered[(3, "y")] == 1
    assert answered[(4, "a")] == 2 and answered[(4, "b")] == 3
    # the nested rebinding's own statement: the filter stops at that binding and keeps the parameter
    assert answered[(6, "x")] == 1
    # below the nested rebinding: astroid's filter keeps both bindings of x, so it is asked
    assert (8, "x") not in answered and (10, "y") not in answered
    # the loop variable rebound in the loop's body below its use
    assert answered.get((10, "i")) in (None, 9)
    assert (16, "z") not in answered   # no binding before the use


def test_the_bindings_lines_are_worked_out_once_per_function_and_name(monkeypatch):
    """Each use bisects the lines prepared once (a long function rebinding a parameter in a nested block below
    many uses did the statement climb for every binding at every use)."""
    import astroid

    n = 200
    src = ("def train(x, flag):\n" + "".join(f"    y{i} = x + {i}\n" for i in range(n))
           + "    if flag:\n        x = x * 2\n    return x\n")
    fn = astroid.parse(src).body[0]
    calls = [0]
    real = nodes.AssignName.statement

    def counting(self, *a, **k):
        calls[0] += 1
        return real(self, *a, **k)

    uses = [u for u in fn.nodes_of_class(nodes.Name) if u.name == "x"]
    monkeypatch.setattr(nodes.AssignName, "statement", counting)
    got = [syntax.frame_binding(u, "x") for u in uses]
    assert calls[0] == 2   # the two bindings' statements, once
    monkeypatch.undo()
    # the uses above the nested rebinding and the one in it see the parameter; the one below is astroid's to answer
    assert [b[1][0].lineno if b else None for b in got] == [1] * n + [1, None]
    assert all(b is None or b[1] == u.lookup("x")[1] for u, b in zip(uses, got))


FILTER_STOPS = '''\
def f(cfg, flag):
    if flag:
        cfg = dict(cfg)
        n = 1
    cfg = cfg["inner"]
    cfg.update(x=1)
    if flag:
        n = n + 1
        m = n
    try:
        out = run()
    except ValueError:
        return None
    print(out)
    if flag:
        only = 1
    else:
        print(only)
    return cfg, m
'''


def test_resets_own_statement_stops_and_lone_bindings_are_answered_as_astroids_lookup():
    """VALID: an ``=`` of the use's own statement list after a binding in a nested block resets astroid's filter
    (``cfg`` on line 6 sees line 5's alone); a binding in the use's own statement stops it (``n = n + 1`` sees line
    4's); a lone assignment in another block is kept where no branch excludes it (``out`` after its ``try``).
    INVALID: a use in the ``else`` of the ``if`` whose body binds the name (exclusive branches) is left to astroid.
    Every answer given is astroid's, checked name by name."""
    tree = _tree(FILTER_STOPS)
    answered = {}
    for n in tree._npu_preorder:
        if type(n) is not nodes.Name:
            continue
        want = n.lookup(n.name)
        got = syntax.frame_binding(n, n.name)
        if got is not None:
            assert got[0] is want[0] and [id(d) for d in got[1]] == [id(d) for d in want[1]], (n.lineno, n.name)
            answered[(n.lineno, n.name)] = got[1][0].lineno
    assert answered[(6, "cfg")] == 5 and answered[(19, "cfg")] == 5
    assert answered[(8, "n")] == 4
    assert answered[(14, "out")] == 11
    assert (18, "only") not in answered


def test_attributes_and_keywords_of_a_leaf_keep_the_parse_walks_tables_and_its_depth_limit():
    """VALID: the parse walk does an attribute's or keyword's leaf child in place; its pre-order list, type index
    and scope lists stay those of a plain walk, and the nesting limit still counts the child (an attribute of a
    name at the last allowed level is refused as before, a plain name there is not)."""
    from analyse import project

    tree = _tree(FUNCTIONS + "x = obj.attr.other(k=1, j=obj.attr)\nobj.field = f(v=name)\ndel obj.field\n")
    pre = syntax._preorder(tree)
    assert tree._npu_preorder == pre
    by_type = {}
    for i, n in enumerate(pre):
        by_type.setdefault(type(n), []).append(i)
    assert tree._npu_types == by_type
    got, want = tree._npu_scope_nodes, syntax._scope_lists(tree)
    assert got[0] == want[0] and got[1] == want[1]

    limit = project.MAX_NESTING

    def outcome(inner: str, n: int):
        try:
            return len(project.build_module("y = " + inner + " + c" * n + "\n", "m", "m.py")._npu_preorder)
        except project.NestingTooDeep as exc:
            return ("deep", exc.depth)

    def check():
        assert outcome("x", limit - 2) == 2 * (limit - 2) + 4
        assert outcome("a.b", limit - 3) == 2 * (limit - 3) + 5
        assert outcome("a.b", limit - 2) == ("deep", limit + 1)
        assert outcome("f(k=1)", limit - 3) == ("deep", limit + 1)

    project.with_deep_stack(check)
