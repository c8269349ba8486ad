"""A package analysed inside its parent package imports itself under its absolute name.

`npu-analyse thirdparty transformer_engine/pytorch` names the modules `pytorch.*`, while the code imports them as
`transformer_engine.pytorch.*`. Those imports are the library's own modules (linked in the call graph, never a
third-party GPU library), while the parent's other packages and the compiled extension stay what they are.
"""

from __future__ import annotations

from analyse.knowledge import load_knowledge
from analyse.library import analyse_library, outer_package_names
from tests.helpers import write_files

FILES = {
    "transformer_engine/__init__.py": "",
    "transformer_engine/pytorch/__init__.py": "",
    "transformer_engine/pytorch/base.py": """
class BasicOperation:
    def __init__(self):
        self.shape = None
""",
    "transformer_engine/pytorch/ops.py": """
import torch
from transformer_engine.pytorch.base import BasicOperation


class Reshape(BasicOperation):
    def op_forward(self, ctx: BasicOperation, x):
        return x.reshape(-1)


def fused(x):
    from transformer_engine.pytorch.kernels import rope
    return rope(x)
""",
    "transformer_engine/pytorch/kernels.py": """
import transformer_engine_torch as tex


def rope(x):
    return tex.fused_rope_forward(x)
""",
}


def test_the_package_inside_its_parent_is_its_own_code(tmp_path):
    root = write_files(tmp_path, FILES, strip_first_newline=True)
    lib = root / "transformer_engine" / "pytorch"
    assert outer_package_names([lib]) == {"transformer_engine.pytorch": "pytorch"}
    rep = analyse_library([lib], load_knowledge("2.7.1"), input_names=["pytorch"])
    own = [f for f in rep["findings"] if f["api"].startswith("transformer_engine.pytorch")]
    assert own == []
    st = {d["qualname"]: d for d in rep["thirdparty"]["functions"]}
    assert "pytorch.ops.Reshape.op_forward" not in st   # plain torch: no finding, nothing reached
    assert st["pytorch.kernels.rope"]["status"] == "unsupported"
    assert st["pytorch.kernels.rope"]["reasons"] == ["transformer_engine_torch.fused_rope_forward"]
    # the call through the absolute name is linked: the caller inherits the compiled extension's status
    assert st["pytorch.ops.fused"]["status"] == "unsupported"
    assert st["pytorch.ops.fused"]["via"][-1] == "pytorch.kernels.rope"


def test_a_top_level_package_has_no_outer_name(tmp_path):
    root = write_files(tmp_path, FILES, strip_first_newline=True)
    assert outer_package_names([root / "transformer_engine"]) == {}
