"""Test agent that prints too much; argv[1] picks how (NDJSON events unless noted).

flood: endless assistant events · line: one endless line · text: endless free text ·
stderr: endless stderr · deltas: one message streamed forever · tools N: N tool calls then
an answer · deep: a line nested 1,100 deep then an answer · long-line N: a line of N bytes
then an answer · text-of N: N bytes of free text then exit.
"""

import json
import os
import sys
import time


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")


def forever(data: str, stream: object = sys.stdout) -> None:
    """``data`` (64 KB) again and again, at about 16 MB/s: fast enough to pass any cap a
    test sets at once, slow enough that a harness without caps fills no machine."""
    write = stream.write  # type: ignore[attr-defined]
    while True:
        write(data)
        time.sleep(0.004)


def main() -> None:
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if mode == "flood":
        forever((json.dumps({"type": "assistant", "text": "x" * 1000}) + "\n") * 64)
    elif mode == "line":
        forever("w" * 65536)
    elif mode == "text":
        forever("free text " * 6554)
    elif mode == "stderr":
        forever("noise on stderr\n" * 4096, sys.stderr)
    elif mode == "deltas":
        forever((json.dumps({"type": "assistant_delta", "text": "d" * 1000}) + "\n") * 64)
    elif mode == "tools":
        for i in range(n):
            emit(type="tool_call", id=f"t{i}", name="Bash", input={"command": f"echo {i}"})
            emit(type="tool_result", id=f"t{i}", output=str(i))
        emit(type="result", text="done")
    elif mode == "deep":
        sys.stdout.write("[" * 1100 + "]" * 1100 + "\n")
        emit(type="assistant", text="after the deep line")
        emit(type="result", text="done")
    elif mode == "long-line":
        sys.stdout.write("L" * n + "\n")
        emit(type="result", text="done")
    elif mode == "text-of":
        sys.stdout.write("HEAD " + "m" * (n - 10) + " TAIL")
    sys.stdout.flush()


try:
    main()
except BrokenPipeError:  # stopped by the harness
    os._exit(0)
