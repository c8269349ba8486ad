"""The probe catalogue (``data/probe_catalogue.yaml``): representative samples for classes.

Modules, optimizers, tensor factories, collectives and host-only APIs cannot be
probed from OpInfo samples; the catalogue gives, as data, the constructor
arguments, inputs and limitation variants the worker uses for them. This module
only reads and validates the YAML (no torch); :mod:`analyse.probe.kinds` turns
an entry into runnable samples in the worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

from analyse.knowledge import load_yaml
from analyse.paths import data_dir

CATALOGUE_FILE = "probe_catalogue.yaml"

# probe.schema.json `kind` values the catalogue may give, with the recipes the worker implements for each.
RECIPES: Dict[str, Tuple[str, ...]] = {
    "module": ("module", "ddp", "data_parallel"),
    "optimizer": ("optimizer",),
    "factory": ("from_numpy", "as_tensor", "tensor", "parameter"),
    "collective": ("init_process_group", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
                   "reduce", "barrier", "query", "destroy_process_group"),
    "class": ("sampler", "loader", "dataset", "scheduler"),
    "function": ("random_split", "collate", "flag", "jit_trace", "jit_script", "jit_load", "optimize_for_mobile"),
}
DEFAULT_RECIPE = {"module": "module", "optimizer": "optimizer"}
KNOWN_DTYPES = ("float32", "float16", "bfloat16", "float64", "complex64", "complex128",
                "int8", "int16", "int32", "int64", "uint8", "bool")
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")
INPUT_DTYPES = ("int64", "int32", "bool", "bernoulli")
EXPECTS = ("unsupported", "supported")
_NAME_RE = re.compile(r"^torch(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_SCALAR = (str, int, float, bool, type(None))


class CatalogueError(ValueError):
    """The catalogue file is unreadable or an entry does not have the expected shape."""


@dataclass(frozen=True)
class Variant:
    arguments: Dict[str, Any]
    inputs: Optional[List[Any]] = None
    dtype: Optional[str] = None
    random: bool = False
    match: Optional[str] = None  # a word of the knowledge base's limitation text
    expect: Optional[str] = None  # what that text says: unsupported | supported

    def to_dict(self) -> Dict[str, Any]:
        return {"arguments": dict(self.arguments), "inputs": self.inputs, "dtype": self.dtype,
                "random": self.random, "match": self.match, "expect": self.expect}


@dataclass(frozen=True)
class Entry:
    api: str
    kind: str
    recipe: str
    args: List[Any] = field(default_factory=list)
    kwargs: Dict[str, Any] = field(default_factory=dict)
    inputs: List[Any] = field(default_factory=list)
    dtypes: Optional[Tuple[str, ...]] = None
    random: bool = False
    host_only: Optional[str] = None
    variants: Tuple[Variant, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        """Plain data sent to the worker (JSON)."""
        return {"api": self.api, "kind": self.kind, "recipe": self.recipe, "args": list(self.args),
                "kwargs": dict(self.kwargs), "inputs": list(self.inputs),
                "dtypes": list(self.dtypes) if self.dtypes else None, "random": self.random,
                "host_only": self.host_only, "variants": [v.to_dict() for v in self.variants]}


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise CatalogueError(f"{CATALOGUE_FILE}: {where}: {what}")


def _plain(value: Any) -> bool:
    if isinstance(value, _SCALAR):
        return True
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _check_inputs(inputs: Any, where: str) -> List[Any]:
    _need(isinstance(inputs, list), where, "inputs must be a list")
    for i, spec in enumerate(inputs):
        w = f"{where}.inputs[{i}]"
        if isinstance(spec, list):
            _need(all(isinstance(n, int) and not isinstance(n, bool) and 0 < n <= 64 for n in spec), w,
                  "a shape is a list of small positive integers")
        else:
            _need(isinstance(spec, dict) and set(spec) <= {"shape", "dtype", "high"}, w,
                  "an input is a shape list or {shape, dtype, high}")
            _need(isinstance(spec.get("shape"), list) and all(isinstance(n, int) and 0 < n <= 64
                                                              for n in spec["shape"]), w, "bad shape")
            _need(spec.get("dtype") in INPUT_DTYPES, w, f"dtype must be one of {', '.join(INPUT_DTYPES)}")
            _need(isinstance(spec.get("high", 2), int), w, "high must be an integer")
    return inputs


def _check_entry(api: Any, raw: Any) -> Entry:
    where = f"apis.{api}"
    _need(isinstance(api, str) and bool(_NAME_RE.match(api)), where, "the key must be a dotted torch name")
    _need(isinstance(raw, dict), where, "an entry is a mapping")
    known = {"kind", "recipe", "args", "kwargs", "inputs", "dtypes", "random", "host_only", "variants"}
    _need(set(raw) <= known, where, f"unknown keys {sorted(set(raw) - known)}")
    kind = raw.get("kind")
    _need(kind in RECIPES, where, f"kind must be one of {', '.join(RECIPES)}")
    recipe = raw.get("recipe", DEFAULT_RECIPE.get(kind))
    _need(recipe in RECIPES[kind], where, f"recipe {recipe!r} is not one of {', '.join(RECIPES[kind])} for {kind}")
    args = raw.get("args", [])
    kwargs = raw.get("kwargs", {})
    _need(isinstance(args, list) and _plain(args), where, "args must be a list of plain values")
    _need(isinstance(kwargs, dict) and _plain(kwargs), where, "kwargs must be a mapping of plain values")
    inputs = _check_inputs(raw.get("inputs", []), where)
    dtypes = raw.get("dtypes")
    if dtypes is not None:
        _need(isinstance(dtypes, list) and dtypes and all(d in KNOWN_DTYPES for d in dtypes), where,
              f"dtypes must be a non-empty list of {', '.join(KNOWN_DTYPES)}")
        dtypes = tuple(dtypes)
    random = raw.get("random", False)
    _need(isinstance(random, bool), where, "random must be true or false")
    host_only = raw.get("host_only")
    _need(host_only is None or (isinstance(host_only, str) and host_only.strip()), where,
          "host_only must be a sentence saying why no device kernel runs")
    variants = []
    for i, v in enumerate(raw.get("variants") or []):
        w = f"{where}.variants[{i}]"
        _need(isinstance(v, dict) and set(v) <= {"arguments", "inputs", "dtype", "random", "limitation"}, w,
              "a variant has arguments, inputs, dtype, random, limitation")
        arguments = v.get("arguments", {})
        _need(isinstance(arguments, dict) and _plain(arguments), w, "arguments must be a mapping of plain values")
        vin = _check_inputs(v["inputs"], w) if "inputs" in v else None
        vd = v.get("dtype")
        _need(vd is None or vd in KNOWN_DTYPES, w, f"unknown dtype {vd!r}")
        _need(isinstance(v.get("random", False), bool), w, "random must be true or false")
        lim = v.get("limitation")
        match = expect = None
        if lim is not None:
            _need(isinstance(lim, dict) and set(lim) <= {"match", "expect"} and isinstance(lim.get("match"), str)
                  and lim.get("expect", "unsupported") in EXPECTS, w,
                  "limitation is {match: WORD, expect: unsupported|supported}")
            match, expect = lim["match"], lim.get("expect", "unsupported")
        _need(bool(arguments) or vin is not None or vd is not None, w, "a variant must change something")
        variants.append(Variant(dict(arguments), vin, vd, bool(v.get("random", False)), match, expect))
    return Entry(api, kind, recipe, list(args), dict(kwargs), list(inputs), dtypes, random,
                 host_only.strip() if isinstance(host_only, str) else None, tuple(variants))


def parse_catalogue(doc: Any) -> Dict[str, Entry]:
    _need(isinstance(doc, dict), "top level", "expected a mapping with meta and apis")
    meta = doc.get("meta")
    _need(isinstance(meta, dict) and meta.get("kind") == "probe_catalogue" and meta.get("source"), "meta",
          "needs kind: probe_catalogue and a source")
    apis = doc.get("apis")
    _need(isinstance(apis, dict) and apis, "apis", "expected a non-empty mapping")
    return {api: _check_entry(api, raw) for api, raw in apis.items()}


@lru_cache(maxsize=4)
def _load(path: str, _stamp: Tuple[int, int]) -> Dict[str, Entry]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogueError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{path}: not valid YAML: {exc}") from None
    return parse_catalogue(doc)


def load_catalogue(path: Optional[Path] = None) -> Dict[str, Entry]:
    """The validated catalogue, keyed by torch name; raises :class:`CatalogueError`."""
    p = Path(path or data_dir() / CATALOGUE_FILE)
    try:
        st = p.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    return _load(str(p), stamp)
