"""C++ / CUDA sources of a library, at lexical level, in time linear in their size.

For the ``.cu .cuh .cpp .cc .cxx .h .hpp`` files of a library this finds

* CUDA kernels (``__global__`` functions) and their launches,
* uses of the CUDA runtime (``cudaMalloc``...), cuBLAS, cuDNN, Thrust, CUB,
  ``at::cuda`` / ``c10::cuda`` -- none of which exist on an Ascend NPU,
* the Python bindings of compiled modules: ``PYBIND11_MODULE(name, m)`` with
  its ``m.def("roi_align_forward", &roi_align_forward, py::arg("input"))``
  entries (the op name is the first string argument; ``py::arg`` names and doc
  strings are never taken for ops or C++ functions) and ``TORCH_LIBRARY(ns, m)``
  operator schemas (called as ``torch.ops.ns.op``);
  ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` takes the module name the build
  gives the extension whose sources include the file (setup.py ``ext_modules``,
  ``load(name=...)``: :class:`BuildExt`),
* a name-level C++ call graph (function bodies, ``REGISTER_DEVICE_IMPL`` /
  ``REGISTER_NPU_IMPL`` / ``TORCH_LIBRARY_IMPL`` per-device registrations), so
  each binding is linked to the kernels behind it and to the library's own NPU
  implementation when it has one (with the file:line of the registration),
* per-device evidence for the library as a whole (:meth:`CppScan.npu_evidence`).

A binding whose code reaches an NPU implementation is ``supported``; one that
reaches CUDA kernels or CUDA APIs and no NPU implementation is ``unsupported``;
one whose code is plain C++ (CPU only) is ``needs-migration`` (runs on the
host), never a CUDA blocker.

Nothing is compiled. Files that cannot be decoded become error entries.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, Tuple

from analyse.cpp_syntax import (LineIndex, blank_comments_and_strings, cuda_build_spans, global_kernels, in_spans,
                                 match_brackets)
from analyse.findings import AnalysisError

CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hxx", ".inl")
CUDA_SUFFIXES = (".cu", ".cuh")
MAX_CPP_BYTES = 4 * 1024 * 1024

_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^()]*\)")
_IDENT = re.compile(r"[A-Za-z_](?<!\w[A-Za-z_])\w*")   # \b[A-Za-z_]\w*\b, with its first character first
_TRAIL_NAME = re.compile(r"[A-Za-z_~][\w:]*$")
_TRAIL_WORD = re.compile(r"[A-Za-z_]\w*$")
_TRAIL_RET = re.compile(r"->[\w:<>,\s\*&]{0,300}$")
_QUALIFIER_WORDS = {"const", "noexcept", "override", "final", "mutable", "volatile"}
_KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "do", "else", "try", "decltype",
             "alignof", "static_assert", "defined", "new", "delete", "throw", "case", "noexcept"}
_PYBIND = re.compile(r"PYBIND11_MODULE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_DEF_OPEN = re.compile(r"\.def\s*\(")
_STR_ARG = re.compile(r"\s*\"([^\"\\\n]*)\"")
_PY_CLASS = re.compile(r"(?:py|pybind11)::class_\s*<")
_TORCH_LIB = re.compile(r"TORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_TORCH_LIB_IMPL = re.compile(r"TORCH_LIBRARY_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)")
_IMPL_OPEN = re.compile(r"\.impl\s*\(")
_REGISTER = re.compile(r"REGISTER_DEVICE_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)")
_REGISTER_NPU = re.compile(r"REGISTER_NPU_IMPL\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_NPU_DISPATCH = {"NPU", "PRIVATEUSE1", "AUTOGRADPRIVATEUSE1", "AUTOGRADNPU"}
# other accelerators' implementations: irrelevant to an NPU port, and their code is not CUDA either
_OTHER_DEVICES = {"MLU", "MUSA", "MPS", "XPU", "HPU", "IPU", "DIPU", "VULKAN", "METAL", "HIP", "MTIA"}
_OTHER_DEVICE_DIRS = {"mlu", "musa", "mps", "xpu", "hpu", "ipu", "dipu", "diopi", "parrots", "hip", "rocm", "metal"}
_CUDA_DISPATCH = {"CUDA", "AUTOGRADCUDA"}

# the CUDA driver API: ``cu<Group>...`` entry points and ``CU<type>`` handles (cuda.h)
_DRIVER_CALLS = ("Init", "DriverGetVersion", "Device", "Ctx", "DevicePrimaryCtx", "Module", "Library", "Kernel",
                 "Launch", "Func", "Mem", "Stream", "Event", "Graph", "Link", "Occupancy", "Pointer", "Ipc",
                 "GetErrorString", "GetErrorName", "GetProcAddress", "Tex", "Surf", "Array")
_DRIVER_TYPES = ("function", "module", "context", "stream", "event", "deviceptr", "result", "jit_option", "device",
                 "graph", "graphExec", "linkState", "library", "kernel")
API_PATTERNS = {
    "cuda-runtime": re.compile(r"\bcuda(?:Malloc|Free|Memcpy|Memset|Stream|Event|Device|GetLastError|GetErrorString|"
                               r"Launch|Func|Occupancy|PeekAtLastError|Graph|Host|Mem|SetDevice|GetDevice)\w*\b"),
    "cublas": re.compile(r"\bcublas\w+"),
    "cudnn": re.compile(r"\bcudnn\w+"),
    "thrust": re.compile(r"\bthrust::"),
    "cub": re.compile(r"\bcub::"),
    "at::cuda": re.compile(r"\b(?:at|c10)::cuda::"),
    "nccl": re.compile(r"\bnccl[A-Z]\w*"),
    "cuda-intrinsics": re.compile(r"\b(?:__shfl\w*|__syncthreads|atomicAdd|__ldg|__shared__|warpSize)\b"),
    # CUDA source compiled at run time (NVRTC) and loaded / launched through the CUDA driver API
    # (nvrtc.h, cuda.h: docs.nvidia.com/cuda/nvrtc, docs.nvidia.com/cuda/cuda-driver-api)
    "nvrtc": re.compile(r"\bnvrtc[A-Z]\w*"),
    "cuda-driver": re.compile(r"\bcu(?:" + "|".join(_DRIVER_CALLS) + r")\w*|\bCU(?:" + "|".join(_DRIVER_TYPES) + r")\b"),
}
_CUDA_ANY = re.compile("|".join(f"(?:{rx.pattern})" for rx in API_PATTERNS.values()) + r"|<<<")

# The counts of API_PATTERNS, fast: the same patterns, each made to start with its literal word (a leading
# ``\b`` before a word character becomes a look-behind after the word, an alternation becomes one pattern per
# alternative, counts summed). Python's ``re`` then jumps between occurrences of the literal instead of trying
# the pattern at every position of the text: 0.47 s -> 0.05 s on DeepSpeed's 2.3 MB of C++/CUDA, in the main
# process after the workers. Every alternative is bounded by word boundaries or ``::``, so no two of one
# label overlap and the sums equal the originals' counts (checked by a test on random and real texts).
_API_COUNTERS = {
    "cuda-runtime": (r"cuda(?<!\wcuda)(?:Malloc|Free|Memcpy|Memset|Stream|Event|Device|GetLastError|GetErrorString|"
                     r"Launch|Func|Occupancy|PeekAtLastError|Graph|Host|Mem|SetDevice|GetDevice)\w*\b",),
    "cublas": (r"cublas(?<!\wcublas)\w+",),
    "cudnn": (r"cudnn(?<!\wcudnn)\w+",),
    "thrust": (r"thrust::(?<!\wthrust::)",),
    "cub": (r"cub::(?<!\wcub::)",),
    "at::cuda": (r"at::cuda::(?<!\wat::cuda::)", r"c10::cuda::(?<!\wc10::cuda::)"),
    "nccl": (r"nccl(?<!\wnccl)[A-Z]\w*",),
    "cuda-intrinsics": (r"__shfl(?<!\w__shfl)\w*\b", r"__syncthreads(?<!\w__syncthreads)\b",
                        r"atomicAdd(?<!\watomicAdd)\b", r"__ldg(?<!\w__ldg)\b", r"__shared__(?<!\w__shared__)\b",
                        r"warpSize(?<!\wwarpSize)\b"),
    "nvrtc": (r"nvrtc(?<!\wnvrtc)[A-Z]\w*",),
    "cuda-driver": (r"cu(?<!\wcu)(?:" + "|".join(_DRIVER_CALLS) + r")\w*",
                    r"CU(?<!\wCU)(?:" + "|".join(_DRIVER_TYPES) + r")\b"),
}
_API_COUNTERS = {label: tuple(re.compile(p) for p in pats) for label, pats in _API_COUNTERS.items()}
assert _API_COUNTERS.keys() == API_PATTERNS.keys()
# the words without which _CUDA_ANY cannot match (a body holding none of them is not searched)
_CUDA_WORDS = ("cuda", "cublas", "cudnn", "thrust::", "cub::", "nccl", "__shfl", "__syncthreads", "atomicAdd", "__ldg",
               "__shared__", "warpSize", "<<<", "nvrtc") + tuple("cu" + w for w in _DRIVER_CALLS) \
    + tuple("CU" + w for w in _DRIVER_TYPES)


def api_counts(text: str) -> Dict[str, int]:
    """How many times each label of :data:`API_PATTERNS` matches *text* (labels that do not match left out)."""
    out: Dict[str, int] = {}
    for label, rxs in _API_COUNTERS.items():
        n = 0
        for rx in rxs:
            for _ in rx.finditer(text):
                n += 1
        if n:
            out[label] = n
    return out


def uses_cuda(text: str) -> bool:
    """``_CUDA_ANY.search(text)``, skipped for a text without any of its words."""
    return any(w in text for w in _CUDA_WORDS) and _CUDA_ANY.search(text) is not None


@dataclass(frozen=True)
class BuildExt:
    """A compiled extension module as the build declares it."""
    name: str                    # full module name (``detectron2._C``) or the load(name=...) name
    kind: str                    # "cuda" | "cpp"
    sources: Tuple[str, ...]     # source paths as written in the build (may be globs / partial)
    path: str                    # build file
    line: int


@dataclass
class Binding:
    module: str              # PYBIND11 module name (from the build for TORCH_EXTENSION_NAME), or torch.ops.<ns>
    op: str                  # the Python-visible name
    path: str                # file with the binding
    targets: Tuple[str, ...]  # C++ functions it binds
    kernels: Tuple[str, ...] = ()
    npu_impls: Tuple[str, ...] = ()
    line: int = 0
    cuda_code: bool = False   # reaches CUDA kernels or CUDA API uses
    defined: bool = False     # the code behind it was found in the sources
    cuda_build: str = ""      # "path:line" of the ``#if`` that compiles it (or the code it binds) only in a CUDA build
    # a bound class (``py::class_``) whose every constructor (``py::init<int64_t>()``) takes plain values, no
    # tensor, device or stream: calling it from Python builds an object on the host
    host_object: bool = False


@dataclass
class CppScan:
    kernels: Dict[str, str] = field(default_factory=dict)                   # kernel -> path
    functions: Dict[str, Set[str]] = field(default_factory=dict)            # name -> identifiers used
    cuda_functions: Set[str] = field(default_factory=set)                   # functions with CUDA code
    device_functions: Set[str] = field(default_factory=set)                 # defined __device__ (device code)
    host_functions: Set[str] = field(default_factory=set)                   # defined for the host
    registrations: Dict[str, Set[str]] = field(default_factory=dict)        # dispatcher -> impls
    npu_impls: Set[str] = field(default_factory=set)
    npu_where: Dict[str, str] = field(default_factory=dict)                 # npu impl -> "path:line"
    npu_files: List[str] = field(default_factory=list)                      # files in npu/ folders or *_npu.*
    bindings: List[Binding] = field(default_factory=list)
    modules: Dict[str, str] = field(default_factory=dict)                   # module label -> path
    api_use: Dict[str, Counter] = field(default_factory=dict)               # folder -> Counter
    folder_kernels: Dict[str, List[str]] = field(default_factory=dict)
    folder_files: Counter = field(default_factory=Counter)
    setup_ext_names: List[str] = field(default_factory=list)
    builds: List[BuildExt] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    errors: List[AnalysisError] = field(default_factory=list)
    _by_op: Optional[Dict[str, List[Binding]]] = None
    _folder_seen: Dict[str, Set[str]] = field(default_factory=dict)
    _npu_defined: Dict[str, str] = field(default_factory=dict)              # defined in an NPU source file -> where
    # pybind11 class bindings (module, name, path, statement text, line, host object) and, for the files that hold one, the
    # functions the file defines (name -> identifiers used, names with CUDA code): a class's member functions
    # (`Update`, `Query`) share their names with other classes' (a CUDA twin), so they are read in their file first
    _class_pending: List[Tuple[str, str, str, str, int, bool]] = field(default_factory=list)
    _local_defs: Dict[str, Tuple[Dict[str, Set[str]], Set[str]]] = field(default_factory=dict)
    _other_defined: Set[str] = field(default_factory=set)                   # defined in any other file
    cuda_build: Dict[str, str] = field(default_factory=dict)                # defined only in a CUDA build -> where
    _cuda_build_defined: Dict[str, str] = field(default_factory=dict)       # defined in a CUDA-build span -> where
    _plain_defined: Set[str] = field(default_factory=set)                   # defined outside such spans

    # ---- queries
    def binding_for(self, ext_qualname: str) -> List[Binding]:
        """Bindings a Python call of ``<ext module>.<op>`` may reach."""
        if self._by_op is None:
            self._by_op = {}
            for b in self.bindings:
                self._by_op.setdefault(b.op, []).append(b)
        if ext_qualname.startswith("torch.ops."):
            parts = ext_qualname.split(".")   # torch.ops.<ns>.<op>[.<overload>]
            if len(parts) < 4:
                return []
            return [b for b in self._by_op.get(parts[3], []) if b.module == f"torch.ops.{parts[2]}"]
        mod, _, op = ext_qualname.rpartition(".")
        cands = self._by_op.get(op, [])
        if not cands:   # a class bound under a name built from a prefix (``"SumTree" + type``): the longest prefix
            pre = [b for b in self.bindings if b.op.endswith("*") and op.startswith(b.op[:-1])]
            longest = max((len(b.op) for b in pre), default=0)
            cands = [b for b in pre if len(b.op) == longest]
        exact = [b for b in cands if b.module == mod or mod.endswith("." + b.module) or b.module.endswith("." + mod)]
        return exact or [b for b in cands if not b.module.startswith("torch.ops.")]

    def ext_module_names(self) -> Set[str]:
        out = set(self.setup_ext_names) | {b.name for b in self.builds}
        for b in self.bindings:
            if b.module.startswith("torch.ops."):
                out.add(b.module)
        return out

    def build_of(self, module: str) -> Optional[BuildExt]:
        for b in self.builds:
            if b.name == module or module.endswith("." + b.name) or b.name.endswith("." + module):
                return b
        return None

    def op_status(self, ext_qualname: str) -> Tuple[str, str, List[str]]:
        """(status, reason text, evidence) for a Python call into a compiled module."""
        bs = self.binding_for(ext_qualname)
        build = self.build_of(ext_qualname.rpartition(".")[0])
        if not bs and ext_qualname.endswith(".*"):
            return self._any_op_status(ext_qualname[:-2], build)
        if not bs:
            if build is not None and build.kind == "cpp":
                return ("needs-migration", f"{ext_qualname} (C++ extension op built as a CppExtension in "
                        f"{build.path}:{build.line}; CPU code, runs on the host)", [f"{build.path}:{build.line}"])
            return "unsupported", f"{ext_qualname} (compiled extension op; no binding found in the C++ sources)", []
        kernels = sorted({k for b in bs for k in b.kernels})
        npu = sorted({k for b in bs for k in b.npu_impls})
        where = f"{bs[0].path}:{bs[0].line}" if bs[0].line else bs[0].path
        if npu:
            ev = [f"{self.npu_where[k]} ({k})" if k in self.npu_where else k for k in npu[:4]]
            return ("supported", f"{ext_qualname} (compiled op bound in {where}; the library's NPU implementation: "
                    f"{', '.join(ev)})", ev)
        if kernels:
            shown = ", ".join(kernels[:6]) + (f" and {len(kernels) - 6} more" if len(kernels) > 6 else "")
            return "unsupported", f"{ext_qualname} (compiled op bound in {where}; CUDA kernels: {shown})", [where]
        guard = next((b.cuda_build for b in bs if b.cuda_build), "")
        if guard and all(b.cuda_build or b.cuda_code for b in bs):
            return ("unsupported", f"{ext_qualname} (compiled op bound in {where}; compiled only in a CUDA build: the "
                    f"preprocessor test at {guard} leaves it out of a build without CUDA)", [where, guard])
        if any(b.cuda_code for b in bs):
            return "unsupported", f"{ext_qualname} (compiled op bound in {where}; its C++ code calls CUDA APIs)", [where]
        if all(b.defined and b.host_object for b in bs):
            return ("supported", f"{ext_qualname} (a C++ class bound in {where}: CPU-only code, built from plain "
                    "values; the object lives on the host, and the extension builds on any host)", [where])
        if all(b.defined for b in bs):
            return ("needs-migration", f"{ext_qualname} (compiled op bound in {where}; CPU-only C++ code, no CUDA: "
                    "runs on the host, build the extension for the Ascend host)", [where])
        return "unsupported", f"{ext_qualname} (compiled op bound in {where}; C++ extension must be rebuilt for NPU)", [where]

    def _any_op_status(self, module: str, build) -> Tuple[str, str, List[str]]:
        """A call of an op of *module* chosen at run time (``getattr(_C, name)(...)``): the worst of the module's
        bindings (any op may be the one)."""
        bs = [b for b in self.bindings if b.module == module or module.endswith("." + b.module)
              or b.module.endswith("." + module)]
        if not bs:
            if build is not None and build.kind == "cpp":
                return ("needs-migration", f"{module}.* (an op of a C++ extension built as a CppExtension in "
                        f"{build.path}:{build.line}, chosen at run time; CPU code, runs on the host)",
                        [f"{build.path}:{build.line}"])
            return "unsupported", f"{module}.* (an op of a compiled extension, chosen at run time)", []
        where = f"{bs[0].path}:{bs[0].line}" if bs[0].line else bs[0].path
        if any(b.npu_impls for b in bs) and all(b.npu_impls or not (b.kernels or b.cuda_code) for b in bs):
            return ("supported", f"{module}.* (an op of the compiled module bound in {where}, chosen at run time; "
                    "every op has the library's NPU implementation or no CUDA code)", [where])
        kernels = sorted({k for b in bs for k in b.kernels})
        if kernels or any(b.cuda_code for b in bs):
            shown = ", ".join(kernels[:4]) + (f" and {len(kernels) - 4} more" if len(kernels) > 4 else "")
            what = f"CUDA kernels: {shown}" if kernels else "its C++ code calls CUDA APIs"
            return ("unsupported", f"{module}.* (an op of the compiled module bound in {where}, chosen at run time; "
                    f"{what})", [where])
        return ("needs-migration", f"{module}.* (an op of the compiled module bound in {where}, chosen at run time; "
                "CPU-only C++ code, runs on the host)", [where])

    def reason(self, ext_qualname: str) -> Tuple[str, str]:
        st, why, _ev = self.op_status(ext_qualname)
        return st, why

    def npu_evidence(self) -> List[str]:
        """The library's own NPU implementations, as ``path:line (what)`` lines."""
        out = [f"{where}: NPU implementation {impl}" for impl, where in sorted(self.npu_where.items(),
                                                                            key=lambda kv: kv[1])]
        folders = sorted({f.rpartition("/")[0] for f in self.npu_files})
        out += [f"{d}/: NPU kernel sources" for d in folders]
        return out

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
    return blank_comments_and_strings(text)


def _skip_ws_back(text: str, j: int) -> int:
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j


def _function_head(text: str, brace: int, paren_open: Dict[int, int]) -> Optional[Tuple[str, int]]:
    """Name of the function whose body opens at *brace*, or None. Looks back a
    bounded distance: qualifiers, a trailing return type, the parameter list
    (matched through *paren_open*) and the name."""
    j = _skip_ws_back(text, brace - 1)
    for _ in range(8):
        if j < 0:
            return None
        ch = text[j]
        if ch == "&":
            j = _skip_ws_back(text, j - 1)
            continue
        if ch.isalnum() or ch == "_" or ch == ">":
            lo = max(0, j - 320)
            window = text[lo:j + 1]
            m = _TRAIL_RET.search(window) if ch == ">" or "->" in window else None
            if m is not None:
                j = _skip_ws_back(text, lo + m.start() - 1)
                continue
            w = _TRAIL_WORD.search(text[max(0, j - 40):j + 1])
            if w is not None and w.group(0) in _QUALIFIER_WORDS:
                j = _skip_ws_back(text, j - len(w.group(0)))
                continue
            return None
        break
    if j < 0 or text[j] != ")":
        return None
    open_at = paren_open.get(j)
    if open_at is None:
        return None
    k = _skip_ws_back(text, open_at - 1)
    if k < 0:
        return None
    lo = max(0, k - 200)
    m = _TRAIL_NAME.search(text[lo:k + 1])
    if m is None:
        return None
    name = m.group(0).split("::")[-1]
    if not name or name in _KEYWORDS or name.startswith(("AT_DISPATCH", "DISPATCH_")) or name.isupper():
        return None
    return name, lo + m.start()


_DECL_START = re.compile(r"[;{}][^;{}]*$")


def _functions(text: str, braces: Dict[int, int], parens: Dict[int, int]) -> List[Tuple[str, int, int, str]]:
    """(name, body start, body end, where) of function definitions; where: "device"
    (``__device__`` only, callable from device code only), "both" (``__host__ __device__``)
    or "host"."""
    paren_open = {c: o for o, c in parens.items()}
    out = []
    covered_until = -1
    for start in sorted(braces):
        if start < covered_until:
            continue
        head = _function_head(text, start, paren_open)
        if head is None:
            continue
        name, pos = head
        window = text[max(0, pos - 200):pos]
        d = _DECL_START.search(window)
        decl = d.group(0) if d else window
        device = "__device__" in decl and "__host__" not in decl
        both = "__device__" in decl and "__host__" in decl
        end = braces[start]
        out.append((name, start, end, "device" if device else "both" if both else "host"))
        covered_until = end
    return out


def _statement_end(text: str, start: int, limit: int, braces: Dict[int, int], parens: Dict[int, int]) -> int:
    """Offset of the ``;`` ending the statement that starts at *start* (bracketed spans skipped)."""
    i = start
    while i < limit:
        ch = text[i]
        if ch == ";":
            return i
        if ch == "(" and i in parens:
            i = parens[i] + 1
            continue
        if ch == "{" and i in braces:
            i = braces[i] + 1
            continue
        i += 1
    return limit


def _source_matches(rel: str, src: str) -> bool:
    src = src.strip().replace("\\", "/")
    while src.startswith("./"):
        src = src[2:]
    if not src:
        return False
    if "*" in src:
        folder, _, pat = src.rpartition("/")
        rx = re.escape(pat).replace(r"\*", "[^/]*") + "$"
        return (not folder or ("/" + folder.split("**")[0].strip("/")) in ("/" + rel.rpartition("/")[0])) \
            and re.search(rx, rel.rpartition("/")[2]) is not None
    return rel == src or rel.endswith("/" + src) or src.endswith("/" + rel)


def _module_label(label: str, rel: str, builds: Sequence[BuildExt]) -> str:
    """``TORCH_EXTENSION_NAME`` -> the module name of the build compiling *rel*."""
    if label != "TORCH_EXTENSION_NAME":
        return label
    for b in builds:
        if any(_source_matches(rel, s) for s in b.sources):
            return b.name
    return label


def scan_sources(root_files: Sequence[Tuple[Path, str]], setup_texts: Sequence[str] = (),
                 builds: Sequence[BuildExt] = ()) -> CppScan:
    """Scan (abspath, relpath) C/C++/CUDA files; *builds* names the extension modules."""
    scan = CppScan()
    scan.builds = list(builds)
    for text in setup_texts:
        for m in re.finditer(r"(?:CUDAExtension|CppExtension|Extension)\s*\(\s*(?:name\s*=\s*)?['\"]([\w.]+)['\"]", text):
            scan.setup_ext_names.append(m.group(1))
    # (module, op, path, def args text, line, "path:line" of a CUDA-build `#if` around the def or "")
    pending: List[Tuple[str, str, str, str, int, str]] = []
    for abspath, rel in root_files:
        try:
            data = abspath.read_bytes()
        except OSError as exc:
            scan.errors.append(AnalysisError(rel, "io", f"cannot read file: {exc.strerror or exc}"))
            continue
        if len(data) > MAX_CPP_BYTES:
            scan.errors.append(AnalysisError(rel, "too-large", f"{len(data)} bytes exceeds the {MAX_CPP_BYTES}-byte limit"))
            continue
        if b"\x00" in data:
            scan.errors.append(AnalysisError(rel, "encoding", "file contains NUL bytes (binary file?)"))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        _scan_text(scan, text, rel, pending)
    # a function defined only inside `#ifdef WITH_CUDA` / `#if defined(USE_GPU)` ... (never outside such a span)
    # exists only in a CUDA build of the extension: CUDA code, whatever its body calls
    for name, where in scan._cuda_build_defined.items():
        if name not in scan._plain_defined and len(name) > 2 and name not in _GENERIC:
            scan.cuda_functions.add(name)
            scan.cuda_build[name] = where
    # a function defined only in the library's NPU sources (an npu/ folder, a *_npu.cpp file) with no CUDA code is
    # its NPU implementation, whether it is registered (REGISTER_NPU_IMPL, a PrivateUse1 TORCH_LIBRARY_IMPL) or
    # called from a device branch of the dispatcher (`if (x.device().type() == at::kPrivateUse1) return f_npu(...)`)
    for name, where in scan._npu_defined.items():
        if name not in scan._other_defined and name not in scan.cuda_functions and len(name) > 2 \
                and name not in _GENERIC:
            _add_npu(scan, name, where)
    known = set(scan.functions) | set(scan.kernels)
    for label, op, rel, args, line, guard in pending:
        ids = set(_IDENT.findall(args))
        targets = tuple(sorted(i for i in ids if i in known and i != op)) or ((op,) if op in known else ())
        if label.startswith("torch.ops."):
            extra = scan.registrations.get(f"{label}::{op}", set())
            targets = tuple(sorted(set(targets) | extra))
        kernels, npu, cuda = _reach(scan, targets)
        defined = bool(targets) and all(t in known or t in scan.registrations for t in targets)
        guard = guard or next((scan.cuda_build[t] for t in targets if t in scan.cuda_build), "")
        scan.bindings.append(Binding(label, op, rel, targets, tuple(sorted(kernels)), tuple(sorted(npu)), line,
                                     cuda_code=cuda or bool(kernels) or bool(guard), defined=defined,
                                     cuda_build=guard))
    for label, op, rel, args, line, host in scan._class_pending:
        defs, cuda_names = scan._local_defs.get(rel, ({}, set()))
        ids = set(_IDENT.findall(args))
        targets = tuple(sorted(i for i in ids if (i in defs or i in known) and len(i) > 2 and i not in _GENERIC))
        kernels, npu, cuda = _reach_local(scan, targets, defs, cuda_names)
        scan.bindings.append(Binding(label, op, rel, targets, tuple(sorted(kernels)), tuple(sorted(npu)), line,
                                     cuda_code=cuda or bool(kernels), defined=bool(targets), host_object=host))
    return scan


def _reach_local(scan: CppScan, start: Sequence[str], defs: Dict[str, Set[str]], cuda_names: Set[str],
                 limit: int = 5000) -> Tuple[Set[str], Set[str], bool]:
    """:func:`_reach` from *start*, reading a name defined in the binding's own file (*defs*) there first: a bound
    class's members call its file's functions; only a name the file does not define is looked up library-wide."""
    seen: Set[str] = set()
    todo = list(start)
    outside: Set[str] = set()
    cuda = False
    while todo and len(seen) < limit:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n not in defs:
            outside.add(n)
            continue
        cuda = cuda or n in cuda_names
        for ident in defs[n]:
            if ident in seen or len(ident) <= 2 or ident in _GENERIC:
                continue
            if ident in defs or ident in scan.functions or ident in scan.kernels or ident in scan.registrations:
                todo.append(ident)
    kernels, npu, cuda_out = _reach(scan, sorted(outside), limit) if outside else (set(), set(), False)
    return kernels, npu, cuda or cuda_out


def _scan_text(scan: CppScan, text: str, rel: str, pending: list) -> None:
    scan.files += 1
    scan.lines += text.count("\n") + 1
    folder = rel.rpartition("/")[0] or "."
    scan.folder_files[folder] += 1
    parts = rel.lower().split("/")
    npu_file = "npu" in parts[:-1] or bool(re.search(r"(?:^|_)npu(?:_|\.)", parts[-1]))
    if npu_file:
        scan.npu_files.append(rel)
    code = blank_comments_and_strings(text)            # strings kept (op names, schemas)
    nostr = blank_comments_and_strings(text, keep_strings=False)  # same offsets, string contents blanked
    lines = LineIndex(code)
    cuda_file = rel.endswith(CUDA_SUFFIXES)
    kcode = _LAUNCH_BOUNDS.sub(lambda m: " " * len(m.group(0)), nostr)
    ks = scan.folder_kernels.setdefault(folder, [])
    known = scan._folder_seen.setdefault(folder, set(ks))
    for name, _off in global_kernels(kcode):
        scan.kernels.setdefault(name, rel)
        if name not in known:
            known.add(name)
            ks.append(name)
    use = scan.api_use.setdefault(folder, Counter())
    for label, n in api_counts(nostr).items():
        use[label] += n
    braces = match_brackets(nostr, "{", "}")
    parens = match_brackets(nostr, "(", ")")
    other_device = bool(set(parts[:-1]) & _OTHER_DEVICE_DIRS)
    spans = cuda_build_spans(nostr) if "#" in nostr else []
    span_starts = [sp[0] for sp in spans]

    def guard_at(pos: int) -> str:
        at = in_spans(spans, span_starts, pos) if spans else -1
        return f"{rel}:{lines.line(at)}" if at >= 0 else ""

    local = ({}, set()) if "class_" in nostr and _PY_CLASS.search(nostr) else None
    if local is not None:
        scan._local_defs[rel] = local
    for name, a, b, where in _functions(nostr, braces, parens):
        if other_device:
            continue   # another accelerator's implementation (mlu/, musa/ ...): not on an NPU's path
        body = nostr[a:b]
        ids = _IDENT.findall(body)
        scan.functions.setdefault(name, set()).update(ids)
        if local is not None:
            local[0].setdefault(name, set()).update(ids)
            if (cuda_file and where != "both") or uses_cuda(body):
                local[1].add(name)
        if where == "device":
            scan.device_functions.add(name)
        else:
            scan.host_functions.add(name)
        guard = guard_at(a)
        if guard:
            scan._cuda_build_defined.setdefault(name, guard)
        else:
            scan._plain_defined.add(name)
        # a __host__ __device__ helper is portable C++; host code in a .cu file is built by nvcc
        if (cuda_file and where != "both") or uses_cuda(body):
            scan.cuda_functions.add(name)
            scan._other_defined.add(name)
        elif npu_file:
            scan._npu_defined.setdefault(name, f"{rel}:{lines.line(a)}")
        else:
            scan._other_defined.add(name)
    for m in _REGISTER.finditer(nostr):
        if _in_define(nostr, m.start()) or m.group(2).upper() in _OTHER_DEVICES:
            continue
        scan.registrations.setdefault(m.group(1), set()).add(m.group(3))
        if m.group(2).upper() in _NPU_DISPATCH:
            _add_npu(scan, m.group(3), f"{rel}:{lines.line(m.start())}")
        elif m.group(2).upper() in _CUDA_DISPATCH:
            scan.cuda_functions.add(m.group(3))
    for m in _REGISTER_NPU.finditer(nostr):
        if _in_define(nostr, m.start()):
            continue
        scan.registrations.setdefault(m.group(1), set()).add(m.group(2))
        _add_npu(scan, m.group(2), f"{rel}:{lines.line(m.start())}")
    module_spans: List[Tuple[int, int, str]] = []   # PYBIND11_MODULE bodies: (open, close, module label)
    for m in _PYBIND.finditer(nostr):
        label = m.group(1)
        open_at = nostr.find("{", m.end())
        if open_at < 0 or open_at not in braces:
            continue
        close = braces[open_at]
        label = _module_label(label, rel, scan.builds)
        scan.modules.setdefault(label, rel)
        module_spans.append((open_at, close, label))
        class_spans = []
        for c in _PY_CLASS.finditer(nostr, open_at, close):
            class_spans.append((c.start(), _statement_end(nostr, c.start(), close, braces, parens)))
        for d in _DEF_OPEN.finditer(nostr, open_at, close):
            if any(a <= d.start() < b for a, b in class_spans):
                continue  # a method of a bound class, not a module-level op
            paren = d.end() - 1
            s = _STR_ARG.match(code, d.end())
            if s is None or not re.fullmatch(r"[\w.]+", s.group(1)):
                continue
            end = parens.get(paren, min(close, paren + 300))
            pending.append((label, s.group(1), rel, nostr[s.end():end], lines.line(d.start()), guard_at(d.start())))
    if local is not None:
        _class_bindings(nostr, code, rel, lines, braces, parens, module_spans, scan._class_pending)
    for m in _TORCH_LIB.finditer(nostr):
        label = f"torch.ops.{m.group(1)}"
        scan.modules.setdefault(label, rel)
        open_at = nostr.find("{", m.end())
        if open_at < 0 or open_at not in braces:
            continue
        for d in _DEF_OPEN.finditer(nostr, open_at, braces[open_at]):
            s = _STR_ARG.match(code, d.end())
            if s is None:
                continue
            op = re.match(r"\s*(\w+)", s.group(1))
            if op is None:
                continue
            end = parens.get(d.end() - 1, d.end() + 300)
            pending.append((label, op.group(1), rel, nostr[s.end():end], lines.line(d.start()), guard_at(d.start())))
    for m in _TORCH_LIB_IMPL.finditer(nostr):
        label = f"torch.ops.{m.group(1)}"
        dispatch = m.group(2).upper()
        open_at = nostr.find("{", m.end())
        if open_at < 0 or open_at not in braces:
            continue
        for d in _IMPL_OPEN.finditer(nostr, open_at, braces[open_at]):
            s = _STR_ARG.match(code, d.end())
            if s is None:
                continue
            end = parens.get(d.end() - 1, d.end() + 300)
            ids = set(_IDENT.findall(nostr[s.end():end])) - {"TORCH_FN", "torch", "CppFunction", "makeFromUnboxedFunction"}
            op = s.group(1).split("(", 1)[0].split("::")[-1]
            scan.registrations.setdefault(f"{label}::{op}", set()).update(ids)
            if dispatch in _NPU_DISPATCH:
                for i in ids:
                    _add_npu(scan, i, f"{rel}:{lines.line(d.start())}")
            elif dispatch in _CUDA_DISPATCH:
                scan.cuda_functions.update(ids)


_PY_INIT = re.compile(r"(?:py|pybind11)::init\s*<(.{0,300}?)>\s*\(", re.S)
_DEVICE_ARG = re.compile(r"\b(?:Tensor|Device|Stream|DeviceType|TensorList|IntArrayRef|Storage)\b")
_CLASS_NAME_LIT = re.compile(r"\s*\"([\w.]+)\"\s*[,)]")
_CLASS_NAME_VAR = re.compile(r"\s*(\w+)(?:\s*\.\s*c_str\s*\(\s*\))?\s*[,)]")


def _class_bindings(nostr: str, code: str, rel: str, lines, braces, parens, spans, pending: list) -> None:
    """pybind11 class bindings, ``py::class_<SumTree<T>, std::shared_ptr<SumTree<T>>>(m, "SumTreeFp32")``: the
    Python name is an op of the module whose object the class is added to, and the C++ code behind it is what the
    statement names (the class, its bound methods ``&SumTree<T>::Update``). The name is a literal, or a string
    variable of the function bound just before (``const std::string pyclass = "SumTree" + type;`` in a template
    helper called once per dtype suffix): then the binding covers every name with that prefix (``SumTree*``). In
    a ``PYBIND11_MODULE`` body the module is known; in a helper function it is left to the caller ("")."""
    if "class_" not in nostr:
        return
    for c in _PY_CLASS.finditer(nostr):
        i, depth, limit = c.end(), 1, min(len(nostr), c.end() + 1000)
        while i < limit and depth:
            ch = nostr[i]
            depth += 1 if ch == "<" else -1 if ch == ">" else 0
            i += 1
        if depth:
            continue
        while i < len(nostr) and nostr[i] in " \t\r\n":
            i += 1
        if i >= len(nostr) or nostr[i] != "(" or i not in parens:
            continue
        comma = nostr.find(",", i, parens[i])
        if comma < 0:
            continue
        op = None
        lit = _CLASS_NAME_LIT.match(code, comma + 1)
        if lit is not None:
            op = lit.group(1)
        else:
            var = _CLASS_NAME_VAR.match(nostr, comma + 1)
            if var is not None:
                before = code[max(0, c.start() - 3000):c.start()]
                bound = None
                for bound in re.finditer(r"\b" + re.escape(var.group(1)) +
                                         r"\s*=\s*(?:std::string\s*\(\s*)?\"(\w+)\"\s*\)?\s*(\+)?", before):
                    pass
                if bound is not None:
                    op = bound.group(1) + ("*" if bound.group(2) else "")
        if not op:
            continue
        label = next((lb for a, b, lb in spans if a < c.start() < b), "")
        end = _statement_end(nostr, c.start(), len(nostr), braces, parens)
        inits = _PY_INIT.findall(nostr, c.end(), end)
        host = bool(inits) and not any(_DEVICE_ARG.search(sig) for sig in inits)
        pending.append((label, op, rel, nostr[c.end():end], lines.line(c.start()), host))


def _in_define(text: str, pos: int) -> bool:
    """The match at *pos* is part of a ``#define`` (the registration macro itself)."""
    line_start = text.rfind("\n", 0, pos) + 1
    if text[line_start:pos].lstrip().startswith("#"):
        return True
    # a continued macro body: the previous line ends with a backslash
    prev_end = line_start - 1
    return prev_end > 0 and text[max(0, prev_end - 1):prev_end].endswith("\\")


def _add_npu(scan: CppScan, impl: str, where: str) -> None:
    scan.npu_impls.add(impl)
    scan.npu_where.setdefault(impl, where)


# names too generic for a name-level call graph (accessors, math helpers defined in many places)
_GENERIC = {"min", "max", "abs", "get", "set", "add", "sum", "swap", "size", "data", "begin", "end", "value", "dot",
            "cross", "area", "exp", "log", "pow", "sqrt", "clamp", "floor", "ceil", "round", "sign", "init", "run",
            "apply", "call", "forward", "backward", "operator", "print", "check", "load", "store", "copy", "fill"}


def _reach(scan: CppScan, start: Sequence[str], limit: int = 5000) -> Tuple[Set[str], Set[str], bool]:
    """CUDA kernels, NPU implementations and whether CUDA code is reachable from C++ functions *start*."""
    seen: Set[str] = set()
    todo = list(start)
    kernels: Set[str] = set()
    npu: Set[str] = set()
    cuda = False
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
        if n in scan.cuda_functions:
            cuda = True
        for nxt in scan.registrations.get(n, ()):
            if nxt not in seen:
                todo.append(nxt)
        device_code = n in scan.kernels or (n in scan.device_functions and n not in scan.host_functions)
        for ident in scan.functions.get(n, ()):
            if ident in seen or not (ident in scan.functions or ident in scan.kernels or ident in scan.registrations):
                continue
            if len(ident) <= 2 or ident in _GENERIC:
                continue
            if not device_code and ident in scan.device_functions and ident not in scan.host_functions:
                continue   # host code cannot call a __device__ function: a name shared with device code
            todo.append(ident)
    return kernels, npu, cuda
