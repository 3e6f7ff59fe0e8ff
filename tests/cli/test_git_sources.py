"""GitHub skills and ``copy`` from git URLs, end to end through ``axis run``.

``https://github.com/...`` resolves to a ``git daemon`` on 127.0.0.1 (git's insteadOf in
the environment; tests/helpers/git_server.py). A probe agent (tests/agents/git_probe.py)
records the workspace and the installed skills it finds.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.git_server import GitServer, need_git, refusing_url, serving

PROBE = Path(__file__).resolve().parents[1] / "agents" / "git_probe.py"
Axis = Callable[..., Any]


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    need_git()


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitServer]:
    monkeypatch.setenv("E2E_DIR", str(tmp_path))
    with serving(tmp_path / "served", monkeypatch) as server:
        yield server


def project(root: Path, agent: Any, scenario: dict[str, Any] | None = None, **extra: Any) -> Path:
    (root / "scenarios").mkdir(parents=True)
    body = {"name": "probe", "prompt": "look around", "judge": "it looked", **(scenario or {})}
    (root / "scenarios" / "probe.json").write_text(json.dumps(body))
    config = {"scenarios": "./scenarios", "agents": [agent], "env": ["E2E_DIR"], **extra}
    (root / "axis.config.json").write_text(json.dumps(config))
    return root


def run(axis_process: Axis, root: Path, *flags: str) -> dict[str, Any]:
    """``axis run`` to the end; what the probe saw."""
    done = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none", *flags)
    assert done.exit_code == 0, done.stderr
    seen: dict[str, Any] = json.loads((root.parent / "probe-probe.json").read_text())
    return seen


CLAUDE_PROBE = {"agent": "claude-code", "command": [sys.executable, str(PROBE), "claude"]}


def test_github_skills_installed_for_claude_code_cached_and_refreshed(
    served: GitServer,
    axis_process: Axis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-placeholder")
    lint = served.repo("acme", "lint-skill")
    lint.commit(
        {"SKILL.md": "# lint v1", "rules.md": "be tidy", ".github/workflows/ci.yml": "on: push"}
    )
    tools = served.repo("acme", "tools")
    tools.commit({"README.md": "a repo of one skill", "fmt/SKILL.md": "# fmt", "fmt/x.txt": "x"})
    skills = ["acme/lint-skill", "https://github.com/acme/tools.git"]
    root = project(tmp_path / "proj", CLAUDE_PROBE, skills=skills)

    seen = run(axis_process, root)
    assert seen["skills"] == {
        "acme-lint-skill/SKILL.md": "# lint v1",
        "acme-lint-skill/rules.md": "be tidy",
        "acme-tools/SKILL.md": "# fmt",
        "acme-tools/x.txt": "x",
    }
    cache = root / ".axis" / "skills-cache"
    assert (cache / "acme" / "lint-skill" / "SKILL.md").is_file()
    assert (cache / "acme" / "tools" / "fmt" / "SKILL.md").is_file()

    # Upstream changes: the cache is reused, until --refresh-skills clones afresh.
    lint.commit({"SKILL.md": "# lint v2"})
    assert run(axis_process, root)["skills"]["acme-lint-skill/SKILL.md"] == "# lint v1"
    assert run(axis_process, root, "--offline")["skills"]["acme-lint-skill/SKILL.md"] == (
        "# lint v1"
    )
    refreshed = run(axis_process, root, "--refresh-skills")
    assert refreshed["skills"]["acme-lint-skill/SKILL.md"] == "# lint v2"


def test_a_github_skill_that_cannot_be_fetched_stops_before_any_job(
    served: GitServer, axis_process: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-placeholder")
    root = project(tmp_path / "proj", CLAUDE_PROBE, skills=["acme/missing"])
    done = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none")
    assert done.exit_code == 2, done.stderr
    assert "skill 'acme/missing'" in done.stderr
    assert "https://github.com/acme/missing" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root.parent / "probe-probe.json").exists()
    offline = axis_process("run", "-c", str(root), "--offline", "--no-score")
    assert offline.exit_code == 2
    assert "not in the cache" in offline.stderr


NDJSON_PROBE = {"command": [sys.executable, str(PROBE), "ndjson"], "output": "ndjson"}


def test_copy_from_git_urls_into_the_workspace_cached_and_refreshed(
    served: GitServer, axis_process: Axis, tmp_path: Path
) -> None:
    fixtures = served.repo("acme", "fixtures")
    fixtures.commit(
        {"app/main.py": "print(1)", "app/lib/util.py": "u", "docs/a.md": "A1", "docs/b.txt": "B"}
    )
    fixtures.tag("v1")
    fixtures.commit({"app/main.py": "print(2)"})
    setup = [
        {"action": "copy", "match": f"{fixtures.github_url}.git#v1:app", "destination": "src"},
        {"action": "copy", "match": f"{fixtures.github_url}#:docs/*.md"},
    ]
    root = project(tmp_path / "proj", "probe", {"setup": setup}, adapters={"probe": NDJSON_PROBE})
    seen = run(axis_process, root)
    assert seen["workspace"] == {"src/main.py": "print(1)", "src/lib/util.py": "u", "a.md": "A1"}
    repos = root / ".axis" / "repos" / "github.com" / "acme" / "fixtures"
    assert sorted(p.name for p in repos.iterdir()) == ["HEAD", "v1"]

    # Cached: upstream changes are not seen until --refresh-repos.
    fixtures.commit({"docs/a.md": "A2"})
    assert run(axis_process, root)["workspace"]["a.md"] == "A1"
    assert run(axis_process, root, "--offline")["workspace"]["a.md"] == "A1"
    assert run(axis_process, root, "--refresh-repos")["workspace"]["a.md"] == "A2"


def test_a_copy_repository_that_cannot_be_fetched_stops_before_any_job(
    axis_process: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2E_DIR", str(tmp_path))
    url = refusing_url("acme/fixtures")
    setup = [{"action": "copy", "match": f"{url}#v1:app"}]
    root = project(tmp_path / "proj", "probe", {"setup": setup}, adapters={"probe": NDJSON_PROBE})
    done = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none")
    assert done.exit_code == 2, done.stderr
    assert f"copy: git fetch {url}: the host cannot be reached" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "probe-probe.json").exists()


def test_a_copy_match_that_is_not_a_usable_git_url_is_a_config_error(
    axis: Axis, tmp_path: Path
) -> None:
    setup = [{"action": "copy", "match": "https://github.com/only-owner#v1:app"}]
    root = project(tmp_path / "proj", "probe", {"setup": setup}, adapters={"probe": NDJSON_PROBE})
    result = axis("run", "--dry-run", "-c", str(root), cwd=root)
    assert result.exit_code == 2, result.stderr  # the one scenario failed to load
    assert (
        "setup[0].match: expected a git URL of <scheme>://<host>/<owner>/<repo>, found "
        '"https://github.com/only-owner#v1:app"'
    ) in result.stderr


def test_offline_cannot_be_combined_with_a_refresh(axis: Axis, tmp_path: Path) -> None:
    result = axis("run", "--offline", "--refresh-skills", "--dry-run", cwd=tmp_path)
    assert result.exit_code == 2
    assert "--offline and --refresh-skills cannot be combined" in result.stderr
