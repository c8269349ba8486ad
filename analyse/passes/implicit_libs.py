"""implicit-gpu-libs: GPU-only libraries switched on through another library's arguments.

transformers, peft, accelerate and trl load bitsandbytes, flash-attention,
Transformer Engine or Liger's Triton kernels when a keyword argument asks for
them -- ``from_pretrained(..., load_in_8bit=True)``,
``quantization_config=BitsAndBytesConfig(load_in_4bit=True, ...)``,
``attn_implementation="flash_attention_2"``, ``TrainingArguments(optim="paged_adamw_8bit")``,
``Accelerator(mixed_precision="fp8")`` -- so a project that never imports the
GPU-only library still needs it. Each switch is a row of
``data/implicit_gpu_libs.yaml`` (validated when loaded, with its source): the
calls it applies to, the keyword, the values that switch the library on, the
severity on an Ascend NPU and the NPU answer (NF4 4-bit runs through the
bitsandbytes NPU backend, 8-bit does not; ``attn_implementation="sdpa"``, or
``flash_attention_2`` which recent transformers route to
``torch_npu.npu_fusion_attention``). ONNX Runtime sessions asked for the CUDA or TensorRT execution provider
(``providers=[...]`` of ``InferenceSession``, ``session.set_providers([...])``; a list switches it on when one of
its names does) are NPU472: an Ascend host has neither provider.

Where the value comes from:

* a literal at the call (``load_in_8bit=True``), a name bound once to a literal,
  or a dictionary spread into the call (``kwargs["load_in_8bit"] = True`` /
  ``dict(load_in_8bit=True)`` then ``from_pretrained(..., **kwargs)``): the
  finding sits where the value is written;
* a field default of a configuration class (``optim: str = field(default="paged_adamw_32bit")``
  in a ``TrainingArguments`` subclass): the default path uses it;
* anything else (``load_in_8bit=args.bits == 8``) is a user's choice: the finding
  is guarded as an ``option`` with that expression as its condition, so it is
  listed but does not make the verdict by itself.

A 4-bit load is judged with its quantization type (``bnb_4bit_quant_type``:
``nf4`` runs, the default ``fp4`` does not); a ``from_pretrained`` that also
passes ``quantization_config=BitsAndBytesConfig(...)`` is judged at the config.
Analysing transformers / peft / accelerate / trl themselves (an input folder or module of that name) gives
no finding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import os
import re
from fnmatch import fnmatchcase, translate
from typing import Dict, Iterator, List, Optional, Tuple

from astroid import nodes

from analyse.conditions.build import default_value, value_of as option_value
from analyse.findings import SEVERITIES, Finding, Rule
from analyse.passes import ModuleContext, Pass, nodes_of
from analyse.passes._configs import built_objects, config_files, config_loads

DATA_FILE = "implicit_gpu_libs.yaml"
_UNKNOWN = object()     # a value the pass cannot read statically (an option)
_MISSING = object()     # the keyword is not given


def _rule(code, name, severity, summary, why, example, fix):
    return Rule(code=code, name=name, category="third-party", severity=severity, summary=summary, why=why,
                example=example, fix=fix)


RULES = (
    _rule("NPU460", "implicit-bnb-8bit", "blocker",
          "A model loaded in 8-bit through bitsandbytes (`load_in_8bit=True`) without importing it.",
          "transformers loads 8-bit weights through bitsandbytes LLM.int8() (Linear8bitLt, int8 matmul). bitsandbytes "
          "on Ascend runs only NF4 4-bit quantize/dequantize, so the load has no NPU path.",
          "model = AutoModelForCausalLM.from_pretrained(name, load_in_8bit=True)",
          "model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)\n"
          "# or NF4: quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4')"),
    _rule("NPU461", "implicit-bnb-4bit", "blocker",
          "A model loaded in 4-bit through bitsandbytes (`load_in_4bit=True`); only NF4 runs on an NPU.",
          "The 4-bit type defaults to fp4, which bitsandbytes' Ascend backend does not run; NF4 (QLoRA) does, with the "
          "Ascend build of bitsandbytes (then the finding is manual, not a blocker).",
          "cfg = BitsAndBytesConfig(load_in_4bit=True)",
          "cfg = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4')  # Ascend build of bitsandbytes"),
    _rule("NPU462", "implicit-flash-attention-2", "advice",
          "`attn_implementation=\"flash_attention_2\"`: transformers selects the flash-attn kernels.",
          "Recent transformers route flash_attention_2 to torch_npu.npu_fusion_attention on an Ascend host; older "
          "releases need the flash-attn package, which has no Ascend build.",
          "model = AutoModel.from_pretrained(name, attn_implementation='flash_attention_2')",
          "model = AutoModel.from_pretrained(name, attn_implementation='sdpa')"),
    _rule("NPU463", "implicit-flash-attention-cuda", "manual",
          "FlashAttention-3, a kernels-hub attention kernel or the deprecated `use_flash_attention_2=True`.",
          "These select CUDA attention kernels (flash-attn 3 Hopper kernels, a hub kernel, or flash-attn 2 on a "
          "transformers release that predates the NPU route) with no Ascend build.",
          "model = AutoModel.from_pretrained(name, attn_implementation='flash_attention_3')",
          "model = AutoModel.from_pretrained(name, attn_implementation='sdpa')"),
    _rule("NPU464", "implicit-bnb-optimizer", "blocker",
          "A Trainer optimizer that is a bitsandbytes 8-bit or paged optimizer (`optim=\"paged_adamw_8bit\"`).",
          "The Trainer builds a bitsandbytes optimizer (8-bit states, or paged states in CUDA unified memory); "
          "bitsandbytes optimizers do not run on Ascend.",
          "args = TrainingArguments(output_dir='out', optim='paged_adamw_8bit')",
          "args = TrainingArguments(output_dir='out', optim='adamw_torch_npu_fused')"),
    _rule("NPU465", "kbit-training", "advice",
          "peft `prepare_model_for_kbit_training`: training on a quantized (bitsandbytes) model.",
          "It runs on an NPU when the model was loaded in a form that does (NF4 through the Ascend build of "
          "bitsandbytes), not with an 8-bit or FP4 load.",
          "model = prepare_model_for_kbit_training(model)",
          "# load with BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4') first"),
    _rule("NPU466", "implicit-fp8", "blocker",
          "`Accelerator(mixed_precision=\"fp8\")` or an fp8 recipe (`AORecipeKwargs`, `TERecipeKwargs`, "
          "`MSAMPRecipeKwargs`): FP8 training through Transformer Engine / MS-AMP / torchao.",
          "accelerate trains in fp8 through Transformer Engine, MS-AMP or torchao float8; none runs on an Ascend NPU.",
          "accelerator = Accelerator(mixed_precision='fp8')",
          "accelerator = Accelerator(mixed_precision='bf16')"),
    _rule("NPU467", "implicit-liger-kernel", "blocker",
          "`use_liger_kernel=True`: the Trainer patches the model with Liger's Triton kernels.",
          "Liger kernels are Triton kernels compiled for NVIDIA/AMD GPUs.",
          "args = TrainingArguments(output_dir='out', use_liger_kernel=True)",
          "args = TrainingArguments(output_dir='out')"),
    _rule("NPU471", "implicit-torch-sparse", "manual",
          "PyG's `ToSparseTensor()` transform: the graph's adjacency becomes a torch_sparse `SparseTensor`.",
          "With its default layout and torch_sparse installed, PyG stores `adj_t` as a torch_sparse SparseTensor, and "
          "every message-passing layer then runs torch_sparse's sparse-dense matmul: torch_sparse ships CPU and CUDA "
          "kernels only, none for an NPU.",
          "dataset = PygNodePropPredDataset(name, transform=T.ToSparseTensor())",
          "dataset = PygNodePropPredDataset(name)  # keep edge_index: model(data.x, data.edge_index)"),
    _rule("NPU472", "gpu-execution-provider", "manual",
          "An ONNX Runtime session asked for the CUDA or TensorRT execution provider "
          "(`InferenceSession(..., providers=['CUDAExecutionProvider'])`, `session.set_providers([...])`).",
          "The CUDA and TensorRT execution providers are NVIDIA builds of ONNX Runtime (onnxruntime-gpu); an Ascend "
          "host has neither, and ONNX Runtime drops a provider it does not have with a warning, so the model runs "
          "on the CPU, not on the accelerator asked for. ONNX Runtime's Ascend provider is CANNExecutionProvider.",
          "sess = ort.InferenceSession(path, providers=['CUDAExecutionProvider'])",
          "sess = ort.InferenceSession(path, providers=['CANNExecutionProvider', 'CPUExecutionProvider'])"),
    _rule("NPU470", "gpu-resource-request", "manual",
          "A scheduler or a training framework asks for GPUs (`@ray.remote(num_gpus=1)`, `.options(num_gpus=...)`, "
          "Lightning's `Trainer(accelerator='gpu')` / `gpus=N`): none exist on an Ascend host.",
          "Ray counts CUDA GPUs for its GPU resource; on an Ascend host it schedules NPUs as the resource 'NPU', so a "
          "task or actor that asks for GPUs waits forever (or gets no device). Lightning's 'gpu' / 'cuda' accelerator "
          "is its CUDA accelerator, and Lightning has no Ascend accelerator of its own: the Trainer needs a small NPU "
          "accelerator passed instead.",
          "@ray.remote(num_gpus=1)\nclass Worker: ...",
          "@ray.remote(resources={'NPU': 1})\nclass Worker: ..."),
)
_CODES = {r.code for r in RULES}


class ImplicitDataError(ValueError):
    """data/implicit_gpu_libs.yaml is malformed."""


@dataclass(frozen=True)
class QuantType:
    keyword: str
    default: str
    supported: Tuple[str, ...]
    severity: str
    reason: str


@dataclass(frozen=True)
class Switch:
    id: str
    code: str
    library: str
    via: str
    feature: str
    calls: Tuple[str, ...]
    keyword: Optional[str]
    on: Optional[bool]
    values: Tuple[str, ...]
    excludes: Tuple[str, ...]
    fields: Tuple[str, ...]
    severity: str
    reason: str
    replacement: str
    source: str
    quant_type: Optional[QuantType] = None
    # the keyword's argument may be passed by position (placement_group(bundles, ...))
    position: Optional[int] = None
    # the argument switches the library on when a dict literal in it has this key ({"GPU": 1} bundles)
    dict_key: Optional[str] = None

    def switched_on(self, value) -> Optional[bool]:
        """True / False for a literal value, None for a value the pass cannot read."""
        if value is _UNKNOWN:
            return None
        if self.on is not None:
            return bool(value) == self.on if isinstance(value, (bool, int, str, float, type(None))) else None
        if isinstance(value, tuple):   # a list of values (execution providers): any one that switches it on
            return any(self.switched_on(v) for v in value) if value else False
        if not isinstance(value, str):
            return False
        if any(fnmatchcase(value, x) for x in self.excludes):
            return False
        return any(fnmatchcase(value, g) for g in self.values)

    def applies_to(self, qual: str) -> bool:
        return any(fnmatchcase(qual, g) for g in self.calls)


def _req(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ImplicitDataError(f"data/{DATA_FILE}: {where}: {what}")


def _strs(v, empty: bool = False) -> bool:
    return isinstance(v, list) and (empty or bool(v)) and all(isinstance(x, str) and x.strip() for x in v)


def parse_switches(doc) -> List[Switch]:
    """Validate the table (raises :class:`ImplicitDataError`)."""
    _req(isinstance(doc, dict), "top level", "must be a mapping")
    meta = doc.get("meta")
    _req(isinstance(meta, dict) and meta.get("source") and meta.get("date"), "meta", "needs source and date")
    rows = doc.get("switches")
    _req(isinstance(rows, list) and rows, "switches", "must be a non-empty list")
    out: List[Switch] = []
    ids = set()
    for i, e in enumerate(rows):
        _req(isinstance(e, dict), f"switches[{i}]", "must be a mapping")
        w = f"switches[{i}] ({e.get('id')!r})"
        for k in ("id", "code", "library", "via", "feature", "reason", "replacement", "source"):
            _req(isinstance(e.get(k), str) and e[k].strip(), w, f"{k} must be a non-empty string")
        _req(e["id"] not in ids, w, "duplicate id")
        ids.add(e["id"])
        _req(e["code"] in _CODES, w, f"code must be one of {sorted(_CODES)}")
        _req(e.get("severity") in SEVERITIES, w, f"severity must be one of {SEVERITIES}")
        _req(_strs(e.get("calls")), w, "calls must be a non-empty list of names")
        kw = e.get("keyword")
        _req(kw is None or (isinstance(kw, str) and kw.isidentifier()), w, "keyword must be an identifier")
        on = e.get("flag")
        values = e.get("values")
        _req(on is None or isinstance(on, bool), w, "flag must be true or false")
        _req(values is None or _strs(values), w, "values must be a non-empty list of strings")
        if kw is None:
            _req(on is None and values is None, w, "flag / values need a keyword")
        elif e.get("dict_key") is None:
            _req((on is None) != (values is None), w, "a keyword needs exactly one of flag / values")
        _req(e.get("excludes") is None or _strs(e["excludes"]), w, "excludes must be a list of strings")
        pos, dkey = e.get("position"), e.get("dict_key")
        _req(pos is None or (isinstance(pos, int) and not isinstance(pos, bool) and pos >= 0 and kw is not None), w,
             "position must be a non-negative int (with a keyword)")
        _req(dkey is None or (isinstance(dkey, str) and dkey and kw is not None and on is None and values is None), w,
             "dict_key must be a string (with a keyword, instead of flag / values)")
        if dkey is not None:
            on = True   # a dict with the key switches it on
        _req(e.get("fields") is None or (_strs(e["fields"]) and kw is not None), w,
             "fields must be a list of class names (with a keyword)")
        qt = e.get("quant_type")
        quant = None
        if qt is not None:
            _req(isinstance(qt, dict), w, "quant_type must be a mapping")
            for k in ("keyword", "default", "reason"):
                _req(isinstance(qt.get(k), str) and qt[k].strip(), w, f"quant_type.{k} must be a non-empty string")
            _req(_strs(qt.get("supported")), w, "quant_type.supported must be a list of strings")
            _req(qt.get("severity") in SEVERITIES, w, "quant_type.severity must be a severity")
            quant = QuantType(qt["keyword"], qt["default"], tuple(qt["supported"]), qt["severity"],
                              " ".join(qt["reason"].split()))
        out.append(Switch(id=e["id"], code=e["code"], library=e["library"], via=e["via"], feature=e["feature"],
                          calls=tuple(e["calls"]), keyword=kw, on=on, values=tuple(values or ()),
                          excludes=tuple(e.get("excludes") or ()), fields=tuple(e.get("fields") or ()),
                          severity=e["severity"], reason=" ".join(e["reason"].split()),
                          replacement=" ".join(e["replacement"].split()), source=" ".join(e["source"].split()),
                          quant_type=quant, position=pos, dict_key=dkey))
    return out


_CACHE: Dict[int, List[Switch]] = {}


def switch_table(kb) -> List[Switch]:
    doc = kb.data_file(DATA_FILE)
    t = _CACHE.get(id(doc))
    if t is None:
        t = _CACHE[id(doc)] = parse_switches(doc)
    return t


_TRIGGERS: Dict[int, Tuple[str, ...]] = {}


def _triggers(table: List[Switch]) -> Tuple[str, ...]:
    """Words one of which a module must contain to hold a switch: the keywords, and the called names of the
    switches without one."""
    t = _TRIGGERS.get(id(table))
    if t is None:
        words = {s.keyword for s in table if s.keyword}
        words |= {g.rsplit(".", 1)[-1] for s in table if not s.keyword or s.position is not None for g in s.calls}
        t = _TRIGGERS[id(table)] = tuple(sorted(w for w in words if "*" not in w))
    return t


_LEAVES: Dict[int, "re.Pattern"] = {}


def _leaf_pattern(table: List[Switch]):
    """One regex for the last name of every call glob (``from_pretrained``, ``*Config``, ``TrainingArguments``):
    a call whose written name matches none of them is not looked up (a class imported under another name,
    ``import TrainingArguments as TA``, is not seen)."""
    p = _LEAVES.get(id(table))
    if p is None:
        leaves = {g.rsplit(".", 1)[-1] for s in table for g in s.calls}
        p = _LEAVES[id(table)] = re.compile("|".join(f"(?:{translate(x)})" for x in sorted(leaves)))
    return p


# --------------------------------------------------------------------------- values

def _literal(node):
    if isinstance(node, nodes.Const):
        return node.value
    if type(node) in (nodes.List, nodes.Tuple):
        # a list of literals (providers=['CUDAExecutionProvider', 'CPUExecutionProvider']) as a tuple of them;
        # (name, options) pairs count by their name
        items = []
        for e in node.elts:
            if type(e) is nodes.Tuple and e.elts:
                e = e.elts[0]
            v = _literal(e)
            if v is _UNKNOWN or isinstance(v, tuple):
                return _UNKNOWN
            items.append(v)
        return tuple(items)
    if isinstance(node, nodes.UnaryOp) and node.op == "not" and isinstance(node.operand, nodes.Const):
        return not node.operand.value
    return _UNKNOWN


def _bound_once(name: nodes.Name):
    """The value of a name bound exactly once in its scope by ``name = <expr>`` (else None)."""
    try:
        scope, binders = name.lookup(name.name)
    except Exception:  # pragma: no cover - astroid lookup on odd trees
        return None
    if len(binders) != 1 or not isinstance(binders[0], nodes.AssignName):
        return None
    parent = binders[0].parent
    if isinstance(parent, (nodes.Assign, nodes.AnnAssign)) and parent.value is not None:
        return parent.value
    return None


def value_of(node):
    """A literal value (through one level of name binding), or _UNKNOWN."""
    v = _literal(node)
    if v is _UNKNOWN and isinstance(node, nodes.Name):
        bound = _bound_once(node)
        if bound is not None:
            v = _literal(bound)
    return v


def _choice_guard(sw: Switch, cond: str, line: int, default) -> dict:
    """The guard of a place that needs the library only when a user picks a switching value: the condition
    names the values (``args.mixed_precision == 'fp8'``); with a readable default that does not switch it on
    the place is off the path with the defaults, otherwise it rests on the user's choice (``choice``)."""
    if sw.values:
        vals = [v for v in sw.values if not any(ch in v for ch in "*?[")] or list(sw.values)
        test = f"{cond} == {vals[0]!r}" if len(vals) == 1 else f"{cond} in ({', '.join(repr(v) for v in vals)})"
    else:
        test = cond if sw.on else f"not {cond}"
    g = {"kind": "option", "line": line, "fallback": True, "condition": test, "choice": True}
    if default is not None and default.known:
        g["on_path"] = {"transfer_to_npu": "off", "no_transfer": "off"}
        g["by_default"] = "off"
        g["unless"] = f"`{test}`"
        if default.words:
            g["default"] = default.words
    else:
        g["depends_on"] = f"depends on `{cond}` (a user option)"
    return g


def _both(outer: dict, choice: dict) -> dict:
    """The guard of a place under an enclosing condition (*outer*, e.g. ``if device == "cuda":``) that needs the
    library only with a user's choice (*choice*, from :func:`_choice_guard`): both must hold, so a scenario in
    which either is off is off (``load_in_8bit=load_8bit`` with ``load_8bit: bool = False`` stays off by default
    inside a device branch that an NPU host takes)."""
    cond = outer.get("condition")
    g = {**outer, "choice": True,
         "condition": f"{cond} and {choice['condition']}" if cond else choice["condition"]}
    mine = choice.get("on_path")
    if mine:
        theirs = outer.get("on_path") or {}
        g["on_path"] = {s: "off" if v == "off" or theirs.get(s) == "off" else theirs.get(s, v)
                        for s, v in mine.items()}
        for k in ("by_default", "unless", "default"):
            if k in choice:
                g[k] = choice[k]
    return g


def _text(node, limit: int = 60) -> str:
    try:
        s = " ".join(node.as_string().split())
    except Exception:  # pragma: no cover - defensive
        return "..."
    return s if len(s) <= limit else s[:limit - 3] + "..."


def _kw(call: nodes.Call, name: str):
    for k in call.keywords or ():
        if k.arg == name:
            return k.value
    return None


def _has_dict_key(node, key: str) -> bool:
    """A dict literal inside ``node`` has ``key`` with a value that is not a literal 0 ({"GPU": 1}, {"GPU": n})."""
    for n in [node, *node.nodes_of_class(nodes.Dict)]:
        if not isinstance(n, nodes.Dict):
            continue
        for k, v in n.items:
            if isinstance(k, nodes.Const) and k.value == key and not (isinstance(v, nodes.Const) and not v.value):
                return True
    return False


def _spread_values(call: nodes.Call, keyword: str) -> List[Tuple[nodes.NodeNG, nodes.NodeNG]]:
    """(value, node that writes it) for *keyword* in a dictionary spread into the call with ``**name``:
    ``name = {"k": v}`` / ``name = dict(k=v)`` and ``name["k"] = v`` in the call's scope."""
    out = []
    for k in call.keywords or ():
        if k.arg is not None or not isinstance(k.value, nodes.Name):
            continue
        dname = k.value.name
        scope = call.scope()
        for n in nodes_of(scope, nodes.Assign):
            if n.scope() is not scope:
                continue
            for t in n.targets:
                if isinstance(t, nodes.AssignName) and t.name == dname:
                    v = n.value
                    if isinstance(v, nodes.Dict):
                        for key, val in v.items:
                            if isinstance(key, nodes.Const) and key.value == keyword:
                                out.append((val, n))
                    elif isinstance(v, nodes.Call) and isinstance(v.func, nodes.Name) and v.func.name == "dict":
                        val = _kw(v, keyword)
                        if val is not None:
                            out.append((val, n))
                elif isinstance(t, nodes.Subscript) and isinstance(t.value, nodes.Name) and t.value.name == dname \
                        and isinstance(t.slice, nodes.Const) and t.slice.value == keyword:
                    out.append((n.value, n))
    return out


# --------------------------------------------------------------------------- the pass

class ImplicitGpuLibsPass(Pass):
    name = "implicit-gpu-libs"
    rules = RULES
    # the configurations the module loads (analyse.passes._configs.config_loads): (line, kind, where, name, guard)
    facts_shape = List[Tuple[int, str, str, str, Optional[dict]]]

    VALID = (
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('m', load_in_8bit=False, attn_implementation='sdpa')\n",
        "import ray\n@ray.remote(num_cpus=2, num_gpus=0)\ndef f():\n    pass\n",
        "from ray.util.placement_group import placement_group\npg = placement_group([{'CPU': 4}], strategy='PACK')\n",
        "from transformers import TrainingArguments\n"
        "args = TrainingArguments(output_dir='o', optim='adamw_torch')\n",
        "from accelerate import Accelerator\n"
        "acc = Accelerator(mixed_precision='bf16')\n",
        # not transformers: another library's from_pretrained without a switch
        "class M:\n    @classmethod\n    def from_pretrained(cls, name, **kw):\n        return cls()\n"
        "m = M.from_pretrained('x', dtype='bf16')\n",
    )
    INVALID = (
        "from transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('m', load_in_8bit=True)  # expect: NPU460\n",
        "from transformers import AutoModelForCausalLM, BitsAndBytesConfig\n"
        "q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type='nf4')  # expect: NPU461\n"
        "fp4 = BitsAndBytesConfig(load_in_4bit=True)  # expect: NPU461\n"
        "model = AutoModelForCausalLM.from_pretrained('m', load_in_4bit=True, quantization_config=q)\n",
        "from transformers import AutoModel\n"
        "a = AutoModel.from_pretrained('m', attn_implementation='flash_attention_2')  # expect: NPU462\n"
        "b = AutoModel.from_pretrained('m', use_flash_attention_2=True)  # expect: NPU463\n",
        "import transformers\n"
        "from peft import prepare_model_for_kbit_training\n"
        "args = transformers.TrainingArguments(output_dir='o', optim='paged_adamw_8bit')  # expect: NPU464\n"
        "model = prepare_model_for_kbit_training(None)  # expect: NPU465\n",
        "from dataclasses import dataclass, field\n"
        "import transformers\n"
        "@dataclass\n"
        "class Args(transformers.Seq2SeqTrainingArguments):\n"
        "    optim: str = field(default='paged_adamw_32bit')  # expect: NPU464\n"
        "    use_liger_kernel: bool = True  # expect: NPU467\n",
        "from accelerate import Accelerator\n"
        "acc = Accelerator(mixed_precision='fp8')  # expect: NPU466\n",
        "import torch_geometric.transforms as T\n"
        "transform = T.ToSparseTensor()  # expect: NPU471\n",
        "import ray\n@ray.remote(num_gpus=1)  # expect: NPU470\nclass Worker:\n    pass\n",
        "from ray.util.placement_group import placement_group\n"
        "pg = placement_group([{'GPU': 1, 'CPU': 1}] * 4)  # expect: NPU470\n",
        "from transformers import AutoModelForCausalLM\n"
        "def load(path, load_8bit=False):\n"
        "    kwargs = {'torch_dtype': 'auto'}\n"
        "    kwargs['load_in_8bit'] = load_8bit  # expect: NPU460\n"
        "    return AutoModelForCausalLM.from_pretrained(path, **kwargs)\n",
    )

    def check_module(self, ctx: ModuleContext) -> Iterator[Finding]:
        table = switch_table(ctx.kb)
        text = ctx.source.text
        vias = {s.via for s in table} | {"trl"}     # trl's configs subclass TrainingArguments: its own plumbing
        if any(r.split(".")[0] in vias for r in ctx.project.root_names) or ctx.source.modname.split(".")[0] in vias:
            return   # the library's own source: its keyword plumbing is not a use
        if ctx.project.mode != "thirdparty":
            loads = config_loads(ctx.tree, text)
            if loads:
                ctx.facts[self.name] = loads   # read with the files in finish (their text is not this module's)
        if not any(w in text for w in _triggers(table)):
            return      # no keyword or function of the table in the module: spare resolving its calls
        r = ctx.resolver
        leaf_ok = _leaf_pattern(table).match
        for call in nodes_of(ctx.tree, nodes.Call):
            func = call.func
            leaf = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", "")
            if not leaf or not leaf_ok(leaf):
                continue     # see _leaf_pattern
            q = r.qualname(call.func)
            if q is None:
                if not isinstance(call.func, nodes.Attribute):
                    continue
                q = "?." + call.func.attrname      # an unresolved receiver still matches `*.from_pretrained`
            for sw in table:
                if sw.applies_to(q):
                    yield from self._call(ctx, sw, call, q)
        for cls in nodes_of(ctx.tree, nodes.ClassDef):
            bases = [r.qualname(b) or "" for b in cls.bases]
            for sw in table:
                if sw.fields and any(fnmatchcase(b, g) for b in bases for g in sw.fields):
                    yield from self._fields(ctx, sw, cls)

    # one call
    def _call(self, ctx: ModuleContext, sw: Switch, call: nodes.Call, q: str) -> Iterator[Finding]:
        if sw.keyword is None:
            yield self._finding(ctx, sw, call, q.rsplit(".", 1)[-1] if q.startswith("?.") else q,
                                f"`{_text(call.func)}(...)` ({sw.via}) means {sw.feature} with {sw.library}: {sw.reason}.")
            return
        if sw.keyword.startswith("load_in_") and q.endswith("from_pretrained") \
                and _kw(call, "quantization_config") is not None:
            return    # judged at the BitsAndBytesConfig(...) passed with it
        direct = _kw(call, sw.keyword)
        if direct is None and sw.position is not None and len(call.args) > sw.position \
                and not isinstance(call.args[sw.position], nodes.Starred):
            direct = call.args[sw.position]
        if sw.dict_key is not None:
            if direct is not None and _has_dict_key(direct, sw.dict_key):
                yield self._finding(ctx, sw, direct, f'{sw.keyword}={{"{sw.dict_key}": ...}}',
                                    f"the argument `{sw.keyword}` asks {sw.via} for `{sw.dict_key}` ({sw.feature}): "
                                    f"{sw.reason}.")
            return
        sites = [(direct, call)] if direct is not None else _spread_values(call, sw.keyword)
        for value_node, where in sites:
            f = self._judge(ctx, sw, value_node, where, call)
            if f is not None:
                yield f

    def _judge(self, ctx, sw: Switch, value_node, where, call: Optional[nodes.Call], field_default: bool = False):
        value = value_of(value_node)
        on = sw.switched_on(value)
        if on is False:
            return None
        shown = repr(value) if on else _text(value_node)
        api = f"{sw.keyword}={repr(value) if on else ('True' if sw.on else '...')}"
        if on and isinstance(value, tuple):   # a list: name the value in it that switches the library on
            shown = _text(value_node, 80)
            api = f"{sw.keyword}=[{next(v for v in value if sw.switched_on(v))!r}]"
        severity, reason = sw.severity, sw.reason
        if sw.quant_type is not None and call is not None:
            severity, reason, qnote = self._quant(sw, call)
            if qnote:
                api += f", {qnote}"
        what = "the default of the option" if field_default else "the argument"
        msg = f"{what} `{sw.keyword}={shown}` makes {sw.via} use {sw.library} ({sw.feature}): {reason}."
        f = self._finding(ctx, sw, where, api, msg, severity=severity)
        if on is None:
            cond = _text(value_node, 80)
            # the value is the user's: say which values switch it on, and keep the choice rather than
            # writing one literal over it (`mixed_precision=args.mixed_precision` -> "bf16" would turn a
            # user's "no" into bf16)
            when = " or ".join(repr(v) for v in sw.values) if sw.values else ("true" if sw.on else "false")
            # a flag switch reads a test over settings too (`load_in_8bit=args.bits == 8` with `--bits` 16 by default)
            default = default_value(value_node) if sw.on is not None else option_value(value_node)
            if default is not None and default.known and sw.switched_on(default.value):
                # the option's own default switches it on: the default path needs the library
                return replace(f, message=f"with {default.words or f'the default {default.value!r}'}: {msg}")
            test = cond if isinstance(value_node, (nodes.Name, nodes.Attribute, nodes.Subscript, nodes.Call)) \
                else f"({cond})"   # `(size if amp else 'no') == 'fp8'`, not `size if amp else ('no' == 'fp8')`
            guard = _choice_guard(sw, test if sw.values else cond, f.line, default)
            if f.guard:   # under an enclosing condition too: both must hold
                guard = _both(f.guard, guard)
            f = replace(f, guard=guard,
                        message=f"only when `{cond}` is {when} (a user's choice): {msg}",
                        replacement=(f"keep the option; on an NPU choose another value than {when} ({sw.replacement})"
                                     if sw.values else
                                     f"keep the option; on an NPU leave it {not sw.on} ({sw.replacement})"))
        return f

    @staticmethod
    def _quant(sw: Switch, call: nodes.Call) -> Tuple[str, str, str]:
        qt = sw.quant_type
        node = _kw(call, qt.keyword)
        if node is None:
            return sw.severity, f"{sw.reason} (no {qt.keyword}: {qt.default})", f"{qt.keyword}={qt.default!r}"
        v = value_of(node)
        if v is _UNKNOWN:
            return (qt.severity, f"{qt.reason}; it runs only when `{_text(node)}` is one of {', '.join(qt.supported)}",
                    f"{qt.keyword}={_text(node, 30)}")
        if v in qt.supported:
            return qt.severity, qt.reason, f"{qt.keyword}={v!r}"
        return sw.severity, f"{sw.reason} ({qt.keyword}={v!r})", f"{qt.keyword}={v!r}"

    def _fields(self, ctx: ModuleContext, sw: Switch, cls: nodes.ClassDef) -> Iterator[Finding]:
        for st in cls.body:
            target, value = None, None
            if isinstance(st, nodes.AnnAssign) and isinstance(st.target, nodes.AssignName):
                target, value = st.target.name, st.value
            elif isinstance(st, nodes.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], nodes.AssignName):
                target, value = st.targets[0].name, st.value
            if target != sw.keyword or value is None:
                continue
            if isinstance(value, nodes.Call) and isinstance(value.func, (nodes.Name, nodes.Attribute)) \
                    and _text(value.func).rsplit(".", 1)[-1] == "field":
                value = _kw(value, "default")
                if value is None:
                    continue
            f = self._judge(ctx, sw, value, st, None, field_default=True)
            if f is not None:
                yield f

    def finish(self, project) -> Iterator[Finding]:
        """The switches the configurations of the programs set (:mod:`analyse.passes._configs`): a mapping that
        builds one of a switch's calls (``_target_: lightning.pytorch.trainer.Trainer``) with the switch's keyword
        set to a value that switches the library on (``accelerator: gpu``) is a finding where the program names the
        configuration (the ``@hydra.main`` decorator, the ``OmegaConf.load`` call), under the code's own guard there.
        Read here, each run: the files' text is no module's."""
        facts = project.facts.get(self.name) or ()
        if not facts:
            return
        table = [sw for sw in switch_table(project.kb) if sw.keyword and sw.dict_key is None]
        memo: dict = {}
        done = set()
        for rel, loads in facts:
            sf = project.files.get(rel)
            path = str(getattr(sf, "path", "") or "")
            if not path:
                continue
            folder = os.path.dirname(path)
            root = folder
            for _ in range(rel.count("/")):
                root = os.path.dirname(root)
            for line, kind, where, name, guard in loads:
                files, named = config_files(kind, where, name, folder, root)
                config_dir = os.path.normpath(os.path.join(folder, where)) if kind == "hydra" else ""
                for cfg in files:
                    for shown, target, tline, kws in built_objects(cfg, root, config_dir, memo):
                        for sw in table:
                            if sw.keyword not in kws or not sw.applies_to(target):
                                continue
                            value, kline = kws[sw.keyword]
                            if isinstance(value, str) and "${" in value:
                                continue   # an interpolation: the value is another key's
                            if not sw.switched_on(value):
                                continue
                            key = (rel, line, sw.id, shown, kline)
                            if key in done:
                                continue
                            done.add(key)
                            yield self._config_finding(project, sw, rel, line, guard, shown, kline, target, value,
                                                       kind, named)

    def _config_finding(self, project, sw: Switch, rel: str, line: int, guard, shown: str, kline: int, target: str,
                        value, kind: str, named: bool) -> Finding:
        how = ("one of the configs shipped where the program looks its config up (Hydra; the default config is not "
               "in the project, so the command line names one)" if named else
               "its Hydra default config or a file of its defaults list" if kind == "hydra" else
               "the configuration it loads by name")
        msg = (f"the config `{shown}:{kline}` ({how}) builds `{target}` with `{sw.keyword}: {value}`, so {sw.via} "
               f"uses {sw.library} ({sw.feature}): {sw.reason}.")
        src = project.files.get(rel)
        snippet = src.line(line).rstrip() if src is not None and hasattr(src, "line") else ""
        rule = self.rule(sw.code)
        return Finding(code=rule.code, category=rule.category, severity=sw.severity, path=rel, line=line, column=0,
                       api=f"{sw.keyword}={value!r}", message=msg,
                       replacement=f"in {shown}: {sw.replacement}", confidence="high", evidence="knowledge",
                       snippet=snippet, guard=guard)

    def _finding(self, ctx: ModuleContext, sw: Switch, node, api: str, message: str,
                 severity: Optional[str] = None) -> Finding:
        return ctx.finding(self.rule(sw.code), node, api, message, replacement=sw.replacement,
                           severity=severity or sw.severity, evidence="knowledge")
