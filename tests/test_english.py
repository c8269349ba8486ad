"""English only (#23 point 5): no CJK text in any message the knowledge base or a rule can produce.

Every string of every knowledge file under data/ (the original Chinese may stay only in fields named
``*evidence*``) and every rule doc. The translations without an official English table come from
tools/translations.yaml (provenance: translated by us) and third_party_libs.yaml constraints."""

from __future__ import annotations

import json
import re

import yaml

from analyse.knowledge import data_dir
from analyse.passes import all_rules

CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


def _cjk_strings(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if "evidence" in str(k):
                continue
            yield from _cjk_strings(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _cjk_strings(v, f"{path}[{i}]")
    elif isinstance(obj, str) and CJK.search(obj):
        yield path, obj


def test_no_cjk_in_the_knowledge_base():
    found = []
    for f in sorted(data_dir().rglob("*")):
        if f.suffix == ".json":
            doc = json.loads(f.read_text(encoding="utf-8"))
        elif f.suffix in (".yaml", ".yml"):
            doc = yaml.safe_load(f.read_text(encoding="utf-8"))
        else:
            continue
        found += [(f.name, p, s[:80]) for p, s in _cjk_strings(doc)]
    assert found == [], found[:20]


def test_no_cjk_in_rule_docs():
    for r in all_rules():
        for field, text in r.to_dict().items():
            assert not CJK.search(str(text)), (r.code, field, text)


def test_the_check_finds_chinese():
    assert list(_cjk_strings({"limitations": "属性max_norm仅支持非负值，不支持nan", "evidence": "中文"}))
    assert not list(_cjk_strings({"limitations_evidence": "中文", "x": "fp32; no nan"}))


def test_translations_carry_provenance():
    from pathlib import Path

    doc = yaml.safe_load((Path(__file__).resolve().parent.parent / "tools" / "translations.yaml").read_text(encoding="utf-8"))
    assert "translated by us" in doc["meta"]["translation"]
    assert all(not CJK.search(en) for en in doc["lines"].values())
    kb_row = json.loads((data_dir() / "op_support" / "torch_2.13.0.json").read_text(encoding="utf-8"))["apis"]["torch.nn.Embedding"]
    assert "The max_norm attribute supports only non-negative values, not nan" in kb_row["limitations"]
