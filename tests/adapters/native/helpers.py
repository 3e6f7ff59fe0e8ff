"""Helpers of the tests in this folder (its fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from axis_eval.adapters import install
from helpers.system_parts import not_run

REPO = Path(__file__).resolve().parents[3]


HERE = Path(__file__).resolve().parent


MCP_ECHO = HERE / "mcp_echo_server.py"


FAKE_KEY = "sk-axis-test-not-a-real-key"


TRAP_VARS = ["HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY"]


"""Passed to the agent through the config's ``env``: the server doubles as a proxy trap."""


CODEX_MODEL = "gpt-5"


"""A model in the price table, so the estimated cost is checked (Codex warns it has no
metadata for it, and carries on). The default model's "code mode" tools are covered by
the scripted server's own replay tests."""


def unavailable(reason: str) -> NoReturn:
    """Skip loudly, or fail under CI=true."""
    not_run("REAL-AGENT TEST", reason)


_INSTALL_FAILED: dict[str, str] = {}


def ensure_cli(name: str) -> Path:
    """The cached CLI of ``name``, installing its pinned version when missing."""
    found = install.installed_binary(name)
    if found is not None:
        return found
    if name in _INSTALL_FAILED:
        unavailable(_INSTALL_FAILED[name])
    try:
        return install.install([name], log=lambda line: print(line, file=sys.stderr))[name]
    except Exception as exc:  # no npm, no network, registry down ...
        pkg = install.PINS[name].spec
        _INSTALL_FAILED[name] = f"cannot install {pkg} for {name!r}: {exc}"
        unavailable(_INSTALL_FAILED[name])
        raise


def shell_tape(command: str, final: str, *, match: str = "Create out.txt") -> dict[str, Any]:
    """A tape: run ``command`` through the agent's shell tool, then answer ``final``."""
    return tool_tape("shell", {"command": command}, final, match=match)


def tool_tape(tool: str, args: dict[str, Any], final: str, *, match: str) -> dict[str, Any]:
    """A tape: call ``tool`` (an exact or suffix name) with ``args``, then answer."""
    return {
        "version": 1,
        "conversations": [
            {
                "name": "tool-then-answer",
                "match": match,
                "turns": [
                    {"text": "I'll run it.", "tool_calls": [{"tool": tool, "args": args}]},
                    {"text": final},
                ],
            }
        ],
    }


def write_project(
    root: Path,
    agent: Mapping[str, Any],
    prompt: str,
    *,
    scenario: Mapping[str, Any] | None = None,
    **config: Any,
) -> Path:
    """``axis.config.json`` with one agent and ``scenarios/task.json``; returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    body = {"name": "native-agents", "scenarios": "./scenarios", "agents": [dict(agent)]}
    body.update(config)
    (root / "axis.config.json").write_text(json.dumps(body, indent=2))
    (root / "scenarios").mkdir(exist_ok=True)
    task = {"name": "task", "prompt": prompt, "judge": "it worked", **(scenario or {})}
    (root / "scenarios" / "task.json").write_text(json.dumps(task, indent=2))
    return root


def parent_env(tmp: Path, proxy: str | None = None, **extra: str) -> dict[str, str]:
    """A small parent environment: PATH, a HOME of its own, fake API keys, the proxy trap."""
    home = tmp / "parent-home"
    home.mkdir(exist_ok=True)
    env = {k: os.environ[k] for k in ("PATH", "LANG", "USER", "SHELL") if k in os.environ}
    env.update(
        HOME=str(home),
        ANTHROPIC_API_KEY=FAKE_KEY,
        CODEX_API_KEY=FAKE_KEY,
        GEMINI_API_KEY=FAKE_KEY,
    )
    if proxy:
        env.update(HTTPS_PROXY=proxy, HTTP_PROXY=proxy, NO_PROXY="127.0.0.1,localhost")
    env.update(extra)
    return env


@dataclass
class RunView:
    """One finished ``axis run`` of a single job, read back from the report on disk."""

    exit_code: int
    report_dir: Path
    manifest: dict[str, Any]
    run: dict[str, Any]
    """``result.json``'s ``run`` entry."""
    transcript: dict[str, Any]
    raw: list[Any]
    """``raw.ndjson`` parsed (empty when the agent printed none)."""

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [e["tool"] for e in self.transcript["entries"] if e["type"] == "tool"]

    def texts(self, kind: str) -> list[str]:
        return [e["text"] for e in self.transcript["entries"] if e["type"] == kind]


def axis_run(root: Path, environ: Mapping[str, str]) -> RunView:
    """``axis run`` through the Python API (no signal handlers, no scoring)."""
    from axis_eval import RunOptions, load_config, run_async

    options = RunOptions(
        loaded=load_config(str(root)),
        environ=dict(environ),
        handle_signals=False,
        score=False,
        grace_s=1.0,
    )
    outcome = asyncio.run(run_async(options))
    return read_report(outcome.report_dir, outcome.exit_code)


def read_report(report_dir: Path, exit_code: int) -> RunView:
    manifest = json.loads((report_dir / "report.json").read_text())
    results = list(report_dir.rglob("result.json"))
    assert len(results) == 1, results
    run = json.loads(results[0].read_text())["run"]
    folder = results[0].parent
    transcript = json.loads((folder / "transcript.json").read_text())
    raw_file = folder / "raw.ndjson"
    raw = (
        [json.loads(line) for line in raw_file.read_text().splitlines()]
        if raw_file.exists()
        else []
    )
    return RunView(exit_code, report_dir, manifest, run, transcript, raw)


def closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
