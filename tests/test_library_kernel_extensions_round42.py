"""Library mode: kernels from separately installed CUDA-only extension modules (stop 42).

A quantisation library builds no extension itself; its kernels come from other wheels (autoawq-kernels'
``awq_ext`` / ``awq_v2_ext``, the ExLlama ``exl_ext`` / ``exlv2_ext``, Marlin's ``marlin_cuda``), imported through a
small helper that imports a module by its name and hands back ``(module, message)``, ``None`` on failure. The
modules are rows of data/third_party_libs.yaml (with the setup.py that builds each as a CUDAExtension); the helper is
recognised by its shape (:class:`analyse.resolve.ImportHelper`), so ``ext, msg = helper("awq_ext")`` binds the module.

INVALID (the old table had no such modules, so these were ``supported``): a function that raises when the module is
None and then calls it, one that only asserts it, and one that calls it unconditionally are ``unsupported``, with the
kernel call as the reason.

VALID: a packing function in pure torch, and a function that tests the module and has a torch path, stay supported.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "util.py": """
        import importlib


        def load_ext(module_name):
            try:
                module = importlib.import_module(module_name)
                return module, ""
            except Exception as ex:
                return None, str(ex)
    """,
    "gemv.py": """
        import torch
        from torch import nn
        from .util import load_ext

        kern, msg = load_ext("awq_ext")
        fast, _ = load_ext("awq_v2_ext")


        class QuantGemv(nn.Module):
            def __init__(self, qweight, scales):
                super().__init__()
                self.qweight = qweight
                self.scales = scales

            def forward(self, x):
                if kern is None:
                    raise ModuleNotFoundError("kernels are not installed: " + msg)
                return kern.gemv_forward_cuda(x, self.qweight, self.scales)

            def decode(self, x):
                assert fast is not None, "needs the v2 kernels"
                return fast.gemv_forward_cuda_decode(x, self.qweight)

            @staticmethod
            def pack(w, bits):
                q = torch.round(w * (2 ** bits - 1)).to(torch.int32)
                return q[..., ::2] | (q[..., 1::2] << bits)

            def norm(self, x, w):
                if kern is not None:
                    return kern.layernorm_forward_cuda(x, w)
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    """,
    "exl.py": """
        from .util import load_ext

        exl, _ = load_ext("exlv2_ext")
        mar, _ = load_ext("marlin_cuda")


        def make_handle(qweight, scratch):
            return exl.make_q_matrix(qweight, scratch)


        def marlin_mul(x, w, s, out):
            return mar.mul(x, w, out, s)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "qkern")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}, rep


def test_helper_bound_cuda_extensions_make_their_callers_unsupported(tmp_path, kb):
    by, rep = _by(tmp_path, kb)
    assert by["qkern.gemv.QuantGemv.forward"]["status"] == "unsupported"
    assert by["qkern.gemv.QuantGemv.forward"]["reasons"] == ["awq_ext.gemv_forward_cuda"]
    assert by["qkern.gemv.QuantGemv.decode"]["status"] == "unsupported"
    assert by["qkern.gemv.QuantGemv.decode"]["reasons"] == ["awq_v2_ext.gemv_forward_cuda_decode"]
    assert by["qkern.exl.make_handle"]["reasons"] == ["exlv2_ext.make_q_matrix"]
    assert by["qkern.exl.marlin_mul"]["reasons"] == ["marlin_cuda.mul"]
    kernel_use = [f for f in rep["findings"] if f["api"] == "awq_ext.gemv_forward_cuda"]
    assert [(f["code"], f["path"], f["line"]) for f in kernel_use] == [("NPU402", "gemv.py", 18)]
    assert "npu_weight_quant_batchmatmul" in kernel_use[0]["replacement"]


def test_torch_paths_beside_the_extensions_stay_supported(tmp_path, kb):
    by, _ = _by(tmp_path, kb)
    assert "qkern.gemv.QuantGemv.pack" not in by          # pure torch packing
    assert "qkern.gemv.QuantGemv.norm" not in by          # tests the module, has a torch fallback
    assert "qkern.util.load_ext" not in by


def test_the_extension_rows_carry_their_build_evidence(kb):
    from analyse.passes.third_party import lib_table

    table = lib_table(kb)
    for mod in ("awq_ext", "awq_v2_ext", "awq_ft_ext", "exl_ext", "exlv2_ext", "exllama_kernels", "marlin_cuda"):
        entry, _prefix = table.match(mod)
        assert entry.severity == "manual" and not entry.imports_on_npu, mod
        assert "CUDAExtension" in entry.source and "setup.py" in entry.source, mod
    assert table.match("marlin") is None   # VALID: only the compiled module, not a package of that name
