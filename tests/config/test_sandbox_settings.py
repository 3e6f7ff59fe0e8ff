"""``sandbox``, ``network`` and the container limits, from the files and ``--sandbox`` to each
job's :class:`SandboxPolicy` (what the job then runs under is tests/execute/sandbox)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.load import load_config
from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.errors import EXIT_USAGE
from axis_eval.planning.matrix import Selection, plan


def _project(root: Path, config: dict[str, Any], scenario: dict[str, Any]) -> Path:
    (root / "scenarios").mkdir(parents=True)
    body = {"agents": ["codex"], **config}
    (root / "axis.config.json").write_text(json.dumps(body))
    task = {"name": "T", "prompt": "p", "judge": "j", **scenario}
    (root / "scenarios" / "t.json").write_text(json.dumps(task))
    return root


def _policies(root: Path, selection: Selection | None = None) -> dict[str, SandboxPolicy]:
    the_plan = plan(load_config(str(root)), selection)
    return {job.scenario.key: job.sandbox for job in the_plan.jobs}


def test_the_default_is_auto_with_the_host_network(tmp_path: Path) -> None:
    [policy] = _policies(_project(tmp_path, {}, {})).values()
    assert policy == SandboxPolicy(mode="auto", network="host")


def test_settings_take_a_mode_or_an_object_and_a_scenario_wins_field_by_field(
    tmp_path: Path,
) -> None:
    root = _project(
        tmp_path,
        {"settings": {"sandbox": {"mode": "docker", "image": "team/agents:3"}}},
        {
            "variants": [
                {"name": "plain"},
                {"name": "host", "sandbox": "none"},
                {"name": "other-image", "sandbox": {"image": "team/agents:4"}},
            ]
        },
    )
    got = _policies(root)
    assert (got["t@plain"].mode, got["t@plain"].image) == ("docker", "team/agents:3")
    assert (got["t@host"].mode, got["t@host"].image) == ("none", "team/agents:3")
    assert (got["t@other-image"].mode, got["t@other-image"].image) == ("docker", "team/agents:4")
    bare = _project(tmp_path / "bare", {"settings": {"sandbox": "bwrap"}}, {})
    assert [p.mode for p in _policies(bare).values()] == ["bwrap"]


def test_the_command_line_wins_over_every_file(tmp_path: Path) -> None:
    root = _project(tmp_path, {"settings": {"sandbox": "docker"}}, {"sandbox": "bwrap"})
    assert [p.mode for p in _policies(root, Selection(sandbox="none")).values()] == ["none"]


def test_network_none_from_the_scenario_or_the_agent(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"agents": ["codex", {"agent": "claude-code", "network": "none"}]},
        {"variants": [{"name": "online"}, {"name": "offline", "network": "none"}]},
    )
    the_plan = plan(load_config(str(root)))
    nets = {(j.scenario.key, j.agent.name): j.sandbox.network for j in the_plan.jobs}
    assert nets == {
        ("t@online", "codex"): "host",
        ("t@online", "claude-code"): "none",
        ("t@offline", "codex"): "none",
        ("t@offline", "claude-code"): "none",
    }


def test_container_limits_come_from_the_jobs_limits(tmp_path: Path) -> None:
    limits = {"scenario": {"memory_mb": 512, "pids": 64, "cpus": 1.5}}
    root = _project(
        tmp_path,
        {"settings": {"limits": limits}},
        {"variants": [{"name": "default"}, {"name": "own", "limits": {"memory_mb": 2048}}]},
    )
    got = _policies(root)
    assert (got["t@default"].memory_mb, got["t@default"].pids, got["t@default"].cpus) == (
        512,
        64,
        1.5,
    )
    # A scenario's limits replace the default wholesale, as for time and tokens.
    assert (got["t@own"].memory_mb, got["t@own"].pids) == (2048, None)


@pytest.mark.parametrize(
    ("config", "scenario", "expected"),
    [
        ({"settings": {"sandbox": "box"}}, {}, "settings.sandbox.mode: expected one of"),
        ({"agents": [{"agent": "codex", "network": "off"}]}, {}, "agents[0].network"),
        ({"settings": {"limits": {"run": {"pids": 5}}}}, {}, "container limits are per job"),
        ({"settings": {"limits": {"scenario": {"memory_mb": 0}}}}, {}, "memory_mb"),
        ({"settings": {"limits": {"scenario": {"cpus": "2"}}}}, {}, "cpus"),
    ],
)
def test_bad_sandbox_settings_are_clear_errors(
    tmp_path: Path,
    axis: Callable[..., Any],
    config: dict[str, Any],
    scenario: dict[str, Any],
    expected: str,
) -> None:
    root = _project(tmp_path, config, scenario)
    result = axis("run", "-c", str(root), "--dry-run")
    assert result.exit_code == EXIT_USAGE, result.stderr
    assert expected in result.stderr and "axis.config.json" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_sandbox_key_is_a_warning_with_a_hint(
    tmp_path: Path, axis: Callable[..., Any]
) -> None:
    root = _project(tmp_path, {"settings": {"sandbox": {"mode": "bwrap", "img": "x"}}}, {})
    result = axis("run", "-c", str(root), "--dry-run")
    assert result.exit_code == 0
    assert "settings.sandbox.img" in result.stderr and "'image'" in result.stderr


def test_a_bad_scenario_sandbox_is_a_load_failure_naming_the_field(
    tmp_path: Path, axis: Callable[..., Any]
) -> None:
    root = _project(tmp_path, {}, {"sandbox": {"mode": "vm"}})
    result = axis("run", "-c", str(root), "--dry-run")
    assert result.exit_code == EXIT_USAGE
    assert "sandbox.mode" in result.stderr and "'docker'" in result.stderr


def test_the_dry_run_shows_each_jobs_sandbox(tmp_path: Path, axis: Callable[..., Any]) -> None:
    root = _project(tmp_path, {"settings": {"sandbox": "bwrap"}}, {"network": "none"})
    text = axis("run", "-c", str(root), "--dry-run")
    assert text.exit_code == 0 and "bwrap (net none)" in text.stdout
    data = json.loads(
        axis("run", "-c", str(root), "--dry-run", "--json", "--sandbox", "none").stdout
    )
    assert [(j["sandbox"], j["network"]) for j in data["jobs"]] == [("none", "none")]
    bad = axis("run", "-c", str(root), "--dry-run", "--sandbox", "vm")
    assert bad.exit_code == EXIT_USAGE and "--sandbox" in bad.stderr


def test_readable_and_writable_folders_resolve_from_the_config(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {"settings": {"sandbox": {"readable": ["data", "~/tools"], "writable": ["/var/cache/x"]}}},
        {"sandbox": {"writable": ["out"]}},
    )
    [policy] = _policies(root).values()
    assert policy.readable == [str(root / "data"), str(Path("~/tools").expanduser())]
    # A scenario's folders add to the settings' (neither replaces the other).
    assert policy.writable == ["/var/cache/x", str(root / "out")]
