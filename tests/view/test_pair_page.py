"""Two transcripts side by side (``axis view`` compare): real reports, real Chromium.

Two reports are made by the real ``axis run`` on a scripted NDJSON agent, judged by the
embedded scripted model server (a tape). Before the second run a ``variant`` file beside the
agent makes it take one extra step (``cat notes.txt`` after the ``Read``) and write other
content (the prompt stays the same: a changed prompt is a changed first step), so the known
first divergence is that inserted step, and the ``Write`` after it is ``changed``. The fragment is
opened in Chromium inside a page whose CSP allows no script at all and only our stylesheet.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from axis_eval.report.models import ReportManifest
from axis_eval.runs.store import read_manifest
from axis_eval.view.pair_page import PAIR_COMPARE_CSS, TEXT_CHARS, pair_compare_html
from report.html.helpers import ARTIFACTS, chromium_session

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = pytest.mark.slow  # two `axis run`s end to end, and headless Chromium

SRC = Path(__file__).resolve().parents[2] / "src"
HOSTILE = "</script><img src=x onerror=alert(1)><!--"
KEY, AGENT = "words", "scripted"

AGENT_SCRIPT = r"""
import json, pathlib, sys

def emit(**event):
    print(json.dumps(event), flush=True)

prompt = sys.stdin.read()
hostile = HOSTILE_TEXT
variant = pathlib.Path(__file__).with_name("variant").exists()
words = "alpha beta" if variant else "alpha"
emit(type="session", id="s1")
emit(type="assistant", text="Working on it. " + hostile)
emit(type="tool_call", id="t1", name="Bash", input={"command": "ls -la"})
emit(type="tool_result", id="t1", output="total 0\n" + hostile)
emit(type="tool_call", id="t2", name="Read", input={"file_path": "notes.txt"})
emit(type="tool_result", id="t2", output="x" * 9000)
if variant:
    emit(type="tool_call", id="t9", name="Bash", input={"command": "cat notes.txt"})
    emit(type="tool_result", id="t9", output="no notes", is_error=True)
with open("out.txt", "w") as f:
    f.write(words + "\n")
emit(type="tool_call", id="t3", name="Write", input={"file_path": "out.txt", "content": words})
emit(type="tool_result", id="t3", output="ok")
emit(type="assistant", text="Wrote out.txt.")
emit(type="result", text="Wrote out.txt.")
"""

AUDIT = {
    "audits": [
        {"id": 1, "success": 1.0, "weight": 0.6, "relevance": 0.5, "rationale": "Listing idle."},
        {"id": 2, "success": 1.0, "weight": 0.4, "relevance": 0.9, "rationale": HOSTILE},
    ],
    "necessity": {
        "environment": {"score": 0.7, "unnecessary_ids": [1], "rationale": "ls was avoidable."}
    },
}
TAPE = {
    "version": 1,
    "conversations": [
        {
            "name": "goal",
            "match": "GOAL JUDGMENT",
            "turns": [
                {
                    "text": json.dumps(
                        {"checks": [{"index": 1, "score": 7, "rationale": "Polite. " + HOSTILE}]}
                    )
                }
            ],
        },
        {"name": "audit", "match": "INTERACTION AUDIT", "turns": [{"text": json.dumps(AUDIT)}]},
    ],
}


def _scenario(root: Path, prompt: str) -> None:
    body = {
        "name": "Words",
        "prompt": prompt,
        "judge": [
            {"check": "has alpha", "run": "grep -q alpha out.txt", "weight": 0.5},
            {"check": "the answer is polite " + HOSTILE, "weight": 0.5},
        ],
    }
    (root / "scenarios" / f"{KEY}.json").write_text(json.dumps(body))


def _axis_run(root: Path) -> Path:
    base = root / ".axis" / "reports"
    before = set(base.iterdir()) if base.is_dir() else set()
    names = ("PATH", "USER", "SHELL", "LANG", "TERM", "AXIS_AGENTS_DIR", "CI")
    env = {k: os.environ[k] for k in names if k in os.environ}
    env.update(PYTHONPATH=str(SRC), NO_COLOR="1", PYTHONUNBUFFERED="1")
    done = subprocess.run(
        [sys.executable, "-m", "axis_eval", "run", "-c", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    made = set(base.iterdir()) - before if base.is_dir() else set()
    assert done.returncode == 0 and len(made) == 1, (done.returncode, done.stdout, done.stderr)
    return made.pop()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("pair") / "proj"
    (root / "scenarios").mkdir(parents=True)
    (root / "agent.py").write_text(AGENT_SCRIPT.replace("HOSTILE_TEXT", repr(HOSTILE)))
    (root / "tape.json").write_text(json.dumps(TAPE))
    config = {
        "name": "pair",
        "scenarios": "./scenarios",
        "agents": [AGENT],
        "adapters": {
            AGENT: {
                "command": [sys.executable, "{config_dir}/agent.py"],
                "args": [],
                "prompt_via": "stdin",
                "output": "ndjson",
            }
        },
        "judging": {"model": "anthropic:claude-sonnet-4-5"},
        "model_server": {"tape": "./tape.json"},
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    _scenario(root, "Write the words into out.txt.")
    first = _axis_run(root)
    (root / "variant").write_text("on")
    second = _axis_run(root)
    return first, second


def _manifest(folder: Path) -> ReportManifest:
    return read_manifest(folder)


def _fragment(a: Path, b: Path, key: str = KEY, agent: str = AGENT) -> str:
    return pair_compare_html(a, _manifest(a), b, _manifest(b), key, agent)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium_session()


def _page_html(fragment: str) -> str:
    digest = base64.b64encode(hashlib.sha256(PAIR_COMPARE_CSS.encode()).digest()).decode()
    csp = f"default-src 'none'; style-src 'sha256-{digest}'"
    return (
        f'<!doctype html><html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">'
        f"<style>{PAIR_COMPARE_CSS}</style></head><body>{fragment}</body></html>"
    )


def _open(browser: Browser, fragment: str, scheme: Any) -> tuple[Page, list[str]]:
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append("request " + r.url))
    page.set_content(_page_html(fragment), wait_until="load")
    return page, errors


def test_divergence_is_highlighted_at_the_inserted_step(
    reports: tuple[Path, Path], browser: Browser
) -> None:
    first, second = reports
    fragment = _fragment(first, second)
    for scheme in ("light", "dark"):
        page, errors = _open(browser, fragment, scheme)
        rows = page.locator(".pc-row[data-relation]")
        relations = rows.evaluate_all("rs => rs.map(r => r.dataset.relation)")
        diverge = page.locator("#diverge")
        assert diverge.count() == 1 and diverge.is_visible()
        assert diverge.get_attribute("data-relation") == "only-right"
        assert "First divergence" in diverge.inner_text()
        right = diverge.locator(".pc-cell").nth(1)
        assert "cat notes.txt" in right.inner_text()
        at = int(diverge.get_attribute("data-row") or 0) - 1
        assert at == 4 and relations[:at] == ["same"] * at  # prompt, text, ls, read came first
        assert relations[at + 1 :].count("changed") == 1 and "only-left" not in relations
        changed = page.locator('.pc-row[data-relation="changed"]')
        assert "Write" in changed.inner_text() and "alpha beta" in changed.inner_text()
        # the two columns of a row sit side by side, on the same line
        for n in range(rows.count()):
            cells = rows.nth(n).locator(":scope > .pc-cell")
            left, rightbox = cells.nth(0).bounding_box(), cells.nth(1).bounding_box()
            assert left and rightbox and abs(left["y"] - rightbox["y"]) < 1
            assert left["x"] + left["width"] <= rightbox["x"]
        # signals and rationale beside the ls step, judges' checks beside the columns
        ls_step = rows.nth(2).locator(".pc-cell").nth(0)
        assert "weight 0.60" in ls_step.inner_text() and "Listing idle." in ls_step.inner_text()
        judges = page.locator(".pc-judges").inner_text()
        assert "Polite." in judges and "7/10" in judges and "ls was avoidable." in judges
        assert page.locator('a[href="#diverge"]').count() == 1
        # hostile text is shown as text, never as markup
        assert page.locator("img, script, iframe").count() == 0
        assert HOSTILE in page.locator(".pair-compare").inner_text()
        # a long output is cut with a note
        assert "more characters: see transcript.json" in page.content()
        assert TEXT_CHARS < 9000
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"view-pair-{scheme}.png"), full_page=True)
        assert not errors, errors
        page.context.close()


def test_background_follows_the_colour_scheme(reports: tuple[Path, Path], browser: Browser) -> None:
    fragment = _fragment(*reports)
    colours = {}
    for scheme in ("light", "dark"):
        page, errors = _open(browser, fragment, scheme)
        colours[scheme] = page.locator(".pair-compare").evaluate(
            "e => getComputedStyle(e).backgroundColor"
        )
        assert not errors, errors
        page.context.close()
    assert colours["light"] == "rgb(255, 255, 255)" and colours["dark"] != colours["light"]


def test_same_report_twice_has_no_divergence(reports: tuple[Path, Path]) -> None:
    first, _ = reports
    fragment = _fragment(first, first)
    assert 'id="diverge"' not in fragment and "took the same steps" in fragment
    assert "representative run" in fragment


def test_missing_pair_or_transcript_is_a_message(reports: tuple[Path, Path]) -> None:
    first, second = reports
    missing = _fragment(first, second, key="nope")
    assert "has no pair nope · scripted" in missing and "pc-message" in missing
    manifest = _manifest(second)
    run = manifest.results[0].runs[0]
    (second / run.dir / "transcript.json").rename(second / run.dir / "transcript.moved")
    try:
        text = _fragment(first, second)
    finally:
        (second / run.dir / "transcript.moved").rename(second / run.dir / "transcript.json")
    assert "has no readable transcript" in text and 'id="diverge"' not in text
    assert "Polite." in text  # the judges' rationale is still shown


def test_fragment_escapes_every_hostile_string(reports: tuple[Path, Path]) -> None:
    fragment = _fragment(*reports)
    assert HOSTILE not in fragment and "<img" not in fragment and "<script" not in fragment
    assert escape(HOSTILE, quote=True) in fragment
    tags = _Tags()
    tags.feed(fragment)
    names = {name for _, attrs in tags.found for name, _ in attrs}
    assert not {n for n in names if n.startswith("on")} and "style" not in names
    assert {tag for tag, _ in tags.found} <= {
        "section",
        "h2",
        "h3",
        "div",
        "p",
        "span",
        "pre",
        "details",
        "summary",
        "aside",
        "a",
    }


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))
