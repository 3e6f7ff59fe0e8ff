"""Git sources and MCP variables under the Dask executor, on a real cluster.

``axis run``'s pre-flight fetches the plan's GitHub skills and ``copy`` repositories (from a
``git daemon`` on 127.0.0.1 that ``https://github.com/`` resolves to, through git's insteadOf
in axis run's environment); the bundle carries exactly those cache folders to the workers,
whose own git mapping points at a port where nothing listens (a worker that fetched would
fail). A worker's pre-flight checks the ``${VAR}`` its jobs' MCP servers need in its own
environment; the values never travel and come back redacted.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from axis_eval.distributed.bundle import build_bundle
from axis_eval.errors import PreflightError
from axis_eval.redact import MASK
from helpers.git_server import GitServer, Repo, git, github_env, need_git, refusing_url
from helpers.projects import report_dirs
from pipeline.helpers import cli_env, run_cli

from .conftest import DaskCluster, dask_env
from .helpers import report, runs_by_job, worker_address

PROBE = Path(__file__).resolve().parents[1] / "agents" / "git_probe.py"
TOKEN = "tok-worker-only-5d1e9a7c3b"
"""The MCP token only the worker holds: in the agent's MCP file there, in no report file."""


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    need_git()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[GitServer]:
    server = GitServer(tmp_path / "served")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _no_git_on_workers(**extra: str) -> dict[str, str]:
    """A worker's environment in which any fetch from GitHub fails (nothing listens)."""
    env = {k: v for k, v in dask_env(**extra).items() if not k.startswith("GIT_CONFIG_")}
    return {**env, **github_env(refusing_url("").rstrip("/") + "/")}


def _names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.getnames()


def _clone(repo: Repo, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "--quiet", "--depth", "1", repo.url, str(dest))
    return dest


def test_the_bundle_holds_exactly_the_given_git_caches(tmp_path: Path) -> None:
    skill = Repo.local(tmp_path / "bare", "acme", "lint")
    skill.commit({"SKILL.md": "# lint", "notes/a.md": "A"})
    root = tmp_path / "proj"
    (root / "scenarios").mkdir(parents=True)
    (root / "scenarios" / "s.json").write_text("{}")
    axis = root / ".axis"
    used = _clone(skill, axis / "skills-cache" / "acme" / "lint")
    _clone(skill, axis / "skills-cache" / "acme" / "unused")
    (axis / "reports" / "r1").mkdir(parents=True)
    (axis / "reports" / "r1" / "report.json").write_text("{}")
    not_fetched = axis / "repos" / "h" / "o" / "r" / "HEAD"  # no checkout there: nothing

    made = build_bundle(root, [used, not_fetched])
    names = _names(made.data)
    cached = [n for n in names if n.startswith(".axis")]
    prefix = ".axis/skills-cache/acme/lint"
    assert cached == [
        ".axis",
        ".axis/skills-cache",
        ".axis/skills-cache/acme",
        prefix,
        f"{prefix}/.git",
        f"{prefix}/.git/HEAD",
        f"{prefix}/SKILL.md",
        f"{prefix}/notes",
        f"{prefix}/notes/a.md",
    ]
    assert "scenarios/s.json" in names
    assert build_bundle(root).digest != made.digest  # the caches are in its name
    # Content-addressed: the same files elsewhere (another clone, other times) are the
    # same bundle; a changed cache file is another one.
    elsewhere = tmp_path / "elsewhere" / "proj"
    shutil.copytree(root, elsewhere, ignore=shutil.ignore_patterns("unused", "reports"))
    moved = elsewhere / prefix
    assert build_bundle(elsewhere, [moved]).digest == made.digest
    (moved / "notes" / "a.md").write_text("changed")
    assert build_bundle(elsewhere, [moved]).digest != made.digest
    with pytest.raises(PreflightError, match="is not under"):
        build_bundle(root, [root / "scenarios"])


CLAUDE_PROBE = {"agent": "claude-code", "command": [sys.executable, str(PROBE), "claude"]}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_github_skills_and_git_copies_reach_jobs_on_a_worker(
    dask_cluster: DaskCluster, served: GitServer, tmp_path: Path
) -> None:
    lint = served.repo("acme", "lint-skill")
    lint.commit({"SKILL.md": "# lint v1", "rules.md": "be tidy"})
    fixtures = served.repo("acme", "fixtures")
    fixtures.commit({"app/main.py": "print(1)", "app/lib/util.py": "u", "docs/a.md": "A1"})
    fixtures.tag("v1")
    fixtures.commit({"app/main.py": "print(2)"})
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    root = tmp_path / "proj"
    (root / "scenarios").mkdir(parents=True)
    setup = [
        {"action": "copy", "match": f"{fixtures.github_url}.git#v1:app", "destination": "src"},
        {"action": "copy", "match": f"{fixtures.github_url}#:docs/*.md"},
    ]
    scenario = {"name": "probe", "prompt": "look around", "judge": "it looked", "setup": setup}
    (root / "scenarios" / "probe.json").write_text(json.dumps(scenario))
    config = {
        "scenarios": "./scenarios",
        "agents": [CLAUDE_PROBE],
        "env": ["E2E_DIR"],
        "skills": ["acme/lint-skill"],
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    # What the plan does not use stays behind: another skill's cache, an earlier report.
    stale = root / ".axis" / "skills-cache" / "acme" / "stale"
    _clone(lint, stale)
    (root / ".axis" / "reports" / "old").mkdir(parents=True)
    (root / ".axis" / "reports" / "old" / "secret.txt").write_text("an old report")

    worker = dask_cluster.start_worker(
        "w1", _no_git_on_workers(E2E_DIR=str(e2e), ANTHROPIC_API_KEY="sk-ant-worker-0000")
    )
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--no-score", "--sandbox", "none",
        env=cli_env(**served.github_env()), timeout=150,
    )  # fmt: skip
    assert done.exit_code == 0, done.stdout + done.stderr
    (made,) = [d for d in report_dirs(root) if d.name != "old"]
    ((_, run),) = runs_by_job(json.loads((made / "report.json").read_text())).items()
    assert run["status"] == "completed", run
    assert run["worker"] == worker_address(worker.log), run
    seen = json.loads((e2e / "probe-probe.json").read_text())
    assert seen["skills"] == {
        "acme-lint-skill/SKILL.md": "# lint v1",
        "acme-lint-skill/rules.md": "be tidy",
    }
    assert seen["workspace"] == {"src/main.py": "print(1)", "src/lib/util.py": "u", "a.md": "A1"}

    # The worker's copy of the config folder: of .axis, exactly the plan's two caches.
    local = re.search(r"Local Directory:\s+(\S+)", worker.log.read_text())
    assert local, worker.log.read_text()
    (unpacked,) = (Path(local.group(1)) / "axis-bundles").iterdir()
    axis = unpacked / ".axis"
    repo_files = [".git/HEAD", "app/lib/util.py", "app/main.py", "docs/a.md"]
    assert sorted(p.relative_to(axis).as_posix() for p in axis.rglob("*") if p.is_file()) == [
        *(
            f"repos/github.com/acme/fixtures/{ref}/{f}"
            for ref in ("HEAD", "v1")
            for f in repo_files
        ),
        "skills-cache/acme/lint-skill/.git/HEAD",
        "skills-cache/acme/lint-skill/SKILL.md",
        "skills-cache/acme/lint-skill/rules.md",
    ]


FAKE_CLAUDE = r"""
import json, os, sys
args = sys.argv[1:]
text = open(args[args.index("--mcp-config") + 1]).read()
open(os.path.join(os.environ["E2E_DIR"], "seen-mcp.json"), "w").write(text)
header = json.loads(text)["mcpServers"]["api"]["headers"]["Authorization"]
reply = "the header was " + header
print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                  "result": reply, "session_id": "s1", "num_turns": 1}), flush=True)
"""


def _mcp_project(tmp_path: Path) -> Path:
    fake = tmp_path / "fake-claude"
    fake.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}")
    fake.chmod(0o755)
    root = tmp_path / "proj"
    (root / "scenarios").mkdir(parents=True)
    config = {
        "agents": [{"agent": "claude-code", "command": [str(fake)]}],
        "env": ["E2E_DIR"],
        "mcp_servers": {
            "api": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": "Bearer ${MCP_TOKEN}"},
            },
            "local": {"type": "stdio", "command": "srv", "env": {"KEY": "${MCP_LOCAL}"}},
        },
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    task = {"name": "task", "prompt": "Say the header", "judge": "it did"}
    (root / "scenarios" / "task.json").write_text(json.dumps(task))
    return root


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_mcp_variables_come_from_each_worker_checked_by_name_and_redacted(
    dask_cluster: DaskCluster, tmp_path: Path
) -> None:
    e2e = tmp_path / "e2e"
    e2e.mkdir()
    base = {"E2E_DIR": str(e2e), "ANTHROPIC_API_KEY": "sk-ant-worker-0000"}
    local = "local-value-0042"
    keyed = dask_cluster.start_worker("keyed", dask_env(**base, MCP_TOKEN=TOKEN, MCP_LOCAL=local))
    root = _mcp_project(tmp_path)
    # axis run holds neither variable: on a scheduler, the workers' environments count. The
    # job runs with the worker's value, which comes back redacted (axis run never knew it).
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--no-score", "--sandbox", "none",
        env=cli_env(), timeout=90,
    )  # fmt: skip
    assert done.exit_code == 0, done.stdout + done.stderr
    seen = json.loads((e2e / "seen-mcp.json").read_text())
    assert seen["mcpServers"]["api"]["headers"] == {"Authorization": f"Bearer {TOKEN}"}
    assert seen["mcpServers"]["local"]["env"] == {"KEY": local}
    ((_, run),) = runs_by_job(report(root)).items()
    assert run["status"] == "completed", run
    assert run["worker"] == worker_address(keyed.log), run
    assert run["result"].strip() == f"the header was {MASK}", run
    written = [p for p in (root / ".axis").rglob("*") if p.is_file()]
    assert any(p.name == "transcript.json" for p in written), written
    for path in written:
        text = path.read_text(errors="replace")
        assert TOKEN not in text and local not in text, path
    assert TOKEN not in done.stdout + done.stderr

    # Workers lacking a variable are named, each with what it lacks, before any job.
    half = worker_address(dask_cluster.start_worker("half", dask_env(**base, MCP_LOCAL=local)).log)
    bare = worker_address(dask_cluster.start_worker("bare", dask_env(**base)).log)
    (e2e / "seen-mcp.json").unlink()
    reports = report_dirs(root)
    done = run_cli(
        root, "--scheduler", dask_cluster.address, "--no-score", "--sandbox", "none",
        env=cli_env(), timeout=90,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.exit_code == 2, output
    assert "Traceback" not in output, output
    api = "MCP server 'api' header 'Authorization' uses ${MCP_TOKEN}"
    stdio = "MCP server 'local' env 'KEY' uses ${MCP_LOCAL}"
    lines = sorted(line.strip() for line in output.splitlines() if "MCP server '" in line)
    tail = ", which is not set on this worker"
    assert lines == sorted(
        [
            f"worker {half}: {api}{tail}",
            f"worker {bare}: {api}{tail}",
            f"worker {bare}: {stdio}{tail}",
        ]
    ), output
    assert worker_address(keyed.log) not in output, output
    assert report_dirs(root) == reports, "pre-flight failed after the report opened"
    assert not (e2e / "seen-mcp.json").exists(), "an agent was launched"
