"""Tests for the versioned knowledge base (analyse.knowledge + tools/build_knowledge.py)."""

from __future__ import annotations

import re

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analyse.knowledge import (
    DEFAULT_TORCH_VERSION,
    TORCH_VERSIONS,
    ApiInfo,
    CudaOnlyFact,
    KnowledgeError,
    UnknownTorchVersion,
    clear_cache,
    data_file,
    load_knowledge,
)
from analyse.paths import data_dir

REPO = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- versions


def test_versions_and_default():
    assert TORCH_VERSIONS == ("2.1.0", "2.6.0", "2.7.1", "2.8.0", "2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0")
    assert DEFAULT_TORCH_VERSION == "2.13.0"
    assert load_knowledge().torch_version == "2.13.0"


@pytest.mark.parametrize("bad", ["2.8", "2.5.1", "", "latest", "2.8.0 "])
def test_unknown_version_raises(bad):
    with pytest.raises(UnknownTorchVersion):
        load_knowledge(bad)
    assert issubclass(UnknownTorchVersion, ValueError)


def test_cached():
    assert load_knowledge("2.8.0") is load_knowledge("2.8.0")


@pytest.mark.parametrize("version", TORCH_VERSIONS)
def test_every_version_loads(version):
    kb = load_knowledge(version)
    assert kb.torch_version == version
    assert isinstance(kb.torch_npu_version, str) and kb.torch_npu_version
    assert len(kb.documented_names()) > 1500
    assert len(kb.aten_kernels) > 1000
    assert "add.Tensor" in kb.aten_kernels and "add" in kb.aten_kernels
    assert kb.cuda_attr_handled("set_device")
    assert not kb.cuda_attr_handled("nvtx")
    assert kb.rewrites_nccl_backend is True
    assert "\n" not in kb.identifier and version in kb.identifier
    assert kb.provenance["torch_version"] == version
    assert kb.provenance["api_support"]["commit"]


def test_torch_npu_branch_mapping():
    assert load_knowledge("2.8.0").torch_npu_version == "2.8.0"
    assert load_knowledge("2.8.0").transfer_branch == "v2.8.0"
    assert load_knowledge("2.1.0").torch_npu_version == "2.1.0"
    assert load_knowledge("2.13.0").transfer_branch == "master"
    kb = load_knowledge("2.8.0")
    assert "v2.8.0@c419498" in kb.identifier
    assert "v2.7.1-26.0.0@89d88d4" in kb.identifier  # newest official 2.8.0 doc


# --------------------------------------------------------------------------- native API support


def test_unsupported_api_2_8():
    kb = load_knowledge("2.8.0")
    assert kb.api_status("torch.nn.DataParallel") == "unsupported"
    assert kb.api_status("torch.backends.cuda.sdp_kernel") == "unsupported"
    info = kb.api("torch.nn.DataParallel")
    assert isinstance(info, ApiInfo)
    assert info.status == "unsupported"
    assert "v2.7.1-26.0.0" in info.source and "torch-nn.md" in info.source


def test_limited_api_english_text_keeps_verbatim_evidence():
    kb = load_knowledge("2.8.0")
    info = kb.api("torch.Tensor.to")
    assert info.status == "limited"
    # the official English table text for the identical Chinese text; the original stays as evidence
    assert "当前NPU设备仅支持设置memory_format为torch.contiguous_format或torch.preserve_format" in info.evidence
    assert "torch.contiguous_format or torch.preserve_format" in info.limitations
    assert not re.search(r"[\u4e00-\u9fff]", info.limitations)
    assert info.english == "official"
    assert kb.api_status("torch.Tensor.to") == "limited"
    # compact docs spell "Tensor.to"; the loader accepts it too
    assert kb.api_status("Tensor.to") == "limited"


def test_supported_and_unverified():
    kb = load_knowledge("2.8.0")
    assert kb.api_status("torch.cuda.amp.autocast") == "supported"
    assert kb.api("torch.cuda.amp.autocast").limitations is None
    assert kb.api_status("torch.definitely_not_an_api") == "unverified"
    assert kb.api("torch.definitely_not_an_api") is None
    assert not kb.is_documented("torch.definitely_not_an_api")
    assert kb.is_documented("torch.nn.DataParallel")
    assert "torch.nn.DataParallel" in kb.documented_names()


def test_hardware_per_product_2_13():
    kb = load_knowledge("2.13.0")
    info = kb.api("torch.distributed.GradBucket")
    assert info.hardware == {"Atlas A2 training": True, "Atlas A3 training": True, "Ascend 950DT": False}
    assert kb.api_status("torch.nn.DataParallel") == "unsupported"


def test_2_1_blank_compatibility_is_unverified():
    kb = load_knowledge("2.1.0")
    # blank Compatibility cell in the 2.1.0 doc = "not tested"
    assert kb.api_status("torch.default_generator") == "unverified"
    assert kb.api_status("torch.Tensor.to") == "limited"
    assert kb.api("torch.Tensor.to").limitations == "Only support fp16, fp32, int64, bool"


def test_msfmktransplt_fill_is_marked():
    kb = load_knowledge("2.7.1")
    info = kb.api("torch.compiler.assume_constant_result")
    assert info is not None
    assert "supported_op_2_7" in info.source and "doc row without verdict" in info.source


def test_statuses_consistent():
    for v in TORCH_VERSIONS:
        kb = load_knowledge(v)
        for name in list(kb.documented_names())[:500]:
            info = kb.api(name)
            assert info.status in ("supported", "limited", "unsupported")
            if info.status == "limited":
                assert info.limitations


# --------------------------------------------------------------------------- transfer_to_npu


def test_cuda_attr_handled():
    kb = load_knowledge("2.8.0")
    for attr in ("set_device", "amp", "synchronize", "current_device", "Stream", "CUDAGraph", "DoubleTensor", "random"):
        assert kb.cuda_attr_handled(attr), attr
    for attr in ("nvtx", "comm", "jiterator", "get_arch_list", "memory_usage", "graphs"):
        assert not kb.cuda_attr_handled(attr), attr
    assert kb.cuda_attr_handled("torch.cuda.set_device")


def test_npu_equivalent():
    kb = load_knowledge("2.8.0")
    assert kb.npu_equivalent("torch.cuda.set_device") == "torch.npu.set_device"
    assert kb.npu_equivalent("torch.cuda.amp.GradScaler") == "torch.npu.amp.GradScaler"
    assert kb.npu_equivalent("torch.cuda.CUDAGraph") == "torch.npu.NPUGraph"
    assert kb.npu_equivalent("torch.Tensor.cuda") == "torch.Tensor.npu"
    assert kb.npu_equivalent("torch.cuda") == "torch.npu"
    assert kb.npu_equivalent("torch.cuda.nvtx.range_push") is None
    assert kb.npu_equivalent("torch.cuda.jiterator._create_jit_fn") is None


def test_device_rewrites():
    kb = load_knowledge("2.8.0")
    for q in ("torch.tensor", "torch.Tensor.to", "torch.nn.Module.to", "torch.load", "torch.zeros", "torch.cuda.set_device",
              "torch.distributed.init_process_group"):
        assert q in kb.device_rewrite_functions, q
    assert "torch.matmul" not in kb.device_rewrite_functions
    assert kb.tensor_cuda_to_npu and kb.module_cuda_to_npu and kb.double_tensor_to_float
    assert "torch.jit.script" in kb.transfer_disabled


# --------------------------------------------------------------------------- CUDA-only facts


def test_cuda_only_facts():
    kb = load_knowledge("2.8.0")
    assert all(isinstance(f, CudaOnlyFact) for f in kb.cuda_only_facts)
    ids = {f.id for f in kb.cuda_only_facts}
    for required in ("cuda-nvtx", "cuda-get-device-capability-none", "jit-script-disabled", "channels-last", "cuda-double-tensor",
                     "cuda-comm", "cuda-jiterator", "cuda-arch-list", "cuda-graphs", "cudnn-flags", "cuda-tf32",
                     "cuda-sdp-kernel-selection", "env-cuda-visible-devices", "env-nccl", "cuda-memory-stats"):
        assert required in ids, required
    for f in kb.cuda_only_facts:
        assert f.severity in ("blocker", "manual", "info")
        assert f.reason and f.replacement and f.source and f.apis

    nvtx = kb.cuda_only("torch.cuda.nvtx.range_push")
    assert nvtx.id == "cuda-nvtx" and "mstx" in nvtx.replacement
    assert kb.cuda_only("torch.cuda.nvtx").id == "cuda-nvtx"
    assert kb.cuda_only("torch.cuda.get_device_capability").id == "cuda-get-device-capability-none"
    assert "TORCH_NPU_DEVICE_CAPABILITY" in kb.cuda_only("torch.cuda.get_device_capability").replacement
    assert kb.cuda_only("torch.jit.script").id == "jit-script-disabled"
    assert kb.cuda_only("torch.channels_last").id == "channels-last"
    assert kb.cuda_only("torch.backends.cudnn.deterministic").id == "cudnn-flags"
    assert "use_deterministic_algorithms" in kb.cuda_only("torch.backends.cudnn.deterministic").replacement
    # longest match wins: cudnn.allow_tf32 is more specific than torch.backends.cudnn
    assert kb.cuda_only("torch.backends.cudnn.allow_tf32").id == "cuda-tf32"
    assert kb.cuda_only("env:CUDA_VISIBLE_DEVICES").replacement.find("ASCEND_RT_VISIBLE_DEVICES") >= 0
    assert kb.cuda_only("env:NCCL_DEBUG").id == "env-nccl"
    assert kb.cuda_only("torch.cuda.memory_usage").id == "cuda-memory-stats"
    assert kb.cuda_only("torch.cuda.memory._snapshot") is None  # patched by transfer_to_npu
    assert kb.cuda_only("torch.cuda.set_device") is None
    assert kb.cuda_only("torch.matmul") is None


def test_memory_fact_derived_from_replaced_names():
    for v in TORCH_VERSIONS:
        kb = load_knowledge(v)
        fact = next(f for f in kb.cuda_only_facts if f.id == "cuda-memory-stats")
        for api in fact.apis:
            assert not kb.cuda_attr_handled(api.split(".")[2]), (v, api)
        assert kb.cuda_only("torch.cuda.memory_allocated") is None


# --------------------------------------------------------------------------- data files / validation


def test_data_file_generic():
    doc = data_file("cuda_only.yaml")
    assert doc["meta"]["source"] and doc["meta"]["date"]
    kb = load_knowledge("2.8.0")
    assert kb.data_file("transfer_to_npu.json")["meta"]["generator"] == "tools/build_knowledge.py"
    assert kb.data_file("cuda_only.yaml") is doc


def test_generated_files_have_provenance():
    root = data_dir()
    idx = json.loads((root / "knowledge_index.json").read_text(encoding="utf-8"))
    files = [root / "knowledge_index.json", root / "transfer_to_npu.json", root / "cuda_only.yaml", root / "op_support" / "aten_kernels.json"]
    files += [root / v["api_table"] for v in idx["versions"].values()]
    for p in files:
        meta = data_file(str(p.relative_to(root)))["meta"]
        for k in ("source", "source_repo", "branch", "commit", "path", "date", "licence", "torch_version", "torch_npu_version", "generator"):
            assert k in meta and meta[k], (p.name, k)
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    assert total < 10 * 1024 * 1024


@pytest.fixture
def data_copy(tmp_path):
    dst = tmp_path / "data"
    shutil.copytree(data_dir(), dst)
    yield dst
    clear_cache()


def test_corrupt_api_table_rejected(data_copy):
    p = data_copy / "op_support" / "torch_2.8.0.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    doc["apis"]["torch.nn.DataParallel"]["status"] = "maybe"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="status"):
        load_knowledge("2.8.0", data_root=data_copy)
    # other versions in the same folder still load
    assert load_knowledge("2.6.0", data_root=data_copy).torch_version == "2.6.0"


def test_missing_meta_rejected(data_copy):
    p = data_copy / "transfer_to_npu.json"
    doc = json.loads(p.read_text(encoding="utf-8"))
    del doc["meta"]
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="meta"):
        load_knowledge("2.8.0", data_root=data_copy)


def test_unparsable_file_rejected(data_copy):
    (data_copy / "cuda_only.yaml").write_text("facts: [unclosed\n", encoding="utf-8")
    with pytest.raises(KnowledgeError):
        load_knowledge("2.13.0", data_root=data_copy)


def test_bad_fact_rejected(data_copy):
    import yaml

    p = data_copy / "cuda_only.yaml"
    doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    doc["facts"][0]["severity"] = "catastrophic"
    p.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    with pytest.raises(KnowledgeError, match="severity"):
        load_knowledge("2.8.0", data_root=data_copy)


def test_data_file_requires_meta(data_copy):
    (data_copy / "third_party.yaml").write_text("libraries: []\n", encoding="utf-8")
    with pytest.raises(KnowledgeError, match="meta"):
        data_file("third_party.yaml", data_root=data_copy)
    (data_copy / "ok.json").write_text(json.dumps({"meta": {"source": "x", "date": "2026-01-01"}, "items": [1]}), encoding="utf-8")
    assert data_file("ok.json", data_root=data_copy)["items"] == [1]
    with pytest.raises(KnowledgeError):
        data_file("missing.json", data_root=data_copy)


# --------------------------------------------------------------------------- reproducibility


@pytest.mark.needs_upstream
def test_regeneration_is_byte_identical(tmp_path, upstream):
    out = tmp_path / "data"
    subprocess.run([sys.executable, str(REPO / "tools" / "build_knowledge.py"), "--upstream", str(upstream), "--out", str(out)],
                   check=True, capture_output=True)
    generated = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert generated
    committed = data_dir()
    for rel in generated:
        assert (committed / rel).read_bytes() == (out / rel).read_bytes(), f"data/{rel} differs from a fresh build"


def test_an_unlisted_method_of_a_listed_class_takes_the_class_row(kb):
    # loralib shape: `class Linear(nn.Linear)` calls nn.Linear.__init__ / reset_parameters / train, which the
    # tables list only as the class torch.nn.Linear (supported): documented, not "unverified"
    for api in ("torch.nn.Linear.reset_parameters", "torch.nn.Linear.__init__", "torch.nn.Embedding.train"):
        assert kb.is_documented(api), api
        info = kb.api(api)
        assert info.status == kb.api_status(api.rpartition(".")[0]) and info.name == api
    # INVALID: a made-up function of a module is still unverified; a listed method keeps its own row
    assert not kb.is_documented("torch.special.zeta_not_documented")
    assert not kb.is_documented("torch.nn.NotAModuleAnywhere.forward")


def test_torch_nn_parallel_submodule_spellings_answer_for_the_public_name(kb):
    # `from torch.nn.parallel.distributed import DistributedDataParallel` names the class the tables list as
    # torch.nn.parallel.DistributedDataParallel (torch/nn/parallel/__init__.py re-exports it)
    assert kb.api_status("torch.nn.parallel.distributed.DistributedDataParallel") == \
        kb.api_status("torch.nn.parallel.DistributedDataParallel") == "supported"
    assert kb.api_status("torch.nn.parallel.data_parallel.DataParallel") == kb.api_status("torch.nn.parallel.DataParallel")
    assert not kb.is_documented("torch.nn.parallel.distributed.NoSuchThing")
