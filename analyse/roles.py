"""File roles: what a file is in its project, from its path alone.

* ``test``: under ``tests/`` / ``test/`` / ``testing/``, ``test_*.py``, ``*_test.py``, ``conftest.py``;
* ``docs``: under ``docs/`` / ``doc/``, Sphinx ``conf.py``;
* ``build``: ``setup.py``, ``noxfile.py``, ``build*.py`` at the top of the project, under ``ci/`` / ``.github/`` /
  ``packaging/`` / ``docker/``;
* ``example``: under ``examples/`` / ``example/`` / ``demo/`` / ``demos/`` / ``samples/`` / ``tutorials/`` / ``notebooks/``;
* ``tool``: under ``tools/`` / ``scripts/`` / ``dev/`` / ``benchmarks/`` / ``bench/``, environment printers
  (``collect_env.py``, ``env_info.py``, ``print_env*.py``), exporters and benchmarks named so
  (``export.py`` / ``export_*.py`` / ``*_export.py``, ``benchmark*.py`` / ``bench_*.py`` / ``*_benchmark.py``);
* ``product`` otherwise: the code users run or import.

Programs (entry points) are judged by what they do as well (:func:`program_role`): a
program that trains the project's own models is ``product`` under ``tools/`` too, and a
library module with a self-test ``__main__`` block is a ``test`` entry point.

The path is the report path (relative to the analysed root), so a project
analysed from inside its own ``examples/`` folder is the product there.
Folder rules look at every folder of the path; the first matching rule in the
order above wins (``tests/tools/x.py`` is a test). ``overrides`` (``{glob: role}``,
from ``[tool.npu-analyse] roles``) come first: the longest matching glob wins;
globs match the whole path (``fnmatch``: ``*`` also crosses ``/``) or, when
they end in ``/`` or ``/**``, everything under a folder.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Dict, Mapping, Optional, Tuple

ROLES = ("product", "test", "example", "tool", "build", "docs")

_TEST_DIRS = {"tests", "test", "testing", "unittests", "unit_tests", "unittest", "integration_tests"}
_DOCS_DIRS = {"docs", "doc", "documentation", "sphinx", "_docs"}
_BUILD_DIRS = {"ci", ".ci", ".github", ".circleci", "packaging", "build_tools", "cmake", "docker"}
_EXAMPLE_DIRS = {"examples", "example", "demo", "demos", "samples", "sample", "tutorials", "tutorial", "notebooks"}
_TOOL_DIRS = {"tools", "tool", "scripts", "script", "dev", "benchmarks", "benchmark", "bench", "benchmarking",
              "utilities"}

_CHECK_NAMES = ("test.py", "tests.py")   # a program so named is a self-check unless it is offered to users
_TEST_FILE = re.compile(r"^(test_.*|.*_test|.*_tests|conftest)\.py$")
_DOCS_FILE = re.compile(r"^conf\.py$")
_BUILD_FILE = re.compile(r"^(setup|noxfile|fabfile)\.py$")
_ROOT_BUILD_FILE = re.compile(r"^(build|build_.*|make_.*|setup_.*)\.py$")   # only at the top of the project
_TOOL_FILE = re.compile(r"^(collect_env.*|env_info|print_env.*|.*_collect_env|export|export_.*|.*_export|"
                        r"benchmark.*|bench_.*|.*_benchmark)\.py$")


def _norm_glob(glob: str) -> Tuple[str, ...]:
    g = glob.strip().replace("\\", "/")
    if g.startswith("./"):
        g = g[2:]
    if g.endswith("/**"):
        g = g[:-3]
    if g.endswith("/"):
        g = g.rstrip("/")
        return (g, g + "/*")
    if not any(c in g for c in "*?["):
        return (g, g + "/*")     # a plain folder or file name
    return (g,)


def check_overrides(overrides: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """Validated ``{glob: role}``; raises ValueError on an unknown role."""
    out: Dict[str, str] = {}
    for glob, role in (overrides or {}).items():
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} for {glob!r}; roles are: {', '.join(ROLES)}")
        out[str(glob)] = role
    return out


@lru_cache(maxsize=4096)
def _default_role(relpath: str) -> str:
    parts = relpath.replace("\\", "/").split("/")
    name = parts[-1].lower()
    dirs = [d.lower() for d in parts[:-1]]
    if _TEST_FILE.match(name) or any(d in _TEST_DIRS for d in dirs):
        return "test"
    if any(d in _DOCS_DIRS for d in dirs) or _DOCS_FILE.match(name):
        return "docs"
    if _BUILD_FILE.match(name) or (not dirs and _ROOT_BUILD_FILE.match(name)) or any(d in _BUILD_DIRS for d in dirs):
        return "build"
    if any(d in _EXAMPLE_DIRS for d in dirs):
        return "example"
    if any(d in _TOOL_DIRS for d in dirs) or _TOOL_FILE.match(name):
        return "tool"
    return "product"


def _override(relpath: str, overrides: Optional[Mapping[str, str]]) -> Optional[str]:
    """The role the longest matching override glob gives *relpath*, or None."""
    if not overrides:
        return None
    anything, ordered = _override_matcher(tuple(overrides.items()))
    if anything is None or not anything.match(relpath):   # one search for the common case: no glob matches
        return None
    for rx, role in ordered:
        if rx.match(relpath):
            return role
    return None   # pragma: no cover - the combined expression matched one of them


@lru_cache(maxsize=64)
def _override_matcher(items: Tuple[Tuple[str, str], ...]):
    """(one expression matching when any glob does, [(expression, role)] longest glob first, then in the
    given order): globs compiled once for the run, not per file."""
    import fnmatch

    ordered = []
    alts = []
    for i, (glob, role) in enumerate(items):
        rx = "|".join(f"(?:{fnmatch.translate(g)})" for g in _norm_glob(glob))
        alts.append(rx)
        ordered.append((-len(glob), i, re.compile(rx), role))
    ordered.sort(key=lambda t: (t[0], t[1]))
    anything = re.compile("|".join(f"(?:{rx})" for rx in alts)) if alts else None
    return anything, [(rx, role) for _n, _i, rx, role in ordered]


def role_of(relpath: str, overrides: Optional[Mapping[str, str]] = None) -> str:
    """The role of the file at *relpath* (a report path)."""
    if overrides:
        role = _override(relpath, overrides)
        if role is not None:
            return role
    return _default_role(relpath)


def program_role(relpath: str, overrides: Optional[Mapping[str, str]] = None, *, trains: bool = False,
                 self_test: bool = False) -> str:
    """The role of a program (an entry point) at *relpath*, from what it does; the folder is a hint.

    * a program that trains the project's own models (*trains*) is ``product`` wherever it lives
      (``tools/train_net.py``, ``scripts/train.py``); a program named as a tool (``benchmark*.py``,
      ``export*.py``, ``collect_env.py``) stays a tool, and test / example / build / docs paths keep their role;
    * a module of the project's library with a self-test ``__main__`` block (*self_test*) is ``test``;
    * a configuration override (``roles = {glob: role}``) wins over both."""
    if overrides:
        role = _override(relpath, overrides)
        if role is not None:
            return role
    role = _default_role(relpath)
    if role == "tool" and trains and not _TOOL_FILE.match(relpath.replace("\\", "/").rsplit("/", 1)[-1].lower()):
        return "product"
    if role == "product" and self_test:
        return "test"
    return role


def build_by_name(relpath: str) -> bool:
    """A top-level ``build*.py`` / ``make_*.py`` / ``setup_*.py``: a build script by its name alone (``setup.py``
    and a build folder are build scripts whatever they do)."""
    parts = relpath.replace("\\", "/").split("/")
    name = parts[-1].lower()
    return len(parts) == 1 and bool(_ROOT_BUILD_FILE.match(name)) and not _BUILD_FILE.match(name)


def program_role_evidence(relpath: str, overrides: Optional[Mapping[str, str]] = None, *, trains: bool = False,
                          self_test: bool = False, invoked: Optional[str] = None, collected: bool = True,
                          program: bool = False, builds: Optional[bool] = None) -> Tuple[str, str]:
    """(role, evidence) of a program: :func:`program_role`, then the evidence of how the project runs it.

    * a program the project's README, docs, launch scripts, Makefile, Dockerfile or CI invoke (*invoked*: where)
      is ``product`` under ``scripts/``, ``tools/``, ``demo/`` or ``examples/`` too, and when its name alone made it a
      test (``test_*.py``);
    * a program named like a test (``test_*.py``) that defines a command line (*program*) and that no test runner
      would collect (*collected* False: no ``test*`` function or ``TestCase``) is an evaluation program: ``product``;
    * a program named ``test.py`` / ``tests.py`` with no command line that nothing invokes (a kernel's check next
      to its build script, ``python test.py`` by its author) is a ``test``; with a command line (``tools/test.py``,
      an evaluation program) or invoked, it keeps its role.
    * a program named like a build script only by its name (``make_dataset.py`` at the top: :func:`build_by_name`)
      that builds nothing (*builds* False: it imports no packaging or extension-building module) is what its path
      says without that name (``product``).
    A test folder, a build or docs path and a configuration override keep their role."""
    if overrides:
        role = _override(relpath, overrides)
        if role is not None:
            return role, "configured (roles override)"
    role = program_role(relpath, None, trains=trains, self_test=self_test)
    if role == "build" and builds is False and build_by_name(relpath):
        return "product", (f"named like a build script but builds nothing; invoked by {invoked}" if invoked else
                           "named like a build script but builds nothing (no packaging or extension build)")
    name = relpath.replace("\\", "/").rsplit("/", 1)[-1].lower()
    dirs = [d.lower() for d in relpath.replace("\\", "/").split("/")[:-1]]
    name_test = role == "test" and bool(_TEST_FILE.match(name)) and not any(d in _TEST_DIRS for d in dirs)
    if invoked and ((role in ("tool", "example") and not _TOOL_FILE.match(name)) or name_test):
        return "product", f"invoked by {invoked}"
    if name_test and program and not collected:
        return "product", "named like a test, but a program with a command line that no test runner collects"
    if role == "product" and name in _CHECK_NAMES and not program and not invoked:
        return "test", f"named {name}, with no command line, and no README, doc or launch script runs it: a self-check"
    if role == "product" and trains and _default_role(relpath) == "tool":
        return role, "trains a model"
    if role == "test" and self_test and _default_role(relpath) == "product":
        return role, "a module of the project's package whose __main__ block only exercises it (a self-test)"
    if invoked:
        return role, f"invoked by {invoked}"
    return role, f"by its path ({role})"
