"""``npu-analyse explain NAME``: what the knowledge base says about one API or library name.

For a torch API: the status in every torch version of the knowledge base side by side (one
table), what transfer_to_npu does with it, the structured limitation checks and the remaining
limitation text (plain text, English where the docs have it), CUDA-only facts. For a
third-party name (flash-attn, xFormers, apex, bitsandbytes, DeepSpeed ops, Triton ...): the
library entry and its NPU replacement. Every name a finding can carry as its ``api`` is answered: rule
codes (``NPU004``), the pattern ids of the passes (``device-type-check``, ``rms-norm``, ``project:task-queue``,
``package:flash-attn``, ``CUDA_VISIBLE_DEVICES`` ...), torch names the support lists do not document
(unverified, NPU301) and non-torch APIs the knowledge files name (``torchvision.ops.boxes.batched_nms``).
Only names none of these know are unknown (exit status 1). Sources are named by their public repository,
never by the builder's ``shared/upstream`` paths.
"""

from __future__ import annotations

import difflib
import re
from typing import Dict, List, Optional, Tuple

from analyse.knowledge import DEFAULT_TORCH_VERSION, TORCH_VERSIONS, load_knowledge
from analyse.knowledge.markdown import to_plain
from analyse.knowledge.kernel_hub import hub_kernel, looks_like_kernel_id

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


# internal folders of the knowledge builder -> the public sources they hold (see tools/build_knowledge.py)
_PUBLIC = (
    ("shared/upstream/torch_npu/native_api_support", "Ascend/pytorch native-API support list"),
    ("shared/upstream/torch_npu/native_api_docs", "Ascend/pytorch native-API docs"),
    ("shared/upstream/torch_npu", "Ascend/pytorch"),
    ("shared/upstream/op-plugin", "Ascend/op-plugin"),
    ("shared/upstream/mstt_msfmktransplt", "Ascend/mstt msfmktransplt"),
    ("shared/upstream/ascend_docs", "Ascend docs (FrameworkPTAdapter migration guide)"),
    ("shared/upstream/triton_ascend", "triton-lang/triton-ascend"),
    ("shared/upstream", "the Ascend public sources"),
)


def public_sources(text: str) -> str:
    """Source notes with the builder's internal paths replaced by the public repositories they copy."""
    for internal, public in _PUBLIC:
        text = re.sub(re.escape(internal) + r"(/[\w.\-/{},*]*)?", lambda m, p=public: p + (
            " " + m.group(1).rsplit("/", 1)[-1] if m.group(1) and "." in m.group(1).rsplit("/", 1)[-1] else ""), text)
    return text


def _rule_lines(codes) -> List[str]:
    from analyse.passes import all_rules

    rules = {r.code: r for r in all_rules()}
    out = []
    for c in codes:
        r = rules.get(c)
        if r is None:
            continue
        out += [f"  {r.code} {r.name} ({r.category}, {r.severity}): {r.summary}", f"    why: {r.why}",
                "    fix: " + r.fix.replace("\n", "\n         ")]
    return out


# pattern ids (finding ``api`` values that are not API names) -> the rules that report them
_PATTERNS: Dict[str, Tuple[str, ...]] = {
    "device-type-check": ("NPU004",), "cuda-availability-flag": ("NPU004",), "device:cuda": ("NPU003",), "torch.distributed.backend:nccl": ("NPU101", "NPU102"),
    "attention": ("NPU704",), "collate_fn:pad-to-longest": ("NPU604",), "tokenizer(padding=True)": ("NPU604",),
    "torch.Tensor.__getitem__": ("NPU602",), "torch.Tensor.__setitem__": ("NPU602",), "nvidia-smi": ("NPU007", "NPU905"),
    "nvcc": ("NPU503", "NPU905"), "project:compile-mode": ("NPU807",), "project:task-queue": ("NPU808",),
    "project:hccl-ffts": ("NPU809",), "launcher:backend-nccl": ("NPU907",), "launcher:nproc-gpu": ("NPU907",),
}
_PATTERN_PREFIXES: Dict[str, Tuple[str, ...]] = {
    "package:": ("NPU901", "NPU902"), "torch-version:": ("NPU902",), "image:": ("NPU903",), "launcher:": ("NPU907",),
    "cuda-source:": ("NPU507",), "project:": ("NPU807", "NPU808", "NPU809"), "device:": ("NPU003",),
}


def _pattern(name: str, kb) -> Optional[List[str]]:
    """The answer for a pattern id, an environment variable or a rule name; None when it is none of these."""
    from analyse.passes import all_rules
    from analyse.passes.cuda_api import CUDA_ENV_VARS
    from analyse.passes.distributed import NCCL_ENV

    codes = _PATTERNS.get(name)
    if codes is None:
        codes = next((c for p, c in _PATTERN_PREFIXES.items() if name.startswith(p)), None)
    by_name = [r for r in all_rules() if r.name == name]
    if codes is None and by_name:
        codes = (by_name[0].code,)
    if codes is None and name in kb.data_file("affinity.yaml").get("patterns", {}):
        codes = ("NPU711",)  # entries of the msfmktransplt affinity list (matmul-transpose, roll)
    extra: List[str] = []
    if name in CUDA_ENV_VARS or name.startswith("CUDA_"):
        codes = ("NPU007", "NPU904")
        repl = CUDA_ENV_VARS.get(name)
        extra.append(f"  on NPU:       read by the CUDA runtime only; {'use ' + repl if repl else 'no Ascend equivalent: drop it'}")
    elif name in NCCL_ENV or name.startswith("NCCL_"):
        codes = ("NPU105", "NPU906")
        repl = NCCL_ENV.get(name)
        extra.append(f"  on NPU:       configures NCCL, which HCCL ignores; {'use ' + repl.strip() if repl else 'no HCCL equivalent: drop it'}")
    if codes is None:
        return None
    aff = kb.data_file("affinity.yaml").get("patterns", {}).get(name)
    if aff:
        extra.append(f"  NPU API:      {aff.get('api')}")
        extra.append(f"  call:         {' '.join(str(aff.get('call', '')).split())}")
        if aff.get("products"):
            extra.append(f"  products:     {', '.join(aff['products'])}")
        if aff.get("limits"):
            extra.append(f"  limits:       {' '.join(str(aff['limits']).split())}")
    if name.startswith("project:"):
        conf = kb.data_file("advice.yaml").get("configuration", {})
        key = {"project:compile-mode": "compile_mode", "project:task-queue": "TASK_QUEUE_ENABLE",
               "project:hccl-ffts": "HCCL_OP_BASE_FFTS_MODE_ENABLE"}.get(name)
        if key in conf:
            extra.append(f"  advice:       {' '.join(str(conf[key].get('advice', '')).split())}")
    if name.startswith("package:"):
        lines = _third_party(name[len("package:"):].replace("-", "_"), kb)
        if lines:
            extra += ["  " + ln for ln in lines]
    kind = "environment variable" if extra and name.isupper() else "pattern the scan reports"
    return [f"{name}  ({kind}; rule{'s' if len(codes) > 1 else ''} {', '.join(codes)})"] + extra + _rule_lines(codes)


def _other_api(name: str, kb) -> Optional[List[str]]:
    """Non-torch APIs the knowledge files name: value-dependent ops (dynamic_shape.yaml), affinity targets,
    advice APIs."""
    lines: List[str] = []
    ops = kb.data_file("dynamic_shape.yaml").get("ops", {})
    for op, spec in ops.items():
        if name in (spec.get("functions") or ()):
            lines += [f"{name}  (value-dependent output shape: {op}; rule NPU601)",
                      f"  why:          {' '.join(str(spec.get('why', '')).split())}",
                      f"  instead:      {' '.join(str(spec.get('fix', '')).split())}"]
    if name.startswith("torchvision.ops") and name.rsplit(".", 1)[-1] in ("nms", "batched_nms"):
        aff = kb.data_file("affinity.yaml")["patterns"]["nms"]
        lines += [f"  NPU708 (nms): needs the Ascend Torchvision Adapter on the NPU; torch_npu.contrib has multiclass NMS: "
                  f"{' '.join(str(aff['call']).split())}", f"  note:         {' '.join(str(aff['limits']).split())}"]
    if name.startswith("torchvision.ops") and "roi_align" in name.lower():
        aff = kb.data_file("affinity.yaml")["patterns"]["roi-align"]
        lines += [f"{name}  (NPU707 roi-align)", f"  NPU API:      {' '.join(str(aff['call']).split())}"]
    return lines or None


def _implicit_switch(name: str, kb) -> Optional[List[str]]:
    """``keyword=value`` as the implicit-gpu-libs pass names it (``mixed_precision='fp8'``,
    ``load_in_4bit=True, bnb_4bit_quant_type='fp4'``, ``mixed_precision=...`` for a user's choice): the
    switches of data/implicit_gpu_libs.yaml on that keyword; None when no switch has it."""
    from fnmatch import fnmatchcase

    from analyse.passes.implicit_libs import switch_table

    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", name)
    if m is None:
        # a call that switches the library on by itself (`AORecipeKwargs(...)`, `prepare_model_for_kbit_training`)
        rows = [sw for sw in switch_table(kb) if sw.keyword is None and any(fnmatchcase(name, g) for g in sw.calls)]
        head = f"{name}  (a call that switches on a GPU-only library)"
        if not rows:
            # a library or a call whose keyword arguments ask for GPUs (`ray`, `ray.remote`: num_gpus=, bundles)
            rows = [sw for sw in switch_table(kb) if sw.keyword is not None
                    and (sw.via == name or any(g == name for g in sw.calls))]
            head = f"{name}  (its keyword arguments can switch on a GPU-only feature)"
    else:
        rows = [sw for sw in switch_table(kb) if sw.keyword == m.group(1)]
        head = f"{name}  (a keyword argument that switches on a GPU-only library)"
    if not rows:
        return None
    lines = [head]
    for sw in rows:
        when = ", ".join(repr(v) for v in sw.values) if sw.values else repr(sw.on)
        what = f"`{sw.keyword}` = {when} on" if sw.keyword is not None else "a call of"
        lines += [f"  {sw.code} ({sw.id}): {what} {', '.join(sw.calls)} makes {sw.via} use "
                  f"{sw.library} ({sw.feature}); {sw.severity} on an NPU",
                  f"    why:        {sw.reason}",
                  f"    instead:    {sw.replacement}"]
        if sw.quant_type is not None:
            qt = sw.quant_type
            lines.append(f"    {qt.keyword}: default {qt.default!r}; runs with {', '.join(map(repr, qt.supported))}: "
                         f"{qt.reason}")
        lines.append(f"    source:     {sw.source}")
    if m is not None:
        lines.append("  a value the scan cannot read (`keyword=...`) is a user's choice: listed, off the path when the "
                     "option's default does not switch it on, counted when it does")
    return lines


def _kernel_hub(name: str) -> Optional[List[str]]:
    """A kernel-hub id (``kernels-community/flash-attn3``): what data/kernel_hub.yaml says about its builds."""
    e = hub_kernel(name)
    if e is None:
        return [f"{name}  (a kernel-hub id)",
                "  no NPU build on record (data/kernel_hub.yaml names none for this id): `get_kernel` is a pure-Python "
                "loader with an Ascend backend, so what decides is whether the hub repository publishes an npu / cann "
                "build variant; without one the call is NPU469 (blocker)"]
    status = "runs on an NPU (an Ascend build is published)" if e.runs_on_npu else "GPU-only (NPU469, blocker)"
    return [f"{name}  (a kernel-hub id; data/kernel_hub.yaml, {e.id})",
            f"  status:       {status}",
            f"  why:          {e.reason}",
            f"  instead:      {e.replacement}",
            f"  source:       {e.source}"]


def _typo_of(name: str, known: str) -> bool:
    """``name`` looks like a typo of ``known``: the same parent, and the last parts differ by at most two edits
    (a swap counts as one) that are not an in-place ``_`` or a longer real name (TransformerEncoderLayer)."""
    (p1, _, a), (p2, _, b) = name.rpartition("."), known.rpartition(".")
    if p1 != p2 or a.rstrip("_") == b.rstrip("_") or len(a) > len(b) or len(b) - len(a) > 2:
        return False
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)] <= 2


def _close_names(name: str, kb, cutoff: float = 0.8) -> List[str]:
    """Names the knowledge base has that are close to ``name`` (difflib): documented torch APIs, the torch.cuda names
    transfer_to_npu maps, third-party modules, rule names and pattern ids."""
    from analyse.passes import all_rules
    from analyse.passes._libtable import lib_table

    if name.startswith("torch"):
        pool = set(kb.documented_names()) | {f"torch.cuda.{a}" for a in kb.torch_cuda_attrs_replaced}
        pool |= set(kb.device_rewrite_functions)
    else:
        table = lib_table(kb)
        pool = set(table.by_prefix) | {r.name for r in all_rules()} | set(_PATTERNS)
    return difflib.get_close_matches(name, sorted(pool), n=3, cutoff=cutoff)


def explain_name(name: str, torch_version: Optional[str] = None) -> Tuple[str, int]:
    """(text, exit status): 0 when the knowledge base knows the name, 1 when it does not."""
    text, status = _explain_name(name, torch_version)
    return public_sources(text), status


def _explain_name(name: str, torch_version: Optional[str] = None) -> Tuple[str, int]:
    name = _normalise(name)
    focus = torch_version or DEFAULT_TORCH_VERSION
    kbs = [load_knowledge(v) for v in TORCH_VERSIONS]
    kb = load_knowledge(focus)

    if name == "triton" or name.startswith(("triton.", "tl.")):   # Triton-Ascend facts (data/triton_ascend.yaml)
        from analyse.knowledge.triton_ascend import explain_lines

        lines = explain_lines(name, kb)
        if lines is not None:
            return "\n".join(lines), 0
    if name.startswith("env:"):  # the knowledge's way of naming an environment variable (env:NCCL_*)
        name = name[len("env:"):].rstrip("*") or name
    fact_only = kb.cuda_only(name) if not name.startswith("torch.") else None
    if fact_only is not None:
        return "\n".join([f"{name}  (CUDA-only fact)", f"  CUDA-only:    {fact_only.reason}",
                          f"  instead:      {fact_only.replacement}", f"  fact source:  {fact_only.source}"]), 0
    if re.fullmatch(r"(?i)NPU\d{3}", name):
        lines = _rule_lines([name.upper()])
        if lines:
            return "\n".join([f"{name.upper()}  (rule)"] + lines), 0
    pattern = _pattern(name, kb)
    if pattern is not None:
        return "\n".join(pattern), 0
    switch = _implicit_switch(name, kb)
    if switch is not None:
        return "\n".join(switch), 0
    if looks_like_kernel_id(name) and not name.startswith("torch."):
        lines = _kernel_hub(name)
        if lines is not None:
            return "\n".join(lines), 0
    if not name.startswith(("torch.", "aten::")) and name != "torch":
        lines = _third_party(name, kb)
        if lines is not None:
            return "\n".join(lines), 0
        lines = _other_api(name, kb)
        if lines is not None:
            return "\n".join(lines), 0
        # a torch name written without the prefix (nn.GRU, cuda.set_device)?
        if any(k.is_documented("torch." + name) for k in kbs):
            name = "torch." + name
        else:
            close = _close_names(name, kb)
            return (f"{name}: unknown to the npu-analyse knowledge base (neither a torch API documented by the Ascend "
                    f"support lists for torch {', '.join(TORCH_VERSIONS)}, a known GPU-only library, a rule code nor a "
                    f"pattern the scan reports). Probe torch APIs on a device with `npu-analyse probe`."
                    + (f"\n  did you mean: {', '.join(close)}?" if close else "")), 1

    infos = [(k, k.api(name)) for k in kbs]
    fact = kb.cuda_only(name)
    is_cuda = name.startswith("torch.cuda")
    documented = any(i is not None for _k, i in infos)
    if not documented and fact is None and name not in kb.device_rewrite_functions:
        close = [c for c in _close_names(name, kb, cutoff=0.8) if _typo_of(name, c)]
        cuda_known = is_cuda and (name == "torch.cuda" or kb.npu_equivalent(name) is not None)
        if close and not cuda_known:
            # a near miss of a name the knowledge base has: most likely a typo, not an undocumented API
            return (f"{name}: unknown -- did you mean {' or '.join(close)}? (No Ascend support list, transfer_to_npu "
                    "fact or CUDA-only fact names it; if it is a real torch API it is unverified on NPU: probe it with "
                    "`npu-analyse probe`.)"), 1
    known = documented or fact is not None or is_cuda or name in kb.device_rewrite_functions
    if not known:
        close = difflib.get_close_matches(name, sorted(kb.documented_names()), n=3, cutoff=0.8)
        msg = (f"{name}: unverified on NPU -- no Ascend support list for torch {', '.join(TORCH_VERSIONS)} documents "
               f"it (torch_npu {', '.join(dict.fromkeys(k.torch_npu_version for k in kbs))}), so the scan reports it as "
               "NPU301 (info). It may work through the generic dispatch or fall back to the CPU; probe it with "
               "`npu-analyse probe`.")
        if close:
            msg += f"\n  did you mean: {', '.join(close)}"
        return msg + "\n" + "\n".join(_rule_lines(["NPU301"])), 0

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
        if info is not None and info.curation is not None:
            note = ("documented No; curated" if info.curation["official"] == "unsupported" else "not listed; curated") + \
                (", " + note if note else "")
        mark = "*" if k.torch_version == focus else ""
        rows.append([k.torch_version + mark, k.torch_npu_version, _STATUS_SHORT[status], note])
    lines += _table(rows, ["torch", "torch_npu", "status", "notes"])

    info = kb.api(name)
    if info is not None:
        if info.checks:
            args = [c for c in info.checks if c["kind"] != "attribute"]
            if args:
                lines.append("  limitations checked at each call (a hit is NPU203, manual):")
                for c in args:
                    lines.append("    - " + _check_line(c))
            attrs = [c for c in info.checks if c["kind"] == "attribute"]
            if attrs:
                lines.append("  attributes of the result answered on an NPU (code reading another one is NPU006, "
                             "manual: a CUDA hardware query such as the compute capability):")
                for c in attrs:
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
        if info.curation is not None:
            lines.append(f"  curation:     {info.contradicted()} (data/curation.yaml, {info.curation['id']}; "
                         f"resulting status: {info.status})")
            for ev in info.curation["evidence"]:
                lines += _indent(f"- {ev}", "      ")
            lines.append(f"  advice:       {info.curation['advice']}")

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
