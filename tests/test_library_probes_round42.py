"""Library mode, round 42: a CUDA availability probe whose answer is stored in a flag.

VALID: ``self.has_cuda = torch.cuda.is_available()`` set once in a class whose methods test it only with ``if`` s
whose branches complete (a saved RNG state with or without the CUDA one), and a local flag tested the same way:
an NPU host takes one path or the other, and both run, so the probe is a path choice (advice) and the function
that stores it is supported.

INVALID: a flag that an ``if`` tests whose branch raises, and a flag set at two places of its class: the probe
stays a change transfer_to_npu makes (auto; the function needs-migration). No project code copied."""

from __future__ import annotations

from helpers import library_report

PROBELIB = {
    "__init__.py": """
        import torch


        class seeded:
            def __init__(self, seed, device=None):
                self.seed = seed
                self.device = device
                self.has_cuda = torch.cuda.is_available()

            def __enter__(self):
                if self.has_cuda:
                    self._state = (torch.random.get_rng_state(), torch.cuda.get_rng_state())
                else:
                    self._state = torch.random.get_rng_state()
                torch.manual_seed(self.seed)

            def __exit__(self, *exc):
                if self.has_cuda:
                    torch.random.set_rng_state(self._state[0])
                else:
                    torch.random.set_rng_state(self._state)


        def batch_size_for(n):
            big = torch.cuda.is_available()
            if big:
                return n * 4
            return n


        def needs_gpu(x):
            ok = torch.cuda.is_available()
            if not ok:
                raise RuntimeError("a GPU is required")
            return x


        class Toggled:
            def __init__(self):
                self.use_gpu = torch.cuda.is_available()

            def off(self):
                self.use_gpu = False

            def run(self, x):
                if self.use_gpu:
                    return x * 2
                return x
    """,
}


def _report(tmp_path, kb):
    rep = library_report(tmp_path, kb, PROBELIB, "probelib")
    return rep, {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def _probe(rep, line):
    """(severity, message) of the probe findings at *line*; advice of one kind in a file is one finding whose
    ``occurrences`` hold the other places."""
    out = []
    for f in rep["findings"]:
        if f["api"] != "torch.cuda.is_available":
            continue
        for o in [f] + list(f.get("occurrences") or ()):
            if o["line"] == line and (o is f or o["id"] != f["id"]):
                out.append((f["severity"], o.get("message") or f["message"]))
    return out


def test_a_probe_stored_in_a_flag_only_completing_branches_test_is_a_path_choice(tmp_path, kb):
    rep, by = _report(tmp_path, kb)
    for q in ("seeded.__init__", "batch_size_for"):
        assert f"probelib.{q}" not in by, by.get(f"probelib.{q}")
    for line, flag in ((8, "self.has_cuda"), (25, "big")):
        got = _probe(rep, line)
        assert [sev for sev, _m in got] == ["advice"], (line, got)
        assert f"its answer is stored in `{flag}`" in got[0][1]


def test_a_flag_a_raising_branch_tests_or_set_twice_stays_a_change(tmp_path, kb):
    rep, by = _report(tmp_path, kb)
    for q, line in (("needs_gpu", 32), ("Toggled.__init__", 40)):
        assert [sev for sev, _m in _probe(rep, line)] == ["auto"], (q, _probe(rep, line))
        assert by[f"probelib.{q}"]["status"] == "needs-migration", by[f"probelib.{q}"]
