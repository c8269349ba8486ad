"""How a run runs (never what it finds): the :class:`Settings` and the worker count.

Apart from the pipeline so that the command line can settle them without importing the analysis (astroid):
a run whose whole report is cached never imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple


@dataclass
class Settings:
    """How to run (never what is found): processes, cache, progress display."""

    jobs: Optional[int] = None          # None: default_jobs()
    cache_dir: Optional[Path] = None    # None: no cache
    progress: bool = False
    options: Tuple = ()                 # extra cache-key material (digests of option files)


def default_jobs() -> int:
    """``--jobs`` when none is given: ``NPU_ANALYSE_JOBS`` (at most the CPUs), else the CPUs this process
    may use (:func:`available_cpus`). More workers than CPUs only share the same CPUs' time, each holding
    its own memory (``-j 10000`` forked one process per file)."""
    cpus = available_cpus()
    env = os.environ.get("NPU_ANALYSE_JOBS")
    if env:
        try:
            return max(1, min(int(env), cpus))
        except ValueError:
            pass
    return cpus


def available_cpus(cgroup_root: str = "/sys/fs/cgroup", proc_cgroup: str = "/proc/self/cgroup") -> int:
    """The CPUs this process may use: the machine's, narrowed by its affinity mask (``taskset``, a cpuset)
    and by a cgroup CPU quota (``docker run --cpus 2``, a Kubernetes CPU limit, many CI runners), as
    Rust's ``available_parallelism`` counts them. ``os.cpu_count()`` alone counts the host's CPUs: in a
    container limited to 2 CPUs of a 64-CPU host it would start 64 workers that share 2 CPUs' time."""
    n = os.cpu_count() or 1
    try:
        n = len(os.sched_getaffinity(0)) or n
    except (AttributeError, OSError):   # no affinity masks on this platform
        pass
    quota = _cgroup_cpu_quota(cgroup_root, proc_cgroup)
    if quota is not None:
        n = min(n, quota)
    return max(1, n)


def _cgroup_cpu_quota(root: str, proc_cgroup: str) -> Optional[int]:
    """CPUs' worth of time the process's cgroup may use (rounded up), or None (no limit, no cgroups).
    cgroup v2: ``cpu.max`` ("max 100000" or "200000 100000"); v1: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``
    (quota -1: none). The process's own cgroup folder first, then the mount's root (inside a container
    the process's cgroup is usually the root of its namespace)."""
    try:
        with open(proc_cgroup, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    v2 = [ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")]
    v1 = [ln.split(":", 2)[2] for ln in lines
          if ln.count(":") >= 2 and "cpu" in ln.split(":", 2)[1].split(",")]
    candidates = []
    for path in v2:
        for folder in (root + path.rstrip("/"), root):
            candidates.append((os.path.join(folder, "cpu.max"), None))
    for path in v1:
        for folder in (os.path.join(root, "cpu") + path.rstrip("/"), os.path.join(root, "cpu")):
            candidates.append((os.path.join(folder, "cpu.cfs_quota_us"), os.path.join(folder, "cpu.cfs_period_us")))
    for first, second in candidates:
        try:
            with open(first, encoding="utf-8") as fh:
                fields = fh.read().split()
            if second is None:   # v2: "QUOTA PERIOD", QUOTA "max" for none
                if fields and fields[0] == "max":
                    return None
                quota, period = int(fields[0]), int(fields[1])
            else:                # v1: QUOTA, -1 for none; the period in its own file
                quota = int(fields[0])
                if quota <= 0:
                    return None
                with open(second, encoding="utf-8") as fh:
                    period = int(fh.read().strip())
        except (OSError, ValueError, IndexError):
            continue
        if quota > 0 and period > 0:
            return max(1, -(-quota // period))
    return None
