"""Test-only stand-in for torch_npu: 'npu' is the CPU (never shipped)."""
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from attention_on_cpu import attention  # noqa: E402
from devices_on_cpu import map_device_to_cpu  # noqa: E402

torch.utils.rename_privateuse1_backend("npu")
map_device_to_cpu("npu", "hccl")
npu = types.ModuleType("torch_npu.npu")
npu.manual_seed = lambda seed: None
npu.is_available = lambda: True
torch.npu = npu


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None,
                         scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0,
                         prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0):
    assert input_layout == "BSND" and head_num == query.shape[2]
    s = query.shape[1]
    mask = atten_mask[:s, :s] if atten_mask is not None else None
    out = attention(query, key, value, scale=scale, mask=mask, dropout_p=1 - keep_prob)
    return out, None, None, None, 0, 0, 0
