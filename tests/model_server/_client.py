"""A strict little client for the four wire protocols, as the tests' agent stand-in.

Each :class:`Driver` posts a request, checks the answer is well-formed for its protocol
(the SSE event order above all), turns it into an :class:`Answer`, and appends that answer
plus tool results to the request the way the real agent CLIs do.
"""

from __future__ import annotations

import copy
import http.client
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SAMPLES = Path(__file__).resolve().parent / "samples"


# ---------------------------------------------------------------------- HTTP


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    url: str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> Response:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(str(parts.hostname), parts.port, timeout=10)
    try:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=sent)
        resp = conn.getresponse()
        payload = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload)
    finally:
        conn.close()


def post(url: str, path: str, body: Any, headers: dict[str, str] | None = None) -> Response:
    return request(url, "POST", path, body, headers)


@dataclass
class Event:
    event: str | None
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


def sse_events(body: bytes) -> list[Event]:
    """Parse a text/event-stream body strictly: every frame ends with a blank line."""
    text = body.decode()
    assert text.endswith("\n\n"), "an SSE stream ends with a blank line"
    events = []
    for block in text.split("\n\n")[:-1]:
        name = None
        data: list[str] = []
        for line in block.split("\n"):
            assert line, "no stray blank lines inside a frame"
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        assert data, f"frame without data: {block!r}"
        events.append(Event(name, "\n".join(data)))
    return events


# ---------------------------------------------------------------------- answers


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


def _flat(tools: list[Any], make: Any) -> list[Any]:
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


# ---------------------------------------------------------------------- Anthropic


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
        body["tools"] = _flat(
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


# ---------------------------------------------------------------------- OpenAI Responses


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
        restored = _flat(
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


# ---------------------------------------------------------------------- OpenAI Chat


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
        body["tools"] = _flat(
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


# ---------------------------------------------------------------------- Gemini


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


DRIVERS = {"anthropic": Anthropic, "responses": Responses, "chat": Chat, "gemini": Gemini}


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
