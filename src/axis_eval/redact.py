"""Secret redaction, for everything the harness and the task runner write, log or serve.

One :class:`Redactor` replaces known secret values, and passwords in URLs, with :data:`MASK`.
Which variable names hold secrets, and how short a value may be and still be searched for,
is a :class:`SecretRule`: the harness and the task runner each keep their own
(:data:`HARNESS` and :data:`RUNNER`), because they redact different text (reports and judge
prompts, where missing a secret is the risk; the runner's log lines, which its whole
environment feeds, where masking ordinary words is).
This module imports the standard library only: the task runner imports it at start-up
(its health endpoint must answer fast), so it must stay cheap to load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

__all__ = [
    "HARNESS",
    "MASK",
    "RUNNER",
    "Redactor",
    "SecretRule",
    "looks_secret",
    "mask_mcp",
    "mcp_secret_values",
    "runner_secret_name",
]

MASK = "[REDACTED]"
"""What a secret becomes. Reports, baselines and judge cache keys hold it: changing it
changes those files."""

MIN_SECRET_LENGTH = 4
"""The harness's shortest searched-for value: masking "1" everywhere would destroy the text."""

RUNNER_MIN_SECRET_LENGTH = 6
"""The runner's: it learns every secret-looking variable of its environment, and a short
value there (``HF_AUTH=none``) is an ordinary word of its log lines. The served Task masks
secret ``spec.env`` values of any length."""

_NOT_SECRETS = frozenset({"true", "false", "enabled", "disabled", "never", "always"})
"""Flag-like values of secret-named variables (``GH_TOKEN_REQUIRED=true``): not secrets,
and masking them would break every JSON ``true``/``false`` of a report."""

_HARNESS_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE",
    re.IGNORECASE,
)
_RUNNER_WORDS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "AUTH",
        "AUTHORIZATION",
        "COOKIE",
        "PRIVATE",
        "SIGNATURE",
    }
)
_RUNNER_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "APIKEY", "_KEY")
_WORD_BREAK = re.compile(r"[^A-Z0-9]+")
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^/@\s:]*):(?P<pw>[^/@\s]+)@")


def looks_secret(name: str) -> bool:
    """The harness's rule: a secret word occurs anywhere in the name, case ignored.

    Substrings, not words: a report or a judge prompt must not miss ``SESSIONID``,
    ``PASSWORD1`` or ``APIKEYS``; that ``KEYBOARD_LAYOUT`` or ``AUTHOR_NAME`` are masked too
    (when passed through) is the price.
    """
    return _HARNESS_NAME.search(name) is not None


def runner_secret_name(name: str) -> bool:
    """The task runner's rule: a word of the name is a secret word, or it ends like one.

    ``GEMINI_API_KEY``, ``GH_TOKEN``, ``HF_AUTH``, ``gh-token``, ``OPENAI_APIKEY``. Words, not
    substrings: the runner learns its whole environment, and ``XDG_SESSION_CLASS=user`` or
    ``KEYBOARD_LAYOUT`` must not turn ordinary words of its logs into masks.
    """
    upper = name.upper()
    return upper.endswith(_RUNNER_SUFFIXES) or any(
        word in _RUNNER_WORDS for word in _WORD_BREAK.split(upper)
    )


class SecretRule(NamedTuple):
    """Which variable names hold secrets, and the shortest value searched for in text."""

    is_secret_name: Callable[[str], bool]
    min_length: int


HARNESS = SecretRule(looks_secret, MIN_SECRET_LENGTH)
"""Reports, transcripts, check output and judge prompts."""

RUNNER = SecretRule(runner_secret_name, RUNNER_MIN_SECRET_LENGTH)
"""The task runner's logs, state files and endpoints."""


class Redactor:
    """Replaces every known secret value, and every URL password, in text and JSON-like data.

    Built with the secrets it knows; :meth:`add` teaches it more (the task runner learns
    ``spec.env``'s secrets after it has started logging). ``rule`` says which names hold
    secrets (:meth:`from_env`, :meth:`add_environment`) and which values are too short.
    """

    def __init__(self, secrets: Iterable[str] = (), *, rule: SecretRule = HARNESS) -> None:
        self.rule = rule
        self._secrets: list[str] = []
        self._pattern: re.Pattern[str] | None = None
        self.version = 0
        """Goes up whenever :meth:`add` learns a secret: what text redacted earlier (and
        kept) was redacted with."""
        self.add(secrets)

    @classmethod
    def from_env(
        cls,
        names: Iterable[str],
        environ: Mapping[str, str],
        extra: Iterable[str] = (),
        *,
        rule: SecretRule = HARNESS,
    ) -> Redactor:
        """Secrets = values of secret-looking ``names`` present in ``environ``, plus ``extra``."""
        values = [environ[n] for n in names if rule.is_secret_name(n) and environ.get(n)]
        return cls([*values, *extra], rule=rule)

    def add(self, values: Iterable[str]) -> None:
        """Remember more values to mask (too short and flag-like ones are ignored)."""
        known = set(self._secrets)
        shortest = self.rule.min_length
        fresh = {
            v for v in values if v and len(v) >= shortest and v.lower() not in _NOT_SECRETS
        } - known
        if not fresh:
            return
        self._secrets = sorted(known | fresh, key=len, reverse=True)
        # Each secret as written and as JSON escapes it, so JSON text is masked correctly too.
        forms = {json.dumps(s, ensure_ascii=False)[1:-1] for s in self._secrets}
        ordered = sorted(forms | set(self._secrets), key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(s) for s in ordered))
        self.version += 1

    def add_environment(self, env: Mapping[str, str]) -> None:
        """Remember the values of every variable of ``env`` whose name the rule says is secret."""
        self.add(value for name, value in env.items() if self.rule.is_secret_name(name))

    def merged(self, other: Iterable[str]) -> Redactor:
        """A new redactor, same rule, that also hides ``other`` (this one is left as it is)."""
        return Redactor([*self._secrets, *other], rule=self.rule)

    def html_escaped(self) -> Redactor:
        """A new redactor that also hides each secret as HTML escapes it (``&`` → ``&amp;``…):
        for a page redacted after it was escaped, where the browser turns it back."""
        from html import escape

        return self.merged(escape(s) for s in self._secrets)

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
