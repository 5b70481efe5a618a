"""bench/change_timeline.py's reading of a Chrome trace and of Streamlit's messages: hand-made
events and messages, no browser."""

import base64
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from change_timeline import keydown_ts, main_thread, message_name, tasks_in  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

MAIN, OTHER = (1, 10), (2, 20)


def _x(name, ts_ms, dur_ms, thread=MAIN, url=""):
    return {"ph": "X", "name": name, "pid": thread[0], "tid": thread[1], "ts": ts_ms * 1e3,
            "dur": dur_ms * 1e3, "args": {"data": {"url": url}}}  # fmt: skip


def _thread(thread, name):
    return {"ph": "M", "name": "thread_name", "pid": thread[0], "tid": thread[1],
            "args": {"name": name}}  # fmt: skip


def test_busy_time_is_clipped_to_the_window_and_renders_are_react_calls():
    events = [
        _thread(MAIN, "CrRendererMain"), _thread(OTHER, "Compositor"),
        _x("RunTask", -5, 10),  # 5 ms of it after the keydown at 0
        _x("FunctionCall", 20, 12, url="http://x/static/js/react-dom.abc.js"),
        _x("RunTask", 20, 12),
        _x("FunctionCall", 40, 2, url="http://x/static/js/react-dom.abc.js"),  # under 3 ms
        _x("RunTask", 40, 2),
        _x("MinorGC", 50, 4), _x("RunTask", 50, 4),
        _x("RunTask", 95, 20),  # 5 ms of it before the chart at 100
        _x("RunTask", 30, 50, thread=OTHER),  # another thread: not the page's
    ]  # fmt: skip
    got = tasks_in(main_thread(events), 0.0, 100.0)
    assert got["busy_ms"] == 5 + 12 + 2 + 4 + 5
    assert got["renders"] == [(20.0, 12.0)]
    assert [what for _at, _ms, what in got["long"]] == ["React render", "MinorGC"]


def test_the_page_thread_is_the_busiest_renderer_main_thread():
    idle_page = (3, 30)
    events = [_thread(MAIN, "CrRendererMain"), _thread(idle_page, "CrRendererMain"),
              _x("RunTask", 0, 1), _x("RunTask", 1, 1),
              _x("RunTask", 0, 1, thread=idle_page)]  # fmt: skip
    assert {(e["pid"], e["tid"]) for e in main_thread(events)} == {MAIN}
    assert main_thread([_x("RunTask", 0, 1)]) == []  # no renderer named: nothing to read


def test_keydown_is_found_among_events():
    key = {"ph": "X", "name": "EventDispatch", "ts": 7.0, "args": {"data": {"type": "keydown"}}}
    click = {"ph": "X", "name": "EventDispatch", "ts": 3.0, "args": {"data": {"type": "click"}}}
    assert keydown_ts([click, key]) == 7.0
    assert keydown_ts([click]) is None


def _b64(msg: ForwardMsg) -> str:
    return base64.b64encode(msg.SerializeToString()).decode()


def test_messages_are_named_by_kind():
    metric = ForwardMsg()
    metric.delta.new_element.metric.label = "TPOT"
    assert message_name(_b64(metric)) == "delta metric"
    done = ForwardMsg()
    done.script_finished = 3  # a fragment's run
    assert message_name(_b64(done)) == "script_finished 3"
    running = ForwardMsg()
    running.session_status_changed.script_is_running = True
    assert message_name(_b64(running)) == "status running"
    block = ForwardMsg()
    block.delta.add_block.allow_empty = True
    assert message_name(_b64(block)) == "delta add_block"
