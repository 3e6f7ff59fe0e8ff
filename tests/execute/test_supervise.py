"""The supervisor (run_agent) against real scripted agents: streams, prompts, limits, failures."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from axis_eval._types import ErrorKind, TokenUsage
from axis_eval.adapters.base import (
    AdapterInput,
    AdapterResult,
    AgentAdapter,
    AggregateMode,
    LinesMode,
    ResultContext,
    StreamContext,
    create_agent_adapter,
)
from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.config.scenario import Scenario
from axis_eval.execute.job import JobContext, StopSignal, run_job
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import ManagedProcess, ProcessSpec, marked_pids, spawn
from axis_eval.execute.supervise import (
    MAX_ARG_BYTES,
    STDERR_CAP_BYTES,
    AgentRun,
    RunControl,
    run_agent,
    time_limit_message,
)
from axis_eval.planning.models import AgentSpec, JobSpec
from helpers.agent_runs import (
    AGENTS,
    PY,
    RUN_TOKEN,
    MakeInput,
    agent_argv,
    input_maker,
    new_control,
)


@pytest.fixture
def control() -> RunControl:
    return new_control()


@pytest.fixture
def make_input(tmp_path: Path) -> MakeInput:
    return input_maker(tmp_path)


@dataclass
class State:
    result: str | None = None
    usage: TokenUsage | None = None
    cost_usd: float | None = None
    session_id: str | None = None
    lines: list[Any] = field(default_factory=list)


def _on_line(event: Any, ctx: StreamContext[State]) -> None:
    ctx.state.lines.append(event)
    t = ctx.transcript
    kind = event.get("type")
    if kind == "assistant":
        t.assistant(event["text"])
        ctx.feed_text(event["text"])
    elif kind == "assistant_delta":
        t.assistant_delta(event["text"])
    elif kind == "thinking":
        t.thinking(event["text"])
    elif kind == "tool_call":
        t.tool_call(event["name"], event.get("input"), id=event.get("id"))
    elif kind == "tool_result":
        t.tool_result(event.get("id"), event.get("output"))
    elif kind == "usage":
        ctx.state.usage = TokenUsage(input=event["input_tokens"], output=event["output_tokens"])
        ctx.state.cost_usd = event.get("cost_usd")
    elif kind == "session":
        ctx.state.session_id = event["id"]
    elif kind == "result":
        ctx.state.result = event["text"]


def _get_result(ctx: ResultContext[State]) -> AdapterResult:
    s = ctx.state
    return AdapterResult(s.result, usage=s.usage, cost_usd=s.cost_usd, session_id=s.session_id)


def lines_adapter(argv: list[str], **overrides: Any) -> AgentAdapter[State]:
    """A hand-written lines-mode adapter for the scripted NDJSON agents."""
    options: dict[str, Any] = {
        "name": "scripted",
        "build_args": lambda inp: [],
        "initial_state": State,
        "stream": LinesMode(on_line=_on_line),
        "get_result": _get_result,
        "resolve_command": lambda inp: list(argv),
    }
    options.update(overrides)
    return create_agent_adapter(**options)


async def run(adapter: AgentAdapter[Any], inp: AdapterInput, control: RunControl) -> AgentRun:
    out = await run_agent(adapter, inp, control)
    assert marked_pids(control.marker) == [], "the job left processes behind"
    return out


def types(out: AgentRun) -> list[str]:
    return [e.type for e in out.transcript.entries]


# -- streams ----------------------------------------------------------------------------


async def test_lines_mode_builds_the_transcript(make_input: MakeInput, control: RunControl) -> None:
    out = await run(lines_adapter(agent_argv("adapter_events.py", "full")), make_input(), control)
    assert not out.failed and out.error is None and out.error_kind is None
    assert out.exit_code == 0
    assert out.result == out.transcript.result == "README.md"
    assert types(out) == ["user", "thinking", "assistant", "tool", "assistant"]
    assert out.transcript.entries[0].text == "hello world"
    assert out.transcript.entries[2].text == "Let me look."
    (call,) = out.transcript.tool_calls
    assert (call.id, call.name, call.input, call.output) == (
        "t1",
        "Bash",
        {"command": "ls"},
        "README.md\n",
    )
    assert out.transcript.usage.input == 120 and out.transcript.usage.output == 30
    assert out.transcript.cost_usd == 0.01
    assert out.transcript.session_id == "sess-42"
    assert len(out.raw_output) == 9 and json.loads(out.raw_output[0])["type"] == "session"
    assert out.warnings == []
    assert out.duration_ms > 0 and out.started_at <= out.ended_at


async def test_aggregate_mode_decodes_characters_split_across_chunks(
    make_input: MakeInput, control: RunControl
) -> None:
    seen: list[str] = []

    def on_chunk(chunk: str, ctx: StreamContext[list[str]]) -> None:
        ctx.state.append(chunk)
        seen.append(chunk)

    adapter = create_agent_adapter(
        name="text",
        resolve_command=lambda inp: agent_argv("adapter_text.py"),
        build_args=lambda inp: [inp.prompt],
        initial_state=list[str],
        stream=AggregateMode(on_chunk=on_chunk),
        get_result=lambda ctx: AdapterResult("".join(ctx.state).strip() or None),
    )
    out = await run(adapter, make_input("ünïcode prompt"), control)
    assert out.result == "echo: café ☕ ünïcode prompt"
    assert "\ufffd" not in "".join(out.raw_output)
    assert out.raw_output == seen and len(seen) >= 2
    assert not out.failed


async def test_stdin_carries_a_prompt_argv_cannot(
    make_input: MakeInput, control: RunControl
) -> None:
    prompt = "line one\nwith a NUL \0 byte and ünïcode\n" + "y" * 200_000
    adapter = lines_adapter(
        agent_argv("adapter_stdin.py"), prompt_via="stdin", build_args=lambda inp: ["--quiet"]
    )
    out = await run(adapter, make_input(prompt), control)
    assert not out.failed, out.error
    assert out.result == prompt
    assert out.transcript.entries[0].text == prompt
    assert out.transcript.entries[1].text == 'argv=["--quiet"]'


async def test_argv_mode_passes_cwd_env_and_marker(
    make_input: MakeInput, control: RunControl
) -> None:
    inp = make_input("a prompt")
    adapter = lines_adapter(agent_argv("adapter_argv.py"), build_args=lambda i: ["-p", i.prompt])
    out = await run(adapter, inp, control)
    seen = json.loads(out.result or "")
    assert seen["argv"] == ["-p", "a prompt"]
    assert seen["cwd"] == inp.workspace and seen["home"] == inp.home
    assert seen["marker"] == control.marker
    assert seen["stdin"] == ""  # /dev/null


async def test_very_long_lines_are_read_whole(make_input: MakeInput, control: RunControl) -> None:
    code = "import json; print(json.dumps({'type': 'result', 'text': 'x' * 3_000_000}))"
    out = await run(lines_adapter([PY, "-c", code]), make_input(), control)
    assert out.result == "x" * 3_000_000 and len(out.raw_output) == 1


# -- refusing to start ------------------------------------------------------------------


def _touching_adapter(workspace: str, **overrides: Any) -> AgentAdapter[State]:
    touch = f"open({str(Path(workspace) / 'spawned')!r}, 'w')"
    return lines_adapter([PY, "-c", touch], **overrides)


async def test_nul_in_argv_is_refused_before_spawning(
    make_input: MakeInput, control: RunControl
) -> None:
    inp = make_input("bad \0 prompt")
    adapter = _touching_adapter(inp.workspace, build_args=lambda i: [i.prompt])
    out = await run_agent(adapter, inp, control)
    assert out.failed and out.error_kind == "spawn" and out.exit_code is None
    assert "NUL byte" in (out.error or "") and "prompt_via='stdin'" in (out.error or "")
    assert not (Path(inp.workspace) / "spawned").exists()
    assert types(out) == ["user"]


async def test_too_long_argument_is_refused(make_input: MakeInput, control: RunControl) -> None:
    inp = make_input("z" * MAX_ARG_BYTES)
    adapter = _touching_adapter(inp.workspace, build_args=lambda i: [i.prompt])
    out = await run_agent(adapter, inp, control)
    assert out.error_kind == "spawn" and "prompt_via='stdin'" in (out.error or "")
    assert f"{MAX_ARG_BYTES} bytes" in (out.error or "")
    assert not (Path(inp.workspace) / "spawned").exists()


async def test_longest_argument_linux_accepts_still_runs(
    make_input: MakeInput, control: RunControl
) -> None:
    inp = make_input("é" * ((MAX_ARG_BYTES - 1) // 2) + "z")  # 131071 bytes
    adapter = lines_adapter(agent_argv("adapter_argv.py"), build_args=lambda i: [i.prompt])
    out = await run(adapter, inp, control)
    assert not out.failed, out.error
    assert json.loads(out.result or "")["argv"] == [inp.prompt]


async def test_stdin_mode_refuses_the_prompt_in_args(
    make_input: MakeInput, control: RunControl
) -> None:
    inp = make_input()
    adapter = _touching_adapter(inp.workspace, prompt_via="stdin", build_args=lambda i: [i.prompt])
    out = await run_agent(adapter, inp, control)
    assert out.error_kind == "spawn" and "build_args also puts it" in (out.error or "")
    assert not (Path(inp.workspace) / "spawned").exists()


async def test_no_command_to_spawn(make_input: MakeInput, control: RunControl) -> None:
    adapter = lines_adapter([], resolve_command=None)
    out = await run_agent(adapter, make_input(), control)
    assert out.failed and out.error_kind == "spawn"
    assert out.error == "The scripted adapter has no command to spawn"


async def test_agent_command_is_the_default_prefix(
    make_input: MakeInput, control: RunControl
) -> None:
    adapter = lines_adapter([], resolve_command=None)
    out = await run(adapter, make_input(command=agent_argv("adapter_events.py", "full")), control)
    assert out.result == "README.md"


async def test_missing_binary_is_a_spawn_failure(
    make_input: MakeInput, control: RunControl
) -> None:
    adapter = lines_adapter(["/nonexistent/agent-cli", "--json"])
    out = await run_agent(adapter, make_input(), control)
    assert out.failed and out.error_kind == "spawn" and out.exit_code is None
    assert "Could not start the scripted agent" in (out.error or "")
    assert "/nonexistent/agent-cli" in (out.error or "")


async def test_prepare_runs_first_and_its_failure_is_setup(
    make_input: MakeInput, control: RunControl
) -> None:
    inp = make_input()
    calls: list[str] = []
    ok = lines_adapter(
        agent_argv("adapter_events.py", "full"), prepare=lambda i: calls.append(i.home)
    )
    assert not (await run(ok, inp, control)).failed and calls == [inp.home]

    def broken(i: AdapterInput) -> None:
        raise OSError("disk full")

    bad = _touching_adapter(inp.workspace, prepare=broken)
    out = await run_agent(bad, inp, new_control())
    assert out.error_kind == "setup" and "prepare raised OSError: disk full" in (out.error or "")
    assert not (Path(inp.workspace) / "spawned").exists()


# -- output problems --------------------------------------------------------------------


async def test_lines_that_are_not_json_are_warnings(
    make_input: MakeInput, control: RunControl
) -> None:
    out = await run(
        lines_adapter(agent_argv("adapter_events.py", "bad-line")), make_input(), control
    )
    assert not out.failed and out.result == "after"
    assert "this is not json {" in out.raw_output and len(out.raw_output) == 3
    assert len(out.warnings) == 1 and "line 2 is not JSON" in out.warnings[0]
    assert types(out) == ["user", "assistant"]


async def test_callback_exceptions_never_crash(make_input: MakeInput, control: RunControl) -> None:
    def on_line(event: Any, ctx: StreamContext[State]) -> None:
        raise KeyError("missing")

    def on_end(ctx: StreamContext[State]) -> None:
        raise ValueError("end\nsecond line")

    def get_result(ctx: ResultContext[State]) -> AdapterResult:
        raise RuntimeError("no result")

    adapter = lines_adapter(
        [PY, "-c", "for i in range(15): print('{}')"],
        stream=LinesMode(on_line=on_line, on_end=on_end),
        get_result=get_result,
    )
    out = await run(adapter, make_input(), control)
    assert out.failed and out.error_kind == "agent"
    assert out.error == "scripted: get_result raised RuntimeError: no result"
    errors = [e.text for e in out.transcript.entries if e.type == "error"]
    assert len(errors) == 12  # 10 of the 15 on_line errors, on_end, get_result
    assert errors[0] == "scripted: on_line raised KeyError: 'missing'"
    assert errors[-2:] == ["scripted: on_end raised ValueError: end", out.error]
    assert "… and 5 more on_line errors" in out.warnings
    assert out.error in out.warnings


async def test_one_bad_callback_call_keeps_the_run(
    make_input: MakeInput, control: RunControl
) -> None:
    def on_line(event: Any, ctx: StreamContext[State]) -> None:
        if event["type"] == "thinking":
            raise TypeError("cannot read thinking")
        _on_line(event, ctx)

    adapter = lines_adapter(
        agent_argv("adapter_events.py", "full"), stream=LinesMode(on_line=on_line)
    )
    out = await run(adapter, make_input(), control)
    assert not out.failed and out.result == "README.md"
    assert out.warnings == ["scripted: on_line raised TypeError: cannot read thinking"]


# -- limits and cancellation ------------------------------------------------------------


def _signalling_adapter(argv: list[str]) -> tuple[AgentAdapter[State], asyncio.Event]:
    """An adapter that sets the returned event once the agent's first line arrived."""
    first_line = asyncio.Event()

    def on_line(event: Any, ctx: StreamContext[State]) -> None:
        _on_line(event, ctx)
        first_line.set()

    return lines_adapter(argv, stream=LinesMode(on_line=on_line)), first_line


async def test_time_limit_stops_and_keeps_the_partial_transcript(make_input: MakeInput) -> None:
    control = new_control()
    started = time.monotonic()
    inp = make_input(time_limit_s=1.5)
    out = await run(lines_adapter(agent_argv("adapter_hang.py")), inp, control)
    assert time.monotonic() - started < 10
    assert out.failed and out.error_kind == "timeout"
    assert out.error == "Scenario time limit reached (1.5s)"
    assert types(out) == ["user", "assistant"]
    assert out.transcript.usage.input == 10  # get_result still ran
    assert "still working" in out.stderr
    assert out.exit_code is not None and out.exit_code < 0


async def test_cancel_event_stops_the_agent(make_input: MakeInput) -> None:
    control = new_control()
    adapter, first_line = _signalling_adapter(agent_argv("adapter_hang.py"))
    task = asyncio.ensure_future(run(adapter, make_input(), control))
    await asyncio.wait_for(first_line.wait(), 15)
    control.cancel_reason = "Stopped by user"
    control.cancel.set()
    out = await asyncio.wait_for(task, 15)
    assert out.failed and out.error_kind == "cancelled" and out.error == "Stopped by user"
    assert types(out)[:2] == ["user", "assistant"]


async def test_cancelled_before_start_spawns_nothing(
    make_input: MakeInput, control: RunControl
) -> None:
    inp = make_input()
    control.cancel.set()
    out = await run_agent(_touching_adapter(inp.workspace), inp, control)
    assert out.error_kind == "cancelled" and out.error == "Run cancelled"
    assert not (Path(inp.workspace) / "spawned").exists()


async def test_token_limit_via_on_tokens(make_input: MakeInput) -> None:
    counts: list[int] = []

    def on_tokens(n: int) -> tuple[ErrorKind, str] | None:
        counts.append(n)
        return ("token_limit", "Scenario token limit reached (1000 tokens)") if n >= 1000 else None

    control = new_control(on_tokens=on_tokens)
    out = await run(lines_adapter(agent_argv("adapter_flood.py")), make_input(), control)
    assert out.failed and out.error_kind == "token_limit"
    assert out.error == "Scenario token limit reached (1000 tokens)"
    assert counts == sorted(set(counts)) and counts[0] == 200 and max(counts) >= 1000
    assert types(out).count("assistant") >= 5


async def test_task_cancellation_stops_the_agent(make_input: MakeInput) -> None:
    control = new_control()
    adapter, first_line = _signalling_adapter(agent_argv("adapter_hang.py"))
    task = asyncio.ensure_future(run_agent(adapter, make_input(), control))
    await asyncio.wait_for(first_line.wait(), 15)
    assert marked_pids(control.marker) != []
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert marked_pids(control.marker) == []


# -- failure rules ----------------------------------------------------------------------


async def test_non_zero_exit_after_a_result_is_no_failure(
    make_input: MakeInput, control: RunControl
) -> None:
    out = await run(
        lines_adapter(agent_argv("adapter_events.py", "result-then-fail")), make_input(), control
    )
    assert out.exit_code == 3 and out.result == "All done."
    assert not out.failed and out.error is None and out.error_kind is None


async def test_non_zero_exit_without_result_reports_stderr(
    make_input: MakeInput, control: RunControl
) -> None:
    out = await run(
        lines_adapter(agent_argv("adapter_events.py", "fail-no-result")), make_input(), control
    )
    assert out.failed and out.exit_code == 2 and out.error_kind == "agent"
    assert out.error == "warming up\nfatal: the model is overloaded"


async def test_non_zero_exit_without_stderr(make_input: MakeInput, control: RunControl) -> None:
    out = await run(lines_adapter([PY, "-c", "import sys; sys.exit(4)"]), make_input(), control)
    assert out.failed and out.error == "Agent process exited with non-zero code 4"


async def test_stderr_keeps_only_its_tail(make_input: MakeInput, control: RunControl) -> None:
    code = "import sys; sys.stderr.write('a' * 300000 + '\\nlast words\\n'); sys.exit(1)"
    out = await run(lines_adapter([PY, "-c", code]), make_input(), control)
    assert len(out.stderr.encode()) == STDERR_CAP_BYTES and out.stderr.endswith("last words\n")
    assert out.error is not None and out.error.endswith("last words") and len(out.error) <= 2000
    assert any("stderr was 300012 bytes" in w for w in out.warnings)


async def test_empty_work_is_a_failure(make_input: MakeInput, control: RunControl) -> None:
    out = await run(
        lines_adapter(agent_argv("adapter_events.py", "nothing")), make_input(), control
    )
    assert out.exit_code == 0 and out.failed
    assert out.error == "Agent produced no output" and out.error_kind == "agent"


async def test_adapter_error_fails_even_with_a_result(
    make_input: MakeInput, control: RunControl
) -> None:
    adapter = lines_adapter(
        agent_argv("adapter_events.py", "full"),
        get_result=lambda ctx: AdapterResult("README.md", error="rate limited"),
    )
    out = await run(adapter, make_input(), control)
    assert out.failed and out.error == "rate limited" and out.result == "README.md"


async def test_leftover_processes_are_stopped_after_a_normal_exit(
    make_input: MakeInput, control: RunControl
) -> None:
    started = time.monotonic()
    out = await run(lines_adapter(agent_argv("adapter_daemon.py")), make_input(), control)
    assert time.monotonic() - started < 8
    assert not out.failed and out.result == "done, daemon left behind"


def test_time_limit_message() -> None:
    assert time_limit_message(15 * 60) == "Scenario time limit reached (15m)"
    assert time_limit_message(30) == "Scenario time limit reached (0.5m)"
    assert time_limit_message(90) == "Scenario time limit reached (1.5m)"
    assert time_limit_message(1) == "Scenario time limit reached (1s)"


# -- the record -------------------------------------------------------------------------


def _job_spec() -> JobSpec:
    scenario = Scenario(key="s", base_key="s", name="S", prompt="hello world", judge="j")
    agent = AgentSpec(name="a", adapter="scripted")
    return JobSpec(
        number=1,
        scenario=scenario,
        agent=agent,
        run_index=1,
        run_count=1,
        time_limit_s=60,
        config_dir="/tmp",
    )


async def test_the_run_is_written_into_the_record_it_is_given(
    make_input: MakeInput, control: RunControl
) -> None:
    """A job's outcome is filled in place: no second shape of the run is copied into it."""
    outcome = JobOutcome(spec=_job_spec(), status="completed", failed=False, workspace="/w")
    adapter = lines_adapter(agent_argv("adapter_events.py", "full"))
    filled = await run_agent(adapter, make_input(), control, into=outcome)
    assert filled is outcome
    assert outcome.result == "README.md" and outcome.exit_code == 0 and outcome.error is None
    assert outcome.transcript is not None and outcome.transcript.result == "README.md"
    assert len(outcome.raw_output) == 9 and outcome.workspace == "/w"
    assert outcome.started_at == outcome.transcript.started_at
    assert outcome.ended_at == outcome.transcript.ended_at


async def test_a_refused_run_is_written_into_the_record_too(make_input: MakeInput) -> None:
    record = AgentRun()
    adapter = lines_adapter(["/nonexistent/agent-binary"])
    assert await run_agent(adapter, make_input(), new_control(), into=record) is record
    assert record.failed and record.error_kind == "spawn" and record.exit_code is None
    assert record.transcript is not None and [e.type for e in record.transcript.entries] == ["user"]


# -- the spawner seam -------------------------------------------------------------------


async def test_a_custom_spawner_runs_the_agent_and_stop_still_ends_its_tree(
    make_input: MakeInput,
) -> None:
    """A sandbox-like spawner (it records each ProcessSpec and starts the argv through
    ``env``, a wrapper program) is what starts the agent; a cancel still ends its whole
    tree, the setsid child and the double-forked orphan included."""
    specs: list[ProcessSpec] = []

    async def through_env(spec: ProcessSpec) -> ManagedProcess:
        specs.append(spec)
        wrapped = ["env", "AXIS_SANDBOX=wrapped", *spec.argv]
        return await spawn(dataclasses.replace(spec, argv=wrapped))

    # Says where it runs, then becomes proc_tree.py (same pid): a child, a setsid child
    # and an orphan, their pids on one line, then it sleeps until stopped.
    code = (
        "import json, os, sys; "
        "print(json.dumps({'type': 'assistant', 'text': os.environ.get('AXIS_SANDBOX')}),"
        " flush=True); "
        f"os.execv(sys.executable, [sys.executable, {str(AGENTS / 'proc_tree.py')!r}])"
    )
    tree: dict[str, int] = {}
    tree_seen = asyncio.Event()

    def on_line(event: Any, ctx: StreamContext[State]) -> None:
        if "pid" in event:
            tree.update(event)
            tree_seen.set()
        else:
            _on_line(event, ctx)

    control = new_control(spawner=through_env)
    argv = [PY, "-c", code]
    adapter = lines_adapter(argv, stream=LinesMode(on_line=on_line))
    task = asyncio.ensure_future(run(adapter, make_input(), control))
    await asyncio.wait_for(tree_seen.wait(), 15)
    assert sorted(marked_pids(control.marker)) == sorted(tree.values())
    control.cancel.set()
    out = await asyncio.wait_for(task, 15)  # run() asserts no marked process is left

    assert [(s.argv, s.marker) for s in specs] == [(argv, control.marker)]
    assert out.error_kind == "cancelled" and out.error == "Run cancelled"
    assert out.transcript is not None
    assert [e.text for e in out.transcript.entries if e.type == "assistant"] == ["wrapped"]
    assert out.exit_code is not None and out.exit_code < 0  # stopped by a signal


async def test_a_job_starts_its_agent_through_the_context_spawner(tmp_path: Path) -> None:
    specs: list[ProcessSpec] = []

    async def recording(spec: ProcessSpec) -> ManagedProcess:
        specs.append(spec)
        return await spawn(spec)

    adapter = lines_adapter(agent_argv("adapter_events.py", "full"))
    ctx = JobContext(
        run_token=RUN_TOKEN,
        adapters={"scripted": adapter},
        parent_env={"PATH": os.environ.get("PATH", os.defpath)},
        stop=StopSignal(),
        grace_s=0.5,
        tmp_base=str(tmp_path),
        spawner=recording,
    )
    spec = _job_spec().model_copy(update={"sandbox": SandboxPolicy(mode="none")})
    outcome = await run_job(spec, ctx)
    assert outcome.status == "completed" and outcome.result == "README.md", outcome.error
    assert outcome.sandbox == "none"
    assert [s.marker for s in specs] == [f"{RUN_TOKEN}/{spec.number}"]
