"""Compare: the sidebar's scenario (A) against up to three variants, all in one link.

Each variant is a set of changes to A (any scenario input; ``ui.compare_edit`` draws them);
a link without ``cmp`` compares variants made from A (``kvmodel.compare.default_variants``).
The table judges every number against A's (``kvview.compare_cells``), the charts show what
differs (``kvview.figures.compare``).
"""

from functools import partial

import streamlit as st

from kvmodel import inputs as I
from kvmodel import traffic as tr
from kvmodel.compare import AUTO, change_rows, changes, compare_frame, default_variants
from kvmodel.sweeps import Option, mitigation_rows, mitigation_table
from kvmodel.transfer import evaluate
from kvview import compare_cells, csv_tables, figures
from kvview import params as P
from kvview.figures import compare as figures_compare
from kvview.fmt import in_ms
from kvview.words import compare_takeaway, pd_parallelism
from ui import compare_edit as E
from ui import exports_ui, perf, share, traffic_ui, urlstate


def _gains(labelled, base_sc):
    """The Traffic page's mix: (caption, share that gains per scenario), or None."""
    ss = st.session_state
    trace = ss.get("trace")
    kept = traffic_ui.kept_upload() if traffic_ui.upload_chosen() else None
    if kept is None and trace not in tr.SAMPLES:
        return None
    if kept is not None:  # the Traffic page shows an upload: compare on it
        mix = traffic_ui.mix(kept.key, None, kept.req)
        source = f"{kept.label} (the Traffic page's upload)"
    else:
        mix = traffic_ui.mix(("sample", trace), None, traffic_ui.sample_requests(trace))
        source = f"{tr.SAMPLES[trace][1]} (the Traffic page's sample)"
        if traffic_ui.upload_chosen():  # chosen there, but no file is loaded
            source = f"{tr.SAMPLES[trace][1]} (a sample: no upload is loaded on Traffic)"
    fractions = tuple(  # memoised: the batch does not change a per-request scenario
        perf.cached(
            tr.regions,
            tr.per_request_scenario(sc),
            mix,
            min_seq_len=int(ss["minlen"]),
            criterion=ss["crit"],
        ).fraction_gain
        for _, sc in labelled
    )
    rule = {
        "step": f"transfer ≥ {base_sc.k:g} × decode step",
        "share": f"transfer share of TTFT > {base_sc.share_target:.0%}",
    }[ss["crit"]]
    caption = f"{source}; too short below {int(ss['minlen']):,} tokens, transfer-bound when {rule}."
    return caption, fractions


def _derived_caption(label: str, base_values: dict, values: dict, over: dict) -> str:
    """What the variant takes from its own model rather than from A (its attention
    parallelism, KV dtype …), in words; '' when nothing differs that way."""
    derived = P.derived_changes(base_values, values, over)
    if not derived:
        return ""
    return (
        f":material/subdirectory_arrow_right: {label} derives from its own model, not from A: "
        + "; ".join(E.describe(k, values) for k in derived)
        + "."
    )


def _editor(variants, base_values, cols) -> list[tuple[str, dict, list[str]]]:
    """Draw each variant's changes; returns (label, clean values, warnings) per variant."""
    ss = st.session_state

    def _write(variants_) -> None:
        ss["cmp"] = ";".join(P.format_overrides(v) for v in variants_ if v)

    def _set(i: int, name: str, value: str) -> None:
        v = variants[i]
        # the decode TP equals the prefill TP: it follows it (as in the sidebar)
        follow = str(v.get("tpd", base_values["tpd"])) == str(v.get("tp", base_values["tp"]))
        v[name] = value
        if name == "tp" and follow:
            v["tpd"] = value
        _write(variants)

    def _edited(i: int, name: str) -> None:
        _set(i, name, E.text(name, ss[f"cmp{i}_{name}"]))

    def _add_change(i: int, values: dict) -> None:
        name = ss[f"cmp{i}_add"]
        if name:
            _set(i, name, E.start_value(name, values))
        ss[f"cmp{i}_add"] = None

    def _drop_change(i: int, name: str) -> None:
        variants[i].pop(name, None)
        _write([v if v else {"link": base_values["link"]} for v in variants])

    def _remove(i: int) -> None:
        _write([v for n, v in enumerate(variants) if n != i])

    def _add() -> None:
        fresh = [v for v in default_variants(base_values) if v not in variants]
        _write([*variants, fresh[0] if fresh else {"link": base_values["link"]}])

    out = []
    # the changes in words, no controls: in presentation mode, and until "Edit B–D" is on (a
    # shared comparison opens read-only; its 13 widgets were ~2.7 ms of every rerun)
    present = bool(ss.get("present")) or not ss.get(EDIT)
    for i, over in enumerate(variants):
        label = chr(ord("B") + i)
        values, warnings = _variant_values(base_values, over)
        derived = _derived_caption(label, base_values, values, over)
        if present:
            shown = [k for k in over if k in P.SCENARIO_KEYS]
            changed = "; ".join(
                E.describe(k, values)
                + (" (as A)" if str(values[k]) == str(base_values.get(k)) else "")
                for k in shown
            )
            cols[i + 1].markdown(f"**{label}** · {changed}")
            if derived:
                cols[i + 1].caption(derived)
            out.append((label, values, warnings))
            continue
        with cols[i + 1]:
            st.markdown(f"**{label}** · {len(over)} change{'s' if len(over) != 1 else ''} to A")
            if derived:
                st.caption(derived)
            for name in [k for k in over if k in P.SCENARIO_KEYS]:
                key = f"cmp{i}_{name}"
                E.seed(key, name, values, base_values)
                left, right = st.columns([5, 1], vertical_alignment="bottom")
                with left:
                    E.widget(key, name, values, base_values, _edited, (i, name))
                right.button(
                    "",
                    key=f"cmp{i}_rm_{name}",
                    icon=":material/close:",
                    help=f"Remove this change ({I.get(name).label} follows A)",
                    on_click=_drop_change,
                    args=(i, name),
                )
            st.selectbox(
                "Add a change",
                E.addable(over, values),
                index=None,
                key=f"cmp{i}_add",
                placeholder="Pick an input to change…",
                format_func=lambda k: I.get(k).label_unit,
                on_change=_add_change,
                args=(i, values),
                help="Any input of the scenario; the others follow A (the sidebar).",
            )
            st.button(f"Remove {label}", key=f"cmp{i}_rm", on_click=_remove, args=(i,))
        out.append((label, values, warnings))
    if len(variants) < P.MAX_COMPARED and not present:
        cols[len(variants) + 1].button("Add a scenario", on_click=_add, icon=":material/add:")
    return out


def _variant_values(base_values: dict, over: dict) -> tuple[dict, list[str]]:
    """``P.variant_values`` memoised on the values (~1 ms a variant on every rerun before), as
    copies: the editor's callbacks receive them."""
    key = ("variant", repr(sorted(base_values.items())), repr(sorted(over.items())))
    values, warnings = perf.cached_by(key, P.variant_values, base_values, over)
    return dict(values), list(warnings)


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Compare")
    urlstate.show_notices()
    base_sc = urlstate.scenario_or_stop()
    ss = st.session_state
    base_values = urlstate.current_values()
    auto = str(ss["cmp"]).strip().lower() == AUTO
    variants = P.compared(ss["cmp"], base_values)
    st.caption(
        "A is the sidebar's scenario; each of B–D changes any of its inputs (the others follow "
        "A). The whole comparison travels in the link."
        + (
            " This link names no variants, so B–D are made from A: each changes one input, "
            "three of compression, a faster link, layer-wise sending and the wire-speed stack."
            if auto
            else ""
        )
    )
    if not ss.get("present"):
        if not variants:  # nothing to read: open the editor on its "Add a scenario" button
            ss[EDIT] = True
        st.toggle(
            "Edit B–D",
            key=EDIT,
            help="Change, add or remove the variants' inputs (the link keeps them). Off: each "
            "variant's changes in words.",
        )
    cols = st.columns(P.MAX_COMPARED + 1)
    labelled = _scenarios(base_sc, variants, base_values, cols)
    evs, options, rows = _evaluated(base_sc, labelled)
    _takeaway(labelled, rows)
    gains = _gains(labelled, base_sc)
    cmp_table = perf.cached(compare_frame, evs, gains[1] if gains else None)
    _comparison(labelled, evs, options, cmp_table, gains[0] if gains else None)


def _scenarios(base_sc, variants, base_values, cols) -> list:
    """A and each variant's editor; the (label, Scenario) pairs that build, problems shown."""
    cols[0].markdown(
        f"**A** (the sidebar) · {base_sc.model.name}, {base_sc.seq_len:,} tokens × "
        f"{base_sc.batch}, {base_sc.link.name}, {base_sc.stack.name}, "
        f"{pd_parallelism(base_sc)}, {base_sc.attention_parallel.upper()} attention, compression "
        f"{base_sc.compression}, layer-wise {'on' if base_sc.layerwise else 'off'}"
    )
    labelled, problems = [("A (sidebar)", base_sc)], []
    for n, (label, values, warnings) in enumerate(_editor(variants, base_values, cols)):
        col = cols[n + 1]
        for w in warnings:
            col.caption(f":material/warning: {w}")
        try:
            sc_i = P.scenario_from_values(values, urlstate.imported_models())
        except ValueError as exc:
            problems.append(f"{label}: {exc}")
            continue
        labelled.append((label, sc_i))
        if sc_i == base_sc:
            col.caption(
                f":material/info: {label} is the same scenario as A: change one of its inputs."
            )
        for why in urlstate.feasibility_problems(evaluate(sc_i)):
            col.caption(f":material/block: Not buildable: {why}.")
    for text in problems:
        st.error(f"Scenario {text}")
    return labelled


def _evaluated(base_sc, labelled):
    """Each scenario evaluated, and their rows as mitigation options (``mitigation_rows``: the
    sentence reads them; the TTFT chart makes its table only while its tab is open)."""
    evs = [(label, evaluate(sc)) for label, sc in labelled]
    buildable = {label: not urlstate.feasibility_problems(ev) for label, ev in evs}
    options = [Option(label, sc, buildable[label]) for label, sc in labelled]
    return evs, options, perf.cached(mitigation_rows, base_sc, options, critical=False)


def _takeaway(labelled, rows) -> None:
    """Which scenario has the lowest TTFT, in a sentence."""
    said = perf.cached(compare_takeaway, rows, labelled[0][0])  # unbuildable: not ranked
    st.info(said, icon=":material/lightbulb:")


def _comparison(labelled, evs, options, cmp_table, gains_caption: str | None) -> None:
    """The comparison table against A (with the Traffic page's share that gains as its last
    row, ``gains_caption`` saying of which traffic), its downloads and the three charts."""
    cmp_changes = perf.cached(change_rows, cmp_table)  # rows; the chart's tab makes the frame
    rows = perf.cached(compare_cells.compare_rows, cmp_table, cmp_changes)
    st.markdown(
        compare_cells.compare_html(rows, [label for label, _ in labelled]),
        unsafe_allow_html=True,
    )
    st.caption(
        "Each number of B–D against A's: **blue ▼/▲ better**, **orange ▼/▲ worse** (the arrow "
        "gives the direction of the change, the row says which way is better); grey bold: an "
        "input that differs from A."
        + (f" Traffic that gains (the last row): {gains_caption}" if gains_caption else "")
    )
    link = urlstate.share_url()  # one link for both files (each read the session state)
    exports_ui.table_download(partial(csv_tables.comparison_frame, evs), "comparison", link)
    share.report_download(
        labelled,
        "kv-transfer-comparison",
        key="dl_cmp_report",
        title="KV transfer comparison",
        link=link,
    )
    _charts(labelled, options, cmp_table)


TAB = "cmp_tab"  # session key: the open chart's tab
EDIT = "cmp_edit"  # session key: the variants' editor is open (not in the link)


def _charts(labelled, options, cmp_table) -> None:
    """The three charts in tabs, each drawn only while open (``options``: A's and the
    variants', as ``_evaluated`` made them)."""
    names = ["Exposed transfer", "Change against A", "TTFT"] if len(labelled) > 1 else [
        "Exposed transfer", "TTFT"]  # fmt: skip
    tabs = dict(zip(names, st.tabs(names, key=TAB, on_change="rerun"), strict=True))
    if tabs["Exposed transfer"].open:
        with tabs["Exposed transfer"]:
            exports_ui.chart(
                perf.cached(figures_compare.figure_compare_transfer.unbuilt, cmp_table),
                "transfer-per-scenario",
            )
    if "Change against A" in tabs and tabs["Change against A"].open:
        with tabs["Change against A"]:
            exports_ui.chart(
                perf.cached(figures_compare.figure_compare_change.unbuilt,
                            perf.cached(changes, cmp_table)),
                "change-vs-a",
            )
    if tabs["TTFT"].open:
        with tabs["TTFT"]:
            frame = perf.cached(mitigation_table, labelled[0][1], options, critical=False)
            ttft = perf.cached(in_ms, frame)
            exports_ui.chart(
                perf.cached(figures.figure_ttft.unbuilt, ttft, title="TTFT per scenario"),
                "ttft-per-scenario",
            )
