"""Print the README summary of a probe run: `python benchmarks/probe_sample.py DIR/probe.json`.

Used for benchmarks/probe_cpu_sample/README.md; the same command summarises a cuda or npu run
(see the README's probe section for the command that produces one).
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analyse.probe.render import markdown_summary  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/probe_sample.py probe.json")
    print(markdown_summary(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))), end="")
