"""Knowledge rows of stop 42 (data/curation.yaml, absent rows with evidence).

* ``F.pairwise_distance`` / ``torch.pairwise_distance`` / ``nn.PairwiseDistance``: CompositeImplicitAutograd in
  PyTorch's native_functions.yaml, ``norm(x1 - x2 + eps, p, -1, keepdim)`` over kernels op-plugin has: supported.
* ``torch.distributed.nn.all_reduce`` (and its home ``torch.distributed.nn.functional``): an autograd Function over
  ``dist.all_reduce`` (forward on a clone, backward on the gradient): the documented limits of
  ``torch.distributed.all_reduce`` from torch 2.6.0 on, Yes where that row is Yes (2.1.0).

INVALID (these were ``unknown``): a library function calling them. VALID: an API nobody curated stays unknown
(``torch.distributed.nn.all_gather``), and the curated rows say where they come from.
"""

from __future__ import annotations

from helpers import library_report

from analyse.knowledge import load_knowledge


def test_curated_rows_and_their_evidence():
    kb = load_knowledge("2.13.0")
    for name in ("torch.nn.functional.pairwise_distance", "torch.pairwise_distance", "torch.nn.PairwiseDistance",
                 "torch.nn.PairwiseDistance.forward"):
        assert kb.api_status(name) == "supported", name
        assert kb.api(name).curation["id"] == "pairwise-distance"
    ar = kb.api("torch.distributed.nn.all_reduce")
    assert ar.status == "limited" and "bf16, fp16, fp32" in ar.limitations
    assert any("dist.all_reduce" in e for e in ar.curation["evidence"])
    assert kb.api_status("torch.distributed.nn.functional.all_reduce") == "limited"
    assert load_knowledge("2.1.0").api_status("torch.distributed.nn.all_reduce") == "supported"
    assert not kb.is_documented("torch.distributed.nn.all_gather")   # VALID: not curated


LIB = {
    "__init__.py": "",
    "codes.py": """
        import torch
        import torch.nn.functional as F
        import torch.distributed as dist
        from torch import nn
        from torch.distributed import nn as dist_nn


        def nearest(x, codebook):
            d = F.pairwise_distance(x[:, None, :], codebook[None, :, :])
            return d.argmin(dim=-1)


        class Dist(nn.Module):
            def __init__(self):
                super().__init__()
                self.pd = nn.PairwiseDistance(p=2.0)

            def forward(self, a, b):
                return self.pd(a, b)


        def distributed_mean(t):
            if not (dist.is_available() and dist.is_initialized()):
                return t
            t = dist_nn.all_reduce(t)
            return t / dist.get_world_size()


        def gathered(t):
            return dist_nn.all_gather(t)
    """,
}


def test_library_functions_calling_them_are_known(tmp_path):
    rep = library_report(tmp_path, load_knowledge("2.13.0"), LIB, "vqlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("vqlib.codes.nearest", "vqlib.codes.Dist.__init__", "vqlib.codes.Dist.forward",
              "vqlib.codes.distributed_mean"):
        assert by.get(q, {}).get("status") != "unknown", (q, by.get(q))
    assert by["vqlib.codes.gathered"]["status"] == "unknown"   # VALID: nobody curated it
    assert by["vqlib.codes.gathered"]["reasons"] == ["torch.distributed.nn.all_gather"]
