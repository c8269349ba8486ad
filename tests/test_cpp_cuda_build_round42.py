"""The library's C++ scan, round 42: code that exists only in a CUDA build, and CUDA compiled at run time.

1. A binding (or the C++ function it binds) inside ``#if defined(USE_GPU)`` / ``#ifdef WITH_CUDA`` /
   ``#ifndef X ... #else`` (X a CUDA build flag) is compiled only when the extension is built for CUDA; a build
   without CUDA (the one an Ascend host makes) lacks it, so a Python call of it fails: unsupported, whatever its body
   calls (old: "CPU-only C++ code, no CUDA: runs on the host" for a body that only stores a source string).
   INVALID: a flag of another kind (``USE_OPENMP``), a CUDA test or-ed with a CPU one, the ``#else`` of a CUDA test,
   and ``__CUDA_ARCH__`` (nvcc's device pass, not a build flag) leave plain C++ as it was.
2. NVRTC (``nvrtcCompileProgram``) and the CUDA driver API (``cuModuleLoadData``, ``cuLaunchKernel``, ``CUfunction``)
   are CUDA APIs: a host function compiling and launching kernel source at run time is CUDA code. INVALID:
   identifiers that merely start with ``cu`` (``cursor``, ``cumsum``, ``cudaish``) are not.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from analyse.cpp_syntax import cuda_build_spans
from analyse.library.cpp import API_PATTERNS, api_counts, scan_sources, uses_cuda


def _scan(tmp_path: Path, text: str, name: str = "src/kernel_ext.cpp"):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return scan_sources([(p, name)])


GUARDED = """
#include <torch/extension.h>
#include <string>
#include <vector>

#if defined(USE_GPU)
namespace jit {
static std::vector<std::string> sources;

static int add_source(const std::string &code) {
  sources.push_back(code);
  return (int)sources.size() - 1;
}
}  // namespace jit
#endif

static int host_count(const std::vector<int> &v) { return (int)v.size(); }

#ifndef WITH_CUDA
static int plain_twice(int x) { return 2 * x; }
#else
static int device_twice(int x) { return 2 * x; }
#endif

PYBIND11_MODULE(kernel_ext, m) {
#if defined(USE_GPU)
  m.def("add_source", &jit::add_source, "store kernel source");
#endif
  m.def("host_count", &host_count, "count");
  m.def("plain_twice", &plain_twice);
  m.def("device_twice", &device_twice);
}
"""


def test_a_binding_compiled_only_in_a_cuda_build_is_unsupported(tmp_path):
    # VALID: the bound function only stores a string, but it and its m.def sit under `#if defined(USE_GPU)`
    scan = _scan(tmp_path, GUARDED)
    st_, why, ev = scan.op_status("kernel_ext.add_source")
    assert st_ == "unsupported", why
    assert "compiled only in a CUDA build" in why and "preprocessor test at src/kernel_ext.cpp:26" in why
    assert ev == ["src/kernel_ext.cpp:27", "src/kernel_ext.cpp:26"]
    # the function itself is defined only in the CUDA build (the `#if` around the namespace)
    assert scan.cuda_build["add_source"] == "src/kernel_ext.cpp:6"
    # the #else branch of `#ifndef WITH_CUDA` is the CUDA build's
    st_, why, _ev = scan.op_status("kernel_ext.device_twice")
    assert st_ == "unsupported" and "src/kernel_ext.cpp:21" in why, why


def test_plain_cpp_outside_or_beside_a_cuda_guard_still_runs_on_the_host(tmp_path):
    # INVALID: unguarded code and the non-CUDA branch of `#ifndef WITH_CUDA` stay host C++
    scan = _scan(tmp_path, GUARDED)
    for op in ("host_count", "plain_twice"):
        st_, why, _ev = scan.op_status(f"kernel_ext.{op}")
        assert st_ == "needs-migration", (op, why)
        assert "CPU-only C++ code" in why


OTHER_FLAGS = """
#include <torch/extension.h>
#if defined(USE_OPENMP)
static int omp_sum(int a) { return a + 1; }
#endif
#if defined(WITH_CUDA) || defined(WITH_CPU)
static int either_sum(int a) { return a + 2; }
#endif
#if defined(WITH_CUDA)
static int cuda_only_sum(int a) { return a + 3; }
#else
static int fallback_sum(int a) { return a + 4; }
#endif
#if __CUDA_ARCH__ >= 800
static int arch_sum(int a) { return a + 5; }
#endif
PYBIND11_MODULE(flags_ext, m) {
  m.def("omp_sum", &omp_sum);
  m.def("either_sum", &either_sum);
  m.def("cuda_only_sum", &cuda_only_sum);
  m.def("fallback_sum", &fallback_sum);
  m.def("arch_sum", &arch_sum);
}
"""


def test_only_a_cuda_build_flag_makes_a_span_cuda_only(tmp_path):
    scan = _scan(tmp_path, OTHER_FLAGS, "flags.cpp")
    statuses = {op: scan.op_status(f"flags_ext.{op}")[0]
                for op in ("omp_sum", "either_sum", "cuda_only_sum", "fallback_sum", "arch_sum")}
    assert statuses == {"omp_sum": "needs-migration", "either_sum": "needs-migration",
                        "cuda_only_sum": "unsupported", "fallback_sum": "needs-migration",
                        "arch_sum": "needs-migration"}


def test_cuda_build_spans_nest_and_close():
    code = ("#ifdef WITH_CUDA\nint a;\n#if X\nint b;\n#endif\nint c;\n#elif defined(USE_NCCL)\nint d;\n#else\n"
            "int e;\n#endif\nint f;\n#if !defined(MYLIB_WITH_CUDA)\nint g;\n#else\nint h;\n#endif\n")
    spans = cuda_build_spans(code)
    inside = [w for w in "abcdefgh" if any(a <= code.index(f"int {w};") < b for a, b, _d in spans)]
    assert inside == ["a", "b", "c", "d", "h"]
    # an unclosed span runs to the end of the text
    assert cuda_build_spans("#ifdef USE_CUDA\nint x;\n") == [(15, 23, 0)]


NVRTC = """
#include <torch/extension.h>
#include <cuda.h>
#include <nvrtc.h>
#include <string>

static std::string compile_source(const char *code) {
  nvrtcProgram prog;
  nvrtcCreateProgram(&prog, code, nullptr, 0, nullptr, nullptr);
  nvrtcCompileProgram(prog, 0, nullptr);
  size_t n;
  nvrtcGetPTXSize(prog, &n);
  std::string ptx(n, '\\0');
  nvrtcGetPTX(prog, &ptx[0]);
  return ptx;
}

static void launch_source(const std::string &code, long n) {
  std::string image = compile_source(code.c_str());
  CUmodule mod;
  CUfunction fn;
  cuModuleLoadData(&mod, image.c_str());
  cuModuleGetFunction(&fn, mod, "run");
  void *args[] = {&n};
  cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr);
}

static long cursor_sum(long cursor, long cumsum) { return cursor + cumsum; }

PYBIND11_MODULE(rtc_ext, m) {
  m.def("launch_source", &launch_source);
  m.def("cursor_sum", &cursor_sum);
}
"""


def test_run_time_compilation_and_driver_launches_are_cuda(tmp_path):
    # VALID (old: neither NVRTC nor the driver API was a CUDA API: "CPU-only C++ code, runs on the host")
    scan = _scan(tmp_path, NVRTC, "rtc.cpp")
    st_, why, _ev = scan.op_status("rtc_ext.launch_source")
    assert st_ == "unsupported" and "calls CUDA APIs" in why, why
    assert {"compile_source", "launch_source"} <= scan.cuda_functions
    assert scan.summary()["folders"][0]["cuda_apis"] == {"cuda-driver": 5, "nvrtc": 5}


def test_identifiers_that_only_start_with_cu_are_no_cuda(tmp_path):
    # INVALID
    scan = _scan(tmp_path, NVRTC, "rtc.cpp")
    assert scan.op_status("rtc_ext.cursor_sum")[0] == "needs-migration"
    assert not uses_cuda("long cursor = cumsum(cudaish) + CUfunctional + cuisine + my_cuInit;")
    assert api_counts("cuDeviceGet(&d, 0); cursor;") == {"cuda-driver": 1}


_TOKENS = ["nvrtc", "nvrtcCompileProgram", "Program", "cu", "Init", "cuLaunchKernel", "Module", "CU", "function",
           "CUfunction", "graph", "graphExec", "cuda", "SetDevice", "cudaGetDeviceCount", "x", "_", "9", " ", "(",
           "::", "Device", "Ctx"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30))
def test_fast_counts_equal_the_patterns_for_the_new_labels(tokens):
    text = "".join(tokens)
    slow = {label: n for label, rx in API_PATTERNS.items() if (n := sum(1 for _ in rx.finditer(text)))}
    assert api_counts(text) == slow
