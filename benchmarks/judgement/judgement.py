#!/usr/bin/env python3
"""The judgement benchmark: hand-judged verdicts and library statuses on public repositories, scored against
the installed ``npu-analyse``.

    python benchmarks/judgement/judgement.py check                 # files valid, every one frozen
    python benchmarks/judgement/judgement.py materialize DIR       # pinned commits into DIR (outside the repo)
    python benchmarks/judgement/judgement.py score DIR [--part tuned|heldout|all] [--batch H2] [--only NAME] [--json FILE]
                                                   [--reports DIR] [--tool npu-analyse]

Each expectation file under ``projects/`` and ``libraries/`` was written by a judge who had not seen the tool's
output on that repository, then frozen: its SHA-256 is listed in a ``FROZEN-*.sha256`` file before the first
run. A frozen file is never edited; a later correction is a ``NAME.corrections.json`` beside it (also frozen),
applied on top when scoring, so the history stays honest.

A correction may also withdraw an expectation (``"field": "withdrawn", "now": true``) when a second look finds it
is not what the schema asks (a module that is no program named as an entry point): it is then listed with its reason
and not scored.

A project check is one of: the effort of an expectation, its drivers (one of ``drivers_any`` among the drivers
or the part of the explanation that says what counts: an API it names as advice or
as not counted is no driver), its decoys (none of ``not_drivers`` among the top three drivers). A library label is met
when the tool's status is ``expect`` or one of ``accept`` (an unlisted function is ``supported``).

Nothing here imports the analyser: it runs the command line, reads ``report.json`` and compares.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = pathlib.Path(__file__).resolve().parent
GRADES = ("none", "low", "medium", "high", "blocked")
STATUSES = ("unsupported", "conditional", "supported", "needs-migration", "unknown")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
REPO_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


# ---------------------------------------------------------------------------------------------------- loading
class Invalid(ValueError):
    pass


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise Invalid(f"{where}: {what}")


def _rel_path_ok(p: Any) -> bool:
    return isinstance(p, str) and not p.startswith("/") and ".." not in pathlib.PurePosixPath(p).parts


def validate_target(obj: Any, where: str, kind: str) -> Dict[str, Any]:
    """Check one expectation file's shape (the practice schema plus repo/commit/folder); return it."""
    _need(isinstance(obj, dict), where, "not a JSON object")
    _need(isinstance(obj.get("repo"), str) and REPO_RE.match(obj["repo"]) is not None, where, "repo is not OWNER/NAME")
    _need(isinstance(obj.get("commit"), str) and SHA_RE.match(obj["commit"]) is not None, where, "commit is not 40 hex")
    _need(isinstance(obj.get("folder"), str) and NAME_RE.match(obj["folder"]) is not None, where, "bad folder")
    _need(isinstance(obj.get("heldout"), bool), where, "heldout must be true or false")
    if kind == "project":
        _need(_rel_path_ok(obj.get("root", "")), where, "root must be a relative path")
        exps = obj.get("expectations")
        _need(isinstance(exps, list) and exps, where, "no expectations")
        for i, e in enumerate(exps):
            w = f"{where} expectations[{i}]"
            _need(isinstance(e, dict), w, "not an object")
            _need(e.get("entry") is None or _rel_path_ok(e.get("entry")), w, "entry must be null or a relative path")
            eff = e.get("effort")
            _need(isinstance(eff, list) and eff and all(g in GRADES for g in eff), w, f"effort must list grades of {GRADES}")
            for k in ("drivers_any", "not_drivers"):
                v = e.get(k, [])
                _need(isinstance(v, list) and all(isinstance(s, str) and s for s in v), w, f"{k} must be a list of strings")
            _need(isinstance(e.get("evidence"), str) and e["evidence"].strip(), w, "evidence missing")
    else:
        _need(_rel_path_ok(obj.get("package")) and obj.get("package"), where, "package must be a relative path")
        labels = obj.get("labels")
        _need(isinstance(labels, list) and labels, where, "no labels")
        seen = set()
        for i, r in enumerate(labels):
            w = f"{where} labels[{i}]"
            _need(isinstance(r, dict) and isinstance(r.get("qualname"), str) and r["qualname"], w, "qualname missing")
            _need(r.get("expect") in ("unsupported", "conditional", "supported"), w, "expect must be unsupported/conditional/supported")
            acc = r.get("accept", [])
            _need(isinstance(acc, list) and all(a in STATUSES for a in acc), w, f"accept must list statuses of {STATUSES}")
            _need(isinstance(r.get("why"), str) and r["why"].strip(), w, "why missing")
            _need(r["qualname"] not in seen, w, f"duplicate qualname {r['qualname']}")
            seen.add(r["qualname"])
    return obj


def _frozen_records(folder: pathlib.Path) -> Dict[str, Tuple[str, str]]:
    """path (relative to the benchmark folder) -> (the SHA-256 it was frozen with, the FROZEN-*.sha256 file that
    records it); the first record wins."""
    out: Dict[str, Tuple[str, str]] = {}
    for f in sorted(folder.glob("FROZEN-*.sha256")):
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 2 and re.fullmatch(r"[0-9a-f]{64}", parts[0]):
                out.setdefault(parts[1].lstrip("*"), (parts[0], f.name))
    return out


def frozen_hashes(folder: pathlib.Path = HERE) -> Dict[str, str]:
    """path (relative to the benchmark folder) -> the SHA-256 it was frozen with (first record wins)."""
    return {path: digest for path, (digest, _file) in _frozen_records(folder).items()}


def load_batches(folder: pathlib.Path = HERE) -> List[Dict[str, Any]]:
    """The held-out batches (``heldout_batches.json``): each names the judges' FROZEN files its targets were
    frozen in and when it was judged. A batch is scored and reported apart, so that a batch judged after the
    tool's authors had read an earlier batch's misses still measures code nobody tuned for. A batch whose
    misses were read and then tuned on says so in ``released``: from then on it is scored with the tuned part
    (still named by its batch), and only the batches not released measure generalisation."""
    path = folder / "heldout_batches.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    _need(isinstance(data, list), path.name, "not a list")
    names = set()
    for i, b in enumerate(data):
        w = f"{path.name}[{i}]"
        _need(isinstance(b, dict) and isinstance(b.get("name"), str) and NAME_RE.match(b["name"]) is not None,
              w, "bad name")
        _need(b["name"] not in names, w, f"duplicate batch {b['name']}")
        names.add(b["name"])
        _need(isinstance(b.get("frozen_in"), list) and b["frozen_in"]
              and all(isinstance(x, str) and re.fullmatch(r"FROZEN-[A-Za-z0-9_-]+\.sha256", x) for x in b["frozen_in"]),
              w, "frozen_in must list FROZEN-*.sha256 files")
        _need(isinstance(b.get("judged"), str) and b["judged"].strip(), w, "judged missing")
        _need(b.get("released") is None or (isinstance(b["released"], str) and b["released"].strip()), w,
              "released must say when and why the batch joined the tuned part")
    return data


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def apply_corrections(obj: Dict[str, Any], corr: List[Dict[str, Any]], kind: str) -> Dict[str, Any]:
    """A correction names an expectation (``entry``) or a label (``qualname``), a field and its new value."""
    obj = json.loads(json.dumps(obj))
    items = obj["expectations"] if kind == "project" else obj["labels"]
    key = "entry" if kind == "project" else "qualname"
    for c in corr:
        for it in items:
            if it.get(key) == c.get(key):
                it[c["field"]] = c["now"]
                it.setdefault("corrected", []).append(c.get("why", ""))
    return obj


def load_targets(folder: pathlib.Path = HERE, require_frozen: bool = True) -> List[Dict[str, Any]]:
    """Every project and library file, validated, with corrections applied; ``kind`` and ``file`` added."""
    records = _frozen_records(folder)
    hashes = {path: digest for path, (digest, _file) in records.items()}
    where_frozen = {path: file for path, (_digest, file) in records.items()}
    batches = load_batches(folder)
    out = []
    for kind, sub in (("project", "projects"), ("library", "libraries")):
        for path in sorted((folder / sub).glob("*.json")):
            if path.name.endswith(".corrections.json"):
                continue
            rel = f"{sub}/{path.name}"
            obj = validate_target(json.loads(path.read_text(encoding="utf-8")), rel, kind)
            if require_frozen:
                _need(rel in hashes, rel, "not frozen (no FROZEN-*.sha256 line)")
                _need(hashes[rel] == sha256(path), rel, "edited after it was frozen (hash differs)")
            corr_path = path.with_name(path.stem + ".corrections.json")
            if corr_path.exists():
                crel = f"{sub}/{corr_path.name}"
                if require_frozen:
                    _need(hashes.get(crel) == sha256(corr_path), crel, "correction not frozen")
                obj = apply_corrections(obj, json.loads(corr_path.read_text(encoding="utf-8")), kind)
            obj["kind"], obj["file"] = kind, rel
            obj["batch"] = None
            if obj["heldout"] and batches:
                hits = [b["name"] for b in batches if where_frozen.get(rel) in b["frozen_in"]]
                _need(len(hits) == 1, rel, "a held-out file must be frozen in the FROZEN file of exactly one batch "
                      f"of heldout_batches.json (found {hits or 'none'})")
                obj["batch"] = hits[0]
                released = next(b.get("released") for b in batches if b["name"] == hits[0])
                if released:
                    obj["heldout"], obj["released"] = False, released
            out.append(obj)
    return out


# ---------------------------------------------------------------------------------------------------- materialize
def materialize(targets: List[Dict[str, Any]], dest: pathlib.Path, mirror: Optional[pathlib.Path]) -> int:
    """Clone each repository at its pinned commit into dest/<folder>; blobs a snapshot lacks (large files) are
    left out with a sparse checkout. A local bare mirror <mirror>/<owner>+<name>/repo is used when present."""
    dest.mkdir(parents=True, exist_ok=True)
    failed = 0
    done = set()
    for t in targets:
        key = (t["repo"], t["commit"], t["folder"])
        if key in done:
            continue
        done.add(key)
        dst = dest / t["folder"]
        src = None
        if mirror is not None:
            cand = mirror / t["repo"].replace("/", "+") / "repo"
            src = str(cand) if cand.is_dir() else None
        src = src or f"https://github.com/{t['repo']}"
        try:
            if not (dst / ".git").is_dir():
                subprocess.run(["git", "clone", "-q", "--no-checkout", src, str(dst)], check=True)
            sha = t["commit"]
            if subprocess.run(["git", "-C", str(dst), "cat-file", "-e", sha + "^{commit}"],
                              capture_output=True).returncode != 0:
                subprocess.run(["git", "-C", str(dst), "fetch", "-q", "origin", sha], check=True)
            tree = subprocess.run(["git", "-C", str(dst), "ls-tree", "-r", sha], check=True,
                                  capture_output=True, text=True).stdout
            blobs = []
            for line in tree.splitlines():
                meta, _, path = line.partition("\t")
                parts = meta.split()
                if len(parts) == 3 and parts[1] == "blob":
                    blobs.append((parts[2], path))
            have = subprocess.run(["git", "-C", str(dst), "cat-file", "--batch-check"],
                                  input="\n".join(b for b, _ in blobs) + "\n", capture_output=True, text=True).stdout
            missing = [p for (b, p), line in zip(blobs, have.splitlines()) if line.endswith("missing")]
            if missing:
                spec = "/*\n" + "".join(f"!/{p}\n" for p in missing)
                subprocess.run(["git", "-C", str(dst), "sparse-checkout", "set", "--no-cone", "--stdin"],
                               input=spec, text=True, check=True, capture_output=True)
            subprocess.run(["git", "-C", str(dst), "-c", "advice.detachedHead=false", "checkout", "-q", "--detach",
                            sha], check=True)
            print(f"{t['repo']} @ {sha[:12]} -> {dst}" + (f" ({len(missing)} large files left out)" if missing else ""))
        except (subprocess.CalledProcessError, OSError) as e:
            failed += 1
            print(f"FAILED {t['repo']} @ {t['commit'][:12]}: {e}", file=sys.stderr)
    return failed


# ---------------------------------------------------------------------------------------------------- scoring
def run_tool(tool: str, mode: str, path: pathlib.Path, keep: Optional[pathlib.Path], timeout: int,
             extra: List[str]) -> Tuple[Optional[Dict[str, Any]], str, float]:
    with tempfile.TemporaryDirectory() as out:
        cmd = [tool, mode, str(path), "-o", out, "-q", "--format", "json", "--exit-zero", "--isolated"] + extra
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"could not run ({type(e).__name__})", time.perf_counter() - t0
        dt = time.perf_counter() - t0
        rp = pathlib.Path(out) / "report.json"
        if not rp.exists():
            return None, f"no report (exit {p.returncode}): {p.stderr.strip()[-300:]}", dt
        if keep is not None:
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(rp, keep)
        try:
            return json.loads(rp.read_text(encoding="utf-8")), "", dt
        except ValueError as e:
            return None, f"unreadable report: {e}", dt


def _norm(p: Any) -> str:
    p = str(p).replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p


def _api(d: Any) -> str:
    return d.get("api", "") if isinstance(d, dict) else str(d)


# the parts of an explanation that name what the tool says needs no change or does not count (an entry point's
# verdict lists them after what it counts): an API named there is not one of its drivers
NOT_COUNTED_MARKS = ("Advice and notes that need no change", "Not counted")


def _counted_part(text: str) -> str:
    cut = min((i for i in (text.find(m) for m in NOT_COUNTED_MARKS) if i >= 0), default=len(text))
    return text[:cut]


def _drivers(*objs: Any) -> Tuple[Optional[List[Any]], str]:
    drivers, text = None, ""
    for obj in objs:
        if not isinstance(obj, dict):
            continue
        d = obj.get("drivers")
        if drivers is None and isinstance(d, list):
            drivers = d
        for k in ("explanation", "top_driver", "headline"):
            v = obj.get(k)
            if isinstance(v, str):
                text += " " + (_counted_part(v) if k == "explanation" else v)
            elif isinstance(v, dict) and isinstance(v.get("api"), str):
                text += " " + v["api"]
    return drivers, text


def _tool_says(verdict: Dict[str, Any], drivers: Optional[List[Any]]) -> str:
    eff = verdict.get("effort")
    top = [_api(d) for d in (drivers or [])][:3]
    expl = (verdict.get("explanation") or "").strip().replace("\n", " ")
    return f"tool: {eff}; drivers {top}" + (f"; '{expl[:220]}'" if expl else "")


def score_project(t: Dict[str, Any], rep: Optional[Dict[str, Any]], err: str) -> Dict[str, Any]:
    checks: List[Dict[str, Any]] = []

    def add(label: str, kind: str, ok: bool, expected: str, got: str, exp: Dict[str, Any]) -> None:
        checks.append({"label": label, "check": kind, "met": bool(ok), "expected": expected, "got": got,
                       "expected_why": (exp.get("reasoning") or exp.get("evidence") or "")[:400]})

    summary = (rep or {}).get("summary") or {}
    verdict = summary.get("verdict") or {}
    eps = summary.get("entry_points") if isinstance(summary.get("entry_points"), list) else []
    withdrawn = [e for e in t["expectations"] if e.get("withdrawn")]
    for exp in t["expectations"]:
        if exp.get("withdrawn"):
            continue   # a second look found it wrong (corrections file, reason kept): not scored, listed
        entry = exp.get("entry")
        label = f"{t['folder']} " + (entry or "(project)")
        kinds = ["effort"] + (["drivers"] if exp.get("drivers_any") else []) + (["decoys"] if exp.get("not_drivers") else [])
        if rep is None:
            for k in kinds:
                add(label, k, False, "a report", err, exp)
            continue
        if entry is None:
            v, holder = verdict, None
        else:
            want = _norm(entry)
            root = _norm(t.get("root") or "").strip("/")
            if root and want.startswith(root + "/"):
                # the judging brief writes entries relative to the repository root; the report's paths are
                # relative to the analysed sub-folder (earlier judges wrote them that way: both are read)
                want = want[len(root) + 1:]
            items = [e for e in eps if isinstance(e, dict) and _norm(e.get("path", "")) == want]
            items = items or [e for e in eps if isinstance(e, dict) and _norm(e.get("path", "")).endswith("/" + want)]
            if not items:
                names = sorted(_norm(e.get("path", "")) for e in eps if isinstance(e, dict))
                for k in kinds:
                    add(label, k, False, f"entry point {entry}", f"not among {len(names)} entry points {names[:8]}", exp)
                continue
            v, holder = (items[0].get("verdict") or {}), items[0]
        drivers, text = _drivers(v, holder)
        says = _tool_says(v, drivers)
        add(label, "effort", v.get("effort") in exp["effort"], "/".join(exp["effort"]), says, exp)
        if exp.get("drivers_any"):
            hay = " ".join(_api(d).lower() for d in (drivers or [])) + " " + text.lower()
            add(label, "drivers", any(s.lower() in hay for s in exp["drivers_any"]),
                "one of " + ", ".join(exp["drivers_any"]), says, exp)
        if exp.get("not_drivers"):
            top = [_api(d) for d in (drivers or [])][:3]
            wrong = [a for a in top if any(s.lower() in a.lower() for s in exp["not_drivers"])]
            add(label, "decoys", not wrong, "none of " + ", ".join(exp["not_drivers"]) + " in the top 3",
                f"top drivers {top}", exp)
    return {"name": t["folder"], "repo": t["repo"], "kind": "project", "heldout": t["heldout"], "batch": t.get("batch"),
            "effort": verdict.get("effort"), "checks": checks,
            "withdrawn": [{"entry": e.get("entry"), "why": "; ".join(e.get("corrected", []))} for e in withdrawn],
            "met": sum(c["met"] for c in checks), "total": len(checks)}


def score_library(t: Dict[str, Any], rep: Optional[Dict[str, Any]], err: str) -> Dict[str, Any]:
    fns = {f.get("qualname"): f for f in ((rep or {}).get("thirdparty") or {}).get("functions", [])
           if isinstance(f, dict)}
    checks = []
    for r in t["labels"]:
        fn = fns.get(r["qualname"])
        got = "supported" if fn is None else ("supported" if fn.get("status") in ("ok", "supported") else fn.get("status"))
        ok = rep is not None and (got == r["expect"] or got in r.get("accept", []))
        why = ""
        if rep is None:
            why = err
        elif fn:
            bits = []
            for k in ("reasons", "conditions"):
                if fn.get(k):
                    bits.append(f"{k}=" + "; ".join(map(str, fn[k][:2])))
            if fn.get("via") and len(fn["via"]) > 1:
                bits.append("via=" + " > ".join(q.rsplit(".", 1)[-1] for q in fn["via"][:5]))
            why = " ".join(bits)[:400]
        checks.append({"label": r["qualname"], "check": "status", "met": bool(ok),
                       "expected": "/".join([r["expect"]] + list(r.get("accept", []))), "got": f"tool: {got} {why}".strip(),
                       "expected_why": (r.get("condition") or r.get("why") or "")[:400]})
    summ = ((rep or {}).get("thirdparty") or {}).get("summary", {})
    return {"name": t["folder"], "repo": t["repo"], "kind": "library", "heldout": t["heldout"], "batch": t.get("batch"),
            "by_status": summ.get("by_status"), "checks": checks,
            "met": sum(c["met"] for c in checks), "total": len(checks)}


def _plural(kind: str, n: int) -> str:
    """'1 project', '2 projects', '3 libraries'."""
    if n == 1:
        return kind
    return kind[:-1] + "ies" if kind.endswith("y") else kind + "s"


def _pct(m: int, n: int) -> str:
    return f"{m}/{n} ({100 * m / n:.0f}%)" if n else "0/0"


def score(targets: List[Dict[str, Any]], dest: pathlib.Path, tool: str, reports: Optional[pathlib.Path],
          workers: int, timeout: int, extra: List[str],
          from_reports: Optional[pathlib.Path] = None) -> List[Dict[str, Any]]:
    def one(t: Dict[str, Any]) -> Dict[str, Any]:
        if t["kind"] == "project":
            path = dest / t["folder"] / t.get("root", "")
            mode = "script"
        else:
            path = dest / t["folder"] / t["package"]
            mode = "thirdparty"
        saved = from_reports / f"{t['kind']}-{t['folder']}.json" if from_reports else None
        if saved is not None:
            try:
                rep, err, dt = json.loads(saved.read_text(encoding="utf-8")), "", 0.0
            except (OSError, ValueError) as e:
                rep, err, dt = None, f"no saved report {saved.name} ({type(e).__name__})", 0.0
        elif not path.is_dir():
            rep, err, dt = None, f"missing {path}: run materialize", 0.0
        else:
            keep = reports / f"{t['kind']}-{t['folder']}.json" if reports else None
            rep, err, dt = run_tool(tool, mode, path, keep, timeout, extra)
        res = (score_project if t["kind"] == "project" else score_library)(t, rep, err)
        res["seconds"] = round(dt, 1)
        return res

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as ex:
        return list(ex.map(one, targets))


def print_results(results: List[Dict[str, Any]]) -> None:
    for r in results:
        tag = ((f" [held-out {r['batch']}]" if r.get("batch") else " [held-out]") if r["heldout"]
               else f" [tuned, released {r['batch']}]" if r.get("batch") else "")
        head = f"{r['effort']}" if r["kind"] == "project" else f"{r.get('by_status')}"
        print(f"== {r['kind']} {r['name']}{tag}: {_pct(r['met'], r['total'])}  ({head}; {r['seconds']} s)")
        for w in r.get("withdrawn", ()):
            print(f"  withdrawn {w['entry']}: {w['why'][:200]}")
        for c in r["checks"]:
            if not c["met"]:
                print(f"  MISS {c['label']} [{c['check']}]: want {c['expected']}")
                print(f"       got  {c['got']}")
                if c["expected_why"]:
                    print(f"       why  {c['expected_why'][:300]}")
    print()
    for kind in ("project", "library"):
        for part, sel in (("tuned", False), ("held-out", True)):
            rs = [r for r in results if r["kind"] == kind and r["heldout"] == sel]
            if rs:
                m, n = sum(r["met"] for r in rs), sum(r["total"] for r in rs)
                print(f"{kind + ' checks' if kind == 'project' else 'library labels':<15} {part:<9} "
                      f"{_pct(m, n):>16}  over {len(rs)} {_plural(kind, len(rs))}")
                batches = sorted({r.get("batch") for r in rs if r.get("batch")})
                if (sel and len(batches) > 1) or (not sel and batches):
                    for b in ([None] if not sel else []) + batches:
                        rb = [r for r in rs if r.get("batch") == b]
                        m, n = sum(r["met"] for r in rb), sum(r["total"] for r in rb)
                        print(f"{'':<15}   {b or 'own':<7} {_pct(m, n):>16}  over {len(rb)} {_plural(kind, len(rb))}")
    m, n = sum(r["met"] for r in results), sum(r["total"] for r in results)
    print(f"{'all':<25} {_pct(m, n):>16}")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="validate every file and its frozen hash")
    m = sub.add_parser("materialize", help="check out every pinned commit into DIR")
    m.add_argument("dir", type=pathlib.Path)
    m.add_argument("--mirror", type=pathlib.Path, default=os.environ.get("MIRROR"),
                   help="folder of bare mirrors OWNER+NAME/repo (default $MIRROR; else github.com)")
    s = sub.add_parser("score", help="run the installed tool and score it")
    s.add_argument("dir", type=pathlib.Path)
    s.add_argument("--tool", default=shutil.which("npu-analyse") or "npu-analyse")
    s.add_argument("--part", choices=("tuned", "heldout", "all"), default="tuned",
                   help="tuned (default), heldout (score once per round of work) or all")
    s.add_argument("--only", action="append", help="score only this folder (repeatable)")
    s.add_argument("--kind", choices=("project", "library", "all"), default="all")
    s.add_argument("--batch", action="append", help="score only this held-out batch (repeatable; heldout_batches.json)")
    s.add_argument("--json", type=pathlib.Path, help="also write the results as JSON")
    s.add_argument("--reports", type=pathlib.Path, help="keep each report.json in this folder")
    s.add_argument("--from-reports", type=pathlib.Path,
                   help="score the reports a --reports run kept instead of running the tool (after a correction)")
    s.add_argument("--workers", type=int, default=1, help="analyses at once (default 1)")
    s.add_argument("--timeout", type=int, default=1800)
    # after `--`: more npu-analyse options (e.g. -- --no-cache -j 1), split off before parsing
    sh = sub.add_parser("show", help="print a saved --json result again, for one part")
    sh.add_argument("results", type=pathlib.Path)
    sh.add_argument("--part", choices=("tuned", "heldout", "all"), default="tuned")
    sh.add_argument("--batch", action="append", help="only this held-out batch (repeatable)")
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.extra = extra
    if a.cmd == "show":
        res = json.loads(a.results.read_text(encoding="utf-8"))["results"]
        now = {(t["kind"], t["folder"]): t for t in load_targets(require_frozen=False)}
        for r in res:   # a batch released to the tuned part since the result was saved is shown with it
            t = now.get((r["kind"], r["name"]))
            if t is not None:
                r["heldout"], r["batch"] = t["heldout"], t["batch"]
        print_results([r for r in res if (a.part == "all" or r["heldout"] == (a.part == "heldout"))
                       and (not a.batch or r.get("batch") in a.batch)])
        return 0
    try:
        targets = load_targets()
    except (Invalid, ValueError) as e:
        print(f"invalid benchmark file: {e}", file=sys.stderr)
        return 2
    if a.cmd == "check":
        n_p = [t for t in targets if t["kind"] == "project"]
        n_l = [t for t in targets if t["kind"] == "library"]
        n_w = sum(bool(e.get("withdrawn")) for t in n_p for e in t["expectations"])
        print(f"ok: {len(n_p)} projects ({sum(len(t['expectations']) for t in n_p)} expectations, {n_w} withdrawn), "
              f"{len(n_l)} libraries ({sum(len(t['labels']) for t in n_l)} labels); "
              f"held out: {sum(t['heldout'] for t in n_p)} projects, {sum(t['heldout'] for t in n_l)} libraries")
        return 0
    if a.cmd == "materialize":
        return 1 if materialize(targets, a.dir, a.mirror) else 0
    sel = [t for t in targets
           if (a.part == "all" or t["heldout"] == (a.part == "heldout"))
           and (not a.only or t["folder"] in a.only)
           and (a.kind == "all" or t["kind"] == a.kind)
           and (not a.batch or t.get("batch") in a.batch)]
    if not sel:
        print("nothing selected", file=sys.stderr)
        return 2
    results = score(sel, a.dir, a.tool, a.reports, a.workers, a.timeout, a.extra, a.from_reports)
    print_results(results)
    if a.json:
        a.json.write_text(json.dumps({"results": results}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
