"""Library mode: device choices that already run on an NPU host, and CUDA tests that are not the path taken.

A function ``needs-migration`` when it runs on an NPU host only once its CUDA uses are migrated (transfer_to_npu or
the library's own NPU path). These shapes run there as they stand, so they no longer make a function
``needs-migration`` (INVALID: each was ``needs-migration`` or ``conditional``):

* ``torch.device("cuda" if torch.cuda.is_available() else "cpu")``: the other alternative is the device an NPU host
  takes without transfer_to_npu, as for the same choice written as an ``if``;
* ``device = "cuda"`` followed by ``if device.type == torch.device("cuda").type and not torch.cuda.is_available():
  return torch.device("cpu")``: a first choice the function replaces itself (``torch.device("cuda").type`` is the
  device type string of a comparison, not a device);
* ``str(torch.cuda.is_available())`` in a system report: the answer is only written out;
* ``set_random_seed(seed, using_cuda=self.device.type == "cuda")``: the callee gets False on an NPU and completes;
* ``self.is_cuda = device.type == "cuda" and torch.cuda.is_available()`` in ``__init__`` tested in another method
  whose branches complete: the flag is followed across the methods of the class;
* ``assert device == "cuda"`` in the ``except (AttributeError, TypeError)`` fallback of a call of a torch API that
  the pinned torch has: the old-torch fallback is not the path taken.

VALID (still flagged): a hard-coded ``.cuda()`` and ``torch.zeros(3, device="cuda")`` stay ``needs-migration``; so do
a parameter's default device (``def fill(shape, device="cuda")``, ``if device is None: device = "cuda"``): defaults are
read as written, and a caller that leaves it out gets CUDA; a
first choice that the later availability test only reports (``print``) stays ``needs-migration``; a flag whose test
raises stays ``conditional``; the same assert in an ``except Exception`` handler stays ``conditional``.
"""

from __future__ import annotations

from helpers import library_report

LIB = {
    "__init__.py": "",
    "dev.py": """
        import torch


        def pick():
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")


        def get_device(device="auto"):
            if device == "auto":
                device = "cuda"
            device = torch.device(device)
            if device.type == torch.device("cuda").type and not torch.cuda.is_available():
                return torch.device("cpu")
            return device


        def get_device_reported(device="auto"):
            if device == "auto":
                device = "cuda"
            device = torch.device(device)
            if device.type == "cuda" and not torch.cuda.is_available():
                print("no CUDA")
            return device


        def system_info():
            return {"GPU Enabled": str(torch.cuda.is_available())}


        def set_random_seed(seed, using_cuda=False):
            torch.manual_seed(seed)


        class Algo:
            def __init__(self, device):
                self.device = device

            def seed(self, s):
                set_random_seed(s, using_cuda=self.device.type == torch.device("cuda").type)


        def fill(shape, device="cuda"):
            return torch.zeros(shape, device=device)


        def lookup_table(name, device=None):
            if device is None:
                device = "cuda"
            return torch.zeros(16, device=device)


        def local_default(name):
            device = None
            if device is None:
                device = "cuda"
            return torch.zeros(16, device=device)


        def hard():
            return torch.zeros(3).cuda()


        def hard_kw():
            return torch.zeros(3, device="cuda")
    """,
    "loader.py": """
        import torch


        class Prefetch:
            def __init__(self, device=torch.device("cpu")):
                self.device = device
                self.is_cuda = device.type == "cuda" and torch.cuda.is_available()

            def run(self, x):
                if self.is_cuda:
                    stream = torch.cuda.Stream()
                else:
                    stream = None
                return x, stream


        class Strict:
            def __init__(self, device=torch.device("cpu")):
                self.is_cuda = device.type == "cuda"

            def run(self, x):
                if not self.is_cuda:
                    raise RuntimeError("needs a GPU")
                return x
    """,
    "norm.py": """
        import torch


        def autocast_dtype(device):
            try:
                return torch.get_autocast_dtype(device)
            except (AttributeError, TypeError):
                if device == "cpu":
                    return torch.get_autocast_cpu_dtype()
                else:
                    assert device == "cuda"
                    return torch.get_autocast_gpu_dtype()


        def autocast_dtype_any_error(device):
            try:
                return torch.get_autocast_dtype(device)
            except Exception:
                assert device == "cuda"
                return torch.get_autocast_gpu_dtype()
    """,
}


def _statuses(tmp_path, kb):
    rep = library_report(tmp_path, kb, LIB, "choicelib")
    return {f["qualname"]: f["status"] for f in rep["thirdparty"]["functions"]}, rep


def test_device_choices_with_a_working_non_cuda_path_leave_the_function_supported(tmp_path, kb):
    st, rep = _statuses(tmp_path, kb)
    for fn in ("pick", "get_device", "system_info", "Algo.seed"):
        assert f"choicelib.dev.{fn}" not in st, (fn, st.get(f"choicelib.dev.{fn}"))
    first = [f for f in rep["findings"] if f["path"] == "dev.py" and f["line"] == 10]
    assert [f["severity"] for f in first] == ["advice"] and "first choice" in first[0]["message"]


def test_hard_coded_cuda_uses_still_need_migration(tmp_path, kb):
    st, _rep = _statuses(tmp_path, kb)
    assert st["choicelib.dev.hard"] == "needs-migration"
    assert st["choicelib.dev.hard_kw"] == "needs-migration"
    assert st["choicelib.dev.get_device_reported"] == "needs-migration"
    assert st["choicelib.dev.local_default"] == "needs-migration"
    assert st["choicelib.dev.fill"] == "needs-migration"           # a default is read as written
    assert st["choicelib.dev.lookup_table"] == "needs-migration"


def test_an_instance_flag_is_followed_across_the_methods_of_its_class(tmp_path, kb):
    st, rep = _statuses(tmp_path, kb)
    assert "choicelib.loader.Prefetch.__init__" not in st
    assert "choicelib.loader.Prefetch.run" not in st
    assert st["choicelib.loader.Strict.__init__"] == "conditional"
    flag = [f for f in rep["findings"] if f["path"] == "loader.py" and f["line"] == 7 and f["code"] == "NPU004"]
    assert flag and flag[0]["severity"] == "advice" and "self.is_cuda" in flag[0]["message"]


def test_an_old_torch_fallback_handler_is_not_the_path_taken(tmp_path, kb):
    st, rep = _statuses(tmp_path, kb)
    assert "choicelib.norm.autocast_dtype" not in st
    assert st["choicelib.norm.autocast_dtype_any_error"] == "conditional"
    old = [f for f in rep["findings"] if f["path"] == "norm.py" and f["line"] == 11]
    assert old and old[0]["severity"] == "info" and "fallback for a torch without" in old[0]["message"]
