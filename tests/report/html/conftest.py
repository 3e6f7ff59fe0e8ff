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

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Playwright

from .helpers import (
    ARTIFACTS,
    ColorScheme,
    OpenedPage,
    OpenReport,
    _loop_running,
    _watch,
    find_chromium,
    launch_chromium,
    load_synth,
    unavailable,
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


@pytest.fixture(autouse=True)
def _no_async_tests_beside_the_browser(request: pytest.FixtureRequest) -> None:
    """Say plainly why an ``async def`` test here would fail once the browser is up."""
    if inspect.iscoroutinefunction(request.function) and _loop_running():
        pytest.fail("no async tests in tests/report/html: Playwright's loop is running here")


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


@pytest.fixture(scope="session")
def artifact_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def synthetic_report() -> Callable[..., Path]:
    write: Callable[..., Path] = load_synth().write_synthetic_report
    return write
