"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import yaml

from axis_model_server import ScriptedModelServer, parse_tape

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


def serve(data: str | dict[str, object]) -> ScriptedModelServer:
    """A started server for a tape given as YAML text or a mapping (use ``with``)."""
    loaded = yaml.safe_load(data) if isinstance(data, str) else data
    return ScriptedModelServer(parse_tape(loaded))
