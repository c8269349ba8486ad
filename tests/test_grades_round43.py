"""Round 43: how reached Triton kernels and fp8 element types set a program's grade, and module-level default
globals that choose a path. VALID/INVALID fixtures written for these tests, of the shapes met in the projects (an
inference demo with a Triton dequant kernel and an fp8 quant kernel chosen by a module constant); no project code
copied.

* grades (analyse.report): a Triton kernel on the default path is manual work that the legend grades medium
  ("fixable Triton kernels"); alone among transfer_to_npu rewrites it no longer leaves the program low.
* knowledge (data/triton_ascend.yaml ``dtype_rules.<col>.blocks`` / ``rewrite``): an element type Atlas A2/A3 lacks
  but Ascend 950 has, whose A2/A3 rewrite keeps every value (fp8 -> bf16, uintN -> intN), makes the kernel manual,
  not blocked; fp64 (no Ascend chip, fp32 changes the results) still blocks.
* conditions (analyse.conditions.build): a module constant compared with a literal (``impl == "bf16"``) reads with
  the module's written value, as a bare ``if FLAG:`` already did.
"""

from __future__ import annotations

import copy

import pytest

from analyse.knowledge import KnowledgeError
from analyse.knowledge.triton_ascend import parse_triton_ascend, triton_ascend
from analyse.modes import run_script
from analyse.passes.triton import TritonPass
from analyse.report import grade
from helpers import analyse_source, library_report, write_files

KERN = """
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def quant_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))


    def quant(x):
        y = torch.empty_like(x, dtype=torch.float8_e4m3fn)
        quant_kernel[(x.numel() // 128,)](x, y, BLOCK=128)
        return y


    @triton.jit
    def dequant_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


    def dequant(x):
        y = torch.empty_like(x, dtype=torch.float32)
        dequant_kernel[(x.numel() // 128,)](x, y, BLOCK=128)
        return y
"""


def _demo(setting: str, test: str = 'impl == "bf16"', body: str = "") -> dict:
    return {
        "kern.py": KERN,
        "model.py": f"""
            from typing import Literal

            import torch
            from kern import dequant, quant

{setting}


            def linear(x, w):
{body}                if w.element_size() > 1:
                    return x @ w
                elif {test}:
                    return x @ dequant(w)
                else:
                    return quant(x) @ w


            if __name__ == "__main__":
                x = torch.randn(4, 4, device="cuda")
                print(linear(x, x))
        """,
    }


def _by(rep, api, line=None):
    return [f for f in rep["findings"] if f["api"] == api and (line is None or f["line"] == line)]


def _on(f):
    """Runs with the defaults: no guard left, or one that is on in the transfer_to_npu scenario."""
    return (f.get("guard") or {"on_path": {"transfer_to_npu": "on"}})["on_path"]["transfer_to_npu"] == "on"


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


QUANT_LAUNCH, DEQUANT_LAUNCH = 15, 27


# ---------------------------------------------------------------- conditions: a module constant compared with a literal

def test_a_module_constant_compared_with_a_literal_reads_as_written(tmp_path, kb):
    # VALID (old: "depends on `impl == 'bf16'` (a value the analysis cannot see)": the dequant launch was guarded with
    # a working fallback and not counted, while the fp8 quant path of the else counted and blocked the program)
    write_files(tmp_path, _demo('            impl: Literal["bf16", "fp8"] = "bf16"'))
    rep = run_script([tmp_path], kb)
    (deq,) = _by(rep, "triton-kernel:kern.dequant_kernel", DEQUANT_LAUNCH)
    assert deq["counted"] is True
    assert deq["guard"]["on_path"] == {"transfer_to_npu": "on", "no_transfer": "on"}, deq["guard"]
    assert "cannot see" not in deq["guard"].get("depends_on", "")
    (q,) = _by(rep, "triton-kernel:kern.quant_kernel", QUANT_LAUNCH)
    assert q["counted"] is False and q["off_path"]["reason"] == "off-by-default", q
    assert "impl != 'bf16'" in q["off_path"]["why"]
    assert not any("quant_kernel" in d and "dequant" not in d for d in _drivers(rep)), _drivers(rep)
    assert "torch.float8_e4m3fn" not in _drivers(rep)
    assert rep["summary"]["verdict"]["effort"] == "medium"


def test_the_other_written_value_takes_the_other_branch(tmp_path, kb):
    # INVALID for the default above: written "fp8", the module sends every linear() through the quant kernel
    write_files(tmp_path, _demo('            impl = "fp8"'))
    rep = run_script([tmp_path], kb)
    (q,) = _by(rep, "triton-kernel:kern.quant_kernel", QUANT_LAUNCH)
    assert q["counted"] is True and _on(q), q
    (deq,) = _by(rep, "triton-kernel:kern.dequant_kernel", DEQUANT_LAUNCH)
    assert deq["counted"] is False and deq["off_path"]["reason"] == "off-by-default"


@pytest.mark.parametrize("test, counted_kernel", [
    ('"bf16" == impl', "dequant_kernel"),
    ('impl != "fp8"', "dequant_kernel"),
    ('impl in ("bf16", "fp16")', "dequant_kernel"),
    ('impl not in ("bf16", "fp16")', "quant_kernel"),
])
def test_flipped_negated_and_membership_comparisons(tmp_path, kb, test, counted_kernel):
    write_files(tmp_path, _demo('            impl = "bf16"', test))
    rep = run_script([tmp_path], kb)
    line = DEQUANT_LAUNCH if counted_kernel == "dequant_kernel" else QUANT_LAUNCH
    (f,) = _by(rep, f"triton-kernel:kern.{counted_kernel}", line)
    assert f["counted"] is True and _on(f), (test, f.get("guard"))


@pytest.mark.parametrize("setting, body", [
    # assigned twice (argv-driven): the value is not the module's one default
    ('            import sys\n            impl = "bf16"\n            if len(sys.argv) > 1:\n                impl = "fp8"', ""),
    # a function rebinds it through `global`
    ('            impl = "bf16"\n\n\n            def use_fp8():\n                global impl\n                impl = "fp8"', ""),
    # a local literal is a value, not a setting (the function's own name, not the module's)
    ('            impl = "fp8"', '                impl = "bf16"\n'),
])
def test_names_that_are_not_module_constants_stay_undecided(tmp_path, kb, setting, body):
    write_files(tmp_path, _demo(setting, body=body))
    rep = run_script([tmp_path], kb)
    (deq,) = _by(rep, "triton-kernel:kern.dequant_kernel", DEQUANT_LAUNCH)
    assert deq["guard"]["on_path"]["transfer_to_npu"] == "conditional", (setting, deq["guard"])


# ---------------------------------------------------------------- grades: a reached Triton kernel is at least medium

def test_grade_counts_triton_kernels_as_medium():
    assert grade(0, 1, 1, 3) == "low"
    assert grade(0, 1, 1, 3, kernels=1) == "medium"
    assert grade(1, 1, 1, 3, kernels=1) == "blocked"
    assert grade(0, 16, 16, 0, kernels=1) == "high"


CAST = {
    "kern.py": KERN,
    "cast.py": """
        import torch
        from kern import dequant


        def main():
            w = torch.load("w.pt", map_location="cuda")
            out = {k: dequant(v) for k, v in w.items()}
            torch.cuda.empty_cache()
            torch.save(out, "out.pt")


        if __name__ == "__main__":
            main()
    """,
}


def test_a_program_whose_job_is_a_triton_kernel_is_medium(tmp_path, kb):
    # VALID (old: low -- "manual changes: triton-kernel:...", one manual place next to transfer_to_npu rewrites)
    write_files(tmp_path, CAST)
    rep = run_script([tmp_path], kb)
    (ep,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "cast.py"]
    assert ep["verdict"]["effort"] == "medium", ep["verdict"]
    assert ep["verdict"]["drivers"][0]["api"] == "triton-kernel:kern.dequant_kernel"
    v = rep["summary"]["verdict"]
    assert v["effort"] == "medium"
    assert "Medium because the default path launches Triton kernel(s) (dequant_kernel)" in v["explanation"]


def test_a_triton_kernel_off_the_default_path_sets_no_grade(tmp_path, kb):
    # INVALID: the same launch behind a module switch written off, with a torch fallback: the program is low again
    files = dict(CAST)
    files["cast.py"] = """
        import torch
        from kern import dequant

        USE_TRITON = False


        def convert(v):
            if USE_TRITON:
                return dequant(v)
            return v.float()


        def main():
            w = torch.load("w.pt", map_location="cuda")
            out = {k: convert(v) for k, v in w.items()}
            torch.cuda.empty_cache()
            torch.save(out, "out.pt")


        if __name__ == "__main__":
            main()
    """
    write_files(tmp_path, files)
    rep = run_script([tmp_path], kb)
    assert rep["summary"]["verdict"]["effort"] == "low", rep["summary"]["verdict"]["explanation"]
    assert "Medium because" not in rep["summary"]["verdict"]["explanation"]


# ---------------------------------------------------------------- knowledge: element types with an exact rewrite

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n"


def _run(tmp_path, kb, src, **kw):
    return analyse_source(tmp_path, src, kb, passes=[TritonPass()], **kw)


def _got(res):
    return sorted((f.line, f.code, f.severity) for f in res.findings)


def test_the_shipped_rows_say_which_types_block(kb):
    rules = triton_ascend(kb).dtype_rules
    assert {c: r["blocks"] for c, r in rules.items()} == {"fp64": True, "fp8": False, "uint16": False,
                                                          "uint32": False, "uint64": False}
    assert rules["fp8"]["rewrite"].startswith("exact") and "bf16" in rules["fp8"]["rewrite"]
    assert rules["fp8"]["950"] is True and rules["fp8"]["a2a3"] is False


def test_a_row_without_blocks_or_claiming_a_rewrite_for_a_type_no_chip_has_is_rejected(kb):
    doc = kb.data_file("triton_ascend.yaml")
    bad = copy.deepcopy(doc)
    del bad["dtype_rules"]["fp8"]["blocks"]
    with pytest.raises(KnowledgeError, match="dtype_rules.fp8: needs blocks"):
        parse_triton_ascend(bad)
    bad = copy.deepcopy(doc)
    bad["dtype_rules"]["fp64"]["blocks"] = False
    with pytest.raises(KnowledgeError, match="no Ascend chip has cannot be rewritten away"):
        parse_triton_ascend(bad)


def test_fp8_cast_in_a_kernel_is_a_manual_rewrite(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef to_fp8(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n"
                  "    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv))\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "manual"), (8, "NPU511", "manual")]
    kernel = [f for f in res.findings if f.code == "NPU506"][0]
    assert "tl.float8e4nv (fp8) at line 8" in kernel.message and "needs rewriting before it ports" in kernel.message


def test_uint32_in_a_kernel_is_a_manual_rewrite(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef bits(x_ptr, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n"
                  "    tl.store(x_ptr + offs, tl.load(x_ptr + offs).to(tl.uint32) & 255)\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "manual"), (8, "NPU511", "manual")]


def test_fp64_next_to_fp8_still_blocks_and_names_both(tmp_path, kb):
    # INVALID for the rewrite reading: one violation without a rewrite (fp64) blocks the kernel
    src = HEAD + ("@triton.jit\ndef mixed(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n"
                  "    v = tl.load(x_ptr + offs).to(tl.float64)\n"
                  "    tl.store(y_ptr + offs, v.to(tl.float8e5))\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "blocker"), (8, "NPU511", "blocker"), (9, "NPU511", "manual")]
    kernel = [f for f in res.findings if f.code == "NPU506"][0]
    assert "by 1 hard violation(s)" in kernel.message and "tl.float64 (fp64) at line 8" in kernel.message
    assert "tl.float8e5 (fp8) at line 9" in kernel.message


def test_a_helper_with_fp8_makes_its_caller_a_rewrite_not_a_blocker(tmp_path, kb):
    helper = HEAD + "@triton.jit\ndef pack(x):\n    return x.to(tl.float8e4nv)\n"
    user = HEAD + ("from pkg.helpers import pack\n\n@triton.jit\ndef fwd(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
                   "    offs = tl.arange(0, BLOCK)\n    tl.store(y_ptr + offs, pack(tl.load(x_ptr + offs)))\n\n"
                   "def run(x, y):\n    fwd[(1,)](x, y, BLOCK=128)\n")
    res = _run(tmp_path, kb, user, name="pkg/ops.py", extra_files={"pkg/__init__.py": "", "pkg/helpers.py": helper})
    fwd = sorted((f.line, f.severity) for f in res.findings if f.path == "pkg/ops.py" and f.code == "NPU506")
    assert fwd == [(8, "manual"), (13, "manual")]
    launch = [f for f in res.findings if f.path == "pkg/ops.py" and f.line == 13][0]
    assert "calls `pack` (tl.float8e4nv (fp8) at line 7)" in launch.message


def test_an_ascend_backend_kernel_with_fp8_stays_unsupported(tmp_path, kb):
    # library mode: only a kernel that breaks nothing is taken as the backend's NPU implementation; one that needs
    # the fp8 rewrite does not compile on Atlas A2/A3 as written
    kernel = """
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def _k(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float8e4nv))


        def run(x, y):
            _k[(1,)](x, y, BLOCK=128)
            return y
    """
    plain = kernel.replace(".to(tl.float8e4nv)", "")
    rep = library_report(tmp_path, kb, {"__init__.py": "", "ops/__init__.py": "", "ops/backends/__init__.py": "",
                                        "ops/backends/_ascend/__init__.py": "",
                                        "ops/backends/_ascend/fp8.py": kernel,
                                        "ops/backends/_ascend/plain.py": plain}, "ascendlib")
    by = {f["qualname"]: f for f in rep["thirdparty"]["functions"]}
    assert by["ascendlib.ops.backends._ascend.fp8.run"]["status"] == "unsupported"
    assert "ascendlib.ops.backends._ascend.plain.run" not in by   # supported: not listed
