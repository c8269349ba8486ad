"""C++ / CUDA sources of a library, at regex level.

For the ``.cu .cuh .cpp .cc .cxx .h .hpp`` files of a library this finds

* CUDA kernels (``__global__`` functions) and their launches (``k<<<...>>>``),
* uses of the CUDA runtime (``cudaMalloc``...), cuBLAS, cuDNN, Thrust, CUB,
  ``at::cuda`` / ``c10::cuda`` -- none of which exist on an Ascend NPU,
* the Python bindings of compiled modules: ``PYBIND11_MODULE(name, m)`` with
  its ``m.def("roi_align_forward", &roi_align_forward)`` entries and
  ``TORCH_LIBRARY(ns, m)`` operator schemas (called as ``torch.ops.ns.op``),
* a name-level C++ call graph (function bodies, ``REGISTER_DEVICE_IMPL`` /
  ``REGISTER_NPU_IMPL`` dispatch registrations), so each binding is linked to
  the kernels behind it, and to an NPU implementation when the sources have one.

Nothing is compiled. Files that cannot be decoded become error entries.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from analyse.findings import AnalysisError

CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hxx", ".inl")
MAX_CPP_BYTES = 4 * 1024 * 1024

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_GLOBAL = re.compile(r"__global__\s+(?:[\w:<>,\*&]+\s+)*?(\w+)\s*\(")
_LAUNCH = re.compile(r"\b(\w+)\s*(?:<[^;{}]*?>)?\s*<<<")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_QUALIFIERS = re.compile(r"(?:\s*(?:const|noexcept|override|final|mutable|volatile|&&?|->\s*[\w:<>,\s\*&]+?))+\s*$")
_NAME_BEFORE = re.compile(r"([A-Za-z_~][\w:]*)\s*$")
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "do", "else", "try", "decltype",
             "alignof", "static_assert", "defined", "new", "delete", "throw", "case"}
_PYBIND = re.compile(r"PYBIND11_MODULE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_DEF = re.compile(r"\.def\s*\(\s*\"([\w.]+)\"")
_TORCH_LIB = re.compile(r"TORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_TORCH_LIB_IMPL = re.compile(r"TORCH_LIBRARY_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)")
_SCHEMA_DEF = re.compile(r"\.def\s*\(\s*\"(\w+)")
_IMPL = re.compile(r"\.impl\s*\(\s*\"(\w+)\"\s*,([^;]*)")
_REGISTER = re.compile(r"REGISTER_DEVICE_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)")
_REGISTER_NPU = re.compile(r"REGISTER_NPU_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")

API_PATTERNS = {
    "cuda-runtime": re.compile(r"\bcuda(?:Malloc|Free|Memcpy|Memset|Stream|Event|Device|GetLastError|GetErrorString|"
                               r"Launch|FuncSetAttribute|Occupancy|PeekAtLastError|Graph|Host|Mem)\w*\b"),
    "cublas": re.compile(r"\bcublas\w+"),
    "cudnn": re.compile(r"\bcudnn\w+"),
    "thrust": re.compile(r"\bthrust::"),
    "cub": re.compile(r"\bcub::"),
    "at::cuda": re.compile(r"\b(?:at|c10)::cuda::"),
    "nccl": re.compile(r"\bnccl[A-Z]\w*"),
    "cuda-intrinsics": re.compile(r"\b(?:__shfl\w*|__syncthreads|atomicAdd|__ldg|__shared__|warpSize)\b"),
}


@dataclass
class Binding:
    module: str              # PYBIND11 module name, TORCH_EXTENSION_NAME, or torch.ops.<ns>
    op: str                  # the Python-visible name
    path: str                # file with the binding
    targets: Tuple[str, ...]  # C++ functions it binds
    kernels: Tuple[str, ...] = ()
    npu_impls: Tuple[str, ...] = ()


@dataclass
class CppScan:
    kernels: Dict[str, str] = field(default_factory=dict)                   # kernel -> path
    functions: Dict[str, Set[str]] = field(default_factory=dict)            # name -> identifiers used
    registrations: Dict[str, Set[str]] = field(default_factory=dict)        # dispatcher -> impls
    npu_impls: Set[str] = field(default_factory=set)
    bindings: List[Binding] = field(default_factory=list)
    modules: Dict[str, str] = field(default_factory=dict)                   # module label -> path
    api_use: Dict[str, Counter] = field(default_factory=dict)               # folder -> Counter
    folder_kernels: Dict[str, List[str]] = field(default_factory=dict)
    folder_files: Counter = field(default_factory=Counter)
    setup_ext_names: List[str] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    errors: List[AnalysisError] = field(default_factory=list)
    _by_op: Optional[Dict[str, List[Binding]]] = None

    # ---- queries
    def binding_for(self, ext_qualname: str) -> List[Binding]:
        """Bindings a Python call of ``<ext module>.<op>`` may reach."""
        if self._by_op is None:
            self._by_op = {}
            for b in self.bindings:
                self._by_op.setdefault(b.op, []).append(b)
        mod, _, op = ext_qualname.rpartition(".")
        cands = self._by_op.get(op, [])
        if ext_qualname.startswith("torch.ops."):
            ns = mod.split(".")[2] if mod.count(".") >= 2 else ""
            return [b for b in cands if b.module == f"torch.ops.{ns}"]
        exact = [b for b in cands if b.module == mod or mod.endswith("." + b.module)]
        return exact or [b for b in cands if not b.module.startswith("torch.ops.")]

    def ext_module_names(self) -> Set[str]:
        out = set(self.setup_ext_names)
        for b in self.bindings:
            if b.module.startswith("torch.ops."):
                out.add(b.module)
        return out

    def reason(self, ext_qualname: str) -> Tuple[str, str]:
        """(status, reason text) for a Python call into a compiled module."""
        bs = self.binding_for(ext_qualname)
        if not bs:
            return "unsupported", f"{ext_qualname} (compiled extension op; no binding found in the C++ sources)"
        kernels = sorted({k for b in bs for k in b.kernels})
        npu = sorted({k for b in bs for k in b.npu_impls})
        where = bs[0].path
        if npu:
            return ("needs-migration",
                    f"{ext_qualname} (compiled op bound in {where}; NPU implementation in the sources: "
                    f"{', '.join(npu[:4])} -- build the extension for NPU)")
        if kernels:
            shown = ", ".join(kernels[:6]) + (f" and {len(kernels) - 6} more" if len(kernels) > 6 else "")
            return "unsupported", f"{ext_qualname} (compiled op bound in {where}; CUDA kernels: {shown})"
        return "unsupported", f"{ext_qualname} (compiled op bound in {where}; C++ extension must be rebuilt for NPU)"

    def summary(self) -> dict:
        mods = []
        for label, path in sorted(self.modules.items()):
            bs = [b for b in self.bindings if b.module == label]
            mods.append({
                "module": label, "path": path, "bindings": len(bs),
                "bindings_with_cuda_kernels": sum(1 for b in bs if b.kernels),
                "bindings_with_npu_impl": sum(1 for b in bs if b.npu_impls),
            })
        folders = []
        for folder in sorted(self.folder_files):
            use = self.api_use.get(folder, Counter())
            ks = self.folder_kernels.get(folder, [])
            if not ks and not use:
                continue
            folders.append({"folder": folder, "files": self.folder_files[folder], "kernels": len(ks),
                            "kernel_names": sorted(ks)[:50], "cuda_apis": dict(sorted(use.items()))})
        return {"modules": mods, "folders": folders, "kernels_total": len(self.kernels),
                "files": self.files, "lines": self.lines}


def strip_comments(text: str) -> str:
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _match_braces(text: str) -> Dict[int, int]:
    stack = []
    out = {}
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            out[stack.pop()] = i
    return out


def _functions(text: str) -> List[Tuple[str, int, int]]:
    """(name, body start, body end) of function definitions."""
    braces = _match_braces(text)
    out = []
    covered_until = -1
    for start in sorted(braces):
        if start < covered_until:
            continue
        prefix = text[max(0, start - 400):start]
        prefix = _QUALIFIERS.sub("", prefix).rstrip()
        if not prefix.endswith(")"):
            continue
        depth = 0
        j = len(prefix) - 1
        while j >= 0:
            c = prefix[j]
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j <= 0:
            continue
        m = _NAME_BEFORE.search(prefix[:j])
        if not m:
            continue
        name = m.group(1).split("::")[-1]
        if not name or name in _KEYWORDS or name.startswith(("AT_DISPATCH", "DISPATCH_")) or name.isupper():
            continue
        end = braces[start]
        out.append((name, start, end))
        covered_until = end
    return out


def scan_sources(root_files: Sequence[Tuple[Path, str]], setup_texts: Sequence[str] = ()) -> CppScan:
    """Scan (abspath, relpath) C/C++/CUDA files."""
    scan = CppScan()
    for text in setup_texts:
        for m in re.finditer(r"(?:CUDAExtension|CppExtension|Extension)\s*\(\s*(?:name\s*=\s*)?['\"]([\w.]+)['\"]", text):
            scan.setup_ext_names.append(m.group(1))
        for m in re.finditer(r"ext_name\s*=\s*['\"]([\w.]+)['\"]", text):
            scan.setup_ext_names.append(m.group(1))
    pending_bindings: List[Tuple[str, str, str, str]] = []   # (module, op, path, def args text)
    for abspath, rel in root_files:
        try:
            data = abspath.read_bytes()
        except OSError as exc:
            scan.errors.append(AnalysisError(rel, "io", f"cannot read file: {exc.strerror or exc}"))
            continue
        if len(data) > MAX_CPP_BYTES:
            scan.errors.append(AnalysisError(rel, "too-large", f"{len(data)} bytes exceeds the {MAX_CPP_BYTES}-byte limit"))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            try:
                text = data.decode("latin-1") if b"\x00" not in data else None
            except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes everything
                text = None
            if text is None:
                scan.errors.append(AnalysisError(rel, "encoding", "cannot decode C++/CUDA source as UTF-8"))
                continue
        if "\x00" in text:
            scan.errors.append(AnalysisError(rel, "encoding", "file contains NUL bytes (binary file?)"))
            continue
        scan.files += 1
        scan.lines += text.count("\n") + 1
        folder = rel.rpartition("/")[0] or "."
        scan.folder_files[folder] += 1
        code = strip_comments(text)
        code = _LAUNCH_BOUNDS.sub("", code)
        for m in _GLOBAL.finditer(code):
            scan.kernels.setdefault(m.group(1), rel)
            scan.folder_kernels.setdefault(folder, [])
            if m.group(1) not in scan.folder_kernels[folder]:
                scan.folder_kernels[folder].append(m.group(1))
        use = scan.api_use.setdefault(folder, Counter())
        for label, rx in API_PATTERNS.items():
            n = len(rx.findall(code))
            if n:
                use[label] += n
        nostr = _STRING.sub('""', code)
        for name, a, b in _functions(nostr):
            ids = set(_IDENT.findall(nostr[a:b]))
            scan.functions.setdefault(name, set()).update(ids)
        for m in _REGISTER.finditer(nostr):
            scan.registrations.setdefault(m.group(1), set()).add(m.group(3))
            if m.group(2).upper() == "NPU":
                scan.npu_impls.add(m.group(3))
        for m in _REGISTER_NPU.finditer(nostr):
            scan.registrations.setdefault(m.group(1), set()).add(m.group(2))
            scan.npu_impls.add(m.group(2))
        braces = None
        for m in _PYBIND.finditer(code):
            braces = braces or _match_braces(code)
            label = m.group(1)
            scan.modules.setdefault(label, rel)
            open_at = code.find("{", m.end())
            if open_at < 0 or open_at not in braces:
                continue
            body = code[open_at:braces[open_at]]
            for d in _DEF.finditer(body):
                args = _args_text(body, d.start())
                pending_bindings.append((label, d.group(1), rel, args))
        for m in _TORCH_LIB.finditer(code):
            braces = braces or _match_braces(code)
            label = f"torch.ops.{m.group(1)}"
            scan.modules.setdefault(label, rel)
            open_at = code.find("{", m.end())
            if open_at < 0 or open_at not in braces:
                continue
            body = code[open_at:braces[open_at]]
            for d in _SCHEMA_DEF.finditer(body):
                pending_bindings.append((label, d.group(1), rel, _args_text(body, d.start())))
        for m in _TORCH_LIB_IMPL.finditer(code):
            braces = braces or _match_braces(code)
            label = f"torch.ops.{m.group(1)}"
            dispatch = m.group(2)
            open_at = code.find("{", m.end())
            if open_at < 0 or open_at not in braces:
                continue
            body = code[open_at:braces[open_at]]
            for d in _IMPL.finditer(body):
                ids = set(_IDENT.findall(d.group(2)))
                scan.registrations.setdefault(f"{label}::{d.group(1)}", set()).update(ids)
                if "NPU" in dispatch.upper() or "PrivateUse1" in dispatch:
                    scan.npu_impls.update(ids)
    known = set(scan.functions) | set(scan.kernels)
    for label, op, rel, args in pending_bindings:
        targets = tuple(sorted(i for i in set(_IDENT.findall(args)) if i in known and i != op)) or \
            ((op,) if op in known else ())
        if label.startswith("torch.ops."):
            extra = scan.registrations.get(f"{label}::{op}", set())
            targets = tuple(sorted(set(targets) | (extra & known) | extra))
        kernels, npu = _reach(scan, targets)
        scan.bindings.append(Binding(label, op, rel, targets, tuple(sorted(kernels)), tuple(sorted(npu))))
    return scan


def _args_text(body: str, start: int) -> str:
    """Text of the call starting at body[start] ('.def(' ...) up to its closing parenthesis."""
    i = body.find("(", start)
    depth = 0
    for j in range(i, min(len(body), i + 20000)):
        c = body[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return body[i + 1:j]
    return body[i + 1:i + 2000]


def _reach(scan: CppScan, start: Sequence[str], limit: int = 5000) -> Tuple[Set[str], Set[str]]:
    """CUDA kernels and NPU implementations reachable from C++ functions *start*."""
    seen: Set[str] = set()
    todo = list(start)
    kernels: Set[str] = set()
    npu: Set[str] = set()
    while todo and len(seen) < limit:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in scan.kernels:
            kernels.add(n)
        if n in scan.npu_impls:
            npu.add(n)
            continue
        for nxt in scan.registrations.get(n, ()):
            if nxt not in seen:
                todo.append(nxt)
        for ident in scan.functions.get(n, ()):
            if ident not in seen and (ident in scan.functions or ident in scan.kernels or ident in scan.registrations):
                todo.append(ident)
    return kernels, npu
