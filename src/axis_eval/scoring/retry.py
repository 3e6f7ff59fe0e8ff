"""Judge call retries: backoff with jitter, Retry-After, and one adaptive concurrency limit.

Every judge call of a run goes through one :class:`AdaptiveLimiter`, whichever job it
scores. A 429 halves the limit (at most once per cool-down, so one burst of 429s from calls
already in flight counts once); after as many successes in a row as the current limit, it
grows by one again, up to the configured maximum (additive increase, multiplicative
decrease). :func:`call_with_retries` retries rate limits, 5xx answers, timeouts and
connection errors with exponential backoff and jitter, honouring ``Retry-After``; anything
else fails at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar

from axis_eval.scoring.judge import JudgeFailed

T = TypeVar("T")

RetryKind = Literal["rate_limit", "server", "timeout", "connection"]


class RetryableCallError(Exception):
    """A judge call failed in a way worth retrying (translated from the SDK's error)."""

    def __init__(
        self, kind: RetryKind, message: str, *, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind: RetryKind = kind
        self.retry_after_s = retry_after_s


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        with contextlib.suppress(ValueError):
            return max(0.0, float(millis) / 1000)
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a judge call."""

    max_attempts: int = 6
    """Tries in all, the first included."""
    base_delay_s: float = 1.0
    """The first backoff; doubled per attempt."""
    max_delay_s: float = 30.0
    """The longest computed backoff."""
    max_retry_after_s: float = 120.0
    """A server's ``Retry-After`` is honoured up to this many seconds."""

    def delay_s(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """The wait after failed attempt ``attempt`` (0-based)."""
        if retry_after_s is not None:
            # Honour the server, plus a little jitter so waiting callers do not stampede.
            return min(retry_after_s, self.max_retry_after_s) + rng.uniform(
                0, self.base_delay_s / 4
            )
        cap = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return rng.uniform(cap / 2, cap)


class AdaptiveLimiter:
    """A semaphore whose size drops on 429s and climbs back after successes.

    Args:
        limit: the most calls at once (also the starting size).
        cooldown_s: 429s within this long after a decrease do not decrease it again.
    """

    def __init__(self, limit: int, *, cooldown_s: float = 1.0) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.max_limit = limit
        self.limit = limit
        self.cooldown_s = cooldown_s
        self.in_flight = 0
        self.lowest = limit
        """The smallest limit seen (for reports and tests)."""
        self._streak = 0
        self._last_decrease = float("-inf")
        self._changed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._changed is None or (self._loop is not loop and self.in_flight == 0):
            # A condition belongs to one event loop; a new loop (another asyncio.run) gets
            # a new one, keeping the limit learnt so far.
            self._changed, self._loop = asyncio.Condition(), loop
        return self._changed

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the ``limit`` places while the body runs."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
        try:
            yield
        finally:
            async with changed:
                self.in_flight -= 1
                changed.notify_all()

    def on_rate_limit(self) -> None:
        """A 429: halve the limit (not below 1), once per cool-down."""
        self._streak = 0
        now = time.monotonic()
        if now - self._last_decrease < self.cooldown_s:
            return
        self._last_decrease = now
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)

    def on_success(self) -> None:
        """A success: after ``limit`` in a row, one more place (up to the maximum)."""
        if self.limit >= self.max_limit:
            self._streak = 0
            return
        self._streak += 1
        if self._streak >= self.limit:
            # Waiters are woken when the slot that succeeded is released.
            self._streak = 0
            self.limit += 1


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    limiter: AdaptiveLimiter,
    policy: RetryPolicy,
    *,
    what: str = "judge call",
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``call`` under ``limiter``, retrying :class:`RetryableCallError` per ``policy``.

    Raises:
        JudgeFailed: every attempt failed, or a non-retryable error was raised as
            ``JudgeFailed`` by ``call``.
    """
    rng = rng or random.Random()
    last: RetryableCallError | None = None
    for attempt in range(policy.max_attempts):
        async with limiter.slot():
            try:
                result = await call()
            except RetryableCallError as exc:
                last = exc
                if exc.kind == "rate_limit":
                    limiter.on_rate_limit()
            else:
                limiter.on_success()
                return result
        if attempt + 1 < policy.max_attempts:
            # Waiting happens outside the slot, so other calls can use the capacity.
            await sleep(policy.delay_s(attempt, last.retry_after_s, rng))
    assert last is not None
    raise JudgeFailed(f"{what} failed after {policy.max_attempts} attempts: {last}")
