"""Script mode, round 43 (integration): which code a program runs when its configuration chooses among
implementations, and what module-level code only names.

* a guard that depends on a choice (``elif cfg.strategy == "megatron": import megatron_workers``) below one that holds
  with the defaults (``if runner is None:``) narrows the path: the code is off the default path as a choice, not
  counted as surely run;
* a class named in a type test (``isinstance(x, Worker)``) or handed to a conversion (``tuple(types)``) is not
  built there;
* what a decorator factory is handed (``@copy_signature(other)``) runs, if at all, with the decorated function;
* ``from torch.utils.cpp_extension import CUDA_HOME`` in a module that reads the name elsewhere is no finding of its
  own: each use is reported where it is made;
* ``runpy.run_path(<file next to the program>, run_name="__main__")`` runs that file as the program.

VALID / INVALID pairs; no project code copied (the shapes: a trainer choosing its workers by a config strategy, a
reward helper testing a worker's type, spec helpers, a UVM allocator module, a deprecated launcher)."""

from __future__ import annotations

from analyse.modes import run_script
from helpers import write_files


def _counted(rep, path, line=None):
    return [f for f in rep["findings"] if f["path"] == path and (line is None or f["line"] == line) and f.get("counted")]


def _ep(rep, path):
    return next(e for e in rep["summary"]["entry_points"] if e["path"] == path)


# ---------------------------------------------------------------- a choice below a guard that holds by default

def _strategy_project(choice: bool) -> dict:
    pick = ("""
                    if cfg.strategy == "fsdp":
                        from workers.fsdp_workers import Worker
                    elif cfg.strategy == "megatron":
                        from workers.megatron_workers import Worker
    """ if choice else """
                    from workers.megatron_workers import Worker
    """)
    return {
        "workers/__init__.py": "",
        "workers/fsdp_workers.py": """
            import torch


            class Worker:
                def run(self):
                    return torch.zeros(1)
        """,
        "workers/megatron_workers.py": """
            from megatron.core import parallel_state


            class Worker:
                def run(self):
                    return parallel_state.get_tensor_model_parallel_rank()
        """,
        "train.py": """
            import argparse


            class Runner:
                def add_worker(self, cfg):""" + pick.rstrip() + """
                    return Worker().run()


            def remote(cls):
                return cls


            def run(cfg, runner_cls=None):
                if runner_cls is None:
                    runner_cls = remote(Runner)
                return runner_cls().add_worker(cfg)


            if __name__ == "__main__":
                parser = argparse.ArgumentParser()
                parser.add_argument("--strategy", required=True, choices=["fsdp", "megatron"])
                run(parser.parse_args())
        """,
    }


def test_valid_a_choice_below_a_default_guard_keeps_the_other_workers_off_the_count(tmp_path, kb):
    write_files(tmp_path, _strategy_project(choice=True))
    rep = run_script([tmp_path], kb)
    assert not _counted(rep, "workers/megatron_workers.py")
    listed = [f for f in rep["findings"] if f["path"] == "workers/megatron_workers.py" and f["line"] == 2]
    assert listed and listed[0]["guard"]["on_path"]["transfer_to_npu"] == "conditional"
    assert "megatron" in listed[0]["guard"]["condition"]


def test_invalid_workers_imported_under_the_default_guard_alone_are_counted(tmp_path, kb):
    write_files(tmp_path, _strategy_project(choice=False))
    rep = run_script([tmp_path], kb)
    assert _counted(rep, "workers/megatron_workers.py", 2)


# ---------------------------------------------------------------- type tests and conversions build nothing

def _type_test_project(tested: bool) -> dict:
    use = ("""
                if isinstance(args[0], Worker) or issubclass(type(args[0]), (Worker,)):
                    return 1
                return tuple([Worker])
    """ if tested else """
                return Worker().rank
    """)
    return {
        "lib/__init__.py": "",
        "lib/worker.py": """
            import os


            class Worker:
                def __init__(self):
                    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
                    self.rank = 0
        """,
        "lib/collect.py": """
            from lib.worker import Worker


            def need_collect(args):""" + use.rstrip() + """
        """,
        "score.py": """
            from lib.collect import need_collect

            if __name__ == "__main__":
                print(need_collect([object()]))
        """,
    }


def test_valid_a_class_in_a_type_test_is_not_built(tmp_path, kb):
    write_files(tmp_path, _type_test_project(tested=True))
    rep = run_script([tmp_path], kb)
    assert not _counted(rep, "lib/worker.py")


def test_invalid_a_class_the_code_builds_is_reached(tmp_path, kb):
    write_files(tmp_path, _type_test_project(tested=False))
    rep = run_script([tmp_path], kb)
    assert _counted(rep, "lib/worker.py", 7)


# ---------------------------------------------------------------- a decorator factory's argument

def _decorator_project(decorated: bool) -> dict:
    spec = ("""
            @copy_signature(inference_layer)
            def inference_spec(*args, **kwargs):
                return inference_layer(*args, **kwargs)
    """ if decorated else """
            copy_signature(inference_layer)(len)
    """)
    return {
        "lib/__init__.py": "",
        "lib/specs.py": """
            import functools

            import flash_attn


            def copy_signature(source):
                def wrap(fn):
                    return functools.wraps(source)(fn)
                return wrap


            def inference_layer(x):
                return flash_attn.flash_attn_func(x, x, x)


            def train_layer(x):
                return x

        """ + spec,
        "train.py": """
            from lib.specs import train_layer

            if __name__ == "__main__":
                print(train_layer(1))
        """,
    }


def test_valid_what_a_decorator_is_handed_runs_with_the_decorated_function(tmp_path, kb):
    write_files(tmp_path, _decorator_project(decorated=True))
    rep = run_script([tmp_path], kb)
    assert not _counted(rep, "lib/specs.py", 14)


def test_invalid_a_reference_handed_to_a_call_at_import_time_is_reached(tmp_path, kb):
    write_files(tmp_path, _decorator_project(decorated=False))
    rep = run_script([tmp_path], kb)
    assert _counted(rep, "lib/specs.py", 14)


# ---------------------------------------------------------------- CUDA_HOME imported and read

def _cuda_home_project(read: bool) -> dict:
    body = ("""
            def compile_allocator(level):
                if level > 0:
                    return load_inline(name="uvm", cpp_sources="", with_cuda=CUDA_HOME is not None)
                return None
    """ if read else "")
    return {
        "lib/__init__.py": "",
        "lib/uvm.py": """
            from torch.utils.cpp_extension import CUDA_HOME, load_inline
        """ + body,
        "train.py": """
            import argparse

            from lib.uvm import compile_allocator

            if __name__ == "__main__":
                p = argparse.ArgumentParser()
                p.add_argument("--uvm-level", type=int, default=0)
                a = p.parse_args()
                if a.uvm_level > 0:
                    compile_allocator(a.uvm_level)
        """,
    }


def test_valid_an_imported_cuda_home_that_the_module_reads_is_reported_at_its_uses(tmp_path, kb):
    write_files(tmp_path, _cuda_home_project(read=True))
    rep = run_script([tmp_path], kb)
    on_import = [f for f in rep["findings"] if f["path"] == "lib/uvm.py" and f["line"] == 2]
    assert not on_import
    uses = [f for f in rep["findings"] if f["path"] == "lib/uvm.py" and f["code"] == "NPU503"]
    assert uses and all(not f["counted"] for f in uses)
    assert _ep(rep, "train.py")["verdict"]["effort"] in ("none", "low")


def test_invalid_an_imported_cuda_home_nothing_reads_stays_a_finding(tmp_path, kb):
    write_files(tmp_path, _cuda_home_project(read=False))
    rep = run_script([tmp_path], kb)
    on_import = [f for f in rep["findings"] if f["path"] == "lib/uvm.py" and f["line"] == 2 and f["code"] == "NPU503"]
    assert on_import


# ---------------------------------------------------------------- runpy

def _runpy_project(as_main: bool) -> dict:
    return {
        "pretrain_hybrid.py": """
            import flash_attn


            def main():
                return flash_attn.flash_attn_func(1, 2, 3)


            if __name__ == "__main__":
                main()
        """,
        "pretrain_old.py": """
            import os
            import runpy

            if __name__ == "__main__":
                here = os.path.dirname(os.path.abspath(__file__))
                runpy.run_path(os.path.join(here, "pretrain_hybrid.py")""" + (', run_name="__main__")' if as_main else ")") + """
        """,
    }


def test_valid_runpy_runs_the_file_as_the_program(tmp_path, kb):
    write_files(tmp_path, _runpy_project(as_main=True))
    rep = run_script([tmp_path], kb)
    ep = _ep(rep, "pretrain_old.py")
    assert ep["verdict"]["effort"] not in ("none", "low")
    assert any("flash_attn" in d["api"] for d in ep["verdict"]["drivers"])


def test_invalid_runpy_under_another_name_runs_only_the_top_level(tmp_path, kb):
    write_files(tmp_path, _runpy_project(as_main=False))
    rep = run_script([tmp_path], kb)
    ep = _ep(rep, "pretrain_old.py")
    assert not any(d["api"] == "flash_attn.flash_attn_func" for d in ep["verdict"]["drivers"])
