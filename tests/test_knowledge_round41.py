"""Knowledge rows and lookups of stop 41.

* Re-exports (data/torch_reexports.yaml): a torch name the table lists under its other spelling is documented
  (``torch.nn.Flatten`` for the table's ``torch.nn.modules.flatten.Flatten``, ``torch.utils.data.sampler.RandomSampler``
  for ``torch.utils.data.RandomSampler``); a class with no row whose method rows are all Yes is supported
  (``torch.distributions.Normal``). VALID: a same-named function of another module (``torch.nn.utils.parametrizations
  .weight_norm``), a lower-case name the package does not re-export, a class one of whose method rows is No.
* Curated composites (data/curation.yaml): ``F.multi_head_attention_forward`` (the body of the documented
  ``nn.MultiheadAttention.forward``, not where that row is No), ``torch.expand_copy``, ``F.rms_norm`` / ``nn.RMSNorm``,
  ``torch.amp.GradScaler``, ``torch.linalg.pinv``, ``torch.linalg.vector_norm``, ``torch.bitwise_right_shift`` (where op-plugin has its kernel): a library function calling them is not ``unknown``; an API nobody curated still is.
* GPU-only libraries (data/third_party_libs.yaml): an unguarded ``import openfold...`` makes its user unsupported.
* peft LoftQ (data/implicit_gpu_libs.yaml): ``LoftQConfig`` / ``LoraConfig(init_lora_weights="loftq")`` use
  bitsandbytes (NPU461, manual); another ``init_lora_weights`` is no finding.
* Hub kernels (data/kernel_hub.yaml ``python_api``): a call of a FlashAttention hub kernel is graded by the flash-attn
  function's entry (manual, npu_fusion_attention); a kernel with no entry stays a blocker.
"""

from __future__ import annotations

from helpers import analyse_source, library_report

from analyse.knowledge import load_knowledge


def test_reexported_spellings_are_documented():
    kb = load_knowledge("2.13.0")
    for name in ("torch.nn.Flatten", "torch.nn.Flatten.forward", "torch.inference_mode",
                 "torch.utils.data.sampler.RandomSampler", "torch.distributed.distributed_c10d.all_reduce",
                 "torch.utils.tensorboard.SummaryWriter", "torch.distributions.Categorical",
                 "torch.distributions.Normal.log_prob"):
        assert kb.is_documented(name), name
    assert kb.api_status("torch.distributions.Normal") == "supported"   # implied by its method rows
    assert "method rows" in kb.api("torch.distributions.Normal").source
    # VALID: another object of the same leaf name, a name the package does not re-export, a class with a No method
    for name in ("torch.nn.utils.parametrizations.weight_norm", "torch.distributions.cat",
                 "torch.nn.TransformerEncoderLayer"):
        assert not kb.is_documented(name), name


LIB = {
    "__init__.py": """
        import torch
        import torch.nn.functional as F
        from torch import nn


        class Head(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.flat = nn.Flatten()
                self.norm = nn.RMSNorm(c)

            def forward(self, x):
                return self.norm(self.flat(x))


        def sample(mu, std):
            return torch.distributions.Normal(mu, std).rsample()


        def attend(q, k, v, w_in, b_in, w_out, b_out, heads):
            out, _ = F.multi_head_attention_forward(q, k, v, q.shape[-1], heads, w_in, b_in, None, None, False, 0.0,
                                                    w_out, b_out, need_weights=False)
            return out


        def grow(x, n):
            return torch.expand_copy(x, (n, x.shape[-1]))


        def rms(x, w):
            return F.rms_norm(x, (x.shape[-1],), w)


        def make_scaler():
            return torch.amp.GradScaler("npu")


        def unpack(q, bits):
            return torch.bitwise_right_shift(q, bits) & 15


        def pseudo(a, x):
            return torch.linalg.pinv(a) @ x / torch.linalg.vector_norm(x)


        def reflection(r):
            return torch.linalg.matrix_exp(r)
    """,
}


def test_curated_and_reexported_apis_leave_library_functions_known(tmp_path):
    rep = library_report(tmp_path, load_knowledge("2.13.0"), LIB, "k41lib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("k41lib.Head.__init__", "k41lib.Head.forward", "k41lib.sample", "k41lib.attend", "k41lib.grow",
              "k41lib.rms", "k41lib.make_scaler", "k41lib.pseudo",
              "k41lib.unpack"):
        assert by.get(q, {}).get("status") != "unknown", (q, by.get(q))
    assert by["k41lib.reflection"]["status"] == "unknown"   # VALID: nobody curated it


def test_multi_head_attention_forward_follows_the_module_row():
    assert load_knowledge("2.13.0").api_status("torch.nn.functional.multi_head_attention_forward") == "limited"
    # torch 2.6.0 marks nn.MultiheadAttention.forward No: the function it calls is not curated there
    assert not load_knowledge("2.6.0").is_documented("torch.nn.functional.multi_head_attention_forward")


FOLD = {
    "__init__.py": "",
    "fold.py": """
        import torch
        from openfold.np import residue_constants


        def n_atoms():
            return len(residue_constants.atom_types)
    """,
    "plain.py": """
        import torch


        def n_atoms(x):
            return x.shape[-1]
    """,
}


def test_openfold_is_a_gpu_only_dependency(tmp_path, kb):
    rep = library_report(tmp_path, kb, FOLD, "foldlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["foldlib.fold.n_atoms"]["status"] == "unsupported"
    assert "foldlib.plain.n_atoms" not in by   # VALID: no openfold, supported
    assert any(f["code"] == "NPU401" and f["api"].startswith("openfold") for f in rep["findings"])


LOFTQ = """\
from peft import LoftQConfig, LoraConfig, get_peft_model

cfg = LoraConfig(r=8, init_lora_weights="loftq", loftq_config=LoftQConfig(loftq_bits=4))
plain = LoraConfig(r=8, init_lora_weights="gaussian")
model = get_peft_model(None, cfg)
"""


def test_loftq_switches_on_bitsandbytes(tmp_path, kb):
    found = [f for f in analyse_source(tmp_path, LOFTQ, kb).findings if f.code == "NPU461"]
    assert sorted((f.line, f.api, f.severity) for f in found) == [
        (3, "init_lora_weights='loftq'", "manual"), (3, "peft.LoftQConfig", "manual")]   # line 4: no finding


HUB = """\
from kernels import get_kernel

fa = get_kernel("varunneal/flash-attention-3").flash_attn_interface
act = get_kernel("kernels-community/activation")


def attend(q, k, v, cu, n):
    return fa.flash_attn_varlen_func(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=n, max_seqlen_k=n)


def other(x):
    return act.gelu_fast(x)
"""


def test_hub_flash_attention_calls_are_graded_by_the_function(tmp_path, kb):
    from analyse.passes.compiled_code import CompiledCodePass

    found = analyse_source(tmp_path, HUB, kb, passes=[CompiledCodePass()]).findings
    got = sorted((f.line, f.severity) for f in found if f.code == "NPU469")
    # VALID: the activation kernel has no entry (no NPU build on record): its download and call stay blockers
    assert got == [(3, "manual"), (4, "blocker"), (8, "manual"), (12, "blocker")]
    varlen = next(f for f in found if f.line == 8)
    assert "npu_fusion_attention" in varlen.replacement and "flash-attn-varlen" in varlen.message


ABN = {
    "__init__.py": "",
    "stub.py": """
        import torch
        from torch import nn

        try:
            from inplace_abn.functions import inplace_abn
            has_iabn = True
        except ImportError:
            has_iabn = False

            def inplace_abn(x, weight, bias, training=True):
                raise ImportError("install inplace_abn")


        class Abn(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(c))

            def forward(self, x):
                return inplace_abn(x, self.weight, None)
    """,
    "real.py": """
        import torch
        import torch.nn.functional as F
        from torch import nn

        try:
            from inplace_abn.functions import inplace_abn
        except ImportError:
            def inplace_abn(x, weight, bias, training=True):
                return F.leaky_relu(F.batch_norm(x, None, None, weight, bias, training=True), 0.01)


        class Abn(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(c))

            def forward(self, x):
                return inplace_abn(x, self.weight, None)
    """,
}


def test_a_stand_in_that_only_raises_is_no_fallback(tmp_path, kb):
    rep = library_report(tmp_path, kb, ABN, "abnlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["abnlib.stub.Abn.forward"]["status"] == "unsupported"
    assert by["abnlib.stub.Abn.forward"]["reasons"] == ["inplace_abn.functions.inplace_abn"]
    assert "abnlib.real.Abn.forward" not in by   # VALID: the except branch computes the same thing in torch ops
