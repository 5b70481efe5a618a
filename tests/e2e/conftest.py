"""Browser tests: one Streamlit server and one Debian chromium for the whole session.

Never ``playwright install`` (it downloads a browser and fails here): Debian's chromium is
launched by path.  Without chromium every e2e test is skipped with a visible reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 800}
HEALTH_TIMEOUT_S = 60
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Mark every test in this folder ``e2e`` (``make test-fast`` leaves them out with -m).

    The hook sees the whole session's items, so only those under this folder are marked."""
    for item in items:
        if item.path.resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)


def _chromium() -> str | None:
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def _free_port() -> int:
    """The first free port of ``$E2E_PORTS`` ("8621-8629") when set (a machine shared by several
    people, each with their own ports), else any port the OS gives."""
    lo, _, hi = os.environ.get("E2E_PORTS", "").partition("-")
    for port in range(int(lo), int(hi or lo) + 1) if lo else [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free port in E2E_PORTS={os.environ['E2E_PORTS']}")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = _chromium()
    if not path:
        pytest.skip(
            "browser tests skipped: Debian chromium not found (`make chromium` installs it)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("browser tests skipped: the playwright package is not installed")
    return path


@contextmanager
def serve(log_dir: Path, *extra: str, path: str = "", launcher: str = "serve"):
    """Serve the app on a free port (plus ``extra`` options); yield its URL.  ``launcher``:
    ``serve`` (``python -m ui.serve``, as ``make run`` and the hosting docs) or ``streamlit``
    (plain ``streamlit run app.py``, without the warm-up)."""
    port = _free_port()
    root_url = f"http://127.0.0.1:{port}"
    url = f"{root_url}{path}"
    log = (log_dir / "server.log").open("w")
    start = {"serve": ["-m", "ui.serve"], "streamlit": ["-m", "streamlit", "run", "app.py"]}
    cmd = [
        sys.executable, *start[launcher],
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--server.fileWatcherType", "none",
        *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while not _healthy(url):
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with code {proc.returncode}; see {log.name}")
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {HEALTH_TIMEOUT_S} s; see {log.name}")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def app_url(chromium_path, tmp_path_factory) -> str:
    """Start the app (``python -m ui.serve``) on a free port; yield its URL; stop it afterwards."""
    with serve(tmp_path_factory.mktemp("streamlit")) as url:
        yield url


@pytest.fixture
def fresh_app_url(chromium_path, tmp_path, request) -> str:
    """A server of the test's own, so its first request is the first of the process (no
    earlier run has called st.navigation there: tests/e2e/test_router_browser.py).  Started
    by the launcher named by an indirect parameter (``serve`` unless given)."""
    with serve(tmp_path, launcher=getattr(request, "param", "serve")) as url:
        yield url


BASE_PATH = "kvplanner"


@pytest.fixture(scope="session")
def base_path_url(chromium_path, tmp_path_factory) -> str:
    """The app served under a path prefix, as behind a reverse proxy (--server.baseUrlPath)."""
    with serve(tmp_path_factory.mktemp("streamlit-base"), "--server.baseUrlPath", BASE_PATH,
               path=f"/{BASE_PATH}") as url:  # fmt: skip
        yield url


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=45_000)  # a loaded 2-core CI machine can take a while
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def outside_requests(urls: list[str]) -> list[str]:
    """The URLs that leave this machine (data: and blob: stay in the browser)."""
    return [
        u for u in urls
        if urlparse(u).scheme not in ("data", "blob")
        and urlparse(u).hostname not in ("127.0.0.1", "localhost")
    ]  # fmt: skip


@pytest.fixture
def page(browser):
    """A fresh context (fresh Streamlit session) per test, 1280×800.

    Every request (and websocket) the page makes is recorded in ``page.requested``.
    """
    context = browser.new_context(viewport=VIEWPORT)
    requested: list[str] = []
    context.on("request", lambda req: requested.append(req.url))
    pg = context.new_page()
    pg.on("websocket", lambda ws: requested.append(ws.url))
    pg.requested = requested
    yield pg
    context.close()


def wait_ready(page) -> None:
    """Wait until the app is mounted and its script run has finished."""
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stApp")).to_be_attached()
    expect(page.locator('[data-test-script-state="notRunning"]')).to_be_attached()


_CONTENT_HEIGHT_JS = """() => {
    // Streamlit scrolls inside its own containers, so full_page alone stops at the viewport.
    let h = document.documentElement.scrollHeight;
    for (const el of document.querySelectorAll("*")) {
        const oy = getComputedStyle(el).overflowY;
        if ((oy === "auto" || oy === "scroll") && el.scrollHeight > el.clientHeight) {
            h = Math.max(h, el.getBoundingClientRect().top + el.scrollHeight);
        }
    }
    return Math.ceil(h);
}"""
MAX_SCREENSHOT_HEIGHT = 10_000


def screenshot(page, name: str) -> Path:
    """Full-page PNG into ``test-artifacts/screenshots/<name>.png`` (repo root).

    The viewport is stretched to the content's height for the shot (Streamlit's main area
    scrolls internally) and put back to 1280×800 afterwards.
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    size = page.viewport_size or VIEWPORT
    height = min(max(page.evaluate(_CONTENT_HEIGHT_JS), size["height"]), MAX_SCREENSHOT_HEIGHT)
    try:
        page.set_viewport_size({"width": size["width"], "height": height})
        page.wait_for_timeout(300)  # let charts re-lay out at the new size
        page.screenshot(path=str(path), full_page=True)
    finally:
        page.set_viewport_size(size)
    return path


# Per chart: the margins sent, drawn and needed ([left, bottom, right]), as
# bench/chart_margins.py reads them (one script for both).
sys.path.insert(0, str(ROOT / "bench"))
from chart_margins import MARGINS_JS  # noqa: E402

MARGIN_SLACK_PX = 6  # at most this much wider than plotly measured (the estimate's own: 2-3 px)


def assert_charts_laid_out_once(page, where: str) -> None:
    """Each chart on the page was drawn once: the margins it was sent with
    (kvview.figures.margins) are those plotly's automargin needs at this width, so plotly did
    not draw, measure and draw it again (half of a chart's browser time on every input change;
    bench/README.md, Session 28), and they are at most a few pixels wider than it needs.  Only
    the left and bottom margins are estimated (Measured's gap histogram asks for a few more
    pixels on the right for its last tick label)."""
    for chart in page.evaluate(MARGINS_JS):
        left, bottom = chart["sent"][:2]
        assert chart["drawn"][:2] == [left, bottom], (
            f"{where} '{chart['title']}': sent l/b {chart['sent']}, plotly drew with "
            f"{chart['drawn']} (it measured {chart['need']}): the chart was laid out twice"
        )
        need_l, need_b = chart["need"][:2]
        assert left - need_l <= MARGIN_SLACK_PX and bottom - need_b <= MARGIN_SLACK_PX, (
            f"{where} '{chart['title']}': margins l/b {chart['sent']} where plotly needs "
            f"{chart['need']}: wasted room"
        )


@pytest.fixture(name="wait_ready")
def wait_ready_fixture():
    return wait_ready


@pytest.fixture(name="screenshot")
def screenshot_fixture():
    return screenshot


@pytest.fixture(name="outside_requests")
def outside_requests_fixture():
    return outside_requests
