"""Compare's table: quantities × scenarios, each number judged better or worse than A's.

``compare_rows`` turns ``kvmodel.sweeps.compare_table`` into text rows: the scenario's inputs
(marked where they differ from A) and its numbers, each variant's number followed by its
change against A with an arrow and the word *better* or *worse*.  Which way is better is data
in ``kvmodel.compare.DIRECTIONS``; the table's *Better* column says it in words.

``compare_html`` draws the rows as an HTML table whose cells carry the classes
``cmp-better``, ``cmp-worse``, ``cmp-same`` and ``cmp-input``: blue and orange (Okabe-Ito,
told apart with every common colour-vision deficiency) plus the arrow and the word, so colour
is never the only cue.  Below 640 px the table stacks: one block per quantity, each
scenario's cell on its own line with its label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

import pandas as pd

from kvmodel.compare import DIRECTIONS, change_rows, compare_frame
from kvmodel.topology import par_text
from kvview.fmt import (
    fmt_bandwidth,
    fmt_bytes,
    fmt_critical,
    fmt_ms,
    fmt_ratio,
    fmt_time,
    records,
)

VERDICT_CELL = {  # translucent: reads on light and dark themes
    "better": "rgba(0, 114, 178, 0.22)",  # Okabe-Ito blue
    "worse": "rgba(213, 94, 0, 0.26)",  # Okabe-Ito vermillion
    "input": "rgba(128, 128, 128, 0.18)",
}
ARROW = {"better": "better", "worse": "worse", "same": "same as A"}


@dataclass(frozen=True)
class Row:
    """One quantity: its label, its direction in words ('' for an input), and per scenario the
    cell text and its class (``cmp-better`` … ``cmp-input``, '' for A and unchanged inputs)."""

    label: str
    direction: str
    cells: tuple[str, ...]
    classes: tuple[str, ...]


def _ttft_text(s: float) -> str:
    """A TTFT or a change of one as the page's sentence says it: ms with one decimal below a
    second ('122.5 ms', where '123 ms' beside a sentence's 122.5 ms read as two answers), else
    seconds."""
    return fmt_ms(s, 1) if abs(s) < 1 else fmt_time(s)


def _signed(x: float, text: str) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "±") + text


def _small(x: float, unit: str, scale: float = 100) -> str:
    """``x × scale`` with one decimal, or as many as its first digit needs (0.04 pp, 0.3 %)."""
    v = abs(x) * scale
    digits = 1 if v >= 0.1 or v == 0 else min(4, -math.floor(math.log10(v)))
    return f"{v:,.{digits}f}{unit}"


def change_text(key: str, change: float, relative: float) -> str:
    """A change against A in the row's unit: '−2.15 ms (−44 %)', '+1.8 pp', '+2,321 tokens'."""
    if not math.isfinite(change):
        return ""
    a = abs(change)
    text = {
        "kv_bytes": lambda: fmt_bytes(a),
        "wire_bytes": lambda: fmt_bytes(a),
        "exposed_transfer_s": lambda: fmt_ms(a, 2),
        "ttft_s": lambda: _ttft_text(a),
        "transfer_over_decode": lambda: fmt_ratio(a),
        "transfer_share_of_ttft": lambda: _small(a, " pp"),
        "critical_seq_len": lambda: f"{a:,.0f} tokens",
        "fraction_gain": lambda: _small(a, " pp"),
    }[key]()
    out = _signed(change, text)
    if math.isfinite(relative) and key not in ("transfer_share_of_ttft", "fraction_gain"):
        rel = f"{abs(relative):.0%}" if abs(relative) >= 0.01 else _small(relative, "%")
        out += f" ({_signed(relative, rel)})"
    return out


PARALLELISM = "Parallelism prefill → decode"  # TP or EP of each instance (``par_text``)


def _value_texts(r) -> dict[str, tuple[str, str | None]]:
    """(text, key of DIRECTIONS or None for an input) per shown quantity of one scenario."""
    step = fmt_time(r["decode_step_s"]) + (" (estimated)" if r["decode_step_estimated"] else "")
    prefill = fmt_time(r["prefill_s"]) + (" (estimated)" if r["prefill_estimated"] else "")
    share = r["transfer_share_of_ttft"]
    over = "over" if r["over_share_target"] else "under"
    out = {
        "Model": (r["model"], None),
        "GPU": (r["gpu"], None),
        "Interconnect": (r["link"], None),
        "Transfer stack": (r["stack"], None),
        "Prompt × batch": (f"{r['seq_len']:,} tokens × {r['batch']}", None),
        "KV dtype / compression": (f"{r['kv_dtype']} / {r['compression']}", None),
        "Layer-wise": ("on" if r["layerwise"] else "off", None),
        # an expert-parallel instance by its EP (session 20's review: 'TP 1 → 1' for EP 32 → 72)
        PARALLELISM: (f"{par_text(r['tp_prefill'], r['ep_prefill'])} → "
                      f"{par_text(r['tp_decode'], r['ep_decode'])}", None),  # fmt: skip
        "Attention parallelism": (r["attention_parallel"], None),
        "Sliding layers on the wire": (r["window_transfer"], None),
        "Link efficiency": (f"{r['efficiency']:.0%}", None),
        "Parallel links": (f"{r['streams']:,}", None),
        "Quantize/dequantize throughput": (fmt_bandwidth(r["codec_bytes_per_s"]), None),
        "Critical at k × step": (f"k = {r['k']:g}", None),
        "Prefill": (prefill, None),
        "Decode step": (step, None),
        "KV cache": (fmt_bytes(r["kv_bytes"]), "kv_bytes"),
        "On the wire": (fmt_bytes(r["wire_bytes"]), "wire_bytes"),
        "Exposed transfer": (fmt_ms(r["exposed_transfer_s"], 2), "exposed_transfer_s"),
        "Transfer ÷ decode step": (
            f"{fmt_ratio(r['transfer_over_decode'])} ({r['step_verdict']})",
            "transfer_over_decode",
        ),
        "TTFT": (_ttft_text(r["ttft_s"]), "ttft_s"),
        "Transfer share of TTFT": (
            f"{share:.1%} ({over} {r['share_target']:.0%})",
            "transfer_share_of_ttft",
        ),
        "Critical sequence length": (fmt_critical(r["critical_seq_len"]), "critical_seq_len"),
    }
    if "fraction_gain" in r and r["fraction_gain"] is not None:
        out["Traffic that gains"] = (f"{r['fraction_gain']:.1%}", "fraction_gain")
    return out


# Inputs shown even when every scenario has the same (the rest appear when one differs).
ALWAYS = ("Model", "Interconnect", "Transfer stack", "Prompt × batch", "KV dtype / compression",
          "Layer-wise", PARALLELISM, "Prefill", "Decode step")  # fmt: skip


def compare_rows(table: pd.DataFrame, table_changes: list[dict] | None = None) -> list[Row]:
    """``sweeps.compare_table`` (optionally with a ``fraction_gain`` column: the share of
    traffic that gains) as rows of text, A first; ``table_changes``: ``change_rows(table)``
    when the caller has it."""
    # the cells as Python values (what ``iterrows`` held, without a Series per row and a box
    # per value: ~0.5 ms a rerun; Session 19)
    texts = {label: _value_texts(r) for label, r in zip(table.index, records(table), strict=True)}
    labels = list(texts)
    # one dict lookup per cell (a MultiIndex .loc per cell cost ~3 ms a rerun)
    read = change_rows(table) if table_changes is None else table_changes
    ch = {(c["label"], c["key"]): c for c in read}
    rows = []
    for name, (_, key) in texts[labels[0]].items():
        shown = [texts[label][name][0] for label in labels]
        if key is None:
            differs = [s != shown[0] for s in shown]
            if name not in ALWAYS and not any(differs):
                continue
            classes = ["cmp-input" if d else "" for d in differs]
            rows.append(Row(name, "", tuple(shown), tuple(classes)))
            continue
        cells, classes = [shown[0]], [""]
        for label, text in zip(labels[1:], shown[1:], strict=True):
            c = ch[(label, key)]
            verdict = c["verdict"]
            arrow = "▲" if c["value"] > c["reference"] else "▼" if verdict != "same" else "="
            delta = "" if verdict == "same" else change_text(key, c["change"], c["relative"])
            cells.append(f"{text}\n{arrow} {delta + ' · ' if delta else ''}{ARROW[verdict]}")
            classes.append(f"cmp-{verdict}")
        rows.append(Row(name, DIRECTIONS[key].words, tuple(cells), tuple(classes)))
    return rows


_CSS = (
    """<style>
.kvt-cmp {overflow-x: auto;}
.kvt-cmp table {width: 100%; border-collapse: collapse; font-size: 0.92rem;}
.kvt-cmp th, .kvt-cmp td {padding: 0.3rem 0.6rem; border: 1px solid rgba(128,128,128,0.3);
  text-align: left; vertical-align: top;}
.kvt-cmp .cmp-d {display: block; font-size: 0.85em;}
.kvt-cmp td.cmp-dir {font-size: 0.85em; white-space: nowrap;}
.kvt-cmp td.cmp-better {background-color: {better};}
.kvt-cmp td.cmp-worse {background-color: {worse};}
.kvt-cmp td.cmp-input {background-color: {input}; font-weight: 600;}
.kvt-cmp td.cmp-better .cmp-d, .kvt-cmp td.cmp-worse .cmp-d {font-weight: 600;}
@media (max-width: 640px) {
  .kvt-cmp table, .kvt-cmp tbody, .kvt-cmp tr, .kvt-cmp th, .kvt-cmp td {display: block;}
  .kvt-cmp thead {display: none;}
  .kvt-cmp tr {margin-bottom: 0.6rem; border: 1px solid rgba(128,128,128,0.3);}
  .kvt-cmp th, .kvt-cmp td {border: none; border-top: 1px solid rgba(128,128,128,0.2);}
  .kvt-cmp td::before {content: attr(data-label) ": "; font-weight: 600;}
  .kvt-cmp td.cmp-dir:empty {display: none;}
}
</style>""".replace("{better}", VERDICT_CELL["better"])
    .replace("{worse}", VERDICT_CELL["worse"])
    .replace("{input}", VERDICT_CELL["input"])
)


def compare_html(rows: list[Row], labels: list[str]) -> str:
    """The rows as an HTML table (quantity, then one column per scenario); every text is
    escaped; a cell's second line (the change against A) is its own block."""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in ["Quantity", "Better", *labels])
    body = []
    for row in rows:
        tds = [
            f'<th scope="row">{escape(row.label)}</th>',
            f'<td class="cmp-dir" data-label="Better">{escape(row.direction)}</td>',
        ]
        for label, text, cls in zip(labels, row.cells, row.classes, strict=True):
            first, _, second = text.partition("\n")
            extra = f'<span class="cmp-d">{escape(second)}</span>' if second else ""
            attr = f' class="{cls}"' if cls else ""
            tds.append(f'<td{attr} data-label="{escape(label)}">{escape(first)}{extra}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (
        f'{_CSS}<div class="kvt-cmp"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def report_table(labelled) -> str:
    """The HTML report's verdict table: each number of the (label, Evaluation) pairs against
    the first's, better or worse (classes ``cmp-better``/``cmp-worse``, styled by the report),
    the direction of each row in words, the change under each number."""
    rows = compare_rows(compare_frame(labelled))
    labels = [label for label, _ in labelled]
    parts = [
        f'<p class="small">Each number against {escape(labels[0])}\'s: '
        "<strong>better</strong> on blue, <strong>worse</strong> on orange.</p>",
        '<table class="judged">',
        "<tr><th></th><th>better</th>" + "".join(f"<th>{escape(x)}</th>" for x in labels) + "</tr>",
    ]
    for row in (r for r in rows if r.direction):
        cells = [f"<th>{escape(row.label)}</th>", f"<td>{escape(row.direction)}</td>"]
        for text, cls in zip(row.cells, row.classes, strict=True):
            first, _, second = text.partition("\n")
            extra = f'<br><span class="small">{escape(second)}</span>' if second else ""
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{escape(first)}{extra}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    return "\n" + "\n".join(parts)
