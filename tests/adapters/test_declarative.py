"""Declarative adapters: placeholders, flags, text and ndjson output, end to end."""

from __future__ import annotations

import json

import pytest

from axis_eval.adapters.base import AdapterConfigError, resolve_argv_prefix
from axis_eval.adapters.declarative import declarative_adapter
from axis_eval.config.models import DeclarativeAdapter
from axis_eval.execute.supervise import RunControl, run_agent
from helpers.agent_runs import AGENTS, PY, MakeInput, agent_argv


def spec(**fields: object) -> DeclarativeAdapter:
    return DeclarativeAdapter.model_validate(fields)


def test_placeholders_and_flags(make_input: MakeInput) -> None:
    adapter = declarative_adapter(
        "mine",
        spec(
            command=["my-cli", "--config", "{config_dir}/agent.toml"],
            args=["run", "{prompt}", "--cwd={workspace}", "--home", "{home}", "--model={model}"],
        ),
    )
    inp = make_input("say {workspace}", flags={"verbose": True, "quiet": False, "effort": "high"})
    assert resolve_argv_prefix(adapter, inp) == [
        "my-cli",
        "--config",
        f"{inp.env['AXIS_CONFIG_DIR']}/agent.toml",
    ]
    assert adapter.build_args(inp) == [
        "run",
        "say {workspace}",  # the prompt's own braces stay as they are
        f"--cwd={inp.workspace}",
        "--home",
        inp.home,
        "--verbose",
        "--effort",
        "high",
    ]
    assert adapter.build_args(make_input(model="big-1"))[-1] == "--model=big-1"


def test_agent_command_overrides_the_declared_one(make_input: MakeInput) -> None:
    adapter = declarative_adapter("mine", spec(command="my-cli"))
    assert resolve_argv_prefix(adapter, make_input()) == ["my-cli"]
    assert resolve_argv_prefix(adapter, make_input(command=["other", "x"])) == ["other", "x"]


def test_stdin_drops_the_default_prompt_argument(make_input: MakeInput) -> None:
    adapter = declarative_adapter("mine", spec(command="cli", prompt_via="stdin"))
    assert adapter.prompt_via == "stdin" and adapter.build_args(make_input()) == []
    with pytest.raises(AdapterConfigError, match="must not contain"):
        declarative_adapter("mine", spec(command="cli", prompt_via="stdin", args=["-p={prompt}"]))


def test_required_env_is_carried() -> None:
    adapter = declarative_adapter("mine", spec(command="cli", required_env=["MY_KEY"]))
    assert adapter.required_env == ("MY_KEY",)


async def test_text_output_end_to_end(make_input: MakeInput, control: RunControl) -> None:
    adapter = declarative_adapter(
        "echoer", spec(command=[PY, str(AGENTS / "adapter_text.py")], output="text")
    )
    out = await run_agent(adapter, make_input("hi there"), control)
    assert not out.failed, out.error
    assert out.result == "echo: café ☕ hi there"
    assert [e.type for e in out.transcript.entries] == ["user", "assistant"]
    assert out.transcript.entries[1].text == out.result
    assert out.transcript.agent == "echoer"


async def test_text_output_stdin(make_input: MakeInput, control: RunControl) -> None:
    code = "import sys; print(sys.stdin.read().upper())"
    adapter = declarative_adapter("up", spec(command=[PY, "-c", code], prompt_via="stdin"))
    out = await run_agent(adapter, make_input("quiet \0 please"), control)
    assert out.result == "QUIET \0 PLEASE"


async def test_empty_text_output_fails(make_input: MakeInput, control: RunControl) -> None:
    adapter = declarative_adapter("mute", spec(command=[PY, "-c", "print('  ')"], args=[]))
    out = await run_agent(adapter, make_input(), control)
    assert out.failed and out.error == "Agent produced no output"


async def test_ndjson_end_to_end(make_input: MakeInput, control: RunControl) -> None:
    adapter = declarative_adapter(
        "ev", spec(command=agent_argv("adapter_events.py"), args=["full"], output="ndjson")
    )
    out = await run_agent(adapter, make_input(), control)
    t = out.transcript
    assert not out.failed and out.warnings == []
    assert [e.type for e in t.entries] == ["user", "thinking", "assistant", "tool", "assistant"]
    assert t.entries[2].text == "Let me look."
    (call,) = t.tool_calls
    assert (call.id, call.name, call.input) == ("t1", "Bash", {"command": "ls"})
    assert (call.output, call.is_error) == ("README.md\n", False)
    assert (t.usage.input, t.usage.output, t.usage.cache_read_input) == (120, 30, 50)
    assert t.cost_usd == 0.01 and t.session_id == "sess-42"
    assert out.result == t.result == "README.md"


async def test_ndjson_last_assistant_message_is_the_answer(
    make_input: MakeInput, control: RunControl
) -> None:
    adapter = declarative_adapter(
        "ev", spec(command=agent_argv("adapter_events.py"), args=["no-result"], output="ndjson")
    )
    out = await run_agent(adapter, make_input(), control)
    assert out.result == "The folder holds README.md." and not out.failed


async def test_ndjson_unknown_and_malformed_events(
    make_input: MakeInput, control: RunControl
) -> None:
    adapter = declarative_adapter(
        "ev", spec(command=agent_argv("adapter_events.py"), args=["unknown"], output="ndjson")
    )
    out = await run_agent(adapter, make_input(), control)
    assert not out.failed and out.result == "done"
    systems = [json.loads(e.text or "") for e in out.transcript.entries if e.type == "system"]
    assert systems == [{"type": "telemetry", "data": 1}, {"type": "assistant", "text": 5}]
    assert out.warnings == [
        "ndjson: unknown event type 'telemetry'; kept as a system entry",
        "ndjson: a 'assistant' event is malformed (\"text\" must be a string); "
        "kept as a system entry",
    ]


async def test_ndjson_error_event_fails_the_run(make_input: MakeInput, control: RunControl) -> None:
    adapter = declarative_adapter(
        "ev", spec(command=agent_argv("adapter_events.py"), args=["error-event"], output="ndjson")
    )
    out = await run_agent(adapter, make_input(), control)
    assert out.failed and out.error == "API key invalid" and out.error_kind == "agent"


async def test_ndjson_plain_text_output_is_no_work(
    make_input: MakeInput, control: RunControl
) -> None:
    adapter = declarative_adapter(
        "ev", spec(command=agent_argv("adapter_events.py"), args=["banner"], output="ndjson")
    )
    out = await run_agent(adapter, make_input(), control)
    assert out.failed and out.raw_output == ["Welcome to some agent v1.0"]
    assert out.error is not None and out.error.startswith("Agent produced no output")
    assert "not JSON" in out.error


async def test_millions_of_bad_lines_keep_a_bounded_list_of_warnings(
    make_input: MakeInput, control: RunControl
) -> None:
    """Each line that is not JSON is a warning: past MAX_KEPT_WARNINGS they are counted, not
    kept (an agent can print millions under its output cap), and the last error is kept."""
    from axis_eval.adapters.base import MAX_KEPT_WARNINGS, StreamContext
    from axis_eval.adapters.transcript_builder import TranscriptBuilder

    ctx: StreamContext[None] = StreamContext(None, TranscriptBuilder("a"))
    for n in range(3 * MAX_KEPT_WARNINGS):
        ctx.warn(f"line {n} is not JSON")
    assert len(ctx.warnings) == MAX_KEPT_WARNINGS
    kept = ctx.kept_warnings()
    assert kept[-1] == f"… and {2 * MAX_KEPT_WARNINGS:,} more warnings (not kept)"

    code = (
        "import json\n"
        "for n in range(3000): print('not json', n)\n"
        "for n in range(3): print(json.dumps({'type': 'error', 'message': f'e{n}'}))\n"
    )
    adapter = declarative_adapter("bad", spec(command=[PY, "-c", code], args=[], output="ndjson"))
    out = await run_agent(adapter, make_input(), control)
    assert out.failed and out.error == "e2"  # the last error event
    assert out.warnings[-1] == "… and 2990 more stdout lines that are not JSON"
    assert len(out.warnings) <= 101  # the report shows at most 100, repeats counted
