"""Knowledge row (data/third_party_libs.yaml) for torchsearchsorted, a C++/CUDA extension a NeRF project installs
from a git submodule (`pip install ./torchsearchsorted`): an NPU tensor takes its CPU kernel on device memory, so
the call is a manual replacement by torch.searchsorted, while the import itself loads on an Ascend host."""

from analyse.passes.third_party import ThirdPartyPass
from tests.helpers import analyse_source


def uses(tmp_path, kb, src):
    r = analyse_source(tmp_path, src, kb, passes=[ThirdPartyPass()])
    assert not r.errors
    return {(f.line, f.severity, f.api) for f in r.findings}


def test_torchsearchsorted_call_is_manual_and_its_import_is_not(tmp_path, kb):
    got = uses(tmp_path, kb, """
        import torch
        from torchsearchsorted import searchsorted

        def fine_samples(bins, weights, n):
            cdf = torch.cumsum(weights, -1)
            u = torch.rand(cdf.shape[0], n)
            idx = searchsorted(cdf, u, side="right")
            return torch.gather(bins, 1, idx.clamp(max=bins.shape[1] - 1))
    """)
    # INVALID: the batched search runs the extension's kernel on every fine-sampling step
    assert (8, "manual", "torchsearchsorted.searchsorted") in got
    # VALID: the module imports on an NPU host (only its calls need CUDA)
    assert not any(line == 3 and sev in ("manual", "blocker") for line, sev, _a in got)


def test_torch_searchsorted_is_no_third_party_use(tmp_path, kb):
    got = uses(tmp_path, kb, """
        import torch

        def fine_samples(cdf, u):
            return torch.searchsorted(cdf, u, right=True)
    """)
    # VALID: the torch op is no GPU-only library
    assert not any("searchsorted" in api for _l, _s, api in got)
