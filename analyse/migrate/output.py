"""Writing a :class:`~analyse.migrate.plan.Migration`: unified diff, change list, migrated copy, in place."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from analyse import __version__
from analyse.atomic import write_atomic
from analyse.migrate.plan import Migration

CHANGES_SCHEMA_VERSION = 1


# ------------------------------------------------------------------ diff
def _lines(text: str) -> List[str]:
    return text.splitlines(keepends=True) if text else []


def _git_path(rel: str) -> str:
    return rel.replace(os.sep, "/")


_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r",
              '"': '\\"', "\\": "\\\\"}


def git_quote(name: str, encoding: str = "utf-8") -> str:
    """A path as git writes it in a patch header: as it is, or -- when it holds a double quote, a backslash,
    a control character or a byte that is not ASCII -- in double quotes with C escapes (``\\t``, ``\\n``,
    ``\\"``) and the other bytes in octal (``\\303\\251``), which ``git apply`` reads back. A name with a newline
    written as it is would end the header line: git rejected the whole patch."""
    if all(" " <= ch < "\x7f" and ch not in '"\\' for ch in name):
        return name
    out = ['"']
    for ch in name:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif " " <= ch < "\x7f":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode(encoding, errors="surrogateescape"))
    out.append('"')
    return "".join(out)


def file_diff(rel: str, old: bytes, new: bytes, encoding: str = "utf-8") -> bytes:
    """One file's unified diff as ``git apply`` reads it (``\\ No newline at end of file`` included; names quoted
    the way git quotes them: :func:`git_quote`)."""
    import difflib

    a = _split_keep(old.decode(encoding, errors="surrogateescape"))
    b = _split_keep(new.decode(encoding, errors="surrogateescape"))
    p = _git_path(rel)
    qa, qb = git_quote("a/" + p), git_quote("b/" + p)
    out = [f"diff --git {qa} {qb}\n", f"--- {qa}\n", f"+++ {qb}\n"]
    for i, line in enumerate(difflib.unified_diff(a, b, n=3, lineterm="")):
        if i < 2:   # difflib's own ---/+++ header
            continue
        if line.startswith("@@"):
            out.append(line.rstrip("\n") + "\n")
            continue
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out).encode(encoding, errors="surrogateescape")


def _split_keep(text: str) -> List[str]:
    """Lines with their endings as git counts them: split only after ``\\n`` (a ``\\r\\n`` line keeps its
    ``\\r``; a file of ``\\r``-only line ends is one line to git, and its patch must say so, or the hunk
    headers count lines git does not see and ``git apply`` rejects the patch)."""
    return [m.group(0) for m in re.finditer(r"[^\n]*\n|[^\n]+\Z", text)]


def diff(mig: Migration) -> bytes:
    out = []
    for r in mig.changed:
        enc = "utf-8"
        if r.path.endswith(".py"):
            import tokenize

            enc = tokenize.detect_encoding(io.BytesIO(r.old).readline)[0]
            enc = "utf-8" if enc == "utf-8-sig" else enc
        out.append(file_diff(r.path, r.old, r.new, enc))
    return b"".join(out)


def file_diffs(mig: Migration) -> List[Dict[str, str]]:
    """Per changed file: its path and diff text (for the HTML report)."""
    return [{"path": r.path, "diff": file_diff(r.path, r.old, r.new).decode("utf-8", errors="replace"),
             "edits": len(r.edits)} for r in mig.changed]


# ------------------------------------------------------------------ change list
def change_list(mig: Migration) -> dict:
    changes = []
    for r in mig.changed:
        for e in sorted(r.edits, key=lambda e: (e.line, e.start)):
            changes.append({"file": r.path, "line": e.line, "end_line": e.end_line, "code": e.code, "finding": e.finding,
                            "check": e.check, "before": e.before, "after": e.after, "why": e.why})
    left = [{"file": x.path, "line": x.line, "code": x.code, "finding": x.finding, "reason": x.reason,
             "advice": x.advice, "annotated": x.annotated} for x in mig.left]
    return {
        "schema_version": CHANGES_SCHEMA_VERSION,
        "tool": {"name": "npu-analyse", "version": __version__},
        "strategy": mig.strategy,
        "target": mig.target,
        "inputs": mig.inputs,
        "summary": mig.summary(),
        "changes": changes,
        "left": left,
    }


CSV_COLUMNS = ("kind", "file", "line", "end_line", "code", "finding", "check", "before", "after", "why")


def change_list_csv(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in doc["changes"]:
        w.writerow(["edit", c["file"], c["line"], c["end_line"], c["code"] or "", c["finding"] or "", c["check"] or "",
                    c["before"], c["after"], c["why"]])
    for x in doc["left"]:
        why = x["reason"] + (f" Advice: {x['advice']}" if x["advice"] else "")
        w.writerow(["left for you" + (" (annotated)" if x["annotated"] else ""), x["file"], x["line"], x["line"],
                    x["code"] or "", x["finding"] or "", "", "", "", why])
    return buf.getvalue()


# ------------------------------------------------------------------ writing files
def _replace_file(path: Path, data: bytes) -> None:
    """Atomic per file, keeping the file's permission bits (:func:`analyse.atomic.write_atomic`)."""
    write_atomic(path, data, suffix=".migrate")


def git_dirty(paths: List[Path]) -> Optional[str]:
    """None when every path lies in a git work tree without uncommitted changes, else why not."""
    roots = set()
    for p in paths:
        d = p if p.is_dir() else p.parent
        try:
            top = subprocess.run(["git", "-C", str(d), "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"git is not available ({exc})"
        if top.returncode != 0:
            return f"{d} is not in a git work tree"
        roots.add(top.stdout.strip())
    for root in sorted(roots):
        st = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                            text=True, timeout=120)
        if st.returncode != 0 or st.stdout.strip():
            return f"the git work tree {root} has uncommitted changes"
    return None


def git_unsafe(paths: List[Path]) -> Optional[str]:
    """None when git holds an unmodified copy of every file in *paths* (the files ``--in-place`` would edit),
    else why not: an untracked or git-ignored file has no copy in git, so editing it cannot be undone."""
    by_root: Dict[str, List[str]] = {}
    tops: Dict[str, Optional[str]] = {}
    for p in paths:
        d = str(p.parent)
        if d not in tops:
            try:
                top = subprocess.run(["git", "-C", d, "rev-parse", "--show-toplevel"], capture_output=True,
                                     text=True, timeout=60)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"git is not available ({exc})"
            tops[d] = top.stdout.strip() if top.returncode == 0 else None
        root = tops[d]
        if root is None:
            return f"{d} is not in a git work tree"
        by_root.setdefault(root, []).append(os.path.relpath(os.path.realpath(p.parent), os.path.realpath(root))
                                            + os.sep + p.name)
    for root, rels in sorted(by_root.items()):
        for i in range(0, len(rels), 500):   # a bounded command line per call
            chunk = rels[i:i + 500]
            try:
                st = subprocess.run(["git", "-C", root, "status", "--porcelain=v1", "-z", "--ignored=matching",
                                     "--untracked-files=all", "--", *(":(literal)" + r for r in chunk)],
                                    capture_output=True, timeout=120)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"git is not available ({exc})"
            if st.returncode != 0:
                return f"git status failed in {root}"
            for entry in st.stdout.split(b"\0"):
                if len(entry) > 3:
                    name = os.fsdecode(entry[3:])
                    what = {b"??": "untracked", b"!!": "ignored by git"}.get(entry[:2], "changed")
                    return f"{name} is {what} (git holds no copy of what would be edited)"
    return None


def write_in_place(mig: Migration) -> List[str]:
    """Write every changed file over itself. A file changed since the analysis, a symbolic link or a file that
    cannot be written is skipped: it is marked refused (no longer among ``mig.changed``, its edits left for the
    engineer) and returned. Other files are still written."""
    from analyse.atomic import refusal
    from analyse.migrate.source import Left

    skipped = []
    for r in list(mig.changed):
        path = mig.abspaths[r.path]
        why = refusal(path)
        if why is None:
            try:
                if path.read_bytes() != r.old:
                    why = "changed since the analysis: not edited"
                else:
                    _replace_file(path, r.new)
            except OSError as exc:
                why = f"cannot be written ({exc.strerror or exc}): not edited"
        else:
            why = f"{why}: not edited"
        if why is not None:
            r.refused, r.new = why, None
            left = [Left(r.path, e.line, e.code, e.finding, why) for e in r.edits if e.check != "annotate"]
            r.left.extend(left)
            mig.left.extend(left)
            r.edits = []
            skipped.append(r.path)
    mig.left.sort(key=lambda x: (x.path, x.line, x.code or ""))
    return skipped


def write_copy(mig: Migration, inputs: List[Path], dest: Path) -> None:
    """A migrated copy of the analysed tree(s) in *dest* (which must not exist or be empty)."""
    dest.mkdir(parents=True, exist_ok=True)
    multi = len(inputs) > 1
    dest_real = os.path.realpath(dest)

    def ignore(folder: str, names: List[str]) -> set:
        # .git; DEST itself when it lies inside the tree (it would be copied into itself); FIFOs, sockets and
        # devices (copying a FIFO waits for a writer; the analysis read none of them)
        skip = set()
        for n in names:
            full = os.path.join(folder, n)
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            special = not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))
            if n == ".git" or special or os.path.realpath(full) == dest_real:
                skip.add(n)
        return skip

    for inp in inputs:
        inp = Path(inp)
        target = dest / inp.resolve().name if (multi or inp.is_file()) else dest
        if inp.is_dir():
            shutil.copytree(inp, target, symlinks=True, dirs_exist_ok=True, ignore=ignore)
        else:
            shutil.copy2(inp, target)
    for r in mig.changed:
        out = dest / r.path
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_symlink():
            out.unlink()
        _replace_file(out, r.new) if out.exists() else out.write_bytes(r.new)


# ------------------------------------------------------------------ terminal
def terminal(mig: Migration, written: str) -> str:
    s = mig.summary()
    lines = [f"npu-analyse migrate ({mig.strategy}): {s['files_changed']} file(s) changed, {s['edits']} edit(s)"
             + (f" -> {written}" if written else "")]
    for r in mig.changed:
        lines.append(f"  {r.path}: {len(r.edits)} edit(s)")
    if s["edits_by_rule"]:
        lines.append("Edits by rule: " + ", ".join(f"{k} {v}" for k, v in s["edits_by_rule"].items()))
    for path in s["files_refused"]:
        r = next(x for x in mig.files if x.path == path)
        lines.append(f"  not edited: {path}: {r.refused}")
    if mig.left:
        lines.append(f"Left for you: {len(mig.left)}")
        by_reason: Dict[str, int] = {}
        for x in mig.left:
            by_reason[x.reason] = by_reason.get(x.reason, 0) + 1
        shown = 0
        for x in mig.left:
            if shown >= 15:
                lines.append(f"  ... {len(mig.left) - shown} more (--changes FILE lists them all)")
                break
            lines.append(f"  {x.path}:{x.line} {x.code or ''} {x.reason}")
            shown += 1
    return "\n".join(lines) + "\n"
