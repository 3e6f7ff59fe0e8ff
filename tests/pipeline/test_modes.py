"""Stream modes (lines, aggregate), prompt delivery (argv, stdin) and a NUL prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import (
    agent_command,
    base_environ,
    ndjson_adapter,
    only_report,
    run_api,
    scenario,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


async def test_lines_and_aggregate_argv_and_stdin_and_a_nul_prompt(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={
            "lines-argv": ndjson_adapter("echo"),
            "lines-stdin": ndjson_adapter("echo", stdin=True),
            "text-argv": {"command": agent_command("text"), "output": "text"},
            "text-stdin": {
                "command": agent_command("text"),
                "prompt_via": "stdin",
                "output": "text",
            },
        },
        scenarios={
            "hello": scenario(prompt="say hello"),
            "nul": scenario(prompt="before\u0000after"),
            "huge": scenario(prompt="h" * 140_000),
        },
    )
    outcome = await run_api(root, base_environ())
    report = outcome.report_dir
    assert report == only_report(root)
    manifest = read_json(report / "report.json")
    runs = {(p["scenarioKey"], p["agentName"]): p["runs"][0] for p in manifest["results"]}
    assert len(runs) == 12

    # Lines mode, prompt on argv: events become a transcript; a bad line stays raw.
    run = runs[("hello", "lines-argv")]
    assert run["status"] == "completed", run
    assert run["result"] == "echo:say hello"
    assert run["tokenUsage"]["input"] == 11
    folder = report / run["dir"]
    transcript = read_json(folder / "transcript.json")
    assert transcript["result"] == "echo:say hello"
    assert transcript["sessionId"] == "e2e-session"
    texts = [e.get("text") for e in transcript["entries"]]
    assert "prompt was: say hello" in texts
    tools = [e["tool"] for e in transcript["entries"] if e.get("tool")]
    assert [t["name"] for t in tools] == ["Bash"]
    assert tools[0]["output"].strip().endswith("/work")
    raw = (folder / "raw.txt").read_text()
    assert "this line is not JSON" in raw  # kept verbatim, not in the transcript
    assert not any("this line is not JSON" in (t or "") for t in texts)
    assert any("not JSON" in w for w in run["warnings"]), run["warnings"]  # and reported

    # Lines mode with the prompt on stdin.
    assert runs[("hello", "lines-stdin")]["result"] == "echo:say hello"
    # Aggregate mode (output: text), argv and stdin.
    assert runs[("hello", "text-argv")]["result"] == "text answer: say hello"
    assert runs[("hello", "text-stdin")]["result"] == "text answer: say hello"
    text_transcript = read_json(report / runs[("hello", "text-argv")]["dir"] / "transcript.json")
    assert any(e.get("text") == "text answer: say hello" for e in text_transcript["entries"])

    # A NUL byte cannot travel on a command line: those jobs fail before spawning, with a
    # clear message that suggests stdin; the same prompt on stdin works.
    for agent in ("lines-argv", "text-argv"):
        run = runs[("nul", agent)]
        assert run["status"] == "failed", run
        assert run["errorKind"] == "spawn"
        assert "NUL" in run["error"] and "stdin" in run["error"], run["error"]
    assert runs[("nul", "lines-stdin")]["status"] == "completed"
    assert runs[("nul", "lines-stdin")]["result"] == "echo:before\u0000after"
    assert runs[("nul", "text-stdin")]["status"] == "completed"

    # Same for a prompt longer than one command-line argument may be.
    for agent in ("lines-argv", "text-argv"):
        run = runs[("huge", agent)]
        assert run["status"] == "failed", run
        assert run["errorKind"] == "spawn"
        assert "140000 bytes" in run["error"] and "stdin" in run["error"], run["error"]
    assert runs[("huge", "lines-stdin")]["result"] == "echo:" + "h" * 140_000
    assert runs[("huge", "text-stdin")]["status"] == "completed"

    summary = manifest["summary"]
    assert (summary["total"], summary["completed"], summary["failed"]) == (12, 8, 4)
    assert manifest["state"] == "finished"
    assert outcome.exit_code == 1 == manifest["exitCode"]
