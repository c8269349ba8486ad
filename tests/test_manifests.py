"""manifests pass: requirements, pyproject, setup.cfg, conda, Dockerfiles, launchers (NPU901-NPU907)."""

from __future__ import annotations

import textwrap

import pytest

from analyse.knowledge import load_knowledge
from analyse.modes import run_script
from analyse.passes.manifests import ManifestDataError, ManifestsPass, parse_manifest_data
from analyse.passes._libtable import lib_table

REQUIREMENTS = """\
# training stack (CUDA)
torch==2.3.1+cu121
--extra-index-url https://download.pytorch.org/whl/cu121
flash-attn==2.5.8
apex
xformers>=0.0.23
bitsandbytes>=0.41.1  # 8-bit Adam
cupy-cuda12x
numpy>=1.24
# tensorrt  # export only
nvidia-sphinx-theme
"""
DOCKERFILE = """\
FROM nvcr.io/nvidia/pytorch:24.01-py3
ARG NCCL_VERSION=2.19.3
ENV NCCL_DEBUG=INFO \\
    CUDA_VISIBLE_DEVICES=0,1
RUN pip install --no-cache-dir \\
        flash-attn==2.5.8 --no-build-isolation && \\
    pip install -r requirements.txt
"""
RUN_SH = """\
#!/bin/bash
export CUDA_VISIBLE_DEVICES=0,1,2,3
export NCCL_SOCKET_IFNAME=eth0
NGPU=$(nvidia-smi -L | wc -l)
torchrun --nproc_per_node=gpu train.py --dist-backend nccl
"""


def _project(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


def _by_file(report):
    out = {}
    for f in report["findings"]:
        if f["code"].startswith("NPU9"):
            out.setdefault(f["path"], []).append((f["line"], f["code"], f["api"], f["severity"]))
    return out


def test_done_when_folder(tmp_path):
    proj = _project(tmp_path / "p", {"requirements.txt": REQUIREMENTS, "Dockerfile": DOCKERFILE, "run.sh": RUN_SH,
                                     "train.py": "import torch\nx = torch.zeros(3)\n"})
    report = run_script([proj], load_knowledge(), input_names=[str(proj)])
    got = _by_file(report)
    assert set(got) == {"requirements.txt", "Dockerfile", "run.sh"}
    req = got["requirements.txt"]
    for line, pkg in ((4, "flash-attn"), (5, "apex"), (6, "xformers"), (7, "bitsandbytes"), (8, "cupy-cuda12x")):
        assert (line, "NPU901", f"package:{pkg}") in [(a, b, c) for a, b, c, _s in req]
    assert ("NPU902", 2) in [(c, a) for a, c, _p, _s in req]   # +cu121 build and a torch the KB has no list for
    assert ("NPU902", 3) in [(c, a) for a, c, _p, _s in req]   # cu121 wheel index
    assert not [x for x in req if x[0] in (9, 10, 11)]          # numpy, a commented line, a docs theme
    dock = {(a, c, p) for a, c, p, _s in got["Dockerfile"]}
    assert {(1, "NPU903", "image:nvcr.io/nvidia/pytorch"), (3, "NPU906", "env:NCCL_DEBUG"),
            (4, "NPU904", "env:CUDA_VISIBLE_DEVICES"), (6, "NPU901", "package:flash-attn")} <= dock
    assert not [x for x in dock if x[0] == 2]  # ARG NCCL_VERSION is the build's NCCL, not a runtime setting
    run = {(a, c, p) for a, c, p, _s in got["run.sh"]}
    assert {(2, "NPU904", "env:CUDA_VISIBLE_DEVICES"), (3, "NPU906", "env:NCCL_SOCKET_IFNAME"), (4, "NPU905", "tool:nvidia-smi"),
            (5, "NPU907", "launcher:backend-nccl"), (5, "NPU907", "launcher:nproc-gpu")} <= run
    msgs = " ".join(f["message"] + " " + (f.get("replacement") or "") for f in report["findings"])
    assert "ASCEND_RT_VISIBLE_DEVICES" in msgs and "npu-smi" in msgs and "npu_fusion_attention" in msgs
    assert report["summary"]["verdict"]["effort"] not in ("none",)
    # cupy is a blocker; xformers and bitsandbytes have documented replacements: manual (#30)
    assert report["summary"]["verdict"]["blockers"] >= 1


def test_pyproject_setup_cfg_and_conda(tmp_path):
    proj = _project(tmp_path / "p", {
        "pyproject.toml": """\
            [build-system]
            requires = ["setuptools>=61"]

            [project]
            name = "trainer"
            dependencies = [
                "torch==2.8.0",
                "xformers",
            ]
            [project.optional-dependencies]
            quant = ["bitsandbytes>=0.43"]
            [tool.ruff]
            select = ["apex"]
            """,
        "setup.cfg": """\
            [options]
            install_requires =
                einops
                apex
            [flake8]
            ignore = flash-attn
            """,
        "environment.yml": """\
            name: train
            channels: [pytorch, nvidia]
            dependencies:
              - python=3.10
              - pytorch=2.1.0=py3.10_cuda11.8_cudnn8.7.0_0
              - pytorch-cuda=11.8
              - pip:
                - flash-attn==2.3.3
            """,
    })
    report = run_script([proj], load_knowledge("2.13.0"), input_names=[str(proj)])
    got = _by_file(report)
    pp = {(a, c, p, s) for a, c, p, s in got["pyproject.toml"]}
    assert (7, "NPU902", "torch-version:2.8.0", "info") in pp      # analysed at 2.13.0, pinned 2.8.0
    assert (8, "NPU901", "package:xformers", "manual") in pp        # documented replacements (#30)
    assert (11, "NPU901", "package:bitsandbytes", "manual") in pp
    assert not [x for x in pp if x[0] == 13]                       # [tool.ruff] is not a dependency list
    cfg = {(a, c, p) for a, c, p, _s in got["setup.cfg"]}
    assert cfg == {(4, "NPU901", "package:apex")}
    conda = {(a, c, p) for a, c, p, _s in got["environment.yml"]}
    assert {(5, "NPU902", "package:torch"), (6, "NPU901", "package:pytorch-cuda"), (8, "NPU901", "package:flash-attn")} <= conda


def test_in_kb_pin_at_same_version_is_silent_and_plain_scripts_are_quiet(tmp_path):
    proj = _project(tmp_path / "p", {"requirements-dev.txt": "torch==2.8.0\npytest\n",
                                     "scripts/prepare.sh": "#!/bin/sh\nexport OMP_NUM_THREADS=4\npython prep.py --workers 8\n",
                                     "Makefile": "train:\n\tASCEND_RT_VISIBLE_DEVICES=0 python train.py\n"})
    report = run_script([proj], load_knowledge("2.8.0"), input_names=[str(proj)])
    assert _by_file(report) == {}


def test_data_is_validated():
    kb = load_knowledge()
    doc = dict(kb.data_file("manifests.yaml"))
    parse_manifest_data(doc, lib_table(kb))
    bad = dict(doc, packages=[{"names": ["x"], "lib": "no-such-entry"}])
    with pytest.raises(ManifestDataError):
        parse_manifest_data(bad, lib_table(kb))
    bad = dict(doc, env=[{"names": ["CUDA_X"], "code": "NPU999", "replacement": "", "reason": ""}])
    with pytest.raises(ManifestDataError):
        parse_manifest_data(bad, lib_table(kb))


def test_unreadable_and_binary_manifests_are_errors(tmp_path):
    proj = _project(tmp_path / "p", {"train.py": "x = 1\n"})
    (proj / "requirements.txt").write_bytes(b"flash-attn\x00\xff")
    report = run_script([proj], load_knowledge(), input_names=[str(proj)])
    assert [e["kind"] for e in report["errors"] if e["path"] == "requirements.txt"] == ["encoding"]
    assert ManifestsPass().rules
