"""npu-analyse: static migration-feasibility analysis of PyTorch code for Ascend NPUs."""

__version__ = "0.1.0"
