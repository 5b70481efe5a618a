"""The Overview's time breakdown and the Models page's fidelity section (AppTest)."""

import json

import pytest
from app_helpers import app

from kvmodel import fidelity
from kvmodel.build import to_scenario
from kvmodel.transfer import evaluate

LINK = {"stack": "mooncake", "model": "deepseek-v3", "gpu": "h800", "tp": "1", "tpd": "1",
        "ep": "32", "epd": "72", "fw": "sglang", "seq": "4096", "batch": "64"}  # fmt: skip


def test_overview_shows_the_parts_that_add_up():
    # three static tables of text (st.table: cheaper for the browser to redraw than a data grid,
    # bench/README.md, Session 25): ms to 3 decimals, share in whole percent
    at = app(LINK, "pages/overview.py", article=False)
    assert [h.value for h in at.subheader if h.value == "Where the time goes"]
    frames = [t.value for t in at.table][-3:]  # decode step, prefill, TTFT
    ev = evaluate(to_scenario({k: v for k, v in LINK.items()}))
    for frame, total in zip(frames, (ev.decode_step_s, ev.prefill_s, ev.ttft_s), strict=True):
        ms = frame["ms"].str.replace(",", "").astype(float)
        half_step = frame["ms"].map(lambda t: 0.5 * 10.0 ** -len(t.partition(".")[2]))
        assert ms["Total"] == pytest.approx(total * 1e3, abs=half_step["Total"])
        assert ms.drop("Total").sum() == pytest.approx(total * 1e3, abs=half_step.sum())
        assert frame.loc["Total", "share"] == "100%"
        assert frame["share"].str.fullmatch(r"\d+%").all()
    ttft = frames[2]
    assert ttft.loc["Framework/request", "ms"] == f"{28.4 + 18.4:,.3f}"


def test_the_breakdown_prints_fewer_decimals_as_a_part_grows():
    # 3 decimals under 100 ms, 1 under 10,000 ms, none above (hand-made parts; a 32-request,
    # 32k-token prefill on H20 reads 148,855 ms, not 148,854.863)
    from kvmodel.steps import TtftParts
    from kvview.breakdown import breakdown_shown

    parts = TtftParts(request_s=0.0467, queue_s=0.0, prefill_s=148.854863, transfer_s=1.9892124,
                      first_step_s=0.0355153)  # fmt: skip
    frame = breakdown_shown(parts)
    assert list(frame["ms"]) == ["46.700", "0.000", "148,855", "1,989.2", "35.515", "150,926"]
    assert list(frame["share"]) == ["0%", "0%", "99%", "1%", "0%", "100%"]


def test_models_page_lists_every_cited_measurement():
    at = app(page="pages/models.py")
    assert any("Fidelity" in h.value for h in at.subheader)
    tables = len(at.dataframe)  # the points' expander is closed: its table is not drawn
    at.session_state["models_points_open"] = True  # the browser sets it when opened
    at.run()
    assert not at.exception and len(at.dataframe) == tables + 1
    head, points, sweep = (d.value for d in at.dataframe[-3:])
    assert len(points) == len(fidelity.all_points())
    # the silicon sweep per setup: 27 model × GPU × framework groups of 2,049 runs
    assert len(sweep) == 27 and sweep["runs"].sum() == 2049
    # named as the sidebar names them, not by catalog id (session 23's review read "b200")
    assert "NVIDIA H200 SXM 141GB" in set(sweep["GPU"]) and "h200" not in set(sweep["GPU"])
    assert {"SGLang", "DeepSeek-R1"} <= set(sweep["framework"]) | set(sweep["model"])
    assert any("2,049 more measured runs" in e.label for e in at.expander)
    assert set(head["figure"]) == {"transfer", "posting", "EP dispatch + combine", "prefill",
                                   "decode step", "TTFT"}  # fmt: skip
    assert points["source"].str.len().min() > 20  # every point names its source
    # near the left, 200 px wide: last, it lay past the table's right edge at 1280 px
    assert list(points.columns)[:3] == ["figure", "set", "source"]
    assert json.loads(at.dataframe[-2].proto.columns)["source"]["width"] == "medium"


def test_models_page_plans_the_published_deployments_when_opened():
    from kvmodel.capacity.deployments import compared

    at = app(page="pages/models.py")
    closed = len(at.dataframe)  # closed: the rows are not planned, their table not drawn
    assert any("8 published deployments and peer plans" in e.label for e in at.expander)
    at.session_state["models_deployments_open"] = True  # the browser sets it when opened
    at.run()
    assert not at.exception and len(at.dataframe) == closed + 1
    frame = at.dataframe[-1].value
    want = compared()
    assert list(frame["deployment or plan"]) == [r["id"] for r in want]
    row = frame.set_index("deployment or plan").loc["lmsys-dsv3-96xh100-prefill"]
    assert (row["GPUs published"], row["GPUs planned"]) == (32, 32)
    assert row["planned ÷ measured"] == pytest.approx(want[4]["throughput_ratio"])
    assert row["tokens"] == "input"
    assert list(frame.columns)[:2] == ["deployment or plan", "source"]  # on screen, not last
    # a colocated peer plan has no per-node rate
    assert frame["tokens/s per node planned"].isna().sum() == 4


@pytest.mark.parametrize(
    ("gpu", "batch", "said"),
    [("h20-3e", "1", "at least 64 token rows"), ("a100-80", "4", "at least 16 token rows"),
     ("h20-3e", "64", None), ("h100-sxm", "1", "a step of 1 request costs 64 rows")],
)  # fmt: skip
def test_overview_says_why_a_small_steps_gemms_cost_more_rows(gpu, batch, said):
    at = app({"model": "llama-3.1-8b", "gpu": gpu, "tp": "1", "batch": batch, "step": "est"},
             "pages/overview.py", article=False)  # fmt: skip
    text = " ".join(c.value for c in at.caption)
    assert ("token rows per instruction" in text) is (said is not None)
    if said:
        assert said in text


@pytest.mark.parametrize(
    ("query", "graphed"),
    [({"fw": "vllm", "seq": "512"}, True), ({"fw": "vllm", "seq": "513"}, False),
     ({"fw": "vllm", "seq": "256", "batch": "2"}, True),
     ({"fw": "vllm", "seq": "256", "batch": "3"}, False),
     ({"fw": "sglang", "seq": "128"}, False),
     ({"fw": "vllm", "seq": "128", "prefill": "30"}, False)],
)  # fmt: skip
def test_overview_says_when_a_short_prefill_replays_cuda_graphs(query, graphed):
    # vLLM replays graphs for a prefill pass of at most 512 tokens (seq × batch): the Overview's
    # breakdown says why that prompt's kernel floor is the decode step's (80 × 43.7 µs = 3.5 ms)
    at = app({"model": "llama-3.1-70b", "tp": "4", **query}, "pages/overview.py", article=False)
    text = " ".join(c.value for c in at.caption)
    assert ("replays CUDA graphs for a prefill pass of at most 512 tokens" in text) is graphed
    if "prefill" not in query:
        ev = evaluate(to_scenario({"model": "llama-3.1-70b", "tp": "4", **query}))
        floor = 80 * (43.7e-6 if graphed else 274.6e-6)
        assert float(ev.prefill_parts.kernel_floor_s) == pytest.approx(floor)
