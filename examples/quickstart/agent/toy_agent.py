#!/usr/bin/env python3
"""A tiny scripted coding agent for the quickstart: no model, no network.

It reads the task on stdin and works through it with real shell commands, printing
axis-eval's normalized NDJSON events (docs/events.md) so the harness records a real
transcript with tool calls. It understands two kinds of task:

- "Create a file named NAME containing exactly: TEXT"
- "Append the line TEXT to the file NAME"
"""

from __future__ import annotations

import json
import re
import subprocess
import sys


def emit(event: dict[str, object]) -> None:
    print(json.dumps(event), flush=True)


def shell(command: str, call: int) -> str:
    emit({"type": "tool_call", "id": f"t{call}", "name": "bash", "input": {"command": command}})
    done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    emit({"type": "tool_result", "id": f"t{call}", "output": output, "is_error": done.returncode != 0})
    return output


def main() -> int:
    task = sys.stdin.read().strip()
    words = len(task.split())
    emit({"type": "assistant", "text": f"Task received ({words} words). Working on it."})
    create = re.search(r"Create a file named (\S+) containing exactly: (.+)", task)
    append = re.search(r"Append the line (.+) to the file (\S+)", task)
    if create:
        name, text = create.group(1), create.group(2).strip()
        shell(f"printf '%s\\n' {json.dumps(text)} > {name}", 1)
        content = shell(f"cat {name}", 2)
        answer = f"Created {name} with: {content.strip()}"
    elif append:
        text, name = append.group(1).strip(), append.group(2)
        shell(f"ls -la", 1)
        shell(f"printf '%s\\n' {json.dumps(text)} >> {name}", 2)
        content = shell(f"cat {name}", 3)
        answer = f"{name} now reads: {content.strip()}"
    else:
        emit({"type": "error", "message": "I do not know how to do that task."})
        return 1
    emit({"type": "usage", "input_tokens": 40 * words, "output_tokens": 25, "cost_usd": 0.0})
    emit({"type": "result", "text": answer})
    return 0


if __name__ == "__main__":
    sys.exit(main())
