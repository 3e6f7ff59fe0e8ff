"""Agent adapters: how to start an agent CLI and read its output.

Write a custom adapter with :func:`create_agent_adapter` (see ``docs/adapters.md``). The
names below are loaded on first use, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from axis_eval._util.lazy import lazy_exports

if TYPE_CHECKING:
    from axis_eval._types import TokenUsage as TokenUsage
    from axis_eval.adapters.acp import create_acp_adapter as create_acp_adapter
    from axis_eval.adapters.base import (
        AdapterInput as AdapterInput,
        AdapterResult as AdapterResult,
        AgentAdapter as AgentAdapter,
        AggregateMode as AggregateMode,
        LinesMode as LinesMode,
        ResultContext as ResultContext,
        StreamContext as StreamContext,
        create_agent_adapter as create_agent_adapter,
    )

_EXPORTS = {
    "AdapterInput": "axis_eval.adapters.base",
    "AdapterResult": "axis_eval.adapters.base",
    "AgentAdapter": "axis_eval.adapters.base",
    "AggregateMode": "axis_eval.adapters.base",
    "LinesMode": "axis_eval.adapters.base",
    "ResultContext": "axis_eval.adapters.base",
    "StreamContext": "axis_eval.adapters.base",
    "TokenUsage": "axis_eval._types",
    "create_acp_adapter": "axis_eval.adapters.acp",
    "create_agent_adapter": "axis_eval.adapters.base",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
