"""Dispatch in script mode, round 37: what a program runs when it picks a class through data (a decorator registry
keyed by a configuration value). VALID/INVALID fixtures of the shapes met; no project code copied."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


# ---------------------------------------------------------------- registry.get_model_class(cfg.arch)

def _registry_demo(arch_line: str, key_expr: str = "model_config.arch") -> dict:
    return {
        "configs/chat.yaml": f"""
            model:
{arch_line}
              max_len: 64
        """,
        "zoo/__init__.py": "",
        "zoo/registry.py": """
            class Registry:
                mapping = {"models": {}, "tasks": {}}

                @classmethod
                def register_model(cls, name):
                    def wrap(model_cls):
                        cls.mapping["models"][name] = model_cls
                        return model_cls
                    return wrap

                @classmethod
                def register_task(cls, name):
                    def wrap(task_cls):
                        cls.mapping["tasks"][name] = task_cls
                        return task_cls
                    return wrap

                @classmethod
                def get_model_class(cls, name):
                    return cls.mapping["models"].get(name, None)

                @classmethod
                def get_task_class(cls, name):
                    return cls.mapping["tasks"].get(name, None)


            registry = Registry()
        """,
        "zoo/models.py": """
            import torch
            from transformers import AutoModelForCausalLM
            from zoo.registry import registry


            @registry.register_model("quant")
            class QuantChat(torch.nn.Module):
                def __init__(self, llm):
                    super().__init__()
                    self.llm = llm

                @classmethod
                def from_config(cls, cfg):
                    return cls(AutoModelForCausalLM.from_pretrained(cfg.path, load_in_8bit=True, device_map={"": 0}))


            @registry.register_model("plain")
            class PlainChat(torch.nn.Module):
                def __init__(self, llm):
                    super().__init__()
                    self.llm = llm

                @classmethod
                def from_config(cls, cfg):
                    return cls(AutoModelForCausalLM.from_pretrained(cfg.path, torch_dtype=torch.float16).cuda())


            @registry.register_task("chat")
            class ChatTask:
                def build(self):
                    return torch.cuda.get_device_properties(0)
        """,
        "demo.py": f"""
            import argparse
            from omegaconf import OmegaConf
            import zoo.models
            from zoo.registry import registry

            parser = argparse.ArgumentParser()
            parser.add_argument("--cfg-path", default="configs/chat.yaml")
            args = parser.parse_args()
            model_config = OmegaConf.load(args.cfg_path).model
            model_cls = registry.get_model_class({key_expr})
            model = model_cls.from_config(model_config)
            print(model)
        """,
    }


def test_a_registry_lookup_keyed_by_the_default_configuration_runs_the_registered_class(tmp_path, kb):
    # VALID (old: the 8-bit load is unresolved-dispatch, not counted, low): the YAML the argparse default names sets
    # arch: quant, so registry.get_model_class(model_config.arch) is QuantChat and its from_config runs
    write_files(tmp_path, _registry_demo("              arch: quant"))
    rep = run_script([tmp_path], kb)
    (q8,) = _by(rep, "load_in_8bit=True")
    assert q8["path"] == "zoo/models.py" and q8["line"] == 15 and q8["counted"], q8
    assert q8["reach"]["status"] == "reachable", q8["reach"]
    assert "zoo.models.QuantChat.from_config" in q8["reach"]["path"], q8["reach"]
    assert rep["summary"]["verdict"]["effort"] == "medium"
    assert "load_in_8bit=True" in _drivers(rep)
    # the task registered by the same registry object is not a model: get_model_class never returns it
    (props,) = _by(rep, "torch.cuda.get_device_properties")
    assert not props["counted"], props


def test_a_registry_lookup_selects_only_the_class_the_configuration_names(tmp_path, kb):
    # INVALID (old: neither class reached): arch: plain runs PlainChat (its .cuda() counted), never the 8-bit class
    write_files(tmp_path, _registry_demo("              arch: plain"))
    rep = run_script([tmp_path], kb)
    (q8,) = _by(rep, "load_in_8bit=True")
    assert not q8["counted"], q8
    (cuda,) = [f for f in _by(rep, "torch.Tensor.cuda") if f["path"] == "zoo/models.py"]
    assert cuda["line"] == 26 and cuda["counted"] and cuda["reach"]["status"] == "reachable", cuda
    assert rep["summary"]["verdict"]["effort"] == "low"


def test_a_registry_lookup_by_a_literal_key(tmp_path, kb):
    # VALID: a literal key selects its class whatever the configuration says
    write_files(tmp_path, _registry_demo("              arch: plain", key_expr='"quant"'))
    rep = run_script([tmp_path], kb)
    (q8,) = _by(rep, "load_in_8bit=True")
    assert q8["counted"] and q8["reach"]["status"] == "reachable", q8


def test_a_registry_lookup_by_an_unknown_key_lists_every_registered_class_as_possible(tmp_path, kb):
    # the configuration does not declare the key: each registered model may run (reach unknown, not counted)
    write_files(tmp_path, _registry_demo("              name: x"))
    rep = run_script([tmp_path], kb)
    (q8,) = _by(rep, "load_in_8bit=True")
    assert not q8["counted"] and q8["reach"]["status"] == "unknown", q8
    assert "chosen at run time" in q8["reach"]["reason"], q8["reach"]


def test_a_configuration_keys_a_lookup_only_in_the_module_that_names_it(tmp_path, kb):
    # INVALID (a project-wide configuration key would make the lookup exact for train.py too): train.py loads a
    # --cfg-path it requires and a shared builder looks the class up; the arch of the demo's default file is no value
    # for that lookup, so the 8-bit class is one possible entry of it (reach unknown, no path)
    files = _registry_demo("              arch: quant")
    files["zoo/build.py"] = """
        from zoo.registry import registry


        def build_model(model_config):
            model_cls = registry.get_model_class(model_config.arch)
            return model_cls.from_config(model_config)
    """
    files["train.py"] = """
        import argparse
        from omegaconf import OmegaConf
        import zoo.models
        from zoo.build import build_model

        parser = argparse.ArgumentParser()
        parser.add_argument("--cfg-path", required=True)
        args = parser.parse_args()
        model = build_model(OmegaConf.load(args.cfg_path).model)
    """
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (q8,) = _by(rep, "load_in_8bit=True")
    assert q8["counted"] and q8["reach"]["entry_points"] == ["demo.py"], q8["reach"]   # demo.py still runs it
    eps = {e["path"]: e for e in rep["summary"]["entry_points"]}
    (d_demo,) = eps["demo.py"]["verdict"]["drivers"]
    assert d_demo["path"] == ["demo.<module>", "zoo.models.QuantChat.from_config"], d_demo
    # train.py may run it (one of the registered models), with no path: the key is not known there
    (d_train,) = eps["train.py"]["verdict"]["drivers"]
    assert d_train["api"] == "load_in_8bit=True" and "path" not in d_train, d_train
