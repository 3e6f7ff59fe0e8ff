"""Fixtures for the scripted model server tests: a tape and a running server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from axis_model_server import ScriptedModelServer, Tape, parse_tape

CMD = "echo hello > out.txt && cat out.txt"
PROMPT = "Create out.txt containing hello"

TAPE_YAML = f"""
version: 1
conversations:
  - name: hello
    match: "Create out.txt"
    turns:
      - text: "I'll create out.txt."
        tool_calls:
          - tool: shell
            args: {{command: "{CMD}"}}
      - text: "Created out.txt."
  - name: bugfix
    match: "/fix (the|a) bug/"
    turns:
      - tool_calls:
          - tool: read_file
            args: {{path: src/app.py}}
      - text: "Fixed the bug."
  - name: default
    turns:
      - text: "I only answer scripted prompts."
"""


@pytest.fixture
def tape() -> Tape:
    return parse_tape(yaml.safe_load(TAPE_YAML))


@pytest.fixture
def server(tape: Tape) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(tape) as running:
        yield running


def serve(data: str | dict[str, object]) -> ScriptedModelServer:
    """A started server for a tape given as YAML text or a mapping (use ``with``)."""
    loaded = yaml.safe_load(data) if isinstance(data, str) else data
    return ScriptedModelServer(parse_tape(loaded))
