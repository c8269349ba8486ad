"""``npu-analyse explain NAME``: what the knowledge base says about one API or library name.

For a torch API: the status in every torch version of the knowledge base side by side (one
table), what transfer_to_npu does with it, the structured limitation checks and the remaining
limitation text (plain text, English where the docs have it), CUDA-only facts. For a
third-party name (flash-attn, xFormers, apex, bitsandbytes, DeepSpeed ops, Triton ...): the
library entry and its NPU replacement. Unknown names are said to be unknown (exit status 1).
"""

from __future__ import annotations

import difflib
from typing import List, Optional, Tuple

from analyse.knowledge import DEFAULT_TORCH_VERSION, TORCH_VERSIONS, load_knowledge
from analyse.knowledge.markdown import to_plain

__all__ = ["explain", "explain_name"]

_STATUS_SHORT = {"supported": "supported", "limited": "limited", "unsupported": "UNSUPPORTED", "unverified": "unverified"}


def _table(rows: List[List[str]], header: List[str]) -> List[str]:
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    out = [fmt.format(*header).rstrip(), fmt.format(*["-" * w for w in widths]).rstrip()]
    out += [fmt.format(*r).rstrip() for r in rows]
    return ["  " + x for x in out]


def _indent(text: str, pad: str = "      ") -> List[str]:
    return [pad + ln for ln in text.splitlines() if ln.strip()]


def _check_line(c) -> str:
    parts = [c["kind"]]
    if c.get("param"):
        parts.append(f"param={c['param']}")
    if c.get("position") is not None and c.get("position", -1) >= 0:
        parts.append(f"position={c['position']}")
    if "default" in c:
        parts.append(f"default={c['default']!r}")
    for k in ("allowed", "forbidden"):
        if c.get(k):
            vals = [v["name"] if isinstance(v, dict) else repr(v) if not isinstance(v, str) or c["kind"] != "dtype" else v for v in c[k]]
            parts.append(f"{k}=[{', '.join(vals)}]")
    for k in ("min", "max"):
        if c.get(k) is not None:
            parts.append(f"{k}={c[k]}")
    return f"{c['text']}   [{'; '.join(parts)}]"


def _third_party(name: str, kb) -> Optional[List[str]]:
    from analyse.passes._libtable import lib_table

    table = lib_table(kb)
    hit = table.match(name)
    op = table.mmcv_op(name)
    if hit is None and op is None:
        return None
    lines: List[str] = []
    if hit is not None:
        e, prefix = hit
        lines += [f"{name}  (third-party: {e.library})",
                  f"  on NPU:       {e.severity} -- {e.reason}",
                  f"  instead:      {e.replacement}"]
        for k, v in e.params:
            lines.append(f"    {k}: {v}")
        lines.append(f"  evidence:     {e.evidence}; source: {e.source} (entry {e.id}, matched {prefix})")
    if op is not None:
        lines += [f"{name}  (mmcv op {op.op})",
                  f"  on NPU:       {'supported' if op.npu else 'not supported'} (Ascend MMCV op list)"]
        if op.constraints:
            lines.append(f"  constraints:  {op.constraints}")
    return lines


def _normalise(api: str) -> str:
    api = api.strip()
    if api.startswith("Tensor."):
        return "torch." + api
    return api


def explain_name(name: str, torch_version: Optional[str] = None) -> Tuple[str, int]:
    """(text, exit status): 0 when the knowledge base knows the name, 1 when it does not."""
    name = _normalise(name)
    focus = torch_version or DEFAULT_TORCH_VERSION
    kbs = [load_knowledge(v) for v in TORCH_VERSIONS]
    kb = load_knowledge(focus)

    if name == "triton" or name.startswith(("triton.", "tl.")):   # Triton-Ascend facts (data/triton_ascend.yaml)
        from analyse.knowledge.triton_ascend import explain_lines

        lines = explain_lines(name, kb)
        if lines is not None:
            return "\n".join(lines), 0
    if not name.startswith(("torch.", "aten::")) and name != "torch":
        lines = _third_party(name, kb)
        if lines is not None:
            return "\n".join(lines), 0
        # a torch name written without the prefix (nn.GRU, cuda.set_device)?
        if any(k.is_documented("torch." + name) for k in kbs):
            name = "torch." + name
        else:
            return (f"{name}: unknown to the npu-analyse knowledge base (neither a torch API documented by the Ascend "
                    f"support lists for torch {', '.join(TORCH_VERSIONS)} nor a known GPU-only library). "
                    f"Probe torch APIs on a device with `npu-analyse probe`."), 1

    infos = [(k, k.api(name)) for k in kbs]
    fact = kb.cuda_only(name)
    is_cuda = name.startswith("torch.cuda")
    known = any(i is not None for _k, i in infos) or fact is not None or is_cuda or name in kb.device_rewrite_functions
    if not known:
        close = difflib.get_close_matches(name, sorted(kb.documented_names()), n=3, cutoff=0.8)
        msg = (f"{name}: unknown to the npu-analyse knowledge base: no Ascend support list for torch "
               f"{', '.join(TORCH_VERSIONS)} documents it (unverified on NPU; probe it with `npu-analyse probe`).")
        if close:
            msg += f"\n  did you mean: {', '.join(close)}"
        return msg, 1

    lines = [f"{name}  (status per torch version; details for torch {focus})"]
    rows = []
    for k, info in infos:
        status = k.api_status(name)
        note = ""
        if info is not None and info.checks:
            note = f"{len(info.checks)} check(s)"
        if info is not None and info.hardware:
            no = [p for p, ok in info.hardware.items() if not ok]
            if no:
                note += (", " if note else "") + "not on " + ", ".join(no)
        mark = "*" if k.torch_version == focus else ""
        rows.append([k.torch_version + mark, k.torch_npu_version, _STATUS_SHORT[status], note])
    lines += _table(rows, ["torch", "torch_npu", "status", "notes"])

    info = kb.api(name)
    if info is not None:
        if info.checks:
            lines.append("  limitations checked at each call (a hit is NPU203, manual):")
            for c in info.checks:
                lines.append("    - " + _check_line(c))
        rest = info.remainder_text() if info.checks else (info.limitations or "")
        if rest:
            lines.append("  limitations (text):")
            lines += _indent(to_plain(rest))
        if info.note:
            lines.append("  note:")
            lines += _indent(to_plain(info.note))
        if info.english and info.english not in ("official", "original"):
            lines.append(f"  English text: {info.english} (original text kept as evidence in the knowledge file)")
        lines.append(f"  source:       {info.source}")

    # transfer_to_npu
    if is_cuda:
        parts = name.split(".")
        attr = parts[2] if len(parts) > 2 else None
        handled = kb.cuda_attr_handled(attr) if attr else True
        per = []
        for k in kbs:
            h = k.cuda_attr_handled(attr) if attr else True
            per.append(f"{k.torch_version}:{'yes' if h else 'no'}")
        target = kb.npu_equivalent(name) or "torch.npu"
        lines.append(f"  transfer_to_npu: {'maps it to ' + target if handled else 'does NOT handle it'} (torch {focus}); "
                     f"per version: {' '.join(per)}")
    elif name in kb.device_rewrite_functions:
        lines.append("  transfer_to_npu: rewrites 'cuda' device arguments of this function to 'npu'")
    else:
        eq = kb.npu_equivalent(name)
        lines.append(f"  transfer_to_npu: {'replaces it with ' + eq if eq else 'leaves it unchanged (not a CUDA API)'}")
    if fact is not None:
        lines.append(f"  CUDA-only:    {fact.reason}")
        lines.append(f"  instead:      {fact.replacement}")
        lines.append(f"  fact source:  {fact.source}")
    lines.append(f"  knowledge:    {kb.identifier}")
    return "\n".join(lines), 0


def explain(kb, api: str) -> str:
    """The text of :func:`explain_name` for the torch version of ``kb`` (kept for callers of the old API)."""
    return explain_name(api, kb.torch_version)[0]
