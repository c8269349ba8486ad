"""The project's own CUDA extension bound through a helper function, round 42.

A function that imports one module by its own import statement and hands that name back (``def get_extension():
try: import pkg._C as _C / except ImportError: _C = None / return _C``) is an import helper with a fixed module
(:func:`analyse.resolve.fixed_import_helper_shape`): the name bound to its result at module level
(``_C = utils.get_extension()``) stands for the extension module, so its uses are extension uses.

INVALID (the old code read the import as guarded and never linked the uses): a use right after ``assert _C is not
None and x.is_cuda`` (an assert is no fallback) counts as a blocker and the program that calls it is blocked; an
operator looked up in the module's namespace (``_C.__dict__[f"fused_{mode}"]``) is named as that operator.

VALID: a use under ``if use_kernel and x.is_cuda and _C is not None:`` with a PyTorch ``else`` is guarded with a
working fallback, so the program that only calls it is not blocked; functions that hand back something else, or
bind the name to another value, are no helpers. Shapes modelled on what the projects do; no project code copied.
"""

from __future__ import annotations

import astroid

from analyse.modes import run_script
from analyse.resolve import Resolver, fixed_import_helper_shape
from helpers import write_files


def _project(helper_body: str) -> dict:
    return {
        "setup.py": """
            from setuptools import setup
            from torch.utils.cpp_extension import BuildExtension, CUDAExtension

            try:
                ext_modules = [CUDAExtension("pkg._C", ["pkg/csrc/ops.cpp", "pkg/csrc/ops_kernel.cu"])]
            except Exception:
                ext_modules = []
            setup(name="pkg", ext_modules=ext_modules, cmdclass={"build_ext": BuildExtension})
        """,
        "pkg/csrc/ops_kernel.cu": "__global__ void blend_kernel(float* x) { x[0] = 1.f; }\n",
        "pkg/__init__.py": "",
        "pkg/utils.py": helper_body,
        "pkg/ops.py": """
            import torch
            from . import utils

            _C = utils.get_extension()


            def blend(x, use_kernel=True):
                if use_kernel and x.is_cuda and _C is not None:
                    return _C.blend(x)
                return x * 2


            def fused(x, mode):
                assert _C is not None and x.is_cuda, "the CUDA extension is required"
                return _C.__dict__[f"fused_{mode}"](x)
        """,
        "train.py": """
            import torch
            from pkg.ops import fused

            x = torch.ones(4, device="cuda")
            for _ in range(2):
                y = fused(x, "fwd")
        """,
        "render.py": """
            import torch
            from pkg.ops import blend

            print(blend(torch.ones(4)))
        """,
    }


HELPER = """
    from warnings import warn


    def get_extension():
        try:
            import pkg._C as _C
            if not hasattr(_C, "blend"):
                _C = None
        except ImportError:
            _C = None
        if _C is None:
            warn("the extension could not be loaded")
        return _C
"""


def _ep(rep, path):
    return next(e for e in rep["summary"]["entry_points"] if e["path"] == path)


def _ext_uses(rep):
    return {(f["line"], f["api"]): f for f in rep["findings"] if f["code"] == "NPU504" and f["path"] == "pkg/ops.py"}


def test_a_use_after_an_assert_through_the_helper_is_a_blocker(tmp_path, kb):
    write_files(tmp_path, _project(HELPER))
    rep = run_script([tmp_path], kb)
    uses = _ext_uses(rep)
    fused = uses[(16, "pkg._C.fused_{}")]   # the operator looked up in the module's namespace, by its name
    assert fused["severity"] == "blocker" and fused["counted"] is True
    train = _ep(rep, "train.py")["verdict"]
    assert train["effort"] == "blocked"
    assert train["drivers"][0]["api"] == "pkg._C.fused_{}"


def test_a_use_under_an_availability_test_with_a_fallback_does_not_block(tmp_path, kb):
    write_files(tmp_path, _project(HELPER))
    rep = run_script([tmp_path], kb)
    blend = _ext_uses(rep)[(10, "pkg._C.blend")]
    assert blend["counted"] is False
    assert blend["off_path"]["reason"] == "guarded"
    assert _ep(rep, "render.py")["verdict"]["effort"] != "blocked"


def test_the_uses_are_not_linked_where_the_helper_hands_back_something_else(tmp_path, kb):
    # INVALID for the helper shape: the function hands back a flag, not the module it imports
    other = HELPER.replace("    return _C\n", "    return _C is not None\n")
    write_files(tmp_path, _project(other))
    rep = run_script([tmp_path], kb)
    assert not _ext_uses(rep)
    assert _ep(rep, "train.py")["verdict"]["effort"] != "blocked"


def _shape(src: str, modname: str = "pkg.utils"):
    tree = astroid.parse(src, module_name=modname)
    fn = next(n for n in tree.body if isinstance(n, astroid.nodes.FunctionDef))
    return fixed_import_helper_shape(fn, Resolver(tree, modname))


def test_the_fixed_helper_shape_names_the_absolute_module():
    got = _shape("def ext():\n    try:\n        from . import _C\n    except ImportError:\n        _C = None\n"
                 "    return _C\n")
    assert got is not None and got.fixed == "pkg._C" and got.item == -1
    got = _shape("def ext():\n    import pkg.backend._C as C\n    return C\n")
    assert got is not None and got.fixed == "pkg.backend._C"


def test_functions_that_are_no_fixed_helpers():
    # the name is bound to another value than None beside the import: which module it holds is a choice
    assert _shape("def ext():\n    try:\n        import pkg._C as _C\n    except ImportError:\n"
                  "        _C = make_fallback()\n    return _C\n") is None
    # two imports bind the name
    assert _shape("def ext(flag):\n    if flag:\n        import pkg._C as _C\n    else:\n"
                  "        import pkg._D as _C\n    return _C\n") is None
    # the imported name is used, not handed back
    assert _shape("def ext(x):\n    import pkg._C as _C\n    return _C.run(x)\n") is None
