"""The third-party library table (``data/third_party_libs.yaml``): validation and lookup.

A private helper below the passes: the third-party pass, the cuda-extension project scan, the
manifests pass and ``explain`` all read the same table through :func:`lib_table`, so no pass has
to import another pass for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from analyse.findings import SEVERITIES

DATA_FILE = "third_party_libs.yaml"
# how large the rework of a GPU-only library's use is, where more than swapping calls for the documented NPU
# replacement (medium, the default): "high" -- no drop-in replacement, the code around each use is restructured
REWORK = (None, "high")
# how an `auto` / `advice` library runs on Ascend, where not through transfer_to_npu's rewrites (the default): "native"
# -- the library's own NPU support (an NPU accelerator or build, picked at run time) runs it with the code unchanged;
# the library status rules then leave a function that uses it supported (the entry's replacement is the install step)
NPU_SUPPORT = (None, "native")


class ThirdPartyDataError(ValueError):
    """data/third_party_libs.yaml is malformed."""


@dataclass(frozen=True)
class LibEntry:
    id: str
    library: str
    modules: Tuple[str, ...]
    severity: str
    reason: str
    replacement: str
    source: str
    evidence: str = "inferred"
    excludes: Tuple[str, ...] = ()
    params: Tuple[Tuple[str, str], ...] = ()
    attention: Optional[str] = None
    imports_on_npu: bool = False   # importing the module succeeds on an Ascend host (only some calls fail)
    rework: Optional[str] = None   # "high": no drop-in NPU replacement; the code around each use is restructured
    npu_support: Optional[str] = None   # "native": the library's own NPU support runs it unchanged (NPU_SUPPORT)
    # decorators (qualified names) that make the function a GPU kernel of the library (``numba.cuda.jit``): a launch
    # ``kernel[grid](...)`` of such a function is a use of the library where it is written
    kernel_decorators: Tuple[str, ...] = ()


@dataclass(frozen=True)
class MmcvOp:
    op: str
    symbols: Tuple[str, ...]
    npu: bool
    constraints: Optional[str]


@dataclass
class LibTable:
    entries: List[LibEntry]
    by_prefix: Dict[str, LibEntry]
    star: List[Tuple[str, LibEntry]] = field(default_factory=list)
    mmcv_package: str = "mmcv.ops"
    mmcv_ops: Dict[str, MmcvOp] = field(default_factory=dict)
    mmcv_policy: Dict[str, Tuple[str, str]] = field(default_factory=dict)  # supported/unsupported/unlisted -> (sev, repl)
    mmcv_source: str = ""
    # match's answers (the table does not change once built; every call and name of a module asks)
    _matched: Dict[str, Optional[Tuple[LibEntry, str]]] = field(default_factory=dict, repr=False, compare=False)

    def match(self, qual: str) -> Optional[Tuple[LibEntry, str]]:
        """Longest module prefix matching *qual* (``a.b`` matches ``a.b`` and ``a.b.c``;
        ``a.B*`` matches every name starting with ``a.B``)."""
        try:
            return self._matched[qual]
        except KeyError:
            pass
        got = self._match(qual)
        if len(self._matched) < 200_000:
            self._matched[qual] = got
        return got

    def _match(self, qual: str) -> Optional[Tuple[LibEntry, str]]:
        best: Optional[Tuple[LibEntry, str]] = None
        parts = qual.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            e = self.by_prefix.get(prefix)
            if e is not None:
                best = (e, prefix)
                break
        for prefix, e in self.star:
            if qual.startswith(prefix) and (best is None or len(prefix) > len(best[1])):
                best = (e, prefix)
        if best is not None and any(qual == x or qual.startswith(x + ".") for x in best[0].excludes):
            return None
        return best

    def mmcv_op(self, qual: str) -> Optional[MmcvOp]:
        pkg = self.mmcv_package
        if not qual.startswith(pkg + "."):
            return None
        rest = qual[len(pkg) + 1:].split(".")
        for part in reversed(rest):
            op = self.mmcv_ops.get(part)
            if op is not None:
                return op
        return None


def _req(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ThirdPartyDataError(f"data/{DATA_FILE}: {where}: {what}")


def _str_list(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, str) and x.strip() for x in v)


def parse_libs(doc) -> LibTable:
    """Validate and index the third-party library data (raises ThirdPartyDataError)."""
    _req(isinstance(doc, dict), "top level", "must be a mapping")
    meta = doc.get("meta")
    _req(isinstance(meta, dict) and meta.get("source") and meta.get("date"), "meta", "needs source and date")
    libs = doc.get("libraries")
    _req(isinstance(libs, list) and libs, "libraries", "must be a non-empty list")
    entries: List[LibEntry] = []
    by_prefix: Dict[str, LibEntry] = {}
    stars: Dict[str, LibEntry] = {}
    ids: Set[str] = set()
    for i, e in enumerate(libs):
        w = f"libraries[{i}]"
        _req(isinstance(e, dict), w, "entry must be a mapping")
        w = f"libraries[{i}] ({e.get('id')!r})"
        for k in ("id", "library", "reason", "replacement", "source"):
            _req(isinstance(e.get(k), str) and e[k].strip(), w, f"{k} must be a non-empty string")
        _req(e["id"] not in ids, w, "duplicate id")
        ids.add(e["id"])
        _req(e.get("severity") in SEVERITIES, w, f"severity must be one of {SEVERITIES}")
        _req(_str_list(e.get("modules")), w, "modules must be a non-empty list of strings")
        _req(e.get("excludes") is None or _str_list(e["excludes"]), w, "excludes must be a list of strings")
        _req(e.get("evidence", "inferred") in ("documented", "inferred"), w, "evidence must be documented or inferred")
        params = e.get("params") or {}
        _req(isinstance(params, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in params.items()),
             w, "params must map argument name -> string")
        _req(e.get("attention") in (None, "dense", "varlen", "xformers"), w, "attention must be dense, varlen or xformers")
        _req(isinstance(e.get("imports_on_npu", False), bool), w, "imports_on_npu must be a bool")
        _req(e.get("rework") in REWORK, w, f"rework must be one of {REWORK[1:]}")
        _req(e.get("rework") is None or e["severity"] == "manual", w, "rework is for a manual entry (a replacement "
             "to make by hand)")
        _req(e.get("npu_support") in NPU_SUPPORT, w, f"npu_support must be one of {NPU_SUPPORT[1:]}")
        _req(e.get("npu_support") is None or e["severity"] in ("auto", "advice", "info"), w,
             "npu_support: native is for an auto, advice or info entry (nothing to rewrite by hand)")
        kd = e.get("kernel_decorators")
        _req(kd is None or (_str_list(kd) and all(any(d == m or d.startswith(m + ".") for m in e["modules"]) for d in kd)),
             w, "kernel_decorators must be a list of names under the entry's modules")
        entry = LibEntry(id=e["id"], library=e["library"], modules=tuple(e["modules"]), severity=e["severity"],
                         reason=e["reason"].strip(), replacement=" ".join(e["replacement"].split()), source=e["source"],
                         evidence=e.get("evidence", "inferred"), excludes=tuple(e.get("excludes") or ()),
                         params=tuple(params.items()), attention=e.get("attention"),
                         imports_on_npu=e.get("imports_on_npu", False), rework=e.get("rework"),
                         npu_support=e.get("npu_support"), kernel_decorators=tuple(kd or ()))
        for m in entry.modules:
            _req(m not in by_prefix and m not in stars, w, f"module {m!r} listed twice")
            _req(all(p.isidentifier() for p in m.rstrip("*").split(".")), w, f"module {m!r} is not a dotted name")
            if m.endswith("*"):
                stars[m] = entry
            else:
                by_prefix[m] = entry
        entries.append(entry)
    table = LibTable(entries=entries, by_prefix=by_prefix, star=[(m[:-1], e) for m, e in stars.items()])
    mm = doc.get("mmcv_ops")
    if mm is not None:
        _req(isinstance(mm, dict), "mmcv_ops", "must be a mapping")
        _req(isinstance(mm.get("package"), str) and mm["package"], "mmcv_ops", "package must be a string")
        _req(isinstance(mm.get("source"), str) and mm["source"], "mmcv_ops", "source must be a string")
        table.mmcv_package = mm["package"]
        table.mmcv_source = mm["source"]
        for k in ("supported", "unsupported", "unlisted"):
            pol = mm.get(k)
            _req(isinstance(pol, dict) and pol.get("severity") in SEVERITIES and isinstance(pol.get("replacement"), str),
                 f"mmcv_ops.{k}", "needs severity and replacement")
            table.mmcv_policy[k] = (pol["severity"], pol["replacement"])
        ops = mm.get("ops")
        _req(isinstance(ops, list) and ops, "mmcv_ops.ops", "must be a non-empty list")
        for j, o in enumerate(ops):
            w = f"mmcv_ops.ops[{j}]"
            _req(isinstance(o, dict) and isinstance(o.get("op"), str), w, "op must be a string")
            _req(_str_list(o.get("symbols")), w, "symbols must be a non-empty list of strings")
            _req(isinstance(o.get("npu"), bool), w, "npu must be a bool")
            _req(o.get("constraints") is None or isinstance(o["constraints"], str), w, "constraints must be a string")
            op = MmcvOp(op=o["op"], symbols=tuple(o["symbols"]), npu=o["npu"], constraints=o.get("constraints"))
            for s in op.symbols:
                _req(s not in table.mmcv_ops, w, f"symbol {s!r} listed twice")
                table.mmcv_ops[s] = op
    return table


_TABLE_CACHE: Dict[int, LibTable] = {}


def lib_table(kb) -> LibTable:
    doc = kb.data_file(DATA_FILE)
    key = id(doc)
    t = _TABLE_CACHE.get(key)
    if t is None:
        t = parse_libs(doc)
        _TABLE_CACHE[key] = t
    return t
