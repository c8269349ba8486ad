"""npu-analyse thirdparty: a small library written here, end to end."""

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

LIB = {
    "__init__.py": """
        from .ops import roi_align, RoIAlign
        from .models import *
        __all__ = ["roi_align", "RoIAlign", "Detector", "pure_helper", "broken_user"]
    """,
    "utils/__init__.py": "",
    "utils/ext_loader.py": """
        import importlib

        def load_ext(name, funcs):
            return importlib.import_module("toylib." + name)
    """,
    "ops/__init__.py": "from .roi_align import roi_align, RoIAlign\n",
    "ops/roi_align.py": """
        import torch
        from torch import nn
        from torch.autograd import Function
        from ..utils import ext_loader

        ext_module = ext_loader.load_ext('_ext', ['roi_align_forward'])


        class RoIAlignFunction(Function):
            @staticmethod
            def forward(ctx, x, rois):
                out = x.new_zeros(3)
                ext_module.roi_align_forward(x, rois, out)
                return out

            @staticmethod
            def backward(ctx, grad):
                return grad, None


        roi_align = RoIAlignFunction.apply


        class RoIAlign(nn.Module):
            def forward(self, x, rois):
                return roi_align(x, rois)
    """,
    "models.py": """
        import torch
        from .ops import RoIAlign, roi_align
        from . import broken

        __all__ = ["Detector", "pure_helper", "broken_user", "ping", "pong"]


        def _pool(x, rois):
            return roi_align(x, rois)


        def pure_helper(x):
            return torch.matmul(x, x)


        def ping(n):
            if n:
                return pong(n - 1)
            return torch.cuda.jiterator._create_jit_fn("x")


        def pong(n):
            return ping(n)


        def broken_user(x):
            return broken.thing(x)


        class Base(torch.nn.Module):
            def head(self, x):
                return pure_helper(x)


        class Detector(Base):
            def head(self, x, rois):
                return super().head(x) + _pool(x, rois)

            def forward(self, x, rois):
                return self.head(x, rois)
    """,
    "broken.py": "def thing(x:\n    return x\n",
    "csrc/pybind.cpp": """
        #include <torch/extension.h>
        void roi_align_forward(at::Tensor x, at::Tensor rois, at::Tensor out);
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
          m.def("roi_align_forward", &roi_align_forward, "roi_align_forward");
        }
    """,
    "csrc/roi_align_cuda.cu": """
        template <typename T>
        __global__ void roi_align_forward_cuda_kernel(const T* in, T* out) { out[0] = in[0]; }

        void RoIAlignForwardLauncher(at::Tensor x, at::Tensor out) {
          roi_align_forward_cuda_kernel<float><<<1, 32>>>(x.data_ptr<float>(), out.data_ptr<float>());
          cudaMemcpyAsync(nullptr, nullptr, 0, cudaMemcpyDeviceToHost);
        }

        void roi_align_forward(at::Tensor x, at::Tensor rois, at::Tensor out) {
          RoIAlignForwardLauncher(x, out);
        }
    """,
}


def write_lib(root: Path, files=LIB) -> Path:
    lib = root / "toylib"
    for rel, text in files.items():
        p = lib / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"))
    return lib


@pytest.fixture(scope="module")
def lib_report(tmp_path_factory, kb):
    from analyse.library import analyse_library

    root = tmp_path_factory.mktemp("tp")
    lib = write_lib(root)
    report = analyse_library([lib], kb, input_names=["toylib"])
    return report


def _fn(report, qual):
    for f in report["thirdparty"]["functions"]:
        if f["qualname"] == qual:
            return f
    return None


def test_three_level_chain_to_cuda_kernel(lib_report):
    f = _fn(lib_report, "toylib.models.Detector.forward")
    assert f is not None and f["status"] == "unsupported"
    assert f["path"] == "models.py"
    assert f["via"] == ["toylib.models.Detector.forward", "toylib.models.Detector.head", "toylib.models._pool",
                        "toylib.ops.roi_align.RoIAlignFunction.forward"]
    assert len(f["reasons"]) == 1
    reason = f["reasons"][0]
    assert reason.startswith("toylib._ext.roi_align_forward")
    assert "roi_align_forward_cuda_kernel" in reason and "csrc/pybind.cpp" in reason
    root = _fn(lib_report, "toylib.ops.roi_align.RoIAlignFunction.forward")
    assert root["via"] == ["toylib.ops.roi_align.RoIAlignFunction.forward"]
    assert _fn(lib_report, "toylib.ops.roi_align.RoIAlign.forward")["status"] == "unsupported"


def test_pure_pytorch_helper_and_super_dispatch(lib_report):
    assert _fn(lib_report, "toylib.models.pure_helper") is None
    assert _fn(lib_report, "toylib.models.Base.head") is None
    # Detector.head reaches the kernel through _pool, and Base.head through super()
    assert _fn(lib_report, "toylib.models.Detector.head")["status"] == "unsupported"
    assert _fn(lib_report, "toylib.ops.roi_align.RoIAlignFunction.backward") is None


def test_recursion_cycle(lib_report):
    ping = _fn(lib_report, "toylib.models.ping")
    pong = _fn(lib_report, "toylib.models.pong")
    assert ping["status"] == pong["status"] == "unsupported"
    assert ping["reasons"] == pong["reasons"] == ["torch.cuda.jiterator._create_jit_fn"]
    assert ping["via"] == ["toylib.models.ping"]
    assert pong["via"] == ["toylib.models.pong", "toylib.models.ping"]


def test_syntax_error_module_is_error_and_callers_unknown(lib_report):
    errs = [e for e in lib_report["errors"] if e["path"] == "broken.py"]
    assert errs and errs[0]["kind"] == "syntax"
    f = _fn(lib_report, "toylib.models.broken_user")
    assert f["status"] == "unknown"
    assert f["reasons"] == ["calls toylib.broken.thing, in a module that failed to parse"]


def test_summary_cpp_and_reexports(lib_report, report_schema):
    tp = lib_report["thirdparty"]
    s = tp["summary"]
    assert lib_report["mode"] == "thirdparty"
    assert s["functions_total"] >= 12
    assert s["affected"] == len([f for f in tp["functions"] if not f["qualname"].endswith("<module>")])
    assert s["by_status"]["unsupported"] >= 6
    assert s["public_entry_points"] >= 5 and 1 <= s["public_affected"] <= s["public_entry_points"]
    assert s["call_graph"]["nodes"] > 0 and s["call_graph"]["edges"] > 0
    assert set(s["timings"]) == {"parse_s", "passes_s", "callgraph_s", "propagation_s"}
    # re-exports: the public name of the Function.apply alias points at forward
    assert tp["aliases"]["toylib.roi_align"] == ["toylib.ops.roi_align.RoIAlignFunction.forward"]
    assert "toylib.models.Detector.forward" in tp["aliases"]["toylib.Detector"]
    ext = tp["extensions"]
    assert ext["kernels_total"] == 1
    assert ext["modules"][0]["bindings"] == 1 and ext["modules"][0]["bindings_with_cuda_kernels"] == 1
    assert ext["folders"][0]["cuda_apis"]["cuda-runtime"] >= 1
    # the jiterator finding of the passes is in the findings as usual
    assert any(f["api"] == "torch.cuda.jiterator._create_jit_fn" for f in lib_report["findings"])
    try:
        import jsonschema
    except ImportError:  # pragma: no cover
        return
    jsonschema.validate(json.loads(json.dumps(lib_report)), report_schema)


def test_undecodable_cpp_file_is_error(tmp_path, kb):
    from analyse.library import analyse_library

    lib = write_lib(tmp_path, {"__init__.py": "def f():\n    return 1\n"})
    (lib / "bad.cu").write_bytes(b"__global__ void k() {}\x00\xff\xfe")
    report = analyse_library([lib], kb)
    assert [e["kind"] for e in report["errors"] if e["path"] == "bad.cu"] == ["encoding"]


def test_cli_thirdparty_then_script_with_thirdparty(tmp_path, kb):
    from analyse.cli import cli

    lib = write_lib(tmp_path / "src")
    runner = CliRunner()
    out_lib = tmp_path / "libreport"
    res = runner.invoke(cli, ["thirdparty", str(lib), "-o", str(out_lib), "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    lib_json = out_lib / "report.json"
    assert json.loads(lib_json.read_text())["thirdparty"]["functions"]

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(textwrap.dedent("""
        import torch
        import toylib
        from toylib.models import pure_helper, broken_user

        def main(x, rois):
            y = toylib.roi_align(x, rois)
            z = pure_helper(x)
            det = toylib.Detector()
            return broken_user(z), y, det
    """).lstrip("\n"))
    out = tmp_path / "scriptreport"
    res = runner.invoke(cli, ["script", str(proj), "-o", str(out), "--format", "json", "-q",
                              "--with-thirdparty", str(lib_json)])
    assert res.exit_code == 0, res.output
    rep = json.loads((out / "report.json").read_text())
    tp = {(f["line"], f["code"]): f for f in rep["findings"] if f["code"].startswith("NPU45")}
    assert set(tp) == {(6, "NPU450"), (8, "NPU450"), (9, "NPU451")}
    f = tp[(6, "NPU450")]
    assert f["severity"] == "blocker" and f["category"] == "third-party" and f["evidence"] == "propagated"
    assert f["chain"] == ["train.py:6 toylib.roi_align", "toylib.ops.roi_align.RoIAlignFunction.forward"]
    assert tp[(9, "NPU451")]["severity"] == "info"
    assert tp[(8, "NPU450")]["chain"][0] == "train.py:8 toylib.Detector"

    bad = tmp_path / "bad.json"
    bad.write_text('{"mode": "script", "findings": []}')
    res = runner.invoke(cli, ["script", str(proj), "-o", str(out), "-q", "--with-thirdparty", str(bad)])
    assert res.exit_code == 2
    assert "not an `npu-analyse thirdparty` report" in res.output
    bad.write_text("{not json")
    res = runner.invoke(cli, ["script", str(proj), "-o", str(out), "-q", "--with-thirdparty", str(bad)])
    assert res.exit_code == 2 and "not a JSON file" in res.output
