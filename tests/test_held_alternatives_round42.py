"""Script mode, round 42 (integration): a call on an instance attribute that the class sets to one of several
objects under an option (``self.engine = HFEngine(...)`` by default, ``VllmEngine(...)`` when the option says so)
runs the method of whichever object the option picked; the program does not surely reach the GPU-only
alternative's method. INVALID: the attribute's only value is the GPU-only engine, and the call reaches its method.
No project code copied; the shape is a chat model wrapper choosing its inference backend."""

from __future__ import annotations

from analyse.modes import run_script
from helpers import write_files


def _project(choice: bool) -> dict:
    init = ("""
                    if args.backend == "hf":
                        self.engine = HFEngine(args)
                    else:
                        self.engine = VllmEngine(args)
    """ if choice else """
                    self.engine = VllmEngine(args)
    """)
    return {
        "chat/__init__.py": "",
        "chat/hf_engine.py": """
            import torch


            class HFEngine:
                def __init__(self, args):
                    self.args = args

                def chat(self, text):
                    return torch.zeros(1)
        """,
        "chat/vllm_engine.py": """
            from vllm import LLM, SamplingParams


            class VllmEngine:
                def __init__(self, args):
                    self.llm = LLM(args.model)

                def chat(self, text):
                    return self.llm.generate(text, SamplingParams(temperature=0.1))
        """,
        "chat/chat_model.py": """
            from .hf_engine import HFEngine
            from .vllm_engine import VllmEngine


            class ChatModel:
                def __init__(self, args):""" + init.rstrip() + """

                def chat(self, text):
                    return self.engine.chat(text)
        """,
        "api.py": """
            import argparse

            from chat.chat_model import ChatModel


            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--backend", default="hf")
                parser.add_argument("--model", default="m")
                args = parser.parse_args()
                print(ChatModel(args).chat("hi"))


            if __name__ == "__main__":
                main()
        """,
    }


def _chat_reached(rep) -> bool:
    return any(f["path"] == "chat/vllm_engine.py" and f["line"] == 10 and f.get("counted")
               and "chat.vllm_engine.VllmEngine.chat" in (f.get("reach") or {}).get("path", [])
               for f in rep["findings"])


def test_valid_one_of_several_engines_is_the_options_choice(tmp_path, kb):
    write_files(tmp_path, _project(choice=True))
    rep = run_script([tmp_path], kb)
    assert not _chat_reached(rep)


def test_invalid_the_only_engine_is_reached(tmp_path, kb):
    write_files(tmp_path, _project(choice=False))
    rep = run_script([tmp_path], kb)
    assert _chat_reached(rep)
