"""``nvidia-smi`` run through a command held in a variable is found (NPU007) and blocks the library function.

``CMD = 'nvidia-smi --query-gpu=memory.free --format=csv'`` then ``sp.check_output(CMD.split())`` raises
FileNotFoundError on an Ascend host (``npu-smi`` there). VALID: the variable's command is followed (the
function is ``unsupported`` with reason ``nvidia-smi``); INVALID: another command in a variable is no finding.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import shlex
        import subprocess as sp


        def gpu_memory(device=0):
            CMD = 'nvidia-smi --query-gpu=memory.free --format=csv'
            free_out = sp.check_output(CMD.split())
            return free_out


        def gpu_names():
            cmd = "nvidia-smi -L"
            return sp.run(shlex.split(cmd), capture_output=True)


        def cpu_info():
            CMD = 'lscpu'
            return sp.check_output(CMD.split())
    """,
}


def test_nvidia_smi_through_a_variable_is_unsupported(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "smilib")
    lines = sorted(f["line"] for f in rep["findings"] if f["code"] == "NPU007" and f["api"] == "nvidia-smi")
    assert lines == [7, 13]
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["smilib.gpu_memory"]["status"] == "unsupported"
    assert by["smilib.gpu_memory"]["reasons"] == ["nvidia-smi"]
    assert by["smilib.gpu_names"]["status"] == "unsupported"
    assert "smilib.cpu_info" not in by
