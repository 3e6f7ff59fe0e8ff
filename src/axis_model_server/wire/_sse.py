"""Server-sent events framing and text chunking shared by the wire formats."""

from __future__ import annotations

import json
import secrets
from typing import Any

CHUNK = 40
"""Characters per streamed text or argument delta: clients must join the pieces."""


def frame(data: Any, event: str | None = None) -> bytes:
    """One SSE frame: an optional ``event:`` line and one ``data:`` line."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def pieces(text: str, size: int = CHUNK) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters (none for empty text)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def new_id(prefix: str) -> str:
    """A random id such as ``msg_3f2a…``."""
    return prefix + secrets.token_hex(12)
