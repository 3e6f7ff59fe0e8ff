"""Start one agent for the supervisor: its command line, checks, ``prepare``, the spawn.

Every step that can refuse the run before anything runs raises :class:`Refused` with the
error kind the run then ends with: ``spawn`` (no command, a bad argument, the program
cannot start), ``cancelled`` (the run was stopped first) or ``setup`` (the adapter's
``prepare`` or spawn-time ``env`` raised).
"""

from __future__ import annotations

import os
from typing import Any

from axis_eval._types import ErrorKind
from axis_eval.adapters.base import AdapterConfigError, AdapterInput, AgentAdapter
from axis_eval.adapters.hooks import command_line_off_loop, run_hook
from axis_eval.adapters.readers import open_reader
from axis_eval.adapters.supervision import OutputReader, RawOutput, RunNotes, describe
from axis_eval.adapters.transcript_builder import TranscriptBuilder
from axis_eval.execute.process import ManagedProcess, ProcessSpec, Spawner, SpawnFailed

__all__ = ["MAX_ARG_BYTES", "Refused", "start_agent"]

MAX_ARG_BYTES = 131072
"""Linux ``MAX_ARG_STRLEN``: the most bytes one argument may take, its terminating NUL included."""


class Refused(Exception):
    """The run cannot start; nothing was spawned."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


def _check_argv(adapter: AgentAdapter[Any], argv: list[str], prompt: str, hint: bool) -> None:
    """Refuse what a command line cannot carry, naming the prompt when it is the culprit.

    ``hint``: the prompt travels on the command line, so ``prompt_via='stdin'`` would help.
    """
    name = adapter.name
    via_stdin = adapter.prompt_via == "stdin"
    tip = (
        f"; set prompt_via='stdin' on the {name} adapter so the prompt is written to "
        "the agent's stdin instead"
        if hint
        else ""
    )
    for i, arg in enumerate(argv):
        what = "the prompt" if prompt and prompt in arg else f"argument {i}"
        if "\0" in arg:
            raise Refused(
                "spawn",
                f"Cannot start {name}: {what} contains a NUL byte, which a command "
                f"line cannot carry{tip}",
            )
        try:
            size = len(os.fsencode(arg))
        except UnicodeEncodeError as exc:
            raise Refused("spawn", f"Cannot start {name}: {what} cannot be encoded") from exc
        if size + 1 > MAX_ARG_BYTES:
            raise Refused(
                "spawn",
                f"Cannot start {name}: {what} is {size} bytes, more than one "
                f"command-line argument may hold on Linux ({MAX_ARG_BYTES - 1}){tip}",
            )
        if via_stdin and prompt and arg == prompt:
            raise Refused(
                "spawn",
                f"The {name} adapter sends the prompt on stdin (prompt_via='stdin') but "
                f"build_args also puts it on the command line (argument {i}); leave it out",
            )


async def start_agent(
    adapter: AgentAdapter[Any],
    inp: AdapterInput,
    cancel_reason: str | None,
    marker: str,
    builder: TranscriptBuilder,
    notes: RunNotes,
    spawner: Spawner,
) -> tuple[ManagedProcess, OutputReader]:
    """Check, prepare and start the agent through ``spawner``; return it with the reader of
    its output.

    ``cancel_reason``: the run was cancelled already (nothing is spawned), else None.

    Raises:
        Refused: the run cannot start (nothing was spawned).
    """
    name = adapter.name
    try:
        argv = await command_line_off_loop(adapter, inp)
        reader = open_reader(adapter, inp, builder, notes)
    except AdapterConfigError as exc:
        raise Refused("spawn", exc.message) from exc
    except Exception as exc:
        raise Refused("spawn", f"{name}: {describe(exc)}") from exc
    if type(reader.raw_output) is list and not reader.raw_output:
        reader.raw_output = RawOutput()  # bounded, whichever reader it is
    stdin_data = reader.stdin_data()
    prompt_on_argv = stdin_data is None and not reader.converses
    _check_argv(adapter, argv, inp.prompt, prompt_on_argv)
    if cancel_reason is not None:
        raise Refused("cancelled", cancel_reason)
    if adapter.prepare is not None:
        try:
            await run_hook(adapter.prepare, inp)
        except Exception as exc:
            raise Refused("setup", f"{name}: prepare raised {describe(exc)}") from exc
    env = dict(inp.env)  # after prepare, which may add to it
    try:
        env.update(reader.spawn_env())
    except Exception as exc:
        raise Refused("setup", f"{name}: env raised {describe(exc)}") from exc
    spec = ProcessSpec(argv, inp.workspace, env, marker, stdin_data, reader.converses)
    try:
        proc = await spawner(spec)
    except SpawnFailed as exc:
        where = " (is it installed and on PATH?)" if "not found" in str(exc) else ""
        raise Refused("spawn", f"Could not start the {name} agent: {exc}{where}") from exc
    except (OSError, ValueError) as exc:
        raise Refused("spawn", f"Could not start the {name} agent: {exc}") from exc
    return proc, reader
