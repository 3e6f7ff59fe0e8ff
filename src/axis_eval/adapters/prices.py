"""A small price table, for agents that report tokens but no cost (Codex, Gemini CLI).

Prices are list prices in US dollars per million tokens (standard tier, prompts under any
long-context threshold). An estimate from this table is always marked estimated
(``cost_estimated: true``); a model not in the table gets no cost at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from axis_eval._types import TokenUsage

__all__ = ["PRICES", "Price", "estimate_cost", "normalize_model", "price_for"]


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float | None = None
    """Cache writes; None means charged as ordinary input."""


PRICES: dict[str, Price] = {
    # Anthropic (cache writes: 5-minute TTL price)
    "claude-opus-4": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-6": Price(5.0, 25.0, 0.5, 6.25),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "claude-sonnet-4-5": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
    # OpenAI
    "gpt-5": Price(1.25, 10.0, 0.125),
    "gpt-5-codex": Price(1.25, 10.0, 0.125),
    "gpt-5.1": Price(1.25, 10.0, 0.125),
    "gpt-5.1-codex": Price(1.25, 10.0, 0.125),
    "gpt-5-mini": Price(0.25, 2.0, 0.025),
    "gpt-5.1-codex-mini": Price(0.25, 2.0, 0.025),
    "gpt-5-nano": Price(0.05, 0.4, 0.005),
    "gpt-4.1": Price(2.0, 8.0, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "o3": Price(2.0, 8.0, 0.5),
    "o4-mini": Price(1.1, 4.4, 0.275),
    # Google (prompts up to 200k tokens)
    "gemini-2.5-pro": Price(1.25, 10.0, 0.125),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.03),
    "gemini-2.5-flash-lite": Price(0.10, 0.40, 0.01),
    "gemini-2.0-flash": Price(0.10, 0.40, 0.025),
    "gemini-3-pro-preview": Price(2.0, 12.0, 0.2),
    "gemini-3-flash-preview": Price(0.50, 3.0, 0.05),
}
"""Known models. Dated snapshots (``claude-sonnet-4-5-20250929``) and suffixes such as
``[1m]`` or a ``models/`` prefix are stripped before the lookup."""

_DATE = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2})$")
_LATEST = re.compile(r"-latest$")


def normalize_model(model: str) -> str:
    """``models/claude-sonnet-4-5-20250929[1m]`` → ``claude-sonnet-4-5``."""
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]
    name = re.sub(r"\[.*?\]$", "", name)
    name = _LATEST.sub("", name)
    return _DATE.sub("", name)


def price_for(model: str | None) -> Price | None:
    """The price of ``model``, or None when it is not in the table."""
    if not model:
        return None
    return PRICES.get(normalize_model(model))


def estimate_cost(model: str | None, usage: TokenUsage) -> float | None:
    """The cost of ``usage`` on ``model`` in US dollars; None for an unknown model.

    ``usage.input`` is input not served from cache (cache reads and writes are counted
    separately), the convention every native adapter records.
    """
    price = price_for(model)
    if price is None:
        return None
    write = price.cache_write if price.cache_write is not None else price.input
    total = (
        usage.input * price.input
        + usage.output * price.output
        + usage.cache_read_input * price.cache_read
        + usage.cache_write_input * write
    ) / 1_000_000
    return round(total, 10)
