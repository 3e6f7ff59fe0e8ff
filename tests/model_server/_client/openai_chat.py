"""The OpenAI Chat Completions driver."""

from __future__ import annotations

import copy
import json
from typing import Any

from .driver import Answer, Call, Driver, flat_tools
from .transport import Response, sse_events


class Chat(Driver):
    name = "chat"
    protocol = "openai-chat"

    def path(self, model: str, stream: bool) -> str:
        return "/v1/chat/completions"

    def minimal(self, prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": "qwen-test",
            "messages": [
                {"role": "system", "content": "You are a test agent."},
                {"role": "user", "content": prompt},
            ],
            "tools": [{"type": "function", "function": t} for t in tools],
            "stream": self.stream,
        }
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def restore_tools(self, body: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["tools"] = flat_tools(
            body.get("tools", []),
            lambda n: {
                "type": "function",
                "function": {"name": n, "description": "", "parameters": {"type": "object"}},
            },
        )
        if not body["tools"]:
            del body["tools"]
        return body

    def parse(self, resp: Response, stream: bool) -> Answer:
        if not stream:
            data = resp.json()
            assert data["object"] == "chat.completion"
            choice = data["choices"][0]
            message = choice["message"]
            found = [
                Call(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                for c in message.get("tool_calls") or []
            ]
            return Answer(
                message["content"] or "",
                found,
                choice["finish_reason"],
                data["usage"]["prompt_tokens"],
                data["usage"]["completion_tokens"],
                data,
            )
        events = sse_events(resp.body)
        assert all(ev.event is None for ev in events), "chat chunks are data-only"
        assert events[-1].data == "[DONE]"
        chunks = [ev.json() for ev in events[:-1]]
        assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
        assert len({c["id"] for c in chunks}) == 1
        assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
        text = ""
        calls: dict[int, dict[str, Any]] = {}
        finishes = []
        usage: dict[str, Any] | None = None
        for chunk in chunks:
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk["choices"]:
                delta = choice["delta"]
                text += delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(
                        tc["index"], {"id": None, "name": None, "arguments": ""}
                    )
                    if "id" in tc:
                        assert slot["id"] is None, "a call's id comes once"
                        slot["id"] = tc["id"]
                        slot["name"] = tc["function"]["name"]
                    slot["arguments"] += tc["function"].get("arguments", "")
                if choice["finish_reason"] is not None:
                    finishes.append(choice["finish_reason"])
        assert len(finishes) == 1, "exactly one chunk carries finish_reason"
        assert usage is not None
        assert sorted(calls) == list(range(len(calls)))
        parsed = [
            Call(c["id"], c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())
        ]
        assert (finishes[0] == "tool_calls") == bool(parsed)
        return Answer(
            text, parsed, finishes[0], usage["prompt_tokens"], usage["completion_tokens"], chunks
        )

    def extend(self, body: dict[str, Any], answer: Answer, outputs: list[str]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
        if answer.calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args)},
                }
                for c in answer.calls
            ]
        body["messages"] = [*body["messages"], message] + [
            {"role": "tool", "tool_call_id": c.id, "content": out}
            for c, out in zip(answer.calls, outputs, strict=True)
        ]
        return body
