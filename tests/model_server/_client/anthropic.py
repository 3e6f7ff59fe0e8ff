"""The Anthropic Messages driver."""

from __future__ import annotations

import copy
import json
from typing import Any

from .driver import Answer, Call, Driver, flat_tools
from .transport import Response, sse_events


class Anthropic(Driver):
    name = "anthropic"
    protocol = "anthropic"

    def path(self, model: str, stream: bool) -> str:
        return "/v1/messages?beta=true"

    def minimal(self, prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "model": "claude-test",
            "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are a test agent."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
            "tools": [
                {
                    "name": t["name"],
                    "description": t["description"],
                    "input_schema": t["parameters"],
                }
                for t in tools
            ],
            "stream": self.stream,
        }

    def restore_tools(self, body: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        body["tools"] = flat_tools(
            body.get("tools", []),
            lambda n: {"name": n, "description": "", "input_schema": {"type": "object"}},
        )
        return body

    def parse(self, resp: Response, stream: bool) -> Answer:
        if not stream:
            assert resp.headers["content-type"] == "application/json"
            msg = resp.json()
            assert msg["type"] == "message" and msg["role"] == "assistant"
            text = "".join(b["text"] for b in msg["content"] if b["type"] == "text")
            calls = [
                Call(b["id"], b["name"], b["input"])
                for b in msg["content"]
                if b["type"] == "tool_use"
            ]
            counts = msg["usage"]
            return Answer(
                text,
                calls,
                msg["stop_reason"],
                counts["input_tokens"],
                counts["output_tokens"],
                msg,
            )
        assert resp.headers["content-type"] == "text/event-stream"
        events = sse_events(resp.body)
        for ev in events:
            assert ev.event == ev.json()["type"], "event name matches data.type"
        names = [ev.event for ev in events]
        assert names[0] == "message_start"
        assert names[-2:] == ["message_delta", "message_stop"]
        start = events[0].json()["message"]
        assert start["content"] == [] and start["role"] == "assistant"
        blocks: list[dict[str, Any]] = []
        open_index: int | None = None
        stop = None
        usage: dict[str, Any] = {}
        for ev in events[1:]:
            data = ev.json()
            if ev.event == "ping":
                assert open_index is None
            elif ev.event == "content_block_start":
                assert open_index is None, "blocks do not overlap"
                assert data["index"] == len(blocks), "block indexes count up from 0"
                open_index = data["index"]
                block = dict(data["content_block"])
                if block["type"] == "tool_use":
                    assert block["input"] == {}
                    block["json"] = ""
                else:
                    assert block == {"type": "text", "text": ""}
                blocks.append(block)
            elif ev.event == "content_block_delta":
                assert data["index"] == open_index
                delta = data["delta"]
                block = blocks[-1]
                if block["type"] == "text":
                    assert delta["type"] == "text_delta"
                    block["text"] += delta["text"]
                else:
                    assert delta["type"] == "input_json_delta"
                    block["json"] += delta["partial_json"]
            elif ev.event == "content_block_stop":
                assert data["index"] == open_index
                open_index = None
            elif ev.event == "message_delta":
                assert open_index is None
                stop = data["delta"]["stop_reason"]
                usage = data["usage"]
            elif ev.event == "message_stop":
                pass
            else:
                raise AssertionError(f"unexpected event {ev.event}")
        assert stop in ("tool_use", "end_turn")
        assert start["usage"]["input_tokens"] == usage["input_tokens"]
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        calls = [
            Call(b["id"], b["name"], json.loads(b["json"]))
            for b in blocks
            if b["type"] == "tool_use"
        ]
        assert (stop == "tool_use") == bool(calls)
        return Answer(
            text,
            calls,
            stop,
            usage["input_tokens"],
            usage["output_tokens"],
            blocks,
            [str(n) for n in names],
        )

    def extend(self, body: dict[str, Any], answer: Answer, outputs: list[str]) -> dict[str, Any]:
        body = copy.deepcopy(body)
        content: list[dict[str, Any]] = []
        if answer.text:
            content.append({"type": "text", "text": answer.text})
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in answer.calls
        ]
        results = [
            {"type": "tool_result", "tool_use_id": c.id, "content": out}
            for c, out in zip(answer.calls, outputs, strict=True)
        ]
        body["messages"] += [
            {"role": "assistant", "content": content},
            {"role": "user", "content": results},
        ]
        return body
