"""The embedded scripted model server: `model_server` in the config, or `axis run --tape`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import REPO, cli_env, only_report, run_cli

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess

CLIENT = REPO / "tests" / "agents" / "run_api_client.py"

ADAPTER = f'''
"""Asks the model API at the job's endpoint once and prints the answer."""

from axis_eval.adapters import AdapterResult, AggregateMode, create_agent_adapter


def _done(ctx):
    return AdapterResult(result=ctx.state["out"].strip() or None)


def _chunk(chunk, ctx):
    ctx.state["out"] += chunk


adapter = create_agent_adapter(
    name="api-client",
    resolve_command=lambda inp: [{sys.executable!r}, {str(CLIENT)!r}, inp.endpoint or "none"],
    build_args=lambda inp: [],
    prompt_via="stdin",
    initial_state=lambda: {{"out": ""}},
    stream=AggregateMode(on_chunk=_chunk),
    get_result=_done,
    required_env=["ANTHROPIC_API_KEY"],
)
'''

TAPE = """
version: 1
conversations:
  - name: greet
    match: "say hello"
    turns:
      - text: "Hello from the tape."
"""


def project(root: Path, *, with_server: bool) -> Path:
    root.mkdir(parents=True)
    (root / "client_adapter.py").write_text(ADAPTER)
    (root / "tape.yaml").write_text(TAPE)
    config: dict[str, object] = {
        "scenarios": "./scenarios",
        "agents": ["client"],
        "adapters": {"client": "./client_adapter.py"},
    }
    if with_server:
        config["model_server"] = {"tape": "./tape.yaml", "trap_outside_traffic": True}
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    (root / "scenarios" / "greet.json").write_text(
        json.dumps({"name": "greet", "prompt": "Please say hello.", "judge": "It greets."})
    )
    return root


def test_config_model_server_answers_the_agent_and_is_reported(tmp_path: Path) -> None:
    root = project(tmp_path / "proj", with_server=True)
    env = cli_env()
    env.pop("ANTHROPIC_API_KEY", None)  # a placeholder key is supplied for the scripted model
    done = run_cli(root, "--no-score", env=env)  # the judge would ask the server too
    assert done.exit_code == 0, done.stdout + done.stderr
    report = only_report(root)
    manifest = read_json(report / "report.json")
    [pair] = manifest["results"]
    assert pair["runs"][0]["result"] == "Hello from the tape."
    server = manifest["modelServer"]
    assert server["requests"] == 1 and server["unmatchedRequests"] == 0
    assert server["connectAttempts"] == []
    log = [json.loads(line) for line in (report / "model-server.ndjson").read_text().splitlines()]
    assert [r["protocol"] for r in log] == ["anthropic"]
    assert log[0]["conversation"] == "greet"


def test_tape_flag_turns_any_config_into_a_dry_run(tmp_path: Path) -> None:
    root = project(tmp_path / "proj", with_server=False)
    env = cli_env()
    env.pop("ANTHROPIC_API_KEY", None)
    without = run_cli(root, env=env)
    assert without.exit_code == 2  # no key, no server: pre-flight stops it
    assert "ANTHROPIC_API_KEY" in (without.stdout + without.stderr)
    done = run_cli(root, "--tape", str(root / "tape.yaml"), "--no-score", env=env)
    assert done.exit_code == 0, done.stdout + done.stderr
    manifest = read_json(only_report(root) / "report.json")
    assert manifest["results"][0]["runs"][0]["result"] == "Hello from the tape."


def test_bad_tape_is_a_config_error(tmp_path: Path) -> None:
    root = project(tmp_path / "proj", with_server=True)
    (root / "tape.yaml").write_text("version: 1\nconversations: [{turns: 3}]\n")
    done = run_cli(root, env=cli_env())
    assert done.exit_code == 2
    assert "model_server.tape" in (done.stdout + done.stderr) and "Traceback" not in (
        done.stdout + done.stderr
    )
