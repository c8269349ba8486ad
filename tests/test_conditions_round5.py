"""Conditions and grades (#30), VALID/INVALID fixtures of shapes met on projects nobody tuned for."""

from analyse.modes import run_script
from helpers import library_report, write_files


def _write(root, files):
    write_files(root, files)


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


# ---------------------------------------------------------------- device tests valued per scenario (#30, 1 and 4)

DEVICE_SHAPES = {
    "train.py": """
        import torch

        device = 'cuda'
        device_type = 'cuda' if 'cuda' in device else 'cpu'


        def step(x):
            if x.device.type in ("cuda", "npu", "xpu"):
                torch.cuda.synchronize()
            if x.device.type in ("cuda", "xpu"):
                torch.cuda.empty_cache()
            return x


        def report(x):
            if x.device.type == "cuda":
                print(torch.cuda.max_memory_allocated())


        def strict(x):
            if x.device.type != "cuda":
                raise RuntimeError("needs a CUDA device")
            return x


        if __name__ == "__main__":
            x = torch.ones(3).to(device)
            step(x)
            report(x)
            strict(x)
    """,
}


def _at(rep, line, code=None):
    out = []
    for f in rep["findings"]:
        lines = [f["line"]] + [o.get("line") for o in f.get("occurrences") or ()]
        if line in lines and (code is None or f["code"] == code):
            out.append(f)
    return out


def test_membership_in_a_set_of_device_types_is_valued_per_scenario(tmp_path, kb):
    # INVALID (old: conditional): `x.device.type in ("cuda", "npu", "xpu")` holds on an NPU host; VALID: without
    # "npu" the set misses the NPU and its branch is off
    _write(tmp_path, DEVICE_SHAPES)
    rep = run_script([tmp_path], kb)
    (sync,) = _by(rep, "torch.cuda.synchronize")
    assert sync["guard"]["on_path"] == {"transfer_to_npu": "on", "no_transfer": "on"}
    assert sync["counted"] is True
    (empty,) = _by(rep, "torch.cuda.empty_cache")
    assert empty["guard"]["on_path"] == {"transfer_to_npu": "off", "no_transfer": "off"}
    assert empty["counted"] is False


def test_harmless_device_checks_are_not_manual_work(tmp_path, kb):
    # INVALID (old: manual, counted): `'cuda' in device` stays true under the shim (info); a test whose NPU side
    # only skips a memory printout completes (advice); VALID: the check whose NPU side raises stays manual
    _write(tmp_path, DEVICE_SHAPES)
    rep = run_script([tmp_path], kb)
    # advice and info of one rule are grouped (one finding, an occurrence per place): read each place's message
    msg = {}
    for f in rep["findings"]:
        if f["code"] == "NPU004":
            for o in f.get("occurrences") or [f]:
                msg[o["line"]] = (f["severity"], o.get("message") or f["message"])
    assert msg[5][0] in ("info", "advice") and "nothing changes" in msg[5][1]
    assert "nothing changes" in msg[9][1]
    assert "The program runs" in msg[11][1] and "train.py:12" in msg[11][1]
    assert "The program runs" in msg[17][1] and "train.py:18" in msg[17][1]
    assert msg[22][0] == "manual" and "train.py:23" in msg[22][1]
    counted_manual = [f for f in rep["findings"] if f["code"] == "NPU004" and f["counted"] and f["severity"] == "manual"]
    assert len(counted_manual) == 1


SDPA_SHAPE = {
    "model.py": """
        import torch
        import torch.nn as nn
        from torch.nn import functional as F


        class CausalSelfAttention(nn.Module):
            def __init__(self):
                super().__init__()
                self.flash = hasattr(torch.nn.functional, 'scaled_dot_product_attention')
                if not self.flash:
                    print("WARNING: using slow attention")
                    self.register_buffer("bias", torch.ones(8, 8).cuda())

            def forward(self, q, k, v):
                if self.flash:
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                else:
                    y = (q @ k.transpose(-2, -1)).cuda()
                return y
    """,
    "train.py": """
        import torch
        from model import CausalSelfAttention

        if __name__ == "__main__":
            x = torch.ones(2, 2)
            CausalSelfAttention()(x, x, x)
    """,
}


def test_hasattr_on_a_torch_module_is_valued_against_the_target_torch(tmp_path, kb):
    # nanoGPT shape: `self.flash = hasattr(F, 'scaled_dot_product_attention')` is true on the target torch, so the
    # SDPA branch is the live one (counted) and the manual-attention branch is dead (old: SDPA "guarded", the
    # dead branch counted)
    _write(tmp_path, SDPA_SHAPE)
    rep = run_script([tmp_path], kb)
    sdpa = [f for f in _by(rep, "torch.nn.functional.scaled_dot_product_attention")]
    assert sdpa and all(f["counted"] for f in sdpa)
    assert sdpa[0]["guard"]["on_path"]["transfer_to_npu"] == "on"
    dead = [f for f in rep["findings"] if f["api"] == "torch.Tensor.cuda"]
    assert {f["line"] for f in dead} == {13, 19} or {o["line"] for f in dead for o in f.get("occurrences") or ()} \
        >= {13, 19}
    assert all(f["counted"] is False and f["guard"]["on_path"]["transfer_to_npu"] == "off" for f in dead)


def test_hasattr_of_a_name_outside_the_torch_api_stays_open(tmp_path, kb):
    # VALID: an attribute the target torch does not list is not assumed present
    files = dict(SDPA_SHAPE)
    files["model.py"] = SDPA_SHAPE["model.py"].replace("'scaled_dot_product_attention'", "'no_such_kernel'")
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    dead = [f for f in rep["findings"] if f["api"] == "torch.Tensor.cuda"]
    assert dead and all((f.get("guard") or {}).get("on_path", {}).get("transfer_to_npu") != "off" for f in dead)


# ---------------------------------------------------------------- a fallback that needs GPU-only code (#30, 2)

BOTH_BRANCHES = {
    "attn.py": """
        import torch
        try:
            from flash_attn import flash_attn_func as fa
        except ImportError:
            from flash_attn.flash_attn_interface import flash_attn_unpadded_func as fa


        def attention(q, k, v):
            return fa(q, k, v)
    """,
    "main.py": """
        import torch
        import attn

        if __name__ == "__main__":
            x = torch.ones(3)
            attn.attention(x, x, x)
    """,
}


def test_gpu_only_imports_in_both_branches_are_no_fallback(tmp_path, kb):
    # INVALID (old: the try import was advice "the fallback in the except branch runs", the call advice)
    _write(tmp_path, BOTH_BRANCHES)
    rep = run_script([tmp_path], kb)
    (imp,) = _at(rep, 4, "NPU404")
    assert imp["severity"] == "manual" and imp["counted"] is True
    assert "No working fallback" in imp["message"] and "attn.py:5" in imp["message"]
    (use,) = _at(rep, 10)
    assert use["severity"] == "manual" and use["counted"] is True
    assert "No working fallback" in use["message"]


def test_a_portable_except_branch_is_still_a_fallback(tmp_path, kb):
    # VALID: the except branch binds a PyTorch implementation: the import is advice, the call not counted as manual
    files = dict(BOTH_BRANCHES)
    files["attn.py"] = BOTH_BRANCHES["attn.py"].replace(
        "    from flash_attn.flash_attn_interface import flash_attn_unpadded_func as fa",
        "    from torch.nn.functional import scaled_dot_product_attention as fa")
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (imp,) = _at(rep, 4, "NPU404")
    assert imp["severity"] == "advice"


# ---------------------------------------------------------------- guard texts cite path:line (#30, 7)

CALLER_GUARD = {
    "lib.py": """
        import torch


        def fuse(x):
            return torch.cuda.FloatTensor(x)
    """,
    "main.py": """
        import argparse
        import lib

        if __name__ == "__main__":
            p = argparse.ArgumentParser()
            p.add_argument("--fuse", action="store_true")
            args = p.parse_args()
            if args.fuse:
                lib.fuse(3)
    """,
}


def test_an_off_path_reason_cites_the_file_of_the_callers_guard(tmp_path, kb):
    # yolov5 shape: the place is in lib.py, the test that keeps it off in main.py (old: "(line 9)", which reads as
    # lib.py:9)
    _write(tmp_path, CALLER_GUARD)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.FloatTensor")
    assert f["path"] == "lib.py" and f["counted"] is False
    assert "main.py:9" in f["off_path"]["why"], f["off_path"]


def test_an_off_path_reason_in_the_same_file_cites_it_too(tmp_path, kb):
    # VALID: a guard in the finding's own file is cited with that file
    files = {"main.py": CALLER_GUARD["main.py"].replace("import lib\n", "import torch\n").replace(
        "lib.fuse(3)", "torch.cuda.FloatTensor(3)")}
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.FloatTensor")
    assert f["counted"] is False and "main.py:9" in f["off_path"]["why"], f["off_path"]


# ---------------------------------------------------------------- names bound under try/except (#30, 5)

CAUGHT_EXT = {
    "pkg/__init__.py": "",
    "pkg/ops.py": """
        import torch
        try:
            from . import _C
        except:
            print("no compiled ops")


        def _ref(x):
            return x * 2


        def op(x):
            if torch.cuda.is_available() and x.is_cuda:
                return _C.op_forward(x)
            else:
                return _ref(x)
    """,
    "setup.py": """
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension
        setup(name="pkg", ext_modules=[CUDAExtension("pkg._C", ["csrc/op.cu"])], cmdclass={"build_ext": BuildExtension})
    """,
    "csrc/op.cu": "__global__ void k() {}\n",
    "train.py": """
        import torch
        from pkg.ops import op

        if __name__ == "__main__":
            print(op(torch.ones(3).cuda()))
    """,
}


def test_an_extension_caught_at_import_under_a_cuda_guard_is_a_guard_edit(tmp_path, kb):
    # INVALID (old: blocker, "a kernel must be written", the PyTorch branch never mentioned): with transfer_to_npu
    # the guard holds and `_C` is undefined (NameError); without it the PyTorch branch runs: one guard edit
    _write(tmp_path, CAUGHT_EXT)
    rep = run_script([tmp_path], kb)
    (use,) = _by(rep, "pkg._C.op_forward")
    assert use["severity"] == "manual" and use["counted"] is True
    assert "NameError" in use["message"] and "transfer_to_npu scenario" in use["message"]
    assert "pkg/ops.py:14" in use["message"] and "no_transfer scenario the other branch" in use["message"]
    (imp,) = _by(rep, "pkg._C")
    assert imp["severity"] == "advice"
    assert rep["summary"]["verdict"]["effort"] == "low"


def test_an_extension_used_without_an_alternative_stays_blocked(tmp_path, kb):
    # VALID: the same caught import, called with no guard: no scenario takes another branch, a kernel is needed
    files = dict(CAUGHT_EXT)
    files["pkg/ops.py"] = CAUGHT_EXT["pkg/ops.py"].replace(
        "if torch.cuda.is_available() and x.is_cuda:", "if True:")
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (use,) = _by(rep, "pkg._C.op_forward")
    assert use["severity"] == "blocker" and use["counted"] is True
    assert rep["summary"]["verdict"]["effort"] == "blocked"


# ---------------------------------------------------------------- type checks are not use (#30, 6)

def _lib(tmp_path, kb, files, name):
    return library_report(tmp_path, kb, files, name)


def _status(rep, qual):
    got = next((f for f in rep["thirdparty"]["functions"] if f["qualname"] == qual), None)
    return "supported" if got is None else got["status"]


TYPE_CHECK_LIB = {
    "__init__.py": "",
    "norms.py": """
        import torch


        def count_sync_bn(model):
            import apex
            return sum(isinstance(m, apex.parallel.SyncBatchNorm) for m in model.modules())


        def convert(model):
            import apex
            return apex.parallel.convert_syncbn_model(model)
    """,
}


def test_an_isinstance_check_against_a_gpu_only_class_is_not_use(tmp_path, kb):
    # INVALID (old: a use of apex.parallel.SyncBatchNorm on line 6 besides the import): a type comparison runs
    # none of the class's code; VALID: calling the library's function is a use
    rep = _lib(tmp_path, kb, TYPE_CHECK_LIB, "normlib")
    assert not [f for f in rep["findings"] if f["line"] == 6]
    assert [f for f in rep["findings"] if f["line"] == 11 and f["api"].startswith("apex.parallel")]
    assert _status(rep, "normlib.norms.convert") == "unsupported"


# ---------------------------------------------------------------- Triton kernels specialised on constexpr (#30, 7)

TRITON_SHAPE = {
    "kern.py": """
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def _fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr, HAS_DROPOUT: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            if HAS_DROPOUT:
                x = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
            tl.store(y_ptr + offs, x, mask=offs < n)


        def fwd(x):
            y = torch.empty_like(x)
            _fwd[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, HAS_DROPOUT=False)
            return y
    """,
    "main.py": """
        import torch
        from kern import fwd

        if __name__ == "__main__":
            print(fwd(torch.ones(8).cuda()))
    """,
}


def test_a_constexpr_branch_no_launch_turns_on_does_not_block_the_kernel(tmp_path, kb):
    # INVALID (old: blocked by the inline assembly under `if HAS_DROPOUT:`, which the only launch sets False)
    _write(tmp_path, TRITON_SHAPE)
    rep = run_script([tmp_path], kb)
    kernel = [f for f in rep["findings"] if f["api"] == "triton-kernel:kern._fwd"]
    assert kernel and all(f["severity"] == "manual" for f in kernel)
    (asm,) = _by(rep, "triton.language.inline_asm_elementwise")
    assert asm["severity"] == "advice" and "none of the 1 launch(es)" in asm["message"]
    assert rep["summary"]["verdict"]["effort"] != "blocked"


def test_a_launch_that_turns_the_branch_on_blocks_it(tmp_path, kb):
    # VALID: a second launch with HAS_DROPOUT=True compiles the assembly
    files = dict(TRITON_SHAPE)
    files["kern.py"] = TRITON_SHAPE["kern.py"] + (
        "\n\n        def fwd_dropout(x):\n            y = torch.empty_like(x)\n"
        "            _fwd[(1,)](x, y, x.numel(), BLOCK=1024, HAS_DROPOUT=True)\n            return y\n")
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    kernel = [f for f in rep["findings"] if f["api"] == "triton-kernel:kern._fwd"]
    assert kernel and all(f["severity"] == "blocker" for f in kernel)


# ---------------------------------------------------------------- except: pass that keeps earlier definitions (#30, 2)

KEEPS_PRIOR = {
    "model.py": """
        import torch


        class RMSNorm(torch.nn.Module):
            def forward(self, x):
                return x


        try:
            from functools import partial

            from apex.normalization import FusedRMSNorm
            RMSNorm = partial(FusedRMSNorm, eps=1e-6)  # noqa
        except ImportError:
            pass


        def build():
            return RMSNorm()
    """,
    "main.py": """
        from model import build

        if __name__ == "__main__":
            build()
    """,
}


def test_except_pass_that_keeps_the_earlier_definition_is_a_fallback(tmp_path, kb):
    # INVALID (old: "no fallback", the FusedRMSNorm use counted as manual): the class defined before the try stays
    _write(tmp_path, KEEPS_PRIOR)
    rep = run_script([tmp_path], kb)
    fs = [f for f in rep["findings"] if f["api"].startswith("apex")]
    assert fs and all(f["counted"] is False and f["guard"]["fallback"] is True for f in fs)
    assert rep["summary"]["verdict"]["effort"] == "none"


def test_except_pass_without_an_earlier_definition_is_no_fallback(tmp_path, kb):
    # VALID: without the class before the try, RMSNorm is undefined when apex is missing
    files = dict(KEEPS_PRIOR)
    files["model.py"] = KEEPS_PRIOR["model.py"].replace(
        "class RMSNorm(torch.nn.Module):\n            def forward(self, x):\n                return x\n", "")
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    uses = [f for f in rep["findings"] if f["api"].startswith("apex") and f["code"] == "NPU402"]
    assert uses and uses[0]["counted"] is True and uses[0]["severity"] == "manual"


def test_an_asserted_device_set_without_the_npu_stays_manual(tmp_path, kb):
    # VALID: `assert device in ["cpu", "cuda"]` stops a caller that passes the NPU device (torchrec Topology shape)
    files = {"main.py": """
        import torch


        def topology(compute_device="cuda"):
            assert compute_device in ["cpu", "cuda", "mtia"], "unsupported compute device"
            return compute_device


        if __name__ == "__main__":
            topology()
    """}
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (f,) = _at(rep, 6, "NPU004")
    assert f["severity"] == "manual" and "rejects an NPU device" in f["message"]


def test_except_pass_after_patching_a_library_attribute_is_a_fallback(tmp_path, kb):
    # INVALID (old: no fallback, manual): the try only patches transformers' class (the library keeps its own when
    # apex is missing); the local name it binds is not read after the try
    files = {
        "patch.py": """
            import transformers


            def replace_rmsnorm():
                try:
                    from apex.normalization import FusedRMSNorm
                    LlamaRMSNorm = FusedRMSNorm
                    transformers.models.llama.modeling_llama.LlamaRMSNorm = LlamaRMSNorm
                except ImportError:
                    pass
        """,
        "main.py": """
            from patch import replace_rmsnorm

            if __name__ == "__main__":
                replace_rmsnorm()
        """,
    }
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    fs = [f for f in rep["findings"] if f["api"].startswith("apex")]
    assert fs and all(f["counted"] is False for f in fs)


def test_the_else_of_a_data_parameters_none_test_stays_on_the_path(tmp_path, kb):
    # VALID: `if attention_mask is None: ... else: <CUDA call>` -- callers pass data for a None-default parameter;
    # its default does not make the else branch dead
    files = {"main.py": """
        import torch


        def forward(x, attention_mask=None):
            if attention_mask is None:
                y = x
            else:
                y = torch.cuda.FloatTensor(3)
            return y


        if __name__ == "__main__":
            forward(torch.ones(3))
    """}
    _write(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.FloatTensor")
    assert (f.get("guard") or {}).get("on_path", {}).get("transfer_to_npu") != "off"
