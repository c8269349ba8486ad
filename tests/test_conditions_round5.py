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


PREDEFINED = """
    import torch
    from torch import nn


    class RMSNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.eps = eps

        def forward(self, x):
            return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


    try:
        from apex.normalization import FusedRMSNorm

        RMSNorm = FusedRMSNorm  # noqa
        print("using apex")
    except ImportError:
        pass


    if __name__ == "__main__":
        print(RMSNorm(8)(torch.ones(2, 8)))
"""


def test_a_try_that_swaps_in_a_library_for_a_name_defined_before_it_has_a_fallback(tmp_path, kb):
    # InternVL shape: the class is defined first; `except ImportError: pass` keeps it when apex is missing
    _write(tmp_path, {"model.py": PREDEFINED})
    rep = run_script([tmp_path], kb)
    (use,) = [f for f in rep["findings"] if f["api"].startswith("apex") and f["code"] == "NPU402"]
    assert use["guard"]["fallback"] is True and use["counted"] is False
    assert rep["summary"]["verdict"]["effort"] in ("none", "low")


def test_the_same_swap_with_no_definition_before_it_has_no_fallback(tmp_path, kb):
    # INVALID for the rule: nothing defined the name before the try, so a failed import leaves it undefined
    src = PREDEFINED.replace("class RMSNorm(nn.Module):", "class OtherNorm(nn.Module):")
    _write(tmp_path, {"model.py": src})
    rep = run_script([tmp_path], kb)
    use = min((f for f in rep["findings"] if f["api"].startswith("apex") and f["code"] == "NPU402"),
              key=lambda f: f["line"])
    assert use["guard"]["fallback"] is False and use["counted"] is True


MONKEY = """
    import transformers


    def replace_rmsnorm_with_fused_rmsnorm():
        try:
            from functools import partial

            from apex.normalization import FusedRMSNorm
            RMSNorm = partial(FusedRMSNorm, eps=1e-6)
            transformers.models.llama.modeling_llama.LlamaRMSNorm = RMSNorm
            print("using apex")
        except ImportError:
            pass


    if __name__ == "__main__":
        replace_rmsnorm_with_fused_rmsnorm()
"""


def test_a_monkey_patch_under_a_try_import_keeps_the_library_attribute_as_fallback(tmp_path, kb):
    _write(tmp_path, {"patch.py": MONKEY})
    rep = run_script([tmp_path], kb)
    fs = [f for f in rep["findings"] if f["api"].startswith("apex")]
    assert fs and all(f["counted"] is False for f in fs)
    assert all((f.get("guard") or {}).get("fallback") is True for f in fs)


FLAG = """
    def pick():
        try:
            from apex.normalization import FusedRMSNorm
            HAS_APEX = True
        except ImportError:
            pass
        return HAS_APEX


    if __name__ == "__main__":
        print(pick())
"""


def test_a_flag_set_only_under_the_try_import_is_no_fallback(tmp_path, kb):
    # INVALID for the rule: HAS_APEX is read after the try and nothing defined it before: undefined on an NPU host
    _write(tmp_path, {"flag.py": FLAG})
    rep = run_script([tmp_path], kb)
    fs = [f for f in rep["findings"] if f["api"].startswith("apex")]
    assert fs and all((f.get("guard") or {}).get("fallback") is False for f in fs)
