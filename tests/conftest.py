import os
import sys
import tempfile
from pathlib import Path

import pytest

# The command line caches per-file results under $XDG_CACHE_HOME/npu-analyse by default: tests (and the
# processes they start) use a throw-away folder, never the user's home.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="npu-analyse-test-cache-")
# ... and the default report folder of a run inside the analysed folder (cli.default_output)
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="npu-analyse-test-state-")

ROOT = Path(__file__).resolve().parents[1]
# ../shared next to the checkout (integration checkout), or the nearest shared/ above it (worktrees)
SHARED = next((d / "shared" for d in ROOT.parents if (d / "shared" / "spec").is_dir()), ROOT.parent / "shared")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def kb():
    from analyse.knowledge import load_knowledge

    return load_knowledge("2.8.0")


# fixtures that import torch when loaded (the probe worker loads them by path); never collected as tests
collect_ignore_glob = ["probe_fixtures/*"]


@pytest.fixture(scope="session")
def report_schema():
    """The report schema shipped in the package (tests/test_schemas.py keeps it equal to the spec)."""
    from analyse.schemas import load_schema

    return load_schema("report.schema.json")


@pytest.fixture(scope="session")
def probe_schema():
    from analyse.schemas import load_schema

    return load_schema("probe.schema.json")


def pytest_addoption(parser):
    parser.addoption("--regen-goldens", action="store_true", default=False,
                     help="rewrite examples/*/expected_report.json from the current output")
    parser.addoption("--upstream", default=None, metavar="DIR",
                     help="the snapshot of the public Ascend sources that tools/build_knowledge.py reads: the tests "
                          "marked needs_upstream rebuild the knowledge base from it (default: a shared/upstream "
                          "folder above the checkout, when there is one)")


def upstream_dir(config) -> "Path | None":
    """The upstream snapshot (--upstream, else shared/upstream above the checkout), or None."""
    given = config.getoption("--upstream")
    if given:
        return Path(given)
    return next((d / "shared" / "upstream" for d in ROOT.parents
                 if (d / "shared" / "upstream" / "torch_npu" / "transfer_to_npu_facts.yaml").is_file()), None)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_upstream: rebuilds the knowledge base from the upstream snapshot "
                                       "(--upstream DIR); not collected without one")


def pytest_collection_modifyitems(config, items):
    """A fresh clone has no upstream snapshot: the rebuild tests are deselected (the suite is self-contained),
    never skipped for a missing folder."""
    if upstream_dir(config) is not None:
        return
    drop = [item for item in items if item.get_closest_marker("needs_upstream")]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if not item.get_closest_marker("needs_upstream")]


@pytest.fixture(scope="session")
def upstream(request):
    return upstream_dir(request.config)


@pytest.fixture(scope="session")
def regen_goldens(request):
    return request.config.getoption("--regen-goldens")


def _click_81_runner_like_82():
    """Python 3.9 gets click 8.1 (click 8.2 needs 3.10), whose CliRunner mixes stderr into stdout and has no
    separate ``result.stderr``. The tests are written against click 8.2: ``stderr`` separate, ``output``
    both streams. Give click 8.1's runner those semantics (test-only; the product works with either)."""
    from importlib.metadata import version

    import click.testing

    if tuple(int(x) for x in version("click").split(".")[:2]) >= (8, 2):
        return

    class Result(click.testing.Result):
        @property
        def output(self):
            return self.stdout + (self.stderr if self.stderr_bytes is not None else "")

    class CliRunner(click.testing.CliRunner):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("mix_stderr", False)
            super().__init__(*args, **kwargs)

        def invoke(self, *args, **kwargs):
            result = super().invoke(*args, **kwargs)
            result.__class__ = Result
            return result

    click.testing.CliRunner = CliRunner


_click_81_runner_like_82()


@pytest.fixture
def count_parses(monkeypatch):
    """Record which files get parsed (the relpaths given to ``pipeline.parse_source``, in order)."""
    from analyse import pipeline

    parsed = []
    real = pipeline.parse_source

    def spy(text, path, relpath, modname):
        parsed.append(relpath)
        return real(text, path, relpath, modname)

    monkeypatch.setattr(pipeline, "parse_source", spy)
    return parsed
