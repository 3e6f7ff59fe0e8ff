"""spec.py: every Task/Workspace field, camelCase and snake_case, leniency, YAML output."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from ax_task_runner.config import options_from_env, parse_go_duration
from ax_task_runner.errors import SpecError
from ax_task_runner.prepare import marker_key, resolve_mounts
from ax_task_runner.spec import dump_task, dump_workspaces, parse_task, parse_workspaces

from .helpers import SPECS

VALUES = {
    "PYTHON": "/usr/bin/python3",
    "PROBE": "/tmp/probe.py",
    "OUT": "/tmp/out.json",
    "HOME": "/home/agent",
    "ROOT": "/workspace",
    "REPO_A": "file:///srv/alpha",
    "REPO_B": "file:///srv/beta.git",
}


def fill(name: str) -> str:
    text = (SPECS / name).read_text()
    for key, value in VALUES.items():
        text = text.replace("${" + key + "}", value)
    return text


def test_every_task_field_camel_case() -> None:
    parsed = parse_task(fill("task-full.yaml"), source="task-full.yaml")
    assert parsed.warnings == []
    task = parsed.value
    assert task is not None and task.metadata is not None
    assert (task.api_version, task.kind) == ("ax.io/v1alpha1", "Task")
    assert (task.metadata.name, task.metadata.atespace) == ("full-task", "team-a")
    assert task.metadata.creation_timestamp == datetime(2026, 5, 1, 12, tzinfo=UTC)
    spec = task.spec
    assert spec.suspend is False and spec.debug is False
    assert spec.image == "example.com/ax/runner@sha256:0123"
    assert spec.command == ["/usr/bin/python3", "/tmp/probe.py"]
    assert [(e.name, e.value) for e in spec.env] == [
        ("ENVIRONMENT", "production"),
        ("PROBE_OUT", "/tmp/out.json"),
        ("HOME", "/home/agent"),
    ]
    assert spec.resources is not None and spec.resources.limits and spec.resources.requests
    assert (spec.resources.limits.cpu, spec.resources.limits.memory) == ("2", "4Gi")
    assert (spec.resources.requests.cpu, spec.resources.requests.memory) == ("500m", "1Gi")
    assert [(w.name, w.path, w.goal) for w in spec.workspaces] == [
        ("code", "", ""),
        ("tools", "/workspace/team-tools", ""),
        ("scratch", "", ""),
    ]
    assert spec.gateway is not None and spec.gateway.name == "egress"
    status = task.status
    assert status is not None
    assert (status.phase, status.id, status.actor) == (
        "Running",
        "task-full-task-1777636800",
        "full-task",
    )
    assert status.worker_ip == "10.0.0.7:80"
    assert status.pending_approval is not None
    assert status.pending_approval.requested_at == datetime(2026, 5, 1, 12, 1, tzinfo=UTC)
    assert status.usage is not None and status.usage.completion_tokens == 20
    [condition] = status.conditions
    assert condition.last_transition_time == datetime(2026, 5, 1, 12, 2, tzinfo=UTC)
    assert (condition.type, condition.status, condition.reason) == ("Ready", "True", "TaskRunning")


def test_snake_case_reads_the_same_and_unknown_keys_are_warned() -> None:
    camel = parse_task(fill("task-full.yaml")).value
    snake = parse_task(fill("task-full-snake.yaml"), source="snake.yaml")
    assert snake.value == camel
    assert snake.warnings == [
        "snake.yaml (document 1): unknown field spec.http ignored",
        "snake.yaml (document 1): unknown field spec.harness ignored",
    ]


def test_every_workspace_field() -> None:
    parsed = parse_workspaces(fill("workspaces-full.yaml"))
    assert parsed.warnings == []
    code, tools, unbound = parsed.value
    assert code.metadata and code.metadata.creation_timestamp == datetime(2026, 5, 1, 9, tzinfo=UTC)
    alpha, beta = code.spec.git
    assert (alpha.name, alpha.repo, alpha.branch, alpha.dir, alpha.depth) == (
        "origin",
        "file:///srv/alpha",
        "",
        "",
        1,
    )
    assert (beta.branch, beta.dir, beta.depth) == ("feature", "libs/beta", 2)
    mcp = code.spec.mcp
    assert mcp is not None
    [registry] = mcp.registries
    assert (registry.provider, registry.project, registry.query) == (
        "google",
        "team-a",
        "mcp.tags:build",
    )
    assert [s.name for s in registry.servers] == ["registry-listed"]
    assert [(s.name, s.endpoint, s.command, s.args) for s in mcp.servers] == [
        ("git-tools", "http://git-mcp.default.svc.cluster.local:8080", "", []),
        ("local-echo", "", "python3", ["-m", "echo_server", "--verbose"]),
    ]
    skills = code.spec.skills
    assert skills is not None and skills.path == "/workspace/skills/code"
    assert (skills.registries[0].provider, skills.registries[0].query) == (
        "google",
        "skills.tags:nodejs",
    )
    assert (
        tools.spec.git[0].dir == "."
        and tools.spec.skills
        and tools.spec.skills.path == ".agents/skills"
    )
    assert unbound.metadata and unbound.metadata.name == "unbound"


def test_the_documents_examples() -> None:
    doc = parse_task((SPECS / "doc-custom-runner.yaml").read_text())
    assert doc.warnings == []
    assert doc.value is not None
    assert doc.value.spec.command == ["my-agent", "--goal", "fix the flaky test"]
    assert doc.value.spec.debug is True
    research = parse_task((SPECS / "research-task.yaml").read_text())
    assert research.warnings == [] and research.value is not None
    assert research.value.spec.workspaces[0].goal == "Install dependencies and run the test suite"
    workspace = parse_workspaces((SPECS / "research-workspace.yaml").read_text())
    assert workspace.warnings == []
    assert workspace.value[0].spec.skills is not None
    assert workspace.value[0].spec.skills.path == "/.agents/skills"
    mounts = resolve_mounts(research.value, workspace.value, "/workspace")
    assert [(m.name, m.path, m.goal) for m in mounts.value] == [
        ("my-service", "/workspace/my-service", "Install dependencies and run the test suite"),
        ("team-tools", "/workspace/tools", ""),
    ]


def test_output_is_protojson_like_and_round_trips() -> None:
    task = parse_task(fill("task-full.yaml")).value
    assert task is not None
    text = dump_task(task, is_secret=lambda name: name == "HOME")
    doc = yaml.safe_load(text)
    assert "status" not in doc and "suspend" not in doc["spec"] and "debug" not in doc["spec"]
    assert doc["metadata"]["creationTimestamp"] == "2026-05-01T12:00:00Z"
    assert doc["spec"]["env"][2] == {"name": "HOME", "value": "<redacted>"}
    assert list(doc["spec"]) == ["image", "command", "env", "resources", "workspaces", "gateway"]
    again = parse_task(text).value
    assert again is not None and again.spec.image == task.spec.image
    workspaces = parse_workspaces(fill("workspaces-full.yaml")).value
    stream = list(yaml.safe_load_all(dump_workspaces(workspaces[:2])))
    assert [d["metadata"]["name"] for d in stream] == ["code", "tools"]
    assert stream[0]["spec"]["git"][0] == {
        "name": "origin",
        "repo": "file:///srv/alpha",
        "depth": 1,
    }
    assert parse_workspaces(dump_workspaces(workspaces)).value == workspaces


def test_leniency() -> None:
    text = """
kind: Task
metadata: {name: x, creationTimestamp: "not a time"}
spec:
  command:
  env:
    - {name: DEBUG, value: true}
    - {name: RETRIES, value: 3}
  workspaces: [{name: a, path: rel/dir}]
---
kind: Workspace
metadata: {name: stray}
"""
    parsed = parse_task(text, source="t")
    assert parsed.value is not None
    assert parsed.value.spec.command == []
    assert [(e.name, e.value) for e in parsed.value.spec.env] == [
        ("DEBUG", "true"),
        ("RETRIES", "3"),
    ]
    assert parsed.value.metadata and parsed.value.metadata.creation_timestamp is None
    assert any("not an RFC 3339 timestamp" in w for w in parsed.warnings)
    assert any("a true/false value" in w for w in parsed.warnings)
    assert "t (document 2): kind Workspace skipped" in parsed.warnings
    mounts = resolve_mounts(parsed.value, [], "/vol")
    assert mounts.value[0].path == "/vol/rel/dir" and "not absolute" in mounts.warnings[0]
    # Legacy shape: mcp as a bare list; a document without metadata is ignored.
    legacy = parse_workspaces(
        "kind: Workspace\nmetadata: {name: l}\nspec: {mcp: [{name: a, command: x}]}\n"
        "---\nspec: {}\n"
    )
    assert legacy.value[0].spec.mcp and legacy.value[0].spec.mcp.servers[0].command == "x"
    assert any("without metadata" in w for w in legacy.warnings)
    assert parse_task("").value is None
    assert parse_task("kind: Task\nspec: {}\n").value is None


def test_which_documents_are_read() -> None:
    # A Task without metadata does not count: the next Task is the one read, and a
    # third is skipped as a second one. Workspaces skip every other kind.
    text = (
        "kind: Task\nspec: {image: a}\n---\nkind: Task\nmetadata: {name: b}\n"
        "---\nmetadata: {name: c}\n---\nkind: Workspace\nmetadata: {name: w}\n"
    )
    task = parse_task(text, source="t")
    assert task.value is not None and task.value.metadata is not None
    assert task.value.metadata.name == "b"
    assert task.warnings == [
        "t (document 1): a Task without metadata is ignored",
        "t (document 3): a second Task skipped",
        "t (document 4): kind Workspace skipped",
    ]
    workspaces = parse_workspaces(text, source="w")
    assert [ws.metadata.name for ws in workspaces.value if ws.metadata] == ["c", "w"]
    assert workspaces.warnings == [
        "w (document 1): kind Task skipped",
        "w (document 2): kind Task skipped",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: Task\nmetadata: {name: x\n", "invalid YAML at line"),
        ("- a\n- b\n", "expected a mapping"),
        ("kind: Task\nmetadata: {name: x}\nspec: {command: python agent.py}\n", "spec.command"),
        (
            "kind: Task\nmetadata: {name: x}\nspec: {env: [{name: K, value: [s3cr3t-value]}]}\n",
            "spec.env[0].value",
        ),
    ],
)
def test_malformed_specs_name_the_field_not_the_value(text: str, expected: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_task(text, source="AX_TASK_YAML")
    assert expected in str(caught.value)
    assert "s3cr3t-value" not in str(caught.value)


def test_binding_rules() -> None:
    def task(*bindings: dict[str, str]) -> str:
        return yaml.safe_dump(
            {"kind": "Task", "metadata": {"name": "x"}, "spec": {"workspaces": list(bindings)}}
        )

    for bad, message in [
        (task({"path": "/a"}), "name is required"),
        (task({"name": "a"}, {"name": "a"}), "duplicate workspace name"),
        (task({"name": "a", "path": "/w/x"}, {"name": "b", "path": "/w/x/"}), "also used by"),
    ]:
        parsed = parse_task(bad).value
        with pytest.raises(SpecError, match=message):
            resolve_mounts(parsed, [], "/w")
    assert [m.path for m in resolve_mounts(None, [], "/w").value] == ["/w"]


def test_marker_names_follow_upstream() -> None:
    assert marker_key("/workspace") == "workspace"
    assert marker_key("/workspace/my-service/") == "workspace-my-service"
    assert marker_key("/") == "root"


def test_go_durations_and_option_variables() -> None:
    assert parse_go_duration("90s") == 90
    assert parse_go_duration("1h30m") == 5400
    assert parse_go_duration("1.5h") == 5400
    assert parse_go_duration("250ms") == pytest.approx(0.25)
    assert parse_go_duration("0") == 0
    for bad in ("", "10", "m", "5 m", "1d"):
        with pytest.raises(ValueError):
            parse_go_duration(bad)
    values, warnings = options_from_env(
        {
            "AX_BOOTSTRAP_TIMEOUT": "2m",
            "AX_RUNNER_STOP_GRACE": "3",
            "AX_RUNNER_READINESS": "serving",
            "AX_GOAL_AGENT": "claude-code",
            "AX_RUNNER_PORT": "nope",
        }
    )
    assert values == {
        "bootstrap_timeout_s": 120,
        "stop_grace_s": 3,
        "readiness": "serving",
        "goal_agent": "claude-code",
    }
    assert warnings == ["AX_RUNNER_PORT='nope' cannot be read; using the default"]
    for bad in ("600", "-1m", "0"):
        values, warnings = options_from_env({"AX_BOOTSTRAP_TIMEOUT": bad})
        assert values == {} and len(warnings) == 1


def test_spec_files_are_valid_yaml_files() -> None:
    for path in Path(SPECS).glob("*.yaml"):
        assert list(yaml.safe_load_all(fill(path.name)))
