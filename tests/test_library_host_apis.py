"""Host-side torch APIs are device-neutral knowledge (data/curation.yaml), and torch's private CUDA bindings are
CUDA-only knowledge (data/cuda_only.yaml, built by tools/build_knowledge.py):

* INVALID (no longer ``unknown``): a launcher that asks ``torch.multiprocessing`` for its start method (Python's
  multiprocessing re-exported), the pickle-to-tensor step of an object collective (``torch.ByteStorage.from_buffer``,
  inherited from the documented ``TypedStorage.from_buffer``), seeding from ``torch.default_generator`` (the CPU
  ``torch.Generator``);
* INVALID (no longer silently supported): ``torch._C._cuda_getCurrentRawStream`` exists only in CUDA builds of torch
  and transfer_to_npu does not patch ``torch._C``: unsupported, with the public stream API as the fix;
* VALID: a host API nobody curated (``torch.multiprocessing.reductions.rebuild_tensor``) stays ``unknown``.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": """
        import pickle

        import torch
        import torch.multiprocessing as mp


        def init_launcher(method="spawn"):
            if mp.get_start_method(allow_none=True) is None:
                mp.set_start_method(method)
            return mp.get_context(method)


        def object_to_tensor(obj):
            storage = torch.ByteStorage.from_buffer(pickle.dumps(obj))
            return torch.ByteTensor(storage)


        def reseed(seed=None):
            if seed is None:
                seed = torch.default_generator.seed() % 4294967295
            torch.manual_seed(seed)
            return torch.default_generator.initial_seed()


        def raw_stream(tensor):
            return torch._C._cuda_getCurrentRawStream(tensor.device.index)


        def rebuild(fn, args):
            return torch.multiprocessing.reductions.rebuild_tensor(fn, *args)
    """,
}


def test_host_apis_are_supported_and_private_cuda_bindings_are_not(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "hostlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    for q in ("hostlib.init_launcher", "hostlib.object_to_tensor", "hostlib.reseed"):
        assert q not in by, (q, by.get(q))     # supported: no entry
    assert by["hostlib.raw_stream"]["status"] == "unsupported"
    assert by["hostlib.raw_stream"]["reasons"] == ["torch._C._cuda_getCurrentRawStream"]
    f = next(f for f in rep["findings"] if f["api"] == "torch._C._cuda_getCurrentRawStream")
    assert (f["code"], f["severity"], f["line"]) == ("NPU006", "blocker", 26)
    assert "torch.npu.current_stream" in f["replacement"]
    assert by["hostlib.rebuild"]["status"] == "unknown"


def test_curation_rows_carry_their_evidence(kb):
    from analyse.knowledge.curation import load_curation

    ids = {o["id"]: o for o in load_curation()["overrides"]}
    for oid in ("multiprocessing-host-reexports", "legacy-typed-storage-from-buffer", "default-generator-methods"):
        o = ids[oid]
        assert o["official"] == "absent" and o["status"] == "supported" and o["evidence"]
    assert "torch.multiprocessing.get_start_method" in ids["multiprocessing-host-reexports"]["apis"]


CUCIM = {
    "__init__.py": """
        import numpy as np
        from cucim.skimage.morphology import binary_erosion
        from cucim import CuImage


        def edges(mask):
            return mask ^ binary_erosion(mask)


        def read_region(path, loc, size):
            return np.asarray(CuImage(path).read_region(loc, size))
    """,
}


def test_cucim_image_ops_are_gpu_only_but_its_slide_reader_is_not(tmp_path, kb):
    rep = library_report(tmp_path, kb, CUCIM, "cclib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["cclib.edges"]["status"] == "unsupported"
    assert "cclib.read_region" not in by     # CuImage reads slides on the host
    assert any(f["api"].startswith("cucim.skimage") and f["code"] in ("NPU401", "NPU402") for f in rep["findings"])
