"""The scenario format: fields, judge weights, lifecycle actions, variants and their rules."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from axis_eval.config._problems import problems_from
from axis_eval.config.actions import CopyAction, RunScriptAction
from axis_eval.config.scenario import (
    JudgeCheck,
    ResolvedCheck,
    Scenario,
    ScenarioInput,
    expand,
    resolve_weights,
)


def sc(**fields: Any) -> dict[str, Any]:
    return {"name": "Base", "prompt": "base prompt", "judge": "base judge", **fields}


def build(raw: dict[str, Any], key: str = "dir/base") -> list[Scenario]:
    return expand(ScenarioInput.model_validate(raw), key, f"/abs/{key}.json")


def errors(raw: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        ScenarioInput.model_validate(raw)
    return "; ".join(p.render() for p in problems_from(info.value))


def weights_of(judge: str | list[ResolvedCheck]) -> list[float]:
    assert isinstance(judge, list)
    return [round(c.weight, 9) for c in judge]


def test_plain_scenario_expands_to_itself() -> None:
    [s] = build(sc(), key="cms/create-post")
    assert (s.key, s.base_key, s.variant, s.name) == (
        "cms/create-post",
        "cms/create-post",
        None,
        "Base",
    )
    assert s.prompt == "base prompt" and s.judge == "base judge"
    assert s.source == "/abs/cms/create-post.json"
    assert s.skip is False and s.runs is None and s.limits is None
    assert (s.setup, s.teardown, s.skills, s.artifacts, s.env) == ([], [], [], [], [])


def test_rubric_is_an_alias_of_judge() -> None:
    [s] = build({"name": "n", "prompt": "p", "rubric": "the rubric"})
    assert s.judge == "the rubric"


def test_judge_is_required_with_a_clear_message() -> None:
    text = errors({"name": "n", "prompt": "p"})
    assert "expected a `judge` (or `rubric`): a string or a list of checks" in text


def test_prompt_is_required() -> None:
    assert "expected a `prompt` (the task sent to the agent)" in errors({"name": "n", "judge": "j"})


def test_name_is_required() -> None:
    assert "name: expected a value (this field is required)" in errors(
        {"prompt": "p", "judge": "j"}
    )


def test_judge_shape_errors() -> None:
    assert "judge: expected a string or a list of {check, weight?} objects, found 5" in errors(
        sc(judge=5)
    )
    assert "judge[0].check: expected a value" in errors(sc(judge=[{"weight": 1}]))
    assert "judge[1].weight: expected a number of at least 0" in errors(
        sc(judge=[{"check": "a"}, {"check": "b", "weight": -1}])
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([0.5, 0.3, None], [0.5, 0.3, 0.2]),
        ([None, None, None, None], [0.25, 0.25, 0.25, 0.25]),
        ([0.6, None, None], [0.6, 0.2, 0.2]),
        ([0.7, 0.5, None], [0.7, 0.5, 0.0]),
        ([2.0, 1.0], [2.0, 1.0]),
        ([0.0, None], [0.0, 1.0]),
    ],
)
def test_judge_weights(given: list[float | None], expected: list[float]) -> None:
    checks = [JudgeCheck(check=f"c{i}", weight=w) for i, w in enumerate(given)]
    assert weights_of(resolve_weights(checks)) == expected


def test_resolved_weights_are_stored_on_the_scenario() -> None:
    [s] = build(
        sc(judge=[{"check": "a", "weight": 0.5}, {"check": "b", "weight": 0.3}, {"check": "c"}])
    )
    assert weights_of(s.judge) == [0.5, 0.3, 0.2]
    assert isinstance(s.judge, list) and [c.check for c in s.judge] == ["a", "b", "c"]


def test_string_judge_is_kept() -> None:
    assert resolve_weights("just text") == "just text"


def test_setup_and_teardown_actions() -> None:
    [s] = build(
        sc(
            setup=[
                {"action": "copy", "match": "fixtures/app/**/*", "destination": "app"},
                {"action": "run_script", "command": "npm install"},
            ],
            teardown=[{"action": "run_script", "command": "ls", "timeout_minutes": 0.5}],
        )
    )
    copy, script = s.setup
    assert isinstance(copy, CopyAction) and (copy.match, copy.destination) == (
        "fixtures/app/**/*",
        "app",
    )
    assert isinstance(script, RunScriptAction) and script.command == "npm install"
    [down] = s.teardown
    assert isinstance(down, RunScriptAction) and down.timeout_minutes == 0.5


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            {"action": "run_scrpt", "command": "x"},
            "(did you mean 'run_script'?), found \"run_scrpt\"",
        ),
        (
            {"action": "shell", "match": "x"},
            'setup[0]: expected an action of run_script or copy, found "shell"',
        ),
        ({"command": "x"}, "setup[0]: expected an action of run_script or copy, found null"),
        ("echo hi", 'setup[0]: expected an action of run_script or copy, found "echo hi"'),
        ({"action": "run_script"}, "setup[0].command: expected a value"),
        ({"action": "run_script", "command": ""}, "setup[0].command: expected a non-empty string"),
        ({"action": "copy"}, "setup[0].match: expected a value"),
        (
            {"action": "run_script", "command": "x", "timeout_minutes": 0},
            "setup[0].timeout_minutes",
        ),
    ],
)
def test_invalid_actions(action: Any, expected: str) -> None:
    assert expected in errors(sc(setup=[action]))


def test_env_list_or_mapping() -> None:
    [names] = build(sc(env=["API_TOKEN", "HOME"]))
    assert names.env == ["API_TOKEN", "HOME"]
    [values] = build(sc(env={"MODE": "ci"}))
    assert values.env == {"MODE": "ci"}


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ("FOO", 'env: expected a list of variable names or a NAME: value mapping, found "FOO"'),
        ({"A": 1}, "env.A: expected a string, found 1"),
        (["A", 2], "env[1]: expected a string, found 2"),
    ],
)
def test_env_errors_name_the_field(env: Any, expected: str) -> None:
    assert errors(sc(env=env)) == expected


def test_limits_runs_skip_agents_skills_artifacts() -> None:
    [s] = build(
        sc(
            limits={"time_minutes": 2, "tokens": 500},
            runs=5,
            skip=True,
            agents=["Claude-Code", "codex|gpt-5"],
            skills=["./skills/x"],
            artifacts=["out/*.txt"],
            mcp_servers={"fs": {"type": "stdio", "command": "srv"}},
        )
    )
    assert s.limits is not None and (s.limits.time_minutes, s.limits.tokens) == (2, 500)
    assert s.runs == 5 and s.skip is True
    assert s.agents == ["claude-code", "codex|gpt-5"], "agent names are lowercased"
    assert s.skills == ["./skills/x"] and s.artifacts == ["out/*.txt"]
    assert list(s.mcp_servers) == ["fs"]


@pytest.mark.parametrize(("runs", "nearest"), [(2, "1 or 3"), (4, "3 or 5"), (0, "1"), (25, "19")])
def test_scenario_runs_must_be_odd(runs: int, nearest: str) -> None:
    assert f"runs: expected an odd run count from 1 to 19 (nearest legal: {nearest})" in errors(
        sc(runs=runs)
    )


def test_scenario_agents_cannot_be_empty() -> None:
    assert "agents: expected a non-empty list, found []" in errors(sc(agents=[]))


def test_limits_must_be_positive() -> None:
    assert "limits.tokens: expected a number greater than 0, found 0" in errors(
        sc(limits={"tokens": 0})
    )


# -- variants --------------------------------------------------------------------------


BASE = sc(
    setup=[{"action": "run_script", "command": "base-setup"}],
    teardown=[{"action": "run_script", "command": "base-teardown"}],
    agents=["claude-code"],
    skills=["./skills/base"],
    artifacts=["base/*"],
    limits={"time_minutes": 3},
    runs=3,
    env=["BASE_VAR"],
    mcp_servers={
        "docs": {"type": "http", "url": "https://docs"},
        "fs": {"type": "stdio", "command": "fs-base"},
    },
)


def by_variant(raw: dict[str, Any]) -> dict[str | None, Scenario]:
    return {s.variant: s for s in build(raw, key="cms/post")}


def test_variants_replace_the_base_which_never_runs() -> None:
    found = build({**BASE, "variants": [{"name": "baseline"}, {"name": "with-mcp"}]}, "cms/post")
    assert [s.key for s in found] == ["cms/post@baseline", "cms/post@with-mcp"]
    assert {s.base_key for s in found} == {"cms/post"}
    assert [s.name for s in found] == ["Base [baseline]", "Base [with-mcp]"]
    assert all(s.source == "/abs/cms/post.json" for s in found)


def test_override_less_variant_inherits_everything() -> None:
    s = by_variant({**BASE, "variants": [{"name": "baseline"}]})["baseline"]
    base = build(BASE, key="cms/post")[0]
    same = [
        "prompt",
        "judge",
        "skip",
        "setup",
        "teardown",
        "agents",
        "skills",
        "limits",
        "runs",
        "env",
        "artifacts",
        "mcp_servers",
    ]
    for field in same:
        assert getattr(s, field) == getattr(base, field), field


def test_variant_overrides_replace_scalar_and_list_fields() -> None:
    variant = {
        "name": "alt",
        "prompt": "alt prompt",
        "rubric": [{"check": "alt"}],
        "skip": True,
        "setup": [{"action": "copy", "match": "alt/*"}],
        "teardown": [],
        "agents": ["codex"],
        "skills": ["./skills/alt"],
        "artifacts": ["alt/*"],
        "limits": {"tokens": 10},
        "runs": 5,
        "env": {"ALT": "1"},
    }
    s = by_variant({**BASE, "variants": [variant]})["alt"]
    assert s.prompt == "alt prompt"
    assert isinstance(s.judge, list) and [(c.check, c.weight) for c in s.judge] == [("alt", 1.0)]
    assert s.skip is True
    assert [a.action for a in s.setup] == ["copy"]
    assert s.teardown == [], "an explicit empty list replaces the base's"
    assert s.agents == ["codex"]
    assert s.skills == ["./skills/alt"], "skills are replaced, not merged"
    assert s.artifacts == ["alt/*"], "artifacts are replaced, not merged"
    assert s.limits is not None and (s.limits.time_minutes, s.limits.tokens) == (None, 10)
    assert s.runs == 5
    assert s.env == {"ALT": "1"}


def test_variant_skip_false_overrides_a_skipped_base() -> None:
    s = by_variant({**sc(skip=True), "variants": [{"name": "on", "skip": False}, {"name": "off"}]})
    assert s["on"].skip is False
    assert s["off"].skip is True


def test_variant_mcp_servers_merge_shallowly_over_the_base() -> None:
    variant = {
        "name": "v",
        "mcp_servers": {
            "fs": {"type": "stdio", "command": "fs-v"},
            "new": {"type": "http", "url": "https://new"},
        },
    }
    s = by_variant({**BASE, "variants": [variant, {"name": "empty", "mcp_servers": {}}]})
    merged = s["v"].mcp_servers
    assert list(merged) == ["docs", "fs", "new"]
    fs = merged["fs"]
    assert getattr(fs, "command", None) == "fs-v", "the variant wins by name"
    assert list(s["empty"].mcp_servers) == ["docs", "fs"], "an empty map removes nothing"


def test_variants_may_supply_prompt_and_judge() -> None:
    raw = {
        "name": "T",
        "variants": [
            {"name": "a", "prompt": "pa", "judge": "ja"},
            {"name": "b", "prompt": "pb", "rubric": "jb"},
        ],
    }
    s = by_variant(raw)
    assert (s["a"].prompt, s["a"].judge, s["b"].prompt, s["b"].judge) == ("pa", "ja", "pb", "jb")


def test_every_variant_needs_a_prompt_and_judge_somewhere() -> None:
    raw = {"name": "T", "judge": "j", "variants": [{"name": "a", "prompt": "p"}, {"name": "b"}]}
    assert "a prompt and a judge on the scenario or on every variant (variant 'b' has none)" in (
        errors(raw)
    )


@pytest.mark.parametrize("name", ["with space", "a@b", "dots.no", "", "slash/no"])
def test_variant_name_pattern(name: str) -> None:
    assert "variants[0].name: expected text matching ^[a-zA-Z0-9_-]+$" in errors(
        sc(variants=[{"name": name}])
    )


@pytest.mark.parametrize("name", ["a", "with-mcp", "no_ctx", "V2"])
def test_legal_variant_names(name: str) -> None:
    assert [s.key for s in build(sc(variants=[{"name": name}]), "k")] == [f"k@{name}"]


def test_variant_names_are_unique() -> None:
    assert "unique variant names (duplicate 'a')" in errors(
        sc(variants=[{"name": "a"}, {"name": "a"}])
    )


def test_variant_runs_are_validated() -> None:
    assert "variants[0].runs: expected an odd run count" in errors(
        sc(variants=[{"name": "a", "runs": 2}])
    )
