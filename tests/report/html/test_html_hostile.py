"""Hostile text in every field a run can carry: the page shows it as text, and nothing runs.

The report is a real one made hostile throughout (``_hostile.py``). Without a browser, the
page and every chart in its payloads are parsed and must hold only the markup the renderer
writes. In Chromium, after every pair, transcript and collapsible has been opened (so the
script has rendered every payload), no dialog fired, the DOM holds no injected element,
attribute or link, and every hostile field is on the page as text. That check also runs with
the page's Content-Security-Policy removed: the CSP would block an injected script, so it
would hide an escaping bug from the dialog check; without it, escaping alone must hold.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from axis_eval.report.html import render_html, write_html

from ._hostile import HOSTILE, Hostile, hostile_report
from ._project import Reports, axis, shared_reports
from .helpers import OpenReport

pytestmark = pytest.mark.slow  # drives headless Chromium through Playwright

PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt", "dd",
    "div", "main", "section", "figure", "svg", "desc", "text", "rect", "figcaption", "p",
    "label", "input", "span", "table", "caption", "thead", "tr", "th", "tbody", "td", "a",
    "details", "summary", "ul", "li", "code", "pre", "footer", "script", "line", "circle",
    "strong",
}  # fmt: skip
"""Every element the renderer writes into the page itself."""

SCRIPT_TAGS = {"h3", "button", "i", "title"}
"""And the ones the page's script adds when it renders a payload."""

CHART_TAGS = {"svg", "title", "desc", "line", "text", "rect", "circle"}

REQUIRED_FIELDS = (
    r"^name$",  # the report's name
    r"^reportId$",
    r"^results\.\d+\.scenarioKey$",
    r"^results\.\d+\.scenarioName$",
    r"^results\.\d+\.agentName$",
    r"^results\.\d+\.prompt$",
    r"^results\.\d+\.error$",
    r"^results\.\d+\.runs\.\d+\.result$",
    r"^results\.\d+\.runs\.\d+\.error$",
    r"^results\.\d+\.runs\.\d+\.warnings\.\d+$",
    r"^results\.\d+\.runs\.\d+\.setupOutput$",
    r"^results\.\d+\.runs\.\d+\.teardownOutput$",
    r"^results\.\d+\.runs\.\d+\.artifacts\.\d+\.path$",
    r"^results\.\d+\.runs\.\d+\.artifacts\.\d+\.content$",
    r"^results\.\d+\.runs\.\d+\.score\.checks\.\d+\.check$",
    r"^results\.\d+\.runs\.\d+\.score\.checks\.\d+\.rationale$",
    r"^results\.\d+\.runs\.\d+\.score\.audits\.\d+\.rationale$",
    r"^results\.\d+\.score\.withheldReason$",
    r"^results\.\d+\.resolvedConfig\.<key>$",
    r"^warnings\.\d+$",
    r"^loadFailures\.\d+\.error$",
    r"^beforeAllOutput$",
    r"^afterAllOutput$",
    r"^entries\.\d+\.text$",  # transcripts
    r"^entries\.\d+\.tool\.name$",
    r"^entries\.\d+\.tool\.input\.command$",
    r"^entries\.\d+\.tool\.input\.<key>$",
    r"^entries\.\d+\.tool\.output$",
    r"^baselineName$",  # the baseline comparison
    r"^vanished\.\d+\.scenarioKey$",
)
"""Fields the hostile report must have made hostile (the brief's list, at least)."""

NOT_SHOWN = (
    r"^(results\.\d+\.runs\.\d+\.)?endedAt$",  # the page shows durations, not end times
    r"^entries\.\d+\.timestamp$",  # ... and offsets from the start
    r"^entries\.\d+\.tool\.(id|startedAt|endedAt)$",
    r"^sessionId$",
    r"^configDir$",  # the config's path is shown
    r"^results\.\d+\.file$",  # the representative's result.json: linked from its run
    r"^results\.\d+\.runs\.\d+\.score\.insights\.\d+$",  # the pair's insights are shown
)
"""Text fields the page does not show at all (each checked to be free text by the models)."""


NOT_WRITTEN_OUT = (r"^(results\.\d+\.runs\.\d+\.)?startedAt$",)
"""In a payload, but not written out by the page's script (the runs table shows durations)."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Hostile]:
    reports: Reports = shared_reports(tmp_path_factory)
    root = tmp_path_factory.mktemp("hostile") / "proj"
    shutil.copytree(reports.root, root)
    assert axis(root, "baseline", "set", "main", "--from", reports.scored.name).returncode == 0
    done = axis(root, "baseline", "compare", "main", "--report", reports.scored.name, "--json")
    source = root / ".axis" / "reports" / reports.scored.name
    target = tmp_path_factory.mktemp("hostile-report") / reports.scored.name
    return hostile_report(source, json.loads(done.stdout), target)


class Markup(HTMLParser):
    """Every element, attribute, comment and piece of text a parser finds."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        else:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def parse(markup: str) -> Markup:
    parser = Markup()
    parser.feed(markup)
    parser.close()
    return parser


def injected(found: Markup, allowed: set[str]) -> list[str]:
    """What in ``found`` did not come from the renderer: elements, handlers, links."""
    bad = [f"<{t}>" for t, _ in found.tags if t not in allowed]
    for tag, attrs in found.tags:
        for name, value in attrs.items():
            if name.startswith("on") or name in ("src", "srcdoc", "style", "formaction"):
                bad.append(f"<{tag} {name}>")
            if name == "href" and not (value or "").startswith("#"):
                bad.append(f"<{tag} href={value!r}>")
    bad += [f"<!--{c}-->" for c in found.comments]
    return bad


def strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def markers(text: str) -> set[int]:
    """The hostile fields in ``text`` (links are percent-encoded: read decoded too)."""
    return {int(m) for m in re.findall(r"⟦(\d+)⟧", text + unquote(text))}


def test_the_hostile_report_is_hostile_where_the_brief_says(hostile: tuple[Path, Hostile]) -> None:
    _, made = hostile
    paths = set(made.fields)
    missing = [p for p in REQUIRED_FIELDS if not any(re.match(p, path) for path in paths)]
    assert missing == [], sorted(paths)


def test_hostile_text_is_only_text_in_the_page_and_its_charts(
    hostile: tuple[Path, Hostile],
) -> None:
    folder, made = hostile
    page = render_html(folder)
    found = parse(page)
    assert injected(found, PAGE_TAGS) == []
    ours = [text for attrs, text in found.scripts if attrs.get("type") is None]
    assert len(ours) == 1 and ours[0].startswith("// axis-eval HTML report")
    payload_texts = [
        (attrs, text) for attrs, text in found.scripts if attrs.get("type") is not None
    ]
    assert len(payload_texts) + 1 == len(found.scripts) == page.count("</script>")
    decoded: list[Any] = []
    for attrs, text in payload_texts:
        assert attrs["type"] == "application/x-axis-gzip"
        assert re.fullmatch(r"[A-Za-z0-9+/=]+", text), attrs  # base64: nothing to close
        decoded.append(json.loads(gzip.decompress(base64.b64decode(text))))
    texts = strings(decoded)
    charts = [t for t in texts if t.startswith("<svg")]
    assert len(charts) >= 2  # the waterfall and the distribution of the scored pair
    for chart in charts:
        parsed = parse(chart)
        assert injected(parsed, CHART_TAGS) == [], chart
    assert any(HOSTILE in "".join(parse(chart).text) for chart in charts)  # tool names
    # The hostile text reads back whole, as text, from the page itself ...
    static = "".join(found.text) + "".join(
        v or "" for _, attrs in found.tags for v in attrs.values()
    )
    assert HOSTILE in static
    # ... and every hostile field reached the page or a payload.
    shown = markers(static) | markers("\n".join(texts))
    unshown = made.unshown(shown)
    left = sorted(p for p in unshown if not any(re.match(n, p) for n in NOT_SHOWN))
    assert left == [], "\n".join(left)


EXPAND_ALL = """async () => {
  const settle = () => new Promise((r) => setTimeout(r, 100));
  const size = () => document.getElementsByTagName('*').length;
  const closed = 'details:not([open])';
  const shows = 'button[data-action="show-transcript"][aria-expanded="false"]:not([disabled])';
  const more = 'button:not([data-action]):not([hidden])';
  const deadline = performance.now() + 60000;
  let rounds = 0;
  while (performance.now() < deadline) {
    rounds++;
    const before = size();
    let changed = false;
    for (const d of document.querySelectorAll(closed)) { d.open = true; changed = true; }
    for (const b of document.querySelectorAll(shows)) { b.click(); changed = true; }
    for (const b of document.querySelectorAll(more)) { b.click(); changed = true; }
    await settle();  // toggle events, payload decoding and rendering happen meanwhile
    const pending = document.querySelectorAll('[data-rendered="pending"], button[disabled]');
    if (!changed && !pending.length && size() === before) return rounds;
  }
  return -1;
}"""
"""Open every pair, transcript, "show more" and collapsible until nothing is left closed."""

DOM_FACTS = """() => {
  const all = [...document.querySelectorAll('*')];
  const handlers = [];
  const links = [];
  for (const el of all) {
    for (const a of el.attributes) {
      if (a.name.startsWith('on') || ['src', 'srcdoc', 'style', 'formaction'].includes(a.name))
        handlers.push(el.tagName + ' ' + a.name);
    }
    if (el.hasAttribute('href')) {
      const url = new URL(el.getAttribute('href'), location.href);
      if (!['file:', 'about:'].includes(url.protocol)) links.push(el.getAttribute('href'));
    }
  }
  const values = all.flatMap((el) => [...el.attributes].map((a) => a.value));
  return {
    tags: [...new Set(all.map((el) => el.localName))],
    handlers, links,
    scripts: document.scripts.length,
    payloads: document.querySelectorAll('script[type="application/x-axis-gzip"]').length,
    text: document.documentElement.textContent + '\\n' + values.join('\\n'),
    entries: document.querySelectorAll('.transcript .entry').length,
  };
}"""


@pytest.mark.parametrize("csp", ["as written", "without its CSP"])
def test_hostile_report_in_chromium_runs_nothing(
    hostile: tuple[Path, Hostile], open_report: OpenReport, tmp_path: Path, csp: str
) -> None:
    folder, made = hostile
    page_file = write_html(folder, tmp_path / "report.html")
    if csp != "as written":
        text = page_file.read_text(encoding="utf-8")
        stripped = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
        assert stripped != text
        page_file.write_text(stripped, encoding="utf-8")
    opened = open_report(page_file)
    page = opened.page
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    assert page.evaluate(EXPAND_ALL) > 0
    page.wait_for_selector(".transcript .entry", state="attached")
    page.wait_for_timeout(300)  # an injected <img onerror> would fire by now
    facts = page.evaluate(DOM_FACTS)
    assert dialogs == []
    assert set(facts["tags"]) <= PAGE_TAGS | SCRIPT_TAGS
    assert facts["handlers"] == [] and facts["links"] == []
    assert facts["scripts"] == facts["payloads"] + 1
    assert facts["entries"] > 0  # the transcripts were rendered
    assert HOSTILE in facts["text"]
    unshown = made.unshown(markers(facts["text"]))
    not_shown = (*NOT_SHOWN, *NOT_WRITTEN_OUT)
    left = sorted(p for p in unshown if not any(re.match(n, p) for n in not_shown))
    assert left == [], "\n".join(left)
    opened.assert_clean()
