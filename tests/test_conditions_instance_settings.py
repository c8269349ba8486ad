"""Conditions in script mode: a setting an instance keeps from its constructor, tested where the instance is used.
``GPT.__init__(..., use_vllm=False)`` keeps ``self.is_vllm = use_vllm``; another class holds the instance
(``self.gpt = GPT(...).eval()``) and tests it through a local copy (``gpt = self.gpt; if gpt.is_vllm:``). The
test is the constructor's setting as the constructing call passes it (or its default): the opt-in engine behind
it is off the path (VALID). INVALID: the same test where the call turns it on (``use_vllm=True``) stays on.

And a distributed setting reached only through such an off-by-default call in another module is off the path
too, while one under its own off-by-default test (the program's distributed run mode) still counts."""

from analyse.modes import run_script
from helpers import write_files


def _files(passed: str):
    return {
        "pkg/__init__.py": "from .gpt import GPT\nfrom .core import Chat\n",
        "pkg/gpt.py": """
            class GPT:
                def __init__(self, dim, use_vllm=False):
                    self.dim = dim
                    self.is_vllm = use_vllm

                def eval(self):
                    return self
        """,
        "pkg/core.py": f"""
            from .gpt import GPT


            class Chat:
                def load(self, use_vllm=False):
                    gpt = GPT(8, use_vllm={passed}).eval()
                    self.gpt = gpt

                def infer(self, text):
                    gpt = self.gpt
                    if gpt.is_vllm:
                        from .engine import run_paged
                        return run_paged(text)
                    return text
        """,
        "pkg/engine.py": """
            import torch
            import vllm


            def run_paged(text):
                torch.cuda.synchronize()
                return vllm.LLM(text)
        """,
        "run.py": """
            from pkg import Chat

            if __name__ == "__main__":
                chat = Chat()
                chat.load()
                chat.infer("hi")
        """,
    }


def _counted(rep, api):
    return [f for f in rep["findings"] if f["api"] == api and f.get("counted")]


def test_an_instance_setting_off_by_default_keeps_its_engine_off_the_path(tmp_path, kb):
    # VALID (old: `gpt.is_vllm` on a local copy of self.gpt was an unknown test, the vllm engine counted: high)
    write_files(tmp_path, _files("use_vllm"))
    rep = run_script([tmp_path], kb)
    assert not _counted(rep, "vllm.LLM"), [f for f in rep["findings"] if f["api"] == "vllm.LLM"]
    assert rep["summary"]["verdict"]["effort"] in ("none", "low")


def test_an_instance_setting_the_call_turns_on_stays_on(tmp_path, kb):
    # INVALID: the constructing call passes True: the engine runs
    write_files(tmp_path, _files("True"))
    rep = run_script([tmp_path], kb)
    assert _counted(rep, "vllm.LLM")


DIST = {
    "pkg/__init__.py": "",
    "pkg/engine.py": """
        import os
        import torch.distributed as dist


        class Engine:
            def __init__(self):
                os.environ.pop("NCCL_ASYNC_ERROR_HANDLING", None)
    """,
    "pkg/model.py": """
        class Model:
            def __init__(self, use_engine=False):
                self.use_engine = use_engine

            def load(self):
                if self.use_engine:
                    from .engine import Engine
                    self.engine = Engine()
    """,
    "train.py": """
        import argparse
        import os
        import torch.distributed as dist
        from pkg.model import Model

        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            p.add_argument("--distributed", action="store_true")
            args = p.parse_args()
            if args.distributed:
                os.environ["NCCL_ASYNC_ERROR_HANDLING"] = "1"
            Model().load()
    """,
}


def test_a_distributed_setting_behind_an_off_call_elsewhere_is_off_the_path(tmp_path, kb):
    write_files(tmp_path, DIST)
    rep = run_script([tmp_path], kb)
    got = {(f["path"], f.get("counted")) for f in rep["findings"] if f["api"] == "NCCL_ASYNC_ERROR_HANDLING"}
    # VALID (old: a distributed finding was never off the path, even behind another module's off-by-default call)
    assert ("pkg/engine.py", False) in got, got
    # INVALID: the program's own distributed mode (off by default, its own test) still counts
    assert ("train.py", True) in got, got
