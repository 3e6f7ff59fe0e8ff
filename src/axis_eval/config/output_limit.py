"""``limits.output``: how much one agent run may print, and how much of it the transcript keeps.

The agent under test is hostile: whatever it prints, ``axis run`` must keep its memory and
its report bounded. Three caps, each with a default no sane agent reaches:

- ``bytes`` (128 MiB): stdout and stderr together, counted as they stream. The largest real
  sessions seen (Claude Code's ``stream-json``, with every partial message a line of JSON
  framing) print tens of MB; 128 MiB is several times that.
- ``transcript_bytes`` (32 MiB): the text the transcript holds (messages, reasoning, tool
  inputs and outputs). A transcript keeps the content without the JSON framing, a small
  part of what such a session prints; 32 MiB is hundreds of full file reads. It is the cap
  that bounds memory: the text is held until the run is saved.
- ``events`` (10,000): transcript entries. A long session is a few thousand (a tool call is
  one entry, a message another); each costs about 2.5 KB held and written.

Past any of them the agent is stopped and the run fails with kind ``output_limit``, keeping
the transcript up to the cap and the head and tail of the raw output. The numbers in force
for one job travel in its :class:`~axis_eval.planning.models.JobSpec`.
"""

from typing import Annotated

from axis_eval.config._base import Bounds, InputModel

__all__ = [
    "DEFAULT_EVENTS",
    "DEFAULT_OUTPUT_BYTES",
    "DEFAULT_TRANSCRIPT_BYTES",
    "OutputLimit",
]

MIB = 1024 * 1024
DEFAULT_OUTPUT_BYTES = 128 * MIB
"""What an agent may print on stdout and stderr together in one run."""
DEFAULT_TRANSCRIPT_BYTES = 32 * MIB
"""The text one run's transcript may hold."""
DEFAULT_EVENTS = 10_000
"""The entries one run's transcript may hold."""
MAX_BYTES = 2**40
"""1 TiB: the largest byte cap accepted (beyond any disk a report lands on)."""
MAX_EVENTS = 10**9

Bytes = Annotated[int, Bounds(gt=0, le=MAX_BYTES, note=" (1 TiB)")]
Events = Annotated[int, Bounds(gt=0, le=MAX_EVENTS)]


class OutputLimit(InputModel):
    """How much one run of an agent may print (``limits.output``); each field has a default."""

    bytes: Bytes = DEFAULT_OUTPUT_BYTES
    """stdout and stderr together, in bytes (default 128 MiB)."""
    transcript_bytes: Bytes = DEFAULT_TRANSCRIPT_BYTES
    """Text the transcript may hold, in bytes of UTF-8 (default 32 MiB)."""
    events: Events = DEFAULT_EVENTS
    """Entries the transcript may hold (default 10,000)."""
