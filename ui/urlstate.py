"""The shared scenario in session state: URL ⇄ session, the scenario it makes, and notices.

Streamlit's sidebar navigation drops the query string, and a widget that is not rendered loses
its value.  So the scenario lives in session state under the URL names (``kvview.params``), is read
from the URL once per session (``init_from_url``), rendered in the sidebar on every page
(``ui.sidebar``), and written back to the URL on every run (``sync_url``).
"""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from kvmodel import catalog
from kvmodel import inputs as I
from kvmodel.evaluation import deployment_problems
from kvmodel.modelcodec import encode_model
from kvmodel.specs import ModelSpec
from kvmodel.transfer import Scenario
from kvview import link_version as L
from kvview import params as P
from ui.widgets import ESTIMATE, GIVEN

_INIT = "_scenario_initialised"
FLAG_ROWS = tuple(r for r in I.URL_INPUTS if r.kind == "flag")  # lw, present
EST_ROWS = tuple(r for r in I.URL_INPUTS if r.est)  # step, prefill
NOTICES = "_notices"
V1, V1_KEPT = "_v1_implied", "_v1_kept"  # what a version-1 link implies; its notice hidden


def imported_models() -> dict[str, ModelSpec]:
    return st.session_state.setdefault("_imported", {})


def model_spec(model_id: str | None = None) -> ModelSpec:
    mid = model_id or st.session_state["model"]
    return imported_models().get(mid) or catalog.get_model(mid)


def history_navigation() -> bool:
    """True when the browser's Back or Forward button started this run.

    Streamlit (1.67) pushes a history entry each time the script changes the query string
    (``sync_url``), and on Back/Forward reruns the script with the entry's query string and
    this flag set on the run's context; there is no public API for the flag yet."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return bool(getattr(get_script_run_ctx(), "is_history_navigation", False))


def init_from_url() -> None:
    """Read the query string into session state once per session, and again when Back or
    Forward brings back an earlier link (so they move between scenarios); keep warnings."""
    if st.session_state.get(_INIT) and not history_navigation():
        return
    query = st.query_params.to_dict()
    values, warnings, imported = P.parse_query(query)
    imported_models().update(imported)
    _apply(values)
    st.session_state[V1] = L.implied(query)  # what a version-1 link implies ({} otherwise)
    st.session_state.pop(V1_KEPT, None)
    st.session_state[NOTICES] = warnings
    st.session_state[_INIT] = True


def _apply(values: dict) -> None:
    """Clean scenario values (``parse_query``) into session state, widget by widget."""
    for name, value in values.items():
        st.session_state[name] = value
    for row in FLAG_ROWS:  # a toggle's value is a bool (the link's is 0/1)
        st.session_state[row.name] = bool(values[row.name])
    for row in EST_ROWS:  # an estimate, or a time the user gave [ms] (ui.widgets.est_widgets)
        est = values[row.name] == "est"
        st.session_state[f"{row.name}_mode"] = ESTIMATE if est else GIVEN
        st.session_state[f"{row.name}_ms"] = row.given if est else values[row.name]


def version1_implied() -> dict:
    """The version-1 defaults the scenario still holds (``kvview.link_version``): {} unless
    it came from a version-1 link and the user has not changed those inputs since."""
    implied = st.session_state.get(V1) or {}
    if not implied:  # every run of every page: no read of the whole session state for nothing
        return {}
    return L.still_implied(implied, current_values())


def _use_current_defaults() -> None:
    """The notice's button: today's defaults for what the version-1 link implied (the next
    run's ``sync_url`` writes the version-2 link)."""
    implied = version1_implied()
    _apply(L.with_current_defaults(current_values(), implied))
    st.session_state[V1] = {}


def _keep_version1() -> None:
    st.session_state[V1_KEPT] = True


def show_version1_notice() -> None:
    """A visible notice while the scenario holds what a version-1 link implied, with a
    one-click way to today's defaults (or to keep the link's meaning and hide the notice)."""
    implied = version1_implied()
    if not implied or st.session_state.get(V1_KEPT):
        return
    st.info(L.notice(implied, current_values()), icon=":material/history:")
    row = st.container(horizontal=True)
    row.button(
        "Use current defaults",
        key="v1_use_defaults",
        icon=":material/update:",
        on_click=_use_current_defaults,
        help="Rewrites the link as a version-2 link with today's defaults for the inputs "
        "listed above; every input the link set stays.",
    )
    row.button("Keep version 1", key="v1_keep", on_click=_keep_version1,
                 help="Hide this notice; the link keeps its version-1 meaning.")  # fmt: skip


def add_notice(text: str) -> None:
    st.session_state.setdefault(NOTICES, []).append(text)


def current_values() -> dict:
    # one read of the whole session state: ~50 reads through st.session_state, each taking
    # its lock and mapping widget ids, cost more (7 calls a rerun on Capacity; Session 8)
    ss = st.session_state.to_dict()
    values = {name: ss.get(name, P.DEFAULTS[name]) for name in P.DEFAULTS}
    for row in FLAG_ROWS:
        values[row.name] = int(bool(ss.get(row.name)))
    for row in EST_ROWS:
        given = ss.get(f"{row.name}_mode") == GIVEN
        values[row.name] = float(ss[f"{row.name}_ms"]) if given else "est"
    mid = values["model"]
    values["cfg"] = encode_model(imported_models()[mid]) if mid in imported_models() else ""
    return values


_SAME_LINK = "_url_means_the_scenario"  # (link, short link) found to mean the same scenario


def sync_url() -> None:
    """Write the scenario's short link to the URL (every run, every page).

    Each write adds a browser history entry (Streamlit pushes it), so a link that already
    means the scenario (a long or version-1 link just opened, or brought back by Back) is left
    as it is: rewriting it would add an entry that shows the same scenario."""
    query = P.to_link_query(current_values())
    given = st.query_params.to_dict()
    if given == query:
        return
    pair = (sorted(given.items()), sorted(query.items()))
    if st.session_state.get(_SAME_LINK) == pair:  # checked on an earlier run
        return
    values, warnings, _ = P.parse_query(given)
    if not warnings and values == P.parse_query(query)[0]:
        st.session_state[_SAME_LINK] = pair
        return
    st.query_params.from_dict(query)


def fragment_rerun() -> bool:
    """True when this run reruns fragments only: a control inside an ``st.fragment`` changed,
    and the router (``sync_url``, the sidebar) did not run.  Streamlit (1.67) sets the run's
    fragments on its context; there is no public API for it yet."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return bool(getattr(get_script_run_ctx(), "fragment_ids_this_run", None))


SHARE_OPEN = "sb_share_open"  # the sidebar's "Share this scenario" expander (ui.share)


def sync_url_in_fragment() -> None:
    """At the top of a page's fragment: on a fragment rerun, write the link as ``sync_url``
    does on every whole run (the fragment's controls are inputs of the link).  The sidebar's
    share box, when open, shows the link: then the whole app reruns, so it shows the new one."""
    if not fragment_rerun():
        return
    before = st.query_params.to_dict()
    sync_url()
    if st.session_state.get(SHARE_OPEN) and st.query_params.to_dict() != before:
        st.rerun(scope="app")


def share_url() -> str:
    """The current page's address with the scenario in its query string (the short link:
    what differs from the defaults, ``params.to_link_query``)."""
    base = ""
    try:
        base = (st.context.url or "").split("?")[0]
    except Exception:  # noqa: BLE001 - st.context.url is missing outside a browser session
        base = ""
    query = urlencode(P.to_link_query(current_values()))
    return f"{base}?{query}" if query else base


def scenario() -> Scenario:
    """The scenario as the sidebar holds it.  Raises ValueError on an impossible combination."""
    return P.scenario_from_values(current_values(), imported_models())


def scenario_or_stop(*, page_shows_problems: bool = False) -> Scenario:
    """The scenario, or a readable error and a stopped page.  Warns (on every page) when the
    scenario cannot be built: weights or the batch do not fit, or a scale-up link joins GPUs
    that are not in one domain (:func:`show_deployment_problems`; a page that draws them
    itself, where its controls decide how, passes ``page_shows_problems``)."""
    try:
        sc = scenario()
    except ValueError as exc:
        st.error(f"This scenario cannot be computed: {exc}. Change the inputs in the sidebar.")
        st.stop()
    if not page_shows_problems:
        show_deployment_problems(sc)
    return sc


def show_deployment_problems(sc: Scenario, own_parallelism: str | None = None) -> None:
    """Why the sidebar's deployment cannot be built, as a warning; as a caption with
    ``own_parallelism`` (what the page does instead) where the page's numbers pick their own
    TP and so do not inherit the problem (Capacity's TP search)."""
    problems = deployment_problems(sc)  # evaluate(sc).problems, without the evaluation
    if not problems:
        return
    if own_parallelism:
        st.caption(f"The sidebar's deployment cannot be built as set ({'; '.join(problems)}). "
                   f"{own_parallelism}")  # fmt: skip
        return
    st.warning(
        "This deployment cannot be built as set:\n\n"
        + "\n".join(f"- {p[0].upper()}{p[1:]}." for p in problems)
        + "\n\nThe numbers below are computed anyway; raise the TP, pick a larger GPU or "
        "a scale-out link in the sidebar.",
        icon=":material/block:",
    )


def feasibility_problems(ev) -> tuple[str, ...]:
    """Why the evaluated scenario cannot be built (memory, NVLink domain); empty when it can."""
    return ev.problems


def show_notices() -> None:
    """Show (once) what the link or a model change altered, and (while it holds) what a
    version-1 link implies."""
    show_version1_notice()
    notes = st.session_state.get(NOTICES) or []
    if notes:
        st.warning(
            "Some inputs were adjusted:\n\n" + "\n".join(f"- {n}" for n in notes),
            icon=":material/warning:",
        )
        st.session_state[NOTICES] = []
