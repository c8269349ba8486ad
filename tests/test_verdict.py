"""Entry points, reach, file roles and the scoped verdict over small fixture projects."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from analyse.entrypoints import discover, given_entries, has_top_level_code, parse_entry, setup_py_scripts
from analyse.modes import run_script
from analyse.roles import ROLES, check_overrides, role_of

ROOT = Path(__file__).resolve().parents[1]


def write(tmp: Path, files: dict) -> Path:
    for rel, text in files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp


def eps_of(report):
    return {(e["path"], e["function"]): e for e in report["summary"]["entry_points"]}


def find(report, path, api=None, line=None):
    out = [f for f in report["findings"] if f["path"] == path and (api is None or f["api"] == api)
           and (line is None or f["line"] == line)]
    assert out, (path, api, [(f["path"], f["api"]) for f in report["findings"]])
    return out[0]


# --------------------------------------------------------------------------- roles

@pytest.mark.parametrize("path, role", [
    ("train.py", "product"),
    ("pkg/models/resnet.py", "product"),
    ("tests/test_model.py", "test"),
    ("pkg/tests/helpers.py", "test"),
    ("test_speed.py", "test"),
    ("model_test.py", "test"),
    ("conftest.py", "test"),
    ("examples/mnist/main.py", "example"),
    ("demo/demo.py", "example"),
    ("tools/train_net.py", "tool"),
    ("scripts/convert.py", "tool"),
    ("dev/lint.py", "tool"),
    ("benchmarks/bench_attn.py", "tool"),
    ("pkg/utils/collect_env.py", "tool"),
    ("export.py", "tool"),
    ("setup.py", "build"),
    ("build.py", "build"),
    ("pkg/data/build.py", "product"),     # a model zoo's build.py is code, not a build script
    ("docs/conf.py", "docs"),
    ("docs/source/gen.py", "docs"),
])
def test_default_roles(path, role):
    assert role_of(path) == role


def test_role_overrides_longest_glob_wins():
    roles = {"tools/": "product", "tools/deploy/*": "example", "*.py": "product"}
    assert role_of("tools/train_net.py", roles) == "product"
    assert role_of("tools/deploy/export_model.py", roles) == "example"
    assert role_of("tests/test_x.py", {"tests": "product"}) == "product"
    with pytest.raises(ValueError):
        check_overrides({"x/": "library"})
    assert set(ROLES) == {"product", "test", "example", "tool", "build", "docs"}


# --------------------------------------------------------------------------- entry points

def _parse(src: str):
    import astroid

    return astroid.parse(textwrap.dedent(src))


@pytest.mark.parametrize("src, expected", [
    ("import torch\nmodel = torch.nn.Linear(2, 2)\nfor step in range(10):\n    model(torch.ones(2))\n", True),
    ("import torch\nmain()\n", True),
    ("args = parser.parse_args()\n", True),
    ("exec(open('configurator.py').read())\n", True),
    # library modules: definitions, constants, registries, decorators, set-up calls
    ("import logging\nlogger = logging.getLogger(__name__)\nA = 1\nB = dict(x=1)\n__all__ = ['f']\n"
     "def f():\n    return A\n", False),
    ("REGISTRY = Registry('models')\n@REGISTRY.register()\nclass Net:\n    pass\n"
     "default_cfgs = generate_default_cfgs({'a': _cfg()})\n", False),
    ("import warnings\nwarnings.filterwarnings('ignore')\nregister_model(Net)\n", False),
    ("'''docstring'''\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n", False),
])
def test_top_level_code(src, expected):
    assert has_top_level_code(_parse(src)) is expected


def test_setup_py_console_scripts_are_read_not_run():
    tree = _parse("""
        from setuptools import setup
        SCRIPTS = ["train-net = pkg.cli:main", "evalnet=pkg.evaluate:run"]
        setup(name="pkg", entry_points={"console_scripts": SCRIPTS, "other": ["x = y:z"]})
    """)
    assert setup_py_scripts(tree) == [("train-net", "pkg.cli:main"), ("evalnet", "pkg.evaluate:run")]


def test_parse_entry():
    assert parse_entry("train.py") == ("train.py", None)
    assert parse_entry("pkg/cli.py:main") == ("pkg/cli.py", "main")
    assert parse_entry("pkg/cli.py:Trainer.run") == ("pkg/cli.py", "Trainer.run")
    assert parse_entry("C:\\proj\\train.py") == ("C:\\proj\\train.py", None)


LIB = {
    "pkg/__init__.py": "",
    "pkg/consts.py": "SIZES = [1, 2]\nNAME = 'x'\n",
    "pkg/cli.py": """
        import torch

        def main():
            torch.cuda.synchronize()
    """,
    "pkg/evaluate.py": """
        def run():
            return 1
    """,
    "pkg/gui.py": """
        def start():
            return 2
    """,
    "scripts/train.py": """
        from pkg.cli import main
        if __name__ == "__main__":
            main()
    """,
    "notebook_like.py": """
        import torch
        x = torch.zeros(3).cuda()
        print(x)
    """,
    "setup.py": """
        from setuptools import setup
        setup(name="pkg", entry_points={"console_scripts": ["pkg-eval = pkg.evaluate:run"]})
    """,
    "setup.cfg": "[options.entry_points]\ngui_scripts =\n    pkg-gui = pkg.gui:start\n",
    "pyproject.toml": '[project]\nname = "pkg"\n[project.scripts]\npkg-train = "pkg.cli:main"\n',
}


def test_entry_point_reasons(tmp_path, kb):
    root = write(tmp_path, LIB)
    report = run_script([root], kb)
    eps = eps_of(report)
    assert eps[("scripts/train.py", None)]["reason"] == "main-guard"
    assert eps[("scripts/train.py", None)]["role"] == "tool"
    assert eps[("notebook_like.py", None)]["reason"] == "top-level-code"
    assert eps[("pkg/cli.py", "pkg.cli.main")]["reason"] == "console-script"      # pyproject.toml
    assert eps[("pkg/evaluate.py", "pkg.evaluate.run")]["reason"] == "console-script"  # setup.py
    assert eps[("pkg/gui.py", "pkg.gui.start")]["reason"] == "console-script"     # setup.cfg
    # library modules and the build script are not programs
    assert not any(p in ("pkg/consts.py", "setup.py", "pkg/__init__.py") for p, _f in eps)
    assert report["summary"]["verdict"]["scope"] == "entry-points"


def test_single_file_path_is_a_given_entry_point(tmp_path, kb):
    root = write(tmp_path, {"run.py": "import torch\ndef f():\n    return torch.cuda.device_count()\n"})
    report = run_script([root / "run.py"], kb)
    (ep,) = report["summary"]["entry_points"]
    assert ep["reason"] == "given" and ep["path"] == "run.py" and ep["function"] is None


def test_entry_option_replaces_discovery(tmp_path, kb):
    root = write(tmp_path, LIB)
    report = run_script([root], kb, entries=["pkg/cli.py:main"])
    assert [(e["path"], e["function"], e["reason"]) for e in report["summary"]["entry_points"]] == [
        ("pkg/cli.py", "pkg.cli.main", "given")]
    f = find(report, "pkg/cli.py", "torch.cuda.synchronize")
    assert f["reach"]["status"] == "entry-point"
    assert find(report, "notebook_like.py", "torch.Tensor.cuda")["reach"]["status"] == "unreached"
    with pytest.raises(ValueError, match="no function nope"):
        run_script([root], kb, entries=["pkg/cli.py:nope"])
    with pytest.raises(ValueError, match="not found"):
        run_script([root], kb, entries=["missing.py"])


def test_entry_cli_usage_error(tmp_path):
    from click.testing import CliRunner

    from analyse.cli import cli

    root = write(tmp_path, {"a.py": "import torch\n"})
    res = CliRunner().invoke(cli, ["script", str(root), "-o", str(tmp_path / "out"), "-q", "--entry", "nope.py"])
    assert res.exit_code == 2
    res = CliRunner().invoke(cli, ["script", str(root), "-o", str(tmp_path / "out"), "-q", "--format", "json",
                                   "--entry", "a.py"])
    assert res.exit_code == 0, res.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["summary"]["entry_points"][0]["reason"] == "given"


# --------------------------------------------------------------------------- reach

REACH = {
    "train.py": """
        import torch
        from lib.model import Net, build
        from lib import plugins

        def main():
            net = build()
            torch.cuda.set_device(0)
            y = net(torch.ones(2))
            fn = getattr(plugins, "make_" + "thing")
            return fn()

        if __name__ == "__main__":
            main()
    """,
    "lib/__init__.py": "",
    "lib/model.py": """
        import torch

        class Net(torch.nn.Module):
            def forward(self, x):
                return x.cuda()

        class Unused(torch.nn.Module):
            def forward(self, x):
                return torch.cuda.current_stream()

        def build():
            return Net()

        def never_called():
            return torch.cuda.memory_allocated()
    """,
    "lib/plugins.py": """
        import torch

        def make_thing():
            return torch.cuda.max_memory_allocated()
    """,
    "lib/unimported.py": """
        import torch

        def helper():
            return torch.cuda.empty_cache()
    """,
}


def test_reach_statuses(tmp_path, kb):
    root = write(tmp_path, REACH)
    report = run_script([root], kb)
    ep = find(report, "train.py", "torch.cuda.set_device")
    assert ep["reach"]["status"] == "entry-point" and ep["reach"]["entry_points"] == ["train.py"]
    fwd = find(report, "lib/model.py", "torch.Tensor.cuda")
    assert fwd["reach"]["status"] == "reachable"
    assert fwd["reach"]["entry_points"] == ["train.py"]
    assert fwd["reach"]["path"][0] == "train.<main>" and fwd["reach"]["path"][-1] == "lib.model.Net.forward"
    # a class defined in imported code but never named: a registry or config may build it
    assert find(report, "lib/model.py", "torch.cuda.current_stream")["reach"]["status"] == "unknown"
    # getattr() on a module: any of its functions may run
    assert find(report, "lib/plugins.py", "torch.cuda.max_memory_allocated")["reach"]["status"] == "unknown"
    # a plain function nobody calls, and a module nobody imports
    assert find(report, "lib/model.py", "torch.cuda.memory_allocated")["reach"]["status"] == "unreached"
    assert find(report, "lib/unimported.py", "torch.cuda.empty_cache")["reach"]["status"] == "unreached"
    assert all("reach" in f and "role" in f for f in report["findings"])


def test_no_entry_point_means_whole_tree_and_unknown_reach(tmp_path, kb):
    root = write(tmp_path, {"lib/__init__.py": "", "lib/ops.py": "import torch\ndef f(x):\n    return x.cuda()\n"})
    report = run_script([root], kb)
    v = report["summary"]["verdict"]
    assert v["scope"] == "whole-tree" and report["summary"]["entry_points"] == []
    assert {f["reach"]["status"] for f in report["findings"]} == {"unknown"}
    assert v["effort"] == "low"


def test_script_relative_imports_are_linked(tmp_path, kb):
    root = write(tmp_path, {
        "word_lm/main.py": """
            import model
            if __name__ == "__main__":
                m = model.RNNModel()
        """,
        "word_lm/model.py": """
            import torch
            class RNNModel(torch.nn.Module):
                def forward(self, x):
                    return x.cuda()
        """,
    })
    report = run_script([root], kb)
    f = find(report, "word_lm/model.py", "torch.Tensor.cuda")
    assert f["reach"]["status"] in ("reachable", "unknown")
    assert f["reach"]["status"] != "unreached"


# --------------------------------------------------------------------------- guards on findings

def test_guard_on_findings_and_inherited_through_calls(tmp_path, kb):
    root = write(tmp_path, {
        "export.py": """
            import argparse

            def export_engine(model):
                import tensorrt as trt
                return trt.Builder(trt.Logger())

            def run(model, include=("onnx",)):
                engine = "engine" in include
                if engine:
                    export_engine(model)
                return model

            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--trt", action="store_true")
                args = p.parse_args()
                run(None)
        """,
        "attn.py": """
            import torch
            try:
                from flash_attn import flash_attn_func
                HAVE_FLASH = True
            except ImportError:
                HAVE_FLASH = False

            def attention(q, k, v):
                if HAVE_FLASH:
                    return flash_attn_func(q, k, v)
                return torch.nn.functional.scaled_dot_product_attention(q, k, v)

            if __name__ == "__main__":
                attention(None, None, None)
        """,
    })
    report = run_script([root], kb)
    trt = find(report, "export.py", "tensorrt")
    assert trt["guard"]["kind"] == "option" and trt["guard"]["fallback"] is True
    assert trt["guard"]["path"] == "export.py" and trt["guard"]["line"] == 10   # the `if engine:` call site
    fa = find(report, "attn.py", "flash_attn.flash_attn_func", line=11)
    assert fa["guard"] == {"kind": "availability-check", "line": 10, "fallback": True, "condition": "HAVE_FLASH",
                           "on_path": {"transfer_to_npu": "conditional", "no_transfer": "conditional"},
                           "depends_on": "depends on `HAVE_FLASH` (whether the optional library is installed)"}
    imp = find(report, "attn.py", "flash_attn.flash_attn_func", line=4)
    assert imp["guard"]["kind"] == "import-fallback"
    v = report["summary"]["verdict"]
    # everything GPU-only is optional here: nothing blocks
    assert v["effort"] in ("none", "low") and v["blockers"] == 0
    assert report["summary"]["off_path"]["by_reason"]["guarded"] >= 3


# --------------------------------------------------------------------------- the verdict

YOLO_LIKE = {
    "train.py": """
        import torch
        from models.common import Backend
        from utils.torch_utils import select_device

        def train(opt):
            device = select_device(opt.device)
            model = torch.nn.Linear(2, 2).to(device)
            scaler = torch.cuda.amp.GradScaler()
            return model, scaler

        if __name__ == "__main__":
            train(None)
    """,
    "models/__init__.py": "",
    "models/common.py": """
        class Backend:
            def __init__(self, w, pt=True, engine=False):
                if pt:
                    self.model = load(w)
                elif engine:
                    import tensorrt as trt
                    self.logger = trt.Logger()
    """,
    "utils/__init__.py": "",
    "utils/torch_utils.py": """
        import torch

        def select_device(device=""):
            return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    """,
    "utils/collect_env.py": """
        from torch.utils.cpp_extension import CUDA_HOME

        def info():
            return CUDA_HOME

        if __name__ == "__main__":
            print(info())
    """,
    "tests/test_models.py": """
        import apex
        from models.common import Backend

        def test_it():
            apex.amp.initialize(None)
    """,
}


def test_verdict_is_the_worst_product_entry_point(tmp_path, kb, report_schema):
    import jsonschema

    root = write(tmp_path, YOLO_LIKE)
    report = run_script([root], kb)
    jsonschema.validate(report, report_schema)
    s = report["summary"]
    v = s["verdict"]
    assert v["scope"] == "entry-points"
    eps = eps_of(report)
    assert eps[("train.py", None)]["verdict"]["effort"] == "low"
    assert eps[("utils/collect_env.py", None)]["role"] == "tool"
    assert eps[("utils/collect_env.py", None)]["verdict"]["effort"] == "blocked"   # its own verdict
    assert v["effort"] == "low"                       # the tool does not set the project's grade
    assert v["drivers"][0]["severity"] == "auto"
    assert all("tensorrt" not in d["api"] and "CUDA_HOME" not in d["api"] for d in v["drivers"])
    assert v["explanation"].startswith("LOW by ")
    assert "train.py" in v["explanation"]
    off = s["off_path"]
    assert off["by_role"]["test"] >= 2 and off["by_role"]["tool"] >= 1
    assert off["by_severity"]["blocker"] >= 1
    assert s["complete"] is True
    # nothing dropped: every finding is still listed
    assert len(report["findings"]) == sum(s["by_severity"].values())
    assert find(report, "tests/test_models.py", "apex")["role"] == "test"


def test_low_confidence_findings_alone_never_grade_above_medium():
    from analyse.findings import Finding
    from analyse.report import grade_findings

    def f(i, conf):
        return Finding(code="NPU201", category="unsupported-api", severity="blocker", path="a.py", line=i,
                       api=f"torch.x{i}", message="m", confidence=conf)

    assert grade_findings([f(1, "low"), f(2, "low")])[0] == "medium"
    assert grade_findings([f(1, "low"), f(2, "high")])[0] == "blocked"


def test_unparsable_only_folder_is_incomplete_and_unknown(tmp_path, kb, report_schema):
    import jsonschema

    root = write(tmp_path, {"broken.py": "def f(:\n    pass\n"})
    report = run_script([root], kb)
    jsonschema.validate(report, report_schema)
    assert report["summary"]["complete"] is False
    assert report["summary"]["verdict"]["effort"] == "unknown"
    assert report["summary"]["incomplete_files"] == ["broken.py"]


def test_a_failed_file_makes_the_analysis_incomplete(tmp_path, kb):
    root = write(tmp_path, {"train.py": "import torch\nif __name__ == '__main__':\n    torch.zeros(1).cuda()\n",
                            "lib.py": "def f(:\n"})
    report = run_script([root], kb)
    assert report["summary"]["complete"] is False
    assert report["summary"]["verdict"]["effort"] == "low"
    assert "Analysis incomplete" in report["summary"]["verdict"]["explanation"]


def test_bundled_examples_give_one_row_per_program(kb):
    examples = ROOT / "examples"
    report = run_script([examples], kb)
    rows = {e["path"] for e in report["summary"]["entry_points"]}
    programs = {f"{d.name}/{p.name}" for d in examples.iterdir() if d.is_dir() for p in d.glob("*.py")}
    assert rows == programs
    assert all(e["role"] == "product" for e in report["summary"]["entry_points"])


def test_thirdparty_findings_get_role_and_reach(tmp_path, kb):
    from analyse.modes import run_thirdparty

    root = write(tmp_path / "mylib", {
        "__init__.py": "",
        "ops.py": "import torch\ndef f(x):\n    return x.cuda()\n",
        "tests/test_ops.py": "import torch\ndef test_f():\n    torch.cuda.synchronize()\n",
    })
    report = run_thirdparty([root], kb, roles={"tests/": "example"})
    roles = {f["path"]: f["role"] for f in report["findings"]}
    assert roles["ops.py"] == "product" and roles["tests/test_ops.py"] == "example"
    assert {f["reach"]["status"] for f in report["findings"]} == {"unknown"}


def test_reach_facts_are_made_from_the_tree_when_a_summary_has_none(tmp_path, kb):
    """An entry of an older cache has summaries without reach facts: they are made again from the tree."""
    from analyse import pipeline
    from analyse.reach import module_facts, summary_facts

    root = write(tmp_path, REACH)
    result = pipeline.run([root], kb, mode="script")
    s = next(x for x in result.summaries if x.relpath == "train.py")
    made = dict(s.reach)
    assert made["main_guard"] is True and any("lib.model" in t for _c, _l, ts, _a, _g in made["imports"] for t in ts)
    s.reach = {}
    again = summary_facts(s, result.sources)
    assert again == module_facts(result.sources["train.py"].tree, s.modname, s.relpath, False) or again["main_guard"]
    assert again["imports"] == made["imports"] and again["getattr"] == made["getattr"]


def test_every_guard_kind_reaches_the_findings(tmp_path, kb):
    root = write(tmp_path, {
        "run.py": """
            import sys
            import platform
            import torch

            def step(x, device):
                if device.type == "cuda":
                    torch.cuda.synchronize()
                else:
                    x = x.float()
                if torch.__version__ >= "2.0":
                    torch.cuda.empty_cache()
                if sys.platform == "linux":
                    torch.cuda.reset_peak_memory_stats()
                return x

            if __name__ == "__main__":
                step(torch.ones(1), torch.device("cpu"))
        """,
    })
    report = run_script([root], kb)
    kinds = {f["api"]: (f.get("guard") or {}).get("kind") for f in report["findings"]}
    assert kinds["torch.cuda.synchronize"] == "device-branch"
    assert kinds["torch.cuda.empty_cache"] == "version-check"
    assert kinds["torch.cuda.reset_peak_memory_stats"] == "platform-check"
    sync = find(report, "run.py", "torch.cuda.synchronize")
    assert sync["guard"]["fallback"] is True and sync["reach"]["status"] == "entry-point"


def test_a_registered_function_of_imported_code_is_unknown(tmp_path, kb):
    root = write(tmp_path, {
        "main.py": """
            from lib import registry
            if __name__ == "__main__":
                fn = registry.REGISTRY["resnet"]
        """,
        "lib/__init__.py": "",
        "lib/registry.py": """
            import torch
            REGISTRY = {}

            def register(fn):
                REGISTRY[fn.__name__] = fn
                return fn

            @register
            def resnet():
                return torch.cuda.current_device()

            def unused():
                return torch.cuda.device_count()
        """,
    })
    report = run_script([root], kb)
    reg = find(report, "lib/registry.py", "torch.cuda.current_device")
    assert reg["reach"]["status"] == "unknown" and "decorated" in reg["reach"]["reason"]
    assert find(report, "lib/registry.py", "torch.cuda.device_count")["reach"]["status"] == "unreached"


def test_a_device_guard_below_a_guard_without_alternative_is_inherited(tmp_path, kb):
    """Code reached only under `if ckpt.version >= 4:` (no else: it still runs on an NPU host) and, below it,
    only under `if x.device.type == "cuda" and _init():` (a reference implementation runs otherwise) inherits
    the device guard: the JIT-built plugin is off the path. The same plugin reached under the weak guard
    alone stays counted."""
    files = {
        "ops/__init__.py": "",
        "ops/plugin.py": """
            from torch.utils import cpp_extension

            def get_plugin(name):
                try:
                    return cpp_extension.load(name=name, sources=[name + ".cu"])
                except Exception:
                    raise
        """,
        "ops/act.py": """
            from ops import plugin
            _plugin = None

            def _init():
                global _plugin
                if _plugin is None:
                    _plugin = plugin.get_plugin("act_plugin")
                return True

            def act(x, impl="cuda"):
                if impl == "cuda" and x.device.type == "cuda" and _init():
                    return _plugin.act(x)
                return x.relu()
        """,
        "net.py": """
            from ops.act import act

            class Net:
                def forward(self, x):
                    return act(x)
        """,
        "load.py": """
            import net

            def load(ckpt):
                if ckpt.version >= 4:
                    return net.Net()
                return None

            if __name__ == "__main__":
                load(None).forward(None)
        """,
    }
    # VALID: the device-guarded plugin build is not counted, the program is not blocked by it
    report = run_script([write(tmp_path / "guarded", files)], kb)
    f = find(report, "ops/plugin.py", "torch.utils.cpp_extension.load", line=6)
    assert f["guard"]["kind"] == "device-branch" and f["guard"]["path"] == "ops/act.py" and f["guard"]["line"] == 12
    assert f["counted"] is False
    ep = eps_of(report)[("load.py", None)]
    assert all("cpp_extension" not in d["api"] for d in ep["verdict"]["drivers"])
    # INVALID: without the device test the plugin is built under the weak guard alone: counted
    files["ops/act.py"] = files["ops/act.py"].replace('if impl == "cuda" and x.device.type == "cuda" and _init():',
                                                      'if _init():')
    report = run_script([write(tmp_path / "plain", files)], kb)
    f = find(report, "ops/plugin.py", "torch.utils.cpp_extension.load", line=6)
    assert f["counted"] is True


def test_a_monkey_patched_library_method_is_reached_from_the_patching_program(tmp_path, kb):
    """`transformers...LlamaAttention.forward = xformers_forward` in a program's top level: the library calls
    the patched method from then on, so the program reaches the project's replacement (and its xformers
    calls); a program that does not patch does not."""
    root = write(tmp_path, {
        "patch.py": """
            import transformers.models.llama.modeling_llama
            import xformers.ops

            def replace_attn():
                transformers.models.llama.modeling_llama.LlamaAttention.forward = xformers_forward

            def xformers_forward(self, q, k, v):
                return xformers.ops.memory_efficient_attention(q, k, v)
        """,
        "train_core.py": """
            import torch

            def train():
                torch.cuda.synchronize()
        """,
        "train_patched.py": """
            from patch import replace_attn
            replace_attn()
            from train_core import train

            if __name__ == "__main__":
                train()
        """,
        "train_plain.py": """
            from train_core import train

            if __name__ == "__main__":
                train()
        """,
    })
    report = run_script([root], kb)
    f = find(report, "patch.py", "xformers.ops.memory_efficient_attention")
    # VALID: the patching program reaches the replacement forward and is graded by it
    assert f["reach"]["status"] == "reachable" and f["counted"] is True
    assert f["reach"]["entry_points"] == ["train_patched.py"]
    assert f["reach"]["path"][-2:] == ["patch.replace_attn", "patch.xformers_forward"]
    eps = eps_of(report)
    assert "xformers.ops.memory_efficient_attention" in [d["api"] for d in eps[("train_patched.py", None)]["verdict"]["drivers"]]
    # INVALID: the program that does not patch is not
    assert eps[("train_plain.py", None)]["verdict"]["effort"] == "low"
    assert all("xformers" not in d["api"] for d in eps[("train_plain.py", None)]["verdict"]["drivers"])
