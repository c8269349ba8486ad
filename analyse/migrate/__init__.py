"""``npu-analyse migrate``: the findings of a ``script`` run turned into a reviewed patch.

This room sits beside the modes (it is called by the command line after the same analysis as ``script``;
nothing in the pipeline or the passes imports it). :func:`plan` reads the report and the analysed files
(never running them) and returns a :class:`Migration`: per file the new bytes, each edit traced to its
finding, and what is left for the engineer with the reason. :mod:`analyse.migrate.output` writes it as a
unified diff, a change list (JSON / CSV), a migrated copy of the tree or in place.

Strategies: ``shim`` (default) adds ``import torch_npu`` and ``from torch_npu.contrib import transfer_to_npu``
at the top of each entry point and makes only the edits the shim does not make; ``explicit`` writes every
CUDA use in its NPU form (``torch.cuda.X`` -> ``torch.npu.X``, ``'cuda'`` -> ``'npu'``, ``.cuda()`` ->
``.npu()``, ``nccl`` -> ``hccl``) so that a new analysis finds nothing ``auto``.
"""

from __future__ import annotations

from analyse.migrate.plan import Migration, Options, plan

__all__ = ["Migration", "Options", "plan"]
