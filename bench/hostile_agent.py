"""A hostile agent for bench/hostile_agents.py: argv[1] picks what it does to the harness.

It speaks axis-eval's normalized NDJSON events (docs/events.md) on stdout, except ``text``
(free text) and ``stderr``. Nothing it does is destructive: the fork storm is bounded (its
processes exit within a moment), and everything else only prints.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODES = (
    "quiet",
    "flood",
    "flood-big",
    "deltas",
    "text",
    "line",
    "garbage",
    "stderr",
    "tools",
    "deep",
    "forks",
)


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")


def forever(data: str, stream: object = sys.stdout) -> None:
    write = stream.write  # type: ignore[attr-defined]
    while True:
        write(data)


def fork_storm(total: int = 2000, batch: int = 50) -> None:
    """``total`` double forks: each child forks a grandchild and exits at once, so the
    grandchild (an orphan, sleeping up to 20 ms) is the harness's to reap."""
    for start in range(0, total, batch):
        children = []
        for _ in range(min(batch, total - start)):
            pid = os.fork()
            if pid == 0:
                if os.fork() == 0:
                    time.sleep((os.getpid() % 20) / 1000)
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.waitpid(pid, 0)


def main(mode: str) -> None:
    if mode == "quiet":  # the floor: one answer, the harness's own baseline
        emit(type="result", text="done")
    elif mode == "flood":  # endless valid events, 1 KB each: everything is transcript
        forever((json.dumps({"type": "assistant", "text": "x" * 1000}) + "\n") * 64)
    elif mode == "flood-big":  # endless valid events, 1 MiB each
        forever(json.dumps({"type": "assistant", "text": "y" * (1 << 20)}) + "\n")
    elif mode == "deltas":  # one assistant message streamed forever, never flushed
        forever((json.dumps({"type": "assistant_delta", "text": "z" * 1000}) + "\n") * 64)
    elif mode == "text":  # endless free text (the text adapter: stdout is the answer)
        forever("lorem ipsum dolor sit amet " * 2400)
    elif mode == "line":  # one endless line, never a newline
        forever("w" * 65536)
    elif mode == "garbage":  # endless lines that are not JSON
        forever("not json at all, just noise\n" * 2000)
    elif mode == "stderr":  # endless stderr, nothing on stdout
        forever("warning: something on stderr\n" * 2000, sys.stderr)
    elif mode == "tools":  # 100k tool calls (10 MB printed), then an answer
        for i in range(100_000):
            emit(type="tool_call", id=f"t{i}", name="Bash", input={"command": f"echo {i}"})
            emit(type="tool_result", id=f"t{i}", output=str(i))
        emit(type="result", text="done")
    elif mode == "deep":  # one line of JSON nested 1,100 deep, then an answer
        sys.stdout.write("[" * 1100 + "]" * 1100 + "\n")
        emit(type="assistant", text="after the deep line")
        emit(type="result", text="done")
    elif mode == "forks":
        fork_storm()
        emit(type="result", text="done")
    else:
        raise SystemExit(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    sys.stdout.flush()


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else "quiet")
    except BrokenPipeError:  # the harness stopped reading: it stopped us
        os._exit(0)
