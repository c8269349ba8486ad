"""dynamic-shape pass: data-dependent ops, mask indexing, value-derived shapes, pad-to-longest batches."""

from analyse.passes.dynamic_shape import DynamicShapePass
from tests.helpers import analyse_source, codes_by_line


def run(tmp_path, kb, src, **kw):
    res = analyse_source(tmp_path, src, kb, passes=[DynamicShapePass()], **kw)
    assert not res.errors, res.errors
    return res.findings


def test_data_dependent_ops(tmp_path, kb):
    src = """\
    import torch
    import torchvision
    from torch.nn.utils.rnn import pad_sequence

    def f(x: torch.Tensor, boxes: torch.Tensor, scores: torch.Tensor, rep: torch.Tensor):
        a = torch.nonzero(x)
        b = x.nonzero(as_tuple=True)
        c = torch.argwhere(x)
        d = x.masked_select(x > 0)
        e = torch.unique(x, return_counts=True)
        g = x.unique_consecutive()
        h = torch.where(x > 0)
        i = torch.where(x > 0, x, 0)
        j = x.repeat_interleave(rep)
        k = x.repeat_interleave(rep, output_size=16)
        l = torch.bincount(x)
        m = torch.bincount(x, minlength=10)
        n = torchvision.ops.nms(boxes, scores, 0.5)
        o = torchvision.ops.batched_nms(boxes, scores, idxs, 0.5)
    """
    fs = run(tmp_path, kb, src)
    by_line = {f.line: f for f in fs}
    assert codes_by_line(fs) == {l: ["NPU601"] for l in (6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 19)}
    assert by_line[6].api == "torch.nonzero"
    assert by_line[7].api == "torch.Tensor.nonzero" and "as_tuple=True" in by_line[7].message
    assert by_line[18].api == "torchvision.ops.nms"
    assert "nonzero_static" in by_line[6].replacement
    assert "minlength" in by_line[16].replacement
    assert all(f.severity == "advice" and f.confidence == "high" for f in fs)
    assert "recompile" in by_line[6].message


def test_numpy_and_pandas_are_not_torch(tmp_path, kb):
    src = """\
    import numpy as np
    import pandas as pd
    import torch

    a = np.array([1, 0, 2])
    idx = np.nonzero(a)
    u = np.unique(a)
    b = a[a > 0]
    df = pd.DataFrame({"x": [1, 2]})
    df = df[df.x.ne(0)]
    v = df.x.unique()
    """
    assert run(tmp_path, kb, src) == []


def test_module_without_torch_is_skipped(tmp_path, kb):
    src = """\
    import numpy as np
    x = arr.nonzero()
    y = arr[arr > 0]
    n = int(arr.max())
    z = np.zeros(n)
    """
    assert run(tmp_path, kb, src) == []


def test_mask_indexing_read_and_write(tmp_path, kb):
    src = """\
    import torch

    def f(x: torch.Tensor, target: torch.Tensor, lst, d):
        valid = target > 0
        pos = x[valid]
        x[torch.isnan(x)] = 0
        y = x[~valid & (target < 3)]
        z = x[:, valid]
        w = x[target.bool()]
        v = x[torch.ones(4, dtype=torch.bool)]
        item = d[key]
        first = lst[0]
        head = lst[:2]
        rows = x[idx]
        cols = x[:, 1:3]
    """
    fs = run(tmp_path, kb, src)
    assert codes_by_line(fs) == {l: ["NPU602"] for l in (5, 6, 7, 8, 9, 10)}
    by_line = {f.line: f for f in fs}
    assert by_line[5].api == "torch.Tensor.__getitem__"
    assert by_line[6].api == "torch.Tensor.__setitem__"
    assert "masked_fill_" in by_line[6].replacement or "torch.where" in by_line[6].replacement
    assert "torch.where(mask, x, 0)" in by_line[5].replacement
    assert by_line[5].confidence == "high"


def test_value_derived_shapes(tmp_path, kb):
    src = """\
    import torch
    import torch.nn.functional as F

    def f(x: torch.Tensor, lengths: torch.Tensor, b):
        n = lengths.max().item()
        m = n + 1
        out = torch.zeros(b, m)
        y = x.view(-1, n)
        z = x[:n]
        p = F.pad(x, (0, n))
        q = x.new_zeros(n)
        k = int(lengths.sum())
        r = x.expand(k, -1)
        for l in lengths.tolist():
            s = x[:l]
        fixed = torch.zeros(b, 128)
        size0 = x.size(0)
        t = torch.zeros(size0)
        print(lengths.max().item())
    """
    fs = run(tmp_path, kb, src)
    assert codes_by_line(fs) == {l: ["NPU603"] for l in (7, 8, 9, 10, 11, 13, 15)}
    by_line = {f.line: f for f in fs}
    assert by_line[7].api == "torch.zeros"
    assert "line 5" in by_line[7].message and "lengths.max().item()" in by_line[7].message
    assert by_line[8].api == "torch.Tensor.view"
    assert by_line[9].api == "torch.Tensor.__getitem__"
    assert "set_compile_mode(jit_compile=False)" in by_line[7].replacement
    assert by_line[7].confidence == "high"


def test_list_slicing_with_values_is_not_a_shape(tmp_path, kb):
    src = """\
    import torch

    def f(t: torch.Tensor, names):
        n = t.sum().item()
        items = [1, 2, 3]
        a = items[:n]
        b = names[:2]
        c = t[:2]
    """
    assert run(tmp_path, kb, src) == []


def test_collate_pad_to_longest(tmp_path, kb):
    src = """\
    import torch
    from torch.utils.data import DataLoader
    from torch.nn.utils.rnn import pad_sequence

    def my_batcher(batch):
        max_len = max(len(x) for x in batch)
        bsz = max(len(batch), 8)
        return torch.stack([torch.nn.functional.pad(x, (0, max_len - len(x))) for x in batch])

    def collate_tokens(values, pad_to_length=None):
        size = max(v.size(0) for v in values)
        size = size if pad_to_length is None else max(size, pad_to_length)
        return size

    loader = DataLoader(ds, collate_fn=my_batcher)
    padded = pad_sequence(seqs, batch_first=True)

    def longest(xs):
        return max(len(x) for x in xs)
    """
    fs = run(tmp_path, kb, src)
    assert codes_by_line(fs) == {6: ["NPU604"], 11: ["NPU604"], 16: ["NPU604"]}
    by_line = {f.line: f for f in fs}
    assert "bucket" in by_line[6].replacement and "fixed max length" in by_line[6].replacement
    assert "my_batcher" in by_line[6].message
    assert by_line[16].api == "torch.nn.utils.rnn.pad_sequence"
    assert all(f.severity == "advice" for f in fs)


def test_tokenizer_padding_and_packed(tmp_path, kb):
    src = """\
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence

    enc = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    ok = tokenizer(texts, padding="max_length", max_length=128, return_tensors="pt")
    bucketed = tokenizer(texts, padding=True, pad_to_multiple_of=64, return_tensors="pt")
    packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True)
    """
    fs = run(tmp_path, kb, src)
    assert codes_by_line(fs) == {4: ["NPU604"], 7: ["NPU605"]}
    by_line = {f.line: f for f in fs}
    assert "max_length" in by_line[4].replacement
    assert by_line[7].api == "torch.nn.utils.rnn.pack_padded_sequence"


def test_graph_mode_makes_sync_findings_manual(tmp_path, kb):
    src = """\
    import torch

    def f(x: torch.Tensor):
        return x[x > 0].nonzero()

    g = torch.compile(f)
    """
    fs = run(tmp_path, kb, src)
    assert sorted(f.code for f in fs) == ["NPU601", "NPU602"]
    assert all(f.severity == "manual" and "graph mode" in f.message for f in fs)


def test_unknown_receivers_medium_confidence(tmp_path, kb):
    src = """\
    import torch

    def strip_pad(tensor, pad):
        return tensor[tensor.ne(pad)]

    def g(mask, emb):
        return emb.masked_select(mask)

    def h(a):
        return a.nonzero()
    """
    fs = run(tmp_path, kb, src)
    # a.nonzero(): numpy arrays have .nonzero() too, but this module uses torch and not numpy/pandas
    assert codes_by_line(fs) == {4: ["NPU602"], 7: ["NPU601"], 10: ["NPU601"]}
    assert all(f.confidence == "medium" for f in fs)


def test_rules_documented():
    p = DynamicShapePass()
    assert [r.code for r in p.rules] == ["NPU601", "NPU602", "NPU603", "NPU604", "NPU605"]
    for r in p.rules:
        assert r.category == "dynamic-shape" and r.severity == "advice"
        assert "manual" in r.why or r.code in ("NPU604", "NPU605")
