"""`npu-analyse explain` covers every API, rule code and pattern id the scan can report (#23 point 5).

The names are enumerated from the rule set, the passes' source (every literal ``api`` a finding can carry)
and the knowledge files (third-party modules, MMCV op symbols, value-dependent functions, optimizers with
fused twins, CUDA-only facts, environment variables); then explain runs over the ``api`` of every finding of
the bundled examples and the fixtures. Each answer: exit 0, no internal ``shared/upstream`` path, no CJK, and
a torch_npu release rather than a branch."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from analyse import pipeline
from analyse.explain import explain_name
from analyse.knowledge import load_knowledge
from analyse.passes import all_rules

REPO = Path(__file__).resolve().parent.parent
CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _ok(name):
    text, status = explain_name(name)
    assert status == 0, (name, text)
    assert "shared/upstream" not in text, (name, text)
    assert not CJK.search(text), (name, text)
    assert "torch_npu master" not in text, (name, text)
    return text


def literal_pattern_ids():
    """Every string literal a pass passes as the api of a finding."""
    ids = set()
    for f in sorted((REPO / "analyse" / "passes").glob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "finding" \
                    and len(n.args) >= 3 and isinstance(n.args[2], ast.Constant) and isinstance(n.args[2].value, str):
                ids.add(n.args[2].value)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add" \
                    and len(n.args) >= 3 and isinstance(n.args[2], ast.Constant) and str(n.args[0].value if isinstance(n.args[0], ast.Constant) else "").startswith("NPU"):
                ids.add(n.args[2].value)
    return sorted(ids)


def knowledge_names():
    kb = load_knowledge()
    names = set()
    libs = kb.data_file("third_party_libs.yaml")
    for e in libs["libraries"]:
        names.update(e["modules"])
    for o in libs["mmcv_ops"]["ops"]:
        names.update(f"{libs['mmcv_ops']['package']}.{s}" for s in o["symbols"])
    for spec in kb.data_file("dynamic_shape.yaml")["ops"].values():
        names.update(spec.get("functions") or ())
    aff = kb.data_file("affinity.yaml")
    names.update(aff["patterns"])
    from analyse.passes.cuda_api import CUDA_ENV_VARS
    from analyse.passes.distributed import NCCL_ENV

    names.update(CUDA_ENV_VARS)
    names.update(NCCL_ENV)
    for fact in kb.cuda_only_facts:
        names.update(a for a in fact.apis if "*" not in a)
    names.update(["package:flash-attn", "package:torch", "torch-version:2.4.0", "image:nvcr.io/nvidia/pytorch",
                  "cuda-source:kernel.cu", "launcher:backend-nccl", "torch.xpu.empty_cache"])
    return sorted(names)


def test_every_rule_code_is_explained():
    for r in all_rules():
        assert r.summary in _ok(r.code)


@pytest.mark.parametrize("name", literal_pattern_ids())
def test_every_pattern_id_of_the_passes_is_explained(name):
    _ok(name)


def test_every_name_of_the_knowledge_base_is_explained():
    for name in knowledge_names():
        _ok(name)


def test_explain_answers_every_api_of_the_reports():
    kb = load_knowledge()
    folders = [p for p in (REPO / "examples").iterdir() if p.is_dir()] + \
              [p for p in (REPO / "tests" / "fixtures").iterdir() if p.is_dir()]
    apis = set()
    for folder in folders:
        apis.update(f.api for f in pipeline.run([folder], kb).findings)
    for g in (REPO / "examples").glob("*/expected_report.json"):
        apis.update(f["api"] for f in json.loads(g.read_text(encoding="utf-8"))["findings"])
    project_specific = {a for a in apis if a.startswith(("resample_plugin.",))}  # the fixture's own JIT extension
    assert len(apis) > 40
    for api in sorted(apis - project_specific):
        _ok(api)


def test_the_release_is_named_not_the_branch():
    text = _ok("torch.cuda.synchronize")
    assert "torch_npu 2.13.0" in text or "2.13.0" in text
    assert "unknown" not in _ok("device-type-check")
    assert explain_name("no_such_lib.thing")[1] == 1
