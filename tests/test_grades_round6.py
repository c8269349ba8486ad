"""Grades an Ascend engineer would sign (#30 / #31 knowledge), VALID/INVALID fixtures of shapes met on real projects."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _verdict(rep):
    return rep["summary"]["verdict"]["effort"]


# ---------------------------------------------------------------- DeepSpeed's NPU accelerator set-up (#31 knowledge)

DEEPSPEED_TRAIN = {
    "main.py": """
        import argparse
        import torch
        import deepspeed
        from deepspeed.ops.adam import FusedAdam
        from deepspeed import get_accelerator


        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--local_rank", type=int, default=-1)
            args = parser.parse_args()
            get_accelerator().set_device(args.local_rank)
            deepspeed.init_distributed()
            model = torch.nn.Linear(4, 4)
            opt = FusedAdam(model.parameters(), lr=1e-3)
            model, opt, _, _ = deepspeed.initialize(model=model, optimizer=opt, args=args)


        if __name__ == "__main__":
            main()
    """,
}


def test_deepspeed_training_needs_its_npu_accelerator(tmp_path, kb):
    # INVALID (old: none, no driver): a DeepSpeed program runs on Ascend through DeepSpeed's NPU accelerator, picked
    # at run time: low, driven by the DeepSpeed calls (knowledge entry deepspeed-npu-accelerator)
    write_files(tmp_path, DEEPSPEED_TRAIN)
    rep = run_script([tmp_path], kb)
    init = _by(rep, "deepspeed.initialize")
    assert init and all(f["severity"] == "auto" and f["counted"] for f in init), init
    (acc,) = [f for f in rep["findings"] if f["api"] == "deepspeed.get_accelerator" and f["line"] == 13]
    assert acc["severity"] == "auto" and "NPU accelerator" in acc["message"]
    assert _verdict(rep) == "low"
    drivers = [d["api"] for d in rep["summary"]["verdict"]["drivers"]]
    assert any(d.startswith("deepspeed") for d in drivers), drivers


def test_deepspeed_ops_without_an_npu_builder_stay_manual(tmp_path, kb):
    # VALID: an op with no NPU builder is still the manual replacement it was (the accelerator entry does not cover it)
    files = {"main.py": DEEPSPEED_TRAIN["main.py"].replace(
        "from deepspeed import get_accelerator",
        "from deepspeed import get_accelerator\n        from deepspeed.ops.sparse_attention import SparseSelfAttention").replace(
        "model = torch.nn.Linear(4, 4)", "model = torch.nn.Linear(4, 4)\n            SparseSelfAttention()")}
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    sparse = [f for f in rep["findings"] if f["api"].startswith("deepspeed.ops.sparse_attention")]
    assert sparse and all(f["severity"] == "manual" for f in sparse)
    assert _verdict(rep) == "medium"


# ---------------------------------------------------------------- PyG's ToSparseTensor: torch_sparse on every forward

GNN = {
    "gnn.py": """
        import torch
        import torch.nn.functional as F
        import torch_geometric.transforms as T
        from torch_geometric.nn import GCNConv
        from torch_geometric.datasets import Planetoid


        class GCN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = GCNConv(8, 4)

            def forward(self, x, adj_t):
                return F.log_softmax(self.conv(x, adj_t), dim=-1)


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            dataset = Planetoid("data", "Cora", transform=T.ToSparseTensor())
            data = dataset[0].to(device)
            model = GCN().to(device)
            out = model(data.x, data.adj_t)


        if __name__ == "__main__":
            main()
    """,
}


def test_pyg_sparse_tensor_adjacency_is_a_gpu_library_use(tmp_path, kb):
    # INVALID (old: low, driven by device strings only): the transform makes the adjacency a torch_sparse
    # SparseTensor that every forward multiplies with: a documented edit (keep edge_index), at least medium
    write_files(tmp_path, GNN)
    rep = run_script([tmp_path], kb)
    (f,) = [f for f in rep["findings"] if f["code"] == "NPU471"]
    assert f["line"] == 20 and f["severity"] == "manual" and f["counted"]
    assert "torch_sparse" in f["message"] and "edge_index" in f["replacement"]
    assert _verdict(rep) == "medium"


def test_pyg_without_the_sparse_transform_stays_low(tmp_path, kb):
    # VALID: the same program on edge_index has no torch_sparse use
    files = {"gnn.py": GNN["gnn.py"].replace(', transform=T.ToSparseTensor()', '').replace("data.adj_t", "data.edge_index")}
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    assert not [f for f in rep["findings"] if f["code"] == "NPU471"]
    assert _verdict(rep) == "low"


# ---------------------------------------------------------------- callers' arguments into callees (#30 point 4)

CALLERS = {
    "blocks.py": """
        import torch


        def _fused(x):
            return torch.cuda.FloatTensor(3)


        class Block(torch.nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim

            def forward(self, x, use_kernel: bool = False):
                if use_kernel:
                    return _fused(x)
                return x


        class Base(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(8)


        class Stack(Base):
            def forward(self, x, use_lma: bool = False):
                return self.block(x, use_kernel=not use_lma)


        def step(x, fused=False):
            if fused:
                x = torch.cuda.IntTensor(3)
            return x
    """,
    "main.py": """
        import torch
        from blocks import Stack, step

        if __name__ == "__main__":
            x = torch.ones(3)
            Stack()(x)
            step(x, fused=True)
    """,
}


def test_a_reached_callers_argument_turns_a_flag_guard_on(tmp_path, kb):
    # INVALID (old: both off by the callee's default False): Stack.forward passes `not use_lma` (True with its
    # default) to Block.forward through an attribute set in its base class, and main passes fused=True to step():
    # the guarded code runs, and the guard text names the call that turns it on
    write_files(tmp_path, CALLERS)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.FloatTensor")
    assert f["guard"]["on_path"]["transfer_to_npu"] == "on" and f["counted"] is True, f["guard"]
    assert "use_kernel=True from the call at blocks.py:28" in f["guard"]["condition"]
    (g,) = _by(rep, "torch.cuda.IntTensor")
    assert g["guard"]["on_path"]["transfer_to_npu"] == "on" and g["counted"] is True, g["guard"]
    assert "fused=True from the call at main.py:8" in g["guard"]["condition"]


def test_callers_that_keep_the_default_leave_the_guard_off(tmp_path, kb):
    # VALID: callers that pass the default (or False), and a caller no entry point reaches, leave the guards off
    files = dict(CALLERS)
    files["blocks.py"] = CALLERS["blocks.py"].replace("use_kernel=not use_lma", "use_kernel=use_lma")
    files["main.py"] = CALLERS["main.py"].replace("step(x, fused=True)", "step(x, fused=False)\n            step(x)")
    files["unused.py"] = """
        from blocks import step

        def never_called(x):
            return step(x, fused=True)
    """
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    for api in ("torch.cuda.FloatTensor", "torch.cuda.IntTensor"):
        (f,) = _by(rep, api)
        assert f["guard"]["on_path"]["transfer_to_npu"] == "off" and f["counted"] is False, (api, f["guard"])


def test_an_edit_to_the_caller_is_seen_through_the_cache(tmp_path, kb, count_parses):
    # the callers' values are per-module facts read by the reach walk of each run: with the cache on, an edit to the
    # caller alone flips the callee's guard and parses only the caller again
    from analyse import pipeline

    root = tmp_path / "p"
    write_files(root, CALLERS)
    settings = pipeline.Settings(jobs=1, cache_dir=tmp_path / "c")
    first = run_script([root], kb, settings=settings)
    assert _by(first, "torch.cuda.IntTensor")[0]["counted"] is True
    parsed = count_parses
    parsed.clear()
    (root / "main.py").write_text((root / "main.py").read_text().replace("fused=True", "fused=False"))
    again = run_script([root], kb, settings=settings)
    assert parsed == ["main.py"]
    (g,) = _by(again, "torch.cuda.IntTensor")
    assert g["guard"]["on_path"]["transfer_to_npu"] == "off" and g["counted"] is False
    # the cached callee still sees the other caller's argument
    assert _by(again, "torch.cuda.FloatTensor")[0]["counted"] is True
