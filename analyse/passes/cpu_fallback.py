"""CPU fallback ranking: aten ops the code reaches that have no NPU kernel for the target release (NPU304).

From each torch call (``torch.lgamma``, ``x.digamma()``, ``torch.linalg.eigh``, ``F.multi_margin_loss`` ...) the
aten op it dispatches to is named (``torch.X`` / ``Tensor.X`` / ``torch.nn.functional.X`` -> ``X``,
``torch.linalg.X`` -> ``linalg_X``, ``torch.special.X`` -> ``special_X``). An op is reported when it is a backend
op the knowledge base knows (op-plugin has a kernel for it in some torch version, or older op-plugin releases
routed it to the CPU: ``aten_kernels.json`` ``cpu_routed``) and op-plugin has no kernel for it in the target
torch version: in torch >= 2.1 such an op runs on the CPU with a warning (device-to-host copies each call; an
error with TORCH_NPU_FALLBACK_CPU_DISABLE=1). Ops PyTorch decomposes itself (``composite``) are left out.

One finding per op and report, at its first call site, counting every call site; ``finish`` also leaves the
ranking (most call sites first) in ``project.store['cpu_fallback']`` for the report's ``summary.cpu_fallback``.
"""

from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from astroid import nodes

from analyse.findings import Finding, Rule
from analyse.passes import ModuleContext, Pass, ProjectContext, in_log_or_docstring, nodes_of

R_FALLBACK = Rule(
    code="NPU304", name="cpu-fallback-op", category="performance-advice", severity="advice",
    summary="A torch call reaches an aten op with no NPU kernel for the target torch_npu release: it runs on the CPU.",
    why="op-plugin registers no NPU kernel for this aten op in the target torch version, so torch_npu runs it on the "
        "CPU (a warning, copies between device and host on every call; an error with TORCH_NPU_FALLBACK_CPU_DISABLE=1). "
        "In a training loop this is usually the slowest step.",
    example="y = torch.lgamma(x)",
    fix="Rewrite with ops that have NPU kernels (e.g. torch.special.gammaln -> a Stirling series in torch ops), or move "
        "the step to the CPU on purpose, once, outside the hot loop.",
)

PREFIXES = (("torch.nn.functional.", ""), ("torch.Tensor.", ""), ("torch.linalg.", "linalg_"),
            ("torch.special.", "special_"), ("torch.fft.", "fft_"), ("torch.", ""))
STORE_KEY = "cpu_fallback"


def aten_candidates(api: str) -> List[str]:
    for prefix, op_prefix in PREFIXES:
        if api.startswith(prefix):
            rest = api[len(prefix):]
            if "." in rest or not rest:
                return []
            out = [op_prefix + rest]
            if op_prefix == "special_":
                out.append(rest)
            return out
    return []


class CpuFallbackPass(Pass):
    name = "cpu-fallback"
    facts_shape = Dict[str, List[Tuple[int, str, int]]]   # aten op -> [(line, api, column)]
    rules = (R_FALLBACK,)
    VALID = (
        "import torch\ny = torch.exp(x) + torch.matmul(a, b)\n",
    )
    INVALID = (
        "import torch\ny = torch.lgamma(x)  # expect: NPU304\nz = torch.lgamma(y)\n",
        "import torch\nw = torch.linalg.eigh(m)  # expect: NPU304\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterable[Finding]:
        kb = ctx.kb
        hits: Dict[str, List[tuple]] = {}
        for call in nodes_of(ctx.tree, nodes.Call):
            api = ctx.resolver.call_target(call)
            if not api or not api.startswith("torch.") or in_log_or_docstring(call):
                continue
            op = next((o for o in aten_candidates(api) if o in kb.cpu_fallback_ops), None)
            if op is None:
                continue
            probe = ctx.project.probe
            if probe is not None and api in probe:
                continue  # a device run answered for this API (pass: it has a kernel; fallback: NPU303 says so)
            hits.setdefault(op, []).append((call.lineno, api, call.col_offset or 0))
        if hits:
            ctx.facts[self.name] = {op: sorted(v) for op, v in sorted(hits.items())}
        return ()

    def finish(self, project: ProjectContext) -> Iterator[Finding]:
        from analyse.findings import Finding as F

        sites: Dict[str, List[tuple]] = {}
        for rel, facts in project.facts.get(self.name, ()):
            for op, uses in facts.items():
                sites.setdefault(op, []).extend((rel, line, api, col) for line, api, col in uses)
        kb = project.kb
        ranking = []
        for op, uses in sorted(sites.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            files = sorted({u[0] for u in uses})
            why = "; ".join(kb.cpu_routed_ops.get(op, ())) or "op-plugin has kernels for it in other torch versions only"
            ranking.append({"op": op, "call_sites": len(uses), "files": len(files), "apis": sorted({u[2] for u in uses}),
                            "first": {"path": uses[0][0], "line": uses[0][1]}, "evidence": why})
            rel, line, api, col = uses[0]
            src = project.files.get(rel)
            snippet = src.line(line).rstrip() if src is not None and hasattr(src, "line") else ""
            more = f" {len(uses)} call sites in {len(files)} file(s) reach it." if len(uses) > 1 else ""
            yield F(code="NPU304", category=R_FALLBACK.category, severity=R_FALLBACK.severity, path=rel, line=line,
                    column=col, api=api,
                    message=f"`{api}` runs aten::{op}, which has no NPU kernel in op-plugin for torch "
                            f"{kb.torch_version} (torch_npu {kb.torch_npu_version}): it falls back to the CPU.{more} "
                            f"Evidence: {why}.",
                    replacement=None, confidence="medium", evidence="knowledge", snippet=snippet)
        project.store[STORE_KEY] = ranking


def ranking(project: ProjectContext) -> Optional[list]:
    return project.store.get(STORE_KEY)
