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

import numpy as np
import pandas as pd

from kvmodel import catalog
from kvmodel.sensitivity import tornado
from kvmodel.sweeps import Option, mitigation_options, mitigation_table, seq_grid, seq_sweep
from kvmodel.transfer import (
    Evaluation,
    Scenario,
    critical_seq_len,
    evaluate,
    transfer,
)
from kvview import figures
from kvview.export import figure_div, plotlyjs_inline
from kvview.fmt import in_ms
from kvview.link_version import defaults_sentence
from kvview.report_text import assumptions, key_numbers, requirements, scenario_inputs
from kvview.scenario_link import DEFAULT_BASE_URL, check_url, share_link, share_query
from kvview.words import mitigation_takeaway, overview_takeaway

__all__ = [  # the link functions are re-exported for kvmodel.cli, which imports them from here
    "DEFAULT_BASE_URL",
    "report_html",
    "share_link",
    "share_query",
]

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
td.cmp-better { background: #cce3f0; }
td.cmp-worse { background: #f5d5bf; }
tr.group th { background: #e5e7eb; }
.pass { color: #15803d; font-weight: 600; }
.fail { color: #b91c1c; font-weight: 600; }
.chart { margin: .5rem 0 1.5rem; }
.small { font-size: .85rem; color: #4b5563; }
ul.assumptions li { margin-bottom: .25rem; }
footer { margin-top: 3rem; color: #6b7280; font-size: .85rem; }
@media print { .chart { break-inside: avoid; } }
"""


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
    return in_ms(mitigation_table(first, [Option(label, sc) for label, sc, _ in items]))


def _options_table(sc: Scenario) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(chart table with the scenario itself first when it is not the baseline, takeaway table)."""
    opts = in_ms(mitigation_table(sc, mitigation_options(sc)))
    if replace(sc, compression="none", layerwise=False) == sc:
        return opts, opts
    own = in_ms(mitigation_table(sc, [Option("This scenario", sc)]))
    return pd.concat([own, opts], ignore_index=True), opts


def _seq_curves(items) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exposed transfer vs S for each scenario (keyed by label), with each critical S."""
    curves, crit = [], []
    for label, sc, _ in items:
        if catalog.links().get(sc.link.id) == sc.link:
            c, k = seq_sweep(sc, [sc.link.id])
            c = in_ms(c)
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
    from kvview.compare_cells import report_table  # each number judged against the first's

    return "\n".join(parts) + report_table([(label, ev) for label, _, ev in items])


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
        check_url(share_url, "share_url")
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
    version1: dict | None = None,
) -> str:
    """One standalone HTML page for ``scenarios`` (label, Scenario), the first as reference.

    ``share_url`` (http/https) is linked as "open in the app"; ``traffic_summary`` (name →
    value) adds a traffic table.  ``generated_at`` defaults to now (UTC).  ``version1``: what
    a version-1 link implied for the scenario (``kvview.link_version.implied``), said under
    the title as the defaults used (``None``/empty: version 2's).
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
    body.append(f'<p class="meta defaults">{escape(defaults_sentence(version1))}</p>')
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
        "TTFT = the serving framework's request cost + prefill + exposed transfer + one "
        "decode step.</li>"
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
