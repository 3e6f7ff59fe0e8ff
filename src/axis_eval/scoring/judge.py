"""The judge seam: who judges a run, how one question is asked, and what it cost.

A :class:`Judge` answers a :class:`JudgeRequest` with text. :func:`ask_validated` turns that
into a validated answer: the text must hold a JSON object that fits a pydantic model and
passes the caller's checks; a bad answer is asked once more, quoting the validation error;
a second bad answer raises :class:`JudgeFailed`, and the run's score is withheld.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from axis_eval._types import TokenUsage
from axis_eval.config.models import Judging
from axis_eval.errors import AxisError, ConfigError
from axis_eval.planning.models import AgentSpec
from axis_eval.planning.select import display_names
from axis_eval.scoring.cache import CACHE_VERSION, JudgeCache
from axis_eval.scoring.models import JudgeSpend

A = TypeVar("A", bound=BaseModel)

PROVIDERS = ("anthropic", "openai")
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
RETRY_MARKER = "JUDGE ANSWER REJECTED"
"""Opens the follow-up message that quotes a validation error."""


class JudgeFailed(AxisError):
    """The judge failed for good (transport, refusal or twice-invalid answer).

    Never escapes scoring: the run's score becomes withheld with this message as reason.
    """


@dataclass(frozen=True)
class Message:
    """One message of a judge conversation."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class JudgeRequest:
    """A question for a judge: instructions and the conversation so far."""

    system: str
    messages: tuple[Message, ...]
    purpose: str = "judgment"
    """``goal`` or ``audit`` (and the chunk), for logs and error messages."""

    def followed_by(self, answer: str, complaint: str) -> JudgeRequest:
        """This request plus the judge's answer and a complaint about it."""
        extra = (Message("assistant", answer), Message("user", complaint))
        return JudgeRequest(self.system, self.messages + extra, self.purpose)


@dataclass(frozen=True)
class JudgeReply:
    """A judge's answer and what it cost."""

    text: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    cost_estimated: bool = False
    truncated: bool = False
    """The answer stopped at the output limit."""


@dataclass(frozen=True)
class JudgeChoice:
    """Who judges a run: an API model or an agent."""

    kind: Literal["api", "agent"]
    provider: str | None = None
    """``anthropic`` or ``openai`` for an API judge."""
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    agent: AgentSpec | None = None
    """The agent that judges, for an agent judge."""

    @property
    def key(self) -> tuple[str | None, ...]:
        """A hashable identity (the agent spec itself holds dicts)."""
        return (
            self.kind,
            self.provider,
            self.model,
            self.base_url,
            self.api_key_env,
            self.agent.model_dump_json() if self.agent else None,
        )

    @property
    def label(self) -> str:
        """``anthropic:<model>`` or the judge agent's display name."""
        if self.kind == "api":
            return f"{self.provider}:{self.model}"
        assert self.agent is not None
        return self.agent.name


class Judge(Protocol):
    """Answers judge requests with text: an API model or an agent run."""

    @property
    def choice(self) -> JudgeChoice:
        """Who this judge is."""

    async def ask(self, request: JudgeRequest) -> JudgeReply:
        """One answer to ``request`` (transport retries included).

        Raises:
            JudgeFailed: no usable answer could be had.
        """


def parse_api_model(text: str) -> tuple[str, str] | None:
    """``anthropic:<model>`` → ``("anthropic", "<model>")``; None for anything else."""
    provider, sep, model = text.partition(":")
    if not sep or provider.lower() not in PROVIDERS or not model.strip():
        return None
    return provider.lower(), model.strip()


def _api_choice(text: str, judging: Judging | None, where: str) -> JudgeChoice:
    parsed = parse_api_model(text)
    if parsed is None:
        raise ConfigError(
            f"{where}: expected `anthropic:<model>` or `openai:<model>`, found {text!r}"
        )
    provider, model = parsed
    return JudgeChoice(
        kind="api",
        provider=provider,
        model=model,
        base_url=judging.base_url if judging else None,
        api_key_env=(judging.api_key_env if judging else None) or DEFAULT_KEY_ENV[provider],
    )


def choose_judge(
    judging: Judging | None, run_agent: AgentSpec, override: str | None = None
) -> JudgeChoice:
    """The judge of a run of ``run_agent``, with AXIS's precedence.

    ``override`` (``--judge``) wins: ``provider:model`` for an API judge, else the name of a
    ``judging.agents`` entry or an adapter name. Then ``judging.model`` (an API judge), then
    ``judging.agents`` (the first whose adapter differs from the run's, else the first),
    then the run's own agent.

    Raises:
        ConfigError: a malformed ``provider:model``.
    """
    agents = display_names(judging.agents) if judging and judging.agents else []
    if override:
        if ":" in override and parse_api_model(override) is not None:
            return _api_choice(override, judging, "--judge")
        for spec in agents:
            if override.lower() in (spec.name.lower(), spec.adapter):
                return JudgeChoice(kind="agent", agent=spec)
        if ":" in override:
            _api_choice(override, judging, "--judge")  # raises with the expected form
        return JudgeChoice(kind="agent", agent=AgentSpec(name=override, adapter=override.lower()))
    if judging and judging.model:
        return _api_choice(judging.model, judging, "judging.model")
    if agents:
        different = [a for a in agents if a.adapter != run_agent.adapter]
        return JudgeChoice(kind="agent", agent=(different or agents)[0])
    return JudgeChoice(kind="agent", agent=run_agent)


def on_model_server(choice: JudgeChoice, url: str | None) -> JudgeChoice:
    """An API judge without ``base_url`` goes to the run's scripted model server, if any.

    A dry run (``model_server`` in the config, ``axis run --tape``) then spends no judge
    tokens either; its tape answers the judge prompts (``docs/judging.md``).
    """
    if choice.kind != "api" or choice.base_url or not url:
        return choice
    base = url.rstrip("/")
    return replace(choice, base_url=base if choice.provider == "anthropic" else f"{base}/v1")


def judged_on_model_server(choice: JudgeChoice, url: str | None) -> bool:
    """Does this judge (after :func:`on_model_server`) ask the scripted model server?

    An API judge does when its base URL is the server's; an agent judge when it has no
    ``endpoint`` of its own (the scorer hands it the server's). Its usage is simulated.
    """
    if not url:
        return False
    if choice.kind == "api":
        return bool(choice.base_url) and str(choice.base_url).startswith(url.rstrip("/"))
    return choice.agent is not None and choice.agent.endpoint is None


@dataclass
class SpendMeter:
    """Adds up one run's judge calls, tokens and cost."""

    choice: JudgeChoice | None = None
    calls: int = 0
    cached_calls: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    cost_estimated: bool = False
    simulated: bool = False
    """The judge is the scripted model server: its cost is never reported as spent."""

    def add(self, reply: JudgeReply) -> None:
        """Count one answered call."""
        self.calls += 1
        self.usage = self.usage + reply.usage
        if reply.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + reply.cost_usd
            self.cost_estimated = self.cost_estimated or reply.cost_estimated

    def add_cached(self) -> None:
        """Count one call answered from the cache."""
        self.calls += 1
        self.cached_calls += 1

    def spend(self) -> JudgeSpend:
        """The totals as stored with the score."""
        choice = self.choice
        if choice is None or self.calls == 0:
            return JudgeSpend(kind="none")
        u = self.usage
        return JudgeSpend(
            judge=choice.provider if choice.kind == "api" else choice.label,
            model=choice.model,
            kind=choice.kind,
            calls=self.calls,
            cached_calls=self.cached_calls,
            input_tokens=u.input + u.cache_read_input + u.cache_write_input,
            output_tokens=u.output,
            cost_usd=None if self.cost_usd is None or self.simulated else round(self.cost_usd, 6),
            cost_estimated=self.cost_estimated and not self.simulated,
            cost_simulated=self.simulated,
        )


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```\s*$")


def extract_json(text: str) -> str:
    """The JSON object in an answer: from the first ``{`` to the last ``}``.

    Raises:
        ValueError: no object at all.
    """
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the answer holds no JSON object")
    return body[start : end + 1]


def _problems(exc: ValidationError, limit: int = 8) -> str:
    lines = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        lines.append(f"- {where}: {err['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        lines.append(f"- … and {more} more")
    return "\n".join(lines)


def validate_answer(text: str, answer_type: type[A], check: Callable[[A], None]) -> A:
    """Parse and validate one answer.

    Raises:
        ValueError: a message saying what is wrong, fit to quote back to the judge.
    """
    raw = extract_json(text)
    try:
        json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"the answer is not valid JSON: {exc}") from exc
    try:
        answer = answer_type.model_validate_json(raw)
    except ValidationError as exc:
        raise ValueError(f"the JSON does not fit the schema:\n{_problems(exc)}") from exc
    check(answer)
    return answer


_CUT_OFF = " (the answer was cut off at the output limit: keep rationales short)"


def _complaint(error: str) -> str:
    return (
        f"{RETRY_MARKER}: your answer could not be used because {error}\n"
        "Reply again with only the corrected JSON object, in the format asked for."
    )


@functools.cache
def schema_digest(answer_type: type[BaseModel]) -> str:
    """A short hash of an answer model's JSON Schema (part of the cache key)."""
    schema = json.dumps(answer_type.model_json_schema(), sort_keys=True)
    return hashlib.sha256(schema.encode()).hexdigest()[:16]


def cache_key(choice: JudgeChoice, request: JudgeRequest, answer_type: type[BaseModel]) -> str:
    """The answer cache's key of one request to one judge for one answer schema."""
    body = {
        "v": CACHE_VERSION,
        "judge": [choice.provider, choice.model, choice.base_url],
        "system": request.system,
        "messages": [[m.role, m.text] for m in request.messages],
        "schema": schema_digest(answer_type),
    }
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()


async def ask_validated(
    judge: Judge,
    request: JudgeRequest,
    answer_type: type[A],
    *,
    check: Callable[[A], None] = lambda a: None,
    meter: SpendMeter,
    cache: JudgeCache | None = None,
) -> A:
    """Ask ``request``; retry once quoting the validation error; cache the valid answer.

    Raises:
        JudgeFailed: the call failed, or both answers were unusable.
    """
    key = None
    if cache is not None:
        key = cache_key(judge.choice, request, answer_type)
        hit = cache.get(key)
        if hit is not None:
            try:
                answer = validate_answer(hit, answer_type, check)
            except ValueError:
                pass  # a stale or corrupt entry: ask again
            else:
                meter.add_cached()
                return answer
    reply = await judge.ask(request)
    meter.add(reply)
    try:
        answer = validate_answer(reply.text, answer_type, check)
    except ValueError as first:
        said = reply.text.strip() or "(an empty answer)"  # APIs refuse empty messages
        problem = str(first) + (_CUT_OFF if reply.truncated else "")
        retry = request.followed_by(said, _complaint(problem))
        reply = await judge.ask(retry)
        meter.add(reply)
        try:
            answer = validate_answer(reply.text, answer_type, check)
        except ValueError as second:
            problem = _one_line(str(second)) + (_CUT_OFF if reply.truncated else "")
            raise JudgeFailed(
                f"the {request.purpose} answer was unusable twice: {problem}"
            ) from second
    if cache is not None and key is not None:
        cache.put(key, answer.model_dump_json(by_alias=True))
    return answer


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
