"""Library mode: imports made through the library's own import helpers.

A function that imports the module a parameter names and hands it back (``def load_optional(module, name=""):
... mod = importlib.import_module(module); if name: mod = getattr(mod, name) ... return mod, True``) is an import
helper (:class:`analyse.resolve.ImportHelper`), recognised by its shape, not its name. A call of it with literal
strings binds the module (``cp, has_cp = load_optional("cupy")``, ``fn, _ = load_optional("pkg", name="f")``),
and the flag it hands back beside the module says whether the import worked.

INVALID (the old code saw no import, so these functions were ``supported``): unconditional uses of the bound module
or attribute of a GPU-only library are ``unsupported``, through a re-export of the helper too.

VALID: a branch that needs the flag of a GPU-only library (``if has_cp and isinstance(x, cp.ndarray):``), or a
variable made from it (``use_cp = has_cp and ...``), with nested options inside, is off on an NPU host: the
fallback runs and the function is supported; a function that imports but hands back something else is no helper.
"""

from __future__ import annotations

import astroid

from analyse.resolve import import_helper_shape
from helpers import library_report

LIB = {
    "__init__.py": "",
    "utils/__init__.py": """
        from .loading import load_optional, import_or_none
    """,
    "utils/loading.py": """
        import importlib


        def load_optional(module, version="", name=""):
            try:
                the_module = importlib.import_module(module)
                if name:
                    the_module = getattr(the_module, name)
            except Exception:
                return None, False
            return the_module, True


        def import_or_none(modname):
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                return None
            return mod
    """,
    "ops.py": """
        import numpy as np
        from .utils import load_optional, import_or_none

        cp, has_cp = load_optional("cupy")
        flash_fn, _ = load_optional("flash_attn", name="flash_attn_func")
        xops = import_or_none("xformers.ops")


        def to_gpu_array(x):
            return cp.asarray(x)


        def attend(q, k, v):
            return flash_fn(q, k, v)


        def attend_xformers(q, k, v):
            return xops.memory_efficient_attention(q, k, v)


        def to_numpy(x):
            if has_cp and isinstance(x, cp.ndarray):
                return cp.asnumpy(x)
            return np.asarray(x)


        def label(img, distances=False):
            use_cp = has_cp and img.device.type == "cuda"
            if use_cp:
                if distances:
                    return cp.asarray(img)
                return cp.zeros(3)
            return np.asarray(img)
    """,
}


def test_calls_of_an_import_helper_bind_the_module(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "helplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["helplib.ops.to_gpu_array"]["status"] == "unsupported"
    assert by["helplib.ops.to_gpu_array"]["reasons"] == ["cupy.asarray"]
    assert by["helplib.ops.attend"]["status"] == "unsupported"
    assert by["helplib.ops.attend"]["reasons"] == ["flash_attn.flash_attn_func"]
    assert by["helplib.ops.attend_xformers"]["status"] == "unsupported"
    assert by["helplib.ops.attend_xformers"]["reasons"] == ["xformers.ops.memory_efficient_attention"]


def test_the_flag_of_an_absent_gpu_only_library_leaves_the_fallback(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "helplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    # the cupy branches never run on an NPU host (cupy is not installed there): the numpy fallback does
    assert "helplib.ops.to_numpy" not in by
    assert "helplib.ops.label" not in by


def test_the_helper_shape():
    tree = astroid.parse(LIB["utils/loading.py"].replace("\n        ", "\n"), module_name="helplib.utils.loading")
    shapes = {fn.name: import_helper_shape(fn) for fn in tree.body if isinstance(fn, astroid.nodes.FunctionDef)}
    assert shapes["load_optional"].module == (0, "module")
    assert shapes["load_optional"].attr == (2, "name")
    assert shapes["load_optional"].item == 0
    assert shapes["import_or_none"].item == -1
    probe = astroid.parse(
        "import importlib\n"
        "def probe(name):\n"
        "    try:\n"
        "        mod = importlib.import_module(name)\n"
        "    except ImportError:\n"
        "        return False\n"
        "    return True\n")
    assert import_helper_shape(probe.body[1]) is None   # imports, but hands back a flag only


FP8 = {
    "__init__.py": """
        try:
            import transformer_engine.pytorch as te
            te_installed = True
        except ImportError:
            te_installed = False


        def precision_context(precision="fp32"):
            if precision == "fp8":
                if te_installed:
                    return te.fp8_autocast(enabled=True)
                else:
                    if te_installed:
                        raise RuntimeError("this device does not support FP8")
                    else:
                        raise ImportError("install TransformerEngine")
            return None
    """,
}


def test_an_absent_library_whose_check_only_raises_stays_the_callers_choice(tmp_path, kb):
    # VALID: the library is absent on an NPU host, but its check has no fallback (every other branch raises), so
    # the FP8 precision a caller asks for fails there: still conditional on that choice, not dropped as dead code
    rep = library_report(tmp_path, kb, FP8, "fp8lib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["fp8lib.precision_context"]["status"] == "conditional"
    assert by["fp8lib.precision_context"]["reasons"] == ["transformer_engine.pytorch.fp8_autocast"]


RECHECK = {
    "__init__.py": """
        import importlib.util

        import torch


        def is_xformers_available():
            return importlib.util.find_spec("xformers") is not None


        if is_xformers_available():
            import xformers as xops
        else:
            xops = None


        def enable_xformers(use_xformers: bool = False):
            if use_xformers:
                if not is_xformers_available():
                    raise ModuleNotFoundError("install xformers")
                elif not torch.cuda.is_available():
                    raise ValueError("xformers needs a GPU")
                else:
                    if is_xformers_available():
                        q = torch.randn((1, 2, 40), device="cuda")
                        xops.ops.memory_efficient_attention(q, q, q)
    """,
}


def test_a_library_checked_again_under_its_own_required_check(tmp_path, kb):
    # VALID: `if not is_x_available(): raise` already stopped a host without the library; the same test again inside
    # the branch that runs with it does not take the use off the path: the caller's choice still reaches it
    rep = library_report(tmp_path, kb, RECHECK, "recheck")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["recheck.enable_xformers"]["status"] == "conditional"
    assert "xformers.ops.memory_efficient_attention" in by["recheck.enable_xformers"]["reasons"]
