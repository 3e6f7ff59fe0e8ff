"""Selection primitives: globs, scenario and agent matching, display names."""

from __future__ import annotations

from typing import Any

import pytest

from axis_eval.config.models import AgentEntry
from axis_eval.errors import ConfigError
from axis_eval.planning.models import AgentSpec
from axis_eval.planning.select import (
    agent_matches,
    display_names,
    glob_regex,
    sanitize_model,
    scenario_matches,
    split_list,
)


def names(*entries: Any) -> list[str]:
    return [a.name for a in display_names([AgentEntry.model_validate(e) for e in entries])]


@pytest.mark.parametrize(
    ("pattern", "text", "hit"),
    [
        ("cms/*", "cms/create-post", True),
        ("cms/*", "cms/deep/edit", False),
        ("cms/**", "cms/deep/edit", True),
        ("**/edit", "edit", True),
        ("**/edit", "cms/deep/edit", True),
        ("*", "top", True),
        ("*", "cms/post", False),
        ("a?c", "abc", True),
        ("a?c", "a/c", False),
        ("[ab]x", "bx", True),
        ("[!ab]x", "cx", True),
        ("[!ab]x", "ax", False),
        ("./cms/*", "cms/x", True),
        ("cms\\*", "cms/x", True),
        ("a.b", "aXb", False),
        ("a+b", "a+b", True),
    ],
)
def test_glob(pattern: str, text: str, hit: bool) -> None:
    assert bool(glob_regex(pattern).match(text)) is hit


def test_split_list_flattens_commas_and_repeats() -> None:
    assert split_list(["a, b", "c", " ", "d,,"]) == ["a", "b", "c", "d"]
    assert split_list(None) == []


@pytest.mark.parametrize(
    ("pattern", "key", "hit"),
    [
        ("cms/post", "cms/post", True),
        ("cms/post", "cms/post@with-mcp", True),
        ("cms/post@with-mcp", "cms/post@with-mcp", True),
        ("cms/post@with-mcp", "cms/post@baseline", False),
        ("cms/post@with-mcp", "cms/post", False),
        ("cms/po", "cms/post", False),
        ("cms/*", "cms/post@v", True),
        ("*@with-mcp", "post@with-mcp", True),
        ("*@with-mcp", "post@baseline", False),
        ("cms", "cms/post", False),
    ],
)
def test_scenario_matches(pattern: str, key: str, hit: bool) -> None:
    assert scenario_matches(pattern, key) is hit


AGENT = AgentSpec(name="claude-code|opus", adapter="claude-code", model="opus")


@pytest.mark.parametrize(
    ("pattern", "hit"),
    [
        ("claude-code|opus", True),
        ("Claude-Code|OPUS", True),
        ("claude-code", True),
        ("claude-code|*", True),
        ("claude*", True),
        ("*|opus", True),
        ("claude", False),
        ("codex", False),
        ("claude-code|sonnet", False),
    ],
)
def test_agent_matches(pattern: str, hit: bool) -> None:
    assert agent_matches(pattern, AGENT) is hit


def test_agent_matches_adapter_of_an_explicitly_named_agent() -> None:
    named = AgentSpec(name="fast", adapter="codex")
    assert agent_matches("codex", named)
    assert agent_matches("fast", named)
    assert not agent_matches("claude-code", named)


@pytest.mark.parametrize(
    ("model", "clean"),
    [
        ("anthropic/claude-3.5-sonnet", "anthropic-claude-3.5-sonnet"),
        ("gpt-5", "gpt-5"),
        ("a  b//c", "a-b-c"),
        ("/leading/", "leading"),
        ("models/gemini_2.5:pro", "models-gemini_2.5-pro"),
    ],
)
def test_sanitize_model(model: str, clean: str) -> None:
    assert sanitize_model(model) == clean


def test_display_names_agent_and_sanitized_model() -> None:
    assert names("claude-code", {"agent": "codex", "model": "anthropic/claude-3.5-sonnet"}) == [
        "claude-code",
        "codex|anthropic-claude-3.5-sonnet",
    ]


def test_display_names_duplicates_are_suffixed() -> None:
    assert names("codex", "codex", {"agent": "codex"}, "gemini") == [
        "codex",
        "codex-2",
        "codex-3",
        "gemini",
    ]
    assert names(
        {"agent": "claude-code", "model": "opus"},
        {"agent": "claude-code", "model": "sonnet"},
        {"agent": "claude-code", "model": "opus", "flags": {"x": True}},
    ) == ["claude-code|opus", "claude-code|sonnet", "claude-code|opus-2"]


def test_explicit_name_wins() -> None:
    assert names({"agent": "codex", "model": "gpt-5", "name": "fast"}, "codex") == [
        "fast",
        "codex",
    ]


def test_explicit_names_colliding_is_an_error() -> None:
    entries = [
        AgentEntry.model_validate(e)
        for e in ["goose", {"agent": "codex", "name": "x"}, {"agent": "gemini", "name": "x"}]
    ]
    with pytest.raises(ConfigError) as info:
        display_names(entries, "/p/axis.config.json")
    assert "agents[2].name: two agents are named 'x'" in info.value.message
    assert "/p/axis.config.json" in info.value.message


@pytest.mark.parametrize(
    "entries",
    [
        [{"agent": "codex", "name": "claude-code"}, "claude-code"],
        ["claude-code", {"agent": "codex", "name": "claude-code"}],
        [{"agent": "gemini", "name": "codex-2"}, "codex", "codex"],
    ],
)
def test_generated_name_colliding_with_explicit_is_an_error(entries: list[Any]) -> None:
    with pytest.raises(ConfigError, match="collides with an explicit `name`"):
        names(*entries)


def test_display_names_carry_the_entry() -> None:
    entry = AgentEntry.model_validate(
        {
            "agent": "codex",
            "model": "m",
            "flags": {"a": True},
            "command": "my-codex",
            "skills": ["./s"],
            "scenarios": ["x/*"],
        }
    )
    [spec] = display_names([entry])
    assert spec.adapter == "codex" and spec.model == "m"
    assert spec.flags == {"a": True}
    assert spec.command == ["my-codex"], "a string command becomes an argv prefix"
    assert spec.skills == ["./s"] and spec.scenarios == ["x/*"]
