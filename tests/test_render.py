"""Tests for the report renderers (JSON, HTML, terminal)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analyse.render import FORMATS, render_html, render_terminal, write_reports

SCHEMA = Path(__file__).resolve().parents[1] / "analyse" / "schemas" / "report.schema.json"  # the shipped copy
CHROMIUM = Path("/usr/bin/chromium")

XSS = "<script>alert('pwned')</script>"


def _rule(code, name, category, severity):
    return {
        "code": code, "name": name, "category": category, "severity": severity,
        "summary": f"Detects {name}.", "why": f"Why {name} matters on Ascend.",
        "example": "torch.cuda.set_device(0)\nx = x.cuda()", "fix": "torch.npu.set_device(0)\nx = x.npu()",
    }


RULES = [
    _rule("NPU001", "cuda-device-call", "cuda-api", "auto"),
    _rule("NPU002", "nccl-backend", "distributed", "manual"),
    _rule("NPU010", "cuda-extension-kernel", "cuda-extension", "blocker"),
    _rule("NPU020", "bool-mask-index", "dynamic-shape", "advice"),
    _rule("NPU099", "never-fires", "affinity", "info"),
]


def _finding(i, code, category, severity, path, line, api, message, replacement=None, chain=None):
    f = {
        "id": f"{i:016x}", "code": code, "category": category, "severity": severity,
        "path": path, "line": line, "column": 4, "api": api, "message": message,
        "replacement": replacement, "confidence": "high", "evidence": "syntax",
        "snippet": f"x = {api}(y)",
    }
    if chain:
        f["chain"] = chain
    return f


def _summary(findings, effort, explanation, **extra):
    by_sev, by_cat = {}, {}
    for f in findings:
        by_sev[f["severity"]] = by_sev.get(f["severity"], 0) + 1
        by_cat[f["category"]] = by_cat.get(f["category"], 0) + 1
    s = {
        "files_analysed": 12, "files_failed": 1, "lines_analysed": 3456, "duration_s": 0.75,
        "by_category": by_cat, "by_severity": by_sev,
        "verdict": {
            "effort": effort,
            "blockers": by_sev.get("blocker", 0),
            "manual_changes": by_sev.get("manual", 0),
            "auto_migratable": by_sev.get("auto", 0),
            "explanation": explanation,
        },
    }
    s.update(extra)
    return s


def script_report():
    findings = [
        _finding(1, "NPU001", "cuda-api", "auto", "train.py", 12, "torch.cuda.set_device",
                 "CUDA device selection is mapped by transfer_to_npu.", "torch.npu.set_device"),
        _finding(2, "NPU002", "distributed", "manual", "dist/launch.py", 40,
                 "torch.distributed.init_process_group", "backend 'nccl' does not exist on Ascend.",
                 "init_process_group(backend='hccl')"),
        _finding(3, "NPU010", "cuda-extension", "blocker", "models/ops.py", 7, "models._C.roi_align",
                 "Custom CUDA kernel " + XSS + " has no NPU implementation.", None,
                 ["train.main", "models.net.Net.forward", "models._C.roi_align"]),
        _finding(4, "NPU020", "dynamic-shape", "advice", "models/net.py", 88, "bool-mask-index",
                 "Boolean mask indexing yields dynamic shapes."),
    ]
    return {
        "schema_version": "1",
        "tool": {"name": "npu-analyse", "version": "0.1.0"},
        "mode": "script",
        "target": {"torch_version": "2.8.0", "torch_npu_version": "2.8.0", "knowledge_base": "kb-test"},
        "inputs": ["project/"],
        "summary": _summary(findings, "blocked",
                            "One custom CUDA kernel has no NPU implementation and must be rewritten.",
                            unknown_apis=[{"api": "torch.mystery.op", "count": 3}]),
        "findings": findings,
        "errors": [{"path": "broken.py", "kind": "syntax", "message": "invalid syntax", "line": 5}],
    }


def thirdparty_report():
    findings = [
        _finding(1, "NPU001", "cuda-api", "auto", "mmcv/ops/nms.py", 30, "torch.cuda.current_device",
                 "Current device query is mapped by transfer_to_npu.", "torch.npu.current_device"),
    ]
    return {
        "schema_version": "1",
        "tool": {"name": "npu-analyse", "version": "0.1.0"},
        "mode": "thirdparty",
        "target": {"torch_version": "2.8.0", "torch_npu_version": None, "knowledge_base": "kb-test"},
        "inputs": ["site-packages/mmcv"],
        "summary": _summary(findings, "high", "Two public entry points reach unsupported kernels."),
        "findings": findings,
        "errors": [],
        "thirdparty": {
            "functions": [
                {"qualname": "mmcv.ops.roi_align.RoIAlign.forward", "path": "mmcv/ops/roi_align.py", "line": 120,
                 "status": "unsupported", "reasons": ["mmcv._ext.roi_align_forward"],
                 "via": ["mmcv.ops.roi_align.RoIAlign.forward", "mmcv.ops.roi_align.RoIAlignFunction.forward",
                         "mmcv._ext.roi_align_forward"]},
                {"qualname": "mmcv.ops.nms.nms", "path": "mmcv/ops/nms.py", "line": 30,
                 "status": "needs-migration", "reasons": ["torch.cuda.current_device"], "via": ["mmcv.ops.nms.nms"]},
                {"qualname": "mmcv.utils.mystery", "path": "mmcv/utils.py", "line": 3,
                 "status": "unknown", "reasons": ["torch.mystery.op"]},
            ],
            "summary": {"functions_total": 812, "affected": 3, "public_entry_points": 120,
                        "public_affected": 2, "call_graph": {"nodes": 812, "edges": 2301}},
        },
    }


def empty_report():
    return {
        "schema_version": "1",
        "tool": {"name": "npu-analyse", "version": "0.1.0"},
        "mode": "script",
        "target": {"torch_version": "2.8.0", "knowledge_base": "kb-test"},
        "inputs": ["hello.py"],
        "summary": _summary([], "none", "Nothing to change."),
        "findings": [],
        "errors": [],
    }


ALL_REPORTS = {"script": script_report, "thirdparty": thirdparty_report, "empty": empty_report}


def _embedded_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert m, "embedded report data missing"
    return json.loads(m.group(1))


# ------------------------------------------------------------------ write_reports / JSON

def test_formats_constant():
    assert FORMATS == ("json", "html", "sarif", "csv", "junit", "gitlab", "github", "text")


@pytest.mark.parametrize("name", sorted(ALL_REPORTS))
def test_json_round_trip(tmp_path, name):
    report = ALL_REPORTS[name]()
    written = write_reports(report, RULES, tmp_path / "out" / "nested", ["json"])
    assert set(written) == {"json"}
    path = written["json"]
    assert path == tmp_path / "out" / "nested" / "report.json"
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == report
    assert text.startswith("{\n  \"")  # indent=2


def test_json_keeps_non_ascii(tmp_path):
    report = script_report()
    report["findings"][0]["message"] = "设备选择 — ünïcode"
    path = write_reports(report, RULES, tmp_path, ["json"])["json"]
    raw = path.read_bytes().decode("utf-8")
    assert "设备选择 — ünïcode" in raw


@pytest.mark.parametrize("name", sorted(ALL_REPORTS))
def test_json_validates_against_schema(tmp_path, name):
    if not SCHEMA.is_file():
        pytest.skip(f"schema not found at {SCHEMA}")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    path = write_reports(ALL_REPORTS[name](), RULES, tmp_path, ["json"])["json"]
    jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)


def test_write_both_formats(tmp_path):
    written = write_reports(script_report(), RULES, tmp_path, ["html", "json"])
    assert list(written) == ["json", "html"]
    assert written["html"] == tmp_path / "report.html"
    assert written["html"].read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_write_unknown_format_rejected(tmp_path):
    with pytest.raises(ValueError):
        write_reports(script_report(), RULES, tmp_path / "x", ["json", "pdf"])
    assert not (tmp_path / "x").exists()


def test_write_no_formats(tmp_path):
    assert write_reports(script_report(), RULES, tmp_path / "o", []) == {}


# ------------------------------------------------------------------------------ HTML

def test_html_contains_findings_and_rule_anchors():
    report = script_report()
    html = render_html(report, RULES)
    data = _embedded_data(html)
    assert len(data["findings"]) == len(report["findings"])
    for f in report["findings"]:
        # rows are rendered in the browser from the embedded data blob
        assert any(d["api"] == f["api"] and d["message"] == f["message"] for d in data["findings"])
        assert f["api"] in html.replace("\\u003c", "<").replace("\\u003e", ">")
        assert f'id="rule-{f["code"]}"' in html
    # every documented rule is in the documentation section, with its example and fix
    for r in RULES:
        assert f'id="rule-{r["code"]}"' in html
        assert r["name"] in html
    assert "torch.npu.set_device(0)\nx = x.npu()" in html
    # verdict, errors, unknown APIs
    assert "effort-blocked" in html
    assert "One custom CUDA kernel has no NPU implementation" in html
    assert "broken.<wbr>py" in html and "invalid syntax" in html   # paths may break after "." "_" "/"
    assert "APIs the docs do not list (hand to the probe)" in html
    assert "torch.mystery.op" in html
    # filter controls and the chain
    for ident in ("f-search", "f-sev", "f-cat", "f-file", "findings-body"):
        assert f'id="{ident}"' in html
    assert "models.net.Net.forward" in html


def test_html_undocumented_code_gets_anchor():
    report = script_report()
    report["findings"][0]["code"] = "NPU777"
    html = render_html(report, RULES)
    assert 'id="rule-NPU777"' in html
    assert "No documentation is available" in html


def test_html_is_self_contained():
    for name, make in ALL_REPORTS.items():
        html = render_html(make(), RULES)
        assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I), name
        assert not re.search(r"""url\(\s*["']?(?:https?:)?//""", html, re.I), name
        assert "@import" not in html
        assert "http://" not in html and "https://" not in html, name


def test_html_escapes_injected_markup():
    report = script_report()
    report["errors"][0]["message"] = "bad token " + XSS
    report["inputs"] = [XSS]
    report["summary"]["verdict"]["explanation"] = XSS
    html = render_html(report, [dict(RULES[0], why=XSS)] + RULES[1:])
    assert XSS not in html
    assert "</script><" not in html.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html
    # the injected message survives intact in the data the browser reads
    assert any(XSS in f["message"] for f in _embedded_data(html)["findings"])


def test_html_thirdparty_mode():
    report = thirdparty_report()
    html = render_html(report, RULES)
    data = _embedded_data(html)
    assert [f["qualname"] for f in data["functions"]] == [f["qualname"] for f in report["thirdparty"]["functions"]]
    assert data["functions"][0]["via"][1] == "mmcv.ops.roi_align.RoIAlignFunction.forward"
    assert 'id="library"' in html and 'id="t-search"' in html and 'id="fn-body"' in html
    # generic rendering of the extra summary numbers
    assert "Affected public entry points" in html
    assert "Public entry points" in html
    assert "2,301" in html and "812" in html
    for status in ("unsupported", "needs-migration", "unknown"):
        assert f'data-value="{status}"' in html


def test_html_empty_report():
    html = render_html(empty_report(), RULES)
    assert "Nothing to migrate" in html
    assert "effort-none" in html
    assert 'id="findings-body"' not in html
    assert _embedded_data(html)["findings"] == []


def test_html_without_rules():
    html = render_html(empty_report(), [])
    assert "No rule documentation was supplied" in html


def test_html_many_findings_size():
    report = script_report()
    base = report["findings"][0]
    report["findings"] = [dict(base, id=f"{i:016x}", line=i + 1, path=f"pkg/m{i % 50}.py") for i in range(5000)]
    html = render_html(report, RULES)
    assert len(_embedded_data(html)["findings"]) == 5000
    assert len(html.encode("utf-8")) < 5_000_000


# -------------------------------------------------------------------------- terminal

def test_terminal_summary(tmp_path):
    report = script_report()
    written = {"json": tmp_path / "report.json", "html": tmp_path / "report.html"}
    text = render_terminal(report, written)
    assert "\033[" not in text
    assert "BLOCKED" in text
    assert "One custom CUDA kernel" in text
    assert "blocker 1" in text and "manual 1" in text and "auto 1" in text and "advice 1" in text
    assert "cuda-extension 1" in text and "distributed 1" in text
    assert "Errors: 1" in text
    assert str(written["json"]) in text and str(written["html"]) in text
    lines = text.splitlines()
    top = [l for l in lines if "models/ops.py:7" in l]
    assert top and "NPU010" in top[0] and "models._C.roi_align" in top[0]
    # blocker listed before the advice finding
    assert text.index("models/ops.py:7") < text.index("models/net.py:88")
    assert all(len(l) <= 100 for l in lines if not l.startswith("  json") and not l.startswith("  html"))


def test_terminal_top_and_color(tmp_path):
    text = render_terminal(script_report(), {}, color=True, top=2)
    assert "\033[" in text
    assert "Top 2 of 4" in text
    assert "models/net.py:88" not in text


def test_terminal_truncates_long_messages():
    report = script_report()
    report["findings"][0]["message"] = "word " * 200
    text = render_terminal(report, {}, width=100)
    assert all(len(l) <= 100 for l in text.splitlines())
    assert "…" in text


def test_terminal_thirdparty_and_empty():
    text = render_terminal(thirdparty_report(), {}, verbose=True)
    assert "HIGH" in text
    assert "unsupported 1" in text and "needs-migration 1" in text
    flat = " ".join(text.split())
    assert "public affected 2" in flat and "nodes 812" in flat   # the statistics: -v only
    plain = render_terminal(thirdparty_report(), {})
    assert "nodes 812" not in plain and "public affected" not in plain and "Statistics" not in plain
    empty = render_terminal(empty_report(), {})
    assert "nothing to migrate" in empty
    assert "Errors: 0" in empty


# -------------------------------------------------------------- headless browser check

def _chromium_dom(html_path: Path, profile: Path):
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", html_path.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def _console_errors(stderr: str):
    return [l for l in stderr.splitlines()
            if "Uncaught" in l or ("CONSOLE" in l and ("Error" in l or "error" in l))]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed")
@pytest.mark.parametrize("name", sorted(ALL_REPORTS))
def test_html_renders_in_browser(tmp_path, name):
    report = ALL_REPORTS[name]()
    path = write_reports(report, RULES, tmp_path / "out", ["html"])["html"]
    rc, dom, err = _chromium_dom(path, tmp_path / "profile")
    assert rc == 0, err[-2000:]
    assert not _console_errors(err), _console_errors(err)
    assert 'data-rendered="true"' in dom  # the page script ran to its end
    rows = dom.count('<tr class="row')
    expected = len(report["findings"]) + len((report.get("thirdparty") or {}).get("functions") or [])
    assert rows == expected
    assert "alert(" not in dom or "&lt;script&gt;" in dom


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed")
def test_browser_check_detects_script_errors(tmp_path):
    """The console check above is able to see an error at all."""
    path = tmp_path / "bad.html"
    path.write_text("<!DOCTYPE html><html><body><script>nonexistent_fn();</script></body></html>", encoding="utf-8")
    _, _, err = _chromium_dom(path, tmp_path / "profile")
    assert _console_errors(err)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium not installed")
def test_browser_filters_and_sorting(tmp_path):
    """Clicking a severity card, typing in the search box and sorting change the rendered rows."""
    html = render_html(script_report(), RULES)
    probe = """<script>
(function () {
  var out = {};
  function rows() { return document.querySelectorAll('#findings-body tr.row').length; }
  out.all = rows();
  document.querySelector('.card[data-filter="sev"][data-value="blocker"]').click();
  out.blocker = rows();
  document.querySelector('.card[data-filter="sev"][data-value="blocker"]').click();
  out.cleared = rows();
  document.querySelector('#findings-table th[data-key="api"]').click();
  out.firstApi = document.querySelector('#findings-body tr.row td.api').textContent;
  document.querySelector('#findings-body tr.row').click();
  out.details = document.querySelectorAll('#findings-body tr.detail').length;
  var s = document.getElementById('f-search');
  s.value = 'nccl';
  s.dispatchEvent(new Event('input'));
  setTimeout(function () {
    out.search = rows();
    document.body.setAttribute('data-probe', JSON.stringify(out));
  }, 300);
})();
</script></body>"""
    path = tmp_path / "report.html"
    path.write_text(html.replace("</body>", probe), encoding="utf-8")
    rc, dom, err = _chromium_dom(path, tmp_path / "profile")
    assert not _console_errors(err), _console_errors(err)
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m, "probe did not run"
    import html as htmllib
    out = json.loads(htmllib.unescape(m.group(1)))
    assert out == {"all": 4, "blocker": 1, "cleared": 4, "firstApi": "bool-mask-index", "details": 1, "search": 1}
