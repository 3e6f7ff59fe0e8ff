"""Test agent speaking the made-up ``my-cli --json`` format of the example in docs/adapters.md."""

import json
import sys


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


prompt = sys.stdin.read()
emit(kind="message", text=f"Reading {prompt!r} with {sys.argv[1:]}")
emit(kind="tool", id="1", tool="shell", args={"cmd": "ls"})
emit(kind="tool_done", id="1", output="a.txt", failed=False)
emit(kind="done", answer="a.txt", tokens={"in": 40, "out": 7})
