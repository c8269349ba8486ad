"""The triton pass: Triton kernels graded against the Triton-Ascend constraints (issue 21).

Fixtures are written for these tests, modelled on the shapes of public Triton code (flash-attention,
unsloth, the Triton tutorials); no third-party code is copied.
"""

import pytest

from analyse.passes.triton import TritonPass
from tests.helpers import analyse_source

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n"


def _run(tmp_path, kb, src, **kw):
    return analyse_source(tmp_path, src, kb, passes=[TritonPass()], **kw)


def _got(res):
    return sorted((f.line, f.code, f.severity) for f in res.findings)


def test_kernel_across_files_graded_at_def_and_launch(tmp_path, kb):
    res = _run(tmp_path, kb, "from pkg.kernels import add_kernel\nadd_kernel[(1,)](x, y)\n", name="pkg/use.py",
               extra_files={"pkg/__init__.py": "", "pkg/kernels.py": "import triton\n@triton.jit\ndef add_kernel(x, y):\n    pass\n"})
    got = sorted((f.path, f.line, f.code, f.severity, f.api) for f in res.findings)
    assert got == [("pkg/kernels.py", 3, "NPU506", "manual", "triton-kernel:pkg.kernels.add_kernel"),
                   ("pkg/use.py", 2, "NPU506", "manual", "triton-kernel:pkg.kernels.add_kernel")]
    assert "Triton-Ascend >= 3.2.0" in res.findings[0].message


def test_blocked_kernel_is_blocker_at_a_launch_in_another_file(tmp_path, kb):
    kern = HEAD + "@triton.jit\ndef k64(x, BLOCK: tl.constexpr):\n    v = tl.load(x).to(tl.float64)\n"
    res = _run(tmp_path, kb, "from pkg.kern import k64\nk64[(8,)](x, BLOCK=64)\n", name="pkg/use.py",
               extra_files={"pkg/__init__.py": "", "pkg/kern.py": kern})
    launch = [f for f in res.findings if f.path == "pkg/use.py"]
    assert [(f.line, f.code, f.severity) for f in launch] == [(2, "NPU506", "blocker")]
    assert "tl.float64 (fp64) at line 7" in launch[0].message


def test_get_active_torch_device_in_wrapper(tmp_path, kb):
    src = HEAD + ("DEVICE = triton.runtime.driver.active.get_active_torch_device()\n\n"
                  "def add(x, y):\n    assert x.device == DEVICE\n    return x + y\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(5, "NPU519", "manual")]
    assert "'npu'" in res.findings[0].message


def test_fp64_in_kernel_is_a_blocker_with_dtype_chip_and_line(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef row_sum(x_ptr, out_ptr, N, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n"
                  "    acc = tl.zeros([BLOCK], dtype=tl.float64)\n"
                  "    acc += tl.load(x_ptr + offs, mask=offs < N).to(tl.float64)\n"
                  "    tl.store(out_ptr, tl.sum(acc))\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "blocker"), (8, "NPU511", "blocker"), (9, "NPU511", "blocker")]
    kernel = res.findings[0] if res.findings[0].code == "NPU506" else None
    assert kernel is not None and "tl.float64 (fp64) at line 8" in kernel.message
    dt = [f for f in res.findings if f.code == "NPU511"]
    assert "Atlas A2/A3 or Ascend 950" in dt[0].message and "as `dtype=`" in dt[0].message
    assert "in `.to(...)`" in dt[1].message and dt[1].api == "triton.language.float64"


def test_uint32_is_blocked_on_a2a3_but_named_for_950(tmp_path, kb):
    src = HEAD + "@triton.jit\ndef h(x):\n    v = tl.load(x).to(tl.uint32)\n"
    res = _run(tmp_path, kb, src)
    f = [f for f in res.findings if f.code == "NPU511"][0]
    assert "not supported on Atlas A2/A3 (supported on Ascend 950)" in f.message


def test_atomic_sem_relaxed(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef count(idx_ptr, out_ptr, N, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n    i = tl.load(idx_ptr + offs, mask=offs < N)\n"
                  "    tl.atomic_add(out_ptr + i, 1, mask=offs < N, sem='relaxed', scope='gpu')\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "manual"), (9, "NPU512", "advice")]
    f = res.findings[1]
    assert f.api == "triton.language.atomic_add" and "'relaxed'" in f.message and "'acq_rel'" in f.message
    assert "Atomic_Ops/atomic_add.md" in f.message


def test_num_stages_in_autotune_config(tmp_path, kb):
    src = HEAD + ("@triton.autotune(configs=[\n"
                  "    triton.Config({'BLOCK': 128}, num_warps=4, num_stages=3),\n"
                  "    triton.Config({'BLOCK': 256}, num_warps=8, num_stages=4),\n"
                  "], key=['N'])\n@triton.jit\ndef scale(x, N, BLOCK: tl.constexpr):\n"
                  "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    tl.store(x + offs, tl.load(x + offs) * 2)\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU514", "advice"), (10, "NPU506", "manual")]
    assert "num_stages = 3, 4" in res.findings[0].message or "num_stages = 3, 4" in res.findings[1].message


def test_literal_grid_of_100000_programs(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef fill(x, BLOCK: tl.constexpr):\n    pass\n\n"
                  "def run(x):\n    n = 100000 * 1024\n    fill[(triton.cdiv(n, 1024),)](x, BLOCK=1024)\n"
                  "    fill[(65535,)](x, BLOCK=1024)\n")
    res = _run(tmp_path, kb, src)
    assert [(l, c) for l, c, _s in _got(res)] == [(6, "NPU506"), (11, "NPU506"), (11, "NPU515"), (12, "NPU506")]
    f = [f for f in res.findings if f.code == "NPU515"][0]
    assert "100,000 programs" in f.message and "65,535" in f.message and "TRITON_ALL_BLOCKS_PARALLEL" in f.replacement


def test_inline_asm_kernel_is_a_blocker(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef fast_tanh(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
                  "    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n"
                  "    y = tl.inline_asm_elementwise('tanh.approx.f32 $0, $1;', '=r,r', [x], dtype=tl.float32,\n"
                  "                                  is_pure=True, pack=1)\n"
                  "    tl.store(y_ptr + tl.arange(0, BLOCK), y)\n"
                  "\n@triton.jit\ndef uses_helper(x_ptr, y_ptr, BLOCK: tl.constexpr):\n    fast_tanh(x_ptr, y_ptr, BLOCK)\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "blocker"), (8, "NPU513", "blocker"), (13, "NPU506", "blocker")]
    helper = [f for f in res.findings if f.line == 13][0]
    assert "calls `fast_tanh`" in helper.message and "tl.inline_asm_elementwise" in helper.message


def test_libdevice_is_a_blocker(tmp_path, kb):
    src = HEAD + "@triton.jit\ndef gelu(x):\n    return x * 0.5 * (1.0 + tl.libdevice.erf(x * 0.7071))\n"
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "blocker"), (7, "NPU513", "blocker")]
    assert "tl.erf" in res.findings[1].replacement


def test_portable_kernel_behind_cuda_check_with_torch_fallback(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef relu_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):\n"
                  "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                  "    x = tl.load(x_ptr + offs, mask=offs < N)\n"
                  "    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < N)\n\n"
                  "def relu(x):\n    y = torch.empty_like(x)\n    if x.is_cuda:\n        try:\n"
                  "            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)\n"
                  "            return y\n        except RuntimeError:\n            pass\n"
                  "    return torch.relu(x)\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "manual"), (15, "NPU506", "manual")]
    launch = res.findings[1]
    assert launch.guard is not None and launch.guard["kind"] == "device-branch"
    # off the path without transfer_to_npu (x.is_cuda is false on an NPU tensor), a portable kernel on it with it
    assert launch.guard["on_path"] == {"transfer_to_npu": "on", "no_transfer": "off"}


def test_tile_over_unified_buffer_and_2d_grid(tmp_path, kb):
    src = HEAD + ("@triton.autotune(configs=[triton.Config({'BLOCK_M': 64, 'BLOCK_N': 64}),\n"
                  "                         triton.Config({'BLOCK_M': 256, 'BLOCK_N': 256})], key=['M'])\n"
                  "@triton.jit\ndef mm(a, c, M, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n"
                  "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n\n"
                  "grid = lambda meta: (triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N']))\n"
                  "mm[grid](a, c, M)\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(8, "NPU506", "manual"), (9, "NPU516", "advice"), (12, "NPU506", "manual"),
                         (12, "NPU518", "advice")]
    ub = [f for f in res.findings if f.code == "NPU516"][0]
    assert "262,144 bytes" in ub.message and "BLOCK_M=256" in ub.message


def test_capability_check_choosing_a_kernel(tmp_path, kb):
    src = HEAD + ("@triton.jit\ndef k_new(x):\n    pass\n\n@triton.jit\ndef k_old(x):\n    pass\n\n"
                  "def run(x):\n    if torch.cuda.get_device_capability()[0] >= 9:\n        k_new[(1,)](x)\n"
                  "    else:\n        k_old[(1,)](x)\n")
    res = _run(tmp_path, kb, src)
    assert [(f.line, f.code) for f in res.findings if f.code == "NPU519"] == [(14, "NPU519")]


def test_files_without_triton_are_skipped(tmp_path, kb):
    res = _run(tmp_path, kb, "import torch\nx = torch.ones(3, dtype=torch.float64)\n")
    assert res.findings == []


@pytest.mark.parametrize("deco", ["@triton.heuristics({'EVEN': lambda a: a['N'] % 2 == 0})\n@triton.jit",
                                  "@jit"])
def test_kernels_under_heuristics_and_bare_jit(tmp_path, kb, deco):
    src = "from triton import jit\nimport triton\nimport triton.language as tl\n\n" + deco + \
          "\ndef k(x, N, EVEN: tl.constexpr):\n    pass\n"
    res = _run(tmp_path, kb, src)
    assert [f.code for f in res.findings] == ["NPU506"]


def test_manifest_maps_triton_pins_to_triton_ascend(tmp_path, kb):
    from analyse import pipeline
    from analyse.passes.manifests import ManifestsPass

    (tmp_path / "requirements.txt").write_text("torch==2.8.0\ntriton==3.1.0\npytorch-triton>=3.0\n")
    res = pipeline.run([tmp_path], kb, passes=[ManifestsPass()])
    got = [(f.line, f.code, f.severity) for f in res.findings if "triton" in f.api]
    assert got == [(2, "NPU901", "manual"), (3, "NPU901", "manual")]
    f = [f for f in res.findings if f.line == 2][0]
    assert "triton-ascend>=3.2.0" in f.replacement and "Python 3.9-3.11" in f.message


def test_knowledge_table_is_validated(kb):
    import copy

    from analyse.knowledge import KnowledgeError
    from analyse.knowledge.triton_ascend import parse_triton_ascend, triton_ascend

    ta = triton_ascend(kb)
    assert ta.package["name"] == "triton-ascend" and ta.package["python"] == "3.9-3.11"
    assert ta.op("tl.atomic_add").params["sem"]["accepted"] == ["acq_rel"]
    assert ta.op("atomic_cas").params["scope"]["accepted"] == ["gpu"]
    assert "fp64" in ta.op("dot").unsupported and ta.limit("max_programs") == 65535
    assert ta.limit("unified_buffer") == 192 * 1024 and ta.limit("arange_max") == 1048576
    assert len(ta.meta["commit"]) == 40
    doc = copy.deepcopy(kb.data_file("triton_ascend.yaml"))
    del doc["rules"]["max_programs"]["value"]
    with pytest.raises(KnowledgeError, match="max_programs"):
        parse_triton_ascend(doc)


@pytest.mark.parametrize("name,expect", [
    ("triton.language.atomic_add", ["sem: accepted 'acq_rel'", "scope: accepted 'gpu'", "Atomic_Ops/atomic_add.md",
                                    "Python 3.9-3.11"]),
    ("tl.dot", ["max_num_imprecise_acc: not supported", "fp64"]),
    ("triton.Config", ["num_stages:", "num_ctas:", "maxnreg:", "65,535"]),
    ("triton.autotune", ["use_cuda_graph:"]),
    ("triton.language.float64", ["Atlas A2/A3:  NOT supported; Ascend 950: NOT supported"]),
    ("triton.language.uint32", ["Atlas A2/A3:  NOT supported; Ascend 950: supported"]),
])
def test_explain_triton(name, expect):
    from analyse.explain import explain_name

    text, rc = explain_name(name)
    assert rc == 0
    for e in expect:
        assert e in text, (e, text)


def test_probe_from_report_lists_triton_kernels_as_device_runs(tmp_path, kb):
    import json

    from analyse.probe.opsfile import read_report_apis

    src = HEAD + ("@triton.jit\ndef k(x, BLOCK: tl.constexpr):\n    v = tl.load(x).to(tl.float64)\n\n"
                  "k[(100000,)](x, BLOCK=4)\n")
    res = _run(tmp_path / "src", kb, src)
    apis = sorted({f.api for f in res.findings})
    assert apis == ["triton-grid:snippet.k", "triton-kernel:snippet.k", "triton.language.float64"]
    report = {"findings": [{"category": f.category, "api": f.api, "path": f.path, "line": f.line} for f in res.findings]
              + [{"category": "unknown-api", "api": "torch.Tensor.nonzero", "path": "a.py", "line": 1}]}
    p = tmp_path / "report.json"
    p.write_text(json.dumps(report))
    ops = read_report_apis(p)
    assert [o.op for o in ops.ops] == ["torch.Tensor.nonzero"] and ops.unprobeable == []
    assert sorted(k.api for k in ops.skipped) == apis
    assert all("needs a Triton-Ascend device run" in k.reason for k in ops.skipped)


def test_verdict_of_portable_kernels_is_not_blocked_and_counts_them(tmp_path, kb):
    from analyse.report import verdict

    src = HEAD + "".join(f"@triton.jit\ndef k{i}(x, BLOCK: tl.constexpr):\n    tl.store(x, tl.load(x) * 2)\n\n"
                         f"k{i}[(4,)](x, BLOCK=128)\n\n" for i in range(20))
    res = _run(tmp_path, kb, src)
    assert {f.severity for f in res.findings} == {"manual"}
    v = verdict(res.findings, 1)
    assert v["effort"] == "high"
    assert "Triton: 20 kernel(s); 20 port as they are with Triton-Ascend >= 3.2.0" in v["explanation"]
    bad = _run(tmp_path / "b", kb, HEAD + "@triton.jit\ndef k(x):\n    tl.store(x, tl.load(x).to(tl.float64))\n")
    vb = verdict(bad.findings, 1)
    assert vb["effort"] == "blocked" and "1 kernel(s); 0 port as they are" in vb["explanation"]


def test_kernels_made_by_a_call_at_module_level(tmp_path, kb):
    src = HEAD + ("def _rope(Q, cos, BACKWARD: tl.constexpr):\n    tl.store(Q, tl.load(Q) * tl.load(cos))\n\n\n"
                  "_rope = triton.jit(_rope)\n_rope = triton.heuristics({'BACKWARD': lambda a: bool(a['BACKWARD'])})(_rope)\n\n"
                  "def rope(Q, cos):\n    _rope[(Q.shape[0],)](Q, cos, BACKWARD=False)\n")
    res = _run(tmp_path, kb, src)
    assert [(f.line, f.code, f.severity) for f in res.findings] == [(5, "NPU506", "manual"), (13, "NPU506", "manual")]


def test_fp8_tensor_passed_by_the_wrapper_is_a_rewrite_not_a_blocker(tmp_path, kb):
    """fp8 is a type Ascend 950 has and every fp8 value is exact in bf16 (dtype_rules.fp8.blocks: false): the launch
    is manual work naming the rewrite, not blocked (the practice rule: blocked only for what has no rewrite)."""
    src = HEAD + ("@triton.jit\ndef quant(x_ptr, y_ptr, BLOCK: tl.constexpr):\n"
                  "    offs = tl.arange(0, BLOCK)\n    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(y_ptr.dtype.element_ty))\n\n"
                  "def act_quant(x):\n    y = torch.empty_like(x, dtype=torch.float8_e4m3fn)\n"
                  "    quant[(x.numel() // 128,)](x, y, BLOCK=128)\n    return y\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(6, "NPU506", "manual"), (12, "NPU506", "manual"), (12, "NPU511", "manual")]
    f = [f for f in res.findings if f.code == "NPU511"][0]
    assert "torch.float8_e4m3fn tensor (line 11)" in f.message and "supported on Ascend 950" in f.message
    assert "It does not block the kernel: the rewrite is exact" in f.message
    launch = [f for f in res.findings if f.code == "NPU506" and f.line == 12][0]
    assert "needs rewriting before it ports" in launch.message and "`y` is torch.float8_e4m3fn (fp8, line 11)" in launch.message
    assert "no documented Triton-Ascend constraint is broken" not in launch.message


def test_triton_reexported_by_a_project_module(tmp_path, kb):
    src = ("from pkg._triton import HAVE_TRITON, triton, tl\n\nif HAVE_TRITON:\n\n    @triton.jit\n"
           "    def _k(x, BLOCK: tl.constexpr):\n        tl.store(x, tl.load(x).to(tl.float64))\n")
    res = _run(tmp_path, kb, src, name="pkg/ops.py", extra_files={
        "pkg/__init__.py": "", "pkg/_triton.py": "try:\n    import triton\n    import triton.language as tl\n"
        "    HAVE_TRITON = True\nexcept ImportError:\n    HAVE_TRITON = False\n"})
    assert [(f.line, f.code, f.severity) for f in res.findings] == [(6, "NPU506", "blocker"), (7, "NPU511", "blocker")]


def test_project_package_named_triton_is_not_triton(tmp_path, kb):
    """flash_attn.ops.triton.k_activations.gelu is a project helper, not triton's API: its violation propagates."""
    helper = HEAD + "@triton.jit\ndef gelu(x):\n    return x * tl.libdevice.erf(x)\n"
    user = HEAD + ("from pkg.ops.triton.acts import gelu\n\n@triton.jit\ndef fwd(x, ACT: tl.constexpr):\n"
                   "    if ACT == 'gelu':\n        x = gelu(x)\n")
    res = _run(tmp_path, kb, user, name="pkg/ops/triton/linear.py", extra_files={
        "pkg/__init__.py": "", "pkg/ops/__init__.py": "", "pkg/ops/triton/__init__.py": "", "pkg/ops/triton/acts.py": helper})
    fwd = [f for f in res.findings if f.path.endswith("linear.py") and f.code == "NPU506"]
    assert [(f.line, f.severity) for f in fwd] == [(8, "blocker")]
    assert "calls `gelu` under `if ACT == 'gelu'`" in fwd[0].message


def test_extra_cuda_use_cuda_graph_and_launch_settings(tmp_path, kb):
    src = HEAD + ("from triton.language.extra.cuda import libdevice\n\n"
                  "@triton.autotune(configs=[triton.Config({'B': 64})], key=['n'], use_cuda_graph=True)\n"
                  "@triton.jit\ndef k(x, n, B: tl.constexpr):\n    tl.store(x, libdevice.pow(tl.load(x), 2.0))\n\n"
                  "k[(4,)](x, 8, num_stages=2, num_ctas=1)\n")
    res = _run(tmp_path, kb, src)
    assert _got(res) == [(7, "NPU514", "advice"), (9, "NPU506", "blocker"), (10, "NPU513", "blocker"),
                         (12, "NPU506", "blocker"), (12, "NPU514", "advice")]
    asm = [f for f in res.findings if f.code == "NPU513"][0]
    assert asm.api == "triton.language.extra.cuda.libdevice.pow"
    launch = [f for f in res.findings if f.code == "NPU514" and f.line == 12][0]
    assert "num_stages, num_ctas" in launch.message
