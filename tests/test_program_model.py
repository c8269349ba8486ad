"""The program model (#29): what a program runs.

A program runs its own module-level code and its ``if __name__ == "__main__":`` block; of each module it
imports, only that module's module-level code -- never the imported module's main block. Each fixture is a
small project of the shape met in real code (yolov5's export.py imported by train.py; a CLI package that imports
a test script whose main block drives a GPU-only library), with the VALID (counted) and INVALID (not reached)
expectation asserted on concrete findings.
"""

from analyse.modes import run_script
from helpers import write_files


def _write(root, files):
    write_files(root, files)


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
    # the call is not counted; the unguarded module-level `from flash_attn import ...` still fails on an Ascend host
    # when train.py imports the module: a GPU-only library on the default path, medium (#30)
    assert rep["summary"]["verdict"]["effort"] == "medium"
    assert not any(d["api"].endswith("flash_attn_func") and d.get("where", "").endswith(":7")
                   for d in rep["summary"]["verdict"]["drivers"])


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


# the commands of a CLI: one uses flash-attn (finetune), one does not (download)
COMMANDS_SHAPE = {
    "tool/__init__.py": "",
    "tool/finetune.py": """
        import torch
        from flash_attn import flash_attn_func

        def setup(steps=10):
            q = torch.ones(1, 2, 4, 8)
            return flash_attn_func(q, q, q)
    """,
    "tool/download.py": """
        import torch

        def download(repo="x"):
            return torch.hub.load_state_dict_from_url(repo, map_location="cpu")

        def mirror(repo="x"):
            import apex
            return apex.amp.initialize(repo)
    """,
    "tool/__main__.py": """
        import argparse
        from tool.finetune import setup as finetune_fn
        from tool.download import download as download_fn, mirror as mirror_fn

        COMMANDS = {"finetune": finetune_fn, "download": download_fn, "mirror": mirror_fn}

        def main():
            {BODY}

        if __name__ == "__main__":
            main()
    """,
}


def _cli(tmp_path, kb, body):
    files = dict(COMMANDS_SHAPE, **{"tool/__main__.py": COMMANDS_SHAPE["tool/__main__.py"].replace("{BODY}", body)})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    # the calls inside the commands (not the module-level imports, which importing runs)
    by_api = {f["api"].split(".")[0]: f for f in rep["findings"]
              if (f["path"], f["line"]) in (("tool/finetune.py", 7), ("tool/download.py", 9), ("tool/download.py", 10))}
    assert set(by_api) == {"flash_attn", "apex"}
    return rep, by_api


def test_a_command_dict_handed_to_a_cli_reaches_every_command(tmp_path, kb):
    # VALID: CLI(COMMANDS) -- the CLI runs the command the user names: each one is a path of the program
    rep, f = _cli(tmp_path, kb, "from jsonargparse import CLI\n            CLI(COMMANDS)")
    assert f["flash_attn"]["reach"]["status"] == "reachable" and f["flash_attn"]["counted"] is True
    assert "tool/__main__.py" in f["flash_attn"]["reach"]["entry_points"]


def test_a_command_dict_indexed_by_a_literal_reaches_that_command_only(tmp_path, kb):
    # VALID: COMMANDS["finetune"]() runs setup; INVALID: the apex mirror command is not run
    rep, f = _cli(tmp_path, kb, 'COMMANDS["finetune"]()')
    assert f["flash_attn"]["reach"]["status"] == "reachable" and f["flash_attn"]["counted"] is True
    assert "tool.finetune.setup" in f["flash_attn"]["reach"]["path"]
    assert f["apex"]["reach"]["status"] == "unreached" and f["apex"]["counted"] is False


def test_a_command_dict_indexed_by_an_options_default(tmp_path, kb):
    # VALID: --cmd defaults to "finetune"; INVALID: mirror (another key) is not reached
    rep, f = _cli(tmp_path, kb, 'p = argparse.ArgumentParser()\n            p.add_argument("--cmd", default="finetune")\n'
                                '            args = p.parse_args()\n            COMMANDS[args.cmd]()')
    assert f["flash_attn"]["reach"]["status"] == "reachable" and f["flash_attn"]["counted"] is True
    assert f["apex"]["reach"]["status"] == "unreached"


def test_a_command_dict_indexed_by_an_unknown_key_is_listed_not_counted(tmp_path, kb):
    # INVALID: the key comes from the command line with no default: each command may run, none is sure
    rep, f = _cli(tmp_path, kb, 'import sys\n            COMMANDS[sys.argv[1]]()')
    for api in ("flash_attn", "apex"):
        assert f[api]["reach"]["status"] == "unknown", api
        assert f[api]["counted"] is False and f[api]["off_path"]["reason"] == "unresolved-dispatch"
    assert "COMMANDS" in f["apex"]["reach"]["reason"]


REGISTRY_DECORATOR_SHAPE = {
    "lib/__init__.py": "",
    "lib/registry.py": """
        MODELS = {}

        def register(name):
            def deco(cls):
                MODELS[name] = cls
                return cls
            return deco
    """,
    "lib/models.py": """
        import torch
        from lib.registry import register

        @register("plain")
        class Plain(torch.nn.Module):
            def forward(self, x):
                return x.cuda()

        @register("fused")
        class Fused(torch.nn.Module):
            def forward(self, x):
                import apex
                return apex.normalization.FusedLayerNorm(8)(x)
    """,
    "train.py": """
        import argparse
        import lib.models
        from lib.registry import MODELS

        def main():
            p = argparse.ArgumentParser()
            p.add_argument("--model", default="{DEFAULT}")
            args = p.parse_args()
            model = MODELS[args.model]()
            return model

        if __name__ == "__main__":
            main()
    """,
}


def _apex(rep):
    (f,) = [f for f in rep["findings"] if f["api"].startswith("apex") and "FusedLayerNorm" in f["api"]]
    return f


def test_a_decorator_registry_looked_up_by_the_default_key_reaches_that_entry_only(tmp_path, kb):
    # INVALID: --model defaults to "plain": the opt-in apex model is not run
    files = dict(REGISTRY_DECORATOR_SHAPE,
                 **{"train.py": REGISTRY_DECORATOR_SHAPE["train.py"].replace("{DEFAULT}", "plain")})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    f = _apex(rep)
    assert f["reach"]["status"] != "reachable" and f["counted"] is False
    (cuda,) = [x for x in rep["findings"] if x["path"] == "lib/models.py" and x["line"] == 8]
    assert cuda["reach"]["status"] == "reachable" and "lib.models.Plain" in cuda["reach"]["path"]


def test_a_decorator_registry_looked_up_by_a_key_that_names_the_entry(tmp_path, kb):
    # VALID: --model defaults to "fused": the apex model is built and counted
    files = dict(REGISTRY_DECORATOR_SHAPE,
                 **{"train.py": REGISTRY_DECORATOR_SHAPE["train.py"].replace("{DEFAULT}", "fused")})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    f = _apex(rep)
    assert f["reach"]["status"] == "reachable" and f["counted"] is True
    assert "lib.models.Fused" in f["reach"]["path"]


BUILD_SHAPE = {
    "lib/__init__.py": "",
    "lib/builder.py": """
        from mmengine.registry import Registry

        MODELS = Registry("models")
    """,
    "lib/heads.py": """
        import torch
        from lib.builder import MODELS

        @MODELS.register_module()
        class LinearHead(torch.nn.Module):
            def forward(self, x):
                return x.cuda()

        @MODELS.register_module(name="FusedHead")
        class FusedHeadImpl(torch.nn.Module):
            def forward(self, x):
                import apex
                return apex.normalization.FusedLayerNorm(8)(x)
    """,
    "train.py": """
        import lib.heads
        from lib.builder import MODELS

        def main():
            head = MODELS.build(dict(type="{TYPE}", in_channels=8))
            return head

        if __name__ == "__main__":
            main()
    """,
}


def test_a_registry_build_with_a_literal_type_builds_that_class(tmp_path, kb):
    # VALID: type="FusedHead" (the registered name) builds the apex head
    _write(tmp_path, dict(BUILD_SHAPE, **{"train.py": BUILD_SHAPE["train.py"].replace("{TYPE}", "FusedHead")}))
    f = _apex(run_script([tmp_path], kb))
    assert f["reach"]["status"] == "reachable" and f["counted"] is True


def test_a_registry_build_with_another_type_does_not(tmp_path, kb):
    # INVALID: type="LinearHead" (registered under its class name) builds the plain head only
    _write(tmp_path, dict(BUILD_SHAPE, **{"train.py": BUILD_SHAPE["train.py"].replace("{TYPE}", "LinearHead")}))
    rep = run_script([tmp_path], kb)
    f = _apex(rep)
    assert f["reach"]["status"] != "reachable" and f["counted"] is False
    (cuda,) = [x for x in rep["findings"] if x["path"] == "lib/heads.py" and x["line"] == 8]
    assert cuda["reach"]["status"] == "reachable"


IMPORTLIB_SHAPE = {
    "plugins/__init__.py": "",
    "plugins/fast.py": """
        import torch

        def run(x):
            import apex
            return apex.normalization.FusedLayerNorm(8)(x)
    """,
    "plugins/slow.py": """
        import torch

        def run(x):
            import apex
            return apex.normalization.FusedLayerNorm(8)(x)
    """,
    "main.py": """
        import importlib

        PLUGIN = "plugins.fast"

        def main():
            mod = importlib.import_module(PLUGIN)
            return mod.run(1)

        if __name__ == "__main__":
            main()
    """,
}


def test_import_module_over_a_known_name_imports_and_calls_it(tmp_path, kb):
    _write(tmp_path, IMPORTLIB_SHAPE)
    rep = run_script([tmp_path], kb)
    by_path = {f["path"]: f for f in rep["findings"] if "FusedLayerNorm" in f["api"]}
    # VALID: import_module("plugins.fast") then mod.run(...): reached through the call
    assert by_path["plugins/fast.py"]["reach"]["status"] == "reachable"
    assert "plugins.fast.run" in by_path["plugins/fast.py"]["reach"]["path"]
    # INVALID: plugins.slow is never imported
    assert by_path["plugins/slow.py"]["reach"]["status"] == "unreached"


SYS_PATH_SHAPE = {
    "models/yolo.py": """
        import torch
        from flash_attn import flash_attn_func

        class Model(torch.nn.Module):
            def forward(self, q):
                return flash_attn_func(q, q, q)
    """,
    "data/yolo.py": """
        import torch

        class Model(torch.nn.Module):
            def forward(self, q):
                return q
    """,
    "tools/train.py": """
        import os
        import sys
        from pathlib import Path
        {EDIT}
        import yolo

        def main():
            model = yolo.Model()
            return model(1)

        if __name__ == "__main__":
            main()
    """,
}


def _sys_path(tmp_path, kb, edit):
    _write(tmp_path, dict(SYS_PATH_SHAPE, **{"tools/train.py": SYS_PATH_SHAPE["tools/train.py"].replace("{EDIT}", edit)}))
    rep = run_script([tmp_path], kb)
    (fa,) = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["line"] == 7]
    return fa


def test_a_sys_path_edit_from_the_working_folder_finds_the_imported_module(tmp_path, kb):
    # VALID: sys.path gets <root>/models (run from the root): `import yolo` is models/yolo.py
    fa = _sys_path(tmp_path, kb, 'sys.path.append(os.path.join(os.getcwd(), "models"))')
    assert fa["reach"]["status"] == "reachable" and fa["counted"] is True
    assert "models.yolo.Model" in fa["reach"]["path"]


def test_a_sys_path_edit_from_the_files_folder_finds_the_imported_module(tmp_path, kb):
    # VALID: tools/../models, from __file__
    fa = _sys_path(tmp_path, kb, 'sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))')
    assert fa["reach"]["status"] == "reachable" and fa["counted"] is True


def test_a_sys_path_edit_adding_a_slashed_literal_to_a_folder_finds_the_imported_module(tmp_path, kb):
    # VALID (old: the "/models" literal read as an absolute path, the edit was dropped): <cwd> + "/models"
    fa = _sys_path(tmp_path, kb, 'sys.path.append(os.getcwd() + "/models")')
    assert fa["reach"]["status"] == "reachable" and fa["counted"] is True
    assert "models.yolo.Model" in fa["reach"]["path"]


def test_an_absolute_sys_path_literal_is_not_a_folder_of_the_tree(tmp_path, kb):
    # INVALID: "/models" alone is the host's /models, not <root>/models
    fa = _sys_path(tmp_path, kb, 'sys.path.append("/models")')
    assert fa["reach"]["status"] != "reachable" and fa["counted"] is False


def test_a_sys_path_edit_to_another_folder_does_not(tmp_path, kb):
    # INVALID: sys.path gets data/: `import yolo` is data/yolo.py, the flash-attn model is not run
    fa = _sys_path(tmp_path, kb, 'sys.path.append(os.path.join(os.path.dirname(__file__), "..", "data"))')
    assert fa["reach"]["status"] != "reachable" and fa["counted"] is False


def test_each_entry_point_says_how_many_calls_it_could_not_follow(tmp_path, kb):
    # the unknown key: one call the analysis cannot follow, with its expression
    rep, _f = _cli(tmp_path, kb, 'import sys\n            COMMANDS[sys.argv[1]]()')
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "tool/__main__.py"]
    assert row["unresolved_calls"] == 1
    assert row["unresolved"] == [{"path": "tool/__main__.py", "line": 10, "expression": "COMMANDS[sys.argv[1]]"}]


def test_a_followed_dispatch_is_not_counted_as_unresolved(tmp_path, kb):
    rep, _f = _cli(tmp_path, kb, 'p = argparse.ArgumentParser()\n            p.add_argument("--cmd", default="finetune")\n'
                                 '            args = p.parse_args()\n            COMMANDS[args.cmd]()')
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "tool/__main__.py"]
    assert row["unresolved_calls"] == 0 and row["unresolved"] == []


# ---------------------------------------------------------------------------------------------- single file

SINGLE_FILE_SHAPE = {
    "proj/model.py": """
        import torch
        from flash_attn import flash_attn_func
        from layers import Block

        class GPT(torch.nn.Module):
            def forward(self, q):
                return flash_attn_func(q, q, q)
    """,
    "proj/layers.py": """
        import torch

        class Block(torch.nn.Module):
            def forward(self, x):
                return x.cuda()
    """,
    "proj/unused.py": """
        import apex
    """,
    "proj/train.py": """
        import torch
        from model import GPT

        def main():
            model = GPT()
            return model(torch.ones(2))

        if __name__ == "__main__":
            main()
    """,
}


def test_a_single_file_input_analyses_the_local_modules_it_imports(tmp_path, kb):
    _write(tmp_path, SINGLE_FILE_SHAPE)
    rep = run_script([tmp_path / "proj" / "train.py"], kb)
    paths = {f["path"] for f in rep["findings"]}
    # VALID: model.py (imported by train.py) and layers.py (imported by model.py) are analysed and reached
    assert {"model.py", "layers.py"} <= paths
    (fa,) = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["line"] == 8]
    assert fa["path"] == "model.py" and fa["reach"]["status"] == "reachable" and fa["counted"] is True
    # INVALID: a module of the folder nobody imports is not part of the program
    assert "unused.py" not in paths
    assert rep["summary"]["complete"] is True


def test_a_single_file_input_whose_project_import_is_outside_its_folder_is_incomplete(tmp_path, kb):
    _write(tmp_path, {
        "setup.py": "",
        "models/__init__.py": "",
        "models/yolo.py": "import torch\n",
        "tools/train.py": """
            import torch
            from models.yolo import Model

            if __name__ == "__main__":
                Model()
        """,
    })
    rep = run_script([tmp_path / "tools" / "train.py"], kb)
    assert rep["summary"]["complete"] is False
    (err,) = [e for e in rep["errors"] if "models.yolo" in e["message"]]
    assert err["path"] == "train.py" and err["line"] == 3


# ---------------------------------------------------------------------------------------------- drivers

STATIC_SHAPE = {
    "net.py": """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return x.cuda()

            @staticmethod
            def count_flops(model):
                import apex
                return apex.amp.initialize(model)
    """,
    "train.py": """
        import torch
        from net import Net

        def main():
            model = Net()
            {MORE}
            return model(torch.ones(2))

        if __name__ == "__main__":
            main()
    """,
}


def _static(tmp_path, kb, more):
    _write(tmp_path, dict(STATIC_SHAPE, **{"train.py": STATIC_SHAPE["train.py"].replace("{MORE}", more)}))
    rep = run_script([tmp_path], kb)
    (ap,) = [f for f in rep["findings"] if f["api"].startswith("apex") and f["line"] == 10]
    return rep, ap


def test_building_an_instance_does_not_call_the_classs_static_methods(tmp_path, kb):
    # INVALID: Net() runs __init__ and (through the framework) forward, never count_flops
    rep, ap = _static(tmp_path, kb, "pass")
    assert ap["reach"]["status"] != "reachable" and ap["counted"] is False
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "train.py"]
    assert not any(d["api"].startswith("apex") for d in row["verdict"]["drivers"])


def test_a_static_method_the_program_calls_is_reached(tmp_path, kb):
    # VALID: Net.count_flops(model) names it
    rep, ap = _static(tmp_path, kb, "Net.count_flops(model)")
    assert ap["reach"]["status"] == "reachable" and ap["counted"] is True


# ---------------------------------------------------------------------------------------------- roles

ROLES_SHAPE = {
    "README.md": """
        # Fine-tuning

        Run:

            torchrun --nproc_per_node 8 scripts/finetune.py --lr 1e-4
            python -m demo.app
    """,
    "scripts/finetune.py": """
        import argparse

        if __name__ == "__main__":
            argparse.ArgumentParser().parse_args()
    """,
    "scripts/plot_curves.py": """
        import argparse

        if __name__ == "__main__":
            argparse.ArgumentParser().parse_args()
    """,
    "demo/__init__.py": "",
    "demo/app.py": """
        import argparse

        if __name__ == "__main__":
            argparse.ArgumentParser().parse_args()
    """,
    "test_accuracy.py": """
        import argparse

        def evaluate(path):
            return path

        if __name__ == "__main__":
            evaluate(argparse.ArgumentParser().parse_args())
    """,
    "test_units.py": """
        def test_one():
            assert 1

        if __name__ == "__main__":
            test_one()
    """,
}


def test_programs_get_roles_by_evidence(tmp_path, kb):
    _write(tmp_path, ROLES_SHAPE)
    rep = run_script([tmp_path], kb)
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    # VALID: the README launches them: product, with the line as evidence
    assert rows["scripts/finetune.py"]["role"] == "product"
    assert rows["scripts/finetune.py"]["role_evidence"].startswith("invoked by README.md:6: torchrun")
    assert rows["demo/app.py"]["role"] == "product" and "README.md:7" in rows["demo/app.py"]["role_evidence"]
    # an evaluation program named test_*.py (a command line, nothing a test runner collects)
    assert rows["test_accuracy.py"]["role"] == "product"
    # INVALID: nothing invokes the plotting script; a real test module stays a test
    assert rows["scripts/plot_curves.py"]["role"] == "tool"
    assert rows["scripts/plot_curves.py"]["role_evidence"] == "by its path (tool)"
    assert rows["test_units.py"]["role"] == "test"


HYDRA_SHAPE = {
    "conf/train.yaml": """
        defaults:
          - model: {MODEL}
          - _self_
        trainer:
          _target_: lib.trainer.Trainer
          max_steps: 10
    """,
    "conf/model/plain.yaml": """
        _target_: lib.models.Plain
        dim: 8
    """,
    "conf/model/fused.yaml": """
        _target_: lib.models.Fused
        dim: 8
    """,
    "lib/__init__.py": "",
    "lib/trainer.py": """
        import torch

        class Trainer:
            def fit(self, model):
                return model(torch.ones(2).cuda())
    """,
    "lib/models.py": """
        import torch

        class Plain(torch.nn.Module):
            def forward(self, x):
                return x

        class Fused(torch.nn.Module):
            def forward(self, x):
                import apex
                return apex.normalization.FusedLayerNorm(8)(x)
    """,
    "train.py": """
        import hydra
        from hydra.utils import instantiate

        @hydra.main(config_path="conf", config_name="train", version_base=None)
        def main(cfg):
            model = instantiate(cfg.model)
            trainer = instantiate(cfg.trainer)
            trainer.fit(model)

        if __name__ == "__main__":
            main()
    """,
}


def _hydra(tmp_path, kb, model):
    _write(tmp_path, dict(HYDRA_SHAPE, **{"conf/train.yaml": HYDRA_SHAPE["conf/train.yaml"].replace("{MODEL}", model)}))
    rep = run_script([tmp_path], kb)
    (ap,) = [f for f in rep["findings"] if f["api"].startswith("apex") and "FusedLayerNorm" in f["api"]]
    (cuda,) = [f for f in rep["findings"] if f["path"] == "lib/trainer.py" and f["line"] == 6]
    return ap, cuda


def test_hydra_targets_of_the_default_config_are_built(tmp_path, kb):
    # VALID: the default config composes model/fused.yaml: its _target_ is built, and the trainer's fit runs
    ap, cuda = _hydra(tmp_path, kb, "fused")
    assert ap["reach"]["status"] == "reachable" and ap["counted"] is True
    assert cuda["reach"]["status"] == "reachable" and "lib.trainer.Trainer" in cuda["reach"]["path"]


def test_hydra_targets_of_another_config_are_not(tmp_path, kb):
    # INVALID: the default is model/plain.yaml; fused.yaml is an opt-in override
    ap, _cuda = _hydra(tmp_path, kb, "plain")
    assert ap["reach"]["status"] != "reachable" and ap["counted"] is False


def test_a_config_loaded_by_name_builds_its_target(tmp_path, kb):
    # VALID: OmegaConf.load of a literal path, then instantiate_from_config(config.model): `target:` is built
    _write(tmp_path, {
        "configs/ldm.yaml": """
            model:
              target: lib.models.Fused
              params:
                dim: 8
        """,
        "lib/__init__.py": "",
        "lib/models.py": HYDRA_SHAPE["lib/models.py"],
        "sample.py": """
            import importlib
            from omegaconf import OmegaConf

            def instantiate_from_config(config):
                module, cls = config["target"].rsplit(".", 1)
                return getattr(importlib.import_module(module), cls)(**config.get("params", {}))

            def main():
                config = OmegaConf.load("configs/ldm.yaml")
                return instantiate_from_config(config.model)

            if __name__ == "__main__":
                main()
        """,
    })
    rep = run_script([tmp_path], kb)
    (ap,) = [f for f in rep["findings"] if f["api"].startswith("apex") and "FusedLayerNorm" in f["api"]]
    assert ap["reach"]["status"] == "reachable" and "lib.models.Fused" in ap["reach"]["path"]


def test_a_config_written_as_a_python_literal_builds_its_target(tmp_path, kb):
    # VALID: {"target": "train.MemoryCallback"} handed to instantiate_from_config: the callback is built
    _write(tmp_path, {
        "train.py": """
            import importlib
            import torch

            def instantiate_from_config(config):
                module, cls = config["target"].rsplit(".", 1)
                return getattr(importlib.import_module(module), cls)()

            class MemoryCallback:
                def on_epoch_end(self):
                    torch.cuda.synchronize()

            class UnusedCallback:
                def on_epoch_end(self):
                    torch.cuda.synchronize()

            def main():
                callbacks = {"memory": {"target": "train.MemoryCallback"}}
                return [instantiate_from_config(c) for c in callbacks.values()]

            if __name__ == "__main__":
                main()
        """,
    })
    rep = run_script([tmp_path], kb)
    by_line = {f["line"]: f for f in rep["findings"] if f["api"] == "torch.cuda.synchronize"}
    assert by_line[11]["reach"]["status"] == "reachable" and by_line[11]["counted"] is True
    # INVALID: a class no config names stays off the path
    assert by_line[15]["counted"] is False


def test_cog_predictors_and_torch_hub_functions_are_programs(tmp_path, kb):
    _write(tmp_path, {
        "cog.yaml": """
            build:
              gpu: true
            predict: "predict.py:Predictor"
        """,
        "predict.py": """
            import torch

            class Predictor:
                def setup(self):
                    self.model = torch.nn.Linear(2, 2).cuda()

                def predict(self, x):
                    return self.model(x)
        """,
        "hubconf.py": """
            import torch

            def tiny(pretrained=True):
                return torch.nn.Linear(2, 2).cuda()

            def _helper():
                return None
        """,
    })
    rep = run_script([tmp_path], kb)
    rows = {(e["path"], e["function"]): e for e in rep["summary"]["entry_points"]}
    # VALID: cog.yaml declares predict.py:Predictor; torch.hub calls hubconf's public functions
    assert rows[("predict.py", "predict.Predictor")]["verdict"]["effort"] == "low"
    assert rows[("hubconf.py", "hubconf.tiny")]["verdict"]["effort"] == "low"
    # INVALID: a private helper of hubconf is not a hub entry
    assert ("hubconf.py", "hubconf._helper") not in rows


def test_near_identical_archived_copies_are_one_entry(tmp_path, kb):
    body = """
        import torch

        def train(steps={N}):
            model = torch.nn.Linear(2, 2).cuda()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for _ in range(steps):
                loss = model(torch.ones(2).cuda()).sum()
                loss.backward()
                opt.step()
                opt.zero_grad()
            torch.save(model.state_dict(), "model.pt")
            return model

        if __name__ == "__main__":
            train()
    """
    files = {f"records/run{i}/train_gpt.py": body.replace("{N}", str(10 * i)) for i in range(1, 5)}
    # VALID: a different program of the same name stays its own entry
    files["other/train_gpt.py"] = """
        import argparse

        if __name__ == "__main__":
            argparse.ArgumentParser().parse_args()
    """
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    # INVALID: four archived copies of one training script are one program, not four
    assert "records/run1/train_gpt.py" in rows
    assert rows["records/run1/train_gpt.py"]["copies"] == [f"records/run{i}/train_gpt.py" for i in (2, 3, 4)]
    assert not any(p.startswith(("records/run2", "records/run3", "records/run4")) for p in rows)
    assert "other/train_gpt.py" in rows and "copies" not in rows["other/train_gpt.py"]


def test_library_mode_a_lookup_by_a_runtime_key_does_not_make_the_caller_unknown(tmp_path, kb):
    from analyse.modes import run_thirdparty

    _write(tmp_path / "qlib", {
        "__init__.py": "",
        "ops.py": """
            import torch

            def dequant_a(x):
                return x * 2

            def dequant_b(x):
                return x + 1

            DEQUANT = {"a": dequant_a, "b": dequant_b}

            def dequantize(x, kind):
                return DEQUANT[kind](x)
        """,
    })
    report = run_thirdparty([tmp_path / "qlib"], kb)
    funcs = report["thirdparty"]["functions"]
    rows = funcs if isinstance(funcs, list) else list(funcs.values())
    unknown = [r for r in rows if isinstance(r, dict) and r.get("status") == "unknown"]
    assert not any("chosen at run time" in " ".join(map(str, r.get("reasons") or ())) for r in unknown)
    assert not any(str(r.get("qualname", r.get("name", ""))).endswith("dequantize") for r in unknown)


# a trainer class whose private helpers run only under the option that selects them (accelerate's
# ``if self.fp8_backend == TE: args = self._prepare_te(*args)``)
PRIVATE_METHOD_SHAPE = {
    "kit/__init__.py": "",
    "kit/engine.py": """
        import torch

        class Engine:
            def __init__(self, backend="torch"):
                self.backend = backend

            def prepare(self, model):
                if self.backend == "te":
                    model = self._prepare_te(model)
                return self._prepare_device(model)

            def _prepare_te(self, model):
                import transformer_engine.pytorch as te
                return te.Linear(8, 8)

            def _prepare_device(self, model):
                from flash_attn import flash_attn_func
                return flash_attn_func

            def _hook(self, grad):
                import apex
                return apex.amp.scale_loss(grad)
    """,
    "train.py": """
        import torch
        from kit.engine import Engine

        def main():
            engine = Engine()
            engine.prepare(torch.nn.Linear(8, 8))

        if __name__ == "__main__":
            main()
    """,
}


def test_a_private_method_runs_through_its_call_sites_and_their_guards(tmp_path, kb):
    _write(tmp_path, PRIVATE_METHOD_SHAPE)
    rep = run_script([tmp_path], kb)
    te = [f for f in rep["findings"] if f["api"].startswith("transformer_engine") and f["path"] == "kit/engine.py"]
    fa = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["line"] == 18]
    apex = [f for f in rep["findings"] if f["api"].startswith("apex") and f["line"] == 22]
    assert te and fa and apex
    # INVALID: the Engine instance is not a way into _prepare_te; its only call sits under `self.backend == "te"`
    for f in te:
        assert f["reach"]["status"] == "reachable"
        assert f["reach"]["path"][-2:] == ["kit.engine.Engine.prepare", "kit.engine.Engine._prepare_te"]
        assert f["guard"] and f["guard"]["line"] == 9 and f["counted"] is False
    # VALID: the unguarded private call still runs; a private method no code calls (a hook) stays live
    assert all(f["reach"]["status"] == "reachable" and f["counted"] is True for f in fa)
    assert all(f["reach"]["status"] == "reachable" for f in apex)
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    assert not any("transformer_engine" in d["api"] for d in rows["train.py"]["verdict"].get("drivers", []))


# a base class whose method calls an abstract hook each backend overrides; the program builds one backend
# (lm-evaluation-harness's TemplateLM.loglikelihood -> self._loglikelihood_tokens, HFLM built, VLLM not)
OVERRIDE_SHAPE = {
    "lm/__init__.py": "",
    "lm/base.py": """
        class LM:
            @staticmethod
            def restore(path):
                import pickle
                with open(path, "rb") as fh:
                    return pickle.load(fh)

            @classmethod
            def create(cls, **kwargs):
                return cls(**kwargs)

            def loglikelihood(self, reqs):
                return self._tokens(reqs)

            def _tokens(self, reqs):
                raise NotImplementedError
    """,
    "lm/hf.py": """
        import torch
        from lm.base import LM

        class HF(LM):
            def _tokens(self, reqs):
                return torch.cuda.device_count()
    """,
    "lm/fast.py": """
        from lm.base import LM

        class Fast(LM):
            def _tokens(self, reqs):
                from vllm import LLM
                return LLM("m").generate(reqs)
    """,
    "run.py": """
        from lm.hf import HF

        def main():
            {BODY}

        if __name__ == "__main__":
            main()
    """,
}


def _override(tmp_path, kb, body):
    _write(tmp_path, dict(OVERRIDE_SHAPE, **{"run.py": OVERRIDE_SHAPE["run.py"].replace("{BODY}", body)}))
    rep = run_script([tmp_path], kb)
    vllm = [f for f in rep["findings"] if f["api"].startswith("vllm") and f["path"] == "lm/fast.py"]
    cuda = [f for f in rep["findings"] if f["api"] == "torch.cuda.device_count"]
    assert vllm and cuda
    return rep, vllm, cuda


def test_self_dispatch_reaches_the_override_of_a_class_the_program_builds_only(tmp_path, kb):
    rep, vllm, cuda = _override(tmp_path, kb, 'HF().loglikelihood(["a"])')
    # VALID: HF is built: LM.loglikelihood's self._tokens() runs HF's override
    for f in cuda:
        assert "run.py" in (f["reach"].get("entry_points") or []) and f["counted"] is True
        assert f["reach"]["path"][-2:] == ["lm.base.LM.loglikelihood", "lm.hf.HF._tokens"]
    # INVALID: no Fast is ever built (its module is not even imported): its override never runs
    for f in vllm:
        assert f["reach"]["status"] == "unreached" and f["counted"] is False
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    assert not any(d["api"].startswith("vllm") for d in rows["run.py"]["verdict"].get("drivers", []))


def test_self_dispatch_reaches_an_override_once_its_class_is_built_later(tmp_path, kb):
    # VALID: the Fast instance is built after the call site was walked: its override is reached then
    rep, vllm, cuda = _override(tmp_path, kb, 'HF().loglikelihood(["a"])\n            from lm.fast import Fast\n'
                                              '            Fast()')
    for f in vllm:
        assert f["reach"]["status"] == "reachable" and "run.py" in f["reach"]["entry_points"]
        assert "lm.fast.Fast._tokens" in f["reach"]["path"]


# config classes that name the class they build (nerfstudio's InstantiateConfig: `_target: Type =
# field(default_factory=lambda: Model)`, `setup()` returns `self._target(self)`); the program builds one config
CONFIG_TARGET_SHAPE = {
    "ns/__init__.py": "",
    "ns/base.py": """
        from dataclasses import dataclass, field
        from typing import Type

        @dataclass
        class InstantiateConfig:
            _target: Type

            def setup(self, **kwargs):
                return self._target(self, **kwargs)
    """,
    "ns/grid.py": """
        from dataclasses import dataclass, field
        from typing import Type
        import torch
        from ns.base import InstantiateConfig

        class GridModel(torch.nn.Module):
            def __init__(self, config):
                super().__init__()
                import tinycudann as tcnn
                self.enc = tcnn.Encoding(3, {"otype": "HashGrid"})

        @dataclass
        class GridConfig(InstantiateConfig):
            _target: Type = field(default_factory=lambda: GridModel)
    """,
    "ns/splat.py": """
        from dataclasses import dataclass, field
        from typing import Type
        import torch
        from ns.base import InstantiateConfig

        class SplatModel(torch.nn.Module):
            def __init__(self, config):
                super().__init__()
                from flash_attn import flash_attn_func
                self.attn = flash_attn_func

        @dataclass
        class SplatConfig(InstantiateConfig):
            _target: Type = field(default_factory=lambda: SplatModel)
    """,
    "train.py": """
        from ns.grid import GridConfig
        import ns.splat

        def main():
            model = GridConfig().setup()
            return model

        if __name__ == "__main__":
            main()
    """,
}


def test_a_config_builds_the_class_its_target_attribute_names(tmp_path, kb):
    _write(tmp_path, CONFIG_TARGET_SHAPE)
    rep = run_script([tmp_path], kb)
    tcnn = [f for f in rep["findings"] if f["api"].startswith("tinycudann") and f["path"] == "ns/grid.py"]
    other = [f for f in rep["findings"] if f["path"] == "ns/splat.py" and f["api"].startswith("flash_attn")]
    assert tcnn and other
    # VALID: GridConfig().setup() runs self._target(self): a GridModel is built, its __init__ runs
    for f in tcnn:
        assert f["reach"]["status"] == "reachable" and "train.py" in f["reach"]["entry_points"]
        assert f["reach"]["path"][-3:] == ["ns.base.InstantiateConfig.setup", "ns.grid.GridModel",
                                           "ns.grid.GridModel.__init__"]
    # INVALID: no SplatConfig is built, so SplatModel is not (only its module is imported)
    for f in other:
        assert f["reach"]["status"] != "reachable"


def test_self_dispatch_on_an_instance_built_out_of_sight_may_run_any_override(tmp_path, kb):
    # INVALID as certain, VALID as possible: the instance comes from a pickle, no backend is built in sight: each
    # override may run (unknown, listed as unresolved dispatch), none is counted
    rep, vllm, cuda = _override(tmp_path, kb, 'from lm.base import LM\n            LM.restore("m.pkl").loglikelihood(["a"])')
    for f in vllm + cuda:
        assert f["reach"]["status"] == "unknown" and "run.py" in f["reach"]["entry_points"], f["reach"]
        assert f["counted"] is False
    # a base instance built by a classmethod the registry calls on the class it picks: its hook runs some
    # override, none of which the program builds in sight
    rep, vllm, cuda = _override(tmp_path, kb, 'from lm.base import LM\n            LM.create().loglikelihood(["a"])')
    for f in vllm + cuda:
        assert f["reach"]["status"] == "unknown" and "builds out of sight" in f["reach"]["reason"], f["reach"]
        assert f["counted"] is False


# a launch script that puts a folder on PYTHONPATH for the program it runs (the program imports `lib.model`,
# which only resolves from `third/` -- the way the script runs it)
PYTHONPATH_SHAPE = {
    "third/lib/__init__.py": "",
    "third/lib/model.py": """
        import torch

        def build():
            from flash_attn import flash_attn_func
            return flash_attn_func
    """,
    "tools/train.py": """
        from lib.model import build

        if __name__ == "__main__":
            build()
    """,
    "tools/run.sh": "#!/bin/bash\n{LINE}\n",
}


def _pythonpath(tmp_path, kb, line):
    _write(tmp_path, dict(PYTHONPATH_SHAPE, **{"tools/run.sh": PYTHONPATH_SHAPE["tools/run.sh"].replace("{LINE}", line)}))
    rep = run_script([tmp_path], kb)
    fa = [f for f in rep["findings"] if f["api"].startswith("flash_attn") and f["path"] == "third/lib/model.py"]
    assert fa
    return fa


def test_a_launch_scripts_pythonpath_extends_imports(tmp_path, kb):
    # VALID: `export PYTHONPATH=$(dirname $0)/../third:$PYTHONPATH` then `python train.py`: lib.model is third/lib/model.py
    for f in _pythonpath(tmp_path, kb, 'export PYTHONPATH=$(dirname "$0")/../third:$PYTHONPATH\npython tools/train.py'):
        assert f["reach"]["status"] == "reachable" and "tools/train.py" in f["reach"]["entry_points"]
        assert f["reach"]["path"][-1] == "third.lib.model.build" or f["reach"]["path"][-1].endswith("lib.model.build")


def test_a_pythonpath_leaving_the_tree_extends_nothing(tmp_path, kb):
    # INVALID: an entry outside the analysed tree (or a variable) does not make `lib` resolve
    for f in _pythonpath(tmp_path, kb, "PYTHONPATH=/opt/other:$HOME/lib python tools/train.py"):
        assert f["reach"]["status"] != "reachable"


# detectron2 / detrex LazyConfig: a Python config names the classes `instantiate(cfg)` builds
LAZY_SHAPE = {
    "net/__init__.py": "",
    "net/models.py": """
        import torch

        class Net(torch.nn.Module):
            def forward(self, q):
                from flash_attn import flash_attn_func
                return flash_attn_func(q, q, q)

        class Fused(torch.nn.Module):
            def forward(self, x):
                import apex
                return apex.normalization.FusedLayerNorm(8)(x)
    """,
    "configs/__init__.py": "",
    "configs/net.py": """
        from detectron2.config import LazyCall as L
        from net.models import Net

        model = L(Net)(dim=8)
    """,
    "configs/fused.py": """
        from detectron2.config import LazyCall as L
        import net.models

        model = L(net.models.Fused)(dim=8)
    """,
    "train.py": """
        import torch
        from detectron2.config import instantiate
        from configs.net import model as model_cfg

        if __name__ == "__main__":
            model = instantiate(model_cfg)
            model(torch.ones(1, 2, 4, 8))
    """,
}


def test_a_lazy_config_node_builds_the_class_it_names(tmp_path, kb):
    _write(tmp_path, LAZY_SHAPE)
    rep = run_script([tmp_path], kb)
    fa = [f for f in rep["findings"] if f["api"].startswith("flash_attn")]
    apex = [f for f in rep["findings"] if f["api"].startswith("apex") and f["line"] >= 11]
    assert fa and apex
    # VALID: train.py loads configs/net.py, whose L(Net)(...) instantiate() builds: Net.forward runs
    for f in fa:
        assert f["reach"]["status"] == "reachable" and "train.py" in f["reach"]["entry_points"]
        assert "net.models.Net" in f["reach"]["path"] and f["counted"] is True
    # INVALID: configs/fused.py is never loaded: its L(net.models.Fused) builds nothing for train.py
    for f in apex:
        assert f["reach"]["status"] != "reachable" and f["counted"] is False


# a config dataclass whose field defaults to the CUDA device (nerfstudio MachineConfig.device_type,
# lm-evaluation-harness EvaluatorConfig.device): importing its module selects nothing, using the config does
DEFAULT_SHAPE = {
    "cfg/__init__.py": "",
    "cfg/machine.py": """
        from dataclasses import dataclass, field

        @dataclass
        class MachineConfig:
            seed: int = 42
            device_type: str = "cuda"
            other: str = field(default="cuda")

        def describe():
            return "machines"
    """,
    "download.py": """
        from cfg.machine import describe

        if __name__ == "__main__":
            print(describe())
    """,
    "train.py": """
        import torch
        from cfg.machine import MachineConfig

        if __name__ == "__main__":
            cfg = MachineConfig()
            torch.ones(3).to(cfg.device_type)
    """,
}


def test_a_config_classs_device_default_is_used_by_its_instances_not_its_import(tmp_path, kb):
    _write(tmp_path, DEFAULT_SHAPE)
    rep = run_script([tmp_path], kb)
    dev = [f for f in rep["findings"] if f["path"] == "cfg/machine.py" and f["line"] in (7, 8)]
    assert len(dev) == 2
    rows = {e["path"]: e for e in rep["summary"]["entry_points"]}
    for f in dev:
        # VALID: train.py builds the config: the default is on its path
        assert f["reach"]["status"] == "reachable" and f["reach"]["entry_points"] == ["train.py"]
        assert f["reach"]["path"][-1] == "cfg.machine.MachineConfig"
    # INVALID: download.py only imports the module (for another function): the default is not on its path
    assert rows["download.py"]["verdict"]["effort"] == "none" and not rows["download.py"]["verdict"]["drivers"]


BARE_IMPORT = {
    "scene/__init__.py": """
        from scene.model import GaussianModel
    """,
    "scene/model.py": """
        from simple_knn._C import distCUDA2

        class GaussianModel:
            def fit(self, pts):
                return distCUDA2(pts)
    """,
    "scene/dataset.py": """
        import numpy as np

        def load(path):
            return np.load(path)
    """,
    "scripts/preprocess.py": """
        import sys
        sys.path.append("./scene")
        {IMPORT}

        if __name__ == "__main__":
            load("x.npy")
    """,
}


def _bare(tmp_path, kb, imp):
    _write(tmp_path, dict(BARE_IMPORT, **{"scripts/preprocess.py": BARE_IMPORT["scripts/preprocess.py"].replace("{IMPORT}", imp)}))
    rep = run_script([tmp_path], kb)
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "scripts/preprocess.py"]
    return row["verdict"]["effort"]


def test_a_module_found_through_a_sys_path_entry_is_imported_without_its_package(tmp_path, kb):
    # VALID (old: the bare `dataset` found as scene/dataset.py also ran scene/__init__.py and its CUDA extension)
    assert _bare(tmp_path, kb, "from dataset import load") == "none"


def test_the_package_import_of_the_same_module_runs_the_package(tmp_path, kb):
    # INVALID: `from scene.dataset import load` imports the scene package first
    assert _bare(tmp_path, kb, "from scene.dataset import load") == "blocked"


def _eps(tmp_path, kb, files):
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    return {e["path"]: e for e in rep["summary"]["entry_points"]}


def test_a_make_script_that_builds_nothing_is_a_program(tmp_path, kb):
    # VALID (old: every top-level make_*.py was a build script, never an entry point)
    eps = _eps(tmp_path, kb, {
        "README.md": "Run `python make_dataset.py` to write the index.\n",
        "make_dataset.py": """
            import pickle
            import numpy as np

            ids = np.load("ids.npy")
            with open("index.pkl", "wb") as fh:
                pickle.dump(sorted(set(ids.tolist())), fh)
        """,
    })
    assert eps["make_dataset.py"]["role"] == "product", eps


def test_a_make_script_that_builds_an_extension_stays_a_build_script(tmp_path, kb):
    # INVALID: it builds the project's CUDA extension
    eps = _eps(tmp_path, kb, {
        "make_ext.py": """
            from torch.utils.cpp_extension import load

            ext = load(name="fused", sources=["fused.cu"])
            ext.check()
        """,
    })
    assert "make_ext.py" not in eps or eps["make_ext.py"]["role"] == "build", eps


WEB_APP = """
    import torch
    from fastapi import FastAPI
    from registry import Registry

    {APP} = {CTOR}()


    @{APP}.on_event("startup")
    async def load_model():
        torch.cuda.synchronize()


    @{APP}.post("/generate")
    async def generate(text: str):
        return text
"""


def _web(tmp_path, kb, app, ctor):
    _write(tmp_path, {"registry.py": "class Registry:\n    def on_event(self, name):\n        return lambda f: f\n"
                                     "    def post(self, path):\n        return lambda f: f\n",
                      "server.py": WEB_APP.replace("{APP}", app).replace("{CTOR}", ctor),
                      "main.py": "if __name__ == '__main__':\n    print('hi')\n"})
    rep = run_script([tmp_path], kb)
    eps = {e["path"] for e in rep["summary"]["entry_points"]}
    (f,) = [f for f in rep["findings"] if f["api"] == "torch.cuda.synchronize"]
    return eps, f


def test_a_web_application_module_is_a_program_whose_handlers_run(tmp_path, kb):
    # VALID (old: no main block and no top-level work: not an entry point, its startup handler unreached)
    eps, f = _web(tmp_path, kb, "app", "FastAPI")
    assert "server.py" in eps
    assert f["reach"]["status"] in ("entry-point", "reachable") and f["counted"] is True, f["reach"]


def test_functions_decorated_by_another_object_are_not_served(tmp_path, kb):
    # INVALID: a registry's decorators register the functions; nothing serves them
    eps, f = _web(tmp_path, kb, "hooks", "Registry")
    assert "server.py" not in eps and f["counted"] is False


def test_a_hubconf_re_exporting_a_module_by_star_import_declares_its_functions(tmp_path, kb):
    # VALID (old: hubconf.py with only `from models import *` declared no torch.hub function: no entry point)
    _write(tmp_path, {
        "hubconf.py": "from models import *\n\ndependencies = ['torch']\n",
        "models.py": """
            import torch

            __all__ = ["tiny", "small"]


            def _make(width):
                return torch.nn.Linear(width, width)


            def tiny(pretrained=False):
                return _make(8)


            def small(pretrained=False):
                return _make(16)


            def helper_not_exported():
                return None
        """,
    })
    rep = run_script([tmp_path], kb)
    hub = {e["function"] for e in rep["summary"]["entry_points"] if e["path"] == "hubconf.py"}
    assert hub == {"hubconf.tiny", "hubconf.small"}, hub
    # INVALID: a name __all__ leaves out, or a private helper, is no torch.hub entry
    assert not any(e["path"] == "models.py" for e in rep["summary"]["entry_points"])


LAMBDA_TABLE = {
    "pkg/__init__.py": "",
    "pkg/attn.py": """
        import torch


        def get_kernel():
            from pkg.kernel import fused
            return fused


        def sdpa(q):
            return torch.nn.functional.scaled_dot_product_attention(q, q, q)


        {TABLE}
    """,
    "pkg/kernel.py": """
        from pkg._C import fused_forward


        def fused(q):
            return fused_forward(q)
    """,
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import CUDAExtension, BuildExtension
        setup(name="pkg", ext_modules=[CUDAExtension("pkg._C", ["csrc/fused.cu"])], cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/fused.cu": "__global__ void k() {}\n",
    "train.py": """
        from pkg.attn import FUNCS

        if __name__ == "__main__":
            FUNCS["sdpa"](1)
    """,
}


def _lambda_table(tmp_path, kb, table):
    _write(tmp_path, dict(LAMBDA_TABLE, **{"pkg/attn.py": LAMBDA_TABLE["pkg/attn.py"].replace("{TABLE}", table)}))
    rep = run_script([tmp_path], kb)
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "train.py"]
    return row["verdict"]["effort"]


def test_a_lambda_kept_in_a_module_level_table_does_not_run_at_import(tmp_path, kb):
    # VALID (old: the lambda's call of get_kernel() was a call of pkg.attn's module body: importing it reached the
    # compiled kernel, blocked)
    assert _lambda_table(tmp_path, kb, 'FUNCS = {"sdpa": sdpa, "fused": lambda *a: get_kernel()(*a)}') == "none"


def test_a_lambda_called_at_module_level_runs_at_import(tmp_path, kb):
    # INVALID: the lambda is called where it is written: the kernel module is imported with pkg.attn
    assert _lambda_table(tmp_path, kb, 'FAST = (lambda: get_kernel())()\n        FUNCS = {"sdpa": sdpa}') == "blocked"


# a project model whose constructor classmethod comes from an external base (diffusers ModelMixin shape)
EXTERNAL_BASE_SHAPE = {
    "pkg/__init__.py": "",
    "pkg/net.py": """
        import torch
        from diffusers.models.modeling_utils import ModelMixin
        from flash_attn import flash_attn_func

        class Net(ModelMixin):
            def forward(self, q, k, v):
                return flash_attn_func(q, k, v)
    """,
    "run.py": """
        import torch
        from pkg.net import Net

        def main():
            q = torch.ones(1, 2, 4, 8)
            {CALL}
            return q

        if __name__ == "__main__":
            main()
    """,
}


def test_an_inherited_external_from_pretrained_builds_the_project_class(tmp_path, kb):
    # VALID: Net.from_pretrained comes from the external ModelMixin: it returns a Net, whose forward runs
    files = dict(EXTERNAL_BASE_SHAPE, **{"run.py": EXTERNAL_BASE_SHAPE["run.py"].replace(
        "{CALL}", 'model = Net.from_pretrained("ckpt")\n            model(q, q, q)')})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    fa = _fa(rep, line=8)
    assert fa["reach"]["status"] == "reachable" and fa["counted"] is True
    assert "pkg.net.Net" in fa["reach"]["path"]


def test_an_inherited_external_helper_that_is_no_constructor_builds_nothing(tmp_path, kb):
    # INVALID: Net.load_config is an external classmethod too, but no `from_*` constructor: no Net is built
    files = dict(EXTERNAL_BASE_SHAPE, **{"run.py": EXTERNAL_BASE_SHAPE["run.py"].replace(
        "{CALL}", 'cfg = Net.load_config("ckpt")')})
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    fa = _fa(rep, line=8)
    assert fa["reach"]["status"] != "reachable" and fa["counted"] is False


# a training tool that hands its whole work to an external runner built from a config named on the command line
RUNNER_SHAPE = {
    "tools/train.py": """
        import argparse
        import logging

        from mmengine.config import Config
        from mmengine.runner import Runner


        def merge(cfg, args):
            cfg.work_dir = args.work_dir
            return cfg


        def main():
            p = argparse.ArgumentParser()
            p.add_argument("config")
            p.add_argument("--work-dir", default="out")
            args = p.parse_args()
            cfg = Config.fromfile(args.config)
            cfg = merge(cfg, args)
            {CALL}


        if __name__ == "__main__":
            main()
    """,
}


def _train_ep(tmp_path, kb, call):
    files = {"tools/train.py": RUNNER_SHAPE["tools/train.py"].replace("{CALL}", call)}
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (ep,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "tools/train.py"]
    return ep


def test_an_external_runner_built_from_a_command_line_config_is_unresolved_dispatch(tmp_path, kb):
    # VALID (old: the program looked complete, 0 calls not followed, its verdict `none` with nothing to say why)
    ep = _train_ep(tmp_path, kb, "runner = Runner.from_cfg(cfg)\n            runner.train()")
    assert ep["unresolved_calls"] >= 1
    assert any(u["expression"] == "Runner.from_cfg(cfg)" for u in ep["unresolved"]), ep


def test_logging_the_loaded_config_is_no_dispatch(tmp_path, kb):
    # INVALID: the config only logged (a function of a module, not a class's constructor): nothing is built from it
    ep = _train_ep(tmp_path, kb, "logging.info(cfg)")
    assert ep["unresolved_calls"] == 0, ep
