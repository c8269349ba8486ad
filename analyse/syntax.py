"""Syntax helpers every room may use: a memoised pre-order walk of an astroid
tree and the test for text that is not code (docstrings, log and exception
messages). Depends on astroid only, so the resolver and the passes can share it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import re
from operator import itemgetter
from typing import Iterator, List, Sequence, Set

import astroid
from astroid import nodes


# "npu" or "ascend" in any case, but not inside "input" (an "npu" between "i" and "t"): the word that
# NPU evidence, NPU tests and NPU class names need. Plain "npu" would match nine files in ten.
NPU_WORD = re.compile(r"(?<!i)npu|npu(?!t)|ascend", re.IGNORECASE)


def mentions_npu(text: str) -> bool:
    """Whether *text* holds :data:`NPU_WORD`: ``bool(NPU_WORD.search(text))``, fifteen times faster. A
    case-insensitive search with a look-behind tries every position of the text (0.2 s for timm's 5 MB).
    Here the lowered text is searched for "ascend" and for each "npu" that is not inside "input"; only a
    text holding one goes to the pattern (nearly every file holds "input", few anything else).

    Lowering keeps every match: each character that the case-insensitive pattern takes for a letter of
    "npu", "ascend", "i" or "t" lowers to that letter or ends / starts with it (the long s excepted, which
    sends a text to the pattern too): checked over all of Unicode by a test."""
    low = text.lower()
    if "ascend" in low or "\u017f" in text:
        return NPU_WORD.search(text) is not None
    at = low.find("npu")
    while at >= 0:
        if at == 0 or low[at - 1] != "i" or low[at + 3:at + 4] != "t":
            return NPU_WORD.search(text) is not None
        at = low.find("npu", at + 3)
    return False

# astroid's List, Tuple and Set derive from an ABCMeta class (BaseContainer): isinstance against one of them runs
# ABCMeta.__instancecheck__ whenever the node is of another type (0.5 us for the three, against 0.03 us for a type
# test; 630k such tests on DeepSpeed). None of the three has a subclass (tests/test_speed.py checks), so the code
# tests ``type(x) is nodes.Tuple`` / ``type(x) in (nodes.List, nodes.Tuple, nodes.Set)`` instead.

# Node types that never have children: the walks do not ask them (more than half of all nodes).
LEAVES = frozenset((nodes.Name, nodes.Const, nodes.AssignName, nodes.DelName, nodes.Import, nodes.ImportFrom,
                    nodes.Pass, nodes.Break, nodes.Continue, nodes.Global, nodes.Nonlocal))


def _preorder(node) -> List:
    out = []
    stack = [node]
    append = out.append
    while stack:
        n = stack.pop()
        append(n)
        if type(n) in LEAVES:
            continue
        children = list(n.get_children())
        children.reverse()
        stack.extend(children)
    return out


def walk(node) -> Iterator:
    """Pre-order walk of an astroid tree.

    Walking a whole module is memoised on the module (every pass walks it), so
    the tree must not be modified after the first walk.
    """
    if isinstance(node, nodes.Module):
        cached = getattr(node, "_npu_preorder", None)
        if cached is None:
            cached = _preorder(node)
            node._npu_preorder = cached
        return iter(cached)
    span = _function_span(node)
    if span is not None:
        module, start, end = span
        return iter(module._npu_preorder[start:end])
    return iter(_preorder(node))


def _function_span(node):
    """(module, start, end) of a function's subtree in its module's pre-order list, kept by the parse
    walk (:func:`analyse.project._fill_syntactic_locals`); None for any other node, or a tree that walk
    did not make. A subtree's pre-order is its slice of the module's: the passes walk 1,700 functions of
    DeepSpeed (a fifth of its nodes), each walk a list of its children per node before."""
    if type(node) not in _SPANNED:
        return None
    module = node.root()
    spans = module.__dict__.get("_npu_spans")
    if spans is None:
        return None
    got = spans.get(node)
    if got is None:
        return None
    return module, got[0], got[1]


_SPANNED = frozenset((nodes.FunctionDef, nodes.AsyncFunctionDef))


def nodes_of(node, *classes) -> Sequence:
    """The nodes under *node* (itself included) that are instances of *classes*, in pre-order.

    For a whole module this is one shared traversal: the pre-order list (see
    :func:`walk`) is indexed by node type once, and each selection of types is
    memoised on the module, so a pass asking for the calls does not visit (or
    test) every other node of the tree. A function's selection is the part of
    the module's selection that lies in the function's span (:func:`_function_span`).
    """
    if not isinstance(node, nodes.Module):
        span = _function_span(node)
        if span is not None:
            module, start, end = span
            positions, found = _selection(module, classes)
            return list(found[bisect_left(positions, start):bisect_left(positions, end)])
        return [n for n in walk(node) if isinstance(n, classes)]
    return _selection(node, classes)[1]


def positions_of(module: nodes.Module, *classes) -> Sequence[int]:
    """Pre-order positions of :func:`nodes_of` (*module*, *classes*): merging two selections by position
    gives the order of one selection of both."""
    return _selection(module, classes)[0]


def _selection(module: nodes.Module, classes: tuple):
    memo = getattr(module, "_npu_selections", None)
    if memo is None:
        memo = module._npu_selections = {}
    hit = memo.get(classes)
    if hit is not None:
        return hit
    by_type = getattr(module, "_npu_types", None)
    if by_type is None:
        by_type = {}
        for i, n in enumerate(walk(module)):
            by_type.setdefault(type(n), []).append(i)
        module._npu_types = by_type
    positions: List[int] = []
    groups = 0
    for t, pos in by_type.items():
        if issubclass(t, classes):
            positions.extend(pos)
            groups += 1
    if groups > 1:
        positions.sort()
    pre = module._npu_preorder
    if len(positions) > 1:
        found = itemgetter(*positions)(pre)
    else:
        found = tuple(pre[i] for i in positions)
    hit = (tuple(positions), found)
    memo[classes] = hit
    return hit


# Calls whose string arguments are log / display text, never device values.
LOG_CALLS = {
    "print", "logging.info", "logging.debug", "logging.warning", "logging.error", "logging.critical",
    "logging.exception", "warnings.warn",
}
LOG_METHODS = {"info", "debug", "warning", "warn", "error", "critical", "exception", "log", "write", "print",
               "set_description", "set_postfix", "add_text", "echo"}


def in_log_or_docstring(node) -> bool:
    """True when *node* is text, not code: a docstring or bare string statement,
    an argument of a print/logging/warnings call, an exception message (anything
    in a ``raise`` statement) or an assert message. Kept on the node: several passes ask about every call."""
    d = getattr(node, "__dict__", None)
    if d is None:
        return _in_log_or_docstring(node)
    got = d.get("_npu_in_text")
    if got is None:
        got = d["_npu_in_text"] = _in_log_or_docstring(node)
    return got


def _in_log_or_docstring(node) -> bool:
    stmt = node.statement() if hasattr(node, "statement") else None
    if isinstance(stmt, nodes.Raise):
        return True
    if isinstance(stmt, nodes.Expr) and isinstance(stmt.value, (nodes.Const, nodes.JoinedStr)):
        return True  # docstring or bare string statement
    cur = node
    parent = node.parent
    while parent is not None and parent is not stmt:
        if isinstance(parent, nodes.Assert) and cur is parent.fail:
            return True
        if isinstance(parent, nodes.Call) and cur is not parent.func:
            f = parent.func
            if isinstance(f, nodes.Name) and (f.name == "print" or f.name.endswith(("Error", "Exception", "Warning"))):
                return True
            if isinstance(f, nodes.Attribute) and (f.attrname in LOG_METHODS or f.attrname.endswith(("Error", "Exception", "Warning"))):
                return True
            return False
        cur = parent
        parent = parent.parent
    if isinstance(stmt, nodes.Assert) and cur is stmt.fail:
        return True
    return False


def in_annotation(node) -> bool:
    """True when *node* is part of a type annotation: of an annotated assignment (``self.g: torch.cuda.CUDAGraph
    | None = None``), a parameter or a return. An annotation only names a type; nothing in it runs a device call
    (inside a function it is not even evaluated), so a name in it is no use of the API it names."""
    cur = node
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.AnnAssign):
            return cur is parent.annotation
        if isinstance(parent, nodes.Arguments):
            return any(cur is a for group in (parent.annotations, parent.posonlyargs_annotations,
                                              parent.kwonlyargs_annotations) for a in group or ()) \
                or cur is parent.varargannotation or cur is parent.kwargannotation
        if isinstance(parent, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
            return cur is parent.returns
        if getattr(parent, "is_statement", False) or isinstance(parent, (nodes.Lambda, nodes.Module)):
            return False
        cur = parent
        parent = parent.parent
    return False


def annotation_nodes(module: nodes.Module) -> Set[int]:
    """The ids of every node of *module* for which :func:`in_annotation` holds, from the annotations down
    (a lambda's inner nodes excepted, as there): a pass that asks about each name of the module tests one
    set instead of climbing from each (kept on the module; few modules annotate much)."""
    got = module.__dict__.get("_npu_annotation_ids")
    if got is not None:
        return got
    roots = []
    for owner in nodes_of(module, nodes.AnnAssign, nodes.Arguments, nodes.FunctionDef):
        if isinstance(owner, nodes.AnnAssign):
            roots.append(owner.annotation)
        elif isinstance(owner, nodes.Arguments):
            for group in (owner.annotations, owner.posonlyargs_annotations, owner.kwonlyargs_annotations):
                roots.extend(group or ())
            roots.extend((owner.varargannotation, owner.kwargannotation))
        else:
            roots.append(owner.returns)
    out: Set[int] = set()
    stack = [r for r in roots if r is not None]
    while stack:
        n = stack.pop()
        out.add(id(n))
        if type(n) not in LEAVES and not isinstance(n, nodes.Lambda):
            stack.extend(n.get_children())
    module.__dict__["_npu_annotation_ids"] = out
    return out


def whole_test(node):
    """The expression *node* is an operand of, through ``and`` / ``or`` / ``not``: the whole test it sits in
    (``x.is_cuda`` in ``if flag and not x.is_cuda:`` -> the ``and``); *node* itself when it is not an operand."""
    test = node
    while test.parent is not None and isinstance(test.parent, (nodes.BoolOp, nodes.UnaryOp)):
        test = test.parent
    return test


def is_main_guard(node) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not isinstance(node, nodes.If) or not isinstance(node.test, nodes.Compare):
        return False
    t = node.test
    parts = [t.left] + [c for _op, c in t.ops]
    names = {p.name for p in parts if isinstance(p, nodes.Name)}
    consts = {p.value for p in parts if isinstance(p, nodes.Const)}
    return "__name__" in names and "__main__" in consts


def merged(*selections) -> Iterator:
    """Nodes of several (position, node, ...) selections of one module, in pre-order, each node once."""
    by_pos: dict = {}
    for sel in selections:
        for item in sel:
            by_pos[item[0]] = item[1]   # a position is one node, whichever selection names it
    return map(by_pos.__getitem__, sorted(by_pos))


def selection(module: nodes.Module, *classes) -> Iterator:
    """(position, node) pairs of :func:`nodes_of` (*module*, *classes*), for :func:`merged`."""
    positions, found = _selection(module, classes)
    return zip(positions, found)


def scope_nodes(module: nodes.Module, scope, lambdas: bool) -> List:
    """The nodes that run in *scope* (the module, a function, or with *lambdas* a lambda) itself.

    Nested functions and classes are left out with everything under them (a class body belongs to
    no scope here; its methods are scopes of their own); with *lambdas* a lambda is a scope of its
    own, without it its nodes belong to the enclosing scope. A function's decorators, defaults and
    annotations are its own nodes. The order is that of a depth-first walk that takes the last child
    first. One walk of the module serves both variants and every scope (memoised on the module; the
    trees :func:`analyse.project.build_module` makes get the lists from their parse walk).
    """
    lists = getattr(module, "_npu_scope_nodes", None)
    if lists is None:
        lists = module._npu_scope_nodes = _scope_lists(module)
    return lists[1 if lambdas else 0].get(id(scope), [])


def _scope_lists(module: nodes.Module):
    # each stack item carries the lists its node goes to (None in a class body) instead of scope ids
    kinds = _SCOPE_KINDS
    mid = id(module)
    plain_m: list = []
    split_m: list = []
    plain: dict = {mid: plain_m}     # lambdas inline
    split: dict = {mid: split_m}     # lambdas are scopes
    stack = [(c, plain_m, split_m) for c in module.body]
    pop, push = stack.pop, stack.extend
    leaves = LEAVES
    while stack:
        n, a, d = pop()
        t = type(n)
        if t in leaves:
            if a is not None:
                a.append(n)
            if d is not None:
                d.append(n)
            continue
        kind = kinds.get(t)
        if kind is None:
            kind = kinds[t] = (1 if issubclass(t, nodes.FunctionDef) else 2 if issubclass(t, nodes.ClassDef)
                               else 3 if issubclass(t, nodes.Lambda) else 0)
        if kind == 0:
            if a is not None:
                a.append(n)
            if d is not None:
                d.append(n)
            push([(c, a, d) for c in n.get_children()])
        elif kind == 1:
            own_a = plain[id(n)] = []
            own_d = split[id(n)] = []
            push([(c, own_a, own_d) for c in n.get_children()])
        elif kind == 2:
            push([(c, None, None) for c in n.get_children()])
        else:
            if a is not None:
                a.append(n)
            own_d = split[id(n)] = []
            push([(c, a, own_d) for c in n.get_children()])
    return plain, split


_SCOPE_KINDS: dict = {}   # node type -> 0 plain node, 1 function, 2 class, 3 lambda (filled as types are met)


def bound_around(node, name: str) -> bool:
    """Whether a scope around *node* (function, lambda, comprehension, class or module) binds *name* at all.

    astroid's lookup only answers with the bindings of those scopes, else from the builtins module (whose
    first use builds it: a tenth of a second per process). A caller that only looks for assignments can
    skip the lookup when this is False: no assignment can come back."""
    cur = node
    while cur is not None:
        local = getattr(cur, "locals", None)
        if local is not None and name in local:
            return True
        cur = cur.parent
    return False


def own_bindings(node, name: str):
    """The bindings of *name* a use at *node* sees (:func:`lookup`'s second half), or ``()`` when no scope
    around *node* binds the name (:func:`bound_around`). For callers that only use the module's own
    assignments, imports or parameters, to whom the builtins module's definitions (and a module's
    ``__file__``) mean the same as none: astroid's builtins module is then never built."""
    if not bound_around(node, name):
        return ()
    return lookup(node, name)[1]


def sole_assigned_value(node: nodes.Name):
    """The value of the one binding of *node*'s name that its use sees, when that binding is a plain assignment
    (``name = <value>``); None for no binding, several, or one of another kind (a parameter, an import, a loop
    target, a tuple target)."""
    try:
        defs = own_bindings(node, node.name)
    except Exception:
        return None
    if len(defs) != 1 or not isinstance(defs[0], nodes.AssignName) or not isinstance(defs[0].parent, nodes.Assign):
        return None
    return defs[0].parent.value


def lookup(node, name: str):
    """``node.lookup(name)`` (astroid: the scope and the bindings a use of *name* at *node* sees),
    memoised on the node: trees do not change after parsing, and the passes and the resolver ask
    about the same names (four lookups in ten were repeats on timm). Exceptions are not memoised.
    Treat the result as read-only."""
    memo = node.__dict__.get("_npu_lookups")
    if memo is None:
        memo = node._npu_lookups = {}
    hit = memo.get(name)
    if hit is None:
        hit = module_binding(node, name)
        if hit is None:
            hit = frame_binding(node, name)
        if hit is None:
            try:
                hit = node.lookup(name)
            except KeyError as exc:
                if exc.args != ("builtins",):
                    raise
                # astroid builds its builtins module on first need, but the lookup of a method's decorator name
                # reads it without building it (ClassDef.scope_lookup) and raises: the answer then depended on
                # whether another lookup in the same process had built it before (a report that changed with
                # the order of the files, or with the worker a file went to)
                astroid.MANAGER.bootstrap()
                hit = node.lookup(name)
        memo[name] = hit
    return hit


_TOP_BINDINGS = (nodes.Import, nodes.ImportFrom, nodes.FunctionDef, nodes.ClassDef)
_FRAMES = (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)


def module_binding(node, name: str):
    """astroid's answer to ``node.lookup(name)`` without its search, ``(module, [binding])``, in the
    commonest cases, else None (ask astroid). The cases: a module-level name bound once, by an import,
    ``def`` or ``class`` statement, and either used in the body of a function, lambda or class with the
    binding at the top level of the module (``nn``, ``Optional`` or a helper function used in the module's
    functions: half of astroid's lookups on timm), or used in the module's own frame after the binding
    in the same statement list (``import torch`` then ``torch.manual_seed(0)``; a ``try:`` of optional
    imports and their uses), or used in the header of a ``def`` or ``class`` (decorators, parameter
    annotations and defaults, bases), which counts as a use in the frame around it; no scope between use
    and module may bind the name.

    Why astroid answers the same: its lookup climbs the scopes around the use (none binds the name,
    class scopes included here), reaches the module, and filters the module's bindings of the name
    (``filter_statements._filter_stmts``). Filtering by line only happens when the use's frame is the
    module (or the use is in a ``def``'s or ``class``'s own header: decorators, bases, parameters, the
    return annotation, which are looked up from the enclosing frame); one binding at the top level is
    in no branch (``if`` / ``try``) that could exclude the use; and dunder names are special there. In
    the module's frame the binding is kept when its line is not after the use's statement and the two
    statements are not in exclusive branches (``nodes.are_exclusive``: never for one statement list)."""
    if name[:2] == "__":
        return None
    module = node.root()
    binds = module.locals.get(name)
    if binds is None or len(binds) != 1:
        return None
    binding = binds[0]
    if not isinstance(binding, _TOP_BINDINGS):
        return None
    cur = node
    in_frame = False
    header = False
    while True:
        parent = cur.parent
        if parent is None:
            return None
        if parent is module:
            break
        if parent is binding and not cur.is_statement:
            return None   # in the def's / class's own header: its decorators do not see it (astroid)
        scope_locals = getattr(parent, "locals", None)
        if scope_locals is not None:
            if name in scope_locals:
                return None
            if not in_frame and isinstance(parent, _FRAMES):
                if isinstance(parent, nodes.Lambda):
                    if cur is not parent.body:   # a lambda's defaults: not answered here
                        return None
                    in_frame = True
                elif cur.is_statement:   # the body of the use's frame
                    in_frame = True
                else:   # a def's or class's header: its frame is the one around the def / class
                    header = True
        cur = parent
    if in_frame:
        return (module, [binding]) if binding.parent is module else None
    # a use in the module's own frame: astroid keeps a binding made earlier in the same statement list (the
    # module's body, or one block of a `try` / `if` / `for` / `with` at module level), so only that case; in
    # a header the use's statement is the def / class, and a default or a base is looked up from the line
    # before it (``def f(x=f)``, ``class A(A)``): an earlier line is kept in every case
    stmt = node.statement()
    if stmt is binding or stmt.parent is not binding.parent or stmt.fromlineno < binding.fromlineno \
            or header and stmt.fromlineno == binding.fromlineno or not _same_block(stmt, binding):
        return None
    return (module, [binding])


def frame_binding(node, name: str):
    """astroid's answer to ``node.lookup(name)`` without its search, ``(function, [binding])``, for the
    commonest uses of a local variable, else None (ask astroid). The name is bound once in the function
    around the use (comprehensions between may not bind it), and the use is in the function's body:

    * a parameter (``*args`` and ``**kwargs`` are bound to the ``Arguments`` node itself): every use in the
      body sees it;
    * a ``for`` target (or a name in it) and the use in the loop's body: astroid keeps an optional binding
      whose statement holds the use;
    * an assignment target (or a name unpacked by one), and the use in a later statement of the
      assignment's statement list or of a block nested in it.

    Why astroid answers the same (``filter_statements._filter_stmts`` over the one binding, the use's frame
    being the function): the binding's line is not after the use's statement (the line filter keeps it);
    its statement is not the use's (``x = x + 1`` looks further out); and the use is not in a branch
    exclusive to the binding (``nodes.are_exclusive`` decides at the first node above both: the function
    for a parameter, the assignment's block owner, where both are in one statement list, for an
    assignment -- never exclusive, for an ``if``, a ``try`` or any other owner)."""
    if name[:2] == "__":
        return None
    cur = node
    while True:   # up to the use's frame; only comprehension scopes may lie between
        parent = cur.parent
        if parent is None:
            return None
        scope_locals = getattr(parent, "locals", None)
        if scope_locals is not None:
            if type(parent) in _FUNCTIONS:
                if not cur.is_statement:   # the function's header: looked up from the frame around it
                    return None
                frame = parent
                break
            if isinstance(parent, (nodes.ClassDef, nodes.Lambda, nodes.Module)) or name in scope_locals:
                return None
        cur = parent
    binds = frame.locals.get(name)
    if binds is None:
        return None
    if len(binds) != 1:
        return _straight_line(node, frame, binds)
    return _one_binding(node, frame, binds[0])


def _one_binding(node, frame, binding):
    """:func:`frame_binding` for a use whose frame binds the name once (or whose only binding astroid's filter
    reaches: :func:`_before_later_bindings`)."""
    kind = type(binding)
    if kind is nodes.Arguments:   # *args / **kwargs
        return (frame, [binding]) if binding.parent is frame else None
    if kind is not nodes.AssignName:
        return None
    top, owner = _binder(binding)
    kind = type(owner)
    if kind is nodes.Arguments:   # a parameter
        return (frame, [binding]) if top is binding and owner.parent is frame else None
    stmt = node.statement()
    if kind in _FORS:   # a loop variable, used in the loop's body
        if owner.target is not top or stmt is owner:
            return None
        under = _child_towards(stmt, owner, frame)
        return (frame, [binding]) if under is not None and _same_block(under, owner.body[0]) else None
    if kind is not nodes.Assign or not any(t is top for t in owner.targets):
        return None
    if stmt is owner or stmt.fromlineno < owner.fromlineno:
        return None
    under = _child_towards(stmt, owner.parent, frame)
    if under is None or not _same_block(under, owner):
        return _lone_binding_kept(node, frame, binding)
    return (frame, [binding])


def _lone_binding_kept(node, frame, binding):
    """A use below a lone assignment in another block (``try: out = run() / except ...: return`` and ``out``
    after the ``try``): astroid's filter keeps the one binding it reaches -- on a line not after the use's, not
    in the use's own statement -- unless the two are in exclusive branches (an ``if``'s body and its ``else``,
    a ``try``'s body and a handler ...), which it asks ``nodes.are_exclusive``, as here."""
    if nodes.are_exclusive(node, binding):
        return None
    return (frame, [binding])


def _straight_line(node, frame, binds):
    """:func:`frame_binding` for a name bound several times in *frame*, each time by a parameter or by an
    assignment statement (``=`` or ``+=``) of the function's own statement list: the binding a use sees is
    the last one on a line not after the use's statement, the use's statement itself excluded (``x =
    self.proj(x)`` sees the ``x`` before it). astroid's filter keeps one binding per statement list when
    none is exclusive to another, and resets at a binding in the use's own list; nothing is left when no
    binding comes first (then it looks further out: None here).

    The bindings' statements are worked out once per function and name (:func:`_bindings_in_order`) and a
    use finds its binding by bisection: a function of thousands of lines rebinding one name at each was
    quadratic (every use walked every binding)."""
    prepared = _bindings_in_order(frame, binds)
    if prepared is None:
        return _before_later_bindings(node, frame, binds)
    return _last_before(node, frame, binds, prepared)


def _last_before(node, frame, binds, prepared):
    lines, statements, first_of = prepared
    stmt = node.statement()
    line = stmt.fromlineno
    if lines is not None:   # in line order (always, for one statement list): bisect
        cut = bisect_right(lines, line)
        at = first_of.get(id(stmt))
        if at is not None and at < cut:
            cut = at
        return (frame, [binds[cut - 1]]) if cut else None
    seen = None
    for b, at in zip(binds, statements):
        if at.fromlineno > line or at is stmt:
            break
        seen = b
    return (frame, [seen]) if seen is not None else None


def _before_later_bindings(node, frame, binds):
    """:func:`frame_binding` for a name bound several times in *frame*, some binding not a parameter or an
    assignment of the function's own statement list (``x = f(x)`` at the top, ``x = x[:, 0]`` inside an
    ``if`` further down): astroid's filter goes through the bindings in their order and stops at the first
    whose statement starts on a line after the use's statement (``filter_statements._filter_stmts``: the
    use's frame is the bindings' frame, so the line filter is on), so the bindings from there on never
    count, and its answer is its answer for the bindings before it alone. When those are one binding, or
    parameters and own-list assignments, they are answered as above; None otherwise (ask astroid), and when
    no binding comes before the stop (astroid then looks further out).

    The bindings' statement lines are worked out once per function and name (:func:`_bindings_in_order`'s
    memo); timm asks astroid 3,700 times for such a use, a parameter rebound in a nested block below it."""
    memo = frame.__dict__.get("_npu_straight")
    if memo is None:
        memo = frame.__dict__["_npu_straight"] = {}
    key = ("lines", id(binds))
    hit = memo.get(key)
    if hit is None or hit[0] is not binds:
        statements = [b.statement() for b in binds]
        lines = [st.fromlineno for st in statements]
        hit = memo[key] = (binds, (lines, statements) if all(lines) else None)
    if hit[1] is None:
        return None
    lines, statements = hit[1]
    stmt = node.statement()
    line = stmt.fromlineno
    if not line:
        return None
    stop = len(binds)
    for i, at in enumerate(lines):
        if at > line:
            stop = i
            break
        if statements[i] is stmt:   # a binding in the use's own statement (``x = f(x)``): the filter stops there
            owner = _binder(binds[i])[1]
            if owner is not stmt or type(owner) not in _OWN_STATEMENT_STOPS:
                return None
            stop = i
            break
    if not stop:   # no binding before the use: astroid looks further out
        return None
    if _resets(binds[stop - 1], stmt):
        return (frame, [binds[stop - 1]])
    if stop == len(binds):   # no binding after the use: the whole list counts
        return None
    if stop == 1:
        return _one_binding(node, frame, binds[0])
    key = ("prefix", id(binds), stop)
    hit = memo.get(key)
    if hit is None or hit[0] is not binds:
        hit = memo[key] = (binds, _prepare_bindings(frame, binds[:stop]))
    prepared = hit[1]
    if prepared is None:
        return None
    return _last_before(node, frame, binds[:stop], prepared)


_OWN_STATEMENT_STOPS = frozenset((nodes.Assign, nodes.AugAssign))


def _resets(last, stmt) -> bool:
    """The last binding astroid's filter reaches (*last*) is a target of an ``=`` / ``+=`` statement of the use's
    own statement list (``cfg = cfg["pretrained"]`` after an ``if`` that bound ``cfg`` too): the filter resets its
    list there and keeps only that binding (``filter_statements._filter_stmts``: an assignment whose statement
    has the use's statement's parent, in the same list, so in no branch exclusive to the use)."""
    if type(last) is not nodes.AssignName:
        return False
    top, owner = _binder(last)
    kind = type(owner)
    if kind is nodes.Assign:
        if not any(t is top for t in owner.targets):
            return False
    elif kind is not nodes.AugAssign or owner.target is not last:
        return False
    return owner is not stmt and owner.parent is stmt.parent and _same_block(owner, stmt)


def _bindings_in_order(frame, binds):
    """(line of each binding's statement or None when not in order, the statements, statement id -> first
    index), or None when a binding is not a parameter or an assignment of the function's own statement list.
    Kept on the function node per name (trees do not change once built)."""
    memo = frame.__dict__.get("_npu_straight")
    if memo is None:
        memo = frame.__dict__["_npu_straight"] = {}
    key = id(binds)
    hit = memo.get(key)
    if hit is not None and hit[0] is binds:
        return hit[1]
    prepared = _prepare_bindings(frame, binds)
    memo[key] = (binds, prepared)
    return prepared


def _prepare_bindings(frame, binds):
    statements = []   # each binding's statement (a parameter's is the def)
    for b in binds:
        if type(b) is nodes.Arguments:
            if b.parent is not frame:
                return None
            statements.append(frame)
            continue
        if type(b) is not nodes.AssignName:
            return None
        top, owner = _binder(b)
        kind = type(owner)
        if kind is nodes.Arguments:
            if top is not b or owner.parent is not frame:
                return None
            statements.append(frame)
        elif kind is nodes.Assign:
            if owner.parent is not frame or not any(t is top for t in owner.targets):
                return None
            statements.append(owner)
        elif kind is nodes.AugAssign:
            if owner.parent is not frame or owner.target is not b:
                return None
            statements.append(owner)
        else:
            return None
    lines = [at.fromlineno for at in statements]
    ordered = all(a <= b for a, b in zip(lines, lines[1:]))
    first_of: dict = {}
    for i, at in enumerate(statements):
        first_of.setdefault(id(at), i)
    return (lines if ordered else None), statements, first_of


def _binder(binding):
    """(the target that holds *binding* -- itself, or the tuple, list or starred target around it -- and the
    node that binds it: an ``Assign``, ``AugAssign``, ``For``, the ``Arguments`` of a def ...)."""
    top, owner = binding, binding.parent
    while type(owner) in _UNPACKING:
        top, owner = owner, owner.parent
    return top, owner


def _child_towards(stmt, owner, frame):
    """The child of *owner* that holds statement *stmt* (or is it), or None when *owner* is not above it
    (below *frame*)."""
    under = stmt
    while under.parent is not owner:
        under = under.parent
        if under is None or under is frame:
            return None
    return under


_UNPACKING = frozenset((nodes.Tuple, nodes.List, nodes.Starred))
_FORS = frozenset((nodes.For, nodes.AsyncFor))
_FUNCTIONS = frozenset((nodes.FunctionDef, nodes.AsyncFunctionDef))


def _same_block(a, b) -> bool:
    """Whether statements *a* and *b* (of one parent) are in the same statement list of it (a ``try``'s
    body, not one in its body and one in its handlers). One table per parent, kept on it."""
    parent = a.parent
    table = parent.__dict__.get("_npu_fields")
    if table is None:
        table = {}
        for fld in parent._astroid_fields:
            value = getattr(parent, fld, None)
            if isinstance(value, list):
                for child in value:
                    table[id(child)] = fld
        parent._npu_fields = table
    field = table.get(id(a))
    return field is not None and field == table.get(id(b))
