"""``axis view`` in real Chromium: a real :class:`ViewServer` on 127.0.0.1 and the static export.

Four synthetic reports (``bench/synth_report.py``, three runs per pair, so spreads exist) are
written into one project, a second apart (ids are timestamps): 2, 4, 6 and 6 pairs, so the
oldest lacks one agent. The newest has hostile markup written into one representative
transcript, and a baseline is set from the oldest (the history chart's band). Every
expectation is read from the report folders' own files (``report.json``, ``transcript.json``,
the baseline file) or from ``axis reports diff --json``. Every page is watched: no console
error, no CSP warning, no page error, no request off 127.0.0.1 (export: off ``file:``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import pytest

from axis_eval.transcript.models import Transcript
from axis_eval.view import App, Catalog, ViewServer, export_pages
from report.html.helpers import ARTIFACTS, chromium_session, load_synth

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.slow  # headless Chromium through Playwright, two `axis` subprocesses

AXIS = Path(sys.executable).with_name("axis")
LOCAL = ("file:", "data:", "about:")
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
LINK = '<a href="javascript:window.__pwned=1">javascript:window.__pwned=1</a>'
HOSTILE = f"{SCRIPT} {IMG} {LINK}"
REPORTS = ((6, 1), (12, 2), (18, 3), (18, 4))
"""(jobs, seed) of each report, oldest first; seeds 2 → 3 give regressions and improvements."""


@dataclass
class Site:
    config: Path
    ids: list[str]  # oldest first; the last one is the hostile report
    catalog: Catalog
    url: str
    pair: tuple[str, str]  # a pair in every report (the hostile run is its newest)

    def report(self, rid: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self._folder(rid) / "report.json").read_text())
        return data

    def _folder(self, rid: str) -> Path:
        return self.config / ".axis" / "reports" / rid

    def entry(self, rid: str, scenario: str, agent: str) -> dict[str, Any]:
        found: list[dict[str, Any]] = [
            p
            for p in self.report(rid)["results"]
            if (p["scenarioKey"], p["agentName"]) == (scenario, agent)
        ]
        assert len(found) == 1, (rid, scenario, agent)
        return found[0]

    def transcript(self, rid: str, scenario: str, agent: str) -> Path:
        """The representative run's transcript (the first run's when none represents)."""
        p = self.entry(rid, scenario, agent)
        runs = p["runs"]
        run = next((r for r in runs if r["runIndex"] == p["representativeRunIndex"]), runs[0])
        return self._folder(rid) / str(run["dir"]) / "transcript.json"


def _make_hostile(site: Site, rid: str) -> None:
    path = site.transcript(rid, *site.pair)
    transcript = Transcript.model_validate_json(path.read_bytes())
    text = next(e for e in transcript.entries if e.type == "assistant")
    call = next(e.tool for e in transcript.entries if e.tool is not None)
    text.text = HOSTILE
    call.input, call.output = {"command": IMG}, HOSTILE
    path.write_text(transcript.model_dump_json(by_alias=True, indent=2))


def _axis(*args: str) -> str:
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(AXIS), *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    synth = load_synth()
    config = tmp_path_factory.mktemp("view") / "proj"
    ids = []
    for n, (jobs, seed) in enumerate(REPORTS):
        if n:
            time.sleep(1.1)  # report ids are timestamps to the second
        folder = synth.write_synthetic_report(
            config, jobs, runs_per_pair=3, interactions=10, seed=seed
        )
        ids.append(folder.name)
    catalog = Catalog([config / ".axis" / "reports"], config)
    site = Site(config, ids, catalog, "", ("", ""))
    common = set.intersection(
        *({(p["scenarioKey"], p["agentName"]) for p in site.report(r)["results"]} for r in ids)
    )
    site.pair = sorted(common)[0]
    assert site.entry(ids[-1], *site.pair)["representativeRunIndex"] is not None
    _make_hostile(site, ids[-1])
    _axis("baseline", "set", "--from", ids[0], "-c", str(config))
    server = ViewServer(App(catalog), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    site.url = server.url
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    # the helpers' default resolves no host at all; the viewer lives on 127.0.0.1
    yield from chromium_session(["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"])


@dataclass
class Watched:
    page: Page
    allowed: tuple[str, ...]
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.requests, "no request was seen: the watcher is broken"
        off = [u for u in self.requests if not u.startswith(self.allowed)]
        assert not off, f"requests off {self.allowed}: {off}"
        bad = [
            f"{kind}: {text}"
            for kind, text in self.console
            if kind in ("error", "warning") or "Content Security Policy" in text
        ]
        assert not bad, bad
        assert not self.errors, self.errors


Opener = Callable[..., Watched]


@pytest.fixture
def opener(chromium: Browser, site: Site) -> Iterator[Opener]:
    contexts = []

    def open_(url: str, scheme: Any = "light", allowed: tuple[str, ...] | None = None) -> Watched:
        context = chromium.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        watched = Watched(page, allowed or (site.url, *LOCAL))
        context.on("request", lambda r: watched.requests.append(r.url))
        context.on("console", lambda m: watched.console.append((m.type, m.text)))
        page.on("pageerror", lambda e: watched.errors.append(str(e)))
        page.goto(url if "://" in url else site.url + url.lstrip("/"))
        return watched

    yield open_
    for context in contexts:
        context.close()


def _click(page: Page, target: Any) -> None:
    with page.expect_navigation():
        target.click()


def _query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def _newest_first(site: Site) -> list[str]:
    started = {rid: site.report(rid)["startedAt"] for rid in site.ids}
    return sorted(site.ids, key=lambda r: (started[r], r), reverse=True)


def test_list_is_newest_first_and_an_agent_chip_filters_it(site: Site, opener: Opener) -> None:
    w = opener("/")
    rows = w.page.locator("tr.report").evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert rows == _newest_first(site) and len(rows) == len(site.catalog.headlines()) == 4
    agents = {r: {p["agentName"] for p in site.report(r)["results"]} for r in site.ids}
    partial = sorted(
        {a for s in agents.values() for a in s if any(a not in s for s in agents.values())}
    )
    assert partial, "every report holds every agent: the filter cannot be told to narrow"
    agent = partial[0]
    chip = w.page.locator('a[data-filter="agent"]').filter(
        has_text=re.compile(f"^{re.escape(agent)}$")
    )
    _click(w.page, chip)
    assert _query(w.page) == {"agent": [agent]}
    shown = w.page.locator("tr.report").evaluate_all("rs => rs.map(r => r.dataset.id)")
    assert shown == [r for r in _newest_first(site) if agent in agents[r]]
    assert 0 < len(shown) < len(rows)
    assert f"{len(shown)} of {len(rows)} reports" in w.page.locator("main").inner_text()
    assert "on" in (w.page.locator('a[data-filter="agent"].on').get_attribute("class") or "")
    w.assert_clean()


def test_pair_history_points_spreads_band_and_a_click(site: Site, opener: Opener) -> None:
    scenario, agent = site.pair
    w = opener("/history/pair?" + urlencode({"scenario": scenario, "agent": agent}))
    page = w.page
    points = page.locator('circle.point[data-series="axisScore"]').evaluate_all(
        "cs => cs.map(c => [c.dataset.report, Number(c.dataset.value)])"
    )
    oldest_first = _newest_first(site)[::-1]
    expected, spreads = [], []
    for rid in oldest_first:
        p = site.entry(rid, scenario, agent)
        if p["score"] is not None and not p["score"]["withheld"]:
            expected.append([rid, float(p["score"]["axisScore"])])
        runs = [
            r["score"]["axisScore"]
            for r in p["runs"]
            if r["status"] == "completed" and r["score"] and not r["score"]["withheld"]
        ]
        if p["runCount"] > 1 and runs:
            spreads.append([rid, float(min(runs)), float(max(runs))])
    assert points == expected and len(points) >= 3
    drawn = page.locator("line.spread").evaluate_all(
        "ls => ls.map(l => [l.dataset.report, Number(l.dataset.low), Number(l.dataset.high)])"
    )
    assert drawn == spreads and len(drawn) == len(site.ids)
    assert any(low < high for _, low, high in drawn)
    base = json.loads((site.config / ".axis" / "baselines" / "default.json").read_text())
    entry = base["results"][scenario][agent]
    half = max(1.0, 2 * entry["stdev"]) if entry["stdev"] is not None else 1.0
    band = page.locator('rect.band[data-band="axisScore"]')
    assert band.count() == 1
    low, high = entry["axisScore"] - half, entry["axisScore"] + half
    assert band.locator("title").text_content() == f"baseline AXIS {low:.1f}–{high:.1f}"
    # click a point no other series' dot covers
    free = page.locator('circle.point[data-series="axisScore"]').evaluate_all(
        """cs => cs.map(c => { const b = c.getBoundingClientRect();
        return document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2) === c; })"""
    )
    assert any(free), "every AXIS point is covered by another series' dot"
    at = free.index(True)
    rid = points[at][0]
    _click(page, page.locator('circle.point[data-series="axisScore"]').nth(at))
    assert urlsplit(page.url).path == f"/report/{rid}"
    assert _query(page) == {"scenario": [scenario], "agent": [agent]}
    assert page.locator("h1").inner_text() == f"Report {rid}"
    assert page.locator("h2").inner_text() == f"Runs of {scenario} · {agent}"
    assert page.locator("tr.run").count() == site.entry(rid, scenario, agent)["runCount"]
    w.assert_clean()


def _diff_rows(page: Page) -> list[dict[str, Any]]:
    return list(
        page.locator("tr.diff").evaluate_all(
            """rs => rs.map(r => ({key: [r.dataset.scenario, r.dataset.agent],
            verdict: r.dataset.verdict, deltas: Object.fromEntries([...r.querySelectorAll(
            'td[data-score]')].map(c => [c.dataset.score, c.dataset.delta]))}))"""
        )
    )


def test_compare_matches_reports_diff_and_sorts(site: Site, opener: Opener) -> None:
    a, b = site.ids[1], site.ids[2]
    diff = json.loads(_axis("reports", "diff", a, b, "--json", "-c", str(site.config)))
    expected = {
        (p["scenarioKey"], p["agentName"]): (
            p["verdict"],
            {d["name"]: "" if d["delta"] is None else str(d["delta"]) for d in p["deltas"]},
        )
        for p in diff["pairs"]
    }
    w = opener(f"/compare/{a}/{b}")
    rows = _diff_rows(w.page)
    assert {tuple(r["key"]): (r["verdict"], r["deltas"]) for r in rows} == expected
    assert len(rows) == len(diff["pairs"]) >= 4
    verdicts = [r["verdict"] for r in rows]
    worse = verdicts.count("regressed")
    assert worse >= 1 and "improved" in verdicts, verdicts  # the seeds make both
    assert verdicts[:worse] == ["regressed"] * worse, verdicts
    _click(w.page, w.page.locator('a.sort[data-sort="delta"]'))
    assert _query(w.page) == {"sort": ["delta"]}
    resorted = _diff_rows(w.page)
    assert sorted(map(str, resorted)) == sorted(map(str, rows))
    axis = [int(r["deltas"]["axisScore"]) for r in resorted if r["deltas"].get("axisScore")]
    assert len(axis) >= 4 and axis == sorted(axis) and axis != axis[::-1]
    assert "Δ AXIS ▾" in w.page.locator("thead").inner_text()
    w.assert_clean()


def _steps(path: Path) -> list[tuple[object, ...]]:
    t = Transcript.model_validate_json(path.read_bytes())
    return [
        (e.type, e.text, e.tool and e.tool.name, e.tool and json.dumps(e.tool.input))
        for e in t.entries
    ]


def _check_side_by_side(site: Site, page: Page, a: str, b: str) -> None:
    scenario, agent = _query(page)["scenario"][0], _query(page)["agent"][0]
    assert urlsplit(page.url).path == f"/compare/{a}/{b}/pair"
    assert page.locator(".pair-compare .pc-head").count() == 2
    beside = page.locator(".pc-row[data-relation]").evaluate_all(
        """rs => rs.map(r => { const [l, x] = r.querySelectorAll(':scope > .pc-cell');
        const p = l.getBoundingClientRect(), q = x.getBoundingClientRect();
        return Math.abs(p.top - q.top) < 1 && p.right <= q.left && p.width > 100; })"""
    )
    assert beside and all(beside)
    differ = _steps(site.transcript(a, scenario, agent)) != _steps(
        site.transcript(b, scenario, agent)
    )
    diverge = page.locator("#diverge")
    if differ:
        assert diverge.count() == 1 and diverge.is_visible()
        number = int(diverge.get_attribute("data-row") or 0)
        before = page.locator(".pc-row[data-relation]").evaluate_all(
            "rs => rs.map(r => r.dataset.relation)"
        )[: number - 1]
        assert before == ["same"] * (number - 1)
        page.locator('a[href="#diverge"]').click()
        box = diverge.bounding_box()
        assert box is not None and 0 <= box["y"] < 900
    else:
        assert diverge.count() == 0
    wide = page.evaluate(
        """() => [document.documentElement.scrollWidth, document.body.scrollWidth,
        document.documentElement.clientWidth]"""
    )
    assert max(wide[:2]) <= wide[2], f"the page scrolls sideways: {wide}"


def test_side_by_side_from_the_compare_page(site: Site, opener: Opener) -> None:
    a, b = site.ids[1], site.ids[2]
    w = opener(f"/compare/{a}/{b}")
    links = w.page.locator("a.transcripts")
    hrefs = links.evaluate_all("ls => ls.map(l => l.getAttribute('href'))")
    assert len(hrefs) >= 4
    _click(w.page, links.first)
    _check_side_by_side(site, w.page, a, b)
    for href in hrefs[1:]:
        w.page.goto(site.url + href.lstrip("/"))
        _check_side_by_side(site, w.page, a, b)
    w.assert_clean()


def test_search_marks_the_term_and_a_hit_opens(site: Site, opener: Opener) -> None:
    rid = site.ids[0]
    pair = site.report(rid)["results"][-1]
    run = pair["runs"][-1]
    scenario, agent = pair["scenarioKey"], pair["agentName"]
    data = json.loads(
        (site.config / ".axis/reports" / rid / run["dir"] / "transcript.json").read_text()
    )
    term = re.search(r"changed (\S+-\d{4})", data["result"] or "")
    assert term is not None, data["result"]
    w = opener("/search")
    w.page.locator('input[name="q"]').fill(term.group(1))
    with w.page.expect_navigation():
        w.page.locator('input[name="q"]').press("Enter")
    assert _query(w.page) == {"q": [term.group(1)]}
    marks = w.page.locator("li.hit mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {term.group(1).lower()}
    hit = (
        w.page.locator("li.hit")
        .filter(has_text=f"{rid} · {scenario} · {agent}")
        .filter(has_text=f"run {run['runIndex']},")
    )
    assert hit.count() >= 1
    _click(w.page, hit.first.locator("a"))
    assert urlsplit(w.page.url).path == f"/report/{rid}"
    assert w.page.locator("h2").inner_text() == f"Runs of {scenario} · {agent}"
    w.assert_clean()


def _inert(page: Page) -> None:
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    assert page.locator("main img, script, a[href^='javascript']").count() == 0


def test_hostile_text_is_inert_and_shown_literally(site: Site, opener: Opener) -> None:
    rid, (scenario, agent) = site.ids[-1], site.pair
    w = opener("/search?" + urlencode({"q": "__pwned"}))
    hits = w.page.locator("li.hit").filter(has_text=f"{rid} · {scenario} · {agent}")
    assert hits.count() >= 2  # the assistant's text and the tool call
    texts = w.page.locator("li.hit pre.hit").all_inner_texts()
    assert any(SCRIPT in t and IMG in t for t in texts), texts
    _inert(w.page)
    w.page.goto(
        site.url
        + f"compare/{site.ids[-2]}/{rid}/pair?"
        + urlencode({"scenario": scenario, "agent": agent})
    )
    w.page.locator("details.pc-output > summary").evaluate_all("ss => ss.forEach(s => s.click())")
    shown = w.page.locator(".pair-compare").inner_text()
    assert shown.count(HOSTILE) >= 2 and json.dumps(IMG) in shown
    assert w.page.get_by_text(SCRIPT).first.is_visible()
    _inert(w.page)
    w.assert_clean()


def _links_resolve(page: Page) -> None:
    for href in page.locator("a[href]").evaluate_all(
        "as => as.map(a => new URL(a.getAttribute('href'), document.baseURI).href)"
    ):
        parts = urlsplit(href)
        assert parts.scheme == "file" and Path(unquote(parts.path)).is_file(), href


def test_static_export_clicks_through(site: Site, opener: Opener, tmp_path: Path) -> None:
    export_pages(site.catalog, tmp_path / "export")
    w = opener((tmp_path / "export" / "index.html").as_uri(), allowed=LOCAL)
    page = w.page
    newest = _newest_first(site)
    assert page.locator("tr.report").evaluate_all("rs => rs.map(r => r.dataset.id)") == newest
    _links_resolve(page)
    pairs = {
        r: {(p["scenarioKey"], p["agentName"]) for p in site.report(r)["results"]} for r in newest
    }
    for at in range(len(newest) - 1, -1, -1):  # each report links to the one before it
        rid = newest[at]
        if at < len(newest) - 1:
            _click(page, page.locator("header a", has_text="Reports"))
        _click(page, page.locator(f'tr.report[data-id="{rid}"] a').first)
        assert page.locator("h1").inner_text() == f"Report {rid}"
        _links_resolve(page)
        common = pairs[rid] & pairs[newest[at + 1]] if at + 1 < len(newest) else set()
        assert page.locator("a.vs").count() == len(common)
    assert page.locator("a.vs").count() > 0  # the newest report: its side-by-side links
    _click(page, page.locator("a.vs").first)
    assert page.locator(".pair-compare .pc-head").count() == 2
    _inert(page)
    _links_resolve(page)
    _click(page, page.locator("header a", has_text="Reports"))
    _click(page, page.locator("a.compare-latest"))
    assert page.locator("tr.diff").count() == len(pairs[newest[0]] | pairs[newest[1]])
    _links_resolve(page)
    _click(page, page.locator('a.sort[data-sort="delta"]'))
    assert "Δ AXIS ▾" in page.locator("thead").inner_text()
    _click(page, page.locator("tr.diff a", has_text="history").first)
    assert page.locator("h1").inner_text().startswith("History: ")
    assert page.locator('circle.point[data-series="axisScore"]').count() >= 1
    _links_resolve(page)
    w.assert_clean()


def test_screenshots_light_and_dark(site: Site, opener: Opener) -> None:
    a, b = site.ids[1], site.ids[2]
    scenario, agent = site.pair
    q = urlencode({"scenario": scenario, "agent": agent})
    pages = {
        "list": "/",
        "history": f"/history/pair?{q}",
        "compare": f"/compare/{a}/{b}",
        "sidebyside": f"/compare/{a}/{b}/pair?{q}",
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    colours: dict[str, dict[str, str]] = {}
    for scheme in ("light", "dark"):
        for name, url in pages.items():
            w = opener(url, scheme)
            assert w.page.locator("main h1").count() == 1 or name == "sidebyside"
            w.page.screenshot(path=str(ARTIFACTS / f"view-{name}-{scheme}.png"), full_page=True)
            colours.setdefault(name, {})[scheme] = w.page.evaluate(
                "() => getComputedStyle(document.body).backgroundColor"
            )
            w.assert_clean()
            w.page.context.close()
    for name, got in colours.items():
        assert got["light"] != got["dark"], (name, got)
