"""npu-analyse migrate: edits traced to findings, both strategies, diff / change list / copy / in place, safety."""

import ast
import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from analyse.cli import main

TRAIN = '''"""Train a small model."""
from __future__ import annotations

import os
import torch
import torch.distributed as dist
from torch.cuda import amp


def setup():
    dist.init_process_group(backend="nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))


def main():
    setup()
    device = "cuda"
    model = torch.nn.Linear(4, 4).cuda()
    scaler = amp.GradScaler()
    x = torch.randn(2, 4).to(device)
    y = model(x)  # keep this comment
    if y.is_cuda:
        print(torch.cuda.memory_allocated())
    state = torch.load("ckpt.pt")
    z = x.to(0)
    net = torch.nn.DataParallel(model)
    torch.cuda.nvtx.range_push("step")


if __name__ == "__main__":
    main()
'''

REQS = "numpy\ntorch==2.8.0\nflash-attn>=2.3\n"
LAUNCH = "#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0,1\nnvidia-smi\ntorchrun --nproc_per_node 2 train.py\n"


def _project(tmp_path: Path, train: str = TRAIN) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_bytes(train.encode())
    (root / "requirements.txt").write_text(REQS)
    (root / "run.sh").write_text(LAUNCH)
    return root


def _migrate(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["migrate", "--no-cache", *args])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _script(root: Path, tmp_path: Path) -> dict:
    out = tmp_path / "rep"
    with pytest.raises(SystemExit):
        main(["script", str(root), "--no-cache", "-q", "--format", "json", "-o", str(out)])
    return json.loads((out / "report.json").read_text())


def test_shim_adds_the_shim_once_and_only_the_edits_it_does_not_make(tmp_path, capsys):
    root = _project(tmp_path)
    code, diff, err = _migrate([str(root), "--changes", str(tmp_path / "c.json")], capsys)
    assert code == 0
    doc = json.loads((tmp_path / "c.json").read_text())
    by_check = {(c["file"], c["code"] or c["check"]) for c in doc["changes"]}
    # the shim: after the docstring and the __future__ import
    assert '+import torch_npu\n+from torch_npu.contrib import transfer_to_npu\n' in diff
    assert " from __future__ import annotations\n \n+import torch_npu" in diff
    # what the shim makes at run time is not edited
    assert '-    device = "cuda"' not in diff and "-    dist.init_process_group(backend=\"nccl\")" not in diff
    # edits the shim does not make
    assert '-    z = x.to(0)\n' in diff and '+    z = x.to("npu:0")\n' in diff
    assert '+    state = torch.load("ckpt.pt", map_location="cpu")\n' in diff
    assert "+export ASCEND_RT_VISIBLE_DEVICES=0,1\n" in diff and "+npu-smi info\n" in diff
    assert "+torch_npu==2.8.0\n" in diff and "+# flash-attn>=2.3  # CUDA-only" in diff
    assert ("requirements.txt", "torch-npu-pin") in by_check and ("run.sh", "NPU904") in by_check
    # traced: every edit made for a finding names it, and the finding exists in the script report
    report = _script(root, tmp_path)
    ids = {f["id"] for f in report["findings"]}
    traced = [c for c in doc["changes"] if c["finding"]]
    assert traced and all(c["finding"] in ids for c in traced)
    # left for the engineer, with the reason
    left = {(x["file"], x["line"], x["code"]): x["reason"] for x in doc["left"]}
    assert left[("train.py", 26, "NPU103")].startswith("`torch.nn.DataParallel` is not supported on Ascend NPUs.")
    assert any(k[2] == "NPU001" and k[1] == 27 for k in left)   # torch.cuda.nvtx: no one-to-one NPU name
    assert "Left for you" in err and "Edits by rule" in err


def test_explicit_leaves_no_auto_finding_and_is_idempotent(tmp_path, capsys):
    root = _project(tmp_path)
    out = tmp_path / "out"
    code, _diff, _err = _migrate([str(root), "--strategy", "explicit", "--apply", str(out)], capsys)
    assert code == 0
    text = (out / "train.py").read_text()
    assert 'dist.init_process_group(backend="hccl")' in text
    assert "torch.npu.set_device(" in text and 'device = "npu"' in text
    assert 'torch.nn.Linear(4, 4).to("npu")' in text and "if y.is_npu:" in text
    assert "from torch_npu.npu import amp" in text
    assert "y = model(x)  # keep this comment" in text
    assert "transfer_to_npu" not in text and text.count("import torch_npu\n") == 1
    ast.parse(text, feature_version=(3, 9))
    report = _script(out, tmp_path)
    assert [f for f in report["findings"] if f["severity"] == "auto"] == []
    # files without an edit are byte for byte the same
    assert (out / "requirements.txt").read_text() != REQS
    # migrating the output again changes nothing
    code, diff2, _ = _migrate([str(out), "--strategy", "explicit"], capsys)
    assert code == 0 and diff2 == ""


def test_diff_applies_with_git_and_keeps_crlf(tmp_path, capsys):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _project(tmp_path, TRAIN.replace("\n", "\r\n"))
    (root / "untouched.py").write_bytes(b"import os\r\nprint(os.sep)")
    before = (root / "untouched.py").read_bytes()
    patch = tmp_path / "npu.patch"
    code, _, _ = _migrate([str(root), "--strategy", "explicit", "-o", str(patch)], capsys)
    assert code == 0 and b"\r\n" in patch.read_bytes()
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=root, check=True, env=env)
    subprocess.run(["git", "apply", str(patch)], cwd=root, check=True, env=env)
    text = (root / "train.py").read_bytes()
    assert b'device = "npu"\r\n' in text and b"\n" not in text.replace(b"\r\n", b"")
    assert (root / "untouched.py").read_bytes() == before


def test_change_list_json_follows_the_schema_and_csv_has_one_row_per_edit(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    from analyse.schemas import load_schema

    root = _project(tmp_path)
    _migrate([str(root), "--changes", str(tmp_path / "c.json")], capsys)
    doc = json.loads((tmp_path / "c.json").read_text())
    jsonschema.validate(doc, load_schema("changes.schema.json"))
    assert doc["summary"]["edits"] == len(doc["changes"]) and doc["summary"]["left"] == len(doc["left"])
    load = next(c for c in doc["changes"] if "map_location" in c["after"])
    assert load["line"] == 24 and load["before"] == '    state = torch.load("ckpt.pt")'
    _migrate([str(root), "--changes", str(tmp_path / "c.csv")], capsys)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "c.csv").read_text())))
    assert sum(r["kind"] == "edit" for r in rows) == len(doc["changes"])
    assert sum(r["kind"].startswith("left for you") for r in rows) == len(doc["left"])


def test_annotate_adds_one_comment_above_the_statement(tmp_path, capsys):
    root = _project(tmp_path)
    out = tmp_path / "out"
    _migrate([str(root), "--annotate", "--apply", str(out)], capsys)
    lines = (out / "train.py").read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if "torch.nn.DataParallel" in ln)
    assert lines[i - 1].startswith("    # NPU103 (npu-analyse migrate): ")
    code, diff2, _ = _migrate([str(out), "--annotate"], capsys)
    assert diff2 == ""


def test_guarded_and_test_files_are_edited_only_with_all(tmp_path, capsys):
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "train.py").write_text("import torch\nx = torch.zeros(1).to(0)\nprint(x)\n")
    (root / "tests" / "test_x.py").write_text("import torch\n\ndef test_x():\n    assert torch.zeros(1).to(0) is not None\n")
    _code, diff, _ = _migrate([str(root)], capsys)
    assert "train.py" in diff and "tests/test_x.py" not in diff
    _code, diff, _ = _migrate([str(root), "--all"], capsys)
    assert "tests/test_x.py" in diff


def test_in_place_needs_a_clean_git_tree_or_force(tmp_path, capsys):
    root = _project(tmp_path)
    code, _, err = _migrate([str(root), "--in-place"], capsys)
    assert code == 2 and "not in a git work tree" in err
    code, _, _ = _migrate([str(root), "--in-place", "--force"], capsys)
    assert code == 0 and "transfer_to_npu" in (root / "train.py").read_text()
    assert (root / "run.sh").read_text().startswith("#!/bin/bash\nexport ASCEND_RT_VISIBLE_DEVICES")


def test_an_edit_that_would_not_parse_leaves_the_file_unedited(tmp_path, capsys, monkeypatch):
    from analyse.migrate import pyedit

    root = _project(tmp_path)
    real = pyedit.PyFile.add_imports

    def broken(self, lines, why, code=None):
        real(self, ["import torch_npu ("], why, code)   # a broken insertion

    monkeypatch.setattr(pyedit.PyFile, "add_imports", broken)
    monkeypatch.setattr(pyedit.PyFile, "has_import", lambda self, line: False)
    _migrate([str(root), "--changes", str(tmp_path / "c.json")], capsys)
    doc = json.loads((tmp_path / "c.json").read_text())
    assert "train.py" in doc["summary"]["files_refused"]
    assert not any(c["file"] == "train.py" for c in doc["changes"])
    assert any("would not parse" in x["reason"] for x in doc["left"] if x["file"] == "train.py")


def test_usage_errors(tmp_path, capsys):
    root = _project(tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert _migrate([str(root), "--apply", str(tmp_path / "full")], capsys)[0] == 2
    assert _migrate([str(root), "--force"], capsys)[0] == 2
    assert _migrate([str(root), "--in-place", "--apply", str(tmp_path / "new")], capsys)[0] == 2


def test_shim_with_an_attention_rewrite_imports_torch_npu_once(tmp_path, capsys):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "import torch\nfrom flash_attn import flash_attn_func\n\n\ndef attend(q, k, v):\n"
        "    return flash_attn_func(q, k, v, dropout_p=0.0, causal=False)\n\n\n"
        "if __name__ == '__main__':\n    print(attend(torch.ones(1), torch.ones(1), torch.ones(1)).cuda())\n")
    _code, diff, _ = _migrate([str(root)], capsys)
    assert diff.count("+import torch_npu\n") == 1 and "+import math\n" in diff
    assert "+# from flash_attn import flash_attn_func  # NPU401 (npu-analyse migrate): every use rewritten for the NPU" in diff
    assert "+    return torch_npu.npu_fusion_attention(q, k, v, head_num=q.shape[2], input_layout='BSND'" in diff


def test_script_with_migration_adds_the_section(tmp_path, capsys):
    root = _project(tmp_path)
    out = tmp_path / "rep"
    with pytest.raises(SystemExit):
        main(["script", str(root), "--no-cache", "-q", "--with-migration", "-o", str(out)])
    html = (out / "report.html").read_text()
    assert 'id="migration"' in html and 'href="#migration"' in html
    assert "+torch_npu==2.8.0" in html
    mig = json.loads((out / "report.json").read_text())["migration"]
    assert mig["strategy"] == "shim" and {f["path"] for f in mig["files"]} == {"requirements.txt", "run.sh", "train.py"}


def test_apex_fused_classes_become_their_npu_twins_and_the_imports_go(tmp_path, capsys):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "import torch\nfrom apex.optimizers import FusedAdam\nfrom apex.normalization import FusedLayerNorm\n"
        "from apex import amp\n\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 4), FusedLayerNorm(4, eps=1e-6))\n"
        "opt = FusedAdam(model.parameters(), lr=1e-3, adam_w_mode=False)\n"
        "opt2 = FusedAdam(model.parameters(), lr=1e-3, bias_correction=False)\n"
        "model, opt = amp.initialize(model, opt, opt_level='O1')\n")
    _code, diff, _ = _migrate([str(root), "--changes", str(tmp_path / "c.json")], capsys)
    assert "+model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4, eps=1e-6))\n" in diff
    assert "+opt = torch_npu.optim.NpuFusedAdam(model.parameters(), lr=1e-3)\n" in diff
    assert "+# from apex.normalization import FusedLayerNorm  # NPU401" in diff
    # FusedAdam is still used (bias_correction has no NPU twin): its import stays; apex.amp is never guessed
    assert "-from apex.optimizers import FusedAdam\n" not in diff and "-from apex import amp\n" not in diff
    left = json.loads((tmp_path / "c.json").read_text())["left"]
    assert any(x["line"] == 8 and "bias_correction" in x["reason"] for x in left)
    assert any(x["line"] == 9 and x["code"] == "NPU402" for x in left)


def test_in_place_in_a_clean_git_tree_and_refused_when_dirty(tmp_path, capsys, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _project(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], cwd=root, check=True)
    subprocess.run(git + ["add", "-A"], cwd=root, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=root, check=True)
    (root / "run.sh").write_text(LAUNCH + "echo dirty\n")
    code, _, err = _migrate([str(root), "--in-place"], capsys)
    assert code == 2 and "uncommitted changes" in err
    subprocess.run(git + ["checkout", "--", "run.sh"], cwd=root, check=True)
    (root / "run.sh").chmod(0o755)
    subprocess.run(git + ["commit", "-qam", "mode"], cwd=root, check=True)
    code, out, _ = _migrate([str(root), "--in-place"], capsys)
    assert code == 0 and out == ""
    assert "ASCEND_RT_VISIBLE_DEVICES" in (root / "run.sh").read_text()
    assert (root / "run.sh").stat().st_mode & 0o777 == 0o755   # permission bits kept
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert {line[3:] for line in status.splitlines()} == {"train.py", "requirements.txt", "run.sh"}


def test_a_place_off_the_path_is_left_with_the_reports_words():
    from analyse.migrate.pyedit import Options, scope_reason

    off = {"role": "product", "reach": {"status": "reachable"},
           "guard": {"kind": "option", "line": 12, "fallback": True, "condition": "args.mixed_precision == 'fp8'",
                     "choice": True, "on_path": {"transfer_to_npu": "off", "no_transfer": "off"}}}
    assert scope_reason(off, Options()) == ("runs only when `args.mixed_precision == 'fp8'` (line 12), which is false "
                                            "on an NPU host with the defaults: not edited without --all")
    fallback = {"guard": {"kind": "import-fallback", "line": 3, "fallback": True, "condition": "importable(apex)"}}
    assert scope_reason(fallback, Options()).startswith("guarded by `importable(apex)` (line 3) with a fallback")
    assert scope_reason(off, Options(everything=True)) is None


def test_every_use_on_one_line_is_converted_in_one_run(tmp_path, capsys):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "import torch\n\n\ndef f(x, y):\n    a = x.cuda(); b = y.cuda()\n    if x.is_cuda and y.is_cuda:\n"
        "        return a, b\n\n\nif __name__ == '__main__':\n    f(torch.ones(1), torch.ones(1))\n")
    report = _script(root, tmp_path)
    assert [(f["line"], f["column"], f.get("columns")) for f in report["findings"] if f["code"] == "NPU002"] == [
        (5, 8, [8, 22]), (6, 7, [7, 21])]
    code, diff, _ = _migrate([str(root), "--strategy", "explicit"], capsys)
    assert code == 0
    assert "+    a = x.npu(); b = y.npu()\n" in diff and "+    if x.is_npu and y.is_npu:\n" in diff
    (root / "train.py").write_text((root / "train.py").read_text().replace("x.cuda(); b = y.cuda()", "x.npu(); b = y.npu()")
                                   .replace("x.is_cuda and y.is_cuda", "x.is_npu and y.is_npu"))
    code, diff, _ = _migrate([str(root), "--strategy", "explicit"], capsys)
    assert ".cuda" not in diff and "is_cuda" not in diff


def test_many_uses_on_one_line_are_one_finding_with_every_column(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text("import torch\nx = torch.ones(1)\nys = [" + ", ".join(["x.cuda()"] * 501) + "]\n")
    found = [f for f in _script(root, tmp_path)["findings"] if f["code"] == "NPU002"]
    assert len(found) == 1 and len(found[0]["columns"]) == 501 and found[0]["columns"][:2] == [6, 16]


def test_patch_headers_quote_names_git_style_and_cr_only_files_apply(tmp_path, capsys, monkeypatch):
    from analyse.migrate.output import git_quote

    assert git_quote("a/train.py") == "a/train.py"
    assert git_quote("a/new\nline.py") == '"a/new\\nline.py"'
    assert git_quote("a/tab\tname.py") == '"a/tab\\tname.py"'
    assert git_quote('a/q"b\\c.py') == '"a/q\\"b\\\\c.py"'
    assert git_quote("a/\u00e9.py") == '"a/\\303\\251.py"'
    root = tmp_path / "proj"
    root.mkdir()
    body = b"import torch\nx = torch.ones(1).cuda()\n"
    (root / "new\nline.py").write_bytes(body)
    (root / "tab\tname.py").write_bytes(body)
    (root / "cr.py").write_bytes(b"import torch\rx = torch.ones(1).cuda()\ry = 2\r")
    code, diff, _ = _migrate([str(root), "--strategy", "explicit"], capsys)
    assert code == 0
    headers = [ln for ln in diff.splitlines() if ln.startswith(("diff --git", "---", "+++"))]
    assert headers == ["diff --git a/cr.py b/cr.py", "--- a/cr.py", "+++ b/cr.py",
                       'diff --git "a/new\\nline.py" "b/new\\nline.py"', '--- "a/new\\nline.py"', '+++ "b/new\\nline.py"',
                       'diff --git "a/tab\\tname.py" "b/tab\\tname.py"', '--- "a/tab\\tname.py"', '+++ "b/tab\\tname.py"']
    # a CR-only file is one line to git: one hunk of one line, no "No newline" marker inside it
    cr = diff[diff.index("diff --git a/cr.py"):diff.index('diff --git "a/new')]
    assert cr.count("\\ No newline at end of file") == 2 and "@@ -1 +1 @@" in cr
    if shutil.which("git") is None:
        return
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    patch = tmp_path / "p.patch"
    with open(patch, "w", newline="") as fh:   # Path.write_text(newline=) needs Python 3.10
        fh.write(diff)
    subprocess.run(["git", "apply", str(patch)], cwd=root, check=True, capture_output=True)
    assert (root / "cr.py").read_bytes() == b"import torch_npu\rimport torch\rx = torch.ones(1).npu()\ry = 2\r"
    assert b".npu()" in (root / "new\nline.py").read_bytes() and b".npu()" in (root / "tab\tname.py").read_bytes()


def test_apply_into_a_folder_inside_the_tree_copies_the_tree_once(tmp_path, capsys):
    root = _project(tmp_path)
    code, _, _ = _migrate([str(root), "--apply", str(root / "npu")], capsys)
    assert code == 0
    assert sorted(p.name for p in (root / "npu").iterdir()) == ["requirements.txt", "run.sh", "train.py"]
    assert "transfer_to_npu" in (root / "npu" / "train.py").read_text()
    assert (root / "train.py").read_text() == TRAIN
