"""Headless Chromium for the HTML report tests: Debian's ``chromium`` driven by Playwright.

Playwright's own browser downloads are never used: the browser is the system's chromium
(``executable_path``; ``make system-deps`` installs it). When chromium or the ``playwright``
package is missing the browser tests skip LOUDLY, and fail under ``CI=true``.

Fixtures (all sync: the sync Playwright API refuses to run inside a running event loop, so
browser tests are plain ``def`` tests, and no test in this folder is ``async def``: while
the browser is up, Playwright's loop counts as running in this thread):

``pw`` (package)
    The ``playwright.sync_api.Playwright`` driver (one per thread: launch any extra browser
    from it with :func:`launch_chromium`, never a second ``sync_playwright()``).

``chromium`` (package)
    A ``playwright.sync_api.Browser``: headless, ``--no-sandbox`` (as root), every flag that
    stops background networking (:data:`QUIET_FLAGS`), and a host resolver that resolves
    nothing, so a request that slipped past the routing still cannot leave the machine.

``open_report`` (function)
    ``open_report(path, *, color_scheme="light", viewport=None, wait_until="load")`` →
    :class:`OpenedPage`. Opens ``file://`` + ``path`` in a fresh browser context and returns
    once ``wait_until`` fired:

    - ``.page``: the Playwright ``Page``;
    - ``.console_errors``: ``list[str]``, every ``console.error`` (``"console: TEXT"``) and
      every uncaught exception (``"pageerror: Error: MESSAGE"``), in order, kept up to date;
    - ``.blocked_requests``: ``list[str]``, each URL (once, in order) the page asked for
      that is not ``file:``, ``data:``, ``blob:`` or ``about:`` (aborted, never sent), and
      each WebSocket it tried to open; empty means the page is self-contained;
    - ``.assert_clean()``: asserts both lists are empty, printing them when not.

    Pages and contexts are closed at teardown.

``artifact_dir`` (session)
    ``tests/.artifacts/`` (created; git-ignored): screenshots a person can look at.

``synthetic_report`` (session)
    ``bench/synth_report.py``'s ``write_synthetic_report(config_dir, jobs, *,
    runs_per_pair=1, interactions=25, seed=0) -> Path``: a valid report folder of any size,
    written by the real ``ReportWriter`` (no browser needed; never skips).

``bench/report_render.py`` launches the browser through :func:`launch_chromium` too.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import pytest

from system_parts import not_run

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Route

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / ".artifacts"

ColorScheme = Literal["light", "dark", "no-preference"]

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
"""What a self-contained report may load; anything else is aborted and recorded."""

OUR_DISABLED_FEATURES = ("Translate", "OptimizationHints", "MediaRouter")
"""Features that phone home, merged into Playwright's own ``--disable-features`` list."""

QUIET_FLAGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--metrics-recording-only",
    "--no-pings",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    # Measured on chromium 156 (a NetLog of an idle session): with every flag above it still
    # POSTs to accounts.google.com (ListAccounts, no flag stops it) and to
    # update.googleapis.com (the on-device model manifest, despite
    # --disable-component-update). Resolving no host at all stops both before any DNS packet
    # leaves; a report is a file:// page and needs no host.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # and the component updater's checks go to a closed loopback port rather than Google.
    "--component-updater=url-source=http://127.0.0.1:9/",
    # Browser.getBrowserCommandLine answers only with this: a test reads the real switches.
    "--enable-automation",
)


def unavailable(reason: str) -> NoReturn:
    """Skip loudly, or fail under CI=true."""
    not_run("HTML REPORT BROWSER TEST", reason)


def find_chromium() -> str | None:
    """``$AXIS_CHROMIUM``, else ``chromium`` on PATH (Debian's launcher, /usr/bin/chromium)."""
    explicit = os.environ.get("AXIS_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("chromium")


_DEFAULT_FEATURES: dict[str, str] = {}


def _playwright_disabled_features(pw: Playwright, executable: str) -> str:
    """Playwright's own ``--disable-features=…`` switch, read off a probe launch.

    Chromium keeps only the last ``--disable-features`` on its command line, so passing ours
    beside Playwright's would silently drop one list. Playwright does not export its list, so
    a short first launch asks the browser which switches it really got (once per process).
    """
    if executable not in _DEFAULT_FEATURES:
        probe = pw.chromium.launch(
            executable_path=executable, headless=True, args=["--enable-automation"]
        )
        try:
            switches = command_line(probe)
        finally:
            probe.close()
        found = [s for s in switches if s.startswith("--disable-features=")]
        _DEFAULT_FEATURES[executable] = found[-1] if found else ""
    return _DEFAULT_FEATURES[executable]


def command_line(browser: Browser) -> list[str]:
    """The switches the browser process runs with (needs ``--enable-automation``)."""
    session = browser.new_browser_cdp_session()
    try:
        answer = session.send("Browser.getBrowserCommandLine")
    finally:
        session.detach()
    return [str(a) for a in answer["arguments"]]


def launch_chromium(pw: Playwright, executable: str, extra_args: Sequence[str] = ()) -> Browser:
    """Headless chromium with :data:`QUIET_FLAGS` and one merged ``--disable-features``."""
    default = _playwright_disabled_features(pw, executable)
    names = [n for n in default.partition("=")[2].split(",") if n]
    names += [n for n in OUR_DISABLED_FEATURES if n not in names]
    args = [*QUIET_FLAGS, "--disable-features=" + ",".join(names), *extra_args]
    if os.geteuid() == 0:
        # chromium refuses to start as root with its sandbox (Playwright adds the switch too
        # unless chromium_sandbox=True; said here so it never depends on that default)
        args.append("--no-sandbox")
    return pw.chromium.launch(
        executable_path=executable,
        headless=True,
        args=args,
        ignore_default_args=[default] if default else None,
    )


# Package scope, not session: between its sync calls Playwright marks its event loop as
# running in this thread (playwright/_impl/_greenlets.py, wait_for_future), and every
# pytest-asyncio test run while it is up fails ("Cannot run the event loop while another
# loop is running"). Stopped when this folder's tests end, it clears the mark.
@pytest.fixture(scope="package")
def pw() -> Iterator[Playwright]:
    """The Playwright driver: one per thread, so extra browsers launch from it."""
    if find_chromium() is None:
        unavailable("chromium is missing (`make system-deps` installs Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is missing (`pip install -e '.[dev]'`)")
    if _loop_running():
        pytest.fail("the browser fixtures need a sync test: `def test_…`, not `async def`")
    driver = sync_playwright().start()
    try:
        yield driver
    finally:
        driver.stop()


@pytest.fixture(scope="package")
def chromium(pw: Playwright) -> Iterator[Browser]:
    from playwright.sync_api import Error

    executable = find_chromium()
    assert executable is not None  # pw skipped otherwise
    try:
        browser = launch_chromium(pw, executable)
    except Error as exc:
        unavailable(f"{executable} did not start under Playwright: {exc}")
    try:
        yield browser
    finally:
        browser.close()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture(autouse=True)
def _no_async_tests_beside_the_browser(request: pytest.FixtureRequest) -> None:
    """Say plainly why an ``async def`` test here would fail once the browser is up."""
    if inspect.iscoroutinefunction(request.function) and _loop_running():
        pytest.fail("no async tests in tests/report_html: Playwright's loop is running here")


@dataclass
class OpenedPage:
    """A report opened in its own browser context (see the module docstring)."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    blocked_requests: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        """No console error, no uncaught exception, no request that would leave the file."""
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not self.blocked_requests, f"requests outside the file: {self.blocked_requests}"


OpenReport = Callable[..., OpenedPage]


@pytest.fixture
def open_report(chromium: Browser) -> Iterator[OpenReport]:
    contexts: list[BrowserContext] = []

    def open_(
        path: Path,
        *,
        color_scheme: ColorScheme = "light",
        viewport: dict[str, int] | None = None,
        wait_until: Literal["commit", "domcontentloaded", "load", "networkidle"] = "load",
    ) -> OpenedPage:
        context = chromium.new_context(
            color_scheme=color_scheme,
            viewport=viewport or {"width": 1280, "height": 900},  # type: ignore[typeddict-item]
            service_workers="block",
        )
        contexts.append(context)
        page = context.new_page()
        opened = OpenedPage(page)
        _watch(context, page, opened)
        page.goto(Path(path).resolve().as_uri(), wait_until=wait_until)
        return opened

    yield open_
    for context in contexts:
        for page in context.pages:
            page.close()
        context.close()


def _watch(context: BrowserContext, page: Page, opened: OpenedPage) -> None:
    def record(url: str) -> None:
        if url not in opened.blocked_requests:  # the route and the request event both see it
            opened.blocked_requests.append(url)

    def on_route(route: Route) -> None:
        url = route.request.url
        if url.startswith(LOCAL_SCHEMES):
            route.continue_()
            return
        record(url)
        route.abort("blockedbyclient")

    def on_request(request: Any) -> None:
        # A network URL that reaches the page without passing the route (a prefetch, a
        # beacon) is recorded all the same; the host resolver still stops it.
        url = str(request.url)
        if not url.startswith(LOCAL_SCHEMES):
            record(url)

    def on_console(message: Any) -> None:
        if message.type == "error":
            where = (message.location or {}).get("url", "")
            opened.console_errors.append(
                f"console: {message.text}" + (f" ({where})" if where else "")
            )

    context.route("**/*", on_route)
    page.on("request", on_request)
    page.on("websocket", lambda ws: record(str(ws.url)))
    page.on("console", on_console)

    def on_pageerror(error: Any) -> None:
        name = getattr(error, "name", "") or ""  # TypeError, SyntaxError …
        message = getattr(error, "message", None) or str(error)
        opened.console_errors.append(f"pageerror: {name + ': ' if name else ''}{message}")

    page.on("pageerror", on_pageerror)


@pytest.fixture(scope="session")
def artifact_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def load_synth() -> ModuleType:
    """``bench/synth_report.py`` as a module (bench/ is no package; sys.path is left alone)."""
    name = "axis_bench_synth_report"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "bench" / "synth_report.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def synthetic_report() -> Callable[..., Path]:
    write: Callable[..., Path] = load_synth().write_synthetic_report
    return write
