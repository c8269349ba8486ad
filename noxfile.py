"""The test suite on every supported Python that is installed: ``nox`` (or ``nox -s tests-3.9``).

Each session makes a fresh virtualenv, installs ``.[test]`` (no torch: the torch tests skip
with a reason) and runs ``pytest -q tests``. Interpreters are looked up as ``pythonX.Y`` on
PATH and in ``~/.pyenv/versions``; a Python that is not installed is skipped with a message.
``nox -s yolov5_ids -- /path/to/yolov5`` checks that a built wheel gives the same finding ids
on each of them.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import nox

SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13")   # keep in step with pyproject.toml's classifiers

nox.options.error_on_missing_interpreters = False
nox.options.download_python = "never"
nox.options.default_venv_backend = "venv"
nox.options.sessions = [f"tests-{v}" for v in SUPPORTED]


def _interpreter(version: str):
    """A working ``pythonX.Y``: pyenv shims exist for versions that are not active, so try each."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")),
                         reverse=True)
    want = "%d.%d" % tuple(int(x) for x in version.split("."))
    for cand in candidates:
        if not cand:
            continue
        try:
            out = subprocess.run([cand, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() == want:
            return cand
    return None


INTERPRETERS = {v: _interpreter(v) for v in SUPPORTED}


def _tests(session: nox.Session) -> None:
    session.install(".[test]")
    session.run("python", "-m", "pytest", "-q", "tests", "-p", "no:cacheprovider", *session.posargs)


def _yolov5_ids(session: nox.Session) -> None:
    """Finding ids of ``npu-analyse script`` on the given project, from an installed wheel run outside the checkout."""
    if not session.posargs:
        session.error("usage: nox -s yolov5_ids-3.X -- /path/to/project")
    dist = session.create_tmp()
    session.install("hatchling>=1.27", "pip")
    session.run("python", "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", dist, ".")
    wheel = sorted(glob.glob(os.path.join(dist, "npu_analyse-*.whl")))[-1]
    session.install(wheel)
    out = os.path.join(dist, "report")
    session.chdir(dist)
    session.run("npu-analyse", "script", session.posargs[0], "-o", out, "--format", "json", "-q")
    with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
        report = json.load(fh)
    ids = sorted(f["id"] for f in report["findings"])
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".nox", f"ids-{session.python}.json")
    with open(target, "w", encoding="utf-8") as fh:
        json.dump({"python": sys.version, "findings": len(ids), "errors": report["errors"], "ids": ids}, fh, indent=1)
    session.log(f"{len(ids)} findings, {len(report['errors'])} errors -> {target}")


for _v in SUPPORTED:
    _py = INTERPRETERS[_v] or _v   # an unresolved version makes nox skip the session ("interpreter not found")
    nox.session(name=f"tests-{_v}", python=_py)(_tests)
    nox.session(name=f"yolov5_ids-{_v}", python=_py)(_yolov5_ids)
