"""Edits of one Python file, each made from a finding's facts at its exact position.

The file is parsed with :mod:`ast` (never run); a finding's ``line`` / ``column`` names the node it is about,
and the node's end position gives the exact span to rewrite. Only the characters of that span change:
comments, formatting and line endings elsewhere are kept. What cannot be rewritten safely is a
:class:`~analyse.migrate.source.Left` with the reason (and, with ``--annotate``, one comment above its line).

Besides the findings, this module recognises three shapes itself (so the edits do not depend on a rule
being enabled): an integer device (``.to(0)``, ``.cuda(1)``, ``torch.device(0)``) and ``torch.load``
without ``map_location``. When a finding sits on the same node (whatever its code: a rule for integer devices
or for ``torch.load`` is used as soon as it exists) the edit is traced to it; otherwise the edit names the
check (``check``) that found it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from analyse.migrate.source import Edit, Left, SourceText, apply_edits, describe
from analyse.report import guard_place, off_by_default_why

# apex fused class -> (replacement, the parameters it takes): same meaning, same names
_OPT = ("params", "lr", "betas", "eps", "weight_decay", "amsgrad")
APEX_FUSED = {
    "FusedAdam": ("torch_npu.optim.NpuFusedAdamW", _OPT),
    "FusedSGD": ("torch_npu.optim.NpuFusedSGD", ("params", "lr", "momentum", "dampening", "weight_decay", "nesterov")),
    "FusedLayerNorm": ("torch.nn.LayerNorm", ("normalized_shape", "eps", "elementwise_affine")),
}
SHIM_LINES = ("import torch_npu", "from torch_npu.contrib import transfer_to_npu")
# the renames transfer_to_npu makes at run time; --strategy explicit writes them
RENAME_CODES = ("NPU001", "NPU002", "NPU003", "NPU101", "NPU106")
# environment variables of the CUDA launcher and of NCCL whose NPU twin is one name (the finding's fix): both
# strategies rename them where they are written as a literal; explicit also where only a non-default value
# reaches them (os.environ["CUDA_VISIBLE_DEVICES"] = opt.device: --device 1 must select NPU 1). CUDA_HOME and
# CUDA_PATH name a toolkit folder, not the device: left for the engineer.
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_NOT_RENAMED = frozenset(("CUDA_HOME", "CUDA_PATH"))


def env_rename(f: dict) -> Optional[str]:
    """The NPU name of an NPU007 (CUDA) or NPU105 (NCCL) environment variable, or None."""
    if f.get("code") not in ("NPU007", "NPU105"):
        return None
    api = str(f.get("api") or "")
    if api in _NOT_RENAMED or not _ENV_NAME.match(api):
        return None
    if f.get("code") == "NPU007":
        from analyse.passes.cuda_api import CUDA_ENV_VARS as table
    else:
        from analyse.passes.distributed import NCCL_ENV as table
    new = table.get(api)
    return new if new and _ENV_NAME.match(new) else None


# what the own checks look for (a file without it is not walked for them)
OWN_PATTERN = re.compile(rb"torch\.load\s*\(|\.(?:to|cuda)\(\s*\d|device\(\s*\d")
_STR_PREFIX = re.compile(r"^([rRuUfFbB]{0,2})('''|\"\"\"|'|\")")
_TORCH_CUDA = re.compile(r"\btorch\s*\.\s*cuda\b")


@dataclass
class Options:
    strategy: str = "shim"          # shim | explicit
    everything: bool = False        # --all
    annotate: bool = False
    feature_version: Tuple[int, int] = (3, 9)


@dataclass
class FileResult:
    path: str
    old: bytes
    new: Optional[bytes] = None
    edits: List[Edit] = field(default_factory=list)
    left: List[Left] = field(default_factory=list)
    refused: Optional[str] = None     # why the file was left unedited


def scope_reason(f: dict, opts: Options, *, rename: bool = False) -> Optional[str]:
    """Why a finding is not edited without ``--all`` (None: it is in scope)."""
    if opts.everything:
        return None
    role = f.get("role")
    if role and role != "product":
        return f"{role} file (off the product path): not edited without --all"
    reach = (f.get("reach") or {}).get("status")
    if reach == "unreached":
        return "no entry point reaches this line: not edited without --all"
    g = f.get("guard")
    if g and (g.get("on_path") or {}).get("transfer_to_npu") == "off" and not rename:
        # the report's words for the same place: off the path, not "a fallback"
        return off_by_default_why(g, f.get("path") or "") + ": not edited without --all"
    if g and g.get("fallback"):
        if rename:
            return None   # a CUDA name -> its NPU twin keeps the branch's meaning, and every branch must agree
        return (f"guarded by `{g.get('condition', g.get('kind'))}` ({guard_place(g, f.get('path') or '')}) with a fallback: "
                "not edited without --all")
    return None


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class PyFile:
    def __init__(self, path: str, raw: bytes, opts: Options, wanted=frozenset(), own_checks: bool = True) -> None:
        import io
        import tokenize

        self.path = path
        self.raw = raw
        self.opts = opts
        self.encoding = tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
        text = raw.decode(self.encoding)
        self.bom = text.startswith("\ufeff")
        self.src = SourceText(text)
        self.tree = ast.parse(text)
        self.nodes_at: Dict[Tuple[int, int], List[ast.AST]] = {}
        self.calls: List[ast.Call] = []
        self.wanted = wanted
        want_calls = own_checks and OWN_PATTERN.search(raw) is not None
        if wanted or want_calls:
            for node in ast.walk(self.tree):
                pos = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
                if pos in wanted:
                    self.nodes_at.setdefault(pos, []).append(node)
                if want_calls and isinstance(node, ast.Call):
                    self.calls.append(node)
        self.edits: List[Edit] = []
        self.left: List[Left] = []
        self.used: set = set()
        self.needs_torch_npu = False
        self.needs_math = False
        self.replaced_calls: List[Tuple[int, int]] = []
        self.file_in_scope = True   # the file's role admits edits found by the own checks

    def suppressed(self, lineno: int) -> bool:
        """An inline ``# npu-analyse: ignore`` comment on the line: the own checks leave it alone too."""
        return "npu-analyse: ignore" in self.src.line_text(lineno)

    # ------------------------------------------------------------------ helpers
    def span(self, node) -> Tuple[int, int]:
        return (self.src.offset(node.lineno, node.col_offset), self.src.offset(node.end_lineno, node.end_col_offset))

    def seg(self, node) -> str:
        a, b = self.span(node)
        return self.src.text[a:b]

    def at(self, f: dict, kinds) -> List[ast.AST]:
        return [n for n in self.nodes_at.get((int(f.get("line") or 0), int(f.get("column") or 0)), ()) if isinstance(n, kinds)]

    def attr_name_span(self, node: ast.Attribute) -> Tuple[int, int]:
        end = self.src.offset(node.end_lineno, node.end_col_offset)
        return end - len(node.attr), end

    def edit(self, start, end, new, f: Optional[dict], why, check=None) -> None:
        self.edits.append(Edit(start, end, new, f.get("code") if f else None, f.get("id") if f else None, why, check))

    def leave(self, f: dict, reason: str) -> None:
        self.left.append(Left(self.path, int(f.get("line") or 0), f.get("code"), f.get("id"), reason,
                              advice=_one_line(f.get("replacement") or f.get("message") or "")))

    def finding_on(self, node, findings: List[dict], test) -> Optional[dict]:
        for f in findings:
            if (int(f.get("line") or 0), int(f.get("column") or 0)) == (node.lineno, node.col_offset) and test(f):
                return f
        return None

    # ------------------------------------------------------------------ per rule
    def rename_torch_cuda(self, f: dict) -> bool:
        """NPU001: torch.cuda.X written as an attribute chain or imported from torch.cuda."""
        repl = (f.get("replacement") or "").strip()
        api = f.get("api") or ""
        if not re.fullmatch(r"torch(_npu)?\.[A-Za-z_][\w.]*", repl) or not api.startswith("torch.cuda"):
            self.leave(f, "no NPU name to write (the finding gives no `torch.npu` replacement)")
            return False
        for node in self.at(f, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 0 and (mod == "torch.cuda" or mod.startswith("torch.cuda.")):
                text = self.seg(node)
                m = re.search(r"\btorch\s*\.\s*cuda\b", text)
                if m:
                    a, _ = self.span(node)
                    self.edit(a + m.start(), a + m.end(), "torch_npu.npu", f,
                              f"`from {mod} import ...` -> `from torch_npu.npu{mod[len('torch.cuda'):]} import ...` "
                              "(torch_npu's module of the same names)")
                    self.needs_torch_npu = True
                    return True
        cands = [n for n in self.at(f, ast.Attribute)]
        # the chain whose dotted text is the API as written: torch.cuda.X.Y
        for node in sorted(cands, key=lambda n: (n.end_lineno, n.end_col_offset)):
            chain = _dotted(node)
            if chain is None:
                continue
            if chain == api or (chain.startswith("torch.cuda.") and api.startswith(chain)):
                expected = api.replace("torch.cuda", "torch.npu", 1)
                inner = node
                while isinstance(inner, ast.Attribute) and not (isinstance(inner.value, ast.Name) and inner.attr == "cuda"):
                    inner = inner.value
                if not isinstance(inner, ast.Attribute) or key_of(inner) in self.used:
                    continue
                self.used.add(key_of(inner))
                if repl == expected or repl.startswith(expected + "(") or chain != api:
                    a, b = self.attr_name_span(inner)
                    self.edit(a, b, "npu", f, f"`{api}` -> `{expected}`")
                else:
                    a, b = self.span(node)
                    self.edit(a, b, repl, f, f"`{api}` -> `{repl}` (torch_npu's replacement)")
                self.needs_torch_npu = True
                return True
        # a name imported from torch.cuda: the import is rewritten (its own finding)
        names = self.at(f, (ast.Name, ast.Attribute))
        root = names[0] if names else None
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and self._imported_from_torch_cuda(root.id):
            return True   # made by the import's edit
        self.leave(f, "written through a name this tool cannot rewrite safely (alias or indirect access)")
        return False

    def _imported_from_torch_cuda(self, name: str) -> bool:
        for node in self.tree.body if isinstance(self.tree, ast.Module) else ():
            for n in ast.walk(node):
                if isinstance(n, ast.ImportFrom) and n.level == 0 and (n.module or "").startswith("torch.cuda"):
                    if any((a.asname or a.name) == name for a in n.names):
                        return True
        return False

    def tensor_cuda(self, f: dict) -> bool:
        """NPU002: x.cuda(...) -> x.npu(...) (x.cuda(<int>) -> x.to("npu:<n>")), x.is_cuda -> x.is_npu."""
        cands = sorted((n for n in self.at(f, ast.Attribute) if n.attr in ("cuda", "is_cuda") and key_of(n) not in self.used),
                       key=lambda n: (n.end_lineno, n.end_col_offset))
        if not cands:
            self.leave(f, "the `.cuda` use is not written at the reported position")
            return False
        node = cands[0]
        self.used.add(key_of(node))
        a, b = self.attr_name_span(node)
        if node.attr == "is_cuda" and self.opts.strategy != "explicit":
            return False
        if node.attr == "is_cuda":
            self.edit(a, b, "is_npu", f, "`.is_cuda` -> `.is_npu`")
            return True
        call = next((c for c in self.nodes_at.get((node.lineno, node.col_offset), ())
                     if isinstance(c, ast.Call) and c.func is node), None)
        if isinstance(call, ast.Call) and call.func is node and call.args and _int_const(call.args[0]) is not None:
            n = _int_const(call.args[0])
            c0, c1 = self.span(call.args[0])
            self.edit(a, b, "to", f, f"`.cuda({n})` -> `.to(\"npu:{n}\")` (an explicit NPU device)")
            self.edit(c0, c1, f'"npu:{n}"', f, f"`.cuda({n})` -> `.to(\"npu:{n}\")` (an explicit NPU device)")
            self.used.add(("intdev",) + key_of(call))
            return True
        if self.opts.strategy != "explicit":
            return False
        if (f.get("api") or "").startswith("torch.nn.Module.") and isinstance(call, ast.Call) and call.func is node \
                and not call.args and not call.keywords:
            # the Ascend support list marks nn.Module.npu unsupported; Module.to("npu") is the supported spelling
            c1 = self.src.offset(call.end_lineno, call.end_col_offset)
            self.edit(a, c1, 'to("npu")', f, "`module.cuda()` -> `module.to(\"npu\")` (the support list documents "
                      "Module.to, not Module.npu)")
            return True
        self.edit(a, b, "npu", f, "`.cuda()` -> `.npu()`")
        return True

    def device_string(self, f: dict, old: str, new: str) -> bool:
        """NPU003 'cuda' -> 'npu', NPU101 'nccl' -> 'hccl', NPU007 CUDA_VISIBLE_DEVICES: the literal's text."""
        nodes = [n for n in self.at(f, (ast.Constant, ast.JoinedStr))
                 if not (isinstance(n, ast.Constant) and not isinstance(n.value, str))]
        for node in nodes:
            if key_of(node) in self.used:
                continue
            text = self.seg(node)
            m = _STR_PREFIX.match(text)
            if not m or not text[m.end():].startswith(old):
                continue
            if isinstance(node, ast.Constant) and not (node.value == old or node.value.startswith(old + ":")):
                continue
            a, _ = self.span(node)
            self.used.add(key_of(node))
            self.edit(a + m.end(), a + m.end() + len(old), new, f, f"'{old}' -> '{new}'")
            return True
        self.leave(f, f"the '{old}' value is not written as a literal at this position (it comes from elsewhere)")
        return False

    def _parents(self) -> Dict[int, ast.AST]:
        if not hasattr(self, "_parent_map"):
            self._parent_map = {id(c): p for p in ast.walk(self.tree) for c in ast.iter_child_nodes(p)}
        return self._parent_map

    def feeds_fused(self, node) -> Optional[str]:
        """How a device test switches on a fused (GPU-only) path, or None: its value, directly or through the
        names assigned from it in the same function, decides a ``fused=`` argument (``use_fused = ... and
        device_type == 'cuda'`` then ``dict(fused=True) if use_fused else dict()`` then ``AdamW(**extra_args)``)."""
        parents = self._parents()
        scope, stmt = node, None
        while id(scope) in parents and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt is None and isinstance(scope, ast.stmt):
                stmt = scope
            scope = parents[id(scope)]
        if stmt is None and isinstance(scope, ast.stmt):
            stmt = scope

        def names_in(expr) -> set:
            return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}

        def fused_kw(expr) -> Optional[ast.keyword]:
            return next((k for k in ast.walk(expr) if isinstance(k, ast.keyword) and k.arg == "fused"), None)

        tainted: set = set()
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            tainted = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        k = fused_kw(stmt) if stmt is not None else None
        if k is not None and any(c is node for c in ast.walk(k.value)):
            return f"it is the `fused=` argument itself (line {k.value.lineno})"
        assigns = [a for a in ast.walk(scope) if isinstance(a, ast.Assign)]
        for _ in range(4):   # names assigned from names assigned from the test
            more = {n.id for a in assigns if names_in(a.value) & tainted for t in a.targets for n in ast.walk(t)
                    if isinstance(n, ast.Name)}
            if more <= tainted:
                break
            tainted |= more
        if not tainted:
            return None
        for sub in ast.walk(scope):
            if isinstance(sub, ast.keyword) and sub.arg == "fused" and names_in(sub.value) & tainted:
                return f"`{', '.join(sorted(names_in(sub.value) & tainted))}` decides `fused=` (line {sub.value.lineno})"
            if isinstance(sub, (ast.IfExp, ast.If)) and names_in(sub.test) & tainted:
                body = [sub.body] if isinstance(sub, ast.IfExp) else sub.body
                for part in body:
                    k = fused_kw(part)
                    if k is not None and isinstance(k.value, ast.Constant) and k.value.value is True:
                        return (f"`{', '.join(sorted(names_in(sub.test) & tainted))}` switches on `fused=True` "
                                f"(line {k.value.lineno})")
        return None

    def device_check(self, f: dict) -> bool:
        """NPU004 (explicit): the 'cuda' literal a device test compares with -> 'npu' (device strings are 'npu' now),
        unless the test switches on a fused (GPU-only) path: then the original stays, with the reason."""
        for node in self.at(f, ast.expr):
            fused = self.feeds_fused(node)
            if fused is not None:
                self.leave(f, f"kept as 'cuda': renaming this device test would switch on a fused path on the NPU "
                              f"({fused}); fused optimizers there are torch_npu's own (NPU710) and fused AdamW does "
                              "not take a GradScaler's arguments, so the CUDA-only branch stays off")
                return False
            lits = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    and (n.value == "cuda" or n.value.startswith("cuda:")) and key_of(n) not in self.used]
            if len(lits) == 1:
                lit = lits[0]
                text = self.seg(lit)
                m = _STR_PREFIX.match(text)
                if m and text[m.end():].startswith("cuda"):
                    a, _ = self.span(lit)
                    self.used.add(key_of(lit))
                    self.edit(a + m.end(), a + m.end() + 4, "npu", f, "device test: 'cuda' -> 'npu' (the device "
                              "strings are 'npu' after the explicit migration)")
                    return True
        self.leave(f, "a device test whose CUDA literal is not found at this position")
        return False

    def nccl_api(self, f: dict) -> bool:
        """NPU106: is_nccl_available -> is_hccl_available, Backend.NCCL -> Backend.HCCL."""
        for node in sorted(self.at(f, ast.Attribute), key=lambda n: (n.end_lineno, n.end_col_offset)):
            if node.attr in ("is_nccl_available", "NCCL") and key_of(node) not in self.used:
                self.used.add(key_of(node))
                a, b = self.attr_name_span(node)
                new = "is_hccl_available" if node.attr == "is_nccl_available" else "HCCL"
                self.edit(a, b, new, f, f"`{node.attr}` -> `{new}`")
                self.needs_torch_npu = True
                return True
        self.leave(f, "no NCCL name with an HCCL twin at this position")
        return False

    def attention(self, f: dict) -> bool:
        """NPU403: the flash-attn / xFormers call -> torch_npu.npu_fusion_attention(...)[0] (the finding's mapping)."""
        repl = f.get("replacement") or ""
        calls = self.at(f, ast.Call)
        if not calls:
            self.leave(f, "the attention call is not at the reported position")
            return False
        call = calls[0]
        q = call.args[0] if call.args else None
        if q is not None:
            repl = repl.replace("device='npu'", f"device={self.seg(q)}.device")
        try:
            ast.parse(repl, mode="eval")
        except SyntaxError:
            self.leave(f, "the argument mapping is not complete (an argument needs a value only you can give)")
            return False
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            self.leave(f, "the call passes *args / **kwargs: its arguments cannot be mapped")
            return False
        dropped = [k.arg for k in call.keywords if k.arg in ("window_size", "alibi_slopes", "return_attn_probs",
                                                             "return_softmax_lse", "softcap", "block_table")]
        if dropped:
            self.leave(f, f"`{', '.join(dropped)}` has no one-to-one NPU argument: the call is left for you")
            return False
        a, b = self.span(call)
        self.replaced_calls.append((a, b))
        self.edit(a, b, repl, f, "CUDA attention kernel -> torch_npu.npu_fusion_attention: " + _one_line(f.get("message", ""), 400))
        self.needs_torch_npu = True
        self.needs_math = self.needs_math or "math." in repl
        return True

    def drop_replaced_import(self, f: dict) -> bool:
        """NPU401 on ``from flash_attn import X`` / ``import apex``: once every use of the names it binds was
        replaced (NPU403 attention calls, apex fused classes), the import is commented out (it would fail on an
        NPU host)."""
        stmts = [n for n in self.at(f, (ast.Import, ast.ImportFrom))]
        if not stmts or not self.replaced_calls:
            return False
        stmt = stmts[0]
        names = {(a.asname or a.name.split(".")[0]) for a in stmt.names}
        if "*" in names:
            return False
        spans = self.replaced_calls
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id in names:
                a, _ = self.span(node)
                if not any(s0 <= a < s1 for s0, s1 in spans):
                    return False
        parent = next((n for n in ast.walk(self.tree) if any(stmt is c for c in ast.iter_child_nodes(n))), None)
        body = next((getattr(parent, fld) for fld in ("body", "orelse", "finalbody", "handlers")
                     if stmt in (getattr(parent, fld, None) or ())), [])
        if stmt.lineno != stmt.end_lineno or any(o is not stmt and (o.lineno == stmt.lineno or o.end_lineno == stmt.lineno)
                                                 for o in body):
            return False
        a = self.src.line_start(stmt.lineno)
        line = self.src.line_text(stmt.lineno)
        indent = self.src.indent_of(stmt.lineno)
        note = f"# {line.strip()}  # {f.get('code')} (npu-analyse migrate): every use rewritten for the NPU"
        new = f"{indent}{note}" if len(body) > 1 else f"{indent}pass  {note[2:]}"
        self.edit(a, a + len(line), new, f, "the GPU-only import is no longer used: commented out")
        return True

    def apex_fused(self, f: dict) -> bool:
        """NPU402 on an apex fused optimizer / norm call -> torch_npu.optim.NpuFused* / torch.nn.LayerNorm.

        Only when every keyword the call passes exists on the replacement (the argument lists are the same
        otherwise): an apex-only option (bias_correction, set_grad_none, ...) leaves the call for you."""
        api = f.get("api") or ""
        leaf = api.rsplit(".", 1)[-1]
        target = APEX_FUSED.get(leaf) if api.startswith("apex.") else None
        calls = [c for c in self.at(f, ast.Call)]
        if target is None or not calls:
            self.leave(f, _left_reason(f))
            return False
        call = calls[0]
        kws = {k.arg for k in call.keywords}
        name, allowed = target
        if leaf == "FusedAdam":
            mode = next((k.value for k in call.keywords if k.arg == "adam_w_mode"), None)
            if mode is not None and not isinstance(mode, ast.Constant):
                self.leave(f, "adam_w_mode is not a constant: NpuFusedAdam or NpuFusedAdamW is your choice")
                return False
            name = "torch_npu.optim.NpuFusedAdam" if mode is not None and mode.value is False else "torch_npu.optim.NpuFusedAdamW"
            kws.discard("adam_w_mode")
        extra = sorted(k for k in kws if k is None or k not in allowed)
        if extra or any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(allowed):
            self.leave(f, f"`{leaf}` is called with {', '.join(str(k) if k else '**kwargs' for k in extra) or 'positional options'}"
                          f" that `{name}` does not take: left for you")
            return False
        a, b = self.span(call.func)
        self.edit(a, b, name, f, f"apex `{leaf}` (CUDA kernels) -> `{name}` (same arguments)")
        for k in call.keywords:
            if k.arg == "adam_w_mode":
                # drop `, adam_w_mode=...` (the choice of class carries it)
                k0 = self.src.offset(k.lineno, k.col_offset)
                k1 = self.src.offset(k.value.end_lineno, k.value.end_col_offset)
                text = self.src.text
                j = k0
                while j > 0 and text[j - 1] in " \t\r\n":
                    j -= 1
                if j > 0 and text[j - 1] == ",":
                    self.edit(j - 1, k1, "", f, "adam_w_mode is carried by the class chosen")
                else:
                    e = k1
                    while e < len(text) and text[e] in " \t":
                        e += 1
                    if e < len(text) and text[e] == ",":
                        e += 1
                    self.edit(k0, e, "", f, "adam_w_mode is carried by the class chosen")
        self.replaced_calls.append((a, b))
        self.needs_torch_npu = self.needs_torch_npu or name.startswith("torch_npu")
        return True

    # ------------------------------------------------------------------ own checks
    def own_checks(self, findings: List[dict], in_scope) -> None:
        """Integer devices and torch.load without map_location (traced to a finding on the node when one exists)."""
        for node in self.calls:
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr == "to" and node.args and _int_const(node.args[0]) is not None \
                    and not any(k.arg in ("device",) for k in node.keywords):
                n = _int_const(node.args[0])
                f = self.finding_on(node, findings, lambda f: f.get("code") not in ("NPU002", "NPU003")
                                    and "to" in (f.get("api") or "")) or self.finding_on(fn, findings, lambda f: f.get("code") not in ("NPU002",))
                if not self._own_in_scope(f, in_scope) or ("intdev",) + key_of(node) in self.used \
                        or self.suppressed(node.lineno):
                    continue
                self.used.add(("intdev",) + key_of(node))
                c0, c1 = self.span(node.args[0])
                self.edit(c0, c1, f'"npu:{n}"', f, f"`.to({n})` -> `.to(\"npu:{n}\")`: an integer device means a CUDA "
                          "device; the NPU is named explicitly", check=None if f else "integer-device")
            elif _dotted(fn) in ("torch.device",) and len(node.args) == 1 and _int_const(node.args[0]) is not None:
                n = _int_const(node.args[0])
                f = self.finding_on(node, findings, lambda f: "device" in (f.get("api") or ""))
                if not self._own_in_scope(f, in_scope) or self.suppressed(node.lineno):
                    continue
                c0, c1 = self.span(node.args[0])
                self.edit(c0, c1, f'"npu:{n}"', f, f"`torch.device({n})` -> `torch.device(\"npu:{n}\")`",
                          check=None if f else "integer-device")
            elif _dotted(fn) == "torch.load" and len(node.args) < 2 and node.args \
                    and not any(k.arg in ("map_location", None) for k in node.keywords):
                f = self.finding_on(node, findings, lambda f: (f.get("api") or "") == "torch.load")
                if not self._own_in_scope(f, in_scope) or self.suppressed(node.lineno):
                    continue
                last = max([*node.args, *[k.value for k in node.keywords]], key=lambda n: (n.end_lineno, n.end_col_offset))
                end = self.src.offset(last.end_lineno, last.end_col_offset)
                loc = '"npu"' if self.opts.strategy == "explicit" else '"cpu"'
                self.edit(end, end, f", map_location={loc}", f,
                          f"`torch.load` without map_location restores tensors on the device they were saved from "
                          f"(a CUDA checkpoint fails on an NPU host): map_location={loc}",
                          check=None if f else "torch-load-map-location")

    def _own_in_scope(self, f: Optional[dict], in_scope) -> bool:
        if f is not None:
            return in_scope(f)
        return self.file_in_scope

    # ------------------------------------------------------------------ imports at the top
    def top_insert(self) -> Tuple[int, str]:
        """(offset, indentation) where module-level imports go: after the docstring and __future__ imports."""
        body = self.tree.body
        i = 0
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            i = 1
        while i < len(body) and isinstance(body[i], ast.ImportFrom) and body[i].module == "__future__":
            i += 1
        if i < len(body):
            first = body[i]
            prev = body[i - 1] if i else None
            if prev is not None and prev.end_lineno >= first.lineno:
                return -1, ""
            return self.src.line_start(first.lineno), ""
        if body:
            last = body[-1]
            return self.src.line_start(last.end_lineno + 1) if last.end_lineno < len(self.src.starts) else -2, ""
        return 0, ""

    def has_import(self, line: str) -> bool:
        for node in self.tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and " ".join(self.seg(node).split()) == line:
                return True
            if line == "import torch_npu" and isinstance(node, ast.Import) and any(a.name == "torch_npu" and not a.asname
                                                                                   for a in node.names):
                return True
        return False

    def add_imports(self, lines: List[str], why: str, code: Optional[str] = None) -> None:
        added = {ln for e in self.edits if e.check == "imports" for ln in e.new.splitlines()}
        missing = [ln for ln in lines if not self.has_import(ln) and ln not in added]
        if not missing:
            return
        off, _ = self.top_insert()
        nl = self.src.newline
        if off == -1:
            self.left.append(Left(self.path, 1, code, None, "the module's first statement shares a line with the "
                                  "docstring: add `" + "; ".join(missing) + "` by hand"))
            return
        text = nl.join(missing) + nl
        if off == -2:
            off = len(self.src.text)
            if not self.src.text.endswith(("\n", "\r")):
                text = nl + text
        if off == 0 and self.bom:
            off = 1
        self.edits.append(Edit(off, off, text, code, None, why, check="imports"))

    def annotate(self, left: Left) -> None:
        """One comment above the statement that holds the line: the rule code and the advice."""
        stmt = None
        for node in ast.walk(self.tree):
            if isinstance(node, ast.stmt) and node.lineno <= left.line <= node.end_lineno:
                if stmt is None or node.lineno >= stmt.lineno:
                    stmt = node
        lineno = stmt.lineno if stmt is not None else left.line
        comment = annotation(left)
        if self.src.line_text(lineno - 1).strip() == comment or any(
                e.new.strip() == comment and e.start == self.src.line_start(lineno) for e in self.edits):
            left.annotated = True
            return
        indent = self.src.indent_of(lineno)
        off = self.src.line_start(lineno)
        self.edits.append(Edit(off, off, f"{indent}{comment}{self.src.newline}", left.code, left.finding,
                               "annotation: " + left.reason, check="annotate"))
        left.annotated = True


def annotation(left: Left) -> str:
    advice = left.advice or left.reason
    return f"# {left.code or 'npu'} (npu-analyse migrate): {_one_line(advice, 200)}"


def key_of(node) -> Tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _dotted(node) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _int_const(node) -> Optional[int]:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value
    return None


def parses(text: str, feature_version: Tuple[int, int]) -> Optional[str]:
    """None when *text* parses for that Python version, else the error."""
    try:
        ast.parse(text, feature_version=feature_version)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:
        return str(exc)
    return None


def needs_parse(findings: List[dict], opts: Options, raw: bytes, entry: bool) -> bool:
    """Whether a Python file can have an edit or a finding left for the engineer (else it is not parsed)."""
    if entry or OWN_PATTERN.search(raw) is not None:
        return True
    explicit = opts.strategy == "explicit"
    return any(f.get("severity") in ("blocker", "manual") or (explicit and f.get("severity") == "auto") for f in findings)


def migrate_python(path: str, raw: bytes, findings: List[dict], opts: Options, *, entry: bool,
                   file_in_scope: bool = True) -> FileResult:
    """All edits of one Python file (findings of that file; *entry*: it is an entry point in scope)."""
    res = FileResult(path=path, old=raw)
    wanted = frozenset((int(f.get("line") or 0), int(f.get("column") or 0)) for f in findings)
    try:
        pf = PyFile(path, raw, opts, wanted)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError) as exc:
        for f in findings:
            if f.get("severity") in ("blocker", "manual") or (opts.strategy == "explicit" and f.get("severity") == "auto"):
                res.left.append(Left(path, int(f.get("line") or 0), f.get("code"), f.get("id"),
                                     f"the file cannot be parsed here ({type(exc).__name__}): not edited"))
        return res
    pf.file_in_scope = file_in_scope or opts.everything
    explicit = opts.strategy == "explicit"

    def in_scope(f, rename=False):
        return scope_reason(f, opts, rename=rename) is None

    for f in sorted(findings, key=lambda f: (int(f.get("line") or 0), int(f.get("column") or 0), f.get("code") or "")):
        code, sev = f.get("code"), f.get("severity")
        env_new = env_rename(f)
        rename = code in RENAME_CODES or code == "NPU004" or env_new is not None
        reason = scope_reason(f, opts, rename=rename and explicit)
        if code == "NPU002":   # .cuda(<int>) is written in both strategies; the rest only in explicit
            if reason is None:
                pf.tensor_cuda(f)
            continue
        if code in RENAME_CODES and sev == "auto" and not explicit:
            continue   # transfer_to_npu makes it at run time
        if reason is not None:
            if sev in ("blocker", "manual") or (explicit and sev == "auto"):
                pf.leave(f, reason)
            continue
        if code == "NPU001":
            if sev == "auto" or explicit or f.get("replacement", "").startswith("torch.npu."):
                pf.rename_torch_cuda(f)
            elif sev in ("blocker", "manual"):
                pf.leave(f, "transfer_to_npu does not handle it and it has no one-to-one NPU name")
        elif code == "NPU003":
            pf.device_string(f, "cuda", "npu")
        elif code == "NPU004":
            if explicit:
                pf.device_check(f)
            else:
                pf.leave(f, "a test of the device type: with the shim, device strings stay 'cuda' in the code while "
                            "tensors live on 'npu', so this test needs your judgement (--strategy explicit rewrites it)")
        elif code == "NPU101":
            pf.device_string(f, "nccl", "hccl")
        elif code == "NPU106":
            pf.nccl_api(f)
        elif env_new is not None:   # CUDA_VISIBLE_DEVICES -> ASCEND_RT_VISIBLE_DEVICES, NCCL_* -> HCCL_*
            pf.device_string(f, str(f.get("api")), env_new)
        elif code == "NPU403":
            pf.attention(f)
        elif code == "NPU402" and (f.get("api") or "").rsplit(".", 1)[-1] in APEX_FUSED:
            pf.apex_fused(f)
        elif code == "NPU103":   # the report's words: not supported on Ascend NPUs, move to DDP
            pf.leave(f, f"{first_sentence(f)} No one-to-one edit: move to DistributedDataParallel with one "
                        "process per NPU (torchrun)")
        elif sev in ("blocker", "manual") or (explicit and sev == "auto"):
            pf.leave(f, _left_reason(f))
    for f in findings:
        if f.get("code") == "NPU401" and scope_reason(f, opts) is None and pf.drop_replaced_import(f):
            pf.left = [x for x in pf.left if x.finding != f.get("id")]
    pf.own_checks(findings, in_scope)
    if entry and not explicit:
        pf.add_imports(list(SHIM_LINES), "shim: torch_npu and transfer_to_npu, which rewrites CUDA calls to NPU "
                                         "at run time, imported first in the entry point")
    if explicit and (pf.edits or entry):
        pf.needs_torch_npu = True
    if pf.needs_torch_npu or pf.needs_math:
        lines = (["import math"] if pf.needs_math else []) + (["import torch_npu"] if pf.needs_torch_npu else [])
        pf.add_imports(lines, "the NPU names written here need torch_npu imported" if pf.needs_torch_npu
                       else "math is used by the rewritten call")
    if opts.annotate:
        for left in pf.left:
            if left.line >= 1 and not left.reason.endswith("without --all"):
                pf.annotate(left)
    res.left = pf.left
    if not pf.edits:
        return res
    new_text, dropped = apply_edits(pf.src.text, pf.edits)
    for e in dropped:
        pf.edits.remove(e)
    if new_text == pf.src.text:
        return res
    problem = parses(new_text, opts.feature_version)
    if problem is not None and parses(pf.src.text, opts.feature_version) is not None:
        problem = _parses_current(new_text)   # the original needs a newer grammar: the current one judges
    if problem is not None:
        res.refused = f"the edited file would not parse ({problem}): left unedited"
        for e in pf.edits:
            if e.check != "annotate":
                res.left.append(Left(path, pf.src.line_of(e.start), e.code, e.finding, res.refused))
        return res
    describe(pf.src, new_text, pf.edits)
    res.edits = pf.edits
    res.new = new_text.encode(pf.encoding)
    return res


def _parses_current(text: str) -> Optional[str]:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    return None


_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)", re.S)


def first_sentence(f: dict) -> str:
    """The first sentence of the finding's message: what the report says about the place, which migrate repeats
    when it leaves the place (script and migrate tell one story)."""
    msg = " ".join(str(f.get("message") or "").split())
    m = _SENTENCE.match(msg)
    return (m.group(1) if m else msg).strip()


def _left_reason(f: dict) -> str:
    code = f.get("code") or ""
    if code.startswith("NPU5"):
        why = "custom CUDA code (kernel, extension or custom op): needs an NPU implementation, never rewritten"
    elif code in ("NPU401", "NPU402", "NPU404"):
        why = "a GPU-only library: no safe one-to-one rewrite of this use"
    elif code in ("NPU201", "NPU203", "NPU302"):
        why = "an API (or argument) that is not supported on NPU and has no one-to-one replacement"
    else:
        why = "no safe automatic edit for this finding"
    said = first_sentence(f)
    return f"{said} ({why})" if said else why
