"""Kernel-hub kernels judged by their id (``data/kernel_hub.yaml``), validated when loaded.

``kernels.get_kernel("org/name")`` is a pure-Python loader that fetches the build a Hub repository publishes for the
running backend; Hugging Face ``kernels`` has an Ascend (NPU) backend. So the kernel id decides: an id with an Ascend
build (``kernels-ext-npu/*``) runs on an NPU host, an id whose builds are CUDA only (the FlashAttention kernels of
``kernels-community``) does not, and an id no entry names has no NPU build on record. Each entry says which, why, what
to use instead and where the fact comes from. An entry whose kernel exposes a known library's API (``python_api:
flash_attn``) with a documented NPU replacement is ``severity: manual``: a call of the kernel is graded by that
library function's data/third_party_libs.yaml entry (``flash_attn_varlen_func`` -> ``npu_fusion_attention``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Optional, Tuple

__all__ = ["KERNEL_HUB_FILE", "HubKernel", "KernelHubError", "load_kernel_hub", "validate_kernel_hub", "hub_kernel",
           "looks_like_kernel_id"]

KERNEL_HUB_FILE = "kernel_hub.yaml"
BUILDS = ("npu", "gpu-only")
SEVERITIES = ("blocker", "manual")


class KernelHubError(Exception):
    """data/kernel_hub.yaml does not have the expected shape."""


@dataclass(frozen=True)
class HubKernel:
    id: str
    ids: Tuple[str, ...]
    builds: str          # npu: an Ascend build is published; gpu-only: CUDA builds only
    reason: str
    replacement: str
    source: str
    # blocker: a kernel to write; manual: the kernel's functions have a documented NPU replacement (flash-attn ->
    # torch_npu.npu_fusion_attention)
    severity: str = "blocker"
    # the Python module whose API the kernel exposes (flash_attn): a call `k.a.f(...)` of the kernel is graded by the
    # data/third_party_libs.yaml entry of `<python_api>.a.f`
    python_api: Optional[str] = None

    @property
    def runs_on_npu(self) -> bool:
        return self.builds == "npu"


def _req(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise KernelHubError(f"data/{KERNEL_HUB_FILE}: {where}: {what}")


def looks_like_kernel_id(name: str) -> bool:
    """``org/name`` (a Hub repository id), as a kernel id is written."""
    parts = name.split("/")
    return len(parts) == 2 and all(p and all(c.isalnum() or c in "-_.*" for c in p) for p in parts)


def validate_kernel_hub(doc) -> Tuple[HubKernel, ...]:
    _req(isinstance(doc, dict), "top level", "must be a mapping")
    meta = doc.get("meta")
    _req(isinstance(meta, dict) and meta.get("kind") == "kernel_hub", "meta", "kind must be kernel_hub")
    _req(isinstance(meta.get("source"), str) and meta["source"].strip(), "meta", "needs its source")
    entries = doc.get("kernels")
    _req(isinstance(entries, list) and entries, "kernels", "must be a non-empty list")
    out, seen = [], set()
    for i, e in enumerate(entries):
        w = f"kernels[{i}]"
        _req(isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"] and e["id"] not in seen, w,
             "needs a unique id")
        seen.add(e["id"])
        ids = e.get("ids")
        _req(isinstance(ids, list) and ids and all(isinstance(x, str) and looks_like_kernel_id(x) for x in ids), w,
             "ids must be a non-empty list of org/name (or org/*) kernel ids")
        _req(e.get("builds") in BUILDS, w, f"builds must be one of {BUILDS}")
        for k in ("reason", "replacement", "source"):
            _req(isinstance(e.get(k), str) and e[k].strip(), w, f"{k} must be a non-empty string")
        _req(e.get("severity", "blocker") in SEVERITIES, w, f"severity must be one of {SEVERITIES}")
        api = e.get("python_api")
        _req(api is None or (isinstance(api, str) and all(p.isidentifier() for p in api.split("."))), w,
             "python_api must be a dotted module name")
        _req(api is None or e["builds"] == "gpu-only", w, "python_api grades the calls of a kernel with no NPU build")
        out.append(HubKernel(e["id"], tuple(ids), e["builds"], " ".join(e["reason"].split()),
                             " ".join(e["replacement"].split()), " ".join(e["source"].split()),
                             e.get("severity", "blocker"), api))
    return tuple(out)


@lru_cache(maxsize=None)
def _load(path_str: str) -> Tuple[HubKernel, ...]:
    from analyse.knowledge import load_yaml

    return validate_kernel_hub(load_yaml(Path(path_str).read_text(encoding="utf-8")))


def load_kernel_hub(data_root: str | Path | None = None) -> Tuple[HubKernel, ...]:
    """data/kernel_hub.yaml, validated (cached)."""
    from analyse.paths import data_dir

    root = Path(data_root) if data_root is not None else data_dir()
    return _load(str(root / KERNEL_HUB_FILE))


def hub_kernel(kernel_id: str, data_root: str | Path | None = None) -> Optional[HubKernel]:
    """The entry that names *kernel_id* (an exact id before an ``org/*`` one), or None."""
    entries = load_kernel_hub(data_root)
    for exact in (True, False):
        for e in entries:
            for pat in e.ids:
                if (pat == kernel_id) if exact else ("*" in pat and fnmatchcase(kernel_id, pat)):
                    return e
    return None
