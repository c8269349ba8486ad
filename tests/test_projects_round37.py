"""Project misses of round 37 (script mode), VALID/INVALID fixtures of the shapes met (no project code copied)."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _drivers(rep):
    return [d["api"] for d in rep["summary"]["verdict"]["drivers"]]


# ---------------------------------------------------------------- a module constant reads as written

def _kernel_demo(flag_lines: str) -> dict:
    return {
        "kernels/scan.cu": """
            __global__ void scan_forward(const float* x, float* y) { y[0] = x[0]; }
        """,
        "demo.py": f"""
            import sys
            import torch

{flag_lines}

            if FAST_KERNEL:
                from torch.utils.cpp_extension import load
                load(name="scanop", sources=["kernels/scan.cu"], is_python_module=False)

                def scan(x):
                    return torch.ops.scanop.forward(x)
            else:
                def scan(x):
                    return torch.cumsum(x, 0)


            def main():
                x = torch.randn(8).cuda()
                print(scan(x))


            if __name__ == "__main__":
                main()
        """,
    }


def test_a_module_constant_set_to_true_takes_its_branch(tmp_path, kb):
    # VALID (old: "depends on `FAST_KERNEL` (a value the analysis cannot see)", conditional with a fallback, low):
    # a name bound once at module level to a literal is read as written, so the JIT build of the .cu runs
    write_files(tmp_path, _kernel_demo("            FAST_KERNEL = True  # False: slow path"))
    rep = run_script([tmp_path], kb)
    (load,) = _by(rep, "torch.utils.cpp_extension.load")
    assert load["line"] == 9 and load["counted"], load
    assert load["guard"]["on_path"] == {"transfer_to_npu": "on", "no_transfer": "on"}, load["guard"]
    assert "cannot see" not in load["guard"].get("depends_on", "")
    (op,) = _by(rep, "torch.ops.scanop.forward")
    assert op["counted"], op
    assert rep["summary"]["verdict"]["effort"] in ("high", "blocked")
    assert _drivers(rep)[0] in ("torch.utils.cpp_extension.load", "torch.ops.scanop.forward"), _drivers(rep)


def test_a_module_constant_set_to_false_leaves_the_kernel_off(tmp_path, kb):
    # INVALID: the same constant written False keeps the build off the path (the pure-torch branch runs)
    write_files(tmp_path, _kernel_demo("            FAST_KERNEL = False"))
    rep = run_script([tmp_path], kb)
    (load,) = _by(rep, "torch.utils.cpp_extension.load")
    assert not load["counted"], load
    assert rep["summary"]["verdict"]["effort"] == "low"


def test_a_reassigned_or_argv_driven_flag_stays_unknown(tmp_path, kb):
    # INVALID: a second binding (argv-driven) or a function's `global` rebinding leaves the value unseen
    for lines in ("            FAST_KERNEL = True\n            if len(sys.argv) > 1:\n                FAST_KERNEL = False",
                  "            FAST_KERNEL = '--fast' in sys.argv",
                  "            FAST_KERNEL = True\n\n\n            def slow():\n                global FAST_KERNEL\n"
                  "                FAST_KERNEL = False"):
        write_files(tmp_path, _kernel_demo(lines))
        rep = run_script([tmp_path], kb)
        (load,) = _by(rep, "torch.utils.cpp_extension.load")
        assert load["guard"]["on_path"]["transfer_to_npu"] == "conditional", (lines, load["guard"])
        assert not load["counted"], load
