"""Unknown keys warn with a "did you mean" hint; known keys never warn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config._problems import describe, path_of, unknown_keys
from axis_eval.config.discover import discover
from axis_eval.config.load import load_config, validate_config
from axis_eval.config.scenario import ScenarioInput

MakeProject = Callable[..., Path]


def config_warnings(raw: dict[str, Any]) -> list[str]:
    return unknown_keys(validate_config(raw, "axis.config.json"))


def scenario_warnings(raw: dict[str, Any]) -> list[str]:
    return unknown_keys(ScenarioInput.model_validate(raw))


EVERY_SCENARIO_FIELD: dict[str, Any] = {
    "key": "all",
    "name": "All fields",
    "prompt": "p",
    "rubric": [{"check": "a", "weight": 0.5}, {"check": "b"}],
    "skip": False,
    "setup": [
        {"action": "copy", "match": "fixtures/*", "destination": "."},
        {"action": "run_script", "command": "true", "timeout_minutes": 2},
    ],
    "teardown": [{"action": "run_script", "command": "ls"}],
    "agents": ["claude-code"],
    "skills": ["./skills/a"],
    "mcp_servers": {"d": {"type": "http", "url": "u", "headers": {"h": "v"}}},
    "limits": {"time_minutes": 5, "tokens": 1000},
    "runs": 3,
    "env": {"MODE": "test"},
    "artifacts": ["*.log"],
    "variants": [
        {
            "name": "v1",
            "prompt": "p2",
            "judge": "j",
            "skip": True,
            "setup": [],
            "teardown": [],
            "agents": ["codex"],
            "skills": [],
            "mcp_servers": {},
            "limits": {"tokens": 5},
            "runs": 1,
            "env": ["HOME"],
            "artifacts": [],
        }
    ],
}


def test_every_known_scenario_key_is_silent() -> None:
    assert scenario_warnings(EVERY_SCENARIO_FIELD) == []


def test_typo_at_nested_config_level_suggests_the_key() -> None:
    raw = {"agents": ["codex"], "settings": {"concurency": 3}}
    assert config_warnings(raw) == [
        "unknown key 'settings.concurency' (did you mean 'concurrency'?)"
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"agnets": ["x"]}, "unknown key 'agnets' (did you mean 'agents'?)"),
        (
            {"settings": {"limits": {"run": {"time_minuts": 1}}}},
            "unknown key 'settings.limits.run.time_minuts' (did you mean 'time_minutes'?)",
        ),
        (
            {"agents": [{"agent": "codex", "modle": "m"}]},
            "unknown key 'agents[0].modle' (did you mean 'model'?)",
        ),
        (
            {"mcp_servers": {"s": {"type": "stdio", "command": "c", "arg": []}}},
            "unknown key 'mcp_servers.s.arg' (did you mean 'args'?)",
        ),
        (
            {"beforeAll": [{"action": "copy", "match": "x", "dest": "y"}]},
            "unknown key 'beforeAll[0].dest'",
        ),
        ({"mcpServers": {}}, "unknown key 'mcpServers' (did you mean 'mcp_servers'?)"),
        ({"beforeall": []}, "unknown key 'beforeall' (did you mean 'beforeAll'?)"),
        (
            {"afterAll": [{"action": "run_script", "command": "c", "timeout": 1}]},
            "unknown key 'afterAll[0].timeout' (did you mean 'timeout_minutes'?)",
        ),
        ({"judging": {"modle": "x"}}, "unknown key 'judging.modle' (did you mean 'model'?)"),
    ],
)
def test_unknown_config_keys(raw: dict[str, Any], expected: str) -> None:
    warnings = config_warnings({"agents": ["codex"], **raw})
    assert any(w.startswith(expected) for w in warnings), warnings


def test_unrelated_unknown_key_has_no_hint() -> None:
    assert config_warnings({"agents": ["codex"], "zzz": 1}) == ["unknown key 'zzz'"]


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("criteria", "judge"),
        ("rubrics", "rubric"),
        ("promt", "prompt"),
        ("timeoutMinutes", "limits.time_minutes"),
        ("maxTokens", "limits.tokens"),
        ("mcpServers", "mcp_servers"),
    ],
)
def test_unknown_scenario_keys_suggest(key: str, hint: str) -> None:
    raw = {"name": "n", "prompt": "p", "judge": "j", key: 1}
    assert scenario_warnings(raw) == [f"unknown key {key!r} (did you mean {hint!r}?)"]


def test_unknown_keys_inside_judge_checks_and_variants() -> None:
    raw = {
        "name": "n",
        "prompt": "p",
        "judge": [{"check": "c", "wieght": 1}],
        "variants": [{"name": "v", "promtp": "x"}],
    }
    assert scenario_warnings(raw) == [
        "unknown key 'judge[0].wieght' (did you mean 'weight'?)",
        "unknown key 'variants[0].promtp' (did you mean 'prompt'?)",
    ]


def test_load_config_prefixes_warnings_with_the_file(
    tmp_path: Path, make_project: MakeProject
) -> None:
    make_project(tmp_path, {"agents": ["codex"], "settings": {"concurency": 3}})
    assert load_config(str(tmp_path)).warnings == [
        "axis.config.json: unknown key 'settings.concurency' (did you mean 'concurrency'?)"
    ]


def test_scenario_warnings_name_the_file(tmp_path: Path, make_project: MakeProject) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"]},
        {"sub/s": {"name": "n", "prompt": "p", "judge": "j", "criteria": ["x"]}},
    )
    loaded = load_config(str(tmp_path))
    found = discover(loaded.config, loaded.config_dir)
    assert found.warnings == [
        "scenarios/sub/s.json: unknown key 'criteria' (did you mean 'judge'?)"
    ]


def test_path_of_renders_indexes_and_drops_union_tags() -> None:
    assert path_of(("agents", 1, "model")) == "agents[1].model"
    assert path_of(("scenarios", 0, "<inline>", "judge")) == "scenarios[0].judge"
    assert path_of(()) == ""


def test_describe_shortens_long_values() -> None:
    assert describe({"a": 1}) == "an object"
    assert describe("x" * 100).endswith("...")
    assert len(describe("x" * 100)) == 60
    assert describe(None) == "null"
