"""The browser fixtures and the synthetic report generator the HTML report tests stand on.

Browser tests use tiny pages written here; they prove the fixtures record what they claim
(console errors, uncaught exceptions, requests leaving the file, performance marks) and that
the browser itself stays off the network. The generator tests prove a synthetic report is a
report the real code reads back, with consistent files and a representative per pair.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import axis_eval
from axis_eval.report.models import RunResult
from axis_eval.runs.aggregate import composite
from axis_eval.runs.store import read_manifest
from axis_eval.scoring.composite import score_from_verdicts
from axis_eval.scoring.models import JudgeVerdicts
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import build_sparse_index

from .helpers import (
    OUR_DISABLED_FEATURES,
    QUIET_FLAGS,
    OpenedPage,
    command_line,
    find_chromium,
    launch_chromium,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

OpenReport = Callable[..., OpenedPage]


def page(folder: Path, body: str, name: str = "page.html") -> Path:
    path = folder / name
    path.write_text(
        f"<!doctype html><html><head><meta charset=utf-8></head><body>{body}</body></html>"
    )
    return path


# --- the browser fixtures -------------------------------------------------------------------


def test_console_errors_and_uncaught_exceptions_are_recorded(
    open_report: OpenReport, tmp_path: Path
) -> None:
    clean = open_report(page(tmp_path, "<p>fine</p><script>console.log('just a log')</script>"))
    clean.assert_clean()
    noisy = open_report(
        page(
            tmp_path,
            "<script>console.warn('only a warning'); console.error('boom', 42);</script>"
            "<script>throw new Error('kaboom');</script>",
            "noisy.html",
        )
    )
    assert noisy.console_errors[0].startswith("console: boom 42")
    assert noisy.console_errors[1:] == ["pageerror: Error: kaboom"]
    with pytest.raises(AssertionError, match="boom 42"):
        noisy.assert_clean()


def test_requests_that_leave_the_file_are_blocked_and_recorded(
    open_report: OpenReport, tmp_path: Path
) -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="3"></svg>'
    (tmp_path / "dot.svg").write_text(svg)
    opened = open_report(
        page(
            tmp_path,
            '<img id=local src="dot.svg"><img id=remote src="http://example.invalid/x.png">'
            '<img id=inline src="data:image/svg+xml,' + svg.replace('"', "'") + '">'
            "<script>window.fetched = fetch('https://example.invalid/api?q=1')"
            ".then(() => 'answered', () => 'refused');</script>",
        )
    )
    p = opened.page
    assert p.evaluate("window.fetched") == "refused"
    widths = p.evaluate(
        "['local', 'remote', 'inline'].map(id => document.getElementById(id).naturalWidth)"
    )
    assert widths == [4, 0, 4]
    assert sorted(opened.blocked_requests) == [
        "http://example.invalid/x.png",
        "https://example.invalid/api?q=1",
    ]
    with pytest.raises(AssertionError, match=r"example\.invalid"):
        opened.assert_clean()


def test_a_performance_mark_and_navigation_timings_are_readable(
    open_report: OpenReport, tmp_path: Path
) -> None:
    opened = open_report(
        page(
            tmp_path,
            # The mark is made on `load`, which the browser fires only after
            # DOMContentLoaded has ended: an inline requestAnimationFrame may run
            # before it (seen on a loaded CI box), so it could not be ordered.
            "<div id=summary></div><script>addEventListener('load', () => {"
            "document.getElementById('summary').textContent = 'ready';"
            "performance.mark('axis:summary-rendered'); });</script>",
        )
    )
    p = opened.page
    p.wait_for_function("performance.getEntriesByName('axis:summary-rendered').length > 0")
    timings = p.evaluate(
        """() => {
          const mark = performance.getEntriesByName('axis:summary-rendered')[0];
          const nav = performance.getEntriesByType('navigation')[0];
          return {mark: mark.startTime, dcl: nav.domContentLoadedEventEnd,
                  now: performance.now()};
        }"""
    )
    assert 0 < timings["dcl"] <= timings["mark"] <= timings["now"]
    assert p.text_content("#summary") == "ready"
    opened.assert_clean()


def test_colour_scheme_is_light_unless_asked(open_report: OpenReport, tmp_path: Path) -> None:
    path = page(tmp_path, "<p>x</p>")
    dark = "matchMedia('(prefers-color-scheme: dark)').matches"
    assert open_report(path).page.evaluate(dark) is False
    assert open_report(path, color_scheme="dark").page.evaluate(dark) is True


def test_the_browser_runs_with_the_quiet_switches(chromium: Browser) -> None:
    switches = command_line(chromium)
    features = [s for s in switches if s.startswith("--disable-features=")]
    assert len(features) == 1, features  # chromium keeps only the last one
    names = features[0].partition("=")[2].split(",")
    assert set(OUR_DISABLED_FEATURES) <= set(names)
    assert len(names) > len(OUR_DISABLED_FEATURES)  # Playwright's own list was kept
    assert set(QUIET_FLAGS) <= set(switches)
    assert "--headless" in switches
    assert "--no-sandbox" in switches


NETWORK_EVENTS = {
    "HOST_RESOLVER_MANAGER_JOB",  # a real lookup (system or built-in resolver)
    "HOST_RESOLVER_SYSTEM_TASK",
    "DNS_TRANSACTION",  # a DNS query sent by the built-in client
    "UDP_BYTES_SENT",
    "TCP_CONNECT",
    "TCP_CONNECT_ATTEMPT",
    "SOCKET_BYTES_SENT",
}
"""NetLog events that mean a packet left (or was about to leave) the browser."""


@pytest.mark.slow
def test_nothing_leaves_the_machine_while_the_browser_idles(pw: Playwright, tmp_path: Path) -> None:
    """A NetLog of a whole session: page and background requests die at the resolver.

    Chromium 156 still asks accounts.google.com and update.googleapis.com on start-up with
    every flag Playwright passes; the host-resolver rule is what keeps them on the machine.
    The page's own fetch (not routed here) is the control: the log sees requests.
    """
    executable = find_chromium()
    assert executable is not None
    netlog = tmp_path / "netlog.json"
    target = page(tmp_path, "<script>fetch('http://example.invalid/ping').catch(() => 0)</script>")
    browser = launch_chromium(pw, executable, [f"--log-net-log={netlog}"])
    try:
        tab = browser.new_page()
        tab.goto(target.as_uri())
        time.sleep(3)  # start-up background requests come within the first second
    finally:
        browser.close()  # the NetLog is complete only now
    log = json.loads(netlog.read_text())
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    seen = {names[e["type"]] for e in log["events"]}
    urls = {str(e.get("params", {}).get("url", "")) for e in log["events"]}
    assert "http://example.invalid/ping" in urls  # the control
    assert seen & NETWORK_EVENTS == set()


# --- the synthetic report ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic(
    tmp_path_factory: pytest.TempPathFactory, synthetic_report: Callable[..., Path]
) -> Path:
    """60 runs: 20 pairs of 3 (3 agents), seed 0: some failed, one withheld."""
    return synthetic_report(tmp_path_factory.mktemp("synth"), 60, runs_per_pair=3, seed=0)


def config_dir_of(folder: Path) -> Path:
    return folder.parents[2]  # <config dir>/.axis/reports/<id>


def test_a_synthetic_report_reads_back_with_the_real_code(synthetic: Path) -> None:
    manifest = axis_eval.read_report(config_dir_of(synthetic), synthetic.name)
    assert manifest.state == "finished"
    assert manifest.summary.runs_total == 60
    assert manifest.summary.total == len(manifest.results) == 20
    assert {p.agent_name for p in manifest.results} == {
        "claude-code",
        "codex|gpt-5.5",
        "gemini|gemini-2.5-pro",
    }
    runs = [r for p in manifest.results for r in p.runs]
    assert len(runs) == 60
    for pair in manifest.results:
        for run in pair.runs:
            saved = RunResult.model_validate_json(
                (synthetic / run.dir / "result.json").read_bytes()
            )
            assert saved.run == run
            assert (saved.scenario_key, saved.agent_name) == (pair.scenario_key, pair.agent_name)
            for relative in saved.files.values():
                assert (synthetic / relative).is_file(), relative
    statuses = {r.status for r in runs}
    assert statuses == {"completed", "failed"}
    assert any(r.score is not None and r.score.withheld for r in runs)
    assert len({composite(r) for r in runs}) > 10  # scores vary


def test_synthetic_files_agree_with_each_other(synthetic: Path) -> None:
    """transcript → sparse index → verdicts → score: recomputed from disk, equal to the saved."""
    manifest = read_manifest(synthetic)
    scored = 0
    for pair in manifest.results:
        for run in pair.runs:
            saved = RunResult.model_validate_json(
                (synthetic / run.dir / "result.json").read_bytes()
            )
            if run.status != "completed":
                assert run.score is None and "verdicts" not in saved.files
                continue
            transcript = Transcript.model_validate_json(
                (synthetic / saved.files["transcript"]).read_bytes()
            )
            index = build_sparse_index(
                transcript, scenario_key=pair.scenario_key, agent_name=pair.agent_name
            )
            assert (synthetic / saved.files["sparseIndex"]).read_text() == index.render()
            assert len(transcript.tool_calls) == 25
            sizes = [len(c.output or "") for c in transcript.tool_calls]
            assert min(sizes) >= 60 and max(sizes) < 64 * 1024
            verdicts = JudgeVerdicts.model_validate_json(
                (synthetic / saved.files["verdicts"]).read_bytes()
            )
            assert score_from_verdicts(transcript, index, verdicts) == run.score
            scored += 1
    assert scored > 40


def test_tool_outputs_range_from_hundreds_of_bytes_to_kibibytes(synthetic: Path) -> None:
    sizes = [
        len(call.output or "")
        for path in synthetic.rglob("transcript.json")
        for call in Transcript.model_validate_json(path.read_bytes()).tool_calls
    ]
    assert statistics.median(sizes) > 300
    assert sum(s > 2048 for s in sizes) > len(sizes) // 20


def test_every_pair_with_a_scored_run_has_the_median_run_as_representative(
    synthetic: Path,
) -> None:
    manifest = read_manifest(synthetic)
    spread_seen = False
    for pair in manifest.results:
        assert pair.run_count == len(pair.runs) == 3
        scores = {r.run_index: c for r in pair.runs if (c := composite(r)) is not None}
        if not scores:
            assert pair.representative_run_index is None
            continue
        middle = statistics.median(scores.values())
        nearest = min(scores, key=lambda i: (abs(scores[i] - middle), i))
        assert pair.representative_run_index == nearest
        rep = next(r for r in pair.runs if r.run_index == nearest)
        assert pair.score == rep.score
        assert pair.file == f"{rep.dir}/result.json"
        spread_seen |= len(set(scores.values())) == 3
    assert spread_seen


def test_the_same_seed_writes_the_same_report(
    tmp_path: Path, synthetic_report: Callable[..., Path]
) -> None:
    def content(folder: Path) -> list[Any]:
        data = json.loads((folder / "report.json").read_text())
        return [p["runs"] for p in data["results"]]

    a = synthetic_report(tmp_path / "a", 6, runs_per_pair=3, interactions=5, seed=7)
    b = synthetic_report(tmp_path / "b", 6, runs_per_pair=3, interactions=5, seed=7)
    c = synthetic_report(tmp_path / "c", 6, runs_per_pair=3, interactions=5, seed=8)
    assert content(a) == content(b)
    assert content(a) != content(c)


def test_jobs_must_be_a_multiple_of_the_runs_per_pair(
    tmp_path: Path, synthetic_report: Callable[..., Path]
) -> None:
    with pytest.raises(ValueError, match="multiple"):
        synthetic_report(tmp_path, 10, runs_per_pair=3)
