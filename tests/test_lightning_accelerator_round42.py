"""Script mode: a Lightning Trainer that asks for the GPU accelerator (stop 42, data/implicit_gpu_libs.yaml).

``Trainer(accelerator="gpu")`` / ``accelerator="cuda"`` / ``gpus=N`` (Lightning 1.x) makes Lightning pick its CUDA
(or MPS) accelerator; it has none for an Ascend NPU, so the program needs a small NPU accelerator passed instead: a
manual change (NPU470, the call-argument rows of the Lightning Trainer), and the program's effort is at least low
with the accelerator argument as its driver (it was ``none``).

VALID: ``accelerator="cpu"``, ``gpus=0``, an option whose default asks for no GPU, and another class's
``accelerator`` keyword give no counted finding.
"""

from __future__ import annotations

from analyse.modes import run_script
from helpers import write_files

MODEL = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)
"""


def _program(body: str, imports: str = "import pytorch_lightning as pl") -> dict:
    return {
        "model.py": MODEL,
        "train.py": f"""
            import argparse
            {imports}
            from model import Net


            class Lit(pl.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.net = Net()

                def training_step(self, batch, idx):
                    return self.net(batch).sum()


            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--accelerator", default="cpu")
                args = parser.parse_args()
                {body}
                trainer.fit(Lit())


            if __name__ == "__main__":
                main()
        """,
    }


def _run(tmp_path, kb, body, **kw):
    write_files(tmp_path, _program(body, **kw))
    return run_script([tmp_path], kb)


def _ours(rep):
    return [f for f in rep["findings"] if f["code"] == "NPU470"]


def test_a_gpu_accelerator_is_a_manual_change(tmp_path, kb):
    rep = _run(tmp_path, kb, 'trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="auto")')
    (f,) = _ours(rep)
    assert (f["path"], f["line"], f["api"], f["severity"], f["counted"]) == (
        "train.py", 20, "accelerator='gpu'", "manual", True)
    assert "NPU accelerator" in f["replacement"]
    v = rep["summary"]["verdict"]
    assert v["effort"] in ("low", "medium")
    assert v["drivers"][0]["api"] == "accelerator='gpu'"


def test_cuda_and_the_old_gpus_count_on_both_package_names(tmp_path, kb):
    rep = _run(tmp_path, kb, 'trainer = L.Trainer(accelerator="cuda", devices=1)', imports="import lightning as L\n"
               "            import lightning.pytorch as pl")
    assert [(f["api"], f["counted"]) for f in _ours(rep)] == [("accelerator='cuda'", True)]
    rep = _run(tmp_path / "old", kb, "trainer = pl.Trainer(gpus=1, precision=32)")
    assert [(f["api"], f["counted"]) for f in _ours(rep)] == [("gpus=1", True)]


def test_no_gpu_asked_no_finding(tmp_path, kb):
    for i, body in enumerate(('trainer = pl.Trainer(accelerator="cpu", devices=1)',
                              "trainer = pl.Trainer(gpus=0)",
                              "trainer = pl.Trainer(accelerator=args.accelerator)")):
        rep = _run(tmp_path / str(i), kb, body)
        assert not [f for f in _ours(rep) if f["counted"]], body
        assert rep["summary"]["verdict"]["effort"] == "none", body
    # another library's `accelerator` keyword is not Lightning's
    rep = _run(tmp_path / "other", kb, 'trainer = pl.Trainer(); acc = dict(accelerator="gpu")')
    assert not _ours(rep)
