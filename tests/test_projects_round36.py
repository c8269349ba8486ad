"""Project misses of round 36, VALID/INVALID fixtures of the shapes met (no project code copied)."""

from analyse.modes import run_script
from helpers import write_files


def _by(rep, api):
    return [f for f in rep["findings"] if f["api"] == api]


# ---------------------------------------------------------------- FlexAttention is no NPU attention (knowledge)

FLEX = {
    "train.py": """
        import torch
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention


        class Attention(torch.nn.Module):
            compiled = torch.compile(flex_attention)

            def forward(self, q, k, v, mask):
                return self.compiled(q, k, v, block_mask=mask)


        def causal(b, h, q, kv):
            return q >= kv


        def main():
            q = torch.randn(1, 2, 128, 64)
            mask = create_block_mask(causal, 1, 1, 128, 128)
            print(Attention()(q, q, q, mask).sum())


        if __name__ == "__main__":
            main()
    """,
}


def test_flex_attention_is_a_manual_change_where_it_is_named(tmp_path, kb):
    # VALID (old: only an "unverified" info note on create_block_mask): flex_attention raises on an NPU tensor
    # (PyTorch's device check), so the reference handed to torch.compile is a counted manual change with the
    # documented NPU attention as its replacement, and it drives the verdict
    write_files(tmp_path, FLEX)
    rep = run_script([tmp_path], kb)
    (flex,) = _by(rep, "torch.nn.attention.flex_attention.flex_attention")
    assert flex["line"] == 7 and flex["severity"] == "manual" and flex["counted"], flex
    assert "npu_fusion_attention" in flex["replacement"]
    assert "_validate_device" in flex["message"]
    drivers = [d["api"] for d in rep["summary"]["verdict"]["drivers"]]
    assert drivers[0] == "torch.nn.attention.flex_attention.flex_attention", drivers
    # the mask builder itself is plain torch code: no manual change
    assert all(f["severity"] != "manual" for f in _by(rep, "torch.nn.attention.flex_attention.create_block_mask"))


# ---------------------------------------------------------------- a type named in an annotation is no use

ANNOTATED = {
    "run.py": """
        import torch


        class Holder:
            def __init__(self):
                self.graph: torch.cuda.CUDAGraph | None = None

            def step(self, x: torch.cuda.Event) -> torch.cuda.Stream:
                return x


        def main():
            h = Holder()
            torch.cuda.synchronize()
            print(h.graph)


        if __name__ == "__main__":
            main()
    """,
}


def test_names_in_annotations_are_not_uses(tmp_path, kb):
    # INVALID (old: torch.cuda.CUDAGraph manual at line 7, Event / Stream auto at line 9): an annotation only names
    # a type; nothing in it calls the CUDA runtime. VALID: the real call at line 15 is still found.
    write_files(tmp_path, ANNOTATED)
    rep = run_script([tmp_path], kb)
    lines = {(f["api"], f["line"]) for f in rep["findings"] if f["api"].startswith("torch.cuda")}
    assert lines == {("torch.cuda.synchronize", 15)}, lines


# ---------------------------------------------------------------- PyTorch's own op namespaces are not extensions

AO_OPS = {
    "offload.py": """
        import torch
        import torch._functorch._activation_offloading.offload_ops  # noqa: F401


        def offload(x):
            cpu = torch.ops.ao.offload.default(x)
            return torch.ops.ao.wait_tensor.default(cpu, x)


        def custom(x):
            return torch.ops.myext.fused.default(x)


        if __name__ == "__main__":
            offload(torch.ones(2))
            custom(torch.ones(2))
    """,
}


def test_pytorch_activation_offloading_ops_are_not_a_compiled_extension(tmp_path, kb):
    # INVALID (old: two blockers "registered by a compiled extension"): ao::offload / ao::wait_tensor are defined
    # by PyTorch itself with device-generic implementations. VALID: a project namespace stays a blocker.
    write_files(tmp_path, AO_OPS)
    rep = run_script([tmp_path], kb)
    assert not [f for f in rep["findings"] if f["api"].startswith("torch.ops.ao.") and f["severity"] != "info"]
    (ext,) = _by(rep, "torch.ops.myext.fused.default")
    assert ext["severity"] == "blocker" and ext["line"] == 12


# ---------------------------------------------------------------- a base class imported relative to the script's folder

LOOSE = {
    "ptuning/main.py": """
        import torch
        from trainer_seq2seq import Seq2SeqTrainer


        def main():
            trainer = Seq2SeqTrainer(torch.nn.Linear(2, 2))
            trainer.train()


        if __name__ == "__main__":
            main()
    """,
    "ptuning/trainer_seq2seq.py": """
        from trainer import Trainer


        class Seq2SeqTrainer(Trainer):
            def evaluate(self):
                return self.model
    """,
    "ptuning/trainer.py": """
        import torch


        class Trainer:
            def __init__(self, model):
                self.model = model

            def train(self):
                self._save_rng()
                return self.model

            def _save_rng(self):
                if torch.cuda.is_available():
                    return torch.cuda.random.get_rng_state_all()
                return None
    """,
}


def test_methods_inherited_from_a_script_relative_base_are_reached(tmp_path, kb):
    # VALID (old: unknown, "only partly linked", grade none): `from trainer import Trainer` next to the script names
    # the folder's trainer.py, so `trainer.train()` on the subclass runs the base's method and what it calls
    write_files(tmp_path, LOOSE)
    rep = run_script([tmp_path], kb)
    (rng,) = _by(rep, "torch.cuda.random.get_rng_state_all")
    assert rng["reach"]["status"] == "reachable" and rng["counted"] and rng["line"] == 15, rng
    assert "ptuning.trainer.Trainer.train" in rng["reach"]["path"]
    (ep,) = [e for e in rep["summary"]["entry_points"] if e["path"] == "ptuning/main.py"]
    assert ep["verdict"]["effort"] == "low"


# ---------------------------------------------------------------- an option branch whose import fails loudly

CHOICE = {
    "run.py": """
        import torch


        def pick(args):
            if args.optim == "adamw":
                cls = torch.optim.AdamW
            elif args.optim == "apex":
                try:
                    from apex.optimizers import FusedAdam

                    cls = FusedAdam
                except ImportError:
                    raise ValueError("apex is not installed")
            else:
                raise ValueError(args.optim)
            return cls


        def pick_required(args):
            try:
                from apex.optimizers import FusedLAMB
            except ImportError:
                raise ValueError("apex is not installed")
            return FusedLAMB


        if __name__ == "__main__":
            print(pick(object()), pick_required(object()))
    """,
}


def test_a_loud_import_inside_an_option_branch_is_guarded_by_the_option(tmp_path, kb):
    # INVALID (old: counted, guard `ImportError` with no fallback): the import's own try/except raises, but the branch
    # runs only for one choice of `args.optim`; the other choices are the fallback. VALID: the same try/except at
    # the function's top level is still required (counted)
    write_files(tmp_path, CHOICE)
    rep = run_script([tmp_path], kb)
    apex = _by(rep, "apex.optimizers.FusedAdam")
    assert apex and all(not f["counted"] and f["guard"]["condition"] == "args.optim == 'apex'"
                        and f["guard"]["line"] == 8 for f in apex), apex
    lamb = _by(rep, "apex.optimizers.FusedLAMB")
    assert lamb and any(f["counted"] for f in lamb), lamb


# ---------------------------------------------------------------- a base class and a class attribute belong to the class

CLASS_PARTS = {
    "run.py": """
        import torch
        from torch import nn
        from torch.nn.attention.flex_attention import flex_attention


        class AvgPool3d(nn.AvgPool3d):
            def forward(self, x):
                return super().forward(x)


        class Pool(nn.AvgPool3d):
            pass


        class FlexAttention(nn.Module):
            compiled = torch.compile(flex_attention)


        def main():
            print(Pool(2)(torch.ones(1, 1, 4, 4, 4)))


        if __name__ == "__main__":
            main()
    """,
}


def test_a_base_class_and_a_class_attribute_count_where_the_class_is_used(tmp_path, kb):
    # INVALID (old: both counted, reached by importing the module): a subclass of an unsupported module class that
    # nothing builds, and a class attribute of a class that nothing builds, are not on the path. VALID: the subclass
    # the program builds (line 12) still counts
    write_files(tmp_path, CLASS_PARTS)
    rep = run_script([tmp_path], kb)
    pools = {f["line"]: f for f in _by(rep, "torch.nn.AvgPool3d")}
    assert pools[12]["counted"] and pools[12]["reach"]["status"] == "reachable", pools[12]
    assert not pools[7]["counted"] and pools[7]["reach"]["status"] != "reachable", pools[7]
    (flex,) = _by(rep, "torch.nn.attention.flex_attention.flex_attention")
    assert not flex["counted"] and flex["reach"]["status"] != "reachable", flex



# ---------------------------------------------------------------- registered or keyed classes are no use

TABLES = {
    "run.py": """
        import torch
        from torch import nn

        REGISTRY = {}


        def register(module):
            REGISTRY[module.__name__] = module


        for module in [nn.ReLU, nn.CosineEmbeddingLoss]:
            register(module)

        HOOKS = {nn.AvgPool3d: len, nn.ReLU: len}

        for cls in [nn.CosineEmbeddingLoss]:
            layer = cls()


        def main():
            print(REGISTRY, HOOKS, layer(torch.ones(2)))


        if __name__ == "__main__":
            main()
    """,
}


def test_classes_registered_or_used_as_keys_are_not_uses(tmp_path, kb):
    # INVALID (old: CosineEmbeddingLoss manual at line 12, AvgPool3d manual at line 15): a class handed to a registry by a loop
    # and a class used as a dict key (a type-keyed table) are not built there. VALID: the loop that builds its
    # variable (line 17, `cls()`) still counts
    write_files(tmp_path, TABLES)
    rep = run_script([tmp_path], kb)
    got = {(f["api"], f["line"]) for f in rep["findings"] if f["severity"] == "manual"}
    assert got == {("torch.nn.CosineEmbeddingLoss", 17)}, got
