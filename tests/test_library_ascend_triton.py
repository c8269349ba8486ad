"""Library mode: Triton kernels of the library's own Ascend backend folder are its NPU implementation.

A library that ships a Triton-Ascend port of its kernels in a backend folder (``ops/backends/_ascend/``) runs those
kernels on an NPU: a kernel there that breaks no documented Triton-Ascend constraint (NPU506, manual) makes its
wrapper no root (INVALID: ``unsupported`` "triton-kernel ..."), while

VALID: the same GPU kernel in the default ``ops/`` folder stays ``unsupported``; a kernel in the Ascend folder with a
hard violation (``tl.float64``, which no Ascend chip has) stays ``unsupported``; a GPU kernel launched from the
Ascend folder is still judged.
"""

from __future__ import annotations

from helpers import library_report

KERNEL = """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, x * 2.0, mask=mask)


    def scale(x):
        y = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""

LIB = {
    "__init__.py": "",
    "ops/__init__.py": "",
    "ops/scale.py": KERNEL,
    "ops/backends/__init__.py": "",
    "ops/backends/_ascend/__init__.py": "",
    "ops/backends/_ascend/scale.py": KERNEL,
    "ops/backends/_ascend/wide.py": """
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def _wide_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros([BLOCK], dtype=tl.float64)
            tl.store(x_ptr + offs, acc, mask=offs < n)


        def wide(x):
            _wide_kernel[(1,)](x, x.numel(), BLOCK=1024)
            return x
    """,
    "ops/backends/_ascend/borrowed.py": """
        from ascendlib.ops.scale import _scale_kernel


        def borrowed(x, y):
            _scale_kernel[(1,)](x, y, x.numel(), BLOCK=1024)
            return y
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "ascendlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_triton_kernel_of_the_ascend_backend_folder_is_the_npu_implementation(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert "ascendlib.ops.backends._ascend.scale.scale" not in by   # supported: not listed


def test_gpu_triton_kernels_and_hard_violations_stay_unsupported(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert by["ascendlib.ops.scale.scale"]["status"] == "unsupported"
    assert by["ascendlib.ops.scale.scale"]["reasons"] == ["triton-kernel:ascendlib.ops.scale._scale_kernel"]
    assert by["ascendlib.ops.backends._ascend.wide.wide"]["status"] == "unsupported"
    assert by["ascendlib.ops.backends._ascend.borrowed.borrowed"]["status"] == "unsupported"

