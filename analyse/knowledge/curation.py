"""The curation layer over the official native-API tables (``data/curation.yaml``).

The official Ascend support lists are read literally by ``tools/build_knowledge.py``; a few of their rows
contradict other rows or the code they describe (``torch.optim.Adam.step`` No while ``torch.optim.Adam`` is
Yes; ``RowwiseParallel`` No while ``ColwiseParallel`` is Yes; ``clip_grad_norm_`` No for torch 2.6.0 only).
``data/curation.yaml`` holds what an Ascend engineer knows about them, each entry with its evidence:

* ``overrides``: the official row (its name and status, or ``absent``), the evidence that contradicts it
  (``class-row``, ``sibling-row``, ``later-release``, ``earlier-release`` (a row every earlier release lists that
  one release's table leaves out), ``pytorch-source``, ``op-plugin``, ``transfer_to_npu``),
  the conditions the builder checks before applying it (``requires_aten``: op-plugin registers an NPU kernel
  for these aten ops in that release; ``requires_transfer``: transfer_to_npu wraps the API in that release)
  and the resulting status. The builder writes the resulting status into the generated table and keeps the
  official one in the entry's ``curation`` block, so the report and ``explain`` can say "documented No,
  contradicted by ...; probe to confirm".
* ``reviewed``: contradictions an engineer looked at and kept as documented, with the reason.

:func:`contradictions` lists the self-contradictions of the official tables (a class Yes and its method No,
a row No while its siblings are Yes, a row No that a later release marks Yes); the knowledge tests fail on one
that neither list covers. The file is validated when loaded.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["CURATION_FILE", "EVIDENCE_KINDS", "load_curation", "validate_curation", "contradictions", "covering_entry",
           "official_view", "Contradiction"]

CURATION_FILE = "curation.yaml"
EVIDENCE_KINDS = ("class-row", "sibling-row", "functional-row", "later-release", "earlier-release", "pytorch-source",
                  "op-plugin", "transfer_to_npu")
RESULT_STATUSES = ("supported", "limited", "unsupported")
OFFICIAL = ("unsupported", "absent")
CONTRADICTION_KINDS = ("class", "sibling", "functional", "later-release")


class CurationError(Exception):
    """data/curation.yaml does not have the expected shape."""


def _req(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise CurationError(f"data/{CURATION_FILE}: {where}: {what}")


def _str_list(v) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, str) and x for x in v)


def validate_curation(doc) -> dict:
    """Check the shape of data/curation.yaml; returns it."""
    _req(isinstance(doc, dict), "top level", "must be a mapping")
    meta = doc.get("meta")
    _req(isinstance(meta, dict) and all(isinstance(meta.get(k), str) and meta[k] for k in ("source", "date")), "meta",
         "needs source and date")
    ids: set = set()
    overrides = doc.get("overrides")
    _req(isinstance(overrides, list) and overrides, "overrides", "must be a non-empty list")
    for i, o in enumerate(overrides):
        w = f"overrides[{i}]"
        _req(isinstance(o, dict), w, "must be a mapping")
        _req(isinstance(o.get("id"), str) and o["id"] and o["id"] not in ids, w, "needs a unique id")
        ids.add(o["id"])
        w = f"overrides[{o['id']}]"
        _req(_str_list(o.get("apis")), w, "apis must be a non-empty list of names (a trailing * matches a prefix)")
        _req(o.get("official") in OFFICIAL, w, f"official must be one of {OFFICIAL} (the official row it overrides)")
        same = o.get("same_as")
        _req(same is None or (isinstance(same, str) and same.startswith("torch.") and "*" not in same), w,
             "same_as must name one API row (the row whose status and limitations the APIs take in each release)")
        if same is None:
            _req(o.get("status") in RESULT_STATUSES, w, f"status must be one of {RESULT_STATUSES}")
        else:
            _req(o.get("status") is None and o.get("limitations") is None, w,
                 "same_as takes the status and limitations of its row: give neither")
        _req(isinstance(o.get("contradicted_by"), str) and o["contradicted_by"].strip(), w, "contradicted_by must say what")
        ev = o.get("evidence")
        _req(isinstance(ev, list) and ev, w, "evidence must be a non-empty list")
        for e in ev:
            _req(isinstance(e, dict) and e.get("kind") in EVIDENCE_KINDS, w, f"evidence kind must be one of {EVIDENCE_KINDS}")
            _req(isinstance(e.get("source"), str) and e["source"].strip(), w, "each evidence names its source")
            _req(isinstance(e.get("fact"), str) and e["fact"].strip(), w, "each evidence states its fact")
        _req(o.get("status") != "limited" or (isinstance(o.get("limitations"), str) and o["limitations"].strip()), w,
             "status limited needs a limitations text")
        _req(o.get("requires_parent") in (None, True, False), w, "requires_parent must be a bool")
        for k in ("requires_aten", "requires_transfer", "torch_versions"):
            _req(o.get(k) is None or _str_list(o[k]), w, f"{k} must be a list of strings")
        _req(isinstance(o.get("advice"), str) and o["advice"].strip(), w, "advice must say what to do (probe to confirm)")
    reviewed = doc.get("reviewed")
    _req(isinstance(reviewed, list), "reviewed", "must be a list")
    for i, r in enumerate(reviewed):
        w = f"reviewed[{i}]"
        _req(isinstance(r, dict), w, "must be a mapping")
        _req(isinstance(r.get("id"), str) and r["id"] and r["id"] not in ids, w, "needs a unique id")
        ids.add(r["id"])
        _req(_str_list(r.get("apis")), f"reviewed[{r['id']}]", "apis must be a non-empty list of names")
        _req(r.get("decision") == "keep", f"reviewed[{r['id']}]", "decision must be keep (an override changes a row)")
        _req(isinstance(r.get("reason"), str) and r["reason"].strip(), f"reviewed[{r['id']}]", "reason must say why")
        kinds = r.get("kinds")
        _req(kinds is None or (isinstance(kinds, list) and all(k in CONTRADICTION_KINDS for k in kinds)),
             f"reviewed[{r['id']}]", f"kinds must be a list of {CONTRADICTION_KINDS}")
    return doc


def matches(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


@lru_cache(maxsize=None)
def _load(path_str: str) -> dict:
    from analyse.knowledge import load_yaml

    text = Path(path_str).read_text(encoding="utf-8")
    return validate_curation(load_yaml(text))


def load_curation(data_root: str | Path | None = None) -> dict:
    """data/curation.yaml, validated (cached; read-only)."""
    from analyse.paths import data_dir

    root = Path(data_root) if data_root is not None else data_dir()
    return _load(str(root / CURATION_FILE))


# --------------------------------------------------------------------------- self-contradictions


class Contradiction(tuple):
    """(kind, torch version, api, the row that contradicts it)."""

    __slots__ = ()

    def __new__(cls, kind: str, version: str, api: str, other: str):
        return super().__new__(cls, (kind, version, api, other))

    kind = property(lambda s: s[0])
    version = property(lambda s: s[1])
    api = property(lambda s: s[2])
    other = property(lambda s: s[3])


def official_view(apis: Mapping[str, dict]) -> dict:
    """name -> the official status of a generated table (a curated row counts with its official status;
    a row the curation added is left out)."""
    out = {}
    for name, e in apis.items():
        cur = e.get("curation")
        if cur is None:
            out[name] = e["status"]
        elif cur.get("official") != "absent":
            out[name] = cur["official"]
    return out


_LAST_WORD = re.compile(r"[A-Z][a-z0-9]+$")
_NN = "torch.nn."
_FUNCTIONAL = "torch.nn.functional."
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def functional_pairs(table: Mapping[str, object]) -> dict:
    """{name: the other side} for the module class / functional pairs of one table, both ways:
    ``torch.nn.MaxPool3d`` <-> ``torch.nn.functional.max_pool3d`` (``RReLU`` <-> ``rrelu``). A module's ``forward``
    is its functional form called with the arguments its constructor stored."""
    out = {}
    for k in table:
        if not (k.startswith(_NN) and k.count(".") == 2 and k[len(_NN):][:1].isupper()):
            continue
        cls = k[len(_NN):]
        for short in dict.fromkeys((_CAMEL.sub(r"_\1", cls).lower(), cls.lower())):
            if _FUNCTIONAL + short in table:
                out[k] = _FUNCTIONAL + short
                out[_FUNCTIONAL + short] = k
                break
    return out


def contradictions(tables: Mapping[str, Mapping[str, str]], versions: list[str]) -> list[Contradiction]:
    """Self-contradictions of the official tables ({version: {name: official status}}, versions oldest first):

    * class: ``C.m`` is No while the class row ``C`` is Yes (supported or limited);
    * sibling: ``mod.XParallel`` is No while every other ``mod.*Parallel`` row (same module, same last word of
      the class name) is Yes;
    * functional: a module class row is No while its functional form is Yes (``torch.nn.MaxPool3d`` /
      ``torch.nn.functional.max_pool3d``), or the other way round (:func:`functional_pairs`);
    * later-release: a row No for one torch version that a later version's table marks Yes.
    """
    out: list[Contradiction] = []
    for i, v in enumerate(versions):
        t = tables[v]
        by_parent: dict = {}
        pairs = functional_pairs(t)
        for name in t:
            by_parent.setdefault(name.rsplit(".", 1)[0], []).append(name)
        for name, st in t.items():
            if st != "unsupported":
                continue
            parent, last = name.rsplit(".", 1) if "." in name else ("", name)
            if parent.rsplit(".", 1)[-1][:1].isupper() and t.get(parent) in ("supported", "limited"):
                out.append(Contradiction("class", v, name, parent))
            m = _LAST_WORD.search(last)
            if m and last != m.group(0):
                sibs = [k for k in by_parent.get(parent, ()) if k != name and k.rsplit(".", 1)[-1].endswith(m.group(0))]
                if sibs and all(t[k] in ("supported", "limited") for k in sibs):
                    out.append(Contradiction("sibling", v, name, ", ".join(sorted(sibs))))
            other = pairs.get(name)
            if other is not None and t[other] in ("supported", "limited"):
                out.append(Contradiction("functional", v, name, other))
            later = next((w for w in versions[i + 1:] if tables[w].get(name) in ("supported", "limited")), None)
            if later is not None:
                out.append(Contradiction("later-release", v, name, f"{name} at torch {later}"))
    return out


def covering_entry(cur: dict, c: Contradiction):
    """The override or reviewed entry of data/curation.yaml that covers a contradiction, or None."""
    for o in cur["overrides"]:
        if matches(o["apis"], c.api) and (not o.get("torch_versions") or c.version in o["torch_versions"]):
            return o
    for r in cur["reviewed"]:
        if matches(r["apis"], c.api) and (not r.get("kinds") or c.kind in r["kinds"]):
            return r
    return None
