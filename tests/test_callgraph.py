"""Call graph: resolution across modules, dispatch, propagation, script-mode chains."""

import textwrap
from pathlib import Path

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from analyse.callgraph import build_graph, propagate, summarise_module
from analyse.project import parse_source
from analyse.resolve import ProjectIndex, Resolver


def _summaries(tmp_path: Path, files: dict, pkg: str = "lib"):
    root = tmp_path / pkg
    out = []
    index = ProjectIndex()
    parsed = []
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
        parts = [pkg] + list(Path(rel).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modname = ".".join(parts)
        sf, err = parse_source(p.read_text(), p, rel, modname)
        assert err is None, err
        r = Resolver(sf.tree, modname, index, is_package=sf.is_package_init)
        index.add_module(modname, sf.tree, r)
        parsed.append((sf, r))
    for sf, r in parsed:
        out.append(summarise_module(sf.tree, sf.modname, sf.relpath, r, sf.is_package_init, len(sf.lines)))
    return out


def test_edges_across_modules_reexports_self_super_and_apply(tmp_path):
    ss = _summaries(tmp_path, {
        "__init__.py": "from .api import entry\nfrom .impl import *\n",
        "impl.py": """
            import functools
            from torch.autograd import Function
            __all__ = ["helper", "Op"]

            def helper(x):
                def inner(y):
                    return leaf(y)
                return inner(x)

            def leaf(y):
                return y

            class Op(Function):
                @staticmethod
                def forward(ctx, x):
                    return leaf(x)

                @staticmethod
                def backward(ctx, g):
                    return g

            op = Op.apply
            fast = functools.partial(helper, 1)
        """,
        "api.py": """
            from . import helper
            from .impl import op, fast

            def entry(x):
                return helper(x) + op(x) + fast()

            class Base:
                def run(self):
                    return self.step()

                def step(self):
                    return 1

            class Child(Base):
                def step(self):
                    return super().step() + entry(2)
        """,
    })
    cg = build_graph(ss)
    g = cg.graph
    assert g.has_edge("lib.api.entry", "lib.impl.helper")            # star re-export through __init__
    assert g.edges["lib.api.entry", "lib.impl.helper"]["line"] == 6
    assert g.has_edge("lib.impl.helper", "lib.impl.helper.inner")   # nested function
    assert g.has_edge("lib.impl.helper.inner", "lib.impl.leaf")
    assert g.has_edge("lib.api.entry", "lib.impl.Op.forward")       # Function.apply -> forward/backward
    assert g.has_edge("lib.api.entry", "lib.impl.Op.backward")
    assert g.has_edge("lib.api.Base.run", "lib.api.Base.step")      # self dispatch (MRO)
    assert g.has_edge("lib.api.Child.step", "lib.api.Base.step")    # super()
    assert g.has_edge("lib.api.Child.step", "lib.api.entry")
    assert "lib.api.<module>" in g
    # functools.partial alias at module level
    assert any(c == "lib.impl.helper" for c in g.successors("lib.api.entry"))


def test_propagation_shortest_via_cycles_and_status_priority():
    g = nx.DiGraph()
    g.add_edges_from([("a", "b"), ("b", "c"), ("c", "b"), ("b", "root"), ("a", "u"), ("x", "u"),
                      ("r1", "r1")])
    roots = {"root": {"unsupported": ["torch.cuda.nvtx.range"]}, "u": {"unknown": ["torch.special.zeta"]},
             "r1": {"needs-migration": ["torch.Tensor.cuda"]}}
    st = propagate(g, roots)
    assert st["a"].status == "unsupported"          # reaches both: unsupported wins
    assert st["a"].via == ["a", "b", "root"]
    assert st["c"].via == ["c", "b", "root"]        # through the cycle
    assert st["c"].reasons == ["torch.cuda.nvtx.range"]
    assert st["x"].status == "unknown" and st["x"].reasons == ["torch.special.zeta"]
    assert st["r1"].status == "needs-migration"     # self-recursion
    assert "d" not in st


def test_propagation_reuses_the_condensation_of_an_unchanged_graph_only(monkeypatch):
    g = nx.DiGraph()
    g.add_edges_from([("a", "b"), ("b", "a"), ("b", "root"), ("c", "a")])
    roots = {"root": {"unsupported": ["torch.cuda.nvtx.range"]}}
    made = []
    real = nx.condensation
    monkeypatch.setattr(nx, "condensation", lambda graph: made.append(1) or real(graph))
    held = [None]
    first = propagate(g, roots, held)
    again = propagate(g, dict(roots, c={"unknown": ["torch.special.zeta"]}), held)
    assert len(made) == 1                                   # same graph: condensed once
    assert again["c"].status == "unsupported" and again["c"].via == ["c", "a", "b", "root"]
    assert {n: s.status for n, s in first.items()} == {n: s.status for n, s in propagate(g, roots).items()}
    grown = propagate(g, {"new": {"unknown": ["torch.special.zeta"]}, **roots}, held)
    assert len(made) == 3 and grown["new"].status == "unknown"   # a root node added: condensed again


def test_script_mode_cross_file_chain(tmp_path, kb):
    from analyse import pipeline
    from analyse.callgraph import add_chains

    (tmp_path / "proj" / "utils").mkdir(parents=True)
    (tmp_path / "proj" / "utils" / "__init__.py").write_text("from .prof import profile_step\n")
    (tmp_path / "proj" / "utils" / "prof.py").write_text(textwrap.dedent("""
        import torch

        def _mark(name):
            torch.cuda.nvtx.range_push(name)

        def profile_step(i):
            _mark(str(i))
    """))
    (tmp_path / "proj" / "train.py").write_text(textwrap.dedent("""
        from utils import profile_step

        def main():
            for i in range(3):
                profile_step(i)

        if __name__ == "__main__":
            main()
    """))
    result = pipeline.run([tmp_path / "proj"], kb)
    findings = add_chains(result)
    nvtx = [f for f in findings if f.api == "torch.cuda.nvtx.range_push"]
    assert nvtx, [f.api for f in findings]
    f = nvtx[0]
    assert f.path == "utils/prof.py"
    assert f.chain == ("train.py:6 utils.prof.profile_step", "utils/prof.py:8 utils.prof._mark",
                       "utils/prof.py:5 torch.cuda.nvtx.range_push")
    # findings in the script itself carry no chain
    assert all(not x.chain for x in findings if x.path == "train.py")


def test_npu_evidence_needs_the_word_npu_not_the_npu_inside_input(tmp_path):
    """"input" holds the letters n-p-u: a module that only says "input" has no NPU evidence (its
    InputBackend is not an NPU backend), and a branch on ``input.device.type == "xpu"`` is code for
    another accelerator."""
    from analyse.callgraph import other_device_only
    from analyse.syntax import NPU_WORD

    [plain, npu] = _summaries(tmp_path, {
        "accelerator/plain.py": """
            class InputBackend(Backend):
                def run(self, input):
                    return input
        """,
        "accelerator/real.py": """
            import torch_npu

            class NpuTrainerBackend(Backend):
                pass

            def pick(x):
                if x.device.type == "npu":
                    return 1
                return is_npu_available()
        """,
    })
    assert plain.npu_evidence == {}
    assert sorted(npu.npu_evidence) == ["accelerator", "availability", "device_branch", "device_type", "torch_npu"]
    assert npu.npu_evidence["accelerator"] == ["accelerator/real.py:4: class NpuTrainerBackend(Backend)"]
    assert other_device_only("device-branch", 'input.device.type == "xpu"')
    assert not other_device_only("device-branch", 'x.device.type in ("xpu", "npu")')
    assert [bool(NPU_WORD.search(w)) for w in ("inputs", "NPUTrainer", "multinpu", "Ascend", "throughput")] \
        == [False, True, True, True, False]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["npu", "NPU", "Npu", "input", "INPUT", "inpu", "nput", "i", "t", "ascend", "ASCEND",
                                 "aſcend", "ascen", "İnput", "ı", "K", " ", "\n", "_", "x", "é", "中"]), max_size=12)
       | st.text(max_size=40))
def test_mentions_npu_answers_as_the_pattern_does(text):
    """The fast word test (plain-word prefilter on ASCII text) agrees with NPU_WORD's own search on any text:
    words glued together, mixed case, non-ASCII case folding (long s, dotted capital I)."""
    from analyse.syntax import NPU_WORD, mentions_npu

    if isinstance(text, list):
        text = "".join(text)
    assert mentions_npu(text) == bool(NPU_WORD.search(text))


def test_lowering_keeps_every_match_of_the_npu_pattern():
    """mentions_npu's prefilter lowers the text: every character that the case-insensitive pattern takes for a
    letter of "npu" / "ascend" must lower to that letter (the long s, which does not, is checked apart)."""
    import re
    import sys

    odd = [chr(cp) for cp in range(sys.maxunicode + 1) for letter in "npuascend"
           if chr(cp).lower() != letter and re.fullmatch("(?i)" + letter, chr(cp))]
    assert odd == ["\u017f"]
    # the neighbours that make "npu" part of "input": lowered, a character ends with "i" / starts with "t" only
    # when the pattern takes it for that letter
    assert not [chr(cp) for cp in range(sys.maxunicode + 1)
                if (chr(cp).lower().endswith("i") and not re.fullmatch("(?i)i", chr(cp)))
                or (chr(cp).lower().startswith("t") and not re.fullmatch("(?i)t", chr(cp)))]


def _nested_ranges(draw_ops):
    """Function ranges as Python code nests them: each range inside its parent or after its sibling."""
    ranges, stack, line = [], [], 1
    for i, op in enumerate(draw_ops):
        if op == 0 or not stack:            # open a function here
            stack.append((f"m.f{i}", line))
            line += 1
        elif op == 1:                       # close the innermost open one
            q, start = stack.pop()
            ranges.append((q, start, line))
            line += 1
        else:                               # a statement line
            line += op - 1
    while stack:
        q, start = stack.pop()
        ranges.append((q, start, line))
        line += 1
    return ranges, line


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4), max_size=60))
def test_function_locator_finds_the_innermost_enclosing_function(ops):
    """FunctionLocator bisects and climbs: the answer must be the innermost range holding the line (the last of
    equal ranges), else the module's pseudo-function, for every line of any nesting."""
    from types import SimpleNamespace

    from analyse.callgraph import MODULE_FN, FunctionLocator

    ranges, end = _nested_ranges(ops)
    functions = {f"m.{MODULE_FN}": (1, end)}
    functions.update({q: (a, b) for q, a, b in ranges})
    loc = FunctionLocator([SimpleNamespace(relpath="m.py", functions=functions)])
    for line in range(0, end + 2):
        holding = [(a, b, q) for q, a, b in ranges if a <= line <= b]
        want = max(holding, key=lambda t: (t[0], -t[1]))[2] if holding else f"m.{MODULE_FN}"
        assert loc.locate("m.py", line) == want, (line, ranges)
    assert loc.locate("other.py", 3) is None


# a package that star-imports a subpackage, which star-imports its modules (nn/functional/__init__ -> .conv -> .kmap)
NESTED_STAR_SHAPE = {
    "__init__.py": "",
    "functional/__init__.py": "from .conv import *\n",
    "functional/conv/__init__.py": "from .kmap import *\nfrom .config import Flow\n",
    "functional/conv/config.py": """
        class Flow:
            pass

        def default_config():
            return {}
    """,
    "functional/conv/kmap.py": """
        def build_map(x):
            return x
    """,
    "user.py": """
        from . import functional as F

        def run(x):
            return F.build_map(x)
    """,
}


def test_a_name_star_imported_through_two_packages_resolves(tmp_path):
    # VALID: functional exports what functional.conv star-imports from functional.conv.kmap
    g = build_graph(_summaries(tmp_path, NESTED_STAR_SHAPE))
    assert g.linker.canonical("lib.functional.build_map") == ("def", "lib.functional.conv.kmap.build_map")
    assert g.linker.canonical("lib.user.F.build_map")[0] == "def"
    # the submodule the subpackage's __init__ imports is handed on by the star import as well
    assert g.linker.canonical("lib.functional.config.default_config") == ("def", "lib.functional.conv.config.default_config")


def test_a_nested_star_import_under_an_explicit_all_exports_only_the_all(tmp_path):
    # INVALID: a subpackage with __all__ exports only what it lists, not what its own star import brings
    files = dict(NESTED_STAR_SHAPE, **{"functional/conv/__init__.py": "from .kmap import *\nfrom .config import Flow\n__all__ = ['other']\n"})
    g = build_graph(_summaries(tmp_path, files))
    assert g.linker.canonical("lib.functional.build_map")[0] != "def"
    assert g.linker.canonical("lib.functional.config.default_config")[0] != "def"


def test_a_submodule_name_a_star_import_rebinds_to_a_function_resolves_to_the_function(tmp_path):
    # VALID: `from .to_dense import *` in utils rebinds utils.to_dense to the function the submodule defines
    g = build_graph(_summaries(tmp_path, {
        "__init__.py": "",
        "utils/__init__.py": "from .to_dense import *\n",
        "utils/to_dense.py": "def to_dense(x):\n    return x\n",
    }))
    assert g.linker.canonical("lib.utils.to_dense") == ("def", "lib.utils.to_dense.to_dense")


def test_a_submodule_no_star_import_rebinds_stays_a_module(tmp_path):
    # INVALID: the package star-imports a sibling that defines no such name: utils.helpers is the module
    g = build_graph(_summaries(tmp_path, {
        "__init__.py": "",
        "utils/__init__.py": "from .other import *\n",
        "utils/other.py": "def other(x):\n    return x\n",
        "utils/helpers.py": "def helpers(x):\n    return x\n",
    }))
    assert g.linker.canonical("lib.utils.helpers") == ("module", "lib.utils.helpers")
