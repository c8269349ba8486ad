"""Test-only: the attention both stand-ins compute on the CPU (one implementation, so the two runs compare)."""
import math

import torch
import torch.nn.functional as F


def attention(q, k, v, *, scale, mask, dropout_p):
    """q, k, v: (batch, seq, heads, dim); mask: bool (seq, seq), True = masked out."""
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    probs = F.dropout(torch.softmax(scores.float(), dim=-1).to(q.dtype), p=dropout_p, training=dropout_p > 0)
    return (probs @ v).transpose(1, 2)


def default_scale(q):
    return 1 / math.sqrt(q.shape[-1])
