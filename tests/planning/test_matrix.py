"""The job matrix: agent resolution, selection order, run counts, run-major jobs, status line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from axis_eval.adapters.builtins import BUILTINS
from axis_eval.config.load import load_config
from axis_eval.errors import EXIT_USAGE, ConfigError, UsageError
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import Plan

MakeProject = Callable[..., Path]

AXIS_BUILTINS = [
    "claude-code",
    "codex",
    "claude-sdk",
    "codex-sdk",
    "gemini",
    "qwen-code",
    "goose",
    "opencode",
    "stakpak",
    "blackbox",
    "fast-agent",
    "mistral-vibe",
    "factory-droid",
    "poolside",
    "vtcode",
    "cursor-agent",
    "auggie",
    "kimi",
    "openhands",
    "cline",
    "kiro-cli",
    "kilo",
    "qoder",
    "copilot",
]
"""The 24 names of inventory §6.4."""


def sc(name: str = "S", **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


@pytest.fixture
def project(tmp_path: Path, make_project: MakeProject) -> Callable[..., Path]:
    def make(config: dict[str, Any], scenarios: dict[str, Any] | None = None) -> Path:
        return make_project(tmp_path, config, scenarios or {"only": sc()})

    return make


def plan_of(root: Path, profile: str | None = None, **selection: Any) -> Plan:
    return plan(load_config(str(root), profile=profile), Selection(**selection))


def ids(p: Plan) -> list[str]:
    return [j.id for j in p.jobs]


def pairs(p: Plan) -> list[tuple[str, str]]:
    return [(x.scenario_key, x.agent_name) for x in p.pairs]


# -- agents ----------------------------------------------------------------------------


def test_every_axis_builtin_name_is_known(project: Callable[..., Path]) -> None:
    assert set(AXIS_BUILTINS) <= set(BUILTINS)
    root = project({"agents": AXIS_BUILTINS})
    p = plan_of(root)
    assert [a.name for a in p.agents] == AXIS_BUILTINS
    assert len(p.jobs) == 24


def test_unknown_agent_lists_the_known_names(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex", "mock-agent"]})
    with pytest.raises(ConfigError) as info:
        plan_of(root)
    error = info.value
    assert error.exit_code == EXIT_USAGE
    assert "agents[1].agent: unknown agent 'mock-agent'" in error.message
    assert str(root / "axis.config.json") in error.message
    assert error.hint is not None
    for name in AXIS_BUILTINS:
        assert name in error.hint


def test_custom_adapter_name_is_known(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["mine"], "adapters": {"mine": {"command": "my-cli", "output": "text"}}}
    )
    assert ids(plan_of(root)) == ["only mine #1"]


def test_a_missing_typescript_adapter_file_is_rejected(project: Callable[..., Path]) -> None:
    # A .ts adapter module loads (hosted in Node, tests/adapters/node); a missing one is not.
    root = project({"agents": ["echo"], "adapters": {"echo": "./echo-adapter.ts"}})
    with pytest.raises(ConfigError) as info:
        plan_of(root)
    assert f"adapters.echo: adapter file not found: {root / 'echo-adapter.ts'}" in (
        info.value.message
    )


def test_missing_python_adapter_file(project: Callable[..., Path]) -> None:
    root = project({"agents": ["mine"], "adapters": {"mine": "./adapters/mine.py"}})
    with pytest.raises(ConfigError, match=r"adapters\.mine: adapter file not found"):
        plan_of(root)


# -- selection -------------------------------------------------------------------------

SUITE = {
    "a/one": sc("a1"),
    "a/two": sc("a2"),
    "b/one": sc("b1"),
    "b/two": sc("b2", variants=[{"name": "x"}, {"name": "y"}]),
    "top": sc("top"),
}


def test_all_scenarios_for_all_agents_by_default(project: Callable[..., Path]) -> None:
    p = plan_of(project({"agents": ["codex", "goose"]}, SUITE))
    keys = ["a/one", "a/two", "b/one", "b/two@x", "b/two@y", "top"]
    assert pairs(p) == [(k, "codex") for k in keys] + [(k, "goose") for k in keys]


def test_suite_include_then_exclude(project: Callable[..., Path]) -> None:
    p = plan_of(
        project({"agents": ["codex"], "include": ["a/*", "b/**"], "exclude": ["b/two"]}, SUITE)
    )
    assert [k for k, _ in pairs(p)] == ["a/one", "a/two", "b/one"]


@pytest.mark.parametrize(
    ("suite", "expected"),
    [
        ({"include": ["*"]}, 6),
        ({"include": "*"}, 6),
        ({"exclude": []}, 6),
        ({"include": ["top"], "exclude": ["*"]}, 0),
        ({"include": ["b/two@x"]}, 1),
    ],
)
def test_suite_forms(project: Callable[..., Path], suite: dict[str, Any], expected: int) -> None:
    root = project({"agents": ["codex"], **suite}, SUITE)
    if expected == 0:
        with pytest.raises(UsageError):
            plan_of(root)
    else:
        assert len(plan_of(root).jobs) == expected


def test_empty_include_runs_nothing(project: Callable[..., Path]) -> None:
    with pytest.raises(UsageError, match="no jobs to run"):
        plan_of(project({"agents": ["codex"], "include": []}, SUITE))


def test_s_narrows_and_cannot_reach_an_excluded_scenario(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"], "exclude": ["top"]}, SUITE)
    assert [k for k, _ in pairs(plan_of(root, scenarios=["top,a/one"]))] == ["a/one"]
    with pytest.raises(UsageError) as info:
        plan_of(root, scenarios=["top"])
    assert info.value.hint is not None
    assert "-s 'top' matches only scenarios the suite's include/exclude" in info.value.hint
    assert "(-s cannot reach what the suite excludes)" in info.value.hint


def test_s_exact_base_glob_and_comma_lists(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"]}, SUITE)

    def keys(*s: str) -> list[str]:
        return [k for k, _ in pairs(plan_of(root, scenarios=list(s)))]

    assert keys("a/one") == ["a/one"]
    assert keys("b/two") == ["b/two@x", "b/two@y"], "a base key selects every variant"
    assert keys("b/two@y") == ["b/two@y"]
    assert keys("a/*") == ["a/one", "a/two"]
    assert keys("**/one") == ["a/one", "b/one"]
    assert keys("a/one,top", "b/two@x") == ["a/one", "b/two@x", "top"]


def test_s_that_matches_nothing_warns(project: Callable[..., Path]) -> None:
    p = plan_of(project({"agents": ["codex"]}, SUITE), scenarios=["a/one", "nope"])
    assert any(w.startswith("-s 'nope' matches no scenario (scenarios: a/one") for w in p.warnings)


def test_agent_scenarios_filter_narrows_after_the_suite(project: Callable[..., Path]) -> None:
    root = project(
        {
            "agents": [
                {"agent": "codex", "scenarios": ["a/*", "top"]},
                {"agent": "goose", "scenarios": ["*"]},
                {"agent": "gemini", "scenarios": ["b/two@y"]},
            ],
            "exclude": ["top"],
        },
        SUITE,
    )
    p = plan_of(root)
    by_agent: dict[str, list[str]] = {}
    for key, agent in pairs(p):
        by_agent.setdefault(agent, []).append(key)
    assert by_agent["codex"] == ["a/one", "a/two"], "the agent filter cannot reach `top`"
    assert by_agent["goose"] == ["a/one", "a/two", "b/one", "b/two@x", "b/two@y"]
    assert by_agent["gemini"] == ["b/two@y"]
    narrowed = plan_of(root, scenarios=["a/two", "b/two@y"])
    assert pairs(narrowed) == [
        ("a/two", "codex"),
        ("a/two", "goose"),
        ("b/two@y", "goose"),
        ("b/two@y", "gemini"),
    ]


def test_a_exact_adapter_glob_and_comma_lists(project: Callable[..., Path]) -> None:
    root = project(
        {
            "agents": [
                {"agent": "claude-code", "model": "opus"},
                {"agent": "claude-code", "model": "sonnet"},
                "codex",
                {"agent": "gemini", "name": "gem"},
            ]
        }
    )

    def agents(*a: str) -> list[str]:
        return [name for _, name in pairs(plan_of(root, agents=list(a)))]

    assert agents("claude-code|opus") == ["claude-code|opus"]
    assert agents("claude-code") == ["claude-code|opus", "claude-code|sonnet"]
    assert agents("claude-code|s*") == ["claude-code|sonnet"]
    assert agents("CODEX,gem") == ["codex", "gem"]
    assert agents("gemini") == ["gem"], "an explicit name still matches by adapter"


def test_a_that_matches_nothing_is_an_error(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex", "goose"]})
    with pytest.raises(UsageError) as info:
        plan_of(root, agents=["codex", "gemini"])
    assert info.value.exit_code == EXIT_USAGE
    assert "-a 'gemini' matches no configured agent" in info.value.message
    assert info.value.hint == "configured agents: codex, goose"


def test_scenario_agents_restrict_by_display_or_adapter_name(
    project: Callable[..., Path],
) -> None:
    root = project(
        {"agents": [{"agent": "claude-code", "model": "opus"}, "codex", "goose"]},
        {
            "by-adapter": sc(agents=["claude-code"]),
            "by-name": sc(agents=["Codex"]),
            "by-display": sc(agents=["claude-code|opus", "goose"]),
            "free": sc(),
        },
    )
    assert pairs(plan_of(root)) == [
        ("by-adapter", "claude-code|opus"),
        ("by-display", "claude-code|opus"),
        ("free", "claude-code|opus"),
        ("by-name", "codex"),
        ("free", "codex"),
        ("by-display", "goose"),
        ("free", "goose"),
    ]


def test_scenario_agents_are_not_globs(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"]}, {"g": sc(agents=["cod*"]), "free": sc()})
    assert pairs(plan_of(root)) == [("free", "codex")]


def test_skipped_scenarios_are_counted_not_run(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["codex", "goose"]},
        {
            "off": sc(skip=True),
            "on": sc(),
            "v": sc(variants=[{"name": "a", "skip": True}, {"name": "b"}]),
        },
    )
    p = plan_of(root)
    assert [k for k, _ in pairs(p)] == ["on", "v@b", "on", "v@b"]
    assert p.skipped == ["off", "v@a"]


def test_only_skipped_scenarios_is_an_empty_selection(project: Callable[..., Path]) -> None:
    with pytest.raises(UsageError) as info:
        plan_of(project({"agents": ["codex"]}, {"off": sc(skip=True)}))
    assert info.value.hint is not None and "1 marked skip" in info.value.hint


def test_profile_changes_the_suite(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["codex"], "include": ["a/*"], "profiles": {"all": {"include": ["**"]}}},
        SUITE,
    )
    assert len(plan_of(root).jobs) == 2
    p = plan_of(root, profile="all")
    assert len(p.jobs) == 6 and p.profile == "all"


def test_scenario_excluded_everywhere_is_warned_about(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["codex"], "exclude": ["b/*", "top"], "profiles": {"b": {"include": ["b/*"]}}},
        SUITE,
    )
    assert plan_of(root).warnings == [
        "scenario 'top' is excluded by the default suite and no profile includes it: it never runs"
    ]


def test_zero_scenarios_is_an_error(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"]}, {"readme.json": {"title": "not a scenario"}})
    with pytest.raises(UsageError) as info:
        plan_of(root)
    assert info.value.exit_code == EXIT_USAGE
    assert info.value.hint == "no scenarios were found in the configured sources"


def test_load_failures_are_listed_and_the_rest_plans(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"]}, {"good": sc(), "bad": {"name": "b", "prompt": "p"}})
    p = plan_of(root)
    assert ids(p) == ["good codex #1"]
    [failure] = p.load_failures
    assert failure.path == "scenarios/bad.json"


# -- run counts and ordering -----------------------------------------------------------


def test_run_count_precedence(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["codex"], "settings": {"runs": 3}},
        {
            "own": sc(runs=5),
            "default": sc(),
            "variant": sc(runs=5, variants=[{"name": "v", "runs": 1}]),
        },
    )
    counts = {x.scenario_key: x.run_count for x in plan_of(root).pairs}
    assert counts == {"default": 3, "own": 5, "variant@v": 1}
    forced = {x.scenario_key: x.run_count for x in plan_of(root, runs=7).pairs}
    assert forced == {"default": 7, "own": 7, "variant@v": 7}


def test_run_count_defaults_to_one(project: Callable[..., Path]) -> None:
    p = plan_of(project({"agents": ["codex"]}))
    assert [(j.run_index, j.run_count) for j in p.jobs] == [(1, 1)]
    assert p.max_runs == 1


@pytest.mark.parametrize(("runs", "nearest"), [(4, "3 or 5"), (2, "1 or 3"), (0, "1"), (20, "19")])
def test_cli_runs_must_be_legal(project: Callable[..., Path], runs: int, nearest: str) -> None:
    root = project({"agents": ["codex"]})
    with pytest.raises(UsageError) as info:
        plan_of(root, runs=runs)
    assert info.value.exit_code == EXIT_USAGE
    assert f"--runs {runs}: expected an odd run count from 1 to 19 (nearest legal: {nearest})" in (
        info.value.message
    )


def test_jobs_are_run_major_with_mixed_run_counts(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["codex", "goose"]},
        {"once": sc(), "thrice": sc(runs=3), "five": sc(runs=5)},
    )
    p = plan_of(root)
    assert ids(p) == [
        "five codex #1",
        "once codex #1",
        "thrice codex #1",
        "five goose #1",
        "once goose #1",
        "thrice goose #1",
        "five codex #2",
        "thrice codex #2",
        "five goose #2",
        "thrice goose #2",
        "five codex #3",
        "thrice codex #3",
        "five goose #3",
        "thrice goose #3",
        "five codex #4",
        "five goose #4",
        "five codex #5",
        "five goose #5",
    ]
    assert [j.number for j in p.jobs] == list(range(1, 19))
    assert len(p.pairs) == 6
    assert p.max_runs == 5
    assert {(j.scenario.key, j.run_count) for j in p.jobs} == {
        ("once", 1),
        ("thrice", 3),
        ("five", 5),
    }


def test_status_line_counts_scenarios_agents_pairs_jobs(project: Callable[..., Path]) -> None:
    root = project(
        {"agents": ["codex", "goose"]},
        {"a": sc(), "b": sc(agents=["codex"]), "c": sc(variants=[{"name": "x"}, {"name": "y"}])},
    )
    p = plan_of(root)
    assert p.status_line == "Discovered 4 scenarios across 2 agents: 7 pairs, 7 jobs"
    p3 = plan_of(root, runs=3)
    assert p3.status_line == (
        "Discovered 4 scenarios across 2 agents: 7 pairs, 21 jobs (up to 3 runs each)"
    )


def test_status_line_singular(project: Callable[..., Path]) -> None:
    assert plan_of(project({"agents": ["codex"]})).status_line == (
        "Discovered 1 scenario across 1 agent: 1 pair, 1 job"
    )


def test_status_line_counts_only_selected_agents(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex", "goose"]}, {"a": sc(agents=["goose"])})
    assert plan_of(root).status_line == "Discovered 1 scenario across 1 agent: 1 pair, 1 job"


def test_note_when_run_limit_is_shared_by_repeats(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"], "settings": {"limits": {"run": {"tokens": 1000}}}})
    assert plan_of(root).notes == []
    [note] = plan_of(root, runs=3).notes
    assert "settings.limits.run" in note and "3×" in note


def test_no_note_without_a_run_limit(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex"], "settings": {"runs": 3}})
    assert plan_of(root).notes == []


# -- job specs -------------------------------------------------------------------------


def test_job_limits_resolution(project: Callable[..., Path]) -> None:
    root = project(
        {
            "agents": ["codex"],
            "settings": {"limits": {"scenario": {"time_minutes": 2, "tokens": 900}}},
        },
        {
            "inherits": sc(),
            "own": sc(limits={"tokens": 50}),
            "time": sc(limits={"time_minutes": 0.5}),
        },
    )
    jobs = {j.scenario.key: j for j in plan_of(root).jobs}
    assert (jobs["inherits"].time_limit_s, jobs["inherits"].token_limit) == (120.0, 900)
    assert (jobs["own"].time_limit_s, jobs["own"].token_limit) == (900.0, 50), (
        "scenario limits replace settings.limits.scenario wholesale; time defaults to 15 min"
    )
    assert (jobs["time"].time_limit_s, jobs["time"].token_limit) == (30.0, None)


def test_default_time_limit_is_fifteen_minutes(project: Callable[..., Path]) -> None:
    [job] = plan_of(project({"agents": ["codex"]})).jobs
    assert job.time_limit_s == 900.0 and job.token_limit is None


def test_job_merges_env_mcp_skills_artifacts(project: Callable[..., Path]) -> None:
    root = project(
        {
            "agents": [{"agent": "codex", "skills": ["./s/agent", "./s/shared"]}],
            "env": ["TOKEN", "SHARED"],
            "mcp_servers": {
                "docs": {"type": "http", "url": "https://config"},
                "fs": {"type": "stdio", "command": "fs"},
            },
            "skills": ["./s/top", "./s/shared"],
            "artifacts": ["*.log"],
        },
        {
            "names": sc(
                env=["SHARED", "EXTRA"],
                mcp_servers={"docs": {"type": "http", "url": "https://scenario"}},
                skills=["./s/scenario"],
                artifacts=["*.log", "out/*"],
            ),
            "values": sc(env={"MODE": "ci"}),
        },
    )
    jobs = {j.scenario.key: j for j in plan_of(root).jobs}
    names = jobs["names"]
    assert names.env_pass == ["TOKEN", "SHARED", "EXTRA"] and names.env_set == {}
    assert list(names.mcp_servers) == ["docs", "fs"]
    assert getattr(names.mcp_servers["docs"], "url", None) == "https://scenario"
    assert names.skills == ["./s/top", "./s/shared", "./s/agent", "./s/scenario"]
    assert names.artifacts == ["*.log", "out/*"]
    values = jobs["values"]
    assert values.env_pass == ["TOKEN", "SHARED"] and values.env_set == {"MODE": "ci"}
    assert values.config_dir == str(root.resolve())


def test_only_pairs_restricts_to_an_allow_list(project: Callable[..., Path]) -> None:
    root = project({"agents": ["codex", "goose"]}, {"a": sc(), "b": sc()})
    p = plan_of(root, only_pairs=frozenset({("b", "goose"), ("gone", "codex")}))
    assert ids(p) == ["b goose #1"]


def test_plan_is_serializable(project: Callable[..., Path]) -> None:
    p = plan_of(project({"agents": ["codex"]}, SUITE), runs=3)
    again = Plan.model_validate_json(p.model_dump_json())
    assert again == p
