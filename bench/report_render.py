#!/usr/bin/env python3
"""HTML report rendering: time to the first render of the summary in Chromium, file size.

Run by hand (never from tests):

    .venv/bin/python bench/report_render.py [--jobs 10,100,1000] [--reps 5] [--runs 1]

For each job count it writes a synthetic report (``bench/synth_report.py``: the real
``ReportWriter``, 25 tool calls per run, seed 0), writes ``report.html`` with
``axis_eval.report.html.write_html`` (timed), and opens the file ``--reps`` times in
headless Chromium (Debian's ``chromium`` launched exactly as the tests launch it, each open
in a fresh browser context), reading from the page itself:

- summary: ``performance.mark("axis:summary-rendered")``'s startTime, i.e. navigation start
  → the page's script has rendered the summary (the target: < 2 s at 1,000 jobs);
- FCP: the first contentful paint, DOMContentLoaded and load (navigation timing);
- elements: ``document.getElementsByTagName('*').length`` before anything is expanded.

Times are medians over the reps; the table is Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright
from synth_report import write_synthetic_report

from axis_eval.report.html import write_html

REPO = Path(__file__).resolve().parents[1]
TARGET_MS = 2000.0
MARK = "axis:summary-rendered"

TIMINGS_JS = """() => {
  const mark = performance.getEntriesByName('MARK')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {
    summary: mark ? mark.startTime : null,
    fcp: fcp ? fcp.startTime : null,
    dcl: nav.domContentLoadedEventEnd,
    load: nav.loadEventEnd,
    elements: document.getElementsByTagName('*').length,
  };
}""".replace("MARK", MARK)


def _browser_helpers() -> ModuleType:
    """tests/report_html/conftest.py: the same launch flags as the browser tests."""
    path = REPO / "tests" / "report_html" / "conftest.py"
    spec = importlib.util.spec_from_file_location("axis_report_html_browser", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def measure(browser: Any, html: Path, reps: int) -> dict[str, float | None]:
    """Median timings (ms) and the element count over ``reps`` fresh opens."""
    samples: list[dict[str, float | None]] = []
    for _ in range(reps):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.goto(html.as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_function(
                f"performance.getEntriesByName('{MARK}').length > 0", timeout=120_000
            )
            try:  # the paint entry may trail the script that set the mark
                page.wait_for_function(
                    "performance.getEntriesByName('first-contentful-paint').length > 0",
                    timeout=5_000,
                )
            except PlaywrightTimeout:
                pass
            samples.append(page.evaluate(TIMINGS_JS))
        finally:
            context.close()
    return {k: _median([s[k] for s in samples]) for k in samples[0]}


def _median(values: list[float | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", default="10,100,1000", help="comma-separated job counts")
    parser.add_argument("--reps", type=int, default=5, help="opens per job count (median)")
    parser.add_argument("--runs", type=int, default=1, help="runs per pair (odd, as --runs)")
    parser.add_argument("--keep", type=Path, help="keep the reports in this folder")
    args = parser.parse_args()
    counts = [int(n) for n in args.jobs.split(",")]

    helpers = _browser_helpers()
    executable = helpers.find_chromium()
    if executable is None:
        print("chromium is missing (`make system-deps`)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="axis-render-bench-") as scratch:
        rows = run(helpers, executable, counts, args, args.keep or Path(scratch))
    print(
        "| jobs | report.html | per job | write_html | summary rendered | first paint "
        "| DOMContentLoaded | load | DOM elements | < 2 s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    print("\n".join(rows))
    return 0


def run(
    helpers: ModuleType, executable: str, counts: list[int], args: argparse.Namespace, root: Path
) -> list[str]:
    """One Markdown row per job count; the reports are written under ``root``."""
    rows: list[str] = []
    with sync_playwright() as pw:
        browser = helpers.launch_chromium(pw, executable)
        try:
            warm = browser.new_page()  # the browser's own start-up is not the report's cost
            warm.goto("about:blank")
            warm.close()
            print(
                f"# {platform.node()}: {_cpu()}, {os.cpu_count()} cores, "
                f"Python {platform.python_version()}, chromium {browser.version} "
                f"({executable}), {args.reps} reps, {args.runs} run(s) per pair",
                file=sys.stderr,
            )
            for jobs in counts:
                t0 = time.perf_counter()
                folder = write_synthetic_report(
                    root / f"jobs-{jobs}", jobs, runs_per_pair=args.runs, seed=0
                )
                t1 = time.perf_counter()
                html = write_html(folder)
                t2 = time.perf_counter()
                size = html.stat().st_size
                m = measure(browser, html, args.reps)
                summary = m["summary"]
                verdict = "✓" if summary is not None and summary < TARGET_MS else "✗"
                rows.append(
                    f"| {jobs:,} | {size / 1e6:.2f} MB | {size / jobs / 1024:.1f} KiB "
                    f"| {_ms((t2 - t1) * 1000)} | {_ms(summary)} | {_ms(m['fcp'])} "
                    f"| {_ms(m['dcl'])} | {_ms(m['load'])} | {m['elements'] or 0:,.0f} "
                    f"| {verdict} |"
                )
                print(
                    f"jobs={jobs}: synth {t1 - t0:.1f}s, write_html {t2 - t1:.2f}s, {rows[-1]}",
                    file=sys.stderr,
                )
        finally:
            browser.close()
    return rows


if __name__ == "__main__":
    sys.exit(main())
