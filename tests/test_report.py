"""The forwardable HTML report: numbers, no network addresses, comparison, CLI."""

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import plotly.offline
import pytest

from kvmodel.build import build_scenario
from kvmodel.cli import main
from kvview import params as P
from kvview.report import report_html

ROOT = Path(__file__).resolve().parents[1]
SHARE = "http://localhost:8501/?model=llama-3.1-70b&link=100gbe"


class Refs(HTMLParser):
    """Every src/href attribute of real tags (script bodies are not parsed as tags)."""

    def __init__(self):
        super().__init__()
        self.refs, self.tags, self.scripts = [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.scripts += tag == "script"
        self.refs += [(tag, k, v) for k, v in attrs if k in ("src", "href")]


def parse(html):
    p = Refs()
    p.feed(html)
    return p


@pytest.fixture(scope="module")
def default_report():
    sc = build_scenario(model="llama-3-70b")
    html = report_html(
        [("Llama-3-70B on 100GbE", sc)],
        share_url=SHARE,
        generated_at=datetime(2026, 5, 4, 12, 30, tzinfo=UTC),
    )
    return sc, html


@pytest.fixture(scope="module")
def compare_report():
    a = build_scenario(model="llama-3-70b")
    b = build_scenario(model="llama-3-70b", compression="int8")
    c = build_scenario(model="llama-3-70b", link="ib-ndr")
    return report_html(
        [("100GbE", a), ("100GbE + INT8", b), ("<b>NDR</b> & co", c)],
        traffic_summary={"requests": 12345, "gain": 0.61, "window": {"l_min": 128}},
    )


def test_numbers_verdicts_and_sections(default_report):
    sc, html = default_report
    for text in (
        "335.5 MB",  # 327,680 B/token × 1,024 tokens
        "1,145 tokens",  # critical sequence length on 100GbE
        "26.85 ms",  # exposed transfer
        "12.5 GB/s per direction",
        "under the 20% line",
        "0.89× (borderline)",
        "Generated 2026-05-04 12:30 UTC",
        "Decimal units",
        "Prefill time is estimated",
        "The decode step (30.0 ms) is an input",
        "HF config.json meta-llama/Llama-3.1-70B",  # the model's source
        "What it would take",
        "11.19 GB/s per direction",  # minimum bandwidth for one decode step
    ):
        assert text in html, text
    assert (
        "On 100 GbE (RoCE) with the Ideal (wire speed) stack, the KV transfer takes 0.89 decode "
        "steps" in html
    )
    assert 'id="comparison"' not in html  # one scenario: no comparison


def test_only_inline_or_share_refs(default_report):
    _, html = default_report
    p = parse(html)
    assert ("a", "href", SHARE) in p.refs
    for tag, attr, value in p.refs:
        ok = value == SHARE or value.startswith("#") or value.startswith("data:")
        assert ok, (tag, attr, value)
    assert not any(attr == "src" for _, attr, _ in p.refs)
    assert "link" not in p.tags and "iframe" not in p.tags and "img" not in p.tags


def test_plotlyjs_inlined_once_and_charts_embedded(default_report):
    _, html = default_report
    js_head = plotly.offline.get_plotlyjs()[:2000]
    assert html.count(js_head) == 1
    assert "https://cdn" not in html
    n_charts = len(re.findall(r'class="plotly-graph-div"', html))
    assert n_charts == 4  # TTFT per scenario, transfer vs S, options, tornado
    assert html.count("Plotly.newPlot(") == n_charts
    for div in ("chart-ttft", "chart-seq", "chart-1-options", "chart-1-tornado"):
        assert f'id="{div}"' in html


def test_comparison_marks_differences(compare_report):
    html = compare_report
    assert 'id="comparison"' in html
    assert '<td class="diff"><strong>170.4 MB (50.8% of 335.5 MB)</strong></td>' in html
    assert '<td class="diff"><strong>InfiniBand NDR 400G (ib-ndr)</strong></td>' in html
    # the first scenario's own cells and equal cells are never marked
    assert '<td class="diff"><strong>335.5 MB</strong></td>' not in html
    assert "&lt;b&gt;NDR&lt;/b&gt; &amp; co" in html and "<b>NDR</b>" not in html
    assert "12,345" in html and "l_min: 128" in html  # traffic summary
    p = parse(html)
    assert all(v.startswith("#") for _, _, v in p.refs)
    assert len(re.findall(r'class="plotly-graph-div"', html)) == 2 + 2 * 3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scenarios": []}, "scenarios"),
        ({"scenarios": [("", None)]}, "scenarios"),
        ({"share_url": "javascript:alert(1)"}, "share_url"),
        ({"share_url": "https://"}, "share_url"),
        ({"traffic_summary": [1]}, "traffic_summary"),
        ({"duplicate": True}, "distinct"),
    ],
)
def test_bad_input(kwargs, match):
    sc = build_scenario(model="llama-3-70b")
    scenarios = kwargs.pop("scenarios", [("A", sc)])
    if kwargs.pop("duplicate", False):
        scenarios = [("A", sc), ("A", sc)]
    with pytest.raises(ValueError, match=match):
        report_html(scenarios, **kwargs)


def test_report_modules_do_not_import_streamlit():
    # the CLI builds reports: kvview.report and what it imports must work without streamlit loaded
    code = "import sys, kvview.report; print('streamlit' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_cli_writes_the_report(tmp_path, capsys):
    out = tmp_path / "r.html"
    article = ["--stack", "ideal", "--decode-step-ms", "30", "--tp", "1"]
    assert main(["report", "--model", "llama-3-70b", *article, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert str(out) in printed and "bytes" in printed
    html = out.read_text(encoding="utf-8")
    assert "335.5 MB" in html and "1,145 tokens" in html
    links = [v for _, k, v in parse(html).refs if not v.startswith("#")]
    assert len(links) == 1 and links[0].startswith("http://localhost:8501/?")
    query = dict(parse_qsl(urlsplit(links[0]).query))
    # the short link: only what differs from the defaults, and ``stack`` (the version-2 mark)
    assert query == {"tp": "1", "step": "30", "stack": "ideal"}  # decode TP = prefill TP
    v = P.parse_query(query)[0]  # ...reads back as the report's scenario
    assert (v["model"], v["link"], v["seq"], v["prefill"]) == (
        "llama-3.1-70b",
        "100gbe",
        1024,
        "est",
    )


def test_cli_base_url_and_json(tmp_path, capsys):
    out = tmp_path / "r.html"
    argv = ["report", "--out", str(out), "--base-url", "https://kv.example/", "--json"]
    assert main([*argv, "--seq-len", "2048", "--compression", "fp8"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["path"] == str(out) and payload["bytes"] == out.stat().st_size
    assert payload["share_url"].startswith("https://kv.example/?")
    assert "seq=2048" in payload["share_url"] and "comp=fp8" in payload["share_url"]


@pytest.mark.parametrize(
    "argv",
    [
        ["report"],  # --out missing
        ["report", "--out", "x.html", "--seq-len", "0"],
        ["report", "--out", "x.html", "--link", "nope"],
        ["report", "--out", "x.pdf"],
        ["report", "--out", "x.html", "--base-url", "ftp://host/"],
        ["report", "--out", "/nonexistent-dir/x.html"],
    ],
)
def test_cli_bad_options_exit_2(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not (tmp_path / "x.html").exists()


def test_the_inputs_name_the_decode_gpu_the_framework_and_ep():
    """The handout's inputs say where decode runs, which serving framework's costs are in the
    times, and the expert parallelism, each only where it applies (they were missing)."""
    from kvmodel.build import build_scenario
    from kvview.report_text import scenario_inputs

    plain = dict(scenario_inputs(build_scenario(model="llama-3.1-70b", tp=8)))
    assert plain["GPU"] == "NVIDIA H100 SXM 80GB" and "Decode GPU" not in plain
    # build_scenario's own default adds no framework costs (the app's and CLI's is vllm)
    assert plain["Serving framework"] == "No framework costs (the source article)"
    assert "EP prefill → decode" not in plain
    rows = dict(scenario_inputs(build_scenario(model="deepseek-v3", gpu="h200", gpu_decode="h20",
                                               tp=1, tp_decode=1, ep=8, ep_decode=8,
                                               framework="sglang")))  # fmt: skip
    assert rows["Decode GPU"] == "NVIDIA H20 96GB"
    assert rows["Serving framework"] == "SGLang"
    assert rows["EP prefill → decode"] == "8 → 8"


def test_the_assumptions_name_an_engines_host_floor_when_it_holds_the_prefill():
    # DeepSeek-R1 (MLA) under SGLang: a 1,024-token prefill is held at the engine's 165 ms
    # (data/frameworks.csv mla_prefill_floor_ms); under vLLM, or for a GQA model, no such words
    from kvmodel.build import build_scenario
    from kvmodel.evaluation import evaluate
    from kvview.report_text import assumptions

    def prefill_words(**kw):
        sc = build_scenario(**kw)
        return next(a for a in assumptions(sc, evaluate(sc)) if a.startswith("Prefill time"))

    held = prefill_words(model="deepseek-r1", gpu="h200", tp=8, tp_decode=8, framework="sglang")
    assert "at least 165 ms a pass, the serving engine's host floor" in held
    assert held.endswith("= 165 ms, calibrated on measured prefills (docs/model.md, Fidelity).")
    assert "host floor" not in prefill_words(model="deepseek-r1", gpu="h200", framework="vllm")
    assert "host floor" not in prefill_words(framework="sglang")
