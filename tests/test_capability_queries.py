"""CUDA hardware queries under transfer_to_npu (#31): which attributes of an API's result an NPU answers.

`torch.cuda.get_device_properties` is mapped to `torch_npu.npu.get_device_properties`, whose result fills only
name, total_memory, L2_cache_size, cube_core_num and vector_core_num (Ascend support list, torch-cuda.md); the
knowledge holds that as an ``attribute`` check. Code that reads `.major` / `.minor` (the CUDA compute
capability) or `.multi_processor_count` from it gets an empty value on an NPU: a manual NPU006 finding, and in
library mode the function (and its callers) are unsupported. Reading `.total_memory` stays the usual mapping.
"""

from __future__ import annotations

import sys
from pathlib import Path

from analyse.knowledge import load_knowledge
from analyse.passes.cuda_api import CudaApiPass
from tests.helpers import analyse_source, library_report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from limitations import parse_line, render_check  # noqa: E402

SRC = """\
import torch


def capability():
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return props.major * 10 + props.minor


def sm_count(device):
    return torch.cuda.get_device_properties(device).multi_processor_count


def memory():
    return torch.cuda.get_device_properties(0).total_memory


def name_only():
    p = torch.cuda.get_device_properties(0)
    return p.name
"""


def test_the_attribute_limit_is_parsed_from_the_support_list_line():
    c = parse_line("仅支持name、total_memory、L2_cache_size、cube_core_num和vector_core_num属性，原cuda上支持的其余属性均返回空字段")
    assert c == {"kind": "attribute", "allowed": ["name", "total_memory", "L2_cache_size", "cube_core_num",
                                                  "vector_core_num"]}
    assert render_check(c).startswith("Only the name, total_memory, L2_cache_size, cube_core_num and vector_core_num")


def test_the_knowledge_holds_the_attribute_check_in_every_release_that_documents_it():
    for version in ("2.6.0", "2.7.1", "2.13.0"):
        info = load_knowledge(version).api("torch.cuda.get_device_properties")
        checks = [c for c in info.checks if c["kind"] == "attribute"]
        assert checks and "major" not in checks[0]["allowed"] and "total_memory" in checks[0]["allowed"], version


def test_reading_the_compute_capability_is_manual_other_attributes_stay_auto(tmp_path):
    res = analyse_source(tmp_path, SRC, load_knowledge("2.7.1"), passes=[CudaApiPass()])
    props = [(f.line, f.code, f.severity) for f in res.findings if f.api == "torch.cuda.get_device_properties"]
    assert props == [(5, "NPU006", "manual"), (10, "NPU006", "manual"), (14, "NPU001", "auto"), (18, "NPU001", "auto")]
    f5 = next(f for f in res.findings if f.line == 5 and f.code == "NPU006")
    assert "`major, minor`" in f5.message and "total_memory" in f5.replacement
    assert "`multi_processor_count`" in next(f for f in res.findings if f.line == 10 and f.code == "NPU006").message


def test_a_library_function_returning_the_capability_and_its_callers_are_unsupported(tmp_path):
    files = {
        "__init__.py": "",
        "utils.py": SRC + """

def fp8_available():
    return capability() >= 89


def total():
    return memory()
""",
    }
    res = library_report(tmp_path, load_knowledge("2.7.1"), files, "caplib")
    st = {d["qualname"]: d["status"] for d in res["thirdparty"]["functions"]}
    assert st["caplib.utils.capability"] == "unsupported"
    assert st["caplib.utils.sm_count"] == "unsupported"
    assert st["caplib.utils.fp8_available"] == "unsupported"
    assert st["caplib.utils.memory"] == "needs-migration"
    assert st["caplib.utils.total"] == "needs-migration"


def test_a_rocm_only_attribute_behind_torch_version_hip_is_off_the_npu_path(tmp_path):
    # `torch.version.hip is not None` is False on an Ascend host's torch build: gcnArchName (not answered on an
    # NPU) is never read there, directly or through a predicate function
    files = {
        "__init__.py": "",
        "arch.py": """
import torch


def is_rocm():
    return torch.cuda.is_available() and torch.version.hip is not None


def is_mi300():
    if is_rocm():
        return "gfx942" in torch.cuda.get_device_properties(0).gcnArchName
    return False


def is_mi350():
    if torch.version.hip is not None:
        return "gfx950" in torch.cuda.get_device_properties(0).gcnArchName
    return False


def sm_count():
    return torch.cuda.get_device_properties(0).multi_processor_count
""",
    }
    res = library_report(tmp_path, load_knowledge("2.7.1"), files, "archlib")
    st = {d["qualname"]: d["status"] for d in res["thirdparty"]["functions"]}
    assert st.get("archlib.arch.is_mi300") != "unsupported"
    assert st.get("archlib.arch.is_mi350") != "unsupported"
    assert st["archlib.arch.sm_count"] == "unsupported"


def test_a_library_whose_import_queries_the_capability_says_it_cannot_be_imported(tmp_path, report_schema):
    import jsonschema

    files = {
        "__init__.py": "from .fp8 import scale\n",
        "fp8.py": """
import torch

FP8_OK = torch.cuda.get_device_capability() >= (8, 9)


def scale(x):
    return x * 2
""",
        "guarded.py": """
import torch

if torch.version.cuda is not None:   # a CUDA build of torch only: off on an Ascend host
    CAP = torch.cuda.get_device_capability()[0]
else:
    CAP = 0


def sm_count():
    return torch.cuda.get_device_properties(0).multi_processor_count
""",
    }
    rep = library_report(tmp_path, load_knowledge("2.7.1"), files, "fp8lib")
    lib = rep["thirdparty"]["library"]
    assert lib["import_failures"] == [{"module": "fp8lib.fp8", "path": "fp8.py", "line": 3,
                                       "api": "torch.cuda.get_device_capability"}]
    assert "1 module(s) cannot even be imported on an NPU host" in lib["verdict"]
    assert "fp8.py:3 `torch.cuda.get_device_capability`" in lib["verdict"]
    jsonschema.validate(rep, report_schema)


def test_a_library_without_import_time_cuda_code_has_no_import_failures(tmp_path):
    files = {"__init__.py": "", "utils.py": SRC}
    lib = library_report(tmp_path, load_knowledge("2.7.1"), files, "quietlib")["thirdparty"]["library"]
    assert "import_failures" not in lib and "cannot even be imported" not in lib["verdict"]
