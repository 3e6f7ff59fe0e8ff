"""The ``axis`` command: errors and exit codes, dry runs, schema, init."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval._version import __version__
from axis_eval.schemas import SCHEMA_NAMES

MakeProject = Callable[..., Path]
Axis = Callable[..., Any]


def sc(name: str = "S", **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


# -- errors: exit 2, a message, never a traceback (real processes) ---------------------

ERROR_CASES: dict[str, tuple[dict[str, Any] | str, dict[str, Any], list[str], list[str]]] = {
    # name: (config, scenarios, extra args, substrings of stderr)
    "bad-field": (
        {"agents": ["codex", {"agent": "codex", "model": 5}], "settings": {"concurrency": 0}},
        {"a": sc()},
        [],
        [
            "axis.config.json",
            "agents[1].model: expected a string, found 5",
            "settings.concurrency: expected a number greater than 0, found 0",
        ],
    ),
    "even-runs": (
        {"agents": ["codex"], "settings": {"runs": 4}},
        {"a": sc()},
        [],
        ["settings.runs: expected an odd run count from 1 to 19 (nearest legal: 3 or 5)"],
    ),
    "cli-even-runs": (
        {"agents": ["codex"]},
        {"a": sc()},
        ["--runs", "2"],
        ["--runs 2: expected an odd run count", "nearest legal: 1 or 3"],
    ),
    "unknown-agent": (
        {"agents": ["mock-agent"]},
        {"a": sc()},
        [],
        ["unknown agent 'mock-agent'", "known agents: ", "claude-code"],
    ),
    "no-agent-match": (
        {"agents": ["codex"]},
        {"a": sc()},
        ["-a", "gemini"],
        ["-a 'gemini' matches no configured agent"],
    ),
    "zero-jobs": (
        {"agents": ["codex"]},
        {"a": sc()},
        ["-s", "nope"],
        ["no jobs to run: the selection is empty"],
    ),
    "remote": (  # port 1 on 127.0.0.1: nothing listens (tests/config/test_remote_scenarios.py)
        {"agents": ["codex"], "scenarios": ["git://127.0.0.1:1/o/r"]},
        {},
        [],
        ["remote scenario source git clone git://127.0.0.1:1/o/r: the host cannot be reached"],
    ),
    "unknown-profile": (
        {"agents": ["codex"]},
        {"a": sc()},
        ["--profile", "ci"],
        ["unknown profile 'ci'"],
    ),
    "bad-json": ('{"agents": [', {}, [], ["invalid JSON in config file"]),
    "explicit-names": (
        {"agents": [{"agent": "codex", "name": "x"}, {"agent": "goose", "name": "x"}]},
        {"a": sc()},
        [],
        ["agents[1].name: two agents are named 'x'"],
    ),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_errors_exit_2_without_traceback(
    tmp_path: Path, make_project: MakeProject, axis_process: Axis, case: str
) -> None:
    config, scenarios, args, needles = ERROR_CASES[case]
    make_project(tmp_path, config, scenarios)
    result = axis_process("run", "--dry-run", *args, cwd=tmp_path)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr
    # A remote source says it is being cloned (AXIS's line) before the error: nothing else.
    lines = result.stderr.splitlines(keepends=True)
    err = "".join(line for line in lines if not line.startswith("Cloning remote scenarios: "))
    assert err.startswith("error: ")
    for needle in needles:
        assert needle in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / ".axis").exists()


def test_typescript_config_without_its_loader_exits_2(
    tmp_path: Path, axis_process: Axis, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js")
    monkeypatch.setenv("AXIS_AGENTS_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setenv("AXIS_TS_LOADER", "tsx")
    (tmp_path / "axis.config.ts").write_text("export default {}\n")
    result = axis_process("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "running TypeScript needs Node >= 22.6 or the pinned tsx" in result.stderr
    assert "axis agents install --typescript" in result.stderr


def test_no_config_exits_2(tmp_path: Path, axis_process: Axis) -> None:
    result = axis_process("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert "no axis.config.* found" in result.stderr and "axis init" in result.stderr


def test_bad_flag_is_a_usage_error(tmp_path: Path, axis_process: Axis) -> None:
    result = axis_process("run", "--concurrency", "0", cwd=tmp_path)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr


def test_end_to_end_dry_run_process(
    tmp_path: Path, make_project: MakeProject, axis_process: Axis
) -> None:
    make_project(tmp_path, {"agents": ["codex", "goose"]}, {"a": sc(), "b/c": sc(runs=3)})
    result = axis_process("run", "--dry-run", "--json", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["statusLine"] == (
        "Discovered 2 scenarios across 2 agents: 4 pairs, 8 jobs (up to 3 runs each)"
    )
    assert [(j["scenarioKey"], j["agentName"], j["runIndex"]) for j in data["jobs"]] == [
        ("a", "codex", 1),
        ("b/c", "codex", 1),
        ("a", "goose", 1),
        ("b/c", "goose", 1),
        ("b/c", "codex", 2),
        ("b/c", "goose", 2),
        ("b/c", "codex", 3),
        ("b/c", "goose", 3),
    ]
    assert not (tmp_path / ".axis").exists()


def test_version(axis: Axis) -> None:
    result = axis("--version")
    assert result.exit_code == 0
    assert __version__ in result.stdout


# -- dry runs (in-process) --------------------------------------------------------------


def test_dry_run_text_lists_jobs_in_scheduling_order(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    make_project(
        tmp_path,
        {
            "agents": ["codex", {"agent": "claude-code", "model": "anthropic/claude-3.5-sonnet"}],
            "settings": {"limits": {"scenario": {"tokens": 20000}}},
        },
        {"x": sc(runs=3), "y": sc()},
    )
    result = axis("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Discovered 2 scenarios across 2 agents: 4 pairs, 8 jobs (up to 3 runs each)"
    rows = [line.split() for line in lines[4:]]
    assert [(r[1], r[2], r[3]) for r in rows] == [
        ("1/3", "x", "codex"),
        ("1/1", "y", "codex"),
        ("1/3", "x", "claude-code|anthropic-claude-3.5-sonnet"),
        ("1/1", "y", "claude-code|anthropic-claude-3.5-sonnet"),
        ("2/3", "x", "codex"),
        ("2/3", "x", "claude-code|anthropic-claude-3.5-sonnet"),
        ("3/3", "x", "codex"),
        ("3/3", "x", "claude-code|anthropic-claude-3.5-sonnet"),
    ]
    assert [r[0] for r in rows] == [str(i) for i in range(1, 9)]
    assert all(r[4] == "15m" and r[5] == "20,000" for r in rows)
    assert not (tmp_path / ".axis").exists()


def test_dry_run_lists_load_failures_skips_and_warnings(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"], "settings": {"concurency": 2}},
        {"good": sc(), "off": sc(skip=True), "broken": {"name": "b", "prompt": "p", "runs": 2}},
    )
    result = axis("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 1  # a load failure fails a real run, so the dry run says so
    assert "Skipped (1): off" in result.stdout
    assert "Failed to load (1):" in result.stdout
    assert "  scenarios/broken.json: " in result.stdout
    assert "warning: axis.config.json: unknown key 'settings.concurency' (did you mean " in (
        result.stderr
    )


def test_dry_run_json(tmp_path: Path, make_project: MakeProject, axis: Axis) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"], "settings": {"limits": {"run": {"tokens": 5000}}}},
        {
            "a": sc(limits={"time_minutes": 2, "tokens": 10}),
            "b": sc(),
            "bad": {"name": "x", "judge": "j"},
        },
    )
    result = axis("run", "--dry-run", "--json", "--runs", "3", cwd=tmp_path)
    assert result.exit_code == 1, result.stderr  # "bad" failed to load
    data = json.loads(result.stdout)
    assert data["pairs"] == 2
    assert data["configPath"] == str((tmp_path / "axis.config.json").resolve())
    assert [
        (j["number"], j["scenarioKey"], j["runIndex"], j["runCount"]) for j in data["jobs"]
    ] == [
        (1, "a", 1, 3),
        (2, "b", 1, 3),
        (3, "a", 2, 3),
        (4, "b", 2, 3),
        (5, "a", 3, 3),
        (6, "b", 3, 3),
    ]
    first = data["jobs"][0]
    assert (first["agentName"], first["agent"], first["timeLimitS"], first["tokenLimit"]) == (
        "codex",
        "codex",
        120.0,
        10,
    )
    assert [f["key"] for f in data["loadFailures"]] == ["bad"]
    assert len(data["notes"]) == 1 and "settings.limits.run" in data["notes"][0]
    assert "settings.limits.run" in result.stderr, "the start-up note is shown"
    assert not (tmp_path / ".axis").exists()


def test_dry_run_filters_and_profile_flags(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    make_project(
        tmp_path,
        {
            "agents": ["codex", "goose", {"agent": "claude-code", "model": "opus"}],
            "exclude": ["extra/*"],
            "profiles": {"all": {"include": ["**"]}},
        },
        {"a/one": sc(), "a/two": sc(variants=[{"name": "x"}, {"name": "y"}]), "extra/e": sc()},
    )

    def jobs(*args: str) -> list[tuple[str, str]]:
        result = axis("run", "--dry-run", "--json", *args, cwd=tmp_path)
        assert result.exit_code == 0, result.stderr
        return [(j["scenarioKey"], j["agentName"]) for j in json.loads(result.stdout)["jobs"]]

    assert jobs("-s", "a/two", "-a", "codex") == [("a/two@x", "codex"), ("a/two@y", "codex")]
    assert jobs(
        "--scenario", "a/one", "--scenario", "a/two@y", "--agent", "goose,claude-code|*"
    ) == [
        ("a/one", "goose"),
        ("a/two@y", "goose"),
        ("a/one", "claude-code|opus"),
        ("a/two@y", "claude-code|opus"),
    ]
    assert jobs("-s", "extra/*", "--profile", "all", "-a", "codex") == [("extra/e", "codex")]
    result = axis("run", "--dry-run", "-s", "extra/*", cwd=tmp_path)
    assert result.exit_code == 2
    assert "cannot reach what the suite excludes" in result.stderr


def test_dry_run_with_c_file_and_directory(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    project = make_project(tmp_path / "proj", {"agents": ["codex"]}, {"a": sc()})
    (project / "axis.config.yaml").write_text("agents: [goose]\n")
    by_dir = axis("run", "--dry-run", "--json", "-c", "proj", cwd=tmp_path)
    assert by_dir.exit_code == 0
    assert [j["agentName"] for j in json.loads(by_dir.stdout)["jobs"]] == ["codex"]
    assert "also found axis.config.yaml" in by_dir.stderr
    by_file = axis("run", "--dry-run", "--json", "-c", "proj/axis.config.yaml", cwd=tmp_path)
    assert [j["agentName"] for j in json.loads(by_file.stdout)["jobs"]] == ["goose"]
    assert "also found" not in by_file.stderr


# -- schema ------------------------------------------------------------------------------


def test_schema_prints_all_formats(axis: Axis) -> None:
    result = axis("schema")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert sorted(data) == sorted(SCHEMA_NAMES)


@pytest.mark.parametrize(
    ("name", "props"),
    [
        ("config", ["agents", "scenarios", "settings", "mcp_servers", "beforeAll", "profiles"]),
        ("scenario", ["prompt", "judge", "variants", "setup", "runs", "env"]),
        ("report", ["results", "summary", "reportId", "loadFailures"]),
        ("result", ["scenarioKey", "agentName", "run", "spec"]),
    ],
)
def test_schema_each_format(axis: Axis, name: str, props: list[str]) -> None:
    result = axis("schema", name)
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    for prop in props:
        assert prop in schema["properties"], prop


def test_schema_unknown_name_is_a_usage_error(axis: Axis) -> None:
    assert axis("schema", "nope").exit_code == 2


def test_schema_out_writes_files(tmp_path: Path, axis: Axis) -> None:
    result = axis("schema", "--out", str(tmp_path / "schemas"))
    assert result.exit_code == 0
    written = sorted(p.name for p in (tmp_path / "schemas").iterdir())
    assert written == sorted(f"{n}.schema.json" for n in SCHEMA_NAMES)
    config = json.loads((tmp_path / "schemas" / "config.schema.json").read_text())
    assert "agents" in config["properties"]
    assert result.stdout == ""


# -- init --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "yaml", "toml"])
def test_init_then_dry_run(tmp_path: Path, axis: Axis, fmt: str) -> None:
    result = axis("init", "--format", fmt, cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert f"Created axis.config.{fmt}" in result.stdout
    assert (tmp_path / f"axis.config.{fmt}").is_file()
    assert (tmp_path / "scenarios" / "hello-world.json").is_file()
    dry = axis("run", "--dry-run", cwd=tmp_path)
    assert dry.exit_code == 0, dry.stderr
    assert dry.stdout.splitlines()[0] == "Discovered 1 scenario across 1 agent: 1 pair, 1 job"
    assert dry.stderr == ""


def test_init_agents(tmp_path: Path, axis: Axis) -> None:
    assert axis("init", "-a", "codex,goose", cwd=tmp_path).exit_code == 0
    config = json.loads((tmp_path / "axis.config.json").read_text())
    assert config["agents"] == ["codex", "goose"]


def test_init_refuses_to_overwrite(tmp_path: Path, axis: Axis) -> None:
    assert axis("init", cwd=tmp_path).exit_code == 0
    (tmp_path / "axis.config.json").write_text('{"agents": ["goose"]}')
    again = axis("init", cwd=tmp_path)
    assert again.exit_code == 2
    assert "already exists" in again.stderr and "--force" in again.stderr
    assert json.loads((tmp_path / "axis.config.json").read_text()) == {"agents": ["goose"]}
    forced = axis("init", "--force", cwd=tmp_path)
    assert forced.exit_code == 0
    assert json.loads((tmp_path / "axis.config.json").read_text())["agents"] == ["claude-code"]


def test_init_unknown_agent(tmp_path: Path, axis: Axis) -> None:
    result = axis("init", "-a", "mock-agent", cwd=tmp_path)
    assert result.exit_code == 2
    assert "unknown agent 'mock-agent'" in result.stderr


def test_unknown_judging_agent_is_a_config_error(
    tmp_path: Path, make_project: MakeProject, axis: Axis
) -> None:
    make_project(
        tmp_path,
        {"agents": ["codex"], "judging": {"agents": ["codex", "claude-kode"]}},
        {"a": sc()},
    )
    result = axis("run", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 2
    assert "judging.agents[1].agent: unknown agent 'claude-kode'" in result.stderr
    assert "claude-code" in result.stderr  # the known names are listed


def test_reports_without_a_config_says_none_found(tmp_path: Path, axis: Axis) -> None:
    result = axis("reports", cwd=tmp_path)
    assert result.exit_code == 0
    assert "No reports found" in result.stdout
