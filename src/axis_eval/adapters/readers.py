"""Which reader reads an adapter's agent: its stream mode, or an ACP session."""

from __future__ import annotations

from typing import Any

from axis_eval.adapters.base import AdapterInput, AgentAdapter
from axis_eval.adapters.streams import StreamReader
from axis_eval.adapters.supervision import OutputReader, RunNotes
from axis_eval.adapters.transcript_builder import TranscriptBuilder

__all__ = ["open_reader"]


def open_reader(
    adapter: AgentAdapter[Any], inp: AdapterInput, builder: TranscriptBuilder, notes: RunNotes
) -> OutputReader:
    """A fresh reader for one run of ``adapter`` (the adapter's ``initial_state`` runs here).

    An :class:`~axis_eval.adapters.acp.AcpAdapter` is read by an ACP session. Both are
    imported only for an adapter that is not a plain :class:`AgentAdapter`, so a run
    without ACP agents never loads them (nor the ``acp`` package).
    """
    if type(adapter) is not AgentAdapter:
        own = getattr(adapter, "open_reader", None)
        if own is not None:  # an adapter with a reader of its own (a JavaScript adapter)
            reader: OutputReader = own(inp, builder, notes)
            return reader
        from axis_eval.adapters.acp import AcpAdapter

        if isinstance(adapter, AcpAdapter):
            from axis_eval.adapters._acp_session import AcpSession

            return AcpSession(adapter, inp, builder, notes)
    return StreamReader(adapter, inp, builder, notes)
