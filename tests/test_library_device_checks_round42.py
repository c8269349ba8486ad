"""Library mode, round 42: device-type comparisons whose NPU value only picks a path that completes.

VALID: a flag bound from ``x.device.type == "cuda"`` (alone, or in ``or`` with an option, bound at several places)
whose every read is an argument of a call (``.to(device, non_blocking=flag)``): the calls get the NPU value and
complete. ``if device is not None and device.type != "cuda":`` whose other operand decides the branch, as for a CPU
device, when every branch of the ``if`` completes. The functions are supported (the comparison is advice).

INVALID: the flag also returned (the caller decides what it does with it), and an ``if`` of the same shape whose
branch raises: the comparison stays a change to make and the function conditional. No project code copied.
"""

from __future__ import annotations

from helpers import library_report

DEVLIB = {
    "__init__.py": """
        import torch


        def squash(loc, scale, low):
            _nb = loc.device.type == "cuda"
            if scale.device != loc.device:
                scale = scale.to(loc.device, non_blocking=_nb)
            low = low.to(loc.device, non_blocking=_nb)
            return torch.tanh(loc) * scale + low


        def move_both(carrier, policy_device, env_device, no_sync=False):
            if policy_device is not None:
                non_blocking = not no_sync or policy_device.type == "cuda"
                carrier = carrier.to(policy_device, non_blocking=non_blocking)
            if env_device is not None:
                non_blocking = (
                    not no_sync or env_device.type == "cuda"
                )
                carrier = carrier.to(env_device, non_blocking=non_blocking)
            return carrier


        def _noop():
            return None


        def pick_sync(device=None):
            if device is not None and device.type != "cuda":
                if device.type == "cpu":
                    return _noop
                return torch.accelerator.synchronize
            else:
                return _noop


        def flag_of(loc):
            on_gpu = loc.device.type == "cuda"
            loc = loc.to("cpu", non_blocking=on_gpu)
            return on_gpu


        def strict_sync(device=None):
            if device is not None and device.type != "cuda":
                raise ValueError("only CUDA devices are synchronised here")
            return _noop
    """,
}


def _report(tmp_path, kb):
    rep = library_report(tmp_path, kb, DEVLIB, "devlib")
    return rep, {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def _check(rep, line):
    """The NPU004 findings at *line*, as (severity, message); advice of one kind in a file is one finding whose
    ``occurrences`` hold the other places."""
    out = []
    for f in rep["findings"]:
        if f["code"] != "NPU004":
            continue
        for o in [f] + list(f.get("occurrences") or ()):
            if o["line"] == line and (o is f or o["id"] != f["id"]):
                out.append((f["severity"], o.get("message") or f["message"]))
    return out


def test_a_flag_only_handed_to_calls_is_advice(tmp_path, kb):
    rep, by = _report(tmp_path, kb)
    for q in ("squash", "move_both"):
        assert f"devlib.{q}" not in by, by.get(f"devlib.{q}")
    for line in (5, 14, 18):
        fs = _check(rep, line)
        assert [sev for sev, _m in fs] == ["advice"], (line, fs)
        assert "only handed to calls" in fs[0][1]


def test_a_test_whose_other_operand_decides_and_whose_branches_complete_is_advice(tmp_path, kb):
    rep, by = _report(tmp_path, kb)
    assert "devlib.pick_sync" not in by, by.get("devlib.pick_sync")
    fs = _check(rep, 29)
    assert [sev for sev, _m in fs] == ["advice"], fs
    assert "as for a non-CUDA device" in fs[0][1]


def test_a_returned_flag_and_a_branch_that_raises_stay_a_change(tmp_path, kb):
    rep, by = _report(tmp_path, kb)
    for q, line in (("flag_of", 38), ("strict_sync", 44)):
        assert [sev for sev, _m in _check(rep, line)] == ["manual"], (q, _check(rep, line))
        assert by[f"devlib.{q}"]["status"] == "conditional", by[f"devlib.{q}"]
