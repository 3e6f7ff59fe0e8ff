"""Exit codes of `axis run`, a Python-file adapter, and the quickstart example."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import (
    AGENT,
    REPO,
    base_environ,
    cli_env,
    ndjson_adapter,
    only_report,
    run_api,
    run_cli,
    runs_by_scenario,
    scenario,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess

MY_ADAPTER = f'''
"""A custom adapter in a Python file: aggregate mode, the prompt on stdin."""

from axis_eval.adapters import AdapterResult, AggregateMode, create_agent_adapter


def on_chunk(chunk, ctx):
    ctx.state.append(chunk)


def on_end(ctx):
    ctx.transcript.assistant("".join(ctx.state).strip())


def get_result(ctx):
    text = "".join(ctx.state).strip()
    return AdapterResult(result=text.upper() if text else None)


adapter = create_agent_adapter(
    name="whatever-the-config-calls-it",
    resolve_command=lambda inp: [{sys.executable!r}, {str(AGENT)!r}, "text"],
    build_args=lambda inp: [],
    prompt_via="stdin",
    initial_state=list,
    stream=AggregateMode(on_chunk=on_chunk, on_end=on_end),
    get_result=get_result,
)
'''


def test_all_completed_exits_0(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={"a": scenario(), "b": scenario()},
    )
    # Unjudged: with judging on, a pair completes only when a run scored (issue 7).
    done = run_cli(root, "--no-score", env=cli_env())
    assert done.exit_code == 0, done.stderr
    manifest = read_json(only_report(root) / "report.json")
    assert manifest["exitCode"] == 0
    assert manifest["summary"]["completed"] == 2
    assert "Report saved:" in done.stderr
    # The end of every run writes the HTML page beside report.json and names it.
    page = only_report(root) / "report.html"
    assert f"HTML report:  {page}" in done.stderr and page.is_file()


def test_a_failed_pair_exits_1(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick"), "broken": ndjson_adapter("fail")},
        agents=["quick", "broken"],
        scenarios={"ok": scenario(agents=["quick"]), "bad": scenario(agents=["broken"])},
    )
    done = run_cli(root, "--json", "--no-score", env=cli_env())
    assert done.exit_code == 1, done.stderr
    manifest = read_json(only_report(root) / "report.json")
    summary = manifest["summary"]
    assert (summary["total"], summary["completed"], summary["failed"]) == (2, 1, 1)
    bad = runs_by_scenario(manifest)["bad"]
    assert bad["status"] == "failed"
    assert bad["errorKind"] == "agent"
    assert "agent blew up on purpose" in bad["error"]
    assert bad["exitCode"] == 3
    # --json prints the same manifest on stdout.
    assert '"exitCode": 1' in done.stdout
    # The progress lines on stderr (not a TTY) agree with the report.
    lines = done.stderr.splitlines()
    assert any("✓ ok" in line and "completed" in line for line in lines), done.stderr
    assert any("✗ bad" in line and "failed" in line for line in lines), done.stderr


def test_a_python_file_adapter_runs_end_to_end(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"mine": "./my_adapter.py"},
        scenarios={"hello": scenario(prompt="hi there")},
    )
    (root / "my_adapter.py").write_text(MY_ADAPTER)
    done = run_cli(root, "--no-score", env=cli_env())
    assert done.exit_code == 0, done.stderr
    report = only_report(root)
    run = runs_by_scenario(read_json(report / "report.json"))["hello"]
    assert run["status"] == "completed"
    assert run["result"] == "TEXT ANSWER: HI THERE"
    transcript = read_json(report / run["dir"] / "transcript.json")
    assert transcript["agent"] == "mine"
    assert any(e.get("text") == "text answer: hi there" for e in transcript["entries"])
    assert (report / run["dir"] / "raw.txt").read_text() == "text answer: hi there\n"


def test_a_python_adapter_with_a_missing_attribute_fails_preflight(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"mine": "./my_adapter.py:nope"},
        scenarios={"hello": scenario()},
    )
    (root / "my_adapter.py").write_text(MY_ADAPTER)
    done = run_cli(root, env=cli_env())
    assert done.exit_code == 2, done.stderr
    assert "'mine'" in done.stderr and "'nope'" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / ".axis").exists()


def _copy_quickstart(tmp_path: Path) -> Path:
    root = tmp_path / "quickstart"
    shutil.copytree(REPO / "examples" / "quickstart", root, ignore=shutil.ignore_patterns(".axis"))
    return root


def test_the_quickstart_example_toy_agent(tmp_path: Path) -> None:
    root = _copy_quickstart(tmp_path)
    done = run_cli(root, "-a", "toy", env=cli_env())
    assert done.exit_code == 0, done.stderr
    assert "Discovered 3 scenarios across 1 agent" in done.stderr
    report = only_report(root)
    manifest = read_json(report / "report.json")
    assert manifest["state"] == "finished" and manifest["exitCode"] == 0
    assert manifest["summary"]["completed"] == 3
    runs = runs_by_scenario(manifest)
    assert set(runs) == {"hello-world", "files/append-line@short", "files/append-line@long"}
    for key, run in runs.items():
        assert run["status"] == "completed", (key, run)
        folder = report / run["dir"]
        for name in ("result.json", "transcript.json", "raw.ndjson"):
            assert (folder / name).is_file(), (key, name)
        assert read_json(folder / "transcript.json")["entries"]
    hello = runs["hello-world"]
    assert {a["path"]: a["content"] for a in hello["artifacts"]} == {"hello.txt": "Hello, World!\n"}
    assert hello["teardownOutput"] == "hello.txt: 14 bytes"
    assert (report / hello["dir"] / "artifacts" / "hello.txt").read_text() == "Hello, World!\n"
    short = runs["files/append-line@short"]
    assert short["setupOutput"].startswith("staged greeting.txt")
    greeting = next(a for a in short["artifacts"] if a["path"] == "greeting.txt")
    assert greeting["content"].endswith("Nice to meet you.\n")
    # The example folder itself stays clean: the report went to the copy.
    assert not (tmp_path / ".axis").exists()


def test_the_demo_real_clis_against_the_scripted_model(tmp_path: Path) -> None:
    """`make demo`: the real Claude Code and Codex CLIs, offline, answering from the tape."""
    import os

    import pytest

    from axis_eval.adapters.install import install_command, installed_binary

    missing = [n for n in ("claude-code", "codex") if installed_binary(n) is None]
    if missing:
        reason = f"agent CLIs not installed: {missing}; run `{install_command(missing)}`"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    root = _copy_quickstart(tmp_path)
    done = run_cli(root, env=cli_env(), timeout=180)
    assert done.exit_code == 0, done.stderr
    manifest = read_json(only_report(root) / "report.json")
    assert manifest["summary"]["completed"] == 9
    assert manifest["modelServer"]["connectAttempts"] == []  # nothing left the machine
    assert manifest["modelServer"]["unmatchedRequests"] == 0
    for pair in manifest["results"]:
        run = pair["runs"][0]
        assert run["status"] == "completed", pair
        if pair["agent"] != "toy":
            assert run["agentVersion"], pair  # the exact CLI version is recorded
        # Judged by the API judge (official SDK) against the same scripted server's tape:
        # checks 10 and 9 with equal weights → goal 95.
        score = run["score"]
        assert score["withheld"] is False and score["goalAchievement"] == 95, pair
        assert score["judge"]["kind"] == "api" and score["judge"]["calls"] >= 1, pair
        if pair["scenarioKey"] == "hello-world":
            assert [a["content"] for a in run["artifacts"]] == ["Hello, World!\n"], pair


async def test_api_run_leaves_the_caller_as_it_found_it(tmp_path: Path) -> None:
    """run_async makes the process a subreaper only for the run's duration."""
    from axis_eval.execute.process import is_subreaper

    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        agents=["quick"],
        scenarios={"a": scenario()},
    )
    assert not is_subreaper()
    outcome = await run_api(root, base_environ())
    assert outcome.exit_code == 0
    assert not is_subreaper()
