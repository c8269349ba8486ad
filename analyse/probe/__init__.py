"""``npu-analyse probe``: run operators on a device, compare with the CPU, detect fallbacks.

Nothing in this package imports torch at import time except
:mod:`analyse.probe.worker` and :mod:`analyse.probe.samples`, which run in a
child process (``python -m analyse.probe.worker``).
"""
