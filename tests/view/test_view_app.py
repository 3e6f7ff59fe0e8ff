"""``axis view`` without a browser: the catalog, every route through ``App.get``, path and
markup safety, the HTTP server's headers, read-only-ness and the static export.

Real report folders (``bench/synth_report.py``: the real planner and ``ReportWriter``) in two
projects: ``proj`` holds A and B (three runs per pair) and C (105 pairs); ``other`` holds D
(its folder named like A's, so it is ``A~2``) and E, both with hostile names, run errors and
transcript text and two planted secrets, plus two corrupt reports and one folder whose name
is not a safe id. Expected values come from the ``report.json`` files, or from
``axis reports diff --json`` run as a subprocess, never from the viewer's own code.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from statistics import fmean
from typing import Any
from urllib.error import HTTPError
from urllib.parse import parse_qsl, urlencode, urlsplit
from urllib.request import Request, urlopen

import pytest

import axis_eval.view.catalog as catalog_module  # its read_manifest is wrapped (counted)
from axis_eval.errors import UsageError
from axis_eval.redact import MASK, Redactor
from axis_eval.report.html._page import write_html
from axis_eval.runs.store import ReportStore, read_manifest
from axis_eval.transcript.models import Entry, ToolCall, Transcript
from axis_eval.view import App, Catalog, Response, ViewServer, export_pages
from axis_eval.view.compare import SORTS
from axis_eval.view.pages import MAX_CHIPS, PAGE_SIZE
from report.html.helpers import load_synth

SRC = Path(__file__).resolve().parents[2] / "src"
XSS, IMG, JS = "<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "javascript:alert(1)"
SECRETS = {"FOO_API_KEY": "some-secret-value", "FOO_PASSWORD": "pa&ss\"wo<rd>'42"}
SCORES = ("axisScore", "goalAchievement", "environment", "service", "agent")


def make_report(
    config_dir: Path, day: str, jobs: int, runs: int, seed: int, start: str = "", **kw: Any
) -> Path:
    """A synthetic report with the id ``day``-080000 (no sleeping between two), started on
    ``start`` (default ``day``) at 08:00."""
    synth = load_synth()
    real = synth.new_report_id
    when = datetime.fromisoformat(f"{day}T08:00:00+00:00").astimezone(UTC)
    synth.new_report_id = lambda root, now=None: real(root, when)
    try:
        folder: Path = synth.write_synthetic_report(
            config_dir, jobs, runs_per_pair=runs, seed=seed, **kw
        )
    finally:
        synth.new_report_id = real
    ReportStore(folder).patch_manifest({"startedAt": f"{start or day}T08:00:00.000Z"})
    return folder


def _insert_entries(path: Path, *entries: Entry) -> None:
    transcript = Transcript.model_validate_json(path.read_bytes())
    transcript.entries[1:1] = list(entries)
    path.write_text(transcript.model_dump_json(by_alias=True))


def make_hostile(folder: Path) -> None:
    """Hostile report, scenario and agent names, run error and transcript text; secrets in
    a run error and in a transcript (as if the run had not known them)."""
    manifest = read_manifest(folder)
    manifest.name = f"{XSS} {JS}"
    first, second, third = manifest.results[:3]
    first.scenario_key, first.agent_name, second.agent_name = f"billing/{XSS}", IMG, JS
    first.scenario_name = f"{XSS} {IMG}"
    secrets = " ".join(SECRETS.values())
    third.runs[0].error = f"{IMG} {JS} {secrets}"
    ReportStore(folder).write_manifest(manifest)
    at: dict[str, Any] = {"timestamp": "2026-04-01T08:00:00.000Z", "offset_ms": 1}
    tool = ToolCall(id="t-hostile", name=IMG, input={"url": JS}, output=XSS)
    _insert_entries(
        folder / first.runs[0].dir / "transcript.json",
        Entry(type="assistant", text=f"hostile-marker {XSS} {IMG} {JS}", **at),
        Entry(type="tool", tool=tool, **at),
    )
    _insert_entries(
        folder / second.runs[0].dir / "transcript.json",
        Entry(type="assistant", text=f"secret-marker before {secrets} after", **at),
    )


def snapshot(base: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and folder under ``base``: size, mtime_ns and sha256 (``dir``)."""
    out = {}
    for path in sorted(base.rglob("*")):
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(base))] = (st.st_size, st.st_mtime_ns, digest)
    return out


@dataclass
class World:
    base: Path
    proj: Path
    roots: list[Path]
    ids: dict[str, Path]
    """Readable report id → folder, as the catalog must name them."""
    json: dict[str, dict[str, Any]]
    before: dict[str, tuple[int, int, str]]
    a: str
    b: str
    c: str
    d: str
    e: str

    def catalog(self) -> Catalog:
        return Catalog(self.roots, self.proj)

    def newest_first(self) -> list[str]:
        return sorted(self.ids, key=lambda r: (self.json[r]["startedAt"], r), reverse=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    base = tmp_path_factory.mktemp("view")
    proj, other = base / "proj", base / "other"
    a = make_report(proj, "2026-01-10", 18, 3, seed=1, interactions=6)
    b = make_report(proj, "2026-02-15", 18, 3, seed=2, interactions=6)
    c = make_report(proj, "2026-03-20", 105, 1, seed=3, interactions=2)
    d = make_report(other, "2026-01-10", 12, 3, seed=4, start="2026-04-01", interactions=6)
    e = make_report(other, "2026-04-02", 12, 3, seed=5, interactions=6)
    for folder in (d, e):
        make_hostile(folder)
    for folder in (a, b, d):
        write_html(folder)
    reports = other / ".axis" / "reports"
    for name, text in {"2026-05-01-000000": "{not json", "2026-05-02-000000": '{"id": 7}'}.items():
        (reports / name).mkdir()
        (reports / name / "report.json").write_text(text)
    (reports / "has space").mkdir()
    (reports / "has space" / "report.json").write_bytes((e / "report.json").read_bytes())
    outside = base / "outside"  # what a path traversal would reach
    outside.mkdir()
    (outside / "report.json").write_bytes((a / "report.json").read_bytes())
    ReportStore(outside).patch_manifest({"name": "OUTSIDE-MARKER"})
    ids = {a.name: a, b.name: b, c.name: c, f"{d.name}~2": d, e.name: e}
    raw = {rid: json.loads((f / "report.json").read_text()) for rid, f in ids.items()}
    roots = [proj / ".axis" / "reports", reports]
    return World(base, proj, roots, ids, raw, snapshot(base), *ids)


# --- reading pages ---------------------------------------------------------------------------


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag, self.attrs, self.children = tag, attrs, list[Any]()

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def kids(self, tag: str) -> list[Node]:
        return [c for c in self.children if isinstance(c, Node) and c.tag == tag]

    def get(self, name: str) -> str:
        return self.attrs.get(name) or ""


class Dom(HTMLParser):
    """A page as a tree (html.parser), every element in ``nodes``, in order."""

    VOID = frozenset({"meta", "input", "br", "img", "hr", "link", "source", "wbr"})

    def __init__(self, body: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack, self.nodes = [self.root], list[Node]()
        self.feed(body)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        self.nodes.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)

    def all(self, tag: str, cls: str = "") -> list[Node]:
        return [
            n for n in self.nodes if n.tag == tag and (not cls or cls in n.get("class").split())
        ]

    def hrefs(self) -> list[str]:
        return [h for n in self.nodes if (h := n.attrs.get("href")) is not None]


@functools.lru_cache(maxsize=4096)
def dom(body: str) -> Dom:
    """``body`` parsed once (several tests read the same pages)."""
    return Dom(body)


def cells(row: Node) -> list[str]:
    return [c.text().strip() for c in row.kids("td")]


def route(href: str) -> tuple[str, dict[str, str]]:
    parts = urlsplit(href)
    return parts.path, dict(parse_qsl(parts.query))


def pair_q(pair: dict[str, Any]) -> str:
    return urlencode({"scenario": pair["scenarioKey"], "agent": pair["agentName"]})


def assert_inert(body: str, where: str) -> None:
    """No script, no element that runs one, no ``on*`` attribute, no ``javascript:`` link."""
    low = body.lower()
    assert "<script" not in low and "<img" not in low, where
    for node in dom(body).nodes:
        assert node.tag not in ("script", "img", "iframe", "object", "embed"), where
        for name, value in node.attrs.items():
            assert not name.startswith("on"), (where, name)
            squeezed = re.sub(r"[\x00-\x20]", "", value or "").lower()
            assert not (name in ("href", "src", "action") and squeezed.startswith("javascript:"))


def leaks(body: str) -> list[str]:
    """The planted secrets in ``body``: as written, or as a browser shows text/attributes."""
    tree = dom(body)
    shown = tree.root.text() + " ".join(v or "" for n in tree.nodes for v in n.attrs.values())
    return [s for s in SECRETS.values() if s in body or s in shown]


def pair_links(body: str) -> list[tuple[str, tuple[str, str], str]]:
    """(href, (scenario, agent), what) of a page's links to one pair's pages: a compare
    row's side-by-side transcripts, a report row's own pair page."""
    out = []
    for row in dom(body).all("tr", "diff"):
        pair = (row.get("data-scenario"), row.get("data-agent"))
        out += [(a.get("href"), pair, "transcripts") for a in _all_in(row, "a", "transcripts")]
    for row in dom(body).all("tr", "pair"):
        link = row.kids("td")[0].kids("a")[0]
        out.append((link.get("href"), (link.text(), row.kids("td")[1].text()), "runs"))
    return out


def _all_in(node: Node, tag: str, cls: str) -> list[Node]:
    found = [c for c in node.children if isinstance(c, Node)]
    inner = [n for c in found for n in _all_in(c, tag, cls)]
    return [c for c in found if c.tag == tag and cls in c.get("class").split()] + inner


def about(body: str, what: str) -> tuple[str, str] | None:
    """The pair a side-by-side page (``transcripts``) or a pair's report page (``runs``) is
    about."""
    tree = dom(body)
    if what == "transcripts":
        sections = tree.all("section", "pair-compare")
        return (
            (sections[0].get("data-scenario"), sections[0].get("data-agent")) if sections else None
        )
    pairs = [(c[0], c[1]) for c in map(cells, tree.all("tr", "pair"))]
    return pairs[0] if len(pairs) == 1 and tree.all("tr", "run") else None


def crawl(app: App, start: str) -> dict[str, Response]:
    """Every page reachable by the server links from ``start`` (filtered lists: one level,
    their filter chips combine without end)."""
    seen: dict[str, Response] = {}
    todo = [start]
    while todo:
        target = todo.pop()
        if target in seen:
            continue
        seen[target] = response = app.get(target)
        if response.own_policy or (urlsplit(target).path == "/" and "?" in target):
            continue
        todo += [h.split("#")[0] for h in dom(response.body).hrefs() if h.startswith("/")]
    return seen


@pytest.fixture(scope="module")
def pages(world: World) -> dict[str, Response]:
    return crawl(App(world.catalog(), redactor=Redactor(SECRETS.values())), "/")


def axis_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``axis`` (beside this Python) as a subprocess."""
    exe = Path(sys.executable).with_name("axis")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "axis_eval"]
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=60)


# --- 1. the catalog --------------------------------------------------------------------------


def test_catalog_finds_reports_names_duplicates_and_sorts_newest_first(world: World) -> None:
    catalog = world.catalog()
    assert {k: v for k, v in catalog.folders().items() if k in world.ids} == world.ids
    assert "has space" not in catalog.folders()  # not a safe id: never served
    assert [h.report_id for h in catalog.headlines()] == world.newest_first()
    d = catalog.manifest(world.d)  # A~2: the other project's folder of that name
    assert d is not None and d.name == f"{XSS} {JS}"
    assert world.d == f"{world.a}~2"
    only = Catalog([world.ids[world.b]])  # a report folder given directly
    assert [h.report_id for h in only.headlines()] == [world.b]
    assert Catalog([world.roots[0]]).folders() == {
        r: world.ids[r] for r in (world.a, world.b, world.c)
    }


def test_corrupt_reports_are_left_out(world: World) -> None:
    catalog, app = world.catalog(), App(world.catalog())
    for bad in ("2026-05-01-000000", "2026-05-02-000000"):
        assert bad in catalog.folders() and catalog.manifest(bad) is None
        assert app.get(f"/report/{bad}").status == 404
    assert [h.report_id for h in catalog.headlines()] == world.newest_first()
    assert app.get("/search?q=a").status == 200


def test_manifests_are_cached_until_report_json_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_report(tmp_path, "2026-06-01", 3, 3, seed=9)
    reads: list[Path] = []
    real = catalog_module.read_manifest
    monkeypatch.setattr(catalog_module, "read_manifest", lambda f: reads.append(f) or real(f))
    catalog, rid, path = Catalog([folder.parent]), folder.name, folder / "report.json"
    first = catalog.manifest(rid)
    assert first is not None and catalog.manifest(rid) is first
    catalog.headlines()
    assert reads == [folder]  # one read for three asks
    st = path.stat()
    ReportStore(folder).patch_manifest({"name": "renamed"})  # another size…
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # …the same mtime
    assert getattr(catalog.manifest(rid), "name", None) == "renamed" and len(reads) == 2
    st = path.stat()
    ReportStore(folder).patch_manifest({"name": "renamex"})  # the same size…
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # …another mtime
    assert getattr(catalog.manifest(rid), "name", None) == "renamex" and len(reads) == 3
    assert catalog.manifest(rid) is catalog.manifest(rid) and len(reads) == 3


# --- 2. routes -------------------------------------------------------------------------------


def _listed(app: App, **q: str) -> list[str]:
    return [n.get("data-id") for n in dom(app.get("/?" + urlencode(q)).body).all("tr", "report")]


def test_a_report_written_meanwhile_shows_once_the_listing_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_report(tmp_path, "2026-06-01", 2, 1, seed=1)
    clock = [100.0]
    monkeypatch.setattr(catalog_module.time, "monotonic", lambda: clock[0])
    catalog = Catalog([first.parent])
    assert list(catalog.folders()) == [first.name]
    second = make_report(tmp_path, "2026-06-02", 2, 1, seed=2)
    clock[0] += catalog_module.LISTING_TTL / 2  # the same page still: the listing is reused
    assert list(catalog.folders()) == [first.name]
    clock[0] += catalog_module.LISTING_TTL  # the next page: listed again
    assert [h.report_id for h in catalog.headlines()] == [second.name, first.name]
    catalog.folders().clear()  # a caller's copy: the catalog's own listing is untouched
    assert set(catalog.folders()) == {first.name, second.name}
    shutil.rmtree(first)  # deleted: gone from the list, and from what the catalog holds
    clock[0] += catalog_module.LISTING_TTL
    assert [h.report_id for h in catalog.headlines()] == [second.name]
    assert [p.parent.name for p in catalog._heads] == [second.name]


def test_list_history_and_search_never_read_a_whole_manifest_and_few_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keep = 3
    monkeypatch.setattr(catalog_module, "MANIFEST_CACHE", keep)
    folders = [make_report(tmp_path, f"2026-06-{d:02d}", 6, 3, seed=d) for d in range(1, 6)]
    reads: list[str] = []
    real = catalog_module.read_manifest
    monkeypatch.setattr(catalog_module, "read_manifest", lambda f: reads.append(f.name) or real(f))
    catalog = Catalog([tmp_path / ".axis" / "reports"])
    app = App(catalog)
    pair = read_manifest(folders[0]).results[0]
    q = urlencode({"scenario": pair.scenario_key, "agent": pair.agent_name})
    for target in ("/", f"/history/pair?{q}", f"/history/agent?agent={pair.agent_name}"):
        assert app.get(target).status == 200
    assert app.get("/search?q=a").status == 200
    assert reads == []  # the light read served them all
    ids = [f.name for f in folders]
    for rid in ids:  # five report pages: only the last `keep` manifests stay
        assert app.get(f"/report/{rid}").status == 200
    assert reads == ids
    for rid in ids[-keep:]:  # kept: not read again
        assert catalog.manifest(rid) is not None
    assert reads == ids
    assert catalog.manifest(ids[0]) is not None  # dropped: read again
    assert reads == [*ids, ids[0]]


def test_list_filters_keep_exactly_the_matching_reports(world: World) -> None:
    app, newest = App(world.catalog()), world.newest_first()
    assert _listed(app) == newest
    having: dict[str, dict[str, set[str]]] = {"agent": {}, "scenario": {}, "status": {}}
    for rid, m in world.json.items():
        have = {
            "agent": {p["agentName"] for p in m["results"]},
            "scenario": {p["scenarioKey"] for p in m["results"]},
            "status": {p["status"] for p in m["results"]} | {m["state"]},
        }
        for name, values in have.items():
            for value in values:
                having[name].setdefault(value, set()).add(rid)
    assert len(having["agent"]) >= 5 and len(having["scenario"]) > 30
    assert 0 < len(having["status"]["failed"]) < len(newest)  # a filter that leaves some out
    for name, by_value in having.items():
        for value, expected in by_value.items():
            assert _listed(app, **{name: value}) == [r for r in newest if r in expected]
    day = {r: world.json[r]["startedAt"][:10] for r in newest}
    for at in sorted(set(day.values())):
        assert _listed(app, **{"from": at}) == [r for r in newest if day[r] >= at]
        assert _listed(app, to=at) == [r for r in newest if day[r] <= at]
        assert _listed(app, **{"from": at, "to": at}) == [r for r in newest if day[r] == at]
    agent, to = world.json[world.a]["results"][0]["agentName"], day[world.c]
    expected = [r for r in newest if r in having["agent"][agent] and day[r] <= to]
    assert _listed(app, agent=agent, to=to) == expected and len(expected) == 3
    assert _listed(app, agent="nobody") == []


def _submit(body: str, **chosen: str) -> str:
    """The query a browser sends for the list's filter form: its hidden inputs and dates as
    they are, each drop-down at ``chosen`` (or its selected option)."""
    form = dom(body).all("form")[0]
    fields: list[tuple[str, str]] = []

    def walk(node: Node) -> None:
        for child in node.children:
            if not isinstance(child, Node):
                continue
            if child.tag == "input" and child.get("name"):
                fields.append((child.get("name"), child.get("value")))
            elif child.tag == "select":
                picked = [o.get("value") for o in child.kids("option") if "selected" in o.attrs]
                fields.append((child.get("name"), chosen.get(child.get("name"), *picked[:1])))
            else:
                walk(child)

    walk(form)
    return "/?" + urlencode(fields)


def test_a_filter_with_many_values_is_a_drop_down_in_the_form(world: World) -> None:
    app, newest = App(world.catalog()), world.newest_first()
    scenarios = sorted({p["scenarioKey"] for m in world.json.values() for p in m["results"]})
    agents = sorted({p["agentName"] for m in world.json.values() for p in m["results"]})
    assert len(scenarios) > MAX_CHIPS >= len(agents)
    body = app.get("/").body
    select = [n for n in dom(body).all("select") if n.get("name") == "scenario"]
    assert len(select) == 1
    assert [o.get("value") for o in select[0].kids("option")] == ["", *scenarios]
    assert not [a for a in dom(body).all("a") if a.get("data-filter") == "scenario"]
    assert {a.get("data-filter") for a in dom(body).all("a") if a.get("data-filter")} == {
        "agent",
        "status",
    }  # no report has a profile: no empty "profile:" group
    scenario = world.json[world.c]["results"][-1]["scenarioKey"]
    agent = world.json[world.c]["results"][-1]["agentName"]
    holding = [
        r for r in newest if any(p["scenarioKey"] == scenario for p in world.json[r]["results"])
    ]
    target = _submit(app.get("/?" + urlencode({"agent": agent})).body, scenario=scenario)
    assert parse_qsl(urlsplit(target).query, keep_blank_values=True) == [
        ("agent", agent),
        ("scenario", scenario),
        ("from", ""),
        ("to", ""),
    ]
    shown = [n.get("data-id") for n in dom(app.get(target).body).all("tr", "report")]
    assert shown == [
        r for r in holding if any(p["agentName"] == agent for p in world.json[r]["results"])
    ]
    again = app.get(target).body  # the choice stays selected, and "any" clears it
    chosen = next(n for n in dom(again).all("select") if n.get("name") == "scenario")
    assert [o.get("value") for o in chosen.kids("option") if "selected" in o.attrs] == [scenario]
    cleared = [
        n.get("data-id") for n in dom(app.get(_submit(again, scenario="")).body).all("tr", "report")
    ]
    assert cleared == [
        r for r in newest if any(p["agentName"] == agent for p in world.json[r]["results"])
    ]


def _pairs_on(body: str) -> list[tuple[str, str]]:
    return [(c[0], c[1]) for c in map(cells, dom(body).all("tr", "pair"))]


def test_a_large_report_is_paginated_with_every_pair_once(world: World) -> None:
    app, rid = App(world.catalog()), world.c
    expected = [(p["scenarioKey"], p["agentName"]) for p in world.json[rid]["results"]]
    count = -(-len(expected) // PAGE_SIZE)
    assert len(expected) > PAGE_SIZE and count >= 2
    seen: list[tuple[str, str]] = []
    for n in range(1, count + 1):
        body = app.get(f"/report/{rid}?page={n}").body
        on_page = _pairs_on(body)
        assert on_page == expected[(n - 1) * PAGE_SIZE : n * PAGE_SIZE] and on_page
        linked = {
            int(q.get("page", "1"))
            for p, q in map(route, dom(body).hrefs())
            if p == f"/report/{rid}" and set(q) <= {"page"}
        }
        assert linked == set(range(1, count + 1)) - {n}  # the page bar links every other page
        seen += on_page
    assert Counter(seen) == Counter(expected) and len(set(seen)) == len(expected)
    assert _pairs_on(app.get(f"/report/{rid}").body) == expected[:PAGE_SIZE]
    assert _pairs_on(app.get(f"/report/{rid}?page=999").body) == expected[(count - 1) * PAGE_SIZE :]


def test_pair_page_shows_its_runs(world: World) -> None:
    app = App(world.catalog())
    for pair in world.json[world.b]["results"]:
        body = app.get(f"/report/{world.b}?{pair_q(pair)}").body
        assert _pairs_on(body) == [(pair["scenarioKey"], pair["agentName"])]
        rows = [cells(r) for r in dom(body).all("tr", "run")]
        assert len(rows) == pair["runCount"] == len(pair["runs"]) == 3
        for row, run in zip(rows, pair["runs"], strict=True):
            star = " ★" if run["runIndex"] == pair["representativeRunIndex"] else ""
            assert row[:2] == [f"#{run['runIndex']}{star}", run["status"]]
            score = run.get("score")
            scored = score is not None and not score["withheld"]
            assert row[2:7] == ([str(score[s]) for s in SCORES] if scored else ["—"] * 5)


def _points(body: str) -> dict[tuple[str, str], float]:
    return {
        (n.get("data-series"), n.get("data-report")): float(n.get("data-value"))
        for n in dom(body).all("circle", "point")
    }


def _headline(pair: dict[str, Any]) -> dict[str, float]:
    score = pair["score"]
    if score is None or score["withheld"] or pair["representativeRunIndex"] is None:
        return {}
    return {s: float(score[s]) for s in SCORES}


def test_history_points_are_the_pairs_headline_scores(world: World) -> None:
    app = App(world.catalog())
    scenario, agent = (world.json[world.a]["results"][1][k] for k in ("scenarioKey", "agentName"))
    points: dict[tuple[str, str], float] = {}
    spreads: dict[str, tuple[float, float]] = {}
    means: dict[tuple[str, str], float] = {}
    for rid, m in world.json.items():
        for pair in m["results"]:
            if (pair["scenarioKey"], pair["agentName"]) == (scenario, agent):
                points.update({(s, rid): v for s, v in _headline(pair).items()})
                if pair["runCount"] > 1:
                    spread = pair["spread"]["axisScore"]
                    spreads[rid] = (spread["min"], spread["max"])
        heads = [h for p in m["results"] if p["agentName"] == agent and (h := _headline(p))]
        for s in SCORES if heads else ():
            means[(s, rid)] = round(fmean(h[s] for h in heads), 2)
    assert {r for _, r in points} >= {world.a, world.b, world.c} and spreads
    body = app.get("/history/pair?" + urlencode({"scenario": scenario, "agent": agent})).body
    assert _points(body) == points
    lines = dom(body).all("line", "spread")
    got = {
        n.get("data-report"): (float(n.get("data-low")), float(n.get("data-high"))) for n in lines
    }
    assert got == spreads
    assert _points(app.get("/history/agent?" + urlencode({"agent": agent})).body) == means


def _rows(body: str) -> dict[tuple[str, str], tuple[str, dict[str, int | None]]]:
    out = {}
    for row in dom(body).all("tr", "diff"):
        deltas = {
            c.get("data-score"): int(c.get("data-delta")) if c.get("data-delta") else None
            for c in row.kids("td")
            if "data-score" in c.attrs
        }
        out[(row.get("data-scenario"), row.get("data-agent"))] = (row.get("data-verdict"), deltas)
    return out


@pytest.mark.parametrize("which", ["ab", "bc", "ca"])
def test_compare_page_equals_axis_reports_diff(world: World, which: str) -> None:
    a, b = (getattr(world, x) for x in which)
    done = axis_cli("reports", "diff", a, b, "--json", "-c", str(world.proj))
    assert done.returncode == 0, done.stderr
    diff = json.loads(done.stdout)
    assert (diff["reportA"], diff["reportB"]) == (a, b)
    expected = {
        (p["scenarioKey"], p["agentName"]): (
            p["verdict"],
            {d["name"]: d["delta"] for d in p["deltas"]},
        )
        for p in diff["pairs"]
    }
    assert len(expected) == len(diff["pairs"]) and {v for v, _ in expected.values()} - {"unchanged"}
    axis = {k: d.get("axisScore") or 0 for k, (_, d) in expected.items()}
    orders = {
        "scenario": sorted(expected),
        "agent": sorted(expected, key=lambda k: (k[1], k[0])),
        "delta": sorted(expected, key=lambda k: (axis[k], k)),
    }
    app = App(world.catalog())
    for sort in ("verdict", "delta", "scenario", "agent"):
        body = app.get(f"/compare/{a}/{b}?sort={sort}").body
        assert _rows(body) == expected and len(dom(body).all("tr", "diff")) == len(expected)
        keys = list(_rows(body))
        if sort in orders:
            assert keys == orders[sort], sort
        verdicts = [expected[k][0] for k in keys]
        regressed = verdicts.count("regressed")
        if sort == "verdict":  # regressions first
            assert verdicts[:regressed] == ["regressed"] * regressed


def test_search_finds_transcript_text_and_links_its_pair(world: World) -> None:
    texts = [p.read_text().lower() for f in world.ids.values() for p in f.rglob("transcript.json")]
    pair = world.json[world.b]["results"][2]
    for run in pair["runs"]:  # an answer's "changed <word>-<number>" found in one transcript only
        entries = json.loads((world.ids[world.b] / run["dir"] / "transcript.json").read_text())
        step, needle = next(
            (i, e["text"].split(".")[0].removeprefix("Done: "))
            for i, e in enumerate(entries["entries"], 1)
            if e["type"] == "assistant" and (e.get("text") or "").startswith("Done: changed ")
        )
        if sum(needle.lower() in t for t in texts) == 1:
            break
    else:
        pytest.fail("no answer unique to one transcript")
    tree = dom(App(world.catalog()).get("/search?" + urlencode({"q": needle.upper()})).body)
    (hit,) = tree.all("li", "hit")
    (link,) = hit.kids("a")
    assert route(link.get("href")) == (
        f"/report/{world.b}",
        {"scenario": pair["scenarioKey"], "agent": pair["agentName"]},
    )
    assert f"run {run['runIndex']}, step {step}" in hit.text()
    assert [m.text() for m in tree.all("mark")] == [needle]


def test_search_finds_terms_the_file_spells_otherwise_and_skips_files_that_cannot_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_report(tmp_path, "2026-06-01", 3, 1, seed=4)
    manifest = read_manifest(folder)
    first = folder / manifest.results[0].runs[0].dir / "transcript.json"
    at = "2026-06-01T08:00:01.000Z"
    _insert_entries(
        first,
        Entry(type="assistant", timestamp=at, text='he said "quoted words" in C:\\temp\\dir'),
        Entry(type="assistant", timestamp=at, text="tab\there, the \u212aelvin sign, café"),
        Entry(
            type="tool",
            timestamp=at,
            tool=ToolCall(id="t1", name="Lookup", input={"limit": 20, "q": "x"}, output="ok"),
        ),
    )
    data = first.read_text()
    parsed: list[int] = []
    real = Transcript.model_validate_json
    monkeypatch.setattr(Transcript, "model_validate_json", lambda d: parsed.append(1) or real(d))

    def found(term: str) -> list[str]:
        parsed.clear()
        body = App(Catalog([folder.parent])).get("/search?" + urlencode({"q": term})).body
        return [m.text() for m in dom(body).all("mark")]

    # each as the field shows it, not as the file spells it (escaped, or dumped again)
    spelled = {
        '"quoted words"': '\\"quoted words\\"',
        "c:\\temp": "c:\\\\temp",
        "tab\there": "tab\\there",
        '"limit": 20': '"limit":20',
    }
    for term, in_file in spelled.items():
        assert term.lower() not in data.lower() and in_file in data.lower(), term
        assert [m.lower() for m in found(term)] == [term.lower()], term
    assert found("kelvin") == ["\u212aelvin"]  # K (Kelvin sign) lowers to k
    assert found("CAFÉ") == ["café"]
    runs = sum(len(p.runs) for p in manifest.results)
    assert found("no-such-term-anywhere") == [] and parsed == []  # none parsed: none can hold it
    assert found("quoted") == ["quoted"] and len(parsed) == 1  # only the file that holds it
    assert found('"no such"') == [] and len(parsed) == runs  # not pre-filtered: every one read


def test_compare_in_another_order_reuses_the_diff_until_a_report_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = make_report(tmp_path, "2026-06-01", 6, 3, seed=1)
    b = make_report(tmp_path, "2026-06-02", 6, 3, seed=2)
    diffs: list[str] = []
    real = catalog_module.diff_reports
    monkeypatch.setattr(
        catalog_module, "diff_reports", lambda x, y: diffs.append(y.report_id) or real(x, y)
    )
    app = App(Catalog([a.parent]))
    bodies = [app.get(f"/compare/{a.name}/{b.name}?sort={s}").body for s in SORTS]
    assert len(diffs) == 1 and all(_rows(body) == _rows(bodies[0]) for body in bodies)
    assert app.get(f"/compare/{b.name}/{a.name}").status == 200 and len(diffs) == 2
    assert app.get(f"/compare/{a.name}/{b.name}").status == 200 and len(diffs) == 3
    ReportStore(b).patch_manifest({"name": "renamed"})  # B changed: diffed again
    assert app.get(f"/compare/{a.name}/{b.name}?sort=agent").status == 200 and len(diffs) == 4
    assert app.get(f"/compare/{a.name}/nope").status == 404 and len(diffs) == 4


@pytest.mark.parametrize("through", ["redactor", "environment"])
def test_search_results_pass_the_redactor(
    world: World, monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    if through == "environment":  # what `axis view` does: App's default redactor
        for name, value in SECRETS.items():
            monkeypatch.setenv(name, value)
        app = App(world.catalog())
    else:
        app = App(world.catalog(), redactor=Redactor.from_env(SECRETS, SECRETS))
    second, third = world.json[world.d]["results"][1:3]
    targets = [
        "/search?q=secret-marker",
        *(f"/search?{urlencode({'q': s})}" for s in SECRETS.values()),
        f"/compare/{world.d}/{world.e}/pair?{pair_q(second)}",  # the planted transcript
        f"/report/{world.d}?{pair_q(third)}",  # the planted run error
    ]
    bodies = {t: app.get(t) for t in targets}
    hits = dom(bodies[targets[0]].body).all("li", "hit")
    assert hits and all(f"before {MASK} {MASK} after" in h.text() for h in hits)
    assert {route(h.kids("a")[0].get("href"))[0] for h in hits} == {
        f"/report/{world.d}",
        f"/report/{world.e}",
    }
    for target, response in bodies.items():
        assert response.status == 200 and not leaks(response.body), target


# --- 3. safety -------------------------------------------------------------------------------


def test_every_linked_page_answers_and_is_inert(world: World, pages: dict[str, Response]) -> None:
    assert len(pages) > 200  # every report, pair, history, comparison and side-by-side page
    assert {t: r.status for t, r in pages.items() if r.status != 200} == {}
    checked = 0
    for response in pages.values():
        for href, pair, what in [] if response.own_policy else pair_links(response.body):
            assert about(pages[href].body, what) == pair, href  # the link opens that pair
            checked += 1
    assert checked > 300
    hostile = {t for t, r in pages.items() if not r.own_policy and XSS in dom(r.body).root.text()}
    assert {"/", f"/report/{world.d}", f"/compare/{world.d}/{world.e}"} <= hostile  # shown
    assert any(t.startswith(f"/compare/{world.d}/{world.e}/pair?") for t in hostile)
    assert any(t.startswith("/history/pair?") for t in hostile)
    app = App(world.catalog(), redactor=Redactor(SECRETS.values()))
    extra = {
        t: app.get(t)
        for t in (
            "/search?q=hostile-marker",
            "/search?" + urlencode({"q": XSS}),
            "/?" + urlencode({"agent": IMG, "from": IMG, "to": XSS}),
            "/report/" + urlencode({"": XSS})[1:],
            f"/report/{world.d}?" + urlencode({"scenario": f"billing/{XSS}", "agent": IMG}),
        )
    }
    hit = dom(extra["/search?q=hostile-marker"].body).all("li", "hit")[0].text()
    assert XSS in hit and IMG in hit and JS in hit
    for target, response in [*pages.items(), *extra.items()]:
        if not response.own_policy:  # a report's own page: tests/report/html
            assert_inert(response.body, target)
            assert not leaks(response.body), target


TRAVERSALS = [
    "/report/..%2F..%2Foutside",
    "/report/..%2F..%2F..%2Foutside",
    "/report/../outside",
    "/report/..%252F..%252Foutside",
    "/report/%2e%2e%2f%2e%2e%2foutside",
    "/report/..%2F..%2F..%2Foutside/page",
    "/report/%2Fetc%2Fpasswd",
    "/report/..",
    "/report/.",
    "/report/%00",
    "/report/x%00y/page",
    "/report/~2",
    "/report/" + "a" * 5000,
    "/report/" + "A" * 201,
    "/compare/..%2F..%2Foutside/..%2F..%2Foutside",
    "/compare/..%2F..%2Foutside/..%2F..%2Foutside/pair?scenario=s&agent=a",
    "//outside/report.json",
]

_AUDIT: list[list[str]] = []
_HOOKED: list[bool] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    watched = event in ("open", "os.listdir", "os.scandir")
    if _AUDIT and watched and args and isinstance(args[0], str | bytes | os.PathLike):
        _AUDIT[-1].append(os.fsdecode(args[0]))


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """The paths this process opens or lists while the test runs (an audit hook, added once
    and idle while no test holds this)."""
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED.append(True)
    record: list[str] = []
    _AUDIT.append(record)
    yield record
    _AUDIT.remove(record)


class Serving:
    """A :class:`ViewServer` on a free port, serving from a thread."""

    def __init__(self, app: App) -> None:
        self.server = ViewServer(app, 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ViewServer:
        self.thread.start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def fetch(url: str, method: str = "GET") -> tuple[int, Any, str]:
    """Status, headers and body of one real HTTP request (urllib)."""
    data = b"x" if method in ("POST", "PUT", "PATCH") else None
    try:
        with urlopen(Request(url, data=data, method=method), timeout=10) as got:
            return got.status, got.headers, got.read().decode()
    except HTTPError as error:
        with error:
            return error.code, error.headers, error.read().decode()


def test_path_traversal_is_a_404_that_reads_nothing_outside(
    world: World, opened: list[str]
) -> None:
    app, a = App(world.catalog()), world.a
    targets = [*TRAVERSALS, *(t.replace("/report/", f"/report/{a}/") for t in TRAVERSALS[:6])]
    targets += [f"/report/{a}/..", f"/report/{a}%2F..%2F..", f"/report/{a}%2Fpage"]
    targets += [f"/report/{a}~3", f"/report/{a}/page/x", f"/report/{a}%00/page"]
    for target in targets:
        response = app.get(target)
        assert response.status == 404, target
        assert "OUTSIDE-MARKER" not in response.body and "root:" not in response.body
    roots = tuple(str(r) for r in world.roots)
    assert any(p.startswith(roots) for p in opened)  # the hook saw the catalog look
    assert not [p for p in opened if p.startswith((str(world.base / "outside"), "/etc"))]
    assert all(p.startswith(roots) for p in opened if p.startswith(str(world.base)))
    with Serving(App(world.catalog())) as server:  # over HTTP, each path sent as typed
        for target in TRAVERSALS[:6]:
            conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
            conn.request("GET", target)
            got = conn.getresponse()
            assert got.status == 404 and b"OUTSIDE-MARKER" not in got.read(), target
            conn.close()


def _style_hash(body: str) -> str:
    (css,) = re.findall(r"<style>(.*?)</style>", body, re.S)
    return "'sha256-" + base64.b64encode(hashlib.sha256(css.encode()).digest()).decode() + "'"


def test_server_headers_methods_and_address(world: World) -> None:
    q = pair_q(world.json[world.d]["results"][0])
    with Serving(App(world.catalog())) as server:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1" and server.url == f"http://127.0.0.1:{port}/"
        for target in ("", f"compare/{world.d}/{world.e}/pair?{q}", f"history/pair?{q}", "nope"):
            status, headers, body = fetch(server.url + target)
            assert status == (404 if target == "nope" else 200), target
            policy = headers["Content-Security-Policy"]
            assert f"style-src {_style_hash(body)};" in policy and "default-src 'none'" in policy
            assert "script-src" not in policy and headers["X-Content-Type-Options"] == "nosniff"
        status, headers, body = fetch(f"{server.url}report/{world.a}/page")
        assert status == 200 and body == (world.ids[world.a] / "report.html").read_text()
        assert headers["X-Content-Type-Options"] == "nosniff"
        for method in ("POST", "PUT", "DELETE", "PATCH", "HEAD"):
            assert fetch(server.url, method)[0] == 405, method
        with pytest.raises(ConnectionRefusedError):  # bound to 127.0.0.1, not to 0.0.0.0
            socket.create_connection(("127.0.0.2", port), timeout=5).close()


# --- 4. read-only, 5. static export ----------------------------------------------------------


def test_nothing_under_the_reports_changes(
    world: World, pages: dict[str, Response], tmp_path: Path
) -> None:
    """``pages`` went through every linked route after the snapshot; here the rest, over
    HTTP too, and an export."""
    app = App(world.catalog())
    for target in [*TRAVERSALS, "/search?q=a", "/search?q=hostile-marker", "/?status=failed"]:
        app.get(target)
    with Serving(app) as server:
        for target in ("", f"report/{world.c}?page=2", f"report/{world.a}/page", "search?q=x"):
            assert fetch(server.url + target)[0] == 200
    export_pages(world.catalog(), tmp_path / "site")
    assert len(pages) > 200 and snapshot(world.base) == world.before


def test_export_writes_pages_whose_links_all_resolve(world: World, tmp_path: Path) -> None:
    out = tmp_path / "site"
    written = export_pages(world.catalog(), out)
    assert sorted(written) == sorted(p for p in out.rglob("*") if p.is_file())
    names = {p.name for p in written}
    assert {
        "index.html",
        "search.html",
        f"report-{world.c}-2.html",
        f"page-{world.a}.html",
    } <= names
    assert f"page-{world.c}.html" not in names  # C has no report.html of its own
    own = (out / f"page-{world.a}.html").read_bytes()
    assert own == (world.ids[world.a] / "report.html").read_bytes()
    broken = []
    for page in written:
        body = page.read_text()
        for href in dom(body).hrefs():
            assert not href.startswith(("/", "http:", "https:")), (page.name, href)
            target = href.split("#")[0]
            if target and not (out / target).is_file():
                broken.append((page.name, href))
        if not page.name.startswith("page-"):
            assert_inert(body, page.name)
            (meta,) = [n for n in dom(body).all("meta") if n.attrs.get("http-equiv")]
            assert f"style-src {_style_hash(body)};" in meta.get("content")
    assert broken == []
    checked = 0
    for page in written:
        for href, pair, what in (
            [] if page.name.startswith("page-") else pair_links(page.read_text())
        ):
            assert about((out / href).read_text(), what) == pair, (page.name, href)
            checked += 1
    assert checked > 300
    index = dom((out / "index.html").read_text())
    assert [n.get("data-id") for n in index.all("tr", "report")] == world.newest_first()


def test_export_refuses_a_folder_inside_a_report(world: World) -> None:
    folder = world.ids[world.b]
    for out in (folder, folder / "site", folder / "scenarios" / "x"):
        with pytest.raises(UsageError, match="inside the report folder"):
            export_pages(world.catalog(), out)
    assert not (folder / "site").exists() and not (folder / "scenarios" / "x").exists()
