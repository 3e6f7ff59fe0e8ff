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
    assert sorted(p.name for p in repos.iterdir() if not p.name.startswith(".")) == ["HEAD", "v1"]

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


# Hostile repositories: a skill or copied repository written by someone else.


def _planted(tmp_path: Path) -> Path:
    """A private key where a hostile repository's symlinks point."""
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN PRIVATE KEY----- planted")
    return secret


def test_a_skill_repository_symlinking_a_secret_never_installs_it(
    served: GitServer, axis_process: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-placeholder")
    secret = _planted(tmp_path)
    evil = served.repo("acme", "evil-skill")
    evil.link("id_rsa", str(secret))
    evil.link("ssh", str(secret.parent))
    evil.link("passwd", "../../../../../../../../../../etc/passwd")
    evil.commit({"SKILL.md": "# evil"})
    root = project(tmp_path / "proj", CLAUDE_PROBE, skills=["acme/evil-skill"])
    done = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none")
    assert done.exit_code == 0, done.stderr
    lines = done.stderr.splitlines()
    url = "https://github.com/acme/evil-skill"
    assert f"Cloning skill: {url}" in lines
    assert (
        f"warning: {url}: symlink(s) leading out of the repository were deleted, not "
        "followed: id_rsa, passwd, ssh"
    ) in lines
    seen = json.loads((root.parent / "probe-probe.json").read_text())
    assert seen["skills"] == {"acme-evil-skill/SKILL.md": "# evil"}
    assert "planted" not in json.dumps(seen)
    again = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none")
    assert f"Cloning skill: {url}" not in again.stderr.splitlines()  # the cache is reused


@pytest.mark.parametrize("skill", ["acme/..", "../..x/y", "x/.", "https://github.com/x/.."])
def test_skill_names_that_could_leave_the_cache_are_refused(
    skill: str, axis: Axis, tmp_path: Path
) -> None:
    root = project(tmp_path / "proj", "probe", adapters={"probe": NDJSON_PROBE}, skills=[skill])
    (root / ".axis" / "skills-cache" / "x").mkdir(parents=True)
    done = axis("run", "-c", str(root), "--no-score", "--sandbox", "none", "--refresh-skills")
    assert done.exit_code == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert (root / ".axis" / "skills-cache" / "x").is_dir()  # --refresh-skills removed nothing


def test_a_copied_repository_symlinking_a_secret_never_copies_it(
    served: GitServer, axis_process: Axis, tmp_path: Path
) -> None:
    secret = _planted(tmp_path)
    evil = served.repo("acme", "evil-fixtures")
    evil.link("app/id_rsa", str(secret))
    evil.link("app/ssh", str(secret.parent))
    evil.link("top", str(secret))
    evil.commit({"app/main.py": "print(1)"})
    setup = [
        {"action": "copy", "match": f"{evil.github_url}#:app", "destination": "app"},
        {"action": "copy", "match": evil.github_url, "destination": "all"},
    ]
    root = project(tmp_path / "proj", "probe", {"setup": setup}, adapters={"probe": NDJSON_PROBE})
    done = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none")
    assert done.exit_code == 0, done.stderr
    assert f"Cloning repository: {evil.github_url}" in done.stderr.splitlines()
    assert "app/id_rsa, app/ssh, top" in done.stderr
    seen = json.loads((root.parent / "probe-probe.json").read_text())
    assert seen["workspace"] == {"app/main.py": "print(1)", "all/app/main.py": "print(1)"}

    # A path naming the (deleted) link is a copy error in words, never the secret.
    top = [{"action": "copy", "match": f"{evil.github_url}#:top"}]
    root = project(tmp_path / "two", "probe", {"setup": top}, adapters={"probe": NDJSON_PROBE})
    done = axis_process("run", "-c", str(root), "--no-score", "--sandbox", "none", "--json")
    assert "Traceback" not in done.stderr
    assert "copy source does not exist" in done.stdout + done.stderr
    assert (
        not (tmp_path / "two" / "probe-probe.json").exists()
        or "planted" not in (tmp_path / "two" / "probe-probe.json").read_text()
    )


@pytest.mark.parametrize(
    "match",
    [
        "https://../acme/x",
        "ssh://-oProxyCommand=touch%20pwned/acme/x",
        "ssh://-oProxyCommand=x@host/acme/x",
        "https://github.com/acme/x#--upload-pack=touch pwned",
    ],
)
def test_copy_urls_that_could_inject_or_escape_are_refused(
    match: str, axis: Axis, tmp_path: Path
) -> None:
    setup = [{"action": "copy", "match": match}]
    root = project(tmp_path / "proj", "probe", {"setup": setup}, adapters={"probe": NDJSON_PROBE})
    done = axis("run", "-c", str(root), "--no-score", "--sandbox", "none")
    assert done.exit_code == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "proj" / "pwned").exists() and not Path("pwned").exists()
    assert not (root / ".axis" / "acme").exists()


@pytest.mark.parametrize("destination", ["../out", "/tmp/axis-copy-escape", "link/x"])
def test_a_copy_destination_leaving_the_workspace_is_refused(
    destination: str, served: GitServer, tmp_path: Path
) -> None:
    from axis_eval.config.actions import CopyAction
    from axis_eval.execute.lifecycle import copy_plan, fetch_copy_repos, git_copy_sources

    repo = served.repo("acme", "fixtures")
    repo.commit({"a.txt": "a"})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link").symlink_to(tmp_path)  # planted by an earlier setup script
    (tmp_path / "local.txt").write_text("l")
    for match in (repo.github_url, "local.txt"):
        action = CopyAction(action="copy", match=match, destination=destination)
        fetch_copy_repos(git_copy_sources([action]), tmp_path)
        plan = copy_plan(action, tmp_path, workspace)
        assert plan == (
            f"Lifecycle action failed: copy destination {destination!r} leaves the workspace"
        )
