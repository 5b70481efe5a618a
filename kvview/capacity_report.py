"""The Capacity page's HTML handout: one standalone page (inline CSS, plotly.js inlined once, no
network address but the optional link back to the app) with the plan, its charts and the inputs
it came from, for a budget meeting.  No streamlit here; every text goes through ``html.escape``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape

from kvview.capacity_words import (
    capacity_takeaway,
    crossover_sentence,
    gpus,
    limit_text,
    nearest_text,
    pct_label,
    plan_point,
    pool_gpu_names,
    price_text,
    saves_text,
    split_text,
    ttft_parts_text,
)
from kvview.export import figure_div, plotlyjs_inline
from kvview.figures import capacity as figs
from kvview.figures.replay import figure_replay
from kvview.fmt import fmt_bandwidth, fmt_busy, fmt_dollars, fmt_time
from kvview.link_version import defaults_sentence
from kvview.replay_words import replay_rows
from kvview.report import CSS
from kvview.report_text import scenario_inputs
from kvview.scenario_link import check_url

# scenario inputs the capacity model does not read (the workload, the targets and the TP
# search set them): left out of the report's inputs so that none seems to matter
IGNORED = ("Sequence length", "Batch", "TP prefill", "Decode step", "Prefill", "Critical",
           "TTFT share")  # fmt: skip


def _rows(rows) -> str:
    body = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _frame(df) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def key_rows(
    plan, *, slo, price: float | None, price_decode: float | None = None
) -> list[tuple[str, str]]:
    """The plan's numbers as (quantity, value with unit) rows."""
    p = pct_label(slo.ttft_percentile)
    need = plan.nic_bandwidth_needed_bytes_per_s
    rows = [
        ("Disaggregated", f"{gpus(plan.disaggregated_gpus)}: {split_text(plan)}"),
        ("Colocated (chunked prefill)", f"{gpus(plan.colocated_gpus)}: "
         f"{plan.colocated_instances} × TP {plan.colocated_tp}"
         + ("" if plan.colocated_meets_slo else " (misses the targets)")),
        ("Disaggregation", saves_text(plan.disaggregation_saves_gpus)),
        *[(f"Nearest TP meeting the targets, {side}", text.strip())
          for side in ("disaggregated", "colocated")
          if (text := nearest_text(plan, side))],
        (f"TTFT {p}", f"{fmt_time(plan.ttft_s)} disaggregated, "
         f"{fmt_time(plan.colocated_ttft_s)} colocated (target {fmt_time(slo.ttft_s)})"),
        *([(f"TTFT {p}, disaggregated, in parts", ttft_parts_text(plan.ttft_parts))]
          if plan.ttft_parts else []),
        ("TPOT", f"{fmt_time(plan.tpot_s)} disaggregated, {fmt_time(plan.colocated_tpot_s)} "
         f"colocated (target {fmt_time(slo.tpot_s)})"),
        ("Meets the targets", f"{'yes' if plan.meets_slo else 'no'} disaggregated, "
         f"{'yes' if plan.colocated_meets_slo else 'no'} colocated"),
        ("Link utilisation", f"{fmt_busy(plan.link_utilization)} of "
         f"{fmt_bandwidth(plan.link_bandwidth_bytes_per_s)} per NIC"),
        (f"NIC bandwidth the {p} needs", f"{fmt_bandwidth(need)} per NIC" if need else "none"),
        ("Sized by", f"prefill: {limit_text(plan.limits, 'prefill')}; decode: "
         f"{limit_text(plan.limits, 'decode')}; colocated: "
         f"{limit_text(plan.limits, 'colocated')}"),
    ]  # fmt: skip
    if price and plan.cost_per_hour is not None and plan.colocated_cost_per_hour is not None:
        rows.append(("Cost per hour", f"{fmt_dollars(plan.cost_per_hour)} disaggregated, "
                     f"{fmt_dollars(plan.colocated_cost_per_hour)} colocated at "
                     f"{price_text(price, price_decode, plan)}"))  # fmt: skip
    return rows


def _on_gpus(plan, sc) -> str:
    """'NVIDIA H100 SXM 80GB', or both GPUs when decode runs on its own."""
    names = pool_gpu_names(plan)
    return f"{names[0]} (prefill) and {names[1]} (decode)" if names else sc.gpu.name


def _decode_gpu_rows(plan, price_decode: float | None) -> list[tuple[str, str]]:
    """The decode GPU and its price as inputs, when the decode pool has a GPU or price of its
    own (the plain rows above then hold for prefill and colocated serving)."""
    names = pool_gpu_names(plan)
    if not names and not price_decode:
        return []
    rows = [("Decode GPU", names[1] if names else "the GPU above")]
    rows.append(("Decode GPU price", f"${price_decode:,.2f} per GPU-hour" if price_decode
                 else "the GPU price above"))  # fmt: skip
    return rows


def _replay_section(replayed, slo) -> list[str]:
    """The replay's numbers, its chart and why it disagrees with the formulas (empty: none)."""
    if replayed is None:
        return []
    fig = figure_replay(replayed.result.series, ttft_slo_s=slo.ttft_s)
    out = ['<h2 id="replay">Replay of the trace</h2>', _rows(replay_rows(replayed, slo=slo)),
           f'<div class="chart">{figure_div(fig, div_id="chart-replay")}</div>']  # fmt: skip
    if replayed.reasons:
        out.append('<p>The replay and the formulas disagree:</p><ul class="assumptions">')
        out += [f"<li>{escape(w)}</li>" for w in replayed.reasons]
        out.append("</ul>")
    return out


def capacity_report_html(
    plan,
    sweep,
    *,
    sc,
    slo,
    rps: float,
    price: float | None,
    traffic: str,
    tp_mode: str,
    share_url: str | None = None,
    generated_at: datetime | None = None,
    replayed=None,
    version1: dict | None = None,
    price_decode: float | None = None,
) -> str:
    """The standalone page (module doc); ``sc`` is the sidebar's scenario, ``traffic`` says
    where the requests came from, ``tp_mode`` how the TPs were chosen; ``replayed`` (a
    ``kvmodel.replay.Replayed``) adds the replay of the trace; ``version1`` what a version-1
    link implied (``kvview.link_version``; said under the title); ``price_decode`` the decode
    GPU's price when it has its own (``--gpu-price-decode``, URL ``priced``)."""
    if share_url is not None:
        check_url(share_url, "share_url")
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M %Z").strip()
    charts = (
        (figs.figure_gpus_vs_rate(sweep, rps=rps), "chart-gpus"),
        (figs.figure_pd_split(sweep, rps=rps), "chart-split"),
        (figs.figure_limits(sweep, rps=rps), "chart-limits"),
    )
    body = [
        "<h1>Capacity plan</h1>",
        f'<p class="meta">Generated {escape(when)} by the KV Transfer Planner · '
        f"{escape(sc.model.name)} on {escape(_on_gpus(plan, sc))}, {escape(sc.link.name)}</p>",
        f'<p class="meta defaults">{escape(defaults_sentence(version1))}</p>',
    ]
    if share_url:
        body.append(
            f'<p class="meta"><a href="{escape(share_url, quote=True)}">Open this plan in the '
            "app</a> (the link holds every input).</p>"
        )
    body += [
        '<h2 id="summary">Summary</h2>',
        f'<p class="verdict{"" if plan.meets_slo else " bad"}">'
        f"{escape(capacity_takeaway(plan, rps=rps, slo=slo, price=price))}</p>",
        "<h3>Key numbers</h3>",
        _rows(key_rows(plan, slo=slo, price=price, price_decode=price_decode)),
        "<h3>Per pool</h3>",
        _frame(figs.pool_table(plan, ttft_percentile=slo.ttft_percentile,
                               ttft_target_s=slo.ttft_s, tpot_target_s=slo.tpot_s)),
        '<h2 id="rates">Across request rates</h2>',
        f"<p>{escape(crossover_sentence(sweep, rps, plan_point(plan)))}</p>",
        *(f'<div class="chart">{figure_div(f, div_id=i)}</div>' for f, i in charts),
        *_replay_section(replayed, slo),
        '<h2 id="inputs">Inputs</h2>',
        _rows(
            [
                ("Traffic", traffic),
                ("Request rate", f"{rps:,.4g} requests/s"),
                ("TTFT target", f"{fmt_time(slo.ttft_s)} at {pct_label(slo.ttft_percentile)}"),
                ("TPOT target", fmt_time(slo.tpot_s)),
                ("GPU price", f"${price:,.2f} per GPU-hour" if price else "not given"),
                *_decode_gpu_rows(plan, price_decode),
                ("Tensor parallelism", tp_mode),
                *((k, v) for k, v in scenario_inputs(sc) if not k.startswith(IGNORED)),
            ]
        ),
    ]
    if plan.notes:
        body.append('<h2 id="notes">Notes</h2><ul class="assumptions">')
        body += [f"<li>{escape(n)}</li>" for n in plan.notes]
        body.append("</ul>")
    body.append(
        "<footer>Computed by the KV Transfer Planner's capacity model (kvmodel.capacity; "
        "docs/capacity.md) from the inputs above; the charts are interactive and work offline."
        "</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>Capacity plan: {escape(sc.model.name)}</title>\n<style>{CSS}</style>\n"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
        f"<script>{plotlyjs_inline()}</script>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
