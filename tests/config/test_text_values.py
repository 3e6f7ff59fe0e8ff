"""No string of a config or scenario holds NUL or an unpaired surrogate; names that become
folders or variables are safe ones.

A NUL in an agent's name or an inline scenario's key, or ``"\\udc80"`` (a JSON escape) in the
config's name, used to pass the dry run and crash the real run: they end up in folder names,
environment variables, argv and JSON. Every string leaf of the every-field config is tried.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from axis_eval.config._problems import problems_from
from axis_eval.config._text import (
    PROMPT_FIELDS,
    bad_strings,
    check_strings,
    folder_name_problem,
    scenario_key_problem,
    shown,
    text_problem,
)
from axis_eval.config.load import validate_config
from axis_eval.config.scenario import ScenarioInput
from axis_eval.errors import EXIT_USAGE, ConfigError

from .test_models import EVERY_FIELD

FILE = "/proj/axis.config.json"
NUL = "\x00"
SURROGATE = "\udc80"

Part = str | int

ALPHABET = st.sampled_from(
    ["a", "Z", "/", ".", "\\", "=", " ", "\n", "é", NUL, SURROGATE, "\udbff"]
)
"""Ordinary characters and every kind the rules care about."""

FREE_FORM = ("flags", "adapters", "profiles", "mcp_servers", "env", "headers")
"""Mappings whose keys are the user's names, not field names."""


def problems(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        validate_config(raw, FILE)
    assert info.value.exit_code == EXIT_USAGE
    return info.value.render()


def cfg(**fields: Any) -> dict[str, Any]:
    return {"agents": ["claude-code"], **fields}


def rendered(parts: tuple[Part, ...]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def string_leaves(value: Any, parts: tuple[Part, ...] = ()) -> Iterator[tuple[Part, ...]]:
    if isinstance(value, str):
        yield parts
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_leaves(item, (*parts, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_leaves(item, (*parts, key))


def free_keys(value: Any, parts: tuple[Part, ...] = ()) -> Iterator[tuple[Part, ...]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from free_keys(item, (*parts, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            if parts and parts[-1] in FREE_FORM:
                yield (*parts, key)
            yield from free_keys(item, (*parts, key))


def with_value(doc: dict[str, Any], parts: tuple[Part, ...], bad: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    holder: Any = out
    for part in parts[:-1]:
        holder = holder[part]
    holder[parts[-1]] = holder[parts[-1]] + bad
    return out


def with_key(doc: dict[str, Any], parts: tuple[Part, ...], bad: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    holder: Any = out
    for part in parts[:-1]:
        holder = holder[part]
    key = parts[-1]
    assert isinstance(key, str)
    holder[key + bad] = holder.pop(key)
    return out


EVERY_SCENARIO_FIELD = {
    "key": "inline/every",
    "name": "Every scenario field",
    "prompt": "p",
    "judge": [{"check": "c", "weight": 1, "run": "test -f out"}],
    "setup": [{"action": "copy", "match": "fixtures/*", "destination": "in"}],
    "teardown": [{"action": "run_script", "command": "rm -rf in"}],
    "agents": ["codex"],
    "skills": ["./skills/s"],
    "mcp_servers": {"m": {"type": "stdio", "command": "srv", "env": {"TOKEN": "t"}}},
    "env": {"MODE": "ci"},
    "artifacts": ["out/*"],
    "variants": [{"name": "v", "prompt": "vp", "env": ["HOME"]}],
}
DOC = {**EVERY_FIELD, "scenarios": [*EVERY_FIELD["scenarios"], EVERY_SCENARIO_FIELD]}
"""The every-field config of test_models, with an inline scenario that sets every field."""

VALUES = list(string_leaves(DOC))
KEYS = list(free_keys(DOC))


def test_the_walk_covers_the_argv_env_and_path_fields() -> None:
    paths = {rendered(p) for p in VALUES}
    assert {
        "name",
        "agents[1].name",
        "agents[1].command[1]",
        "agents[1].flags.sandbox",
        "agents[2].command",
        "mcp_servers.fs.env.A",
        "mcp_servers.fs.args[0]",
        "beforeAll[0].command",
        "afterAll[0].match",
        "scenarios[1].key",
        "scenarios[2].setup[0].destination",
        "scenarios[2].judge[0].run",
        "scenarios[2].env.MODE",
        "scenarios[2].variants[0].env[0]",
        "env[0]",
    } <= paths
    assert {rendered(p) for p in KEYS} >= {
        "agents[1].flags.full-auto",
        "mcp_servers.fs.env.A",
        "scenarios[2].env.MODE",
        "scenarios[2].mcp_servers.m.env.TOKEN",
    }


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize("parts", VALUES, ids=rendered)
def test_every_string_value_is_checked(parts: tuple[Part, ...], bad: str) -> None:
    if bad == NUL and parts[-1] in PROMPT_FIELDS:
        # a prompt may hold NUL: it goes over stdin (tests/pipeline/test_modes.py)
        assert validate_config(with_value(DOC, parts, bad), FILE)
        return
    text = problems(with_value(DOC, parts, bad))
    assert FILE in text
    assert rendered(parts) in text
    assert "NUL characters" in text or "control characters" in text or "surrogates" in text


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize("parts", KEYS, ids=rendered)
def test_every_user_named_key_is_checked(parts: tuple[Part, ...], bad: str) -> None:
    text = problems(with_key(DOC, parts, bad))
    key = str(parts[-1]) + bad
    assert f"{rendered(parts[:-1])}.{shown(key)}: expected a " in text


def test_unknown_keys_are_checked_too() -> None:
    """They are kept in the report's copy of the config, which is JSON."""
    text = problems(cfg(mystery={"a": "b" + SURROGATE}))
    assert "mystery.a: expected text without unpaired surrogates" in text
    text = problems(cfg(settings={"limits": {"run": {"odd": ["x", "y" + NUL]}}}))
    assert "settings.limits.run.odd[1]: expected text without NUL characters" in text
    scenario = {"key": "k", "name": "n", "prompt": "p", "rubric": "r" + NUL}
    assert "scenarios[0].rubric: expected text without NUL" in problems(cfg(scenarios=[scenario]))


def test_a_scenario_file_is_checked_as_a_whole() -> None:
    raw = {"name": "n", "prompt": "p", "judge": "j", "variants": [{"name": "v", "rubric": NUL}]}
    with pytest.raises(ValidationError) as info:
        ScenarioInput.model_validate(raw)
    [problem] = problems_from(info.value)
    assert problem.render().startswith("variants[0].rubric: expected text without NUL")


def test_a_prompt_may_hold_nul_but_not_a_surrogate() -> None:
    """NUL is a byte like any other on stdin; an unpaired surrogate cannot be sent at all."""
    raw = {"name": "n", "prompt": "a" + NUL, "judge": "j", "variants": [{"name": "v"}]}
    raw["variants"][0]["prompt"] = "b" + NUL
    assert ScenarioInput.model_validate(raw).prompt == "a" + NUL
    raw["variants"][0]["prompt"] = "b" + SURROGATE
    with pytest.raises(ValidationError) as info:
        ScenarioInput.model_validate(raw)
    [problem] = problems_from(info.value)
    assert problem.render().startswith("variants[0].prompt: expected text without unpaired")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(alphabet=ALPHABET),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet=ALPHABET, max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.fuzz
@given(JSONISH)
def test_the_fast_path_agrees_with_the_located_walk(value: Any) -> None:
    located = list(bad_strings(value))
    if located:
        with pytest.raises(ValidationError) as info:
            check_strings(value)
        assert len(info.value.errors()) == len(located)
    else:
        assert check_strings(value) is value


@pytest.mark.fuzz
@settings(max_examples=40)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=8))
def test_any_name_or_key_is_accepted_or_refused_cleanly(text: str) -> None:
    """Whatever the text, validation ends in a config error or a value that is safe."""
    raw = cfg(
        name=text,
        agents=[{"agent": "codex", "name": text}],
        scenarios=[{"key": text, "name": text, "prompt": "p", "judge": "j"}],
        env=[text],
    )
    try:
        config = validate_config(raw, FILE)
    except ConfigError as exc:
        assert exc.exit_code == EXIT_USAGE
        exc.render().encode("utf-8")
        return
    for shown_text in (config.name or "", config.agents[0].name or ""):
        shown_text.encode("utf-8")
        assert NUL not in shown_text
    assert folder_name_problem(config.agents[0].name or "") is None


def test_the_reported_cases() -> None:
    nul_name = problems({"agents": [{"agent": "codex", "name": "a\x00b"}]})
    assert 'agents[0].name: expected text without NUL characters, found "a\\u0000b"' in nul_name
    nul_key = problems(cfg(scenarios=[{"key": "k\x00", "name": "n", "prompt": "p", "judge": "j"}]))
    assert 'scenarios[0].key: expected text without NUL characters, found "k\\u0000"' in nul_key
    assert (
        "name: expected text without unpaired surrogates (\\ud800-\\udfff are not valid "
        'Unicode), found "\\udc80"'
    ) in problems(cfg(name=SURROGATE))


def test_messages_print_safely() -> None:
    """No raw NUL or surrogate reaches the terminal: paths and values come escaped."""
    text = problems({"agents": [{"agent": "codex", "flags": {"x" + NUL: "y" + SURROGATE}}]})
    assert NUL not in text and SURROGATE not in text
    text.encode("utf-8")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("codex-fast", None),
        ("claude-code|claude-sonnet-4.5", None),
        ("Ünïcode name", None),
        ("a b", None),
        ("a/b", "a name without '/'"),
        ("a\\b", "a name without '/'"),
        (".hidden", "a name without '/'"),
        ("..", "a name without '/'"),
        ("tab\there", "a name without control characters"),
        ("line\n", "a name without control characters"),
        ("esc\x1b[31m", "a name without control characters"),
        ("c1\x85", "a name without control characters"),
        ("x" * 255, None),
        ("x" * 256, "a name of at most 255 bytes"),
        ("é" * 128, "a name of at most 255 bytes"),
    ],
)
def test_folder_names(name: str, expected: str | None) -> None:
    problem = folder_name_problem(name)
    assert (problem is None) if expected is None else (problem or "").startswith(expected)


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("inline/one", True),
        ("a", True),
        ("cms/create-post", True),
        ("dir/.hidden", True),
        ("a@b", True),
        ("../x", False),
        ("a/../b", False),
        ("./a", False),
        ("/abs", False),
        ("a//b", False),
        ("a/", False),
        ("a\\b", False),
        ("a\nb", False),
        ("a/" + "x" * 256, False),
    ],
)
def test_scenario_keys(key: str, ok: bool) -> None:
    assert (scenario_key_problem(key) is None) is ok


def test_scenario_file_keys_follow_the_same_rule() -> None:
    raw = {"key": "../up", "name": "n", "prompt": "p", "judge": "j"}
    with pytest.raises(ValueError, match="key"):
        ScenarioInput.model_validate(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (cfg(env=["A=B"]), "env[0]: expected a variable name without '='"),
        (
            cfg(judging={"model": "anthropic:m", "api_key_env": "K=V"}),
            "judging.api_key_env: expected a variable name without '='",
        ),
        (
            cfg(mcp_servers={"s": {"type": "stdio", "command": "c", "env": {"X=Y": "1"}}}),
            "mcp_servers.s.env.X=Y: expected a variable name without '='",
        ),
        (
            cfg(
                scenarios=[
                    {"key": "k", "name": "n", "prompt": "p", "judge": "j", "env": {"A=": "1"}}
                ]
            ),
            "scenarios[0].env.A=: expected a variable name without '='",
        ),
        (
            cfg(scenarios=[{"key": "k", "name": "n", "prompt": "p", "judge": "j", "env": ["A=1"]}]),
            "scenarios[0].env[0]: expected a variable name without '='",
        ),
        (
            cfg(adapters={"d": {"command": "c", "required_env": ["=X"]}}),
            "adapters.d.required_env[0]: expected a variable name without '='",
        ),
    ],
)
def test_variable_names(raw: dict[str, Any], expected: str) -> None:
    """``execve`` refuses a variable named with ``=``; a scenario's ``env`` sets them."""
    assert expected in problems(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (cfg(adapters={"..": {"command": "c"}}), 'adapters."..": expected a name without'),
        (cfg(adapters={"a/b": {"command": "c"}}), "adapters.a/b: expected a name without"),
        ({"agents": [{"agent": "../up"}]}, "agents[0].agent: expected a name without"),
    ],
)
def test_adapter_names_become_folders(raw: dict[str, Any], expected: str) -> None:
    """An unnamed agent's folder is its adapter's name."""
    assert expected in problems(raw)


@pytest.mark.parametrize(
    "text",
    ["plain", "multi\nline\ttabs", "emoji 🎉 and ünïcode", json.loads('"\\ud83d\\ude00"')],
    ids=["plain", "controls", "unicode", "json-surrogate-pair"],
)
def test_ordinary_text_passes(text: str) -> None:
    assert text_problem(text) is None
    config = validate_config(cfg(name=text, skills=[text]), FILE)
    assert config.name == text
