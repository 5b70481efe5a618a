"""A forwardable HTML report of one or more scenarios.  No streamlit here.

``report_html`` returns ONE standalone page: inline CSS, plotly.js inlined once (every chart is
a ``<div>`` drawn by it), no address to the network except the optional share link back to the
app.  Every piece of text goes through ``html.escape``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from html import escape
from urllib.parse import urlencode, urlsplit

import numpy as np
import pandas as pd

from kvmodel import catalog, solve
from kvmodel.build import inputs_from_scenario
from kvmodel.modelcodec import MAX_ENCODED_CHARS, encode_model
from kvmodel.sensitivity import tornado
from kvmodel.sweeps import Option, mitigation_options, mitigation_table, seq_grid, seq_sweep
from kvmodel.transfer import (
    Evaluation,
    Scenario,
    critical_seq_len,
    evaluate,
    transfer,
)
from kvmodel.units import fmt_bandwidth, fmt_bytes, fmt_ms, fmt_time, fmt_tokens
from kvmodel.verdicts import mitigation_takeaway, overview_takeaway, step_verdict

from . import figures
from . import params as P
from .export import figure_div, plotlyjs_inline

DEFAULT_BASE_URL = "http://localhost:8501/"
BATCH_LIMIT = 65536
_PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#ca8a04", "#7c3aed", "#0891b2", "#db2777")

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111827;
       max-width: 1100px; margin: 2rem auto; padding: 0 1.25rem; line-height: 1.45; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; }
h2 { border-bottom: 2px solid #e5e7eb; padding-bottom: .25rem; margin-top: 2.5rem; }
h3 { margin-top: 1.6rem; font-size: 1.1rem; }
.meta { color: #4b5563; font-size: .92rem; }
.verdict { background: #f1f5f9; border-left: 4px solid #2563eb; padding: .6rem .9rem;
           margin: .8rem 0; }
.verdict.bad { border-left-color: #dc2626; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .92rem; }
th, td { border: 1px solid #d1d5db; padding: .3rem .6rem; text-align: left;
         vertical-align: top; }
th { background: #f3f4f6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.diff { background: #fef3c7; }
tr.group th { background: #e5e7eb; }
.pass { color: #15803d; font-weight: 600; }
.fail { color: #b91c1c; font-weight: 600; }
.chart { margin: .5rem 0 1.5rem; }
.small { font-size: .85rem; color: #4b5563; }
ul.assumptions li { margin-bottom: .25rem; }
footer { margin-top: 3rem; color: #6b7280; font-size: .85rem; }
@media print { .chart { break-inside: avoid; } }
"""


# --------------------------------------------------------------------------- share link


def share_query(sc: Scenario) -> tuple[dict[str, str] | None, list[str]]:
    """The app's URL query for ``sc`` (``ui.params.to_query``), or None and what it cannot carry.

    The app's link has no field for MFU, KV block tokens, descriptor cost, KV scale group or
    compression group, and clamps values to its input ranges; a scenario that needs any of that
    gets no link rather than a link to a different scenario.
    """
    values, gaps = inputs_from_scenario(sc)  # every row of kvmodel.inputs, reversed
    if catalog.models().get(sc.model.id) != sc.model:
        mid = sc.model.id
        mid = mid if mid.startswith(P.IMPORTED_PREFIX) else f"{P.IMPORTED_PREFIX}{mid}"
        cfg = encode_model(replace(sc.model, id=mid))
        if len(cfg) > MAX_ENCODED_CHARS:
            gaps.append("a model too large to carry in a link")
        values.update(model=mid, cfg=cfg)
    query = P.to_query(values)
    _, warnings, _ = P.parse_query(query)
    gaps += warnings
    return (None, gaps) if gaps else (query, [])


def _check_url(url: str, name: str) -> None:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must be an http:// or https:// address, got {url!r}")


def share_link(sc: Scenario, base_url: str = DEFAULT_BASE_URL) -> str | None:
    """``base_url?<query>`` opening ``sc`` in the app, or None when the link cannot carry it."""
    _check_url(base_url, "base_url")
    query, _ = share_query(sc)
    if query is None:
        return None
    return f"{base_url.split('?')[0]}?{urlencode(query)}"


# --------------------------------------------------------------------------- tables of text


def _pct(x: float, digits: int = 0) -> str:
    return f"{x * 100:,.{digits}f} %"


def scenario_inputs(sc: Scenario) -> list[tuple[str, str]]:
    """(quantity, value with unit) rows describing the scenario's inputs."""
    m = sc.model
    comp = "none"
    if sc.compression != "none":
        group = f", one scale per {sc.comp_group} values" if sc.compression != "fp8" else ""
        comp = (
            f"{sc.compression.upper()}{group}; quantize/dequantize at "
            f"{fmt_bandwidth(sc.codec_bytes_per_s)} of uncompressed KV"
        )
    prefill = (
        f"estimated (MFU {_pct(sc.mfu)})" if sc.prefill_s is None else f"{fmt_ms(sc.prefill_s)}"
    )
    streams = f"{sc.streams}" + (" (one per TP rank)" if sc.parallel_links is None else "")
    desc = (
        f"{fmt_time(sc.descriptor_s)} per descriptor, {sc.block_tokens} tokens per block"
        if sc.descriptor_s
        else "not counted"
    )
    kvd = sc.kv_dtype + (f", one scale per {sc.kv_scale_group} values" if sc.kv_scale_group else "")
    return [
        ("Model", f"{m.name} ({m.id}; {m.attention}, {m.layers} layers)"),
        ("Sequence length", f"{sc.seq_len:,} tokens"),
        ("Batch", f"{sc.batch:,} request{'s' if sc.batch != 1 else ''}"),
        ("Interconnect", f"{sc.link.name} ({sc.link.id})"),
        ("Bandwidth", f"{fmt_bandwidth(sc.link.bandwidth_bytes_per_s)} per direction"),
        ("Link efficiency", _pct(sc.efficiency)),
        ("Parallel links", streams),
        ("Latency per transfer", fmt_time(sc.link.latency_s)),
        ("KV cache dtype", kvd),
        ("Transfer compression", comp),
        ("Layer-wise sending", "on" if sc.layerwise else "off"),
        ("TP prefill → decode", f"{sc.tp_prefill} → {sc.tp_decode}"),
        ("GPU", sc.gpu.name),
        ("Decode step (given)", fmt_ms(sc.decode_step_s)),
        ("Prefill (input)", prefill),
        ("Descriptor cost", desc),
        ("Critical threshold", f"transfer ≥ {sc.k:g} × decode step"),
        ("TTFT share target", _pct(sc.share_target)),
    ]


def key_numbers(ev: Evaluation) -> list[tuple[str, str]]:
    """(quantity, value with unit) rows of the headline numbers."""
    sc = ev.scenario
    wire = fmt_bytes(ev.wire_bytes)
    if ev.compression_ratio < 1:
        wire += f" ({ev.compression_ratio:.1%} of {fmt_bytes(ev.raw_wire_bytes)})"
    rows = [
        ("KV cache", fmt_bytes(ev.kv_total_bytes)),
        ("On the wire", wire),
        (
            "Effective bandwidth",
            f"{fmt_bandwidth(ev.effective_bandwidth_bytes_per_s)} per direction",
        ),
        ("Exposed transfer", fmt_ms(ev.exposed_s, 2)),
    ]
    if sc.layerwise:
        rows.append(("Whole transfer (overlapped)", fmt_ms(ev.transfer_s, 2)))
    rows += [
        (
            "Decode step",
            f"{fmt_ms(ev.decode_step_s)} (roofline lower bound "
            f"{fmt_ms(ev.decode_step_lower_bound_s)})",
        ),
        (
            "Transfer ÷ decode step",
            f"{ev.transfer_over_decode:.2f}× ({step_verdict(ev.transfer_over_decode)})",
        ),
        ("Prefill", fmt_time(ev.prefill_s) + (" (estimated)" if ev.prefill_estimated else "")),
        ("TTFT", fmt_time(ev.ttft_s)),
        (
            "Transfer share of TTFT",
            f"{ev.transfer_share_of_ttft:.1%} "
            f"({'over' if ev.over_share_target else 'under'} the {sc.share_target:.0%} line)",
        ),
        ("Critical sequence length", fmt_tokens(ev.critical_seq_len)),
    ]
    return rows


def _bw_text(sc: Scenario, criterion: str) -> str:
    bw = solve.min_bandwidth(sc, criterion=criterion)
    if bw is None:
        return solve.unreachable_reason(sc, criterion=criterion) or "unreachable"
    now = sc.link.bandwidth_bytes_per_s
    rel = "the current link already does" if bw <= now else f"{bw / now:,.2f}× the current link"
    return f"{fmt_bandwidth(bw)} per direction ({bw * 8 / 1e9:,.4g} Gb/s; {rel})"


def _mitigation_text(sc: Scenario, criterion: str) -> tuple[str, bool]:
    m = solve.cheapest_mitigation(sc, criterion=criterion)
    if m is None:
        n = len(solve.mitigation_ladder(sc))
        return f"none of the {n} options (compression, layer-wise, faster links) meets it", False
    ev = m.evaluation
    return (
        f"{m.label}: exposed transfer {fmt_ms(ev.exposed_s, 2)}, TTFT {fmt_time(ev.ttft_s)}, "
        f"{ev.transfer_share_of_ttft:.1%} of TTFT (option {len(m.tried)} in cost order)",
        True,
    )


def requirements(sc: Scenario) -> list[tuple[str, str]]:
    """(question, answer) rows from ``kvmodel.solve`` for both criteria."""
    step = f"transfer < {sc.k:g} × decode step ({fmt_ms(sc.k * sc.decode_step_s)})"
    share = f"transfer ≤ {sc.share_target:.0%} of TTFT"
    s_max = solve.max_seq_len(sc, criterion="step")
    b_max = solve.max_batch(sc, criterion="step", limit=BATCH_LIMIT)
    s_text = "none: even a 1-token prompt misses it" if s_max is None else f"{s_max:,} tokens"
    if s_max == sc.model.max_context_tokens:
        s_text += " (the model's max context)"
    b_text = (
        "none: even one request misses it"
        if b_max is None
        else f"{b_max:,} request{'s' if b_max != 1 else ''}"
    )
    if b_max == BATCH_LIMIT:
        b_text += " (the search limit)"
    return [
        (f"Minimum bandwidth for {step}", _bw_text(sc, "step")),
        (f"Minimum bandwidth for {share}", _bw_text(sc, "share")),
        (f"Longest prompt with {step}, batch {sc.batch:,}", s_text),
        (f"Largest batch with {step}, {sc.seq_len:,} tokens", b_text),
        (f"Cheapest option for {step}", _mitigation_text(sc, "step")[0]),
        (f"Cheapest option for {share}", _mitigation_text(sc, "share")[0]),
    ]


def assumptions(sc: Scenario, ev: Evaluation) -> list[str]:
    """Plain sentences: what the numbers of ``sc`` rest on."""
    link, gpu, m = sc.link, sc.gpu, sc.model
    out = [
        f"Bandwidth is per direction: {link.name} moves "
        f"{fmt_bandwidth(link.bandwidth_bytes_per_s)} each way"
        + (f" (source: {link.source})." if link.source else "."),
        f"Link efficiency {_pct(sc.efficiency)} of nominal over {sc.streams} parallel link(s): "
        f"{fmt_bandwidth(ev.effective_bandwidth_bytes_per_s)} effective; latency "
        f"{fmt_time(link.latency_s)} per transfer"
        + (" (paid once per layer chunk when sent layer-wise)." if sc.layerwise else "."),
    ]
    if sc.prefill_s is None:
        out.append(
            f"Prefill time is estimated: prefill FLOPs ÷ ({gpu.name} dense BF16 "
            f"{gpu.bf16_flops / 1e12:,.0f} TFLOP/s × TP {sc.tp_prefill} × MFU {_pct(sc.mfu)}) "
            f"= {fmt_time(ev.prefill_s)}."
        )
    else:
        out.append(f"Prefill time is given: {fmt_time(sc.prefill_s)}.")
    out.append(
        f"The decode step ({fmt_ms(sc.decode_step_s)}) is an input, not computed; the roofline "
        f"lower bound on {sc.tp_decode}× {gpu.name} is {fmt_ms(ev.decode_step_lower_bound_s)} "
        "(weights and KV read once from HBM; real steps are 2–4× longer)."
    )
    if sc.compression != "none":
        out.append(
            f"{sc.compression.upper()} transfer compression quantizes before and dequantizes "
            f"after the trip at {fmt_bandwidth(sc.codec_bytes_per_s)} of uncompressed KV per GPU; "
            "that time is counted in the transfer."
        )
    out.append(f"Model: {m.name}" + (f", from {m.source}." if m.source else "."))
    out.extend(ev.notes)
    return out


# --------------------------------------------------------------------------- HTML pieces


def _table(rows, *, header=None) -> str:
    """Rows of already-formatted text (first cell a row heading) → an escaped HTML table."""
    parts = ["<table>"]
    if header:
        parts.append("<tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in header) + "</tr>")
    for row in rows:
        head, *rest = (escape(str(cell)) for cell in row)
        parts.append(f"<tr><th>{head}</th>" + "".join(f"<td>{c}</td>" for c in rest) + "</tr>")
    parts.append("</table>")
    return "\n".join(parts)


def _chart(fig, div_id: str) -> str:
    return f'<div class="chart">{figure_div(fig, div_id=div_id)}</div>'


def _scenario_table(items: list[tuple[str, Scenario, Evaluation]]) -> pd.DataFrame:
    """TTFT per scenario in ``mitigation_table`` columns (option = the scenario's label)."""
    first = items[0][1]
    table = mitigation_table(first, [Option(label, sc) for label, sc, _ in items])
    return table


def _options_table(sc: Scenario) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(chart table with the scenario itself first when it is not the baseline, takeaway table)."""
    opts = mitigation_table(sc, mitigation_options(sc))
    if replace(sc, compression="none", layerwise=False) == sc:
        return opts, opts
    own = mitigation_table(sc, [Option("This scenario", sc)])
    return pd.concat([own, opts], ignore_index=True), opts


def _seq_curves(items) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exposed transfer vs S for each scenario (keyed by label), with each critical S."""
    curves, crit = [], []
    for label, sc, _ in items:
        if catalog.links().get(sc.link.id) == sc.link:
            c, k = seq_sweep(sc, [sc.link.id])
        else:  # a custom or overridden link: the same sweep on the scenario's own link
            s = seq_grid(sc.model.max_context_tokens)
            c = pd.DataFrame(
                {
                    "link": sc.link.id,
                    "seq_len": s,
                    "transfer_ms": transfer(sc, seq_len=s).exposed_s * 1e3,
                }
            )
            k = pd.DataFrame([{"link": sc.link.id, "critical_seq_len": critical_seq_len(sc)}])
        curves.append(c.assign(link=label))
        crit.append(k.assign(link=label))
    return pd.concat(curves, ignore_index=True), pd.concat(crit, ignore_index=True)


def _seq_figure(items):
    curves, crit = _seq_curves(items)
    thresholds = {sc.k * sc.decode_step_s for _, sc, _ in items}
    threshold_ms = items[0][1].k * items[0][1].decode_step_s * 1e3
    title = "Exposed transfer vs sequence length"
    if len(thresholds) > 1:
        title += f" (threshold of {items[0][0]})"
    fig = figures.figure_seq_sweep(
        curves,
        crit.astype({"critical_seq_len": "object"}),
        threshold_ms=threshold_ms,
        title=title,
    )
    link_ids = [sc.link.id for _, sc, _ in items]
    unique = len(set(link_ids)) == len(link_ids)
    colors = [
        figures.link_color(sc.link.id) if unique else _PALETTE[n % len(_PALETTE)]
        for n, (_, sc, _) in enumerate(items)
    ]
    # figure_seq_sweep names curves after link ids; here each curve is a scenario (in order)
    for trace, (label, _, _), color in zip(fig.data, items, colors, strict=False):
        trace.name = label
        trace.line.color = color
        trace.hovertemplate = (
            f"{label}<br>%{{x:,}} tokens<br>transfer %{{y:,.2f}} ms<extra></extra>"
        )
    hit = [n for n, v in enumerate(crit["critical_seq_len"]) if v is not None and v == v]
    for trace in fig.data[len(items) :]:
        if trace.name == "critical length":
            trace.customdata = [items[n][0] for n in hit]
            trace.marker.color = [colors[n] for n in hit]
    return fig


def _verdict(text: str, bad: bool) -> str:
    return f'<p class="verdict{" bad" if bad else ""}">{escape(text)}</p>'


def _comparison(items) -> str:
    """Inputs and key numbers side by side; cells differing from the first scenario marked."""
    sections = [
        ("Inputs", [dict(scenario_inputs(sc)) for _, sc, _ in items]),
        ("Key numbers", [dict(key_numbers(ev)) for _, _, ev in items]),
    ]
    width = len(items) + 1
    parts = [
        "<table>",
        "<tr><th></th>" + "".join(f"<th>{escape(label)}</th>" for label, _, _ in items) + "</tr>",
    ]
    for title, per_scenario in sections:
        parts.append(f'<tr class="group"><th colspan="{width}">{escape(title)}</th></tr>')
        names = list(dict.fromkeys(name for rows in per_scenario for name in rows))
        for name in names:
            cells = [f"<th>{escape(name)}</th>"]
            ref = per_scenario[0].get(name, "–")
            for n, rows in enumerate(per_scenario):
                value = rows.get(name, "–")
                if n and value != ref:
                    cells.append(f'<td class="diff"><strong>{escape(value)}</strong></td>')
                else:
                    cells.append(f"<td>{escape(value)}</td>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    return "\n".join(parts)


def _fmt_summary_value(v) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "–"}[v]
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        return "–" if not math.isfinite(v) else f"{float(v):,.4g}"
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_fmt_summary_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt_summary_value(x) for x in v)
    return str(v)


# --------------------------------------------------------------------------- the page


def _check_inputs(scenarios, share_url, traffic_summary) -> None:
    if not isinstance(scenarios, (list, tuple)) or not scenarios:
        raise ValueError("scenarios must be a non-empty list of (label, Scenario) pairs")
    labels = []
    for item in scenarios:
        if (
            not isinstance(item, (list, tuple))
            or len(item) != 2
            or not isinstance(item[0], str)
            or not item[0].strip()
            or not isinstance(item[1], Scenario)
        ):
            raise ValueError(
                f"scenarios must hold (label, Scenario) pairs with a non-empty label, got "
                f"{item!r:.80}"
            )
        labels.append(item[0].strip())
    if len(set(labels)) != len(labels):
        raise ValueError(f"scenarios labels must be distinct, got {labels}")
    if share_url is not None:
        _check_url(share_url, "share_url")
    if traffic_summary is not None and not isinstance(traffic_summary, dict):
        raise ValueError(
            f"traffic_summary must be a dict or None, got {type(traffic_summary).__name__}"
        )


def report_html(
    scenarios: list[tuple[str, Scenario]],
    *,
    share_url: str | None = None,
    traffic_summary: dict | None = None,
    title: str = "KV transfer report",
    generated_at: datetime | None = None,
) -> str:
    """One standalone HTML page for ``scenarios`` (label, Scenario), the first as reference.

    ``share_url`` (http/https) is linked as "open in the app"; ``traffic_summary`` (name →
    value) adds a traffic table.  ``generated_at`` defaults to now (UTC).
    """
    _check_inputs(scenarios, share_url, traffic_summary)
    when = generated_at or datetime.now(UTC)
    items = [(label.strip(), sc, evaluate(sc)) for label, sc in scenarios]
    body = []
    names = ", ".join(label for label, _, _ in items)
    body.append(f"<h1>{escape(title)}</h1>")
    body.append(
        f'<p class="meta">Generated {escape(when.strftime("%Y-%m-%d %H:%M %Z").strip())} by the '
        f"KV Transfer Planner · {len(items)} scenario{'s' if len(items) > 1 else ''}: "
        f"{escape(names)}</p>"
    )
    if share_url:
        body.append(
            f'<p class="meta"><a href="{escape(share_url, quote=True)}">Open '
            f"{escape(items[0][0])} in the app</a> (the link holds every input).</p>"
        )
    toc = [("summary", "Summary")]
    if len(items) > 1:
        toc.append(("comparison", "Comparison"))
    toc += [(f"scenario-{n}", label) for n, (label, _, _) in enumerate(items, start=1)]
    toc.append(("assumptions", "Assumptions"))
    if traffic_summary:
        toc.append(("traffic", "Traffic"))
    body.append(
        '<p class="meta">' + " · ".join(f'<a href="#{a}">{escape(t)}</a>' for a, t in toc) + "</p>"
    )

    # summary: verdicts and TTFT per scenario
    body.append('<h2 id="summary">Summary</h2>')
    for label, _, ev in items:
        text = (f"{label}: " if len(items) > 1 else "") + overview_takeaway(ev)
        body.append(_verdict(text, ev.over_share_target or ev.transfer_over_decode >= 1))
    ttft = figures.figure_ttft(
        _scenario_table(items), title="TTFT per scenario: prefill + exposed transfer + decode"
    )
    body.append(_chart(ttft, "chart-ttft"))
    body.append(_chart(_seq_figure(items), "chart-seq"))

    if len(items) > 1:
        body.append('<h2 id="comparison">Comparison</h2>')
        body.append(
            f'<p class="small">Cells in <strong>bold on yellow</strong> differ from the first '
            f"scenario ({escape(items[0][0])}).</p>"
        )
        body.append(_comparison(items))

    for n, (label, sc, ev) in enumerate(items, start=1):
        body.append(f'<h2 id="scenario-{n}">{escape(label)}</h2>')
        chart_table, opts = _options_table(sc)
        body.append(_verdict(overview_takeaway(ev), ev.over_share_target))
        body.append(_verdict(mitigation_takeaway(opts), False))
        body.append("<h3>Key numbers</h3>")
        body.append(_table(key_numbers(ev)))
        body.append("<h3>What it would take</h3>")
        body.append(_table(requirements(sc)))
        body.append("<h3>Inputs</h3>")
        body.append(_table(scenario_inputs(sc)))
        body.append("<h3>Charts</h3>")
        body.append(
            _chart(
                figures.figure_ttft(chart_table, title=f"TTFT per option: {label}"),
                f"chart-{n}-options",
            )
        )
        body.append(_chart(figures.figure_tornado(tornado(sc)), f"chart-{n}-tornado"))

    body.append('<h2 id="assumptions">Assumptions</h2>')
    body.append(
        '<ul class="assumptions">'
        "<li>Decimal units throughout: 1 kB = 10³ bytes, 1 MB = 10⁶ bytes, 1 GB = 10⁹ bytes; "
        "1 GB/s = 10⁹ bytes/s; 1 Gb/s = 10⁹ bits/s.</li>"
        "<li>Interconnect bandwidths are per direction (NVLink 4's “900 GB/s” is 450 GB/s "
        "each way).</li>"
        "<li>Exposed transfer is what the decode node waits for after prefill ends; "
        "TTFT = prefill + exposed transfer + one decode step.</li>"
        "<li>Transfer-bound: exposed transfer ≥ k × decode step (the critical sequence length "
        "is the first prompt length where that happens), or a transfer share of TTFT above "
        "the target.</li>"
        "</ul>"
    )
    for label, sc, ev in items:
        if len(items) > 1:
            body.append(f"<h3>{escape(label)}</h3>")
        body.append(
            '<ul class="assumptions">'
            + "".join(f"<li>{escape(s)}</li>" for s in assumptions(sc, ev))
            + "</ul>"
        )

    if traffic_summary:
        body.append('<h2 id="traffic">Traffic</h2>')
        body.append(_table([(str(k), _fmt_summary_value(v)) for k, v in traffic_summary.items()]))

    body.append(
        "<footer>Computed by the KV Transfer Planner cost model from the inputs above; the "
        "charts are interactive (hover for values) and work offline.</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}: {escape(names)}</title>\n<style>{CSS}</style>\n"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
        f"<script>{plotlyjs_inline()}</script>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
