"""Rule-set consistency over the WHOLE knowledge base (not over fixtures, #23 point 1).

No two rules give opposite advice for the same API and arguments:

* limitation vs advice: an argument value that a rule recommends (``data/advice.yaml`` parameter
  advice, and every call in a rule's documented ``fix``) is never one that the native-API support
  list of any torch version says the API does not take ("`num_workers` only supports 0");
* recommended vs deprecated: no knowledge file and no rule doc recommends a torch_npu API that
  scrap_API.md plans to deprecate (``data/affinity.yaml`` ``deprecated_torch_npu_apis``); a text may
  *name* one only in a clause that says it is deprecated / not recommended.

Where facts conflict the documented limitation wins: the advice is dropped or rewritten in the data.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import yaml

from analyse.knowledge import data_dir
from analyse.passes import all_rules

# "<param> only supports <value>" / "<param> supports only <value>" lines of the support list
_ONLY = re.compile(r"`?(\w+)`?\s+(?:only supports|supports only|must be|can only be)\s+(-?\w+)\b")
_NAME = re.compile(r"\btorch_npu(?:\.\w+)+")
_SHORT = re.compile(r"(?<![\w.])(npu_\w+)")
_NOT_RECOMMENDED = re.compile(r"deprecat|not recommended|never recommended|do not use", re.I)
# metadata fields that describe where facts came from, not what to do
_META_KEYS = {"source", "sources", "omitted", "derived_from", "path", "file", "what", "semantics", "licence", "note",
              "deprecated_torch_npu_apis", "deprecated", "meta"}


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def limitation_values(data: Path) -> dict:
    """{(api, param): {(torch version, allowed value)}} from every op_support table."""
    out: dict = {}
    for f in sorted((data / "op_support").glob("torch_*.json")):
        version = f.stem[len("torch_"):]
        for api, row in json.loads(f.read_text(encoding="utf-8"))["apis"].items():
            for line in (row.get("limitations") or "").splitlines():
                for m in _ONLY.finditer(line):
                    out.setdefault((api, m.group(1)), set()).add((version, _literal(m.group(2))))
            for c in row.get("checks") or ():
                if c.get("kind") == "value" and c.get("param") and c.get("allowed") and len(c["allowed"]) == 1:
                    out.setdefault((api, c["param"]), set()).add((version, c["allowed"][0]))
    return out


def advised_values(data: Path) -> list:
    """[(api, param, advised value or ('not', value), where)] from advice.yaml and the rules' fix code."""
    advice = yaml.safe_load((data / "advice.yaml").read_text(encoding="utf-8"))
    out = []
    for group, spec in advice.get("parameters", {}).items():
        for api in spec.get("apis", ()):
            for param, p in spec.items():
                if not isinstance(p, dict):
                    continue
                if "expected" in p:
                    out.append((api, param, p["expected"], f"advice.yaml parameters.{group}.{param}"))
                if "unexpected" in p:
                    out.append((api, param, ("not", p["unexpected"]), f"advice.yaml parameters.{group}.{param}"))
    return out


def rule_fix_calls() -> list:
    """[(callee last name, keyword, literal value, rule code)] for every call in every rule's fix."""
    out = []
    for r in all_rules():
        try:
            tree = ast.parse(r.fix)
        except SyntaxError:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
                for kw in n.keywords:
                    if name and kw.arg and isinstance(kw.value, ast.Constant):
                        out.append((name, kw.arg, kw.value.value, r.code))
    return out


def limitation_conflicts(data: Path) -> list:
    limits = limitation_values(data)
    conflicts = []
    for api, param, value, where in advised_values(data):
        for version, allowed in sorted(limits.get((api, param), ()), key=str):
            if isinstance(value, tuple) and value[0] == "not":
                if value[1] == allowed:
                    conflicts.append(f"{where}: advises {param} != {value[1]!r} but torch {version} {api}: "
                                     f"{param} only supports {allowed!r}")
            elif value != allowed:
                conflicts.append(f"{where}: advises {param}={value!r} but torch {version} {api}: "
                                 f"{param} only supports {allowed!r}")
    by_last: dict = {}
    for (api, param), vals in limits.items():
        by_last.setdefault((api.rsplit(".", 1)[-1], param), set()).update((api, v, a) for v, a in vals)
    for name, param, value, code in rule_fix_calls():
        for api, version, allowed in sorted(by_last.get((name, param), ()), key=str):
            if value != allowed:
                conflicts.append(f"{code} fix: {name}({param}={value!r}) but torch {version} {api}: "
                                 f"{param} only supports {allowed!r}")
    return conflicts


def _strings(obj, key=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k) in _META_KEYS:
                continue
            yield from _strings(v, str(k))
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v, key)
    elif isinstance(obj, str):
        yield key, obj


def recommended_names(text: str) -> set:
    """torch_npu names a text recommends: every name outside clauses that call it deprecated."""
    names = set()
    for clause in re.split(r"[;()]|\.\s|\n", text):
        if _NOT_RECOMMENDED.search(clause):
            continue
        full = set(_NAME.findall(clause))
        names |= full
        if full or "torch_npu" in text:
            names |= {f"torch_npu.{s}" for s in _SHORT.findall(clause)}
    return names


def deprecated_conflicts(data: Path) -> list:
    affinity = yaml.safe_load((data / "affinity.yaml").read_text(encoding="utf-8"))
    deprecated = set(affinity["deprecated_torch_npu_apis"])
    conflicts = []
    for f in sorted(data.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        for key, text in _strings(doc):
            for n in sorted(recommended_names(text) & deprecated):
                conflicts.append(f"{f.name} {key}: recommends {n} (planned for deprecation)")
    for r in all_rules():
        for field in ("fix", "summary", "why"):
            for n in sorted(recommended_names(getattr(r, field)) & deprecated):
                conflicts.append(f"{r.code} {field}: recommends {n} (planned for deprecation)")
    return conflicts


def test_no_advice_contradicts_a_documented_limitation():
    assert limitation_conflicts(data_dir()) == []


def test_no_rule_recommends_a_deprecated_torch_npu_api():
    assert deprecated_conflicts(data_dir()) == []


def test_the_checks_find_the_known_conflicts(tmp_path):
    """The checks can fail: the knowledge base before #23 (num_workers > 0 advice; npu_nms_v4 recommended)."""
    data = tmp_path / "data"
    (data / "op_support").mkdir(parents=True)
    (data / "op_support" / "torch_2.13.0.json").write_text(json.dumps({"apis": {"torch.utils.data.DataLoader": {
        "limitations": "Multi-process loading of NPU data is not supported; num_workers only supports 0"}}}))
    (data / "advice.yaml").write_text(yaml.safe_dump({"parameters": {"dataloader": {
        "apis": ["torch.utils.data.DataLoader"], "num_workers": {"unexpected": 0, "advice": "raise it"}}}}))
    (data / "affinity.yaml").write_text(yaml.safe_dump({"deprecated_torch_npu_apis": ["torch_npu.npu_nms_v4",
                                                                                      "torch_npu.npu_batch_nms"]}))
    (data / "dynamic_shape.yaml").write_text(yaml.safe_dump({"ops": {"nms": {
        "fix": "pad to top-k (or use `torch_npu.npu_nms_v4` / `npu_batch_nms` with a fixed max output size)"}}}))
    lim = limitation_conflicts(data)
    assert any("num_workers != 0" in c for c in lim), lim
    dep = deprecated_conflicts(data)
    assert "dynamic_shape.yaml fix: recommends torch_npu.npu_batch_nms (planned for deprecation)" in dep
    assert "dynamic_shape.yaml fix: recommends torch_npu.npu_nms_v4 (planned for deprecation)" in dep
    # naming a deprecated API in a clause that says so is not a recommendation
    assert recommended_names("pad to top-k (torch_npu.npu_nms_v4 / npu_batch_nms are planned for deprecation)") == set()
