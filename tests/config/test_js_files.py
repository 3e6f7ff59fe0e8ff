"""``.js`` configs and scenarios run in Node: bounded in time and output, and Node (with
everything it started) is killed whenever axis stops waiting for it: done, timed out,
Ctrl-C (in plain code and under asyncio), SIGTERM.

Every test here runs a real Node; where Node is missing they are skipped loudly, and under
``CI=true`` they fail (``helpers/system_parts.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from axis_eval.config import files as config_files
from axis_eval.config.discover import discover
from axis_eval.config.load import load_config
from axis_eval.errors import EXIT_SIGINT, EXIT_SIGTERM, EXIT_USAGE, ConfigError
from helpers.system_parts import not_run

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(autouse=True)
def node() -> str:
    found = shutil.which("node")
    if found is None:
        not_run("NODE TEST", "node is not on PATH")
    return found


def spinner(pids: Path, export: str = '{ agents: ["codex"] }') -> str:
    """A ``.js`` file that starts a ``sleep``, writes both pids to ``pids``, then spins."""
    return (
        'const { spawn } = require("node:child_process");\n'
        'const kid = spawn("sleep", ["300"], { stdio: "ignore" });\n'
        f'require("node:fs").writeFileSync({json.dumps(str(pids))}, '
        'process.pid + " " + kid.pid);\n'
        "while (true) {}\n"
        f"module.exports = {export};\n"
    )


def wait_for_pids(path: Path, timeout_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if len(text.split()) == 2:
            return [int(p) for p in text.split()]
        time.sleep(0.02)
    raise AssertionError("Node never started the spinner")


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def assert_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 5
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    left = [p for p in pids if alive(p)]
    for pid in left:  # do not leave them spinning on the shared machine
        os.kill(pid, signal.SIGKILL)
    assert not left, f"Node (or its child) outlived the load: {left}"


@contextmanager
def signal_when_spinning(pids: Path, signum: int) -> Iterator[None]:
    """Send ``signum`` to this process once Node is spinning (from a helper thread)."""

    def send() -> None:
        wait_for_pids(pids)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(timeout=30)


def test_node_past_its_timeout_is_killed_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_files, "NODE_TIMEOUT_S", 1.0)
    pids = tmp_path / "pids"
    (tmp_path / "axis.config.js").write_text(spinner(pids))
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert info.value.message == (
        f"evaluating config file {tmp_path / 'axis.config.js'} with Node took longer than 1s"
    )
    assert info.value.exit_code == EXIT_USAGE
    assert_gone(wait_for_pids(pids))


def test_ctrl_c_kills_node_and_propagates(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    (tmp_path / "axis.config.js").write_text(spinner(pids))
    started = time.monotonic()
    with signal_when_spinning(pids, signal.SIGINT), pytest.raises(KeyboardInterrupt):
        load_config(str(tmp_path))
    assert time.monotonic() - started < 20, "the wait ended at Node's timeout, not at Ctrl-C"
    assert_gone(wait_for_pids(pids))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "handler put back"


def test_ctrl_c_under_asyncio_kills_node_and_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncio's own SIGINT handler only cancels the task, which a blocking wait never
    sees: without the loader's handler, Node spins to its timeout and the run goes on."""
    monkeypatch.setattr(config_files, "NODE_TIMEOUT_S", 8.0)
    pids = tmp_path / "pids"
    (tmp_path / "axis.config.js").write_text(spinner(pids))

    async def load() -> None:
        load_config(str(tmp_path))

    started = time.monotonic()
    with signal_when_spinning(pids, signal.SIGINT), pytest.raises(KeyboardInterrupt):
        asyncio.run(load())
    assert time.monotonic() - started < 8, "the wait ended at Node's timeout, not at Ctrl-C"
    assert_gone(wait_for_pids(pids))


def test_a_spinning_js_scenario_is_a_load_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_files, "NODE_TIMEOUT_S", 1.0)
    (tmp_path / "axis.config.json").write_text('{"agents": ["codex"]}')
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "good.json").write_text('{"name": "g", "prompt": "p", "judge": "j"}')
    pids = tmp_path / "pids"
    (tmp_path / "scenarios" / "spin.js").write_text(spinner(pids))
    loaded = load_config(str(tmp_path))
    found = discover(loaded.config, loaded.config_dir)
    assert [s.key for s in found.scenarios] == ["good"]
    [failure] = found.load_failures
    assert failure.path == "scenarios/spin.js" and "took longer than 1s" in failure.error
    assert_gone(wait_for_pids(pids))


def test_an_export_past_the_output_cap_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "axis.config.js").write_text(
        'module.exports = { agents: ["codex"], name: "x".repeat(5 * 1024 * 1024) };\n'
    )
    with pytest.raises(ConfigError, match=r"default export is larger than 4 MiB as JSON"):
        load_config(str(tmp_path))


def test_a_js_file_that_is_a_fifo_is_never_given_to_node(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "axis.config.js")
    with pytest.raises(ConfigError, match=r"is a FIFO \(named pipe\), not a regular file"):
        load_config(str(tmp_path))


# -- the command line, in a child process: real signals, real exit codes ----------------


def start_axis(cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "axis_eval", "run", "--dry-run"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGTERM, EXIT_SIGTERM, "error: interrupted by SIGTERM"),
        (signal.SIGINT, EXIT_SIGINT, "interrupted by SIGINT"),
    ],
)
def test_axis_stopped_while_node_evaluates_kills_node_and_exits_by_the_signal(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    pids = tmp_path / "pids"
    (tmp_path / "axis.config.js").write_text(spinner(pids))
    proc = start_axis(tmp_path)
    try:
        node_pids = wait_for_pids(pids)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert_gone(node_pids)
    assert proc.returncode == code, err
    assert said in err
    assert "Traceback" not in out + err


@pytest.mark.parametrize("detached", [False, True])
def test_a_child_left_holding_nodes_output_does_not_hold_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, detached: bool
) -> None:
    """Node exits, but a child it started keeps its stdout open: the load ends with Node.
    A child in Node's group is killed with it; one that left the group (``detached``, a
    new session) is out of reach, and only stops holding the load up."""
    monkeypatch.setattr(config_files, "NODE_TIMEOUT_S", 15.0)
    pids = tmp_path / "pids"
    (tmp_path / "axis.config.js").write_text(
        'const kid = require("node:child_process").spawn("sleep", ["60"], '
        f'{{ stdio: "inherit", detached: {json.dumps(detached)} }});\n'
        "kid.unref();\n"
        f'require("node:fs").writeFileSync({json.dumps(str(pids))}, process.pid + " " + kid.pid);\n'
        'module.exports = { agents: ["codex"], name: "n" };\n'
    )
    started = time.monotonic()
    assert load_config(str(tmp_path)).config.name == "n"
    assert time.monotonic() - started < 10, "the load waited for the child's end of the pipe"
    node_pid, kid = wait_for_pids(pids)
    if detached:
        os.kill(kid, signal.SIGKILL)  # the test's own cleanup
    else:
        assert_gone([node_pid, kid])
