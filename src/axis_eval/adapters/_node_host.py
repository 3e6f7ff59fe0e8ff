"""The Node host of a JavaScript/TypeScript adapter: one process, spoken to line by line.

``node_host/host.mjs`` imports the adapter module with ``@netlify/axis`` resolved to our own
``createAgentAdapter``/``createAcpBasedAdapter`` (``node_host/shim.cjs``) and runs the
adapter's callbacks on request. Every call is bounded by a time limit: a callback that
hangs gets the host killed (its whole process group) and the call fails with
:class:`HostError`, which names the callback. The host exits by itself when its stdin
closes, so it never outlives axis-eval.

A call is awaited in the event loop (:meth:`NodeHost.acall`, a job's reader) or blocks its
thread (:meth:`NodeHost.call`, the adapter's hooks, which jobs run in threads: see
:mod:`axis_eval.adapters.hooks`); never both on one host.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from axis_eval._util.node_ts import TS_SUFFIXES, typescript_node_args
from axis_eval._util.processes import LiveHelper

__all__ = [
    "CALLBACK_TIMEOUT_ENV",
    "HOST_SCRIPT",
    "LOAD_TIMEOUT_S",
    "Answer",
    "HostError",
    "NodeHost",
    "callback_timeout_s",
    "node_argv",
]

HOST_SCRIPT = Path(__file__).parent / "node_host" / "host.mjs"
LOAD_TIMEOUT_S = 60.0
"""Importing the adapter module (a cold tsx start included)."""
CALLBACK_TIMEOUT_ENV = "AXIS_ADAPTER_CALLBACK_TIMEOUT_S"
_CALLBACK_TIMEOUT_S = 30.0
_OUTPUT_TAIL = 2000
_EXIT_MOMENT_S = 0.05
"""A host that went is given this long to exit, so its exit code can be told."""


def callback_timeout_s() -> float:
    """How long one adapter callback may take: ``$AXIS_ADAPTER_CALLBACK_TIMEOUT_S``, else 30 s."""
    try:
        value = float(os.environ.get(CALLBACK_TIMEOUT_ENV) or _CALLBACK_TIMEOUT_S)
    except ValueError:
        return _CALLBACK_TIMEOUT_S
    return value if value > 0 else _CALLBACK_TIMEOUT_S


class HostError(Exception):
    """A call to the Node host failed: the callback threw, hung, or the host died."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where


@dataclass
class Answer:
    """One reply of the host."""

    ok: bool
    value: Any = None
    error: str | None = None
    where: str | None = None
    entries: list[Any] = field(default_factory=list)
    fed: int = 0
    raw: dict[str, Any] = field(default_factory=dict)


def node_argv(module: str) -> list[str]:
    """``node [TypeScript loader flags] host.mjs``; raises PreflightError (no loader) or
    FileNotFoundError (no node)."""
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node")
    extra = typescript_node_args(node) if Path(module).suffix.lower() in TS_SUFFIXES else []
    return [node, *extra, str(HOST_SCRIPT)]


def _stop(helper: LiveHelper, output: IO[bytes]) -> None:
    helper.end()
    output.close()


class NodeHost:
    """One Node host process with ``module`` loaded (the load is read lazily)."""

    def __init__(self, argv: list[str], module: str, key: str) -> None:
        self.module = module
        self._output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.helper = LiveHelper([*argv, "{reply_fd}", module, key], cwd=None, output=self._output)
        self._finalizer = weakref.finalize(self, _stop, self.helper, self._output)
        self._next = 1
        self._lock = threading.Lock()
        self._loaded: Answer | None = None
        self.dead: str | None = None
        """Why the host is gone (then every call fails with it)."""

    def output_tail(self) -> str:
        """The end of what the host (the adapter's own logging) printed."""
        try:
            self._output.flush()
            size = os.fstat(self._output.fileno()).st_size
            self._output.seek(max(0, size - _OUTPUT_TAIL))
            return self._output.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def _gone(self, what: str) -> str:
        """Why the host is gone (called a moment after it went, so its code is known)."""
        code = self.helper.returncode()
        tail = self.output_tail()
        how = "was stopped" if code is None else f"exited with code {code}"
        message = f"the Node host {how} {what}"
        return message + (f": {tail.splitlines()[-1][:500]}" if tail else "")

    def _late(self, where: str, limit: float | None) -> HostError:
        """The deadline passed: the host is stopped (it may be running the callback still)."""
        self.close()
        within = "in time" if limit is None else f"within {limit:g}s"
        self.dead = f"{where} did not return {within}; the Node host was stopped"
        return HostError(self.dead, where)

    def _died(self, what: str, where: str) -> HostError:
        self.dead = self._gone(what)
        self.close()
        return HostError(self.dead, where)

    def _answer(self, line: bytes, expect: int, what: str, where: str) -> Answer | None:
        """The answer ``line`` carries, or None when it answers an earlier request (one
        whose caller was cancelled): it is skipped."""
        try:
            raw = json.loads(line)
        except ValueError as exc:
            self.dead = f"the Node host answered {what} with garbage: {line[:200]!r}"
            self.close()
            raise HostError(self.dead, where) from exc
        if not isinstance(raw, dict) or raw.get("id") != expect:
            return None
        entries = raw.get("entries")
        fed = raw.get("fed")
        return Answer(
            ok=raw.get("ok") is True,
            value=raw.get("value"),
            error=str(raw.get("error")) if raw.get("error") is not None else None,
            where=str(raw.get("where")) if raw.get("where") is not None else None,
            entries=entries if isinstance(entries, list) else [],
            fed=fed if isinstance(fed, int) and fed >= 0 else 0,
            raw=raw,
        )

    def _read(
        self, expect: int, deadline: float, what: str, where: str, limit: float | None
    ) -> Answer:
        while True:
            line = self.helper.receive(deadline)
            if line is None:
                if time.monotonic() >= deadline:
                    raise self._late(where, limit)
                time.sleep(_EXIT_MOMENT_S)
                raise self._died(what, where)
            if (answer := self._answer(line, expect, what, where)) is not None:
                return answer

    async def _aread(
        self, expect: int, deadline: float, what: str, where: str, limit: float | None
    ) -> Answer:
        while True:
            line = await self.helper.receive_async(deadline)
            if line is None:
                if time.monotonic() >= deadline:
                    raise self._late(where, limit)
                await asyncio.sleep(_EXIT_MOMENT_S)
                raise self._died(what, where)
            if (answer := self._answer(line, expect, what, where)) is not None:
                return answer

    def loaded(self, timeout_s: float = LOAD_TIMEOUT_S) -> Answer:
        """The host's first message: the adapter module's description, or why not.

        Blocks: for a caller off the event loop (or before any run); a reader awaits
        :meth:`aloaded`."""
        with self._lock:
            if self._loaded is None:
                if self.dead is not None:
                    raise HostError(self.dead, "import")
                deadline = time.monotonic() + timeout_s
                self._loaded = self._read(0, deadline, "while loading the adapter", "import", None)
            return self._loaded

    async def aloaded(self, timeout_s: float = LOAD_TIMEOUT_S) -> Answer:
        """:meth:`loaded`, awaited: the event loop runs on while the module loads."""
        if self._loaded is None:
            if self.dead is not None:
                raise HostError(self.dead, "import")
            deadline = time.monotonic() + timeout_s
            loading = "while loading the adapter"
            self._loaded = await self._aread(0, deadline, loading, "import", None)
        return self._loaded

    def _request(
        self, op: str, where: str, timeout_s: float | None, payload: dict[str, Any]
    ) -> tuple[bytes, int, float, float]:
        """The request's line, its id, time limit and deadline; HostError: the host is gone."""
        if self.dead is None and self.helper.ended:
            self.dead = "the Node host was stopped"
        if self.dead is not None:
            raise HostError(self.dead, where)
        limit = callback_timeout_s() if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        ident = self._next
        self._next += 1
        try:
            data = json.dumps({"id": ident, "op": op, **payload}, ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            )
        except (TypeError, ValueError) as exc:
            raise HostError(f"cannot send {where} its arguments: {exc}", where) from exc
        return data, ident, limit, deadline

    def call(self, op: str, where: str, timeout_s: float | None = None, **payload: Any) -> Answer:
        """Run ``op`` in the host; the answer (``ok`` False: the callback threw).

        Blocks until the answer (or the time limit): for a caller off the event loop, one
        at a time (a lock orders callers of other threads). A reader awaits :meth:`acall`.

        Raises:
            HostError: the host is gone, hung past the time limit, or answered garbage.
        """
        self.loaded()
        with self._lock:
            data, ident, limit, deadline = self._request(op, where, timeout_s, payload)
            if not self.helper.send(data, deadline):
                if time.monotonic() >= deadline:
                    raise self._late(where, limit)
                time.sleep(_EXIT_MOMENT_S)
                raise self._died(f"before {where}", where)
            return self._read(ident, deadline, f"during {where}", where, limit)

    async def acall(
        self, op: str, where: str, timeout_s: float | None = None, **payload: Any
    ) -> Answer:
        """:meth:`call`, awaited: the event loop runs other jobs while the callback runs.

        For one caller at a time (a job's reader, in its task); one cancelled while it
        waited leaves its answer to be skipped by the next call."""
        await self.aloaded()
        data, ident, limit, deadline = self._request(op, where, timeout_s, payload)
        if not await self.helper.send_async(data, deadline):
            if time.monotonic() >= deadline:
                raise self._late(where, limit)
            await asyncio.sleep(_EXIT_MOMENT_S)
            raise self._died(f"before {where}", where)
        return await self._aread(ident, deadline, f"during {where}", where, limit)

    def close(self) -> None:
        """Stop the host and its whole process group (idempotent)."""
        self._finalizer()
