"""End to end: a small CUDA training script, migrated with --strategy explicit, trains one step on the CPU under a
test-only torch_npu stand-in (npu -> cpu) and gives the loss the original gives under a cuda -> cpu stand-in."""

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from analyse.cli import main

pytest.importorskip("torch", reason="the end-to-end migration test runs a training step with torch (CPU build)")

HERE = Path(__file__).resolve().parent / "migrate_e2e"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _loss(script: Path, standin: Path, pre: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CUDA", "ASCEND"))}
    env.update(PYTHONPATH=str(standin), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), CUDA_VISIBLE_DEVICES="")
    code = f"{pre}import runpy; runpy.run_path({str(script)!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=script.parent, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = re.search(r"^LOSS (\S+)$", proc.stdout, re.M)
    assert m, proc.stdout
    return float(m.group(1))


def test_explicit_migration_trains_to_the_same_loss(tmp_path, capsys):
    src = tmp_path / "project"
    shutil.copytree(HERE / "project", src)
    out = tmp_path / "migrated"
    with pytest.raises(SystemExit) as exc:
        main(["migrate", str(src), "--strategy", "explicit", "--no-cache", "-q", "--apply", str(out)])
    assert exc.value.code == 0
    text = (out / "train.py").read_text()
    assert "flash_attn_func(" not in text and "torch_npu.npu_fusion_attention(" in text
    assert "keep_prob=0.9" in text and "sparse_mode=3" in text
    assert 'backend="hccl"' in text and 'Block().to("npu")' in text and "randn(2, 16, 32).npu()" in text
    assert 'device_type="npu"' in text
    original = _loss(src / "train.py", HERE / "standin_cuda", "import cuda_on_cpu; ")
    migrated = _loss(out / "train.py", HERE / "standin_npu", "")
    assert migrated == pytest.approx(original, rel=1e-6, abs=1e-9)
    assert original > 0
