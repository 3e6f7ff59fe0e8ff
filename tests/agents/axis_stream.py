"""Test agent for the JavaScript/TypeScript adapter tests: prints a known stream.

``lines PROMPT``: NDJSON events of its own (and one line that is not JSON);
``text`` (prompt on stdin): plain text in a few writes, with ``TOOL:``/``ANSWER:`` lines.
"""

import json
import os
import sys
import time


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


mode = sys.argv[1] if len(sys.argv) > 1 else "lines"
if mode == "lines":
    prompt = sys.argv[2] if len(sys.argv) > 2 else ""
    emit(kind="say", text=f"Working on: {prompt}")
    sys.stdout.write("progress 50% (not JSON)\n")
    emit(kind="tool", id="t1", name="Bash", input={"command": "ls"})
    emit(kind="tool_done", id="t1", output="a.txt\nb.txt", failed=False)
    emit(kind="tool", id="t2", name="Read", input={"path": "missing.txt"})
    emit(kind="tool_done", id="t2", output="no such file", failed=True)
    emit(kind="say", text="There are two files.")
    emit(kind="done", answer="a.txt, b.txt", tokens={"in": 120, "out": 30})
elif mode == "text":
    prompt = sys.stdin.read()
    for part in (
        f"Thinking about {prompt.strip()} ({os.environ.get('AXIS_STREAM_MARK', 'no mark')})\n",
        "TOOL: grep -r foo\n",
        "ANSWER: 42\n",
    ):
        sys.stdout.write(part)
        sys.stdout.flush()
        time.sleep(0.02)
    sys.stderr.write("a note on stderr\n")
else:
    sys.exit(f"unknown mode {mode}")
