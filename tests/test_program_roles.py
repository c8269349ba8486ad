"""Roles of programs from what they do (#20 point 6): a training program is product under tools/ or
scripts/ (detectron2 tools/train_net.py, mmdetection tools/train.py); a library module with a self-test
``__main__`` block (detectron2 data/datasets/coco.py, utils/colormap.py) is a test entry point; folder and
file names stay hints and the configuration overrides both."""

import textwrap

from analyse.modes import run_script
from analyse.roles import program_role

PROJECT = {
    "detlib/__init__.py": "",
    "detlib/modeling.py": """
        import torch

        def build_model(cfg):
            return torch.nn.Linear(4, 4).cuda()
    """,
    "detlib/data/__init__.py": "from .coco import load_coco_json\n",
    "detlib/data/coco.py": """
        import sys
        import json

        def load_coco_json(path):
            with open(path) as f:
                return json.load(f)

        if __name__ == "__main__":
            dicts = load_coco_json(sys.argv[1])
            print(len(dicts))
    """,
    "tools/train_net.py": """
        import torch
        from detlib.modeling import build_model

        class Trainer:
            def __init__(self, model):
                self.model = model

            def train(self):
                pass

        def main():
            trainer = Trainer(build_model(None))
            return trainer.train()

        if __name__ == "__main__":
            main()
    """,
    "scripts/train.py": """
        import torch
        from detlib.modeling import build_model

        def main():
            model = build_model(None)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = model(torch.ones(4)).sum()
            loss.backward()
            optimizer.step()

        if __name__ == "__main__":
            main()
    """,
    "tools/visualize_data.py": """
        from detlib.data import load_coco_json

        if __name__ == "__main__":
            print(load_coco_json("x.json"))
    """,
    "tools/benchmark.py": """
        from detlib.modeling import build_model

        def bench():
            build_model(None).train()

        if __name__ == "__main__":
            bench()
    """,
}


def _write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _roles(report):
    return {e["path"]: e["role"] for e in report["summary"]["entry_points"]}


def test_roles_from_what_programs_do(tmp_path, kb):
    _write(tmp_path, PROJECT)
    rep = run_script([tmp_path], kb)
    roles = _roles(rep)
    assert roles["tools/train_net.py"] == "product"
    assert roles["scripts/train.py"] == "product"
    assert roles["detlib/data/coco.py"] == "test"          # self-test block of a library module
    assert roles["tools/visualize_data.py"] == "tool"       # does not train: the folder hint stands
    assert roles["tools/benchmark.py"] == "tool"            # named as a benchmark
    # the verdict is over the training programs, which reach the CUDA call in detlib/modeling.py
    v = rep["summary"]["verdict"]
    assert "tools/train_net.py" in v["explanation"] or "scripts/train.py" in v["explanation"]
    assert "detlib/data/coco.py" not in v["explanation"]


def test_configuration_overrides_program_roles(tmp_path, kb):
    _write(tmp_path, PROJECT)
    rep = run_script([tmp_path], kb, roles={"tools/train_net.py": "tool", "detlib/data/coco.py": "product"})
    roles = _roles(rep)
    assert roles["tools/train_net.py"] == "tool"
    assert roles["detlib/data/coco.py"] == "product"
    assert roles["scripts/train.py"] == "product"


def test_program_role_rules():
    assert program_role("tools/train.py", trains=True) == "product"
    assert program_role("tools/train.py") == "tool"
    assert program_role("tools/export_model.py", trains=True) == "tool"
    assert program_role("tests/train_test.py", trains=True) == "test"
    assert program_role("examples/mnist/main.py", trains=True) == "example"
    assert program_role("pkg/data/coco.py", self_test=True) == "test"
    assert program_role("pkg/data/coco.py", {"pkg/**": "product"}, self_test=True) == "product"


def test_imported_top_level_script_is_not_a_self_test(tmp_path, kb):
    # yolov5 shape: train.py imports val.py (a top-level program, not a package module); val.py stays product
    _write(tmp_path, {
        "val.py": """
            import torch

            def run(model):
                return model(torch.ones(2))

            if __name__ == "__main__":
                run(torch.nn.Identity())
        """,
        "train.py": """
            import torch
            import val

            if __name__ == "__main__":
                m = torch.nn.Linear(2, 2)
                m(torch.ones(2)).sum().backward()
                val.run(m)
        """,
    })
    roles = _roles(run_script([tmp_path], kb))
    assert roles == {"train.py": "product", "val.py": "product"}


def test_module_with_a_console_script_is_a_program_not_a_self_test(tmp_path, kb):
    # openai/whisper shape: whisper/transcribe.py is imported by whisper/__init__.py, has a __main__ block
    # and is the target of the `whisper` console script
    _write(tmp_path, {
        "pyproject.toml": '[project]\nname = "talk"\n[project.scripts]\ntalk = "talk.transcribe:cli"\n',
        "talk/__init__.py": "from .transcribe import transcribe\n",
        "talk/transcribe.py": """
            import sys
            import torch

            def transcribe(x):
                return torch.ones(2).cuda() + x

            def cli():
                transcribe(sys.argv[1])

            if __name__ == "__main__":
                cli()
        """,
    })
    rep = run_script([tmp_path], kb)
    assert {(e["path"], e["reason"], e["role"]) for e in rep["summary"]["entry_points"]} == {
        ("talk/transcribe.py", "console-script", "product"), ("talk/transcribe.py", "main-guard", "product")}


def test_package_module_with_a_command_line_is_a_program(tmp_path, kb):
    # deepspeed/utils/zero_to_fp32.py shape: imported by the package, argparse in its __main__ block
    _write(tmp_path, {
        "speedlib/__init__.py": "from .utils import convert\n",
        "speedlib/utils/__init__.py": "from .zero_to_fp32 import convert\n",
        "speedlib/utils/zero_to_fp32.py": """
            import argparse
            import torch

            def convert(path):
                return torch.load(path)

            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("checkpoint_dir")
                convert(parser.parse_args().checkpoint_dir)
        """,
        "speedlib/utils/colormap.py": """
            import numpy as np
            from .zero_to_fp32 import convert

            COLORS = np.array([0.0, 0.5, 1.0])

            def colormap():
                return COLORS

            if __name__ == "__main__":
                print(colormap())
        """,
        "speedlib/vis.py": "from .utils.colormap import colormap\n",
    })
    roles = _roles(run_script([tmp_path], kb))
    assert roles == {"speedlib/utils/zero_to_fp32.py": "product", "speedlib/utils/colormap.py": "test"}


def test_a_test_py_with_no_command_line_is_a_self_check(tmp_path, kb):
    # a plug-in's kernel check next to its build script (python test.py by its author, gradient checks that call
    # backward()), beside an evaluation program tools/test.py with a command line, and a documented root test.py
    _write(tmp_path, {
        "plugin/ops/setup.py": "from setuptools import setup\nsetup(name='ops')\n",
        "plugin/ops/kernel.py": """
            import torch

            def op(x):
                return x.cuda() * 2
        """,
        "plugin/ops/test.py": """
            import torch
            from kernel import op

            def check_backward():
                x = torch.ones(3, requires_grad=True)
                op(x).sum().backward()

            if __name__ == "__main__":
                check_backward()
        """,
        "tools/test.py": """
            import argparse
            import torch

            def main():
                p = argparse.ArgumentParser()
                p.add_argument("--ckpt", default="m.pt")
                return torch.load(p.parse_args().ckpt, map_location="cpu")

            if __name__ == "__main__":
                main()
        """,
        "eval/test.py": """
            import torch

            if __name__ == "__main__":
                print(torch.load("m.pt", map_location="cuda"))
        """,
        "README.md": "Evaluate with `python eval/test.py`.\n",
    })
    rep = run_script([tmp_path], kb)
    eps = {e["path"]: e for e in rep["summary"]["entry_points"]}
    # INVALID: the kernel check is no product program, so it does not drive the project
    assert eps["plugin/ops/test.py"]["role"] == "test"
    assert "self-check" in eps["plugin/ops/test.py"]["role_evidence"]
    assert "plugin/ops/test.py" not in rep["summary"]["verdict"]["explanation"]
    # VALID: a test.py with a command line, or one the README runs, stays a program users run
    assert eps["tools/test.py"]["role"] == "tool"   # its folder's role, not a test
    assert eps["eval/test.py"]["role"] == "product" and "README.md" in eps["eval/test.py"]["role_evidence"]
