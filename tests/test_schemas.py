"""The shipped schemas (analyse/schemas, loaded with importlib.resources) are the published contracts."""

import json
from pathlib import Path

import pytest

from analyse.schemas import OWN_SCHEMAS, SCHEMAS, load_schema, schema_text

ROOT = Path(__file__).resolve().parents[1]
# the published spec: shared/spec beside the checkout (or beside the folder of worktrees holding it)
SPECS = [p / "shared" / "spec" for p in (ROOT.parent, ROOT.parent.parent)]


@pytest.mark.parametrize("name", SCHEMAS)
def test_shipped_schema_loads_from_the_package(name):
    schema = load_schema(name)
    assert schema["$schema"].startswith("http")
    assert schema_text(name).endswith("}\n") or schema_text(name).rstrip().endswith("}")


def test_report_schema_versions():
    report = load_schema("report.schema.json")
    assert "findings" in report["properties"] and "errors" in report["properties"]
    kinds = report["properties"]["errors"]["items"]["properties"]["kind"]["enum"]
    assert {"io", "syntax", "encoding", "too-large"} <= set(kinds)
    with pytest.raises(ValueError, match="unknown schema"):
        load_schema("../pyproject.toml")


def keeps(published, shipped, where="") -> list:
    """Where *shipped* drops or renames something of *published* (a JSON Schema): every key, property and
    enum value of the published contract must be in the shipped one, with the same types; the shipped copy
    may add fields (and describe them), never rename or drop one."""
    problems = []
    if isinstance(published, dict):
        if not isinstance(shipped, dict):
            return [f"{where or '/'}: not an object any more"]
        for k, v in published.items():
            if k in ("description", "title", "$comment", "examples"):
                continue
            if k not in shipped:
                problems.append(f"{where}/{k}: dropped")
            else:
                problems += keeps(v, shipped[k], f"{where}/{k}")
    elif isinstance(published, list):
        if not isinstance(shipped, list):
            return [f"{where}: not a list any more"]
        if where.endswith("/required"):
            problems += [f"{where}: {x!r} no longer required" for x in published if x not in shipped]
        else:
            problems += [f"{where}: {x!r} dropped" for x in published
                         if not isinstance(x, (dict, list)) and x not in shipped]
            problems += [p for a, b in zip([x for x in published if isinstance(x, (dict, list))],
                                           [x for x in shipped if isinstance(x, (dict, list))])
                         for p in keeps(a, b, where + "[]")]
    elif published != shipped and not where.endswith("/$id"):
        problems.append(f"{where}: {published!r} became {shipped!r}")
    return problems


def test_keeps_finds_a_dropped_or_renamed_field():
    published = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}, "b": {"enum": [1, 2]}}}
    assert keeps(published, {**published, "properties": {**published["properties"], "c": {"type": "integer"}}}) == []
    assert keeps(published, {**published, "properties": {"a2": {"type": "string"}, "b": {"enum": [1, 2]}}}) == \
        ["/properties/a: dropped"]
    assert keeps(published, {**published, "properties": {"a": {"type": "integer"}, "b": {"enum": [1]}}}) == \
        ["/properties/a/type: 'string' became 'integer'", "/properties/b/enum: 2 dropped"]


@pytest.mark.parametrize("name", [n for n in SCHEMAS if n not in OWN_SCHEMAS])
def test_shipped_schema_keeps_the_published_contract(name):
    """The tests read the schemas the package ships. Where the published spec is beside the checkout
    (shared/spec), the shipped copy keeps every field of it (fields are added, never renamed or dropped);
    a fresh clone without it checks the shipped copy on its own."""
    import jsonschema

    shipped = load_schema(name)
    jsonschema.validators.validator_for(shipped).check_schema(shipped)
    for d in SPECS:
        if (d / name).is_file():
            assert keeps(json.loads((d / name).read_text(encoding="utf-8")), shipped) == []


@pytest.mark.parametrize("name", OWN_SCHEMAS)
def test_own_schema_is_not_a_published_copy(name):
    """npu-analyse's own schemas are valid JSON Schemas and have no published copy to drift from."""
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(load_schema(name))
    assert not any((d / name).is_file() for d in SPECS), f"{name} is published now: move it out of OWN_SCHEMAS"


def test_the_python_copy_of_the_report_schema_equals_the_json_file():
    """analyse.shapes checks cached reports against analyse/schemas/report_schema.py (no file read on a warm
    run); it must stay the shipped report.schema.json."""
    import json

    from analyse.schemas import schema_text
    from analyse.schemas.report_schema import SCHEMA

    assert SCHEMA == json.loads(schema_text("report.schema.json"))
