"""GPU-only libraries of stop 43 (data/third_party_libs.yaml).

* ``kernel_decorators``: a function decorated ``@numba.cuda.jit`` is a CUDA kernel; the function that launches it
  (``kern[blocks, threads](args)``) uses Numba CUDA where it writes the launch (NPU402, blocker), so a library
  function that launches one is unsupported, not only the kernel's body.
* k2 (k2-fsa): CPU and CUDA builds only; a function calling it on the tensors it is handed is unsupported.

VALID: a ``@numba.njit`` (CPU) function subscripted and called is nothing; a subscripted call of a plain function
or a container is nothing either.
"""

from __future__ import annotations

import pytest
from helpers import analyse_source, library_report

from analyse.knowledge import load_knowledge
from analyse.passes._libtable import ThirdPartyDataError, parse_libs

SRC = """
import numba
import torch
from numba import cuda


@cuda.jit
def kern(a, b):
    i = cuda.threadIdx.x
    b[i] = a[i]


@numba.njit
def host(a):
    return a


def launch(x):
    y = torch.empty_like(x)
    kern[1, x.shape[0]](x, y)
    return y


def not_a_launch(x, table):
    return table[0](x) + host(x)


def loss(log_probs, graph):
    import k2
    dense = k2.DenseFsaVec(log_probs, torch.zeros(1, 3, dtype=torch.int32))
    return k2.ctc_loss(graph.to(log_probs.device), dense)
"""


def test_launch_is_a_use_at_the_launch(tmp_path):
    res = analyse_source(tmp_path, SRC, load_knowledge("2.13.0"))
    launch = [f for f in res.findings if f.line == 20]
    assert [(f.code, f.severity, f.api) for f in launch] == [("NPU402", "blocker", "numba.cuda.jit")]
    assert "launches `kern`" in launch[0].message and "snippet.py:7" in launch[0].message
    assert not [f for f in res.findings if f.line == 25 and f.category == "third-party"]   # VALID
    k2 = [f for f in res.findings if f.line in (30, 31) and f.category == "third-party"]
    assert {f.api for f in k2} >= {"k2.DenseFsaVec", "k2.ctc_loss"} and all(f.severity == "manual" for f in k2)


def test_library_statuses(tmp_path):
    rep = library_report(tmp_path, load_knowledge("2.13.0"), {"__init__.py": "", "m.py": SRC}, "asrlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["asrlib.m.launch"]["status"] == "unsupported"
    assert by["asrlib.m.launch"]["reasons"] == ["numba.cuda.jit"]
    assert "asrlib.m.not_a_launch" not in by and "asrlib.m.host" not in by   # VALID: supported
    assert by["asrlib.m.loss"]["status"] == "unsupported"


def test_kernel_decorators_validated():
    row = {"id": "x", "library": "X", "modules": ["x.gpu"], "severity": "blocker", "reason": "r", "replacement": "p",
           "source": "s"}
    doc = {"meta": {"source": "s", "date": "d"}, "libraries": [dict(row, kernel_decorators=["x.gpu.jit"])]}
    assert parse_libs(doc).entries[0].kernel_decorators == ("x.gpu.jit",)
    with pytest.raises(ThirdPartyDataError, match="kernel_decorators"):
        parse_libs({"meta": doc["meta"], "libraries": [dict(row, kernel_decorators=["y.jit"])]})
