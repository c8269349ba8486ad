"""Library mode: a CUDA device branch with a PyTorch fallback is taken on an NPU only with transfer_to_npu.

``if torch.cuda.is_available() and x.is_cuda: <op> else: <PyTorch code>``: with transfer_to_npu ``is_cuda``
answers for the NPU and the CUDA op runs; without it the PyTorch path does. As the code stands an NPU takes the
PyTorch path, so the function is supported (stop 39, analyse.callgraph.npu_takes_fallback; it was ``conditional``
"only under transfer_to_npu", and before that ``unsupported``); a CUDA test whose other side only raises has no
fallback and stays ``unsupported`` (VALID). An early return for a tensor that is not a CUDA tensor (``if not x.is_cuda: return
<PyTorch code>`` before the op) is the path an NPU tensor takes: the op after it is off the NPU path and the
function supported (stop 39; it was ``conditional`` on transfer_to_npu like the branch).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "k.cu": "__global__ void interp_kernel(float* x) {}\n",
    "dev.py": """
        import torch
        from torch.utils.cpp_extension import load

        _ext = load(name="dev_ext", sources=["k.cu"])


        def interp(pix, attrs):
            if not pix.is_cuda:
                return (pix * attrs).sum(-1)
            return _ext.interp_forward(pix, attrs)


        def conv(verts, edges):
            if torch.cuda.is_available() and verts.is_cuda:
                out = _ext.gather(verts, edges)
            else:
                out = verts.index_add(0, edges, verts)
            return out


        def gpu_only(verts):
            if torch.cuda.is_available():
                return _ext.gather(verts, verts)
            raise RuntimeError("needs a GPU")
    """,
}


def test_cuda_branch_with_a_fallback_is_conditional_on_transfer_to_npu(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "devlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    # the NPU takes the PyTorch path as the code stands: both supported (the torch.cuda.is_available() in conv's test
    # only chooses between two completing branches: advice)
    for q in ("devlib.dev.interp", "devlib.dev.conv"):
        assert q not in by, by.get(q)


def test_cuda_branch_without_a_fallback_stays_unsupported(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "devlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["devlib.dev.gpu_only"]["status"] == "unsupported"
    assert by["devlib.dev.gpu_only"]["reasons"][0].startswith("dev_ext.gather")
