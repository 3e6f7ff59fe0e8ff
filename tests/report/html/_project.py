"""Real reports for the HTML tests: a tiny project run by the real `axis run`.

The agent is an NDJSON script written into the project; the judge is the embedded scripted
model server answering from a tape (goal rationale and interaction audits with rationales),
so every report these helpers make comes from the real pipeline, never from hand-written JSON.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
SRC = REPO / "src"

HOSTILE = "</script><img src=x onerror=alert(1)><!--"
"""Text a transcript or manifest may carry that must never break out of the page."""

AGENT = r"""
import json, os, sys, time

def emit(**event):
    print(json.dumps(event), flush=True)

prompt = sys.stdin.read()
run = int(os.environ.get("AXIS_RUN_INDEX", "1"))
if "crash" in prompt:
    print("the agent crashed on purpose", file=sys.stderr)
    sys.exit(3)
hostile = HOSTILE_TEXT
emit(type="session", id=f"s{run}")
emit(type="thinking", text="Look first, then write.")
emit(type="assistant", text="Working on it. " + hostile)
emit(type="tool_call", id="t1", name="Bash", input={"command": "ls -la"})
time.sleep(0.6)
emit(type="tool_result", id="t1", output="total 0\n" + hostile)
# run 1 writes all three words, run 2 one, run 3 two: three different composites,
# the median is run 3's.
words = {1: "alpha beta gamma", 2: "alpha", 3: "alpha beta"}.get(run, "alpha")
with open("out.txt", "w") as f:
    f.write(words + "\n")
emit(type="tool_call", id="t2", name="Write", input={"file_path": "out.txt", "content": words})
emit(type="tool_result", id="t2", output="ok")
emit(type="tool_call", id="t3", name="Bash", input={"command": "curl http://127.0.0.1:9/x"})
emit(type="tool_result", id="t3", output="connection refused", is_error=True)
with open("big.log", "w") as f:
    f.write("x" * 70000 + "\n")
emit(type="usage", input_tokens=1000 * run, output_tokens=50, cost_usd=0.01 * run)
emit(type="result", text="Wrote out.txt. " + hostile)
"""

TAPE = {
    "version": 1,
    "conversations": [
        {
            "name": "goal",
            "match": "GOAL JUDGMENT",
            "turns": [
                {
                    "text": json.dumps(
                        {"checks": [{"index": 1, "score": 8, "rationale": "Polite. " + HOSTILE}]}
                    )
                }
            ],
        },
        {
            "name": "audit",
            "match": "INTERACTION AUDIT",
            "turns": [
                {
                    "text": json.dumps(
                        {
                            "audits": [
                                {
                                    "id": 1,
                                    "success": 1.0,
                                    "weight": 0.6,
                                    "relevance": 0.5,
                                    "rationale": "Listing was not needed.",
                                },
                                {
                                    "id": 3,
                                    "success": 0.0,
                                    "weight": 1.0,
                                    "relevance": 0.3,
                                    "rationale": "The request failed.",
                                },
                            ],
                            "necessity": {
                                "environment": {
                                    "score": 0.7,
                                    "unnecessary_ids": [1],
                                    "rationale": "ls was avoidable.",
                                },
                                "service": {"score": 1.0, "unnecessary_ids": []},
                                "agent": {"score": 1.0, "unnecessary_ids": []},
                            },
                        }
                    )
                }
            ],
        },
    ],
}


def write_project(root: Path, *, crash: bool = False) -> Path:
    """A project with one scenario (three deterministic checks and one judged), optionally a
    second scenario whose agent crashes; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.py").write_text(AGENT.replace("HOSTILE_TEXT", repr(HOSTILE)))
    (root / "tape.json").write_text(json.dumps(TAPE))
    config = {
        "name": "html",
        "scenarios": "./scenarios",
        "agents": ["scripted"],
        "adapters": {
            "scripted": {
                "command": [sys.executable, "{config_dir}/agent.py"],
                "args": [],
                "prompt_via": "stdin",
                "output": "ndjson",
            }
        },
        "judging": {"model": "anthropic:claude-sonnet-4-5"},
        "model_server": {"tape": "./tape.json"},
        "artifacts": ["*.txt", "*.log"],
    }
    (root / "axis.config.json").write_text(json.dumps(config, indent=2))
    scenarios = root / "scenarios"
    scenarios.mkdir(exist_ok=True)
    words = {
        "name": "Write words " + HOSTILE,
        "prompt": "Write the words alpha beta gamma into out.txt",
        "judge": [
            {"check": "has alpha", "run": "grep -q alpha out.txt", "weight": 0.25},
            {"check": "has beta", "run": "grep -q beta out.txt", "weight": 0.25},
            {"check": "has gamma", "run": "grep -q gamma out.txt", "weight": 0.25},
            {"check": "the answer is polite", "weight": 0.25},
        ],
        "setup": [
            {
                "action": "run_script",
                "command": "printf '## Setup\\nstaged *nothing*\\n' >> \"$AXIS_OUTPUT\"",
            }
        ],
    }
    (scenarios / "words.json").write_text(json.dumps(words, indent=2))
    if crash:
        body = {"name": "Crash", "prompt": "crash now", "judge": "it did not crash"}
        (scenarios / "crash.json").write_text(json.dumps(body, indent=2))
    return root


def cli_env() -> dict[str, str]:
    """The environment of an ``axis`` child process."""
    names = ("PATH", "USER", "SHELL", "LANG", "TERM", "AXIS_AGENTS_DIR", "CI")
    env = {k: os.environ[k] for k in names if k in os.environ}
    env.setdefault("PATH", os.defpath)
    return {**env, "PYTHONPATH": str(SRC), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}


def axis(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m axis_eval ARGS -c root`` to the end."""
    return subprocess.run(
        [sys.executable, "-m", "axis_eval", *args, "-c", str(root)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def run_report(root: Path, *args: str) -> Path:
    """``axis run ARGS`` on the project; returns the (only new) report folder."""
    base = root / ".axis" / "reports"
    before = set(base.iterdir()) if base.is_dir() else set()
    done = axis(root, "run", *args)
    after = set(base.iterdir()) - before
    assert len(after) == 1, (done.returncode, done.stdout, done.stderr)
    return after.pop()


def payloads(page: str) -> dict[str, Any]:
    """Every gzip+base64 payload of a page, decoded (base64 → gzip → JSON) by id."""
    found = re.findall(
        r'<script type="application/x-axis-gzip" data-payload="([^"]+)">([^<]*)</script>', page
    )
    return {pid: json.loads(gzip.decompress(base64.b64decode(data))) for pid, data in found}


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of table cells by row."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[dict[str, Any]] = []
        self._field: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self.tags.append((tag, named))
        if tag == "tr" and "pair-row" in (named.get("class") or ""):
            self.rows.append({"@scenario": named["data-scenario"], "@agent": named["data-agent"]})
        self._field = named.get("data-field") if tag == "td" else None

    def handle_data(self, data: str) -> None:
        if self._field and self.rows:
            self.rows[-1][self._field] = self.rows[-1].get(self._field, "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._field = None


def parse(page: str) -> Tags:
    """The page's tags and summary rows."""
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


def expected_cells(pair: dict[str, Any]) -> dict[str, str]:
    """What the summary row of a manifest pair must show: the representative's integers."""
    score = pair.get("score") or {}
    fields = ("axisScore", "goalAchievement", "environment", "service", "agent")
    return {f: "–" if score.get(f) is None else str(score[f]) for f in fields}


@dataclass(frozen=True)
class Reports:
    """The reports the HTML tests read, made once per test session by real runs."""

    root: Path
    scored: Path
    """``--runs 3``: a scored pair (composites 77, 57, 67: representative #3) and a crash."""
    unscored: Path
    """``--no-score``: the same scenarios, one run each."""


_MADE: list[Reports] = []


def shared_reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    """The session's :class:`Reports` (the runs take a few seconds: made once)."""
    if not _MADE:
        root = write_project(tmp_path_factory.mktemp("html") / "proj", crash=True)
        scored = run_report(root, "--runs", "3")
        unscored = run_report(root, "--no-score")
        _MADE.append(Reports(root, scored, unscored))
    return _MADE[0]
