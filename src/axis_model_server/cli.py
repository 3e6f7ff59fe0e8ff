"""Run the server from a terminal: ``python -m axis_model_server`` and ``axis model-server``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from axis_model_server.normalize import qualified_name
from axis_model_server.records import ConnectAttempt, RequestRecord
from axis_model_server.server import ScriptedModelServer
from axis_model_server.tape import Tape, TapeError, load_tape

__all__ = ["agent_hints", "describe_record", "main", "serve"]

API_KEY = "sk-scripted"


def agent_hints(url: str) -> str:
    """How to point each agent CLI at the server at ``url``."""
    return f"""\
Point an agent at it (any API key works):
  Claude Code      ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY={API_KEY}
  OpenAI clients   OPENAI_BASE_URL={url}/v1 OPENAI_API_KEY={API_KEY}   (Qwen Code, SDKs)
  Gemini CLI       GOOGLE_GEMINI_BASE_URL={url} GEMINI_API_KEY={API_KEY}
  Codex            export SCRIPTED_API_KEY={API_KEY}; in $CODEX_HOME/config.toml:
                     model = "gpt-5.5"              # a model name Codex knows
                     model_provider = "scripted"    # top level, before any [table]
                     [model_providers.scripted]
                     name = "scripted"
                     base_url = "{url}/v1"
                     env_key = "SCRIPTED_API_KEY"
                     wire_api = "responses"
                     request_max_retries = 1
                     stream_max_retries = 1
  Proxy trap       HTTPS_PROXY={url}   (outside connections are refused and logged)"""


def describe_record(record: RequestRecord | ConnectAttempt) -> str:
    """One log line for a request or a trapped connection."""
    if isinstance(record, ConnectAttempt):
        return f"{record.method} {record.target} refused (proxy trap)"
    line = f"{record.method} {record.path} {record.status}"
    if record.error:
        return f"{line} error: {record.error}"
    if record.protocol and record.protocol != "models":
        line += f" {record.protocol}{' stream' if record.stream else ''}"
        line += f" conversation={record.conversation or '-'} turn={record.turn}"
        if record.side:
            line += f" side={record.side_reason}"
        if record.unmatched:
            line += " UNMATCHED"
        names = [(qualified_name(c.namespace, c.name), c.tool) for c in record.tool_calls]
        calls = ", ".join(sent if sent == tool else f"{sent} ({tool})" for sent, tool in names)
        line += f" -> {calls}" if calls else " -> text"
        line += f" [in {record.usage.input_tokens}, out {record.usage.output_tokens}]"
    return line


def serve(
    tape: Tape,
    *,
    tape_label: str = "<tape>",
    port: int = 0,
    log_path: str | Path | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Serve ``tape`` until Ctrl-C; print the URL and agent hints first. Returns an exit code."""
    stdout = out or sys.stdout
    stderr = err or sys.stderr

    def log(record: RequestRecord | ConnectAttempt) -> None:
        print(describe_record(record), file=stderr, flush=True)

    server = ScriptedModelServer(tape, port=port, log_path=log_path, on_record=log)
    try:
        server.start()
    except OSError as error:
        print(f"error: cannot listen on 127.0.0.1:{port}: {error.strerror or error}", file=stderr)
        return 2
    count = len(tape.conversations)
    print(f"Scripted model server: {server.url}", file=stdout)
    print(f"Tape: {tape_label} ({count} conversation{'s' if count != 1 else ''})", file=stdout)
    print("", file=stdout)
    print(agent_hints(server.url), file=stdout)
    print("\nServing until Ctrl-C.", file=stdout, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    totals = server.usage_totals()
    print(
        f"Stopped. {totals.requests} model requests ({totals.side_requests} side), "
        f"tokens in {totals.all.input_tokens} / out {totals.all.output_tokens}, "
        f"{len(server.connect_attempts)} outside connection attempts.",
        file=stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m axis_model_server --tape TAPE [--port N] [--log FILE]``."""
    parser = argparse.ArgumentParser(
        prog="python -m axis_model_server",
        description="Serve a scripted model (a tape) on 127.0.0.1 for dry runs without tokens.",
    )
    parser.add_argument("--tape", required=True, help="the tape file (YAML or JSON)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: free)")
    parser.add_argument("--log", dest="log_path", help="append each request as a JSON line here")
    args = parser.parse_args(argv)
    try:
        tape = load_tape(args.tape)
    except TapeError as error:
        print(f"error: {error.render()}", file=sys.stderr)
        return error.exit_code
    return serve(tape, tape_label=args.tape, port=args.port, log_path=args.log_path)
