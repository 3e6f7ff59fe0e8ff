"""create_agent_adapter's checks and the pure pieces of the adapter contract."""

from __future__ import annotations

from typing import Any

import pytest

from axis_eval.adapters import (
    AdapterResult,
    AgentAdapter,
    AggregateMode,
    LinesMode,
    StreamContext,
    create_agent_adapter,
)
from axis_eval.adapters.base import AdapterConfigError
from axis_eval.adapters.transcript_builder import TranscriptBuilder


def _good(**overrides: Any) -> dict[str, Any]:
    options: dict[str, Any] = {
        "name": "good",
        "build_args": lambda inp: [inp.prompt],
        "initial_state": dict,
        "stream": LinesMode(on_line=lambda line, ctx: None),
        "get_result": lambda ctx: AdapterResult(None),
    }
    options.update(overrides)
    return options


def test_factory_builds_a_frozen_adapter() -> None:
    adapter = create_agent_adapter(**_good(name=" good ", required_env=["A_KEY", "B_KEY"]))
    assert isinstance(adapter, AgentAdapter)
    assert adapter.name == "good" and adapter.required_env == ("A_KEY", "B_KEY")
    assert adapter.prompt_via == "argv" and adapter.resolve_command is None
    with pytest.raises(AttributeError):
        adapter.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": ""}, "name must be a non-empty string"),
        ({"build_args": ["x"]}, "build_args must be callable"),
        ({"get_result": None}, "get_result must be callable"),
        ({"prepare": "yes"}, "prepare must be callable"),
        ({"stream": {"mode": "lines"}}, "stream must be LinesMode"),
        ({"prompt_via": "file"}, "prompt_via must be 'argv' or 'stdin'"),
        ({"required_env": "API_KEY"}, "required_env must be a list"),
    ],
)
def test_factory_rejects_bad_arguments(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(AdapterConfigError, match=message):
        create_agent_adapter(**_good(**overrides))


def test_both_stream_modes_are_accepted() -> None:
    mode = AggregateMode(on_chunk=lambda chunk, ctx: None)
    assert create_agent_adapter(**_good(stream=mode)).stream is mode


def test_stream_context_estimates_tokens() -> None:
    ctx: StreamContext[None] = StreamContext(None, TranscriptBuilder("a"))
    assert ctx.estimated_tokens == 0
    ctx.feed_text("123456")
    assert ctx.estimated_tokens == 2
    ctx.feed_text("7890")
    assert ctx.estimated_tokens == 2
    ctx.warn("odd")
    assert ctx.warnings == ["odd"]


@pytest.mark.parametrize("args", [["ok", 1], "not a list", None])
def test_build_args_that_are_not_a_list_of_strings_are_refused_at_spawn(
    args: Any, make_input: Any
) -> None:
    from axis_eval.adapters.base import command_line

    adapter = create_agent_adapter(
        **_good(build_args=lambda inp: args, resolve_command=lambda inp: ["cli"])
    )
    with pytest.raises(AdapterConfigError, match="good: build_args must return a list of str"):
        command_line(adapter, make_input())
