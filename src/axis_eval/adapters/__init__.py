"""Agent adapters: how to start an agent CLI and read its output.

Write a custom adapter with :func:`create_agent_adapter` (see ``docs/adapters.md``). The
names below are loaded on first use, so importing this package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from axis_eval._types import TokenUsage
    from axis_eval.adapters.acp import create_acp_adapter
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

_EXPORTS = {
    "AdapterInput": "axis_eval.adapters.base",
    "AdapterResult": "axis_eval.adapters.base",
    "AgentAdapter": "axis_eval.adapters.base",
    "AggregateMode": "axis_eval.adapters.base",
    "LinesMode": "axis_eval.adapters.base",
    "ResultContext": "axis_eval.adapters.base",
    "StreamContext": "axis_eval.adapters.base",
    "TokenUsage": "axis_eval.report.models",
    "create_acp_adapter": "axis_eval.adapters.acp",
    "create_agent_adapter": "axis_eval.adapters.base",
}

__all__ = [
    "AdapterInput",
    "AdapterResult",
    "AgentAdapter",
    "AggregateMode",
    "LinesMode",
    "ResultContext",
    "StreamContext",
    "TokenUsage",
    "create_acp_adapter",
    "create_agent_adapter",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'axis_eval.adapters' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
