#!/usr/bin/env python3
"""Write the miss log (MISSLOG.md) and the per-target table of the benchmark README from two saved scores.

    python benchmarks/judgement/misslog.py FIRST.json FINAL.json [--classes misslog_classes.yaml] > MISSLOG.md
    python benchmarks/judgement/misslog.py FIRST.json FINAL.json --table     # the README's before/after table

Every miss of the first measurement is listed with its class (reach, dispatch, roles, conditions, defaults,
grades, knowledge; ``judge`` where a second look disputes the expectation) and what became of it at the final
measurement: met (and by which mechanism of its class) or still missed (with what the tool says now). A class is
given by hand in ``misslog_classes.yaml`` (label + check -> class and a note) where a person read the case; the
rest are classed by the shape of the miss (documented in :func:`auto_class`), and say so.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Dict, List, Tuple

import yaml

HERE = pathlib.Path(__file__).resolve().parent
GRADES = ("none", "low", "medium", "high", "blocked")
LIB_WORDS = ("xformers", "bitsandbytes", "load_in_8bit", "load_in_4bit", "flash_attn", "apex", "transformer_engine",
             "tensorrt", "megablocks", "torch_sparse", "deepspeed.ops")

# what each class's mechanisms were this round (MISSLOG's "fixed by" column for a miss met at the final run)
MECHANISMS = {
    "reach": "a name bound to an outside wrapper of an own callable (nms = amp.float_function(_C.nms)), containers filled in loops, attributes built by project factories, getattr(self, name) over add_module, a local bound to one of several callables, sys.path suffixes from os.getcwd() strings, modules found through sys.path imported under their bare name, stored lambdas not run at import, alternative imports in the branches of a test (stop 40); module-level factory-bound ops, callables kept on self / class attributes / module instances, attributes and containers built in __init__, a local bound to one of several classes (stop 39); per-program verdicts count only the program's own call paths (stop 38); program model: an imported module's main block is not run; unresolved dispatch listed, not counted (#29); a private method runs through its call sites, an override once its class is built, guards below a no-alternative guard kept (#29, stop 35)",
    "dispatch": "an unused JIT loader named like a well-known package is no extension of the project, undocumented methods of a guessed tensor are no tensor API, torch.ops.ns.f linked to its @custom_op function (stop 40); registries filled by register() and read by a getter, import_module of a build-declared CUDA extension (stop 39); alternative imports chosen by an option's default, Hydra configs named on the command line, string-keyed factory branches, import helpers read as imports (stop 38); dispatch resolved in general: dict/registry/config/classmethod/getattr/sys.path (#29); config classes that name the class they build, monkey patches, PYTHONPATH in launch scripts (stop 35)",
    "roles": "web applications (FastAPI/Flask/Starlette) and hubconf star imports as programs, make_*/build_*.py without packaging imports are no build scripts (stop 40); entry points and roles by evidence (#29)",
    "conditions": "constructor settings read where the instance is used, skipped CUDA blocks with no else, options left at their default, NPU branch first, try/except-pass, CUDA probes whose answer changes nothing on an NPU, dtype branches as the caller's choice, an if/elif chain ending in a raise whose every arm is unsupported (stop 40); is_cuda / availability tests that only choose between completing paths, flags imported from another module, early returns for non-CUDA tensors, None placeholders of failed imports used unchecked, a CUDA test an NPU answers false taking the fallback (stop 39); GPU-only availability tests false on an NPU host in library mode, device tests that stop an NPU, presence tests that assert or raise, calls tried for a value, torch version checks on the resolved version (stop 38); conditions: caller guards through no-alternative local guards, device tests, fallbacks (#30); callers' arguments, caller-data layout/size, lazy caches, try-import probes (stop 35)",
    "defaults": "defaults by data flow (#30)",
    "grades": "autocast('cuda', enabled=False) is advice; each entry point's verdict explains what it counts and what it does not (stop 40); native-NPU libraries (npu_support: native) leave functions supported, the CUDA autocast dtype read is info, two branches that both need the CUDA op are no fallback (stop 39); Triton-only libraries manual, TensorRT/torch2trt/Isaac Gym manual with high rework (stop 38); grades with one meaning: GPU-only libraries with a replacement are manual, at least medium (#30)",
    "knowledge": "torchsearchsorted, Megatron-LM (MindSpeed), ShardedGradScaler supported, GPU vendors' device tools as data (stop 40); cuda_only facts name their reporting pass (reported_by), torchao float8 inference and int4, SAT fused optimiser, torch_linear_assignment, symmetric memory (stop 39); curated host-side torch APIs, torch._C._cuda_* bindings, cuCIM (stop 38); knowledge: class rows for unlisted methods, one row per aten operator, curation, gaps (#31); DeepSpeed NPU accelerator, PyG ToSparseTensor, GPU-only packages, failed guarded imports (stop 35)",
    "judge": "expectation withdrawn or disputed on a second look (corrections file)",
}


def _rank(g: str) -> int:
    return GRADES.index(g) if g in GRADES else -1


def auto_class(kind: str, check: Dict) -> str:
    """The class of a miss from its shape, when no person classed it:
    * an entry point the tool does not list -> roles;
    * a library label: the tool says ``unknown`` (an undocumented API) or misses a GPU-only library -> knowledge;
      a device-type condition or a condition the judge does not see -> conditions; otherwise reach;
    * a project effort above the expected one with a GPU-only library driving it -> grades; above it otherwise ->
      reach (code the program does not run is counted); below it -> knowledge (what makes it harder is not found);
    * drivers -> knowledge; decoys (optional code among the top drivers) -> conditions."""
    got = check.get("got", "")
    if "not among" in got:
        return "roles"
    if kind == "library":
        want = check["expected"].split("/")[0]
        status = got.split()[1] if len(got.split()) > 1 else ""
        if status == "unknown" or (want == "unsupported" and status == "supported"):
            return "knowledge"
        if "device-type-check" in got or status == "conditional" or want == "conditional":
            return "conditions"
        return "reach" if want == "supported" else "knowledge"
    if check["check"] == "effort":
        tool = got.split(";")[0].replace("tool:", "").strip()
        want = [g for g in check["expected"].split("/") if g in GRADES]
        if want and _rank(tool) > max(_rank(g) for g in want):
            return "grades" if any(w in got for w in LIB_WORDS) and tool == "blocked" else "reach"
        return "knowledge"
    if check["check"] == "drivers":
        return "knowledge"
    return "conditions"


def batches() -> Dict[Tuple[str, str], str]:
    """(kind, folder) -> held-out batch name, from the benchmark's own files (heldout_batches.json)."""
    sys.path.insert(0, str(HERE))
    import judgement  # the benchmark's loader, beside this script
    return {(t["kind"], t["folder"]): t["batch"] for t in judgement.load_targets(require_frozen=False) if t["batch"]}


def _part(r: Dict, batch_of: Dict[Tuple[str, str], str]) -> str:
    """A batch keeps its name in every measurement, also once released to the tuned part (its first measurement
    was taken while it was held out)."""
    b = r.get("batch") or batch_of.get((r["kind"], r["name"]))
    if b:
        return f"batch {b}"
    return "held-out" if r["heldout"] else "tuned"


def _key(r: Dict, c: Dict) -> Tuple[str, str, str]:
    return (r["kind"], c["label"], c["check"])


def load(path: pathlib.Path) -> Dict[Tuple[str, str, str], Tuple[Dict, Dict]]:
    out = {}
    for r in json.loads(path.read_text(encoding="utf-8"))["results"]:
        for c in r["checks"]:
            out[_key(r, c)] = (r, c)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("first", type=pathlib.Path)
    ap.add_argument("final", type=pathlib.Path)
    ap.add_argument("--classes", type=pathlib.Path, default=HERE / "misslog_classes.yaml")
    ap.add_argument("--table", action="store_true", help="print the README's per-target before/after table")
    ap.add_argument("--heldout-notes", type=pathlib.Path, default=HERE / "heldout_notes.yaml",
                    help="why each held-out miss of the final measurement stays (read after that measurement)")
    ap.add_argument("--first-is", default="main at af2b05c for the tuned part and held-out batch H1; e8e3844 for "
                    "batch H2, judged in stop 36; 116b430 for batch H3, judged in stop 37: the code of cd03853, stop "
                    "36's final main", help="which code the first measurement ran (printed in the log's header)")
    ap.add_argument("--title", default="Miss log of the judgement benchmark", help="the log's heading")
    a = ap.parse_args()
    first = json.loads(a.first.read_text(encoding="utf-8"))["results"]
    final = json.loads(a.final.read_text(encoding="utf-8"))["results"]
    batch_of = batches()
    parts = ["tuned"] + sorted({_part(r, batch_of) for r in first + final} - {"tuned"})
    if a.table:
        fin = {(r["kind"], r["name"]): r for r in final}
        for part in parts:
            print(f"\n| {part} | kind | first | final |\n|---|---|---|---|")
            for r in sorted(first, key=lambda r: (r["kind"], r["name"].lower())):
                if _part(r, batch_of) != part:
                    continue
                f = fin.get((r["kind"], r["name"]))
                fs = f"{f['met']}/{f['total']}" + (f" ({f['effort']})" if r["kind"] == "project" else "") if f else "-"
                print(f"| {r['name']} | {r['kind']} | {r['met']}/{r['total']}"
                      + (f" ({r['effort']})" if r["kind"] == "project" else "") + f" | {fs} |")
        return 0
    hand, by_target = {}, {}
    notes = {}
    if a.heldout_notes.exists():
        for row in yaml.safe_load(a.heldout_notes.read_text(encoding="utf-8")) or []:
            for check in row["checks"]:
                notes[(row["label"], check)] = row
    # a miss a person read after a held-out measurement (heldout_notes.yaml) is classed by hand, unless
    # misslog_classes.yaml says otherwise
    hand.update({k: {"class": row["class"]} for k, row in notes.items()})
    if a.classes.exists():
        for row in yaml.safe_load(a.classes.read_text(encoding="utf-8")) or []:
            if "target" in row:
                by_target[row["target"]] = row     # every miss of one project or library, unless a label row says
            else:
                hand[(row["label"], row.get("check", "status"))] = row
    fin = {}
    for r in final:
        for c in r["checks"]:
            fin[_key(r, c)] = c
    rows: List[Tuple] = []
    for r in first:
        for c in r["checks"]:
            if c["met"]:
                continue
            h = hand.get((c["label"], c["check"]))
            if h is None and r["name"] in by_target and not r["heldout"]:
                h = by_target[r["name"]]
            cls = h["class"] if h else auto_class(r["kind"], c)
            how = "by hand" if h else "by shape"
            now = fin.get(_key(r, c))
            if now is None:
                outcome = "withdrawn (corrections file)" if r["kind"] == "project" else "not scored"
                if r["kind"] == "project":
                    cls, how = "judge", "by hand"
            elif now["met"]:
                outcome = "met: " + (h.get("fixed") if h and h.get("fixed") else MECHANISMS.get(cls, cls))
            else:
                outcome = "stays: " + (h.get("stays") if h and h.get("stays") else now["got"][:160])
            rows.append((_part(r, batch_of), r["kind"], c["label"], c["check"], cls, how,
                         outcome.replace("|", "/")))
    firsts = {}
    for r in first:
        for c in r["checks"]:
            firsts[_key(r, c)] = c
    new_misses = []
    for r in final:
        for c in r["checks"]:
            was = firsts.get(_key(r, c))
            if not c["met"] and was is not None and was["met"]:
                new_misses.append((_part(r, batch_of), r["kind"], c["label"], c["check"],
                                   auto_class(r["kind"], c), c["got"][:180].replace("|", "/")))
    print(f"# {a.title}\n")
    print(f"Every miss of the first measurement ({a.first_is}), its class and what became of it at the final "
          "measurement. Written by `misslog.py` from the two saved scores; classes by hand where a person read the "
          "case (`misslog_classes.yaml`, `heldout_notes.yaml`), otherwise by the shape of the miss (see `auto_class`).\n")
    for part in parts:
        sel = [x for x in rows if x[0] == part]
        met = sum(x[6].startswith("met") for x in sel)
        by = {}
        for x in sel:
            d = by.setdefault(x[4], [0, 0])
            d[0] += 1
            d[1] += x[6].startswith("met")
        print(f"## {part}: {len(sel)} misses, {met} met at the final measurement\n")
        print("| class | misses | met now |\n|---|---|---|")
        for k, (n, m) in sorted(by.items(), key=lambda kv: -kv[1][0]):
            print(f"| {k} | {n} | {m} |")
        print("\n| kind | check | class | outcome |\n|---|---|---|---|")
        for x in sel:
            print(f"| {x[1]} | `{x[2]}` {x[3]} | {x[4]} ({x[5]}) | {x[6]} |")
        print()
    print("## New misses: met at the first measurement, missed at the final one\n")
    print("Regressions are part of the record: each is a check a change of this round broke, classed by shape.\n")
    print("| part | kind | check | class | what the tool says now |\n|---|---|---|---|---|")
    for x in new_misses:
        print(f"| {x[0]} | {x[1]} | `{x[2]}` {x[3]} | {x[4]} | {x[5]} |")
    held = [(r, c) for r in final if r["heldout"] for c in r["checks"] if not c["met"]]
    print("\n## Held-out misses at the final measurement, and why each stays\n")
    print("Read after the final measurement from the saved reports and the pinned sources (`heldout_notes.yaml`); "
          "nothing was tuned on them afterwards. A miss without a note is marked UNEXPLAINED.\n")
    by_class = {}
    for r, c in held:
        n = notes.get((c["label"], c["check"]))
        key = (_part(r, batch_of), n["class"] if n else "UNEXPLAINED")
        by_class[key] = by_class.get(key, 0) + 1
    print("| part | class | misses |\n|---|---|---|")
    for (p, k), v in sorted(by_class.items(), key=lambda kv: (kv[0][0], -kv[1])):
        print(f"| {p} | {k} | {v} |")
    print("\n| part | kind | check | class | why it stays |\n|---|---|---|---|---|")
    for r, c in held:
        n = notes.get((c["label"], c["check"]))
        text = " ".join(str(n["note"]).split()).replace("|", "/") if n else "UNEXPLAINED"
        print(f"| {_part(r, batch_of)} | {r['kind']} | `{c['label']}` {c['check']} | {n['class'] if n else '-'} | "
              f"{text} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
