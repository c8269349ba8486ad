"""triton: Triton kernels checked against the Triton-Ascend constraints, kernel by kernel.

Since Triton-Ascend 3.2.0 (``pip install triton-ascend``, Atlas A2/A3, Python 3.9-3.11) Triton
kernels written for GPUs compile for Ascend NPUs; porting one is a code change with documented
constraints. This pass reads every ``@triton.jit`` function (also under ``@triton.autotune`` /
``@triton.heuristics``, and ``@jit`` imported from triton) and every launch ``kernel[grid](...)``,
and reports

* per kernel (NPU506, at its ``def`` and at every launch; ``f = triton.jit(f)`` /
  ``f = triton.heuristics({...})(f)`` at module level count as decorators): ``manual`` when nothing in it breaks a
  documented constraint ("port with Triton-Ascend >= 3.2.0 and validate against the PyTorch
  reference"), ``blocker`` naming each hard violation (its own or of a ``@triton.jit`` helper it calls);
  ``manual`` too, naming the rewrite, when its only violations are element types with an exact documented rewrite
  (``dtype_rules.<col>.blocks: false``: fp8 widened to bf16, uintN held as intN; Ascend 950 has them) -- the
  practice rule blocks a Triton kernel only for what Triton-Ascend documents as unsupported with no rewrite;
* hard violations, each with op, dtype or value, chip and line: ``triton.language`` ops that Atlas A2/A3
  supports for no dtype (NPU510); element types the chip does not have -- ``tl.float64``, ``tl.uint16`` /
  ``uint32`` / ``uint64``, fp8 types -- ``dtype=`` arguments an op does not take, and launch arguments the wrapper
  creates with such a dtype (a pointer to fp8 / fp64 data) (NPU511: blocker for fp64, manual for the types with an
  exact rewrite); inline GPU
  assembly (``tl.inline_asm_elementwise``), NVIDIA ``libdevice`` and ``tl.extra.cuda`` calls (NPU513);
* advice with the rule and the number: parameter values outside the accepted ones (atomics ``sem`` other
  than ``"acq_rel"``, ``scope`` other than ``"gpu"``: treated as the default; unsupported parameters)
  (NPU512); ``num_stages`` / ``num_ctas`` / ``maxnreg`` in ``triton.Config`` or a launch and
  ``use_cuda_graph`` in ``triton.autotune`` (NPU514); a launch whose program count is known and above
  65,535 (NPU515); block tiles whose constexpr sizes times element size exceed the 192 KiB unified buffer
  (NPU516); ``tl.arange`` ranges above 1,048,576 (NPU517); 2-D / 3-D grids, merged into 1-D (NPU518);
* GPU-only device discovery in the wrappers (NPU519, manual):
  ``triton.runtime.driver.active.get_active_torch_device()`` and ``torch.cuda.get_device_capability()``
  tests that choose a kernel.

The facts come from ``data/triton_ascend.yaml`` (generated from the Triton-Ascend docs by
``tools/build_knowledge.py``). Constexpr sizes are taken from literal launch arguments, ``triton.Config``
kwargs, parameter defaults and module-level integer constants; what cannot be evaluated is not guessed.
Files whose text contains neither ``triton`` nor the name of a kernel of the project are skipped before
any tree walk.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Set, Tuple

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.knowledge.triton_ascend import TritonAscend, triton_ascend
from analyse.passes import ModuleContext, Pass, ProjectContext, nodes_of
from analyse.passes._project_scan import _TRITON_DECORATORS, project_scan
from analyse.syntax import own_bindings

STORE_KEY = "triton"
CAT = "cuda-extension"
PORT = "port with Triton-Ascend >= 3.2.0 (pip install triton-ascend) and validate against the PyTorch reference"
# the words of NPU506's message for a kernel that breaks no documented constraint at all (library mode reads them:
# only such a kernel in a library's own Ascend backend folder is taken as its NPU implementation)
PORTS_AS_IS = "no documented Triton-Ascend constraint is broken"

R_KERNEL = Rule(
    code="NPU506", name="triton-kernel", category=CAT, severity="manual",
    summary="A Triton kernel (`@triton.jit`) is defined or launched: graded against the Triton-Ascend constraints "
            "(manual when it ports as it is or after an exact element-type rewrite, blocker naming the hard violation).",
    why="Triton-Ascend (>= 3.2.0, Atlas A2/A3) compiles GPU Triton kernels for Ascend NPUs, so a kernel is a code change "
        "with documented limits, not a rewrite. A kernel without a hard violation still needs a run on the device "
        "and a comparison with the PyTorch reference; one with a hard violation (an op or dtype the chip lacks with no "
        "rewrite that keeps its results, GPU assembly, libdevice) does not compile until that part is redone. fp8 and "
        "unsigned element types (Ascend 950 has them) are manual: widened to bf16 / held as signed ints of the same "
        "width on Atlas A2/A3 they keep every value.",
    example="@triton.jit\ndef add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    ...\nadd_kernel[grid](x, y, n, BLOCK=1024)",
    fix="# pip uninstall triton && pip install triton-ascend; run on device='npu'\n"
        "torch.testing.assert_close(add(x, y), x + y)",
)
R_OP = Rule(
    code="NPU510", name="triton-op-unsupported", category=CAT, severity="blocker",
    summary="A `triton.language` op that Atlas A2/A3 supports for no dtype.",
    why="The Triton-Ascend op table lists no supported dtype for the op on Atlas A2/A3, so the kernel does not compile.",
    example="acc = tl.dot_scaled(a, sa, 'e4m3', b, sb, 'e4m3')",
    fix="acc = tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))   # an op the chip has",
)
R_DTYPE = Rule(
    code="NPU511", name="triton-dtype-unsupported", category=CAT, severity="blocker",
    summary="A Triton kernel uses an element type the Ascend chip does not have (tl.float64; tl.uint16/32/64 and fp8 on "
            "Atlas A2/A3) or passes an op a `dtype=` it does not take.",
    why="fp64 exists on no Ascend chip; unsigned 16/32/64-bit integers and fp8 only on Ascend 950. The cast or the op "
        "fails to compile on Atlas A2/A3. fp64 blocks the kernel (fp32 changes its results); fp8 and the unsigned "
        "types are manual (data/triton_ascend.yaml dtype_rules.<col>.blocks): every fp8 value is exact in bf16 and a "
        "signed type of the same width holds the same bits.",
    example="acc = tl.zeros([BLOCK], dtype=tl.float64)\nx = tl.load(p + offs).to(tl.float64)",
    fix="acc = tl.zeros([BLOCK], dtype=tl.float32)\nx = tl.load(p + offs).to(tl.float32)",
)
R_PARAM = Rule(
    code="NPU512", name="triton-param-value", category=CAT, severity="advice",
    summary="A `triton.language` op parameter value Ascend does not accept (atomics: `sem` other than \"acq_rel\", "
            "`scope` other than \"gpu\"; parameters Ascend does not support).",
    why="Triton-Ascend accepts only sem=\"acq_rel\" and scope=\"gpu\" for atomics and treats any other value as the "
        "default: the code compiles, with a stronger ordering than written.",
    example="tl.atomic_add(out_ptr + offs, x, sem='relaxed')",
    fix="tl.atomic_add(out_ptr + offs, x)   # acq_rel, gpu scope: what Ascend runs anyway",
)
R_ASM = Rule(
    code="NPU513", name="triton-gpu-assembly", category=CAT, severity="blocker",
    summary="Inline GPU assembly (`tl.inline_asm_elementwise`, PTX) or NVIDIA `libdevice` / `tl.extra.cuda` calls in a "
            "Triton kernel.",
    why="PTX and libdevice are NVIDIA code; Triton-Ascend has no implementation of them, so the kernel does not compile "
        "until they are replaced by triton.language ops.",
    example="y = tl.inline_asm_elementwise('tanh.approx.f32 $0, $1;', '=r,r', [x], dtype=tl.float32, is_pure=True, pack=1)\n"
            "z = tl.libdevice.erf(x)",
    fix="y = 2 * tl.sigmoid(2 * x) - 1\nz = tl.erf(x)",
)
R_TUNING = Rule(
    code="NPU514", name="triton-tuning-setting", category=CAT, severity="advice",
    summary="`num_stages`, `num_ctas`, `maxnreg` in `triton.Config` or a launch, `use_cuda_graph` in `triton.autotune`.",
    why="These settings tune NVIDIA GPUs (software pipelining, SM90 clusters, PTX register limits, CUDA graphs); "
        "on Ascend they do nothing or are not applicable, so the autotuner compares configs that only differ in them.",
    example="triton.Config({'BLOCK': 128}, num_warps=4, num_stages=3)",
    fix="triton.Config({'BLOCK': 128})   # tune BLOCK sizes for the 192 KiB unified buffer instead",
)
R_GRID = Rule(
    code="NPU515", name="triton-grid-too-large", category=CAT, severity="advice",
    summary="A Triton launch whose program count is known and exceeds 65,535 (the Ascend coreDim limit).",
    why="The number of programs of one launch must stay <= 65,535 (UINT16_MAX) on Ascend; the launch fails with "
        "'coreDim=... can't be greater than UINT16_MAX'.",
    example="kernel[(100000,)](x, n, BLOCK=1024)",
    fix="# export TRITON_ALL_BLOCKS_PARALLEL=1, or a larger block:\nkernel[(triton.cdiv(n, 32768),)](x, n, BLOCK=32768)",
)
R_UB = Rule(
    code="NPU516", name="triton-tile-over-ub", category=CAT, severity="advice",
    summary="A block tile whose constexpr sizes times element size exceed the 192 KiB unified buffer.",
    why="A program's tiles live in the unified buffer (UB) of its AI core, 1,572,864 bits = 192 KiB; a larger tile fails "
        "with 'ub overflow'.",
    example="acc = tl.zeros((256, 256), dtype=tl.float32)   # 256 KiB",
    fix="# loop over sub-blocks: BLOCK_SIZE_SUB tiles of at most a few ten KiB each",
)
R_ARANGE = Rule(
    code="NPU517", name="triton-arange-too-long", category=CAT, severity="advice",
    summary="`tl.arange(start, end)` with end - start above 1,048,576.",
    why="Triton-Ascend requires 0 <= end - start <= 1,048,576 (TRITON_MAX_TENSOR_NUMEL) with constant bounds.",
    example="offs = tl.arange(0, 2097152)",
    fix="for i in range(0, 2097152, 65536):\n    offs = i + tl.arange(0, 65536)",
)
R_GRID_DIMS = Rule(
    code="NPU518", name="triton-multi-dim-grid", category=CAT, severity="advice",
    summary="A 2-D or 3-D Triton grid.",
    why="Ascend merges 2-D/3-D grids into one dimension (a (4, 5) grid runs like (20,)), and the program count should "
        "match the physical core count; the migration guide recommends 1-D grids.",
    example="kernel[(M, N)](x, y)",
    fix="kernel[(M * N,)](x, y)   # pid = tl.program_id(0); row, col = pid // N, pid % N",
)
R_DEVICE = Rule(
    code="NPU519", name="triton-gpu-device-discovery", category=CAT, severity="manual",
    summary="GPU-only device discovery next to Triton kernels: `triton.runtime.driver.active.get_active_torch_device()`, "
            "`torch.cuda.get_device_capability()` tests that choose a kernel.",
    why="These ask the CUDA driver which GPU (and which compute capability) is present; on an Ascend host the device is "
        "'npu' and a capability test picks the wrong kernel or none.",
    example="DEVICE = triton.runtime.driver.active.get_active_torch_device()\n"
            "if torch.cuda.get_device_capability()[0] >= 9:\n    kernel_sm90[grid](x)",
    fix="import torch_npu\nDEVICE = torch.device('npu')\nkernel[grid](x)   # one Triton-Ascend path",
)

RULES = (R_KERNEL, R_OP, R_DTYPE, R_PARAM, R_ASM, R_TUNING, R_GRID, R_UB, R_ARANGE, R_GRID_DIMS, R_DEVICE)
HARD = ("NPU510", "NPU511", "NPU513")
_CONFIG_KEYS = ("num_stages", "num_ctas", "maxnreg")
_LAUNCH_KEYS = ("num_stages", "num_ctas", "maxnreg")
_TILE_OPS = {"zeros": 1, "full": 2, "ones": 1, "empty": 1}   # op -> position of dtype
_DEVICE_CALLS = {"triton.runtime.driver.active.get_active_torch_device"}
_CAPABILITY_CALLS = {"torch.cuda.get_device_capability", "torch.cuda.get_device_properties"}
_MAX_ENVS = 64
_TRITON_TOP = {"jit", "autotune", "heuristics", "Config", "language", "runtime", "cdiv", "next_power_of_2", "testing"}
_HOST_CALLS = {"Config", "autotune", "get_active_torch_device", "get_device_capability", "get_device_properties"}


# --------------------------------------------------------------------------- small evaluation


def _eval(node, env: Dict[str, int], r=None, depth: int = 0) -> Optional[int]:
    """The integer value of *node* from literals, *env* (constexpr / local names) and simple arithmetic."""
    if depth > 12 or node is None:
        return None
    if isinstance(node, nodes.Const):
        return node.value if isinstance(node.value, int) and not isinstance(node.value, bool) else None
    if isinstance(node, nodes.Name):
        return env.get(node.name)
    if isinstance(node, nodes.Subscript) and isinstance(node.slice, nodes.Const) and isinstance(node.slice.value, str):
        return env.get(node.slice.value)   # meta['BLOCK'] in a grid lambda
    if isinstance(node, nodes.UnaryOp) and node.op == "-":
        v = _eval(node.operand, env, r, depth + 1)
        return -v if v is not None else None
    if isinstance(node, nodes.BinOp):
        a = _eval(node.left, env, r, depth + 1)
        b = _eval(node.right, env, r, depth + 1)
        if a is None or b is None:
            return None
        try:
            if node.op == "+":
                return a + b
            if node.op == "-":
                return a - b
            if node.op == "*":
                return a * b
            if node.op == "//" and b:
                return a // b
            if node.op == "<<" and 0 <= b < 64:
                return a << b
            if node.op == "**" and 0 <= b < 64:
                return a ** b
        except (OverflowError, ValueError):
            return None
        return None
    if isinstance(node, nodes.Call) and r is not None:
        q = r.qualname(node.func) or ""
        leaf = q.rsplit(".", 1)[-1]
        args = [_eval(a, env, r, depth + 1) for a in node.args]
        if leaf == "cdiv" and len(args) == 2 and None not in args and args[1]:
            return -(-args[0] // args[1])
        if leaf == "next_power_of_2" and len(args) == 1 and args[0] is not None and args[0] > 0:
            return 1 << (args[0] - 1).bit_length()
        if q in ("max", "builtins.max") and args and None not in args:
            return max(args)
        if q in ("min", "builtins.min") and args and None not in args:
            return min(args)
    return None


def _tq(r, node) -> Optional[str]:
    """The qualified name of *node*, with triton / triton.language re-exported by a project module
    (``from pkg._triton import triton, tl``: ``pkg._triton.tl.float16``) mapped back to triton's own names."""
    q = r.qualname(node)
    if q is None or q.startswith("triton"):
        return q
    i = q.find(".triton.")
    if i >= 0 and not q.startswith("torch.") and q[i + 8:].split(".", 1)[0] in _TRITON_TOP:
        return q[i + 1:]
    i = q.find(".tl.")
    if i >= 0 and not q.startswith("torch."):
        return "triton.language." + q[i + 4:]
    return q


def _kw(call: nodes.Call, name: str, pos: Optional[int] = None):
    for k in call.keywords or ():
        if k.arg == name:
            return k.value
    if pos is not None and pos < len(call.args) and not any(isinstance(a, nodes.Starred) for a in call.args[:pos + 1]):
        return call.args[pos]
    return None


def _module_ints(tree: nodes.Module) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for st in tree.body:
        if isinstance(st, nodes.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], nodes.AssignName):
            v = _eval(st.value, out)
            if v is not None:
                out[st.targets[0].name] = v
    return out


def _line(node) -> int:
    pos = getattr(node, "position", None)
    return pos.lineno if pos is not None else node.lineno


# --------------------------------------------------------------------------- kernels


def is_kernel(fn: nodes.FunctionDef, r) -> bool:
    if fn.decorators is None:
        return False
    for d in fn.decorators.nodes:
        if _tq(r, d.func if isinstance(d, nodes.Call) else d) in _TRITON_DECORATORS:
            return True
    return False


def wrapped_kernels(tree: nodes.Module, r) -> Set[str]:
    """Names of module-level functions made kernels by a call: ``f = triton.jit(f)``,
    ``f = triton.heuristics({...})(f)``, ``g = triton.autotune(configs=..., key=...)(triton.jit(f))``."""
    out: Set[str] = set()
    for st in tree.body:
        if not isinstance(st, nodes.Assign) or not isinstance(st.value, nodes.Call):
            continue
        call = st.value
        while isinstance(call, nodes.Call):
            head = call.func.func if isinstance(call.func, nodes.Call) else call.func
            if _tq(r, head) not in _TRITON_DECORATORS or not call.args:
                break
            arg = call.args[0]
            if isinstance(arg, nodes.Name):
                out.add(arg.name)
                out.update(t.name for t in st.targets if isinstance(t, nodes.AssignName))
                break
            call = arg
    return out


def _configs(fn: nodes.FunctionDef, r) -> List[Tuple[nodes.Call, Dict[str, int]]]:
    """(Config call, its integer kwargs) of the autotune decorator of *fn* (configs as a literal list or a name)."""
    out = []
    for d in fn.decorators.nodes if fn.decorators is not None else ():
        if not isinstance(d, nodes.Call) or (r.qualname(d.func) or "").rsplit(".", 1)[-1] != "autotune":
            continue
        cfg = _kw(d, "configs", 0)
        cands = [cfg]
        if isinstance(cfg, nodes.Name):
            try:
                defs = own_bindings(cfg, cfg.name)
            except Exception:
                defs = ()
            cands = [r.assigned_value(x) for x in defs if isinstance(x, nodes.AssignName)]
        for c in cands:
            if c is None:
                continue
            for call in nodes_of(c, nodes.Call) if not isinstance(c, nodes.Call) else [c]:
                if (r.qualname(call.func) or "").endswith("Config"):
                    kw = _kw(call, "kwargs", 0)
                    env = {}
                    if isinstance(kw, nodes.Dict):
                        for k, v in kw.items:
                            if isinstance(k, nodes.Const) and isinstance(k.value, str):
                                iv = _eval(v, {})
                                if iv is not None:
                                    env[k.value] = iv
                    out.append((call, env))
    return out


class KernelInfo:
    __slots__ = ("fn", "qualname", "hard", "rewrites", "findings", "callees", "constexpr")

    def __init__(self, fn, qualname):
        self.fn = fn
        self.qualname = qualname
        self.hard: List[str] = []          # short texts of hard violations that block the kernel
        self.rewrites: List[str] = []      # short texts of violations with an exact documented rewrite (manual)
        self.findings: List[Tuple[Rule, object, str, str, Optional[str], Optional[str]]] = []
        self.callees: Set[Tuple[str, str]] = set()   # (qualname, constexpr branch or "")
        self.constexpr: List[str] = []


def _chip_text(rule) -> str:
    chips = [n for k, n in (("a2a3", "Atlas A2/A3"), ("950", "Ascend 950")) if not rule[k]]
    ok = [n for k, n in (("a2a3", "Atlas A2/A3"), ("950", "Ascend 950")) if rule[k]]
    return "not supported on " + " or ".join(chips) + (f" (supported on {', '.join(ok)})" if ok else "")


def _dtype_severity(rule) -> Optional[str]:
    """NPU511's severity for an element type (``dtype_rules.<col>.blocks``): blocker when no rewrite keeps the
    kernel's results (fp64), manual when an exact documented one does (fp8 widened to bf16, uintN held as intN)."""
    return None if rule["blocks"] else "manual"


def _rewrite_text(rule) -> str:
    return "" if rule["blocks"] else f" It does not block the kernel: the rewrite is {rule['rewrite']}."


def analyse_kernel(fn: nodes.FunctionDef, r, ta: TritonAscend, mod_ints: Dict[str, int],
                   envs: List[Dict[str, int]], kernels: Set[str],
                   launches: Optional[List[Dict[str, object]]] = None) -> KernelInfo:
    """Every finding inside one kernel body (not yet Finding objects: the caller owns the context). *launches*: the
    constexpr values of every launch of the kernel seen (None: not known); a hard violation in a constexpr branch
    that no launch turns on is not compiled, so it does not block the kernel (advice)."""
    info = KernelInfo(fn, fn.qname())
    args = fn.args
    defaults: Dict[str, int] = {}
    all_args = list(args.args or []) + list(args.kwonlyargs or [])
    annotations = list(args.annotations or []) + list(args.kwonlyargs_annotations or [])
    for a, ann in zip(all_args, annotations):
        if ann is not None and (r.qualname(ann) or ann.as_string()).endswith("constexpr"):
            info.constexpr.append(a.name)
    pos_defaults = args.defaults or []
    for a, dv in zip((args.args or [])[len(args.args or []) - len(pos_defaults):], pos_defaults):
        v = _eval(dv, mod_ints)
        if v is not None:
            defaults[a.name] = v
    base = dict(mod_ints)
    base.update(defaults)
    envs = [dict(base, **e) for e in envs[:_MAX_ENVS]] or [base]
    seen_dtype: Set[Tuple[str, int]] = set()
    ub = ta.limit("unified_buffer")
    amax = ta.limit("arange_max")
    worst_tile: Optional[Tuple[int, nodes.Call, str, Dict[str, int]]] = None
    for node in nodes_of(fn, nodes.Attribute, nodes.Call):
        if isinstance(node, nodes.Attribute):
            if isinstance(node.parent, nodes.Attribute) and node.parent.expr is node:
                continue
            q = _tq(r, node)
            if not q or not q.startswith("triton.language."):
                continue
            leaf = q.rsplit(".", 1)[-1]
            hit = ta.dtype_rule(leaf) if q.count(".") == 2 else None
            if hit is not None and not hit[1]["a2a3"]:
                key = (leaf, node.lineno)
                if key in seen_dtype:
                    continue
                seen_dtype.add(key)
                col, rule = hit
                how = _dtype_use(node)
                branch = _constexpr_branch(node, fn, info.constexpr)
                dead = _not_compiled(node, fn, info.constexpr, launches)
                if dead:
                    info.findings.append((R_DTYPE, node, q, f"Triton kernel `{fn.name}` uses `tl.{leaf}`{how}: {col} is "
                                          f"{_chip_text(rule)}. {rule['why']}. {dead}", rule["fix"], "advice"))
                    continue
                short = f"tl.{leaf} ({col}) at line {node.lineno}" + (f" under `if {branch}`" if branch else "")
                (info.hard if rule["blocks"] else info.rewrites).append(short)
                info.findings.append((R_DTYPE, node, q, f"Triton kernel `{fn.name}` uses `tl.{leaf}`{how}: {col} is "
                                      f"{_chip_text(rule)}. {rule['why']}.{_branch_text(branch)}{_rewrite_text(rule)}",
                                      rule["fix"], _dtype_severity(rule)))
            continue
        call = node
        q = _tq(r, call.func)
        if q is None:
            if isinstance(call.func, nodes.Attribute):   # x.atomic_add(...): member form of an op
                op = ta.op(call.func.attrname)
                if op is not None and op.params:
                    _params(info, call, f"triton.language.{call.func.attrname}", op, fn)
            continue
        if q in kernels or q == info.qualname or not q.startswith(("triton.", "builtins.")) and "." in q:
            # a jit helper (those of other modules are known only after the prescan), with its constexpr branch
            info.callees.add((q, _constexpr_branch(call, fn, info.constexpr) or ""))
            if q in kernels or q == info.qualname:
                continue
        bad = next((k for k in ta.invalid_calls if q == k or q.startswith(k + ".")), None)
        if bad is not None:
            short = q.replace("triton.language.", "tl.")
            branch = _constexpr_branch(call, fn, info.constexpr)
            fix = ("rewrite the element-wise function with triton.language ops" if "inline_asm" in q else
                   f"tl.{q.rsplit('.', 1)[-1]} (the triton.language op of the same name), if it exists; else compose it")
            dead = _not_compiled(call, fn, info.constexpr, launches)
            if dead:
                info.findings.append((R_ASM, call, q, f"Triton kernel `{fn.name}` calls `{short}`: "
                                      f"{ta.invalid_calls[bad]}. {dead}", fix, "advice"))
                continue
            info.hard.append(f"{short} at line {call.lineno}" + (f" under `if {branch}`" if branch else ""))
            info.findings.append((R_ASM, call, q, f"Triton kernel `{fn.name}` calls `{short}`: "
                                  f"{ta.invalid_calls[bad]}; it does not compile with Triton-Ascend.{_branch_text(branch)}",
                                  fix, None))
            continue
        if not q.startswith("triton.language."):
            continue
        rest = q[len("triton.language."):]
        if rest.startswith("math."):
            rest = rest[5:]
        if "." in rest:
            continue
        op = ta.op(rest)
        if op is None:
            continue
        if op.no_dtype:
            dead = _not_compiled(call, fn, info.constexpr, launches)
            if dead:
                info.findings.append((R_OP, call, q, f"Triton kernel `{fn.name}` calls `tl.{rest}`: Triton-Ascend supports "
                                      f"it for no dtype on Atlas A2/A3 ({op.doc}). {dead}",
                                      "express it with supported triton.language ops", "advice"))
                continue
            info.hard.append(f"tl.{rest} at line {call.lineno}")
            info.findings.append((R_OP, call, q, f"Triton kernel `{fn.name}` calls `tl.{rest}`: Triton-Ascend supports it "
                                  f"for no dtype on Atlas A2/A3 ({op.doc}).", "express it with supported triton.language ops",
                                  None))
            continue
        dt = _kw(call, "dtype", _TILE_OPS.get(rest))
        dq = _tq(r, dt) if isinstance(dt, (nodes.Attribute, nodes.Name)) else None
        if dq and dq.startswith("triton.language."):
            col = ta.tl_dtypes.get(dq.rsplit(".", 1)[-1], (None, 0))[0]
            if col and col in op.unsupported and ta.dtype_rules.get(col, {"a2a3": True})["a2a3"] \
                    and col not in ("bool",):
                info.hard.append(f"tl.{rest}(dtype=tl.{dq.rsplit('.', 1)[-1]}) at line {call.lineno}")
                info.findings.append((R_DTYPE, call, q, f"Triton kernel `{fn.name}` calls `tl.{rest}` with dtype "
                                      f"{col}: the op does not support {col} on Atlas A2/A3 (supported: "
                                      f"{', '.join(op.supported)}; {op.doc}).", f"use one of {', '.join(op.supported)}",
                                      None))
        if op.params or op.unsupported_params:
            _params(info, call, q, op, fn)
        if rest == "arange":
            a = _kw(call, "start", 0)
            b = _kw(call, "end", 1)
            for env in envs:
                va, vb = _eval(a, env, r), _eval(b, env, r)
                if va is not None and vb is not None and vb - va > amax:
                    info.findings.append((R_ARANGE, call, q, f"`tl.arange({a.as_string()}, {b.as_string()})` in `{fn.name}` "
                                          f"spans {vb - va:,} elements{_env_text(env, base)}: Triton-Ascend allows at most "
                                          f"{amax:,} (end - start).", "tile the range in a loop of sub-ranges", None))
                    break
        if rest in _TILE_OPS:
            shape = _kw(call, "shape", 0)
            dtn = dq.rsplit(".", 1)[-1] if dq else None
            size = ta.tl_dtypes.get(dtn, (None, 0))[1] if dtn else 0
            if size and type(shape) in (nodes.Tuple, nodes.List) and shape.elts:
                for env in envs:
                    dims = [_eval(e, env, r) for e in shape.elts]
                    if None in dims:
                        continue
                    total = size
                    for d in dims:
                        total *= d
                    if total > ub and (worst_tile is None or total > worst_tile[0]):
                        worst_tile = (total, call, f"({', '.join(e.as_string() for e in shape.elts)}) x tl.{dtn}", env)
    if worst_tile is not None:
        total, call, what, env = worst_tile
        info.findings.append((R_UB, call, "triton.language." + (r.qualname(call.func) or "zeros").rsplit(".", 1)[-1],
                              f"Tile {what} in `{fn.name}` needs {total:,} bytes{_env_text(env, base)}: more than the "
                              f"{ub:,}-byte (192 KiB) unified buffer of an AI core ('ub overflow').",
                              ta.rules["unified_buffer"]["fix"], None))
    return info


def _constexpr_branch(node, fn, constexpr: List[str]) -> Optional[str]:
    """The test of the innermost ``if`` around *node* (inside *fn*) that reads a constexpr parameter."""
    if not constexpr:
        return None
    cur, parent = node, node.parent
    while parent is not None and parent is not fn:
        if isinstance(parent, nodes.If) and cur is not parent.test:
            names = {n.name for n in nodes_of(parent.test, nodes.Name)} if not isinstance(parent.test, nodes.Name) \
                else {parent.test.name}
            if names & set(constexpr):
                test = parent.test.as_string()
                return test if cur in parent.body else f"not ({test})"
        cur, parent = parent, parent.parent
    return None


def _flag_value(node, env: Dict[str, object]):
    """The value of a constexpr test under one launch's values (names, literals, not / and / or, comparisons with
    literals); None when it cannot be told."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Name):
        return env.get(node.name, _UNTOLD)
    if isinstance(node, nodes.UnaryOp) and node.op == "not":
        v = _flag_value(node.operand, env)
        return _UNTOLD if v is _UNTOLD else not v
    if isinstance(node, nodes.BoolOp):
        vals = [_flag_value(v, env) for v in node.values]
        if node.op == "and":
            if any(v is not _UNTOLD and not v for v in vals):
                return False
            return _UNTOLD if any(v is _UNTOLD for v in vals) else True
        if any(v is not _UNTOLD and v for v in vals):
            return True
        return _UNTOLD if any(v is _UNTOLD for v in vals) else False
    if isinstance(node, nodes.Compare) and len(node.ops) == 1:
        a, (op, rb) = _flag_value(node.left, env), node.ops[0]
        b = _flag_value(rb, env)
        if a is _UNTOLD or b is _UNTOLD:
            return _UNTOLD
        try:
            return {"==": a == b, "!=": a != b, "is": a is b, "is not": a is not b, "<": a < b, "<=": a <= b,
                    ">": a > b, ">=": a >= b}.get(op, _UNTOLD)
        except TypeError:
            return _UNTOLD
    return _UNTOLD


_UNTOLD = object()


def _not_compiled(node, fn, constexpr: List[str], launches) -> str:
    """Words when every launch of the kernel seen leaves *node*'s constexpr branches off (it is not compiled for
    any of them); "" otherwise (no launch known, or one that may compile it)."""
    if not launches or not constexpr:
        return ""
    cur, parent = node, node.parent
    tests = []
    while parent is not None and parent is not fn:
        names = {parent.test.name} if isinstance(parent, nodes.If) and isinstance(parent.test, nodes.Name) else \
            {n.name for n in nodes_of(parent.test, nodes.Name)} if isinstance(parent, nodes.If) else set()
        if isinstance(parent, nodes.If) and cur is not parent.test and names & set(constexpr):
            tests.append((parent.test, cur in parent.body))
        cur, parent = parent, parent.parent
    if not tests:
        return ""
    for env in launches:
        taken = True
        for test, in_body in tests:
            v = _flag_value(test, env)
            if v is _UNTOLD:
                return ""
            if bool(v) != in_body:
                taken = False
                break
        if taken:
            return ""
    shown = " and ".join(f"`{'' if b else 'not '}{t.as_string()}`" for t, b in tests[:2])
    return (f"It sits where {shown} holds, which none of the {len(launches)} launch(es) of the kernel seen turns on "
            "(constexpr values): it is not compiled for them, so it does not block the port.")


def _branch_text(branch: Optional[str]) -> str:
    if not branch:
        return ""
    return (f" It sits under `if {branch}`, a constexpr branch: only the launches that make it true compile it, "
            "so the kernel ports for the others.")


def _env_text(env: Dict[str, int], base: Dict[str, int]) -> str:
    shown = [f"{k}={v}" for k, v in env.items() if base.get(k) != v]
    return f" (with {', '.join(shown[:4])})" if shown else ""


def _dtype_use(node) -> str:
    p = node.parent
    if isinstance(p, nodes.Call) and isinstance(p.func, nodes.Attribute) and p.func.attrname == "to" and node in p.args:
        return " in `.to(...)`"
    if isinstance(p, nodes.Keyword) and p.arg == "dtype":
        return " as `dtype=`"
    return ""


def _params(info: KernelInfo, call: nodes.Call, q: str, op, fn) -> None:
    short = q.replace("triton.language.", "tl.")
    for k in call.keywords or ():
        spec = op.params.get(k.arg)
        if spec is not None and isinstance(k.value, nodes.Const) and isinstance(k.value.value, str) \
                and k.value.value not in spec["accepted"]:
            info.findings.append((R_PARAM, call, q, f"`{short}(..., {k.arg}={k.value.value!r})` in `{fn.name}`: Triton-Ascend "
                                  f"accepts {k.arg} = {' / '.join(repr(a) for a in spec['accepted'])} only on Atlas A2/A3; "
                                  f"{spec.get('note') or 'other values are treated as the default'} ({op.doc}).",
                                  f"drop {k.arg}= (the default {spec['accepted'][0]!r} is what runs)", None))
        elif k.arg in op.unsupported_params:
            info.findings.append((R_PARAM, call, q, f"`{short}(..., {k.arg}=...)` in `{fn.name}`: Triton-Ascend does not "
                                  f"support the parameter {k.arg} ({op.doc}).", f"drop {k.arg}=", None))


# --------------------------------------------------------------------------- the pass


def _summary(info: KernelInfo) -> Tuple[str, Tuple[str, ...], Tuple[str, ...], Tuple[Tuple[str, str], ...]]:
    return (info.qualname, tuple(info.hard), tuple(info.rewrites), tuple(sorted(info.callees)))


class TritonPass(Pass):
    name = "triton"
    rules = RULES

    VALID = (
        # host-side helpers of triton are not kernels
        "import triton\nBLOCK = triton.next_power_of_2(1000)\nn_blocks = triton.cdiv(4096, BLOCK)\n",
        # a capability test that does not choose a Triton kernel
        "import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    dtype = torch.bfloat16\n",
        "'''Mentions triton.jit and tl.float64 in a docstring only.'''\nimport torch\n",
        "import numpy as np\nfloat64 = np.float64\ngrid = (100000, 4)\n",
    )
    INVALID = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\n"
        "def add_kernel(x, y, n, BLOCK: tl.constexpr):  # expect: NPU506\n    pid = tl.program_id(0)\n\n"
        "add_kernel[(4,)](a, b, 8, BLOCK=1024)  # expect: NPU506\n",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef acc64(x, y, BLOCK: tl.constexpr):  # expect: NPU506\n"
        "    v = tl.load(x + tl.arange(0, BLOCK)).to(tl.float64)  # expect: NPU511\n    tl.store(y, tl.sum(v))\n",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef hist(x, out):  # expect: NPU506\n"
        "    tl.atomic_add(out + tl.load(x), 1, sem='relaxed')  # expect: NPU512\n",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef fast_tanh(x, y):  # expect: NPU506\n"
        "    v = tl.inline_asm_elementwise('tanh.approx.f32 $0, $1;', '=r,r', [tl.load(x)], dtype=tl.float32, is_pure=True, pack=1)  # expect: NPU513\n"
        "    tl.store(y, v)\n",
        "import triton\n\nconfigs = [triton.Config({'BLOCK': 128}, num_warps=4, num_stages=3)]  # expect: NPU514\n",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x, BLOCK: tl.constexpr):  # expect: NPU506\n"
        "    pass\n\nk[(100000,)](x, BLOCK=1024)  # expect: NPU506,NPU515\nk[(64, 64)](x, BLOCK=1024)  # expect: NPU506,NPU518\n",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef big(x, BLOCK: tl.constexpr):  # expect: NPU506\n"
        "    acc = tl.zeros((256, 256), dtype=tl.float32)  # expect: NPU516\n    offs = tl.arange(0, 2097152)  # expect: NPU517\n",
        "import triton\nDEVICE = triton.runtime.driver.active.get_active_torch_device()  # expect: NPU519\n",
    )

    # ------------------------------------------------------------------ project facts
    prescan_shape = Optional[Tuple[Tuple[str, Tuple[str, ...], Tuple[str, ...], Tuple[Tuple[str, str], ...]], ...]]

    def prescan(self, ctx: ModuleContext):
        if "triton" not in ctx.source.text:
            return None
        out = [_summary(i) for i in self._kernels(ctx)]
        return tuple(out) or None

    def combine(self, project: ProjectContext, prescans) -> None:
        kernels: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[Tuple[str, str], ...]]] = {}
        for _rel, data in prescans:
            for qual, hard, rewrites, callees in data or ():
                kernels[qual] = (hard, rewrites, callees)
        project.store[STORE_KEY] = _closure(kernels)

    def _graded(self, ctx: ModuleContext) -> Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]]:
        """qualname -> (violations that block, violations with an exact rewrite), own and of the jit helpers it
        calls, of every kernel of the project."""
        g = ctx.project.store.get(STORE_KEY)
        if g is None:   # direct callers without a prescan step: this module only
            g = _closure({i.qualname: _summary(i)[1:] for i in self._kernels(ctx)})
            ctx.project.store[STORE_KEY] = g
        return g  # type: ignore[return-value]

    def _kernels(self, ctx: ModuleContext) -> List[KernelInfo]:
        memo = ctx.cache.get("triton-kernels")
        if memo is not None:
            return memo  # type: ignore[return-value]
        r = ctx.resolver
        ta = triton_ascend(ctx.kb)
        wrapped = wrapped_kernels(ctx.tree, r) if "(" in ctx.source.text else set()
        fns = [fn for fn in nodes_of(ctx.tree, nodes.FunctionDef)
               if is_kernel(fn, r) or (fn.name in wrapped and isinstance(fn.parent, nodes.Module))]
        out: List[KernelInfo] = []
        if fns:
            mod_ints = _module_ints(ctx.tree)
            names = {fn.qname() for fn in fns}   # helpers of other modules: callees, resolved in combine
            launch_envs = self._launch_envs(ctx, fns)
            flags = self._launch_flags(ctx, fns)
            for fn in fns:
                envs = [e for _c, e in _configs(fn, r)] + launch_envs.get(fn.qname(), [])
                out.append(analyse_kernel(fn, r, ta, mod_ints, envs, names, flags.get(fn.qname())))
        ctx.cache["triton-kernels"] = out
        return out

    def _launch_flags(self, ctx, fns) -> Dict[str, List[Dict[str, object]]]:
        """kernel -> the constexpr values (literals, by keyword or position; else the parameter's literal default)
        of each of its launches in this module. A kernel launched with a value the module cannot read has none."""
        r = ctx.resolver
        by_q = {fn.qname(): fn for fn in fns}
        out: Dict[str, List[Dict[str, object]]] = {}
        bad: Set[str] = set()
        for call in nodes_of(ctx.tree, nodes.Call):
            if not isinstance(call.func, nodes.Subscript):
                continue
            kq = _kernel_name(call.func.value, r, ctx.source.modname)
            fn = by_q.get(kq)
            if fn is None:
                continue
            params = [a.name for a in fn.args.args or []]
            defaults = fn.args.defaults or []
            env: Dict[str, object] = {}
            for a, d in zip(params[len(params) - len(defaults):], defaults):
                if isinstance(d, nodes.Const):
                    env[a] = d.value
            if any(isinstance(a, nodes.Starred) for a in call.args) or any(k.arg is None for k in call.keywords or ()):
                bad.add(kq)
                continue
            for name, val in list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords or ()]:
                if isinstance(val, nodes.Const):
                    env[name] = val.value
                else:
                    env.pop(name, None)
            out.setdefault(kq, []).append(env)
        for kq in bad:
            out.pop(kq, None)
        return out

    def _launch_envs(self, ctx, fns) -> Dict[str, List[Dict[str, int]]]:
        r = ctx.resolver
        quals = {fn.qname() for fn in fns}
        out: Dict[str, List[Dict[str, int]]] = {}
        for call in nodes_of(ctx.tree, nodes.Call):
            if isinstance(call.func, nodes.Subscript):
                kq = _kernel_name(call.func.value, r, ctx.source.modname)
                if kq in quals:
                    env = {k.arg: v for k in call.keywords or () if k.arg and (v := _eval(k.value, {})) is not None}
                    if env:
                        out.setdefault(kq, []).append(env)
        return out

    # ------------------------------------------------------------------ findings
    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        text = ctx.source.text
        if "triton" not in text:
            # a module without the word can still launch a kernel it imports: look for a kernel name
            g = ctx.project.store.get(STORE_KEY)
            leaves = ctx.project.store.get(STORE_KEY + "-leaves")
            if leaves is None:
                names = set(g or ()) | set(project_scan(ctx.project).triton_kernels)
                leaves = ctx.project.store[STORE_KEY + "-leaves"] = tuple(sorted({q.rsplit(".", 1)[-1] for q in names}))
            if not any(leaf + "[" in text for leaf in leaves):   # a launch is `kernel[grid](...)`
                return
        r = ctx.resolver
        ta = triton_ascend(ctx.kb)
        graded = self._graded(ctx)
        infos = self._kernels(ctx)
        for info in infos:
            hard, rewrites = graded.get(info.qualname, (tuple(info.hard), tuple(info.rewrites)))
            yield self._grade(ctx, info.fn, info.qualname, hard, rewrites, line=_line(info.fn), at_def=True)
            for rule, node, api, msg, repl, sev in info.findings:
                yield ctx.finding(rule, node, api, msg, replacement=repl, severity=sev, evidence="knowledge")
        kernels = set(graded) | set(project_scan(ctx.project).triton_kernels)
        configs: Dict[int, List[Tuple[nodes.Call, List[str]]]] = {}
        for call in nodes_of(ctx.tree, nodes.Call):
            if isinstance(call.func, nodes.Subscript):
                kq = _kernel_name(call.func.value, r, ctx.source.modname)
                if kq and kq in kernels:
                    yield from self._launch(ctx, call, kq, graded.get(kq, ((), ())), ta)
                continue
            f = call.func
            fname = f.attrname if isinstance(f, nodes.Attribute) else f.name if isinstance(f, nodes.Name) else None
            if fname not in _HOST_CALLS:
                continue   # resolve only the names that can matter (a whole-file qualname sweep costs)
            q = _tq(r, f)
            if not q or not (q.startswith("triton") or q.startswith("torch.cuda")):
                continue
            if q in ("triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"):
                keys = [k.arg for k in call.keywords or () if k.arg in _CONFIG_KEYS]
                if keys:
                    configs.setdefault(id(call.statement()), []).append((call, keys))
            elif q in ("triton.autotune", "triton.runtime.autotuner.autotune"):
                g = _kw(call, "use_cuda_graph")
                if isinstance(g, nodes.Const) and g.value is True:
                    s = ta.config["use_cuda_graph"]
                    yield ctx.finding(R_TUNING, call, q, f"`triton.autotune(use_cuda_graph=True)`: {s['text']}",
                                      replacement=s["fix"], evidence="knowledge")
            elif q in _DEVICE_CALLS:
                rule = ta.rules["device_discovery"]
                yield ctx.finding(R_DEVICE, call, q, f"`{q}()` is GPU-only device discovery. {rule['text']}",
                                  replacement=rule["fix"], evidence="knowledge")
            elif q in _CAPABILITY_CALLS and self._chooses_kernel(call, r, kernels):
                rule = ta.rules["device_discovery"]
                yield ctx.finding(R_DEVICE, call, q, f"`{q}()` decides which Triton kernel runs: it reads the CUDA "
                                  "compute capability, which an Ascend host does not have. " + rule["text"],
                                  replacement=rule["fix"], evidence="knowledge")
        for group in configs.values():
            call0 = group[0][0]
            keys = sorted({k for _c, ks in group for k in ks})
            vals = {k: sorted({_kw(c, k).as_string() for c, ks in group if k in ks}) for k in keys}
            what = "; ".join(f"{k} = {', '.join(vals[k][:6])}: {ta.config[k]['text']}" for k in keys)
            n = len(group)
            yield ctx.finding(R_TUNING, call0, "triton.Config",
                              f"{n} triton.Config{'s' if n > 1 else ''} here set{'' if n > 1 else 's'} {', '.join(keys)}. "
                              f"{what}", replacement="; ".join(ta.config[k]["fix"] for k in keys),
                              evidence="knowledge", line=call0.lineno)

    def _grade(self, ctx, node, qual: str, hard: Tuple[str, ...], rewrites: Tuple[str, ...] = (), *,
               line: Optional[int] = None, at_def: bool = False, extra: str = "") -> Finding:
        name = qual.rsplit(".", 1)[-1]
        where = "Triton kernel" if at_def else "Launch of the Triton kernel"
        also = ""
        if rewrites:
            shown = "; ".join(rewrites[:5]) + (f"; and {len(rewrites) - 5} more" if len(rewrites) > 5 else "")
            also = (f" {len(rewrites)} element type(s) Atlas A2/A3 lacks, each with an exact documented rewrite "
                    f"(the data in a type the chip has; Ascend 950 has them): {shown}.")
        if hard:
            shown = "; ".join(hard[:5]) + (f"; and {len(hard) - 5} more" if len(hard) > 5 else "")
            msg = (f"{where} `{name}`: blocked on Ascend (Atlas A2/A3) by {len(hard)} hard violation(s) of the "
                   f"Triton-Ascend constraints: {shown}.{also}{extra} Fix those, then {PORT}.")
            return ctx.finding(R_KERNEL, node, f"triton-kernel:{qual}", msg, severity="blocker",
                               replacement="replace the named ops / dtypes (see the NPU510-NPU513 findings), then " + PORT,
                               evidence="knowledge", line=line)
        if rewrites:
            msg = (f"{where} `{name}`: no documented Triton-Ascend constraint blocks it, but it needs rewriting before it "
                   f"ports: {also.strip()}{extra} Rewrite those (see the NPU511 findings), then {PORT}.")
            return ctx.finding(R_KERNEL, node, f"triton-kernel:{qual}", msg, severity="manual",
                               replacement="widen the named element types to ones Atlas A2/A3 has (see the NPU511 "
                                           "findings), then " + PORT, evidence="knowledge", line=line)
        msg = (f"{where} `{name}`: {PORTS_AS_IS}, so it ports as it is -- {PORT}."
               f"{extra}")
        return ctx.finding(R_KERNEL, node, f"triton-kernel:{qual}", msg, severity="manual", replacement=PORT,
                           evidence="knowledge", line=line)

    def _launch(self, ctx, call: nodes.Call, kq: str, graded, ta: TritonAscend) -> Iterator[Finding]:
        hard, rewrites = graded
        r = ctx.resolver
        grid = call.func.slice
        dims = _grid_dims(grid, r)
        mod_ints = ctx.cache.get("triton-module-ints")
        if mod_ints is None:
            mod_ints = ctx.cache["triton-module-ints"] = _module_ints(ctx.tree)
        env = dict(mod_ints)
        env.update({k.arg: v for k in call.keywords or () if k.arg and (v := _eval(k.value, env, r)) is not None})
        _local_ints(call, r, env)
        extra = ""
        name = kq.rsplit(".", 1)[-1]
        if dims is not None and len(dims) > 1 and not all(isinstance(d, nodes.Const) and d.value == 1 for d in dims[1:]):
            extra = f" Its grid has {len(dims)} dimensions."
            rule = ta.rules["grid_1d"]
            yield ctx.finding(R_GRID_DIMS, call, f"triton-grid:{kq}",
                              f"Launch of `{name}` with a {len(dims)}-D grid ({', '.join(d.as_string() for d in dims)}): "
                              f"{rule['text']}", replacement=rule["fix"], evidence="knowledge")
        if dims is not None:
            vals = [_eval(d, env, r) for d in dims]
            if None not in vals:
                total = 1
                for v in vals:
                    total *= v
                limit = ta.limit("max_programs")
                if total > limit:
                    rule = ta.rules["max_programs"]
                    yield ctx.finding(R_GRID, call, f"triton-grid:{kq}",
                                      f"Launch of `{name}` with {total:,} programs: more than the {limit:,} (coreDim, "
                                      f"UINT16_MAX) an Ascend launch allows. {rule['text']}", replacement=rule["fix"],
                                      evidence="knowledge")
        ptr_hard: List[str] = []
        ptr_rewrites: List[str] = []
        for arg, col, dname, where in _pointer_dtypes(call, r, ta):
            rule = ta.dtype_rules[col]
            (ptr_hard if rule["blocks"] else ptr_rewrites).append(f"`{arg}` is torch.{dname} ({col}, line {where})")
            yield ctx.finding(R_DTYPE, call, f"torch.{dname}", f"Launch of `{name}` passes `{arg}`, a torch.{dname} tensor "
                              f"(line {where}): the kernel's pointer element type {col} is {_chip_text(rule)}. "
                              f"{rule['why']}.{_rewrite_text(rule)}", replacement=rule["fix"],
                              severity=_dtype_severity(rule), evidence="knowledge")
        hard = tuple(hard) + tuple(ptr_hard)
        rewrites = tuple(rewrites) + tuple(ptr_rewrites)
        keys = [k.arg for k in call.keywords or () if k.arg in _LAUNCH_KEYS]
        if keys:
            yield ctx.finding(R_TUNING, call, f"triton-launch:{kq}", f"Launch of `{name}` sets {', '.join(keys)}: "
                              + " ".join(ta.config[k]["text"] for k in keys),
                              replacement="; ".join(ta.config[k]["fix"] for k in keys), evidence="knowledge")
        yield self._grade(ctx, call, kq, hard, rewrites, extra=extra)

    @staticmethod
    def _chooses_kernel(call, r, kernels) -> bool:
        """The capability query sits in the test of an ``if`` whose branches launch or name a Triton kernel."""
        cur, parent = call, call.parent
        while parent is not None and not isinstance(parent, (nodes.FunctionDef, nodes.Module)):
            if isinstance(parent, (nodes.If, nodes.IfExp)) and cur is parent.test:
                body = parent.body if isinstance(parent.body, list) else [parent.body]
                orelse = parent.orelse if isinstance(parent.orelse, list) else [parent.orelse]
                for st in body + orelse:
                    for n in nodes_of(st, nodes.Name, nodes.Attribute) if not isinstance(st, (nodes.Name, nodes.Attribute)) else [st]:
                        if r.qualname(n) in kernels:
                            return True
                return False
            cur, parent = parent, parent.parent
        return False


def _pointer_dtypes(call: nodes.Call, r, ta: TritonAscend):
    """(argument, dtype column, torch dtype name, line) for each launch argument bound in the wrapper to a tensor
    made with a restricted ``dtype=`` (``y = torch.empty_like(x, dtype=torch.float8_e4m3fn)``) or ``.double()``."""
    out = []
    args = list(call.args) + [k.value for k in call.keywords or ()]
    for a in args:
        if not isinstance(a, nodes.Name):
            continue
        try:
            defs = own_bindings(a, a.name)
        except Exception:
            continue
        for d in defs:
            v = r.assigned_value(d) if isinstance(d, nodes.AssignName) else None
            if not isinstance(v, nodes.Call):
                continue
            dt = _kw(v, "dtype")
            dname = None
            if isinstance(dt, (nodes.Attribute, nodes.Name)):
                q = r.qualname(dt) or ""
                if q.startswith("torch."):
                    dname = q[6:]
            elif isinstance(v.func, nodes.Attribute) and v.func.attrname == "double" and not v.args:
                dname = "double"
            elif isinstance(v.func, nodes.Attribute) and v.func.attrname == "to" and v.args:
                q = r.qualname(v.args[0]) if isinstance(v.args[0], (nodes.Attribute, nodes.Name)) else None
                dname = q[6:] if q and q.startswith("torch.") else None
            col = ta.torch_dtypes.get(dname or "")
            rule = ta.dtype_rules.get(col or "")
            if rule is not None and not rule["a2a3"]:
                out.append((a.name, col, dname, v.lineno))
                break
    return out


def _kernel_name(node, r, modname: Optional[str]) -> Optional[str]:
    """The qualified name of the launched object; a module-level ``f = triton.jit(f)`` binding resolves to no
    import, so a plain name falls back to ``<module>.<name>``."""
    q = r.qualname(node)
    if q is None and isinstance(node, nodes.Name) and modname:
        q = f"{modname}.{node.name}"
    return q


def _grid_dims(grid, r, depth: int = 0):
    """The dimension expressions of a launch grid: a tuple / list, a lambda returning one, or a name bound to either."""
    if depth > 3:
        return None
    if type(grid) in (nodes.Tuple, nodes.List):
        return list(grid.elts)
    if isinstance(grid, nodes.Lambda):
        return _grid_dims(grid.body, r, depth + 1)
    if isinstance(grid, nodes.Name):
        try:
            defs = own_bindings(grid, grid.name)
        except Exception:
            return None
        vals = []
        for d in defs:
            if isinstance(d, nodes.AssignName):
                vals.append(r.assigned_value(d))
            elif isinstance(d, nodes.FunctionDef) and len(d.body) == 1 and isinstance(d.body[0], nodes.Return):
                vals.append(d.body[0].value)
        if len(vals) == 1 and vals[0] is not None:
            return _grid_dims(vals[0], r, depth + 1)
    return None


def _local_ints(call, r, env: Dict[str, int]) -> None:
    """Names of the launch's function bound once to an evaluable integer (n = 100000 * 1024)."""
    fn = call.scope()
    if not isinstance(fn, nodes.FunctionDef) and not isinstance(fn, nodes.Module):
        return
    body = fn.body if isinstance(fn, nodes.FunctionDef) else [s for s in fn.body if not isinstance(s, nodes.FunctionDef)]
    counts: Dict[str, int] = {}
    vals: Dict[str, nodes.NodeNG] = {}
    for st in body:
        if isinstance(st, nodes.Assign):
            for t in st.targets:
                if isinstance(t, nodes.AssignName):
                    counts[t.name] = counts.get(t.name, 0) + 1
                    vals[t.name] = st.value
    for name, v in vals.items():
        if counts[name] == 1:
            iv = _eval(v, env, r)
            if iv is not None:
                env[name] = iv


def _closure(kernels: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[Tuple[str, str], ...]]]
             ) -> Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]]:
    """qualname -> (own violations that block plus those of the jit helpers it calls, transitively; the same for
    the violations with an exact rewrite)."""
    out: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {}

    def visit(q: str, stack: Tuple[str, ...]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
        if q in out:
            return out[q]
        hard, rewrites, callees = kernels.get(q, ((), (), ()))
        acc, acc_rw = list(hard), list(rewrites)
        for c, branch in callees:
            if c in stack or c not in kernels:
                continue
            for mine, sub in zip((acc, acc_rw), visit(c, stack + (q,))):
                if sub:
                    mine.append(f"calls `{c.rsplit('.', 1)[-1]}`" + (f" under `if {branch}`" if branch else "")
                                + f" ({'; '.join(sub[:2])}{' ...' if len(sub) > 2 else ''})")
        out[q] = (tuple(acc), tuple(acc_rw))
        return out[q]

    for q in sorted(kernels):
        visit(q, ())
    return out
