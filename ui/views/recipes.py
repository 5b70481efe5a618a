"""Recipes: how to produce the files the Measured page reads (the code shown is the tested code)."""

import streamlit as st

from kvmodel.inputs import DEFAULT_SHARE_TARGET
from kvmodel.measure import GAP_METRIC, TTFT_METRICS
from ui import recipes_ui, urlstate


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Recipes")
    urlstate.show_notices()
    st.info(
        "Three ways to measure what the model predicts: export the transfer gap from the serving "
        "stack, measure the link with perftest, profile the transfer with Nsight Systems; and "
        "SQL that turns a request log in your warehouse into the Traffic page's histogram. Each "
        "block is the exact file this project tests; copy it with the button at its top right.",
        icon=":material/lightbulb:",
    )

    _gap_metric()
    _gap_metric_reading()
    _perftest()
    _nsys()
    _sql()


def _gap_metric() -> None:
    """1 · The transfer gap as a Prometheus histogram: the code and why."""
    st.header("1 · Export the transfer gap from the server", divider="gray")
    st.markdown(
        "Time the gap between the end of prefill and the first decode step and export it as a "
        f"Prometheus **Histogram** `{GAP_METRIC}`, next to TTFT. Call "
        "`on_prefill_done(request_id)` "
        "when prefill finishes and `on_first_decode_step(request_id)` right before the first "
        "decode forward pass (and `on_first_token` for TTFT)."
    )
    c = st.columns(2)
    c[0].markdown(
        "**Why a Histogram, not a per-request Gauge.** A Gauge labelled by `request_id` adds a "
        "time series for every request, forever: memory, scrapes and Prometheus' index grow "
        "without bound, and each series keeps only its last value. A Histogram is a fixed set of "
        "series whatever the traffic, sums across replicas, and gives quantiles with "
        "`histogram_quantile`."
    )
    c[1].markdown(
        "**Buckets.** 0.5 ms (a few MB over NVLink) to 2.5 s (a long prompt over a slow NIC): a "
        "gap beyond that is an outage, not a tail. Pending start times live in a bounded dict, so "
        "cancelled requests cannot leak memory either (they are counted as dropped)."
    )
    st.code(
        recipes_ui.recipe_text("kv_gap_metrics.py"),
        language="python",
        line_numbers=True,
        wrap_lines=True,
        height=560,
    )
    with st.expander("Don't: the per-request Gauge", icon=":material/block:"):
        st.code(
            "kv_transfer_gap = Gauge(\n"
            '    "llm_kv_transfer_gap_seconds", "...", ["request_id"]  # one series per request\n'
            ")\n"
            "kv_transfer_gap.labels(request_id=req_id).set(gap)  # never removed",
            language="python",
        )
        st.caption(
            "Unbounded cardinality: a million requests are a million series in every scrape. "
            "The Measured page still reads such a gauge (one sample per request) and warns."
        )


def _gap_metric_reading() -> None:
    """1 · (cont.) The dashboards’ PromQL, what the Measured page reads, an example scrape."""
    st.markdown("**Dashboards** (PromQL over all replicas, 5-minute windows):")
    st.code(
        "# mean gap\n"
        f"rate({GAP_METRIC}_sum[5m]) / rate({GAP_METRIC}_count[5m])\n"
        "# p99 gap\n"
        f"histogram_quantile(0.99, sum by (le) (rate({GAP_METRIC}_bucket[5m])))",
        language="promql",
        wrap_lines=True,
    )
    ttft = ", ".join(f"`{m}`" for m in TTFT_METRICS)
    own_ttft = "llm_time_to_first_token_seconds" in TTFT_METRICS
    st.markdown(
        "**What the Measured page reads:** a scrape of the server, e.g. "
        "`curl -s http://decode-host:8000/metrics > scrape.prom`. It takes the gap's mean from "
        "`_sum ÷ _count` and p50/p99 from the buckets, TTFT from "
        + (
            f"{ttft} (this recipe's included)"
            if own_ttft
            else f"the engine's own {ttft} in the same scrape (vLLM and SGLang export them)"
        )
        + f", and reports the gap's share of TTFT against the {DEFAULT_SHARE_TARGET:.0%} line."
    )
    with st.expander("What a scrape of this code looks like", icon=":material/visibility:"):
        scrape = recipes_ui.example_scrape()
        st.caption(
            "Rendered by the code above for 400 simulated requests, in a fresh CollectorRegistry. "
            "Download it and upload it on the Measured page to see what it reads."
        )
        st.code(scrape, language=None, height=300)
        st.download_button(
            "Download as kv_gap_example.prom",
            scrape.encode("utf-8"),
            file_name="kv_gap_example.prom",
            mime="text/plain",
            icon=":material/download:",
            key="dl_recipe_prom",
            on_click="ignore",
        )


def _perftest() -> None:
    """2 · The link measured with perftest."""
    st.header("2 · Measure the link with perftest", divider="gray")
    st.markdown(
        "Run `ib_write_bw -a` between a prefill and a decode node over the NIC the KV cache "
        "uses: every message size from 2 B to 8 MiB. The Measured page fits latency + bandwidth "
        "to it and can put the fit into the sidebar's scenario in one click."
    )
    st.markdown(
        "**MB/sec is MiB/s.** perftest divides by 2^20 for its `MB/sec` column (newer versions "
        "print the same number as `MiB/sec`), so 45,693 MB/sec is 47.9 GB/s, not 45.7; "
        "`--report_gbits` prints Gbit/s. The page converts all three to GB/s (10^9 B/s)."
    )
    st.code(
        recipes_ui.recipe_text("perftest.sh"), language="bash", line_numbers=True, wrap_lines=True
    )
    st.markdown(
        "**What the Measured page reads:** the client's output, `ib_write_bw.txt` (MB/sec), "
        "`ib_write_bw_gbits.txt` (Gb/sec) or `ib_write_bw.json` (`--out_json`); ib_send_bw and "
        "ib_read_bw output too. The bandwidth is per direction and per stream (one queue pair)."
    )


def _nsys() -> None:
    """3 · The transfer profiled with Nsight Systems."""
    st.header("3 · Profile the transfer with Nsight Systems", divider="gray")
    st.markdown(
        "Profile the prefill side under real traffic and export the CUDA-kernel and NVTX reports "
        "as CSV: the NCCL send/recv kernels (or your NVTX ranges around the KV send) give the "
        "duration of each per-layer transfer, which the page sets beside the model's per-layer "
        "time."
    )
    st.code(recipes_ui.recipe_text("nsys.sh"), language="bash", line_numbers=True, wrap_lines=True)
    st.markdown(
        "**What the Measured page reads:** one CSV at a time: "
        "`kv_transfer_profile_cuda_gpu_kern_sum.csv` (count, mean, median of all transfers), "
        "`kv_transfer_profile_cuda_gpu_trace.csv` (every transfer: the durations histogram) or "
        "`kv_transfer_profile_nvtx_sum.csv` (NVTX ranges matching kv|transfer|send|recv). The "
        "'Processing […]' preamble nsys prints is fine; a regular expression on the page picks "
        "other kernels or ranges."
    )


def _sql() -> None:
    """4 · A request log turned into a traffic histogram (SQL)."""
    st.header("4 · Turn a request log into a traffic histogram (SQL)", divider="gray")
    st.markdown(
        "A serving fleet's request log lives in a warehouse: billions of rows, one per request. "
        "The Traffic page needs only how many requests have each prompt length. These queries "
        "make that table where the log lives. Export the result as CSV and upload it on the "
        "Traffic page, or give it to `python -m kvmodel traffic`."
    )
    c = st.columns(2)
    c[0].markdown(
        "**In:** a table `request_log` with one row per request: `prompt_tokens` (integer), "
        "and where a recipe uses them `cached_tokens` (prefix-cache hits) and `timestamp` "
        "(a TIMESTAMP). Rename the table and columns to yours. Rows with no length or a "
        "negative one are left out, as the Traffic page skips them."
    )
    c[1].markdown(
        "**Runs unchanged on DuckDB, Spark SQL, Trino and BigQuery.** The queries keep to what "
        "all four share: `WITH`, `GROUP BY` on columns, `CASE`, `COALESCE`, `MOD`, `CAST(… AS "
        "DATE)`, `EXTRACT(HOUR FROM …)`. The tests run each one on DuckDB and read its CSV back "
        "with the app's reader, and reject `::`, `FILTER`, `QUALIFY`, `%`, `DATE_TRUNC`, logs, "
        "integer division and other dialect-only forms."
    )
    tabs = st.tabs([label for _, label, _ in recipes_ui.SQL_RECIPES])
    for tab, (name, _, what) in zip(tabs, recipes_ui.SQL_RECIPES, strict=True):
        with tab:
            st.caption(f"`recipes/{name}`: {what}")
            st.code(
                recipes_ui.recipe_text(name).rstrip("\n"),
                language="sql",
                line_numbers=True,
                wrap_lines=True,
            )
    st.markdown(
        "**Already exported as Parquet?** `python -m kvmodel traffic` reads a directory or a "
        "quoted glob of Parquet files (`'logs/*.parquet'`) as one trace, streamed in constant "
        "memory, so the raw log itself can be the input."
    )
