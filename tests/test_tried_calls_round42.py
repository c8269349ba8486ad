"""Round 42: a CUDA query tried for a value (``try: major, _ = torch.cuda.get_device_capability(i) / except
Exception: return False``) whose handler answers with a value of its own is guarded with a fallback: the function
completes whatever the call does, also when the body unpacks the value and the handler returns instead of binding
the same names, and behind an earlier early-return test (``if torch.version.hip: return False``), which is no
fallback of its own for the call (VALID: supported). A handler that logs and re-raises is no answer, and a
``try`` around a block of work (three statements) is no tried call (INVALID: the function stays unsupported or
conditional). No project code copied."""

from __future__ import annotations

from helpers import library_report

CAPLIB = {
    "__init__.py": """
        import logging

        import torch


        def fast_matmul_ok(index):
            if not torch.cuda.is_available():
                return False
            if getattr(torch.version, "hip", None) is not None:
                return False
            try:
                major, _minor = torch.cuda.get_device_capability(index)
            except Exception:
                return False
            return major >= 8


        def precision(index=0):
            return "tf32" if fast_matmul_ok(index) else "ieee"


        def strict_capability(index):
            if getattr(torch.version, "hip", None) is not None:
                return None
            try:
                major, _minor = torch.cuda.get_device_capability(index)
            except Exception:
                logging.error("no capability")
                raise
            return major


        def loose_capability(index):
            if getattr(torch.version, "hip", None) is not None:
                return None
            try:
                major, _minor = torch.cuda.get_device_capability(index)
                torch.cuda.set_device(index)
                torch.cuda.get_device_capability(index)
            except Exception:
                return None
            return major
    """,
}


def test_a_tried_query_whose_handler_returns_is_guarded_with_a_fallback(tmp_path, kb):
    rep = library_report(tmp_path, kb, CAPLIB, "caplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("fast_matmul_ok", "precision"):
        assert f"caplib.{q}" not in by, by.get(f"caplib.{q}")
    f = next(f for f in rep["findings"] if f["api"] == "torch.cuda.get_device_capability" and f["line"] == 12)
    assert f["guard"]["kind"] == "import-fallback" and f["guard"]["tried"] is True, f["guard"]


def test_a_handler_that_reraises_or_a_block_of_work_is_no_tried_call(tmp_path, kb):
    rep = library_report(tmp_path, kb, CAPLIB, "caplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q, line in (("strict_capability", 26), ("loose_capability", 37)):
        d = by[f"caplib.{q}"]
        assert d["status"] in ("unsupported", "conditional"), d
        assert "torch.cuda.get_device_capability" in d["reasons"], d
        f = next(f for f in rep["findings"] if f["api"] == "torch.cuda.get_device_capability" and f["line"] == line)
        assert not (f.get("guard") or {}).get("tried"), f.get("guard")
