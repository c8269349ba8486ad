"""Name, type and string resolution feeding the passes."""

import textwrap

from analyse.project import parse_source
from analyse.resolve import ProjectIndex, Resolver
from astroid import nodes
from pathlib import Path

from tests.helpers import analyse_source, codes_by_line


def _resolver(src, modname="pkg.mod", is_package=False):
    sf, err = parse_source(textwrap.dedent(src), Path("m.py"), "m.py", modname)
    assert err is None
    index = ProjectIndex()
    r = Resolver(sf.tree, modname, index, is_package=is_package)
    index.add_module(modname, sf.tree, r)
    return sf.tree, r


def _calls(tree):
    return list(tree.nodes_of_class(nodes.Call))


def test_import_aliases_and_attribute_chains():
    tree, r = _resolver("""
        import torch.nn as nn
        from torch.cuda import amp
        from torch import distributed as dist
        import torch
        F = torch.nn.functional
        nn.Linear(1, 2)
        amp.GradScaler()
        dist.init_process_group('nccl')
        F.relu(x)
        torch.cuda.synchronize()
    """)
    assert [r.call_target(c) for c in _calls(tree)] == [
        "torch.nn.Linear", "torch.cuda.amp.GradScaler", "torch.distributed.init_process_group",
        "torch.nn.functional.relu", "torch.cuda.synchronize"]


def test_relative_imports():
    tree, r = _resolver("""
        from . import _C
        from ..ops import nms as N
        _C.roi_align()
        N()
    """, modname="pkg.sub.mod")
    assert [r.call_target(c) for c in _calls(tree)] == ["pkg.sub._C.roi_align", "pkg.ops.nms"]


def test_tensor_and_module_types():
    tree, r = _resolver("""
        import torch
        import torch.nn as nn
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
            def forward(self, x):
                self.fc.cuda()
                return x.nonzero()
        t = torch.randn(3)
        t.unique()
        m = Net()
        m.cuda()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        opt.step()
    """)
    targets = [r.call_target(c) for c in _calls(tree)]
    assert "torch.nn.Linear.cuda" in targets
    assert "torch.Tensor.nonzero" in targets
    assert "torch.Tensor.unique" in targets
    assert "pkg.mod.Net.cuda" in targets
    assert "torch.optim.SGD.step" in targets


def test_strings_through_assignments_fstrings_and_argparse():
    tree, r = _resolver("""
        import argparse, torch
        p = argparse.ArgumentParser()
        p.add_argument('--dist-backend', default='nccl')
        args = p.parse_args()
        rank = 0
        dev = 'cuda' if torch.cuda.is_available() else 'cpu'
        torch.device(f'cuda:{rank}')
        torch.device(dev)
        print(args.dist_backend)
        torch.device('cuda:' + str(rank))
        torch.device('cuda:{}'.format(rank))
    """)
    calls = [c for c in _calls(tree) if r.call_target(c) in ("torch.device", "builtins.print")]
    vals = [r.strings(c.args[0]) for c in calls]
    assert vals[0] == {"cuda:{}"}  # non-string parts stay placeholders
    assert vals[1] == {"cuda", "cpu"}
    assert vals[2] == {"nccl"}
    assert vals[3] == {"cuda:{}"}
    assert vals[4] == {"cuda:{}"}


def test_comments_docstrings_and_logs_are_not_findings(tmp_path, kb):
    result = analyse_source(tmp_path, '''
        """Train on cuda with nccl."""
        import logging
        import torch
        # torch.cuda.synchronize()
        log = logging.getLogger(__name__)

        def f():
            """Moves everything to 'cuda'."""
            log.info("using cuda device %s", "cuda:0")
            print("cuda")
            raise RuntimeError("cuda")
    ''', kb)
    assert [f for f in result.findings if f.category in ("cuda-api", "distributed")] == []


def test_device_literal_severity(tmp_path, kb):
    result = analyse_source(tmp_path, """
        import torch
        x = torch.zeros(3, device='cuda')
        y = x.to('cuda:1')
        if str(x.device).startswith('cuda'):
            pass
        assert x.device.type != 'cuda'
    """, kb)
    by = {(f.line, f.code): f for f in result.findings if f.category == "cuda-api"}
    assert by[(3, "NPU003")].severity == "auto"
    assert by[(4, "NPU003")].severity == "auto"
    assert by[(5, "NPU004")].severity == "manual"
    assert by[(7, "NPU004")].severity == "manual"


def test_fingerprint_survives_unrelated_line_shift(tmp_path, kb):
    src = "import torch\ntorch.cuda.synchronize()\n"
    a = analyse_source(tmp_path / "a", src, kb)
    b = analyse_source(tmp_path / "b", "import os\n\n# comment\n" + src, kb)
    ida = {f.api: f.id for f in a.findings}
    idb = {f.api: f.id for f in b.findings}
    assert ida["torch.cuda.synchronize"] == idb["torch.cuda.synchronize"]
    line_b = [f.line for f in b.findings if f.api == "torch.cuda.synchronize"]
    assert line_b == [5]


def test_own_bindings_are_the_lookups_assignments_and_never_need_the_builtins_module():
    from analyse.syntax import bound_around, lookup, own_bindings

    tree = parse_source(textwrap.dedent("""
        import torch
        COUNT = 0

        def outer(x):
            scale = 2

            def inner(y):
                global COUNT
                COUNT = int(y) * scale
                return len(x), __file__, torch, undefined_name, COUNT
            return inner
    """), Path("m.py"), "m.py", "m")[0].tree
    names = {n.name: n for n in tree.nodes_of_class(nodes.Name)}
    for name in ("scale", "x", "y", "COUNT", "torch"):
        assert bound_around(names[name], name)
        assert list(own_bindings(names[name], name)) == list(lookup(names[name], name)[1]) != []
    for name in ("int", "len", "__file__", "undefined_name"):
        assert not bound_around(names[name], name)
        assert own_bindings(names[name], name) == ()
    assert [d.lineno for d in own_bindings(names["scale"], "scale")] == [6]


def test_a_run_over_builtin_calls_never_builds_astroids_builtins_module(tmp_path):
    """Building astroid's builtins module costs a tenth of a second per process: casts and len() calls
    (asked about by the dynamic-shape, type and extension lookups) must not need it."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import torch

        def step(batch, n):
            k = int(n) + len(batch)
            m = float(k)
            mask = batch > 0
            idx = torch.nonzero(mask)
            return batch[mask].view(max(k, 1), -1), idx, str(m), build(k)
    """))
    code = ("import sys, astroid; from pathlib import Path; from analyse.pipeline import run, Settings; "
            "from analyse.knowledge import load_knowledge; "
            "r = run([Path(sys.argv[1])], load_knowledge(), settings=Settings(jobs=1, cache_dir=None)); "
            "print(len(r.findings), 'builtins' in astroid.MANAGER.astroid_cache)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    found, built = out.stdout.split()
    assert int(found) > 0 and built == "False", out.stdout


# syntax.module_binding answers astroid's lookup for a module-level name bound once at the top level and used
# in a body; every other case goes to astroid. Each use below is one way astroid's answer could differ.
_MODULE_BINDING_CASES = '''
import os
from typing import Optional
try:
    import numpy as np

    def in_try():
        return np.zeros(1), helper
except ImportError:
    np = None

if os.name == "nt":
    def pick():
        return "win"
else:
    def pick():
        return "posix"

early = [Optional for _ in range(2)]

def helper(x=Optional, *, y=os) -> Optional:
    return x, y, counter, os, pick, Holder

@helper
def decorated():
    return helper

def bump():
    global counter
    counter = counter + 1
    return counter

counter = 0

class Holder(dict):
    os = "shadowed in the class body"
    value = [Optional for _ in range(2)]

    def method(self, z=Optional):
        return os, z, Holder, helper, (lambda q=os: q)(), [Optional for _ in self]

    @staticmethod
    def nested():
        def inner(w=Optional):
            Optional = 1
            return Optional, w, os
        return inner, lambda: helper

def helper2():
    import os
    return os, Optional

class Holder(list):
    pass

too_early = later_import.x
import later_import
import json; json.dumps(1)
try:
    import yaml
    yaml.safe_load("")
except ImportError:
    yaml.safe_load
else:
    yaml.dump
if os.name:
    import shutil
    if shutil:
        shutil.copy
else:
    shutil.move
shutil.rmtree
class Late(Base):
    pass
class Base(os.PathLike):
    def run(self, n: Optional = None) -> "Base":
        return n
def self_default(f=self_default):
    return f
@json.dumps
class Decorated(Base, metaclass=type):
    pass
@helper(lambda: Registered)
class Registered:
    pass
'''


def _answered(source: str, fast_path) -> dict:
    """Check :func:`analyse.syntax.lookup` against astroid's own lookup on every name of *source*; return
    ``{(line, name): binding line}`` of the names that *fast_path* answers without astroid."""
    from analyse.syntax import lookup

    tree = parse_source(source, Path("m.py"), "m.py", "m")[0].tree
    out = {}
    for n in tree._npu_preorder:
        if type(n) is not nodes.Name:
            continue
        want = n.lookup(n.name)
        got = lookup(n, n.name)
        assert got[0] is want[0] and [id(d) for d in got[1]] == [id(d) for d in want[1]], (n.lineno, n.name)
        hit = fast_path(n, n.name)
        if hit is not None:
            out[(n.lineno, n.name)] = hit[1][0].lineno
    return out


def test_module_binding_answers_as_astroids_lookup_does():
    from analyse.syntax import module_binding

    fast = set(_answered(_MODULE_BINDING_CASES, module_binding))
    # one top-level binding used in a body (a function's, a method's, a lambda's, a comprehension's in a class),
    # or used in the module's frame after the binding in the same statement list (the module's body, a try's body),
    # or used in a def's or class's header (defaults, annotations, decorators, bases: the frame around it)
    assert fast == {(8, "helper"), (22, "os"), (26, "helper"), (37, "Optional"), (40, "helper"), (40, "Optional"),
                    (47, "helper"), (51, "Optional"),
                    (12, "os"), (19, "Optional"), (58, "json"), (61, "yaml"), (66, "os"), (68, "shutil"),
                    (21, "Optional"), (21, "os"), (24, "helper"), (39, "Optional"), (75, "os"), (76, "Optional"),
                    (80, "json"), (81, "Base"), (83, "helper")}
    # never: bound in a try (np) or in if/else branches (pick), bound twice (Holder), bound by a plain assignment
    # (counter), a name a class body or a function binds again (os in Holder's methods, os in helper2, Optional in
    # inner: its default too); in the module's frame: a use before the import (a base before its class, a def's
    # own name as its default or in its own decorator), in the handler or else block of the try that imports, in another branch or block
    # than the import's (astroid filters those by line and branch)
    assert not fast & {(8, "np"), (22, "pick"), (22, "Holder"), (22, "counter"), (40, "os"), (44, "Optional"),
                       (46, "os"), (51, "os"), (56, "later_import"), (63, "yaml"), (65, "yaml"), (69, "shutil"),
                       (71, "shutil"), (72, "shutil"), (73, "Base"), (78, "self_default"), (83, "Registered")}


_FRAME_BINDING_CASES = '''
def f(a, *args, b=1, **kw):
    x = a + 1
    y, (z, *rest) = x, (a, b)
    print(x, y, z, rest, args, kw)
    for i in range(x):
        print(i, x)
    else:
        i
    i
    if a:
        w = 1
        w
    else:
        w
    try:
        t = 1
        t
    except ValueError:
        t
    else:
        t
    q = 1
    q = q + 1
    v = [v2 + x for v2 in range(x)]
    g = lambda: x
    def inner(p=x):
        return p, x
    class K:
        attr = x
    early
    early = 2
    s = s
    for j, (k, m) in enumerate(kw):
        j, k, m
    with open(a) as h:
        h
    return v, g, inner, K, q, w, t, s


def forward(self, x, *rest):
    x = self.proj(x)
    y = x
    x += 1
    if y:
        x = x * 2
    z = x
    return z


def chain(x, scale):
    x = self.a(x)
    x, scale = self.b(x), scale * 2
    x = self.c(x) + scale
    return x, scale, rest


def reads_first():
    print(v)
    v = 1
    v = 2
    return v
'''


def test_frame_binding_answers_as_astroids_lookup_does():
    from analyse.syntax import frame_binding

    answered = _answered(_FRAME_BINDING_CASES, frame_binding)
    fast = set(answered)
    chosen = {(line, name, at) for (line, name), at in answered.items() if line > 40}
    # bound once in the function: a parameter (*args and **kw too) used in the body; a plain or unpacking
    # assignment used later in its statement list or a block in it (a comprehension's iterable included); a
    # loop variable in the loop's body; an inner function's parameter in its body
    assert {u for u in fast if u[0] <= 38} == {
        (3, "a"), (4, "a"), (4, "b"), (4, "x"), (5, "args"), (5, "kw"), (5, "rest"), (5, "x"), (5, "y"), (5, "z"),
        (6, "x"), (7, "i"), (7, "x"), (11, "a"), (13, "w"), (18, "t"), (25, "x"), (28, "p"), (34, "kw"), (35, "j"),
        (35, "k"), (35, "m"), (36, "a"), (38, "g"), (38, "s"), (38, "v"), (24, "q"), (38, "q"),
        # a lone assignment in another block, used where no branch excludes it: a try's body binding seen in
        # its else block and after it, an if's body binding after the if (astroid's filter keeps it)
        (22, "t"), (38, "t"), (38, "w")}
    # never: a loop variable in the loop's else or after it; a name bound in an exclusive branch (the if's body
    # for its else, the try's body for its handler); a use in the binding's own statement
    # (s = s) or before it; a use in a lambda, a class body, or a function that does not bind the name (inner's
    # x: astroid looks in the enclosing function); a default (looked up outside); a `with` target
    assert not fast & {(9, "i"), (10, "i"), (15, "w"), (20, "t"), (26, "x"), (27, "x"), (28, "x"),
                       (30, "x"), (31, "early"), (33, "s"), (37, "h")}
    # bound several times, by parameters and `=` / `+=` statements of the function's own statement list: the
    # last binding on a line not after the use, the use's own statement excluded (x = self.a(x) sees the
    # parameter); the same for a use above the first binding in a nested block (forward's x on lines 42 and 43:
    # astroid's filter stops at the first binding on a later line, the nested one never counts there), and in
    # the nested binding's own statement (line 46: the filter stops at it); never when a binding in a nested
    # block comes before the use (forward's x on line 47) or none comes before the use
    assert chosen == {(42, "self", 41), (45, "y", 43), (48, "z", 47), (52, "x", 51), (53, "scale", 51),
                      (53, "x", 52), (54, "scale", 53), (54, "x", 53), (55, "scale", 53), (55, "x", 54),
                      (62, "v", 61), (42, "x", 41), (43, "x", 42), (46, "x", 44)}
    assert not fast & {(44, "x"), (47, "x"), (55, "rest"), (60, "v")}


def test_a_method_decorator_resolves_in_a_process_that_never_built_astroids_builtins(tmp_path):
    """astroid's lookup of a method's decorator name reads its builtins module without building it (a KeyError
    while no earlier lookup of the process had built it): the decorator's CUDA API was found or not depending on
    which files a worker had analysed before (Megatron-LM's `@custom_fwd`, thirdparty mode, 2 jobs)."""
    import subprocess
    import sys

    (tmp_path / "layers.py").write_text(textwrap.dedent("""
        import torch

        custom_fwd = torch.cuda.amp.custom_fwd

        class Fn(torch.autograd.Function):
            @staticmethod
            @custom_fwd
            def forward(ctx, x):
                return x
    """))
    code = ("import sys, astroid; from pathlib import Path; from analyse.pipeline import run, Settings; "
            "from analyse.knowledge import load_knowledge; "
            "r = run([Path(sys.argv[1])], load_knowledge(), settings=Settings(jobs=1, cache_dir=None)); "
            "print(sorted((f.line, f.code, f.api) for f in r.findings if f.code == 'NPU001'))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert "(8, 'NPU001', 'torch.cuda.amp.custom_fwd')" in out.stdout, out.stdout + out.stderr


def test_a_name_rebound_on_every_line_is_resolved_with_its_bindings_prepared_once(monkeypatch):
    """`syntax._straight_line` walked every binding for every use: an 8k-line function rebinding one name
    took 75 s. The bindings are put in order once per function and name, and each use bisects."""
    import astroid
    from astroid import nodes

    from analyse import syntax

    n = 400
    src = "def train(x, y):\n" + "".join(f"    x = x.cuda() + {i}\n    y = x\n" for i in range(n)) + "    return x\n"
    fn = astroid.parse(src).body[0]
    calls = [0]
    real = syntax._prepare_bindings

    def counting(frame, binds):
        calls[0] += 1
        return real(frame, binds)

    monkeypatch.setattr(syntax, "_prepare_bindings", counting)
    uses = [u for u in fn.nodes_of_class(nodes.Name) if u.name == "x"]
    got = [syntax.frame_binding(u, "x") for u in uses]
    assert calls[0] == 1 and len(uses) == 2 * n + 1
    lines = [b[1][0].lineno if b else None for b in got]
    # x on line 2 (x = x.cuda()) sees the parameter; every later use sees the assignment just before it
    assert lines[0] == 1 and lines[1] == 2 and lines[2] == 2 and lines[3] == 4 and lines[-1] == 2 * n
    want = [u.lookup("x")[1][0].lineno for u in uses]
    assert lines == want


def test_annotation_nodes_are_the_nodes_in_annotation_holds_for():
    # outer_names tests one set of ids per module (syntax.annotation_nodes) instead of climbing from every name
    # (syntax.in_annotation): the same nodes, on every annotation shape and on the look-alikes that are not one
    from analyse.syntax import annotation_nodes, in_annotation, walk

    src = textwrap.dedent('''
        import torch
        from typing import Callable, Optional
        x: torch.cuda.Stream = torch.cuda.current_stream()
        y: "torch.cuda.Event"
        class A:
            g: Optional[torch.cuda.CUDAGraph] = None
            def f(self, a: torch.Tensor, *args: torch.cuda.Stream, b: int = torch.cuda.device_count(),
                  **kw: dict[str, torch.cuda.Event]) -> torch.cuda.Stream:
                h = lambda q=torch.cuda.Stream: q
                z: Callable[[int], int] = lambda v: torch.cuda.synchronize()
                return torch.cuda.current_stream()
            async def af(self, /, p: torch.device, *, k: list[torch.Tensor] = [torch.zeros(1)]) -> None:
                m: [torch.cuda.Stream for _ in range(2)]
        f2: (lambda s: torch.cuda.Stream)(1)
    ''')
    sf, err = parse_source(src, Path("m.py"), "m.py", "m")
    assert err is None
    ann = annotation_nodes(sf.tree)
    got = [(n.lineno, n.as_string()) for n in walk(sf.tree) if id(n) in ann]
    assert [(n.lineno, n.as_string()) for n in walk(sf.tree) if in_annotation(n)] == got
    texts = {t for _l, t in got}
    assert {"torch.cuda.Stream", "torch.Tensor", "torch.cuda.CUDAGraph", "torch.device", "'torch.cuda.Event'",
            "dict[str, torch.cuda.Event]"} <= texts
    assert "torch.cuda.current_stream()" not in texts and "torch.cuda.device_count()" not in texts
    assert "torch.cuda.synchronize()" not in texts and "s" not in texts   # inside a lambda of an annotation


def test_call_target_kept_per_call_answers_as_a_fresh_question():
    # Resolver.call_target keeps its answer per call (every pass asks about every call); kept only when no
    # qualname / type_of was under way, so asking again, in another order, or on a fresh resolver answers the same
    src = textwrap.dedent('''
        import torch
        import torch.nn as nn
        from torch import cuda as c
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 2)
            def forward(self, x):
                y = x.cuda()
                z = torch.zeros(2).to("cuda").nonzero()
                t = y
                t = t.float()
                return self.fc(t).sum().backward(), c.synchronize(), z.item()
        def f(a: torch.Tensor):
            b = a.nonzero()
            b = b.cpu()
            return b.numpy(), f(b)
    ''')
    sf, err = parse_source(src, Path("m.py"), "m.py", "m")
    assert err is None
    calls = list(sf.tree.nodes_of_class(nodes.Call))
    first = Resolver(sf.tree, "m")
    kept = [first.call_target(c) for c in calls]
    assert [first.call_target(c) for c in reversed(calls)] == kept[::-1]
    fresh = [Resolver(sf.tree, "m").call_target(c) for c in calls]
    assert kept == fresh
    assert {"torch.nn.Linear", "torch.Tensor.nonzero", "torch.Tensor.to", "torch.cuda.synchronize", "torch.zeros"} <= set(kept)
