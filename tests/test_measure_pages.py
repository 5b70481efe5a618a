"""The Measured page in AppTest: the engine's numbers, the one apply action, bad input told."""

import html
from pathlib import Path

import pytest
from app_helpers import ARTICLE
from streamlit.testing.v1 import AppTest

from kvmodel import catalog
from kvmodel import inputs as I
from kvmodel.build import build_scenario
from kvmodel.calibrate import (
    compare_nsys_to_model,
    compare_to_model,
    fit_from_bandwidth_points,
    fit_latency_bandwidth,
)
from kvmodel.measure import load_measurement
from kvmodel.transfer import evaluate
from kvview import params as P
from kvview.fmt import fmt_bandwidth, fmt_time
from ui import measure_ui as mu

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
DATA = ROOT / "data" / "measurements"
PAGE = "pages/measure.py"
DEFAULT_SC = build_scenario(
    model="llama-3.1-70b", link="100gbe", framework="vllm"
)  # the app default


def measure_page(query=None, sample=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({**ARTICLE, **(query or {})})  # the scenario build_scenario gives
    at.run()
    at.switch_page(PAGE).run()
    if sample:
        at.selectbox(key="w_meas").set_value(sample).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at, label):
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r} in {[m.label for m in at.metric]}")


def qp(at, name):
    v = at.query_params[name]
    return v[0] if isinstance(v, list) else v


def paste(at, text: str) -> AppTest:
    at.radio(key="w_measure_source").set_value("Paste").run()
    at.text_area(key="measure_paste").input(text)
    at.button(key="measure_read").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# --------------------------------------------------------------------------- each kind


def test_page_is_in_the_navigation_and_starts_on_a_synthetic_sample():
    at = measure_page()
    assert at.title[0].value == "Measured vs model"
    assert at.selectbox(key="w_meas").value == "vllm_pd_metrics.prom"
    assert any("synthetic" in c.value for c in at.caption)
    assert set(at.selectbox(key="w_meas").options) >= {
        "vllm_pd_metrics.prom · Prometheus text",
        "ib_write_bw.txt · perftest text, MB/sec",
        "transfer_pairs.csv · CSV message_bytes,latency_us",
    }


def test_vllm_scrape_numbers_are_the_engines():
    at = measure_page(sample="vllm_pd_metrics.prom")
    m = load_measurement(DATA / "vllm_pd_metrics.prom").data
    cmp = compare_to_model(DEFAULT_SC, m)
    assert metric(at, "Transfer gap mean") == fmt_time(m.gap_mean_s)
    assert metric(at, "Gap p50") == fmt_time(m.gap_p50_s)
    assert metric(at, "Gap p99") == fmt_time(m.gap_p99_s)
    assert metric(at, "TTFT mean") == fmt_time(m.ttft_mean_s)
    assert metric(at, "Measured share of TTFT") == f"{m.transfer_share_of_ttft:.1%}" == "2.9%"
    # under the line: a green arrow pointing down ("−17.1 pp": the typographic minus once hid
    # the sign from Streamlit, which drew a red arrow pointing up)
    from streamlit.proto.Metric_pb2 import Metric as MetricProto

    tile = next(x for x in at.metric if x.label == "Measured share of TTFT").proto
    assert "17.1 pp vs the 20% line" in tile.delta
    assert tile.direction == MetricProto.MetricDirection.DOWN
    assert tile.color == MetricProto.MetricColor.GREEN
    assert metric(at, "Verdict vs 20%") == "under"
    assert metric(at, "Effective bandwidth") == fmt_bandwidth(m.effective_bandwidth_bytes_per_s)
    info = at.info[0].value
    assert "2.9% of TTFT" in info and "under the 20% line" in info
    assert "Read **vllm_pd_metrics.prom** as Prometheus text" in at.caption[1].value
    table = at.dataframe[0].value.set_index("Quantity")
    ev = evaluate(DEFAULT_SC)
    assert table.loc["Time to first token", "Model"] == f"{ev.ttft_s * 1e3:,.2f} ms"
    assert table.loc["Time to first token", "Measured"] == f"{m.ttft_mean_s * 1e3:,.2f} ms"
    ratio = cmp.ttft_s.ratio
    assert table.loc["Time to first token", "Measured ÷ model"] == f"{ratio:,.2f}×"
    assert len(at.get("plotly_chart")) == 2  # bars and the gap buckets


def test_sglang_scrape_is_over_the_line_and_model_follows_the_sidebar():
    at = measure_page({"link": "ib-ndr", "model": "llama-3.1-8b"}, "sglang_pd_metrics.prom")
    m = load_measurement(DATA / "sglang_pd_metrics.prom").data
    assert metric(at, "Verdict vs 20%") == "over"
    assert "over the 20% line" in at.info[0].value
    sc = build_scenario(model="llama-3.1-8b", link="ib-ndr", framework="vllm")
    cmp = compare_to_model(sc, m)
    assert metric(at, "Model's share of TTFT") == f"{cmp.transfer_share_of_ttft.model:.1%}"
    assert "InfiniBand NDR" in at.info[0].value


def test_per_request_gauge_is_read_and_warned_about():
    at = measure_page(sample="gap_gauge.prom")
    m = load_measurement(DATA / "gap_gauge.prom").data
    assert metric(at, "Transfer gap mean") == fmt_time(m.gap_mean_s)
    (gauge,) = [w.value for w in at.warning if "gauge" in w.value]
    assert "gauge with 8 label sets" in gauge and "Histogram" in gauge


def test_the_recipes_scrape_reads_on_the_page():
    from ui.recipes_ui import example_scrape

    text = example_scrape()
    at = measure_page()
    at.radio(key="w_measure_source").set_value("Upload").run()
    upload = ("kv_gap_example.prom", text.encode(), "text/plain")
    at.file_uploader(key="measure_upload").set_value(upload).run()
    assert not at.exception, [e.value for e in at.exception]
    m = load_measurement(text.encode(), "kv_gap_example.prom").data
    assert metric(at, "Transfer gap mean") == fmt_time(m.gap_mean_s)
    assert m.gap_count == 400


@pytest.mark.parametrize(
    "sample", ["ib_write_bw.txt", "ib_send_bw_mib.txt", "ib_read_bw_gbits.txt", "ib_write_bw.json"]
)
def test_perftest_fit_numbers_are_the_engines(sample):
    at = measure_page({"link": "ib-ndr"}, sample)
    fit = fit_from_bandwidth_points(load_measurement(DATA / sample).data.points)
    ndr = catalog.get_link("ib-ndr")
    assert metric(at, "Fitted bandwidth") == fmt_bandwidth(fit.bandwidth_bytes_per_s)
    assert metric(at, "Per-message cost") == f"{fit.latency_s * 1e6:,.3g} µs"
    eff = fit.bandwidth_bytes_per_s / ndr.bandwidth_bytes_per_s
    assert metric(at, "Efficiency vs nominal") == f"{eff:.1%}"
    assert metric(at, "RMS relative error") == f"{fit.rms_relative_error:.2%}"
    assert len(at.get("plotly_chart")) == 2  # the fit over the points, the efficiency curve
    assert at.button(key="measure_apply").label == "Apply this fit to the scenario"


def test_pairs_fit_numbers_are_the_engines():
    at = measure_page(sample="transfer_pairs.csv")
    pts = load_measurement(DATA / "transfer_pairs.csv").data
    fit = fit_latency_bandwidth(pts.sizes_bytes, pts.seconds)
    assert metric(at, "Fitted bandwidth") == fmt_bandwidth(fit.bandwidth_bytes_per_s)
    assert metric(at, "Latency") == f"{fit.latency_s * 1e6:,.3g} µs" == "2.1 µs"
    assert "not 100 GbE" in at.info[0].value  # 46.6 GB/s cannot be the sidebar's 100 GbE


@pytest.mark.parametrize(
    "sample", ["nsys_cuda_gpu_kern_sum.csv", "nsys_cuda_gpu_trace.csv", "nsys_nvtx_sum.csv"]
)
def test_nsys_numbers_are_the_engines(sample):
    query = {"link": "ib-ndr", "seq": "4096", "tp": "8"}
    at = measure_page(query, sample)
    nsys = load_measurement(DATA / sample).data
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8)
    cmp = compare_nsys_to_model(sc, nsys)
    assert metric(at, "Transfers") == f"{nsys.count:,}"
    assert metric(at, "Mean") == fmt_time(nsys.mean_s)
    assert metric(at, "Model per layer") == fmt_time(cmp.per_layer_s.model)
    assert metric(at, "Measured ÷ model") == f"{cmp.per_layer_s.ratio:,.2f}×"
    assert f"{cmp.per_layer_s.ratio:.2f}× the model" in at.info[0].value
    table = at.dataframe[0].value.set_index("Quantity")
    assert table.loc["Mean per transfer", "Measured"] == fmt_time(nsys.mean_s)


def test_nsys_regex_selects_other_rows_and_a_bad_regex_is_an_error():
    at = measure_page(sample="nsys_cuda_gpu_kern_sum.csv")
    at.text_input(key="measure_pattern").input("gemm").run()
    nsys = load_measurement(DATA / "nsys_cuda_gpu_kern_sum.csv", pattern="gemm").data
    assert metric(at, "Transfers") == f"{nsys.count:,}"
    assert nsys.count != 2560
    at.text_input(key="measure_pattern").input("(unclosed").run()
    assert not at.exception
    assert "not a valid regular expression" in at.error[0].value


# --------------------------------------------------------------------------- the one action


def test_apply_fit_sets_a_custom_link_in_the_sidebar_and_the_link():
    at = measure_page(sample="ib_write_bw.txt")
    fit = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.txt").data.points)
    assert at.radio(key="measure_apply_mode").options == [
        "Replace the interconnect with the measured link (custom, "
        f"{fmt_bandwidth(fit.bandwidth_bytes_per_s)}, efficiency 100 %)"
    ]  # above the nominal 100 GbE: no "set efficiency" mode
    at.button(key="measure_apply").click().run()
    assert not at.exception
    bw = f"{fit.bandwidth_bytes_per_s / 1e9:.4g}"
    assert qp(at, "link") == "custom" and qp(at, "bw") == bw
    assert qp(at, "lat") == "4"  # perftest's intercept is not a latency: 100 GbE's is kept
    assert at.selectbox(key="link").value == "custom"
    assert at.number_input(key="bw").value == pytest.approx(float(bw))
    assert "custom link at 48.02 GB/s" in at.success[0].value
    # the fitted link is now the scenario: efficiency 100 %
    assert metric(at, "Efficiency vs nominal") == "100.0%"
    at.switch_page("pages/overview.py").run()
    assert not at.exception
    sc = build_scenario(model="llama-3.1-70b", bandwidth_gbs=float(bw), latency_us=4.0)
    assert metric(at, "Exposed transfer") == f"{evaluate(sc).exposed_s * 1e3:,.2f} ms"


def test_apply_fit_as_efficiency_keeps_the_nominal_link():
    at = measure_page({"link": "ib-ndr"}, "ib_write_bw.txt")
    fit = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.txt").data.points)
    pct = round(fit.bandwidth_bytes_per_s / 50e9 * 100)
    at.radio(key="measure_apply_mode").set_value("efficiency").run()
    at.button(key="measure_apply").click().run()
    assert not at.exception
    assert qp(at, "link") == "ib-ndr" and qp(at, "eff") == str(pct) == "96"
    assert at.slider(key="eff").value == pct
    assert "link efficiency is now 96 %" in at.success[0].value


def test_pairs_fit_applies_its_latency():
    at = measure_page(sample="transfer_pairs.csv")
    pts = load_measurement(DATA / "transfer_pairs.csv").data
    fit = fit_latency_bandwidth(pts.sizes_bytes, pts.seconds)
    at.button(key="measure_apply").click().run()
    assert qp(at, "link") == "custom"
    assert qp(at, "lat") == f"{fit.latency_s * 1e6:.3g}"
    assert qp(at, "bw") == f"{fit.bandwidth_bytes_per_s / 1e9:.4g}"


# --------------------------------------------------------------------------- input


def test_upload_is_read_and_detected():
    at = measure_page()
    at.radio(key="w_measure_source").set_value("Upload").run()
    assert "Upload a measurement" in at.info[0].value
    data = (DATA / "ib_write_bw.txt").read_bytes()
    at.file_uploader(key="measure_upload").set_value(("my_ndr.txt", data, "text/plain")).run()
    assert not at.exception, [e.value for e in at.exception]
    fit = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.txt").data.points)
    assert metric(at, "Fitted bandwidth") == fmt_bandwidth(fit.bandwidth_bytes_per_s)
    assert any("Read **my_ndr.txt** as perftest" in c.value for c in at.caption)
    assert any("bandwidth column in MB/sec" in c.value for c in at.caption)


def test_an_upload_survives_a_page_switch_until_forgotten():
    at = measure_page()
    at.radio(key="w_measure_source").set_value("Upload").run()
    data = (DATA / "ib_write_bw.txt").read_bytes()
    at.file_uploader(key="measure_upload").set_value(("my_ndr.txt", data, "text/plain")).run()
    fitted = metric(at, "Fitted bandwidth")
    at.switch_page("pages/compare.py").run()
    at.switch_page(PAGE).run()  # the uploader comes back empty; the sample used to show
    assert not at.exception
    assert at.radio(key="w_measure_source").value == "Upload"
    assert metric(at, "Fitted bandwidth") == fitted
    assert any("Showing my_ndr.txt, uploaded earlier" in c.value for c in at.caption)
    at.button(key="measure_forget").click().run()
    assert "Upload a measurement" in at.info[0].value
    at.file_uploader(key="measure_upload").set_value(("my_ndr.txt", data, "text/plain")).run()
    at.file_uploader(key="measure_upload").set_value(None).run()  # the uploader's ✕
    assert "Upload a measurement" in at.info[0].value


def test_pasted_scrape_is_read():
    at = paste(measure_page(), (DATA / "sglang_pd_metrics.prom").read_text())
    assert metric(at, "Verdict vs 20%") == "over"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # garbled Prometheus: the third line is cut in half
        (
            "# TYPE llm_kv_transfer_gap_seconds histogram\n"
            'llm_kv_transfer_gap_seconds_bucket{le="0.005"} 3\n'
            'llm_kv_transfer_gap_seconds_bucket{le="0.01\n',
            ("line 3", "expected Prometheus text"),
        ),
        # a truncated perftest row
        (
            " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n"
            " 2 1000 9.1 9.0 4.7\n 4 1000\n",
            ("line 3", "cut short"),
        ),
        # a time column without a unit
        ("bytes,time\n1024,3\n2048,5\n", ("line 1", "has no unit")),
        # garbage in a pairs file
        ("bytes,seconds\n1024,0.001\n2048,abc\n", ("line 3", "expected '<bytes>,<seconds>'")),
        # two perftest runs in different units mixed in one file
        (
            " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n"
            " 2 1000 9.1 9.0 4.7\n"
            " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n"
            " 2 1000 0.1 0.1 4.7\n",
            ("line 3", "one unit per file"),
        ),
        # nothing recognisable at all
        ("hello world\nthis is not a measurement\n", ("line 1", "expected Prometheus text")),
    ],
    ids=["garbled-prom", "truncated-perftest", "unitless", "garbage-pairs", "mixed", "unknown"],
)
def test_bad_paste_names_the_line_and_the_page_keeps_working(text, expected):
    at = paste(measure_page(), text)
    assert not at.exception
    assert at.error, "no error shown"
    msg = html.unescape(at.error[0].value)  # as the reader sees it: "&lt;" is drawn as "<"
    for part in expected:
        assert part in msg, (part, msg)
    # the page still works: back to a sample
    at.radio(key="w_measure_source").set_value("Sample").run()
    assert not at.exception and not at.error
    assert metric(at, "Verdict vs 20%") == "under"


def test_read_as_override_and_binary_upload():
    at = measure_page(sample="vllm_pd_metrics.prom")
    at.selectbox(key="w_mread").set_value("pairs").run()
    assert not at.exception
    assert "line" in at.error[0].value and "expected" in at.error[0].value
    at.selectbox(key="w_mread").set_value("auto").run()
    at.radio(key="w_measure_source").set_value("Upload").run()
    at.file_uploader(key="measure_upload").set_value(
        ("trace.csv", b"bytes,seconds\n\x00\x01\x02", "text/csv")
    ).run()
    assert not at.exception
    assert "line 2 holds binary data" in at.error[0].value


def test_paste_button_without_text_asks_for_it():
    at = measure_page()
    at.radio(key="w_measure_source").set_value("Paste").run()
    at.button(key="measure_read").click().run()
    assert not at.exception and "Paste the text" in at.info[0].value


# --------------------------------------------------------------------------- figures


def test_figure_builders_have_titles_units_and_hover_units():
    from kvview import figures

    fit = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.txt").data.points)
    sizes = list(load_measurement(DATA / "ib_write_bw.txt").data.sizes_bytes)
    bws = list(load_measurement(DATA / "ib_write_bw.txt").data.bandwidths_bytes_per_s)
    m = load_measurement(DATA / "vllm_pd_metrics.prom").data
    gap = m.summaries[m.gap_source]
    figs = [
        figures.figure_model_vs_measured([("TTFT", 0.3, 0.18), ("gap", 0.004, 0.005)]),
        figures.figure_model_vs_measured([("mean", 44e-6, 52e-6)], unit="µs"),
        figures.figure_gap_distribution(gap.buckets, model_s=0.003, source=m.gap_source),
        figures.figure_gap_distribution(samples=[0.004, 0.005, 0.01], model_s=0.003),
        figures.figure_bandwidth_fit(sizes, bws, fit, nominal=50e9, link="NDR"),
        figures.figure_time_fit([4096, 1e6, 1e8], [2.2e-6, 2.4e-5, 2.2e-3], fit),
        figures.figure_efficiency_curve(sizes, bws, fit, nominal=50e9, link="NDR"),
        figures.figure_transfer_durations([50e-6, 52e-6, 55e-6], model_s=44e-6),
    ]
    for fig in figs:
        assert fig.layout.title.text
        axes = (fig.layout.xaxis.title.text or "") + (fig.layout.yaxis.title.text or "")
        assert "[" in axes  # a unit in brackets on the measured axis
        for tr in fig.data:
            if tr.hovertemplate:
                assert any(u in tr.hovertemplate for u in ("ms", "µs", "GB/s", "%", " B"))
    assert figs[0].layout.yaxis.type == "log"  # 3.4 ms next to 300 ms
    assert figs[1].layout.yaxis.type != "log" and "µs" in figs[1].layout.yaxis.title.text
    # the empty buckets at both ends are not drawn (one kept on each side)
    bars = figs[2].data[0]
    assert bars.y[0] == 0 and bars.y[-1] == 0 and min(bars.y[1:-1]) > 0
    curve = figs[4].data[1]
    assert max(curve.y) == pytest.approx(fit.bandwidth_bytes_per_s / 1e9, rel=0.01)


def test_a_scrape_far_from_the_model_offers_its_own_settings():
    # vllm_pd_metrics.prom: 2.9 % measured against the article scenario's share: more than 1.5×
    # apart, so the page says they differ and offers the scrape's bytes per transfer and bandwidth
    at = measure_page(sample="vllm_pd_metrics.prom")
    text = at.info[0].value
    assert "They differ by" in text and "does not match this cluster" in text
    buttons = [b for b in at.button if b.key == "measure_apply_scrape"]
    assert buttons, "no button to set what the scrape reveals"
    buttons[0].click().run()
    assert at.session_state["link"] == "custom"
    assert any("Applied" in s.value for s in at.success)


def test_an_uploaded_files_name_is_shown_as_text():
    # a file called "![x](http://attacker/x.png).txt" names itself; it draws no image
    from kvmodel import catalog
    from kvmodel.calibrate import Fit
    from kvview.measure_text import fit_takeaway

    fit = Fit(latency_s=1e-6, bandwidth_bytes_per_s=40e9, rms_relative_error=0.01, n=5)
    text = fit_takeaway(fit, catalog.get_link("ib-ndr"), "![x](http://attacker/x.png).txt")
    assert "![" not in text and "](" not in text


# --------------------------------------------------------------------------- in the link


def test_the_pages_choices_are_in_the_link():
    """The sample and the format travel in the link (meas, mread), both ways (issue 13)."""
    assert list(mu.READ_AS) == list(I.READ_MEASUREMENT_AS)  # one list of formats
    assert set(mu.sample_files()) == set(I.get("meas").allowed())
    at = measure_page({"meas": "ib_write_bw.txt", "mread": "perftest"})
    assert at.selectbox(key="w_meas").value == "ib_write_bw.txt"
    assert at.selectbox(key="w_mread").value == "perftest"
    assert "Fitted bandwidth" in [m.label for m in at.metric]
    at.selectbox(key="w_meas").set_value("transfer_pairs.csv").run()
    at.selectbox(key="w_mread").set_value("auto").run()
    assert qp(at, "meas") == "transfer_pairs.csv" and "mread" not in at.query_params
    bad = measure_page({"meas": "nope.prom"})  # an unknown sample: a warning, the default
    assert bad.selectbox(key="w_meas").value == "vllm_pd_metrics.prom"
    assert "meas='nope.prom' is not one of" in P.parse_query({"meas": "nope.prom"})[1][0]
