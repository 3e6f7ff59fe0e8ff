"""`python -m axis_model_server` and `axis model-server`: serve, hints, Ctrl-C, bad tapes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ._client import request

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
EXAMPLE = ROOT / "examples" / "tapes" / "hello.yaml"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize("module", ["axis_model_server", "axis_eval"])
def test_serves_until_ctrl_c(module: str, tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "log.jsonl"
    args = ["--tape", str(EXAMPLE), "--port", str(port), "--log", str(log)]
    if module == "axis_eval":
        args = ["model-server", *args]
    out_path, err_path = tmp_path / "out.txt", tmp_path / "err.txt"
    with out_path.open("w") as out_file, err_path.open("w") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args], stdout=out_file, stderr=err_file, env=_env()
        )
    try:
        deadline = time.monotonic() + 20
        while "Serving until Ctrl-C" not in out_path.read_text():
            assert proc.poll() is None, err_path.read_text()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        url = re.search(r"http://127\.0\.0\.1:(\d+)", out_path.read_text())
        assert url is not None
        assert int(url.group(1)) == port
        assert request(url.group(0), "GET", "/v1/models").status == 200
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text, err = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 0, err
    for hint in (
        f"ANTHROPIC_BASE_URL=http://127.0.0.1:{port}",
        f"OPENAI_BASE_URL=http://127.0.0.1:{port}/v1",
        f"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:{port}",
        'wire_api = "responses"',
        f"HTTPS_PROXY=http://127.0.0.1:{port}",
    ):
        assert hint in text
    assert "GET /v1/models 200" in err
    assert "Stopped." in err and "Traceback" not in err
    assert '"kind": "request"' in log.read_text()


BAD_TAPE = (
    "version: 1\nconversations:\n  - name: x\n    turns:\n      - tool_calls: [{tool: shell}]\n"
)


def test_bad_tape_exits_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_TAPE)
    for argv in (
        [sys.executable, "-m", "axis_model_server", "--tape", str(bad)],
        [sys.executable, "-m", "axis_eval", "model-server", "--tape", str(bad)],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=30)
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        assert f"error: invalid tape {bad}" in done.stderr
        assert "conversations[0].turns[0].tool_calls[0]" in done.stderr


def test_axis_command_in_process(axis: Callable[..., object], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD_TAPE)
    result = axis("model-server", "--tape", str(bad))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "args.command" in result.stderr  # type: ignore[attr-defined]
    missing = axis("model-server", "--tape", str(tmp_path / "missing.yaml"))
    assert missing.exit_code == 2  # type: ignore[attr-defined]
    assert "cannot read the file" in missing.stderr  # type: ignore[attr-defined]
