"""The Gemini driver."""

from __future__ import annotations

import copy
from typing import Any

from .driver import Answer, Call, Driver
from .transport import Response, sse_events


class Gemini(Driver):
    name = "gemini"
    protocol = "gemini"

    def path(self, model: str, stream: bool) -> str:
        if stream:
            return f"/v1beta/models/{model}:streamGenerateContent?alt=sse"
        return f"/v1beta/models/{model}:generateContent"

    def minimal(self, prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "systemInstruction": {"role": "user", "parts": [{"text": "You are a test agent."}]},
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": t["name"],
                            "description": t["description"],
                            "parametersJsonSchema": t["parameters"],
                        }
                        for t in tools
                    ]
                }
            ],
        }

    def parse(self, resp: Response, stream: bool) -> Answer:
        if stream:
            events = sse_events(resp.body)
            assert all(ev.event is None for ev in events)
            chunks = [ev.json() for ev in events]
        else:
            chunks = [resp.json()]
        text = ""
        calls: list[Call] = []
        for index, chunk in enumerate(chunks):
            candidate = chunk["candidates"][0]
            assert candidate["content"]["role"] == "model"
            last = index == len(chunks) - 1
            assert ("finishReason" in candidate) == last, "only the last chunk finishes"
            assert ("usageMetadata" in chunk) == last
            for part in candidate["content"]["parts"]:
                if "text" in part:
                    text += part["text"]
                if "functionCall" in part:
                    fc = part["functionCall"]
                    calls.append(Call(f"{fc['name']}-{len(calls)}", fc["name"], fc["args"]))
        meta = chunks[-1]["usageMetadata"]
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        assert meta["totalTokenCount"] == meta["promptTokenCount"] + meta["candidatesTokenCount"]
        stop = "tool_calls" if calls else "stop"
        return Answer(
            text, calls, stop, meta["promptTokenCount"], meta["candidatesTokenCount"], chunks
        )

    def extend(self, body: dict[str, Any], answer: Answer, outputs: list[str]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        parts: list[dict[str, Any]] = []
        if answer.text:
            parts.append({"text": answer.text})
        parts += [{"functionCall": {"name": c.name, "args": c.args}} for c in answer.calls]
        responses = [
            {"functionResponse": {"name": c.name, "response": {"output": out}}}
            for c, out in zip(answer.calls, outputs, strict=True)
        ]
        body["contents"] += [
            {"role": "model", "parts": parts},
            {"role": "user", "parts": responses},
        ]
        return body
