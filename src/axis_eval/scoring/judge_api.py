"""The API judge: one model behind the official Anthropic or OpenAI SDK.

The SDKs' own retries are off (``max_retries=0``): every 429, 5xx, timeout and connection
error comes back here, so the shared :class:`~axis_eval.scoring.retry.AdaptiveLimiter` sees
each rate limit and :func:`~axis_eval.scoring.retry.call_with_retries` honours
``Retry-After``. OpenAI-compatible servers are reached through Chat Completions, the API
they share. SDK errors are translated where they enter, chained with ``from``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from axis_eval._types import TokenUsage
from axis_eval.adapters.prices import estimate_cost
from axis_eval.scoring.judge import JudgeChoice, JudgeFailed, JudgeReply, JudgeRequest
from axis_eval.scoring.retry import (
    AdaptiveLimiter,
    RetryableCallError,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
)

MAX_OUTPUT_TOKENS = 8192
"""The answer budget of one call (Anthropic requires one); audits are chunked to fit it."""
_RETRY_STATUSES = frozenset({408, 409, 429})


@dataclass(frozen=True, eq=False)  # eq=False: a judge is itself, as any object
class ApiJudge:
    """A judge that calls a model API directly.

    Attributes:
        choice: an API :class:`JudgeChoice` (provider, model, optional base URL).
        api_key: the key; any non-empty text for servers that need none.
        timeout_s: one call's time limit (a timeout is retried).
        limiter: the run's shared judge concurrency limit.
        policy: how to retry.
    """

    choice: JudgeChoice
    _: KW_ONLY
    api_key: str = field(repr=False)
    timeout_s: float
    limiter: AdaptiveLimiter
    policy: RetryPolicy
    max_output_tokens: int = MAX_OUTPUT_TOKENS

    def __post_init__(self) -> None:
        choice = self.choice
        if choice.kind != "api" or choice.provider is None or choice.model is None:
            raise ValueError("ApiJudge needs an API judge choice")

    async def ask(self, request: JudgeRequest) -> JudgeReply:
        """One answer, with retries on rate limits, 5xx, timeouts and connection errors."""
        return await call_with_retries(
            lambda: self._once(request),
            self.limiter,
            self.policy,
            what=f"the {request.purpose} call to {self.choice.label}",
        )

    def _new_client(self) -> Any:
        base = self.choice.base_url
        if self.choice.provider == "anthropic":
            import anthropic

            return anthropic.AsyncAnthropic(
                api_key=self.api_key, base_url=base, timeout=self.timeout_s, max_retries=0
            )
        import openai

        return openai.AsyncOpenAI(
            api_key=self.api_key, base_url=base, timeout=self.timeout_s, max_retries=0
        )

    async def _once(self, request: JudgeRequest) -> JudgeReply:
        # A client per call: nothing to close later, nothing tied to an event loop. The
        # extra connection setup is small next to a judge call.
        try:
            async with self._new_client() as client:
                if self.choice.provider == "anthropic":
                    return await self._anthropic(client, request)
                return await self._openai(client, request)
        except (RetryableCallError, JudgeFailed):
            raise
        except Exception as exc:
            raise _translate(exc, self.choice) from exc

    async def _anthropic(self, client: Any, request: JudgeRequest) -> JudgeReply:
        message = await client.messages.create(
            model=self.choice.model,
            max_tokens=self.max_output_tokens,
            system=request.system,
            messages=[{"role": m.role, "content": m.text} for m in request.messages],
        )
        text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
        u = message.usage
        usage = TokenUsage(
            input=u.input_tokens or 0,
            output=u.output_tokens or 0,
            cache_read_input=getattr(u, "cache_read_input_tokens", 0) or 0,
            cache_write_input=getattr(u, "cache_creation_input_tokens", 0) or 0,
        )
        return self._reply(text, usage, message.stop_reason == "max_tokens")

    async def _openai(self, client: Any, request: JudgeRequest) -> JudgeReply:
        messages = [{"role": "system", "content": request.system}]
        messages += [{"role": m.role, "content": m.text} for m in request.messages]
        completion = await client.chat.completions.create(
            model=self.choice.model, messages=messages
        )
        choices = completion.choices or []
        text = (choices[0].message.content or "") if choices else ""
        cut = bool(choices) and choices[0].finish_reason == "length"
        u = completion.usage
        usage = TokenUsage()
        if u is not None:
            details = getattr(u, "prompt_tokens_details", None)
            cached = (getattr(details, "cached_tokens", 0) or 0) if details else 0
            usage = TokenUsage(
                input=max(0, (u.prompt_tokens or 0) - cached),
                output=u.completion_tokens or 0,
                cache_read_input=cached,
            )
        return self._reply(text, usage, cut)

    def _reply(self, text: str, usage: TokenUsage, truncated: bool) -> JudgeReply:
        cost = estimate_cost(self.choice.model, usage)
        return JudgeReply(
            text=text,
            usage=usage,
            cost_usd=cost,
            cost_estimated=cost is not None,
            truncated=truncated,
        )


def _translate(exc: Exception, choice: JudgeChoice) -> Exception:
    """An SDK error as a retryable error or a :class:`JudgeFailed`."""
    if choice.provider == "anthropic":
        import anthropic as sdk
    else:
        import openai as sdk  # type: ignore[no-redef]
    label = choice.label
    if isinstance(exc, sdk.APITimeoutError | TimeoutError):
        return RetryableCallError("timeout", f"{label}: the call timed out")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        after = parse_retry_after(dict(exc.response.headers))
        text = f"{label}: HTTP {status}: {_message(exc)}"
        if status == 429:
            return RetryableCallError("rate_limit", text, retry_after_s=after)
        if status >= 500 or status in _RETRY_STATUSES:
            return RetryableCallError("server", text, retry_after_s=after)
        return JudgeFailed(text)
    if isinstance(exc, sdk.APIConnectionError | ConnectionError):
        return RetryableCallError("connection", f"{label}: connection failed: {exc}")
    return JudgeFailed(f"{label}: {type(exc).__name__}: {exc}")


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:300]
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def api_key_for(choice: JudgeChoice, environ: Mapping[str, str]) -> str:
    """The API judge's key; a placeholder for a ``base_url`` server that needs none.

    Raises:
        JudgeFailed: no key and no ``base_url``.
    """
    name = choice.api_key_env or ""
    key = environ.get(name, "")
    if key:
        return key
    if choice.base_url:
        return "axis-no-key"
    raise JudgeFailed(f"the API judge {choice.label} needs {name}, which is not set")
