"""``axis score ID --rejudge K`` end to end: a real run judged by an API judge on the
scripted model server over HTTP, then re-judged with grades that change call by call.

The tape answers by prompt, never by call count, so the test moves the server to the next
tape after each goal judgment (``on_record`` runs before the answer is sent, and the
re-judgments of a report are made one after another): the grades each run gets are known
in advance and the spreads can be worked out by hand.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import math
import re
import shutil
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axis_eval import load_config
from axis_eval.cli.main import cli
from axis_eval.pipeline import RunOptions, run_async
from axis_eval.report.models import ReportManifest
from axis_eval.runs.baselines import compare, read_baseline
from axis_eval.scoring.scorer import JudgeScorer
from axis_model_server import ScriptedModelServer, parse_tape

from .helpers import FAST, audit_json, goal_json, judge_tape

AGENT = Path(__file__).with_name("events_agent.py")
NUMBERED = """
import json, os, sys
from pathlib import Path
def emit(**event): sys.stdout.write(json.dumps(event) + "\\n"); sys.stdout.flush()
Path("hello.txt").write_text("Hello")
run = os.environ["AXIS_RUN_INDEX"]
emit(type="tool_call", id="t1", name="Bash", input={"command": "printf Hello > hello.txt # " + run})
emit(type="tool_result", id="t1", output="", is_error=False)
emit(type="tool_call", id="t2", name="Read", input={"file_path": "hello.txt"})
emit(type="tool_result", id="t2", output="Hello", is_error=False)
emit(type="result", text="Run " + os.environ["AXIS_RUN_INDEX"] + ": hello.txt says Hello.")
"""
"""Like events_agent.py, but each run's answer names the run: no two runs' judge prompts
are alike, so one run's cached answer never serves another."""
AUDIT = audit_json([1, 2])
ENV = {"PATH": "/usr/bin:/bin"}


class GradedServer:
    """A scripted model server whose goal grade moves to the next of ``grades`` after
    every goal judgment once :meth:`arm` is called (before: always ``first``)."""

    def __init__(self, first: int) -> None:
        self.queue: list[int] = []
        self.goal_calls = 0
        self.server = ScriptedModelServer(self._tape(first), on_record=self._seen).start()

    @staticmethod
    def _tape(grade: int) -> Any:
        return parse_tape(judge_tape(goal_json(grade), AUDIT))

    def arm(self, grades: list[int]) -> None:
        self.queue = list(grades)
        self.server.tape = self._tape(self.queue.pop(0))

    def _seen(self, record: Any) -> None:
        if getattr(record, "conversation", None) != "goal":
            return
        self.goal_calls += 1
        if self.queue:
            self.server.tape = self._tape(self.queue.pop(0))


@pytest.fixture
def graded() -> Iterator[Callable[[int], GradedServer]]:
    made: list[GradedServer] = []

    def start(first: int) -> GradedServer:
        made.append(GradedServer(first))
        return made[-1]

    yield start
    for g in made:
        g.server.stop()


def project(
    root: Path, judging: dict[str, Any], runs: int, agent: Path = AGENT, **extra: Any
) -> Path:
    config = {
        "agents": ["events"],
        "adapters": {
            "events": {"command": [sys.executable, str(agent)], "args": [], "output": "ndjson"}
        },
        "judging": judging,
        **extra,
    }
    scenario = {
        "name": "Hello",
        "prompt": "Create hello.txt saying Hello",
        "runs": runs,
        "judge": [{"check": "the answer says what the file holds", "weight": 1}],
    }
    root.mkdir()
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    (root / "scenarios" / "hello.json").write_text(json.dumps(scenario))
    return root


async def recorded(root: Path) -> ReportManifest:
    loaded = load_config(str(root / "axis.config.json"))
    scorer = JudgeScorer.for_config(loaded, {}, ENV, policy=FAST)
    done = await run_async(
        RunOptions(loaded=loaded, scorer=scorer, environ=ENV, handle_signals=False)
    )
    assert done.manifest.summary.runs_completed >= 1
    return done.manifest


def manifest_of(root: Path, report_id: str) -> ReportManifest:
    path = root / ".axis" / "reports" / report_id / "report.json"
    if not path.is_file():
        path = next(root.rglob(f"{report_id}/report.json"))
    return ReportManifest.model_validate_json(path.read_bytes())


def test_rejudged_spreads_equal_the_hand_computed_ones(
    graded: Callable[[int], GradedServer], tmp_path: Path, axis: Any
) -> None:
    g = graded(9)
    judging = {"model": "anthropic:claude-haiku-4-5", "base_url": g.server.url}
    numbered = tmp_path / "numbered_agent.py"
    numbered.write_text(NUMBERED)
    root = project(tmp_path / "p", judging, runs=3, agent=numbered)
    first = asyncio.run(recorded(root))
    # Empty the answer cache: re-scoring then asks too, so each run's stored grade is the
    # first of its three (run 1: 9, then 8 and 9; run 2: 5, then 5 and 6; run 3: 7 always).
    shutil.rmtree(root / ".axis" / "judge-cache")
    g.arm([9, 8, 9, 5, 5, 6, 7, 7, 7])
    before = g.goal_calls
    out = axis("score", first.report_id, "--rejudge", "2", "--yes", cwd=root)
    assert out.exit_code == 0, out.stderr
    assert g.goal_calls - before == 9, "each run: one re-score and two re-judgments"
    err = out.stderr.splitlines()
    estimate = next(i for i, line in enumerate(err) if line.startswith("re-judging 3 runs × 2"))
    assert estimate < next(i for i, line in enumerate(err) if line.startswith("judge calls:"))
    assert "≈12 judge calls" in err[estimate] and "≈$" in err[estimate]
    assert "re-judging: 12 calls" in out.stderr

    pair = manifest_of(root, first.report_id).results[0]
    noise = pair.judge_noise
    assert noise is not None and noise.rejudge == 2 and noise.runs == 3
    assert noise.judge == "anthropic:claude-haiku-4-5" and not noise.simulated
    goal = {r.run_index: r.grades["goalAchievement"] for r in noise.grades}
    assert goal == {1: [90, 80, 90], 2: [50, 50, 60], 3: [70, 70, 70]}
    # By hand: runs 1 and 2 each vary by ((10/3)² + (20/3)² + (10/3)²) / 2 = 100/3, run 3 by
    # 0; pooled over 2 + 2 + 2 df: (2·100/3 + 2·100/3 + 0) / 6 = 200/9, σ 4.71. The stored
    # grades 90, 50, 70 vary by (20² + 20² + 0) / 2 = 400, σ 20: the judge's share 200/9/400.
    g_noise = noise.scores["goalAchievement"]
    assert g_noise.judge_stdev == round(math.sqrt(200 / 9), 2) == 4.71
    assert g_noise.runs_stdev == 20
    assert g_noise.judge_share == round((200 / 9) / 400, 4) == 0.0556
    # The audits never changed: no judge spread in Env, Service, Agent.
    for name in ("environment", "service", "agent"):
        assert noise.scores[name].judge_stdev == 0, name
        assert noise.scores[name].judge_share is None  # the runs agree too: 0/0
    # The composite's grades move with the goal; its pooled spread is their own.
    axis_grades = [r.grades["axisScore"] for r in noise.grades]
    assert all(len(a) == 3 for a in axis_grades) and axis_grades[0] != axis_grades[1]
    pooled = math.sqrt(statistics.fmean(statistics.variance(a) for a in axis_grades))
    assert noise.scores["axisScore"].judge_stdev == round(pooled, 2)
    stored = [a[0] for a in axis_grades]
    assert noise.scores["axisScore"].runs_stdev == round(statistics.stdev(stored), 2)

    text = axis("reports", first.report_id, cwd=root).stdout
    assert "re-judged ×2 over 3 runs, anthropic:claude-haiku-4-5" in text
    assert "Goal 4.7 · 20 · 6%" in text
    html = axis("reports", first.report_id, "--html", cwd=root)
    assert html.exit_code == 0, html.stderr
    page = Path(html.stdout.strip().splitlines()[-1]).read_text()
    found = re.findall(r'data-payload="[^"]+">([^<]*)</script>', page)
    decoded = [json.loads(gzip.decompress(base64.b64decode(p))) for p in found]
    stats = [line for d in decoded if isinstance(d, dict) for line in d.get("statsLines", [])]
    assert "Goal 4.7 · 20 · 6%" in " ".join(stats)

    # A baseline from the re-judged report keeps the judge's σ; the band adds both.
    assert axis("baseline", "set", "--from", first.report_id, cwd=root).exit_code == 0
    baseline = read_baseline(root)
    assert baseline is not None
    entry = baseline.results["hello"][pair.agent_name]
    assert entry.judge_stdev == noise.scores["axisScore"].judge_stdev and entry.rejudged == 2
    [cmp] = compare(baseline, manifest_of(root, first.report_id)).entries
    assert entry.stdev is not None and entry.judge_stdev is not None
    expected = max(1.0, 2 * math.sqrt(entry.stdev**2 + entry.judge_stdev**2))
    assert cmp.band == round(expected, 2) and cmp.judge_stdev == entry.judge_stdev

    # A plain re-score drops the judge noise: it described the grades of that scoring.
    assert axis("score", first.report_id, cwd=root).exit_code == 0
    assert manifest_of(root, first.report_id).results[0].judge_noise is None


def test_without_a_tty_or_yes_it_refuses_before_any_call(
    graded: Callable[[int], GradedServer], tmp_path: Path, axis: Any
) -> None:
    g = graded(7)
    judging = {"model": "anthropic:claude-haiku-4-5", "base_url": g.server.url}
    root = project(tmp_path / "p", judging, runs=1)
    first = asyncio.run(recorded(root))
    calls = len(g.server.requests)
    out = axis("score", first.report_id, "--rejudge", "3", cwd=root)
    assert out.exit_code == 2
    assert "re-judging 1 run × 3" in out.stderr, "the cost is shown before refusing"
    assert "pass --yes" in out.stderr and "Traceback" not in out.stderr
    assert len(g.server.requests) == calls
    assert manifest_of(root, first.report_id).results[0].judge_noise is None


def test_a_terminal_asks_and_no_means_nothing_happens(
    graded: Callable[[int], GradedServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    g = graded(7)
    judging = {"model": "anthropic:claude-haiku-4-5", "base_url": g.server.url}
    root = project(tmp_path / "p", judging, runs=1)
    first = asyncio.run(recorded(root))
    calls = len(g.server.requests)
    monkeypatch.setattr("axis_eval.cli.score._interactive", lambda: True)
    monkeypatch.chdir(root)
    no = CliRunner().invoke(cli, ["score", first.report_id, "--rejudge", "1"], input="n\n")
    assert no.exit_code == 1 and "Re-judge?" in no.stderr
    assert len(g.server.requests) == calls
    yes = CliRunner().invoke(cli, ["score", first.report_id, "--rejudge", "1"], input="y\n")
    assert yes.exit_code == 0, yes.stderr
    assert len(g.server.requests) > calls
    noise = manifest_of(root, first.report_id).results[0].judge_noise
    assert noise is not None and noise.runs == 1
    # One run: a judge spread, but no runs' spread to share it with.
    assert noise.scores["goalAchievement"].judge_stdev == 0
    assert noise.scores["goalAchievement"].runs_stdev is None


def test_on_the_embedded_scripted_server_the_cost_is_simulated(tmp_path: Path, axis: Any) -> None:
    root = tmp_path / "p"
    project(
        root,
        {"model": "anthropic:claude-haiku-4-5"},
        runs=3,
        model_server={"tape": "judge.json"},
    )
    (root / "judge.json").write_text(json.dumps(judge_tape(goal_json(6), AUDIT)))
    first = asyncio.run(recorded(root))
    assert first.results[0].score is not None
    out = axis("score", first.report_id, "--rejudge", "1", "--yes", cwd=root)
    assert out.exit_code == 0, out.stderr
    assert "simulated (the scripted model server: no money spent)" in out.stderr
    assert "re-judging: 6 calls" in out.stderr and "simulated" in out.stderr.splitlines()[-1]
    noise = manifest_of(root, first.report_id).results[0].judge_noise
    assert noise is not None and noise.simulated and noise.runs == 3
    assert [r.grades["goalAchievement"] for r in noise.grades] == [[60, 60]] * 3
    assert noise.scores["goalAchievement"].judge_stdev == 0
    assert "simulated" in axis("reports", first.report_id, cwd=root).stdout
