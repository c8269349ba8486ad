"""Library mode, round 42: an optional CUDA-only bootstrap wrapped in ``try: ... except: pass`` inside a branch.

``if is_distributed and backend == "nccl": try: <CUDA-only setup> / except: pass`` and then ``return result``:
whatever fails in the block, the function goes on as if it had not run, so the block is tried with a working
fallback and the function (and its callers) do not depend on it (old: only a ``try`` directly in the function body
counted; nested in an ``if`` it left the function unsupported through the branch's CUDA call). INVALID: a handler
that raises keeps the CUDA-only code on the path.
"""

from __future__ import annotations

from helpers import library_report

DIST = {
    "__init__.py": "",
    "groups.py": """
        import torch
        import torch.distributed as dist


        class Props:
            pass


        def create_groups(backend="nccl"):
            result = Props()
            result.world = dist.get_world_size() if dist.is_initialized() else 1
            if result.world > 1 and backend == "nccl":
                try:
                    result.arch = torch.cuda.get_device_capability()
                except:
                    pass
            result.ready = True
            return result


        def create_groups_strict(backend="nccl"):
            result = Props()
            result.world = dist.get_world_size() if dist.is_initialized() else 1
            if result.world > 1 and backend == "nccl":
                try:
                    result.arch = torch.cuda.get_device_capability()
                except Exception as e:
                    raise RuntimeError("no shared communicator") from e
            return result


        def init_parallel():
            return create_groups("nccl")
    """,
}


def _functions(tmp_path, kb):
    rep = library_report(tmp_path, kb, DIST, "distlib")
    return {f["qualname"]: f for f in rep["thirdparty"]["functions"]}


def test_a_swallowed_cuda_only_bootstrap_in_a_branch_is_no_blocker(tmp_path, kb):
    # VALID
    fns = _functions(tmp_path, kb)
    for q in ("distlib.groups.create_groups", "distlib.groups.init_parallel"):
        assert fns.get(q, {}).get("status") in (None, "needs-migration"), fns[q]


def test_a_bootstrap_whose_handler_raises_stays_on_the_path(tmp_path, kb):
    # INVALID: the handler raises, so the branch's CUDA-only call decides the function under the branch's test
    fns = _functions(tmp_path, kb)
    strict = fns["distlib.groups.create_groups_strict"]
    assert strict["status"] in ("conditional", "unsupported"), strict
    assert "torch.cuda.get_device_capability" in strict["reasons"], strict
