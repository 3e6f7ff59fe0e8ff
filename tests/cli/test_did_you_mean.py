"""Every name the CLI looks up suggests the closest names when it is misspelled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

MakeProject = Callable[..., Path]
Axis = Callable[..., Any]

HELLO = {"hello-world": {"name": "Hello", "prompt": "say hello", "judge": "it did"}}

DRY_RUN_CASES: dict[str, tuple[dict[str, Any], dict[str, Any], list[str], list[str]]] = {
    # name: (config, scenarios, extra args, substrings of stderr)
    "top-level-key": (
        {"scenarios": "./scenarios", "agnets": ["claude-code"]},
        HELLO,
        [],
        [
            "agents: expected a value (this field is required), "
            "found unknown key 'agnets' (did you mean 'agents'?)"
        ],
    ),
    "nested-key": (
        {"agents": [{"agnt": "claude-code"}]},
        HELLO,
        [],
        [
            "agents[0].agent: expected a value",
            "unknown key 'agents[0].agnt' (did you mean 'agent'?)",
        ],
    ),
    "deeper-key": (
        {"agents": ["codex"], "judging": {"agents": [{"agnet": "codex"}]}},
        HELLO,
        [],
        ["unknown key 'judging.agents[0].agnet' (did you mean 'agent'?)"],
    ),
    "scenario-key": (
        {"agents": ["codex"]},
        {**HELLO, "typo": {"name": "T", "promt": "p", "judge": "j"}},
        [],
        ["scenarios/typo.json", "unknown key 'promt' (did you mean 'prompt'?)"],
    ),
    "scenario-variant-key": (
        {"agents": ["codex"]},
        {**HELLO, "v": {"name": "V", "prompt": "p", "judge": "j", "variants": [{"nme": "x"}]}},
        [],
        ["variants[0].name: expected a value", "'variants[0].nme' (did you mean 'name'?)"],
    ),
    "builtin-agent": (
        {"agents": ["claude-cod"]},
        HELLO,
        [],
        ["unknown agent 'claude-cod' (did you mean 'claude-code'", "known agents: "],
    ),
    "adapter-name": (
        {"agents": ["my-tyo"], "adapters": {"my-toy": {"command": ["my-cli"]}}},
        HELLO,
        [],
        ["unknown agent 'my-tyo' (did you mean 'my-toy'?)"],
    ),
    "profile": (
        {"agents": ["codex"], "profiles": {"live": {}, "nightly": {}}},
        HELLO,
        ["--profile", "lve"],
        ["unknown profile 'lve' (did you mean 'live'?)", "profiles defined: live, nightly"],
    ),
    "agent-filter": (
        {"agents": ["codex", "claude-code"]},
        HELLO,
        ["-a", "codx"],
        ["-a 'codx' matches no configured agent (did you mean 'codex'?)"],
    ),
    "scenario-filter": (
        {"agents": ["codex"]},
        HELLO,
        ["-s", "hello"],
        ["-s 'hello' matches no scenario (did you mean 'hello-world'?)"],
    ),
    "scenario-filter-far": (
        {"agents": ["codex"]},
        HELLO,
        ["-s", "xyzzy"],
        ["-s 'xyzzy' matches no scenario (scenarios: hello-world)"],
    ),
    "scenario-filter-suite": (
        {"agents": ["codex"], "exclude": ["hello-world"]},
        {**HELLO, "other": {"name": "O", "prompt": "p", "judge": "j"}},
        ["-s", "hello-world"],
        ["-s 'hello-world' matches only scenarios the suite's include/exclude"],
    ),
}


@pytest.mark.parametrize("case", sorted(DRY_RUN_CASES))
def test_misspelled_names_suggest_the_closest(
    tmp_path: Path, make_project: MakeProject, axis: Axis, case: str
) -> None:
    config, scenarios, args, expected = DRY_RUN_CASES[case]
    make_project(tmp_path, config, scenarios)
    result = axis("run", "--dry-run", *args, cwd=tmp_path)
    # A dry run lists the scenario files that failed to load (stdout); errors are on stderr.
    shown = result.stdout + result.stderr
    for text in expected:
        assert text in shown, (text, shown)
    if case.startswith("scenario-") and case != "scenario-filter-suite":
        assert "suite" not in shown, "no suite is configured: none is named"
    if case != "scenario-key" and case != "scenario-variant-key":
        assert result.exit_code == 2
    assert "Traceback" not in result.stderr


def test_a_far_key_gets_no_wrong_suggestion(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    make_project(tmp_path, {"scenarios": "./scenarios", "zzz": ["codex"]}, HELLO)
    result = axis("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 2
    assert "agents: expected a value (this field is required)\n" in result.stderr + "\n"
    assert "did you mean" not in result.stderr


def test_init_suggests_a_builtin_agent(tmp_path: Path, axis: Axis) -> None:
    result = axis("init", "-a", "claude-cod", cwd=tmp_path)
    assert result.exit_code == 2
    assert "unknown agent 'claude-cod' (did you mean 'claude-code'" in result.stderr
    assert not (tmp_path / "axis.config.json").exists()


def test_agents_install_suggests_a_pinned_agent(tmp_path: Path, axis: Axis) -> None:
    result = axis("agents", "install", "codx", cwd=tmp_path)
    assert result.exit_code == 2  # a usage error: it fails before npm is looked for
    assert "no pinned npm package for agent 'codx' (did you mean 'codex'" in result.stderr
