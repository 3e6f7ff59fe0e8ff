"""Choose the answer to a model request from the tape and the request's conversation.

Nothing here counts requests: the conversation is picked from the prompt, the turn from
the number of tool-calling assistant turns in the history. A retried request therefore
gets the same answer, and side requests (titles, routing, quota probes) cannot move the
conversation on.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from axis_model_server.normalize import ModelRequest, canonical_json, tokens_for
from axis_model_server.schema_values import smallest_value
from axis_model_server.tape import Conversation, Tape
from axis_model_server.tools import EmittedCall, resolve_call

__all__ = [
    "PAST_END_TEXT",
    "SIDE_TEXT",
    "UNMATCHED_TEXT",
    "Reply",
    "choose_conversation",
    "decide",
    "side_reason",
]

SIDE_TEXT = "ok"
"""The text answer of a side request (title, quota probe, no tools offered)."""
UNMATCHED_TEXT = "(no tape conversation matches this prompt)"
"""The answer when no conversation matches and the tape has no default conversation."""
PAST_END_TEXT = "Done."
"""The answer past the last turn when the last turn has no text."""

_TITLE_SYSTEM = re.compile(r"\b(title|summar(?:y|ies|ize|ise)|topic)\b", re.IGNORECASE)
_TITLE_PROMPT = re.compile(
    r"^\s*(?:please\s+)?(?:generate|write|create|give|suggest|summari[sz]e)\b[^\n]{0,60}"
    r"\b(?:title|summary|conversation)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Reply:
    """What the model answers, in protocol-neutral form."""

    text: str
    calls: tuple[EmittedCall, ...]
    conversation: str | None
    turn: int
    side: str | None
    """Why this is a side request (``json``, ``title``, ``quota``, ``no_tools``,
    ``count_tokens``), or None for a conversation turn."""
    unmatched: bool
    past_end: bool
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        """Input + output: what every protocol's total is."""
        return self.input_tokens + self.output_tokens


def choose_conversation(tape: Tape, req: ModelRequest) -> Conversation | None:
    """The conversation whose ``match`` fits the prompt, else the default one."""
    for text in req.prompt_texts():
        for conversation in tape.conversations:
            if conversation.matches(text):
                return conversation
    return tape.default


def side_reason(req: ModelRequest, conversation: Conversation | None, turn: int) -> str | None:
    """Why ``req`` is a side request, or None. Only requests without tools can be."""
    if req.tools:
        return None
    if req.json_schema is not None:
        return "json"
    last = req.last_user_text()
    if (req.max_tokens is not None and req.max_tokens <= 1) or last.strip().lower() == "quota":
        return "quota"
    system = "\n".join(req.system)[:1000]
    asks_title = any(_TITLE_PROMPT.search(text[:200]) for text in req.user_texts())
    if _TITLE_SYSTEM.search(system) or asks_title:
        return "title"
    upcoming = conversation.turns[turn] if conversation and turn < len(conversation.turns) else None
    if upcoming is not None and upcoming.tool_calls:
        return "no_tools"
    return None


def _call_id(conversation: str, turn: int, index: int) -> str:
    seed = f"{conversation}\x00{turn}\x00{index}".encode()
    return hashlib.sha256(seed).hexdigest()[:24]


def output_tokens_for(text: str, calls: tuple[EmittedCall, ...]) -> int:
    """Tokens of an answer: its text plus the JSON of each call's arguments, / 4."""
    return tokens_for(text + "".join(canonical_json(c.args) for c in calls))


def decide(tape: Tape, req: ModelRequest, *, count_only: bool = False) -> Reply:
    """The answer to ``req`` (``count_only`` for token-counting endpoints)."""
    conversation = choose_conversation(tape, req)
    turn = req.turn_index()
    input_tokens = req.input_tokens()
    name = conversation.name if conversation else None
    unmatched = conversation is None
    reason = "count_tokens" if count_only else side_reason(req, conversation, turn)
    if reason is not None:
        text = SIDE_TEXT
        if reason == "json":
            text = canonical_json(smallest_value(req.json_schema or {}))
        output = 0 if count_only else output_tokens_for(text, ())
        return Reply(text, (), name, turn, reason, unmatched, False, input_tokens, output)
    if conversation is None:
        text = UNMATCHED_TEXT
        return Reply(text, (), None, turn, None, True, False, input_tokens, tokens_for(text))
    past_end = turn >= len(conversation.turns)
    if past_end:
        text = conversation.turns[-1].text or PAST_END_TEXT
        calls: tuple[EmittedCall, ...] = ()
    else:
        step = conversation.turns[turn]
        text = step.text or ""
        calls = tuple(
            resolve_call(call, req, _call_id(conversation.name, turn, i))
            for i, call in enumerate(step.tool_calls)
        )
    output = output_tokens_for(text, calls)
    return Reply(text, calls, name, turn, None, False, past_end, input_tokens, output)
