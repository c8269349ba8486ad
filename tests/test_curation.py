"""The curation layer over the official tables (data/curation.yaml, #31 point 1).

Every self-contradiction of the official tables (class Yes / method No, siblings, later releases) is either
overridden with evidence or listed as reviewed; a new one nobody reviewed fails here. Curated rows are
reported as "documented No, contradicted by ...; probe to confirm" (NPU205, info) and never advise running
an optimizer step, a decorator or autocast on the CPU.
"""

from __future__ import annotations

import json

import pytest

from analyse.knowledge import TORCH_VERSIONS, data_dir, load_knowledge
from analyse.knowledge import curation as cur
from tests.helpers import analyse_source


def _tables():
    out = {}
    for v in TORCH_VERSIONS:
        doc = json.loads((data_dir() / "op_support" / f"torch_{v}.json").read_text(encoding="utf-8"))
        out[v] = cur.official_view(doc["apis"])
    return out


def test_every_self_contradiction_is_reviewed():
    found = cur.contradictions(_tables(), list(TORCH_VERSIONS))
    assert len(found) > 100   # the tables do contradict themselves; the check sees it
    curation = cur.load_curation()
    missing = [c for c in found if cur.covering_entry(curation, c) is None]
    assert missing == [], "self-contradictions nobody reviewed (add them to data/curation.yaml): " + repr(missing[:10])


def test_an_unreviewed_contradiction_is_listed():
    tables = {"2.7.1": {"torch.optim.Newopt": "supported", "torch.optim.Newopt.step": "unsupported",
                        "torch.x.AParallel": "supported", "torch.x.BParallel": "unsupported", "torch.y": "unsupported"},
              "2.8.0": {"torch.y": "limited"}}
    found = set(cur.contradictions(tables, ["2.7.1", "2.8.0"]))
    assert ("class", "2.7.1", "torch.optim.Newopt.step", "torch.optim.Newopt") in found
    assert ("sibling", "2.7.1", "torch.x.BParallel", "torch.x.AParallel") in found
    assert ("later-release", "2.7.1", "torch.y", "torch.y at torch 2.8.0") in found
    curation = cur.load_curation()
    # optimizer steps are overridden by pattern; the made-up sibling and the later-release row are nobody's
    assert cur.covering_entry(curation, cur.Contradiction("class", "2.7.1", "torch.optim.Newopt.step", ""))["id"] == "optimizer-step"
    assert cur.covering_entry(curation, cur.Contradiction("sibling", "2.7.1", "torch.x.BParallel", "")) is None
    assert cur.covering_entry(curation, cur.Contradiction("later-release", "2.7.1", "torch.y", "")) is None


@pytest.mark.parametrize("bad, what", [
    ({"overrides": [{"id": "x", "apis": ["torch.a"], "official": "unsupported", "status": "supported",
                     "contradicted_by": "y", "evidence": [], "advice": "probe"}]}, "evidence"),
    ({"overrides": [{"id": "x", "apis": ["torch.a"], "official": "Yes", "status": "supported",
                     "contradicted_by": "y", "evidence": [{"kind": "class-row", "source": "s", "fact": "f"}],
                     "advice": "probe"}]}, "official"),
    ({"overrides": [{"id": "x", "apis": ["torch.a"], "official": "unsupported", "status": "supported",
                     "contradicted_by": "y", "evidence": [{"kind": "hunch", "source": "s", "fact": "f"}],
                     "advice": "probe"}]}, "evidence kind"),
])
def test_curation_file_is_validated(bad, what):
    doc = {"meta": {"source": "s", "date": "d"}, "reviewed": [], **bad}
    with pytest.raises(cur.CurationError, match=what):
        cur.validate_curation(doc)


def test_curated_rows_per_release():
    kb6, kb8 = load_knowledge("2.6.0"), load_knowledge("2.8.0")
    step = kb8.api("torch.optim.Adam.step")
    assert step.status == "supported" and step.curation["official"] == "unsupported"
    assert step.contradicted().startswith("documented No, contradicted by the class row torch.optim.Adam (Yes)")
    assert step.contradicted().endswith("probe to confirm")
    assert kb8.api("torch.optim.LBFGS.step").status == "supported"
    assert kb8.api("torch.compiler.disable").status == "supported"
    # clip_grad_norm_: No only in the 2.6.0 table, Yes later: curated for 2.6.0 only
    assert kb6.api("torch.nn.utils.clip_grad_norm_").curation["id"] == "clip-grad-norm-2-6"
    assert kb8.api("torch.nn.utils.clip_grad_norm_").curation is None
    # RowwiseParallel: its sibling ColwiseParallel is Yes from 2.7.1 on; for 2.6.0 both are No and stay so
    assert kb8.api("torch.distributed.tensor.parallel.RowwiseParallel").status == "supported"
    assert kb6.api("torch.distributed.tensor.parallel.RowwiseParallel").status == "unsupported"
    # op-plugin registers _scaled_mm from the 2.7 line: absent (unverified) for 2.6.0, limited after
    assert kb6.api("torch._scaled_mm") is None
    assert kb8.api("torch._scaled_mm").status == "limited"
    assert kb8.api("torch.amp.autocast").curation["official"] == "absent"
    # an uncurated No row stays No
    assert kb8.api("torch.std_mean").status == "unsupported" and kb8.api("torch.std_mean").curation is None


CURATED_SCRIPT = """\
import torch

model = torch.nn.Linear(4, 4)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


@torch.compiler.disable
def log_stats(x):
    return x.mean()


def train(x):
    with torch.amp.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = model(x).sum()
    loss.backward()
    opt.step()
    log_stats(loss)


train(torch.randn(2, 4))
"""


def test_curated_rows_are_notes_not_rewrites(tmp_path, kb):
    result = analyse_source(tmp_path, CURATED_SCRIPT, kb, name="train.py")
    findings = result.findings
    assert not [f for f in findings if f.code == "NPU201"], [(f.api, f.line) for f in findings if f.code == "NPU201"]
    notes = {(f.api, f.line): f for f in findings if f.code == "NPU205"}
    assert ("torch.optim.Adam.step", 16) in notes
    assert ("torch.compiler.disable", 7) in notes
    assert ("torch.amp.autocast", 13) in notes
    for f in notes.values():
        assert f.severity == "info"
        assert "contradicted by" in f.message and "probe to confirm" in f.message
    for f in findings:
        assert "on the CPU" not in (f.replacement or ""), (f.code, f.api, f.replacement)


@pytest.mark.parametrize("api", ["torch.optim.Rprop.step", "torch.optim.SparseAdam.step", "torch.amp.autocast",
                                 "torch.autocast", "torch.compiler.disable", "torch.nn.utils.clip_grad_norm_",
                                 "torch.optim.lr_scheduler.OneCycleLR.step"])
def test_no_cpu_advice_for_steps_decorators_and_autocast(api, kb):
    from analyse.passes.unsupported_api import UnsupportedApiPass

    assert "CPU" not in UnsupportedApiPass.replacement(None, api)


def test_explain_says_documented_no_contradicted():
    from analyse.explain import explain_name

    text, status = explain_name("torch.optim.Adam.step", "2.8.0")
    assert status == 0
    assert "documented No, contradicted by the class row torch.optim.Adam (Yes)" in text
    assert "probe to confirm" in text and "op-plugin:" in text
    text, _ = explain_name("torch._scaled_mm", "2.8.0")
    assert "not in the support list (unverified), contradicted by Ascend/op-plugin's NPU kernel" in text


PROFILED = """\
import torch
from torch.autograd.profiler import kineto_available

model = torch.nn.Linear(4, 4)


def step(x):
    with torch.profiler.record_function("forward"):
        y = model(x)
    if kineto_available():
        print("kineto")
    torch.utils.swap_tensors(model.weight, torch.nn.Parameter(torch.zeros(4, 4)))
    return y


step(torch.randn(2, 4))
"""


def test_python_only_profiler_and_swap_helpers_are_not_unknown(tmp_path, kb):
    findings = analyse_source(tmp_path, PROFILED, kb, name="prof.py").findings
    unverified = {f.api for f in findings if f.code == "NPU301"}
    assert not unverified & {"torch.profiler.record_function", "torch.autograd.profiler.kineto_available",
                             "torch.utils.swap_tensors"}, unverified
    notes = {f.api for f in findings if f.code == "NPU205"}
    assert {"torch.profiler.record_function", "torch.utils.swap_tensors"} <= notes


DEFAULT_DEVICE = """\
import torch


def canonical(device=None):
    if device is None:
        device = torch.get_default_device()
    return device
"""


def test_get_default_device_reads_a_setting_and_is_not_unknown(tmp_path, kb):
    # torch.get_default_device is absent from the support lists; set_default_device (Yes) is the setting it reads
    findings = analyse_source(tmp_path, DEFAULT_DEVICE, kb, name="dev.py").findings
    assert [(f.line, f.code, f.severity) for f in findings if f.api == "torch.get_default_device"] == \
        [(6, "NPU205", "info")]
    assert load_knowledge("2.1.0").api("torch.get_default_device") is None   # torch 2.1 has no such API


GATHER = """\
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def gather(world_size, value, device):
    t = torch.tensor(value, dtype=torch.int, device=device)
    out = torch.empty(world_size, dtype=torch.int, device=device)
    dist.all_gather_into_tensor(out, t)
    return out.clamp_min(0)


def main(fn, n):
    mp.spawn(fn, nprocs=n)
    dist.destroy_process_group()
"""


def test_one_sided_clamps_spawn_and_the_2_13_collectives_gap_are_curated_not_unknown(tmp_path):
    # clamp_min/clamp_max: op-plugin kernels and clamp's row; spawn: pure Python; destroy_process_group: the teardown
    # of init_process_group (Yes); all_gather_into_tensor: listed by
    # every release up to 2.12.0, left out of the 2.13.0 table (an earlier-release override for 2.13.0 only)
    kb = load_knowledge("2.13.0")
    findings = analyse_source(tmp_path, GATHER, kb, name="gather.py").findings
    unverified = {f.api for f in findings if f.code == "NPU301"}
    assert not unverified & {"torch.Tensor.clamp_min", "torch.multiprocessing.spawn",
                             "torch.distributed.all_gather_into_tensor", "torch.distributed.destroy_process_group"}, \
        unverified
    notes = {(f.line, f.api) for f in findings if f.code == "NPU205"}
    assert {(9, "torch.distributed.all_gather_into_tensor"), (10, "torch.Tensor.clamp_min"),
            (14, "torch.multiprocessing.spawn"), (15, "torch.distributed.destroy_process_group")} <= notes, notes
    assert kb.api("torch.distributed.all_gather_into_tensor").curation["id"] == "distributed-collectives-2-13-gap"
    assert load_knowledge("2.12.0").api("torch.distributed.all_gather_into_tensor").curation is None


ROUND37 = """\
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner, DefaultSavePlanner


def sort_index(n):
    return torch.IntTensor(list(range(n))), torch.LongTensor([0, 1])


def spectrum(w):
    u, s, v = torch.svd_lowrank(w, q=4)
    return torch.linalg.svdvals(w), torch.det(w @ w.T)


def cast(x):
    if torch.is_autocast_enabled():
        return x.to(torch.get_autocast_gpu_dtype() if x.is_cuda else torch.get_autocast_cpu_dtype())
    return x


def save(state, path):
    dcp.save(state, checkpoint_id=path, planner=DefaultSavePlanner())
    dcp.load(state, checkpoint_id=path, planner=DefaultLoadPlanner())


def attention_flags(allow_flash):
    torch.backends.cuda.enable_flash_sdp(allow_flash)
    with torch.backends.cuda.sdp_kernel(enable_math=False):
        pass
"""


def test_typed_constructors_lowrank_det_autocast_state_dcp_and_sdp_flags_are_curated_not_unknown(tmp_path):
    kb = load_knowledge("2.13.0")
    findings = analyse_source(tmp_path, ROUND37, kb, name="round37.py").findings
    curated = {"torch.IntTensor", "torch.LongTensor", "torch.svd_lowrank", "torch.linalg.svdvals", "torch.det",
               "torch.is_autocast_enabled", "torch.get_autocast_gpu_dtype", "torch.get_autocast_cpu_dtype",
               "torch.distributed.checkpoint.save", "torch.distributed.checkpoint.load",
               "torch.distributed.checkpoint.default_planner.DefaultSavePlanner",
               "torch.distributed.checkpoint.default_planner.DefaultLoadPlanner"}
    unverified = {f.api for f in findings if f.code == "NPU301"}
    assert not unverified & curated, unverified & curated
    notes = {(f.line, f.api) for f in findings if f.code == "NPU205"}
    assert {(7, "torch.IntTensor"), (11, "torch.svd_lowrank"), (12, "torch.linalg.svdvals"), (12, "torch.det"),
            (16, "torch.is_autocast_enabled"), (23, "torch.distributed.checkpoint.load")} <= notes, notes
    assert kb.api("torch.det").status == "limited" and "fall back to CPU" in kb.api("torch.det").limitations
    assert kb.api("torch.svd_lowrank").curation["id"] == "svd-lowrank"
    # the package spelling and the submodule spelling of a re-exported checkpoint name answer for each other
    assert kb.api("torch.distributed.checkpoint.save").status == "supported"      # listed as state_dict_saver.save
    assert kb.api("torch.distributed.checkpoint.default_planner.DefaultSavePlanner").status == "supported"
    # a global SDPA flag is a note (harmless, no effect on the NPU); the back-end selection context stays manual
    sdp = {(f.line, f.api): f.severity for f in findings if f.api.startswith("torch.backends.cuda.")}
    assert sdp == {(27, "torch.backends.cuda.enable_flash_sdp"): "info",
                   (28, "torch.backends.cuda.sdp_kernel"): "manual"}, sdp
