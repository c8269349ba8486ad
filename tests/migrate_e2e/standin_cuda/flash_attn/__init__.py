"""Test-only stand-in for flash-attn: flash_attn_func on the CPU (never shipped)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from attention_on_cpu import attention, default_scale  # noqa: E402


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False):
    s = q.shape[1]
    mask = torch.triu(torch.ones(s, s, device=q.device), diagonal=1).bool() if causal else None
    return attention(q, k, v, scale=default_scale(q) if softmax_scale is None else softmax_scale, mask=mask,
                     dropout_p=dropout_p)
