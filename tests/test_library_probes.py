"""Optional GPU-only imports in libraries (#28): a function that needs the library fails without it, one that
only probes for it (tries the import, returns None / False when it fails) runs on an Ascend host.
VALID/INVALID fixtures of the shapes, written for these tests."""

import pytest
from helpers import library_report

PROBES = {
    "__init__.py": "",
    "ver.py": """
        def fuser_version():
            try:
                import nvfuser_direct
            except ImportError:
                try:
                    import nvfuser
                except ImportError:
                    pass
                else:
                    return nvfuser.version()
            else:
                return nvfuser_direct.version()
            return None


        def fuser_available():
            return fuser_version() is not None


        def cudnn_version():
            try:
                import cudnn
                if hasattr(cudnn, "__version__"):
                    return cudnn.__version__
                return "0.0.0"
            except ImportError:
                pass
            return None


        def fuse(x):
            try:
                import nvfuser_direct
            except ImportError:
                import nvfuser as nvfuser_direct
            return nvfuser_direct.execute(x)
    """,
}


@pytest.fixture(scope="module")
def report(tmp_path_factory, kb):
    return library_report(tmp_path_factory.mktemp("p"), kb, PROBES, "probe")


def _all(report, api):
    """Every finding (grouped occurrences included) on *api*, as (line, severity, message)."""
    out = []
    for f in report["findings"]:
        for o in f.get("occurrences") or [f]:
            if o["api"] == api:
                out.append((o["line"], o.get("severity", f["severity"]), o.get("message", f["message"])))
    return out


def _status(report, qual):
    f = next((f for f in report["thirdparty"]["functions"] if f["qualname"] == qual), None)
    return "supported" if f is None else f["status"]


def test_nested_try_import_probe_is_supported(report):
    # INVALID: the handler's own import is caught by its inner `except ImportError: pass`: a probe, no blocker
    assert _status(report, "probe.ver.fuser_version") == "supported"
    assert _status(report, "probe.ver.fuser_available") == "supported"
    assert [sev for line, sev, _m in _all(report, "nvfuser_direct") if line == 3] == ["advice"]


def test_use_inside_the_try_after_its_import_is_not_reached(report):
    # INVALID: `cudnn.__version__` runs only when `import cudnn` succeeded
    assert _status(report, "probe.ver.cudnn_version") == "supported"
    use = _all(report, "cudnn.__version__")
    assert [line for line, _s, _m in use] == [24]
    assert use[0][1] == "advice" and "runs only after the guarded import succeeded" in use[0][2]


def test_handler_importing_gpu_only_code_is_no_fallback(report):
    # VALID: the except branch imports another GPU-only library, uncaught: the function needs one of them
    assert _status(report, "probe.ver.fuse") == "unsupported"


UNBOUND = {
    "__init__.py": "",
    "k.py": """
        import torch

        try:
            from flash_attn_interface import _flash_attn_forward
            HAS_FA3 = True
        except ImportError:
            HAS_FA3 = False

        xentropy_cuda = None
        try:
            import xentropy_cuda
        except ImportError:
            AVAILABLE = False


        def fwd(q, k, v):
            if not HAS_FA3:
                raise Exception("fa3 not built")
            return _flash_attn_forward(q, k, v)


        def xent(a, t):
            return xentropy_cuda.forward(a, t)


        def attention(q, k, v):
            if HAS_FA3:
                return fwd(q, k, v)
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)


        def guarded_inline(q, k, v):
            if HAS_FA3:
                return _flash_attn_forward(q, k, v)
            return q
    """,
}


@pytest.fixture(scope="module")
def unbound(tmp_path_factory, kb):
    return library_report(tmp_path_factory.mktemp("u"), kb, UNBOUND, "unb")


def test_function_using_a_name_the_failed_import_leaves_unbound_is_unsupported(unbound):
    # VALID (old: supported, the use counted as guarded): the kernel wrapper raises or calls an unbound name
    assert _status(unbound, "unb.k.fwd") == "unsupported"
    assert _status(unbound, "unb.k.xent") == "unsupported"      # placeholder `= None` before the guarded import
    msg = [m for line, _s, m in _all(unbound, "flash_attn_interface._flash_attn_forward") if line == 19]
    assert msg and "leaves the name unbound" in msg[0]


def test_callers_that_test_the_flag_first_stay_conditional_or_supported(unbound):
    # INVALID: the flag check picks the torch fallback on an Ascend host
    # (since stop 38 the availability test of a GPU-only library is false on an NPU host in library mode, so the
    # SDPA fallback is what runs there: supported; before, the caller's flag read as a condition)
    assert _status(unbound, "unb.k.attention") in ("conditional", "supported")
    assert _status(unbound, "unb.k.attention") != "unsupported"
    assert _status(unbound, "unb.k.guarded_inline") == "supported"


KERNEL_LIBS = {
    "__init__.py": "",
    "r.py": """
        import importlib.util

        try:
            from mslk.quantize.shuffle import int4_row_quantize
        except Exception:
            int4_row_quantize = None


        def render_inria(means, scales):
            from diff_gaussian_rasterization import GaussianRasterizer
            return GaussianRasterizer()(means, scales)


        def kmeans(x, k):
            try:
                from torchpq.clustering import KMeans
            except:
                raise ImportError("pip install torchpq cupy")
            return KMeans(n_clusters=k).fit(x)


        def int4_quantize(w, group_size):
            return int4_row_quantize(w, group_size)


        def has_kernels():
            found = importlib.util.find_spec("mslk") is not None
            if not found:
                return False
            import mslk  # noqa: F401
            return True
    """,
}


@pytest.fixture(scope="module")
def kernel_libs(tmp_path_factory, kb):
    return library_report(tmp_path_factory.mktemp("k"), kb, KERNEL_LIBS, "kl")


def test_gpu_kernel_packages_are_known(kernel_libs):
    # VALID (old: unknown packages, supported): the Inria rasteriser, TorchPQ and MSLK are CUDA-only
    assert _status(kernel_libs, "kl.r.render_inria") == "unsupported"
    assert _status(kernel_libs, "kl.r.kmeans") == "unsupported"
    assert _status(kernel_libs, "kl.r.int4_quantize") == "unsupported"


def test_import_behind_a_presence_test_is_a_probe(kernel_libs):
    # INVALID: the import runs only where find_spec found the package
    assert _status(kernel_libs, "kl.r.has_kernels") == "supported"


CHECKER = {
    "__init__.py": "",
    "c.py": """
        def checker(query, key):
            if query.dim() != 4:
                return False
            return query.device.type == "cuda" and key.device == query.device


        def run(query):
            if query.device.type == "cuda":
                return query
            else:
                raise RuntimeError("needs CUDA")
    """,
}


def test_device_type_predicate_that_is_returned_completes(tmp_path, kb):
    rep = library_report(tmp_path, kb, CHECKER, "chk")
    # INVALID (old: conditional, "the CUDA branch is skipped"): a returned comparison has no branch of its own
    assert _status(rep, "chk.c.checker") == "supported"
    assert [sev for line, sev, _m in _all(rep, "device-type-check") if line == 4] == ["advice"]
    # VALID: the branch an NPU takes raises
    assert _status(rep, "chk.c.run") != "supported"


ENV_SWITCH = {
    "__init__.py": "",
    "prof.py": """
        import functools
        import os
        from contextlib import nullcontext

        import torch


        @functools.lru_cache
        def _enabled():
            return bool(int(os.getenv("LIB_NVTX_ENABLED", "0")))


        def range_push(msg):
            if not _enabled():
                return
            torch.cuda.nvtx.range_push(msg)


        def range_context(msg):
            if _enabled():
                return torch.cuda.nvtx.range(msg)
            return nullcontext()


        def always_push(msg):
            torch.cuda.nvtx.range_push(msg)
    """,
}


def test_code_behind_an_environment_switch_off_by_default_is_conditional(tmp_path, kb):
    rep = library_report(tmp_path, kb, ENV_SWITCH, "envsw")
    # VALID (old: supported, the guarded line dropped as dead code): a user of the library can set the variable
    for fn in ("range_push", "range_context"):
        f = next(f for f in rep["thirdparty"]["functions"] if f["qualname"] == f"envsw.prof.{fn}")
        assert f["status"] == "conditional" and "torch.cuda.nvtx" in f["reasons"][0], f
    # an unguarded NVTX annotation stays a change to make, not a blocker
    assert _status(rep, "envsw.prof.always_push") == "needs-migration"
