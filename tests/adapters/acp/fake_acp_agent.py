"""A tiny ACP agent for tests: newline-delimited JSON-RPC 2.0 on stdin/stdout, no libraries.

It answers ``initialize`` and ``session/new``; on ``session/prompt`` it acts on markers in
the prompt text:

  (none)            streams text, a tool call (``tool_call`` → ``tool_call_update`` with
                    the input → ``session/request_permission`` → the file written through
                    the client's ``fs/write_text_file`` and read back through
                    ``fs/read_text_file`` → ``tool_call_update`` completed), a usage
                    update with a cost, the answer; returns ``end_turn`` with usage
  [[gemini]]        like Gemini CLI: no ``tool_call`` before the permission request, an
                    empty completed update, usage only in ``_meta.quota.token_count``
  [[thought]]       a thought chunk and a plan first
  [[fail_tool]]     the tool call ends ``failed``
  [[noise]]         a stdout line that is not JSON, and a vendor notification
  [[stop:REASON]]   returns that stop reason
  [[error]]         answers session/prompt with a JSON-RPC error
  [[crash]]         writes to stderr and exits 3 in the middle of the prompt
  [[hang]]          leaves a child and a setsid child, writes all pids to
                    ``$FAKE_ACP_DIR/pids-<scenario>.json`` and never answers (ignores EOF)
  [[tokens]]        a usage update of 50,000 tokens, then hangs like [[hang]]

Everything it received is appended to ``$FAKE_ACP_DIR/received-<scenario>.jsonl`` when
that variable is set.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_waiting: dict[int, Any] = {}
_replies: dict[int, threading.Event] = {}
_next_id = [100]


def out_dir() -> Path | None:
    folder = os.environ.get("FAKE_ACP_DIR")
    return Path(folder) if folder else None


def tag() -> str:
    return os.environ.get("AXIS_SCENARIO", "none").replace("/", "_").replace("@", "_")


def log_received(message: Any) -> None:
    folder = out_dir()
    if folder is not None:
        with open(folder / f"received-{tag()}.jsonl", "a") as f:
            f.write(json.dumps(message) + "\n")


def send(message: dict[str, Any]) -> None:
    with _lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def notify(session_id: str, update: dict[str, Any]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }
    )


def request(method: str, params: dict[str, Any]) -> Any:
    """Send a request to the client and wait for its answer (the reader thread delivers)."""
    with _lock:
        _next_id[0] += 1
        rid = _next_id[0]
        event = _replies[rid] = threading.Event()
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    if not event.wait(30):
        raise SystemExit(f"no answer to {method}")
    reply = _waiting.pop(rid)
    if "error" in reply:
        raise RuntimeError(f"{method} failed: {reply['error']}")
    return reply.get("result")


def text_chunk(session_id: str, text: str, message_id: str, kind: str = "agent_message_chunk"):
    notify(
        session_id,
        {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "messageId": message_id},
    )


def sleep_forever() -> None:
    while True:
        time.sleep(60)


def hang() -> None:
    leave_children()
    sleep_forever()


def leave_children() -> None:
    """Fork a child and a setsid child that sleep forever; record every pid."""
    children: list[int] = []
    for new_session in (False, True):
        pid = os.fork()
        if pid == 0:
            if new_session:
                os.setsid()
            sleep_forever()
        children.append(pid)
    folder = out_dir()
    if folder is not None:
        path = folder / f"pids-{tag()}.json"
        path.with_suffix(".part").write_text(json.dumps([os.getpid(), *children]))
        os.replace(path.with_suffix(".part"), path)


def do_prompt(rid: Any, params: dict[str, Any], cwd: str) -> None:
    sid = params["sessionId"]
    prompt = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
    gemini = "[[gemini]]" in prompt
    if "[[noise]]" in prompt:
        with _lock:
            sys.stdout.write("this line is not JSON\n")
            sys.stdout.flush()
        send({"jsonrpc": "2.0", "method": "_vendor/progress", "params": {"x": 1}})
    if "[[error]]" in prompt:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "model down"}})
        return
    notify(sid, {"sessionUpdate": "available_commands_update", "availableCommands": []})
    if "[[thought]]" in prompt:
        text_chunk(sid, "Let me think", "t1", "agent_thought_chunk")
        text_chunk(sid, " about it.", "t1", "agent_thought_chunk")
        notify(
            sid,
            {
                "sessionUpdate": "plan",
                "entries": [{"content": "write the file", "priority": "high", "status": "pending"}],
            },
        )
    if "[[tokens]]" in prompt:
        leave_children()
        notify(sid, {"sessionUpdate": "usage_update", "used": 50_000, "size": 1_000_000})
        sleep_forever()
    if "[[hang]]" in prompt:
        text_chunk(sid, "started, now hanging", "m0")
        hang()
    text_chunk(sid, "I'll write ", "m1")
    text_chunk(sid, "the file.", "m1")
    if "[[crash]]" in prompt:
        sys.stderr.write("fatal: the fake agent crashed\n")
        sys.stderr.flush()
        os._exit(3)
    call_id = "call_1"
    command = "echo hi > out.txt"
    if not gemini:
        notify(
            sid,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": "Terminal",
                "kind": "execute",
                "status": "pending",
                "rawInput": {},
                "content": [],
            },
        )
        notify(
            sid,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "title": command,
                "kind": "execute",
                "rawInput": {"command": command},
            },
        )
    tool_call: dict[str, Any] = {"toolCallId": call_id, "title": command, "kind": "execute"}
    if gemini:
        tool_call["content"] = [
            {"type": "content", "content": {"type": "text", "text": "write hi to out.txt"}}
        ]
    else:
        tool_call["rawInput"] = {"command": command}
    answer = request(
        "session/request_permission",
        {
            "sessionId": sid,
            "toolCall": tool_call,
            "options": [
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                {"optionId": "once", "name": "Allow", "kind": "allow_once"},
                {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
            ],
        },
    )
    chosen = answer["outcome"].get("optionId")
    time.sleep(0.2)  # the tool "runs"
    path = os.path.join(cwd, "out.txt")
    request("fs/write_text_file", {"sessionId": sid, "path": path, "content": "hi\n"})
    nested = os.path.join(cwd, "deep", "er", "note.txt")
    request("fs/write_text_file", {"sessionId": sid, "path": nested, "content": "a\nb\nc\n"})
    read = request("fs/read_text_file", {"sessionId": sid, "path": nested, "line": 2, "limit": 1})
    output = request("fs/read_text_file", {"sessionId": sid, "path": path})["content"]
    failed = "[[fail_tool]]" in prompt
    update: dict[str, Any] = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if failed else "completed",
    }
    if gemini:
        update.update({"title": command, "content": [], "kind": "execute"})
    else:
        update["rawOutput"] = output.strip()
        update["content"] = [
            {"type": "content", "content": {"type": "text", "text": f"```\n{output}```"}}
        ]
    notify(sid, update)
    notify(
        sid,
        {
            "sessionUpdate": "usage_update",
            "used": 120,
            "size": 1000,
            "cost": {"amount": 0.25, "currency": "USD"},
        },
    )
    text_chunk(sid, f"Done (permission {chosen}; read {read['content'].strip()}).", "m2")
    match = re.search(r"\[\[stop:(\w+)\]\]", prompt)
    result: dict[str, Any] = {"stopReason": match.group(1) if match else "end_turn"}
    if gemini:
        result["_meta"] = {"quota": {"token_count": {"input_tokens": 300, "output_tokens": 30}}}
    else:
        result["usage"] = {
            "inputTokens": 200,
            "outputTokens": 40,
            "cachedReadTokens": 10,
            "cachedWriteTokens": 0,
            "totalTokens": 250,
        }
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def handle(message: dict[str, Any], cwd: list[str]) -> None:
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": False},
                    "agentInfo": {"name": "fake-acp-agent", "version": "9.8.7"},
                    "authMethods": [],
                },
            }
        )
    elif method == "session/new":
        cwd[0] = params["cwd"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "sess-1"}})
    elif method == "session/prompt":
        threading.Thread(target=do_prompt, args=(rid, params, cwd[0]), daemon=True).start()
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + method}})


def main() -> None:
    cwd = [os.getcwd()]
    log_received({"cwd": cwd[0]})
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        log_received(message)
        if "method" not in message and message.get("id") in _replies:
            _waiting[message["id"]] = message
            _replies.pop(message["id"]).set()
            continue
        handle(message, cwd)
    # EOF on stdin: a well-behaved agent exits (a hanging prompt thread keeps us alive).
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and thread.daemon:
            thread.join()


if __name__ == "__main__":
    main()
