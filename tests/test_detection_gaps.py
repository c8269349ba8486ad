"""Detection gaps seen in real code (issue 13): each test failed before its fix.

Fixtures are written for these tests, modelled on common public patterns (flash-attn v1/v2
import fallbacks in attention modules, RNN encoders that compact their weights, detection
post-processing helpers, AMP utilities).
"""

from __future__ import annotations

from analyse.knowledge import load_knowledge
from tests.helpers import analyse_source


def _findings(tmp_path, src, version="2.8.0", name="model.py"):
    return analyse_source(tmp_path, src, load_knowledge(version), name=name).findings


# ----------------------------------------------------------------------- gap 1: two imports in try/except ImportError

FLASH_FALLBACK = """\
import torch

try:
    from flash_attn import flash_attn_varlen_func as flash_attn_unpadded_func  # flash-attn 2.x
except ImportError:
    from flash_attn.flash_attn_interface import flash_attn_unpadded_func  # flash-attn 1.x


class VarlenAttention(torch.nn.Module):
    def forward(self, q, k, v, cu_seqlens, max_seqlen):
        return flash_attn_unpadded_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, 0.0, causal=True)
"""


def test_name_bound_by_two_imports_in_try_except_is_resolved_at_its_call(tmp_path):
    found = _findings(tmp_path, FLASH_FALLBACK)
    at_call = [f for f in found if f.line == 11 and f.category == "third-party"]
    assert at_call, [(f.line, f.code) for f in found]
    assert at_call[0].api == "flash_attn.flash_attn_varlen_func"
    assert "npu_fusion_attention" in (at_call[0].replacement or "") + at_call[0].message


def test_two_imports_of_different_packages_stay_unresolved(tmp_path):
    from analyse.resolve import Resolver
    import astroid

    tree = astroid.parse("try:\n    from apex.normalization import FusedLayerNorm as LN\nexcept ImportError:\n"
                         "    from torch.nn import LayerNorm as LN\nLN(8)\n")
    call = list(tree.nodes_of_class(astroid.nodes.Call))[0]
    assert Resolver(tree, "m").qualname(call.func) is None


# ----------------------------------------------------------------------- gap 2: classes as values, method uses

CLASSES_AS_VALUES = """\
import torch
import torch.nn as nn

torch.serialization.add_safe_globals([nn.GRU, nn.Linear])
RNN_TYPES = {"gru": nn.GRU}


def init_rnn(m):
    if isinstance(m, (nn.GRU, nn.Linear)):
        m.reset_parameters()


def compact(rnn):
    rnn.flatten_parameters()
"""


def test_classes_passed_as_values_and_unambiguous_methods(tmp_path):
    found = [(f.line, f.code, f.api, f.severity) for f in _findings(tmp_path, CLASSES_AS_VALUES) if f.code == "NPU201"]
    assert (4, "NPU201", "torch.nn.GRU", "manual") in found        # in a safe_globals list at 2.8.0
    assert (5, "NPU201", "torch.nn.GRU", "manual") in found        # in a registry
    assert (9, "NPU201", "torch.nn.GRU", "info") in found          # isinstance: the code handles GRUs
    assert (14, "NPU201", "torch.nn.RNNBase.flatten_parameters", "manual") in found
    assert not [x for x in found if x[2] == "torch.nn.Linear"]


def test_data_parallel_forms(tmp_path):
    src = ("import torch.nn as nn\nfrom torch.nn.parallel import DataParallel\n"
           "def wrap(m):\n    return DataParallel(m)\n"
           "def is_parallel(m):\n    return type(m) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)\n")
    found = _findings(tmp_path, src)
    assert [(f.line, f.code) for f in found if f.code == "NPU103"][:1] == [(4, "NPU103")]
    assert not [f for f in found if f.code == "NPU301" and "DataParallel" in f.api]


# ----------------------------------------------------------------------- gap 4: CUDA-only autocast helpers

AMP_UTILS = """\
import torch


def autocast_dtype():
    return torch.get_autocast_gpu_dtype()


def force_bf16():
    torch.set_autocast_gpu_dtype(torch.bfloat16)
"""


def test_cuda_only_autocast_helpers_have_a_rule(tmp_path):
    found = _findings(tmp_path, AMP_UTILS, version="2.13.0")
    hits = [(f.line, f.code, f.severity) for f in found if f.api.startswith("torch.") and "autocast_gpu" in f.api]
    # reading the CUDA autocast dtype completes on an NPU (a thread-local read: info); setting it does not reach NPU autocast
    assert (5, "NPU006", "info") in hits and (9, "NPU006", "manual") in hits
    assert not [h for h in hits if h[1] == "NPU301"]
    f = next(f for f in found if f.code == "NPU006" and f.line == 5)
    assert "torch.npu.get_autocast_dtype" in f.replacement
    f = next(f for f in found if f.code == "NPU006" and f.line == 9)
    assert "torch.npu.set_autocast_dtype" in f.replacement


# ----------------------------------------------------------------------- gap 5: data-dependent ops on unknown receivers

POSTPROCESS = """\
import torch


def select(scores, boxes, thresh):
    keep = (scores > thresh).nonzero()
    idx = scores.nonzero(as_tuple=True)
    classes = boxes.unique(sorted=True)
    return boxes[keep], idx, classes
"""

POSTPROCESS_NUMPY = """\
import numpy as np
import torch


def select(scores, thresh):
    keep = (scores > thresh).nonzero()
    idx = scores.nonzero(as_tuple=True)
    return keep, idx
"""


def test_data_dependent_ops_on_parameters(tmp_path):
    found = [(f.line, f.api) for f in _findings(tmp_path, POSTPROCESS) if f.code == "NPU601"]
    assert (5, "torch.Tensor.nonzero") in found and (6, "torch.Tensor.nonzero") in found and (7, "torch.Tensor.unique") in found


def test_numpy_module_keeps_precision(tmp_path):
    found = [(f.line, f.api) for f in _findings(tmp_path, POSTPROCESS_NUMPY) if f.code == "NPU601"]
    # numpy arrays also have .nonzero(): only the torch-only keyword makes it a tensor
    assert found == [(7, "torch.Tensor.nonzero")]
