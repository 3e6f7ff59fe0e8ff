"""report.html in headless Chromium: what a reader sees, lazy transcripts, scale, no network."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from axis_eval.report.html import write_html

from ._project import REPO, Reports, expected_cells, shared_reports
from .helpers import OpenedPage, OpenReport

pytestmark = pytest.mark.slow  # drives headless Chromium through Playwright

FIELDS = ("axisScore", "goalAchievement", "environment", "service", "agent")

BYTES_PER_JOB = 24 * 1024
"""The size budget per job (docs/reports.md): a 25-interaction job of the synthetic report."""
FIXED_BYTES = 64 * 1024
"""Style, script, header and the per-agent chart, whatever the job count."""
ELEMENTS_PER_PAIR = 20
ELEMENTS_FIXED = 300
"""DOM bound before any expansion: 20 elements per pair + 300 (a little above what the page
makes, so a regression shows; the measured count is in docs/benchmarks.md)."""

ROWS_JS = """() => [...document.querySelectorAll('#summary tr.pair-row')].map(r => {
  const out = {'@scenario': r.dataset.scenario, '@agent': r.dataset.agent};
  for (const f of FIELDS) out[f] = r.querySelector(`td[data-field="${f}"]`).textContent;
  return out;
})""".replace("FIELDS", json.dumps(FIELDS))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    return shared_reports(tmp_path_factory)


def pairs_of(folder: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((folder / "report.json").read_text())["results"]
    return data


def open_pair(opened: OpenedPage, scenario: str, agent: str) -> Any:
    detail = opened.page.locator(
        f'[data-pair-detail][data-scenario="{scenario}"][data-agent="{agent}"]'
    )
    detail.locator("summary").click()
    opened.page.wait_for_selector(
        f'[data-pair-detail][data-scenario="{scenario}"][data-rendered="true"]'
    )
    return detail


def test_summary_values_equal_report_json(reports: Reports, open_report: OpenReport) -> None:
    opened = open_report(write_html(reports.scored))
    page = opened.page
    rows = page.evaluate(ROWS_JS)
    pairs = pairs_of(reports.scored)
    assert rows == [
        {"@scenario": p["scenarioKey"], "@agent": p["agentName"], **expected_cells(p)}
        for p in pairs
    ]
    assert page.get_attribute("html", "data-axis-report") == reports.scored.name
    marks = page.evaluate("performance.getEntriesByName('axis:summary-rendered').length")
    assert marks == 1
    opened.assert_clean()


def test_transcript_enters_the_dom_only_when_expanded(
    reports: Reports, open_report: OpenReport
) -> None:
    opened = open_report(write_html(reports.scored))
    page = opened.page
    count = "document.querySelectorAll('.transcript .entry').length"
    assert page.evaluate(count) == 0
    detail = open_pair(opened, "words", "scripted")
    assert page.evaluate(count) == 0  # the pair is open, its transcripts are not
    assert detail.locator(".transcript").count() == 3
    detail.locator('button[data-action="show-transcript"][data-run-index="3"]').click()
    page.wait_for_selector('.transcript[data-run-index="3"] .entry')
    run3 = next(r for r in pairs_of(reports.scored) if r["scenarioKey"] == "words")["runs"][2]
    entries = json.loads((reports.scored / run3["dir"] / "transcript.json").read_text())["entries"]
    assert page.evaluate(count) == len(entries)
    # untrusted text arrives as text: the hostile tool output shows, no <img> was made
    assert "onerror=alert(1)" in detail.locator('.transcript[data-run-index="3"]').inner_text()
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    opened.assert_clean()


def test_representative_marker_sits_on_the_median_run(
    reports: Reports, open_report: OpenReport
) -> None:
    opened = open_report(write_html(reports.scored))
    pair = next(p for p in pairs_of(reports.scored) if p["scenarioKey"] == "words")
    assert pair["representativeRunIndex"] == 3
    detail = open_pair(opened, "words", "scripted")
    marked = detail.locator('tr.run-row[data-representative="true"]')
    assert marked.count() == 1
    assert marked.get_attribute("data-run-index") == str(pair["representativeRunIndex"])
    assert "representative" in marked.inner_text()
    assert detail.locator("tr.run-row").count() == 3
    crash = open_pair(opened, "crash", "scripted")  # every run failed: nobody is marked
    assert crash.locator('tr.run-row[data-representative="true"]').count() == 0
    assert "the agent crashed on purpose" in crash.inner_text()
    opened.assert_clean()


def test_unscored_report_opens_cleanly(reports: Reports, open_report: OpenReport) -> None:
    opened = open_report(write_html(reports.unscored))
    rows = opened.page.evaluate(ROWS_JS)
    assert rows == [
        {"@scenario": p["scenarioKey"], "@agent": p["agentName"], **expected_cells(p)}
        for p in pairs_of(reports.unscored)
    ]
    for pair in pairs_of(reports.unscored):
        open_pair(opened, pair["scenarioKey"], pair["agentName"])
    opened.page.locator("#config summary").click()
    opened.page.wait_for_selector("#config pre")
    opened.assert_clean()


def test_screenshots_light_and_dark(
    reports: Reports, open_report: OpenReport, artifact_dir: Path
) -> None:
    colours = {}
    for scheme in ("light", "dark"):
        opened = open_report(write_html(reports.scored), color_scheme=scheme)
        detail = open_pair(opened, "words", "scripted")
        detail.locator('button[data-action="show-transcript"][data-run-index="3"]').click()
        opened.page.wait_for_selector('.transcript[data-run-index="3"] .entry')
        shot = artifact_dir / f"report-html-{scheme}.png"
        opened.page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        colours[scheme] = opened.page.evaluate("getComputedStyle(document.body).backgroundColor")
        opened.assert_clean()
    assert colours["light"] != colours["dark"]


@pytest.fixture(scope="module")
def thousand_jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from synth_report import write_synthetic_report
    finally:
        sys.path.remove(str(REPO / "bench"))
    folder: Path = write_synthetic_report(tmp_path_factory.mktemp("synth"), 1000, seed=8)
    return folder


@pytest.mark.slow
def test_a_thousand_jobs_stay_small(thousand_jobs: Path, open_report: OpenReport) -> None:
    page_file = write_html(thousand_jobs)
    pairs = pairs_of(thousand_jobs)
    jobs = sum(len(p["runs"]) for p in pairs)
    assert jobs == 1000
    size = page_file.stat().st_size
    assert size <= FIXED_BYTES + BYTES_PER_JOB * jobs, f"{size / jobs:.0f} bytes per job"
    opened = open_report(page_file)
    page = opened.page
    elements = page.evaluate("document.getElementsByTagName('*').length")
    assert elements <= ELEMENTS_PER_PAIR * len(pairs) + ELEMENTS_FIXED, elements
    assert page.evaluate("document.querySelectorAll('.transcript, .entry, tr.run-row').length") == 0
    rows = page.evaluate(ROWS_JS)
    assert rows == [
        {"@scenario": p["scenarioKey"], "@agent": p["agentName"], **expected_cells(p)}
        for p in pairs
    ]
    # the last pair still opens, and its transcript decodes on demand
    last = next(p for p in reversed(pairs) if p["status"] == "completed")
    detail = open_pair(opened, last["scenarioKey"], last["agentName"])
    detail.locator('button[data-action="show-transcript"]').first.click()
    page.wait_for_selector(".transcript .entry")
    opened.assert_clean()


DURATION = r"(\d+ms|\d+\.\d+s|\d+m\d\ds|\?)"
"""What the page's ``ms()`` writes."""


def test_a_tool_entry_header_reads_type_time_tool_duration(
    reports: Reports, open_report: OpenReport
) -> None:
    """``tool_call · +12ms · Bash · 864ms``: no ``null`` where an entry has no error."""
    opened = open_report(write_html(reports.scored))
    detail = open_pair(opened, "words", "scripted")
    detail.locator('button[data-action="show-transcript"][data-run-index="3"]').click()
    opened.page.wait_for_selector('.transcript[data-run-index="3"] .entry')
    heads = detail.locator('.transcript[data-run-index="3"] .entry-head').all_inner_texts()
    run3 = next(r for r in pairs_of(reports.scored) if r["scenarioKey"] == "words")["runs"][2]
    entries = json.loads((reports.scored / run3["dir"] / "transcript.json").read_text())["entries"]
    assert len(heads) == len(entries)
    tools = 0
    for head, entry in zip(heads, entries, strict=True):
        pattern = re.escape(entry["type"]) + r" · \+" + DURATION
        tool = entry.get("tool")
        if tool is not None:
            tools += 1
            pattern += r" · " + re.escape(tool["name"])
            pattern += "" if tool.get("durationMs") is None else r" · " + DURATION
            pattern += r" · error" if tool.get("isError") else ""
        assert re.fullmatch(pattern, head), (head, entry)
        assert "null" not in head and "undefined" not in head
    assert tools == 3
    opened.assert_clean()
