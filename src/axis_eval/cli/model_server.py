"""``axis model-server``: a scripted model (a tape) served on 127.0.0.1."""

from __future__ import annotations

import sys

import click

from axis_eval.cli import import_gc
from axis_eval.cli._common import fail


@click.command("model-server")
@click.option("--tape", "tape_path", required=True, help="The tape to play (YAML or JSON).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, help="Port on 127.0.0.1 (default: free)."
)
@click.option("--log", "log_path", help="Append every request to this file as JSON lines.")
def model_server_command(tape_path: str, port: int, log_path: str | None) -> None:
    """Serve a scripted model on 127.0.0.1: dry runs of scenarios without spending tokens."""
    from axis_model_server import TapeError, load_tape
    from axis_model_server.cli import serve

    try:
        tape = load_tape(tape_path)
    except TapeError as error:
        fail(error)
    import_gc.imports_done()  # a long-lived server: back to normal garbage collection
    sys.exit(serve(tape, tape_label=tape_path, port=port, log_path=log_path))
