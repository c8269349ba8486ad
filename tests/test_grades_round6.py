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
