"""Writing a file so that readers see the old content or the new, never half of it.

The data goes to a temporary file in the target's folder, which is then moved
over the target with ``os.replace`` (atomic on one file system). On any failure,
Ctrl-C included, the temporary file is removed and the target is untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Union


def write_atomic(path: Union[str, Path], data: bytes, *, prefix: str = "", suffix: str = ".tmp",
                 keep_mode: bool = False) -> None:
    """*keep_mode*: the new file gets the permission bits of the file it replaces (an edited source file)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=prefix or f".{path.name}.", suffix=suffix, dir=str(path.parent or Path(".")))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if keep_mode:
            try:
                shutil.copymode(path, tmp)
            except OSError:
                pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
