"""Process lifecycle (issue 24, part 1): every process of a run ends with it, whatever ends the run.

The runs here are real command lines in their own session (process group = the main process's pid), so
every process a run starts can be found after the main process has gone -- workers are forked, and a
forked process keeps its group even when it outlives its parent -- and a terminal's Ctrl-C can be sent to
the whole group. Every test kills what it started, whatever the outcome."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Dict, List

import pytest

from analyse.pipeline import PARALLEL_MIN_BYTES, available_cpus

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")

# One module of a training project: a model, a data pipeline and a training step with CUDA calls, so that
# every pass has work. Each copy gets its own names; about 3 KB each.
_MODULE = '''
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Block{i}(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim * 4)
        self.fc2 = nn.Linear(dim * 4, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.fc2(torch.relu(self.fc1(self.norm(x))))
        idx = h.nonzero()
        return x + h, idx


class Data{i}(Dataset):
    def __init__(self, n=128):
        self.items = [torch.randn(64) for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k):
        return self.items[k].pin_memory()


def setup_{i}(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    return torch.device("cuda", rank)


def train_{i}(epochs=2, rank=0):
    device = setup_{i}(rank, int(os.environ.get("WORLD_SIZE", "1")))
    model = Block{i}().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    loader = DataLoader(Data{i}(), batch_size=16, num_workers=2, pin_memory=True)
    for epoch in range(epochs):
        for batch in loader:
            batch = batch.to(device, non_blocking=True)
            with torch.cuda.amp.autocast():
                out, _ = model(batch)
                loss = out.float().pow(2).mean()
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        torch.cuda.synchronize()
        if torch.cuda.is_available():
            print(torch.cuda.max_memory_allocated() / 2 ** 20, torch.cuda.get_device_name(0))
    torch.save(model.state_dict(), f"model_{{rank}}.pt")
    return model
'''


def big_tree(root: Path, files: int = 400) -> Path:
    """A project big enough that the pipeline starts its workers and takes a while (about 750 KB)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (root / f"mod_{i:04d}.py").write_text(_MODULE.format(i=i))
    (root / "train.py").write_text("from mod_0000 import train_0\n\nif __name__ == '__main__':\n    train_0()\n")
    assert sum(p.stat().st_size for p in root.iterdir()) > PARALLEL_MIN_BYTES
    return root


def _stat(pid: int):
    """(state, process group) of *pid*, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    return fields[0], int(fields[2])


def group_alive(pgid: int) -> List[int]:
    """The processes of process group *pgid* that are still running (zombies are not)."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
                out.append(int(name))
    return out


def children(pid: int) -> List[int]:
    out: List[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    out.extend(int(c) for c in fh.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def terminal_signals():
    """In a child: the signal dispositions a command started from a terminal has. A runner that started this suite
    with SIGHUP or SIGINT ignored (nohup, a background job) would hand that on, and a run rightly keeps a signal that
    was ignored when it started."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


class Run:
    """A command line in its own session; its stdout is read to EOF in a thread (as `| cat` would)."""

    def __init__(self, args: List[str], cwd: Path, env: Dict[str, str] = None, preexec=None):
        def child_setup():
            terminal_signals()
            if preexec is not None:
                preexec()

        self.proc = subprocess.Popen([sys.executable, "-m", "analyse"] + [str(a) for a in args], cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                     env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
                                     preexec_fn=child_setup)
        self.pgid = self.proc.pid
        self.stdout_eof = threading.Event()
        self.stderr = b""
        threading.Thread(target=self._drain, daemon=True).start()
        threading.Thread(target=self._drain_err, daemon=True).start()

    def _drain(self):
        while self.proc.stdout.read(65536):
            pass
        self.stdout_eof.set()

    def _drain_err(self):
        chunks = []
        while True:
            chunk = self.proc.stderr.read1(65536) if hasattr(self.proc.stderr, "read1") else self.proc.stderr.read()
            if not chunk:
                break
            chunks.append(chunk)
            self.stderr = b"".join(chunks)

    def wait_for_workers(self, n: int = 1, timeout: float = 120.0) -> List[int]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            kids = children(self.proc.pid)
            if len(kids) >= n:
                return kids
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended before its workers started: {self.stderr.decode(errors='replace')}")
            time.sleep(0.02)
        pytest.fail("no worker process started")

    def kill_all(self):
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except OSError:
            pass
        for pid in group_alive(self.pgid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass


def _need_two_cpus():
    if available_cpus() < 2:
        pytest.skip("needs 2 CPUs: with one the pipeline never starts worker processes")


@pytest.mark.parametrize("how, expected", [
    ("group-SIGINT", 130),   # Ctrl-C in a terminal: the whole foreground group gets SIGINT
    ("SIGINT", 130),
    ("SIGTERM", 143),
    ("SIGHUP", 129),
    ("SIGKILL", -9),
])
def test_no_process_of_the_run_outlives_it(tmp_path, how, expected):
    _need_two_cpus()
    tree = big_tree(tmp_path / "proj")
    out = tmp_path / "out"
    run = Run(["script", tree, "-q", "--no-cache", "-j", "2", "-o", out], cwd=tmp_path)
    try:
        workers = run.wait_for_workers(2)
        time.sleep(0.3)   # the workers are busy with files now
        sig = getattr(signal, how.split("-")[-1])
        if how.startswith("group"):
            os.killpg(run.pgid, sig)
        else:
            os.kill(run.proc.pid, sig)
        rc = run.proc.wait(timeout=60)
        assert rc == expected, run.stderr
        time.sleep(2.0)
        assert group_alive(run.pgid) == [], f"left running: {group_alive(run.pgid)} (workers were {workers})"
        assert run.stdout_eof.wait(5.0), "a process of the run still holds the stdout pipe: `| cat` would hang"
        if expected > 0:
            err = run.stderr.decode("utf-8", "replace").strip().splitlines()
            assert err == ["npu-analyse: interrupted"] if expected == 130 else \
                err == [f"npu-analyse: terminated by {how}"], err
        assert not out.exists() or [p.name for p in out.iterdir()] == []   # no report, no temporary file
    finally:
        run.kill_all()


def test_piped_output_ends_after_timeout_sends_sigint(tmp_path):
    """The issue's reproduction (`timeout -s INT 6 npu-analyse script <big tree> -q | cat`) must return."""
    _need_two_cpus()
    # the run must outlast the timeout on an idle machine too (400 files took under 6 s there): a larger tree and
    # a 2-second timeout, so that `timeout` is what ends it
    tree = big_tree(tmp_path / "proj", files=1200)
    shell = (f"timeout -s INT 2 {sys.executable} -m analyse script {tree} -q --no-cache -j 2 -o {tmp_path / 'o'}"
             " | cat; echo rc=${PIPESTATUS[0]}")
    proc = subprocess.Popen(["bash", "-c", shell], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
                            preexec_fn=terminal_signals)
    try:
        stdout, _stderr = proc.communicate(timeout=90)
        assert stdout.strip() in ("rc=124", "rc=130"), stdout   # 124: timeout's own code for a run it ended
        time.sleep(2.0)
        assert group_alive(proc.pid) == []
    finally:
        for pid in group_alive(proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        proc.kill()
        proc.wait()


def test_sighup_while_writing_leaves_no_temporary_report(tmp_path):
    """SIGHUP (the terminal closed) while the report files are written: exit 129, the old report stays,
    no temporary file is left in -o."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nmodel = model.cuda()\ntorch.cuda.synchronize()\n")
    out = tmp_path / "o"
    out.mkdir()
    (out / "report.json").write_text('{"previous": true}')
    argv = ["script", str(proj), "-o", str(out), "--format", "json,html,sarif,csv", "--no-cache"]
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        import analyse.render as render
        def hung_up(report, options):  # the CSV is rendered after json, html and sarif were written
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(5)
            raise SystemExit("SIGHUP was not delivered")
        render._RENDERERS["csv"] = hung_up
        from analyse.cli import console_main
        sys.argv = ["npu-analyse"] + {argv!r}
        console_main()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 129, proc.stderr
    assert proc.stderr.strip() == "npu-analyse: terminated by SIGHUP"
    assert sorted(p.name for p in out.iterdir()) == ["report.json"]  # no temporary files, no new reports
    assert (out / "report.json").read_text() == '{"previous": true}'


def _link_targets(pid: int, kinds: tuple = ()) -> set:
    """What the open descriptors of *pid* point at (only those starting with one of *kinds*, when given);
    FileNotFoundError when the process is gone."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if not kinds or target.startswith(kinds):
            out.add(target)
    return out


def test_worker_pipes_and_parent_death_signal(tmp_path):
    """A worker holds no pipe end but its own child end (so it sees EOF when the main process goes) and is
    set to die with its parent (Linux: PR_SET_PDEATHSIG).

    A worker closes the ends it inherited as it starts up, so the test waits for that state (polling the
    descriptors, up to a deadline) instead of sleeping a fixed time: on a loaded machine start-up can take longer
    than any sleep, and on a fast one a small run can be over before the sleep ends. The tree is large enough that
    the workers are still running when they are inspected."""
    _need_two_cpus()
    tree = big_tree(tmp_path / "proj", files=1600)
    run = Run(["script", tree, "-q", "--no-cache", "-j", "2", "-o", tmp_path / "o"], cwd=tmp_path)
    try:
        workers = run.wait_for_workers(2)
        deadline = time.monotonic() + 60.0
        for pid in workers:
            while True:
                try:
                    main_ends = _link_targets(run.proc.pid, ("socket:",))
                    held = _link_targets(pid)
                    with open(f"/proc/{pid}/status") as fh:
                        status = dict(line.split(":\t", 1) for line in fh.read().splitlines() if ":\t" in line)
                except FileNotFoundError:
                    pytest.fail(f"worker {pid} ended before it could be inspected (the tree is too small for this machine)")
                # the main process's ends of the worker connections (sockets) are never held by a worker
                shared = held & main_ends
                if not shared:
                    break
                if time.monotonic() > deadline:
                    pytest.fail(f"worker {pid} still holds the main process's connection ends {shared}")
                time.sleep(0.02)
            assert status.get("PPid", "").strip() == str(run.proc.pid)
    finally:
        run.kill_all()
    rc = run.proc.returncode
    assert rc == -9


# ------------------------------------------------------------------ --jobs


def test_jobs_is_capped_by_cpus_and_files(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from analyse import pipeline
    from analyse.cli import cli

    tree = big_tree(tmp_path / "proj", files=150)
    started: List[int] = []
    real = pipeline._Pool.__init__

    def counting(self, jobs, *a, **k):
        started.append(jobs)
        return real(self, jobs, *a, **k)

    monkeypatch.setattr(pipeline._Pool, "__init__", counting)
    r = CliRunner().invoke(cli, ["script", str(tree), "-j", "10000", "--no-cache", "-o", str(tmp_path / "o"),
                                 "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    cpus = available_cpus()
    assert all(n <= cpus for n in started), started
    lines = [ln for ln in r.stderr.splitlines() if "--jobs" in ln]
    assert lines == [f"npu-analyse: --jobs 10000 capped to {cpus} (the CPUs this process may use)"], r.stderr
    # -q keeps it quiet; a request within the limit says nothing
    r = CliRunner().invoke(cli, ["script", str(tree), "-j", "10000", "--no-cache", "-o", str(tmp_path / "o"),
                                 "--format", "json", "-q"], catch_exceptions=False)
    assert r.exit_code == 0 and r.stderr == ""
    r = CliRunner().invoke(cli, ["script", str(tree), "-j", str(cpus), "--no-cache", "-o", str(tmp_path / "o"),
                                 "--format", "json"], catch_exceptions=False)
    assert "--jobs" not in r.stderr


def test_jobs_from_the_environment_is_capped_too(monkeypatch):
    from analyse import pipeline

    monkeypatch.setenv("NPU_ANALYSE_JOBS", "10000")
    assert pipeline.default_jobs() == available_cpus()


# ------------------------------------------------------------------ memory


_MEMORY = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from analyse.passes import cuda_api
    real = cuda_api.{cls}.check_module
    def starving(self, ctx):
        if ctx.source.relpath == {victim!r}:
            raise MemoryError()
        return real(self, ctx)
    cuda_api.{cls}.check_module = starving
    from analyse.cli import console_main
    sys.argv = ["npu-analyse"] + {argv!r}
    console_main()
""")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_memory_error_in_a_worker_ends_the_run_with_exit_3(tmp_path, jobs):
    """Out of memory while analysing a file is not an internal error of one file: the run stops, exit 3,
    one line; no worker keeps running."""
    from analyse.passes import cuda_api

    cls = next(n for n, v in vars(cuda_api).items()
               if isinstance(v, type) and v.__module__ == cuda_api.__name__ and "check_module" in vars(v))
    tree = big_tree(tmp_path / "proj", files=150)
    argv = ["script", str(tree), "--no-cache", "-j", jobs, "-o", str(tmp_path / "o")]
    code = _MEMORY.format(root=str(ROOT), cls=cls, victim="mod_0042.py", argv=argv)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, start_new_session=True)
    try:
        _out, err = proc.communicate(timeout=300)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    assert proc.returncode == 3, err
    assert err.strip().splitlines() == ["npu-analyse: error: out of memory while analysing mod_0042.py "
                                        "(try fewer --jobs, or a machine with more memory)"], err
    assert not (tmp_path / "o").exists()
    time.sleep(1.0)
    assert group_alive(proc.pid) == []


@pytest.mark.parametrize("kib", [400_000, 120_000])
def test_memory_limit_run_fails_instead_of_spinning(tmp_path, kib):
    """The issue's reproduction (`ulimit -v 400000`), and a tighter limit where the main process runs out
    while writing the report (before: a traceback and exit 1): the run ends, with exit 3 and one line, or
    succeeds."""
    import resource

    _need_two_cpus()
    tree = big_tree(tmp_path / "proj", files=400)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, kib * 1024))

    run = Run(["script", tree, "-q", "--no-cache", "-j", "2", "-o", tmp_path / "o"], cwd=tmp_path, preexec=limit)
    try:
        rc = run.proc.wait(timeout=240)
        err = run.stderr.decode("utf-8", "replace").strip().splitlines()
        assert rc in (0, 3), err
        if rc == 3:
            assert len(err) == 1 and err[0].startswith("npu-analyse: error: out of memory"), err
        time.sleep(1.0)
        assert group_alive(run.pgid) == []
    finally:
        run.kill_all()


# ------------------------------------------------------------------ probe


@pytest.mark.parametrize("how", ["group-SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])
def test_probe_leaves_no_worker_folder(tmp_path, how):
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed (the probe needs it)")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    ops = tmp_path / "ops.txt"
    ops.write_text("torch.add\ntorch.mul\ntorch.matmul\ntorch.sort\ntorch.nn.functional.softmax\n"
                   "torch.nn.functional.conv2d\ntorch.cumsum\ntorch.topk\n")
    run = Run(["probe", "--ops", ops, "--device", "cpu", "-q", "-o", tmp_path / "p"], cwd=tmp_path,
              env={"TMPDIR": str(tmp)})
    try:
        deadline = time.monotonic() + 120
        while not [p for p in tmp.iterdir() if p.name.startswith("npu-analyse-worker-")]:
            assert time.monotonic() < deadline and run.proc.poll() is None, run.stderr
            time.sleep(0.05)
        time.sleep(1.5)   # the worker is importing torch or probing
        sig = getattr(signal, how.split("-")[-1])
        if how.startswith("group"):
            os.killpg(run.pgid, sig)
        else:
            os.kill(run.proc.pid, sig)
        run.proc.wait(timeout=60)
        deadline = time.monotonic() + 10
        while group_alive(run.pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_alive(run.pgid) == []
        assert [p.name for p in tmp.iterdir() if p.name.startswith("npu-analyse")] == []
    finally:
        run.kill_all()
