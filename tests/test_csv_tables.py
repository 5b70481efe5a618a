"""The CSVs people download: label column, units in headers, numbers, the scenario's link."""

import io

import pandas as pd
import pytest
from numpy.testing import assert_allclose

from kvmodel.build import build_scenario
from kvmodel.sweeps import link_batch_table, mitigation_options, mitigation_table
from kvmodel.transfer import evaluate
from kvview import csv_tables
from kvview.fmt import in_ms

LINK = "http://localhost:8501/compare?model=llama-3.1-70b&cmp=link%3Dib-ndr"


def read(data: bytes) -> pd.DataFrame:
    """The table as ``pandas.read_csv`` reads it with its defaults (issue 24: a ``#`` first
    line made it one column), without the scenario-link column."""
    return pd.read_csv(io.BytesIO(data)).drop(columns=csv_tables.SCENARIO_COLUMN, errors="ignore")


def link_of(data: bytes) -> str:
    """The scenario link of a handout: its last column, the same on every row."""
    df = pd.read_csv(io.BytesIO(data))
    assert df.columns[-1] == csv_tables.SCENARIO_COLUMN
    (link,) = set(df[csv_tables.SCENARIO_COLUMN])
    return link


def first_line(data: bytes) -> str:
    return data.decode("utf-8").split("\r\n", 1)[0]


@pytest.fixture(scope="module")
def evs():
    a = build_scenario(model="llama-3.1-70b")
    b = build_scenario(model="llama-3.1-70b", link="ib-ndr", compression="fp8")
    return [("A (sidebar)", evaluate(a)), ("B", evaluate(b))]


def test_comparison_csv(evs):
    data = csv_tables.csv_handout(csv_tables.comparison_frame(evs), scenario_link=LINK)
    assert link_of(data) == LINK
    back = read(data).set_index("quantity")
    assert list(back.columns) == ["A (sidebar)", "B"]
    assert back.index[:2].tolist() == ["Model", "Interconnect"]
    ev = evs[0][1]
    # numbers, not "107.38 ms"; the unit is in the row's label; four significant digits
    exposed = float(back.loc["Exposed transfer [ms]", "A (sidebar)"])
    assert_allclose(exposed, ev.exposed_s * 1e3, rtol=5e-4)
    assert str(back.loc["Exposed transfer [ms]", "A (sidebar)"]) == f"{exposed:g}"
    assert len(f"{exposed:g}".replace(".", "").lstrip("0")) <= 4
    assert_allclose(float(back.loc["TTFT [ms]", "B"]), evs[1][1].ttft_s * 1e3, rtol=5e-4)
    assert_allclose(float(back.loc["KV cache [GB]", "A (sidebar)"]), ev.kv_total_bytes / 1e9, 5e-4)
    assert_allclose(
        float(back.loc["Transfer share of TTFT [%]", "A (sidebar)"]),
        ev.transfer_share_of_ttft * 100,
        rtol=5e-4,
    )
    assert back.loc["Compression", "B"] == "fp8"
    assert back.loc["Transfer stack", "A (sidebar)"] == ev.scenario.stack.name  # names its stack
    # every input a Compare variant can change has its row
    assert back.loc["GPU", "B"] == ev.scenario.gpu.name
    assert_allclose(float(back.loc["Decode step [ms]", "B"]), evs[1][1].decode_step_s * 1e3, 5e-4)
    assert_allclose(float(back.loc["Prefill [ms]", "A (sidebar)"]), ev.prefill_s * 1e3, 5e-4)
    for label in back.index:
        text_rows = ("Model", "Interconnect", "Transfer stack", "KV dtype", "Compression", "GPU",
                     "Attention parallelism", "Sliding layers on the wire")  # fmt: skip
        if label not in (*text_rows, "Layer-wise"):
            assert label.endswith("]") or label == "Transfer vs decode step", label
    assert not any(" ms" in str(v) or " GB" in str(v) for v in back.to_numpy().ravel())


def test_link_by_batch_csv():
    sc = build_scenario(model="llama-3.1-70b")
    table = in_ms(link_batch_table(sc, ["ib-ndr", "100gbe"], [1, 8, 32]))
    data = csv_tables.csv_handout(csv_tables.link_batch_frame(table), scenario_link=LINK)
    assert link_of(data) == LINK
    back = read(data)
    assert back.columns.tolist() == [
        "interconnect",
        "link id",
        "bandwidth [GB/s per direction]",
        "batch 1 [ms]",
        "batch 8 [ms]",
        "batch 32 [ms]",
    ]
    assert back["interconnect"].tolist() == table["name"].tolist()
    for n in (1, 8, 32):
        assert back[f"batch {n} [ms]"].dtype.kind == "f"
        assert_allclose(back[f"batch {n} [ms]"], table[f"batch {n}"], rtol=5e-4)
    assert_allclose(back["bandwidth [GB/s per direction]"], table["GB/s per direction"])


def test_mitigations_csv():
    sc = build_scenario(model="deepseek-v3")
    table = in_ms(mitigation_table(sc, mitigation_options(sc)))
    back = read(csv_tables.csv_handout(csv_tables.mitigations_frame(table)))
    assert back.columns[0] == "option" and back["option"].tolist() == table["option"].tolist()
    assert_allclose(back["TTFT [ms]"], table["ttft_ms"], rtol=5e-4)
    assert_allclose(back["on the wire [GB]"], table["wire_bytes"] / 1e9, rtol=5e-4)
    assert_allclose(back["transfer share of TTFT [%]"], table["transfer_share"] * 100, rtol=5e-4)
    assert all("[" in c for c in back.columns if c not in ("option", "buildable", "lossy"))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(107.3812, 107.4), (0.0123456, 0.01235), (123456.7, 123500.0), (-2.71828, -2.718),
     (0.0, 0.0), (3, 3), ("text", "text"), (True, True)],
)  # fmt: skip
def test_round_sig(value, expected):
    assert csv_tables.round_sig(value) == expected
    assert type(csv_tables.round_sig(value)) is type(expected)


def test_handout_without_link_and_link_on_one_line():
    df = pd.DataFrame({"option": ["=cmd", "b"], "t [ms]": [1.23456, float("nan")]})
    plain = csv_tables.csv_handout(df)
    assert first_line(plain) == "option,t [ms]"
    linked = csv_tables.csv_handout(df, scenario_link="http://x/?a=1\r\n# b=2")
    assert link_of(linked) == "http://x/?a=1 # b=2"  # on one line
    assert first_line(linked) == "option,t [ms],scenario link"  # no comment line
    back = read(linked)
    assert back["option"].tolist() == ["'=cmd", "b"]  # formula injection still neutralised
    assert back["t [ms]"].iloc[0] == 1.235 and back["t [ms]"].isna().iloc[1]
    with pytest.raises(ValueError, match="df"):
        csv_tables.csv_handout([1])


def test_table_download_captures_the_link_when_drawn(monkeypatch, evs):
    import ui.urlstate
    from ui import exports_ui

    got = {}
    monkeypatch.setattr(ui.urlstate, "share_url", lambda: LINK)
    monkeypatch.setattr(exports_ui.st, "download_button", lambda label, data, **kw: got.update(
        data=data, **kw))  # fmt: skip
    exports_ui.table_download(lambda: csv_tables.comparison_frame(evs), "comparison")
    monkeypatch.setattr(ui.urlstate, "share_url", lambda: "http://elsewhere/")  # pressed later
    data = got["data"]()
    assert got["file_name"] == "comparison.csv"
    assert link_of(data) == LINK
    assert read(data).columns[0] == "quantity"


def test_every_page_table_has_a_label_column_units_and_numbers():
    from types import SimpleNamespace

    from traffic_helpers import requests_like

    from kvmodel.sensitivity import tornado
    from kvmodel.sweeps import models_table
    from kvmodel.traffic import comparison, mix_from_requests, per_request_scenario

    sc = build_scenario(model="llama-3.1-70b")
    mix = mix_from_requests(requests_like([100, 2000, 8000, 30_000]))
    rows = comparison(per_request_scenario(sc), mix, link_ids=["ib-ndr", "100gbe"])
    tried = [SimpleNamespace(label="FP8", exposed_s=0.0123456, transfer_share=0.0871, passed=True)]
    frames = {
        "models": (csv_tables.models_frame(models_table("fp16", 8192)), "model"),
        "sensitivity": (csv_tables.sensitivity_frame(tornado(sc)), "input"),
        "options": (csv_tables.options_tried_frame(tried), "option (cheapest first)"),
        "traffic": (csv_tables.traffic_options_frame(rows), "interconnect"),
    }
    for name, (frame, label) in frames.items():
        back = read(csv_tables.csv_handout(frame, scenario_link=LINK))
        assert back.columns[0] == label, name
        assert back[label].notna().all(), name
        numeric = [c for c in back.columns if back[c].dtype.kind in "if"]
        assert numeric, name
        for col in numeric:
            assert "[" in col or col in ("layers", "KV heads"), (name, col)  # counts
    back = read(csv_tables.csv_handout(frames["options"][0]))
    assert back["exposed transfer [ms]"].iloc[0] == 12.35
    assert back["transfer share of TTFT [%]"].iloc[0] == 8.71


def test_measured_csvs_hold_numbers_with_units():
    """Measured page: the scrape and nsys tables were text cells ("26.85 ms", "1.23×")."""
    from pathlib import Path

    from kvmodel.calibrate import compare_nsys_to_model, compare_to_model
    from kvmodel.measure import load_measurement

    samples = Path(__file__).parents[1] / "data" / "measurements"
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    scrape = load_measurement(samples / "vllm_pd_metrics.prom").data
    cmp = compare_to_model(sc, scrape)
    back = read(csv_tables.csv_handout(csv_tables.model_vs_measured_frame(cmp), scenario_link=LINK))
    assert back.columns.tolist() == ["quantity", "model", "measured", "measured ÷ model", "note"]
    back = back.set_index("quantity")
    for col in ("model", "measured", "measured ÷ model"):
        assert back[col].dtype.kind == "f", col
    assert all(label.endswith("]") for label in back.index)  # the unit of each row
    row = back.loc["prefill [ms]"]
    assert_allclose(row["model"], cmp.prefill_s.model * 1e3, rtol=5e-4)
    assert_allclose(row["measured"], cmp.prefill_s.measured * 1e3, rtol=5e-4)
    assert_allclose(row["measured ÷ model"], cmp.prefill_s.ratio, rtol=5e-4)
    share = back.loc["transfer share of TTFT [%]"]
    assert_allclose(share["model"], cmp.transfer_share_of_ttft.model * 100, rtol=5e-4)
    assert "20% line" in share["note"] and cmp.verdict.model in share["note"]
    bw = back.loc["bandwidth per stream [GB/s per direction]", "model"]
    assert_allclose(bw, cmp.bandwidth_per_stream_bytes_per_s.model / 1e9, rtol=5e-4)

    nsys = load_measurement(samples / "nsys_cuda_gpu_kern_sum.csv").data
    ncmp = compare_nsys_to_model(sc, nsys)
    back = read(csv_tables.csv_handout(csv_tables.nsys_vs_model_frame(ncmp, nsys)))
    assert back.columns.tolist() == [
        "quantity", "model, one layer's KV [ms]", "measured [ms]", "measured ÷ model"]  # fmt: skip
    assert back["quantity"].tolist()[0] == "mean per transfer"
    assert_allclose(back["measured [ms]"].iloc[0], nsys.mean_s * 1e3, rtol=5e-4)
    assert_allclose(back["model, one layer's KV [ms]"].iloc[0], ncmp.per_layer_s.model * 1e3, 5e-4)
    assert_allclose(back["measured ÷ model"].iloc[0], nsys.mean_s / ncmp.per_layer_s.model, 5e-4)
