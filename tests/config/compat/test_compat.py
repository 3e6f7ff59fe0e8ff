"""Every AXIS config under ../shared/compat/axis has a pinned outcome for `axis run --dry-run`.

Accepted configs list their jobs (exit 0); rejected ones exit 2 with a message naming the
cause. A config added to the compat folder without an expectation fails the suite.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from axis_eval.adapters.builtins import BUILTINS
from axis_eval.config.load import REMOTE_PATTERN

COMPAT = Path(__file__).resolve().parents[3].parent / "shared" / "compat" / "axis"

pytestmark = pytest.mark.skipif(not COMPAT.is_dir(), reason=f"no compat corpus at {COMPAT}")

Axis = Callable[..., Any]


@dataclass(frozen=True)
class Accepted:
    jobs: int


@dataclass(frozen=True)
class Rejected:
    cause: str
    """A substring of the error that names the cause."""


TS_ADAPTER = "adapter file not found"
"""Their `.ts` adapter modules are not in the corpus (JS/TS adapters themselves load)."""
NO_SCENARIOS = "scenarios source not found"
MOCK_AGENT = "unknown agent 'mock-agent'"

EXPECTED: dict[str, Accepted | Rejected] = {
    "scenario-fixtures/apply-limits": Accepted(jobs=1),
    "scenario-fixtures/author-scenario": Rejected(NO_SCENARIOS),
    "scenario-fixtures/configure-mcp": Rejected(NO_SCENARIOS),
    "scenario-fixtures/custom-adapter": Rejected(NO_SCENARIOS),
    "scenario-fixtures/debug-failing-config": Rejected(TS_ADAPTER),
    "test/e2e/adapters/claude-sdk": Accepted(jobs=1),
    "test/e2e/adapters/codex": Accepted(jobs=1),
    "test/e2e/adapters/custom": Rejected(TS_ADAPTER),
    "test/e2e/adapters/gemini": Accepted(jobs=1),
    "test/e2e/adapters/goose": Accepted(jobs=1),
    "test/e2e/adapters/mcp-claude": Accepted(jobs=1),
    "test/e2e/adapters/mcp-codex": Accepted(jobs=1),
    "test/e2e/adapters/skills-claude": Accepted(jobs=1),
    "test/e2e/adapters/skills-codex": Accepted(jobs=1),
    "test/e2e/adapters/skills-gemini": Accepted(jobs=1),
    "test/e2e/fixtures/basic": Rejected(MOCK_AGENT),
    "test/e2e/fixtures/limits": Rejected(MOCK_AGENT),
    "test/e2e/kiro-cli": Accepted(jobs=2),
    # Its remote (github.com/netlify/agent-runner-orchestrator) resolves to a local mirror
    # with two scenarios (_mirror_github): (1 local, 1 skipped, + 2 remote) x 3 agents.
    "test/e2e/kitchen-sink": Accepted(jobs=9),
    "test/e2e/multi-step": Accepted(jobs=1),
    "test/e2e/realistic-tasks": Accepted(jobs=4),
    "test/e2e/scenario-agents": Accepted(jobs=3),
}


def discovered() -> dict[str, Path]:
    if not COMPAT.is_dir():
        return {}
    return {
        path.parent.relative_to(COMPAT).as_posix(): path
        for path in sorted(COMPAT.rglob("axis.config.*"))
    }


def test_every_compat_config_has_a_pinned_expectation() -> None:
    found = discovered()
    assert found, "the compat corpus has no configs"
    missing = sorted(set(found) - set(EXPECTED))
    assert missing == [], f"compat configs without an expectation: {missing}"
    stale = sorted(set(EXPECTED) - set(found))
    assert stale == [], f"expectations for configs that no longer exist: {stale}"


def _plainly_runnable(config_file: Path) -> bool:
    """Scenarios exist locally, every agent is an AXIS built-in, no custom adapters."""
    raw = json.loads(config_file.read_text())
    sources = raw.get("scenarios", "./scenarios")
    sources = [sources] if isinstance(sources, str) else sources
    for source in sources:
        if not isinstance(source, str):
            continue
        if REMOTE_PATTERN.match(source) or not (config_file.parent / source).exists():
            return False
    names = [a if isinstance(a, str) else a.get("agent") for a in raw.get("agents", [])]
    return not raw.get("adapters") and all(n in BUILTINS for n in names)


def test_plainly_runnable_configs_are_accepted() -> None:
    for rel, path in discovered().items():
        if path.suffix == ".json" and _plainly_runnable(path):
            assert isinstance(EXPECTED.get(rel), Accepted), rel


def _mirror_github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """https://github.com/netlify/agent-runner-orchestrator as a local bare repository
    (git's insteadOf through the environment) holding a config and two scenarios."""
    from helpers.git_server import Repo, github_env, need_git

    need_git()
    served = tmp_path / "mirror"
    repo = Repo.local(served, "netlify", "agent-runner-orchestrator")
    scenario = {"prompt": "Say hello", "judge": "It said hello"}
    repo.commit(
        {
            "axis.config.json": {"scenarios": ["./scenarios"], "agents": ["codex"]},
            "scenarios/orchestrate.json": {"name": "Orchestrate", **scenario},
            "scenarios/dispatch.json": {"name": "Dispatch", **scenario},
        }
    )
    for name, value in github_env(f"file://{served}/").items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_compat_dry_run(
    rel: str, axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = discovered().get(rel)
    if config is None:
        pytest.fail(f"{rel}: config missing from the compat corpus")
    if rel == "test/e2e/kitchen-sink":
        _mirror_github(tmp_path, monkeypatch)
    expected = EXPECTED[rel]
    result = axis("run", "--dry-run", "--json", "-c", str(config), cwd=tmp_path)
    assert "Traceback" not in result.stderr
    if isinstance(expected, Accepted):
        assert result.exit_code == 0, result.stderr
        data = json.loads(result.stdout)
        assert len(data["jobs"]) == expected.jobs
        assert [j["number"] for j in data["jobs"]] == list(range(1, expected.jobs + 1))
        assert data["loadFailures"] == []
        # The dry run predicts the real run's pre-flight (a key this machine lacks): those
        # lines are about the environment, not the config, which loads without warnings.
        config_lines = [
            line
            for line in result.stderr.splitlines()
            if "will stop before any job starts" not in line
            and not line.startswith("Cloning remote scenarios: ")
        ]
        assert config_lines == [], "an AXIS config loads without warnings"
    else:
        assert result.exit_code == 2, result.stdout
        assert result.stdout == ""
        assert result.stderr.startswith("error: ")
        assert expected.cause in result.stderr
    assert not (config.parent / ".axis").exists(), "a dry run writes nothing"


def test_scenario_agents_restrict_pairs(axis: Axis, tmp_path: Path) -> None:
    config = COMPAT / "test/e2e/scenario-agents/axis.config.json"
    result = axis("run", "--dry-run", "--json", "-c", str(config), cwd=tmp_path)
    jobs = json.loads(result.stdout)["jobs"]
    assert sorted((j["scenarioKey"], j["agentName"]) for j in jobs) == [
        ("all-agents", "claude-code"),
        ("all-agents", "gemini"),
        ("gemini-only", "gemini"),
    ]


def test_limits_fixture_would_load_with_a_builtin_agent(axis: Axis, tmp_path: Path) -> None:
    """fixtures/limits is rejected only for its agent: with a built-in it plans its limits."""
    source = COMPAT / "test/e2e/fixtures/limits"
    raw = json.loads((source / "axis.config.json").read_text())
    raw["agents"] = ["claude-code"]
    raw["scenarios"] = [str(source / "scenarios")]
    (tmp_path / "axis.config.json").write_text(json.dumps(raw))
    result = axis("run", "--dry-run", "--json", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [(j["scenarioKey"], j["timeLimitS"], j["tokenLimit"]) for j in data["jobs"]] == [
        ("hello-world", 300.0, 100000)
    ]
    assert data["notes"] == [], "one run per pair: the shared run limit needs no note"
