"""Project verdicts, round 38 (script mode): per-program reach, library grades, opt-in defaults. VALID/INVALID
fixtures of the shapes met in the projects; no project code copied."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


def _ep(rep, path):
    (row,) = [e for e in rep["summary"]["entry_points"] if e["path"] == path]
    return row


def _ep_drivers(row):
    return [d["api"] for d in row["verdict"]["drivers"]]


# ---------------------------------------------------------------- a program's verdict uses its own reach

def _two_tools() -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/trainer.py": """
            import torch
            import torch.distributed as dist


            def count_params(model):
                return sum(p.numel() for p in model.parameters())


            class Trainer:
                def __init__(self, model):
                    self.model = model

                def train(self):
                    dist.init_process_group(backend="nccl")
                    torch.cuda.set_device(dist.get_rank())
                    self.model.to("cuda:{}".format(dist.get_rank()))
        """,
        "tools/train.py": """
            import torch
            from pkg.trainer import Trainer


            def main():
                Trainer(torch.nn.Linear(2, 2)).train()


            if __name__ == "__main__":
                main()
        """,
        "tools/export.py": """
            import torch
            from pkg.trainer import count_params


            def main():
                model = torch.nn.Linear(2, 2)
                print(count_params(model))
                torch.onnx.export(model, torch.randn(1, 2), "model.onnx")


            if __name__ == "__main__":
                main()
        """,
    }


def test_a_program_that_only_imports_a_module_gets_no_driver_another_program_reaches(tmp_path, kb):
    # INVALID (old: export.py was graded with the trainer's nccl/set_device findings, which are reach 'unknown' for
    # it -- it imports the module for one helper and never names Trainer -- but 'reachable' from train.py)
    write_files(tmp_path, _two_tools())
    rep = run_script([tmp_path], kb)
    (setdev,) = _by(rep, "torch.cuda.set_device")
    assert setdev["path"] == "pkg/trainer.py" and setdev["line"] == 16, setdev
    assert setdev["reach"]["status"] == "reachable" and setdev["reach"]["entry_points"] == ["tools/train.py"]
    export = _ep(rep, "tools/export.py")
    assert export["verdict"]["effort"] == "none", export["verdict"]
    assert "torch.cuda.set_device" not in _ep_drivers(export)
    assert not any("nccl" in d for d in _ep_drivers(export)), export["verdict"]["drivers"]


def test_the_program_that_calls_the_module_keeps_its_drivers(tmp_path, kb):
    # VALID: train.py builds the Trainer and runs train(): its findings count for train.py and set the project grade
    write_files(tmp_path, _two_tools())
    rep = run_script([tmp_path], kb)
    train = _ep(rep, "tools/train.py")
    assert train["verdict"]["effort"] != "none", train["verdict"]
    assert "torch.cuda.set_device" in _ep_drivers(train) or any("nccl" in d for d in _ep_drivers(train))
    (setdev,) = _by(rep, "torch.cuda.set_device")
    assert setdev["counted"]
    assert rep["summary"]["verdict"]["effort"] == train["verdict"]["effort"]



def test_a_model_class_a_config_may_build_still_counts_for_the_program_that_imports_it(tmp_path, kb):
    # VALID: serve.py imports the models module and builds its model from a config (hydra instantiate): the torch
    # module it never names may be what the config builds, so the .cuda() train.py reaches counts for it too
    write_files(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/models.py": """
            import torch


            class Net(torch.nn.Module):
                def forward(self, x):
                    return x.cuda() * 2
        """,
        "tools/train.py": """
            import torch
            from pkg.models import Net


            def main():
                print(Net()(torch.ones(2)))


            if __name__ == "__main__":
                main()
        """,
        "tools/serve.py": """
            import torch
            import pkg.models
            from hydra.utils import instantiate
            from omegaconf import OmegaConf


            def main():
                model = instantiate(OmegaConf.load("serve.yaml").model)
                print(model(torch.ones(2)))


            if __name__ == "__main__":
                main()
        """,
    })
    rep = run_script([tmp_path], kb)
    (cuda,) = [f for f in _by(rep, "torch.Tensor.cuda") if f["path"] == "pkg/models.py"]
    assert cuda["line"] == 7 and cuda["reach"]["status"] == "reachable", cuda
    serve = _ep(rep, "tools/serve.py")
    assert serve["verdict"]["effort"] == "low" and "torch.Tensor.cuda" in _ep_drivers(serve), serve["verdict"]


def _cached_helper(register: str) -> dict:
    return {
        "pkg/__init__.py": "",
        "pkg/registry.py": """
            HOOKS = {}


            def register(fn):
                HOOKS[fn.__name__] = fn
                return fn
        """,
        "pkg/dist.py": f"""
            import functools
            import torch.distributed as dist
            from pkg.registry import register


            {register}
            def gloo_group():
                if dist.get_backend() == "nccl":
                    return dist.new_group(backend="gloo")
                return dist.group.WORLD


            def world_size():
                return 1
        """,
        "tools/train.py": """
            from pkg.dist import gloo_group


            def main():
                print(gloo_group())


            if __name__ == "__main__":
                main()
        """,
        "tools/export.py": """
            from pkg.dist import world_size


            def main():
                print(world_size())


            if __name__ == "__main__":
                main()
        """,
    }


def test_a_cached_helper_another_program_calls_is_not_the_importing_programs_work(tmp_path, kb):
    # INVALID (old: export.py got the nccl test of gloo_group, reach 'unknown' for it because the function is
    # decorated, 'reachable' from train.py): functools.lru_cache registers nothing, so export.py never runs it
    write_files(tmp_path, _cached_helper("@functools.lru_cache()"))
    rep = run_script([tmp_path], kb)
    (cmp,) = [f for f in rep["findings"] if f["code"] == "NPU102"]
    assert cmp["path"] == "pkg/dist.py" and cmp["line"] == 9 and cmp["reach"]["entry_points"] == ["tools/train.py"]
    assert _ep(rep, "tools/export.py")["verdict"]["effort"] == "none"
    assert _ep(rep, "tools/train.py")["verdict"]["effort"] != "none"


def test_a_registered_helper_another_program_calls_still_counts_for_the_importing_program(tmp_path, kb):
    # VALID: a registering decorator may put the function where the importing program runs it (a hook table)
    write_files(tmp_path, _cached_helper("@register"))
    rep = run_script([tmp_path], kb)
    assert _ep(rep, "tools/export.py")["verdict"]["effort"] != "none"


def test_code_a_real_dynamic_call_reaches_is_no_guess_though_a_helper_class_also_leads_there(tmp_path, kb):
    # VALID: serve.py calls getattr() on the module, which may run any of its classes; the Timer class is also a
    # helper never named there (a guess), but the real dynamic call keeps its work counted for serve.py
    write_files(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": """
            import torch


            class Timer:
                def stop(self):
                    torch.cuda.synchronize()
        """,
        "tools/train.py": """
            from pkg.util import Timer


            def main():
                Timer().stop()


            if __name__ == "__main__":
                main()
        """,
        "tools/serve.py": """
            import sys
            import pkg.util


            def main():
                getattr(pkg.util, sys.argv[1])().stop()


            if __name__ == "__main__":
                main()
        """,
    })
    rep = run_script([tmp_path], kb)
    (sync,) = _by(rep, "torch.cuda.synchronize")
    assert sync["path"] == "pkg/util.py" and sync["line"] == 7 and sync["reach"]["status"] == "reachable", sync
    serve = _ep(rep, "tools/serve.py")
    assert "torch.cuda.synchronize" in _ep_drivers(serve), serve["verdict"]

# ---------------------------------------------------------------- library grades (data/third_party_libs.yaml)

def _lib_program(tmp_path, kb, body: str):
    write_files(tmp_path, {"run.py": body})
    rep = run_script([tmp_path], kb)
    return rep, _ep(rep, "run.py")


def test_a_triton_kernel_library_is_manual_work_not_a_blocker(tmp_path, kb):
    # INVALID (old: liger_kernel sat in the blocker group of CUDA kernel libraries, so the program was blocked):
    # Liger-Kernel is Triton only, which Triton-Ascend compiles: a port, no kernel to write
    rep, row = _lib_program(tmp_path, kb, """
        import torch
        from liger_kernel.transformers import LigerRMSNorm


        def main():
            norm = LigerRMSNorm(64)
            print(norm(torch.randn(2, 64)))


        if __name__ == "__main__":
            main()
    """)
    liger = [f for f in rep["findings"] if f["api"].startswith("liger_kernel")]
    assert liger and all(f["severity"] == "manual" for f in liger), [(f["api"], f["severity"]) for f in liger]
    assert any(f["line"] == 7 and f["counted"] for f in liger), [(f["api"], f["line"]) for f in liger]
    assert row["verdict"]["effort"] == "medium", row["verdict"]


def test_a_cuda_kernel_library_stays_a_blocker(tmp_path, kb):
    # VALID: mamba_ssm (CUDA kernels of its own) keeps the blocker grade that Liger left
    rep, row = _lib_program(tmp_path, kb, """
        import torch
        from mamba_ssm import Mamba


        def main():
            layer = Mamba(d_model=64)
            print(layer(torch.randn(1, 8, 64)))


        if __name__ == "__main__":
            main()
    """)
    assert any(f["api"].startswith("mamba_ssm") and f["severity"] == "blocker" for f in rep["findings"])
    assert row["verdict"]["effort"] == "blocked", row["verdict"]


def test_a_program_built_around_a_tensorrt_engine_is_high(tmp_path, kb):
    # INVALID (old: torch2trt was unknown to the data and tensorrt graded a plain replacement, medium): a TensorRT
    # engine has no NPU equivalent, so the conversion and the engine's runtime are restructured
    rep, row = _lib_program(tmp_path, kb, """
        import torch
        import tensorrt as trt
        from torch2trt import torch2trt


        def main():
            model = torch.nn.Linear(4, 4).eval()
            x = torch.ones(1, 4)
            model_trt = torch2trt(model, [x], fp16_mode=True, log_level=trt.Logger.INFO)
            torch.save(model_trt.state_dict(), "model_trt.pth")


        if __name__ == "__main__":
            main()
    """)
    conv = [f for f in rep["findings"] if f["api"].startswith("torch2trt") and f["line"] == 10]
    assert conv and conv[0]["severity"] == "manual" and conv[0].get("rework") == "high" and conv[0]["counted"], conv
    assert row["verdict"]["effort"] == "high", row["verdict"]


def test_a_third_party_gpu_simulator_is_high_not_blocked(tmp_path, kb):
    # INVALID (old: Isaac Gym graded blocker as if a kernel had to be written): the simulator is a third-party
    # library with a CPU pipeline; the program is restructured around it (high)
    rep, row = _lib_program(tmp_path, kb, """
        import torch
        from isaacgym import gymapi


        def main():
            gym = gymapi.acquire_gym()
            sim = gym.create_sim(0, 0, gymapi.SIM_PHYSX, gymapi.SimParams())
            print(sim, torch.zeros(1))


        if __name__ == "__main__":
            main()
    """)
    isaac = [f for f in rep["findings"] if f["api"].startswith("isaacgym")]
    assert isaac and all(f["severity"] == "manual" and f.get("rework") == "high" for f in isaac), isaac
    assert row["verdict"]["effort"] == "high", row["verdict"]
