"""Script mode, round 43 (integration): what a program runs when a configuration chooses among implementations.

* what a module-level binding keeps (``spec = Spec(module=FlashLayer)``) runs where code reads the binding, and what a
  function hands back (``return Spec(...)``, also through a local it only returns) where a caller takes it;
* each program counts a finding under the guard of its own path when another program reaches it unguarded;
* a method only the class's own code calls under an option (``if cfg.graphs == "local": self.make_graphs()``) runs
  under that option, and so does what only such a method builds;
* a local bound to one of several classes by an option (``DP = FSDP`` under ``if use_fsdp:``) builds each under its
  binding's guard; a parameter's default class is what the call builds with the defaults; a config class naming
  its builder by path (``builder = "pkg.gpt.GPTBuilder"``) builds that class;
* conditions: the ``else`` of a test of flags that holds by default (``use_te is not None and use_te``) is off, and
  on where a caller passes the other value; options a test file declares are no program's defaults; an ``except
  ImportError:`` whose GPU-only import sits under ``if TYPE_CHECKING:`` and which binds the module to a mock
  keeps the import working, while the functions that use the mock have no fallback; a project that is itself a
  GPU-only library of the knowledge base (its own package) is read as the project's code.

VALID / INVALID pairs; no project code copied (the shapes: layer specs of a model-parallel trainer, a trainer's
wrapping of its model for data parallelism, a model config and its builder)."""

from __future__ import annotations

from analyse.modes import run_script
from helpers import write_files

_LAYERS = """
    class FlashLayer:
        def __init__(self):
            import flash_attn

            self.out = flash_attn.flash_attn_func(1, 2, 3)


    class PlainLayer:
        def __init__(self):
            self.out = 0
"""

_SPEC = """
    from dataclasses import dataclass


    @dataclass
    class Spec:
        module: object
        sub: object = None


    def build(spec):
        return spec.module()
"""


def _ep(rep, path):
    return next(e for e in rep["summary"]["entry_points"] if e["path"] == path)


def _drivers(rep, path):
    return [d["api"] for d in _ep(rep, path)["verdict"]["drivers"]]


# ---------------------------------------------------------------- kept values

def _kept_project(read: bool) -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/layers.py": _LAYERS,
        "pkg/spec.py": _SPEC,
        "pkg/specs.py": """
            from functools import partial

            from pkg.layers import FlashLayer, PlainLayer
            from pkg.spec import Spec


            def flash_sub():
                inner = partial(FlashLayer)
                return Spec(module=inner)


            flash_spec = Spec(module=FlashLayer, sub=flash_sub())
            plain_spec = Spec(module=PlainLayer)
        """,
        "train.py": """
            from pkg.spec import build
            from pkg.specs import """ + ("flash_spec" if read else "plain_spec") + """


            def main():
                return build(""" + ("flash_spec" if read else "plain_spec") + """)


            if __name__ == "__main__":
                main()
        """,
    }


def test_valid_a_spec_binding_nobody_reads_builds_nothing(tmp_path, kb):
    write_files(tmp_path, _kept_project(read=False))
    rep = run_script([tmp_path], kb)
    assert not any("flash_attn" in d for d in _drivers(rep, "train.py"))
    found = [f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func"]
    assert found and all(not f["counted"] for f in found)


def test_invalid_a_spec_binding_the_program_reads_builds_its_classes(tmp_path, kb):
    write_files(tmp_path, _kept_project(read=True))
    rep = run_script([tmp_path], kb)
    assert "flash_attn.flash_attn_func" in _drivers(rep, "train.py")
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert "pkg.specs.flash_spec" in f["reach"]["path"]


# ---------------------------------------------------------------- per-program guards, self-only guarded methods

def _graphs_project(option: bool) -> dict:
    init = ("""
                    if cfg.graph_impl == "local":
                        self.make_graphs(cfg)
    """ if option else """
                    self.make_graphs(cfg)
    """)
    return {
        "pkg/__init__.py": "",
        "pkg/graphs.py": """
            import torch


            class GraphManager:
                def __init__(self, cfg):
                    self.pool = torch._C._cuda_beginAllocateCurrentThreadToPool(0, (0, 0))
        """,
        "pkg/config.py": """
            from dataclasses import dataclass


            @dataclass
            class Config:
                graph_impl: str = "none"
        """,
        "pkg/layer.py": """
            from pkg.graphs import GraphManager


            class Layer:
                def __init__(self, cfg):""" + init.rstrip() + """

                def make_graphs(self, cfg):
                    self.manager = GraphManager(cfg)
        """,
        "train.py": """
            from pkg.config import Config
            from pkg.layer import Layer

            if __name__ == "__main__":
                Layer(Config())
        """,
    }


def test_valid_a_method_only_called_under_an_option_runs_under_it(tmp_path, kb):
    write_files(tmp_path, _graphs_project(option=True))
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "train.py")["verdict"]["effort"] != "blocked"


def test_invalid_a_method_called_unconditionally_runs(tmp_path, kb):
    write_files(tmp_path, _graphs_project(option=False))
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "train.py")["verdict"]["effort"] == "blocked"


def _two_programs(guarded: bool) -> dict:
    call = ("""
                if args.uvm:
                    allocate()
    """ if guarded else """
                allocate()
    """)
    return {
        "pkg/__init__.py": "",
        "pkg/uvm.py": """
            import torch


            def allocate():
                return torch._C._cuda_beginAllocateCurrentThreadToPool(0, (0, 0))
        """,
        "serve.py": """
            from pkg.uvm import allocate

            if __name__ == "__main__":
                allocate()
        """,
        "train.py": """
            import argparse

            from pkg.uvm import allocate

            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--uvm", action="store_true")
                args = p.parse_args()""" + call.rstrip() + """
        """,
    }


def test_valid_a_program_counts_its_own_guard_where_another_reaches_the_code_unguarded(tmp_path, kb):
    write_files(tmp_path, _two_programs(guarded=True))
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "serve.py")["verdict"]["effort"] == "blocked"
    assert _ep(rep, "train.py")["verdict"]["effort"] != "blocked"


def test_invalid_both_programs_reach_it_unguarded(tmp_path, kb):
    write_files(tmp_path, _two_programs(guarded=False))
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "train.py")["verdict"]["effort"] == "blocked"


# ---------------------------------------------------------------- classes chosen by options

def _wrap_project(default_fsdp: bool) -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/dp.py": """
            from torch.distributed._symmetric_memory import rendezvous


            class FSDP:
                def __init__(self, m):
                    self.h = rendezvous(m, "g")


            class DDP:
                def __init__(self, m):
                    self.m = m


            def wrap(m, use_fsdp: bool = """ + str(default_fsdp) + """):
                if use_fsdp:
                    DP = FSDP
                else:
                    DP = DDP
                return DP(m)
        """,
        "train.py": """
            from pkg.dp import wrap

            if __name__ == "__main__":
                wrap(1)
        """,
    }


def test_valid_a_class_an_option_binds_is_built_under_that_option(tmp_path, kb):
    write_files(tmp_path, _wrap_project(default_fsdp=False))
    rep = run_script([tmp_path], kb)
    assert not any("_symmetric_memory" in d for d in _drivers(rep, "train.py"))


def test_invalid_the_class_the_default_binds_is_built(tmp_path, kb):
    write_files(tmp_path, _wrap_project(default_fsdp=True))
    rep = run_script([tmp_path], kb)
    assert any("_symmetric_memory" in d for d in _drivers(rep, "train.py"))


def _builder_project(named: bool) -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/gpt.py": """
            import importlib
            from dataclasses import dataclass
            from typing import ClassVar

            import flash_attn


            @dataclass
            class ModelConfig:
                layers: int = 2
                builder: ClassVar[str] = """ + ('"pkg.gpt.GPTBuilder"' if named else '"GPTBuilder"') + """

                def builder_cls(self):
                    path, name = self.builder.rsplit(".", 1)
                    return getattr(importlib.import_module(path), name)


            class GPTBuilder:
                def __init__(self, cfg):
                    self.cfg = cfg

                def build(self):
                    return flash_attn.flash_attn_func(1, 2, 3)


            def config_from_args(args, config_cls=ModelConfig):
                return config_cls(layers=args)
        """,
        "train.py": """
            from pkg.gpt import config_from_args

            if __name__ == "__main__":
                cfg = config_from_args(2)
                cfg.builder_cls()(cfg).build()
        """,
    }


def test_valid_a_parameter_default_config_naming_its_builder_builds_it(tmp_path, kb):
    write_files(tmp_path, _builder_project(named=True))
    rep = run_script([tmp_path], kb)
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert f["reach"]["status"] == "reachable"
    assert "pkg.gpt.ModelConfig" in f["reach"]["path"] and "pkg.gpt.GPTBuilder.build" in f["reach"]["path"]


def test_invalid_a_builder_named_by_no_path_is_not_followed(tmp_path, kb):
    write_files(tmp_path, _builder_project(named=False))
    rep = run_script([tmp_path], kb)
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert f["reach"]["status"] != "reachable"


# ---------------------------------------------------------------- conditions

def _flag_else_project(caller_value) -> dict:
    call = "get_backend()" if caller_value is None else f"get_backend(use_te={caller_value})"
    return {
        "pkg/__init__.py": "",
        "pkg/backends.py": """
            import flash_attn


            class TEBackend:
                def run(self):
                    return 1


            class LocalBackend:
                def run(self):
                    return flash_attn.flash_attn_func(1, 2, 3)


            def get_backend(use_te=True):
                if use_te is not None and use_te:
                    backend = TEBackend()
                else:
                    backend = LocalBackend()
                return backend.run()
        """,
        "train.py": """
            from pkg.backends import get_backend

            if __name__ == "__main__":
                """ + call + """
        """,
    }


def test_valid_the_else_of_a_default_on_flag_test_is_off(tmp_path, kb):
    write_files(tmp_path, _flag_else_project(None))
    rep = run_script([tmp_path], kb)
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert not f["counted"] and f["guard"]["on_path"]["transfer_to_npu"] == "off"


def test_invalid_the_else_runs_where_a_caller_passes_the_other_value(tmp_path, kb):
    write_files(tmp_path, _flag_else_project(False))
    rep = run_script([tmp_path], kb)
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert f["counted"] and "use_te=False" in f["guard"]["condition"]


def _test_options_project(in_tests: bool) -> dict:
    where = "tests/test_engine.py" if in_tests else "pkg/other_config.py"
    return {
        "pkg/__init__.py": "",
        "pkg/config.py": """
            from dataclasses import dataclass


            @dataclass
            class Config:
                impl: str = "te"
        """,
        where: """
            from dataclasses import dataclass


            @dataclass
            class EngineConfig:
                impl: str = "local"
        """,
        "pkg/model.py": """
            import flash_attn


            def build(config):
                if config.impl == "local":
                    return flash_attn.flash_attn_func(1, 2, 3)
                return 0
        """,
        "train.py": """
            from pkg.config import Config
            from pkg.model import build

            if __name__ == "__main__":
                build(Config())
        """,
    }


def test_valid_a_test_files_option_is_no_program_default(tmp_path, kb):
    write_files(tmp_path, _test_options_project(in_tests=True))
    rep = run_script([tmp_path], kb)
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert f["guard"]["on_path"]["transfer_to_npu"] == "off"


def test_invalid_two_product_declarations_leave_the_choice_open(tmp_path, kb):
    write_files(tmp_path, _test_options_project(in_tests=False))
    rep = run_script([tmp_path], kb)
    f = next(f for f in rep["findings"] if f["api"] == "flash_attn.flash_attn_func")
    assert f["guard"]["on_path"]["transfer_to_npu"] == "conditional"


def _mock_project(mocked: bool) -> dict:
    handler = ("""
                if TYPE_CHECKING:
                    import transformer_engine as te
                else:
                    from unittest.mock import MagicMock

                    te = MagicMock()
    """ if mocked else """
                te = None
    """)
    return {
        "pkg/__init__.py": "",
        "pkg/te_layers.py": """
            from typing import TYPE_CHECKING

            try:
                import transformer_engine as te
            except ImportError:""" + handler.rstrip() + """


            class TELinear:
                def __init__(self, n):
                    self.inner = te.pytorch.Linear(n, n)
        """,
        "prep.py": """
            import pkg.te_layers

            if __name__ == "__main__":
                print("tokenise")
        """,
        "train.py": """
            from pkg.te_layers import TELinear

            if __name__ == "__main__":
                TELinear(4)
        """,
    }


def test_valid_a_mocked_module_imports_and_its_users_need_the_library(tmp_path, kb):
    write_files(tmp_path, _mock_project(mocked=True))
    rep = run_script([tmp_path], kb)
    imp = next(f for f in rep["findings"] if f["path"] == "pkg/te_layers.py" and f["line"] == 5)
    assert imp["severity"] in ("advice", "info")
    assert _ep(rep, "prep.py")["verdict"]["effort"] in ("none", "low")
    assert any("transformer_engine" in d for d in _drivers(rep, "train.py"))
    use = next(f for f in rep["findings"] if f["api"].startswith("transformer_engine.pytorch"))
    assert "mock" in use["message"]


def test_invalid_a_none_placeholder_is_no_mock(tmp_path, kb):
    write_files(tmp_path, _mock_project(mocked=False))
    rep = run_script([tmp_path], kb)
    assert not any("mock" in f["message"] for f in rep["findings"])


def _own_library_project(own: bool) -> dict:
    top = "megatron" if own else "mylib"
    return {
        f"{top}/__init__.py": "",
        f"{top}/utils.py": """
            def local_applier(*a):
                return 0
        """,
        f"{top}/optim.py": """
            try:
                from apex.multi_tensor_apply import multi_tensor_applier
            except ImportError:
                from """ + top + """.utils import local_applier

                multi_tensor_applier = local_applier
        """,
        "train.py": """
            from """ + top + """.optim import multi_tensor_applier

            if __name__ == "__main__":
                multi_tensor_applier(1)
        """,
    }


def test_valid_a_project_that_is_a_listed_library_falls_back_to_its_own_code(tmp_path, kb):
    write_files(tmp_path, _own_library_project(own=True))
    rep = run_script([tmp_path], kb)
    imp = next(f for f in rep["findings"] if f["api"].startswith("apex"))
    assert imp["severity"] in ("advice", "info") and not imp["counted"]


def test_invalid_a_plain_project_falls_back_likewise(tmp_path, kb):
    # the same shape under another name: the fallback works there too (the INVALID side of the rule is that the
    # project's own package was judged as the GPU-only library before; here it never was)
    write_files(tmp_path, _own_library_project(own=False))
    rep = run_script([tmp_path], kb)
    imp = next(f for f in rep["findings"] if f["api"].startswith("apex"))
    assert imp["severity"] in ("advice", "info")


# ---------------------------------------------------------------- unknown code of a module imported under a guard

def _optional_engine_project(guarded: bool) -> dict:
    imp = ("""
            try:
                from .mega import MegaEngine
            except ImportError:
                MegaEngine = None
    """ if guarded else """
            from .mega import MegaEngine
    """)
    return {
        "engines/__init__.py": imp,
        "engines/registry.py": """
            ENGINES = {}


            def register(cls):
                ENGINES[cls.__name__] = cls
                return cls
        """,
        "engines/mega.py": """
            from engines.registry import register


            @register
            class MegaEngine:
                def run(self):
                    from megatron.core import parallel_state

                    return parallel_state.get_tensor_model_parallel_rank()
        """,
        "mega_tool.py": """
            from engines.mega import MegaEngine

            if __name__ == "__main__":
                MegaEngine().run()
        """,
        "train.py": """
            import engines

            if __name__ == "__main__":
                print(engines)
        """,
    }


def test_valid_unknown_code_of_a_guarded_import_keeps_the_guard_for_that_program(tmp_path, kb):
    write_files(tmp_path, _optional_engine_project(guarded=True))
    rep = run_script([tmp_path], kb)
    assert any("megatron" in d for d in _drivers(rep, "mega_tool.py"))
    assert not any("megatron" in d for d in _drivers(rep, "train.py"))


def test_invalid_unknown_code_of_a_plain_import_counts_where_another_program_runs_it(tmp_path, kb):
    write_files(tmp_path, _optional_engine_project(guarded=False))
    rep = run_script([tmp_path], kb)
    assert any("megatron" in d for d in _drivers(rep, "train.py"))
