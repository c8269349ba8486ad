#!/usr/bin/env python3
"""Build the versioned npu-analyse knowledge base under ``data/``.

Reads the public facts collected in ``shared/upstream`` (default
``../shared/upstream`` relative to the repository root, override with
``--upstream``) and writes, deterministically (same input -> same bytes):

* ``data/op_support/torch_<V>.json``  native-API support per torch version V
  (from the newest official Ascend/pytorch "PyTorch 原生API支持清单" doc for V)
* ``data/op_support/aten_kernels.json`` aten ops with an NPU kernel
  (op-plugin master op_plugin_functions.yaml + torch_npu npu_native_functions.yaml)
* ``data/transfer_to_npu.json``  what ``torch_npu.contrib.transfer_to_npu``
  rewrites, per torch_npu branch, and which branch applies to which torch version
* ``data/cuda_only.yaml``  CUDA-only facts transfer_to_npu does NOT handle
* ``data/triton_ascend.yaml``  Triton-Ascend: per triton.language op the dtypes of Atlas A2/A3, accepted
  parameter values and constraints, element-type rules per chip, launch/tuning rules of the migration guide
* ``data/knowledge_index.json``  versions, files and provenance

``data/curation.yaml`` (written by hand, see ``analyse/knowledge/curation.py``) is applied over the official
native-API tables: each override whose official row and conditions hold in a release sets the resulting status
and keeps the official one in the entry's ``curation`` block. The build lists the tables' self-contradictions
(class Yes / method No, siblings, later releases) and fails on one that the curation neither overrides nor lists
as reviewed.

The product never reads shared/upstream at run time; only this script does.
Only the standard library, PyYAML and the curation module of the package (analyse/knowledge/curation.py, standard library only) are used.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import limitations as lim  # noqa: E402  (tools/limitations.py)
from analyse.knowledge import curation as cur_mod  # noqa: E402  (the curation file's validator and checks)

GENERATOR = "tools/build_knowledge.py"
KB_FORMAT = 1

TORCH_VERSIONS = ["2.1.0", "2.6.0", "2.7.1", "2.8.0", "2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0"]
DEFAULT_TORCH_VERSION = "2.13.0"

# The newest official native-API doc per torch version (README "best" column).
BEST_DOC = {
    "2.1.0": "pytorch_2.1.0__v2.1.0.json",
    "2.6.0": "pytorch_2.6.0__v2.7.1-26.0.0.json",
    "2.7.1": "pytorch_2.7.1__master.json",
    "2.8.0": "pytorch_2.8.0__v2.7.1-26.0.0.json",
    "2.9.0": "pytorch_2.9.0__v2.7.1-26.1.0.json",
    "2.10.0": "pytorch_2.10.0__v2.7.1-26.1.0.json",
    "2.11.0": "pytorch_2.11.0__master.json",
    "2.12.0": "pytorch_2.12.0__master.json",
    "2.13.0": "pytorch_2.13.0__master.json",
}

# torch version -> torch_npu branch whose transfer_to_npu facts apply.
# There is no v2.13.0 branch of Ascend/pytorch in the snapshot: master is the 2.13 line.
TRANSFER_BRANCH = {
    "2.1.0": "v2.1.0",
    "2.6.0": "v2.6.0",
    "2.7.1": "v2.7.1",
    "2.8.0": "v2.8.0",
    "2.9.0": "v2.9.0",
    "2.10.0": "v2.10.0",
    "2.11.0": "v2.11.0",
    "2.12.0": "v2.12.0",
    "2.13.0": "master",
}

# msfmktransplt tables (older derived snapshots of the same docs), used only to fill
# doc rows that carry no verdict. Never for 2.1.0, whose blank cells mean "not tested".
MSFMK_TABLE = {"2.6.0": "2_6", "2.7.1": "2_7", "2.8.0": "2_8"}

# Official English tables (tag, torch version folders) paired with the Chinese ones of the same tag.
EN_DOCS_TAG = "v2.7.1-26.0.0"
EN_DOCS_VERSIONS = ["2-7-1", "2-8-0", "2-9-0", "2-10-0"]

# Positions and defaults of the arguments that structured limitation checks name
# (PyTorch signatures; position counts from the first argument of the call, -1 = keyword only).
SIGNATURES = {
    "torch.nn.GRU": {"num_layers": [2, 1], "bias": [3, True], "batch_first": [4, False], "dropout": [5, 0.0], "bidirectional": [6, False]},
    "torch.nn.LSTM": {"num_layers": [2, 1], "bias": [3, True], "batch_first": [4, False], "dropout": [5, 0.0], "bidirectional": [6, False],
                      "proj_size": [7, 0]},
    "torch.nn.RNN": {"num_layers": [2, 1], "nonlinearity": [3, "tanh"], "bias": [4, True], "batch_first": [5, False], "dropout": [6, 0.0],
                     "bidirectional": [7, False]},
    "torch.nn.functional.interpolate": {"size": [1, None], "scale_factor": [2, None], "mode": [3, "nearest"], "align_corners": [4, None]},
    "torch.nn.Upsample": {"size": [0, None], "scale_factor": [1, None], "mode": [2, "nearest"], "align_corners": [3, None]},
    "torch.nn.functional.kl_div": {"reduction": [4, "mean"], "log_target": [5, False]},
    "torch.nn.KLDivLoss": {"reduction": [2, "mean"], "log_target": [3, False]},
    "torch.nn.functional.max_pool1d": {"dilation": [4, 1]},
    "torch.nn.functional.max_pool2d": {"dilation": [4, 1]},
    "torch.nn.functional.max_pool3d": {"dilation": [4, 1]},
    "torch.nn.GELU": {"approximate": [0, "none"]},
    "torch.nn.functional.gelu": {"approximate": [-1, "none"]},
    "torch.topk": {"largest": [3, True], "sorted": [4, True]},
    "torch.Tensor.topk": {"largest": [2, True], "sorted": [3, True]},
    "torch.sum": {"dtype": [-1, None]},
    "torch.Tensor.sum": {"dtype": [-1, None]},
    "torch.Tensor.resize_": {"memory_format": [-1, {"name": "torch.contiguous_format"}]},
    "torch.Tensor.resize_as_": {"memory_format": [-1, {"name": "torch.contiguous_format"}]},
    "torch.nn.GroupNorm": {"affine": [3, True]},
}

LICENCE_DOCS = "CC-BY-4.0 (docs/LICENSE of Ascend/pytorch)"
LICENCE_TORCH_NPU_CODE = "BSD-3-Clause style (Ascend/pytorch LICENSE)"
LICENCE_OP_PLUGIN = "BSD-3-Clause style (Ascend/op-plugin LICENSE)"
LICENCE_MSTT = "Mulan PSL v2 (Ascend/mstt LICENSE)"

REPO_PYTORCH = "Ascend/pytorch"
REPO_OP_PLUGIN = "Ascend/op-plugin"
REPO_MSTT = "xiaobingling93-pixel/Ascend-mstt (GitHub copy of Ascend/mstt)"
REPO_DOCS = "xiaobingling93-pixel/Ascend-docs (GitHub copy of Ascend docs)"


# --------------------------------------------------------------------------- helpers


def _read_json(path: Path):
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _read_yaml(path: Path):
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _dump_json(obj, path: Path, *, compact: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if compact:
        text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    else:
        text = json.dumps(obj, ensure_ascii=False, sort_keys=True, indent=1)
    path.write_text(text + "\n", encoding="utf-8")


def _dump_yaml(obj, path: Path, header: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(obj, allow_unicode=True, sort_keys=False, width=120, default_flow_style=False)
    path.write_text(header + text, encoding="utf-8")


def _short(commit: str | None) -> str:
    return (commit or "unknown")[:12]


def _build_date(upstream: Path) -> str:
    """Deterministic build date: the collection date of the upstream snapshot."""
    readme = upstream / "README.md"
    if readme.is_file():
        m = re.search(r"Collected (\d{4}-\d{2}-\d{2})", readme.read_text(encoding="utf-8"))
        if m:
            return m.group(1)
    return "unknown"


# --------------------------------------------------------------------------- native API support


def _row_rank(row: dict) -> tuple:
    """Which of several doc rows for the same API name is the primary one."""
    written = row.get("api_as_written")
    return (
        row.get("supported") is not None,
        row.get("section") != "Named Tensors" and row.get("file") != "Named-Tensors.md",
        written is None or "." in written,
        bool(row.get("limitations")),
    )


def _status(supported, limitations) -> str:
    if supported is True:
        return "limited" if limitations else "supported"
    return "unsupported"


def build_translator(upstream: Path) -> "lim.Translator":
    t = lim.Translator()
    base = upstream / "torch_npu" / "native_api_docs" / EN_DOCS_TAG
    for v in EN_DOCS_VERSIONS:
        zh, en = base / "zh" / f"pytorch_{v}", base / "en" / f"pytorch_{v}"
        if not en.is_dir():
            raise SystemExit(f"{en} missing: the official English tables are needed")
        t.add_tables(zh, en, f"torch_npu/native_api_docs/{EN_DOCS_TAG}/{{zh,en}}/pytorch_{v}")
    return t


def _limitation_fields(text: str, api: str, translator, stats: dict) -> dict:
    """English limitations, the original as evidence, structured checks and the unparsed remainder."""
    r = lim.process(text, translator)
    out: dict = {"limitations": r["text"]}
    if r["text"] != text:
        out["evidence"] = text
    out["english"] = r["how"]
    stats["texts"] += 1
    stats[r["how"]] = stats.get(r["how"], 0) + 1
    if r["checks"]:
        sig = SIGNATURES.get(api, {})
        checks = []
        for c in r["checks"]:
            c = dict(c)
            p = c.get("param")
            if p in sig:
                c["position"], c["default"] = sig[p]
            checks.append(c)
        out["checks"] = checks
        out["remainder"] = r["remainder"]
        stats["with_checks"] += 1
        if not r["remainder"]:
            stats["all_checks"] += 1
    return out


def build_api_table(upstream: Path, version: str, date: str, commits: dict, translator=None, stats: dict | None = None) -> dict:
    src = upstream / "torch_npu" / "native_api_support" / BEST_DOC[version]
    doc = _read_json(src)
    dmeta = doc["meta"]
    if dmeta.get("torch_version") != version:
        raise SystemExit(f"{src}: torch_version {dmeta.get('torch_version')} != {version}")

    rows: dict[str, dict] = {}
    for row in doc["apis"]:
        name = row["api"]
        cur = rows.get(name)
        if cur is None or _row_rank(row) > _row_rank(cur):
            rows[name] = row

    fill = {}
    fill_source = None
    if version in MSFMK_TABLE:
        suffix = MSFMK_TABLE[version]
        res = upstream / "mstt_msfmktransplt" / "resource"
        sup = _read_json(res / f"supported_op_{suffix}.json")["op_list"]
        uns = _read_json(res / f"op_list_{suffix}.json")["op_list"]
        for k, v in sup.items():
            fill[k] = (True, "" if v in ("-", None) else v)
        for k in uns:
            fill.setdefault(k, (False, ""))
        fill_source = f"mstt_msfmktransplt/resource/supported_op_{suffix}.json + op_list_{suffix}.json"

    apis: dict[str, dict] = {}
    no_verdict: list[str] = []
    filled: list[str] = []
    for name in sorted(rows):
        row = rows[name]
        supported = row.get("supported")
        limitations = (row.get("limitations") or "").strip() or None
        entry: dict = {}
        if supported is None:
            if name in fill:
                supported, flim = fill[name]
                limitations = limitations or (flim.strip() or None)
                entry["from"] = "msfmktransplt"
                filled.append(name)
            else:
                no_verdict.append(name)
                continue  # listed without a verdict ("not tested" for 2.1.0) -> unverified
        entry["status"] = _status(supported, limitations)
        if limitations:
            entry.update(_limitation_fields(limitations, name, translator, stats))
        if row.get("hardware"):
            entry["hardware"] = {k: bool(v) for k, v in sorted(row["hardware"].items())}
        if row.get("file"):
            entry["file"] = row["file"]
        elif row.get("section"):
            entry["section"] = row["section"]
        if row.get("npu_name"):
            entry["npu_name"] = row["npu_name"]
        if row.get("api_note"):
            note = row["api_note"].strip()
            en = lim.process(note, translator)
            entry["note"] = en["text"]
            if en["text"] != note:
                entry["note_evidence"] = note
        apis[name] = entry

    counts = {"supported": 0, "limited": 0, "unsupported": 0}
    for e in apis.values():
        counts[e["status"]] += 1
    branch = dmeta["branch"]
    meta = {
        "kind": "native_api_support",
        "kb_format": KB_FORMAT,
        "generator": GENERATOR,
        "date": date,
        "torch_version": version,
        "torch_npu_version": _torch_npu_version(version),
        "source": f"{REPO_PYTORCH}@{branch} {dmeta['path']}",
        "source_repo": REPO_PYTORCH,
        "branch": branch,
        "commit": dmeta.get("branch_head_commit"),
        "path": dmeta["path"],
        "path_last_commit": dmeta.get("last_commit_touching_path"),
        "path_last_commit_date": dmeta.get("last_commit_date"),
        "doc_format": dmeta.get("format"),
        "language": dmeta.get("language"),
        "licence": LICENCE_DOCS,
        "derived_from": f"shared/upstream/torch_npu/native_api_support/{BEST_DOC[version]} (newest official doc for this torch version)",
        "status_rules": (
            "supported: Yes/✔/Y with no Restrictions-and-Notes text; limited: supported with a non-empty Restrictions-and-Notes text (kept verbatim); "
            "unsupported: No/✘; rows listed without a verdict are left out (unverified)"
            + ("; a blank 2.1.0 Compatibility cell means 'not tested' -> unverified" if version == "2.1.0" else "")
            + (f"; rows without a verdict were filled from {fill_source} (marked from=msfmktransplt)" if fill_source else "")
        ),
        "fill_source": fill_source,
        "filled_from_msfmktransplt": filled,
        "english": (
            "limitations/note texts are English: `english` says how -- official (the official English table text for an identical Chinese "
            f"text, {EN_DOCS_TAG} docs/en/native_apis), derived (line by line: official lines, lines rendered from their parsed check, "
            "lines differing from an official one only in wording (same code names), or translations kept in tools/limitations.py), "
            "partial (some lines stay Chinese), none, original (the doc is English). `evidence` keeps the original text."
        ),
        "checks": (
            "checks: structured limits parsed from the limitations lines (kind dtype|arg|value|ndim|attribute; param; allowed/forbidden; max/min; "
            "position/default of the argument where known); remainder: the lines that are not checks (text)"
        ),
        "limitation_stats": {k: stats[k] for k in sorted(stats)},
        "listed_without_verdict": len(no_verdict),
        "counts": counts,
    }
    commits["docs"] = f"{branch}@{_short(dmeta.get('branch_head_commit'))}"
    return {"meta": meta, "apis": apis}


# --------------------------------------------------------------------------- aten kernels


def _parse_versions(spec: str, all_version: list[str]) -> list[str]:
    out: list[str] = []
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        if ".." in part:
            a, b = part.split("..")
            ia, ib = all_version.index(a.strip()), all_version.index(b.strip())
            out.extend(all_version[ia : ib + 1])
        else:
            out.append(part)
    return out


def _torch_key(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"v{major}.{minor}"


def build_aten(upstream: Path, date: str) -> dict:
    src = upstream / "op-plugin" / "op_plugin_ops_by_torch_version.json"
    d = _read_json(src)
    master = d["branches"]["master"]
    all_version = master["all_version"]
    by_version: dict[str, list[str]] = {}
    for v in TORCH_VERSIONS:
        key = _torch_key(v)
        ops = sorted(op for op, info in master["ops"].items() if key in _parse_versions(info["versions"], all_version))
        by_version[v] = ops
    # torch_npu's own kernels (all versions)
    nf = _read_yaml(upstream / "torch_npu" / "npu_native_functions.yaml")
    native: set[str] = set()
    for section in ("supported", "custom", "symint"):
        for item in nf.get(section) or []:
            if isinstance(item, str):
                native.add(item.strip())
            elif isinstance(item, dict) and "func" in item:
                native.add(str(item["func"]).split("(")[0].strip())
    meta = {
        "kind": "aten_kernels",
        "kb_format": KB_FORMAT,
        "generator": GENERATOR,
        "date": date,
        "torch_version": "all (see by_torch_version)",
        "torch_npu_version": "op-plugin master (torch v2.1..v2.15)",
        "source": f"{REPO_OP_PLUGIN}@master op_plugin/config/op_plugin_functions.yaml + {REPO_PYTORCH}@master torch_npu/csrc/aten/npu_native_functions.yaml",
        "source_repo": f"{REPO_OP_PLUGIN}; {REPO_PYTORCH}",
        "branch": "master",
        "commit": master["branch_head_commit"],
        "path": "op_plugin/config/op_plugin_functions.yaml",
        "path_last_commit": master["file_last_commit"],
        "path_last_commit_date": master["file_last_commit_date"],
        "licence": f"{LICENCE_OP_PLUGIN}; {LICENCE_TORCH_NPU_CODE}",
        "derived_from": "shared/upstream/op-plugin/op_plugin_ops_by_torch_version.json (branches.master.ops) and shared/upstream/torch_npu/npu_native_functions.yaml",
        "semantics": (
            "an aten overload name (e.g. 'add.Tensor') is listed for torch version V when op-plugin master registers an acl_op/op_api/sparse "
            "kernel for V; torch_npu_native lists the kernels implemented in torch_npu itself (all versions). Ops missing here fall back to CPU "
            "with a warning in torch>=2.1 (error if TORCH_NPU_FALLBACK_CPU_DISABLE=1)."
        ),
    }
    # aten ops that older op-plugin releases routed to the CPU explicitly (tocpu) or declared unsupported: real
    # backend ops (they have a CUDA kernel in PyTorch); where a release still has no kernel for one, it falls back
    cpu_routed: dict[str, set] = {}
    for rel, label in (("7.1.0/op_plugin_functions.yaml", "op-plugin 7.1.0"),
                       ("6.0.rc1/v2r0/op_plugin_functions.yaml", "op-plugin 6.0.rc1 v2r0"),
                       ("6.0.rc1/v1r11/op_plugin_functions.yaml", "op-plugin 6.0.rc1 v1r11")):
        y = _read_yaml(upstream / "op-plugin" / rel)
        for section in ("tocpu", "unsupported"):
            for item in y.get(section) or []:
                func = item.get("func") if isinstance(item, dict) else item
                if not isinstance(func, str):
                    continue
                op = func.split("(")[0].strip().split(".")[0]
                if op and not op.startswith("_test"):
                    cpu_routed.setdefault(op, set()).add(f"{label} {section}")
    meta["cpu_routed"] = (
        "aten ops listed in the tocpu (run on the CPU) or unsupported sections of op-plugin 7.1.0 "
        "(op_plugin/config/op_plugin_functions.yaml @ branch 7.1.0 57c52665a1e1) and 6.0.rc1 (v1r11, v2r0): backend ops "
        "(with CUDA kernels in PyTorch) that op-plugin did not implement then; an op of this list without a kernel "
        "for the target version falls back to the CPU"
    )
    meta["composite"] = (
        "ops that PyTorch implements as CompositeImplicitAutograd (they decompose into ops that have NPU kernels), so "
        "a missing op-plugin entry does not mean a CPU fallback (PyTorch native_functions.yaml dispatch sections)"
    )
    return {"meta": meta, "by_torch_version": by_version, "torch_npu_native": sorted(native),
            "cpu_routed": {op: sorted(v) for op, v in sorted(cpu_routed.items())},
            "composite": sorted(COMPOSITE_OPS)}


# aten ops that decompose in PyTorch itself (CompositeImplicitAutograd): never CPU fallbacks on their own
COMPOSITE_OPS = {"scaled_dot_product_attention", "real", "conj", "tensordot", "stft", "logdet", "_unsafe_index"}


# --------------------------------------------------------------------------- transfer_to_npu

_WRAP_DEVICE = re.compile(r"^(WRAPPED: .*device arg|WRAPPED: positional/keyword device|PATCHED: .*device \"cuda\"->\"npu\")")

# Public aliases of wrapped objects (PyTorch re-exports; the wrapped object is the same).
_ALIASES = {
    "torch.amp.autocast_mode.autocast": ["torch.autocast", "torch.amp.autocast"],
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel": ["torch.distributed.fsdp.FullyShardedDataParallel"],
    "torch.distributed.distributed_c10d._new_group_with_tag": [],
    "torch.nn.parallel.DistributedDataParallel": ["torch.nn.parallel.distributed.DistributedDataParallel"],
}


# Chinese quotations inside the upstream English summaries, and their English (translated by us)
_NOTE_QUOTES = {
    "\"当前自动迁移暂不支持channel_last特性，建议用户使用contiguous代替\"":
        "\"automatic migration does not support channels_last yet; use contiguous instead\"",
}


def _english_note(text):
    if not isinstance(text, str):
        return text
    for zh, en in _NOTE_QUOTES.items():
        text = text.replace(zh, en)
    return text


def _npu_version_of_branch(branch: str) -> str:
    """The torch_npu release a branch corresponds to: v2.10.0 -> 2.10.0; master -> the release line of the newest
    torch version it documents (master carries the docs and transfer_to_npu of torch 2.13.0 before its release
    branch exists), so reports name a release, never a branch (#23). The branch stays in the provenance."""
    if branch == "master":
        return max((v for v, b in TRANSFER_BRANCH.items() if b == "master"), key=lambda v: tuple(int(x) for x in v.split(".")))
    return branch.lstrip("v")


def _torch_npu_version(torch_version: str) -> str:
    return _npu_version_of_branch(TRANSFER_BRANCH[torch_version])


def _add_with_aliases(target: set[str], qualname: str) -> None:
    target.add(qualname)
    base = qualname
    for suffix in (".__init__", ".__new__"):
        if qualname.endswith(suffix):
            base = qualname[: -len(suffix)]
            target.add(base)
    for alias in _ALIASES.get(base, []):
        target.add(alias)


def build_transfer(upstream: Path, date: str) -> dict:
    src = upstream / "torch_npu" / "transfer_to_npu_facts.yaml"
    facts = _read_yaml(src)
    per = facts["per_version"]
    branches: dict[str, dict] = {}
    for branch in sorted(set(TRANSFER_BRANCH.values())):
        e = per[branch]
        replaced = sorted(e["torch_cuda_attrs_replaced (= torch_npu.npu.__all__)"])
        amp = sorted(e["torch_cuda_amp_attrs_replaced (= torch_npu.npu.amp.__all__)"])
        aliases = {}
        for group, pairs in sorted((e.get("module_alias_patches") or {}).items()):
            for frm, to in pairs:
                aliases[f"torch.{frm}"] = to
        patches = e.get("attribute_patches") or {}
        rewrite: set[str] = set()
        for module, names in (e.get("functions_wrapped_for_device_args") or {}).items():
            for n in names:
                _add_with_aliases(rewrite, f"{module}.{n}")
        replaced_by: dict[str, str] = {}
        disabled: dict[str, str] = {}
        for target, what in patches.items():
            what = str(what)
            if _WRAP_DEVICE.match(what):
                _add_with_aliases(rewrite, target)
            if what.startswith("REPLACED BY:"):
                replaced_by[target] = what.split(":", 1)[1].strip()
            if what.startswith("DISABLED") or "always returns False" in what:
                disabled[target] = what
        init_pg = str(patches.get("torch.distributed.init_process_group", ""))
        cuda_attrs_patched = sorted(
            {t.split(".")[2] for t in replaced_by if t.startswith("torch.cuda.") and t.count(".") == 2}
        )
        branches[branch] = {
            "branch": branch,
            "torch_npu_version": _npu_version_of_branch(branch),
            "branch_head_commit": e["branch_head_commit"],
            "file": "torch_npu/contrib/transfer_to_npu.py",
            "file_last_commit": e["file_last_commit"],
            "file_last_commit_date": e["file_last_commit_date"],
            "torch_cuda_attrs_replaced": replaced,
            "torch_cuda_amp_attrs_replaced": amp,
            "module_aliases": aliases,
            "torch_cuda_attrs_patched": cuda_attrs_patched,
            "replaced_by": dict(sorted(replaced_by.items())),
            "device_rewrite_functions": sorted(rewrite),
            "device_kwargs": sorted(e["device_arg_rewrite_lists"].get("device_kwargs_list") or []),
            "int_device_rewrite_functions": ["torch.Tensor.to", "torch.nn.Module.to", "torch.nn.Module.to_empty"],
            "rewrites_nccl_backend": "nccl" in init_pg and "hccl" in init_pg,
            "tensor_cuda_to_npu": replaced_by.get("torch.Tensor.cuda") == "torch.Tensor.npu",
            "module_cuda_to_npu": replaced_by.get("torch.nn.Module.cuda") == "torch.nn.Module.npu",
            "double_tensor_to_float": replaced_by.get("torch.cuda.DoubleTensor") == "torch.npu.FloatTensor",
            "disabled": dict(sorted(disabled.items())),
            "uses_apis_config_json": bool(e.get("uses_apis_config_json")),
        }
    sm = facts["summary_master"]
    not_handled_key = next(k for k in sm if k.startswith("not_handled_by_transfer_to_npu"))
    meta = {
        "kind": "transfer_to_npu",
        "kb_format": KB_FORMAT,
        "generator": GENERATOR,
        "date": date,
        "torch_version": "all (see torch_to_branch)",
        "torch_npu_version": "per branch (see branches)",
        "source": f"{REPO_PYTORCH} torch_npu/contrib/transfer_to_npu.py (per branch, see branches.*.branch_head_commit)",
        "source_repo": REPO_PYTORCH,
        "branch": ", ".join(sorted(branches)),
        "commit": {b: v["branch_head_commit"] for b, v in sorted(branches.items())},
        "path": "torch_npu/contrib/transfer_to_npu.py; torch_npu/npu/__init__.py (__all__)",
        "licence": LICENCE_TORCH_NPU_CODE,
        "derived_from": "shared/upstream/torch_npu/transfer_to_npu_facts.yaml (facts restated from the code, no code copied)",
        "how_it_is_enabled": facts["meta"].get("how_it_is_enabled"),
        "semantics": (
            "torch.cuda.X is remapped to torch.npu.X only when X is in torch_cuda_attrs_replaced (= torch_npu.npu.__all__) or X is a "
            "module alias (amp, random) or an explicitly patched attribute; any other torch.cuda.X keeps the CUDA implementation."
        ),
    }
    return {
        "meta": meta,
        "torch_to_branch": dict(TRANSFER_BRANCH),
        "branches": branches,
        "summary_master": {
            "string_rewrites": sm.get("string_rewrites"),
            "identity_replacements": sm.get("identity_replacements"),
            "dtype_downgrade": sm.get("dtype_downgrade"),
            "disabled_features": sm.get("disabled_features"),
            "not_handled": [_english_note(x) for x in sm.get(not_handled_key) or ()],
        },
    }


# --------------------------------------------------------------------------- CUDA-only facts

S_TRANSFER = "shared/upstream/torch_npu/transfer_to_npu_facts.yaml"
S_MIGR = "shared/upstream/ascend_docs/migration_facts.yaml"
S_DOCS = "shared/upstream/torch_npu/native_api_support"
S_OPP = "shared/upstream/op-plugin/master/custom_api_product_support.json"

STATIC_FACTS = [
    {
        "id": "cuda-nvtx",
        "apis": ["torch.cuda.nvtx", "torch.autograd.profiler.emit_nvtx"],
        "reason": "torch.cuda.nvtx is not in torch_npu.npu.__all__, so transfer_to_npu leaves it on the CUDA implementation "
        "(it fails or is a no-op on an NPU host); torch.autograd.profiler.emit_nvtx is documented as not supported on NPU.",
        "replacement": "Use MindStudio Tools Extension ranges instead: torch_npu.npu.mstx.range_push('name') / torch_npu.npu.mstx.range_pop(), "
        "torch_npu.npu.mstx.mark('msg'), or `with torch_npu.npu.mstx.mstx_range('name'):`; profile with torch_npu.profiler.profile. "
        "Or simply drop the NVTX annotations.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.module_aliases (nvtx named as not replaced); {S_DOCS} torch.autograd.profiler.emit_nvtx (not supported); {S_OPP} torch_npu.npu.mstx.*",
    },
    {
        "id": "cuda-get-device-capability-none",
        "apis": ["torch.cuda.get_device_capability", "torch.npu.get_device_capability", "torch_npu.npu.get_device_capability",
                 "TORCH_NPU_DEVICE_CAPABILITY", "env:TORCH_NPU_DEVICE_CAPABILITY"],
        "reason": "On NPU get_device_capability() returns None unless the environment variable TORCH_NPU_DEVICE_CAPABILITY='major.minor' is set; "
        "code such as `torch.cuda.get_device_capability()[0] >= 8` raises TypeError (None is not subscriptable). The value only exists for "
        "compatibility and does not describe the NPU hardware.",
        "replacement": "cap = torch.cuda.get_device_capability()\nif cap is not None and cap >= (8, 0):\n    ...\n"
        "# or export TORCH_NPU_DEVICE_CAPABILITY=8.0 before starting, or branch on the device type (torch.npu.is_available()) instead of SM versions",
        "severity": "manual",
        "reported_by": "none",
        "source": f"{S_MIGR} device_capability_fact; {S_DOCS} torch.cuda.get_device_capability (restrictions and notes)",
    },
    {
        "id": "cuda-ipc-tensor-sharing",
        "apis": ["torch.multiprocessing.reductions.reduce_tensor", "torch.multiprocessing.reductions.rebuild_cuda_tensor",
                 "torch.UntypedStorage._share_cuda_", "torch.UntypedStorage._new_shared_cuda", "torch.cuda.cudart"],
        "reason": "CUDA IPC: reduce_tensor / _share_cuda_ pass a CUDA tensor to another process as a cudaIpc memory handle (the way "
        "RL trainers hand weights to a vLLM engine on the same GPU); the Ascend support lists document IPC only for events "
        "(torch.cuda.Event.ipc_handle -> torch_npu.npu.Event.ipc_handle), not for tensor storages.",
        "replacement": "hand the weights over with a collective on an HCCL group that includes the inference engine's ranks "
        "(torch.distributed.broadcast / vllm-ascend's HCCL communicator), or through host memory (tensor.cpu() in shared memory)",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_DOCS} torch-cuda.md (Event.ipc_handle / Event.from_ipc_handle are the only IPC rows); PyTorch "
        "torch/multiprocessing/reductions.py (reduce_tensor uses the CUDA IPC handle of the storage)",
    },
    {
        "id": "cuda-nvrtc-kernel",
        "apis": ["torch.cuda._compile_kernel", "torch.cuda.nvrtc", "cuda.nvrtc", "cuda.bindings.nvrtc", "pycuda.compiler.SourceModule"],
        "reason": "a CUDA C kernel compiled at run time with NVRTC (or inline PTX); there is no CUDA compiler or runtime on an Ascend "
        "host, so this is a kernel to write for the NPU, not a call to rename.",
        "replacement": "write the kernel for Ascend: a Triton-Ascend kernel, an Ascend C operator registered through op-plugin / a "
        "torch_npu custom op, or express it with torch / torch_npu ops",
        "severity": "blocker",
        "reported_by": "cuda-api",
        "source": "PyTorch torch/cuda/_utils.py (_compile_kernel compiles CUDA source with NVRTC); NVIDIA cuda-python nvrtc bindings; "
        f"{S_MIGR} unsupported_scenarios (CUDA custom kernels need an Ascend C rewrite)",
    },
    {
        "id": "jit-script-disabled",
        "apis": ["torch.jit.script", "torch.jit.script_method"],
        "reason": "transfer_to_npu disables TorchScript: torch.jit.script returns its argument unchanged (torch.jit.script_method is the identity) "
        "unless torch_npu.utils._dynamo.use_jit_script is set, so code that relies on a ScriptModule (torch.jit.save of the scripted "
        "object, .graph, .code) breaks or silently runs eagerly.",
        "replacement": "Run the model eagerly (remove torch.jit.script), or use torch.compile, or migrate with the msfmktransplt GPU2Ascend tool "
        "instead of transfer_to_npu when TorchScript is required.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.disabled_features; {S_MIGR} auto_migration_restrictions",
    },
    {
        "id": "channels-last",
        "apis": ["torch.channels_last", "torch.channels_last_3d"],
        "reason": "Automatic migration does not support the channels_last memory format (the migration guide advises contiguous instead); "
        "the native-API docs say NPU tensors only accept memory_format=torch.contiguous_format or torch.preserve_format.",
        "replacement": "Drop memory_format=torch.channels_last (use x = x.contiguous() / model.to(device) without memory_format, "
        "or memory_format=torch.contiguous_format).",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.not_handled; {S_MIGR} auto_migration_restrictions; {S_DOCS} torch.Tensor.to (restrictions and notes)",
    },
    {
        "id": "cuda-double-tensor",
        "apis": ["torch.cuda.DoubleTensor"],
        "reason": "transfer_to_npu replaces torch.cuda.DoubleTensor by torch.npu.FloatTensor ('the double type is not supported now'): "
        "float64 tensors created this way silently become float32.",
        "replacement": "Create the tensor explicitly: torch.tensor(data, dtype=torch.float32, device='npu'); keep float64 work on the CPU if the "
        "precision is required.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.dtype_downgrade; {S_MIGR} dtype_facts",
    },
    {
        "id": "float64-dtype",
        "apis": ["torch.float64", "torch.double", "torch.Tensor.double", "torch.DoubleTensor"],
        "reason": "Many NPU operators do not support float64 (the support list: some NPU interfaces do not support the double type yet): some return float32 for compatibility, "
        "others fall back to the CPU; per-API dtype support is listed in the native-API docs (restrictions and notes).",
        "replacement": "Use torch.float32 (or bfloat16/float16 with autocast) on the NPU; move float64-critical parts to the CPU explicitly.",
        "severity": "info",
        "reported_by": "dtypes",
        "source": f"{S_MIGR} dtype_facts; {S_DOCS} torch.Tensor.double",
    },
    {
        "id": "cuda-comm",
        "apis": ["torch.cuda.comm"],
        "reason": "torch.cuda.comm (broadcast/scatter/gather/reduce_add across GPUs) is not replaced by transfer_to_npu and "
        "torch.cuda.comm.scatter/gather are documented as not supported on NPU.",
        "replacement": "Use torch.distributed collectives with the hccl backend (dist.broadcast / dist.scatter / dist.all_gather / dist.all_reduce), "
        "or move tensors explicitly with tensor.to('npu:N').",
        "severity": "blocker",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.module_aliases; {S_DOCS} torch.cuda.comm.scatter/gather (not supported)",
    },
    {
        "id": "cuda-jiterator",
        "apis": ["torch.cuda.jiterator"],
        "reason": "torch.cuda.jiterator JIT-compiles CUDA C++ element-wise kernels with NVRTC; it is not replaced by transfer_to_npu and cannot run on NPU.",
        "replacement": "Write the element-wise function with regular torch operations (optionally wrapped in torch.compile).",
        "severity": "blocker",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.module_aliases (jiterator named as not replaced)",
    },
    {
        "id": "cuda-arch-list",
        "apis": ["torch.cuda.get_arch_list", "torch.cuda.get_gencode_flags"],
        "reason": "get_arch_list/get_gencode_flags are not in torch_npu.npu.__all__; they keep the CUDA implementation and describe CUDA "
        "sm_XX architectures, which have no meaning on an NPU.",
        "replacement": "Remove the architecture check, or test the device instead: torch.npu.is_available() / torch.npu.get_device_name(0).",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.module_aliases (get_arch_list named as not replaced)",
    },
    {
        "id": "cuda-graphs",
        "apis": ["torch.cuda.graphs", "torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables", "torch.cuda.graph_pool_handle"],
        "reason": "transfer_to_npu maps torch.cuda.CUDAGraph to torch.npu.NPUGraph (torch_npu >= 2.1, except 2.2), but NPU graph capture currently "
        "supports inference only, not training; the torch.cuda.graphs module itself is not remapped.",
        "replacement": "Use torch.npu.NPUGraph / torch.npu.graph only for inference; for training run eagerly or use torch.compile.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} per_version.*.attribute_patches torch.cuda.CUDAGraph; {S_DOCS} torch.cuda.CUDAGraph (restrictions and notes)",
    },
    {
        "id": "cudnn-flags",
        "apis": ["torch.backends.cudnn"],
        "reason": "torch.backends.cudnn.benchmark/deterministic/enabled/allow_tf32 configure cuDNN; NPU kernels do not use cuDNN, so the flags are "
        "accepted (the docs list them as callable) but do not make NPU operators deterministic or auto-tuned.",
        "replacement": "For determinism call torch.use_deterministic_algorithms(True) (the NPU-supported switch; list in "
        "deterministic_computing_apis.md) and set HCCL_DETERMINISTIC for collectives; drop cudnn.benchmark (no NPU equivalent needed).",
        "severity": "info",
        "reported_by": "cuda-api",
        "source": f"{S_DOCS} torch.backends.cudnn.* and torch.use_deterministic_algorithms (restrictions and notes); "
        "shared/upstream/torch_npu/native_api_docs/v2.7.1-26.0.0/zh/deterministic_computing_apis.md",
    },
    {
        "id": "cuda-tf32",
        "apis": ["torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32", "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
                 "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction"],
        "reason": "TF32 is an NVIDIA tensor-core mode; on NPU the corresponding reduced-precision switch is HF32, controlled by torch_npu.",
        "replacement": "torch.npu.matmul.allow_hf32 = True  # and torch.npu.conv.allow_hf32 = True (torch_npu.npu.matmul/conv.allow_hf32)",
        "severity": "info",
        "reported_by": "cuda-api",
        "source": f"{S_DOCS} torch.backends.cuda.matmul.allow_tf32; {S_OPP} torch_npu.npu.matmul.allow_hf32, torch_npu.npu.conv.allow_hf32",
    },
    {
        # the flag setters and getters only touch ATen's global context (present in every build): harmless on an NPU
        # host, with no effect there; the selection context managers stay manual (they restrict the back-ends a block
        # may use, which the NPU does not honour)
        "id": "cuda-sdp-backend-flags",
        "apis": ["torch.backends.cuda.enable_flash_sdp", "torch.backends.cuda.enable_mem_efficient_sdp",
                 "torch.backends.cuda.enable_math_sdp", "torch.backends.cuda.enable_cudnn_sdp", "torch.backends.cuda.flash_sdp_enabled",
                 "torch.backends.cuda.mem_efficient_sdp_enabled", "torch.backends.cuda.math_sdp_enabled", "torch.backends.cuda.cudnn_sdp_enabled"],
        "reason": "A global SDPA back-end flag. The support lists mark these No from torch 2.6.0 on (Yes for 2.1.0): the CUDA back-end "
        "choice they make does not apply to the NPU. The call only sets or reads a flag in ATen's global context, which every PyTorch "
        "build has, so it raises nothing on an Ascend host, and scaled_dot_product_attention still dispatches to the NPU fused "
        "attention kernel by itself.",
        "replacement": "Leave it or drop it (it has no effect on the NPU); for an explicit fused call use "
        "torch_npu.npu_fusion_attention(q, k, v, head_num, input_layout='BNSD', scale=..., keep_prob=1-dropout_p)[0].",
        "severity": "info",
        "reported_by": "cuda-api",
        "source": f"{S_DOCS} torch.backends.cuda.enable_*_sdp / *_sdp_enabled (Yes for 2.1.0, not supported from 2.6.0); "
        "pytorch/pytorch torch/backends/cuda/__init__.py (enable_flash_sdp -> torch._C._set_sdp_use_flash, flash_sdp_enabled -> "
        "torch._C._get_flash_sdp_enabled) and torch/csrc/Module.cpp (the SDP flags of at::globalContext())",
    },
    {
        "id": "cuda-sdp-kernel-selection",
        "apis": ["torch.backends.cuda.sdp_kernel", "torch.backends.cuda.preferred_linalg_library", "torch.nn.attention.sdpa_kernel"],
        "reason": "Selecting CUDA SDPA back-ends (flash / memory-efficient / math / cuDNN) is documented as not supported on NPU; "
        "scaled_dot_product_attention dispatches to the NPU fused attention kernel by itself.",
        "replacement": "Remove the kernel-selection context/flags and call torch.nn.functional.scaled_dot_product_attention directly, or call "
        "torch_npu.npu_fusion_attention(q, k, v, head_num, input_layout='BNSD', scale=..., keep_prob=1-dropout_p)[0].",
        "severity": "manual",
        "reported_by": "none",
        "source": f"{S_DOCS} torch.backends.cuda.sdp_kernel/enable_*_sdp (not supported); {S_MIGR} flash_attention_mapping",
    },
    {
        "id": "env-cuda-visible-devices",
        "apis": ["env:CUDA_VISIBLE_DEVICES"],
        "reason": "CUDA_VISIBLE_DEVICES is read by the CUDA runtime only; it does not restrict which NPUs a process sees.",
        "replacement": "export ASCEND_RT_VISIBLE_DEVICES=0,1  # instead of CUDA_VISIBLE_DEVICES",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": "Ascend CANN environment-variable reference (ASCEND_RT_VISIBLE_DEVICES); not present in shared/upstream",
    },
    {
        "id": "env-nccl",
        "apis": ["env:NCCL_*"],
        "reason": "NCCL_* environment variables configure NVIDIA NCCL; on NPU the collective library is HCCL, which ignores them.",
        "replacement": "Use the HCCL_* equivalents where one exists (e.g. HCCL_CONNECT_TIMEOUT, HCCL_BUFFSIZE, HCCL_DETERMINISTIC, "
        "HCCL_IF_IP / HCCL_SOCKET_IFNAME) or drop the setting.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_DOCS} torch.use_deterministic_algorithms (HCCL_DETERMINISTIC); other HCCL_* names from the Ascend HCCL environment-variable reference (not in shared/upstream)",
    },
    {
        "id": "nccl-backend-string-check",
        "apis": ["torch.distributed.get_backend", "torch.distributed.is_nccl_available"],
        "reason": "transfer_to_npu rewrites backend 'nccl' to 'hccl' inside init_process_group; code that later compares the backend string with "
        "'nccl' (assert backend in ['gloo', 'nccl'], if backend == 'nccl') takes the wrong branch.",
        "replacement": "Compare with 'hccl' (or accept both): if dist.get_backend() in ('nccl', 'hccl'): ...",
        "severity": "manual",
        "reported_by": "distributed",
        "source": f"{S_TRANSFER} summary_master.not_handled; {S_MIGR} auto_migration_restrictions",
    },
    {
        "id": "data-parallel",
        "apis": ["torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel"],
        "reason": "torch.nn.DataParallel is not supported on NPU (the docs: incompatible with the torch.nn.parallel.DataParallel API) and is documented as ✘ for every torch version.",
        "replacement": "Use torch.nn.parallel.DistributedDataParallel with one process per NPU (backend 'hccl'), launched with torchrun.",
        "severity": "blocker",
        "reported_by": "distributed",
        "source": f"{S_MIGR} unsupported_scenarios; {S_TRANSFER} summary_master.not_handled",
    },
    {
        "id": "triton-disabled",
        "apis": ["triton", "torch.utils._triton.has_triton"],
        "reason": "transfer_to_npu reports Triton as unavailable (has_triton() -> False); CUDA Triton kernels do not run on NPU.",
        "replacement": "Replace custom Triton kernels with torch operations or torch_npu fused operators.",
        "severity": "blocker",
        "reported_by": "triton",
        "source": f"{S_TRANSFER} summary_master.disabled_features / not_handled",
    },
    {
        "id": "cpp-cuda-extension",
        "apis": ["torch.utils.cpp_extension.CUDAExtension", "torch.utils.cpp_extension.load_inline", "amp_C"],
        "reason": "Custom CUDA C++ extensions (and apex's amp_C) cannot be built or run on NPU; transfer_to_npu does not handle them.",
        "replacement": "Replace with torch / torch_npu operators, or port the kernel to Ascend C (op-plugin custom operator).",
        "severity": "blocker",
        "reported_by": "cuda-extension",
        "source": f"{S_TRANSFER} summary_master.not_handled; {S_MIGR} tool_migration_notes",
    },
    {
        "id": "cuda-autocast-dtype-query",
        "apis": ["torch.get_autocast_gpu_dtype"],
        "reason": "torch.get_autocast_gpu_dtype reads the dtype of CUDA autocast (torch>=2.4: get_autocast_dtype('cuda')), a "
        "thread-local state read that exists on every torch build, launches no kernel and needs no CUDA device: the call "
        "completes on an NPU host. It is not under torch.cuda, so transfer_to_npu never remaps it, and under NPU autocast it "
        "returns the CUDA setting (float16 unless set), not the NPU one: check code that casts to the dtype it returns.",
        "replacement": "torch.npu.get_autocast_dtype() (torch_npu.npu.__all__), or on torch>=2.4 torch.get_autocast_dtype('npu')",
        "severity": "info",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} per_version.*.torch_cuda_attrs_replaced (get_autocast_dtype is in torch_npu.npu.__all__; "
        "torch.get_autocast_gpu_dtype is not a torch.cuda name); pytorch/pytorch#124359 (torch 2.4: get_autocast_gpu_dtype "
        "is at::autocast::get_autocast_dtype(at::kCUDA), the thread-local autocast dtype, deprecated for get_autocast_dtype(device_type))",
    },
    {
        "id": "cuda-autocast-helpers",
        "apis": ["torch.set_autocast_gpu_dtype"],
        "reason": "torch.set_autocast_gpu_dtype sets the dtype of CUDA autocast only; it is not under torch.cuda, so transfer_to_npu "
        "never remaps it, and NPU autocast keeps its own dtype: the setting does not reach the NPU.",
        "replacement": "torch.npu.set_autocast_dtype(dtype) (torch_npu.npu.__all__), or on torch>=2.4 torch.set_autocast_dtype('npu', dtype)",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} per_version.*.torch_cuda_attrs_replaced (set_autocast_dtype is in torch_npu.npu.__all__; "
        "torch.set_autocast_gpu_dtype is not a torch.cuda name)",
    },
    {
        "id": "flex-attention",
        "apis": ["torch.nn.attention.flex_attention.flex_attention"],
        "reason": "flex_attention checks the device of its inputs before it runs, eagerly or compiled: PyTorch's _validate_device "
        "accepts only cuda, cpu, xpu, hpu and mps and raises ValueError ('FlexAttention is only supported on CUDA, CPU, HPU, or MPS "
        "devices') for tensors on an NPU; its fused form is an Inductor Triton template written for those devices. torch_npu's "
        "native-API lists do not list it, and transfer_to_npu does not wrap it.",
        "replacement": "Express the mask as an attention mask and call torch_npu.npu_fusion_attention (atten_mask / sparse_mode for causal "
        "and block-causal masks; actual_seq_qlen / actual_seq_kvlen for packed documents), or torch.nn.functional."
        "scaled_dot_product_attention with a boolean attn_mask built from the same mask function.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"pytorch/pytorch torch/nn/attention/flex_attention.py (torch 2.13.0: flex_attention -> _validate_device, "
        f"supported_devices = {{cuda, cpu, xpu, hpu, mps}}); {S_DOCS} (not listed); {S_OPP} torch_npu.npu_fusion_attention",
    },
    {
        "id": "torch-c-cuda-bindings",
        "apis": ["torch._C._cuda_*"],
        "reason": "torch._C._cuda_* are private bindings compiled only into CUDA builds of torch (torch/csrc/cuda/Module.cpp registers "
        "them when torch is built with CUDA); the torch of an Ascend host is the CPU build, where they do not exist (AttributeError), and "
        "transfer_to_npu patches the public torch.cuda names, never torch._C.",
        "replacement": "Use the public stream / device API instead of the private binding (torch.npu.current_stream(device), "
        "torch.npu.current_device(); or the public torch.cuda name, which transfer_to_npu maps).",
        "severity": "blocker",
        "reported_by": "cuda-api",
        "source": f"pytorch/pytorch torch/csrc/cuda/Module.cpp (THCPModule_methods: _cuda_getCurrentRawStream, _cuda_setDevice, ... "
        f"compiled under USE_CUDA); {S_TRANSFER} summary_master (torch.cuda attribute patches only)",
    },
    {
        "id": "torch-symmetric-memory",
        "apis": ["torch.distributed._symmetric_memory", "torch._C._distributed_c10d._SymmetricMemory"],
        "reason": "torch.distributed._symmetric_memory (symmetric-memory workspaces and rendezvous, put_signal / wait_signal, the fused "
        "all-gather / reduce-scatter matmuls of async tensor parallelism) is implemented for CUDA devices only (CUDASymmetricMemory "
        "over CUDA IPC handles and NVSHMEM); torch_npu's native-API support lists do not list it and transfer_to_npu does not wrap "
        "it, so a symmetric-memory buffer cannot be allocated for an NPU tensor.",
        "replacement": "Use ordinary collectives on the HCCL group (torch.distributed.all_gather_into_tensor / reduce_scatter_tensor "
        "around the matmul), or switch off the feature that asks for symmetric memory (async tensor parallelism, fused "
        "sequence-parallel ops).",
        "severity": "blocker",
        "reported_by": "cuda-api",
        "source": f"pytorch/pytorch torch/distributed/_symmetric_memory/__init__.py and torch/csrc/distributed/c10d/symm_mem/ "
        f"(CUDASymmetricMemory, NVSHMEM backends: CUDA builds only); {S_DOCS} (not listed); {S_TRANSFER} (not wrapped)",
    },
    {
        "id": "cuda-default-generators",
        "apis": ["torch.cuda.default_generators"],
        "reason": "Older guides say torch.cuda.default_generators is not supported; newer transfer_to_npu (2.7.1 and later) patches it lazily to "
        "torch_npu.npu.default_generators.",
        "replacement": "torch_npu.npu.default_generators",
        "severity": "info",
        "reported_by": "cuda-api",
        "source": f"{S_MIGR} auto_migration_restrictions; {S_TRANSFER} per_version.*.attribute_patches",
    },
]

# Which pass reports a fact's names that are not torch.cuda.* / torch.backends.cuda* (those the cuda-api pass reports
# for every fact, NPU001 / NPU005). "cuda-api": it reports them too (NPU006, this fact's reason and severity; env:
# names are its NPU007 from data/noise.yaml). Another pass name: that pass has its own rule for them (the fact gives
# explain its answer and keeps unknown-api quiet). "none": no pass reports them (cuda-get-device-capability-none's
# other names are the NPU spellings and their environment override: code that calls torch.npu.get_device_capability
# is already ported; cuda-sdp-kernel-selection's torch.nn.attention.sdpa_kernel sets the same global SDP flags as
# torch.backends.cuda.enable_*_sdp, which the NPU's SDPA ignores (cuda-sdp-backend-flags, info), and reporting it as
# manual measured one label gained and one decoy check lost on the tuned benchmark, the loss through a reach path
# that skips the option guard selecting the call).
# analyse/knowledge validates the field on load.
REPORTED_BY = {
    "cuda-api": "the cuda-api pass reports every name of the fact (NPU001 / NPU005 under torch.cuda / torch.backends, "
    "NPU006 elsewhere, NPU007 for env: names)",
    "distributed": "the distributed pass reports the names outside torch.cuda with its own rules (NPU10x)",
    "dtypes": "the dtypes pass reports the names outside torch.cuda with its own rules",
    "triton": "the triton pass reports the names outside torch.cuda with its own rules",
    "cuda-extension": "the cuda-extension pass reports the names outside torch.cuda with its own rules (NPU50x)",
    "none": "no pass reports the names outside torch.cuda (listed for explain and to keep unknown-api quiet)",
}

# torch.cuda memory / device-monitoring names; those absent from torch_npu.npu.__all__ are CUDA-only.
_MEMORY_RE = re.compile(r"(memory|mem_|cache|cached|allocat|gpu_processes|utilization|temperature|power_draw|clock_rate)", re.I)
_EXTRA_MEMORY_NAMES = ["memory_usage", "list_gpu_processes", "temperature", "power_draw", "clock_rate"]


def build_cuda_only(upstream: Path, date: str, transfer: dict, api_tables: dict) -> dict:
    derived: dict[str, list[str]] = {}
    for v in TORCH_VERSIONS:
        b = transfer["branches"][TRANSFER_BRANCH[v]]
        have = set(b["torch_cuda_attrs_replaced"])
        names = set(_EXTRA_MEMORY_NAMES)
        for api in api_tables[v]["apis"]:
            parts = api.split(".")
            if len(parts) >= 3 and parts[:2] == ["torch", "cuda"] and _MEMORY_RE.search(parts[2]) and parts[2] != "memory":
                names.add(parts[2])
        derived[v] = sorted(f"torch.cuda.{n}" for n in names if n not in have)
    facts = [dict(f) for f in STATIC_FACTS]
    for f in STATIC_FACTS:
        if f.get("reported_by") not in REPORTED_BY:
            raise SystemExit(f"cuda-only fact {f['id']}: reported_by must be one of {sorted(REPORTED_BY)}")
    union = sorted({n for v in TORCH_VERSIONS for n in derived[v]})
    facts.append({
        "id": "cuda-memory-stats",
        "apis": union,
        "apis_by_torch_version": {v: derived[v] for v in TORCH_VERSIONS},
        "reason": "These torch.cuda memory/device-monitoring names are not in torch_npu.npu.__all__ for the torch_npu line of this torch "
        "version, so transfer_to_npu leaves them on the CUDA implementation (they fail or report nothing on NPU).",
        "replacement": "Use the torch.npu memory API instead: torch.npu.memory_allocated(), torch.npu.max_memory_allocated(), "
        "torch.npu.memory_reserved(), torch.npu.memory_stats(), torch.npu.mem_get_info(); torch.npu.NPUPluggableAllocator for a custom "
        "allocator; for device monitoring (temperature, power, clock, processes) use the `npu-smi info` command.",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"derived: torch.cuda memory names from {S_DOCS} (+ PyTorch names memory_usage, list_gpu_processes, temperature, power_draw, "
        f"clock_rate) minus {S_TRANSFER} per_version.<branch>.torch_cuda_attrs_replaced",
    })
    # torch.cuda.memory module (not remapped; only a few private helpers are)
    facts.append({
        "id": "cuda-memory-module",
        "apis": ["torch.cuda.memory"],
        "excludes": ["torch.cuda.memory._record_memory_history", "torch.cuda.memory._snapshot", "torch.cuda.memory._dump_snapshot"],
        "reason": "The torch.cuda.memory submodule is not remapped by transfer_to_npu (only _record_memory_history/_snapshot/_dump_snapshot are "
        "patched); torch.cuda.memory.<fn> calls still reach the CUDA allocator.",
        "replacement": "Call the top-level torch.npu functions instead, e.g. torch.npu.memory_allocated() for torch.cuda.memory.memory_allocated().",
        "severity": "manual",
        "reported_by": "cuda-api",
        "source": f"{S_TRANSFER} summary_master.module_aliases / identity_replacements",
    })
    meta = {
        "kind": "cuda_only",
        "kb_format": KB_FORMAT,
        "generator": GENERATOR,
        "date": date,
        "torch_version": "all (facts with torch_versions apply to those versions only)",
        "torch_npu_version": "all supported lines (" + ", ".join(sorted(set(TRANSFER_BRANCH.values()))) + ")",
        "source": f"{REPO_PYTORCH} transfer_to_npu.py + native API docs; {REPO_DOCS} FrameworkPTAdapter/26.0.0 migration guide; {REPO_OP_PLUGIN} custom API docs",
        "source_repo": f"{REPO_PYTORCH}; {REPO_DOCS}; {REPO_OP_PLUGIN}",
        "branch": "master (transfer_to_npu summary), per-version branches for derived lists",
        "commit": {
            "Ascend/pytorch master": transfer["branches"]["master"]["branch_head_commit"],
            "Ascend-docs": _read_yaml(upstream / "ascend_docs" / "migration_facts.yaml")["meta"]["primary_source"]["commit"],
        },
        "path": f"{S_TRANSFER}; {S_MIGR}",
        "licence": f"{LICENCE_TORCH_NPU_CODE}; {LICENCE_DOCS}; Ascend docs facts only (no prose copied)",
        "matching": "an entry of apis matches the same name or any dotted descendant (torch.cuda.nvtx matches torch.cuda.nvtx.range_push); "
        "an entry ending in '*' matches any name starting with the text before it (env:NCCL_*). Longest entry wins. "
        "Names listed in excludes never match. Environment variables are written env:<NAME>. "
        "apis_by_torch_version, when present, replaces apis for that torch version.",
        "severity_values": {
            "blocker": "cannot run on NPU as written",
            "manual": "runs or imports but needs a manual change for correct NPU behaviour",
            "info": "behaviour/performance difference worth knowing",
        },
        "reported_by_values": dict(REPORTED_BY),
    }
    return {"meta": meta, "facts": facts}


# --------------------------------------------------------------------------- Triton-Ascend

REPO_TRITON_ASCEND = "triton-lang/triton-ascend"
LICENCE_TRITON_ASCEND = "triton-lang/triton-ascend LICENSE (not part of the snapshot); facts only, restated in English, no prose copied"
TA_DIR = "triton_ascend"

# dtype column names used by the docs -> one canonical name
_TA_COLUMN = {
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8", "uint16": "uint16",
    "uint32": "uint32", "uint64": "uint64", "fp16": "fp16", "float16": "fp16", "fp32": "fp32", "float32": "fp32",
    "fp64": "fp64", "float64": "fp64", "bf16": "bf16", "bfloat16": "bf16", "bool": "bool", "bool/int1": "bool",
    "int1": "bool", "float8e4": "fp8", "float8e5": "fp8", "fp8": "fp8", "fp4": "fp4",
}

# triton.language dtype objects: the doc column they fall under and their size in bytes (tile sizes)
TA_TL_DTYPES = {
    "int1": ["bool", 1], "int8": ["int8", 1], "int16": ["int16", 2], "int32": ["int32", 4], "int64": ["int64", 8],
    "uint8": ["uint8", 1], "uint16": ["uint16", 2], "uint32": ["uint32", 4], "uint64": ["uint64", 8],
    "float16": ["fp16", 2], "bfloat16": ["bf16", 2], "float32": ["fp32", 4], "float64": ["fp64", 8],
    "float8e4nv": ["fp8", 1], "float8e5": ["fp8", 1], "float8e4b15": ["fp8", 1], "float8e4b8": ["fp8", 1],
    "float8e5b16": ["fp8", 1],
}

# torch dtypes of tensors a wrapper passes to a kernel (pointer element types) -> the same dtype columns
TA_TORCH_DTYPES = {
    "float64": "fp64", "double": "fp64", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
    "float8_e5m2fnuz": "fp8", "float8_e8m0fnu": "fp8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
}

# Which element types a kernel may name at all, per chip. Restated from the op pages of the snapshot (cast.md:
# uint16/uint32/uint64, float8 and float64 are not cast targets on Atlas A2/A3) and from the later constraint
# tables the snapshot README summarises (fp64 on no Ascend chip; uint16/32/64 and fp8 on Ascend 950 only).
# ``blocks``: whether a kernel using the type on Atlas A2/A3 is blocked (the practice rule: "blocked only for
# something Triton-Ascend documents as unsupported that has no rewrite"). A type some Ascend chip has, whose
# A2/A3 rewrite keeps every value (fp8 widened to bf16, uintN held as intN), does not block: the kernel is
# manual work with that rewrite (``rewrite`` says why it is exact). fp64 exists on no Ascend chip and its fix
# (fp32) changes the results: it blocks.
TA_DTYPE_RULES = {
    "fp64": {"a2a3": False, "950": False,
             "why": "64-bit floating point is not supported by the Ascend vector and cube units: no triton.language op accepts "
                    "fp64 on any Ascend chip (every op page lists fp64 as missing, a hardware limit)",
             "fix": "compute in tl.float32 (accumulate in fp32; keep fp64 only on the host / in the PyTorch reference)",
             "blocks": True,
             "rewrite": "none that keeps the results: no Ascend chip has fp64, and fp32 changes what the kernel computes, "
                        "so its numerics are redesigned",
             "source": "docs/zh/triton_api/Creation_Ops/cast.md (fp64 column); README of the snapshot (later per-chip tables)"},
    "uint16": {"a2a3": False, "950": True,
               "why": "unsigned 16/32/64-bit integers are not a cast target on Atlas A2/A3 and almost no op takes them there "
                      "(only atomics, logical and/or, histogram and the random-number ops list uint32); Ascend 950 supports them",
               "fix": "use the signed type of the same width (tl.int32 / tl.int64) and mask the bits you need",
               "blocks": False,
               "rewrite": "exact: the signed type of the same width holds the same bits, so loads, stores, additions, "
                          "multiplications and bit operations give the same results (comparisons, right shifts and "
                          "divisions spell out the unsigned reading); Ascend 950 has the unsigned types",
               "source": "docs/zh/triton_api/Creation_Ops/cast.md; docs/sources/python-api/outline.md (uint32 column); "
                         "README of the snapshot (later per-chip tables: uint16/uint32/uint64 on Ascend 950 only)"},
    "fp8": {"a2a3": False, "950": True,
            "why": "fp8 element types (float8e4nv, float8e5 ...) are not supported on Atlas A2/A3 (cast and dot_scaled list "
                   "them as missing); Ascend 950 supports fp8",
            "fix": "keep the data in bf16 / fp16 on Atlas A2/A3, or target Ascend 950",
            "blocks": False,
            "rewrite": "exact: every float8e4nv / float8e5 value is exact in bf16 and fp16, so fp8 data widened to bf16 "
                       "before the launch (a kernel that writes fp8 writes bf16) loads the same numbers and the kernel's "
                       "arithmetic is unchanged, at twice the memory; Ascend 950 has the fp8 types",
            "source": "docs/zh/triton_api/Creation_Ops/cast.md; docs/zh/triton_api/Linear_Algebra_Ops/dot_scaled.md; "
                      "README of the snapshot (later per-chip tables)"},
}
TA_DTYPE_RULES["uint32"] = dict(TA_DTYPE_RULES["uint16"])
TA_DTYPE_RULES["uint64"] = dict(TA_DTYPE_RULES["uint16"])

# Per-op constraints, in English (own words), from the outline's constraint list and the op pages.
TA_OP_NOTES = {
    "dot": ["Inputs are A[batch?, M, K] and B[batch?, K, N].",
            "max_num_imprecise_acc (low-precision accumulation) is not supported."],
    "gather": ["Only gathering along the last axis (axis = ndim - 1) is supported."],
    "permute": ["Swapping non-adjacent axes, e.g. (0, 1, 2) -> (2, 1, 0), is not supported."],
    "trans": ["Swapping non-adjacent axes, e.g. (0, 1, 2) -> (2, 1, 0), is not supported."],
    "device_print": ["Prints only with the environment variable TRITON_DEVICE_PRINT=1."],
    "device_assert": ["Takes effect only with TRITON_DEBUG=1 and TRITON_DEVICE_PRINT=1."],
    "atomic_add": ["A multi-core add that keeps intermediate results through atomic_add is not supported: store the "
                   "partial results with a plain add instead."],
    "atomic_or": ["Not supported inside a loop."], "atomic_xor": ["Not supported inside a loop."],
    "atomic_and": ["Not supported inside a loop."], "atomic_xchg": ["Not supported inside a loop."],
    "atomic_cas": ["Not supported inside a loop."],
    "umulhi": ["Negative inputs are not supported."],
    "mod": ["int64 operands are handled correctly only within -2^24 .. 2^24."],
    "rand": ["The dtype table applies to the output; the seed may be any integer type."],
    "randn": ["The dtype table applies to the output."],
    "randint": ["The dtype table applies to the output."],
    "randint4x": ["The dtype table applies to the output."],
    "make_tensor_descriptor": ["make/load/store_tensor_descriptor must be used together."],
    "load_tensor_descriptor": ["make/load/store_tensor_descriptor must be used together."],
    "store_tensor_descriptor": ["make/load/store_tensor_descriptor must be used together."],
    "arange": ["start and end must be compile-time constants with 0 <= start, 0 <= end - start <= 1,048,576 "
               "(TRITON_MAX_TENSOR_NUMEL); int64 bounds are not supported; unlike CUDA, the range need not be a power of two."],
    "inline_asm_elementwise": ["The assembly must be written for the Ascend target: GPU assembly (PTX) does not compile."],
    "sort": ["Only 1- to 5-dimensional tensors."],
}
# Ops whose atomic memory semantics / scope are restricted: other values are accepted but behave as the default.
TA_PARAM_NOTE = {
    "sem": "only \"acq_rel\" is supported on Ascend; any other value (\"relaxed\", \"acquire\", \"release\") is treated "
           "as \"acq_rel\" (a stronger ordering than asked for: correct, possibly slower)",
    "scope": "only \"gpu\" is supported on Ascend; \"cta\" and \"sys\" are treated as \"gpu\" (check code that relies "
             "on the narrower or system-wide visibility it asked for)",
}

# Migration-guide and API rules, restated in English.
TA_RULES = {
    "max_programs": {
        "value": 65535,
        "text": "The number of programs of a launch (coreDim, the product of the grid dimensions) must not exceed 65,535 "
                "(UINT16_MAX); the compiler fails with 'coreDim=... can't be greater than UINT16_MAX'.",
        "fix": "set TRITON_ALL_BLOCKS_PARALLEL=1 (only when the programs can run in any order), or raise BLOCK_SIZE so that "
               "ceil(N / BLOCK_SIZE) <= 65535 (BLOCK_SIZE >= triton.next_power_of_2(triton.cdiv(N, 65535)))",
        "source": "docs/en/migration_guide/migrate_from_gpu.md (FAQ: coreDim limit)"},
    "grid_1d": {
        "text": "Prefer 1-D grids: 2-D and 3-D grids are merged into one dimension on Ascend, and the program count should "
                "match the number of physical AI cores (vector cores for vector-only kernels, AI cores for kernels "
                "using tl.dot).",
        "fix": "launch a 1-D grid (grid = (triton.cdiv(N, BLOCK),)) and derive the row/column from tl.program_id(0); "
               "for best speed, loop over blocks inside a kernel launched with one program per core",
        "source": "docs/en/migration_guide/migrate_from_gpu.md (Core Migration Principles; Single-Core Data Computation)"},
    "unified_buffer": {
        "value": 196608,
        "text": "A program's tiles live in the unified buffer (UB) of its core: 1,572,864 bits = 192 KiB. Tiles larger than "
                "that fail to compile with 'ub overflow, requires ... bits while 1572864 bits available!'.",
        "fix": "split the block into sub-blocks (a BLOCK_SIZE_SUB loop inside the kernel) so each live tile stays well "
               "below 192 KiB (half of it with double buffering)",
        "source": "docs/en/migration_guide/migrate_from_gpu.md (FAQ: UB overflow)"},
    "arange_max": {
        "value": 1048576,
        "text": "tl.arange(start, end) needs 0 <= end - start <= 1,048,576 (TRITON_MAX_TENSOR_NUMEL) and constant bounds.",
        "fix": "tile the range: loop over sub-ranges of at most 1,048,576 elements",
        "source": "docs/zh/triton_api/Creation_Ops/arange.md"},
    "alignment": {
        "text": "Vector operations need 32-byte aligned memory accesses and cube-vector fusion 512-byte alignment; "
                "unaligned accesses are slower and use more UB.",
        "source": "docs/en/migration_guide/migrate_from_gpu.md (Core Migration Principles)"},
    "device_discovery": {
        "text": "triton.runtime.driver.active.get_active_torch_device() and torch.cuda device queries are GPU device "
                "discovery: on an Ascend host the device is 'npu' (import torch_npu) and the core count comes from "
                "triton.runtime.driver.active.utils.get_device_properties(device).",
        "fix": "import torch_npu and use device='npu' (torch.npu.current_device()); drop CUDA-capability checks that pick "
               "a kernel and select the Triton-Ascend path explicitly",
        "source": "docs/en/migration_guide/migrate_from_gpu.md (Complete Migration Example; Single-Core Data Computation)"},
}
# triton.Config / triton.autotune / launch settings that do nothing or differ on Ascend.
TA_CONFIG = {
    "num_stages": {"text": "software-pipelining depth for NVIDIA GPUs (SM80+); not applicable on Ascend (ignored).",
                   "fix": "drop num_stages from the configs (tune BLOCK sizes and multibuffer instead)"},
    "num_ctas": {"text": "thread-block clusters (SM90+ only); not applicable on Ascend.",
                 "fix": "drop num_ctas"},
    "maxnreg": {"text": "the PTX .maxnreg register limit; no effect on Ascend.", "fix": "drop maxnreg"},
    "use_cuda_graph": {"text": "triton.autotune benchmarking with CUDA graphs; not applicable on Ascend.",
                       "fix": "drop use_cuda_graph=True"},
}
TA_CONFIG_SOURCE = ("docs/zh/triton_api/triton/Config.md and triton/autotune.md (parameters); README of the snapshot "
                    "(later constraint tables: num_stages / num_ctas not applicable, maxnreg no effect, use_cuda_graph not "
                    "applicable)")
TA_INVALID_CALLS = {
    "triton.language.inline_asm_elementwise": "inline GPU assembly (PTX) does not compile for Ascend; rewrite the "
                                               "element-wise function with triton.language ops",
    "triton.language.extra.cuda": "CUDA-only helpers (libdevice, globaltimer, smid, convert_custom_float8 ...) have no "
                                  "Ascend implementation",
    "triton.language.extra.libdevice": "libdevice math functions (community Triton dispatches them to the CUDA / HIP "
                                       "libdevice) are not part of the Triton-Ascend API; use the triton.language math "
                                       "ops (tl.exp, tl.erf, tl.sqrt ...)",
    "triton.language.libdevice": "NVIDIA libdevice math functions have no Ascend implementation; use the "
                                 "triton.language math ops (tl.exp, tl.erf, tl.sqrt ...)",
    "triton.language.math.libdevice": "NVIDIA libdevice math functions have no Ascend implementation; use the "
                                      "triton.language math ops (tl.exp, tl.erf, tl.sqrt ...)",
}

_TA_YES = ("√", "✓")


def _ta_cells(line: str) -> list[str]:
    """The cells of a Markdown table row, by position: one boundary pipe is dropped at each end, so an empty
    first cell (a header written `|| uint8 | int8 |`) stays a cell and the columns stay aligned with the rows."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [c.strip() for c in line.split("|")]


def _ta_mark(cell: str):
    cell = cell.strip()
    if not cell:
        return None
    if cell.startswith(_TA_YES):
        return True
    if cell.startswith("×") or cell in ("x", "X"):
        return False
    return None


def _ta_outline(path: Path) -> dict:
    """op -> {dtype: bool} from the support overview (docs/sources/python-api/outline.md)."""
    out: dict = {}
    header = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = _ta_cells(line.replace("\\|", "¦"))
        if "Triton Op" in cells:
            header = [_TA_COLUMN.get(c.strip()) for c in cells]
            continue
        if header is None or set(line) <= set("|:- "):
            continue
        op = cells[1].split("(")[0].strip().replace(" ", "_")
        if not op:
            continue
        marks = {}
        for col, cell in zip(header, cells):
            m = _ta_mark(cell)
            if col and m is not None:
                marks[col] = m
        out[op] = marks
    return out


def _ta_page(path: Path) -> dict:
    """dtype row for Atlas A2/A3, parameter restrictions and unsupported parameters of one op page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    dtypes: dict = {}
    header = None
    header_line = ""
    table: list = []
    params: dict = {}
    unsupported_params: list = []
    for line in lines:
        if not line.startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = _ta_cells(line)
        cols = [_TA_COLUMN.get(c) for c in cells]
        if sum(1 for c in cols if c) >= 4:
            header, header_line = cols, line
            continue
        if header is not None and cells and cells[0].replace(" ", "").startswith("AscendA2/A3") and not dtypes:
            for col, cell in zip(header, cells):
                m = _ta_mark(cell)
                if col and m is not None:
                    dtypes[col] = m
            if dtypes:
                table = [" ".join(header_line.split()), " ".join(line.split())]
            continue
        name = re.match(r"`(\w+)`$", cells[0]) if cells else None
        if name and not name.group(1).startswith("_"):   # _semantic, _builder ...: reserved, never passed by users
            text = " ".join(cells[1:])
            only = re.search(r"只支持((?:[“\"][^”\"]+[”\"][、，,和 ]*)+)", text)
            if only:
                params[name.group(1)] = {
                    "accepted": re.findall(r"[“\"]([^”\"]+)[”\"]", only.group(1)),
                    "gpu_values": sorted(set(re.findall(r"[“\"]([a-z_]+)[”\"]", text.split("只支持")[0]))),
                }
            elif "不支持" in text:
                unsupported_params.append(name.group(1))
    return {"dtypes": dtypes, "params": params, "unsupported_params": unsupported_params, "table": table}


def build_triton_ascend(upstream: Path, date: str) -> dict:
    base = upstream / TA_DIR
    readme = (base / "README.md").read_text(encoding="utf-8")
    commit = re.search(r"commit `([0-9a-f]{40})`", readme).group(1)
    commit_date = re.search(r"commit `[0-9a-f]{40}`\s*\((\d{4}-\d{2}-\d{2})\)", readme).group(1)
    outline = _ta_outline(base / "sources" / "python-api" / "outline.md")
    pages = {}
    for p in sorted((base / "zh" / "triton_api").glob("*/*.md")):
        if p.stem == "index" or p.parent.name == "triton":
            continue
        op = p.stem[3:] if p.stem.startswith("tl.") else p.stem
        pages[op] = (p.parent.name, p)
    ops = {}
    for op in sorted(set(outline) | set(pages)):
        group, page = pages.get(op, (None, None))
        entry: dict = {}
        info = _ta_page(page) if page is not None else {"dtypes": {}, "params": {}, "unsupported_params": []}
        a2a3 = info["dtypes"] or outline.get(op) or {}
        entry["group"] = group or "(overview only)"
        entry["doc"] = (f"docs/zh/triton_api/{group}/{page.name}" if page is not None
                        else "docs/sources/python-api/outline.md")
        entry["dtype_source"] = ("op page" if info["dtypes"] else "overview") if a2a3 else "none"
        entry["a2a3"] = {"supported": [d for d in a2a3 if a2a3[d]], "unsupported": [d for d in a2a3 if not a2a3[d]]}
        if info["dtypes"]:
            # the page's header and Atlas A2/A3 row, as evidence; the header's first cell is the only Chinese text of
            # the table (支持情况 "support", 输入类型 "input type"), shipped in English like every knowledge text
            entry["dtype_table"] = [row.replace("支持情况", "Support").replace("输入类型", "Input type")
                                    for row in info["table"]]
        entry["ascend_extension"] = group == "Extension_Ops"
        if a2a3 and not any(a2a3.values()):
            entry["unsupported"] = True
        if info["params"]:
            entry["params"] = {k: dict(v, note=TA_PARAM_NOTE.get(k, "")) for k, v in sorted(info["params"].items())}
        if info["unsupported_params"]:
            entry["unsupported_params"] = info["unsupported_params"]
        if op in TA_OP_NOTES:
            entry["constraints"] = TA_OP_NOTES[op]
        ops[op] = entry
    rel = re.search(r"\| (\d+\.\d+\.\d+) \| (\d\.\d+) to (\d\.\d+)\|", (base / "en" / "release_note.md").read_text(encoding="utf-8"))
    meta = {
        "kind": "triton_ascend",
        "kb_format": KB_FORMAT,
        "generator": GENERATOR,
        "date": date,
        "source": f"{REPO_TRITON_ASCEND} documentation (support overview, per-op pages, migration guide, release note, FAQ)",
        "source_repo": REPO_TRITON_ASCEND,
        "branch": "main",
        "commit": commit,
        "commit_date": commit_date,
        "path": "docs/sources/python-api/outline.md; docs/zh/triton_api/<Group>/<op>.md; "
                "docs/en/migration_guide/migrate_from_gpu.md; docs/en/release_note.md; docs/en/FAQ.md",
        "licence": LICENCE_TRITON_ASCEND,
        "derived_from": "shared/upstream/triton_ascend (dtype tables and parameter values parsed from the pages; texts "
                        "restated in English by tools/build_knowledge.py)",
        "chips": {"a2a3": "Atlas A2/A3", "950": "Ascend 950"},
        "dtype_columns": "a2a3.supported / a2a3.unsupported list the dtype columns of the op page (else of the overview) "
                         "for Atlas A2/A3; a dtype in neither list is not documented for the op",
    }
    return {
        "meta": meta,
        "package": {
            "name": "triton-ascend",
            "min_version": rel.group(1),
            "python": f"{rel.group(2)}-{rel.group(3)}",
            "python_min": rel.group(2),
            "python_max": rel.group(3),
            "hardware": "Atlas A2/A3",
            "install": "pip uninstall triton; pip install triton-ascend",
            "coexistence": "community triton and triton-ascend cannot be installed together: uninstall triton first "
                           "(packages that depend on triton may reinstall it and overwrite triton-ascend)",
            "source": "docs/en/release_note.md (compatibility matrix); docs/en/FAQ.md (installation)",
        },
        "tl_dtypes": TA_TL_DTYPES,
        "torch_dtypes": TA_TORCH_DTYPES,
        "dtype_rules": TA_DTYPE_RULES,
        "invalid_calls": TA_INVALID_CALLS,
        "rules": TA_RULES,
        "config": {"settings": TA_CONFIG, "source": TA_CONFIG_SOURCE},
        "ops": ops,
    }


# --------------------------------------------------------------------------- curation


def _aten_base(op: str) -> str:
    return op.split("@", 1)[0].split(".", 1)[0]


def apply_curation(api_tables: dict, aten: dict, transfer: dict, curation: dict) -> dict:
    """Apply data/curation.yaml's overrides over the official tables (in place); {override id: [versions]}."""
    applied: dict = {}
    for o in curation["overrides"]:
        applied[o["id"]] = []
        for v in TORCH_VERSIONS:
            if o.get("torch_versions") and v not in o["torch_versions"]:
                continue
            apis = api_tables[v]["apis"]
            kernels = {_aten_base(x) for x in aten["by_torch_version"][v]} | {_aten_base(x) for x in aten.get("torch_npu_native", [])}
            if any(op not in kernels for op in o.get("requires_aten") or ()):
                continue
            wrapped = set(transfer["branches"][TRANSFER_BRANCH[v]]["device_rewrite_functions"])
            if any(a not in wrapped for a in o.get("requires_transfer") or ()):
                continue
            names = [n for n in apis if cur_mod.matches(o["apis"], n)] if o["official"] == "unsupported" else \
                [n for n in o["apis"] if "*" not in n and n not in apis]
            for name in names:
                row = apis.get(name)
                if o["official"] == "unsupported" and (row is None or row["status"] != "unsupported"):
                    continue
                parent = name.rsplit(".", 1)[0]
                if o.get("requires_parent") and (apis.get(parent) or {}).get("status") not in ("supported", "limited"):
                    continue
                same = o.get("same_as")
                if same is not None:
                    # the status, limitations (text, checks, products) of the row the API's code is: in this release
                    ref = apis.get(same)
                    if ref is None or ref.get("curation") or ref["status"] not in ("supported", "limited"):
                        continue
                    entry = {k: v for k, v in ref.items() if k != "file"}
                    if entry.get("checks"):
                        # the other side's parameters come in another order (a module's constructor has no input,
                        # F.max_pool3d's ceil_mode precedes return_indices): its checks match by keyword only
                        entry["checks"] = [{k: v for k, v in c.items() if k != "position"} for c in entry["checks"]]
                    if row and row.get("file"):
                        entry["file"] = row["file"]
                else:
                    entry = dict(row or {})
                    entry.pop("hardware", None)  # the per-product answer of the official No row
                    entry["status"] = o["status"]
                    if o["status"] == "limited":
                        entry["limitations"] = " ".join(o["limitations"].split())
                        entry["english"] = "original"
                entry["curation"] = {
                    "id": o["id"],
                    "official": o["official"],
                    "contradicted_by": " ".join(o["contradicted_by"].split()).replace("the optimizer's class row", f"the class row {parent}"),
                    "evidence": [f"{e['kind']}: {' '.join(e['fact'].split())} ({e['source']})" for e in o["evidence"]],
                    "advice": " ".join(o["advice"].split()),
                }
                apis[name] = entry
                if v not in applied[o["id"]]:
                    applied[o["id"]].append(v)
        if not applied[o["id"]]:
            raise SystemExit(f"data/curation.yaml: override {o['id']} applies to no torch version (its official row or "
                             "conditions never hold)")
    for v in TORCH_VERSIONS:
        counts = {"supported": 0, "limited": 0, "unsupported": 0}
        for e in api_tables[v]["apis"].values():
            counts[e["status"]] += 1
        m = api_tables[v]["meta"]
        m["counts"] = counts
        m["curation"] = {"file": "data/curation.yaml",
                         "overridden": sorted(n for n, e in api_tables[v]["apis"].items() if e.get("curation"))}
    return applied


def unreviewed_contradictions(api_tables: dict, curation: dict) -> tuple[list, list]:
    """(every self-contradiction of the official tables, those no curation entry covers)."""
    views = {v: cur_mod.official_view(api_tables[v]["apis"]) for v in TORCH_VERSIONS}
    found = cur_mod.contradictions(views, TORCH_VERSIONS)
    return found, [c for c in found if cur_mod.covering_entry(curation, c) is None]


# --------------------------------------------------------------------------- main


def build(upstream: Path, out: Path) -> list[Path]:
    upstream = upstream.resolve()
    if not (upstream / "torch_npu" / "transfer_to_npu_facts.yaml").is_file():
        raise SystemExit(f"{upstream} does not look like shared/upstream (transfer_to_npu_facts.yaml missing)")
    date = _build_date(upstream)
    written: list[Path] = []

    api_tables = {}
    doc_commits = {}
    translator = build_translator(upstream)
    all_stats = {}
    for v in TORCH_VERSIONS:
        c: dict = {}
        stats = {"texts": 0, "with_checks": 0, "all_checks": 0}
        api_tables[v] = build_api_table(upstream, v, date, c, translator, stats)
        all_stats[v] = stats
        doc_commits[v] = c["docs"]

    aten = build_aten(upstream, date)
    p = out / "op_support" / "aten_kernels.json"
    _dump_json(aten, p, compact=True)
    written.append(p)

    transfer = build_transfer(upstream, date)
    p = out / "transfer_to_npu.json"
    _dump_json(transfer, p, compact=False)
    written.append(p)

    repo = Path(__file__).resolve().parent.parent
    curation = cur_mod.validate_curation(_read_yaml(repo / "data" / cur_mod.CURATION_FILE))
    found, unreviewed = unreviewed_contradictions(api_tables, curation)
    if unreviewed:
        raise SystemExit("self-contradictions of the official tables nobody reviewed (add them to data/curation.yaml):\n"
                         + "\n".join(f"  {c.version} {c.kind}: {c.api} No, but {c.other} is Yes" for c in unreviewed))
    applied = apply_curation(api_tables, aten, transfer, curation)
    build.curation = (found, applied)  # type: ignore[attr-defined]

    for v in TORCH_VERSIONS:
        p = out / "op_support" / f"torch_{v}.json"
        _dump_json(api_tables[v], p, compact=True)
        written.append(p)

    cuda_only = build_cuda_only(upstream, date, transfer, api_tables)
    p = out / "cuda_only.yaml"
    _dump_yaml(cuda_only, p, "# GENERATED by tools/build_knowledge.py from shared/upstream - do not edit by hand.\n")
    written.append(p)

    triton_ascend = build_triton_ascend(upstream, date)
    p = out / "triton_ascend.yaml"
    _dump_yaml(triton_ascend, p, "# GENERATED by tools/build_knowledge.py from shared/upstream/triton_ascend - do not edit by hand.\n")
    written.append(p)

    versions = {}
    for v in TORCH_VERSIONS:
        m = api_tables[v]["meta"]
        b = transfer["branches"][TRANSFER_BRANCH[v]]
        versions[v] = {
            "torch_npu_version": _torch_npu_version(v),
            "api_table": f"op_support/torch_{v}.json",
            "docs": {"repo": REPO_PYTORCH, "branch": m["branch"], "commit": m["commit"], "path": m["path"], "date": m["path_last_commit_date"]},
            "transfer_to_npu": {"repo": REPO_PYTORCH, "branch": b["branch"], "commit": b["branch_head_commit"], "date": b["file_last_commit_date"]},
            "op_plugin": {"repo": REPO_OP_PLUGIN, "branch": "master", "commit": aten["meta"]["commit"], "torch_key": _torch_key(v)},
            "counts": m["counts"],
        }
    index = {
        "meta": {
            "kind": "knowledge_index",
            "kb_format": KB_FORMAT,
            "generator": GENERATOR,
            "date": date,
            "torch_version": ", ".join(TORCH_VERSIONS),
            "torch_npu_version": "per torch version (see versions)",
            "source": "shared/upstream snapshot (Ascend/pytorch, Ascend/op-plugin, Ascend/mstt, Ascend docs), collected " + date,
            "source_repo": f"{REPO_PYTORCH}; {REPO_OP_PLUGIN}; {REPO_MSTT}; {REPO_DOCS}",
            "branch": "per file",
            "commit": "per file",
            "path": "shared/upstream",
            "licence": f"{LICENCE_DOCS} (API tables); {LICENCE_TORCH_NPU_CODE}; {LICENCE_OP_PLUGIN}; {LICENCE_MSTT}",
        },
        "torch_versions": list(TORCH_VERSIONS),
        "default_torch_version": DEFAULT_TORCH_VERSION,
        "files": {
            "transfer_to_npu": "transfer_to_npu.json",
            "cuda_only": "cuda_only.yaml",
            "aten_kernels": "op_support/aten_kernels.json",
        },
        "versions": versions,
    }
    p = out / "knowledge_index.json"
    _dump_json(index, p, compact=False)
    written.append(p)
    build.stats = all_stats  # type: ignore[attr-defined]
    return written


def main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_up = next((d / "shared" / "upstream" for d in repo.parents if (d / "shared" / "upstream").is_dir()), repo.parent / "shared" / "upstream")
    ap.add_argument("--upstream", type=Path, default=default_up, help="shared/upstream folder (default: the nearest ../shared/upstream)")
    ap.add_argument("--out", type=Path, default=repo / "data", help="output data folder (default: data/)")
    args = ap.parse_args(argv)
    written = build(args.upstream, args.out)
    total = sum(p.stat().st_size for p in written)
    for p in written:
        print(f"{p.stat().st_size:>9}  {p}")
    print(f"{total:>9}  total")
    found, applied = build.curation  # type: ignore[attr-defined]
    print(f"curation: {len(found)} self-contradictions of the official tables, all reviewed; overrides applied: "
          + ", ".join(f"{k} ({', '.join(v)})" for k, v in applied.items()))
    for v, st in build.stats.items():  # type: ignore[attr-defined]
        print(f"torch {v:<7} limitation texts {st['texts']:>5}: {st['with_checks']:>5} became checks "
              f"({st['all_checks']} entirely), English: " + ", ".join(f"{k} {st[k]}" for k in sorted(st) if k not in ("texts", "with_checks", "all_checks")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
