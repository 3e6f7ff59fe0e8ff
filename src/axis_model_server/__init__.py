"""axis-model-server: a scripted model API on 127.0.0.1 for agent dry runs without tokens.

A :class:`Tape` scripts conversations (assistant text and tool calls); the
:class:`ScriptedModelServer` plays it back to any agent CLI speaking the Anthropic
Messages, OpenAI Responses, OpenAI Chat Completions or Gemini API, streaming or not::

    from axis_model_server import ScriptedModelServer, load_tape

    with ScriptedModelServer(load_tape("hello.yaml")) as server:
        ...  # run an agent with ANTHROPIC_BASE_URL=server.url
        assert server.usage_totals().main.output_tokens > 0

This package is independent of ``axis_eval``: only the tape format is shared.
"""

from axis_model_server.records import (
    ConnectAttempt,
    RequestRecord,
    ToolCallRecord,
    Usage,
    UsageTotals,
)
from axis_model_server.server import ScriptedModelServer
from axis_model_server.tape import (
    ABSTRACT_TOOLS,
    Conversation,
    Tape,
    TapeError,
    ToolCall,
    Turn,
    load_tape,
    parse_tape,
)

__all__ = [
    "ABSTRACT_TOOLS",
    "ConnectAttempt",
    "Conversation",
    "RequestRecord",
    "ScriptedModelServer",
    "Tape",
    "TapeError",
    "ToolCall",
    "ToolCallRecord",
    "Turn",
    "Usage",
    "UsageTotals",
    "load_tape",
    "parse_tape",
]
