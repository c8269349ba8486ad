"""Library mode, round 42: kernels a library builds at run time and hands back through factories and attributes.
VALID/INVALID fixtures of the shapes met in the read misses; no project code copied.

1. A method called on what a project function returns (``make_spec(name).build_and_load()``): the call runs the
   method of the class the factory builds (through the factories it returns the result of), and an inherited
   method's calls of stubs on ``self`` (``self.build()``, abstract in the base) run that class's overrides, not
   every subclass's under "only when self is an instance of ...". A memoised getter ``get_module()`` returning
   ``make_spec(...).build_and_load()`` is then unsupported where the build is, and so is every function calling
   into the getter's module (old: supported: the method on a call's result was an untyped call). The same for a
   local bound to the factory's result (``spec = make_spec(); spec.build_and_load()``). INVALID: a factory whose
   class builds nothing CUDA-only keeps its callers supported.
2. A call into an instance attribute that another method sets from such a getter (``self._module =
   get_module(...)`` in ``plan()``, ``self._module.run(x)`` in ``run()``): every value of the attribute needs
   unsupported code to exist, so the call does (old: supported, or conditional through an unrelated guard of
   ``run``). ``None`` is no alternative; a value built without such code (a pure-PyTorch object) is one.
   Calls into the attribute in both branches of one test (``if self.fused: ... else: ...``) leave no fallback.
"""

from __future__ import annotations

from helpers import library_report

JIT = {
    "__init__.py": "",
    "jit.py": """
        import abc
        import subprocess

        import torch


        class Spec(abc.ABC):
            @abc.abstractmethod
            def build(self):
                ...

            @abc.abstractmethod
            def load(self):
                ...

            def build_and_load(self):
                self.build()
                return self.load()


        class NvccSpec(Spec):
            def __init__(self, name, sources):
                self.name = name
                self.sources = sources

            def build(self):
                major, minor = torch.cuda.get_device_capability()
                subprocess.run(["ninja", "-C", self.name], check=True)

            def load(self):
                return object()


        class ScriptSpec(Spec):
            def __init__(self, fn):
                self.fn = fn

            def build(self):
                pass

            def load(self):
                return self.fn


        def make_spec(name, sources):
            spec = NvccSpec(name=name, sources=sources)
            return spec


        def make_activation_spec(act):
            return make_spec(act + "_and_mul", [act + ".cu"])


        def make_script_spec(fn):
            return ScriptSpec(fn)
    """,
    "ops.py": """
        import functools

        import torch

        from .jit import make_activation_spec, make_script_spec


        @functools.cache
        def get_act_module(act):
            return make_activation_spec(act).build_and_load()


        def get_act_module_local(act):
            spec = make_activation_spec(act)
            return spec.build_and_load()


        def silu_and_mul(x):
            out = torch.empty(x.shape[:-1] + (x.shape[-1] // 2,), device=x.device, dtype=x.dtype)
            get_act_module("silu").silu_and_mul(out, x)
            return out


        def gelu_and_mul(x):
            out = torch.empty_like(x)
            get_act_module_local("gelu").gelu_and_mul(out, x)
            return out


        def get_plain_module():
            return make_script_spec(torch.nn.functional.silu).build_and_load()


        def plain_silu(x):
            return get_plain_module()(x)
    """,
    "wrapper.py": """
        import torch

        from .ops import get_act_module, get_plain_module


        class DecodeWrapper:
            def __init__(self, workspace, fused=True):
                self._workspace = workspace
                self._module = None
                self.fused = fused

            def plan(self, backend="auto"):
                if backend == "fa3":
                    self._module = get_act_module("fa3")
                else:
                    self._module = get_act_module("fa2")

            def run(self, q, k):
                if q.dtype == torch.uint8:
                    q = q.float()
                if self.fused:
                    return self._module.paged_run(self._workspace, q, k)
                else:
                    return self._module.run(self._workspace, q, k)


        class MixedWrapper:
            def __init__(self):
                self._impl = None

            def plan(self, native=False):
                if native:
                    self._impl = torch.nn.Identity()
                else:
                    self._impl = get_act_module("fa2")

            def run(self, q):
                return self._impl(q)


        class PlainWrapper:
            def plan(self):
                self._impl = get_plain_module()

            def run(self, q):
                return self._impl(q)
    """,
}


def _functions(tmp_path, kb):
    rep = library_report(tmp_path, kb, JIT, "jitlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_getter_of_a_run_time_built_module_and_its_callers_are_unsupported(tmp_path, kb):
    # VALID: make_activation_spec(...) returns make_spec(...), which builds an NvccSpec; build_and_load (inherited
    # from Spec) runs NvccSpec.build on it
    fns = _functions(tmp_path, kb)
    for q in ("jitlib.ops.get_act_module", "jitlib.ops.silu_and_mul"):
        assert fns[q]["status"] == "unsupported", fns[q]
        assert fns[q]["reasons"] == ["torch.cuda.get_device_capability"], fns[q]
    assert "jitlib.jit.NvccSpec.build" in fns["jitlib.ops.silu_and_mul"]["via"]
    # a local bound to the factory's result: the same
    assert fns["jitlib.ops.gelu_and_mul"]["status"] == "unsupported", fns["jitlib.ops.gelu_and_mul"]
    # the base's method alone still only runs NvccSpec.build for an NvccSpec instance
    assert fns["jitlib.jit.Spec.build_and_load"]["status"] == "conditional"


def test_a_factory_of_a_class_that_builds_nothing_cuda_only_keeps_callers_supported(tmp_path, kb):
    # INVALID: ScriptSpec's build and load are plain Python
    fns = _functions(tmp_path, kb)
    for q in ("jitlib.ops.get_plain_module", "jitlib.ops.plain_silu", "jitlib.wrapper.PlainWrapper.run"):
        assert q not in fns, fns[q]


def test_a_call_into_an_attribute_set_from_a_cuda_only_getter_is_unsupported(tmp_path, kb):
    # VALID: every value of self._module (None aside) is get_act_module(...); both branches of `if self.fused:`
    # call into it, so neither is the other's fallback (the uint8 test before them changes nothing)
    fns = _functions(tmp_path, kb)
    run = fns["jitlib.wrapper.DecodeWrapper.run"]
    assert run["status"] == "unsupported", run
    assert run["reasons"] == ["torch.cuda.get_device_capability"], run
    assert fns["jitlib.wrapper.DecodeWrapper.plan"]["status"] == "unsupported"


def test_an_attribute_with_a_pure_torch_value_has_a_working_alternative(tmp_path, kb):
    # INVALID: MixedWrapper._impl may be a torch.nn.Identity(): calling it needs no kernel (plan itself, which
    # builds the kernel in one branch, is judged on its own)
    fns = _functions(tmp_path, kb)
    assert "jitlib.wrapper.MixedWrapper.run" not in fns, fns.get("jitlib.wrapper.MixedWrapper.run")
    assert fns["jitlib.wrapper.MixedWrapper.plan"]["status"] in ("unsupported", "conditional")
