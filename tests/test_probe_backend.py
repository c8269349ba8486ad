"""The NPU path, checked at the module boundary with a fake torch_npu (no NPU here)."""

import sys

import pytest

torch = pytest.importorskip("torch", reason="the probe needs torch: pip install torch==2.13.0")

from analyse.probe import worker as W  # noqa: E402

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent / "probe_fixtures"))
import fake_npu  # noqa: E402


@pytest.fixture
def fake():
    mod = fake_npu.install(torch, device_count=2)
    yield mod
    fake_npu.uninstall(torch)


def test_npu_backend_uses_torch_npu(fake, monkeypatch, tmp_path):
    toolkit = tmp_path / "ascend-toolkit" / "latest"
    (toolkit / "x86_64-linux").mkdir(parents=True)
    (toolkit / "x86_64-linux" / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC3\n")
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(toolkit))
    b = W.make_backend("npu:1")
    assert isinstance(b, W.NpuBackend) and b.index == 1 and b.device == "npu:1"
    b.setup()
    b.synchronize()
    env = b.environment()
    assert env["torch_npu"] == "2.13.0.post1"
    assert env["cann"] == "8.0.RC3"
    assert env["device_name"] == "Ascend910B1"
    assert ("set_device", 1) in fake_npu.CALLS
    assert ("synchronize",) in fake_npu.CALLS
    assert ("get_device_name", 1) in fake_npu.CALLS


def test_npu_device_not_visible(fake):
    with pytest.raises(W.DeviceError, match="only 2 NPU"):
        W.make_backend("npu:5").setup()


def test_npu_without_torch_npu(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torch_npu" else real(n, *a))
    with pytest.raises(W.DeviceError, match="needs torch_npu"):
        W.make_backend("npu").setup()


def test_cuda_not_visible():
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(W.DeviceError, match="no CUDA device"):
        W.make_backend("cuda:0").setup()


def test_worker_probe_through_fake_npu(fake, monkeypatch):
    """A whole probe through NpuBackend; tensors stay on the CPU because the fake has no device."""
    monkeypatch.setattr(W.NpuBackend, "torch_device", lambda self: torch.device("cpu"))
    w = W.Worker()
    reply = w.init({"device": "npu:0"})
    assert reply["ok"] and reply["environment"]["torch_npu"] == "2.13.0.post1"
    fake_npu.CALLS.clear()
    rec = w.probe({"op": "torch.ops.aten.relu", "dtype": "float32", "max_samples": 1, "repeats": 2})["record"]
    assert rec["status"] == "pass"
    assert sum(1 for c in fake_npu.CALLS if c[0] == "synchronize") >= 3  # after the call and around timings


def test_cli_exit_2_for_missing_device(tmp_path):
    from click.testing import CliRunner

    from analyse.probe.command import probe

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\n")
    r = CliRunner().invoke(probe, ["--ops", str(ops), "--device", "cuda", "-o", str(tmp_path / "o")])
    assert r.exit_code == 2
    err = (getattr(r, "stderr", None) or r.output).strip().splitlines()
    assert len(err) == 1 and "no CUDA device" in err[0]
