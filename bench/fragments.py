"""AppTest reruns of one fragment, as the browser asks for them (``page_rerun.py``'s page mode).

When a widget inside an ``st.fragment`` changes, the browser asks the server to rerun that
fragment only, with every widget's state: the router, the sidebar and the rest of the page are
not run again, and stay on screen as drawn.  AppTest (Streamlit 1.67) always reruns the whole
script, so a bench through it would time what no user waits for.  ``run`` makes an AppTest run
a fragment rerun instead: it records, on every whole run, which fragment each keyed widget was
drawn in (the ``fragment_id`` of its delta, as the browser reads it), and for a widget inside a
fragment asks the script runner for that fragment's rerun (the runner starts with a whole-app
request, which a fragment request would be merged into: it is dropped first).

A widget outside any fragment whose callback reruns a named fragment (``st.rerun(key)``, as
Capacity's controls do) needs nothing of this: the request is the whole app's, its callback
turns it into that fragment's rerun, in AppTest as in the browser.  ``partial`` tells that the
last run drew a fragment only.

After a fragment rerun AppTest's element tree holds that fragment's elements only, so
``page_rerun.py`` runs the whole page once more, untimed, before it looks up other widgets.
"""

from __future__ import annotations

import dataclasses

_PENDING: dict = {}  # the run asked for: {"fragment": id or None, "app": id(AppTest)}
_WIDGETS: dict[int, dict[str, str]] = {}  # id(AppTest) -> {widget key: fragment id}, last run
_PARTIAL: dict[int, bool] = {}  # id(AppTest) -> whether its last run drew fragments only
_INSTALLED: list[bool] = []


def install() -> None:
    """Patch AppTest's script runner (once per process)."""
    if _INSTALLED:
        return
    from streamlit.runtime.scriptrunner import ScriptRunnerEvent
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests
    from streamlit.testing.v1 import local_script_runner as lsr

    original = lsr.LocalScriptRunner.run

    def run(self, *args, **kwargs):
        fragment = _PENDING.get("fragment")
        if fragment:
            self._requests = ScriptRequests()  # drop the runner's initial whole-app request
            ask = self.request_rerun
            self.request_rerun = lambda data: ask(dataclasses.replace(data, fragment_id=fragment))
        tree = original(self, *args, **kwargs)
        if "app" in _PENDING:
            ran = [data.get("fragment_ids_this_run") for event, data
                   in zip(self.events, self.event_data, strict=True)
                   if event == ScriptRunnerEvent.SCRIPT_STARTED]  # fmt: skip
            _PARTIAL[_PENDING["app"]] = bool(ran and ran[-1])
            if not _PARTIAL[_PENDING["app"]]:
                _WIDGETS[_PENDING["app"]] = widget_fragments(self.forward_msgs())
        return tree

    lsr.LocalScriptRunner.run = run
    _INSTALLED.append(True)


def widget_fragments(msgs) -> dict[str, str]:
    """{widget key: id of the fragment it was drawn in} of a run's forward messages (keyed
    widgets inside a fragment only)."""
    from streamlit.runtime.state.common import user_key_from_element_id

    out = {}
    for msg in msgs:
        if msg.WhichOneof("type") != "delta" or not msg.delta.fragment_id:
            continue
        if msg.delta.WhichOneof("type") != "new_element":
            continue
        el = msg.delta.new_element
        kind = el.WhichOneof("type")
        wid = getattr(getattr(el, kind), "id", "") if kind else ""
        key = user_key_from_element_id(wid) if isinstance(wid, str) and wid else None
        if key:
            out[key] = msg.delta.fragment_id
    return out


def holding(at, key: str) -> str | None:
    """The fragment the widget ``key`` was drawn in at ``at``'s last whole run (None: none)."""
    return _WIDGETS.get(id(at), {}).get(key)


def partial(at) -> bool:
    """Whether ``at``'s last run drew a fragment only (its element tree holds no more)."""
    return _PARTIAL.get(id(at), False)


def run(at, fragment: str | None = None):
    """``at.run()``: the whole script, or with ``fragment`` a rerun of that fragment only."""
    install()
    _PENDING.update(fragment=fragment, app=id(at))
    try:
        return at.run()
    finally:
        _PENDING.clear()
