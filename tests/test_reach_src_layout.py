"""Reach in script mode: the src layout (PyPA's packaging guide). A project keeps its package in ``src/pkg`` (``src``
is no package) and its programs ``import pkg``: installing the project (``pip install -e .``) puts ``src`` on
``sys.path``. The tool names the files ``src.pkg.*``; the programs' ``import pkg.x`` must reach them (VALID). INVALID:
with ``src/__init__.py`` (``src`` is a package, imported as ``src.pkg``) a plain ``import pkg`` finds nothing, and
an import that a project module answers as written (``from src.pkg import x``) keeps its module."""

from analyse.modes import run_script
from helpers import write_files

SRC_LAYOUT = {
    "pyproject.toml": """
        [project]
        name = "pkg"
        version = "0.1"

        [tool.setuptools.packages.find]
        where = ["src"]
    """,
    "src/pkg/__init__.py": "",
    "src/pkg/kernels.py": """
        import torch


        def launch(x):
            torch.cuda.synchronize()
            return x
    """,
    "run_train.py": """
        from pkg.kernels import launch


        if __name__ == "__main__":
            launch(1)
    """,
}


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def test_a_program_importing_a_package_of_the_src_layout_reaches_it(tmp_path, kb):
    # VALID (old: `pkg.kernels` was no project module - the file is src.pkg.kernels - so the finding was unreached)
    write_files(tmp_path, SRC_LAYOUT)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.synchronize")
    assert f["path"] == "src/pkg/kernels.py" and f["line"] == 6, f
    assert f["reach"]["status"] == "reachable" and f["counted"], f["reach"]


def test_a_src_folder_that_is_a_package_is_no_import_root(tmp_path, kb):
    # INVALID: src/__init__.py makes src a package (its modules are imported as src.pkg), so `import pkg` finds nothing
    files = dict(SRC_LAYOUT)
    files["src/__init__.py"] = ""
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    (f,) = _by(rep, "torch.cuda.synchronize")
    assert f["reach"]["status"] != "reachable", f["reach"]
