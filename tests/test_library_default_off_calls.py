"""A call behind a default-off option is the caller's choice, for calls as for the findings behind it.

``if not self.enabled: return`` then ``_swap(model)`` (which builds Transformer Engine layers): with the default the
call never runs, but a user of the library can turn the option on, so the caller is ``conditional`` -- the same
answer as for a CUDA-only finding written directly behind the option. A needs-migration callee behind the same
option stays off the path (as such findings do).
"""

from __future__ import annotations

from analyse.knowledge import load_knowledge
from tests.helpers import library_report

SRC = """
from dataclasses import dataclass

import torch

try:
    import transformer_engine.pytorch as te
except ImportError:
    te = None


@dataclass
class Handler:
    enabled: bool = False

    def swap(self, model):
        if not self.enabled:
            return
        _swap(model)

    def move(self, model):
        if not self.enabled:
            return
        _to_gpu(model)


def _swap(model):
    for n, m in model.named_children():
        if isinstance(m, torch.nn.Linear):
            setattr(model, n, te.Linear(m.in_features, m.out_features))


def _to_gpu(model):
    return model.cuda()
"""


def test_a_call_behind_a_default_off_option_is_conditional(tmp_path):
    rep = library_report(tmp_path, load_knowledge("2.7.1"), {"__init__.py": "", "h.py": SRC}, "offlib")
    st = {d["qualname"]: d for d in rep["thirdparty"]["functions"]}
    swap = st["offlib.h.Handler.swap"]
    assert swap["status"] == "conditional"
    assert swap["conditions"] == ["only when `self.enabled` is turned on (off by default, h.py:16; otherwise the "
                                  "fallback runs)"]
    assert st["offlib.h._swap"]["status"] == "unsupported"
    assert "offlib.h.Handler.move" not in st          # needs-migration behind the option: off the path
    assert st["offlib.h._to_gpu"]["status"] == "needs-migration"
