import os
import sys

# `python -m analyse` puts the working folder first on sys.path, and the working folder is often the
# analysed project: its json.py, random.py or tempfile.py must never shadow the standard library inside
# npu-analyse. The package itself is already imported, so its submodules are still found; when the working
# folder is the source checkout holding the package, it stays on sys.path, last, for child processes.
_cwd = os.getcwd()
sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != _cwd]
if os.path.dirname(os.path.dirname(os.path.abspath(__file__))) == _cwd:
    sys.path.append(_cwd)

from analyse.cli import console_main  # noqa: E402

console_main()
