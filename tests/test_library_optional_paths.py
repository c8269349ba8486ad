"""Library mode: optional paths a library chooses at run time are conditions, not its default path.

* a call under ``try`` whose handler names ``ImportError`` and falls back (``try: return _load_native() is not None /
  except ImportError: return False``): the call imports lazily, and on an NPU host the GPU-only import fails into the
  fallback (INVALID: ``unsupported``);
* a parameter tested against a table of the module (``if backend not in _HUB_KERNELS: return``): the rest runs for
  the caller's values the table lists (INVALID: ``unsupported``);
* an inner ``try`` whose handler re-raises, or an availability check whose other branch raises, inside such a choice
  leaves the code under the choice (INVALID: the inner guard without a fallback made it ``unsupported`` /
  ``needs-migration``), and the GPU-only library used there stays a blocker under that choice (a caller's option is
  no presence test).

VALID: a handler that raises, or one that catches an unrelated error, is no fallback; a table local to the function
is its own data; a re-raising ``try`` alone guards nothing.
"""

from __future__ import annotations

from helpers import library_report


PROBE = {
    "__init__.py": """
        import importlib

        _native = None


        def _load_native():
            global _native
            try:
                _native = importlib.import_module("liger_cute_kernels.tvm_ffi")
            except ImportError as exc:
                raise ImportError("install the CUDA wheel") from exc
            return _native


        def is_available() -> bool:
            try:
                return _load_native() is not None
            except ImportError:
                return False


        def must_have() -> bool:
            try:
                return _load_native() is not None
            except ImportError:
                raise RuntimeError("no native core")


        def anything() -> bool:
            try:
                return _load_native() is not None
            except ValueError:
                return False
    """,
}


def test_a_call_under_except_importerror_with_a_fallback_is_conditional(tmp_path, kb):
    rep = library_report(tmp_path, kb, PROBE, "probelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["probelib._load_native"]["status"] == "unsupported"
    assert by["probelib.is_available"]["status"] == "conditional"
    assert by["probelib.must_have"]["status"] == "unsupported"   # the handler raises: no fallback
    assert by["probelib.anything"]["status"] == "unsupported"    # ValueError says nothing about imports


TABLE = {
    "__init__.py": """
        from kernels import get_kernel

        _HUB_KERNELS = {"flash_hub": "kernels-community/flash-attn", "sage_hub": "kernels-community/sage"}
        _LOCAL = ("native", "math")


        def download(backend):
            if backend not in _HUB_KERNELS:
                return None
            return get_kernel(_HUB_KERNELS[backend])


        def download_always(backend):
            return get_kernel(_HUB_KERNELS[backend])


        def download_local(backend):
            names = {"native": "kernels-community/x"}
            if backend not in names:
                return None
            return get_kernel(names[backend])
    """,
}


def test_a_parameter_tested_against_a_module_table_is_the_callers_choice(tmp_path, kb):
    rep = library_report(tmp_path, kb, TABLE, "tablelib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["tablelib.download"]["status"] == "conditional"
    assert any("`backend in _HUB_KERNELS`" in c for c in by["tablelib.download"]["conditions"])
    assert by["tablelib.download_always"]["status"] == "unsupported"
    assert by["tablelib.download_local"]["status"] == "unsupported"   # a local table is the function's own data


NESTED = {
    "__init__.py": """
        _HUB_KERNELS = {"flash_hub": "kernels-community/flash-attn"}


        def download(backend):
            if backend not in _HUB_KERNELS:
                return None
            try:
                from kernels import get_kernel

                return get_kernel(_HUB_KERNELS[backend])
            except Exception as e:
                raise RuntimeError(f"could not fetch {backend}") from e


        def download_any(backend):
            try:
                from kernels import get_kernel

                return get_kernel(_HUB_KERNELS[backend])
            except Exception as e:
                raise RuntimeError(f"could not fetch {backend}") from e
    """,
}


def test_an_inner_guard_without_fallback_keeps_the_outer_choice(tmp_path, kb):
    rep = library_report(tmp_path, kb, NESTED, "nestlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["nestlib.download"]["status"] == "conditional"
    assert any("`backend in _HUB_KERNELS`" in c for c in by["nestlib.download"]["conditions"])
    assert by["nestlib.download_any"]["status"] == "unsupported"   # the re-raising try alone is no fallback


CHOICE = {
    "__init__.py": """
        import torch

        try:
            import xformers.ops
        except ImportError:
            xformers = None


        def is_xformers_available():
            return xformers is not None


        class Attention(torch.nn.Module):
            def set_xformers(self, use_xformers: bool) -> None:
                if use_xformers:
                    if not is_xformers_available():
                        raise ModuleNotFoundError("install xformers")
                    else:
                        q = torch.randn((1, 2, 40), device="cuda")
                        _ = xformers.ops.memory_efficient_attention(q, q, q)
                    self.processor = "xformers"
                else:
                    self.processor = "sdpa"

            def check_xformers(self) -> None:
                if not is_xformers_available():
                    raise ModuleNotFoundError("install xformers")
                else:
                    q = torch.randn((1, 2, 40), device="cuda")
                    _ = xformers.ops.memory_efficient_attention(q, q, q)
    """,
}


def test_a_raising_availability_check_inside_the_callers_choice_keeps_the_choice(tmp_path, kb):
    rep = library_report(tmp_path, kb, CHOICE, "choicelib2")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["choicelib2.Attention.set_xformers"]["status"] == "conditional"
    assert any("`use_xformers`" in c for c in by["choicelib2.Attention.set_xformers"]["conditions"])
    assert by["choicelib2.Attention.check_xformers"]["status"] == "unsupported"
