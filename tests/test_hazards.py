"""Knowledge gaps engineers hit first (#23 point 9): dtypes, integer devices, torch.load without
map_location, CUDA-only libraries -- each reported with the per-chip fact."""

from __future__ import annotations

from pathlib import Path

from analyse import pipeline
from analyse.knowledge import load_knowledge

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "hazards"


def _by_line():
    kb = load_knowledge("2.13.0")
    res = pipeline.run([FIXTURE], kb)
    out = {}
    for f in res.findings:
        out.setdefault(f.line, []).append(f)
    return out


def _codes(fs):
    return sorted({c for f in fs for c in [f.code] + [a["code"] for a in f.also]})


def test_each_hazard_is_reported_with_its_per_chip_fact():
    by = _by_line()
    lines = (FIXTURE / "train.py").read_text().splitlines()

    def at(text):
        return next(i for i, l in enumerate(lines, 1) if text in l)

    [imp] = [f for f in by[at("import tinycudann")] if f.code == "NPU401"]
    assert imp.severity == "blocker"
    assert "Ascend 950DT" in imp.message and "Atlas A2 training" in imp.message
    assert "torch.nn.Linear" in imp.replacement

    [zeros] = [f for f in by[at("torch.zeros(3, dtype=torch.float64)")] if f.code == "NPU204"]
    assert zeros.api == "torch.zeros"
    assert "`torch.float64` (fp64)" in zeros.message
    assert "Ascend 950DT:" in zeros.message  # the chip whose lines exclude fp64 for more APIs
    assert "torch APIs whose dtypes the support list documents accept fp64" in zeros.message
    assert zeros.replacement == "torch.float32"

    [dbl] = [f for f in by[at("rays.double()")] if f.code == "NPU204"]
    assert dbl.api == "torch.Tensor.double"
    assert "does not list fp64" in dbl.message and "Ascend 950DT" in dbl.message
    assert dbl.replacement == ".float()"

    [to0] = [f for f in by[at("model.to(0)")] if f.code == "NPU008"]
    assert to0.api == "torch.nn.Module.to"
    assert to0.severity == "auto"  # transfer_to_npu turns int devices into 'npu:N' for Module.to
    assert "'npu:0'" in to0.message and to0.replacement == ".to('npu:0')"

    [dev] = [f for f in by[at("torch.device(1)")] if f.code == "NPU008"]
    assert dev.severity == "manual" and dev.replacement == "torch.device('npu', 1)"

    [load] = [f for f in by[at('torch.load("ckpt.pt")')] if f.code == "NPU009"]
    assert load.replacement == "torch.load('ckpt.pt', map_location='cpu')"
    assert "cuda:N" in load.message
    assert "documented for Ascend 950DT, Atlas A2 training, Atlas A3 training" in load.message
    assert "not for Ascend 950DT" in to0.message  # Module.to: the chips the support list names


def test_new_libraries_have_npu_answers():
    kb = load_knowledge("2.13.0")
    from analyse.passes.third_party import lib_table

    table = lib_table(kb)
    for name, lib_id in [("tinycudann", "tiny-cuda-nn"), ("nvdiffrast.torch", "nvdiffrast"),
                         ("MinkowskiEngine", "minkowski-engine"), ("megablocks.layers.moe", "megablocks"),
                         ("torchao.float8.convert_to_float8_training", "torchao-float8"), ("flashinfer", "flashinfer"),
                         ("causal_conv1d", "causal-conv1d"), ("pytorch3d.ops.knn_points", "pytorch3d-cuda")]:
        hit = table.match(name)
        assert hit is not None, name
        entry, _prefix = hit
        assert entry.id == lib_id
        assert entry.replacement and "torch" in entry.replacement
    assert table.match("pytorch3d.transforms") is None  # pure-Python parts run on the NPU
    assert table.match("torchao.float8.Float8LinearConfig")[0].id == "torchao"  # a config class, no fp8 kernel


def test_cpu_fallback_is_ranked_by_call_sites(tmp_path):
    """summary.cpu_fallback: aten ops without an NPU kernel for the target release, most call sites first."""
    from analyse.modes import run_script

    (tmp_path / "t.py").write_text("import torch\nfor x in loader:\n    y = torch.lgamma(x)\n    w = torch.lgamma(y)\n"
                                   "    e = torch.linalg.eigh(w)\n    z = torch.exp(e) + torch.stft(w, 4)\n")
    report = run_script([tmp_path], load_knowledge("2.13.0"))
    ranking = report["summary"]["cpu_fallback"]
    assert [(e["op"], e["call_sites"]) for e in ranking] == [("lgamma", 2), ("linalg_eigh", 1)]
    assert ranking[0]["first"] == {"path": "t.py", "line": 3}
    assert "tocpu" in ranking[0]["evidence"]
    fallbacks = [f for f in report["findings"] if f["code"] == "NPU304" or "NPU304" in f.get("codes", ())]
    # one NPU304 per op at its first call site; the advice of one rule in one file is grouped (#23 point 3)
    assert {ln for f in fallbacks for ln in f.get("lines", [f["line"]])} == {3, 5}
    kb = load_knowledge("2.13.0")
    assert "stft" not in kb.cpu_fallback_ops and "exp" not in kb.cpu_fallback_ops  # composite / has a kernel
    # the HTML shows the ranking under its own words, as a table
    from analyse.passes import all_rules
    from analyse.render import write_reports

    html = write_reports(report, [r.to_dict() for r in all_rules()], tmp_path / "out", ["html"])["html"].read_text()
    block = html[html.index("Falls back to the CPU (aten ops without an NPU kernel"):]
    assert block.index("lgamma") < block.index("linalg_eigh") < block.index("</table>")


def test_dtype_hazard_severity_follows_where_the_dtype_breaks(tmp_path):
    """An fp64 tensor that the call's own API creates or casts to is a downstream hazard (advice), so a library
    function that builds an fp64 schedule is not unsupported; a whole-model cast, a new default dtype and the
    narrow unsigned / fp8 types are changes to make (manual)."""
    from analyse.modes import run_script

    (tmp_path / "t.py").write_text(
        "import torch\n"
        "betas = torch.linspace(0.0001, 0.02, 1000, dtype=torch.float64)\n"
        "y = betas.double()\n"
        "model = torch.nn.Linear(2, 2).double()\n"
        "torch.set_default_dtype(torch.float64)\n"
        "u = torch.ones(2, dtype=torch.uint32)\n")
    report = run_script([tmp_path], load_knowledge("2.13.0"))
    sev = {}
    for f in report["findings"]:
        for o in (f.get("occurrences") or [f]):
            if f["code"] == "NPU204" or "NPU204" in f.get("codes", ()):
                sev[o["line"]] = f["severity"]
    assert sev == {2: "advice", 3: "advice", 4: "manual", 5: "manual", 6: "manual"}
