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


@pytest.mark.parametrize("name", [n for n in SCHEMAS if n not in OWN_SCHEMAS])
def test_shipped_schema_equals_the_published_spec(name):
    spec = next((d / name for d in SPECS if (d / name).is_file()), None)
    if spec is None:
        pytest.skip(f"the published spec (../shared/spec/{name}) is not beside this checkout")
    assert schema_text(name).encode("utf-8") == spec.read_bytes()
    assert load_schema(name) == json.loads(spec.read_text(encoding="utf-8"))


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
