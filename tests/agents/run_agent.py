"""A scriptable test agent for the end-to-end run tests (tests/pipeline).

Usage: ``run_agent.py MODE[:PARAM] [PROMPT]``. Without PROMPT on the command line the
prompt is read from stdin. Output is axis-eval's normalized NDJSON events (docs/events.md),
except in ``text`` mode. Files the tests look at go to ``$E2E_DIR`` (the config passes
the variable through with ``env: [E2E_DIR]``), named after ``$AXIS_SCENARIO``.

Modes:
  echo            a tool call, a line that is not JSON, usage, and ``result echo:<prompt>``
  text            plain text (two chunks): ``text answer: <prompt>``
  overlap[:S]     appends ``start <t>`` / ``end <t>`` to $E2E_DIR/overlap.log around a sleep
  slow[:S]        says something, sleeps S seconds, answers
  tree            leaves a grandchild and a setsid child, writes their pids, sleeps forever
  sleep           writes its pid and a setsid child's pid, sleeps forever
  stubborn        like ``sleep`` but both ignore SIGTERM
  env             dumps its environment (and cwd) to $E2E_DIR/env-<scenario>.json and env.json
  artifacts       writes files for artifact collection; says whether AXIS_OUTPUT is set
  tokens[:STEP]   cumulative ``usage`` events growing by STEP every 50 ms, forever
  chatter[:N]     assistant text of N characters every 50 ms, forever (token estimate)
  quick           answers at once
  fail            no stdout, a line on stderr, exit code 3
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def emit(**event: object) -> None:
    print(json.dumps(event), flush=True)


def out_dir() -> Path:
    return Path(os.environ["E2E_DIR"])


def tag() -> str:
    return os.environ.get("AXIS_SCENARIO", "none").replace("/", "_").replace("@", "_")


def write_json(path: Path, data: object) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def sleep_forever() -> None:
    while True:
        time.sleep(60)


def fork_sleeper(*, new_session: bool = False) -> int:
    pid = os.fork()
    if pid == 0:
        if new_session:
            os.setsid()
        sleep_forever()
    return pid


def mode_tree() -> None:
    emit(type="assistant", text="before-timeout-1")
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child starts a grandchild, reports it, then sleeps
        os.close(read_end)
        grandchild = fork_sleeper()
        os.write(write_end, str(grandchild).encode())
        os.close(write_end)
        sleep_forever()
    os.close(write_end)
    grandchild = int(os.read(read_end, 64))
    setsid_child = fork_sleeper(new_session=True)
    pids = {"pid": os.getpid(), "child": child, "grandchild": grandchild, "setsid": setsid_child}
    write_json(out_dir() / f"pids-{tag()}.json", pids)
    emit(type="assistant", text="before-timeout-2")
    sleep_forever()


def mode_sleep(stubborn: bool) -> None:
    if stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child
    emit(type="assistant", text="started, now sleeping")
    setsid_child = fork_sleeper(new_session=True)
    write_json(out_dir() / f"pids-{tag()}.json", {"pid": os.getpid(), "setsid": setsid_child})
    sleep_forever()


def mode_env() -> None:
    data = {"env": dict(os.environ), "cwd": os.getcwd()}
    write_json(out_dir() / f"env-{tag()}.json", data)
    Path("env.json").write_text(json.dumps(data))
    emit(type="result", text="env dumped")


def mode_artifacts() -> None:
    Path("notes.txt").write_text("small text artifact\n")
    Path("skip.log").write_text("not collected\n")
    Path("out/nested").mkdir(parents=True)
    Path("out/data.json").write_text('{"answer": 42}\n')
    Path("out/nested/deep.txt").write_text("deep\n")
    Path("big.txt").write_text("x" * 100_000 + "\n")
    notes_visible = any(
        (Path.cwd().parent / name).exists() for name in ("setup-notes.md", "teardown-notes.md")
    )
    seen = "set" if "AXIS_OUTPUT" in os.environ else "unset"
    emit(type="result", text=f"AXIS_OUTPUT={seen} notes_visible={notes_visible}")


def mode_echo(prompt: str) -> None:
    emit(type="session", id="e2e-session")
    emit(type="tool_call", id="t1", name="Bash", input={"command": "pwd"})
    emit(type="tool_result", id="t1", output=os.getcwd() + "\n")
    print("this line is not JSON", flush=True)
    emit(type="assistant", text=f"prompt was: {prompt}")
    emit(type="usage", input_tokens=11, output_tokens=7)
    emit(type="result", text=f"echo:{prompt}")


def main() -> int:
    mode, _, param = sys.argv[1].partition(":")
    prompt = sys.argv[2] if len(sys.argv) > 2 else sys.stdin.read()
    if mode == "echo":
        mode_echo(prompt)
    elif mode == "text":
        sys.stdout.write("text answer: ")
        sys.stdout.flush()
        time.sleep(0.05)
        sys.stdout.write(f"{prompt}\n")
    elif mode in ("overlap", "slow"):
        seconds = float(param or "0.8")
        if mode == "overlap":
            with open(out_dir() / "overlap.log", "a") as handle:
                handle.write(f"start {time.time():.6f} {tag()}\n")
        emit(type="assistant", text=f"working for {seconds}s")
        time.sleep(seconds)
        if mode == "overlap":
            with open(out_dir() / "overlap.log", "a") as handle:
                handle.write(f"end {time.time():.6f} {tag()}\n")
        emit(type="result", text="done")
    elif mode == "tree":
        mode_tree()
    elif mode in ("sleep", "stubborn"):
        mode_sleep(mode == "stubborn")
    elif mode == "env":
        mode_env()
    elif mode == "artifacts":
        mode_artifacts()
    elif mode == "tokens":
        step, total = int(param or "100"), 0
        emit(type="assistant", text="spending tokens")
        while True:
            total += step
            emit(type="usage", input_tokens=total, output_tokens=0)
            time.sleep(0.05)
    elif mode == "chatter":
        size = int(param or "500")
        while True:
            emit(type="assistant", text="y" * size)
            time.sleep(0.05)
    elif mode == "quick":
        emit(type="result", text="quick answer")
    elif mode == "fail":
        sys.stderr.write("agent blew up on purpose\n")
        return 3
    else:
        sys.stderr.write(f"unknown mode {mode!r}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
