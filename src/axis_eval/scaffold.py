"""``axis init``: a starter project whose first ``axis run`` is scored with no API key.

It writes the config, a sample scenario and ``tape.yaml``. The config runs the agents (real
CLIs, pinned) against the embedded scripted model server answering from that tape, and its
API judge asks the same server, so the first run is judged offline too. The ``live``
profile turns the scripted server off for real keys (docs/model-server.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from axis_eval.errors import UsageError
from axis_eval.files import atomic_write_text

ConfigFormat = Literal["json", "yaml", "toml"]

SAMPLE_SCENARIO = {
    "name": "Hello World",
    "prompt": "Create a file named hello.txt containing exactly: Hello, World!",
    "judge": [
        {"check": "A file named hello.txt was created in the working directory"},
        {"check": "hello.txt contains the text 'Hello, World!'"},
    ],
}

JUDGE_MODEL = "anthropic:claude-sonnet-4-5"
"""The scaffold's API judge: scripted by the tape offline, the real model with ``--profile
live`` (which then needs ANTHROPIC_API_KEY)."""

TAPE_NAME = "tape.yaml"

SAMPLE_TAPE = """\
# The scripted model behind `axis run` (the config's `model_server.tape`): the real agent
# CLI runs, but its "model" is axis-eval's scripted model server answering from this tape
# (no API key, no network, no tokens). `axis run --profile live` uses the real APIs instead.
# Format: docs/model-server.md. Add a conversation for each scenario you write.
version: 1
conversations:
  # The judge (`judging.model` in the config) asks the same scripted server. Its two
  # conversations come first so they win over the agent's: the judge's prompt quotes the task.
  # The goal answer grades checks 1 to 2, the sample scenario's two checks (docs/judging.md).
  - name: judge-goal
    match: "GOAL JUDGMENT"
    turns:
      - text: >-
          {"checks": [{"index": 1, "score": 10, "rationale": "The shell call created hello.txt."},
          {"index": 2, "score": 10, "rationale": "cat shows: Hello, World!"}]}
  - name: judge-audit
    match: "INTERACTION AUDIT"
    turns:
      - text: >-
          {"audits": [], "necessity": {"environment": {"score": 1.0, "unnecessary_ids": []},
          "service": {"score": 1.0, "unnecessary_ids": []},
          "agent": {"score": 1.0, "unnecessary_ids": []}}}
  # The agent's conversation: matched on a substring of the scenario's prompt.
  - name: hello-world
    match: "hello.txt"
    turns:
      - text: "I'll create hello.txt with the greeting."
        tool_calls:
          - tool: shell         # becomes Bash, exec_command, run_shell_command ... per agent
            args: {command: "printf 'Hello, World!\\\\n' > hello.txt && cat hello.txt"}
      - text: "Created hello.txt containing: Hello, World!"
"""

_HEADER = (
    "`axis run` runs the agents against the scripted model in tape.yaml (offline, no key);\n"
    "`axis run --profile live` uses the real APIs (it needs the agents' API keys and\n"
    "ANTHROPIC_API_KEY for the judge)."
)


def _config(scenarios: str, agents: list[str]) -> dict[str, object]:
    return {
        "scenarios": scenarios,
        "agents": agents,
        "judging": {"model": JUDGE_MODEL},
        "model_server": {"tape": f"./{TAPE_NAME}", "trap_outside_traffic": True},
        "profiles": {"live": {"model_server": None}},
    }


def _render(data: dict[str, object], fmt: ConfigFormat) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    comment = "".join(f"# {line}\n" for line in _HEADER.splitlines())
    if fmt == "yaml":
        import yaml

        return comment + str(yaml.safe_dump(data, sort_keys=False))
    return comment + _toml(data)


def _toml(data: dict[str, object]) -> str:
    """The scaffold's config as TOML. TOML has no null, so the ``live`` profile cannot
    switch ``model_server`` off: the file says to delete that table instead."""
    top = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
    lines = [*top, "", "[judging]", f"model = {json.dumps(JUDGE_MODEL)}", ""]
    lines += [
        "# TOML has no null, so no profile can turn this off: delete this table (or use a",
        "# JSON or YAML config, whose `live` profile does) to run against the real APIs.",
        "[model_server]",
        f'tape = "./{TAPE_NAME}"',
        "trap_outside_traffic = true",
    ]
    return "\n".join(lines) + "\n"


def init_project(
    folder: str | Path,
    *,
    agents: list[str] | None = None,
    scenarios: str = "./scenarios",
    fmt: ConfigFormat = "json",
    force: bool = False,
) -> list[Path]:
    """Write ``axis.config.<fmt>``, ``<scenarios>/hello-world.json`` and ``tape.yaml`` (the
    scripted model, for the agent and the judge) into ``folder``.

    Raises:
        UsageError: a file exists and ``force`` is not set, or an agent name is unknown.
    """
    from axis_eval.adapters.builtins import BUILTINS

    names = [a.strip().lower() for a in (agents or ["claude-code"]) if a.strip()]
    unknown = [a for a in names if a not in BUILTINS]
    if unknown:
        from axis_eval.config._problems import did_you_mean

        raise UsageError(
            f"unknown agent {unknown[0]!r}{did_you_mean(unknown[0], BUILTINS)}",
            hint=f"built-in agents: {', '.join(sorted(BUILTINS))}",
        )
    root = Path(folder)
    config_path = root / f"axis.config.{fmt}"
    scenario_path = root / scenarios / "hello-world.json"
    tape_path = root / TAPE_NAME
    existing = [p for p in (config_path, scenario_path, tape_path) if p.exists()]
    if existing and not force:
        raise UsageError(f"{existing[0]} already exists", hint="pass --force to overwrite")
    atomic_write_text(config_path, _render(_config(scenarios, names), fmt))
    atomic_write_text(scenario_path, json.dumps(SAMPLE_SCENARIO, indent=2) + "\n")
    atomic_write_text(tape_path, SAMPLE_TAPE)
    return [config_path, scenario_path, tape_path]
