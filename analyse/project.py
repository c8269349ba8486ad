"""Parsing the files of an analysed project (finding and reading them: :mod:`analyse.files`).

Nothing here imports or executes analysed code: files are read as bytes,
decoded (PEP 263 coding cookie honoured) and parsed into astroid trees without
inference. Every failure becomes an :class:`~analyse.findings.AnalysisError`.
"""

from __future__ import annotations

import ast
import functools
import os
import platform
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, TypeVar

import astroid
from astroid import nodes
from astroid.nodes.utils import Position
from astroid.const import Context
from astroid.rebuilder import TreeRebuilder

from analyse.files import FileTooLarge, NotANotebook, NotRegularFile, file_limit, read_regular_file, source_text
from analyse.findings import AnalysisError
from analyse.syntax import LEAVES, mentions_npu

# Deeper trees are refused: valid Python, but generated (a 1,000-term sum), and the passes' lookups walk
# up the parents of every name, so time grows with the square of the depth.
MAX_NESTING = 1000


@dataclass
class SourceFile:
    path: Path          # absolute path on disk
    relpath: str        # '/'-separated, relative to the analysed root
    modname: str
    text: str = ""
    lines: List[str] = field(default_factory=list)
    tree: Optional[nodes.Module] = None

    @property
    def is_package_init(self) -> bool:
        return self.path.name == "__init__.py"

    def line(self, lineno: int) -> str:
        if 1 <= lineno <= len(self.lines):
            return self.lines[lineno - 1]
        return ""


def build_module(text: str, modname: str, path: str, package: bool = False) -> nodes.Module:
    """Parse *text* into an astroid module without inference and without imports.

    Python's own :func:`ast.parse` parses; astroid's public ``TreeRebuilder``
    turns the tree into astroid nodes; :func:`_fill_syntactic_locals` then does
    what astroid's builder would do after building, but syntactically: names
    imported with ``from x import y`` go to the locals without loading ``x``
    (star imports are left to the resolver), and ``instance_attrs`` is filled
    from ``self.<attr> = ...`` in methods. astroid's own post-build step would
    cache every module in the global manager, load star-imported modules from
    sys.path and run inference on every attribute assignment.

    Raises :class:`SyntaxError` (or ``ValueError`` for NUL bytes and the like,
    ``RecursionError`` / ``MemoryError`` beyond the interpreter's nesting limits).
    """
    try:
        tree = ast.parse(text + "\n", filename=path, type_comments=True)
    except SyntaxError as exc:
        # a misplaced "# type:" comment must not lose the file: parse again without type comments
        if not re.search(r"#\s+type:", exc.text or ""):
            raise
        tree = ast.parse(text + "\n", filename=path, type_comments=False)
    module = _Rebuilder(astroid.MANAGER).visit_module(tree, modname, path, package)
    del tree
    module.file_encoding = "utf-8"
    module._npu_mentions = mentions_npu(text)  # see analyse.callgraph._mentions_npu
    _fill_syntactic_locals(module)
    return module


# Python's expression contexts as astroid names them (astroid 3 and 4 both map these three)
_CONTEXTS = {ast.Load: Context.Load, ast.Store: Context.Store, ast.Del: Context.Del}
_LOAD, _DEL = Context.Load, Context.Del


_new = object.__new__


def _leaf(cls, field: str, value, node, parent):
    """A node of *cls* made as its constructor makes it (``field`` first, then the position and the parent,
    in the constructor's order), without the constructor: see :data:`_DIRECT`."""
    n = _new(cls)
    setattr(n, field, value)
    n.lineno = node.lineno
    n.col_offset = node.col_offset
    n.parent = parent
    n.end_lineno = node.end_lineno
    n.end_col_offset = node.end_col_offset
    n.position = None
    return n


# _const and _call repeat _leaf's position lines on purpose (two own fields, none): a shared helper would be
# one more call per node.
def _const(value, kind, node, parent):
    n = _new(nodes.Const)
    n.value = value
    n.kind = kind
    n.lineno = node.lineno
    n.col_offset = node.col_offset
    n.parent = parent
    n.end_lineno = node.end_lineno
    n.end_col_offset = node.end_col_offset
    n.position = None
    return n


def _call(node, parent):
    n = _new(nodes.Call)
    n.lineno = node.lineno
    n.col_offset = node.col_offset
    n.parent = parent
    n.end_lineno = node.end_lineno
    n.end_col_offset = node.end_col_offset
    n.position = None
    return n


def _direct_construction_is_exact() -> bool:
    """Whether the functions above make the nodes astroid's constructors and ``postinit`` make: same class,
    same attributes with the same values in the same order. Checked once per process with a distinct value
    in every field; an astroid release that sets other attributes turns the direct construction off."""

    class Src:
        lineno, col_offset, end_lineno, end_col_offset = 11, 12, 13, 14

    pos = dict(lineno=11, col_offset=12, end_lineno=13, end_col_offset=14)
    parent, child, value = object(), object(), object()

    def same(a, b) -> bool:
        return type(a) is type(b) and list(a.__dict__.items()) == list(b.__dict__.items())

    try:
        pairs = [(_leaf(cls, "name", "n", Src, parent), cls(name="n", parent=parent, **pos))
                 for cls in (nodes.Name, nodes.AssignName, nodes.DelName)]
        pairs.append((_const(value, "u", Src, parent), nodes.Const(value=value, kind="u", parent=parent, **pos)))
        for cls in (nodes.Attribute, nodes.AssignAttr, nodes.DelAttr):
            ours = _leaf(cls, "attrname", "a", Src, parent)
            ours.expr = child
            theirs = cls(attrname="a", parent=parent, **pos)
            theirs.postinit(child)
            pairs.append((ours, theirs))
        ours = _leaf(nodes.Keyword, "arg", "k", Src, parent)
        ours.value = child
        theirs = nodes.Keyword(arg="k", parent=parent, **pos)
        theirs.postinit(child)
        pairs.append((ours, theirs))
        ours = _call(Src, parent)
        ours.func, ours.args, ours.keywords = child, [child], []
        theirs = nodes.Call(parent=parent, **pos)
        theirs.postinit(func=child, args=[child], keywords=[])
        pairs.append((ours, theirs))
    except Exception:  # pragma: no cover - another astroid API
        return False
    return all(same(a, b) for a, b in pairs)


# Making a node by setting its attributes costs a quarter of what astroid's constructor chain costs (keyword
# arguments through two or three __init__ levels); names, constants, attributes, calls and keywords are
# three nodes in four.
_DIRECT = _direct_construction_is_exact()


class _Rebuilder(TreeRebuilder):
    """astroid's rebuilder, faster where it was slow for no result:

    * the keyword position of a ``def`` / ``class`` (``node.position``: its line is the ``def`` line of a
      decorated function, whose ``lineno`` is the first decorator's) is taken from Python's own tree;
      astroid re-tokenises every header for it, a fifth of the rebuild time. The span assumes one space
      after the keyword (its line, the part used, is exact);
    * names and expression contexts read the ``Context`` members once (an enum member lookup per use
      costs more than the rest of a name's visit);
    * names, constants, attributes, calls and keywords -- three nodes in four -- are made by setting their
      attributes in the order astroid's constructors set them (:data:`_DIRECT`: checked at import against
      the installed astroid), visiting the children in astroid's order.
    """

    def _get_context(self, node):
        return _CONTEXTS.get(type(node.ctx), _LOAD)

    def visit_name(self, node, parent):
        context = _CONTEXTS.get(type(node.ctx), _LOAD)
        cls = nodes.Name if context is _LOAD else nodes.DelName if context is _DEL else nodes.AssignName
        if _DIRECT:   # _leaf written out: a name is one node in three, and the call and setattr cost more
            newnode = _new(cls)
            newnode.name = node.id
            newnode.lineno = node.lineno
            newnode.col_offset = node.col_offset
            newnode.parent = parent
            newnode.end_lineno = node.end_lineno
            newnode.end_col_offset = node.end_col_offset
            newnode.position = None
        else:
            newnode = cls(name=node.id, lineno=node.lineno, col_offset=node.col_offset, end_lineno=node.end_lineno,
                          end_col_offset=node.end_col_offset, parent=parent)
        if context is not _LOAD:
            self._save_assignment(newnode)
        return newnode

    if _DIRECT:
        def visit_assignname(self, node, parent, node_name):
            if node_name is None:
                return None
            newnode = _leaf(nodes.AssignName, "name", node_name, node, parent)
            self._save_assignment(newnode)
            return newnode

        def visit_constant(self, node, parent):
            return _const(node.value, node.kind, node, parent)

        def visit_attribute(self, node, parent):
            context = _CONTEXTS.get(type(node.ctx), _LOAD)
            if context is _LOAD:   # _leaf written out, as in visit_name
                newnode = _new(nodes.Attribute)
                newnode.attrname = node.attr
                newnode.lineno = node.lineno
                newnode.col_offset = node.col_offset
                newnode.parent = parent
                newnode.end_lineno = node.end_lineno
                newnode.end_col_offset = node.end_col_offset
                newnode.position = None
            elif context is _DEL:
                newnode = _leaf(nodes.DelAttr, "attrname", node.attr, node, parent)
            else:
                newnode = _leaf(nodes.AssignAttr, "attrname", node.attr, node, parent)
                if not isinstance(parent, nodes.ExceptHandler):  # as astroid: no local save there
                    self._delayed_assattr.append(newnode)
            newnode.expr = self.visit(node.value, newnode)
            return newnode

        def visit_call(self, node, parent):
            newnode = _call(node, parent)
            visit = self.visit
            newnode.func = visit(node.func, newnode)
            newnode.args = [visit(child, newnode) for child in node.args]
            newnode.keywords = [visit(child, newnode) for child in node.keywords]
            return newnode

        def visit_keyword(self, node, parent):
            newnode = _leaf(nodes.Keyword, "arg", node.arg, node, parent)
            newnode.value = self.visit(node.value, newnode)
            return newnode

    def _get_position_info(self, node, parent):
        if isinstance(node, ast.ClassDef):
            keyword = "class "
        elif isinstance(node, ast.AsyncFunctionDef):
            keyword = "async def "
        else:
            keyword = "def "
        return Position(lineno=node.lineno, col_offset=node.col_offset, end_lineno=node.lineno,
                        end_col_offset=node.col_offset + len(keyword) + len(node.name))

    # ---- the commonest compound nodes, made directly (see _COMPOUND below: checked at import against astroid's
    # own visits on a sample covering each, and removed where the trees differ). Each sets the attributes in the
    # order astroid's constructor and postinit set them, and visits the children in astroid's order; a dispatch
    # through visit() per child instead of TreeRebuilder.visit's two table lookups.

    def visit(self, node, parent):
        if node is None:
            return None
        meth = self._visit_meths.get(node.__class__)
        if meth is None:   # the first node of its type: astroid's visit finds the method and keeps it
            return TreeRebuilder.visit(self, node, parent)
        return meth(node, parent)

    def visit_assign(self, node, parent):
        n = _plain(nodes.Assign, node, parent)
        type_annotation = self.check_type_comment(node, parent=n) if node.type_comment else None
        visit = self.visit
        n.targets = [visit(child, n) for child in node.targets]
        n.value = visit(node.value, n)
        n.type_annotation = type_annotation
        return n

    def visit_expr(self, node, parent):
        n = _plain(nodes.Expr, node, parent)
        n.value = self.visit(node.value, n)
        return n

    def visit_return(self, node, parent):
        n = _plain(nodes.Return, node, parent)
        n.value = self.visit(node.value, n)
        return n

    def visit_pass(self, node, parent):
        return _plain(nodes.Pass, node, parent)

    def visit_if(self, node, parent):
        n = _plain(nodes.If, node, parent)
        visit = self.visit
        n.test = visit(node.test, n)
        n.body = [visit(child, n) for child in node.body]
        n.orelse = [visit(child, n) for child in node.orelse]
        return n

    def visit_ifexp(self, node, parent):
        n = _plain(nodes.IfExp, node, parent)
        visit = self.visit
        n.test = visit(node.test, n)
        n.body = visit(node.body, n)
        n.orelse = visit(node.orelse, n)
        return n

    def visit_compare(self, node, parent):
        n = _plain(nodes.Compare, node, parent)
        visit = self.visit
        n.left = visit(node.left, n)
        n.ops = [(_CMP_OPS[op.__class__], visit(expr, n)) for op, expr in zip(node.ops, node.comparators)]
        return n

    def visit_binop(self, node, parent):
        n = _new(nodes.BinOp)
        n.op = _BIN_OPS[type(node.op)]
        _position(n, node, parent)
        visit = self.visit
        n.left = visit(node.left, n)
        n.right = visit(node.right, n)
        return n

    def visit_augassign(self, node, parent):
        n = _new(nodes.AugAssign)
        n.op = _BIN_OPS[type(node.op)] + "="
        _position(n, node, parent)
        visit = self.visit
        n.target = visit(node.target, n)
        n.value = visit(node.value, n)
        return n

    def visit_unaryop(self, node, parent):
        n = _new(nodes.UnaryOp)
        n.op = _UNARY_OPS[node.op.__class__]
        _position(n, node, parent)
        n.operand = self.visit(node.operand, n)
        return n

    def visit_boolop(self, node, parent):
        n = _new(nodes.BoolOp)
        n.op = _BOOL_OPS[type(node.op)]
        n.values = []
        _position(n, node, parent)
        visit = self.visit
        n.values = [visit(child, n) for child in node.values]
        return n

    def visit_subscript(self, node, parent):
        n = _new(nodes.Subscript)
        n.ctx = _CONTEXTS.get(type(node.ctx), _LOAD)
        _position(n, node, parent)
        visit = self.visit
        n.value = visit(node.value, n)
        n.slice = visit(node.slice, n)
        return n

    def visit_starred(self, node, parent):
        n = _new(nodes.Starred)
        n.ctx = _CONTEXTS.get(type(node.ctx), _LOAD)
        _position(n, node, parent)
        n.value = self.visit(node.value, n)
        return n

    def visit_slice(self, node, parent):
        n = _plain(nodes.Slice, node, parent)
        visit = self.visit
        n.lower = visit(node.lower, n)
        n.upper = visit(node.upper, n)
        n.step = visit(node.step, n)
        return n

    def visit_tuple(self, node, parent):
        return self._sequence(nodes.Tuple, node, parent)

    def visit_list(self, node, parent):
        return self._sequence(nodes.List, node, parent)

    def _sequence(self, cls, node, parent):
        n = _new(cls)
        n.ctx = _CONTEXTS.get(type(node.ctx), _LOAD)
        n.elts = []
        _position(n, node, parent)
        visit = self.visit
        n.elts = [visit(child, n) for child in node.elts]
        return n


def _position(n, node, parent) -> None:
    """The attributes NodeNG.__init__ sets, in its order (a node's own leading fields set before, as its
    constructor does)."""
    n.lineno = node.lineno
    n.col_offset = node.col_offset
    n.parent = parent
    n.end_lineno = node.end_lineno
    n.end_col_offset = node.end_col_offset
    n.position = None


def _plain(cls, node, parent):
    """A node of *cls* whose constructor sets nothing before NodeNG's own attributes."""
    n = _new(cls)
    n.lineno = node.lineno
    n.col_offset = node.col_offset
    n.parent = parent
    n.end_lineno = node.end_lineno
    n.end_col_offset = node.end_col_offset
    n.position = None
    return n


try:   # astroid's operator names (astroid 4; the compound visits are off where these are elsewhere)
    from astroid._ast import BIN_OP_CLASSES as _BIN_OPS, BOOL_OP_CLASSES as _BOOL_OPS, \
        CMP_OP_CLASSES as _CMP_OPS, UNARY_OP_CLASSES as _UNARY_OPS
except ImportError:  # pragma: no cover - another astroid API
    _BIN_OPS = _BOOL_OPS = _CMP_OPS = _UNARY_OPS = None

# the visits above that replace astroid's (visit itself included)
_COMPOUND = ("visit", "visit_assign", "visit_expr", "visit_return", "visit_pass", "visit_if", "visit_ifexp",
             "visit_compare", "visit_binop", "visit_augassign", "visit_unaryop", "visit_boolop", "visit_subscript",
             "visit_starred", "visit_slice", "visit_tuple", "visit_list")

# a sample with every compound node made directly, in each context and shape the visits tell apart
_COMPOUND_SAMPLE = '''\
x = y = 1
z = []  # type: List[int]
x: int = 1  # type: ignore
a, *b = c[1:2], [d[::3], e[f:]]
del a[0], (b, c)
x += -y ** 2 // (not z)
x @= a if b else c
if a < b <= c and (d or e) and not f in g is not h:
    pass
elif x:
    y = [i for i in (1, 2)]
else:
    return_ = {**d, 'k': [*x]}
f(x)[1] = g(*a, **k)
def fn(p, q=1, *r, s, **t):
    return
def fn2():
    return (p, q)
class K:
    attr = ()
    items: list = []
'''


def _compound_is_exact() -> bool:
    """Whether the compound visits of :class:`_Rebuilder` make the tree astroid's own visits make (every
    node's class and attributes in order, children by class and position, and the locals): checked once per
    process on :data:`_COMPOUND_SAMPLE`; an astroid release that builds any of them otherwise turns them all
    off."""
    if not _DIRECT or _BIN_OPS is None:
        return False

    class Astroids(_Rebuilder):
        pass

    for name in _COMPOUND:
        setattr(Astroids, name, getattr(TreeRebuilder, name))
    try:
        ours = _Rebuilder(astroid.MANAGER).visit_module(ast.parse(_COMPOUND_SAMPLE, type_comments=True), "m",
                                                        "m.py", False)
        theirs = Astroids(astroid.MANAGER).visit_module(ast.parse(_COMPOUND_SAMPLE, type_comments=True), "m",
                                                        "m.py", False)
        return _tree_attributes(ours) == _tree_attributes(theirs)
    except Exception:  # pragma: no cover - another astroid API
        return False


def _tree_attributes(tree) -> list:
    """Every node's class and attributes in order (child nodes by class and position, a keyword position by
    line) and every scope's locals, in the tree's pre-order."""
    def norm(v):
        if isinstance(v, nodes.NodeNG):
            return (type(v).__name__, v.lineno, v.col_offset)
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    out = []
    stack = [tree]
    while stack:
        n = stack.pop()
        out.append((type(n).__name__, [(k, v.lineno if k == "position" and v is not None else norm(v))
                                       for k, v in n.__dict__.items()]))
        stack.extend(reversed(list(n.get_children())))
    return out


_COMPOUND_ON = _compound_is_exact()
if not _COMPOUND_ON:  # pragma: no cover - another astroid release: astroid's own visits
    for _name in _COMPOUND:
        delattr(_Rebuilder, _name)


# node type -> 0 plain node, 1 function, 2 class, 3 lambda, 4 module (filled as types are met)
_WALK_SCOPE_KINDS: dict = {}
# node types with exactly one child, in .expr (attributes) or .value (keywords): a third of the nodes with children,
# whose child is mostly a name or a constant
_ONE_CHILD = frozenset((nodes.Attribute, nodes.AssignAttr, nodes.DelAttr, nodes.Keyword))


class NestingTooDeep(Exception):
    def __init__(self, depth: int):
        super().__init__(f"syntax tree nested more than {MAX_NESTING} levels deep; not analysed "
                         "(generated code? the analysis is quadratic in nesting depth)")
        self.depth = depth


def _fill_syntactic_locals(module: nodes.Module) -> None:
    """One pre-order walk of the new tree: its depth (raises :class:`NestingTooDeep`), the
    ``from x import y`` locals and ``self.<attr>`` instance attributes; the walk's node list is
    kept on the module for :func:`analyse.syntax.walk` / ``nodes_of`` (every pass reads it), and
    so are the per-scope node lists of :func:`analyse.syntax.scope_nodes` (the affinity and
    dynamic-shape passes ask for them on every module: a second walk of the whole tree before).

    The scope lists are filled in post-order (a node when its last child is done) and reversed at
    the end: the reverse of a post-order is the pre-order that takes the last child first, the
    order :func:`analyse.syntax._scope_lists` gives (a test compares the two on every tree)."""
    order: List[nodes.NodeNG] = []
    append = order.append
    imports: List[nodes.ImportFrom] = []
    assattrs: List[nodes.AssignAttr] = []
    import_from, assign_attr, handler = nodes.ImportFrom, nodes.AssignAttr, nodes.ExceptHandler
    one_child, keyword = _ONE_CHILD, nodes.Keyword
    leaves = LEAVES
    kinds = _WALK_SCOPE_KINDS
    by_type: Dict[type, List[int]] = {}   # the node-type index of analyse.syntax.nodes_of, made on the way
    mid = id(module)
    plain_m: list = []
    split_m: list = []
    plain: dict = {mid: plain_m}     # scope id -> its nodes, lambdas inline
    split: dict = {mid: split_m}     # lambdas are scopes of their own
    spans: dict = {}                 # function -> (start, end) of its subtree in the pre-order list
    # a stack of the open nodes' child iterators: pre-order in child order, and the depth of the
    # nodes the top iterator yields is len(stack) - 1; beside it the (plain, split) lists the nodes the
    # iterator yields go to (None in a class body) and what its own node adds when it is done
    # (the node for an ordinary one, (node,) for a lambda, which goes to the plain list only, the
    # function's own position for a function, whose subtree span is then known, None for a class or
    # the module)
    top: Iterator[nodes.NodeNG] = iter((module,))
    stack = [top]
    push, pop = stack.append, stack.pop
    cur = (None, None)
    cstack = [cur]
    cpush, cpop = cstack.append, cstack.pop
    estack: list = [None]
    epush, epop = estack.append, estack.pop
    a = d = None
    at = 0        # len(order), kept as a count (a len() call per node before)
    depth = 1     # len(stack)
    limit = MAX_NESTING + 1
    while True:
        node = next(top, None)
        if node is None:
            pop()
            depth -= 1
            if not depth:
                break
            top = stack[-1]
            cpop()
            cur = cstack[-1]
            a, d = cur
            done = epop()
            if done is not None:
                dt = type(done)
                if dt is tuple:
                    if a is not None:
                        a.append(done[0])
                elif dt is int:   # a function's position: its subtree ends here
                    spans[order[done]] = (done, at)
                else:
                    if a is not None:
                        a.append(done)
                    if d is not None:
                        d.append(done)
            continue
        cls = type(node)
        hit = by_type.get(cls)
        if hit is None:
            by_type[cls] = [at]
        else:
            hit.append(at)
        append(node)
        at += 1
        if cls in leaves:
            if cls is import_from:
                imports.append(node)
            if a is not None:
                a.append(node)
            if d is not None:
                d.append(node)
            continue
        if cls is assign_attr and type(node.parent) is not handler:
            assattrs.append(node)
        if cls in one_child:   # an attribute or keyword: its one child, when a leaf, is done here (no iterator)
            child = node.value if cls is keyword else node.expr
            ccls = type(child)
            if ccls in leaves:
                if depth >= limit:   # the child would be nested deeper than allowed
                    raise NestingTooDeep(depth)
                hit = by_type.get(ccls)
                if hit is None:
                    by_type[ccls] = [at]
                else:
                    hit.append(at)
                append(child)
                at += 1
                if a is not None:   # post-order: the child, then the node
                    a.append(child)
                    a.append(node)
                if d is not None:
                    d.append(child)
                    d.append(node)
                continue
        kind = kinds.get(cls)
        if kind is None:
            kind = kinds[cls] = (1 if issubclass(cls, nodes.FunctionDef) else 2 if issubclass(cls, nodes.ClassDef)
                                 else 3 if issubclass(cls, nodes.Lambda) else 4 if issubclass(cls, nodes.Module)
                                 else 0)
        if kind == 0:
            epush(node)
        elif kind == 1:
            a = plain[id(node)] = []
            d = split[id(node)] = []
            cur = (a, d)
            epush(at - 1)
        elif kind == 2:
            a = d = None
            cur = (None, None)
            epush(None)
        elif kind == 3:
            epush((node,))
            d = split[id(node)] = []
            cur = (a, d)
        else:   # the module: its body is the module's scope
            a, d = plain_m, split_m
            cur = (a, d)
            epush(None)
        cpush(cur)
        top = node.get_children()
        push(top)
        depth += 1
        if depth > limit:   # the children would be nested deeper than allowed (if there are any)
            children = list(top)
            if children:
                raise NestingTooDeep(depth - 1)
            top = stack[-1] = iter(children)
    for lst in plain.values():
        lst.reverse()
    for lst in split.values():
        lst.reverse()
    module._npu_scope_nodes = (plain, split)
    module._npu_preorder = order
    module._npu_types = by_type
    module._npu_spans = spans
    for from_node in imports:
        if from_node.modname == "__future__":
            for symbol, _ in from_node.names:
                module.future_imports.add(symbol)
        declared_global = _global_names(from_node.scope())
        for name, asname in from_node.names:
            if name == "*":
                continue
            local = asname or name
            target = module if local in declared_global else from_node.parent
            target.set_local(local, from_node)
            target.scope().locals[local].sort(key=lambda n: n.fromlineno or 0)
    for assattr in assattrs:
        _syntactic_assattr(assattr)


def _global_names(scope: nodes.NodeNG) -> Set[str]:
    """Names declared ``global`` directly in a function *scope* (not in nested scopes)."""
    if not isinstance(scope, (nodes.FunctionDef, nodes.Lambda)):
        return set()
    out: Set[str] = set()
    stack = list(scope.get_children())
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.Global):
            out.update(node.names)
        elif isinstance(node, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)):
            continue
        stack.extend(node.get_children())
    return out


def _syntactic_assattr(node: nodes.AssignAttr) -> None:
    expr = node.expr
    if not isinstance(expr, nodes.Name):
        return
    func = node.scope()
    if not isinstance(func, nodes.FunctionDef) or not isinstance(func.parent, nodes.ClassDef):
        return
    args = func.args.posonlyargs + func.args.args if func.args.args is not None else []
    if not args or args[0].name != expr.name:
        return
    values = func.parent.instance_attrs.setdefault(node.attrname, [])
    if node not in values:
        values.append(node)


def load_source(path: Path, relpath: str, modname: str) -> Tuple[Optional[SourceFile], Optional[AnalysisError]]:
    """Read, decode and parse one file. Returns (file, None) or (None, error)."""
    try:
        data = read_regular_file(path, file_limit(path))
    except FileTooLarge as exc:
        return None, AnalysisError(relpath, "too-large", f"file too large to analyse: {exc}")
    except NotRegularFile as exc:
        return None, AnalysisError(relpath, "io", f"not read: {exc} is not a regular file")
    except OSError as exc:
        return None, AnalysisError(relpath, "io", f"cannot read file: {exc.strerror or exc}")
    try:
        text = source_text(path, data)
    except NotANotebook as exc:
        return None, AnalysisError(relpath, "syntax", str(exc))
    except FileTooLarge as exc:
        return None, AnalysisError(relpath, "too-large", f"notebook code too large to analyse: {exc}")
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return None, AnalysisError(relpath, "encoding", f"cannot decode file: {exc}")
    if "\x00" in text:
        return None, AnalysisError(relpath, "encoding", "file contains NUL bytes (binary file?)")
    return parse_source(text, path, relpath, modname)


def parse_source(text: str, path: Path, relpath: str, modname: str) -> Tuple[Optional[SourceFile], Optional[AnalysisError]]:
    package = path.name == "__init__.py"
    name = modname
    if name.endswith(".__init__"):
        name, package = name[: -len(".__init__")], True
    try:
        tree = with_deep_stack(build_module, text, name, os.path.abspath(str(path)), package)
    except SyntaxError as exc:
        msg = exc.msg or str(exc).splitlines()[0]
        if _looks_like_python2(text):
            msg += " (Python 2 syntax: this file must be ported to Python 3 first)"
        return None, AnalysisError(relpath, "syntax", msg, exc.lineno)
    except NestingTooDeep as exc:
        return None, AnalysisError(relpath, "too-large", str(exc))
    except RecursionError as exc:
        return None, AnalysisError(relpath, "too-large",
                                   f"nested deeper than this Python ({platform.python_version()}) can parse: "
                                   f"{type(exc).__name__}: {exc}")
    except MemoryError:   # a flat literal of millions of items is not nested: say what happened
        return None, AnalysisError(relpath, "too-large",
                                   f"too large to parse in the memory available ({len(text)} characters, "
                                   f"{text.count(chr(10)) + 1} lines)")
    except (ValueError, TypeError) as exc:  # e.g. NUL bytes, odd tokenizer failures
        return None, AnalysisError(relpath, "syntax", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    sf = SourceFile(path=path, relpath=relpath, modname=modname, text=text, lines=text.splitlines(), tree=tree)
    return sf, None


def _looks_like_python2(text: str) -> bool:
    return bool(re.search(r"^\s*print\s+[\"'\w]|^\s*exec\s+[\"']|except\s+\w+\s*,\s*\w+\s*:|\bur[\"']", text, re.M))


T = TypeVar("T")
DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000
_deep = threading.local()


def with_deep_stack(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call ``fn(*args, **kwargs)`` in a thread with a large C stack and a raised recursion limit.

    Parsing and the syntactic walks recurse once per nesting level; deep but valid
    code (long operator chains, deep walrus nesting, long class hierarchies) must
    not end in RecursionError. Nested calls run directly in the deep thread.
    Exceptions propagate; a KeyboardInterrupt in the waiting thread propagates too.
    """
    if getattr(_deep, "active", False):
        return fn(*args, **kwargs)
    result: Dict[str, Any] = {}

    def target() -> None:
        _deep.active = True
        try:
            result["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    with _DEEP_LOCK:
        if not _DEEP_STATE["running"]:
            _DEEP_STATE["saved_limit"] = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_DEEP_STATE["saved_limit"], DEEP_RECURSION_LIMIT))
        _DEEP_STATE["running"] += 1
        worker: Optional[threading.Thread] = threading.Thread(target=target, name="npu-analyse-deep", daemon=True)
        try:
            old_size = threading.stack_size(DEEP_STACK_BYTES)
            try:
                worker.start()
            finally:
                threading.stack_size(old_size)
        except (ValueError, RuntimeError, MemoryError):  # no adjustable or reservable thread stack here
            worker = None
            _DEEP_STATE["running"] -= 1
            if not _DEEP_STATE["running"]:
                sys.setrecursionlimit(_DEEP_STATE["saved_limit"])
    if worker is None:
        return fn(*args, **kwargs)
    try:
        worker.join()
    finally:
        if not worker.is_alive():
            with _DEEP_LOCK:
                _DEEP_STATE["running"] -= 1
                if not _DEEP_STATE["running"]:
                    sys.setrecursionlimit(_DEEP_STATE["saved_limit"])
    if "error" in result:
        raise result["error"]
    return result["value"]


def deep_stack(fn: Callable[..., T]) -> Callable[..., T]:
    """Decorator: the function always runs through :func:`with_deep_stack`."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return with_deep_stack(fn, *args, **kwargs)
    return wrapper


_DEEP_LOCK = threading.Lock()
_DEEP_STATE: Dict[str, int] = {"running": 0, "saved_limit": 1000}
