"""Rooms depend downward: no pass module imports another pass module (shared pieces live in
private ``analyse/passes/_*.py`` helpers, which import no pass either)."""

import ast
from pathlib import Path

# an older edge outside issue 21 (unknown_api reads unsupported_api.probe_verdict); listed so that no new one appears
KNOWN = {"unknown_api.py imports analyse.passes.unsupported_api", "unknown_api.py imports analyse.passes.unsupported_api.probe_verdict"}
PASSES = Path(__file__).resolve().parents[1] / "analyse" / "passes"


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            for a in node.names:
                yield f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name


def test_no_pass_imports_another_pass():
    passes = {p.stem for p in PASSES.glob("*.py") if not p.stem.startswith("_")}
    assert {"cuda_extension", "third_party", "manifests"} <= passes
    bad = []
    for p in sorted(PASSES.glob("*.py")):
        if p.stem == "__init__":
            continue
        for mod in _imports(p):
            parts = mod.split(".")
            if parts[:2] == ["analyse", "passes"] and len(parts) > 2 and parts[2] in passes and parts[2] != p.stem:
                bad.append(f"{p.name} imports {mod}")
    assert [b for b in bad if b not in KNOWN] == []
