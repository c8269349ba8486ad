"""Library mode, round 42: ``self.m()`` that finds a stub runs a subclass's override, only when ``self`` is an
instance of that subclass. Seen from a method of another class on the same instance (``super().__init__()`` in a
subclass's ``__init__``), the choice is settled by that class: an override in another branch of the hierarchy is
never run (VALID: the wrapper's constructor is supported), one the class resolves the name to always runs (its
constructor is unsupported), and one that derives from the class stays the instance's choice (INVALID: the
intermediate class stays conditional). A call on another object keeps the condition as it is. No project code
copied."""

from __future__ import annotations

from helpers import library_report

ENVLIB = {
    "__init__.py": "from . import base, sims, gymlike\n",
    "base.py": """
        class EnvBase:
            def __init__(self, device="cpu"):
                self.device = device
                self._build_specs()

            def _build_specs(self):
                raise NotImplementedError
    """,
    "sims.py": """
        import torch

        from .base import EnvBase


        class DeviceSim(EnvBase):
            def _build_specs(self):
                self.cap = torch.cuda.get_device_capability()


        class DeviceSimChild(DeviceSim):
            def __init__(self):
                super().__init__(device="cuda")
    """,
    "gymlike.py": """
        import torch

        from .base import EnvBase


        class GymLike(EnvBase):
            def __init__(self, name):
                self.name = name
                super().__init__()


        class TableWrapper(GymLike):
            def _build_specs(self):
                self.spec = torch.zeros(3)


        class TableEnv(TableWrapper):
            def __init__(self, name, frames=1):
                self.frames = frames
                super().__init__(name)


        class CapWrapper(TableWrapper):
            def _build_specs(self):
                self.cap = torch.cuda.get_device_capability()


        def make_env(name):
            return GymLike(name)
    """,
}


def _functions(tmp_path, kb):
    rep = library_report(tmp_path, kb, ENVLIB, "envlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_an_override_in_another_branch_of_the_hierarchy_never_runs_for_the_callers_self(tmp_path, kb):
    by = _functions(tmp_path, kb)
    # the base's constructor: whichever subclass the instance is
    d = by["envlib.base.EnvBase.__init__"]
    assert d["status"] == "conditional", d
    assert d["reasons"] == ["torch.cuda.get_device_capability"]
    assert sorted(d["conditions"]) == [
        "only when `self` is an instance of CapWrapper (`self._build_specs()` runs its override)",
        "only when `self` is an instance of DeviceSim (`self._build_specs()` runs its override)",
    ]
    # a TableEnv resolves _build_specs to TableWrapper's portable override; DeviceSim and CapWrapper are not among
    # its classes (CapWrapper is a sibling, not a subclass)
    assert "envlib.gymlike.TableEnv.__init__" not in by, by.get("envlib.gymlike.TableEnv.__init__")


def test_an_override_the_callers_class_resolves_to_always_runs(tmp_path, kb):
    by = _functions(tmp_path, kb)
    d = by["envlib.sims.DeviceSimChild.__init__"]
    assert d["status"] == "unsupported", d
    assert d["reasons"] == ["torch.cuda.get_device_capability"]


def test_an_override_deriving_from_the_callers_class_stays_the_instances_choice(tmp_path, kb):
    by = _functions(tmp_path, kb)
    d = by["envlib.gymlike.GymLike.__init__"]
    assert d["status"] == "conditional", d
    # DeviceSim is no GymLike: only CapWrapper's override is left
    assert d["conditions"] == ["only when `self` is an instance of CapWrapper (`self._build_specs()` runs its override)"]
    # a constructor call from a function is no call on a method's own instance: the condition stays as it is
    d = by["envlib.gymlike.make_env"]
    assert d["status"] == "conditional", d
