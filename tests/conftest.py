import os
import sys
import tempfile
from pathlib import Path

import pytest

# The command line caches per-file results under $XDG_CACHE_HOME/npu-analyse by default: tests (and the
# processes they start) use a throw-away folder, never the user's home.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="npu-analyse-test-cache-")

ROOT = Path(__file__).resolve().parents[1]
# ../shared next to the checkout (integration checkout), or the nearest shared/ above it (worktrees)
SHARED = next((d / "shared" for d in ROOT.parents if (d / "shared" / "spec").is_dir()), ROOT.parent / "shared")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def kb():
    from analyse.knowledge import load_knowledge

    return load_knowledge("2.8.0")


@pytest.fixture(scope="session")
def report_schema():
    import json

    p = SHARED / "spec" / "report.schema.json"
    if not p.is_file():
        pytest.skip("../shared/spec/report.schema.json not present")
    return json.loads(p.read_text())


def pytest_addoption(parser):
    parser.addoption("--regen-goldens", action="store_true", default=False,
                     help="rewrite examples/*/expected_report.json from the current output")


@pytest.fixture(scope="session")
def regen_goldens(request):
    return request.config.getoption("--regen-goldens")
