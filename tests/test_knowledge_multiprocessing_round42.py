"""Knowledge rows of round 42 (data/curation.yaml ``multiprocessing-host-reexports``): the shared-memory ctypes
objects and the remaining synchronisation classes torch.multiprocessing re-exports from Python's multiprocessing
(``RawArray``, ``RawValue``, ``BoundedSemaphore``, ``Condition``) are host objects, supported like their curated
siblings (``Array``, ``Value``, ``Semaphore``), with the curation's evidence; a name torch.multiprocessing does not
export stays unverified (INVALID)."""

from __future__ import annotations

from helpers import library_report

from analyse.knowledge import load_knowledge


def test_shared_ctypes_reexports_are_host_objects():
    for version in ("2.6.0", "2.13.0"):
        kb = load_knowledge(version)
        for name in ("torch.multiprocessing.RawArray", "torch.multiprocessing.RawValue",
                     "torch.multiprocessing.BoundedSemaphore", "torch.multiprocessing.Condition"):
            info = kb.api(name)
            assert info is not None and info.status == "supported", (version, name, info)
            assert info.curation and info.curation["id"] == "multiprocessing-host-reexports"
        assert not kb.is_documented("torch.multiprocessing.RawQueue")


def test_a_worker_buffer_in_shared_memory_is_no_unverified_api(tmp_path, kb):
    rep = library_report(tmp_path, kb, {"__init__.py": """
        import ctypes

        import torch.multiprocessing as mp


        def shared_flags(n):
            return mp.RawArray(ctypes.c_bool, n)


        def odd_queue():
            return mp.RawQueue()
    """}, "mplib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert "mplib.shared_flags" not in by, by.get("mplib.shared_flags")
    assert by["mplib.odd_queue"]["status"] == "unknown", by.get("mplib.odd_queue")
