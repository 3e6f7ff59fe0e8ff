"""Secret values never show in the runner's logs, its files or its endpoints."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from .helpers import HERE, free_port, task_doc, workspace_doc

PROCESS_KEY = "gk-process-secret-123"
PROCESS_TOKEN = "ghp-process-secret-456"
SPEC_TOKEN = "spec-secret-789"
SECRETS = (PROCESS_KEY, PROCESS_TOKEN, SPEC_TOKEN)


def _served(runner: Any) -> str:
    paths = (
        "/metadata/v1alpha1/ax/task",
        "/metadata/v1alpha1/ax/workspaces",
        "/metadata/v1alpha1/ax/status",
        "/readyz",
        "/healthz",
    )
    return "\n".join(runner.get(path).text for path in paths)


def _written(runner: Any) -> str:
    texts = [runner.logs()]
    for folder in (runner.state, runner.root / ".ax-task-runner"):
        texts += [p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()]
    return "\n".join(texts)


def test_secrets_stay_out_of_logs_and_endpoints(start_runner: Any, tmp_path: Path) -> None:
    out = tmp_path / "probe.json"
    credentialed = f"http://user:{PROCESS_TOKEN}@127.0.0.1:{free_port()}/repo.git"
    task = task_doc(
        command=[sys.executable, str(HERE / "probe.py"), f"--token={SPEC_TOKEN}"],
        env=[
            {"name": "MY_API_TOKEN", "value": SPEC_TOKEN},
            {"name": "DB_URL", "value": f"postgres://app:{SPEC_TOKEN}@db/app"},
            {"name": "PROBE_OUT", "value": str(out)},
            {"name": "PROBE_EXIT", "value": "0"},
        ],
        workspaces=[{"name": "code"}],
    )
    workspace = workspace_doc("code", git=[{"name": "private", "repo": credentialed}])
    runner = start_runner(
        task=task,
        workspaces=[workspace],
        env={"GEMINI_API_KEY": PROCESS_KEY, "GITHUB_TOKEN": PROCESS_TOKEN},
        args=["--git-attempts", "2"],
    )
    runner.wait_ready()
    runner.wait_log("task command completed successfully")
    # The command itself gets every value.
    env = json.loads(out.read_text())["env"]
    assert (env["MY_API_TOKEN"], env["GEMINI_API_KEY"]) == (SPEC_TOKEN, PROCESS_KEY)
    # The failed clone was logged (redacted) and left no marker, so the next boot retries.
    assert runner.logs().count('msg="git fetch failed"') == 2
    assert "git fetch gave up" in runner.logs()
    assert "repo=http://user:[REDACTED]@127.0.0.1:" in runner.logs()
    assert "error: git fetch exited with status" in (runner.state / "git-error.log").read_text()
    assert not list(runner.state.glob("initialized-*"))
    # What is served says a secret is there without showing it.
    task_yaml = yaml.safe_load(runner.get("/metadata/v1alpha1/ax/task").text)
    values = {e["name"]: e["value"] for e in task_yaml["spec"]["env"]}
    assert values["MY_API_TOKEN"] == "<redacted>"
    assert values["DB_URL"] == "postgres://app:[REDACTED]@db/app"
    assert "[REDACTED]" in runner.get("/metadata/v1alpha1/ax/workspaces").text
    served = _served(runner)
    assert runner.terminate() == 0
    written = served + _written(runner)
    for secret in SECRETS:
        assert secret not in written, secret


def test_a_malformed_spec_does_not_echo_its_values(start_runner: Any) -> None:
    bad = (
        "kind: Task\nmetadata: {name: x}\nspec:\n  env:\n"
        f"    - {{name: K, value: [{SPEC_TOKEN}]}}\n"
    )
    runner = start_runner(task=bad)
    assert runner.proc.wait(10) == 1
    assert "spec.env[0].value" in runner.logs()
    assert SPEC_TOKEN not in runner.logs()
    broken = start_runner(task=f"kind: Task\nmetadata: {{name: x}}\nspec: {{env: [{SPEC_TOKEN}\n")
    assert broken.proc.wait(10) == 1
    assert "invalid YAML" in broken.logs() and SPEC_TOKEN not in broken.logs()


def test_what_counts_as_a_secret() -> None:
    from ax_task_runner.logs import Redactor, is_secret_name, redactor
    from axis_eval.redact import RUNNER

    for name in ("GEMINI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY",
                 "HF_AUTH", "OPENAI_APIKEY", "gh-token"):  # fmt: skip
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "PWD", "KEYBOARD_LAYOUT", "AX_METADATA_URL", "TOKENIZERS_X"):
        assert not is_secret_name(name), name
    assert redactor.rule is RUNNER  # the process-wide one keeps the runner's rule
    redact = Redactor(rule=RUNNER)
    redact.add_environment({"A_TOKEN": "abcdef-123", "B_KEY": "true", "C_SECRET": "abcde"})
    assert redact("x abcdef-123 y") == "x [REDACTED] y"
    assert redact("flag=true short=abcde") == "flag=true short=abcde"
    assert redact("https://me:pw@host/x and ssh://git@host") == (
        "https://me:[REDACTED]@host/x and ssh://git@host"
    )
