"""Write the rule table of README.md from the passes' rule docs (``--check`` to verify only)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def table() -> str:
    from analyse.passes import all_rules

    lines = ["| code | name | category | default severity | what it detects |", "|---|---|---|---|---|"]
    for r in all_rules():
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| {r.code} | {r.name} | {r.category} | {r.severity} | {summary} |")
    lines.append("")
    lines.append("`npu-analyse rules CODE` prints a rule's full documentation (why, example, fix); the HTML report has them all.")
    return "\n".join(lines)


def render(readme: str) -> str:
    head, rest = readme.split(START, 1)
    _old, tail = rest.split(END, 1)
    return f"{head}{START}\n{table()}\n{END}{tail}"


def main() -> int:
    path = ROOT / "README.md"
    text = path.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in sys.argv:
        if new != text:
            print("README.md rule table is out of date: run python tools/gen_rule_docs.py")
            return 1
        return 0
    path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
