"""Documentation stays in sync with the code."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_rule_table_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_rule_docs.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_every_rule_is_in_the_rule_docs_and_html():
    from analyse.passes import all_rules
    from analyse.render import render_html

    rules_md = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    rules = all_rules()
    assert len(rules) >= 40
    html = render_html({"schema_version": "1", "tool": {"name": "npu-analyse", "version": "0"}, "mode": "script",
                        "target": {"torch_version": "2.8.0", "torch_npu_version": None, "knowledge_base": "kb"},
                        "inputs": [], "summary": {"files_analysed": 0, "files_failed": 0, "lines_analysed": 0,
                                                  "duration_s": 0, "by_category": {}, "by_severity": {},
                                                  "verdict": {"effort": "none", "blockers": 0, "manual_changes": 0,
                                                              "auto_migratable": 0, "explanation": ""}},
                        "findings": [], "errors": []}, [r.to_dict() for r in rules])
    for r in rules:
        assert f"| [{r.code}](#" in rules_md   # the rule table (the README links it)
        assert f"rule-{r.code}" in html


def _links(text: str):
    import re

    text = re.sub(r"```.*?```", "", text, flags=re.S)   # code blocks hold commands, not links
    return re.findall(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)", text)


def test_no_link_leaves_the_repository():
    """The README, CONTRIBUTING and docs/ link only files of this repository (a fresh clone is
    self-contained: no sibling folder, no web page)."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
             ROOT / "benchmarks" / "README.md"]
    checked = 0
    for page in pages:
        for link in _links(page.read_text(encoding="utf-8")):
            target = link.split("#", 1)[0]
            assert "://" not in link and not link.startswith(("mailto:", "//")), (page.name, link)
            if not target:
                continue   # an anchor in the page itself
            path = (page.parent / target).resolve()
            assert path.is_relative_to(ROOT.resolve()) if hasattr(path, "is_relative_to") else \
                str(path).startswith(str(ROOT.resolve())), (page.name, link)
            assert path.exists(), (page.name, link)
            checked += 1
    assert checked >= 10


def test_readme_is_short_and_in_the_order_a_new_user_reads():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    heads = [line[3:] for line in readme.splitlines() if line.startswith("## ")]
    assert heads == ["Quickstart", "What it finds", "How to read a report", "Commands", "CI", "How it works"]
    # the Quickstart's two commands, which .ci/run reads from here
    quick = readme.split("\n## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert "python -m pip install . && npu-analyse script examples/ddp_torchrun -o npu-analyse-report" in quick
    assert 'python -m pip install ".[test]" && python -m pytest -q tests' in quick
