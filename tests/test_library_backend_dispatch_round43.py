"""Library mode: a function handed by name to the library's own NPU backend runs that backend on an NPU (stop 43).

A decorator whose wrapper looks the wrapped function's own name up on a backend object and calls what it finds
(``getattr(backend, func.__name__)``) replaces the function's body with the backend's method of that name. When the
library defines such a method in an NPU backend folder of the function's package (``ops/backends/ascend/``), the
function answers for that method, not for its own generic GPU kernels:

INVALID (before): ``fwd`` decorated ``@dispatch("op")`` read ``unsupported`` "triton-kernel: ..." from the generic
kernel its body launches, although the Ascend backend's ``fwd`` (a Triton-Ascend kernel) is what runs there.

VALID: a dispatched function that no NPU backend implements (only a CUDA backend does) keeps its generic kernel's
status; a function under a decorator that does not dispatch by name keeps its own body; a backend method of the same
name in another package's backend folder does not serve it; a generic kernel calling a ``@triton.jit`` helper still
reads unsupported, and an Ascend kernel calling a shared helper does not inherit the helper's "port it".
"""

from __future__ import annotations

from helpers import library_report

GENERIC = """
    import torch
    import triton
    import triton.language as tl

    from dlib.ops.backends import dispatch, plain_wrap
    from dlib.ops.utils import twice


    @triton.jit
    def _fwd_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, twice(x), mask=offs < n)


    @dispatch("op")
    def fwd(x):
        _fwd_kernel[(1,)](x, x.numel(), BLOCK=1024)
        return x


    @dispatch("op")
    def bwd(x):
        _fwd_kernel[(1,)](x, x.numel(), BLOCK=1024)
        return x


    @plain_wrap
    def wrapped(x):
        _fwd_kernel[(1,)](x, x.numel(), BLOCK=1024)
        return x


    def layer(x):
        return bwd(fwd(x))
"""

ASCEND = """
    import triton
    import triton.language as tl

    from dlib.ops.utils import twice


    @triton.jit
    def _fwd_kernel_npu(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, twice(x), mask=offs < n)


    def fwd_npu(x):
        _fwd_kernel_npu[(1,)](x, x.numel(), BLOCK=1024)
        return x
"""

LIB = {
    "__init__.py": "",
    "ops/__init__.py": "",
    "ops/utils.py": """
        import triton
        import triton.language as tl


        @triton.jit
        def twice(x):
            return x * 2.0
    """,
    "ops/backends/__init__.py": """
        import functools


        class BaseBackend:
            priority = 5


        _REGISTRY = {}


        def dispatch(op):
            def decorator(func):
                name = func.__name__

                @functools.wraps(func)
                def wrapper(*args, **kwargs):
                    for be in _REGISTRY.get(op, ()):
                        impl = getattr(be, name, None)
                        if impl is not None:
                            return impl(*args, **kwargs)
                    return func(*args, **kwargs)
                return wrapper
            return decorator


        def plain_wrap(func):
            @functools.wraps(func)
            def wrapper(*args, **kwargs):
                return func(*args, **kwargs)
            return wrapper
    """,
    "ops/core/__init__.py": "",
    "ops/core/kernels.py": GENERIC,
    "ops/core/backends/__init__.py": """
        from dlib.ops.core.backends.ascend import AscendBackend
        from dlib.ops.core.backends.cuda_fast import CudaFastBackend
    """,
    "ops/core/backends/ascend/__init__.py": """
        from dlib.ops.backends import BaseBackend


        class AscendBackend(BaseBackend):
            priority = 0

            def fwd(self, x):
                from dlib.ops.core.backends.ascend.kernels import fwd_npu
                return fwd_npu(x)
    """,
    "ops/core/backends/ascend/kernels.py": ASCEND,
    "ops/core/backends/cuda_fast.py": """
        from dlib.ops.backends import BaseBackend


        class CudaFastBackend(BaseBackend):
            def bwd(self, x):
                return x
    """,
    # another package's Ascend backend with a method of the same name: not the one the dispatcher of `other` reaches
    "ops/other/__init__.py": "",
    "ops/other/kernels.py": """
        import triton
        import triton.language as tl

        from dlib.ops.backends import dispatch


        @triton.jit
        def _k(x_ptr, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


        @dispatch("other")
        def wrapped(x):
            _k[(1,)](x, BLOCK=16)
            return x
    """,
}


def _by(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "dlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_function_dispatched_to_the_npu_backend_of_its_package_answers_for_that_backend(tmp_path, kb):
    by = _by(tmp_path, kb)
    assert "dlib.ops.core.kernels.fwd" not in by   # supported: the Ascend backend's fwd runs in its place
    assert "dlib.ops.core.backends.ascend.AscendBackend.fwd" not in by
    assert "dlib.ops.core.backends.ascend.kernels.fwd_npu" not in by


def test_dispatched_functions_without_an_npu_backend_keep_their_generic_kernels(tmp_path, kb):
    by = _by(tmp_path, kb)
    # bwd: only a CUDA backend implements it -> the generic body runs on an NPU
    assert by["dlib.ops.core.kernels.bwd"]["status"] == "unsupported"
    assert by["dlib.ops.core.kernels.bwd"]["reasons"] == ["triton-kernel:dlib.ops.core.kernels._fwd_kernel"]
    assert by["dlib.ops.core.kernels.layer"]["status"] == "unsupported"
    assert by["dlib.ops.core.kernels.layer"]["via"][-1] == "dlib.ops.core.kernels.bwd"
    # a decorator that does not look the function's name up keeps the function's own body
    assert by["dlib.ops.core.kernels.wrapped"]["status"] == "unsupported"
    # the name has no method in this package's NPU backend (core's fwd is no method of `other`'s)
    assert by["dlib.ops.other.kernels.wrapped"]["status"] == "unsupported"


def test_a_shared_triton_helper_adds_nothing_to_the_kernels_that_call_it(tmp_path, kb):
    by = _by(tmp_path, kb)
    # the generic kernel is unsupported through its own grade, not through the helper it calls
    assert by["dlib.ops.core.kernels._fwd_kernel"]["reasons"] == ["triton-kernel:dlib.ops.core.kernels._fwd_kernel"]
    # the Ascend kernel calls the same helper: it stays the NPU implementation
    assert "dlib.ops.core.backends.ascend.kernels._fwd_kernel_npu" not in by
    assert by["dlib.ops.utils.twice"]["status"] == "unsupported"


def test_name_dispatchers_and_the_functions_they_decorate(tmp_path):
    """Only a decorator whose nested wrapper looks the wrapped function's own name up is a name dispatcher."""
    from test_callgraph import _summaries

    from analyse.callgraph import Linker

    ss = _summaries(tmp_path, {
        "__init__.py": "",
        "reg.py": """
            import functools

            def dispatch(op):
                def decorator(func):
                    name = func.__name__
                    def wrapper(*a):
                        return getattr(BACKENDS[op], name)(*a)
                    return wrapper
                return decorator

            def by_attr(func):
                def wrapper(*a):
                    return getattr(BACKEND, func.__name__, func)(*a)
                return wrapper

            def by_literal(func):
                def wrapper(*a):
                    return getattr(BACKEND, "run")(*a)
                return wrapper

            def flat(obj, func):
                return getattr(obj, func.__name__)
        """,
        "use.py": """
            from lib.reg import dispatch, by_attr, by_literal

            @dispatch("x")
            def a(t): return t

            @by_attr
            def b(t): return t

            @by_literal
            def c(t): return t

            @functools.lru_cache
            def d(t): return t
        """,
    }, pkg="lib")
    reg = next(s for s in ss if s.modname == "lib.reg")
    assert reg.name_dispatchers == {"lib.reg.dispatch", "lib.reg.by_attr"}
    use = next(s for s in ss if s.modname == "lib.use")
    assert use.decorated["lib.use.a"] == ("lib.reg.dispatch",)
    assert Linker(ss).name_dispatched() == {"lib.use.a": "a", "lib.use.b": "b"}
