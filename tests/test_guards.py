"""analyse.guards: the condition a piece of code runs under."""

from __future__ import annotations

import textwrap

import astroid
import pytest
from astroid import nodes

from analyse.guards import GUARD_KINDS, Guard, guard_of, is_probe


@pytest.fixture(autouse=True)
def _script_mode():
    # these cases read the guards of a program (script mode); a library run earlier in the session leaves the
    # conditions configured for thirdparty mode, where a parameter and a skipped CUDA block read differently
    from analyse.conditions.options import configure

    configure(mode="script")
    yield


def _node(src: str, marker: str = "# <-"):
    """The outermost expression node on the line carrying *marker*."""
    src = textwrap.dedent(src)
    tree = astroid.parse(src)
    line = next(i for i, t in enumerate(src.splitlines(), 1) if marker in t)
    best = None
    for n in tree.nodes_of_class(nodes.NodeNG):
        if getattr(n, "lineno", None) == line and not isinstance(n, (nodes.Module, nodes.Arguments)):
            if best is None:
                best = n
    return best


def _guard(src: str):
    return guard_of(_node(src))


def test_unguarded_code_has_no_guard():
    assert _guard("import torch\nx = torch.cuda.synchronize()  # <-\n") is None
    assert _guard("def f(x):\n    for i in range(3):\n        x = x.cuda()  # <-\n    return x\n") is None


def test_plain_if_on_data_is_not_a_guard():
    src = """
    def f(x, n):
        if n > 3:
            x = x.cuda()  # <-
        return x
    """
    assert _guard(src) is None


@pytest.mark.parametrize("handler, fallback", [
    ("    amp = None\n", True),
    ("    from torch.nn import LayerNorm as FusedLayerNorm\n", True),
    ("    HAVE_APEX = False\n", True),
    ("    raise ImportError('install apex')\n", False),
    ("    print('apex missing')\n", False),
    ("    traceback.print_exc()\n    cleanup_build_dir()\n    raise\n", False),   # ends by re-raising (#23)
])
def test_import_fallback(handler, fallback):
    src = "try:\n    from apex import amp  # <-\nexcept ImportError:\n" + handler
    g = _guard(src)
    assert g == Guard("import-fallback", 3, fallback, "ImportError")


def test_try_else_branch_is_guarded_and_except_body_is_not():
    src = """
    try:
        import flash_attn
    except (ImportError, ModuleNotFoundError):
        flash_attn = None
    else:
        ATTN = flash_attn.flash_attn_func  # <-
    """
    g = _guard(src)
    assert g.kind == "import-fallback" and g.fallback and g.line == 4
    src2 = """
    try:
        import flash_attn
    except ImportError:
        from .attention import sdpa as flash_attn  # <-
    """
    assert _guard(src2) is None


def test_try_without_import_is_not_an_import_fallback():
    src = """
    try:
        torch.cuda.synchronize()  # <-
    except Exception:
        pass
    """
    assert _guard(src) is None


def test_suppress_import_error():
    src = """
    import contextlib
    with contextlib.suppress(ImportError):
        import tensorrt as trt  # <-
    """
    g = _guard(src)
    assert g.kind == "import-fallback" and g.fallback and g.line == 3


@pytest.mark.parametrize("test, fallback", [
    ("torch.cuda.is_available()", False),          # skipping the CUDA branch skips the accelerator
    ("HAVE_APEX", True),
    ("_FLASH_ATTN_AVAILABLE", True),
    ("apex is not None", True),
    ("importlib.util.find_spec('flash_attn') is not None", True),
    ("importlib.util.find_spec('flash_attn')", True),
    ("is_flash_attn_available()", True),
    ("is_flash_attn_2_available()", True),
    ("hasattr(torch, 'compile')", True),
    ("torch.cuda.device_count() > 1", False),
])
def test_availability_check(test, fallback):
    src = f"""
    import importlib.util
    import torch
    try:
        import apex
    except ImportError:
        apex = None
    def f(x):
        if {test}:
            x = use(x)  # <-
        return x
    """
    g = _guard(src)
    assert g is not None and g.kind == "availability-check", g
    assert g.line == 9 and g.fallback is fallback


def test_availability_with_else_has_fallback_and_negation_flips_the_branch():
    src = """
    def f(x):
        if torch.cuda.is_available():
            x = x.cuda()  # <-
        else:
            x = x.float()
        return x
    """
    g = _guard(src)
    assert g.kind == "availability-check" and g.fallback and g.condition == "torch.cuda.is_available()"
    src2 = """
    def f(q, k, v):
        if not HAVE_FLASH:
            return sdpa(q, k, v)
        else:
            return flash_attn_func(q, k, v)  # <-
    """
    g2 = _guard(src2)
    assert g2.kind == "availability-check" and g2.fallback and g2.line == 3
    src3 = """
    def f(q, k, v):
        if not HAVE_FLASH:
            return sdpa(q, k, v)  # <-
        return flash_attn_func(q, k, v)
    """
    assert _guard(src3) is None   # the fallback itself runs on an NPU


def test_early_exit_guards_the_rest_of_the_block():
    src = """
    def f(q, k, v):
        if not HAVE_FLASH:
            return sdpa(q, k, v)
        out = flash_attn_func(q, k, v)  # <-
        return out
    """
    g = _guard(src)
    assert g.kind == "availability-check" and g.fallback and g.line == 3
    src2 = """
    try:
        import flash_attn
    except ImportError:
        flash_attn = None
    def f(q, k, v):
        if flash_attn is None:
            raise ImportError("flash-attn is required")
        return flash_attn.flash_attn_func(q, k, v)  # <-
    """
    g2 = _guard(src2)
    assert g2 is not None and g2.kind == "availability-check" and g2.fallback is False


@pytest.mark.parametrize("test, in_else", [
    ("device.type == 'cuda'", False),
    ("x.device.type == \"cuda\"", False),
    ("x.is_cuda", False),
    ("'cuda' in str(device)", False),
    ("device.type != 'cpu'", False),
    ("device.type == 'cpu'", True),
    ("device.type in ('cuda', 'npu')", False),
])
def test_device_branch(test, in_else):
    body, other = ("x = kernel(x)  # <-", "x = ref(x)")
    if in_else:
        body, other = other, body
    src = f"""
    def f(x, device):
        if {test}:
            {body}
        else:
            {other}
        return x
    """
    g = _guard(src)
    # the condition is the one under which the marked line runs: the negated test for the else branch
    want = test.replace('"', "'") if not in_else else test.replace("==", "!=")
    assert g == Guard("device-branch", 3, True, want), g


def test_device_branch_without_else_has_no_fallback():
    src = """
    def f(x, device):
        if device.type == 'cuda':
            torch.cuda.synchronize()  # <-
        return x
    """
    g = _guard(src)
    assert g.kind == "device-branch" and g.fallback is False


@pytest.mark.parametrize("test", [
    "args.trt",
    "opt.half",
    "self.use_cuda_kernel",
    "self.cfg.fused",
    "engine == 'tensorrt'",
    "args.backend in ('trt', 'onnx')",
    "use_flash",
    "os.environ.get('USE_TRT')",
    "fuse",                      # a bool parameter
])
def test_option(test):
    src = f"""
    import os
    def f(args, opt, x, engine, use_flash, fuse=False):
        if {test}:
            x = export(x)  # <-
        return x
    """
    g = _guard(src)
    assert g is not None and g.kind == "option" and g.fallback, (test, g)
    assert g.line == 4


def test_last_elif_of_an_option_chain_has_the_earlier_branches_as_fallback():
    src = """
    def build(pooler_type):
        if pooler_type == 'ROIAlign':
            p = ROIAlign()
        elif pooler_type == 'ROIAlignRotated':
            p = ROIAlignRotated()  # <-
        else:
            raise ValueError(pooler_type)
        return p
    """
    g = _guard(src)
    assert g.kind == "option" and g.fallback and g.line == 5


def test_subcommand_dispatch_is_not_an_option():
    src = """
    def main(args):
        if args.subcommand == 'train':
            train(args)  # <-
        else:
            stylize(args)
    """
    assert _guard(src) is None


def test_multi_way_dispatch_on_flags_is_an_option():
    src = """
    def load(w):
        pt, jit, onnx, engine = model_type(w)
        if pt:
            m = torch.load(w)
        elif onnx:
            m = ort.InferenceSession(w)
        elif engine:
            import tensorrt as trt  # <-
        else:
            m = None
        return m
    """
    g = _guard(src)
    assert g.kind == "option" and g.line == 8 and g.fallback and g.condition == "engine"


@pytest.mark.parametrize("test", [
    "torch.__version__ >= '2.0'",
    "TORCH_VERSION >= (1, 10)",
    "version.parse(torch.__version__) >= version.parse('2.1')",
    "TORCH_1_9",
    "torch.version.cuda is not None",
    "sys.version_info >= (3, 8)",
    "digit_version(torch.__version__) >= digit_version('1.10')",
])
def test_version_check(test):
    src = f"""
    def f(x):
        if {test}:
            x = new_api(x)  # <-
        else:
            x = old_api(x)
        return x
    """
    g = _guard(src)
    assert g is not None and g.kind == "version-check" and g.line == 3 and g.fallback, (test, g)


def test_version_check_guards_both_branches():
    src = """
    if torch.__version__ < '2.0':
        a = 1
    else:
        b = torch.compile(m)  # <-
    """
    g = _guard(src)
    assert g.kind == "version-check" and g.fallback


@pytest.mark.parametrize("test", [
    "sys.platform == 'win32'",
    "platform.system() == 'Darwin'",
    "os.name == 'nt'",
    "MACOS",
    "platform.machine() == 'aarch64'",
])
def test_platform_check(test):
    src = f"""
    def f(x):
        if {test}:
            x = a(x)  # <-
        return x
    """
    g = _guard(src)
    assert g is not None and g.kind == "platform-check" and g.line == 3, (test, g)


def test_conditional_expression():
    src = """
    device = torch.device('cuda') if torch.cuda.is_available() else torch.device('cpu')  # <-
    """
    call = _node(src)
    assert isinstance(call, nodes.Assign)
    cuda = call.value.body
    g = guard_of(cuda)
    assert g.kind == "availability-check" and g.fallback
    assert guard_of(call.value.orelse) is None
    assert guard_of(call.value.test) is None   # the test itself is not guarded by its own if


def test_def_inside_guard_and_innermost_wins():
    src = """
    if HAVE_TRITON:
        def kernel(x):
            if x.is_cuda:
                return launch(x)  # <-
            return x
    """
    g = _guard(src)
    assert g.kind == "device-branch" and g.line == 4
    src2 = """
    if HAVE_TRITON:
        def kernel(x):
            return launch(x)  # <-
    """
    g2 = _guard(src2)
    assert g2.kind == "availability-check" and g2.line == 2


def test_main_guard_and_type_checking_are_not_guards():
    assert _guard("if __name__ == '__main__':\n    main()  # <-\n") is None
    assert _guard("if TYPE_CHECKING:\n    import apex  # <-\n") is None


def test_a_class_name_test_is_an_option_not_the_main_guard():
    # `optimizer_cls.__name__ == "Adam8bit"`: the attribute `__name__` of a chosen class is a run-time value,
    # not the module's `__name__` of the main guard: the 8-bit branch runs only for that choice
    src = """
    def make(optimizer_cls, params):
        opt = optimizer_cls(params)
        if optimizer_cls.__name__ == "Adam8bit":
            import bitsandbytes
            bitsandbytes.optim.GlobalOptimManager.get_instance()  # <-
        return opt
    """
    g = _guard(src)
    assert g is not None and g.kind == "option" and g.fallback and g.line == 4
    assert g.condition == "optimizer_cls.__name__ == 'Adam8bit'"
    # INVALID: the module's own name still is the main guard
    assert _guard("if __name__ == '__main__':\n    main(x.__name__)  # <-\n") is None


def test_to_dict_and_kinds():
    g = Guard("option", 4, True, "args.trt")
    assert g.to_dict() == {"kind": "option", "line": 4, "fallback": True, "condition": "args.trt"}
    assert Guard("option", 4, False).to_dict() == {"kind": "option", "line": 4, "fallback": False}
    with pytest.raises(ValueError):
        Guard("sometimes", 1, False)
    assert set(GUARD_KINDS) == {"import-fallback", "availability-check", "device-branch", "option", "version-check",
                                "platform-check"}


@pytest.mark.parametrize("src, probe", [
    ("if apex is not None:\n    pass\n", True),
    ("if apex:\n    pass\n", True),
    ("if not apex:\n    pass\n", True),
    ("ok = apex is None\n", True),
    ("assert apex is not None\n", True),
    ("ok = hasattr(apex, 'amp')\n", True),
    ("if HAVE and apex is not None:\n    pass\n", True),
    ("apex.amp.initialize(m)\n", False),
    ("x = apex\n", False),
])
def test_is_probe(src, probe):
    tree = astroid.parse(src)
    name = next(n for n in tree.nodes_of_class(nodes.Name) if n.name == "apex")
    assert is_probe(name) is probe
