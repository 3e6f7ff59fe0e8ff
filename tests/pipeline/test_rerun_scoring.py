"""Re-running with scoring on: ``--resume`` scores what an interruption left unscored, and
``--failed`` re-runs a pair whose score was withheld.

The agent is a shell script that logs each launch to ``$E2E_DIR/exec.log``; the judge is an
API judge answered by the embedded scripted model server, whose tape the test writes. Each
run's final answer names it (``answer-<scenario>-<run>``), so the tape can grade each run
differently.
"""

from __future__ import annotations

import json
import signal
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from axis_eval.report.models import RunResult
from axis_eval.runs.store import read_manifest
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import build_sparse_index
from helpers.processes import wait_for

from .helpers import (
    Procs,
    cli_env,
    launches,
    observed,
    only_report,
    report_dirs,
    run_cli,
    scenario,
    start_cli,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess

# Run 3 of a scenario blocks until $E2E_DIR/release exists: the test decides when it ends.
AGENT = (
    'echo "$AXIS_SCENARIO $AXIS_RUN_INDEX" >> "$E2E_DIR/exec.log"; '
    'if [ "$AXIS_RUN_INDEX" = 3 ]; then '
    'while [ ! -e "$E2E_DIR/release" ]; do sleep 0.05; done; fi; '
    'answer="answer-$AXIS_SCENARIO-$AXIS_RUN_INDEX"; '
    'printf \'{"type":"assistant","text":"%s"}\\n\' "$answer"; '
    'printf \'{"type":"result","text":"%s"}\\n\' "$answer"'
)


def goal(answer: str, reply: str) -> dict[str, Any]:
    """A tape conversation answering the goal judgment of the run that answered ``answer``."""
    return {
        "name": answer,
        "match": f"/{answer}\\b[\\s\\S]*GOAL JUDGMENT/",
        "turns": [{"text": reply}],
    }


def grade(score: int) -> str:
    return json.dumps({"checks": [{"index": 1, "score": score, "rationale": f"got {score}"}]})


def write_tape(root: Path, *conversations: dict[str, Any]) -> None:
    (root / "tape.yaml").write_text(json.dumps({"version": 1, "conversations": conversations}))


def project(root: Path, scenarios: dict[str, dict[str, Any]], e2e_dir: Path) -> Path:
    write_project(
        root,
        adapters={
            "logger": {
                "command": ["sh", "-c", AGENT],
                "args": [],
                "output": "ndjson",
            }
        },
        scenarios=scenarios,
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
        judging={"model": "anthropic:judge-test", "max_attempts": 1},
        model_server={"tape": "./tape.yaml"},
    )
    return root


def test_resume_scores_runs_an_interrupted_no_score_run_left_unscored(
    tmp_path: Path, e2e_dir: Path, procs: Procs
) -> None:
    goals = {1: 8, 2: 5, 3: 9}
    root = project(tmp_path / "proj", {"rep": scenario(runs=3)}, e2e_dir)
    write_tape(root, *(goal(f"answer-rep-{i}", grade(g)) for i, g in goals.items()))
    env = cli_env(E2E_DIR=str(e2e_dir))

    # A real interruption: runs 1 and 2 finish unscored, run 3 is blocked, SIGKILL.
    axis = procs.add(start_cli(root, "--no-score", "--concurrency", "1", env=env))
    wait_for(lambda: launches(e2e_dir)["rep 3"] == 1, timeout=30, what="run 3 to start")
    folder = only_report(root)
    axis.send_signal(signal.SIGKILL)
    axis.wait(timeout=10)
    killed = read_manifest(folder)
    assert killed.state == "running"
    saved = sorted(p.parent.name for p in folder.glob("scenarios/rep/logger/*/result.json"))
    assert saved == ["run-1", "run-2"]
    # As in AXIS, the sparse index is the scorer's file: a --no-score run writes none.
    assert not list(folder.glob("scenarios/rep/logger/*/sparse-index.txt"))

    (e2e_dir / "release").touch()
    resumed = run_cli(root, "--resume", folder.name, env=env, timeout=60)
    assert resumed.exit_code == 0, resumed.stderr
    assert "Scoring 2 finished run(s) that were never scored" in resumed.stderr
    # No finished job ran again; the killed one ran once more.
    assert launches(e2e_dir) == Counter({"rep 1": 1, "rep 2": 1, "rep 3": 2})

    manifest = read_manifest(folder)
    assert manifest.state == "finished" and manifest.exit_code == 0
    assert not any("not scored" in w for w in manifest.warnings)
    [pair] = manifest.results
    composites: dict[int, float] = {}
    for run in pair.runs:
        assert run.status == "completed" and run.score is not None, run
        assert not run.score.withheld, run.score.withheld_reason
        # Each run was judged on its own transcript: the tape's grade for it, x10.
        assert run.score.goal_achievement == goals[run.run_index] * 10
        assert run.score.axis_score is not None
        composites[run.run_index] = run.score.axis_score
        on_disk = RunResult.model_validate_json((folder / run.dir / "result.json").read_bytes())
        assert on_disk.run.score == run.score
        assert on_disk.files["verdicts"] == f"{run.dir}/verdicts.json"
        assert (folder / run.dir / "verdicts.json").is_file()
        # Written when the run was scored (on the resume), from its saved transcript.
        assert on_disk.files["sparseIndex"] == f"{run.dir}/sparse-index.txt"
        transcript = Transcript.model_validate_json(
            (folder / run.dir / "transcript.json").read_bytes()
        )
        expected = build_sparse_index(transcript, scenario_key="rep", agent_name="logger")
        assert (folder / run.dir / "sparse-index.txt").read_text() == expected.render()
        assert run.score.judge is not None and run.score.judge.calls == 1
    assert len(set(composites.values())) == 3
    median = statistics.median(composites.values())
    nearest = min(composites, key=lambda i: (abs(composites[i] - median), i))
    assert pair.representative_run_index == nearest
    assert pair.score is not None and pair.score.axis_score == composites[nearest]
    assert pair.spread is not None and pair.spread.n == 3
    stats = pair.spread.axis_score
    assert (stats.median, stats.min, stats.max) == (
        median,
        min(composites.values()),
        max(composites.values()),
    )
    assert stats.stdev == round(statistics.stdev(composites.values()), 2)
    assert pair.reliability is not None
    assert (pair.reliability.succeeded, pair.reliability.total) == (3, 3)
    assert pair.pass_rates is not None and pair.pass_rates.n == 3
    assert manifest.summary.average_axis_score == round(composites[nearest])
    assert manifest.model_server is not None and manifest.model_server["requests"] == 3
    # The progress shows the kept runs with their new scores: its last pair line has every
    # run's chip and marks the report's representative.
    chips = " ".join(f"{composites[i]:g}✓{'*' if i == nearest else ''}" for i in (1, 2, 3))
    [last] = [line for line in resumed.stderr.splitlines() if line.strip().startswith("↳ rep")]
    assert last.split()[3] == "3/3" and last.endswith(f"[{chips}]"), last


def test_failed_reruns_only_the_pair_whose_score_was_withheld(
    tmp_path: Path, e2e_dir: Path
) -> None:
    root = project(tmp_path / "proj", {"good": scenario(), "bad": scenario()}, e2e_dir)
    # The judge answers the "bad" run with something that is not a verdict: withheld.
    write_tape(
        root,
        goal("answer-good-1", grade(9)),
        goal("answer-bad-1", "I would rather not say."),
    )
    env = cli_env(E2E_DIR=str(e2e_dir))
    first = run_cli(root, env=env, timeout=60)
    assert first.exit_code == 1, first.stderr
    first_id = only_report(root).name
    before = {p.scenario_key: p for p in read_manifest(only_report(root)).results}
    [bad_run] = before["bad"].runs
    assert bad_run.status == "completed"
    assert bad_run.score is not None and bad_run.score.withheld
    assert before["good"].status == "completed"

    write_tape(root, goal("answer-good-1", grade(9)), goal("answer-bad-1", grade(7)))
    again = run_cli(root, "--failed", env=env, timeout=60)
    assert again.exit_code == 0, again.stderr
    assert launches(e2e_dir) == Counter({"good 1": 1, "bad 1": 2})
    [new] = [d for d in report_dirs(root) if d.name != first_id]
    manifest = read_manifest(new)
    [pair] = manifest.results
    assert pair.scenario_key == "bad" and pair.status == "completed"
    assert pair.score is not None and not pair.score.withheld
    assert pair.score.goal_achievement == 70


def test_resume_withholds_a_kept_run_it_cannot_score(tmp_path: Path, e2e_dir: Path) -> None:
    checked = scenario(judge=[{"check": "out.txt exists", "run": "test -f out.txt"}])
    root = project(
        tmp_path / "proj", {"good": scenario(), "bad": scenario(), "ran": checked}, e2e_dir
    )
    write_tape(root, goal("answer-good-1", grade(9)), goal("answer-bad-1", "No verdict today."))
    env = cli_env(E2E_DIR=str(e2e_dir))
    assert run_cli(root, "--no-score", env=env).exit_code == 0
    folder = only_report(root)

    resumed = run_cli(root, "--resume", folder.name, env=env, timeout=60)
    # Nothing was left to run; the three kept runs were scored, two of them withheld.
    assert launches(e2e_dir) == Counter({"good 1": 1, "bad 1": 1, "ran 1": 1})
    assert "Scoring 3 finished run(s)" in resumed.stderr
    assert resumed.exit_code == 1, resumed.stderr
    pairs = {p.scenario_key: p for p in read_manifest(folder).results}
    good = pairs["good"].runs[0].score
    assert good is not None and good.goal_achievement == 90 and pairs["good"].status == "completed"
    for key, why in (("bad", "goal answer was unusable"), ("ran", "workspace is gone")):
        score = pairs[key].runs[0].score
        assert score is not None and score.withheld, key
        assert why in (score.withheld_reason or ""), score.withheld_reason
        assert pairs[key].status == "failed"
        assert pairs[key].reliability is not None and pairs[key].reliability.withheld == 1
