"""``npu-analyse explain API``: what the knowledge base says about one API."""

from __future__ import annotations

import difflib


def explain(kb, api: str) -> str:
    api = api.strip()
    if not api.startswith(("torch", "aten::")):
        api = "torch." + api
    lines = [f"{api}  (torch {kb.torch_version}, torch_npu {kb.torch_npu_version})"]
    info = kb.api(api)
    status = kb.api_status(api)
    lines.append(f"  status:       {status}")
    if info is not None:
        if info.limitations:
            lines.append(f"  limitations:  {info.limitations}")
        if info.hardware:
            hw = ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in info.hardware.items())
            lines.append(f"  products:     {hw}")
        lines.append(f"  source:       {info.source}")
    elif status == "unverified":
        lines.append("  The Ascend native-API support list does not document it: unverified on NPU. "
                     "Probe it with `npu-analyse probe`.")
    if api.startswith("torch.cuda"):
        parts = api.split(".")
        attr = parts[2] if len(parts) > 2 else None
        handled = kb.cuda_attr_handled(attr) if attr else True
        lines.append(f"  transfer_to_npu: {'maps it to ' + (kb.npu_equivalent(api) or 'torch.npu') if handled else 'does NOT handle it'}")
    if api in kb.device_rewrite_functions:
        lines.append("  transfer_to_npu: rewrites 'cuda' device arguments of this function to 'npu'")
    fact = kb.cuda_only(api)
    if fact is not None:
        lines.append(f"  CUDA-only:    {fact.reason}")
        lines.append(f"  instead:      {fact.replacement}")
        lines.append(f"  fact source:  {fact.source}")
    if info is None and fact is None and not api.startswith("torch.cuda"):
        close = difflib.get_close_matches(api, sorted(kb.documented_names()), n=3, cutoff=0.8)
        if close:
            lines.append(f"  did you mean: {', '.join(close)}")
    lines.append(f"  knowledge:    {kb.identifier}")
    return "\n".join(lines)
