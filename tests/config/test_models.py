"""Every config field is modelled and validated; errors name file, field path, expected, found."""

from __future__ import annotations

from typing import Any

import pytest

from axis_eval.config._problems import unknown_keys
from axis_eval.config.actions import CopyAction, McpHttpServer, McpStdioServer, RunScriptAction
from axis_eval.config.load import validate_config
from axis_eval.config.models import DEFAULT_WEIGHTS, Config, DeclarativeAdapter, weights_of
from axis_eval.config.scenario import ScenarioInput
from axis_eval.errors import EXIT_USAGE, ConfigError

FILE = "/proj/axis.config.json"

EVERY_FIELD: dict[str, Any] = {
    "$schema": "./config.schema.json",
    "name": "Everything",
    "scenarios": [
        "./scenarios",
        {"key": "inline/one", "name": "Inline", "prompt": "p", "judge": "j"},
    ],
    "agents": [
        "Claude-Code",
        {
            "agent": "codex",
            "name": "codex-fast",
            "model": "gpt-5",
            "flags": {"full-auto": True, "sandbox": "workspace-write", "search": False},
            "command": ["npx", "codex"],
            "scenarios": ["*"],
            "skills": ["./skills/a"],
        },
        {"agent": "gemini", "command": "gemini-nightly"},
    ],
    "adapters": {
        "mine": "./adapters/mine.py",
        "pkg": "my_pkg.adapters:agent",
        "decl": {
            "command": ["my-cli", "--json"],
            "args": ["{prompt}"],
            "prompt_via": "stdin",
            "output": "ndjson",
            "required_env": ["MY_KEY"],
        },
    },
    "include": ["**"],
    "exclude": ["drafts/*"],
    "profiles": {"ci": {"settings": {"concurrency": 2}}},
    "settings": {
        "concurrency": 4,
        "runs": 3,
        "limits": {
            "run": {"time_minutes": 90, "tokens": 2_000_000},
            "scenario": {"time_minutes": 2.5, "tokens": 100_000},
        },
        "scoring_weights": {
            "goal_achievement": 0.5,
            "environment": 0.2,
            "service": 0.2,
            "agent": 0.1,
        },
        "remotes": {"maxDepth": 2},
    },
    "env": ["OPENAI_API_KEY", "GH_TOKEN"],
    "mcp_servers": {
        "fs": {"type": "stdio", "command": "mcp-fs", "args": ["--root", "."], "env": {"A": "b"}},
        "docs": {"type": "http", "url": "https://mcp.example.com", "headers": {"X-Key": "v"}},
    },
    "skills": ["./skills/house-style", "netlify/axis"],
    "artifacts": ["*.log", "src/**/*.py"],
    "judging": {
        "agents": ["claude-code", {"agent": "codex", "model": "gpt-5"}],
        "model": "anthropic:claude-sonnet-4-5",
        "base_url": "http://localhost:8080",
    },
    "beforeAll": [{"action": "run_script", "command": "echo hi", "timeout_minutes": 1}],
    "afterAll": [{"action": "copy", "match": "fixtures/*.txt", "destination": "out"}],
}


def problems(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        validate_config(raw, FILE)
    assert info.value.exit_code == EXIT_USAGE
    return info.value.render()


def cfg(**fields: Any) -> dict[str, Any]:
    return {"agents": ["claude-code"], **fields}


def test_every_field_is_modelled() -> None:
    config = validate_config(EVERY_FIELD, FILE)
    assert config.schema_ == "./config.schema.json"
    assert config.name == "Everything"
    assert config.scenarios[0] == "./scenarios"
    inline = config.scenarios[1]
    assert isinstance(inline, ScenarioInput) and inline.key == "inline/one"
    first, second, third = config.agents
    assert first.agent == "claude-code", "agent names are lowercased"
    assert second.name == "codex-fast" and second.model == "gpt-5"
    assert second.flags == {"full-auto": True, "sandbox": "workspace-write", "search": False}
    assert second.command == ["npx", "codex"]
    assert second.scenarios == ["*"] and second.skills == ["./skills/a"]
    assert third.command == "gemini-nightly"
    assert config.adapters["mine"] == "./adapters/mine.py"
    decl = config.adapters["decl"]
    assert isinstance(decl, DeclarativeAdapter)
    assert (decl.prompt_via, decl.output, decl.required_env) == ("stdin", "ndjson", ["MY_KEY"])
    assert config.include == ["**"] and config.exclude == ["drafts/*"]
    assert config.profiles == {"ci": {"settings": {"concurrency": 2}}}
    s = config.settings
    assert (s.concurrency, s.runs) == (4, 3)
    assert s.limits.run is not None and s.limits.run.tokens == 2_000_000
    assert s.limits.scenario is not None and s.limits.scenario.time_minutes == 2.5
    assert s.remotes is not None and s.remotes.max_depth == 2
    assert weights_of(config) == {
        "goal_achievement": 0.5,
        "environment": 0.2,
        "service": 0.2,
        "agent": 0.1,
    }
    assert config.env == ["OPENAI_API_KEY", "GH_TOKEN"]
    assert isinstance(config.mcp_servers["fs"], McpStdioServer)
    assert config.mcp_servers["fs"].args == ["--root", "."]
    assert isinstance(config.mcp_servers["docs"], McpHttpServer)
    assert config.mcp_servers["docs"].headers == {"X-Key": "v"}
    assert config.skills == ["./skills/house-style", "netlify/axis"]
    assert config.artifacts == ["*.log", "src/**/*.py"]
    assert config.judging is not None
    assert [a.agent for a in config.judging.agents or []] == ["claude-code", "codex"]
    assert config.judging.model == "anthropic:claude-sonnet-4-5"
    assert config.judging.base_url == "http://localhost:8080"
    [before] = config.before_all
    assert isinstance(before, RunScriptAction) and before.timeout_minutes == 1
    [after] = config.after_all
    assert isinstance(after, CopyAction) and after.destination == "out"


def test_every_known_key_is_silent() -> None:
    assert unknown_keys(validate_config(EVERY_FIELD, FILE)) == []


def test_defaults() -> None:
    config = validate_config({"agents": ["codex"]}, FILE)
    assert config.scenarios == ["./scenarios"]
    assert config.settings.concurrency == 15
    assert config.settings.runs is None
    assert config.settings.limits.run is None and config.settings.limits.scenario is None
    assert config.include is None and config.exclude is None
    assert weights_of(config) == DEFAULT_WEIGHTS
    assert config.before_all == [] and config.after_all == []


def test_single_strings_are_accepted_for_lists() -> None:
    config = validate_config(
        cfg(scenarios="./evals", include="a/*", exclude="b/*", env="TOKEN"), FILE
    )
    assert config.scenarios == ["./evals"]
    assert (config.include, config.exclude, config.env) == (["a/*"], ["b/*"], ["TOKEN"])


def test_error_names_the_file_field_expected_and_found() -> None:
    text = problems(cfg(settings={"concurrency": "many"}))
    assert FILE in text
    assert 'settings.concurrency: expected an integer, found "many"' in text


def test_error_path_indexes_into_lists() -> None:
    text = problems({"agents": ["claude-code", {"agent": "codex", "model": 5}]})
    assert "agents[1].model: expected a string, found 5" in text


def test_all_problems_are_listed_at_once() -> None:
    text = problems({"agents": [{"model": "x"}], "settings": {"concurrency": 0}, "env": [1]})
    assert "agents[0].agent: expected a value (this field is required)" in text
    assert "settings.concurrency: expected a number greater than 0, found 0" in text
    assert "env[0]: expected a string, found 1" in text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, "agents: expected a value (this field is required)"),
        ({"agents": "claude-code"}, 'agents: expected a list, found "claude-code"'),
        ({"agents": []}, "agents: expected a non-empty list, found []"),
        ({"agents": [{"agent": ""}]}, 'agents[0].agent: expected a non-empty string, found ""'),
        (
            {"agents": [{"agent": "codex", "scenarios": "x"}]},
            "agents[0].scenarios: expected a list",
        ),
        ({"agents": [{"agent": "codex", "skills": [1]}]}, "agents[0].skills[0]: expected a string"),
        (
            {"agents": [{"agent": "codex", "flags": {"x": 1}}]},
            "agents[0].flags.x: expected true, false or a string, found 1",
        ),
        ({"agents": [{"agent": "codex", "name": "a/b"}]}, "agents[0].name: expected a name"),
        (
            {"agents": [{"agent": "codex", "command": []}]},
            "agents[0].command: expected a non-empty list, found []",
        ),
        (
            {"agents": [{"agent": "codex", "command": 5}]},
            "agents[0].command: expected a command string or a non-empty list of arguments",
        ),
    ],
)
def test_agent_entries(raw: dict[str, Any], expected: str) -> None:
    assert expected in problems(raw)


def test_settings_concurrency_must_be_a_positive_integer() -> None:
    assert "settings.concurrency: expected a number greater than 0, found -2" in problems(
        cfg(settings={"concurrency": -2})
    )
    assert "settings.concurrency: expected an integer, found true" in problems(
        cfg(settings={"concurrency": True})
    )


@pytest.mark.parametrize("runs", [1, 3, 5, 17, 19])
def test_settings_runs_accepts_odd_counts(runs: int) -> None:
    assert validate_config(cfg(settings={"runs": runs}), FILE).settings.runs == runs


@pytest.mark.parametrize(
    ("runs", "nearest"),
    [(4, "3 or 5"), (2, "1 or 3"), (18, "17 or 19"), (0, "1"), (-3, "1"), (21, "19"), (20, "19")],
)
def test_settings_runs_rejects_illegal_counts_naming_the_nearest(runs: int, nearest: str) -> None:
    text = problems(cfg(settings={"runs": runs}))
    assert f"settings.runs: expected an odd run count from 1 to 19 (nearest legal: {nearest})" in (
        text
    )
    assert f"found {runs}" in text


@pytest.mark.parametrize("runs", [True, "3", 3.0])
def test_settings_runs_must_be_an_integer(runs: object) -> None:
    assert "settings.runs: expected an integer" in problems(cfg(settings={"runs": runs}))


@pytest.mark.parametrize("which", ["run", "scenario"])
def test_limits(which: str) -> None:
    ok = validate_config(
        cfg(settings={"limits": {which: {"time_minutes": 0.5, "tokens": 10}}}), FILE
    )
    limit = getattr(ok.settings.limits, which)
    assert (limit.time_minutes, limit.tokens) == (0.5, 10)
    assert f"settings.limits.{which}.time_minutes: expected a number greater than 0" in problems(
        cfg(settings={"limits": {which: {"time_minutes": 0}}})
    )
    assert f"settings.limits.{which}.tokens: expected a whole number, found 1.5" in problems(
        cfg(settings={"limits": {which: {"tokens": 1.5}}})
    )
    assert f"settings.limits.{which}.tokens: expected a number greater than 0" in problems(
        cfg(settings={"limits": {which: {"tokens": -1}}})
    )


def weights(**w: float) -> dict[str, Any]:
    base = {"goal_achievement": 0.4, "environment": 0.2, "service": 0.2, "agent": 0.2}
    return cfg(settings={"scoring_weights": {**base, **w}})


@pytest.mark.parametrize("goal", [0.4, 0.405, 0.395])
def test_scoring_weights_sum_to_one_within_tolerance(goal: float) -> None:
    config = validate_config(weights(goal_achievement=goal), FILE)
    assert weights_of(config)["goal_achievement"] == goal


def test_scoring_weights_may_zero_some_dimensions() -> None:
    config = validate_config(weights(goal_achievement=1.0, environment=0, service=0, agent=0), FILE)
    assert weights_of(config)["environment"] == 0


def test_scoring_weights_need_all_four_keys() -> None:
    raw = cfg(settings={"scoring_weights": {"goal_achievement": 0.6, "environment": 0.4}})
    text = problems(raw)
    assert "settings.scoring_weights.service: expected a value" in text
    assert "settings.scoring_weights.agent: expected a value" in text


def test_scoring_weights_are_non_negative() -> None:
    text = problems(weights(goal_achievement=-0.2, environment=0.8))
    assert "settings.scoring_weights.goal_achievement: expected a number of at least 0" in text


def test_scoring_weights_not_all_zero() -> None:
    text = problems(weights(goal_achievement=0, environment=0, service=0, agent=0))
    assert "settings.scoring_weights: expected weights that are not all zero" in text


@pytest.mark.parametrize("goal", [0.5, 0.3, 0.42])
def test_scoring_weights_must_sum_to_one(goal: float) -> None:
    text = problems(weights(goal_achievement=goal))
    assert "settings.scoring_weights: expected weights summing to 1 (± 0.01)" in text


def test_mcp_server_wrong_type() -> None:
    text = problems(cfg(mcp_servers={"x": {"type": "sse", "url": "http://x"}}))
    assert 'mcp_servers.x: expected a `type` of stdio or http, found "sse"' in text


def test_mcp_server_missing_type() -> None:
    text = problems(cfg(mcp_servers={"x": {"command": "srv"}}))
    assert "mcp_servers.x: expected a `type` of stdio or http, found null" in text


def test_mcp_server_required_fields_per_type() -> None:
    assert "mcp_servers.s.command: expected a value" in problems(
        cfg(mcp_servers={"s": {"type": "stdio"}})
    )
    assert "mcp_servers.h.url: expected a value" in problems(
        cfg(mcp_servers={"h": {"type": "http"}})
    )
    assert "mcp_servers.h.headers.auth: expected a string, found 1" in problems(
        cfg(mcp_servers={"h": {"type": "http", "url": "u", "headers": {"auth": 1}}})
    )
    assert "mcp_servers.s.args[0]: expected a string" in problems(
        cfg(mcp_servers={"s": {"type": "stdio", "command": "c", "args": [1]}})
    )


def test_skills_and_artifacts() -> None:
    assert 'skills: expected a list, found "./x"' in problems(cfg(skills="./x"))
    assert 'artifacts[0]: expected a non-empty string, found ""' in problems(cfg(artifacts=[""]))


def test_env_names() -> None:
    assert "env[1]: expected a string, found 2" in problems(cfg(env=["A", 2]))


def test_judging() -> None:
    assert "judging.agents: expected a non-empty list, found []" in problems(
        cfg(judging={"agents": []})
    )
    assert "judging.agents[0].agent: expected a value" in problems(
        cfg(judging={"agents": [{"model": "m"}]})
    )
    assert 'judging.model: expected a non-empty string, found ""' in problems(
        cfg(judging={"model": ""})
    )
    assert "judging.base_url: expected a string, found 8080" in problems(
        cfg(judging={"base_url": 8080})
    )


def test_adapters() -> None:
    assert "adapters.x: expected a Python file, a module:attribute, or a" in problems(
        cfg(adapters={"x": 5})
    )
    assert "adapters.d.command: expected a value" in problems(cfg(adapters={"d": {"args": []}}))
    assert "adapters.d.output: expected one of 'text' or 'ndjson', found \"xml\"" in problems(
        cfg(adapters={"d": {"command": "c", "output": "xml"}})
    )


@pytest.mark.parametrize("key", ["beforeAll", "afterAll"])
def test_run_level_actions(key: str) -> None:
    assert f'{key}[0]: expected an action of run_script or copy, found "shell"' in problems(
        cfg(**{key: [{"action": "shell", "command": "x"}]})
    )
    assert f"{key}[0]: expected an action of run_script or copy (did you mean 'copy'?)" in (
        problems(cfg(**{key: [{"action": "cpy", "match": "x"}]}))
    )
    assert f"{key}[0].command: expected a value" in problems(
        cfg(**{key: [{"action": "run_script"}]})
    )
    assert f"{key}[1].match: expected a value" in problems(
        cfg(**{key: [{"action": "run_script", "command": "ok"}, {"action": "copy"}]})
    )


def test_copy_destination_defaults_to_the_workspace() -> None:
    config = validate_config(cfg(beforeAll=[{"action": "copy", "match": "a/*"}]), FILE)
    [action] = config.before_all
    assert isinstance(action, CopyAction) and action.destination == "."


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/netlify/axis",
        "http://example.com/a/b.git",
        "git://example.com/a/b#v1",
        "ssh://git@example.com/a/b",
    ],
)
def test_remote_scenario_sources_validate_and_are_fetched_by_load_config(url: str) -> None:
    # Fetching them is load_config's (tests/config/test_remote_scenarios.py).
    config = validate_config(cfg(scenarios=["./scenarios", url]), FILE)
    assert config.scenarios == ["./scenarios", url]


def test_the_object_form_of_a_remote_source_is_url_hash_ref() -> None:
    entry = {"url": "https://github.com/o/r", "ref": "v2"}
    config = validate_config(cfg(scenarios=[entry]), FILE)
    assert config.scenarios == ["https://github.com/o/r#v2"]
    with pytest.raises(ConfigError) as info:
        validate_config(cfg(scenarios=[{"url": "https://github.com/o/r", "branch": "x"}]), FILE)
    assert "a {url, ref} object with a git URL and an optional ref (unknown keys: branch)" in (
        info.value.message
    )


def test_scp_style_remote_sources_are_refused() -> None:
    url = "git@github.com:netlify/axis.git"
    with pytest.raises(ConfigError) as info:
        validate_config(cfg(scenarios=["./scenarios", url]), FILE)
    assert f"scp-style git URLs are not supported: {url}" in info.value.message
    assert FILE in info.value.message
    assert info.value.hint == "write it as ssh://git@host/owner/repo"
    assert info.value.exit_code == EXIT_USAGE


def test_scenario_source_type() -> None:
    assert "scenarios[0]: expected a path or an inline scenario object, found 3" in problems(
        cfg(scenarios=[3])
    )


def test_inline_scenario_is_validated_in_place() -> None:
    text = problems(cfg(scenarios=[{"key": "k", "name": "n", "prompt": "p"}]))
    assert "scenarios[0]: expected a `judge` (or `rubric`)" in text


def test_config_model_is_lenient_about_unknown_keys() -> None:
    config = Config.model_validate({"agents": ["codex"], "mystery": 1})
    assert config.model_extra == {"mystery": 1}
