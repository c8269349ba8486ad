"""Star imports with a source the tree does not hold, round 42.

A package's ``__init__`` made of ``from .x import *`` lines where one source is generated at build time
(``from .version import *``, no version.py in the repository): the one module that is read and defines the name
gives it, so ``from pkg import Upsampler`` is the class of ``pkg/helpers.py`` and a program that builds it reaches
its constructor (the call graph's :meth:`analyse.callgraph.Linker._canonical`).

INVALID (the old code answered "ambiguous" and the program reached nothing of the class): the device choice in the
constructor counts for the program, which is low with a device driver.

VALID: when a second source that is read defines the name too, the name stays ambiguous and nothing of the class is
reached through the package; a program that imports the class from its module reaches it either way.
Shapes modelled on what the projects do; no project code copied.
"""

from __future__ import annotations

from analyse.modes import run_script
from helpers import write_files


def _project(extra=None) -> dict:
    files = {
        "pkg/__init__.py": """
            # flake8: noqa
            from .archs import *
            from .helpers import *
            from .version import *
        """,
        "pkg/archs.py": """
            import torch


            class Net(torch.nn.Module):
                def forward(self, x):
                    return x
        """,
        "pkg/helpers.py": """
            import torch


            class Upsampler:
                def __init__(self, scale, device=None):
                    self.scale = scale
                    self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu") if device is None else device

                def run(self, x):
                    return x.to(self.device)
        """,
        "infer.py": """
            import argparse
            from pkg import Upsampler


            def main():
                parser = argparse.ArgumentParser()
                parser.add_argument("--scale", type=int, default=4)
                args = parser.parse_args()
                up = Upsampler(args.scale)
                print(up.scale)


            if __name__ == "__main__":
                main()
        """,
    }
    files.update(extra or {})
    return files


def _ep(rep, path):
    return next(e for e in rep["summary"]["entry_points"] if e["path"] == path)["verdict"]


def _helpers_findings(rep):
    return [f for f in rep["findings"] if f["path"] == "pkg/helpers.py" and f["line"] == 8]


SECOND = {"pkg/version.py": """
    __version__ = "1.0"


    class Upsampler:
        pass
"""}


def test_a_generated_star_source_does_not_hide_the_class(tmp_path, kb):
    write_files(tmp_path, _project())
    rep = run_script([tmp_path], kb)
    v = _ep(rep, "infer.py")
    assert v["effort"] == "low"
    assert any("cuda" in d["api"] for d in v["drivers"])
    found = _helpers_findings(rep)
    assert found and all(f["counted"] for f in found)
    assert all("pkg.helpers.Upsampler.__init__" in f["reach"]["path"] for f in found)


def test_a_second_read_source_of_the_name_keeps_it_ambiguous(tmp_path, kb):
    write_files(tmp_path, _project(SECOND))
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "infer.py")["effort"] == "none"
    assert not any(f["counted"] for f in _helpers_findings(rep))


def test_importing_the_class_from_its_module_reaches_it_either_way(tmp_path, kb):
    files = _project(SECOND)
    files["infer.py"] = files["infer.py"].replace("from pkg import Upsampler", "from pkg.helpers import Upsampler")
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "infer.py")["effort"] == "low"
