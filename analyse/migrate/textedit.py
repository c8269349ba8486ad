"""Edits of dependency manifests, Dockerfiles and launch scripts (line-based, each from a finding).

* requirements / pyproject / setup.cfg / conda files: a CUDA-only package (NPU901) is commented out with the
  Ascend replacement named; ``torch_npu`` pinned to the release that matches an exact torch pin (the
  knowledge base's torch -> torch_npu table) is added after the torch line when no torch_npu line exists;
* Dockerfiles: a comment above the CUDA base image (NPU903) and above ``nvidia-smi`` names the Ascend equivalent;
* launch scripts and Makefiles: ``CUDA_VISIBLE_DEVICES`` -> ``ASCEND_RT_VISIBLE_DEVICES`` (NPU904),
  a bare ``nvidia-smi`` -> ``npu-smi info`` (NPU905), ``--backend nccl`` -> ``--backend hccl`` (NPU907).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Dict, List, Optional

from analyse.migrate.pyedit import FileResult, Options, scope_reason
from analyse.migrate.source import Edit, Left, SourceText, apply_edits, describe

REQ_FILES = ("*requirements*.txt", "*requirements*.in", "constraints*.txt", "requirements*.pip")
CONDA_FILES = ("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml", "env.yml", "env.yaml")
DOCKER_FILES = ("Dockerfile", "Dockerfile.*", "*.Dockerfile", "*.dockerfile", "Containerfile", "Containerfile.*")
MANIFESTS = REQ_FILES + CONDA_FILES + ("pyproject.toml", "setup.cfg")
_TORCH_PIN = re.compile(r"""^(?P<indent>\s*(?:-\s*)?)(?P<q>["']?)torch\s*==\s*(?P<ver>\d+\.\d+(?:\.\d+)?)(?P<local>\+\w+)?(?P=q)(?P<tail>\s*,?)""")
_TORCH_NPU = re.compile(r"(?i)\btorch[-_]npu\b")
MARK = "(npu-analyse migrate)"


def kind_of(rel: str) -> str:
    name = PurePosixPath(rel).name
    if any(fnmatchcase(name, g) for g in MANIFESTS):
        return "manifest"
    if any(fnmatchcase(name, g) for g in DOCKER_FILES):
        return "docker"
    return "launcher"


def torch_npu_release(torch_version: str, versions: Dict[str, str]) -> Optional[str]:
    """The torch_npu release for an exact torch pin, from the knowledge base (None when it has none)."""
    v = torch_version
    if v.count(".") == 1:
        v += ".0"
    rel = versions.get(v)
    return rel if rel and rel[0].isdigit() else None


def migrate_text(rel: str, raw: bytes, findings: List[dict], opts: Options, versions: Dict[str, str]) -> FileResult:
    res = FileResult(path=rel, old=raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        for f in findings:
            res.left.append(Left(rel, int(f.get("line") or 0), f.get("code"), f.get("id"), "not UTF-8 text: not edited"))
        return res
    src = SourceText(text)
    nl = src.newline
    kind = kind_of(rel)
    edits: List[Edit] = []
    done_lines = set()

    def comment_above(f, lineno, comment, why):
        indent = src.indent_of(lineno)
        if src.line_text(lineno - 1).strip() == comment.strip():
            return
        off = src.line_start(lineno)
        edits.append(Edit(off, off, f"{indent}{comment}{nl}", f.get("code"), f.get("id"), why))

    for f in sorted(findings, key=lambda f: (int(f.get("line") or 0), f.get("code") or "")):
        code, line = f.get("code"), int(f.get("line") or 0)
        api = f.get("api") or ""
        body = src.line_text(line)
        reason = scope_reason({**f, "role": "product"}, opts)   # manifests and launchers are edited whatever their role
        if reason is not None:
            if f.get("severity") in ("blocker", "manual"):
                res.left.append(Left(rel, line, code, f.get("id"), reason, advice=f.get("replacement") or ""))
            continue
        repl = " ".join(str(f.get("replacement") or "").split())
        if code == "NPU901" and kind == "manifest" and line not in done_lines:
            stripped = body.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
            if kind == "manifest" and PurePosixPath(rel).name in ("pyproject.toml", "setup.cfg") \
                    and not re.match(r"""^\s*["'][^"']+["']\s*,?\s*(#.*)?$""", body) and not re.match(r"^\s*[A-Za-z0-9]", body):
                res.left.append(Left(rel, line, code, f.get("id"), "the package shares its line with other entries: "
                                     "comment it out by hand", advice=repl))
                continue
            if PurePosixPath(rel).name == "pyproject.toml" and "=" in body and not body.strip().startswith(("'", '"')):
                res.left.append(Left(rel, line, code, f.get("id"), "a table entry (not an array item): edit it by hand",
                                     advice=repl))
                continue
            indent = body[: len(body) - len(stripped)]
            new = f"{indent}# {stripped}  # CUDA-only {MARK}; on Ascend: {repl or 'no NPU build'}"
            a = src.line_start(line)
            edits.append(Edit(a, a + len(body), new, code, f.get("id"), f"`{api[8:]}` is CUDA-only: commented out, the "
                              f"Ascend replacement named ({repl or 'none'})"))
            done_lines.add(line)
        elif code == "NPU903" and kind == "docker":
            comment_above(f, line, f"# NPU903 {MARK}: CUDA base image; on Ascend: {repl}",
                          "the CUDA base image is named with its Ascend equivalent")
        elif code == "NPU905" and "nvidia-smi" in body:
            m = re.search(r"\bnvidia-smi\b(?P<rest>[^;&|\n]*)", body)
            if kind == "launcher" and m and not m.group("rest").strip() and "`" not in body and "$(" not in body:
                a = src.line_start(line) + m.start()
                edits.append(Edit(a, a + len("nvidia-smi"), "npu-smi info", code, f.get("id"), "`nvidia-smi` -> `npu-smi info`"))
            else:
                comment_above(f, line, f"# NPU905 {MARK}: nvidia-smi has no NPU twin with these options; on Ascend: npu-smi info",
                              "nvidia-smi is named with its Ascend equivalent")
        elif code == "NPU904" and "CUDA_VISIBLE_DEVICES" in body:
            a = src.line_start(line)
            for m in re.finditer(r"\bCUDA_VISIBLE_DEVICES\b", body):
                edits.append(Edit(a + m.start(), a + m.end(), "ASCEND_RT_VISIBLE_DEVICES", code, f.get("id"),
                                  "`CUDA_VISIBLE_DEVICES` -> `ASCEND_RT_VISIBLE_DEVICES` (the NPU device list)"))
        elif code == "NPU907" and re.search(r"--backend[ =]nccl\b", body):
            m = re.search(r"(--backend[ =])nccl\b", body)
            a = src.line_start(line) + m.end(1)
            edits.append(Edit(a, a + 4, "hccl", code, f.get("id"), "`--backend nccl` -> `--backend hccl`"))
        elif f.get("severity") in ("blocker", "manual"):
            res.left.append(Left(rel, line, code, f.get("id"), "no safe automatic edit for this line", advice=repl))

    if kind == "manifest" and not _TORCH_NPU.search(text):
        for i in range(1, len(src.starts) + 1):
            body = src.line_text(i)
            m = _TORCH_PIN.match(body)
            if not m:
                continue
            release = torch_npu_release(m.group("ver"), versions)
            if release is None:
                res.left.append(Left(rel, i, None, None, f"the knowledge base has no torch_npu release for torch "
                                     f"{m.group('ver')}: add torch_npu by hand", advice="torch_npu==<release for this torch>"))
                break
            q = m.group("q")
            new_line = f"{m.group('indent')}{q}torch_npu=={release}{q}{m.group('tail')}"
            off = src.line_start(i + 1) if i < len(src.starts) else len(text)
            prefix = "" if i < len(src.starts) else nl
            edits.append(Edit(off, off, f"{prefix}{new_line}{nl}", None, None,
                              f"torch_npu {release} is the release for torch {m.group('ver')} (knowledge base)",
                              check="torch-npu-pin"))
            break
    if not edits:
        return res
    new_text, dropped = apply_edits(text, edits)
    for e in dropped:
        edits.remove(e)
    describe(src, new_text, edits)
    res.edits = edits
    res.new = new_text.encode("utf-8")
    return res
