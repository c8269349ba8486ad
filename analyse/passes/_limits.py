"""Evaluate the structured limitation checks of an API (knowledge ``checks``) at one call site.

A check names an argument (by keyword, and by position where the knowledge gives one) and
says which values are unsupported. At a call the argument's value is a literal, a name bound
once to a literal (resolved), a dtype name (``torch.float64``), or unknown. Results:

* hit      -- the value breaks the limit (reported as manual, naming the argument),
* non-hit  -- not passed, or passed with a supported value (no finding),
* unknown  -- passed with a value that cannot be read statically, or a limit on the input
              tensor itself (dtype / number of dimensions), which calls do not show.

An ``attribute`` check limits the object the call returns (``torch.cuda.get_device_properties``: only
``name``, ``total_memory`` ... are filled on an NPU): its hits are the attributes the code reads from the
result, directly (``f(d).major``) or through the one name the result is assigned to in the same scope.
A ``result`` check says only creating the returned object is supported (``torch.nested.nested_tensor``: no other
operation on a nested tensor): its hit is the first operation the code runs on the result -- an attribute or
method read, an argument of a call, an operand -- directly or through the name it is assigned to, up to the
name's next binding in the same scope; a result only returned or stored is unknown (the caller operates on it).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from astroid import nodes

from analyse.syntax import own_bindings

_MISSING = object()
_UNKNOWN = object()

DTYPE_NAMES = {
    "float64": "fp64", "double": "fp64", "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16",
    "bfloat16": "bf16", "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "int16": "int16",
    "short": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64", "cfloat": "complex64",
    "complex128": "complex128", "cdouble": "complex128", "complex32": "complex32", "chalf": "complex32",
    "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
}


def _literal(node, resolver, depth: int = 0):
    """The Python value of a literal expression, {"name": qualname} for a dotted name, or _UNKNOWN."""
    if depth > 3 or node is None:
        return _UNKNOWN
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.UnaryOp) and node.op == "-" and isinstance(node.operand, nodes.Const) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if type(node) in (nodes.Tuple, nodes.List):
        vals = [_literal(e, resolver, depth + 1) for e in node.elts]
        return _UNKNOWN if any(v is _UNKNOWN for v in vals) else vals
    if isinstance(node, (nodes.Attribute, nodes.Name)):
        q = resolver.qualname(node) if resolver is not None else None
        if q and q.startswith("torch."):
            return {"name": q}
        if isinstance(node, nodes.Name):
            return _name_value(node, resolver, depth)
    return _UNKNOWN


def _name_value(node: nodes.Name, resolver, depth: int):
    """A name bound (in its scope) only by plain assignments of one and the same literal."""
    try:
        defs = own_bindings(node, node.name)
    except Exception:
        return _UNKNOWN
    if not defs:
        return _UNKNOWN
    values = []
    for d in defs:
        if not isinstance(d, nodes.AssignName):
            return _UNKNOWN
        parent = d.parent
        if not (isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and getattr(parent, "value", None) is not None):
            return _UNKNOWN
        if isinstance(parent, nodes.Assign) and d not in parent.targets:
            return _UNKNOWN
        v = _literal(parent.value, resolver, depth + 1)
        if v is _UNKNOWN:
            return _UNKNOWN
        values.append(v)
    return values[0] if all(v == values[0] for v in values) else _UNKNOWN


def _argument(call: nodes.Call, check, method: bool):
    """The expression passed for the check's parameter, _MISSING, or _UNKNOWN (*args / **kwargs)."""
    param = check.get("param")
    for kw in call.keywords or ():
        if kw.arg == param:
            return kw.value
    if any(kw.arg is None for kw in call.keywords or ()):
        return _UNKNOWN
    pos = check.get("position")
    args = list(call.args or ())
    for i, a in enumerate(args):
        if isinstance(a, nodes.Starred):
            return _UNKNOWN if pos is None or pos < 0 or i <= pos else _MISSING
    if isinstance(pos, int) and 0 <= pos < len(args):
        return args[pos]
    return _MISSING


def _same(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.get("name") == b.get("name")
    if isinstance(a, list) and not isinstance(b, list):
        return all(_same(x, b) for x in a)  # dilation=(1, 1) equals dilation=1
    if isinstance(b, list) and not isinstance(a, list):
        return all(_same(a, y) for y in b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def _show(v) -> str:
    if isinstance(v, dict):
        return v["name"]
    if isinstance(v, list):
        return "(" + ", ".join(_show(x) for x in v) + ")"
    return repr(v)


def _dtype_of(v) -> Optional[str]:
    if isinstance(v, dict):
        name = v["name"]
        if name.startswith("torch."):
            return DTYPE_NAMES.get(name[len("torch."):])
    return None


def result_attributes(call: nodes.Call) -> List[Tuple[str, nodes.NodeNG]]:
    """The attributes read from what *call* returns: ``call().x``, or ``v.x`` after ``v = call()`` (one target,
    the same scope; a name bound more than once is not followed)."""
    parent = call.parent
    if isinstance(parent, nodes.Attribute) and parent.expr is call:
        return [(parent.attrname, parent)]
    if not (isinstance(parent, nodes.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0], nodes.AssignName)):
        return []
    name = parent.targets[0].name
    scope = call.scope()
    if len(getattr(scope, "locals", {}).get(name, ())) != 1:
        return []
    return [(a.attrname, a) for a in scope.nodes_of_class(nodes.Attribute)
            if isinstance(a.expr, nodes.Name) and a.expr.name == name and a.scope() is scope]


def _operation(node) -> Optional[str]:
    """The operation *node* (the result, or a name holding it) takes part in, as source text; None when it is only
    returned, yielded, stored or bound to another name."""
    parent = node.parent
    if isinstance(parent, nodes.Attribute) and parent.expr is node:
        return "." + parent.attrname
    if isinstance(parent, nodes.Keyword):
        parent = parent.parent
    if isinstance(parent, nodes.Call) and node is not parent.func:
        return _snippet(parent)
    if isinstance(parent, (nodes.BinOp, nodes.Compare, nodes.UnaryOp)) or \
            (isinstance(parent, nodes.Subscript) and parent.value is node):
        return _snippet(parent)
    return None


def _snippet(node) -> str:
    try:
        s = " ".join(node.as_string().split())
    except Exception:  # pragma: no cover - odd trees
        return "..."
    return s if len(s) <= 60 else s[:57] + "..."


def result_operation(call: nodes.Call) -> Optional[str]:
    """The first operation the code runs on what *call* returns (:func:`_operation`): directly
    (``nested_tensor(xs).sum()``), or on the one name it is assigned to, between that assignment and the name's next
    binding in the same scope (``t = nested_tensor(xs)`` then ``y = layer(t)``)."""
    op = _operation(call)
    if op is not None:
        return op
    parent = call.parent
    if not (isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is call):
        return None
    targets = parent.targets if isinstance(parent, nodes.Assign) else [parent.target]
    if len(targets) != 1 or not isinstance(targets[0], nodes.AssignName):
        return None
    name, scope, start = targets[0].name, call.scope(), parent.lineno or 0
    later = [a.lineno for a in scope.nodes_of_class(nodes.AssignName)
             if a.name == name and a.scope() is scope and (a.lineno or 0) > start]
    stop = min(later) if later else None
    loads = sorted((n for n in scope.nodes_of_class(nodes.Name)
                    if n.name == name and n.scope() is scope and (n.lineno or 0) > start
                    and (stop is None or (n.lineno or 0) <= stop)),
                   key=lambda n: (n.lineno or 0, n.col_offset or 0))
    for n in loads:
        op = _operation(n)
        if op is not None:
            return op
    return None


def evaluate_checks(checks, call: Optional[nodes.Call], resolver, method: bool = False) -> Tuple[List[tuple], List]:
    """(hits, unknown) for one use. hits: [(check, shown value)]; unknown: [check]."""
    hits: List[tuple] = []
    unknown: List = []
    for c in checks:
        kind = c["kind"]
        if kind == "attribute":
            read = [a for a, _node in result_attributes(call)] if call is not None else []
            bad = [a for a in dict.fromkeys(read) if a not in c["allowed"]]
            if bad:
                hits.append((c, ", ".join(bad)))
            continue
        if kind == "result":
            op = result_operation(call) if call is not None else None
            if op is not None:
                hits.append((c, op))
            else:
                unknown.append(c)   # returned or stored: what the caller does with it is not seen here
            continue
        if kind == "ndim":
            if _ndim_material(c):
                unknown.append(c)  # calls do not show the input's number of dimensions
            continue
        if kind == "dtype":
            param = c.get("param")
            if c.get("allowed") and all(d.startswith("complex") for d in c["allowed"]):
                continue  # a complex-only API (view_as_real, is_complex): the list is its domain, not a limit
            if c.get("when"):
                continue  # conditional dtype lists (when mode is constant ...) are documentation, not checked
            if call is None or param not in (None, "dtype"):
                if "fp32" not in (c.get("allowed") or ["fp32"]):
                    unknown.append(c)
                continue
            expr = _argument(call, {"param": "dtype", "position": -1}, method)
            v = _literal(expr, resolver) if expr is not _MISSING and expr is not _UNKNOWN else expr
            dt = _dtype_of(v) if v is not _MISSING and v is not _UNKNOWN else None
            if dt is not None:
                if ("allowed" in c and dt not in c["allowed"]) or dt in (c.get("forbidden") or ()):
                    hits.append((c, _show(v)))
            elif "fp32" not in (c.get("allowed") or ["fp32"]):
                unknown.append(c)  # the input's dtype is not visible at the call
            continue
        if call is None:
            unknown.append(c)
            continue
        expr = _argument(call, c, method)
        if expr is _MISSING:
            continue
        v = _UNKNOWN if expr is _UNKNOWN else _literal(expr, resolver)
        if v is _UNKNOWN:
            unknown.append(c)
            continue
        if kind == "arg":
            default = c.get("default")
            if v is None or (("default" in c) and _same(v, default)) or ("default" not in c and v in (False, 0)):
                continue
            hits.append((c, _show(v)))
        elif kind == "value":
            if "allowed" in c and not any(_same(v, a) for a in c["allowed"]):
                hits.append((c, _show(v)))
            elif any(_same(v, f) for f in c.get("forbidden") or ()):
                hits.append((c, _show(v)))
    return hits, unknown


def _ndim_material(c) -> bool:
    """Dimension limits that only concern tensors of 7 or more dimensions are not worth a note."""
    if c.get("forbidden"):
        return min(c["forbidden"]) <= 6
    if c.get("min") is not None and c["min"] > 1:
        return True
    return c.get("max") is not None and c["max"] < 6
