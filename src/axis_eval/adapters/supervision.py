"""What the supervisor and an adapter's output reader say to each other during one run.

The supervisor (:mod:`axis_eval.execute.supervise`) starts the agent and owns everything
about the process: its pipes, limits, stderr, warnings and the run's error. An
:class:`OutputReader` is the adapter's side: it turns what the agent prints (NDJSON lines,
free text, or an ACP JSON-RPC conversation on stdin and stdout) into the transcript, and
says at the end how the agent ended (:class:`Reading`); on the way it reports warnings and
output growth through :class:`RunNotes`. Nothing here touches a process.

The message helpers (:func:`exit_message`, :func:`stderr_tail`) live here, below both
sides, because the supervisor words a stream agent's ending with them and the ACP session
words a broken conversation with them: one wording for both.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "MAX_LINE_BYTES",
    "NOT_JSON",
    "RAW_HEAD_BYTES",
    "RAW_TAIL_BYTES",
    "OutputReader",
    "RawOutput",
    "Reading",
    "RunNotes",
    "describe",
    "exit_message",
    "kept_output",
    "stderr_tail",
    "utf8_size",
]

NOT_JSON = "stdout lines that are not JSON"
"""The warning key of stdout lines a reader could not parse (named in "no output" errors)."""
_TAIL_CHARS = 2000

MAX_LINE_BYTES = 8 * 1024 * 1024
"""The longest stdout line a reader takes (a Claude Code line carrying a screenshot is a few
MB); a longer one is left out with a warning, and never buffered past this."""
RAW_HEAD_BYTES = 4 * 1024 * 1024
"""The raw output keeps its first 4 MiB whole …"""
RAW_TAIL_BYTES = 4 * 1024 * 1024
"""… and its last 4 MiB (a ring): in between, past 8 MiB, only a count of what was left out."""
_ITEM_COST = 100
"""What one kept item costs beyond its text (the str object, its slot): counted against the
budgets, so a flood of tiny lines is bounded in memory too, not only in text."""


def utf8_size(text: str) -> int:
    """``text``'s length in UTF-8 (lone surrogates, which JSON may carry, count 3 bytes).

    ``isascii()`` is a flag test in CPython, so the common case costs no encoding.
    """
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class RawOutput(list[str]):
    """A reader's raw output, bounded: the items of the first :data:`RAW_HEAD_BYTES` are
    kept as they come, then only a ring of the newest :data:`RAW_TAIL_BYTES`; what falls
    out between them is counted. :meth:`kept` is what the run's ``raw_output`` gets.

    A ``list`` so a reader just appends; only :meth:`append` is bounded (readers use
    nothing else). ``chunks``: items are pieces of one text (free-text output), so the note
    of what was left out is a line of its own; else each item is a line (NDJSON, JSON-RPC)
    and the note is one too, a JSON object, so the file stays NDJSON.
    """

    def __init__(
        self,
        head_bytes: int = RAW_HEAD_BYTES,
        tail_bytes: int = RAW_TAIL_BYTES,
        *,
        chunks: bool = False,
    ) -> None:
        super().__init__()
        self.chunks = chunks
        self._head_room = head_bytes
        self._tail_bytes = tail_bytes
        self._tail: deque[tuple[str, int]] = deque()
        self._tail_size = 0
        self._in_tail = False
        self.left_out_items = 0
        self.left_out_bytes = 0

    def append(self, item: str, /) -> None:
        size = utf8_size(item) + _ITEM_COST
        if not self._in_tail:
            if size <= self._head_room:
                super().append(item)
                self._head_room -= size
                return
            self._in_tail = True  # the head is closed for good: order is kept
        if size > self._tail_bytes:  # one item larger than the ring: its end
            cut = item[-self._tail_bytes // 2 :]
            self.left_out_bytes += size - utf8_size(cut) - _ITEM_COST
            item, size = cut, utf8_size(cut) + _ITEM_COST
        self._tail.append((item, size))
        self._tail_size += size
        while self._tail_size > self._tail_bytes and len(self._tail) > 1:
            _, dropped = self._tail.popleft()
            self._tail_size -= dropped
            self.left_out_items += 1
            self.left_out_bytes += dropped - _ITEM_COST

    def kept(self) -> list[str]:
        """The head, a note of what was left out (when anything was), then the tail."""
        tail = [item for item, _ in self._tail]
        if not self.left_out_bytes and not self.left_out_items:
            return [*self, *tail]
        if self.chunks:
            note = f"\n[axis: {self.left_out_bytes:,} bytes of output left out here]\n"
        else:
            note = json.dumps(
                {
                    "axis": "output left out here",
                    "items": self.left_out_items,
                    "bytes": self.left_out_bytes,
                }
            )
        return [*self, note, *tail]


def kept_output(raw: list[str]) -> list[str]:
    """What a reader's ``raw_output`` keeps for the run's record."""
    return raw.kept() if isinstance(raw, RawOutput) else list(raw)


class RunNotes(Protocol):
    """What a reader reports to the supervisor while the agent runs."""

    def warn(self, key: str, message: str) -> bool:
        """Record a warning; False once ``key`` was recorded too often (say less, then).

        ``key`` names this kind of warning in the plural, as the count of the ones left
        out reads: ``… and 5 more {key}`` (``on_line errors``, ``update warnings``).
        """

    def output_grew(self) -> None:
        """New output was read: the supervisor re-checks the token limit."""


@dataclass
class Reading:
    """What the reader concluded once the agent was done (or stopped); the answer itself is
    the finished transcript's ``result``."""

    error: str | None = None
    """An error the agent reported (or its output could not be read); it fails the run."""
    answered: bool = False
    """The agent answered over its protocol and was then told to exit, so its exit code
    says nothing: the run's exit code is 0, or 1 when the run failed (ACP, as AXIS)."""
    warnings: list[str] = field(default_factory=list)
    """The adapter's own notes (``StreamContext.warn``), repeated ones counted."""


class OutputReader(Protocol):
    """An adapter's reader for one run (:func:`axis_eval.adapters.readers.open_reader`)."""

    converses: bool
    """True when the reader talks to the agent on stdin (ACP): stdin stays an open pipe,
    and once :meth:`read` returns the run is over (the agent is told to exit)."""
    raw_output: list[str]
    """What the agent printed, as the run's ``raw_output`` keeps it: a :class:`RawOutput`
    (the supervisor puts one in place of a reader's empty plain list, so every reader's is
    bounded)."""

    def stdin_data(self) -> bytes | None:
        """Bytes written to stdin, which is then closed (the prompt with ``prompt_via=
        'stdin'``); None for /dev/null, or for a conversing reader."""

    def spawn_env(self) -> dict[str, str]:
        """Variables added to the agent's environment after ``prepare``."""

    async def read(self, stdout: asyncio.StreamReader, stdin: asyncio.StreamWriter | None) -> None:
        """Read stdout to its end (or, conversing, until the agent has answered)."""

    def live_tokens(self) -> int:
        """The live token count: the estimate, or the usage reported so far if larger."""

    async def close(self) -> None:
        """Release what :meth:`read` opened; called once the agent was stopped, always."""

    async def finish(self, exit_code: int | None, stderr: str, stopped: bool) -> Reading:
        """Finish the transcript (its ``result`` is the answer) and say how the agent ended;
        ``stopped``: a limit or a cancel ended the run (its error is already decided)."""


def describe(exc: BaseException) -> str:
    """``TypeError: first line of the message``, for warnings and errors."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def stderr_tail(stderr: str) -> str | None:
    """The last non-empty stderr lines, at most 2000 characters."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    picked: list[str] = []
    size = 0
    for line in reversed(lines):
        if picked and size + len(line) + 1 > _TAIL_CHARS:
            break
        picked.append(line[-_TAIL_CHARS:])
        size += len(picked[-1]) + 1
    return "\n".join(reversed(picked)) or None


def exit_message(code: int | None) -> str:
    """``Agent process exited with non-zero code 3`` / ``… was killed by SIGKILL``."""
    if code is None:
        return "Agent process did not exit"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Agent process was killed by {name}"
    return f"Agent process exited with non-zero code {code}"
