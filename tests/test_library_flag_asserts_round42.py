"""Library mode: an assert on an import-availability flag is no fallback (stop 42).

``try: import grouped_gemm; HAVE_GG = True except ImportError: HAVE_GG = False`` (or ``gg = None`` in the handler
and ``HAVE_GG = gg is not None``) and then ``assert HAVE_GG, "install ..."`` in a function: on an Ascend host the
import failed, so the function stops there -- it needs the library as much as a call of it would. The same holds
for a package of another accelerator vendor (data/noise.yaml ``other_vendor_namespaces``: Intel's IPEX), which is
no GPU-only table row (its uses are not findings) but is not installed on an Ascend host either. A dataclass
without an ``__init__`` of its own is built by its generated one, which runs ``__post_init__``: constructing it
reaches what ``__post_init__`` asserts.

INVALID (these were ``supported``): the asserting function, a caller through ``__post_init__`` and a builder that
constructs the dataclass; IPEX-flag asserts in ``__init__`` and ``forward``.

VALID: a branch on the flag with a torch fallback; an assert on the flag of a library that installs on an Ascend
host (numpy-like, not in the table); an assert on a flag of a ``torch.*`` module (it imports everywhere);
``if not FLAG: raise`` keeps its old reading.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "gg_util.py": """
        import warnings

        _gg_available: bool = False
        try:
            import grouped_gemm
            _gg_available = True
        except ImportError:
            warnings.warn("grouped GEMM not available")


        def gg_is_available():
            return _gg_available


        def assert_gg_is_available():
            msg = "install grouped_gemm"
            assert _gg_available, msg
    """,
    "gg_none.py": """
        import torch

        try:
            import grouped_gemm as gg
        except ImportError:
            gg = None

        try:
            import scipy
            HAVE_SCIPY = True
        except ImportError:
            HAVE_SCIPY = False

        try:
            import torch.mps
            HAVE_MPS_MODULE = True
        except ImportError:
            HAVE_MPS_MODULE = False

        _gg_ok = gg is not None


        def require_gg():
            assert _gg_ok and True, "grouped_gemm missing"


        def gmm(a, b, sizes):
            if _gg_ok:
                return gg.ops.gmm(a, b, sizes)
            return torch.cat([x @ w for x, w in zip(a.split(sizes.tolist()), b)])


        def require_scipy():
            assert HAVE_SCIPY, "install scipy"
            return 1


        def require_mps_module():
            assert HAVE_MPS_MODULE
            return 2
    """,
    "args.py": """
        import dataclasses
        from . import gg_util


        @dataclasses.dataclass
        class Arguments:
            hidden_size: int = 1024
            mlp_impl: str = "grouped"

            def __post_init__(self):
                if self.mlp_impl == "grouped":
                    gg_util.assert_gg_is_available()


        def from_other(other):
            args = Arguments()
            args.hidden_size = other.hidden_size
            return args
    """,
    "ipex_linear.py": """
        import torch
        from torch import nn

        try:
            from intel_extension_for_pytorch.llm.quantization import WeightOnlyLinear
            IPEX_INSTALLED = True
        except:
            IPEX_INSTALLED = False


        class IpexLinear(nn.Module):
            def __init__(self, w):
                nn.Module.__init__(self)
                assert IPEX_INSTALLED, "install IPEX"
                self.w = w

            def forward(self, x):
                assert IPEX_INSTALLED, "install IPEX"
                return torch.matmul(x, self.w)

            def plain(self, x):
                return torch.matmul(x, self.w)
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "flaglib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}, rep


def test_asserting_an_availability_flag_needs_the_library(tmp_path, kb):
    by, rep = _by(tmp_path, kb)
    assert by["flaglib.gg_util.assert_gg_is_available"]["status"] == "unsupported"
    assert by["flaglib.gg_util.assert_gg_is_available"]["reasons"] == ["grouped_gemm"]
    assert by["flaglib.gg_none.require_gg"]["status"] == "unsupported"     # HAVE = gg is not None, in an `and`
    asserts = sorted((f["path"], f["line"]) for f in rep["findings"]
                     if f["code"] == "NPU402" and f["message"].startswith("Asserts that `grouped_gemm`"))
    assert asserts == [("gg_none.py", 24), ("gg_util.py", 17)]


def test_dataclass_construction_runs_post_init(tmp_path, kb):
    by, _ = _by(tmp_path, kb)
    assert by["flaglib.args.Arguments.__post_init__"]["status"] == "unsupported"
    assert by["flaglib.args.from_other"]["status"] == "unsupported"
    assert by["flaglib.args.from_other"]["reasons"] == ["grouped_gemm"]


def test_other_vendor_flags_are_false_on_an_ascend_host(tmp_path, kb):
    by, rep = _by(tmp_path, kb)
    for q in ("flaglib.ipex_linear.IpexLinear.__init__", "flaglib.ipex_linear.IpexLinear.forward"):
        assert by[q]["status"] == "unsupported", q
        assert by[q]["reasons"] == ["intel_extension_for_pytorch.llm.quantization.WeightOnlyLinear"], q
    ipex = [f for f in rep["findings"] if f["api"].startswith("intel_extension_for_pytorch")]
    # the guarded import itself is no finding (IPEX is no GPU-only table row): only the two asserts are
    assert sorted((f["code"], f["line"], f["severity"]) for f in ipex) == [("NPU402", 14, "manual"),
                                                                         ("NPU402", 18, "manual")]
    assert "another accelerator vendor" in ipex[0]["message"]


def test_flags_with_a_fallback_or_of_installable_modules_are_no_stop(tmp_path, kb):
    by, _ = _by(tmp_path, kb)
    for q in ("flaglib.gg_util.gg_is_available", "flaglib.gg_none.gmm", "flaglib.gg_none.require_scipy",
              "flaglib.gg_none.require_mps_module", "flaglib.ipex_linear.IpexLinear.plain"):
        assert q not in by, (q, by.get(q))
