"""Where a page's server-side rerun goes: cProfile over AppTest reruns that change an input.

For each chosen page: warm up, then profile ``--runs`` reruns that set the sidebar batch to a
never-seen value (as ``page_rerun.py``'s ``change`` mode).  Prints, per rerun (ms, cProfile
overhead included, so read the shares rather than the absolute values):

* a wall-clock split WITHOUT the profiler: every public function of ``kvmodel.*`` and
  ``ui.*``, the plotly ``Figure`` methods and the ``st.*`` element calls are wrapped in a timer
  (inclusive ms per rerun); plus the script's own execution time (and how often it ran per
  ``at.run()``: 2 = the ``ensure_router`` st.rerun), and what is left for AppTest itself;
* under cProfile, the project's own functions (app.py, pages/, ui/, kvmodel/) by cumulative time;
* the library functions (streamlit, plotly, pandas, ...) by cumulative time, outermost calls
  that are interesting to a developer (figure building, marshalling, Styler, AppTest parsing).

    .venv/bin/python bench/profile_rerun.py [--pages Overview Mitigations] [--runs 20] [--top 15]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import pstats
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import APP, ROOT, TRIVIAL, TRIVIAL_LABEL, median, pages, quiet_logs  # noqa: E402
from page_rerun import MAX_BATCH, PAGE_CONTROLS, new_app, page_control, timed_run, timed_set  # noqa: E402,E501

LIB_MARKERS = ("site-packages/",)
LIB_INTERESTING = (
    "plotly/basedatatypes.py", "plotly/graph_objs/", "plotly/io/_json.py", "plotly/io/_utils.py",
    "streamlit/elements/plotly_chart.py", "streamlit/elements/arrow.py",
    "streamlit/dataframe_util.py", "streamlit/elements/lib/pandas_styler_utils.py",
    "pandas/io/formats/style", "streamlit/testing/v1/", "streamlit/runtime/caching/",
    "streamlit/elements/widgets/", "streamlit/runtime/scriptrunner/", "pyarrow/",
    "streamlit/navigation/", "streamlit/commands/navigation.py", "streamlit/elements/metric.py",
    "streamlit/runtime/state/",
)  # fmt: skip


def short(filename: str) -> str:
    if filename.startswith(str(ROOT) + "/") and "/site-packages/" not in filename:
        return filename[len(str(ROOT)) + 1 :]
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1]
    return filename


@contextlib.contextmanager
def _profiling_script_thread(prof: cProfile.Profile):
    """Profile the script runner's thread (the script does not run in the calling thread)."""
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    orig = ScriptRunner._run_script

    def wrapped(self, *args, **kwargs):
        prof.enable()
        try:
            return orig(self, *args, **kwargs)
        finally:
            prof.disable()

    ScriptRunner._run_script = wrapped
    try:
        yield
    finally:
        ScriptRunner._run_script = orig


TIMED_PACKAGES = ("kvmodel", "ui")  # every public function of every module in them
TIMED_PRIVATE = ("ui.sidebar:_roofline_caption", "kvview.figures:_layout")  # plus these
TIMED_ELEMENTS = ("plotly_chart", "dataframe", "metric", "info", "caption", "markdown", "title",
                  "subheader", "selectbox", "number_input", "select_slider", "slider", "toggle",
                  "multiselect", "radio", "columns", "expander", "file_uploader", "text_area",
                  "button", "warning")  # fmt: skip


PLOTLY_METHODS = ("update_layout", "add_bar", "add_scatter", "add_vrect", "add_hrect", "add_vline",
                  "add_hline", "update_xaxes", "update_yaxes", "update_traces", "add_annotation",
                  "add_shape")  # fmt: skip


class _Timers:
    """Wrap functions with wall-clock timers (inclusive; nested calls count in both)."""

    def __init__(self):
        self.acc: dict[str, list[float]] = {}
        self._undo: list[tuple[object, str, object]] = []

    def _wrap(self, name: str, fn):
        acc = self.acc.setdefault(name, [0.0, 0, []])

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                acc[0] += dt
                acc[1] += 1
                acc[2].append(dt)

        functools.update_wrapper(timed, fn)  # keep __qualname__: perf.cached keys on it
        return timed

    def patch(self, owner, attr: str, name: str, fn=None):
        orig = getattr(owner, attr) if fn is None else fn
        self._undo.append((owner, attr, owner.__dict__.get(attr, _MISSING)
                           if isinstance(owner, type) else getattr(owner, attr)))  # fmt: skip
        setattr(owner, attr, self._wrap(name, orig))

    def install(self) -> None:

        import streamlit as st
        from streamlit.delta_generator import DeltaGenerator
        from streamlit.runtime.scriptrunner import script_runner

        mods = _project_modules()
        targets = [(m, n) for m in mods for n, f in vars(m).items()
                   if isinstance(f, types.FunctionType) and f.__module__ == m.__name__
                   and (not n.startswith("_") or f"{m.__name__}:{n}" in TIMED_PRIVATE)]  # fmt: skip
        for mod, attr in targets:
            orig = getattr(mod, attr)
            name = f"{mod.__name__.replace('.', '/')}.py:{attr}"
            wrapped = self._wrap(name, orig)
            for m in mods:  # every module-level alias of the same function
                for k, v in list(vars(m).items()):
                    if v is orig:
                        self._undo.append((m, k, v))
                        setattr(m, k, wrapped)
        import plotly.graph_objects as go

        for meth in PLOTLY_METHODS:
            if hasattr(go.Figure, meth):
                self.patch(go.Figure, meth, f"plotly Figure.{meth}", getattr(go.Figure, meth))
        self.patch(go.Figure, "__init__", "plotly Figure.__init__", go.Figure.__init__)
        for el in TIMED_ELEMENTS:
            if not hasattr(DeltaGenerator, el):
                continue
            self.patch(DeltaGenerator, el, f"st.{el}", getattr(DeltaGenerator, el))
            if hasattr(st, el):
                self.patch(st, el, f"st.{el}")
        self.patch(script_runner, "exec_func_with_error_handling", "(script execution, total)")

    def uninstall(self) -> None:
        for owner, attr, value in reversed(self._undo):
            if value is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, value)
        self._undo.clear()


_MISSING = object()


def _project_modules() -> list:
    import importlib
    import pkgutil

    mods = []
    for pkg_name in TIMED_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        mods.append(pkg)
        for info in pkgutil.iter_modules(pkg.__path__, f"{pkg_name}."):
            if info.name.endswith("__main__"):
                continue
            try:
                mods.append(importlib.import_module(info.name))
            except Exception:  # noqa: BLE001 - a module that fails to import is not timed
                continue
    return mods


def _step(at, label: str, control: bool, r: int) -> float:
    """One timed rerun: batch ``r`` (a never-seen batch), or with ``control`` the page's own
    control of round ``r`` (page_rerun.py's ``page`` mode, values never seen either)."""
    if control:
        return timed_set(at, *page_control(label, r))
    return timed_run(at, r)


def wall_split(at, step, runs: int, base: int) -> tuple[float, dict[str, list]]:
    """Mean ms per rerun of each timed function, without cProfile's overhead.

    Values: [ms per rerun, calls per rerun, ms of each call]."""
    timers = _Timers()
    timers.install()
    try:
        total = sum(step(at, base + r) for r in range(runs))
    finally:
        timers.uninstall()
    return total / runs, {
        k: [v[0] * 1e3 / runs, v[1] / runs, [d * 1e3 for d in v[2]]] for k, v in timers.acc.items()
    }


def profile_page(label: str, path: Path, page: str | None, runs: int, warmup: int, top: int,
                 base: int, control: bool = False) -> str:  # fmt: skip
    at = new_app(path, page)
    step = lambda at, r: _step(at, label, control, r)  # noqa: E731
    for w in range(warmup):
        timed_run(at, 1 + w % 2)
    wall = []
    for r in range(runs):  # un-profiled reference timing
        wall.append(step(at, base + r))
    split_total, split = wall_split(at, step, runs, base + runs)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    with _profiling_script_thread(prof):
        for r in range(runs):
            step(at, base + 2 * runs + r)
    prof_ms = (time.perf_counter() - t0) * 1e3 / runs
    st = pstats.Stats(prof)
    entries = st.stats  # (file, line, func) -> (cc, nc, tt, ct, callers)
    per = 1e3 / runs

    own, lib = [], []
    for (fn, _line, func), (_cc, nc, tt, ct, _callers) in entries.items():
        if fn.startswith(str(ROOT)) and "site-packages" not in fn and "/bench/" not in fn:
            own.append((ct * per, tt * per, nc / runs, f"{short(fn)}:{func}"))
        elif any(m in fn for m in LIB_INTERESTING):
            lib.append((ct * per, tt * per, nc / runs, f"{short(fn)}:{func}"))
    own.sort(reverse=True)
    lib.sort(reverse=True)
    tottime_all = sorted(
        ((v[2] * per, v[1] / runs, f"{short(k[0])}:{k[2]}") for k, v in entries.items()),
        reverse=True,
    )

    def fmt(rows):
        return "\n".join(f"  {ct:8.1f} {tt:8.1f} {nc:8.1f}  {name}" for ct, tt, nc, name in rows)

    script = split.pop("(script execution, total)", [0.0, 0.0, []])
    timed = sorted(((ms, n, name) for name, (ms, n, _d) in split.items() if n), reverse=True)
    per_exec = ""
    if round(script[1]) == 2 and script[2]:
        first, second = median(script[2][0::2]), median(script[2][1::2])
        per_exec = (f"; median {first:.1f} ms for the run ensure_router stops, "
                    f"{second:.1f} ms for the full run")  # fmt: skip
    what = "page-control" if control else "change"
    out = [
        f"=== {label}: wall-clock split without profiler ({runs} {what} reruns, mean per rerun)",
        f"  {split_total:8.1f} ms  at.run() total",
        f"  {script[0]:8.1f} ms  script execution ({script[1]:.0f} executions of the script per "
        f"at.run(){per_exec})",
        f"  {split_total - script[0]:8.1f} ms  the rest: AppTest and script-runner overhead",
        "   incl ms    calls  function (inclusive; nested calls are counted in both)",
        "\n".join(f"  {ms:8.1f} {n:8.1f}  {name}" for ms, n, name in timed[:top]),
        "",
        f"=== {label}: {runs} {what} reruns; un-profiled median {median(wall):.1f} ms, "
        f"profiled mean {prof_ms:.1f} ms per rerun (cProfile inflates Python-heavy code; the "
        "scripts' own <module> lines are lost: each run recompiles them)",
        "  cum ms  self ms  calls    project function (per rerun)",
        fmt(own[:top]),
        "  cum ms  self ms  calls    library function (per rerun)",
        fmt(lib[:top]),
        "  self ms   calls    hottest self time anywhere (per rerun)",
        "\n".join(f"  {tt:8.1f} {nc:8.1f}  {name}" for tt, nc, name in tottime_all[:top]),
    ]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", help="page labels (default: all, plus the trivial page)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--control", action="store_true",
                    help="rerun on the page's own controls (page_rerun.py's page mode) instead "
                    f"of the batch; pages: {', '.join(PAGE_CONTROLS)}")  # fmt: skip
    args = ap.parse_args(argv)
    import streamlit as st

    quiet_logs()
    found = pages()
    st.cache_data.clear()
    from ui import perf

    perf.clear_cache()
    apps = [(TRIVIAL_LABEL, TRIVIAL, None)] + [(label, APP, page) for label, page, _ in found]
    if args.pages:
        apps = [a for a in apps if a[0] in args.pages]
    stride = (MAX_BATCH - 10) // len(apps)  # batch values never seen: 3 × runs per page
    if 3 * args.runs > stride:
        ap.error(f"--runs at most {stride // 3} for {len(apps)} pages (batch ≤ {MAX_BATCH})")
    if args.control:  # rounds 0, 1, ...: values never seen (the warm-up changes only the batch)
        apps = [a for a in apps if a[0] in PAGE_CONTROLS]
    for k, (label, path, page) in enumerate(apps):
        base = 0 if args.control else 10 + stride * k
        print(profile_page(label, path, page, args.runs, args.warmup, args.top, base,
                           args.control))  # fmt: skip
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
