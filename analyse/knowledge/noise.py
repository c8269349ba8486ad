"""Noise rules as data (``data/noise.yaml``), validated when loaded.

* ``user_named_containers``: torch.nn containers whose attributes are the entries the user named
  (``self.transformer.wte`` on an ``nn.ModuleDict``): such an attribute is the user's own module, never a torch API;
* ``other_vendor_namespaces``: other accelerators' namespaces (``torch.mlu``, ``torch.musa``, ``torch.hpu``,
  ``torch.xpu`` ...): not torch APIs to verify on an NPU, never on a probe list;
* ``env_vars``: each CUDA / NCCL environment variable with what it does, the severity of a write and of a read on
  an NPU host (a log level or an allocator hint is advice) and its Ascend replacement.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional, Tuple

__all__ = ["NOISE_FILE", "EnvVar", "Noise", "NoiseError", "load_noise", "validate_noise", "env_is_written"]

_WRITE_CALLS = ("os.putenv", "os.environ.setdefault", "os.environ.pop", "os.unsetenv", "os.environ.update")


def env_is_written(node, call_qualname: Optional[str] = None) -> bool:
    """Whether an environment access writes: ``os.environ['X'] = v`` / ``del os.environ['X']`` (node: the key or
    the subscript), or a call of putenv / setdefault / pop / unsetenv (``call_qualname``)."""
    if call_qualname is not None:
        return call_qualname in _WRITE_CALLS
    from astroid import nodes

    sub = node if isinstance(node, nodes.Subscript) else node.parent
    parent = getattr(sub, "parent", None)
    if isinstance(parent, (nodes.Assign, nodes.Delete)):
        return sub in parent.targets
    if isinstance(parent, (nodes.AugAssign, nodes.AnnAssign)):
        return parent.target is sub
    return False

NOISE_FILE = "noise.yaml"
ENV_SEVERITIES = ("advice", "manual")


class NoiseError(Exception):
    """data/noise.yaml does not have the expected shape."""


@dataclass(frozen=True)
class EnvVar:
    name: str
    does: str
    write: str            # advice | manual
    read: str             # advice | manual
    replacement: Optional[str]


@dataclass(frozen=True)
class Noise:
    containers: Tuple[str, ...]
    vendor_prefixes: Tuple[str, ...]
    env: Mapping[str, EnvVar]
    vendor_source: str = ""   # other_vendor_namespaces.source: where the vendor namespaces come from

    def env_severity(self, var: str, write: bool, default: str = "manual") -> str:
        """The severity of a write (or a read) of ``var`` on an NPU host."""
        e = self.env.get(var)
        if e is None:
            return default
        return e.write if write else e.read

    def launcher_severity(self, var: str) -> Optional[str]:
        """The severity of setting ``var`` in a launcher (None: not in the table)."""
        e = self.env.get(var)
        return None if e is None else e.write

    def other_vendor(self, name: str) -> bool:
        """``torch.mlu.device_count`` / ``torch_musa.x``: another accelerator's namespace."""
        return any(name == p or name.startswith(p + ".") for p in self.vendor_prefixes)


def _req(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise NoiseError(f"data/{NOISE_FILE}: {where}: {what}")


def validate_noise(doc) -> Noise:
    _req(isinstance(doc, dict), "top level", "must be a mapping")
    meta = doc.get("meta")
    _req(isinstance(meta, dict) and all(isinstance(meta.get(k), str) and meta[k] for k in ("source", "date")), "meta",
         "needs source and date")
    uc = doc.get("user_named_containers")
    _req(isinstance(uc, dict) and isinstance(uc.get("classes"), list) and uc["classes"]
         and all(isinstance(c, str) and c.startswith("torch.") for c in uc["classes"]) and isinstance(uc.get("source"), str),
         "user_named_containers", "needs classes (torch names) and source")
    ov = doc.get("other_vendor_namespaces")
    _req(isinstance(ov, dict) and isinstance(ov.get("prefixes"), list) and ov["prefixes"]
         and all(isinstance(p, str) and p for p in ov["prefixes"]) and isinstance(ov.get("source"), str),
         "other_vendor_namespaces", "needs prefixes and source")
    _req(not any(p == "torch.npu" or p.startswith(("torch.npu.", "torch_npu")) for p in ov["prefixes"]),
         "other_vendor_namespaces", "the NPU's own namespace is not another vendor's")
    env = doc.get("env_vars")
    _req(isinstance(env, dict) and env, "env_vars", "must be a non-empty mapping")
    out = {}
    for name, e in env.items():
        w = f"env_vars.{name}"
        _req(isinstance(name, str) and name.isupper(), w, "names are upper-case environment variables")
        _req(isinstance(e, dict) and isinstance(e.get("does"), str) and e["does"], w, "needs does")
        _req(e.get("write") in ENV_SEVERITIES and e.get("read") in ENV_SEVERITIES, w, f"write/read must be one of {ENV_SEVERITIES}")
        _req(e.get("replacement") is None or (isinstance(e["replacement"], str) and e["replacement"]), w,
             "replacement must be a string or null")
        out[name] = EnvVar(name, e["does"], e["write"], e["read"], e.get("replacement"))
    return Noise(tuple(uc["classes"]), tuple(ov["prefixes"]), out, " ".join(ov["source"].split()))


@lru_cache(maxsize=None)
def _load(path_str: str) -> Noise:
    from analyse.knowledge import load_yaml

    return validate_noise(load_yaml(Path(path_str).read_text(encoding="utf-8")))


_SHIPPED: list = []   # the shipped table, once loaded (the passes ask for it once per call or name they look at)


def load_noise(data_root: str | Path | None = None) -> Noise:
    """data/noise.yaml, validated (cached)."""
    if data_root is None and _SHIPPED:
        return _SHIPPED[0]
    from analyse.paths import data_dir

    root = Path(data_root) if data_root is not None else data_dir()
    got = _load(str(root / NOISE_FILE))
    if data_root is None:
        _SHIPPED.append(got)
    return got
