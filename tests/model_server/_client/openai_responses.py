"""The OpenAI Responses driver."""

from __future__ import annotations

import copy
import json
from typing import Any

from .driver import Answer, Call, Driver, flat_tools
from .transport import Response, sse_events


class Responses(Driver):
    name = "responses"
    protocol = "openai-responses"

    def path(self, model: str, stream: bool) -> str:
        return "/v1/responses"

    def minimal(self, prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "model": "gpt-test",
            "instructions": "You are a test agent.",
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": prompt}],
                }
            ],
            "tools": [{"type": "function", **t} for t in tools],
            "stream": self.stream,
        }

    def restore_tools(self, body: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        if "tools" in body:
            body["tools"] = self._restore(body["tools"])
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "additional_tools":
                item["tools"] = self._restore(item["tools"])
        return body

    def _restore(self, tools: list[Any]) -> list[Any]:
        """Name-only tools become minimal functions, inside namespaces too."""
        restored = flat_tools(
            tools,
            lambda n: {
                "type": "function",
                "name": n,
                "description": "",
                "parameters": {"type": "object"},
            },
        )
        for tool in restored:
            if tool.get("type") == "namespace":
                tool["tools"] = self._restore(tool["tools"])
        return restored

    def parse(self, resp: Response, stream: bool) -> Answer:
        if not stream:
            data = resp.json()
            return self._answer(data, [])
        events = sse_events(resp.body)
        datas = [ev.json() for ev in events]
        for ev, data in zip(events, datas, strict=True):
            assert ev.event == data["type"]
        assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
        names = [d["type"] for d in datas]
        assert names[:2] == ["response.created", "response.in_progress"]
        assert names[-1] == "response.completed"
        position = 2
        output_index = 0
        while names[position] != "response.completed":
            assert names[position] == "response.output_item.added"
            item = datas[position]["item"]
            assert datas[position]["output_index"] == output_index
            position += 1
            if item["type"] == "message":
                expected_head = "response.content_part.added"
                assert names[position] == expected_head
                position += 1
                text = ""
                while names[position] == "response.output_text.delta":
                    text += datas[position]["delta"]
                    position += 1
                assert names[position] == "response.output_text.done"
                assert datas[position]["text"] == text
                position += 1
                assert names[position] == "response.content_part.done"
                position += 1
            elif item["type"] == "function_call":
                arguments = ""
                while names[position] == "response.function_call_arguments.delta":
                    arguments += datas[position]["delta"]
                    position += 1
                assert names[position] == "response.function_call_arguments.done"
                assert datas[position]["arguments"] == arguments
                position += 1
            elif item["type"] == "custom_tool_call":
                text = ""
                while names[position] == "response.custom_tool_call_input.delta":
                    text += datas[position]["delta"]
                    position += 1
                assert names[position] == "response.custom_tool_call_input.done"
                position += 1
            assert names[position] == "response.output_item.done"
            assert datas[position]["output_index"] == output_index
            done = datas[position]["item"]
            assert done["id"] == item["id"] and done["status"] == "completed"
            position += 1
            output_index += 1
        final = datas[-1]["response"]
        assert len(final["output"]) == output_index
        return self._answer(final, names)

    def _answer(self, data: dict[str, Any], names: list[str]) -> Answer:
        assert data["object"] == "response" and data["status"] == "completed"
        text = ""
        calls = []
        for item in data["output"]:
            if item["type"] == "message":
                text += "".join(p["text"] for p in item["content"])
            elif item["type"] == "function_call":
                args = json.loads(item["arguments"])
                namespace = item.get("namespace")
                calls.append(Call(item["call_id"], item["name"], args, "function", namespace))
            elif item["type"] == "custom_tool_call":
                text = {"input": item["input"]}
                namespace = item.get("namespace")
                calls.append(Call(item["call_id"], item["name"], text, "custom", namespace))
        usage = data["usage"]
        assert usage["input_tokens_details"] == {"cached_tokens": 0}
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        stop = "tool_calls" if calls else "stop"
        return Answer(text, calls, stop, usage["input_tokens"], usage["output_tokens"], data, names)

    def extend(self, body: dict[str, Any], answer: Answer, outputs: list[str]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        items = list(body["input"])
        items += answer.raw["output"]
        for call, out in zip(answer.calls, outputs, strict=True):
            kind = "custom_tool_call_output" if call.kind == "custom" else "function_call_output"
            items.append({"type": kind, "call_id": call.id, "output": out})
        body["input"] = items
        return body
