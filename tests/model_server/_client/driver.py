"""What every protocol driver shares: the neutral answer, the captures, the base class."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .transport import Response, post

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@dataclass
class Call:
    id: str
    name: str
    args: dict[str, Any]
    kind: str = "function"
    namespace: str | None = None


@dataclass
class Answer:
    text: str
    calls: list[Call]
    stop: str
    input_tokens: int
    output_tokens: int
    raw: Any = None
    events: list[str] = field(default_factory=list)


def load_samples(name: str) -> list[dict[str, Any]]:
    """The JSON documents of a capture file (they follow each other without separators)."""
    text = (SAMPLES / name).read_text()
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return docs
        doc, index = decoder.raw_decode(text, index)
        docs.append(doc)


def flat_tools(tools: list[Any], make: Any) -> list[Any]:
    return [make(t["(name only)"]) if "(name only)" in t else t for t in tools]


class Driver:
    name: str = ""
    protocol: str = ""

    def __init__(self, stream: bool = True) -> None:
        self.stream = stream

    def path(self, model: str, stream: bool) -> str:
        raise NotImplementedError

    def minimal(self, prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        """A minimal request: system text, one user prompt, tools given as
        ``{"name", "description", "parameters"}``."""
        raise NotImplementedError

    def restore_tools(self, body: dict[str, Any]) -> dict[str, Any]:
        """Replace the captures' ``{"(name only)": NAME}`` tools by minimal definitions."""
        return body

    def parse(self, resp: Response, stream: bool) -> Answer:
        raise NotImplementedError

    def extend(self, body: dict[str, Any], answer: Answer, outputs: list[str]) -> dict[str, Any]:
        raise NotImplementedError

    def send(
        self,
        url: str,
        body: dict[str, Any],
        *,
        model: str = "m",
        headers: dict[str, str] | None = None,
    ) -> Answer:
        resp = post(url, self.path(model, self.stream), body, headers)
        assert resp.status == 200, resp.body
        return self.parse(resp, self.stream)


def shell_tool(name: str, key: str = "command") -> dict[str, Any]:
    """A shell tool definition in the neutral ``{name, description, parameters}`` form."""
    return {
        "name": name,
        "description": "Run a shell command.",
        "parameters": {
            "type": "object",
            "properties": {key: {"type": "string", "description": "The command."}},
            "required": [key],
        },
    }
