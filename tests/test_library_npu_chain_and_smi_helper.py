"""Library mode: CUDA code an NPU host never reaches, and nvidia-smi named through a helper.

1. ``if is_npu_available(): torch.npu.set_device(r) ... else: torch.cuda.set_device(r)``: the NPU branch comes
   first and is true on an NPU host with or without transfer_to_npu, so the CUDA calls of the ``else`` need no
   change (old: needs-migration, torch.cuda.set_device). INVALID: an ``else`` after a test that is no NPU test
   (an environment switch) keeps its CUDA call a migration.
2. ``subprocess.check_output([_smi(), "--query-gpu=name"])`` with ``def _smi(): ... return "nvidia-smi"`` (or a
   local set to it) runs the NVIDIA tool, absent on an Ascend host: unsupported (old: supported). INVALID: a helper
   that returns another command; a caller that runs the probe in ``try: ... except Exception: pass`` and then
   completes (``return True``) goes on without it: supported.
"""

from __future__ import annotations

from helpers import library_report

NPUELSE = {
    "__init__.py": "",
    "dist.py": """
        import os

        import torch
        import torch.distributed as dist


        def is_npu_available():
            try:
                import torch_npu  # noqa: F401
            except ImportError:
                return False
            return torch.npu.is_available()


        def init_dist(backend=None):
            local_rank = int(os.environ["LOCAL_RANK"])
            if is_npu_available():
                torch.npu.set_device(local_rank)
                dist.init_process_group(backend="hccl")
            else:
                torch.cuda.set_device(local_rank)
                dist.init_process_group(backend=backend)


        def env_first(backend=None):
            local_rank = int(os.environ["LOCAL_RANK"])
            if os.environ.get("USE_GLOO") == "1":
                dist.init_process_group(backend="gloo")
            else:
                torch.cuda.set_device(local_rank)
                dist.init_process_group(backend=backend)
    """,
}

SMI = {
    "__init__.py": "",
    "env.py": """
        import os
        import platform
        import subprocess
        from shutil import which


        def _smi():
            if platform.system() == "Windows":
                command = which("nvidia-smi.exe")
            else:
                command = "nvidia-smi"
            return command


        def _smi_const():
            return "nvidia-smi"


        def _python():
            return "python3"


        def gpu_names():
            out = subprocess.check_output([_smi(), "--query-gpu=name", "--format=csv,noheader"], text=True)
            return out.strip().split(os.linesep)


        def driver():
            return subprocess.check_output([_smi_const(), "--query-gpu=driver_version"], text=True)


        def python_version():
            return subprocess.check_output([_python(), "--version"], text=True)


        def p2p_supported():
            try:
                names = gpu_names()
                if len(names) > 1 and any("RTX 40" in n for n in names):
                    return driver() >= "550"
            except Exception:
                pass
            return True
    """,
}


def _by(rep):
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_cuda_code_after_the_npu_branch_of_a_chain_needs_no_change(tmp_path, kb):
    # VALID (old: needs-migration, torch.cuda.set_device)
    by = _by(library_report(tmp_path, kb, NPUELSE, "chainlib"))
    assert "chainlib.dist.init_dist" not in by, by.get("chainlib.dist.init_dist")


def test_cuda_code_after_another_test_stays_a_migration(tmp_path, kb):
    # INVALID
    by = _by(library_report(tmp_path, kb, NPUELSE, "chainlib"))
    assert by["chainlib.dist.env_first"]["status"] == "needs-migration"
    assert "torch.cuda.set_device" in by["chainlib.dist.env_first"]["reasons"]


def test_nvidia_smi_returned_by_a_helper_is_the_command_run(tmp_path, kb):
    # VALID (old: supported)
    by = _by(library_report(tmp_path, kb, SMI, "smilib"))
    for q in ("gpu_names", "driver"):
        assert by[f"smilib.env.{q}"]["status"] == "unsupported", by.get(f"smilib.env.{q}")
        assert by[f"smilib.env.{q}"]["reasons"] == ["nvidia-smi"]


def test_a_helper_returning_another_command_is_no_nvidia_smi(tmp_path, kb):
    # INVALID
    by = _by(library_report(tmp_path, kb, SMI, "smilib"))
    assert "smilib.env.python_version" not in by
    assert "smilib.env.p2p_supported" not in by, by.get("smilib.env.p2p_supported")
