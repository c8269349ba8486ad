"""Library mode, round 42: pybind11 class bindings.

A compiled module binds C++ classes with ``py::class_<Tree<T>, std::shared_ptr<Tree<T>>>(m, name.c_str())``, in a
template helper called once per dtype (``DefineSumTree<float>("Fp32", m)``, the name built as ``"SumTree" +
suffix``), next to a CUDA twin whose members have the same names (``Update``, ``Query``). The C++ scan reads each
class binding as an op of the module: a Python call of ``SumTreeFp32(capacity)`` builds a CPU-only object from
plain values, which runs on any host (VALID: supported); the CUDA twin reaches its kernels (unsupported), a
class built from a tensor is CPU C++ code the tensors must reach (needs-migration), and a name no binding covers
stays unsupported (INVALID). No project code copied."""

from __future__ import annotations

from helpers import library_report

TREELIB = {
    "__init__.py": "",
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="treelib",
              ext_modules=[CUDAExtension(name="treelib._C", sources=["csrc/bind.cpp", "csrc/cuda_tree.cu"])],
              cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/tree.h": """
        #pragma once
        #include <pybind11/pybind11.h>
        #include <vector>

        namespace py = pybind11;

        template <typename T>
        class SumTree {
         public:
          explicit SumTree(int64_t size) : values_(2 * size, T(0)), size_(size) {}
          void Update(int64_t index, T value) {
            int64_t i = index + size_;
            values_[i] = value;
            for (i >>= 1; i > 0; i >>= 1) values_[i] = values_[2 * i] + values_[2 * i + 1];
          }
          T Query(int64_t left, int64_t right) const {
            T out = T(0);
            for (int64_t i = left; i < right; ++i) out += values_[i + size_];
            return out;
          }
         private:
          std::vector<T> values_;
          int64_t size_;
        };

        template <typename T>
        void DefineSumTree(const std::string& suffix, py::module& m) {
          const std::string pyname = "SumTree" + suffix;
          py::class_<SumTree<T>, std::shared_ptr<SumTree<T>>>(m, pyname.c_str())
              .def(py::init<int64_t>())
              .def("update", &SumTree<T>::Update)
              .def("query", &SumTree<T>::Query);
        }
    """,
    "csrc/cuda_tree.h": """
        #pragma once
        #include <torch/extension.h>

        namespace py = pybind11;

        void CudaTreeUpdate(torch::Tensor values, int64_t index, double value);
        double CudaTreeQuery(torch::Tensor values, int64_t left, int64_t right);

        template <typename T>
        class CudaSumTree {
         public:
          CudaSumTree(int64_t size, torch::Device device)
              : values_(torch::zeros({2 * size}, torch::TensorOptions().device(device))) {}
          void Update(int64_t index, T value) { CudaTreeUpdate(values_, index, value); }
          T Query(int64_t left, int64_t right) const { return CudaTreeQuery(values_, left, right); }
         private:
          torch::Tensor values_;
        };

        template <typename T>
        void DefineCudaSumTree(const std::string& suffix, py::module& m) {
          const std::string pyname = "CudaSumTree" + suffix;
          py::class_<CudaSumTree<T>, std::shared_ptr<CudaSumTree<T>>>(m, pyname.c_str())
              .def(py::init<int64_t, torch::Device>())
              .def("update", &CudaSumTree<T>::Update)
              .def("query", &CudaSumTree<T>::Query);
        }
    """,
    "csrc/cuda_tree.cu": """
        #include "cuda_tree.h"

        __global__ void tree_update_kernel(float* values, int64_t index, float value) { values[index] = value; }

        void CudaTreeUpdate(torch::Tensor values, int64_t index, double value) {
          tree_update_kernel<<<1, 1>>>(values.data_ptr<float>(), index, (float)value);
        }

        double CudaTreeQuery(torch::Tensor values, int64_t left, int64_t right) {
          tree_update_kernel<<<1, 1>>>(values.data_ptr<float>(), left, 0.0f);
          return 0.0;
        }
    """,
    "csrc/bind.cpp": """
        #include <torch/extension.h>
        #include "tree.h"
        #include "cuda_tree.h"

        class Tally {
         public:
          explicit Tally(torch::Tensor counts) : counts_(counts) {}
          int64_t Total() const { return counts_.sum().item<int64_t>(); }
         private:
          torch::Tensor counts_;
        };

        PYBIND11_MODULE(_C, m) {
          DefineSumTree<float>("Fp32", m);
          DefineSumTree<double>("Fp64", m);
          DefineCudaSumTree<float>("Fp32", m);
          py::class_<Tally>(m, "Tally").def(py::init<torch::Tensor>()).def("total", &Tally::Total);
        }
    """,
    "sampler.py": """
        import torch

        from treelib._C import CudaSumTreeFp32, SumTreeFp32, SumTreeFp64, Tally, TallyNotBound


        class Sampler:
            def __init__(self, capacity, double=False):
                self._tree = SumTreeFp64(capacity) if double else SumTreeFp32(capacity)

            def total(self):
                return self._tree.query(0, 1)


        def gpu_tree(capacity):
            return CudaSumTreeFp32(capacity, torch.device("cuda"))


        def tally(counts):
            return Tally(counts)


        def unbound(counts):
            return TallyNotBound(counts)
    """,
}


def _functions(tmp_path, kb):
    rep = library_report(tmp_path, kb, TREELIB, "treelib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_cpu_class_built_from_plain_values_runs_on_any_host(tmp_path, kb):
    by = _functions(tmp_path, kb)
    assert "treelib.sampler.Sampler.__init__" not in by, by.get("treelib.sampler.Sampler.__init__")
    rep = library_report(tmp_path / "again", kb, TREELIB, "treelib")
    calls = sorted((f["line"], f["api"], f["severity"]) for f in rep["findings"]
                   if f["path"] == "sampler.py" and f["api"].startswith("treelib._C.SumTree"))
    assert calls == [(8, "treelib._C.SumTreeFp32", "info"), (8, "treelib._C.SumTreeFp64", "info")]


def test_the_cuda_twin_reaches_its_kernels_through_members_of_the_same_names(tmp_path, kb):
    by = _functions(tmp_path, kb)
    d = by["treelib.sampler.gpu_tree"]
    assert d["status"] == "unsupported", d
    assert d["reasons"] == ["treelib._C.CudaSumTreeFp32 (compiled op bound in csrc/cuda_tree.h:23; CUDA kernels: "
                            "tree_update_kernel)"]


def test_a_class_built_from_a_tensor_and_an_unbound_name_stay_a_change(tmp_path, kb):
    by = _functions(tmp_path, kb)
    d = by["treelib.sampler.tally"]
    assert d["status"] == "needs-migration", d
    assert d["reasons"][0].startswith("treelib._C.Tally (compiled op bound in csrc/bind.cpp:17; CPU-only C++ code")
    d = by["treelib.sampler.unbound"]
    assert d["status"] == "unsupported", d
    assert d["reasons"] == ["treelib._C.TallyNotBound (compiled extension op; no binding found in the C++ sources)"]
