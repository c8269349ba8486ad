"""The library's C++/CUDA scan: linear lexing, bindings, per-device implementations.

Fixtures are modelled on the layouts of public libraries (a pybind module
binding ``*_impl`` dispatchers, per-device ``REGISTER_DEVICE_IMPL`` /
``REGISTER_NPU_IMPL`` registrations in ``cpu/``, ``cuda/`` and ``npu/``
folders, ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` built by setup.py).
Speed is measured by benchmarks/bench_cpp_scan.py, not here.
"""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from analyse.cpp_syntax import blank_comments_and_strings, cuda_kernels, global_kernels, match_brackets
from analyse.library.cpp import BuildExt, scan_sources


def _write(root: Path, files: dict):
    out = []
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        out.append((p, rel))
    return out


def test_large_adversarial_file_is_scanned(tmp_path):
    # ~400 KB of the shapes that made the regex scanner quadratic, around two real kernels
    chunks = [
        "__global__ void first_kernel(const float* x, float* y) { y[0] = x[0]; }\n",
        "__global__ " * 6000, ";\n",
        "/*" * 20000, "*/\n",
        "{" * 30000, "}" * 30000, "\n",
        ") const &" * 8000, "{}\n",
        "int f() { return 0; }\n" * 3200,
        "PYBIND11_MODULE(ext, m) {\n" + 'm.def("a", (' * 8000 + "\n}\n",
        "template <typename T>\n__global__ void last_kernel<T>(T* x) { x[0] = 0; }\n",
    ]
    text = "".join(chunks)
    assert len(text) > 400_000
    (tmp_path / "big.cu").write_text(text)
    scan = scan_sources([(tmp_path / "big.cu", "big.cu")])
    assert scan.errors == []
    assert {"first_kernel", "last_kernel"} <= set(scan.kernels)
    assert [k for k, _line in cuda_kernels(text)][0] == "first_kernel"
    assert "f" in scan.functions


def test_lexer_blanks_comments_and_strings_keeping_offsets():
    text = 'int a; // c "x"\n/* b\n { */ s = "}{"; t = \'{\';\n/* unclosed'
    code = blank_comments_and_strings(text)
    nostr = blank_comments_and_strings(text, keep_strings=False)
    assert len(code) == len(nostr) == len(text)
    assert code.count("\n") == text.count("\n")
    assert '"}{"' in code and "{" not in nostr and "}" not in nostr
    assert match_brackets("a{b{c}d}e{") == {3: 5, 1: 7}


def test_global_kernel_heads():
    code = "__global__ void __launch_bounds__(256) k1(int* x) {}\n__global__ void k2<float, 4>(float* y);\n"
    code = code.replace("__launch_bounds__(256)", " " * len("__launch_bounds__(256)"))
    assert [n for n, _o in global_kernels(code)] == ["k1", "k2"]
    assert cuda_kernels("// __global__ void no(int)\n__global__ void yes(int a) {}\n") == [("yes", 2)]


MMCV_LIKE = {
    "csrc/pybind.cpp": """
        #include <torch/extension.h>
        Tensor nms(Tensor boxes, Tensor scores, float iou, int offset);
        Tensor carafe_forward(Tensor x);
        Tensor box_area(Tensor boxes);
        PYBIND11_MODULE(_ext, m) {
          m.def("nms", &nms, "nms (CPU/CUDA) ", py::arg("boxes"), py::arg("scores"),
                py::arg("iou_threshold"), py::arg("flip"));
          m.def("carafe_forward", &carafe_forward, "carafe_forward", py::arg("features"));
          m.def("box_area", &box_area, "area (CPU)", py::arg("boxes"));
          py::class_<Holder>(m, "Holder").def(py::init<>()).def("scale", &Holder::scale);
        }
    """,
    "csrc/nms.cpp": """
        Tensor nms_impl(Tensor boxes, Tensor scores, float iou, int offset) {
          return DISPATCH_DEVICE_IMPL(nms_impl, boxes, scores, iou, offset);
        }
        Tensor nms(Tensor boxes, Tensor scores, float iou, int offset) {
          return nms_impl(boxes, scores, iou, offset);
        }
    """,
    "csrc/carafe.cpp": """
        Tensor carafe_forward_impl(Tensor x) { return DISPATCH_DEVICE_IMPL(carafe_forward_impl, x); }
        Tensor carafe_forward(Tensor x) { return carafe_forward_impl(x); }
    """,
    "csrc/box_area.cpp": """
        Tensor box_area(Tensor boxes) { return (boxes.select(1, 2) - boxes.select(1, 0)); }
    """,
    "csrc/flip.cu": """
        __global__ void flip_kernel(float* x) { x[0] = -x[0]; }
        Tensor flip(Tensor x) { flip_kernel<<<1, 1>>>(x.data_ptr<float>()); return x; }
    """,
    "csrc/cuda/cudabind.cpp": """
        Tensor nms_cuda(Tensor boxes, Tensor scores, float iou, int offset) { return NMSCUDAKernelLauncher(boxes); }
        REGISTER_DEVICE_IMPL(nms_impl, CUDA, nms_cuda);
        Tensor carafe_cuda(Tensor x) { return CARAFEForwardCUDAKernelLauncher(x); }
        REGISTER_DEVICE_IMPL(carafe_forward_impl, CUDA, carafe_cuda);
    """,
    "csrc/cuda/nms_cuda.cu": """
        __global__ void nms_kernel(const float* boxes) {}
        Tensor NMSCUDAKernelLauncher(Tensor boxes) { nms_kernel<<<1, 1>>>(boxes.data_ptr<float>()); return boxes; }
    """,
    "csrc/cuda/carafe_cuda.cu": """
        __global__ void carafe_kernel(const float* x) {}
        Tensor CARAFEForwardCUDAKernelLauncher(Tensor x) { carafe_kernel<<<1, 1>>>(x.data_ptr<float>()); return x; }
    """,
    "csrc/npu/nms_npu.cpp": """
        Tensor nms_npu(Tensor boxes, Tensor scores, float iou, int offset) { return boxes; }
        Tensor nms_impl(Tensor boxes, Tensor scores, float iou, int offset);
        REGISTER_NPU_IMPL(nms_impl, nms_npu);
    """,
}


def _dedent(files):
    import textwrap

    return {k: textwrap.dedent(v) for k, v in files.items()}


def test_npu_registration_makes_the_op_supported_with_evidence(tmp_path):
    scan = scan_sources(_write(tmp_path, _dedent(MMCV_LIKE)))
    st, why, ev = scan.op_status("mylib._ext.nms")
    assert st == "supported"
    assert ev == ["csrc/npu/nms_npu.cpp:4 (nms_npu)"]
    assert "csrc/npu/nms_npu.cpp:4" in why
    # CUDA only: still a blocker, naming the kernel
    st, why, _ev = scan.op_status("mylib._ext.carafe_forward")
    assert st == "unsupported" and "carafe_kernel" in why
    assert any("csrc/npu/nms_npu.cpp:4" in e for e in scan.npu_evidence())
    assert "csrc/npu/: NPU kernel sources" in scan.npu_evidence()


def test_py_arg_strings_are_not_ops_or_targets(tmp_path):
    scan = scan_sources(_write(tmp_path, _dedent(MMCV_LIKE)))
    ops = {b.op for b in scan.bindings}
    # no "boxes", "flip", no class methods; the bound class itself is a name of the module (round 42)
    assert ops == {"nms", "carafe_forward", "box_area", "Holder"}
    nms = next(b for b in scan.bindings if b.op == "nms")
    assert nms.targets == ("nms",)            # py::arg("flip") does not bind the CUDA function flip
    assert "flip_kernel" not in nms.kernels
    assert nms.line == 7


def test_cpu_only_op_is_not_a_cuda_blocker(tmp_path):
    scan = scan_sources(_write(tmp_path, _dedent(MMCV_LIKE)))
    st, why, _ev = scan.op_status("mylib._ext.box_area")
    assert st == "needs-migration"
    assert "CPU-only" in why


def test_torch_extension_name_takes_the_build_module_name(tmp_path):
    files = _write(tmp_path, {
        "csrc/adam/fused_adam_frontend.cpp": "void multi_tensor_adam(int n) { adam_kernel_launch(n); }\n"
                                             "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
                                             '  m.def("multi_tensor_adam", &multi_tensor_adam, "Adam (CUDA)");\n}\n',
        "csrc/adam/multi_tensor_adam.cu": "__global__ void adam_kernel(float* p) {}\n"
                                          "void adam_kernel_launch(int n) { adam_kernel<<<1, 1>>>(nullptr); }\n",
        "csrc/lion/lion_frontend.cpp": "void lion(int n) {}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
                                       '  m.def("lion", &lion);\n}\n',
    })
    builds = [BuildExt("mylib.ops.fused_adam_op", "cuda", ("csrc/adam/fused_adam_frontend.cpp",
                                                            "csrc/adam/multi_tensor_adam.cu"), "setup.py", 12),
              BuildExt("lion_op", "cpp", ("csrc/lion/*.cpp",), "setup.py", 20)]
    scan = scan_sources(files, builds=builds)
    assert set(scan.modules) == {"mylib.ops.fused_adam_op", "lion_op"}
    st, why, _ev = scan.op_status("mylib.ops.fused_adam_op.multi_tensor_adam")
    assert st == "unsupported" and "adam_kernel" in why
    assert scan.op_status("lion_op.lion")[0] == "needs-migration"
    assert "mylib.ops.fused_adam_op" in scan.ext_module_names()


def test_device_functions_and_other_accelerators_do_not_make_a_cpu_op_cuda(tmp_path):
    files = _write(tmp_path, {
        "csrc/pybind.cpp": 'PYBIND11_MODULE(_ext, m) {\n  m.def("points_cpu", &points_cpu);\n'
                           '  m.def("pairs", &pairs);\n}\n',
        "csrc/points.cpp": "float clamp_val(float v) { return v; }\n"
                           "void points_cpu(Tensor p) { clamp_val(1.0f); lerp_pts(p); }\n",
        "csrc/cuda/helpers.cuh": "__device__ float lerp_pts(float a) { return a; }\n"
                                "__host__ __device__ float clamp_val(float v) { return v; }\n",
        "csrc/pairs.cpp": "void pairs_impl(Tensor p) { DISPATCH_DEVICE_IMPL(pairs_impl, p); }\n"
                          "void pairs(Tensor p) { pairs_impl(p); }\n"
                          "void pairs_cpu(Tensor p) {}\nREGISTER_DEVICE_IMPL(pairs_impl, CPU, pairs_cpu);\n",
        "csrc/mlu/pairs_mlu.cpp": "void pairs_mlu(Tensor p) { cnrtQueue_t q; cudaMemcpy(0, 0, 0, 0); }\n"
                                  "REGISTER_DEVICE_IMPL(pairs_impl, MLU, pairs_mlu);\n",
    })
    scan = scan_sources(files)
    assert "lerp_pts" in scan.device_functions
    assert scan.op_status("pkg._ext.points_cpu")[0] == "needs-migration"   # a __device__ name is not host code
    assert scan.op_status("pkg._ext.pairs")[0] == "needs-migration"        # the MLU implementation is not on the path
    assert "pairs_mlu" not in scan.registrations.get("pairs_impl", set())


def test_an_npu_function_called_from_a_device_branch_of_the_dispatcher_is_the_npu_implementation(tmp_path):
    # the dispatcher calls its per-device functions directly under `#ifdef`s: the NPU one is defined only in the
    # library's npu/ sources (no registration macro), the CUDA one launches a kernel
    files = _write(tmp_path, _dedent({
        "csrc/pybind.cpp": """
            Tensor rot_nms(Tensor dets, Tensor scores);
            Tensor rot_area(Tensor dets);
            PYBIND11_MODULE(_ext, m) {
              m.def("rot_nms", &rot_nms, "rotated nms");
              m.def("rot_area", &rot_area, "rotated area");
            }
        """,
        "csrc/rot_nms.cpp": """
            Tensor rot_nms_cuda(Tensor dets, Tensor scores);
            Tensor rot_nms_npu(Tensor dets, Tensor scores);
            Tensor rot_nms_cpu(Tensor dets, Tensor scores);
            Tensor rot_nms(Tensor dets, Tensor scores) {
              if (dets.device().is_cuda()) {
                return rot_nms_cuda(dets, scores);
            #ifdef WITH_PRIVATEUSE1
              } else if (dets.device().type() == at::kPrivateUse1) {
                return rot_nms_npu(dets, scores);
            #endif
              }
              return rot_nms_cpu(dets, scores);
            }
            Tensor rot_nms_cpu(Tensor dets, Tensor scores) { return dets; }
        """,
        "csrc/rot_area.cpp": """
            Tensor rot_area_cuda(Tensor dets);
            Tensor rot_area(Tensor dets) { return rot_area_cuda(dets); }
        """,
        "csrc/cuda/rot_nms_cuda.cu": """
            __global__ void rot_nms_kernel(const float* d) {}
            Tensor rot_nms_cuda(Tensor dets, Tensor scores) { rot_nms_kernel<<<1, 1>>>(nullptr); return dets; }
            __global__ void rot_area_kernel(const float* d) {}
            Tensor rot_area_cuda(Tensor dets) { rot_area_kernel<<<1, 1>>>(nullptr); return dets; }
        """,
        "csrc/npu/rot_nms_npu.cpp": """
            Tensor rot_nms_npu(Tensor dets, Tensor scores) {
              Tensor keep = at::empty({dets.size(0)});
              EXEC_NPU_CMD(aclnnNmsRotated, dets, scores, keep);
              return keep;
            }
        """,
    }))
    scan = scan_sources(files)
    st, why, ev = scan.op_status("pkg._ext.rot_nms")
    assert (st, ev) == ("supported", ["csrc/npu/rot_nms_npu.cpp:2 (rot_nms_npu)"])
    assert "the library's NPU implementation" in why
    # VALID: an op whose only code is CUDA stays a blocker naming its kernel
    st, why, _ev = scan.op_status("pkg._ext.rot_area")
    assert st == "unsupported" and "rot_area_kernel" in why


_API_TOKENS = ["__global__", "__global", "global__", "cuda", "Malloc", "MemcpyAsync", "Mem", "cudaGetLastError", "x", "_", "9", "é", "::", "at", "c10",
               "thrust", "cub", "hipcub", "nccl", "ncclAllReduce", "A", "__shfl", "_xor_sync", "__syncthreads",
               "atomicAdd", "__ldg", "__shared__", "warpSize", "cublas", "cublasSgemm", "cudnn", "cudnnConv", " ",
               "\n", "(", ")", "<<<", ">>>", "{", "}"]


def _api_counts_by_the_patterns(text):
    from analyse.library.cpp import API_PATTERNS

    return {label: n for label, rx in API_PATTERNS.items() if (n := sum(1 for _ in rx.finditer(text)))}


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_API_TOKENS), max_size=40))
def test_fast_api_counts_equal_the_patterns_counts(tokens):
    """api_counts rewrites API_PATTERNS so that re can jump to each literal word; glued tokens test every word
    boundary (a word character before, after, inside an identifier, at the start and end of the text)."""
    from analyse.library.cpp import _CUDA_ANY, api_counts, uses_cuda

    import re

    from analyse.cpp_syntax import _GLOBAL_KW
    from analyse.library.cpp import _IDENT

    text = "".join(tokens)
    assert api_counts(text) == _api_counts_by_the_patterns(text)
    assert uses_cuda(text) == (_CUDA_ANY.search(text) is not None)
    # the other patterns rewritten the same way
    assert [m.span() for m in _GLOBAL_KW.finditer(text)] == [m.span() for m in re.finditer(r"\b__global__\b", text)]
    assert _IDENT.findall(text) == re.findall(r"\b[A-Za-z_]\w*\b", text)


def test_fast_api_counts_on_a_kernel_file():
    from analyse.library.cpp import api_counts

    text = ("#include <cub/cub.cuh>\n__global__ void k(float* x) { __shared__ float s[32]; s[0] = __ldg(x);\n"
            "  __syncthreads(); atomicAdd(x, __shfl_xor_sync(0xffffffff, s[0], 1)); }\n"
            "void launch(at::Tensor t) { auto st = at::cuda::getCurrentCUDAStream(); cudaMemcpyAsync(0, 0, 0, "
            "cudaMemcpyDeviceToDevice, st); cublasSgemm(h); thrust::sort(p); c10::cuda::device_synchronize();\n"
            "  ncclAllReduce(a); mycudaMalloc(); cub::DeviceReduce::Sum(); hipcub::X(); warpSize; }\n")
    assert api_counts(text) == _api_counts_by_the_patterns(text) == {
        "cuda-runtime": 2, "cublas": 1, "thrust": 1, "cub": 1, "at::cuda": 2, "nccl": 1, "cuda-intrinsics": 6}
