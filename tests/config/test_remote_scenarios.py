"""Remote scenario sources: git repositories in ``scenarios``, served on 127.0.0.1.

``https://github.com/<owner>/<repo>`` URLs resolve to a local ``git daemon`` through git's
``url.<base>.insteadOf`` in the environment (tests/helpers/git_server.py), so the configs
are written as users write them. Real runs drive ``axis run`` in a child process with a
probe agent (tests/agents/git_probe.py); dry runs go through the CLI in-process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from axis_eval.config.load import load_config
from axis_eval.errors import ConfigError
from helpers.git_server import GitServer, need_git, refusing_url, serving

PROBE = Path(__file__).resolve().parents[1] / "agents" / "git_probe.py"
SCENARIO = {"prompt": "do it", "judge": "it was done"}
Axis = Callable[..., Any]


@pytest.fixture(autouse=True)
def _git_installed() -> None:
    need_git()


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitServer]:
    with serving(tmp_path / "served", monkeypatch) as server:
        yield server


def scenario(name: str) -> dict[str, Any]:
    return {"name": name, **SCENARIO}


def project(root: Path, sources: list[Any], **extra: Any) -> Path:
    """A config with one local scenario (``local``), ``sources`` after it, a probe agent."""
    (root / "scenarios").mkdir(parents=True)
    (root / "scenarios" / "local.json").write_text(json.dumps(scenario("local")))
    adapter = {"command": [sys.executable, str(PROBE), "ndjson"], "output": "ndjson"}
    config = {
        "scenarios": ["./scenarios", *sources],
        "agents": ["probe"],
        "adapters": {"probe": adapter},
        "env": ["E2E_DIR"],
        **extra,
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    return root


def dry_keys(axis: Axis, root: Path, *flags: str) -> list[str]:
    result = axis("run", "--dry-run", "--json", "-c", str(root), *flags, cwd=root)
    assert result.exit_code == 0, result.stderr
    return sorted(job["scenarioKey"] for job in json.loads(result.stdout)["jobs"])


def real_run(axis_process: Axis, root: Path, *flags: str) -> dict[str, Any]:
    done = axis_process(
        "run", "-c", str(root), "--no-score", "--sandbox", "none", "--json", *flags, cwd=root
    )
    assert done.exit_code == 0, done.stderr
    manifest: dict[str, Any] = json.loads(done.stdout)
    return manifest


def keys_of(manifest: dict[str, Any]) -> list[str]:
    return sorted(pair["scenarioKey"] for pair in manifest["results"])


def test_cloned_then_pulled_the_commit_in_report_json_and_offline_uses_the_cache(
    served: GitServer,
    axis_process: Axis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("E2E_DIR", str(tmp_path))
    repo = served.repo("acme", "suite")
    first = repo.commit({"first.json": scenario("first"), "README.md": "not a scenario"})
    root = project(tmp_path / "proj", [repo.github_url])

    manifest = real_run(axis_process, root)
    assert keys_of(manifest) == ["first", "local"]
    assert manifest["remotes"] == [
        {"url": repo.github_url, "ref": None, "commit": first, "listedBy": None}
    ]
    clone = root / ".axis" / "remotes" / "com.github" / "acme" / "suite"
    assert (clone / "first.json").is_file()

    # A new commit upstream: the next run pulls it (fast-forward) into the same clone.
    second = repo.commit({"second.json": scenario("second")})
    manifest = real_run(axis_process, root)
    assert keys_of(manifest) == ["first", "local", "second"]
    assert manifest["remotes"][0]["commit"] == second
    report = root / ".axis" / "reports" / manifest["reportId"] / "report.json"
    assert json.loads(report.read_text())["remotes"][0]["commit"] == second

    # --offline: the cache as it is, never fetched (the third commit is not seen).
    repo.commit({"third.json": scenario("third")})
    manifest = real_run(axis_process, root, "--offline")
    assert keys_of(manifest) == ["first", "local", "second"]
    assert manifest["remotes"][0]["commit"] == second


def test_offline_without_a_cache_is_an_error_naming_the_url(
    served: GitServer, axis: Axis, axis_process: Axis, tmp_path: Path
) -> None:
    repo = served.repo("acme", "suite")
    repo.commit({"first.json": scenario("first")})
    root = project(tmp_path / "proj", [repo.github_url])
    for flags in (("--offline",), ("--offline", "--dry-run")):
        done = axis_process("run", "-c", str(root), *flags, cwd=root)
        assert done.exit_code == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert f"error: remote scenario source {repo.github_url}: not in the cache" in done.stderr
        assert "--offline" in done.stderr
    assert not (root / ".axis").exists(), "nothing ran, nothing was written"


def test_a_dry_run_fetches_into_a_temporary_folder_and_writes_nothing(
    served: GitServer, axis: Axis, tmp_path: Path
) -> None:
    repo = served.repo("acme", "suite")
    repo.commit({"first.json": scenario("first")})
    root = project(tmp_path / "proj", [repo.github_url])
    assert dry_keys(axis, root) == ["first", "local"]
    assert not (root / ".axis").exists()


def test_a_pinned_ref_tag_branch_or_commit(served: GitServer, axis: Axis, tmp_path: Path) -> None:
    repo = served.repo("acme", "suite")
    repo.commit({"first.json": scenario("first")})
    repo.tag("v1")
    second = repo.commit({"second.json": scenario("second")})
    repo.branch("stable")
    repo.commit({"third.json": scenario("third")})
    cases: list[tuple[Any, list[str]]] = [
        (f"{repo.github_url}#v1", ["first", "local"]),
        (f"{repo.github_url}.git#stable", ["first", "local", "second"]),
        ({"url": repo.github_url, "ref": second}, ["first", "local", "second"]),
        (repo.github_url, ["first", "local", "second", "third"]),
    ]
    for index, (source, expected) in enumerate(cases):
        root = project(tmp_path / f"proj{index}", [source])
        assert dry_keys(axis, root) == expected, source

    root = project(tmp_path / "unknown", [f"{repo.github_url}#no-such-ref"])
    result = axis("run", "--dry-run", "-c", str(root), cwd=root)
    assert result.exit_code == 2
    assert repo.github_url in result.stderr
    assert "ref 'no-such-ref' was not found there" in result.stderr


def test_a_pinned_run_records_ref_and_commit(
    served: GitServer, axis_process: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2E_DIR", str(tmp_path))
    repo = served.repo("acme", "suite")
    first = repo.commit({"first.json": scenario("first")})
    repo.tag("v1")
    repo.commit({"second.json": scenario("second")})
    root = project(tmp_path / "proj", [{"url": repo.github_url, "ref": "v1"}])
    manifest = real_run(axis_process, root)
    assert keys_of(manifest) == ["first", "local"]
    assert manifest["remotes"] == [
        {"url": repo.github_url, "ref": "v1", "commit": first, "listedBy": None}
    ]
    # Offline, the cache of that ref serves; another ref is not in the cache.
    assert keys_of(real_run(axis_process, root, "--offline")) == ["first", "local"]
    other = project(tmp_path / "proj2", [f"{repo.github_url}#v1"])
    (other / ".axis").mkdir()
    (root / ".axis" / "remotes").rename(other / ".axis" / "remotes")
    config = json.loads((other / "axis.config.json").read_text())
    config["scenarios"][1] = f"{repo.github_url}#main"
    (other / "axis.config.json").write_text(json.dumps(config))
    done = axis_process("run", "-c", str(other), "--offline", cwd=other)
    assert done.exit_code == 2
    assert "holds ref 'v1', not ref 'main'" in done.stderr


def test_a_remote_config_contributes_scenarios_and_keyed_merges_parent_wins(
    served: GitServer, tmp_path: Path
) -> None:
    repo = served.repo("acme", "suite")
    server = {"type": "stdio", "command": "remote-server"}
    repo.commit(
        {
            "axis.config.json": {
                "scenarios": ["./evals", {"key": "inline-one", **scenario("inline")}],
                "agents": ["gemini"],
                "env": ["SHARED", "REMOTE_ONLY"],
                "skills": ["./skills/remote-skill", "someone/skill"],
                "artifacts": ["remote.txt"],
                "mcp_servers": {"both": server, "remote": server},
                "adapters": {"helper": "./adapters/helper.py", "both": "./adapters/x.py"},
                "settings": {"concurrency": 2},
                "judging": {"model": "anthropic:remote"},
                "beforeAll": [{"action": "run_script", "command": "false"}],
            },
            "evals/remote-eval.json": scenario("remote eval"),
        }
    )
    root = project(
        tmp_path / "proj",
        [repo.github_url],
        env=["PARENT", "SHARED"],
        artifacts=["parent.txt"],
        mcp_servers={"both": {"type": "stdio", "command": "parent-server"}},
    )
    scratch = tmp_path / "scratch"
    loaded = load_config(str(root), remotes_dir=scratch)
    config = loaded.config
    clone = scratch / "com.github" / "acme" / "suite"
    assert config.env == ["PARENT", "SHARED", "REMOTE_ONLY"]
    assert config.artifacts == ["parent.txt", "remote.txt"]
    assert config.skills == [str(clone / "skills" / "remote-skill"), "someone/skill"]
    assert config.mcp_servers["both"].command == "parent-server"  # type: ignore[union-attr]
    assert config.mcp_servers["remote"].command == "remote-server"  # type: ignore[union-attr]
    assert config.adapters["helper"] == str(clone / "adapters" / "helper.py")
    assert [a if isinstance(a, str) else a.agent for a in config.agents] == ["probe"]
    assert config.settings.concurrency == 15 and config.judging is None
    assert config.before_all == []
    assert str(clone / "evals") in config.scenarios
    assert [r.url for r in loaded.remotes] == [repo.github_url]
    assert not (root / ".axis").exists()


def test_a_cycle_is_named(served: GitServer, axis: Axis, tmp_path: Path) -> None:
    one, two = served.repo("acme", "one"), served.repo("acme", "two")
    one.commit({"axis.config.json": {"scenarios": [two.github_url], "agents": ["x"]}})
    two.commit({"axis.config.json": {"scenarios": [one.github_url + ".git"], "agents": ["x"]}})
    root = project(tmp_path / "proj", [one.github_url], settings={"remotes": {"maxDepth": 5}})
    result = axis("run", "--dry-run", "-c", str(root), cwd=root)
    assert result.exit_code == 2, result.stderr
    assert f"Cyclic remote scenario reference detected: {one.github_url}.git" in result.stderr
    assert "Traceback" not in result.stderr


def test_nesting_deeper_than_max_depth(served: GitServer, axis: Axis, tmp_path: Path) -> None:
    outer, inner = served.repo("acme", "outer"), served.repo("acme", "inner")
    inner.commit({"deep.json": scenario("deep")})
    outer.commit(
        {
            "axis.config.json": {"scenarios": ["./s", inner.github_url], "agents": ["x"]},
            "s/shallow.json": scenario("shallow"),
        }
    )
    root = project(tmp_path / "proj", [outer.github_url])
    result = axis("run", "--dry-run", "-c", str(root), cwd=root)
    assert result.exit_code == 2, result.stderr
    assert f"remote scenario source {inner.github_url} (listed by {outer.github_url})" in (
        result.stderr
    )
    assert "settings.remotes.maxDepth (1)" in result.stderr
    assert "raise settings.remotes.maxDepth" in result.stderr

    deeper = project(tmp_path / "deeper", [outer.github_url], settings={"remotes": {"maxDepth": 2}})
    assert dry_keys(axis, deeper) == ["deep", "local", "shallow"]


@pytest.mark.parametrize("dry", [False, True])
def test_an_unreachable_remote_stops_before_any_job(
    axis_process: Axis, tmp_path: Path, dry: bool
) -> None:
    url = refusing_url("acme/suite")
    root = project(tmp_path / "proj", [url])
    done = axis_process("run", "-c", str(root), *(["--dry-run"] if dry else []), cwd=root)
    assert done.exit_code == 2, done.stderr
    first, second = done.stderr.splitlines()[:2]
    assert first == f"Cloning remote scenarios: {url}"
    assert second.startswith(f"error: remote scenario source git clone {url}:")
    assert "the host cannot be reached" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / ".axis" / "reports").exists()


def test_scp_style_urls_are_refused_with_the_form_to_use(axis: Axis, tmp_path: Path) -> None:
    root = project(tmp_path / "proj", ["git@github.com:acme/suite.git"])
    result = axis("run", "--dry-run", "-c", str(root), cwd=root)
    assert result.exit_code == 2
    assert "scp-style git URLs are not supported: git@github.com:acme/suite.git" in result.stderr
    assert "ssh://git@host/owner/repo" in result.stderr


# Hostile remotes: a remote's repository and config are written by someone else.


def test_a_remote_symlinking_secrets_never_reads_them_and_says_so(
    served: GitServer, tmp_path: Path
) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text('{"name": "stolen", "prompt": "planted key", "judge": "x"}')
    repo = served.repo("acme", "suite")
    repo.link("axis.config.json", str(secret))
    repo.link("evals/stolen.json", str(secret))
    repo.commit({"evals/fine.json": scenario("fine")})
    root = project(tmp_path / "proj", [repo.github_url])
    said: list[str] = []
    loaded = load_config(str(root), say=said.append)
    url = repo.github_url
    assert said == [
        f"Cloning remote scenarios: {url}",
        f"warning: {url}: symlink(s) leading out of the repository were deleted, not "
        "followed: axis.config.json, evals/stolen.json",
    ]
    clone = root / ".axis" / "remotes" / "com.github" / "acme" / "suite"
    assert str(clone) in loaded.config.scenarios  # no config left: the clone is the folder
    assert sorted(p.name for p in (clone / "evals").iterdir()) == ["fine.json"]
    said.clear()
    load_config(str(root), say=said.append)
    assert said == [f"Pulling remote scenarios: {url}"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("skills", ["../../../../home/.ssh"]),
        ("skills", ["/etc"]),
        ("skills", ["./.git"]),
        ("adapters", {"evil": "/tmp/evil.py"}),
        ("adapters", {"evil": "../../outside.py:adapter"}),
        ("scenarios", ["/etc"]),
        ("scenarios", ["../../../.."]),
    ],
)
def test_a_remote_config_path_leaving_its_clone_is_refused(
    field: str, value: Any, served: GitServer, tmp_path: Path
) -> None:
    repo = served.repo("acme", "suite")
    repo.commit({"axis.config.json": {field: value}, "scenarios/a.json": scenario("a")})
    root = project(tmp_path / "proj", [repo.github_url])
    with pytest.raises(ConfigError) as caught:
        load_config(str(root))
    text = caught.value.message
    assert "leaves the remote repository" in text and "must stay inside its clone" in text
    assert caught.value.file is not None and caught.value.file.endswith("axis.config.json")


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("setup", [{"action": "copy", "match": "/etc/hostname"}], "/etc/hostname"),
        ("teardown", [{"action": "copy", "match": "../../.ssh/id_rsa"}], "../../.ssh/id_rsa"),
        ("setup", [{"action": "copy", "match": "~/.aws/credentials"}], "~/.aws/credentials"),
        ("skills", ["/root/.claude/skills/x"], "/root/.claude/skills/x"),
    ],
)
def test_a_remote_scenario_naming_a_host_path_is_refused_before_any_job(
    field: str, value: Any, named: str, served: GitServer, axis: Axis, tmp_path: Path
) -> None:
    """The harness copies a scenario's files itself, outside every sandbox: a remote's
    scenario may not name a host file by an absolute path or by climbing out."""
    repo = served.repo("acme", "grabby")
    repo.commit({"scenarios/grab.json": {**scenario("grab"), field: value}})
    root = project(tmp_path / "proj", [repo.github_url])
    result = axis("run", "--dry-run", "-c", str(root), cwd=root)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert f"{named!r}" in result.stderr and "leaves the config folder" in result.stderr
    assert "grab" in result.stderr and repo.github_url in result.stderr


def test_a_remote_scenario_may_copy_inside_the_config_folder(
    served: GitServer, axis: Axis, tmp_path: Path
) -> None:
    repo = served.repo("acme", "polite")
    setup = [{"action": "copy", "match": "fixtures/seed.txt"}]
    repo.commit({"scenarios/ok.json": {**scenario("ok"), "setup": setup}})
    root = project(tmp_path / "proj", [repo.github_url])
    assert "scenarios/ok" in dry_keys(axis, root)  # the clone is its scenarios folder
    # The config's own scenarios keep absolute paths: the config is the user's.
    (root / "scenarios" / "mine.json").write_text(
        json.dumps({**scenario("mine"), "setup": [{"action": "copy", "match": "/etc/hostname"}]})
    )
    assert "mine" in dry_keys(axis, root)


def test_a_remotes_node_dependencies_are_installed_without_their_scripts(
    served: GitServer, axis: Axis, tmp_path: Path
) -> None:
    """As AXIS does, a clone with a package.json and no node_modules gets `npm install`
    (its JS config may import packages), with install scripts off: none of them runs."""
    import shutil

    if shutil.which("npm") is None:
        from helpers.system_parts import not_run

        not_run("REMOTE DEPENDENCIES TEST", "npm is not on PATH")
    marker = tmp_path / "script-ran"
    script = f"node -e \"require('fs').writeFileSync('{marker}', 'x')\""
    repo = served.repo("acme", "withdeps")
    repo.commit(
        {
            "package.json": {
                "name": "suite",
                "version": "1.0.0",
                "dependencies": {"dep": "file:./vendor/dep"},
                "scripts": {"postinstall": script},
            },
            "vendor/dep/package.json": {
                "name": "dep",
                "version": "1.0.0",
                "main": "index.js",
                "scripts": {"install": script},
            },
            "vendor/dep/index.js": 'module.exports = { folder: "./suite" };\n',
            "axis.config.mjs": (
                'import dep from "dep";\nexport default { scenarios: [dep.folder] };\n'
            ),
            "suite/from-dep.json": scenario("from-dep"),
        }
    )
    root = project(tmp_path / "proj", [repo.github_url])
    result = axis("run", "--dry-run", "--json", "-c", str(root), cwd=root)
    assert result.exit_code == 0, result.stderr
    keys = sorted(job["scenarioKey"] for job in json.loads(result.stdout)["jobs"])
    assert keys == ["from-dep", "local"]
    assert f"Installing dependencies of remote scenarios: {repo.github_url}" in result.stderr
    assert not marker.exists(), "an install script of the remote ran"
