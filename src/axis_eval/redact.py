"""Secret redaction, for everything the harness and the task runner write, log or serve.

One rule says which variable names hold secrets (:func:`looks_secret`) and one
:class:`Redactor` replaces known secret values, and passwords in URLs, with :data:`MASK`.
This module imports the standard library only: the task runner imports it at start-up
(its health endpoint must answer fast), so it must stay cheap to load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MASK", "Redactor", "looks_secret", "mask_mcp", "mcp_secret_values"]

MASK = "[REDACTED]"
"""What a secret becomes. Reports, baselines and judge cache keys hold it: changing it
changes those files."""

MIN_SECRET_LENGTH = 4
"""Shorter values are not searched for: masking "1" everywhere would destroy the text."""

_NOT_SECRETS = frozenset({"true", "false", "enabled", "disabled", "never", "always"})
"""Flag-like values of secret-named variables (``GH_TOKEN_REQUIRED=true``): not secrets."""

_SECRET_WORDS = frozenset(
    {
        "KEY",
        "KEYS",
        "APIKEY",
        "TOKEN",
        "TOKENS",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "COOKIES",
        "SESSION",
        "PRIVATE",
        "SIGNATURE",
    }
)
_SECRET_SUFFIXES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD")
_WORD_BREAK = re.compile(r"[^A-Z0-9]+")
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^/@\s:]*):(?P<pw>[^/@\s]+)@")


def looks_secret(name: str) -> bool:
    """Whether a variable or header name looks like it holds a secret.

    A word of the name is a secret word (``GH_TOKEN``, ``HF_AUTH``, ``gh-token``) or the name
    ends with one (``OPENAI_APIKEY``, ``DBPASSWORD``). Words, not substrings, so that
    ``KEYBOARD_LAYOUT`` or ``TOKENIZERS_PARALLELISM`` keep their values.
    """
    upper = name.upper()
    return upper.endswith(_SECRET_SUFFIXES) or any(
        word in _SECRET_WORDS for word in _WORD_BREAK.split(upper)
    )


class Redactor:
    """Replaces every known secret value, and every URL password, in text and JSON-like data.

    Built with the secrets it knows; :meth:`add` teaches it more (the task runner learns
    ``spec.env``'s secrets after it has started logging).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        self.add(secrets)

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

    def add(self, values: Iterable[str]) -> None:
        """Remember more values to mask (too short and flag-like ones are ignored)."""
        known = set(self._secrets)
        fresh = {
            v for v in values if v and len(v) >= MIN_SECRET_LENGTH and v.lower() not in _NOT_SECRETS
        } - known
        if not fresh:
            return
        self._secrets = sorted(known | fresh, key=len, reverse=True)
        # Each secret as written and as JSON escapes it, so JSON text is masked correctly too.
        forms = {json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets}
        ordered = sorted(forms | set(self._secrets), key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in ordered))

    def add_environment(self, env: Mapping[str, str]) -> None:
        """Remember the values of every secret-looking variable in ``env``."""
        self.add(value for name, value in env.items() if looks_secret(name))

    def merged(self, other: Iterable[str]) -> Redactor:
        """A new redactor that also hides ``other`` (this one is left as it is)."""
        return Redactor([*self._secrets, *other])

    def text(self, value: str) -> str:
        """``value`` with every known secret and URL password replaced by the mask."""
        if not value:
            return value
        if self._pattern is not None:
            value = self._pattern.sub(MASK, value)
        if "://" in value:  # a cheap test first: most text holds no URL
            value = _URL_USERINFO.sub(_mask_password, value)
        return value

    __call__ = text
    """A redactor is also a plain ``str -> str`` function (the task runner's log lines)."""

    def json_text(self, text: str) -> str:
        """JSON ``text`` with every secret replaced (also as JSON escapes it)."""
        return self.text(text)

    def data(self, value: Any) -> Any:
        """A copy of JSON-like ``value`` with secrets replaced in every string."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        return value


def _mask_password(match: re.Match[str]) -> str:
    return f"{match['scheme']}{match['user']}:{MASK}@"


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
