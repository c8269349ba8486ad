"""The cyclic garbage collector's policy during a run (no analysis imports: the CLI uses it before
anything heavy is loaded).

A run allocates millions of small, long-lived objects (the knowledge base, astroid trees, findings)
and little cyclic garbage. With the default thresholds the collector re-scans the live objects every
few hundred allocations. Like mypy's build, collect far less often while a run is in progress, and
freeze what is known to live on (the knowledge base before the workers fork, a worker's kept trees),
so that young-generation collections no longer scan it.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

GC_THRESHOLDS = (200_000, 50, 100)


@contextlib.contextmanager
def collect_less(freeze: bool = False) -> Iterator[None]:
    """Raise the collector's thresholds for the block; with *freeze*, also move every object alive at
    the start out of the collector's sight (back in at the end). Nests: the thresholds and the frozen
    objects of an outer block are restored by an inner one."""
    old = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    if freeze:
        gc.freeze()
    try:
        yield
    finally:
        if freeze:
            gc.unfreeze()
        gc.set_threshold(*old)


@contextlib.contextmanager
def collect_never() -> Iterator[None]:
    """No automatic collection in the block (the previous state is restored at the end).

    For the per-file work while the parsed trees are kept: each kept tree is frozen as soon as it is
    built, so no collection could free it, and what the passes allocate is freed by reference counting
    as they go. The collector only scanned the trees under construction and those temporaries again
    and again (timm, one process: 0.32 s of collections before, 0.03 s after); the price is memory
    (peak RSS on Megatron-LM thirdparty 393 -> 476 MB). Runs too large to keep their trees keep the
    collector: there, it is what frees each tree after its file is done.

    At the end, what the block left alive is frozen too (inside :func:`collect_less` with *freeze*, it
    is unfrozen with the rest when that block ends): otherwise the first collection after the block
    scans all of it at once (a quarter of a second after a one-process run over timm)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()
