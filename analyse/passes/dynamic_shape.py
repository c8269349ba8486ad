"""dynamic-shape: code whose tensor shapes change with the data or from batch to batch.

On an Ascend NPU operators (and graphs, in graph mode) are compiled per input
shape: every new shape triggers a recompile, and an op whose *output* shape
depends on tensor values makes the host wait for the device (sync) and breaks
graph mode (torch.compile / torchair). The official tooling finds these only by
running the model; this pass finds them statically:

* ``NPU601`` ops with data-dependent output shapes: ``nonzero`` / ``argwhere``
  (function and method, also ``as_tuple=True``), ``masked_select``, ``unique`` /
  ``unique_consecutive``, one-argument ``torch.where(cond)``,
  ``repeat_interleave`` with tensor repeats and no ``output_size``,
  ``bincount`` without ``minlength``, ``torchvision.ops.nms`` / ``batched_nms``.
  The op list and the why/fix texts are data: ``data/dynamic_shape.yaml``.
* ``NPU602`` boolean-mask indexing, read ``x[mask]`` and write ``x[mask] = v``,
  when the index is known to be a boolean tensor: a comparison involving a
  tensor, ``~m`` / ``m & n`` / ``m | n``, ``isnan`` / ``isinf`` / ``isfinite`` /
  ``logical_*``, ``.bool()``, ``.eq/.ne/.gt...()``, ``torch.ones(..., dtype=torch.bool)``
  and local variables assigned from those.
* ``NPU603`` sizes taken from tensor values: ``.item()``, ``.tolist()``,
  ``int(t)``, ``t.max()`` / ``t.sum()`` flowing (through simple assignments and
  arithmetic inside one function) into a shape: factories (``torch.zeros(n)``,
  ``arange``), ``view`` / ``reshape`` / ``expand`` / ``repeat`` / ``new_zeros`` /
  ``narrow`` / ``split`` / ``topk``, ``F.pad``, ``F.interpolate(size=)`` and
  slices ``x[:n]``. Reported at the shape use, naming where the value came from.
* ``NPU604`` per-batch varying input shapes: collate functions (passed as
  ``collate_fn=`` or named ``*collat*``) that pad to the longest item
  (``max(len(x) for x in batch)``, ``max(lengths)``, ``lengths.max()``),
  ``pad_sequence`` anywhere, tokenizer calls with ``padding=True`` / ``'longest'``
  and ``DataCollatorWithPadding``-style collators without fixed-length padding.
* ``NPU605`` packed sequences (``pack_padded_sequence`` / ``pack_sequence``).

Severity: every rule is ``advice`` (the code computes the right result on an
NPU in the default eager mode; it costs syncs and recompiles), except that
NPU601-NPU603 become ``manual`` in a module that uses graph mode
(``torch.compile`` or ``torchair``), where data-dependent shapes break or fail
the graph. Confidence is ``high`` when the receiver / mask / value source is
known to be a tensor, ``medium`` when it is inferred from torch-only method
names. Modules that do not import torch are skipped (numpy-only code), numpy /
pandas calls (``np.nonzero``) never match, and plain list / dict indexing is
never a mask index.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, nodes_of, walk
from analyse.syntax import lookup, own_bindings, scope_nodes

DATA_FILE = "dynamic_shape.yaml"
SET_COMPILE = "torch_npu.npu.set_compile_mode(jit_compile=False)"

R_OP = Rule(
    code="NPU601", name="data-dependent-output-shape", category="dynamic-shape", severity="advice",
    summary="An op whose output shape depends on tensor values (nonzero, unique, masked_select, one-argument "
            "where, bincount, nms ...).",
    why="NPUs compile operators per shape. The output size of these ops is known only after the device has "
        "computed the data, so the host waits for the device (sync), every new size recompiles the following "
        "operators, and graph mode (torch.compile / torchair) breaks or fails. Severity is advice in eager mode and "
        "manual in modules that use torch.compile or torchair.",
    example="idx = torch.nonzero(scores > 0.5)\nlabels = targets.unique()\nkeep = torchvision.ops.nms(boxes, scores, 0.5)",
    fix="mask = scores > 0.5\nout = torch.where(mask, scores, torch.zeros_like(scores))   # fixed shape\n"
        "idx = torch.nonzero_static(mask, size=MAX_K)                # fixed upper bound\n"
        "counts = torch.bincount(targets, minlength=NUM_CLASSES)\n"
        "# unavoidable: " + SET_COMPILE,
)
R_MASK = Rule(
    code="NPU602", name="boolean-mask-indexing", category="dynamic-shape", severity="advice",
    summary="A tensor indexed with a boolean mask (`x[mask]` or `x[mask] = v`).",
    why="Boolean-mask indexing is nonzero + gather (read) or nonzero + index_put (write): the number of selected "
        "elements depends on the data, so the NPU syncs with the host and recompiles for each new count; graph "
        "mode breaks. Severity is advice in eager mode and manual in modules that use torch.compile or torchair.",
    example="loss = loss[valid]\nx[torch.isnan(x)] = 0\npos = pred[target > 0]",
    fix="loss = (loss * valid).sum() / valid.sum().clamp(min=1)\nx = torch.where(torch.isnan(x), torch.zeros_like(x), x)   # or x.masked_fill_(torch.isnan(x), 0)\n"
        "pos = torch.where(target > 0, pred, 0)",
)
R_VALUE = Rule(
    code="NPU603", name="shape-from-tensor-value", category="dynamic-shape", severity="advice",
    summary="A shape or slice bound computed from tensor values (`.item()`, `.tolist()`, `int(t)`, `t.max()`).",
    why="Reading a tensor value on the host syncs the NPU, and a shape that follows the data is new whenever the "
        "data changes: each new shape recompiles the operators (slow on NPU) and breaks graph mode. Severity is "
        "advice in eager mode and manual in modules that use torch.compile or torchair.",
    example="n = lengths.max().item()\nout = torch.zeros(b, n)\nx = x[:, :n]",
    fix="out = torch.zeros(b, MAX_LEN)               # fixed maximum, mask the padding\n"
        "n = (n + 63) // 64 * 64                      # or bucket to a few sizes\n"
        "# unavoidable: " + SET_COMPILE,
)
R_COLLATE = Rule(
    code="NPU604", name="pad-to-longest-batch", category="dynamic-shape", severity="advice",
    summary="Batches padded to their longest item (collate functions, pad_sequence, tokenizer padding=True).",
    why="Padding each batch to its longest item gives a different input shape almost every step; on an NPU each "
        "new shape recompiles the graph / operators, so training spends its time compiling. This is performance "
        "advice: results are correct.",
    example="def collate(batch):\n    max_len = max(len(x) for x in batch)\n    return pad_sequence(batch, batch_first=True)",
    fix="def collate(batch):\n    max_len = MAX_LEN                      # fixed, or bucketed: (max_len + 63) // 64 * 64\n"
        "    return torch.stack([F.pad(x, (0, max_len - len(x))) for x in batch])\n"
        "# tokenizers: padding='max_length', max_length=MAX_LEN (or pad_to_multiple_of=64)",
)
R_PACKED = Rule(
    code="NPU605", name="packed-sequence", category="dynamic-shape", severity="advice",
    summary="`pack_padded_sequence` / `pack_sequence` (packed variable-length RNN batches).",
    why="Packed sequences carry per-batch lengths: the RNN runs over data-dependent batch sizes per step, lengths "
        "are moved to the CPU, and each length pattern gives new shapes to compile on the NPU.",
    example="packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True)\nout, _ = self.lstm(packed)",
    fix="out, _ = self.lstm(emb)                       # padded input with a fixed max length\n"
        "out = out * mask.unsqueeze(-1)                # mask padded steps\n"
        "last = out[torch.arange(b), lengths - 1]      # last valid step",
)

# --------------------------------------------------------------------------- vocabularies

_COMPARE_OPS = {"<", ">", "<=", ">=", "==", "!="}
# torch functions returning a boolean tensor
_BOOL_FUNCS = {
    "torch." + n for n in (
        "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isreal", "logical_and", "logical_or", "logical_not",
        "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "greater_equal", "less_equal",
        "not_equal", "isin", "isclose", "signbit", "bernoulli")
}
# tensor methods returning a boolean tensor
_BOOL_METHODS = {
    "bool", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_not", "logical_and", "logical_or",
    "logical_xor", "eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "greater_equal", "less_equal",
    "not_equal", "isclose", "signbit",
}
_BOOL_DTYPES = {"torch.bool", "torch.uint8"}
_FACTORIES_BOOL = {"torch.ones", "torch.zeros", "torch.full", "torch.empty", "torch.ones_like", "torch.zeros_like",
                   "torch.full_like", "torch.empty_like", "torch.tensor", "torch.as_tensor"}
# methods that exist on tensors but not on numpy arrays / pandas objects / str: a receiver using them is a tensor
_TORCH_ONLY_METHODS = {
    "view", "view_as", "masked_fill", "masked_fill_", "long", "int", "float", "half", "bfloat16", "bool", "detach",
    "cuda", "npu", "cpu", "contiguous", "permute", "unsqueeze", "softmax", "log_softmax", "sigmoid", "type_as",
    "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "clone", "expand", "expand_as", "flatten",
    "index_select", "gather", "scatter", "masked_select", "narrow", "unflatten", "to", "ne", "eq", "gt", "lt", "ge",
    "le", "logical_not", "isnan", "isinf", "isfinite", "matmul", "bmm", "mm", "exp", "log", "sqrt",
    "amax", "amin", "topk", "norm", "neg", "relu", "sign",
}
# methods shared with numpy / pandas: evidence of a tensor only with a known tensor receiver
_REDUCE_METHODS = {"max", "min", "sum", "amax", "amin", "count_nonzero", "prod"}
_SHAPE_PASSTHROUGH_CALLS = {"int", "float", "round", "max", "min", "abs", "math.ceil", "math.floor", "math.trunc",
                            "sum", "divmod"}
# shape sinks: factory function -> which positional args are sizes (None = all) plus size keywords
_FACTORY_SINKS: Dict[str, Tuple[Optional[Tuple[int, ...]], Tuple[str, ...]]] = {
    "torch.zeros": (None, ("size",)), "torch.ones": (None, ("size",)), "torch.empty": (None, ("size",)),
    "torch.rand": (None, ("size",)), "torch.randn": (None, ("size",)), "torch.full": ((0,), ("size",)),
    "torch.arange": (None, ("start", "end", "step")), "torch.linspace": ((2,), ("steps",)),
    "torch.eye": (None, ("n", "m")), "torch.randperm": ((0,), ("n",)), "torch.randint": ((2,), ("size",)),
    "torch.nn.functional.pad": ((1,), ("pad",)), "torch.nn.functional.interpolate": ((1,), ("size",)),
    "torch.split": ((1,), ("split_size_or_sections",)), "torch.narrow": ((2, 3), ("start", "length")),
    "torch.reshape": ((1,), ("shape",)), "torch.tile": ((1,), ("dims",)), "torch.topk": ((1,), ("k",)),
    "torch.repeat_interleave": ((1,), ("repeats",)),
    "torch.nn.functional.adaptive_avg_pool2d": ((1,), ("output_size",)),
    "torch.nn.functional.adaptive_avg_pool1d": ((1,), ("output_size",)),
}
# tensor method sinks: name -> (positional args that are sizes (None = all), keywords, torch-only name?)
_METHOD_SINKS: Dict[str, Tuple[Optional[Tuple[int, ...]], Tuple[str, ...], bool]] = {
    "view": (None, ("size",), True), "expand": (None, ("size",), True), "new_zeros": (None, ("size",), True),
    "new_ones": (None, ("size",), True), "new_empty": (None, ("size",), True), "new_full": ((0,), ("size",), True),
    "narrow": ((1, 2), ("start", "length"), True), "unflatten": ((1,), ("sizes",), True),
    "resize_": (None, ("size",), True), "topk": ((0,), ("k",), True),
    "reshape": (None, ("shape",), False), "repeat": (None, ("repeats",), False), "tile": (None, ("dims",), False),
    "split": ((0,), ("split_size",), False), "repeat_interleave": ((0,), ("repeats",), False),
}
_PAD_SEQUENCE = {"torch.nn.utils.rnn.pad_sequence"}
_PACKED = {"torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.rnn.pack_sequence"}
_HF_COLLATORS = ("DataCollatorWithPadding", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification",
                 "DataCollatorForLanguageModeling", "DataCollatorForWholeWordMask")
_LISTY_CALLS = {"list", "sorted", "tuple", "str", "dict", "set", "range", "enumerate", "zip", "reversed"}


def _is_builtin(r, func, name: str) -> bool:
    if not (isinstance(func, nodes.Name) and func.name == name):
        return False
    q = r.qualname(func)
    return q == f"builtins.{name}" or (q is None and not _bound_locally(func))


def _bound_locally(name: nodes.Name) -> bool:
    try:
        _s, defs = lookup(name, name.name)
    except Exception:
        return False
    return bool(defs)


def _short(node, limit: int = 60) -> str:
    try:
        text = node.as_string()
    except Exception:  # pragma: no cover
        return "?"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _max_conf(a: Optional[str], b: Optional[str]) -> Optional[str]:
    if a == "high" or b == "high":
        return "high"
    return a or b


class _Analysis:
    """Per-module helpers with caches: tensor-ness, boolean masks, value taint."""

    def __init__(self, ctx: ModuleContext):
        self.ctx = ctx
        self.r = ctx.resolver
        self._tensorish: Dict[int, Optional[str]] = {}
        self._mask: Dict[int, Optional[str]] = {}
        self.pandas = False
        self.numpy = False

    # ------------------------------------------------------------ tensors
    def tensorish(self, node, depth: int = 0) -> Optional[str]:
        """'high' when *node* is known to be a tensor, 'medium' when torch-only methods say so, else None."""
        return _memoised(self._tensorish, self._tensorish_uncached, node, depth)

    def _tensorish_uncached(self, node, depth: int) -> Optional[str]:
        r = self.r
        if r.type_of(node) == "torch.Tensor":
            return "high"
        if isinstance(node, nodes.Compare):
            if not all(op in _COMPARE_OPS for op, _ in node.ops):
                return None
            res = self.tensorish(node.left, depth + 1)
            for _op, o in node.ops:
                res = _max_conf(res, self.tensorish(o, depth + 1))
            return res
        if isinstance(node, nodes.BinOp):
            return _max_conf(self.tensorish(node.left, depth + 1), self.tensorish(node.right, depth + 1))
        if isinstance(node, nodes.UnaryOp) and node.op in ("~", "-"):
            return self.tensorish(node.operand, depth + 1)
        if isinstance(node, nodes.Subscript):
            return self.tensorish(node.value, depth + 1)
        if isinstance(node, nodes.Call):
            q = r.qualname(node.func)
            if q is not None:
                if q in _BOOL_FUNCS:
                    return "high"
                return None
            func = node.func
            if isinstance(func, nodes.Attribute):
                recv = self.tensorish(func.expr, depth + 1)
                if recv and func.attrname not in ("item", "tolist", "size", "dim", "numel", "numpy", "stride"):
                    return recv
                if func.attrname in _TORCH_ONLY_METHODS and not self.pandas:
                    return "medium"
            return None
        if isinstance(node, nodes.Attribute) and node.attrname in ("data", "grad", "T", "mT"):
            return self.tensorish(node.expr, depth + 1)
        if isinstance(node, nodes.Name):
            return self._agree(node, self.tensorish, depth)
        return None

    def _agree(self, name: nodes.Name, classify, depth: int) -> Optional[str]:
        """Classify a local name by every value assigned to it: None if any is unknown,
        the common confidence if they agree, else 'medium'."""
        vals = self._local_values(name)
        if not vals:
            return None
        res = None
        for v in vals:
            c = classify(v, depth + 1)
            if c is None:
                return None
            res = c if res is None else (res if res == c else "medium")
        return res

    @staticmethod
    def _local_values(name: nodes.Name) -> List:
        """Values of plain assignments that may reach *name*; [] when any definition is something else."""
        try:
            defs = own_bindings(name, name.name)
        except Exception:
            return []
        out = []
        for d in defs:
            if not isinstance(d, nodes.AssignName):
                return []
            parent = d.parent
            if type(parent) is nodes.Tuple and isinstance(parent.parent, nodes.Assign) and \
                    parent in parent.parent.targets:
                value = parent.parent.value
                if type(value) is nodes.Tuple and len(value.elts) == len(parent.elts) and \
                        not any(isinstance(e, nodes.Starred) for e in parent.elts):
                    out.append(value.elts[parent.elts.index(d)])
                    continue
                return []
            if isinstance(parent, (nodes.Assign, nodes.AnnAssign, nodes.NamedExpr)):
                value = parent.value
                if value is None or (isinstance(parent, nodes.Assign) and d not in parent.targets):
                    return []
                out.append(value)
            elif isinstance(parent, nodes.AugAssign):
                out.append(parent.value)
            else:
                return []
        return out

    # ------------------------------------------------------------ masks
    def mask(self, node, depth: int = 0) -> Optional[str]:
        """Confidence that *node* is a boolean tensor, or None."""
        return _memoised(self._mask, self._mask_uncached, node, depth)

    def _mask_uncached(self, node, depth: int) -> Optional[str]:
        r = self.r
        if isinstance(node, nodes.Compare):
            if not all(op in _COMPARE_OPS for op, _ in node.ops):
                return None
            return self.tensorish(node, depth + 1)
        if isinstance(node, nodes.UnaryOp) and node.op == "~":
            # `~t` on a tensor is almost always a logical not of a mask
            return self.mask(node.operand, depth + 1) or self.tensorish(node.operand, depth + 1)
        if isinstance(node, nodes.BinOp) and node.op in ("&", "|", "^"):
            return _max_conf(self.mask(node.left, depth + 1), self.mask(node.right, depth + 1))
        if isinstance(node, nodes.BinOp) and node.op == "*":
            left, right = self.mask(node.left, depth + 1), self.mask(node.right, depth + 1)
            return _max_conf(left, right) if left and right else None
        if isinstance(node, nodes.Call):
            func = node.func
            q = r.qualname(func)
            if q is not None:
                if q in _BOOL_FUNCS:
                    return "high"
                if q in _FACTORIES_BOOL and self._bool_dtype(node):
                    return "high"
                return None
            if isinstance(func, nodes.Attribute):
                name = func.attrname
                recv = self.tensorish(func.expr, depth + 1)
                if name in _BOOL_METHODS:
                    if recv:
                        return "high" if recv == "high" else "medium"
                    return None if self.pandas else "medium"
                if name in ("to", "type") and self._bool_dtype(node, positional=True):
                    return recv or "medium"
                if name in ("mul", "logical_and", "__and__", "__or__") and node.args:
                    left, right = self.mask(func.expr, depth + 1), self.mask(node.args[0], depth + 1)
                    if left and right:
                        return _max_conf(left, right)
                if name in ("any", "all") and (node.args or node.keywords):
                    return self.mask(func.expr, depth + 1) or (recv if recv == "high" else None)
                if name in ("clone", "detach", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze",
                            "expand", "expand_as", "view_as", "t", "transpose", "permute", "cpu", "npu", "cuda"):
                    return self.mask(func.expr, depth + 1)
            return None
        if isinstance(node, nodes.Subscript):
            return self.mask(node.value, depth + 1) if isinstance(node.slice, (nodes.Slice, nodes.Tuple)) else None
        if isinstance(node, nodes.Name):
            return self._agree(node, self.mask, depth)
        return None

    def _bool_dtype(self, call: nodes.Call, positional: bool = False) -> bool:
        cands = [kw.value for kw in call.keywords or () if kw.arg == "dtype"]
        if positional:
            cands += list(call.args[:1])
        return any(self.r.qualname(c) in _BOOL_DTYPES or (isinstance(c, nodes.Name) and c.name == "bool")
                   for c in cands)


class DynamicShapePass(Pass):
    name = "dynamic-shape"
    rules = (R_OP, R_MASK, R_VALUE, R_COLLATE, R_PACKED)

    VALID = (
        # numpy is not torch
        "import numpy as np\nimport torch\nidx = np.nonzero(a > 0)\nu = np.unique(a)\nb = a[a > 0]\n",
        # plain containers and constant slices
        "import torch\nd = {}\nv = d[key]\nitems = [1, 2, 3]\nhead = items[:2]\nx = torch.zeros(4)\ny = x[:2]\n",
        # fixed-shape alternatives
        "import torch\nx = torch.randn(8)\ny = torch.where(x > 0, x, torch.zeros_like(x))\nz = x.masked_fill(x < 0, 0)\n"
        "c = torch.bincount(x.long(), minlength=10)\nr = x.repeat_interleave(2)\n",
        # .item() for logging only
        "import torch\nloss = torch.randn(()).sum()\nprint(loss.item())\nn = x.size(0)\ny = torch.zeros(n)\n",
        # a module without torch
        "import numpy as np\nx = a.nonzero()\ny = a[a > 0]\nn = int(a.max())\nb = np.zeros(n)\n",
        # pandas filtering
        "import pandas as pd\nimport torch\ndf = pd.read_csv('x')\ndf = df[df.label.ne(0)]\nu = df.label.unique()\n",
    )
    INVALID = (
        "import torch\nx = torch.randn(8)\nidx = torch.nonzero(x > 0)  # expect: NPU601\n"
        "i2 = x.nonzero(as_tuple=True)  # expect: NPU601\nu = torch.unique(x)  # expect: NPU601\n"
        "w = torch.where(x > 0)  # expect: NPU601\nm = x.masked_select(x > 0)  # expect: NPU601\n",
        "import torch\nx = torch.randn(8)\nvalid = x > 0\ny = x[valid]  # expect: NPU602\n"
        "x[torch.isnan(x)] = 0  # expect: NPU602\nz = x[~valid & (x < 3)]  # expect: NPU602\n",
        "import torch\nlengths = torch.tensor([3, 5])\nn = lengths.max().item()\nout = torch.zeros(2, n)  # expect: NPU603\n"
        "y = out[:, :n]  # expect: NPU603\n",
        "import torch\nfrom torch.nn.utils.rnn import pad_sequence\n\ndef collate(batch):\n"
        "    max_len = max(len(x) for x in batch)  # expect: NPU604\n"
        "    return pad_sequence(batch, batch_first=True)  # expect: NPU604\n",
        "import torch\nfrom torch.nn.utils.rnn import pack_padded_sequence\n"
        "packed = pack_padded_sequence(emb, lengths, batch_first=True)  # expect: NPU605\n",
        "import torch\nx = torch.randn(8)\ny = torch.compile(f)\nidx = x.nonzero()  # expect: NPU601\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        tops = _import_tops(ctx.tree)
        if not tops & {"torch", "torchvision"}:
            return
        data = ctx.kb.data_file(DATA_FILE)
        self._data = data
        self._texts = data.get("texts", {})
        an = _Analysis(ctx)
        an.pandas = "pandas" in tops
        an.numpy = bool(tops & {"numpy", "cupy", "pandas", "scipy", "jax"})
        graph = _uses_graph_mode(ctx, tops)
        self._sync_severity = "manual" if graph else "advice"
        self._graph_note = (" This module uses graph mode (torch.compile / torchair), where it breaks the graph."
                            if graph else "")
        funcs, methods = _op_tables(data)
        seen: Set[Tuple[int, str]] = set()

        def emit(f: Optional[Finding]):
            if f is None:
                return None
            key = (f.line, f.code)
            if key in seen:
                return None
            seen.add(key)
            return f

        collate_names = _collate_names(ctx)
        for node in nodes_of(ctx.tree, nodes.Call, nodes.Subscript, nodes.FunctionDef):
            if isinstance(node, nodes.Call):
                for f in self._op_call(ctx, an, node, funcs, methods):
                    f = emit(f)
                    if f:
                        yield f
                for f in self._batch_call(ctx, an, node):
                    f = emit(f)
                    if f:
                        yield f
            elif isinstance(node, nodes.Subscript):
                f = emit(self._mask_index(ctx, an, node))
                if f:
                    yield f
            elif isinstance(node, nodes.FunctionDef) and _is_collate(node, collate_names):
                for f in self._collate(ctx, an, node):
                    f = emit(f)
                    if f:
                        yield f
        for scope in [ctx.tree] + list(nodes_of(ctx.tree, nodes.FunctionDef, nodes.Lambda)):
            for f in self._value_shapes(ctx, an, scope):
                f = emit(f)
                if f:
                    yield f

    # ------------------------------------------------------------------ NPU601
    def _op_call(self, ctx, an: _Analysis, call: nodes.Call, funcs, methods) -> Iterator[Finding]:
        r = ctx.resolver
        func = call.func
        q = r.qualname(func)
        op = None
        conf = "high"
        api = None
        if q is not None:
            op = funcs.get(q)
            api = q
            if op is None and q.startswith("torch.Tensor."):
                op = methods.get(q.rsplit(".", 1)[1])
        elif isinstance(func, nodes.Attribute) and func.attrname in methods:
            op = methods[func.attrname]
            recv = an.tensorish(func.expr)
            api = f"torch.Tensor.{func.attrname}"
            if recv is None:
                torch_kw = any(_kw(call, k) is not None for k in op.get("torch_keywords") or ())
                # a numpy/pandas-shared name (nonzero, unique) on an unknown receiver counts when a torch-only
                # keyword is passed, or when the module uses torch and neither numpy nor pandas
                if not op.get("torch_only") and not torch_kw and (an.numpy or an.pandas):
                    return
                if an.pandas and not torch_kw:
                    return
                conf = "medium"
            else:
                conf = recv
        if op is None:
            return
        is_method = q is None or q.startswith("torch.Tensor.")
        if op.get("one_argument_only") and (len(call.args) != 1 or call.keywords):
            return
        if op.get("unless_keyword") and _kw(call, op["unless_keyword"]):
            return
        if op.get("tensor_repeats_only"):
            if _kw(call, "output_size"):
                return
            rep = _kw(call, "repeats")
            if rep is None:
                idx = 0 if is_method else 1
                rep = call.args[idx] if len(call.args) > idx else None
            if rep is None or an.tensorish(rep) is None:
                return
        key = op["key"]
        extra = ""
        if key == "nonzero" and isinstance(_kw(call, "as_tuple"), nodes.Const) and _kw(call, "as_tuple").value:
            extra = " (as_tuple=True returns index tensors of data-dependent length)"
        msg = (f"`{api}`: {op['why']}{extra}. {self._texts.get('graph_mode', '').strip()}{self._graph_note}")
        yield ctx.finding(R_OP, call, api, msg, replacement=op["fix"], severity=self._sync_severity,
                          confidence=conf, evidence="knowledge")

    # ------------------------------------------------------------------ NPU602
    def _mask_index(self, ctx, an: _Analysis, node: nodes.Subscript) -> Optional[Finding]:
        sl = node.slice
        elts = sl.elts if type(sl) is nodes.Tuple else [sl]
        if all(isinstance(e, (nodes.Slice, nodes.Const)) for e in elts):
            return None   # no index can be a mask (`x[0]`, `x[:, 1:]`, `d["key"]`): the receiver is not asked about
        recv = an.tensorish(node.value)
        if recv is None and _listy(ctx, node.value):
            return None
        best = None
        for e in elts:
            if isinstance(e, (nodes.Slice, nodes.Const)):
                continue
            m = an.mask(e)
            if m is None and recv == "high" and isinstance(e, nodes.Compare) and \
                    all(op in _COMPARE_OPS for op, _ in e.ops):
                m = "high"  # a tensor indexed by a comparison
            if m is None and recv == "high" and isinstance(e, nodes.Name) and _is_param(e) and \
                    any(k in e.name.lower() for k in ("mask", "valid")):
                m = "medium"
            if m is None and isinstance(e, nodes.Name) and _mask_named(e) and not an.pandas and \
                    not _numpy_scope(ctx, node) and not _listy(ctx, node.value):
                # `x[mask]` where `mask` comes from a parameter or a helper (lengths_to_mask(...)): by name
                m = "medium"
            if m is not None:
                best = _max_conf(best, m)
                mask_node = e
        if best is None:
            return None
        if best == "medium" and recv is None and not isinstance(mask_node, nodes.Call):
            # a comparison of unknown values indexing an unknown object: could be numpy
            if an.mask(mask_node) != "medium" and not _mask_named(mask_node):
                return None
        conf = "high" if best == "high" or recv == "high" else "medium"
        store = _is_store(node)
        what = "write" if store else "read"
        fix = self._texts.get("mask_index_fix_write" if store else "mask_index_fix_read", "")
        msg = (f"Boolean-mask {what} `{_short(node)}` with mask `{_short(mask_node)}`: "
               f"{self._texts.get('mask_index', '').strip()}{self._graph_note}")
        return ctx.finding(R_MASK, node, "torch.Tensor.__setitem__" if store else "torch.Tensor.__getitem__", msg,
                           replacement=fix, severity=self._sync_severity, confidence=conf)

    # ------------------------------------------------------------------ NPU603
    def _value_shapes(self, ctx, an: _Analysis, scope) -> Iterator[Finding]:
        # the steps below look at bindings and at calls / subscripts only (each list keeps the scope's order)
        bindings = []
        sinks = []
        for n in scope_nodes(ctx.tree, scope, lambdas=True):
            t = type(n)
            if t in _BINDING_TYPES:
                bindings.append(n)
            elif t in _SINK_TYPES:
                sinks.append(n)
        tainted: Dict[str, Tuple[int, str, str]] = {}  # name -> (line, source text, confidence)

        def source(expr) -> Optional[Tuple[int, str, str]]:
            """Origin of a host value read from a tensor inside *expr* (value positions only)."""
            if expr is None:
                return None
            if isinstance(expr, nodes.Name):
                return tainted.get(expr.name)
            if isinstance(expr, nodes.Call):
                func = expr.func
                if isinstance(func, nodes.Attribute):
                    if func.attrname in ("item", "tolist") and not expr.args:
                        recv = an.tensorish(func.expr)
                        if an.pandas and recv is None:
                            return None
                        return (expr.lineno, _short(expr), recv or "medium")
                    if func.attrname in _REDUCE_METHODS and not expr.args and not expr.keywords:
                        recv = an.tensorish(func.expr)
                        if recv:
                            return (expr.lineno, _short(expr), recv)
                    if func.attrname in ("size", "dim", "numel", "__len__"):
                        return None
                    return None
                q = ctx.resolver.qualname(func)
                name = q if q is not None else None
                if name and name.startswith("builtins."):
                    name = name[len("builtins."):]
                elif isinstance(func, nodes.Name) and func.name in _SHAPE_PASSTHROUGH_CALLS \
                        and _is_builtin(ctx.resolver, func, func.name):   # the only bare names used below
                    name = func.name
                if name in ("int", "float", "round") and expr.args:
                    a = expr.args[0]
                    inner = source(a)
                    if inner:
                        return inner
                    t = an.tensorish(a)
                    if t and not isinstance(a, nodes.Compare):
                        return (expr.lineno, _short(expr), t)
                    return None
                if name in _SHAPE_PASSTHROUGH_CALLS:
                    for a in expr.args:
                        s = source(a)
                        if s:
                            return s
                    return None
                if name in ("torch.max", "torch.sum", "torch.min", "torch.amax", "torch.count_nonzero") and \
                        len(expr.args) == 1 and not expr.keywords:
                    return (expr.lineno, _short(expr), "high")
                return None
            if isinstance(expr, nodes.BinOp):
                return source(expr.left) or source(expr.right)
            if isinstance(expr, nodes.UnaryOp):
                return source(expr.operand)
            if isinstance(expr, nodes.IfExp):
                return source(expr.body) or source(expr.orelse)
            if type(expr) in (nodes.Tuple, nodes.List):
                for e in expr.elts:
                    s = source(e)
                    if s:
                        return s
                return None
            if isinstance(expr, nodes.Subscript):
                if isinstance(expr.slice, nodes.Slice):
                    return None
                return source(expr.value)
            if isinstance(expr, nodes.Starred):
                return source(expr.value)
            return None

        # fixpoint over simple assignments and for-loops (flow-insensitive within the function)
        for _ in range(4):
            changed = False
            for n in bindings:
                if isinstance(n, nodes.Assign):
                    s = source(n.value)
                    if s:
                        for t in n.targets:
                            for nm in _target_names(t):
                                if nm not in tainted:
                                    tainted[nm] = s
                                    changed = True
                elif isinstance(n, nodes.AugAssign) and isinstance(n.target, nodes.AssignName):
                    s = source(n.value)
                    if s and n.target.name not in tainted:
                        tainted[n.target.name] = s
                        changed = True
                elif isinstance(n, (nodes.For, nodes.Comprehension)):
                    it = n.iter
                    skip_first = False
                    if isinstance(it, nodes.Call) and isinstance(it.func, nodes.Name) and it.func.name in ("enumerate", "zip"):
                        skip_first = it.func.name == "enumerate"
                        s = None
                        for a in it.args:
                            s = s or source(a)
                    else:
                        s = source(it)
                    if s and _iterates_values(it):
                        names = _target_names(n.target)
                        if skip_first and type(n.target) is nodes.Tuple:
                            names = [nm for e in n.target.elts[1:] for nm in _target_names(e)]
                        for nm in names:
                            if nm not in tainted:
                                tainted[nm] = s
                                changed = True
            if not changed:
                break
        # reassignments from non-derived values make a name ambiguous: drop it
        for n in bindings:
            if isinstance(n, nodes.Assign):
                for t in n.targets:
                    if isinstance(t, nodes.AssignName) and t.name in tainted and source(n.value) is None \
                            and not isinstance(n.value, nodes.Const):
                        tainted.pop(t.name, None)

        def derived(arg):
            stack = [arg]
            while stack:
                sub = stack.pop()
                if isinstance(sub, nodes.Call):
                    f = sub.func
                    if isinstance(f, nodes.Name) and f.name == "len":
                        continue
                    if isinstance(f, nodes.Attribute) and f.attrname in ("size", "dim", "numel"):
                        continue
                if isinstance(sub, nodes.Attribute) and sub.attrname in ("shape", "ndim"):
                    continue
                if isinstance(sub, (nodes.Lambda, nodes.FunctionDef)):
                    continue
                s = source(sub)
                if s:
                    return s
                stack.extend(sub.get_children())
            return None

        for n in sinks:
            if isinstance(n, nodes.Call):
                f = self._value_call_sink(ctx, an, n, derived)
                if f:
                    yield f
            elif isinstance(n, nodes.Subscript):
                f = self._value_slice_sink(ctx, an, n, derived)
                if f:
                    yield f

    def _value_msg(self, what: str, origin: Tuple[int, str, str]) -> str:
        line, text, _c = origin
        return (f"{what} comes from tensor values (`{text}`, line {line}). "
                f"{self._texts.get('value_shape', '').strip()}{self._graph_note}")

    def _value_call_sink(self, ctx, an, call: nodes.Call, derived) -> Optional[Finding]:
        r = ctx.resolver
        q = r.qualname(call.func)
        spec = None
        api = None
        recv_conf = "high"
        if q is not None:
            if q in _FACTORY_SINKS:
                pos, kws = _FACTORY_SINKS[q]
                spec = (pos, kws)
                api = q
        elif isinstance(call.func, nodes.Attribute) and call.func.attrname in _METHOD_SINKS:
            pos, kws, torch_only = _METHOD_SINKS[call.func.attrname]
            recv = an.tensorish(call.func.expr)
            if recv is None and (an.pandas or _listy(ctx, call.func.expr)):
                return None
            recv_conf = recv or "medium"
            spec = (pos, kws)
            api = f"torch.Tensor.{call.func.attrname}"
        if spec is None:
            return None
        pos, kws = spec
        args = list(call.args) if pos is None else [call.args[i] for i in pos if i < len(call.args)]
        args += [kw.value for kw in call.keywords or () if kw.arg in kws]
        for a in args:
            origin = derived(a)
            if origin:
                conf = "high" if origin[2] == "high" and recv_conf == "high" else "medium"
                return ctx.finding(R_VALUE, call, api, self._value_msg(f"A size passed to `{api}` (`{_short(a, 40)}`)", origin),
                                   replacement=self._texts.get("value_shape_fix", "").strip(),
                                   severity=self._sync_severity, confidence=conf, evidence="inferred")
        return None

    def _value_slice_sink(self, ctx, an, node: nodes.Subscript, derived) -> Optional[Finding]:
        sl = node.slice
        elts = sl.elts if type(sl) is nodes.Tuple else [sl]
        slices = [e for e in elts if isinstance(e, nodes.Slice)]
        if not slices:
            return None
        recv = an.tensorish(node.value)
        if recv is None:
            if _listy(ctx, node.value) or an.pandas:
                return None
        for s in slices:
            for b in (s.lower, s.upper, s.step):
                if b is None:
                    continue
                origin = derived(b)
                if origin:
                    if recv is None and origin[2] != "high":
                        return None
                    conf = "high" if recv == "high" and origin[2] == "high" else "medium"
                    return ctx.finding(R_VALUE, node, "torch.Tensor.__getitem__",
                                       self._value_msg(f"The slice bound `{_short(b, 40)}` of `{_short(node, 40)}`", origin),
                                       replacement=self._texts.get("value_shape_fix", "").strip(),
                                       severity=self._sync_severity, confidence=conf, evidence="inferred")
        return None

    # ------------------------------------------------------------------ NPU604 / NPU605
    def _batch_call(self, ctx, an, call: nodes.Call) -> Iterator[Finding]:
        r = ctx.resolver
        q = r.qualname(call.func)
        texts = self._texts
        if q in _PAD_SEQUENCE:
            yield ctx.finding(R_COLLATE, call, q, "`pad_sequence` pads the batch to its longest item, so the tensor "
                              "shape changes from batch to batch. " + texts.get("collate", "").strip(),
                              replacement=texts.get("collate_fix", "").strip(), evidence="knowledge")
            return
        if q in _PACKED:
            yield ctx.finding(R_PACKED, call, q, f"`{q.rsplit('.', 1)[1]}`: " + texts.get("packed", "").strip(),
                              replacement=texts.get("packed_fix", "").strip(), evidence="knowledge")
            return
        if q and q.startswith("transformers") and q.rsplit(".", 1)[-1] in _HF_COLLATORS:
            pad = _kw(call, "padding")
            if _kw(call, "pad_to_multiple_of") is not None:
                return
            if pad is not None and not (isinstance(pad, nodes.Const) and pad.value in (True, "longest")):
                return
            yield ctx.finding(R_COLLATE, call, q, f"`{q.rsplit('.', 1)[-1]}` pads each batch to its longest sequence "
                              "by default. " + texts.get("collate", "").strip(),
                              replacement=texts.get("tokenizer_fix", "").strip(), confidence="high")
            return
        pad = _kw(call, "padding")
        if isinstance(pad, nodes.Const) and pad.value in (True, "longest") and not isinstance(pad.value, int) or \
                (isinstance(pad, nodes.Const) and pad.value is True):
            if _kw(call, "pad_to_multiple_of") is not None:
                return
            fname = (call.func.attrname if isinstance(call.func, nodes.Attribute) else
                     getattr(call.func, "name", "")).lower()
            tokenizerish = any(k in fname for k in ("token", "processor", "encode", "batch_encode", "pad")) or \
                _kw(call, "return_tensors") is not None or _kw(call, "truncation") is not None
            if not tokenizerish:
                return
            if q and (q.startswith("torch.") or q.startswith("torchvision.")):
                return
            yield ctx.finding(R_COLLATE, call, "tokenizer(padding=True)",
                              texts.get("tokenizer", "").strip() + " " + texts.get("collate", "").strip(),
                              replacement=texts.get("tokenizer_fix", "").strip(),
                              confidence="high" if _kw(call, "return_tensors") is not None else "medium")

    def _collate(self, ctx, an, func: nodes.FunctionDef) -> Iterator[Finding]:
        r = ctx.resolver
        texts = self._texts
        for n in walk(func):
            if not isinstance(n, nodes.Call):
                continue
            f = n.func
            hit = None
            if _is_builtin(r, f, "max") and n.args:
                if any(_lengthish(a) for a in n.args):
                    hit = "max(...)"
            elif isinstance(f, nodes.Attribute) and f.attrname in ("max", "amax") and not n.args and \
                    _lengthish(f.expr):
                hit = ".max()"
            elif r.qualname(f) in ("torch.max", "numpy.max", "torch.amax") and n.args and _lengthish(n.args[0]):
                hit = "max(...)"
            if hit:
                yield ctx.finding(R_COLLATE, n, "collate_fn:pad-to-longest",
                                  f"`{_short(n)}` in collate function `{func.name}` sizes the batch by its longest "
                                  "item. " + texts.get("collate", "").strip(),
                                  replacement=texts.get("collate_fix", "").strip(), confidence="high")


# --------------------------------------------------------------------------- helpers


def _op_tables(data) -> Tuple[Dict[str, dict], Dict[str, dict]]:
    funcs: Dict[str, dict] = {}
    methods: Dict[str, dict] = {}
    for key, op in (data.get("ops") or {}).items():
        op = dict(op, key=key)
        for f in op.get("functions") or ():
            funcs[f] = op
        for m in op.get("methods") or ():
            methods[m] = op
    return funcs, methods


def _import_tops(tree) -> Set[str]:
    """Top-level package names imported anywhere in the module (absolute imports only)."""
    out: Set[str] = set()
    for n in nodes_of(tree, nodes.Import, nodes.ImportFrom):
        if isinstance(n, nodes.Import):
            out.update(m.split(".")[0] for m, _ in n.names)
        elif not n.level and n.modname:
            out.add(n.modname.split(".")[0])
    return out


def _uses_graph_mode(ctx, tops: Set[str]) -> bool:
    if "torchair" in tops:
        return True
    for n in nodes_of(ctx.tree, nodes.Attribute, nodes.Name):
        name = n.attrname if isinstance(n, nodes.Attribute) else n.name
        if name == "compile" and ctx.resolver.qualname(n) == "torch.compile":
            return True
    return False


def _kw(call: nodes.Call, name: str):
    for kw in call.keywords or ():
        if kw.arg == name:
            return kw.value
    return None


def _is_store(node: nodes.Subscript) -> bool:
    parent = node.parent
    if isinstance(parent, nodes.Assign) and node in parent.targets:
        return True
    if isinstance(parent, nodes.AugAssign) and parent.target is node:
        return True
    if type(parent) is nodes.Tuple and isinstance(parent.parent, nodes.Assign) and parent in parent.parent.targets:
        return True
    return False


_MASK_NAME_EXCLUDE = ("attention_mask", "attn_mask", "mask_token", "mask_idx", "mask_id", "mask_prob", "mask_ratio",
                      "mask_len", "mask_value", "mask_fill", "num_mask", "n_mask", "mask_type", "mask_size")


def _mask_named(name) -> bool:
    """A name that says it holds a boolean mask (``mask``, ``pad_mask``, ``masked_tokens``, ``valid``) and is not
    bound to a plain value (a constant, a list, a loop counter)."""
    if not isinstance(name, nodes.Name):
        return False
    low = name.name.lower()
    if not ("mask" in low or low in ("valid", "is_valid", "keep_mask")) or low.startswith(_MASK_NAME_EXCLUDE):
        return False
    if any(w in low for w in ("slice", "key", "name", "index", "_idx", "_id", "type", "str", "path", "file")):
        return False  # a slice object, a dict key, an integer index: not a boolean mask
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return False
    if not defs:
        return False
    for d in defs:
        if not isinstance(d, nodes.AssignName):
            return False
        parent = d.parent
        if isinstance(parent, (nodes.For, nodes.Comprehension)):
            return False
        if isinstance(parent, nodes.Assign) and isinstance(parent.value, (nodes.Const, nodes.List, nodes.ListComp,
                                                                          nodes.Dict, nodes.Tuple)):
            return False
        if isinstance(parent, nodes.Assign) and _mentions_numpy(parent.value):
            return False
    return True


def _mentions_numpy(node) -> bool:
    for n in walk(node):
        if isinstance(n, nodes.Attribute) and isinstance(n.expr, nodes.Name) and n.expr.name in ("np", "numpy"):
            return True
        if isinstance(n, nodes.Attribute) and n.attrname in ("numpy", "astype"):
            return True
    return False


def _numpy_scope(ctx, node) -> bool:
    """The enclosing function works with numpy arrays (any np./numpy. use)."""
    scope = node.scope()
    key = f"dynamic-shape:np-scope:{id(scope)}"
    cached = ctx.cache.get(key)
    if cached is None:
        cached = _mentions_numpy(scope) if not isinstance(scope, nodes.Module) else True
        ctx.cache[key] = cached
    return cached


def _is_param(name: nodes.Name) -> bool:
    try:
        defs = own_bindings(name, name.name)
    except Exception:
        return False
    return bool(defs) and all(isinstance(d, nodes.AssignName) and isinstance(d.parent, nodes.Arguments) for d in defs)


def _listy(ctx, node) -> bool:
    """True when *node* is (bound to) a Python list / tuple / dict / str value."""
    if isinstance(node, (nodes.List, nodes.Tuple, nodes.Dict, nodes.ListComp, nodes.DictComp, nodes.SetComp,
                         nodes.Set, nodes.JoinedStr)):
        return True
    if isinstance(node, nodes.Const) and isinstance(node.value, (str, bytes)):
        return True
    if isinstance(node, nodes.Call):
        f = node.func
        if isinstance(f, nodes.Name) and f.name in _LISTY_CALLS:
            return True
        if isinstance(f, nodes.Attribute) and f.attrname in ("tolist", "split", "keys", "values", "items", "strip",
                                                             "readlines", "splitlines"):
            return True
        return False
    if isinstance(node, nodes.Name):
        vals = _Analysis._local_values(node)
        return bool(vals) and any(_listy(ctx, v) for v in vals)
    return False


_BINDING_TYPES = frozenset((nodes.Assign, nodes.AugAssign, nodes.For, nodes.AsyncFor, nodes.Comprehension))
_SINK_TYPES = frozenset((nodes.Call, nodes.Subscript))


def _target_names(t) -> List[str]:
    if isinstance(t, nodes.AssignName):
        return [t.name]
    if type(t) in (nodes.Tuple, nodes.List):
        return [nm for e in t.elts for nm in _target_names(e)]
    if isinstance(t, nodes.Starred):
        return _target_names(t.value)
    return []


def _iterates_values(it) -> bool:
    """The loop iterates over host values (a `.tolist()` or similar), not over range(...)."""
    if isinstance(it, nodes.Call) and isinstance(it.func, nodes.Name) and it.func.name == "range":
        return False
    return True


def _lengthish(node) -> bool:
    """An expression about item lengths: len(x) / x.size(0) / x.shape[0] / a name like `lengths`.

    ``len(batch)`` of a parameter is the batch size, and names like ``pad_to_length`` / ``max_len`` are fixed
    bounds: neither counts."""
    stack = [node]
    while stack:
        n = stack.pop()
        stack.extend(n.get_children())
        if isinstance(n, nodes.Call):
            f = n.func
            if isinstance(f, nodes.Name) and f.name == "len":
                if n.args and isinstance(n.args[0], nodes.Name) and _is_param(n.args[0]):
                    stack = [c for c in stack if c not in (f, n.args[0])]
                    continue
                return True
            if isinstance(f, nodes.Attribute) and f.attrname in ("size", "numel", "__len__"):
                return True
        if isinstance(n, nodes.Attribute) and n.attrname == "shape":
            return True
        if isinstance(n, nodes.Name) and n.name == "len":
            return True
        name = getattr(n, "name", None) if isinstance(n, nodes.Name) else getattr(n, "attrname", None) \
            if isinstance(n, nodes.Attribute) else None
        low = (name or "").lower()
        if low and ("len" in low and not low.startswith(_FIXED_BOUND_PREFIXES) or low in ("sizes", "lens")):
            return True
    return False


_FIXED_BOUND_PREFIXES = ("max_len", "max_seq", "max_length", "pad_to", "min_len", "fixed", "max_source",
                         "max_target", "max_tokens", "max_positions")


def _collate_names(ctx) -> Set[str]:
    """Function / method names passed as ``collate_fn=`` in this module."""
    out: Set[str] = set()
    for n in nodes_of(ctx.tree, nodes.Keyword):
        if n.arg in ("collate_fn", "collator", "data_collator"):
            v = n.value
            if isinstance(v, nodes.Call) and v.args and isinstance(v.func, (nodes.Name, nodes.Attribute)) and \
                    (getattr(v.func, "name", None) == "partial" or getattr(v.func, "attrname", None) == "partial"):
                v = v.args[0]
            if isinstance(v, nodes.Name):
                out.add(v.name)
            elif isinstance(v, nodes.Attribute):
                out.add(v.attrname)
    return out


def _is_collate(func: nodes.FunctionDef, names: Set[str]) -> bool:
    if "collat" in func.name.lower() or func.name in names:
        return True
    if func.name == "__call__" and isinstance(func.parent, nodes.ClassDef) and (
            "collat" in func.parent.name.lower() or func.parent.name in names):
        return True
    return False


def _memoised(cache: Dict[int, Optional[str]], compute, node, depth: int) -> Optional[str]:
    """Per-node memo with a cycle guard (None while computing) and a depth bound."""
    if node is None or depth > 8:
        return None
    key = id(node)
    if key in cache:
        return cache[key]
    cache[key] = None
    res = compute(node, depth)
    cache[key] = res
    return res
