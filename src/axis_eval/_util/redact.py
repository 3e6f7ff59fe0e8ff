"""Secret redaction: values of secret-looking variables and MCP headers never reach disk."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE)",
    re.IGNORECASE,
)
"""Variable names that look like they hold a secret."""

MASK = "[REDACTED]"
MIN_SECRET_LENGTH = 4
"""Shorter values are not replaced: masking "1" everywhere would destroy the text."""


def looks_secret(name: str) -> bool:
    """Whether a variable or header name looks like it holds a secret."""
    return bool(SECRET_NAME.search(name))


class Redactor:
    """Replaces every known secret value in text and in JSON-like data."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        self._secrets = sorted(values, key=len, reverse=True)
        # Each secret as written and as JSON escapes it, so JSON text is masked correctly too.
        forms = {json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets}
        forms |= set(self._secrets)
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in ordered)) if ordered else None

    @classmethod
    def from_env(
        cls,
        names: Iterable[str],
        environ: Mapping[str, str],
        extra: Iterable[str] = (),
    ) -> Redactor:
        """Secrets = values of secret-looking ``names`` present in ``environ``, plus ``extra``."""
        values = [environ[n] for n in names if looks_secret(n) and environ.get(n)]
        return cls([*values, *extra])

    def merged(self, other: Iterable[str]) -> Redactor:
        """A redactor that also hides ``other``."""
        return Redactor([*self._secrets, *other])

    def text(self, value: str) -> str:
        """``value`` with every secret replaced by the mask."""
        if self._pattern is None or not value:
            return value
        return self._pattern.sub(MASK, value)

    def json_text(self, text: str) -> str:
        """JSON ``text`` with every secret replaced (also as JSON escapes it)."""
        return self.text(text)

    def data(self, value: Any) -> Any:
        """A copy of JSON-like ``value`` with secrets replaced in every string."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        return value


def mask_mcp(servers: Mapping[str, Any]) -> dict[str, Any]:
    """MCP server entries (as dicts) with header and env values masked."""
    out: dict[str, Any] = {}
    for name, server in servers.items():
        entry = dict(server)
        for field in ("headers", "env"):
            if isinstance(entry.get(field), dict):
                entry[field] = {k: MASK for k in entry[field]}
        out[name] = entry
    return out


def mcp_secret_values(servers: Mapping[str, Any]) -> list[str]:
    """Every header and env value of MCP servers (as dicts): all treated as secrets."""
    values: list[str] = []
    for server in servers.values():
        for field in ("headers", "env"):
            block = server.get(field) if isinstance(server, dict) else None
            if isinstance(block, dict):
                values.extend(str(v) for v in block.values())
    return values
