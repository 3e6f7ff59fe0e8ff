"""Hostile values through the real command: exit 2, the file and the field named, no traceback.

Each of these passed ``axis run --dry-run`` before and then disabled a limit (an infinite
time limit) or crashed the real run (a NUL or an unpaired surrogate in a folder name, an
argv, a variable or the report's JSON).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Axis = Callable[..., Any]
"""The ``axis`` (in-process) and ``axis_process`` (child process) runners of conftest."""
MakeProject = Callable[..., Path]

SCENARIO = {"name": "n", "prompt": "p", "judge": "j"}


def refused(result: Any, config: Path, *needles: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert str(config) in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr
    assert result.stdout == ""


# -- a real process: the exit code and stderr the user sees, for all three at once -----------


def test_each_class_exits_2_from_a_real_process(
    tmp_path: Path, make_project: MakeProject, axis_process: Axis
) -> None:
    config = {
        "name": "\udc80",
        "agents": [{"agent": "codex", "name": "fast\x00codex"}],
        "settings": {"limits": {"scenario": {"time_minutes": "x"}}},
    }
    root = make_project(tmp_path, config, {"a": SCENARIO})
    path = root / "axis.config.json"
    path.write_text(path.read_text().replace('"x"', "Infinity"))
    assert '"\\udc80"' in path.read_text(), "the JSON escape itself reaches the parser"
    refused(
        axis_process("run", "--dry-run", cwd=root),
        path,
        "settings.limits.scenario.time_minutes: expected a finite number greater than 0",
        "agents[0].name: expected text without NUL characters",
        "name: expected text without unpaired surrogates",
    )


def test_the_first_finding_of_each_class_alone(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    path = make_project(tmp_path / "inf", {"agents": ["codex"]}) / "axis.config.json"
    path.write_text(
        '{"agents": ["codex"], "settings": {"limits": {"run": {"time_minutes": Infinity}}}}'
    )
    refused(axis("run", "--dry-run", cwd=path.parent), path, "settings.limits.run.time_minutes")
    config = {"agents": [{"agent": "codex", "name": "a\x00b"}]}
    path = make_project(tmp_path / "nul", config) / "axis.config.json"
    refused(axis("run", "--dry-run", cwd=path.parent), path, "agents[0].name: expected text")
    path = make_project(tmp_path / "sur", {"name": "\udc80", "agents": ["codex"]})
    path = path / "axis.config.json"
    refused(axis("run", "--dry-run", cwd=path.parent), path, "name: expected text without")


# -- more of each class, in-process ---------------------------------------------------------


@pytest.mark.parametrize(
    ("config_name", "body", "needle"),
    [
        (
            "axis.config.yaml",
            "agents: [codex]\nsettings:\n  limits:\n    run:\n      time_minutes: .inf\n",
            "settings.limits.run.time_minutes: expected a finite number",
        ),
        (
            "axis.config.yaml",
            "agents: [codex]\nsettings:\n  limits:\n    run:\n      time_minutes: 1.0e+308\n",
            "settings.limits.run.time_minutes: expected a number of at most 10,080 (7 days)",
        ),
        (
            "axis.config.toml",
            'agents = ["codex"]\n[judging]\nmodel = "anthropic:m"\ntimeout_seconds = inf\n',
            "judging.timeout_seconds: expected a finite number",
        ),
        (
            "axis.config.json",
            '{"agents": ["codex"], "judging": {"timeout_seconds": NaN}}',
            "judging.timeout_seconds: expected a finite number",
        ),
        (
            "axis.config.json",
            '{"agents": ["codex"], "beforeAll": [{"action": "run_script", "command": "true",'
            ' "timeout_minutes": -Infinity}]}',
            "beforeAll[0].timeout_minutes: expected a finite number",
        ),
    ],
    ids=["yaml-inf", "yaml-1e308", "toml-inf", "json-nan", "json-minus-infinity"],
)
def test_non_finite_numbers_in_every_format(
    tmp_path: Path, make_project: MakeProject, axis: Axis, config_name: str, body: str, needle: str
) -> None:
    root = make_project(tmp_path, body, {"a": SCENARIO}, config_name=config_name)
    refused(axis("run", "--dry-run", cwd=root), root / config_name, needle)


INLINE = {"key": "inline/one", **SCENARIO}


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (
            {"agents": ["codex"], "scenarios": [{**INLINE, "key": "in\x00line"}]},
            "scenarios[0].key: expected text without NUL characters",
        ),
        (
            {"agents": ["codex"], "scenarios": [{**INLINE, "key": "../../outside"}]},
            "scenarios[0].key: expected a key of '/'-separated names",
        ),
        (
            {"agents": [{"agent": "codex", "flags": {"sandbox": "x\x00"}}]},
            "agents[0].flags.sandbox: expected text without NUL characters",
        ),
        (
            {"agents": [{"agent": "codex", "command": ["codex", "--x\x00"]}]},
            "agents[0].command[1]: expected text without NUL characters",
        ),
        (
            {"agents": [{"agent": "codex", "name": "red\x1b[31m"}]},
            "agents[0].name: expected a name without control characters",
        ),
        (
            {"agents": ["codex"], "scenarios": [{**INLINE, "env": {"A=B": "1"}}]},
            "scenarios[0].env.A=B: expected a variable name without '='",
        ),
        (
            {"agents": ["codex"], "scenarios": [{**INLINE, "prompt": "p\udc80"}]},
            "scenarios[0].prompt: expected text without unpaired surrogates",
        ),
    ],
    ids=["nul-key", "escaping-key", "nul-flag", "nul-argv", "escape-name", "env-equals", "prompt"],
)
def test_unsafe_text(
    tmp_path: Path, make_project: MakeProject, axis: Axis, config: dict[str, Any], needle: str
) -> None:
    root = make_project(tmp_path, config)
    refused(axis("run", "--dry-run", cwd=root), root / "axis.config.json", needle)


def test_a_scenario_file_with_an_infinite_limit_fails_to_load(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    """A bad scenario file is a load failure (as AXIS): named with its field, never run."""
    bad = {**SCENARIO, "limits": {"time_minutes": "x"}}
    root = make_project(tmp_path, {"agents": ["codex"]}, {"bad": bad, "good": SCENARIO})
    path = root / "scenarios" / "bad.json"
    path.write_text(path.read_text().replace('"x"', "Infinity"))
    result = axis("run", "--dry-run", cwd=root)
    assert result.exit_code == 1
    assert "Traceback" not in result.stdout + result.stderr
    out = result.stdout + result.stderr
    assert "scenarios/bad.json: limits.time_minutes: expected a finite number" in out
    assert "good" in result.stdout and " bad " not in result.stdout
