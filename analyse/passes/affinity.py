"""affinity: hand-written code that an Ascend fused / affinity API replaces.

Recognised by *structure* (what a function body computes), not by name:

* RMSNorm: ``x * rsqrt(mean(x**2, -1) + eps) * w`` (also ``sqrt`` / ``** -0.5`` /
  ``norm(x, dim=-1)`` variants; code that subtracts the mean is LayerNorm, not
  RMSNorm) -> ``torch_npu.npu_rms_norm``;
* rotary embedding: ``x * cos + rotate_half(x) * sin`` where ``rotate_half``
  concatenates ``(-x2, x1)`` -> ``torch_npu.npu_rotary_mul``;
* SwiGLU: ``F.silu(a) * b`` -> ``torch_npu.npu_swiglu``;
* attention: ``softmax(q @ k^T ...) @ v`` and ``F.scaled_dot_product_attention``
  -> ``torch_npu.npu_fusion_attention`` (with the parameter mapping);
* DropPath (per-sample random ``keep_prob`` mask) -> ``NpuDropPath``;
  ``torchvision.ops.roi_align`` -> contrib ``ROIAlign``; hand-written NMS loops and
  ``torchvision.ops.nms`` -> contrib multiclass NMS (the facts mark
  ``npu_nms_v4`` planned-deprecated, so it is never recommended); channel
  shuffle (view -> transpose(1, 2) -> view) -> contrib ``ChannelShuffle``;
* ``torch.optim`` optimizers with a ``torch_npu.optim.NpuFused*`` twin;
* the msfmktransplt affinity list (function / class names *with* their exact
  parameter lists, ``torch.matmul(a, b.transpose(-2, -1))``, shifted-window
  ``torch.roll``); targets the facts mark deprecated are replaced by what the
  deprecation says (contrib ``Mish`` -> ``torch.nn.Mish``; ``torch.nn.SiLU`` is
  already the recommended API and is no finding).

Findings sit at the function / class def (a ``forward`` method reports its
class), or at the expression when the pattern is inline in a ``forward`` or at
module level. Facts: ``data/affinity.yaml``.
"""

from __future__ import annotations

import dataclasses

from itertools import compress
from typing import Dict, Iterator, List, Optional, Set, Tuple

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, nodes_of, walk
from analyse.syntax import scope_nodes


def _rule(code, name, summary, why, example, fix):
    return Rule(code=code, name=name, category="affinity", severity="advice", summary=summary, why=why,
                example=example, fix=fix)


R_RMS = _rule("NPU701", "rms-norm", "Hand-written RMSNorm.",
              "torch_npu.npu_rms_norm computes RMSNorm in one fused kernel instead of pow/mean/add/rsqrt/mul kernels.",
              "def forward(self, x):\n    var = x.pow(2).mean(-1, keepdim=True)\n    return self.weight * x * torch.rsqrt(var + self.eps)",
              "def forward(self, x):\n    return torch_npu.npu_rms_norm(x, self.weight, epsilon=self.eps)[0]")
R_ROPE = _rule("NPU702", "rotary-embedding", "Hand-written rotary position embedding (rotate_half).",
               "torch_npu.npu_rotary_mul fuses x*cos + rotate_half(x)*sin (4-D inputs).",
               "q = q * cos + rotate_half(q) * sin",
               "q = torch_npu.npu_rotary_mul(q, cos, sin)")
R_SWIGLU = _rule("NPU703", "swiglu", "Hand-written SwiGLU (silu(a) * b).",
                 "torch_npu.npu_swiglu fuses chunk + silu + mul (Atlas A2 training).",
                 "a, b = x.chunk(2, dim=-1)\ny = F.silu(a) * b",
                 "y = torch_npu.npu_swiglu(x, dim=-1)")
R_ATTN = _rule("NPU704", "manual-attention", "Hand-written attention: softmax(q @ k^T * scale) @ v.",
               "torch_npu.npu_fusion_attention (FlashAttentionScore) avoids materialising the score matrix "
               "(Atlas A2 training, Ascend 950DT).",
               "attn = (q @ k.transpose(-2, -1)) * scale\nout = attn.softmax(dim=-1) @ v",
               "out = torch_npu.npu_fusion_attention(q, k, v, q.shape[1], 'BNSD', scale=scale)[0]")
R_SDPA = _rule("NPU705", "sdpa", "`F.scaled_dot_product_attention` call.",
               "SDPA is adapted on NPU, but the explicit torch_npu.npu_fusion_attention call controls layout, masks and "
               "sparse_mode; the native docs mark SDPA unsupported on Ascend 950DT.",
               "out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p)",
               "out = torch_npu.npu_fusion_attention(q, k, v, q.shape[1], 'BNSD', atten_mask=~m, scale=q.shape[-1] ** -0.5, keep_prob=1 - p)[0]")
R_DROP = _rule("NPU706", "drop-path", "Hand-written DropPath (stochastic depth).",
               "torch_npu.contrib.module.NpuDropPath is the NPU affinity version of DropPath.",
               "keep_prob = 1 - drop_prob\nrandom_tensor = keep_prob + torch.rand(shape)\nrandom_tensor.floor_()\nreturn x.div(keep_prob) * random_tensor",
               "self.drop_path = torch_npu.contrib.module.NpuDropPath(drop_prob)")
R_ROI = _rule("NPU707", "roi-align", "torchvision ROIAlign.",
              "torch_npu.contrib.module.ROIAlign / torch_npu.npu_roi_align run ROIAlign on the NPU.",
              "out = torchvision.ops.roi_align(feat, rois, (7, 7), 1 / 16, 2, True)",
              "out = torch_npu.contrib.module.ROIAlign((7, 7), 1 / 16, 2, aligned=True)(feat, rois)")
R_NMS = _rule("NPU708", "nms", "Hand-written NMS loop or torchvision NMS.",
              "A Python NMS loop launches many tiny kernels and syncs with the host; torch_npu.contrib's multiclass NMS "
              "runs on the NPU (npu_nms_v4 is planned for deprecation and not recommended).",
              "while order.numel() > 0:\n    i = order[0]\n    ...  # IoU against the rest, keep those < thr",
              "torch_npu.contrib.function.npu_multiclass_nms(bboxes, scores, score_thr, nms_thr, max_num)")
R_SHUFFLE = _rule("NPU709", "channel-shuffle", "Channel shuffle written as view -> transpose -> view.",
                  "The transpose makes a non-contiguous copy on NPU; torch_npu.contrib.module.ChannelShuffle avoids it.",
                  "x = x.view(b, g, c // g, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)",
                  "self.shuffle = torch_npu.contrib.module.ChannelShuffle(c, groups=g)")
R_OPTIM = _rule("NPU710", "fused-optimizer", "An optimizer with a torch_npu.optim fused twin.",
                "torch_npu.optim.NpuFused* update all parameters with a few fused kernels (tensor fusion).",
                "opt = torch.optim.AdamW(model.parameters(), lr=1e-4)",
                "opt = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-4)")
R_LIST = _rule("NPU711", "affinity-list", "Code the msfmktransplt affinity list maps to a torch_npu.contrib API.",
               "MindStudio's migration analyser lists these helpers (same name and parameters) and torch calls as having an "
               "NPU affinity replacement.",
               "def channel_shuffle(x, groups):\n    ...",
               "torch_npu.contrib.module.ChannelShuffle")

SOFTMAX = {"torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax", ".softmax", "torch.special.softmax"}
MATMUL = {"torch.matmul", "torch.bmm", ".matmul", ".bmm", "torch.Tensor.matmul", "torch.Tensor.bmm", "torch.einsum"}
SQRT = {"torch.rsqrt", ".rsqrt", ".rsqrt_", "torch.sqrt", ".sqrt", ".sqrt_", "torch.Tensor.rsqrt", "torch.Tensor.sqrt"}
MEAN = {"torch.mean", ".mean", "torch.Tensor.mean"}
NORM = {"torch.norm", ".norm", "torch.linalg.norm", "torch.linalg.vector_norm", "torch.Tensor.norm"}
SILU = {"torch.nn.functional.silu", "torch.silu", "torch.nn.SiLU", "torch.nn.modules.activation.SiLU"}
SDPA = {"torch.nn.functional.scaled_dot_product_attention"}
ROI_ALIGN = {"torchvision.ops.roi_align", "torchvision.ops.RoIAlign", "torchvision.ops.roi_align.roi_align",
             "torchvision.ops.roi_align.RoIAlign"}
TV_NMS = {"torchvision.ops.nms", "torchvision.ops.batched_nms", "torchvision.ops.boxes.nms",
          "torchvision.ops.boxes.batched_nms"}
RANDOM = {"torch.rand", "torch.rand_like", ".bernoulli_", "torch.bernoulli", ".bernoulli", ".uniform_"}
# a finding of the key's api already covers an inner finding of the value's api
SUBSUMES = {"attention": "torch.matmul"}
CAT = {"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"}


def _int(node) -> Optional[int]:
    if isinstance(node, nodes.Const) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, nodes.UnaryOp) and node.op == "-":
        v = _int(node.operand)
        return -v if v is not None else None
    return None


def _num(node) -> Optional[float]:
    if isinstance(node, nodes.Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, nodes.UnaryOp) and node.op == "-":
        v = _num(node.operand)
        return -v if v is not None else None
    return None


def _def_line(node) -> int:
    """The ``def`` / ``class`` line (astroid puts a decorated function's lineno on its first decorator)."""
    pos = getattr(node, "position", None)
    return pos.lineno if pos is not None else node.lineno


def _kw(call: nodes.Call, name: str):
    for kw in call.keywords or ():
        if kw.arg == name:
            return kw.value
    return None


class Scope:
    """Local data flow of one function (or module): follow ``name = expr``."""

    def __init__(self, ctx: ModuleContext, fn):
        self.ctx = ctx
        self.fn = fn
        self.assigned: Dict[str, List] = {}
        self._own = scope_nodes(ctx.tree, fn, lambdas=False)
        self._of: Dict[tuple, List] = {}
        self._types: Optional[List[type]] = None   # type of each node of own(), made at the first of()
        self._type_set: Set[type] = set()
        for n in self.of(nodes.Assign, nodes.AnnAssign, nodes.AugAssign, nodes.NamedExpr):
            if isinstance(n, nodes.Assign):
                for t in n.targets:
                    for name in self._target_names(t):
                        self.assigned.setdefault(name, []).append(n.value)
            elif isinstance(n, (nodes.AnnAssign, nodes.AugAssign)) and isinstance(n.target, nodes.AssignName) and n.value is not None:
                self.assigned.setdefault(n.target.name, []).append(n.value)
            elif isinstance(n, nodes.NamedExpr):
                self.assigned.setdefault(n.target.name, []).append(n.value)
        self._calls: Dict[object, str] = {}   # call node -> callee (nodes hash by identity)

    def own(self) -> List:
        return self._own

    def of(self, *classes) -> List:
        """The nodes of :meth:`own` that are instances of *classes*, in the same order (memoised):
        the structure tests below look at calls, operators or returns, not at every node."""
        hit = self._of.get(classes)
        if hit is None:
            types = self._types
            if types is None:
                types = self._types = list(map(type, self._own))
                self._type_set = set(types)
            wanted = {t for t in self._type_set if issubclass(t, classes)}
            hit = self._of[classes] = list(compress(self._own, map(wanted.__contains__, types))) if wanted else []
        return hit

    @staticmethod
    def _target_names(t) -> List[str]:
        if isinstance(t, nodes.AssignName):
            return [t.name]
        if type(t) in (nodes.Tuple, nodes.List):
            out = []
            for e in t.elts:
                out.extend(Scope._target_names(e))
            return out
        if isinstance(t, nodes.Starred):
            return Scope._target_names(t.value)
        return []

    def expand(self, expr, depth: int = 4, stop=None) -> List:
        """Every node of *expr*, following local names to the latest assignment before the use
        (not into nodes for which *stop* is true)."""
        out: List = []
        seen: Set[int] = set()
        stack = [(expr, 0)]
        while stack:
            n, d = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            out.append(n)
            if n is not expr and stop is not None and stop(n):
                continue
            if isinstance(n, nodes.Name) and d < depth:
                v = self.reaching(n)
                if v is not None:
                    stack.append((v, d + 1))
            if isinstance(n, (nodes.Lambda, nodes.FunctionDef)):
                continue
            for c in n.get_children():
                stack.append((c, d))
        return out

    def reaching(self, name: nodes.Name):
        """The value of the latest assignment to *name* above its use (None when there is none)."""
        best = None
        for v in self.assigned.get(name.name, ()):
            stmt_line = v.parent.lineno if v.parent is not None else v.lineno
            if stmt_line < name.lineno or (stmt_line == name.lineno and v.parent is not None and
                                           name not in list(v.parent.nodes_of_class(nodes.Name))):
                if best is None or stmt_line >= (best.parent.lineno if best.parent is not None else best.lineno):
                    best = v
        return best

    def callee(self, call: nodes.Call) -> str:
        key = call
        if key in self._calls:
            return self._calls[key]
        r = self.ctx.resolver
        q = r.qualname(call.func)
        if q is None:
            t = r.type_of(call.func) if isinstance(call.func, nodes.Attribute) else None
            if t in SILU or t == "torch.nn.Softmax":
                q = t if t != "torch.nn.Softmax" else "torch.softmax"
            elif isinstance(call.func, nodes.Attribute):
                q = "." + call.func.attrname
            elif isinstance(call.func, nodes.Name):
                q = call.func.name
            else:
                q = ""
        elif q.startswith("torch.Tensor."):
            q = "." + q[len("torch.Tensor."):]
        self._calls[key] = q
        return q

    def is_call(self, n, names) -> bool:
        return isinstance(n, nodes.Call) and self.callee(n) in names


# ---------------------------------------------------------------- structure tests

def _receiver_or_arg(s: "Scope", call: nodes.Call):
    """x.mean(...) -> x ; torch.mean(x) -> x."""
    if s.callee(call).startswith(".") and isinstance(call.func, nodes.Attribute):
        return call.func.expr
    return call.args[0] if call.args else None


def _dim_arg(s: Scope, call: nodes.Call) -> Optional[int]:
    dim = _kw(call, "dim")
    if dim is None:
        dim = _kw(call, "axis")
    if dim is None:
        method = s.callee(call).startswith(".")
        pos = [a for a in call.args]
        if not method:
            pos = pos[1:]
        if call.func and s.callee(call) in NORM and pos:
            pos = pos[1:]  # x.norm(2, -1) / torch.norm(x, 2, -1)
        if pos:
            dim = pos[0]
    if type(dim) in (nodes.Tuple, nodes.List) and len(dim.elts) == 1:
        dim = dim.elts[0]
    return _int(dim) if dim is not None else None


def _is_square(s: Scope, n) -> bool:
    if isinstance(n, nodes.BinOp):
        if n.op == "**" and _num(n.right) == 2:
            return True
        if n.op == "*" and n.left.as_string() == n.right.as_string():
            return True
    if isinstance(n, nodes.Call):
        c = s.callee(n)
        if c in (".pow", ".pow_") and n.args and _num(n.args[0]) == 2:
            return True
        if c == "torch.pow" and len(n.args) > 1 and _num(n.args[1]) == 2:
            return True
        if c in ("torch.square", ".square"):
            return True
    return False


def _is_rsqrt(s: Scope, n) -> Optional[object]:
    """The argument of an (r)sqrt-like node, else None."""
    if isinstance(n, nodes.Call) and s.callee(n) in SQRT:
        return _receiver_or_arg(s, n)
    if isinstance(n, nodes.BinOp) and n.op == "**" and _num(n.right) in (0.5, -0.5):
        return n.left
    return None


def _subtracts_mean(s: Scope) -> bool:
    for n in s.of(nodes.BinOp, nodes.Call):
        if isinstance(n, nodes.BinOp) and n.op == "-":
            if any(s.is_call(m, MEAN) for m in s.expand(n.right, 2)):
                return True
        if isinstance(n, nodes.Call) and s.callee(n) in (".var", "torch.var", "torch.var_mean", "torch.nn.functional.layer_norm",
                                                         ".sub_", ".sub"):
            if s.callee(n) in (".sub_", ".sub"):
                if n.args and any(s.is_call(m, MEAN) for m in s.expand(n.args[0], 2)):
                    return True
                continue
            return True
    return False


def _used_as_scale(s: Scope, target) -> bool:
    for n in s.of(nodes.BinOp, nodes.Call):
        if isinstance(n, nodes.BinOp) and n.op in ("*", "/"):
            if any(m is target for m in s.expand(n, 3)):
                return True
        if isinstance(n, nodes.Call) and s.callee(n) in (".mul", ".mul_", "torch.mul", ".div", ".div_", "torch.div"):
            if any(m is target for m in s.expand(n, 3)):
                return True
    return False


def is_rms_norm(s: Scope) -> Optional[nodes.NodeNG]:
    """The node computing 1/rms, when the scope computes RMSNorm."""
    cands = s.of(nodes.Call, nodes.BinOp)
    if not any(_is_rsqrt(s, n) is not None or (isinstance(n, nodes.BinOp) and n.op == "/") for n in cands):
        return None   # nothing below can match: skip the costlier mean test
    if _subtracts_mean(s):
        return None
    for n in cands:
        arg = _is_rsqrt(s, n)
        if arg is not None:
            inner = s.expand(arg, 3)
            has_add = any((isinstance(m, nodes.BinOp) and m.op == "+") or
                          (isinstance(m, nodes.Call) and s.callee(m) in (".add", ".add_", "torch.add", ".clamp", "torch.clamp", ".clamp_min"))
                          for m in inner)
            means = [m for m in inner if s.is_call(m, MEAN) and _dim_arg(s, m) == -1]
            if has_add and any(any(_is_square(s, q) for q in s.expand(_receiver_or_arg(s, m), 3)) for m in means if _receiver_or_arg(s, m) is not None):
                if _used_as_scale(s, n):
                    return n
        # norm variant: x / (norm(x, dim=-1) * d ** -0.5 + eps)
        if isinstance(n, nodes.BinOp) and n.op == "/":
            inner = s.expand(n.right, 3)
            if any(s.is_call(m, NORM) and _dim_arg(s, m) == -1 for m in inner) and \
                    any(isinstance(m, nodes.BinOp) and m.op == "+" for m in inner) and \
                    any(_is_rsqrt(s, m) is not None for m in inner):
                return n
    return None


def is_rotate_half(s: Scope) -> bool:
    fn = s.fn
    if not isinstance(fn, nodes.FunctionDef):
        return False
    # every node the returns expand to is one of the scope's own: without a cat of (-a, b) there is none
    if not any(_neg_cat_shape(m) for m in s.of(nodes.Call)):
        return False
    for n in s.of(nodes.Return):
        if n.value is not None:
            for m in s.expand(n.value, 3):
                if _is_neg_cat(s, m):
                    return True
    return False


def _neg_cat_shape(m) -> bool:
    """``f((-a, b), ...)``: the syntax of :func:`_is_neg_cat` without resolving the callee."""
    if isinstance(m, nodes.Call) and m.args and type(m.args[0]) in (nodes.Tuple, nodes.List):
        elts = m.args[0].elts
        return len(elts) == 2 and isinstance(elts[0], nodes.UnaryOp) and elts[0].op == "-" and not isinstance(elts[1], nodes.UnaryOp)
    return False


def _is_neg_cat(s: Scope, m) -> bool:
    return _neg_cat_shape(m) and s.callee(m) in CAT


class AffinityPass(Pass):
    name = "affinity"
    rules = (R_RMS, R_ROPE, R_SWIGLU, R_ATTN, R_SDPA, R_DROP, R_ROI, R_NMS, R_SHUFFLE, R_OPTIM, R_LIST)

    VALID = (
        # a loss that sorts IoUs inside its loop over layers is not NMS: the loop does not walk a sorted order (#31)
        "import torch\n"
        "def loss(preds, targets, sort_iou):\n"
        "    total = 0.0\n"
        "    for i, p in enumerate(preds):\n"
        "        iou = (p - targets[i]).abs().clamp(0) / (p.abs() + 1)\n"
        "        if sort_iou:\n"
        "            j = iou.argsort()\n"
        "            iou = iou[j]\n"
        "        if iou.max() > 0.5:\n"
        "            total = total + iou.mean()\n"
        "    return total\n",
        # a function named rms_norm that computes a plain mean is not RMSNorm
        "import torch\ndef rms_norm(x, eps=1e-6):\n    return x / (x.mean(-1, keepdim=True) + eps)\n",
        # LayerNorm subtracts the mean
        "import torch\ndef ln(x, w, eps=1e-5):\n    mu = x.mean(-1, keepdim=True)\n    var = (x - mu).pow(2).mean(-1, keepdim=True)\n"
        "    return (x - mu) * torch.rsqrt(var + eps) * w\n",
        "import torch.nn.functional as F\ndef act(x):\n    return F.silu(x) * 2.0\n",
        "import torch\nopt = torch.optim.LBFGS(params)\nx = torch.nn.SiLU()\n",
        "import torch\ny = torch.matmul(a, b)\n",
    )
    INVALID = (
        "import torch\n"
        "def norm(x, weight, eps=1e-6):  # expect: NPU701\n"
        "    variance = x.pow(2).mean(-1, keepdim=True)\n"
        "    return weight * (x * torch.rsqrt(variance + eps))\n",
        "import torch\n"
        "def rotate_half(x):\n"
        "    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]\n"
        "    return torch.cat((-x2, x1), dim=-1)\n"
        "def apply_rope(q, cos, sin):  # expect: NPU702\n"
        "    return q * cos + rotate_half(q) * sin\n",
        "import torch.nn.functional as F\n"
        "def ffn(x):  # expect: NPU703\n"
        "    a, b = x.chunk(2, dim=-1)\n"
        "    return F.silu(a) * b\n",
        "import torch\n"
        "def attention(q, k, v, scale):  # expect: NPU704\n"
        "    attn = (q @ k.transpose(-2, -1)) * scale\n"
        "    return attn.softmax(dim=-1) @ v\n",
        "import torch.nn.functional as F\nout = F.scaled_dot_product_attention(q, k, v)  # expect: NPU705\n",
        "import torch\n"
        "def drop_path(x, drop_prob=0.0):  # expect: NPU706\n"
        "    keep_prob = 1 - drop_prob\n"
        "    shape = (x.shape[0],) + (1,) * (x.ndim - 1)\n"
        "    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)\n"
        "    random_tensor.floor_()\n"
        "    return x.div(keep_prob) * random_tensor\n",
        "import torchvision\nout = torchvision.ops.roi_align(feat, rois, (7, 7), 0.0625)  # expect: NPU707\n",
        "from torchvision.ops import nms\nkeep = nms(boxes, scores, 0.5)  # expect: NPU708\n",
        "import torch\n"
        "def nms(x1, x2, areas, scores, thr):  # expect: NPU708\n"
        "    order = scores.argsort(descending=True)\n"
        "    keep = []\n"
        "    while order.numel() > 0:\n"
        "        i = order[0]\n"
        "        keep.append(i)\n"
        "        inter = (torch.min(x2[i], x2[order[1:]]) - torch.max(x1[i], x1[order[1:]])).clamp(0)\n"
        "        iou = inter / (areas[i] + areas[order[1:]] - inter)\n"
        "        order = order[1:][iou <= thr]\n"
        "    return keep\n",
        "def shuffle(x, groups):  # expect: NPU709\n"
        "    b, c, h, w = x.size()\n"
        "    x = x.view(b, groups, c // groups, h, w)\n"
        "    x = x.transpose(1, 2).contiguous()\n"
        "    return x.view(b, -1, h, w)\n",
        "import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)  # expect: NPU710\n",
        "import torch\ny = torch.matmul(a, b.transpose(-2, -1))  # expect: NPU711\n",
    )

    def __init__(self) -> None:
        self._facts: Optional[dict] = None

    def facts(self, ctx) -> dict:
        return ctx.kb.data_file("affinity.yaml")

    # ------------------------------------------------------------------ driver
    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        facts = self.facts(ctx)
        found: List[Tuple[Finding, int, int]] = []  # finding, span start, span end
        scopes = [ctx.tree] + list(nodes_of(ctx.tree, nodes.FunctionDef))
        rotate_fns: Set[str] = set()
        scope_objs = {id(fn): Scope(ctx, fn) for fn in scopes}
        for fn in scopes:
            s = scope_objs[id(fn)]
            if isinstance(fn, nodes.FunctionDef) and is_rotate_half(s):
                rotate_fns.add(fn.name)
        for fn in scopes:
            s = scope_objs[id(fn)]
            for f, span in self._scope(ctx, s, facts, rotate_fns):
                found.append((f, span[0], span[1]))
            if isinstance(fn, nodes.FunctionDef):
                f = self._listed_function(ctx, fn, facts)
                if f:
                    found.append((f, fn.lineno, fn.end_lineno or fn.lineno))
        for cls in nodes_of(ctx.tree, nodes.ClassDef):
            f = self._listed_class(ctx, cls, facts)
            if f:
                found.append((f, cls.lineno, cls.end_lineno or cls.lineno))
        # keep the outermost finding per api: an inline pattern inside a reported def is the same finding
        found.sort(key=lambda t: (t[1], -t[2]))
        kept: List[Tuple[Finding, int, int]] = []
        for f, a, b in found:
            if any(SUBSUMES.get(k.api, k.api) in (f.api,) or k.api == f.api
                   for k, ka, kb_ in kept if ka <= a and b <= kb_ and (ka, kb_) != (a, b)):
                continue
            if any(k.api == f.api and k.line == f.line for k, _a, _b in kept):
                continue
            kept.append((f, a, b))
        for f, _a, _b in kept:
            yield f

    # where a finding of a pattern found in scope *s* (at node *node*) is reported
    def _anchor(self, s: Scope, node):
        fn = s.fn
        if isinstance(fn, nodes.FunctionDef):
            if fn.name in ("forward", "__call__") and isinstance(fn.parent, nodes.ClassDef):
                if self._small(fn):
                    return fn.parent, fn.parent.name
                return node, None
            return fn, fn.name
        return node, None

    @staticmethod
    def _small(fn) -> bool:
        return (fn.end_lineno or fn.lineno) - fn.lineno <= 12

    def _emit(self, ctx, s: Scope, node, rule, api: str, what: str, facts, confidence="high", extra=""):
        anchor, name = self._anchor(s, node)
        pat = facts["patterns"].get(api, {})
        where = f"`{name}` " if name else "This code "
        msg = f"{where}{what}; {pat.get('api', '')} does it in one fused NPU call."
        if pat.get("limits"):
            msg += f" Limits: {pat['limits']}."
        if pat.get("products"):
            msg += f" Products: {', '.join(pat['products'])}."
        if extra:
            msg += " " + extra
        is_def = isinstance(anchor, (nodes.FunctionDef, nodes.ClassDef))
        f = ctx.finding(rule, anchor, api, msg, replacement=pat.get("call"), confidence=confidence, evidence="inferred",
                        line=_def_line(anchor) if is_def else None)
        span = (anchor.lineno, getattr(anchor, "end_lineno", None) or anchor.lineno)
        return f, span

    def _scope(self, ctx, s: Scope, facts, rotate_fns) -> Iterator:
        r = ctx.resolver
        fn = s.fn
        is_fn = isinstance(fn, nodes.FunctionDef)
        if is_fn:
            n = is_rms_norm(s)
            if n is not None:
                yield self._emit(ctx, s, n, R_RMS, "rms-norm", "computes RMSNorm by hand (x * rsqrt(mean(x^2) + eps) * w)", facts)
            d = self._drop_path(s)
            if d:
                yield self._emit(ctx, s, fn, R_DROP, "drop-path", "drops whole samples with a random keep_prob mask (DropPath)",
                                 facts)
            if self._nms_loop(s):
                yield self._emit(ctx, s, fn, R_NMS, "nms", "runs non-maximum suppression in a Python loop", facts,
                                 confidence="medium")
            if self._channel_shuffle(s):
                yield self._emit(ctx, s, fn, R_SHUFFLE, "channel-shuffle", "shuffles channels with view -> transpose -> view",
                                 facts)
        for n in s.of(nodes.BinOp, nodes.Call):
            if isinstance(n, nodes.BinOp):
                if n.op == "+" and self._rope(s, n, rotate_fns):
                    yield self._emit(ctx, s, n, R_ROPE, "rotary-embedding",
                                     "applies rotary position embedding (x * cos + rotate_half(x) * sin)", facts)
                elif n.op == "*" and self._swiglu(s, n):
                    extra = ""
                    if not any(s.is_call(m, {".chunk", "torch.chunk", ".split", "torch.split", ".unbind"}) for m in s.expand(n, 3)):
                        extra = "Gate and up projections are separate here: fuse them into one Linear of twice the width first."
                    yield self._emit(ctx, s, n, R_SWIGLU, "swiglu", "computes SwiGLU (silu(a) * b)", facts, extra=extra)
                elif n.op == "@" and self._attention(s, n.left):
                    yield self._emit_attention(ctx, s, n, n.left, facts)
            elif isinstance(n, nodes.Call):
                c = s.callee(n)
                if c in (".matmul", ".bmm", "torch.matmul", "torch.bmm"):
                    left = n.func.expr if c.startswith(".") else (n.args[0] if n.args else None)
                    if left is not None and self._attention(s, left):
                        yield self._emit_attention(ctx, s, n, left, facts)
                        continue
                if c == "torch.einsum" and len(n.args) >= 3 and self._attention(s, n.args[1]):
                    yield self._emit_attention(ctx, s, n, n.args[1], facts)
                    continue
                yield from self._call(ctx, s, n, c, facts)

    # ------------------------------------------------------------------ calls
    def _call(self, ctx, s: Scope, call: nodes.Call, c: str, facts) -> Iterator:
        pats = facts["patterns"]
        if c in SDPA:
            extra = ""
            if _kw(call, "is_causal") is not None:
                extra = "is_causal=True maps to a triu(2048x2048) bool atten_mask with sparse_mode=2."
            f = ctx.finding(R_SDPA, call, "sdpa",
                            "F.scaled_dot_product_attention reaches FlashAttentionScore on Atlas A2 training, but the native "
                            "API docs mark it unsupported on Ascend 950DT; torch_npu.npu_fusion_attention is the explicit call "
                            "(layout BNSD, head_num=q.shape[1], keep_prob = 1 - dropout_p, scale defaults to 1.0 on NPU, "
                            "bool masks inverted: True = masked). Products: "
                            + ", ".join(pats["sdpa"]["products"]) + ". " + extra,
                            replacement=pats["sdpa"]["call"], confidence="medium", evidence="knowledge")
            yield f, (call.lineno, call.end_lineno or call.lineno)
        elif c in ROI_ALIGN:
            f = ctx.finding(R_ROI, call, "roi-align",
                            f"`{c}` has an NPU affinity replacement: {pats['roi-align']['api']} (same output_size, "
                            "spatial_scale, sampling_ratio, aligned) or torch_npu.npu_roi_align. Products: "
                            + ", ".join(pats["roi-align"]["products"]) + ".",
                            replacement=pats["roi-align"]["call"], evidence="knowledge")
            yield f, (call.lineno, call.end_lineno or call.lineno)
        elif c in TV_NMS:
            # the called API (not the pattern id) so that NPU601 on the same call folds into this finding
            f = ctx.finding(R_NMS, call, c,
                            f"`{c}` needs the Ascend Torchvision Adapter to run on the NPU; torch_npu.contrib has multiclass "
                            f"NMS. {pats['nms']['limits']}.",
                            replacement=pats["nms"]["call"], confidence="medium", evidence="knowledge")
            yield f, (call.lineno, call.end_lineno or call.lineno)
        else:
            opt = facts["optimizers"].get(c) or facts["third_party_optimizers"].get(c)
            if opt:
                notes = "; ".join(facts["optimizer_notes"][:1])
                if c.endswith("AdamW"):
                    notes += "; " + facts["optimizer_notes"][2]
                f = ctx.finding(R_OPTIM, call, c,
                                f"`{c}` has a fused NPU twin, {opt} (tensor-fused update). Note: {notes}. Products: "
                                + ", ".join(facts["optimizer_products"]) + ".",
                                replacement=opt + self._args_text(call), evidence="knowledge")
                yield f, (call.lineno, call.end_lineno or call.lineno)
            elif c == "torch.matmul" and len(call.args) == 2 and self._is_transpose(s, call.args[1], direct=True):
                p = pats["matmul-transpose"]
                yield ctx.finding(R_LIST, call, "torch.matmul",
                                  f"torch.matmul with a transposed second operand: {p['api']} multiplies by the transpose "
                                  f"without the copy (msfmktransplt affinity list).",
                                  replacement=f"{p['api']}({call.args[0].as_string()}, "
                                              f"{self._untransposed(call.args[1])})",
                                  confidence="medium", evidence="knowledge"), (call.lineno, call.lineno)
            elif c == "torch.roll":
                dims = _kw(call, "dims") or (call.args[2] if len(call.args) > 2 else None)
                if type(dims) in (nodes.Tuple, nodes.List) and len(dims.elts) == 2:
                    p = pats["roll"]
                    yield ctx.finding(R_LIST, call, "torch.roll",
                                      f"torch.roll over two dims (shifted windows): {p['api']} is the NPU affinity version "
                                      "(msfmktransplt affinity list).",
                                      replacement=call.as_string().replace("torch.roll", p["api"], 1)
                                      if call.as_string().startswith("torch.roll") else p["call"],
                                      confidence="medium", evidence="knowledge"), (call.lineno, call.lineno)

    @staticmethod
    def _args_text(call: nodes.Call) -> str:
        try:
            text = call.as_string()
        except Exception:  # pragma: no cover
            return "(...)"
        i = text.find("(")
        return text[i:] if i >= 0 and len(text) < 200 else "(...)"

    @staticmethod
    def _untransposed(node) -> str:
        if isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute):
            return node.func.expr.as_string()
        if isinstance(node, nodes.Attribute):
            return node.expr.as_string()
        return node.as_string()

    # ------------------------------------------------------------------ patterns
    def _is_transpose(self, s: Scope, node, direct=False) -> bool:
        cands = [node] if direct else s.expand(node, 3)
        for m in cands:
            if isinstance(m, nodes.Attribute) and m.attrname in ("mT", "T") and not direct or \
                    (direct and isinstance(m, nodes.Attribute) and m.attrname == "mT"):
                return True
            if isinstance(m, nodes.Call):
                c = s.callee(m)
                if c in (".transpose", "torch.transpose"):
                    args = m.args if c.startswith(".") else m.args[1:]
                    dims = sorted(_int(a) if _int(a) is not None else 99 for a in args)
                    if dims in ([-2, -1], [2, 3], [1, 2]) and (not direct or dims == [-2, -1]):
                        return True
                if c in (".permute", "torch.permute") and not direct:
                    return True
        return False

    def _emit_attention(self, ctx, s: Scope, n, left, facts):
        """NPU704; when the scores get an additive bias before the softmax, the advice is SDPA with a float mask
        (npu_fusion_attention is for training only: data/affinity.yaml attention.additive_bias)."""
        f, span = self._emit(ctx, s, n, R_ATTN, "attention", "computes attention as softmax(q @ k^T) @ v", facts)
        bias = facts["patterns"]["attention"].get("additive_bias")
        if bias and self._additive_bias(s, left):
            f = dataclasses.replace(f, message=f.message + " " + " ".join(bias["note"].split()),
                                    replacement=" ".join(bias["call"].split()))
        return f, span

    def _additive_bias(self, s: Scope, left) -> bool:
        """The softmax's argument adds a term to the scores (``attn + bias``) or hands them to a helper of the project
        that does (``add_decomposed_rel_pos(attn, ...)``)."""
        def is_mm(n):
            return (isinstance(n, nodes.BinOp) and n.op == "@") or s.is_call(n, MATMUL)

        for m in s.expand(left, 4, stop=is_mm):
            if not s.is_call(m, SOFTMAX):
                continue
            arg = _receiver_or_arg(s, m)
            for q in (s.expand(arg, 4, stop=is_mm) if arg is not None else ()):
                if isinstance(q, nodes.BinOp) and q.op == "+":
                    return True
                if isinstance(q, nodes.Call) and isinstance(q.func, nodes.Name) and not s.callee(q).startswith("torch.") \
                        and any(isinstance(a, nodes.Name) and any(is_mm(x) for x in s.expand(a, 2)) for a in q.args):
                    return True
        return False

    def _attention(self, s: Scope, left) -> bool:
        def is_mm(n):
            return (isinstance(n, nodes.BinOp) and n.op == "@") or s.is_call(n, MATMUL)

        for m in s.expand(left, 4, stop=is_mm):
            if s.is_call(m, SOFTMAX):
                arg = _receiver_or_arg(s, m)
                if arg is None:
                    continue
                for q in s.expand(arg, 4):
                    if isinstance(q, nodes.BinOp) and q.op == "@" and self._is_transpose(s, q.right):
                        return True
                    if isinstance(q, nodes.Call):
                        c = s.callee(q)
                        if c in ("torch.matmul", "torch.bmm") and len(q.args) == 2 and self._is_transpose(s, q.args[1]):
                            return True
                        if c in (".matmul", ".bmm") and q.args and self._is_transpose(s, q.args[0]):
                            return True
                        if c == "torch.einsum" and len(q.args) == 3:
                            return True
        return False

    def _rope(self, s: Scope, n: nodes.BinOp, rotate_fns: Set[str]) -> bool:
        if not (isinstance(n.left, nodes.BinOp) and n.left.op == "*" and isinstance(n.right, nodes.BinOp) and n.right.op == "*"):
            return False
        for mult, other in ((n.right, n.left), (n.left, n.right)):
            for operand in (mult.left, mult.right):
                rot_arg = self._rotate_call_arg(s, operand, rotate_fns)
                if rot_arg is not None:
                    xs = {other.left.as_string(), other.right.as_string()}
                    if rot_arg in xs:
                        return True
        return False

    def _rotate_call_arg(self, s: Scope, node, rotate_fns: Set[str]) -> Optional[str]:
        if isinstance(node, nodes.Call) and node.args:
            func = node.func
            name = func.name if isinstance(func, nodes.Name) else (func.attrname if isinstance(func, nodes.Attribute) else "")
            if name in rotate_fns or name in ("rotate_half", "rotate_every_two", "_rotate_half", "rotate_every_two_v2"):
                return node.args[0].as_string()
        if isinstance(node, nodes.Call) and _is_neg_cat(s, node):
            return None
        return None

    def _swiglu(self, s: Scope, n: nodes.BinOp) -> bool:
        for a, b in ((n.left, n.right), (n.right, n.left)):
            if isinstance(a, nodes.Call) and s.callee(a) in SILU and a.args:
                if isinstance(b, nodes.Const) or _num(b) is not None:
                    continue
                if b.as_string() == a.args[0].as_string():
                    continue
                if isinstance(b, nodes.Call) and s.callee(b) in SILU:
                    continue
                if self._projection_or_split(s, b) and self._projection_or_split(s, a.args[0]):
                    return True
        return False

    @staticmethod
    def _projection_or_split(s: Scope, node) -> bool:
        """A projection (``self.w3(x)``) or half of a chunk / split / slice: the GLU operands."""
        if isinstance(node, nodes.Call) and isinstance(node.func, (nodes.Attribute, nodes.Name)) and \
                not s.callee(node).startswith(".") or (isinstance(node, nodes.Call) and isinstance(node.func, nodes.Attribute)
                                                       and isinstance(node.func.expr, nodes.Name) and node.func.expr.name == "self"):
            return True
        for m in s.expand(node, 2):
            if isinstance(m, nodes.Call) and s.callee(m) in (".chunk", "torch.chunk", ".split", "torch.split", ".unbind",
                                                             ".tensor_split", "torch.tensor_split"):
                return True
            if isinstance(m, nodes.Subscript) and isinstance(m.slice, (nodes.Slice, nodes.Tuple)):
                return True
        return False

    def _drop_path(self, s: Scope) -> bool:
        own = s.own()
        has_random = any(s.is_call(m, RANDOM) for m in s.of(nodes.Call))
        if not has_random:
            return False
        has_floor = any(s.is_call(m, {".floor_", ".floor", "torch.floor", ".bernoulli_", "torch.bernoulli", ".bernoulli"})
                        for m in s.of(nodes.Call))
        keep = any(isinstance(m, nodes.BinOp) and m.op == "-" and _num(m.left) == 1.0 for m in own)
        per_sample = any((isinstance(m, nodes.Subscript) and isinstance(m.value, nodes.Attribute) and m.value.attrname == "shape"
                          and _int(m.slice) == 0) or
                         (isinstance(m, nodes.Call) and s.callee(m) == ".size" and m.args and _int(m.args[0]) == 0)
                         for m in own)
        return has_random and has_floor and keep and per_sample

    def _nms_loop(self, s: Scope) -> bool:
        """A loop over a score-sorted order (its header reads the sorted indices) that computes overlaps (max/min or
        clamp, a division) and compares them: NMS. A loss that sorts IoUs inside a loop over layers is not (#31)."""
        sorts = {".argsort", "torch.argsort", ".sort", "torch.sort", "numpy.argsort"}

        def sorted_value(v) -> bool:
            v = v.value if isinstance(v, nodes.Subscript) else v
            return isinstance(v, nodes.Call) and s.is_call(v, sorts)

        order = {name for name, vals in s.assigned.items() if any(sorted_value(v) for v in vals)}
        if not order:
            return False
        loops = s.of(nodes.While, nodes.For)
        for loop in loops:
            header = [loop.test] if isinstance(loop, nodes.While) else [loop.iter]
            if not any(isinstance(m, nodes.Name) and m.name in order for h in header for m in walk(h)):
                continue
            inner = list(walk(loop))
            has_clamp = any(isinstance(m, nodes.Call) and s.callee(m) in (".clamp", "torch.clamp", "torch.max", "torch.min",
                                                                         "numpy.maximum", "numpy.minimum", "torch.maximum",
                                                                         "torch.minimum", ".clamp_min", ".clamp_")
                            for m in inner)
            has_div = any(isinstance(m, nodes.BinOp) and m.op == "/" for m in inner)
            has_cmp = any(isinstance(m, nodes.Compare) for m in inner)
            if has_clamp and has_div and has_cmp:
                return True
        return False

    def _channel_shuffle(self, s: Scope) -> bool:
        def dims(call):
            args = call.args if s.callee(call).startswith(".") else call.args[1:]
            if len(args) == 1 and type(args[0]) in (nodes.Tuple, nodes.List):
                return list(args[0].elts)
            return list(args)

        def grouped(call) -> bool:
            d = dims(call)
            if len(d) != 5:
                return False
            a, b = d[1], d[2]
            for x, y in ((a, b), (b, a)):
                if isinstance(y, nodes.BinOp) and y.op == "//" and y.right.as_string() == x.as_string():
                    return True
            return False

        def chain(node, depth=2):
            """node, then through .contiguous() / local names, its sources."""
            out = []
            stack = [(node, 0)]
            while stack:
                n, d = stack.pop()
                out.append(n)
                if isinstance(n, nodes.Call) and s.callee(n) in (".contiguous",) and isinstance(n.func, nodes.Attribute):
                    stack.append((n.func.expr, d))
                elif isinstance(n, nodes.Name) and d < depth:
                    stack.extend((v, d + 1) for v in s.assigned.get(n.name, ()))
            return out

        views = [m for m in s.of(nodes.Call) if s.is_call(m, {".view", ".reshape", "torch.reshape"})]
        five = [v for v in views if grouped(v)]
        if not five:
            return False
        swaps = []
        for m in s.of(nodes.Call):
            if s.callee(m) in (".transpose", "torch.transpose", ".permute"):
                c = s.callee(m)
                args = [_int(a) for a in (m.args if c.startswith(".") else m.args[1:])]
                if (c == ".permute" and args == [0, 2, 1, 3, 4]) or (c != ".permute" and sorted(a if a is not None else 99 for a in args) == [1, 2]):
                    recv = m.func.expr if c.startswith(".") else m.args[0]
                    if any(v in chain(recv) for v in five):
                        swaps.append(m)
        for v in views:
            if len(dims(v)) in (3, 4) or s.is_call(v, {".flatten"}):
                recv = v.func.expr if s.callee(v).startswith(".") else (v.args[0] if v.args else None)
                if recv is not None and any(w in chain(recv) for w in swaps):
                    return True
        for f in s.of(nodes.Call):
            if s.is_call(f, {".flatten", "torch.flatten"}) and isinstance(f.func, nodes.Attribute):
                recv = f.func.expr if s.callee(f).startswith(".") else f.args[0]
                if any(w in chain(recv) for w in swaps):
                    return True
        return False

    # ------------------------------------------------------------------ affinity list
    @staticmethod
    def _params(fn: nodes.FunctionDef) -> List[str]:
        a = fn.args
        names = [x.name for x in (a.posonlyargs or []) + (a.args or [])]
        names += [x.name for x in a.kwonlyargs or []]
        return names

    def _listed_function(self, ctx, fn: nodes.FunctionDef, facts) -> Optional[Finding]:
        entry = facts["affinity_list"]["function"].get(fn.name)
        if not entry or self._params(fn) != entry["parameters"]:
            return None
        use = entry["use"]
        return ctx.finding(R_LIST, fn, use,
                           f"`{fn.name}({', '.join(entry['parameters'])})` is listed by msfmktransplt's affinity list; "
                           f"{use} is its NPU affinity version." + (f" ({entry['note']})" if entry.get("note") else ""),
                           replacement=use, confidence="medium", evidence="knowledge", line=_def_line(fn))

    def _listed_class(self, ctx, cls: nodes.ClassDef, facts) -> Optional[Finding]:
        entry = facts["affinity_list"]["class"].get(cls.name)
        if not entry:
            return None
        meths = {m.name: m for m in cls.body if isinstance(m, nodes.FunctionDef)}
        init_ok = (not entry["init"] and "__init__" not in meths) or (
            "__init__" in meths and self._params(meths["__init__"]) == entry["init"])
        fwd_ok = "forward" in meths and self._params(meths["forward"]) == entry["forward"]
        if not (init_ok and fwd_ok):
            return None
        use = entry["use"]
        msg = f"class `{cls.name}` matches msfmktransplt's affinity list (same __init__/forward parameters); use {use}."
        if entry.get("deprecated"):
            msg += f" {entry['deprecated']}."
        return ctx.finding(R_LIST, cls, use, msg, replacement=use, confidence="medium", evidence="knowledge",
                           line=_def_line(cls))
