"""Interconnects: transfer time per link and batch against the decode-step band."""

from functools import partial

import numpy as np
import streamlit as st

from kvmodel.sweeps import batch_free, batch_sweep, link_batch_table
from kvmodel.topology import par_text
from kvview import csv_tables, figures, params, tables
from kvview.fmt import fmt_ms, in_ms
from kvview.words import interconnect_takeaway, not_buildable, plural
from ui import exports_ui, perf, present, urlstate, widgets


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Interconnects")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()

    links = widgets.id_multiselect(
        "Interconnects", "links", params.link_ids(), format_func=figures.link_name
    )
    if not present.active():  # no editing controls in presentation mode
        widgets.offer_own_link(sc.link.id, sc.link.name, links)
    c1, c2 = st.columns([3, 2])
    with c1:
        choices = sorted({2**i for i in range(13)} | set(map(int, widgets.id_list("batches"))))
        batch_ids = widgets.id_multiselect(
            "Batches [requests]", "batches", [str(b) for b in choices]
        )
        batches = [int(b) for b in batch_ids]
    with c2:
        band = widgets.input_widget(
            st.slider,
            "band",
            to_widget=params.band_ms,
            from_widget=lambda t: f"{t[0]:g}-{t[1]:g}",
        )
    lo_hi = params.band_ms(band)

    # keyed by the batch-free scenario: a sidebar batch change keeps the tables over batches
    table = perf.cached(in_ms, perf.cached(link_batch_table, batch_free(sc), links, batches))
    blocked = not_buildable(sc, links)  # marked in the table and chart, never green
    head = st.container()  # filled after the chart: the browser draws the chart first
    _sweep(sc, links, batches, lo_hi, blocked)
    with head:
        _takeaway(sc, table, batches, lo_hi, blocked)
        _table_caption(sc, blocked)
        _table(table, lo_hi, blocked)


def _takeaway(sc, table, batches, lo_hi, blocked: dict) -> None:
    """The page's sentence, over the links that can be built at this TP (memoised: ~1 ms)."""
    text = perf.cached(_takeaway_text, sc, table, tuple(batches), lo_hi, tuple(blocked.items()))
    st.info(text, icon=":material/lightbulb:")


def _takeaway_text(sc, table, batches: tuple, lo_hi, blocked_items: tuple) -> str:
    blocked = dict(blocked_items)
    buildable = table[~table["link"].isin(list(blocked))]
    return interconnect_takeaway(
        buildable if len(buildable) else table,
        sc.batch if sc.batch in batches else batches[0],
        lo_hi,
        sc.link.id,
        step_ms=sc.decode_step_s * 1e3,
        step_estimated=sc.decode_step_estimated,
    ) + (
        " Not counted, as not buildable at this TP/EP: "
        + ", ".join(figures.link_name(i) for i in blocked)
        + "."
        if blocked and len(buildable)
        else ""
    )


def _table_caption(sc, blocked: dict) -> None:
    """What the table holds, and the scale-up links not buildable at this TP."""
    st.caption(
        f"{sc.model.name}, {sc.seq_len:,} tokens, {sc.kv_dtype}, compression {sc.compression}"
        f"{', layer-wise' if sc.layerwise else ''}, {sc.stack.name} stack, "
        f"{par_text(sc.tp_prefill, sc.ep_prefill)} → {par_text(sc.tp_decode, sc.ep_decode)}: "
        f"each row runs over {plural(sc.streams, 'parallel link')} (the NICs, or per-GPU "
        "links, both instances have). Exposed transfer in ms; green under the band, amber "
        f"within, red above; this scenario's own decode step is {fmt_ms(sc.decode_step_s)} "
        f"({'estimated' if sc.decode_step_estimated else 'given'}): move the band to it to "
        "judge each cell by it. Bandwidth is per direction: NVLink 4's advertised 900 GB/s counts "
        "both directions (450 GB/s each way), so its times are twice those figured at 900 GB/s."
        + (
            " Hatched grey: not buildable (a GPU-to-GPU link this GPU does not have, or "
            "prefill + decode exceed one scale-up domain at this TP/EP; the row says which): "
            f"{', '.join(figures.link_name(i) for i in blocked)}."
            if blocked
            else ""
        )
    )


def _band_html(table, lo_hi, blocked_items: tuple) -> str:
    return tables.band_table(table, lo_hi, dict(blocked_items))


def _table(table, lo_hi, blocked: dict) -> None:
    """The link-by-batch table against the band (unbuildable rows hatched) and its CSV."""
    html = perf.cached(_band_html, table, lo_hi, tuple(blocked.items()))  # 3 ms a rerun before
    st.markdown(html, unsafe_allow_html=True)
    exports_ui.table_download(partial(csv_tables.link_batch_frame, table), "link-by-batch")


def _sweep(sc, links, batches, lo_hi, blocked: dict) -> None:
    """The transfer against the batch per link (sent before the table above it: Session 25,
    control -> chart)."""
    sweep = perf.cached(
        batch_sweep,
        batch_free(sc),
        links,
        np.unique(np.geomspace(1, max(256, *batches), 30).round().astype(int)),
    )
    sweep = perf.cached(in_ms, sweep)
    exports_ui.chart(
        perf.cached(
            figures.figure_batch_sweep.unbuilt, sweep, lo_hi, seq_len=sc.seq_len,
            blocked=tuple(blocked),
        ),
        "transfer-vs-batch",
    )
