"""Library mode: a CPU-only compiled op of the library called on host tensors runs on the host (stop 43).

The library's own C++ op has no CUDA code (a CPU kernel, built as a C++ extension on any host). Called with NPU
tensors it fails (its code reads host memory), so such a call needs a migration. Called on host copies of the
tensors (``x.cpu()``, ``x.detach().cpu()``, ``x.to("cpu")``, the result moved back with ``.to(device)``), or in the
branch of a CPU device test (``elif x.device.type == "cpu":``, where the tensors are on the host already), it runs
on the host whatever device the caller uses: nothing to change.

INVALID (these were ``needs-migration``): a device dispatch whose CPU branch calls the op on CPU tensors and whose
other-device branch calls it on host copies; an op called on ``.cpu()`` copies.

VALID: the op called on the caller's tensors as they come stays ``needs-migration``; a CUDA op called on host copies
is still ``unsupported`` (host copies do not make a CUDA kernel run).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="hostops", ext_modules=[CUDAExtension(name="hostops._C", sources=["csrc/ops.cpp", "csrc/scan.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/ops.cpp": """
        #include <torch/extension.h>

        torch::Tensor count_cpu(torch::Tensor coords, int64_t num) {
          return coords.new_zeros({num});
        }

        torch::Tensor nms_cpu(torch::Tensor boxes, torch::Tensor scores, double thr) {
          return boxes.argsort();
        }

        PYBIND11_MODULE(_C, m) {
          m.def("count_cpu", &count_cpu);
          m.def("nms_cpu", &nms_cpu);
          m.def("scan_cuda", &scan_cuda);
        }
    """,
    "csrc/scan.cu": """
        #include <torch/extension.h>
        __global__ void scan_kernel(float* x) { x[threadIdx.x] += 1.0f; }
        torch::Tensor scan_cuda(torch::Tensor x) { scan_kernel<<<1, 1>>>(x.data_ptr<float>()); return x; }
    """,
    "ops.py": """
        import torch
        from hostops import _C


        def count(coords, num):
            if coords.device.type == "cuda":
                raise NotImplementedError("no CUDA kernel in this build")
            elif coords.device.type == "cpu":
                return _C.count_cpu(coords, num)
            else:
                device = coords.device
                return _C.count_cpu(coords.cpu(), num).to(device)


        def host_nms(boxes, scores):
            keep = _C.nms_cpu(boxes.detach().cpu(), scores.to("cpu"), 0.5)
            return keep.to(boxes.device)


        def on_device(coords, num):
            return _C.count_cpu(coords, num)


        def cuda_on_host_copy(x):
            return _C.scan_cuda(x.cpu())
    """,
}


def test_cpu_only_ops_on_host_tensors_run_on_the_host(tmp_path, kb):
    by = {f["qualname"]: f for f in library_report(tmp_path, kb, LIB, "hostops")["thirdparty"]["functions"]}
    assert "hostops.ops.count" not in by, by.get("hostops.ops.count")
    assert "hostops.ops.host_nms" not in by, by.get("hostops.ops.host_nms")
    got = by["hostops.ops.on_device"]
    assert got["status"] == "needs-migration", got
    assert got["reasons"][0].startswith("hostops._C.count_cpu (compiled op bound in csrc/ops.cpp:"), got
    assert "CPU-only C++ code" in got["reasons"][0], got
    got = by["hostops.ops.cuda_on_host_copy"]
    assert got["status"] == "unsupported", got
    assert "CUDA kernels: scan_kernel" in got["reasons"][0], got
