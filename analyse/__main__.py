import os
import sys

# `python -m analyse` puts the working folder first on sys.path, and the working folder is often the
# analysed project: its json.py, random.py or tempfile.py must never shadow the standard library inside
# npu-analyse. The package itself is already imported, so its submodules are still found.
_cwd = os.getcwd()
sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != _cwd]

from analyse.cli import main  # noqa: E402

main()
