"""``init_project``: a config and a sample scenario that load and plan as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axis_eval.config.load import load_config
from axis_eval.errors import EXIT_USAGE, UsageError
from axis_eval.pipeline.checks import needed_keys
from axis_eval.pipeline.tape_judging import tape_judging_warnings
from axis_eval.planning.matrix import plan
from axis_eval.scaffold import JUDGE_MODEL, SAMPLE_SCENARIO, init_project
from axis_model_server import load_tape


@pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
def test_scaffold_loads_and_plans(tmp_path: Path, fmt: str) -> None:
    written = init_project(tmp_path, fmt=fmt)  # type: ignore[arg-type]
    assert written == [
        tmp_path / f"axis.config.{fmt}",
        tmp_path / "scenarios/hello-world.json",
        tmp_path / "tape.yaml",
    ]
    loaded = load_config(cwd=str(tmp_path))
    assert loaded.warnings == []
    the_plan = plan(loaded)
    assert [j.id for j in the_plan.jobs] == ["hello-world claude-code #1"]
    assert json.loads(written[1].read_text()) == SAMPLE_SCENARIO
    # Offline by default: the scripted model plays the scaffold's tape, and the API judge
    # asks the same server, whose tape answers it (no warning predicted).
    assert loaded.config.model_server is not None
    assert loaded.config.model_server.tape == "./tape.yaml"
    assert loaded.config.judging is not None and loaded.config.judging.model == JUDGE_MODEL
    load_tape(written[2])
    assert tape_judging_warnings(the_plan, loaded) == []


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_scaffold_live_profile_turns_the_scripted_model_off(tmp_path: Path, fmt: str) -> None:
    init_project(tmp_path, fmt=fmt)  # type: ignore[arg-type]
    live = load_config(cwd=str(tmp_path), profile="live")
    assert live.config.model_server is None
    assert live.config.judging is not None and live.config.judging.model == JUDGE_MODEL


def test_scaffold_tape_judge_matches_the_sample_checks(tmp_path: Path) -> None:
    """A third check the tape's goal answer does not grade is predicted to be withheld."""
    init_project(tmp_path)
    scenario = tmp_path / "scenarios" / "hello-world.json"
    body = json.loads(scenario.read_text())
    body["judge"].append({"check": "hello.txt ends with a newline"})
    scenario.write_text(json.dumps(body))
    loaded = load_config(cwd=str(tmp_path))
    (warning,) = tape_judging_warnings(plan(loaded), loaded)
    assert "tape.yaml does not script the judge" in warning
    assert "'judge-goal' answers the goal judge unusably: checks [3] have no grade" in warning


def test_needed_keys_name_the_agents_and_the_judge(tmp_path: Path) -> None:
    init_project(tmp_path, agents=["codex", "claude-code"])
    loaded = load_config(cwd=str(tmp_path))
    assert needed_keys(plan(loaded), loaded) == ["CODEX_API_KEY", "ANTHROPIC_API_KEY"]
    assert needed_keys(plan(loaded), loaded, score=False) == ["CODEX_API_KEY", "ANTHROPIC_API_KEY"]
    init_project(tmp_path, agents=["codex"], force=True)
    loaded = load_config(cwd=str(tmp_path))
    assert needed_keys(plan(loaded), loaded, score=False) == ["CODEX_API_KEY"]
    assert needed_keys(plan(loaded), loaded) == ["CODEX_API_KEY", "ANTHROPIC_API_KEY"]


def test_scaffold_agents_and_scenario_folder(tmp_path: Path) -> None:
    init_project(tmp_path, agents=["Codex", " gemini "], scenarios="./evals")
    loaded = load_config(cwd=str(tmp_path))
    assert loaded.config.scenarios == ["./evals"]
    assert [a.agent for a in loaded.config.agents] == ["codex", "gemini"]
    assert (tmp_path / "evals" / "hello-world.json").is_file()


def test_scaffold_refuses_to_overwrite(tmp_path: Path) -> None:
    init_project(tmp_path)
    config = tmp_path / "axis.config.json"
    config.write_text('{"agents": ["goose"]}')
    with pytest.raises(UsageError) as info:
        init_project(tmp_path)
    assert info.value.exit_code == EXIT_USAGE
    assert "already exists" in info.value.message
    assert info.value.hint == "pass --force to overwrite"
    assert config.read_text() == '{"agents": ["goose"]}', "nothing was overwritten"


def test_scaffold_refuses_when_only_the_sample_exists(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "hello-world.json").write_text("{}")
    with pytest.raises(UsageError, match=r"hello-world\.json already exists"):
        init_project(tmp_path)
    assert not (tmp_path / "axis.config.json").exists()


def test_scaffold_force_overwrites(tmp_path: Path) -> None:
    init_project(tmp_path)
    (tmp_path / "axis.config.json").write_text("garbage")
    init_project(tmp_path, force=True)
    assert json.loads((tmp_path / "axis.config.json").read_text())["agents"] == ["claude-code"]


def test_scaffold_unknown_agent(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        init_project(tmp_path, agents=["mock-agent"])
    assert "unknown agent 'mock-agent'" in info.value.message
    assert info.value.hint is not None and "claude-code" in info.value.hint
    assert list(tmp_path.iterdir()) == []
