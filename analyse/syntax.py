"""Syntax helpers every room may use: a memoised pre-order walk of an astroid
tree and the test for text that is not code (docstrings, log and exception
messages). Depends on astroid only, so the resolver and the passes can share it.
"""

from __future__ import annotations

from typing import Iterator, List

from astroid import nodes


def _preorder(node) -> List:
    out = []
    stack = [node]
    append = out.append
    while stack:
        n = stack.pop()
        append(n)
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
    return iter(_preorder(node))


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
    in a ``raise`` statement) or an assert message."""
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
