"""manifests: GPU-only dependencies, CUDA base images and CUDA settings outside the Python code.

Reads the files a project installs and launches with -- ``requirements*.txt`` (and
``constraints*.txt``, ``requirements*.in``), ``pyproject.toml`` and ``setup.cfg`` dependency
lists, conda ``environment*.yml``, ``Dockerfile`` / ``Containerfile``, shell scripts and
Makefiles -- line by line (never executing them) and reports

* GPU-only packages (flash-attn, apex, xformers, bitsandbytes, cupy-cuda*, tensorrt, nvidia-*,
  conda cudatoolkit ...) with the Ascend alternative where one exists (NPU901);
* torch pins: versions the knowledge base has no Ascend support list for, CUDA wheels
  (``+cu121``, ``download.pytorch.org/whl/cu121``), and pins that differ from the analysed
  ``--torch-version`` (NPU902);
* CUDA base images (``FROM nvcr.io/nvidia/pytorch``, ``nvidia/cuda``, ``pytorch/pytorch:*-cuda*``) (NPU903);
* CUDA environment variables (``CUDA_VISIBLE_DEVICES`` -> ``ASCEND_RT_VISIBLE_DEVICES`` ...) (NPU904),
  NVIDIA tools (``nvidia-smi`` -> ``npu-smi``, ``nvcc``, ``nsys``) (NPU905), ``NCCL_*`` variables
  (NPU906) and launcher arguments that pick NCCL or count GPUs (``--backend nccl``,
  ``--nproc_per_node=gpu``) (NPU907) in launchers (shell scripts, Makefiles, Dockerfiles).

The package facts reuse ``data/third_party_libs.yaml`` (the same texts as the Python import
findings); the rest lives in ``data/manifests.yaml``, validated on load.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from analyse.knowledge.noise import load_noise
from analyse.findings import AnalysisError, Finding, Rule
from analyse.knowledge import SEVERITIES, TORCH_VERSIONS
from analyse.passes import Pass, ProjectContext
from analyse.passes._libtable import lib_table

DATA_FILE = "manifests.yaml"
MAX_BYTES = 2_000_000

R_PACKAGE = Rule(
    code="NPU901", name="gpu-only-package", category="third-party", severity="blocker",
    summary="A GPU-only package in a dependency manifest (requirements, pyproject, setup.cfg, conda environment, pip install in a launcher).",
    why="The package is built from CUDA kernels or needs the NVIDIA driver: it does not install or does not run on an "
        "Ascend host, so the environment cannot be rebuilt as written. Severity is blocker when there is no NPU "
        "path, manual when a replacement exists.",
    example="flash-attn==2.5.8\napex\nbitsandbytes>=0.41",
    fix="# requirements-npu.txt\ntorch==2.8.0\ntorch_npu==2.8.0   # flash-attn -> torch_npu.npu_fusion_attention in the code",
)
R_TORCH = Rule(
    code="NPU902", name="torch-version-pin", category="unknown-api", severity="manual",
    summary="A torch pin that the knowledge base cannot check (no Ascend support list for it), a CUDA build of torch, or a pin that differs from the analysed --torch-version.",
    why="torch_npu is released for specific torch versions; a CUDA wheel (+cu121, the cu121 index) does not load torch_npu "
        "on an Ascend host, and the analysis is only as good as the support list of the torch version it used.",
    example="torch==2.3.1+cu121\n--extra-index-url https://download.pytorch.org/whl/cu121",
    fix="torch==2.8.0        # the CPU/aarch64 wheel from PyPI\ntorch_npu==2.8.0\n# and analyse with --torch-version 2.8.0",
)
R_IMAGE = Rule(
    code="NPU903", name="cuda-base-image", category="cuda-api", severity="manual",
    summary="A container built FROM a CUDA image (nvcr.io/nvidia/pytorch, nvidia/cuda, pytorch/pytorch:*-cuda*).",
    why="The image brings the CUDA runtime, cuDNN, NCCL and a CUDA build of PyTorch; an Ascend NPU needs the CANN "
        "toolkit and torch_npu instead.",
    example="FROM nvcr.io/nvidia/pytorch:24.01-py3",
    fix="FROM ubuntu:22.04   # plus the CANN toolkit, then: pip install torch==2.8.0 torch_npu==2.8.0",
)
R_ENV = Rule(
    code="NPU904", name="cuda-env-in-launcher", category="cuda-api", severity="manual",
    summary="A CUDA environment variable set in a launcher, Makefile or Dockerfile (CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, PYTORCH_CUDA_ALLOC_CONF ...).",
    why="The NPU runtime does not read CUDA variables: CUDA_VISIBLE_DEVICES does not select NPUs, so every process "
        "may land on the same device.",
    example="CUDA_VISIBLE_DEVICES=0,1 python train.py",
    fix="ASCEND_RT_VISIBLE_DEVICES=0,1 python train.py",
)
R_TOOL = Rule(
    code="NPU905", name="nvidia-tool", category="cuda-api", severity="manual",
    summary="An NVIDIA command-line tool in a launcher (nvidia-smi, nvcc, nsys, nvprof, ncu).",
    why="The tools talk to the NVIDIA driver or compile CUDA; on an Ascend host they are missing or see no device.",
    example="NGPU=$(nvidia-smi -L | wc -l)",
    fix="npu-smi info   # device list; profile with torch_npu.profiler",
)
R_NCCL_ENV = Rule(
    code="NPU906", name="nccl-env-in-launcher", category="distributed", severity="manual",
    summary="An NCCL_* environment variable set in a launcher, Makefile or Dockerfile.",
    why="NCCL settings are ignored by HCCL, the NPU collective library; the network interface or timeout they meant "
        "to set stays at its default.",
    example="export NCCL_SOCKET_IFNAME=eth0",
    fix="export HCCL_SOCKET_IFNAME=eth0",
)
R_LAUNCH = Rule(
    code="NPU907", name="launcher-nccl-or-gpu-count", category="distributed", severity="manual",
    summary="A launcher passes the NCCL backend (--backend nccl) or lets torchrun count GPUs (--nproc_per_node=gpu).",
    why="A backend name given on the command line reaches init_process_group as 'nccl' (rewritten only when "
        "transfer_to_npu is imported before it is used); `--nproc_per_node gpu` counts CUDA devices, zero on an NPU host.",
    example="torchrun --nproc_per_node=gpu train.py --dist-backend nccl",
    fix="torchrun --nproc_per_node=8 train.py --dist-backend hccl",
)

RULES = (R_PACKAGE, R_TORCH, R_IMAGE, R_ENV, R_TOOL, R_NCCL_ENV, R_LAUNCH)
_RULE = {r.code: r for r in RULES}

REQ_FILES = ("*requirements*.txt", "*requirements*.in", "constraints*.txt", "requirements*.pip")
CONDA_FILES = ("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml", "env.yml", "env.yaml")
DOCKER_FILES = ("Dockerfile", "Dockerfile.*", "*.Dockerfile", "*.dockerfile", "Containerfile", "Containerfile.*")
SHELL_FILES = ("*.sh", "*.bash", "*.zsh")
MAKE_FILES = ("Makefile", "makefile", "GNUmakefile", "*.mk")
PYPROJECT = ("pyproject.toml",)
SETUP_CFG = ("setup.cfg",)
ALL_FILES = REQ_FILES + CONDA_FILES + DOCKER_FILES + SHELL_FILES + MAKE_FILES + PYPROJECT + SETUP_CFG


class ManifestDataError(ValueError):
    """data/manifests.yaml is malformed."""


@dataclass(frozen=True)
class Package:
    pattern: str
    library: str
    severity: str
    reason: str
    replacement: str
    source: str


@dataclass
class ManifestData:
    packages: List[Package]
    images: List[dict]
    replacement_image: str
    cuda_index: "re.Pattern"
    cuda_local: "re.Pattern"
    env: List[dict]
    tools: List[dict]

    def package(self, name: str) -> Optional[Package]:
        n = normalise(name)
        best = None
        for p in self.packages:
            if (p.pattern.endswith("*") and n.startswith(p.pattern[:-1])) or n == p.pattern:
                if best is None or len(p.pattern) > len(best.pattern):
                    best = p
        return best


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _req(cond, where, what):
    if not cond:
        raise ManifestDataError(f"data/{DATA_FILE}: {where}: {what}")


def parse_manifest_data(doc, libs) -> ManifestData:
    """Validate data/manifests.yaml; ``libs`` is the third-party table its `lib` ids point into."""
    _req(isinstance(doc, dict) and isinstance(doc.get("meta"), dict), "top level", "needs a meta block")
    by_id = {e.id: e for e in libs.entries}
    packages = []
    for i, e in enumerate(doc.get("packages") or []):
        w = f"packages[{i}]"
        _req(isinstance(e, dict) and isinstance(e.get("names"), list) and e["names"], w, "needs names")
        if "lib" in e:
            lib = by_id.get(e["lib"])
            _req(lib is not None, w, f"unknown third-party entry {e['lib']!r}")
            facts = (lib.library, lib.severity, lib.reason, lib.replacement, f"third_party_libs.yaml {lib.id}: {lib.source}")
        else:
            for k in ("library", "severity", "reason", "replacement"):
                _req(isinstance(e.get(k), str) and e[k].strip(), w, f"{k} must be a non-empty string")
            _req(e["severity"] in SEVERITIES + ("advice",), w, "unknown severity")
            facts = (e["library"], e["severity"], " ".join(e["reason"].split()), " ".join(e["replacement"].split()), f"manifests.yaml {w}")
        for n in e["names"]:
            _req(isinstance(n, str) and n, w, "names must be strings")
            packages.append(Package(normalise(n.rstrip("*")) + ("*" if n.endswith("*") else ""), *facts))
    images = doc.get("base_images")
    _req(isinstance(images, list) and all(isinstance(x, dict) and isinstance(x.get("prefixes"), list) and isinstance(x.get("reason"), str)
                                          for x in images), "base_images", "needs prefixes and reason")
    _req(isinstance(doc.get("replacement_image"), str), "replacement_image", "must be a string")
    for k in ("env", "tools"):
        items = doc.get(k)
        _req(isinstance(items, list) and items, k, "must be a non-empty list")
        for j, x in enumerate(items):
            _req(isinstance(x, dict) and isinstance(x.get("names"), list) and x.get("code") in _RULE
                 and isinstance(x.get("replacement"), str) and isinstance(x.get("reason"), str), f"{k}[{j}]",
                 "needs names, a rule code, replacement and reason")
            _req(x.get("severity") in (None,) + SEVERITIES, f"{k}[{j}]", "unknown severity")
    try:
        idx, local = re.compile(doc["cuda_wheel_index"]), re.compile(doc["cuda_local_version"])
    except (KeyError, TypeError, re.error) as exc:
        raise ManifestDataError(f"data/{DATA_FILE}: cuda_wheel_index/cuda_local_version: {exc}") from exc
    return ManifestData(packages, images, " ".join(doc["replacement_image"].split()), idx, local, doc["env"], doc["tools"])


_CACHE: Dict[int, ManifestData] = {}


def manifest_data(kb) -> ManifestData:
    doc = kb.data_file(DATA_FILE)
    d = _CACHE.get(id(doc))
    if d is None:
        d = _CACHE[id(doc)] = parse_manifest_data(doc, lib_table(kb))
    return d


# --------------------------------------------------------------------------- parsing helpers

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_PIN = re.compile(r"^\s*(?:===?)\s*v?([0-9][0-9A-Za-z.+!-]*)")
_QUOTED = re.compile(r"""["']([^"']+)["']""")
_PIP_INSTALL = re.compile(r"\b(?:pip3?|python3?\s+-m\s+pip|uv\s+pip|pipx)\s+install\b|\b(?:conda|mamba|micromamba)\s+install\b")
_ASSIGN = re.compile(r"(?:^|[\s;&|(])(?:export\s+|ENV\s+|ARG\s+|set\s+-x\s+)?([A-Z][A-Z0-9_]*)\s*(?:=|\s+(?=\S))")
_WORD = re.compile(r"[^\s;&|()<>`'\"]+")
_OPTS_WITH_VALUE = {"-r", "-c", "-e", "-f", "-i", "--index-url", "--extra-index-url", "--find-links", "--constraint",
                    "--requirement", "--editable", "--target", "-t", "--prefix", "--root", "--platform", "--python-version",
                    "-n", "--name", "-p", "--prefix", "--channel", "--src", "--upgrade-strategy", "--trusted-host"}


def _match(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _logical_lines(lines: List[str]) -> List[List[Tuple[int, str]]]:
    """Join backslash continuations; each logical line keeps its physical (lineno, text) pieces."""
    out, cur = [], []
    for i, raw in enumerate(lines, 1):
        text = raw.rstrip("\n")
        cont = text.rstrip().endswith("\\")
        cur.append((i, text.rstrip()[:-1] if cont else text))
        if not cont:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _name_match(name: str, pattern: str) -> bool:
    return name.startswith(pattern[:-1]) if pattern.endswith("*") else name == pattern


def _strip_comment(text: str) -> str:
    # shell / requirements / Dockerfile comments: '#' at the start or after whitespace
    return re.split(r"(?:^|\s)#", text, maxsplit=1)[0]


class ManifestsPass(Pass):
    name = "manifests"
    rules = RULES
    file_names = ALL_FILES

    VALID = (
        "import os\nprint(os.environ.get('HOME'))\n",
        "from setuptools import setup\nsetup(name='x', install_requires=['numpy>=1.24', 'einops'])\n",
    )
    INVALID = (
        "from setuptools import setup\n"
        "setup(\n"
        "    name='trainer',\n"
        "    install_requires=[\n"
        "        'numpy',\n"
        "        'flash-attn>=2.3',  # expect: NPU901\n"
        "    ],\n"
        "    extras_require={'quant': ['bitsandbytes']},  # expect: NPU901\n"
        ")\n",
    )

    # ------------------------------------------------------------------ setup.py
    def check_module(self, ctx) -> Iterator[Finding]:
        """install_requires / extras_require / setup_requires of a setuptools ``setup(...)`` call."""
        from astroid import nodes

        from analyse.passes import nodes_of

        fctx = None
        for call in nodes_of(ctx.tree, nodes.Call):
            q = ctx.resolver.qualname(call.func) or ""
            if q not in ("setuptools.setup", "distutils.core.setup", "setuptools.setup.setup"):
                continue
            for kw in call.keywords or ():
                if kw.arg not in ("install_requires", "extras_require", "setup_requires", "tests_require"):
                    continue
                for const in nodes_of(kw.value, nodes.Const):
                    if isinstance(const.value, str) and not (isinstance(const.parent, nodes.Dict) and const in [k for k, _v in const.parent.items]):
                        if fctx is None:
                            fctx = _FileCtx(ctx.path, ctx.source.lines, manifest_data(ctx.kb), ctx.kb)
                        fctx.requirement(const.value, const.lineno, f"`setup({kw.arg}=...)`")
        return fctx.findings if fctx is not None else ()

    # ------------------------------------------------------------------ entry point
    def check_file(self, path, relpath: str, project: ProjectContext):
        name = Path(relpath).name
        try:
            data = Path(path).read_bytes()[:MAX_BYTES + 1]
        except OSError as exc:
            return (), (AnalysisError(relpath, "io", f"cannot read file: {exc.strerror or exc}"),)
        if len(data) > MAX_BYTES:
            return (), (AnalysisError(relpath, "too-large", f"manifest larger than {MAX_BYTES} bytes: not read"),)
        if b"\x00" in data:
            return (), (AnalysisError(relpath, "encoding", "file contains NUL bytes (binary file?)"),)
        text = data.decode("utf-8", errors="replace")
        lines = text.splitlines()
        md = manifest_data(project.kb)
        ctx = _FileCtx(relpath, lines, md, project.kb)
        if _match(name, REQ_FILES):
            ctx.requirements()
        elif _match(name, PYPROJECT):
            ctx.pyproject()
        elif _match(name, SETUP_CFG):
            ctx.setup_cfg()
        elif _match(name, CONDA_FILES):
            ctx.conda()
        else:
            ctx.launcher(docker=_match(name, DOCKER_FILES))
        return ctx.findings, ()


class _FileCtx:
    def __init__(self, relpath: str, lines: List[str], md: ManifestData, kb) -> None:
        self.relpath = relpath
        self.lines = lines
        self.md = md
        self.kb = kb
        self.findings: List[Finding] = []
        self._seen = set()

    # ------------------------------------------------------------------ findings
    def add(self, code: str, line: int, api: str, message: str, replacement: Optional[str], severity: Optional[str] = None) -> None:
        key = (code, line, api)
        if key in self._seen:
            return
        self._seen.add(key)
        rule = _RULE[code]
        snippet = self.lines[line - 1].rstrip() if 0 < line <= len(self.lines) else ""
        self.findings.append(Finding(code=code, category=rule.category, severity=severity or rule.severity, path=self.relpath,
                                     line=line, api=api, message=message, replacement=replacement, confidence="high",
                                     evidence="knowledge", snippet=snippet[:300]))

    # ------------------------------------------------------------------ one requirement
    def requirement(self, spec: str, line: int, where: str) -> None:
        spec = spec.strip().strip("\"'")
        if not spec or spec.startswith(("-", "#", ".", "/", "git+", "http:", "https:", "file:")):
            if "download.pytorch.org" in spec or spec.startswith(("-i", "--index-url", "--extra-index-url", "-f", "--find-links")):
                self.index_url(spec, line)
            if spec.endswith(".whl"):
                self.requirement(Path(spec.split("#")[0]).name.split("-")[0], line, where)
            return
        if spec.endswith(".whl"):
            spec = spec.rsplit("/", 1)[-1].split("-")[0]
        m = _REQ_NAME.match(spec.split(";")[0])
        if not m:
            return
        name, rest = m.group(1), m.group(3)
        n = normalise(name)
        if n in ("torch", "pytorch"):
            self.torch_pin(rest, line, where)
            return
        pkg = self.md.package(n)
        if pkg is None:
            return
        msg = (f"`{name}` ({pkg.library}) in {where}: {pkg.reason.rstrip('.')}. It cannot be installed or used as is on an Ascend NPU host.")
        if pkg.severity == "info":
            msg = f"`{name}` ({pkg.library}) in {where}: {pkg.reason}"
        self.add("NPU901", line, f"package:{n}", msg, pkg.replacement, severity=pkg.severity)

    def torch_pin(self, rest: str, line: int, where: str) -> None:
        local = self.md.cuda_local.search(rest)
        if local:
            self.add("NPU902", line, "package:torch", f"`torch{rest.strip()}` in {where} is a CUDA build of torch ({local.group(0)}); "
                     "torch_npu needs the CPU / aarch64 wheel of the same version.",
                     "torch==<version> from PyPI (no +cu suffix) plus torch_npu==<version>")
        m = _PIN.match(rest)
        if not m:
            return
        ver = m.group(1).split("+")[0]
        mm = ".".join(ver.split(".")[:2])
        known = [v for v in TORCH_VERSIONS if ".".join(v.split(".")[:2]) == mm]
        if not known:
            self.add("NPU902", line, f"torch-version:{ver}",
                     f"`torch=={ver}` in {where}: the knowledge base has no Ascend support list for torch {mm} "
                     f"(it has {', '.join(TORCH_VERSIONS)}), so API support for this version is unverified.",
                     f"move to a torch version with a torch_npu release and a support list (e.g. {TORCH_VERSIONS[-1]}) "
                     "and analyse with --torch-version <that version>")
        elif known[0] != self.kb.torch_version:
            self.add("NPU902", line, f"torch-version:{ver}",
                     f"`torch=={ver}` in {where}, but this analysis used the support list of torch {self.kb.torch_version}.",
                     f"rerun with --torch-version {known[0]} to check the code against the torch {known[0]} support list",
                     severity="info")

    def index_url(self, text: str, line: int) -> None:
        if self.md.cuda_index.search(text):
            self.add("NPU902", line, "package:torch",
                     "a CUDA wheel index of PyTorch (download.pytorch.org/whl/cu*): the torch installed from it is a CUDA build.",
                     "install torch from PyPI (CPU / aarch64 wheel) plus the matching torch_npu; drop the cu* index URL")

    # ------------------------------------------------------------------ file kinds
    def requirements(self) -> None:
        where = f"`{Path(self.relpath).name}`"
        for i, raw in enumerate(self.lines, 1):
            text = _strip_comment(raw).strip()
            if not text:
                continue
            if text.startswith("-"):
                self.index_url(text, i)
                continue
            self.requirement(text, i, where)

    def pyproject(self) -> None:
        """Dependency arrays of [project], [project.optional-dependencies], [build-system] and Poetry tables."""
        section = ""
        in_array = False
        where = "`pyproject.toml`"
        for i, raw in enumerate(self.lines, 1):
            text = _strip_comment(raw).strip()
            if text.startswith("[") and not in_array:
                section = text.strip("[]").strip()
                continue
            poetry = section.startswith("tool.poetry") and ("dependencies" in section)
            if poetry and "=" in text and not in_array:
                name = text.split("=", 1)[0].strip().strip("\"'")
                value = text.split("=", 1)[1]
                q = _QUOTED.search(value)
                self.requirement(name + (("==" + q.group(1).lstrip("=^~")) if q and re.match(r"^[=^~]?\d", q.group(1)) else ""), i, where)
                continue
            deps_key = re.match(r"^([A-Za-z0-9_.-]+|\"[^\"]+\")\s*=\s*\[", text)
            relevant = section in ("project", "project.optional-dependencies", "build-system", "dependency-groups") or \
                section.startswith(("project.optional-dependencies", "tool.pdm", "tool.uv"))
            if deps_key and relevant:
                in_array = True
            if in_array:
                for q in _QUOTED.findall(text.split("=", 1)[1] if deps_key else text):
                    self.requirement(q, i, where)
                if "]" in text.split("#")[0] and not text.rstrip().endswith("["):
                    in_array = text.count("[") > text.count("]")

    def setup_cfg(self) -> None:
        section, key = "", ""
        where = "`setup.cfg`"
        for i, raw in enumerate(self.lines, 1):
            text = _strip_comment(raw).rstrip()
            if not text.strip():
                continue
            if text.startswith("["):
                section, key = text.strip().strip("[]"), ""
                continue
            if not raw[:1].isspace() and "=" in text:
                key, value = (x.strip() for x in text.split("=", 1))
                if section == "options" and key in ("install_requires", "setup_requires", "tests_require") or section == "options.extras_require":
                    if value:
                        self.requirement(value, i, where)
                continue
            if section == "options" and key in ("install_requires", "setup_requires", "tests_require") or section == "options.extras_require":
                self.requirement(text.strip(), i, where)

    def conda(self) -> None:
        where = f"`{Path(self.relpath).name}`"
        in_deps = False
        for i, raw in enumerate(self.lines, 1):
            text = _strip_comment(raw).rstrip()
            if not text.strip():
                continue
            if not raw[:1].isspace() and not text.lstrip().startswith("-"):
                in_deps = text.strip().startswith("dependencies")
                continue
            m = re.match(r"^\s*-\s*(.+)$", text)
            if in_deps and m:
                item = m.group(1).strip().strip("\"'")
                if item.endswith(":") or item.startswith(("pip:", "{")):
                    continue
                if item.startswith("-"):
                    self.index_url(item, i)
                    continue
                item = item.split("::")[-1]  # channel::package
                # conda pins use '=' (pytorch=2.1.0=py3.10_cuda11.8...) -- pip pins '=='
                name = re.split(r"[=<>!~\s\[]", item, maxsplit=1)[0]
                rest = item[len(name):]
                if normalise(name) in ("torch", "pytorch"):
                    if "cuda" in rest.lower():
                        self.add("NPU902", i, "package:torch", f"`{item}` in {where} is a CUDA build of PyTorch.",
                                 "pip install torch (CPU / aarch64 wheel) plus the matching torch_npu instead of the conda CUDA build")
                    pin = re.match(r"^=+\s*([0-9][0-9.]*)", rest)
                    if pin:
                        self.torch_pin("==" + pin.group(1), i, where)
                    continue
                self.requirement(name + ("==" + rest.lstrip("=") if rest.startswith("=") else rest), i, where)

    def launcher(self, docker: bool) -> None:
        where = f"`{Path(self.relpath).name}`"
        for logical in _logical_lines(self.lines):
            joined = " ".join(t for _i, t in logical)
            stripped = _strip_comment(joined).strip()
            if not stripped:
                continue
            first = logical[0][0]
            if docker:
                m = re.match(r"^FROM\s+(?:--platform=\S+\s+)?(\S+)", stripped, re.I)
                if m:
                    self.base_image(m.group(1), first)
                    continue
            pip_seen = False
            for lineno, piece in logical:
                piece_c = _strip_comment(piece)
                if not piece_c.strip():
                    continue
                self.env_and_tools(piece_c, lineno)
                m = _PIP_INSTALL.search(piece_c)
                if m:
                    pip_seen = True
                    rest = piece_c[m.end():]
                elif pip_seen:
                    rest = piece_c
                else:
                    continue
                self.install_args(rest, lineno, where)
                if re.search(r"(&&|;|\|\|)", rest):
                    pip_seen = False

    def install_args(self, rest: str, lineno: int, where: str) -> None:
        words = _WORD.findall(re.split(r"&&|;|\|\|", rest)[0])
        skip = False
        for w in words:
            if skip:
                skip = False
                if "download.pytorch.org" in w:
                    self.index_url(w, lineno)
                continue
            if w in _OPTS_WITH_VALUE:
                skip = True
                continue
            if w.startswith("-"):
                if "=" in w:
                    self.index_url(w, lineno)
                continue
            if "$" in w:
                continue
            self.requirement(w, lineno, f"an install command in {where}")

    def base_image(self, image: str, line: int) -> None:
        name, _, tag = image.partition(":")
        for rule in self.md.images:
            if any(name.startswith(p) or name == p.rstrip("/") for p in rule["prefixes"]):
                if rule.get("tag_contains") and not any(t in tag.lower() for t in rule["tag_contains"]):
                    continue
                self.add("NPU903", line, f"image:{name}", f"Base image `{image}`: {rule['reason']}", self.md.replacement_image)
                return

    def env_and_tools(self, text: str, lineno: int) -> None:
        for m in _ASSIGN.finditer(text):
            var = m.group(1)
            for e in self.md.env:
                if any(_name_match(var, n) for n in e["names"]) and not any(_name_match(var, n) for n in e.get("excludes") or ()):
                    # judged by what the variable does (data/noise.yaml): a log level or an allocator hint is advice
                    sev = e.get("severity") or load_noise().launcher_severity(var)
                    self.add(e["code"], lineno, f"env:{var}", f"`{var}` is set here: {e['reason']}",
                             f"{' '.join(e['replacement'].split())}", severity=sev)
                    break
        words = set(_WORD.findall(text))
        for t in self.md.tools:
            for n in t["names"]:
                if n in words or any(w.endswith("/" + n) for w in words):
                    self.add(t["code"], lineno, f"tool:{n}", f"`{n}` is run here: {t['reason']}", t["replacement"],
                             severity=t.get("severity"))
        if re.search(r"--(?:dist[-_])?backend[=\s]+['\"]?nccl\b", text, re.I):
            self.add("NPU907", lineno, "launcher:backend-nccl", "The launcher passes the NCCL backend to the program; HCCL is the NPU backend.",
                     "pass hccl (e.g. --dist-backend hccl), or import transfer_to_npu first so that init_process_group rewrites 'nccl'")
        if re.search(r"--nproc[-_]per[-_]node[=\s]+['\"]?gpu\b", text):
            self.add("NPU907", lineno, "launcher:nproc-gpu", "`--nproc_per_node gpu` makes torchrun count CUDA devices (none on an NPU host).",
                     "--nproc_per_node=<number of NPUs> (npu-smi info lists them)")
