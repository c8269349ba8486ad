"""Documentation stays in sync with the code."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_rule_table_is_current():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_rule_docs.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_every_rule_is_in_readme_and_html():
    from analyse.passes import all_rules
    from analyse.render import render_html

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
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
        assert f"| {r.code} |" in readme
        assert f"rule-{r.code}" in html
