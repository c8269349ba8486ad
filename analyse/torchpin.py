"""``--torch-version auto``: the torch version a project pins, mapped to a version the knowledge base has.

Reads plain text only (no astroid, nothing imported or run): ``requirements*.txt`` (and ``requirements/*.txt``),
``pyproject.toml``, ``setup.py``, ``setup.cfg``, conda ``environment*.yml``, and ``Dockerfile*`` (``FROM
pytorch/pytorch:2.4.1-...`` base images and ``pip install torch==...`` lines), in the analysed folders and one level
below them. An exact pin (``torch==2.4.1``, a ``pytorch/pytorch:2.4.1`` image) wins over a range (``torch>=2.1,<2.5``);
a range picks the newest knowledge-base version inside it. A pinned version the knowledge base has no support list
for (torch 2.2-2.5: the Ascend docs publish none in the snapshot) maps to the nearest one that has, and the choice
says so; a pin older than every documented release (torch 1.x) means the port upgrades torch: the newest is used. :func:`choose` returns the version and one sentence saying which file and line chose it and why.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple

__all__ = ["Pin", "find_pins", "choose", "resolve"]

_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "site-packages", "build", "dist", "__pycache__", ".tox"}
_REQ = re.compile(r"^\s*(?:torch|pytorch)\s*(\[[^\]]*\])?\s*((?:[=<>~!]=?|===)\s*[0-9][^;#\s,]*(?:\s*,\s*(?:[=<>~!]=?)\s*[0-9][^;#\s,]*)*)",
                  re.I)
_QUOTED = re.compile(r"""["']\s*torch\s*((?:[=<>~!]=?)\s*[0-9][^"';,\s]*(?:\s*,\s*(?:[=<>~!]=?)\s*[0-9][^"';,\s]*)*)""")
_CONDA = re.compile(r"^\s*-\s*(?:pytorch|torch)\s*(==?|>=|<=|<|>)\s*([0-9][\w.]*)")
_IMAGE = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?:docker\.io/)?pytorch/pytorch:([0-9]+\.[0-9]+(?:\.[0-9]+)?)", re.I)
_PIP = re.compile(r"pip3?\s+install\b[^\n]*?\btorch\s*(==\s*[0-9][\w.]*)")
_V = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
_NO_LIST = ("2.2", "2.3", "2.4", "2.5")


class Pin(tuple):
    """(spec, path, line): ``==2.4.1`` / ``>=2.1,<2.5`` and where it was read."""

    __slots__ = ()

    def __new__(cls, spec: str, path: str, line: int):
        return super().__new__(cls, (spec, path, line))

    spec = property(lambda s: s[0])
    path = property(lambda s: s[1])
    line = property(lambda s: s[2])

    @property
    def exact(self) -> bool:
        return self.spec.startswith(("==", "===")) or ("," not in self.spec and self.spec.startswith("~="))


def _wanted(d: Path, n: str) -> bool:
    return (n.startswith("requirements") and n.endswith(".txt")) or (d.name == "requirements" and n.endswith(".txt")) \
        or n in ("pyproject.toml", "setup.py", "setup.cfg") or n.startswith("dockerfile") \
        or (n.startswith("environment") and n.endswith((".yml", ".yaml")))


def _candidates(root: Path) -> Iterable[Path]:
    """The project files that may pin torch, in the analysed folder and one level below, in name order.
    The names are looked at first: only a file whose name may pin torch is asked whether it is a file
    (a stat for every file of a 128,000-file tree was most of this step)."""
    if root.is_file():
        root = root.parent
    if not root.is_dir():
        return
    try:
        with os.scandir(root) as it:
            subdirs = sorted(e.name for e in it if e.name not in _SKIP_DIRS and not e.name.startswith(".")
                             and e.is_dir())
    except OSError:
        subdirs = []
    for d in [root] + [root / name for name in subdirs]:
        try:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if _wanted(d, e.name.lower()))
        except OSError:
            continue
        for name in names:
            p = d / name
            if p.is_file():
                yield p


def find_pins(roots: Sequence[Path]) -> List[Pin]:
    """Every torch pin of the project files under ``roots`` (files in a fixed order)."""
    out: List[Pin] = []
    seen = set()
    for root in roots:
        base = Path(root) if Path(root).is_dir() else Path(root).parent
        for p in _candidates(Path(root)):
            if p in seen:
                continue
            seen.add(p)
            try:
                if p.stat().st_size > 1_000_000:
                    continue
                lines = p.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            n = p.name.lower()
            for i, line in enumerate(lines, 1):
                m = None
                if n.endswith(".txt"):
                    m = _REQ.match(line)
                    spec = m.group(2) if m else None
                elif n.startswith("dockerfile"):
                    mi = _IMAGE.match(line)
                    mp = _PIP.search(line)
                    spec = f"=={mi.group(1)}" if mi else (mp.group(1) if mp else None)
                elif n.startswith("environment"):
                    mc = _CONDA.match(line)
                    spec = (("==" if mc.group(1) == "=" else mc.group(1)) + mc.group(2)) if mc else None
                    if spec is None:
                        m = _REQ.match(line.replace("- ", "", 1))
                        spec = m.group(2) if m else None
                else:
                    mq = _QUOTED.search(line)
                    spec = mq.group(1) if mq else None
                if spec:
                    try:
                        shown = str(p.relative_to(base))
                    except ValueError:
                        shown = str(p)
                    out.append(Pin(re.sub(r"\s+", "", spec), shown, i))
    return out


def _vt(text: str) -> Optional[Tuple[int, int, int]]:
    m = _V.match(text)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _satisfies(v: Tuple[int, int, int], spec: str) -> bool:
    for part in spec.split(","):
        m = re.match(r"(===|==|~=|>=|<=|!=|<|>)(.*)", part)
        if not m:
            continue
        op, raw = m.groups()
        w = _vt(raw)
        if w is None:
            continue
        wild = raw.endswith(".*")
        if op in ("==", "===") and not (v[:2] == w[:2] if wild or raw.count(".") == 1 else v == w):
            return False
        if op == "~=" and not (v >= w and v[:2 if raw.count(".") >= 2 else 1] == w[:2 if raw.count(".") >= 2 else 1]):
            return False
        if (op == ">=" and v < w) or (op == ">" and v <= w) or (op == "<=" and v > w) or (op == "<" and v >= w):
            return False
        if op == "!=" and v == w:
            return False
    return True


def choose(pins: Sequence[Pin], versions: Sequence[str], default: str) -> Tuple[str, str]:
    """(knowledge-base version, why) for the project's pins."""
    kb = [(v, _vt(v)) for v in versions]
    exact = [p for p in pins if p.exact]
    where = lambda p: f"{p.path}:{p.line}"  # noqa: E731
    if exact:
        p = exact[0]
        want = _vt(p.spec.lstrip("=~"))
        if want is not None:
            same = [v for v, t in kb if t[:2] == want[:2]]
            if same:
                v = same[-1]
                note = "" if _vt(v) == want else f" (the knowledge base's release of the {want[0]}.{want[1]} line)"
                return v, f"torch{p.spec} pinned in {where(p)}: torch {v}{note}"
            if want[:2] < kb[0][1][:2]:
                return default, (f"torch{p.spec} pinned in {where(p)} is older than every torch_npu release the knowledge "
                                 f"base documents (from {kb[0][0]}): the port upgrades torch, analysed for the newest ({default})")
            nearest = min(kb, key=lambda vt: (abs((vt[1][0] * 100 + vt[1][1]) - (want[0] * 100 + want[1])), -vt[1][1]))[0]
            none = (f"no Ascend support list is published for torch {', '.join(_NO_LIST)}"
                    if f"{want[0]}.{want[1]}" in _NO_LIST else f"the knowledge base has no support list for torch {want[0]}.{want[1]}")
            return nearest, f"torch{p.spec} pinned in {where(p)}; {none}, so the nearest documented version {nearest} is used"
    for p in pins:
        inside = [v for v, t in kb if _satisfies(t, p.spec)]
        if inside:
            return inside[-1], f"torch{p.spec} required in {where(p)}: the newest documented version inside it, {inside[-1]}"
    if pins:
        p = pins[0]
        return default, f"torch{p.spec} in {where(p)} matches no documented version; the newest ({default}) is used"
    return default, f"no torch pin found in the project's requirements, pyproject, setup, environment or Dockerfiles; the newest ({default}) is used"


def resolve(roots: Sequence[Path], versions: Sequence[str], default: str) -> Tuple[str, str]:
    return choose(find_pins(roots), versions, default)
