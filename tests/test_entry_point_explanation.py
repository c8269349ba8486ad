"""Each entry point's verdict explains itself in words (``verdict.explanation``): what it counts by severity, the
advice it reaches that needs no change, and the CUDA changes it may reach that set no grade, with the reason. A
'none' program that reaches an advice-only ``autocast('cuda', enabled=False)`` or an off-by-default ``.cuda()``
says so instead of staying silent. VALID/INVALID fixtures written for this shape; no project code copied."""

from analyse.modes import run_script
from helpers import write_files


def _ep(rep, path):
    rows = [e for e in rep["summary"]["entry_points"] if e["path"] == path]
    assert rows, [e["path"] for e in rep["summary"]["entry_points"]]
    return rows[0]["verdict"]


_FILES = {
    "sampler.py": """
        import torch
        from torch.amp import autocast


        class Sampler(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            @autocast('cuda', enabled=False)
            def forward(self, x):
                return self.fc(x.float())
    """,
    "sample.py": """
        import argparse
        import torch
        from sampler import Sampler

        parser = argparse.ArgumentParser()
        parser.add_argument("--gpu", action="store_true")
        args = parser.parse_args()

        if __name__ == "__main__":
            net = Sampler()
            x = torch.randn(2, 4)
            if args.gpu:
                net = net.cuda()
                x = x.cuda()
            print(net(x))
    """,
    "plain.py": """
        import torch

        if __name__ == "__main__":
            print(torch.nn.Linear(4, 4)(torch.randn(2, 4)))
    """,
    "train.py": """
        import torch

        if __name__ == "__main__":
            model = torch.nn.Linear(4, 4).cuda()
            torch.cuda.synchronize()
            print(model(torch.randn(2, 4, device="cuda")))
    """,
}


def test_none_program_names_the_advice_and_the_off_by_default_uses(tmp_path, kb):
    rep = run_script([write_files(tmp_path, _FILES)], kb)
    v = _ep(rep, "sample.py")
    assert v["effort"] == "none"
    text = v["explanation"]
    assert text.startswith("NONE: nothing this program reaches needs changing")
    assert "autocast" in text                                   # the advice it reaches, named
    assert "Not counted, off with the defaults" in text and "torch.Tensor.cuda" in text   # --gpu is off by default


def test_counted_changes_are_listed_by_severity(tmp_path, kb):
    rep = run_script([write_files(tmp_path, _FILES)], kb)
    v = _ep(rep, "train.py")
    assert v["effort"] == "low"
    assert "rewritten by transfer_to_npu:" in v["explanation"]
    assert "torch.cuda.synchronize" in v["explanation"] and "device:cuda" in v["explanation"]
    assert "Not counted" not in v["explanation"]


def test_plain_program_names_nothing(tmp_path, kb):
    rep = run_script([write_files(tmp_path, _FILES)], kb)
    v = _ep(rep, "plain.py")
    assert v["effort"] == "none"
    text = v["explanation"]
    assert text == "NONE: nothing this program reaches needs changing for an Ascend NPU."

