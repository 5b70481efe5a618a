"""Compare: the sidebar's scenario (A) against up to three variants, all in one link."""

from functools import partial

import streamlit as st

from kvmodel import catalog
from kvmodel import traffic as tr
from kvmodel.dtypes import COMPRESSION_BITS
from kvmodel.sweeps import Option, mitigation_table
from kvmodel.transfer import evaluate
from ui import csv_tables, exports_ui, figures, perf, routing, share, tables, traffic_ui, urlstate
from ui import params as P
from ui.fmt import in_ms


def render() -> None:
    """Draw the page (see the module docstring)."""
    routing.ensure_router()
    st.title("Compare")
    urlstate.show_notices()
    base_sc = urlstate.scenario_or_stop()
    ss = st.session_state
    base_values = urlstate.current_values()
    variants = [P.parse_overrides(t) for t in str(ss["cmp"]).split(";") if t.strip()]
    links = P.link_ids()

    def _write(variants_) -> None:
        ss["cmp"] = ";".join(P.format_overrides(v) for v in variants_ if v)

    def _edited(i: int) -> None:
        over = variants[i]
        over["link"] = ss[f"cmp{i}_link"]
        over["comp"] = ss[f"cmp{i}_comp"]
        over["lw"] = "1" if ss[f"cmp{i}_lw"] else "0"
        if "stack" in over or ss[f"cmp{i}_stack"] != base_values["stack"]:
            over["stack"] = ss[f"cmp{i}_stack"]  # only when it differs: links stay short
        _write(variants)

    def _remove(i: int) -> None:
        _write([v for n, v in enumerate(variants) if n != i])

    def _add() -> None:
        _write([*variants, {"link": base_values["link"], "comp": base_values["comp"]}])

    st.caption(
        "A is the sidebar's scenario; B–D change the interconnect, transfer stack, compression "
        "or layer-wise sending (other inputs follow A unless the link says otherwise). The whole "
        "comparison travels in the link."
    )
    stacks = catalog.stacks()
    labelled, problems = [("A (sidebar)", base_sc)], []
    cols = st.columns(P.MAX_COMPARED + 1)
    cols[0].markdown(
        f"**A** · {base_sc.link.name}, {base_sc.stack.name}, {base_sc.compression}, "
        f"layer-wise {'on' if base_sc.layerwise else 'off'}"
    )
    for i, over in enumerate(variants):
        label = chr(ord("B") + i)
        with cols[i + 1]:
            st.markdown(f"**{label}**")
            link = over.get("link", base_values["link"])
            ss[f"cmp{i}_link"] = link if link in links else links[0]
            ss[f"cmp{i}_comp"] = over.get("comp", base_values["comp"])
            ss[f"cmp{i}_lw"] = str(over.get("lw", base_values["lw"])) == "1"
            stack = over.get("stack", base_values["stack"])
            ss[f"cmp{i}_stack"] = stack if stack in stacks else base_values["stack"]
            st.selectbox(
                "Interconnect",
                links,
                key=f"cmp{i}_link",
                on_change=_edited,
                args=(i,),
                format_func=figures.link_name,
            )
            st.selectbox(
                "Compression",
                list(COMPRESSION_BITS),
                key=f"cmp{i}_comp",
                on_change=_edited,
                args=(i,),
            )
            st.selectbox(
                "Transfer stack",
                list(stacks),
                key=f"cmp{i}_stack",
                on_change=_edited,
                args=(i,),
                format_func=lambda k: stacks[k].name,
            )
            st.toggle("Layer-wise", key=f"cmp{i}_lw", on_change=_edited, args=(i,))
            st.button("Remove", key=f"cmp{i}_rm", on_click=_remove, args=(i,))
        values, _ = P.variant_values(base_values, over)
        try:
            sc_i = P.scenario_from_values(values, urlstate.imported_models())
        except ValueError as exc:
            problems.append(f"{label}: {exc}")
            continue
        labelled.append((label, sc_i))
        if sc_i == base_sc:
            cols[i + 1].caption(
                f":material/info: {label} is the same scenario as A: change one of its inputs."
            )
        for why in urlstate.feasibility_problems(evaluate(sc_i)):
            cols[i + 1].caption(f":material/block: Not buildable: {why}.")
    if len(variants) < P.MAX_COMPARED:
        cols[len(variants) + 1].button("Add a scenario", on_click=_add, icon=":material/add:")
    for text in problems:
        st.error(f"Scenario {text}")

    evs = [(label, evaluate(sc)) for label, sc in labelled]
    buildable = {label: not urlstate.feasibility_problems(ev) for label, ev in evs}
    options = [Option(label, sc, buildable[label]) for label, sc in labelled]
    table = perf.cached(in_ms, perf.cached(mitigation_table, base_sc, options))
    ok = table[table["buildable"]] if table["buildable"].any() else table
    best = ok.loc[ok["ttft_ms"].idxmin()]
    if len(labelled) == 1:
        said = "Only the sidebar's scenario (A) is set: add a variant above to compare with it."
    elif best["option"] == labelled[0][0]:
        said = (
            f"A (the sidebar) already has the lowest TTFT, {best['ttft_ms']:,.1f} ms; its "
            f"transfer is {best['transfer_share']:.1%} of TTFT."
        )
    else:
        said = (
            f"Lowest TTFT: {best['option']} at {best['ttft_ms']:,.1f} ms, "
            f"{best['ttft_saving_ms']:,.1f} ms below A; its transfer is "
            f"{best['transfer_share']:.1%} of TTFT."
        )
    st.info(said, icon=":material/lightbulb:")
    shown, differs = perf.cached(tables.compare_cells, evs)
    st.markdown(tables.differences_table(shown, differs), unsafe_allow_html=True)
    exports_ui.table_download(partial(csv_tables.comparison_frame, evs), "comparison")
    st.caption("Highlighted: differs from A.")
    share.report_download(
        labelled, "kv-transfer-comparison", key="dl_cmp_report", title="KV transfer comparison"
    )
    exports_ui.chart(
        perf.cached(
            figures.figure_ttft,
            table,
            title="TTFT per scenario: prefill + exposed transfer + first decode step",
        ),
        "ttft-per-scenario",
    )

    trace = ss.get("trace")
    kept = traffic_ui.kept_upload() if traffic_ui.upload_chosen() else None
    if kept is not None or trace in tr.SAMPLES:
        if kept is not None:  # the Traffic page shows an upload: compare on it
            mix = traffic_ui.mix(kept.key, None, kept.req)
            source = f"{kept.label} (the Traffic page's upload)"
        else:
            mix = traffic_ui.mix(("sample", trace), None, traffic_ui.sample_requests(trace))
            source = f"{tr.SAMPLES[trace][1]} (the Traffic page's sample)"
            if traffic_ui.upload_chosen():  # chosen there, but no file is loaded
                source = f"{tr.SAMPLES[trace][1]} (a sample: no upload is loaded on Traffic)"
        gains = {
            label: tr.regions(
                tr.per_request_scenario(sc),
                mix,
                min_seq_len=int(ss["minlen"]),
                criterion=ss["crit"],
            ).fraction_gain
            for label, sc in labelled
        }
        st.subheader("Traffic that gains")
        rule = {
            "step": f"transfer ≥ {base_sc.k:g} × decode step",
            "share": f"transfer share of TTFT > {base_sc.share_target:.0%}",
        }[ss["crit"]]
        st.caption(
            f"{source}; too short below {int(ss['minlen']):,} tokens, transfer-bound when {rule}."
        )
        c = st.columns(len(gains))
        for col, (label, frac) in zip(c, gains.items(), strict=True):
            col.metric(label, f"{frac:.1%}", help="Share of requests that gain from disaggregation")
