"""A strict little client for the four wire protocols, as the tests' agent stand-in.

Each :class:`Driver` posts a request, checks the answer is well-formed for its protocol
(the SSE event order above all), turns it into an :class:`Answer`, and appends that answer
plus tool results to the request the way the real agent CLIs do.
"""

from .anthropic import Anthropic
from .driver import SAMPLES, Answer, Call, Driver, load_samples, shell_tool
from .gemini import Gemini
from .openai_chat import Chat
from .openai_responses import Responses
from .transport import Event, Response, post, request, sse_events

__all__ = [
    "DRIVERS",
    "SAMPLES",
    "Answer",
    "Anthropic",
    "Call",
    "Chat",
    "Driver",
    "Event",
    "Gemini",
    "Response",
    "Responses",
    "load_samples",
    "post",
    "request",
    "shell_tool",
    "sse_events",
]

DRIVERS = {"anthropic": Anthropic, "responses": Responses, "chat": Chat, "gemini": Gemini}
