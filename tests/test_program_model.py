"""The program model (#29): what a program runs.

A program runs its own module-level code and its ``if __name__ == "__main__":`` block; of each module it
imports, only that module's module-level code -- never the imported module's main block. Each fixture is a
small project of the shape met in real code (yolov5's export.py imported by train.py; a CLI package that imports
a test script whose main block drives a GPU-only library), with the VALID (counted) and INVALID (not reached)
expectation asserted on concrete findings.
"""

import textwrap

from analyse.modes import run_script


def _write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


EXPORT_SHAPE = {
    "export.py": """
        import argparse
        import torch

        def export_onnx(model, path):
            torch.onnx.export(model, torch.zeros(1, 3), path)

        def export_engine(model, path):
            import tensorrt as trt
            builder = trt.Builder(trt.Logger())
            return builder

        def run(weights, include=("onnx",)):
            model = torch.load(weights, map_location="cpu")
            if "onnx" in include:
                export_onnx(model, "m.onnx")

        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--weights", default="m.pt")
            a = p.parse_args()
            run(a.weights)
            export_engine(None, "m.engine")

        if __name__ == "__main__":
            main()
    """,
    "train.py": """
        import torch
        import export

        def train():
            model = torch.nn.Linear(3, 3).cuda()
            model(torch.ones(3).cuda()).sum().backward()
            export.run("last.pt")

        if __name__ == "__main__":
            train()
    """,
}


def _findings_on(report, api_part):
    return [f for f in report["findings"] if api_part in f["api"]]


def test_an_imported_modules_main_block_does_not_run(tmp_path, kb):
    _write(tmp_path, EXPORT_SHAPE)
    rep = run_script([tmp_path], kb)
    trt = _findings_on(rep, "tensorrt")
    assert trt, "the TensorRT use is found"
    for f in trt:
        # VALID: export.py's own main block reaches export_engine
        assert "export.py" in (f["reach"].get("entry_points") or []) or f["reach"]["status"] == "entry-point"
        # INVALID: train.py imports export, which runs export's module-level code only
        assert "train.py" not in (f["reach"].get("entry_points") or [])
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    assert not any("tensorrt" in d["api"] for d in rows["train.py"]["verdict"].get("drivers", []))


CLI_SHAPE = {
    "tool/__init__.py": "",
    "tool/cli.py": """
        import argparse
        from tool.commands import test as test_cmd

        def main():
            p = argparse.ArgumentParser()
            p.add_argument("cmd", default="env")
            return p.parse_args()

        if __name__ == "__main__":
            main()
    """,
    "tool/commands/__init__.py": "",
    "tool/commands/test.py": """
        from tool.scripts import check_script

        def test_command():
            return check_script.__file__
    """,
    "tool/scripts/__init__.py": "",
    "tool/scripts/check_script.py": """
        import torch

        def main():
            import transformer_engine.pytorch as te
            layer = te.Linear(8, 8)
            return layer

        if __name__ == "__main__":
            main()
    """,
}


def test_a_cli_that_imports_a_test_script_is_not_driven_by_its_main_block(tmp_path, kb):
    _write(tmp_path, CLI_SHAPE)
    rep = run_script([tmp_path], kb)
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    cli = rows["tool/cli.py"]
    assert not any("transformer_engine" in d["api"] for d in cli["verdict"].get("drivers", []))
    assert cli["verdict"]["effort"] in ("none", "low")
    te = [f for f in rep["findings"] if f["api"].startswith("transformer_engine")]
    assert te and all("tool/cli.py" not in (f["reach"].get("entry_points") or []) for f in te)


REGISTRY_SHAPE = {
    "models/__init__.py": "",
    "models/layers.py": """
        import torch
        from flash_attn import flash_attn_func

        class FlashBlock(torch.nn.Module):
            def forward(self, q, k, v):
                return flash_attn_func(q, k, v)

        class PlainBlock(torch.nn.Module):
            def forward(self, q, k, v):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    """,
    "train.py": """
        import torch
        import models.layers as layers

        def main():
            block = {NAME}()
            q = torch.ones(1, 2, 4, 8).cuda()
            block(q, q, q)

        if __name__ == "__main__":
            main()
    """,
}


def test_code_reached_only_through_unresolved_dispatch_is_listed_not_counted(tmp_path, kb):
    # INVALID: the flash-attn class is defined in imported code but nothing names it (a registry or config may
    # build it): listed with the reason unresolved-dispatch, not counted
    files = dict(REGISTRY_SHAPE, **{"train.py": REGISTRY_SHAPE["train.py"].replace("{NAME}", "layers.PlainBlock")})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (fa,) = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["line"] == 7]
    assert fa["reach"]["status"] == "unknown"
    assert fa["counted"] is False and fa["off_path"]["reason"] == "unresolved-dispatch"
    assert rep["summary"]["off_path"]["by_reason"].get("unresolved-dispatch", 0) >= 1
    assert rep["summary"]["verdict"]["effort"] in ("none", "low")


def test_code_a_program_names_is_counted(tmp_path, kb):
    # VALID: the program builds the flash-attn class by name: reached and counted
    files = dict(REGISTRY_SHAPE, **{"train.py": REGISTRY_SHAPE["train.py"].replace("{NAME}", "layers.FlashBlock")})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (fa,) = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["line"] == 7]
    assert fa["reach"]["status"] == "reachable" and fa["counted"] is True
    assert any(d["api"].startswith("flash_attn") for d in rep["summary"]["verdict"]["drivers"])


# ---------------------------------------------------------------------------------------------- discovery

def test_a_package_named_like_a_build_folder_is_analysed_a_build_folder_is_not(tmp_path, kb):
    from analyse.modes import run_thirdparty

    _write(tmp_path / "mylib", {
        "__init__.py": "",
        # VALID: a `dist` sub-package the library imports (torch.distributed helpers): analysed
        "dist/__init__.py": "",
        "dist/comm.py": """
            import torch

            def barrier():
                torch.cuda.synchronize()
        """,
        "train.py": """
            from mylib.dist.comm import barrier

            def step():
                barrier()
        """,
        # INVALID: a build output (no __init__.py, a copy of the sources) is skipped
        "build/lib/mylib/ops.py": """
            import torch

            def f():
                torch.cuda.synchronize()
        """,
    })
    report = run_thirdparty([tmp_path / "mylib"], kb)
    paths = {f["path"] for f in report["findings"]}
    assert "dist/comm.py" in paths
    assert not any(p.startswith("build/") for p in paths)


# ---------------------------------------------------------------------------------------------- dispatch

CLASSMETHOD_SHAPE = {
    "models/__init__.py": "",
    "models/base.py": """
        import torch

        class Base(torch.nn.Module):
            @classmethod
            def from_pretrained(cls, path):
                model = cls()
                model.load_state_dict(torch.load(path, map_location="cpu"))
                return model

            @classmethod
            def default_config(cls):
                return {"dim": 8}
    """,
    "models/net.py": """
        from flash_attn import flash_attn_func
        from models.base import Base

        class Net(Base):
            def forward(self, q, k, v):
                return flash_attn_func(q, k, v)
    """,
    "train.py": """
        import torch
        from models.net import Net

        def main():
            q = torch.ones(1, 2, 4, 8)
            {CALL}
            return q

        if __name__ == "__main__":
            main()
    """,
}


def _fa(rep, line=7):
    (fa,) = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["line"] == line]
    return fa


def test_a_classmethod_that_builds_cls_makes_the_class_it_is_called_on_live(tmp_path, kb):
    # VALID: Net.from_pretrained (inherited) returns cls(...): a Net is built, its forward runs
    files = dict(CLASSMETHOD_SHAPE, **{"train.py": CLASSMETHOD_SHAPE["train.py"].replace(
        "{CALL}", 'model = Net.from_pretrained("w.pt")\n            model(q, q, q)')})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    fa = _fa(rep)
    assert fa["reach"]["status"] == "reachable" and fa["counted"] is True
    assert "models.net.Net" in fa["reach"]["path"]


def test_a_classmethod_that_builds_nothing_does_not(tmp_path, kb):
    # INVALID: Net.default_config() returns a dict: no Net is built, its forward is not reached
    files = dict(CLASSMETHOD_SHAPE, **{"train.py": CLASSMETHOD_SHAPE["train.py"].replace(
        "{CALL}", "cfg = Net.default_config()")})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    fa = _fa(rep)
    assert fa["reach"]["status"] != "reachable" and fa["counted"] is False
