"""The HTML report fits its box at 1,400 and 1,024 px (#23 point 6), checked in headless Chromium; so do its
pictures (inline SVG charts, issue 32).

Each report is opened at the window width with a probe script appended: it opens the first rows' details, then
measures, in the laid-out page, the findings table against its box (the panel's scroll container), every cell's
content against its cell, and every badge (severity, counted / off the path, reach, guard, category) against its
cell. A screenshot of the same page at the same width is written next to it (set NPU_ANALYSE_SCREENSHOTS=DIR to
keep them). Without Chromium (the system `chromium` package; `.ci/run` installs it) the tests skip.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from analyse.render import write_reports

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
WIDTHS = (1400, 1024)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed (apt-get install chromium)")

PROBE = """<script>
(function () {
  var problems = [];
  var rows = document.querySelectorAll('#findings-body tr.row');
  for (var i = 0; i < Math.min(3, rows.length); i++) rows[i].click();   // a few detail rows open
  var wrap = document.querySelector('#findings .tablewrap');
  var table = document.getElementById('findings-table');
  function r(e) { return e.getBoundingClientRect(); }
  function name(e) { return e.tagName.toLowerCase() + '.' + e.className + ' "' + e.textContent.slice(0, 60) + '"'; }
  var box = r(wrap);
  if (r(table).right > box.right + 1) problems.push('table ' + r(table).width + ' > box ' + box.width);
  if (wrap.scrollWidth > wrap.clientWidth + 1) problems.push('box scrolls: ' + wrap.scrollWidth + ' > ' + wrap.clientWidth);
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push('page scrolls: ' + document.documentElement.scrollWidth + ' > ' + window.innerWidth);
  var cells = table.querySelectorAll('tbody td, thead th');
  for (var j = 0; j < cells.length; j++) {
    var c = cells[j];
    if (c.closest('.snippet')) continue;   // source lines scroll inside their own box, measured below
    if (c.scrollWidth > c.clientWidth + 1) problems.push('cell overflows: ' + name(c));
    if (r(c).right > box.right + 1) problems.push('cell outside the box: ' + name(c));
  }
  var snippets = table.querySelectorAll('.snippet');
  for (var s = 0; s < snippets.length; s++) {
    if (r(snippets[s]).right > r(snippets[s].closest('td')).right + 1) problems.push('source box outside its cell');
  }
  var badges = table.querySelectorAll('tbody .badge');
  for (var k = 0; k < badges.length; k++) {
    var b = badges[k], cell = b.closest('td'), br = r(b), cr = r(cell);
    if (br.width < 4 || br.height < 4) problems.push('badge not visible: ' + name(b));
    if (br.left < cr.left - 1 || br.right > cr.right + 1) problems.push('badge outside its cell: ' + name(b));
  }
  // the pictures (inline SVG): each drawn, inside its panel, on the page
  var charts = document.querySelectorAll('svg.chart'), drawn = [];
  for (var q = 0; q < charts.length; q++) {
    var ch = charts[q], cr2 = r(ch), panel = r(ch.closest('.panel'));
    if (cr2.width < 200 || cr2.height < 10) problems.push('chart not drawn: ' + ch.id + ' ' + cr2.width + 'x' + cr2.height);
    if (cr2.right > panel.right + 1 || cr2.left < panel.left - 1) problems.push('chart outside its panel: ' + ch.id);
    if (cr2.right > window.innerWidth + 1) problems.push('chart outside the page: ' + ch.id);
    if (ch.querySelectorAll('rect').length < 1) problems.push('chart without bars: ' + ch.id);
    drawn.push(ch.id);
  }
  document.body.setAttribute('data-fit', JSON.stringify({
    problems: problems, rows: rows.length, badges: badges.length, box: box.width, table: r(table).width,
    columns: table.querySelectorAll('thead th').length, charts: drawn}));
})();
</script></body>"""


def _chromium(args, profile: Path):
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
           f"--user-data-dir={profile}", "--virtual-time-budget=3000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def check_fit(html_text: str, tmp_path: Path, width: int, label: str) -> dict:
    page = tmp_path / f"{label}-{width}.html"
    page.write_text(html_text.replace("</body>", PROBE), encoding="utf-8")
    proc = _chromium([f"--window-size={width},1200", "--dump-dom", page.as_uri()], tmp_path / "profile")
    m = re.search(r'data-fit="([^"]*)"', proc.stdout)
    assert m, "the probe did not run: " + proc.stderr[-1500:]
    result = json.loads(htmllib.unescape(m.group(1)))
    shot = tmp_path / f"{label}-{width}.png"
    _chromium([f"--window-size={width},2400", f"--screenshot={shot}", page.as_uri()], tmp_path / "profile2")
    assert shot.is_file() and _png_width(shot) == width   # the screenshot is the box width the probe measured at
    keep = os.environ.get("NPU_ANALYSE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return result


def _png_width(path: Path) -> int:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big")


def _report_of(tmp_path: Path, files: dict) -> dict:
    from analyse.knowledge import load_knowledge
    from analyse.modes import run_script

    proj = tmp_path / "proj"
    for rel, text in files.items():
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(textwrap.dedent(text))
    return run_script([proj], load_knowledge())


def _rules():
    from analyse.passes import all_rules

    return [r.to_dict() for r in all_rules()]


# a project shaped like segment-anything: deep package paths, torchvision NMS, attention, a CUDA check with a
# fallback, an unreached helper and a test, so that every badge (reach, guard, counted, off the path) shows
SAM_LIKE = {
    "scripts/amg.py": """\
        import argparse
        import torch
        from segment_anything_like.automatic_mask_generator_with_long_name import SamAutomaticMaskGenerator

        def main(args):
            device = "cuda" if torch.cuda.is_available() else "cpu"
            generator = SamAutomaticMaskGenerator(device)
            return generator.generate(torch.zeros(3, 64, 64, device=device))

        if __name__ == "__main__":
            main(argparse.ArgumentParser().parse_args())
        """,
    "segment_anything_like/__init__.py": "",
    "segment_anything_like/automatic_mask_generator_with_long_name.py": """\
        import torch
        from torchvision.ops.boxes import batched_nms, box_area

        class SamAutomaticMaskGenerator:
            def __init__(self, device):
                self.device = device

            def generate(self, image):
                boxes = torch.zeros(4, 4, device=self.device)
                scores = torch.ones(4, device=self.device)
                keep = batched_nms(boxes.float(), scores, torch.zeros_like(boxes[:, 0]), iou_threshold=0.7)
                keep_again = batched_nms(boxes.float(), scores, torch.zeros_like(boxes[:, 0]), iou_threshold=0.5)
                nonzero_positions_of_the_mask = torch.nonzero(image > 0)
                return keep, keep_again, nonzero_positions_of_the_mask

        def never_called_helper_with_a_rather_long_function_name(x):
            torch.cuda.synchronize()
            return torch.cuda.current_blas_handle()
        """,
    "segment_anything_like/modeling/image_encoder_with_windowed_attention.py": """\
        import torch

        def attention(q, k, v):
            attn = (q * 0.125) @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            return attn @ v
        """,
    "tests/test_amg.py": """\
        import torch

        def test_generate():
            assert torch.zeros(2).cuda().sum() == 0
        """,
}


def _stress_report() -> dict:
    """Cells with nothing to break at: a 160-character path, a 130-character dotted API, a replacement with a
    140-character token, and a long message."""
    path = "very_long_package_name_for_layout_tests/" * 3 + "sub_module_with_a_long_name/train_entry_point.py"
    api = ".".join(["torch_npu_contrib_module_with_long_segments"] * 3)
    f = {"id": "0123456789abcdef", "code": "NPU001", "category": "cuda-api", "severity": "auto", "path": path,
         "line": 12345, "column": 4, "api": api, "message": "word " * 300, "replacement": "x" * 140 + " = y",
         "confidence": "high", "evidence": "syntax", "snippet": "x" * 300, "counted": False,
         "off_path": {"reason": "unreached", "why": "no product entry point reaches this code"},
         "reach": {"status": "unreached"}, "role": "product",
         "guard": {"kind": "availability-check", "line": 3, "fallback": True, "condition": "torch.cuda.is_available()"},
         "lines": [12345, 12346, 12400], "occurrences": []}
    return {"schema_version": "1", "tool": {"name": "npu-analyse", "version": "0"}, "mode": "script",
            "target": {"torch_version": "2.8.0"}, "inputs": ["."],
            "summary": {"files_analysed": 1, "lines_analysed": 10, "verdict": {"effort": "low"},
                        "by_severity": {"auto": 1}, "by_category": {"cuda-api": 1}},
            "findings": [f], "errors": []}


def _reports(tmp_path):
    from analyse.knowledge import load_knowledge
    from analyse.modes import run_script

    acc = run_script([ROOT / "tests" / "fixtures" / "accelerate_examples"], load_knowledge())
    # only the findings grouped across files, so that the probe opens their detail rows (every place with its file)
    acc["findings"] = [f for f in acc["findings"] if f.get("locations")]
    return {
        "accelerate-groups": acc,
        "ddp-example": run_script([ROOT / "examples" / "ddp_torchrun"], load_knowledge()),
        "sam-like": _report_of(tmp_path, SAM_LIKE),
        "stress": _stress_report(),
    }


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return _reports(tmp_path_factory.mktemp("reports"))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["ddp-example", "sam-like", "stress", "accelerate-groups"])
def test_findings_table_fits_its_box(reports, tmp_path, name, width):
    report = reports[name]
    html = (write_reports(report, _rules(), tmp_path / "out", ["html"])["html"]).read_text(encoding="utf-8")
    result = check_fit(html, tmp_path, width, name)
    assert result["rows"] == len(report["findings"]) and result["columns"] == 6
    assert result["badges"] >= 2 * result["rows"]   # severity and category at least
    assert result["problems"] == [], result["problems"][:10]
    assert result["table"] <= result["box"] + 1
    # the pictures are drawn at this width, inside their panels (issue 32)
    assert {"chart-share", "chart-categories", "chart-files"} <= set(result["charts"]), result["charts"]
    if report["summary"].get("entry_points"):
        assert "chart-entry-points" in result["charts"]


def test_sam_like_report_shows_counted_and_off_path_badges(reports):
    findings = reports["sam-like"]["findings"]
    assert any(f["counted"] for f in findings) and any(not f["counted"] for f in findings)
    assert all(f["off_path"]["why"] for f in findings if not f["counted"])


def test_a_finding_grouped_across_files_shows_its_files(reports, tmp_path):
    report = reports["accelerate-groups"]
    assert len(report["findings"]) == 3   # NPU802, NPU466 and NPU710, each over several scripts
    html = (write_reports(report, _rules(), tmp_path / "out", ["html"])["html"]).read_text(encoding="utf-8")
    page = tmp_path / "groups.html"
    page.write_text(html.replace("</body>", "<script>document.querySelector('#findings-body tr.row').click();"
                                            "</script></body>"), encoding="utf-8")
    dom = _chromium(["--window-size=1400,1200", "--dump-dom", page.as_uri()], tmp_path / "profile").stdout
    text = re.sub(r"<[^>]+>", "", dom)
    first = report["findings"][0]
    n_places, n_files = len(first["occurrences"]), len(first["locations"])
    assert f"+{n_places - 1} more places in {n_files - 1} more files" in text
    assert f"Every place ({n_places} in {n_files} files)" in text
    for loc in first["locations"]:
        assert f"{loc['path']}:{loc['lines'][0]}" in text.replace("\u200b", "")
        assert f'<option value="{loc["path"]}">' in dom   # the file filter offers every file of the group


def test_the_probe_sees_a_table_that_does_not_fit(reports, tmp_path):
    """The check can fail: with the old auto layout and unbreakable cells the table is wider than its box."""
    html = (write_reports(reports["stress"], _rules(), tmp_path / "out", ["html"])["html"]).read_text("utf-8")
    broken = html.replace("table.data.fit { table-layout: fixed; width: 100%; }",
                          "table.data.fit { table-layout: auto; width: 100%; } td { white-space: nowrap; }")
    assert broken != html
    result = check_fit(broken, tmp_path, 1024, "broken")
    assert result["problems"]


def test_the_expanded_view_shows_three_lines_of_context(tmp_path):
    """A finding's details show its line with three lines before and after it, the finding's line marked."""
    report = _report_of(tmp_path, {"train.py": "import torch\n# 2\n# 3\n# 4\n# 5\nx = torch.zeros(1).cuda()\n"
                                               "# 7\n# 8\n# 9\n# 10\n"})
    (f,) = [f for f in report["findings"] if f["code"] == "NPU002"]
    report["findings"] = [f]
    html = (write_reports(report, _rules(), tmp_path / "out", ["html"])["html"]).read_text(encoding="utf-8")
    page = tmp_path / "ctx.html"
    page.write_text(html.replace("</body>", "<script>document.querySelector('#findings-body tr.row').click();"
                                            "</script></body>"), encoding="utf-8")
    dom = _chromium(["--window-size=1400,1200", "--dump-dom", page.as_uri()], tmp_path / "profile").stdout
    box = dom.split('<div class="snippet">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr(?: class="(hit)")?><td class="ln">(\d+)</td><td class="src">([^<]*)</td>', box)
    assert [(int(n), src, hit) for hit, n, src in rows] == [
        (3, "# 3", ""), (4, "# 4", ""), (5, "# 5", ""), (6, "x = torch.zeros(1).cuda()", "hit"), (7, "# 7", ""),
        (8, "# 8", ""), (9, "# 9", "")]
