"""A presence test of an optional GPU-only library that stops the code when the library is missing is a use with
no fallback (third-party pass, ``_requires_library``): ``assert apex_amp is not None`` and ``if xops is None: raise``
make the function unsupported (INVALID: it used to be supported, the test read as a mere probe); a test whose
missing branch takes a torch path, or only prints, stays a probe (VALID).
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "wrap.py": """
        import torch

        try:
            import apex.amp as apex_amp
        except ImportError:
            apex_amp = None

        try:
            import xformers.ops as xops
        except ImportError:
            xops = None


        class ApexWrapper:
            def __init__(self, optimizer, opt_level="O1"):
                assert apex_amp is not None, "apex is not installed"
                self.optimizer = optimizer


        def needs_xformers(q, k, v):
            if xops is None or q is None:
                raise ImportError("install xformers")
            return q @ k.transpose(-1, -2) @ v


        def optional_xformers(q, k, v):
            if xops is None:
                return torch.softmax(q @ k.transpose(-1, -2), -1) @ v
            return xops.memory_efficient_attention(q, k, v)


        def warns_only(q):
            if xops is None:
                print("xformers missing")
            return q


        def has_xformers():
            return xops is not None
    """,
}


def test_a_presence_test_that_stops_the_code_is_a_use(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "reqlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["reqlib.wrap.ApexWrapper.__init__"]["status"] == "unsupported"
    assert by["reqlib.wrap.ApexWrapper.__init__"]["reasons"] == ["apex.amp"]
    assert by["reqlib.wrap.needs_xformers"]["status"] == "unsupported"
    for q in ("reqlib.wrap.optional_xformers", "reqlib.wrap.warns_only", "reqlib.wrap.has_xformers"):
        assert q not in by or by[q]["status"] != "unsupported", (q, by.get(q))
    uses = sorted((f["line"], f["code"], f["api"]) for f in rep["findings"]
                  if f["code"] == "NPU402" and "stops the code" in f["message"])
    assert uses == [(16, "NPU402", "apex.amp"), (21, "NPU402", "xformers.ops")]
