"""The token counts every protocol reports, each under its own names."""

from __future__ import annotations

from axis_model_server.script import Reply


def token_counts(reply: Reply, input_key: str, output_key: str, total_key: str) -> dict[str, int]:
    """``{input_key: …, output_key: …, total_key: …}``: the same three numbers in every
    protocol that reports a total (it is always input + output)."""
    return {
        input_key: reply.input_tokens,
        output_key: reply.output_tokens,
        total_key: reply.total_tokens,
    }
