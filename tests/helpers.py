"""Test helpers: run passes over source text written in the test."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Sequence

EXPECT_RE = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def analyse_source(tmp_path: Path, source: str, kb, name: str = "snippet.py", passes=None, extra_files: Optional[Dict[str, str]] = None):
    """Write *source* (and *extra_files*) into tmp_path and run the pipeline over the folder."""
    from analyse import pipeline

    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(textwrap.dedent(source))
    for rel, text in (extra_files or {}).items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return pipeline.run([tmp_path], kb, passes=passes)


def expected_codes(source: str) -> Dict[int, List[str]]:
    """Line -> sorted codes from ``# expect: NPU001, NPU002`` markers."""
    out: Dict[int, List[str]] = {}
    for i, line in enumerate(source.splitlines(), 1):
        m = EXPECT_RE.search(line)
        if m:
            out[i] = sorted(c.strip() for c in m.group(1).split(",") if c.strip())
    return out


def codes_by_line(findings, path: Optional[str] = None, codes: Optional[Sequence[str]] = None) -> Dict[int, List[str]]:
    out: Dict[int, List[str]] = {}
    for f in findings:
        if path is not None and f.path != path:
            continue
        # a merged finding (one place and API, #23) carries the other rules' codes in ``also``
        for code in [f.code] + [a["code"] for a in getattr(f, "also", ())]:
            if codes is not None and code not in codes:
                continue
            out.setdefault(f.line, []).append(code)
    return {k: sorted(v) for k, v in out.items()}


def write_files(root: Path, files: Dict[str, str], strip_first_newline: bool = False) -> Path:
    """Write a small project: *files* maps relative paths to (dedented) source text. Returns *root*."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        text = textwrap.dedent(text)
        p.write_text(text.lstrip("\n") if strip_first_newline else text)
    return root


def library_report(tmp_path: Path, kb, files: Dict[str, str], name: str) -> dict:
    """``thirdparty`` on a library written from *files* under tmp_path/name."""
    from analyse.library import analyse_library

    root = write_files(tmp_path / name, files, strip_first_newline=True)
    return analyse_library([root], kb, input_names=[name])
