"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from helpers.system_parts import not_run

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Route


REPO = Path(__file__).resolve().parents[3]


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


def chromium_session(extra_args: Sequence[str] = ()) -> Iterator[Browser]:
    """A Playwright driver and one headless chromium for a fixture to yield from (skips
    loudly, or fails under CI=true, without chromium or playwright); both stopped after."""
    executable = find_chromium()
    if executable is None:
        unavailable("chromium is missing (`make system-deps` installs Debian's chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is missing (`pip install -e '.[dev]'`)")
    driver = sync_playwright().start()
    try:
        browser = launch_chromium(driver, executable, extra_args)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        driver.stop()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


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
