"""affinity pass: structural recognition, anchors, replacements and negatives."""

from analyse.passes.affinity import AffinityPass
from tests.helpers import analyse_source


def run(tmp_path, kb, src):
    res = analyse_source(tmp_path, src, kb, passes=[AffinityPass()])
    assert not res.errors, res.errors
    return res.findings


def test_rmsnorm_class_reported_at_class_with_replacement(tmp_path, kb):
    src = '''\
import torch
from torch import nn

class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states
'''
    fs = run(tmp_path, kb, src)
    assert [(f.code, f.line, f.api) for f in fs] == [("NPU701", 4, "rms-norm")]
    assert "torch_npu.npu_rms_norm" in fs[0].replacement
    assert fs[0].category == "affinity" and fs[0].severity == "advice"


def test_unnamed_helper_computing_rmsnorm_is_found(tmp_path, kb):
    src = '''\
import torch
def helper(t, g, e):
    ms = torch.mean(t * t, dim=-1, keepdim=True)
    return t / torch.sqrt(ms + e) * g
'''
    fs = run(tmp_path, kb, src)
    assert [(f.code, f.line) for f in fs] == [("NPU701", 2)]


def test_named_rms_norm_computing_something_else_is_not(tmp_path, kb):
    src = '''\
import torch
def rms_norm(x, eps=1e-6):
    return x / (x.mean(-1, keepdim=True) + eps)

def layer_norm(x, w, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) * torch.rsqrt(var + eps) * w
'''
    assert run(tmp_path, kb, src) == []


def test_rotary_decorated_function_reports_def_line(tmp_path, kb):
    src = '''\
import torch
import functools

def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)

@functools.lru_cache()
def apply_rotary_pos_emb(q, k, cos, sin):
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed
'''
    fs = run(tmp_path, kb, src)
    assert [(f.code, f.line, f.api) for f in fs] == [("NPU702", 10, "rotary-embedding")]
    assert fs[0].replacement.startswith("torch_npu.npu_rotary_mul(")


def test_swiglu_chunk_and_projection_forms(tmp_path, kb):
    src = '''\
import torch.nn.functional as F
from torch import nn

class MLP(nn.Module):
    def forward(self, x):
        h = self.up(x)
        a, b = h.chunk(2, dim=-1)
        y = self.down(x)
        z = self.norm(y)
        w = self.act(z)
        out = F.silu(a) * b
        return self.proj(out + w + y + z)

def ffn(self, x):
    return self.w2(F.silu(self.w1(x)) * self.w3(x))

def gate(x, g):
    return x * F.silu(g)
'''
    fs = run(tmp_path, kb, src)
    got = sorted((f.code, f.line) for f in fs)
    # a short forward reports its class (line 4); gate() (x * silu(g), no projection/split) is no finding
    assert got == [("NPU703", 4), ("NPU703", 14)]
    sep = [f for f in fs if f.line == 14][0]
    assert "fuse them into one Linear" in sep.message
    assert all("torch_npu.npu_swiglu" in f.replacement for f in fs)


def test_attention_and_sdpa(tmp_path, kb):
    src = '''\
import torch
import torch.nn.functional as F

def eager_attention(q, k, v, mask, scale):
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    scores = scores + mask
    probs = F.softmax(scores, dim=-1)
    probs = F.dropout(probs, p=0.1)
    return torch.matmul(probs, v)

def fused(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)

def not_attention(a, b, c):
    return (a @ b) @ c
'''
    fs = run(tmp_path, kb, src)
    got = sorted((f.code, f.line, f.api) for f in fs)
    # the matmul-with-transpose inside the attention is not a second (NPU711) finding
    assert got == [("NPU704", 4, "attention"), ("NPU705", 12, "sdpa")]
    sdpa = [f for f in fs if f.code == "NPU705"][0]
    assert "sparse_mode=2" in sdpa.replacement and "keep_prob=1 - dropout_p" in sdpa.replacement
    assert "Ascend 950DT" in sdpa.message
    attn = [f for f in fs if f.code == "NPU704"][0]
    assert "Atlas A2 training" in attn.message


def test_drop_path_function_and_listed_class(tmp_path, kb):
    src = '''\
import torch
from torch import nn

def stochastic(x, p: float = 0.0, training: bool = False):
    if p == 0.0 or not training:
        return x
    keep = 1 - p
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    mask = x.new_empty(shape).bernoulli_(keep)
    return x * mask / keep

class DropPath(torch.nn.Module):
    def __init__(self, drop_prob):
        super().__init__()
        self.drop_prob = drop_prob
    def forward(self, x):
        return stochastic(x, self.drop_prob, self.training)
'''
    fs = run(tmp_path, kb, src)
    got = sorted((f.code, f.line, f.api) for f in fs)
    assert got == [("NPU706", 4, "drop-path"), ("NPU711", 12, "torch_npu.contrib.module.NpuDropPath")]


def test_nms_roi_channel_shuffle(tmp_path, kb):
    src = '''\
import torch
import torchvision

def py_nms(boxes, scores, thr):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        xx1 = torch.max(boxes[i, 0], boxes[order[1:], 0])
        inter = (xx1 - boxes[i, 2]).clamp(min=0)
        iou = inter / (1.0 + inter)
        order = order[1:][iou <= thr]
    return keep

def shuffle(x, groups):
    b, c, h, w = x.shape
    y = x.reshape(b, groups, c // groups, h, w).permute(0, 2, 1, 3, 4)
    return y.reshape(b, c, h, w)

def reshape_only(x):
    b, c, h, w = x.shape
    return x.view(b, 2, c // 2, h, w).sum(1)

out = torchvision.ops.roi_align(feat, rois, (7, 7))
'''
    fs = run(tmp_path, kb, src)
    got = sorted((f.code, f.line, f.api) for f in fs)
    assert got == [("NPU707", 25, "roi-align"), ("NPU708", 4, "nms"), ("NPU709", 16, "channel-shuffle")]
    nms = [f for f in fs if f.code == "NPU708"][0]
    # the facts mark npu_nms_v4 planned-deprecated: never recommended
    assert "npu_nms_v4" not in nms.replacement
    assert "npu_multiclass_nms" in nms.replacement


def test_optimizers_and_affinity_list(tmp_path, kb):
    src = '''\
import torch
from torch import nn
from torch.optim import SGD

opt = SGD(model.parameters(), lr=0.1)
opt2 = torch.optim.LBFGS(model.parameters())
act = nn.SiLU()

class Mish(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, input):
        return input * torch.tanh(torch.nn.functional.softplus(input))

def channel_shuffle(x, groups):
    return x
'''
    fs = run(tmp_path, kb, src)
    got = sorted((f.code, f.line, f.api) for f in fs)
    assert got == [("NPU710", 5, "torch.optim.SGD"), ("NPU711", 9, "torch.nn.Mish"),
                   ("NPU711", 15, "torch_npu.contrib.module.ChannelShuffle")]
    sgd = [f for f in fs if f.code == "NPU710"][0]
    assert sgd.replacement == "torch_npu.optim.NpuFusedSGD(model.parameters(), lr=0.1)"
    mish = [f for f in fs if f.line == 9][0]
    # contrib Mish is deprecated per the facts: recommend torch.nn.Mish instead
    assert mish.replacement == "torch.nn.Mish" and "deprecated" in mish.message
