"""Conditions and grades (#30), VALID/INVALID fixtures of shapes met on projects nobody tuned for."""

import textwrap

from analyse.modes import run_script


def _write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


PLUGIN_SHAPE = {
    "custom_ops.py": """
        import os
        import importlib
        import torch.utils.cpp_extension

        def get_plugin(module_name, sources):
            try:
                os.environ["TORCH_CUDA_ARCH_LIST"] = ""
                torch.utils.cpp_extension.load(name=module_name, sources=sources)
                module = importlib.import_module(module_name)
            except:
                print("Failed!")
                raise
            return module
    """,
    "ops.py": """
        import torch
        import custom_ops

        _plugin = None

        def _init():
            global _plugin
            if _plugin is None:
                _plugin = custom_ops.get_plugin("bias_act_plugin", sources=["bias_act.cu"])
            return True

        def bias_act(x, b, impl="cuda"):
            if impl == "cuda" and x.device.type == "cuda" and _init():
                return _plugin.bias_act(x, b)
            return _bias_act_ref(x, b)

        def _bias_act_ref(x, b):
            return torch.relu(x + b)
    """,
    "train.py": """
        import torch
        import ops

        if __name__ == "__main__":
            x = torch.ones(4, device="cuda")
            print(ops.bias_act(x, x))
    """,
}


def test_a_local_guard_without_alternative_does_not_hide_the_callers_device_guard(tmp_path, kb):
    # stylegan3 shape: the plugin build sits in `try: ... except: raise` (no alternative) two calls below
    # `if impl == "cuda" and x.device.type == "cuda" and _init():`, false on an NPU host: off the path
    _write(tmp_path, PLUGIN_SHAPE)
    rep = run_script([tmp_path], kb)
    for api in ("TORCH_CUDA_ARCH_LIST", "torch.utils.cpp_extension.load"):
        (f,) = _by(rep, api)
        assert f["counted"] is False, api
        assert f["guard"]["on_path"]["transfer_to_npu"] == "off" and f["guard"]["path"] == "ops.py"
    assert rep["summary"]["verdict"]["effort"] in ("none", "low")


def test_the_same_build_without_the_device_guard_counts(tmp_path, kb):
    # VALID: called unconditionally, the same build is a counted blocker
    files = dict(PLUGIN_SHAPE)
    files["ops.py"] = PLUGIN_SHAPE["ops.py"].replace('if impl == "cuda" and x.device.type == "cuda" and _init():',
                                                     'if _init():')
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "TORCH_CUDA_ARCH_LIST")
    assert f["counted"] is True
    assert rep["summary"]["verdict"]["effort"] == "blocked"
