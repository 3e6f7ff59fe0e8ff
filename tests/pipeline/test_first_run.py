"""The first hour: ``axis init`` then ``axis run`` is scored offline with no key, a tape
that does not script the judge is called out before any job starts, a run whose scores
were all withheld says why, and the dry run names the keys the real run would stop on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.processes import read_json
from helpers.system_parts import not_run

from .helpers import cli_env, only_report, run_cli

pytestmark = pytest.mark.slow  # runs `axis` end to end as a subprocess

REPO = Path(__file__).resolve().parents[2]
TOY_AGENT = REPO / "examples" / "quickstart" / "agent" / "toy_agent.py"
JUDGELESS_TAPE = REPO / "examples" / "tapes" / "hello.yaml"
KEYS = ("ANTHROPIC_API_KEY", "CODEX_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")


def _keyless_env() -> dict[str, str]:
    env = cli_env()
    for name in KEYS:
        env.pop(name, None)
    return env


def _axis(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axis_eval", *args],
        cwd=cwd,
        env=_keyless_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _require_claude_code() -> None:
    from axis_eval.adapters.install import install_command, installed_binary

    if installed_binary("claude-code") is None:
        not_run(
            "REAL-AGENT TEST",
            f"claude-code is not installed; run `{install_command(['claude-code'])}`",
        )


def test_init_then_run_is_scored_offline_with_no_key(tmp_path: Path) -> None:
    """The scaffold's first `axis run`: the real Claude Code CLI against the scripted model,
    judged from the same tape, scored, exit 0, nothing leaving the machine."""
    _require_claude_code()
    init = _axis(tmp_path, "init")
    assert init.returncode == 0, init.stderr
    assert "Created tape.yaml" in init.stdout
    assert "axis run --profile live" in init.stdout and "ANTHROPIC_API_KEY" in init.stdout

    dry = _axis(tmp_path, "run", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "warning" not in dry.stderr  # the dry run predicts a clean real run

    done = _axis(tmp_path, "run", timeout=240)
    assert done.returncode == 0, done.stderr
    assert "warning: tape" not in done.stderr
    manifest = read_json(only_report(tmp_path) / "report.json")
    (pair,) = manifest["results"]
    run = pair["runs"][0]
    assert run["status"] == "completed", run
    score = run["score"]
    assert score["withheld"] is False, score
    assert isinstance(score["axisScore"], int | float) and score["goalAchievement"] == 100
    assert score["judge"]["kind"] == "api" and score["judge"]["calls"] >= 1
    assert manifest["modelServer"]["connectAttempts"] == []
    assert manifest["modelServer"]["unmatchedRequests"] == 0
    assert (tmp_path / "hello.txt").exists() is False  # the agent wrote in its own workspace

    # The live profile switches the scripted model off: with no key it stops in pre-flight,
    # naming the variable, the agent and the offline way; its dry run warns the same.
    live_dry = _axis(tmp_path, "run", "--dry-run", "--profile", "live")
    assert live_dry.returncode == 0, live_dry.stderr
    assert "warning: the 'claude-code' agent needs environment variable(s) ANTHROPIC_API_KEY" in (
        live_dry.stderr
    )
    live = _axis(tmp_path, "run", "--profile", "live")
    assert live.returncode == 2
    assert "the 'claude-code' agent needs environment variable(s) ANTHROPIC_API_KEY" in live.stderr
    assert "--tape TAPE" in live.stderr


def _toy_project(root: Path) -> Path:
    """The quickstart's toy agent (no CLI, no model) with an API judge."""
    root.mkdir()
    (root / "scenarios").mkdir()
    adapter = {
        "command": [sys.executable, str(TOY_AGENT)],
        "args": [],
        "prompt_via": "stdin",
        "output": "ndjson",
    }
    config = {
        "scenarios": "./scenarios",
        "agents": ["toy"],
        "adapters": {"toy": adapter},
        "judging": {"model": "anthropic:claude-sonnet-4-5"},
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    scenario = {
        "name": "Hello World",
        "prompt": "Create a file named hello.txt containing exactly: Hello, World!",
        "judge": [{"check": "hello.txt exists"}, {"check": "it says Hello, World!"}],
    }
    (root / "scenarios" / "hello-world.json").write_text(json.dumps(scenario))
    return root


def test_a_judgeless_tape_is_called_out_before_any_job_and_in_the_summary(
    tmp_path: Path,
) -> None:
    root = _toy_project(tmp_path / "proj")
    done = run_cli(root, "--tape", str(JUDGELESS_TAPE), env=_keyless_env(), timeout=90)
    assert done.exit_code == 1, done.stderr
    lines = done.stderr.splitlines()
    warning = next(i for i, line in enumerate(lines) if line.startswith("warning: tape "))
    first_job = next(i for i, line in enumerate(lines) if line.startswith("[1/1]"))
    assert warning < first_job, done.stderr
    text = lines[warning]
    assert str(JUDGELESS_TAPE) in text
    assert "does not script the judge (anthropic:claude-sonnet-4-5" in text
    assert "answered by an agent conversation 'hello'" in text
    assert "every score of 'Hello World' will be withheld" in text
    # The summary says the scores were withheld, and why; not "0/0 runs succeeded".
    assert "0/0 runs succeeded" not in done.stderr
    assert (
        "↳ scores withheld (1/1 runs; the judge could not score them): "
        "the " in done.stderr  # then the goal's or the audit's problem, whichever came first
    )
    assert "answer was unusable twice: the answer holds no JSON object" in done.stderr
    # The dry run predicts the same warning.
    dry = run_cli(root, "--dry-run", "--tape", str(JUDGELESS_TAPE), env=_keyless_env())
    assert dry.exit_code == 0
    assert text in dry.stderr.splitlines()


def test_a_tape_that_scripts_the_judge_scores_without_a_warning(tmp_path: Path) -> None:
    root = _toy_project(tmp_path / "proj")
    tape = REPO / "examples" / "quickstart" / "tape.yaml"
    done = run_cli(root, "--tape", str(tape), env=_keyless_env(), timeout=90)
    assert done.exit_code == 0, done.stderr
    assert "warning: tape" not in done.stderr
    (pair,) = read_json(only_report(root) / "report.json")["results"]
    assert pair["runs"][0]["score"]["withheld"] is False


def test_a_judge_outside_the_tape_is_named(tmp_path: Path) -> None:
    root = _toy_project(tmp_path / "proj")
    config = json.loads((root / "axis.config.json").read_text())
    config["judging"]["base_url"] = "http://judge.invalid/v1"
    config["judging"]["api_key_env"] = "MY_JUDGE_KEY"
    (root / "axis.config.json").write_text(json.dumps(config))
    dry = run_cli(root, "--dry-run", "--tape", str(JUDGELESS_TAPE), env=_keyless_env())
    assert dry.exit_code == 0
    assert (
        f"warning: tape {JUDGELESS_TAPE} does not answer the judge: runs of toy are judged by "
        "anthropic:claude-sonnet-4-5 at http://judge.invalid/v1" in dry.stderr
    )


def test_dry_run_names_the_missing_key_and_agent(tmp_path: Path) -> None:
    """No tape: the real run stops on the key; the dry run says so first, as a warning."""
    root = _toy_project(tmp_path / "proj")
    config = json.loads((root / "axis.config.json").read_text())
    config["adapters"]["toy"]["required_env"] = ["TOY_API_KEY"]
    (root / "axis.config.json").write_text(json.dumps(config))
    dry = run_cli(root, "--dry-run", "--no-score", env=_keyless_env())
    assert dry.exit_code == 0, dry.stderr
    assert (
        "warning: the 'toy' agent needs environment variable(s) TOY_API_KEY, which are not "
        "set: `axis run` will stop before any job starts" in dry.stderr
    )
    real = run_cli(root, "--no-score", env=_keyless_env())
    assert real.exit_code == 2
    assert "error: the 'toy' agent needs environment variable(s) TOY_API_KEY" in real.stderr
    # With the key set, neither says anything about it; the judge's key is named too.
    keyed = {**_keyless_env(), "TOY_API_KEY": "k"}
    dry = run_cli(root, "--dry-run", env=keyed)
    assert "TOY_API_KEY" not in dry.stderr
    assert (
        "warning: the API judge anthropic:claude-sonnet-4-5 needs ANTHROPIC_API_KEY" in dry.stderr
    )
