"""thirdparty-calls: calls into library functions that a thirdparty report marks as affected.

``npu-analyse thirdparty LIB`` writes, for a library, every function that does
not plainly work on an NPU and the call chain (``via``) to the root cause.
``npu-analyse script ... --with-thirdparty report.json`` registers those
reports (:mod:`analyse.knowledge.library_reports`) and this pass reports every call
the user's code makes into such a function -- directly or through a
re-exported name (``mmcv.ops.roi_align``) -- with the user's call site
followed by the library chain as the finding's ``chain``.

Without a loaded report the pass only knows the reserved demo library
``npu_analyse_example`` (used by its examples); real code never imports it.
"""

from __future__ import annotations

import re
from typing import Iterator

import astroid

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, nodes_of

R_TP_UNSUPPORTED = Rule(
    code="NPU450", name="call-into-unsupported-library-function", category="third-party", severity="blocker",
    summary="A call into a library function that the library's thirdparty report marks unsupported on NPU.",
    why="`npu-analyse thirdparty` found that this library function reaches, through its own calls, an API, "
        "a GPU-only library or a compiled CUDA kernel that does not run on an Ascend NPU. The call fails (or the "
        "library op is missing) until the library is ported or the call is replaced.",
    example="from mmcv.ops import roi_align\nout = roi_align(feats, rois, (7, 7))   # reaches mmcv._ext.roi_align_forward",
    fix="Use an NPU build of the library (e.g. mmcv built with MMCV_WITH_NPU), a torch_npu equivalent "
        "(torchvision.ops.roi_align on NPU), or reimplement the op in plain PyTorch.",
)
R_TP_UNKNOWN = Rule(
    code="NPU451", name="call-into-unverified-library-function", category="third-party", severity="info",
    summary="A call into a library function whose NPU status is unknown (unverified APIs or unresolvable calls).",
    why="The library function reaches torch APIs the Ascend docs do not list, or calls that cannot be "
        "resolved statically; it may work, fall back to the CPU, or fail.",
    example="from somelib import helper\ny = helper(x)   # helper reaches torch.special.zeta",
    fix="Probe the APIs named in the chain with `npu-analyse probe`, or test the call on a device.",
)
R_TP_MIGRATION = Rule(
    code="NPU452", name="call-into-library-function-needing-migration", category="third-party", severity="auto",
    summary="A call into a library function that uses CUDA APIs which transfer_to_npu rewrites at run time.",
    why="The library function (or one it calls) uses `.cuda()`, 'cuda' devices or similar; "
        "`from torch_npu.contrib import transfer_to_npu` maps them to the NPU, so the call works once it is imported.",
    example="from somelib import to_gpu\nx = to_gpu(x)   # to_gpu calls x.cuda()",
    fix="Import `torch_npu` and `from torch_npu.contrib import transfer_to_npu` before the library is used.",
)

_BY_STATUS = {"unsupported": R_TP_UNSUPPORTED, "conditional": R_TP_UNSUPPORTED, "unknown": R_TP_UNKNOWN,
              "needs-migration": R_TP_MIGRATION}

EXAMPLE_REPORT = {
    "mode": "thirdparty",
    "inputs": ["npu_analyse_example"],
    "thirdparty": {
        "functions": [
            {"qualname": "npu_analyse_example.ops.roi.roi_align", "path": "ops/roi.py", "line": 10,
             "status": "unsupported", "reasons": ["npu_analyse_example._ext.roi_align_forward"],
             "via": ["npu_analyse_example.ops.roi.roi_align", "npu_analyse_example.ops.roi.RoIAlignFunction.forward"]},
            {"qualname": "npu_analyse_example.utils.fancy", "path": "utils.py", "line": 3,
             "status": "unknown", "reasons": ["torch.special.zeta"], "via": ["npu_analyse_example.utils.fancy"]},
        ],
        "aliases": {"npu_analyse_example.ops.roi_align": ["npu_analyse_example.ops.roi.roi_align"]},
    },
}


_CALLER_SETS = re.compile(r"^only when a caller sets `(?P<expr>[^`]+)`(?: and `[^`]+`)* \(off by default")
_SKIPPED = "the CUDA branch of "


def _off_at_call(call: nodes.Call, cond: str) -> bool:
    """True when the library's condition stays false at this call: a CUDA device-type branch (skipped on an
    NPU), or an off-by-default choice of the caller's arguments that the call leaves at its default or sets to a
    literal that keeps it off (``set_seed(0)``, ``Accelerator(mixed_precision="bf16")``)."""
    if cond.startswith(_SKIPPED) and "is skipped on an NPU" in cond:
        return True
    m = _CALLER_SETS.match(cond)
    if m is None:
        return False
    exprs = re.findall(r"`([^`]+)`", cond[: cond.find("(off by default")])
    if any(isinstance(k.arg, type(None)) for k in call.keywords or ()) or \
            any(isinstance(a, nodes.Starred) for a in call.args):
        return False   # **kwargs / *args: the call may set anything
    for expr in exprs:
        if not _expr_off(call, expr):
            return False
    return True


def _expr_off(call: nodes.Call, expr: str) -> bool:
    from analyse.conditions import TRANSFER, build, evaluate
    from analyse.conditions.options import literal

    try:
        test = astroid.extract_node(expr)   # parsed (our own report text), never evaluated
    except Exception:
        return False
    names = sorted({n.name for n in test.nodes_of_class(nodes.Name)} if not isinstance(test, nodes.Name)
                   else {test.name})
    if not names:
        return False
    kws = {k.arg: k.value for k in call.keywords or ()}
    passed = [n for n in names if n in kws]
    if not passed:
        # left at its default (off by default), unless positional arguments beyond the first may set it
        return len(call.args) <= 1
    if len(passed) < len(names):
        return False
    params = []
    for name in names:
        ok, _v = literal(kws[name])
        if not ok:
            return False            # set to a value the analysis cannot see
        params.append(f"{name}={kws[name].as_string()}")
    try:
        fn = astroid.parse(f"def _f({', '.join(params)}):\n    if {expr}:\n        pass\n")
        ifnode = next(fn.nodes_of_class(nodes.If))
        return evaluate(build(ifnode.test), TRANSFER) is False
    except Exception:
        return False


def _index(ctx: ModuleContext):
    from analyse.knowledge.library_reports import STORE_KEY, ThirdpartyIndex

    index = ctx.project.store.get(STORE_KEY)
    if index is None:
        index = ctx.project.store.get("thirdparty_example_index")
        if index is None:
            index = ThirdpartyIndex()
            index.add_report(EXAMPLE_REPORT, "npu_analyse_example")
            ctx.project.store["thirdparty_example_index"] = index
    return index


class ThirdpartyCallsPass(Pass):
    name = "thirdparty-calls"
    rules = (R_TP_UNSUPPORTED, R_TP_UNKNOWN, R_TP_MIGRATION)

    VALID = (
        "import torch\nfrom npu_analyse_example.ops import roi_align\nfeats = torch.zeros(2)\n",
        "import mmcv\ny = mmcv.ops.roi_align(x, rois, (7, 7))   # no mmcv report loaded\n",
    )
    INVALID = (
        "from npu_analyse_example.ops import roi_align\n"
        "out = roi_align(feats, rois, (7, 7))  # expect: NPU450\n",
        "import npu_analyse_example.utils as u\n"
        "y = u.fancy(x)  # expect: NPU451\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        index = _index(ctx)
        if not index.functions:
            return
        tops = {q.split(".")[0] for q in index.functions} | {q.split(".")[0] for q in index.aliases}
        text = ctx.source.text
        if text and not any(t in text for t in tops):
            return
        r = ctx.resolver
        for node in nodes_of(ctx.tree, nodes.Call):
            q = r.call_target(node)
            if not q or q.split(".")[0] not in tops:
                continue
            fn = index.lookup(q)
            if fn is None:
                continue
            status = fn["status"]
            rule = _BY_STATUS[status]
            reasons = list(fn.get("reasons") or [])
            shown = "; ".join(reasons[:3]) + (f" and {len(reasons) - 3} more" if len(reasons) > 3 else "")
            lib = index.libraries.get(fn["qualname"], "")
            what = {"unsupported": "does not run on an NPU", "unknown": "has an unverified NPU status",
                    "conditional": "runs CUDA-only code under a condition",
                    "needs-migration": "needs CUDA-to-NPU migration (transfer_to_npu)"}[status]
            msg = f"`{q}` {what} according to the thirdparty report of {lib}: it reaches {shown}."
            severity = rule.severity
            if status == "conditional":
                conds = [str(c) for c in (fn.get("conditions") or [])]
                if conds and all(_off_at_call(node, c) for c in conds):
                    continue   # the call keeps every condition off (the defaults, or literals that turn it off)
                severity = "manual"
                msg += (" Only " + "; ".join(c[5:] if c.startswith("only ") else c for c in conds[:3]) + "."
                        if conds else " Only under a guard with a fallback.") + \
                    " Check that the call takes the fallback path on the NPU."
            via = [str(v) for v in (fn.get("via") or [fn["qualname"]])]
            chain = (f"{ctx.path}:{node.lineno} {q}",) + tuple(via)
            yield Finding(
                code=rule.code, category=rule.category, severity=severity, path=ctx.path,
                line=node.lineno or 1, end_line=node.end_lineno, column=node.col_offset or 0, api=q,
                message=msg, replacement=None, confidence="high" if status != "unknown" else "medium",
                evidence="propagated", snippet=ctx.snippet(node.lineno or 1), chain=chain,
            )
