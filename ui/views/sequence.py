"""Sequence length: transfer vs prompt length per link and per attention layout."""

import streamlit as st

from kvmodel import catalog
from kvmodel.sweeps import model_seq_sweep, seq_grid, seq_sweep
from kvview import figures, params
from kvview.fmt import in_ms
from kvview.words import not_buildable, sequence_takeaway
from ui import exports_ui, perf, present, urlstate, widgets


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Sequence length")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()
    threshold_ms = sc.k * sc.decode_step_s * 1e3
    # tabs drawn only while open: the second is asked for, not shown by default
    per_link, per_layout = st.tabs(["Per interconnect", "Per attention layout"], key=TAB,
                                   on_change="rerun")  # fmt: skip
    if per_link.open:
        with per_link:
            _per_link(sc, threshold_ms)
    if per_layout.open:
        with per_layout:
            _per_layout(sc, threshold_ms)


TAB = "seq_tab"  # session key: the open tab


def _per_link(sc, threshold_ms: float) -> None:
    """Transfer vs prompt length on the chosen interconnects, and their critical lengths."""
    links = widgets.id_multiselect(
        "Interconnects", "links", params.link_ids(), format_func=figures.link_name
    )
    if not present.active():  # no editing controls in presentation mode
        widgets.offer_own_link(sc.link.id, sc.link.name, links)
    curves, critical = perf.cached(seq_sweep, sc, links)
    curves = perf.cached(in_ms, curves)  # the same frame while the sweep is cached
    blocked = not_buildable(sc, links)  # named so in the takeaway and the chart
    names = {
        lid: figures.link_name(lid) + (f" ({blocked[lid]})" if lid in blocked else "")
        for lid in links
    }
    text = perf.cached(_takeaway, critical, tuple(names.items()), sc.k * sc.decode_step_s)
    st.info(text, icon=":material/lightbulb:")
    exports_ui.chart(
        perf.cached(
            figures.figure_seq_sweep.unbuilt,
            curves,
            critical,
            threshold_ms=threshold_ms,
            title=f"{sc.model.name}: exposed transfer at batch {sc.batch:,}",  # the x axis: length
            blocked=tuple(blocked),
        ),
        "transfer-vs-sequence",
    )


def _per_layout(sc, threshold_ms: float) -> None:
    """Transfer vs prompt length of several attention layouts on the scenario's link."""
    models = widgets.id_multiselect(
        "Models",
        "models",
        catalog.model_ids(),
        format_func=lambda m: figures.model_layout_label(m, catalog.get_model(m).attention),
    )
    grid = seq_grid(max(catalog.get_model(m).max_context_tokens for m in models), points=160)
    exports_ui.chart(
        perf.cached(
            figures.figure_models_seq.unbuilt,
            perf.cached(in_ms, perf.cached(model_seq_sweep, sc, models, grid)),
            threshold_ms=threshold_ms,
            link=sc.link.name,
            threshold_of=sc.model.name,
        ),
        "layouts-vs-sequence",
    )
    st.caption(
        "MHA caches every head, GQA a few shared heads, MLA one compressed latent; sliding-window "
        "and chunked layers stop growing at their window; hybrid models add a constant state "
        "per request. Same link, stack, batch, dtype and mitigations as the sidebar; each model "
        f"at the sidebar's TP {sc.tp_decode} where its KV heads allow it (else the largest TP "
        "below that they do), MLA models with data-parallel attention. The threshold is the "
        f"sidebar model's ({sc.model.name}) decode step; each model's own step differs (a "
        "smaller model's is shorter), so read it as the sidebar scenario's line."
    )


def _takeaway(critical, names: tuple, threshold_s: float) -> str:
    """The page's sentence, memoised (``names`` as pairs: a dict cannot key the memo)."""
    return sequence_takeaway(critical, dict(names), threshold_s)
