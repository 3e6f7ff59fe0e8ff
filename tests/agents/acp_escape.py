"""Test ACP agent that asks the client (the harness) to read and write files for it.

ACP lets an agent call the client's ``fs/read_text_file`` and ``fs/write_text_file``; the
harness serves them itself, on its side of the sandbox. On ``session/prompt`` this agent
reads the prompt as JSON ``{"read": [path, ...], "write": [[path, text], ...]}``
(``$CWD`` in a path: the session's folder), makes those calls (writes first), and answers
with one text message, a JSON list of ``{"method", "path", "ok", "data"}`` (``data``: what
was read, or the error), then ``end_turn``.

Newline-delimited JSON-RPC 2.0 on stdin/stdout, one request in flight at a time.
"""

import json
import sys
from typing import Any

_ids = iter(range(100, 10**6))


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request to the client and its reply (requests from the client meanwhile: none)."""
    rid = next(_ids)
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    for line in sys.stdin:
        if line.strip():
            reply: dict[str, Any] = json.loads(line)
            if reply.get("id") == rid and "method" not in reply:
                return reply
    raise SystemExit(f"no answer to {method}")


def prompt(rid: Any, params: dict[str, Any], cwd: str) -> None:
    sid = params["sessionId"]
    text = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
    plan = json.loads(text)
    results = []
    for path, content in plan.get("write", []):
        full = path.replace("$CWD", cwd)
        reply = ask("fs/write_text_file", {"sessionId": sid, "path": full, "content": content})
        ok = "result" in reply
        results.append({"method": "write", "path": path, "ok": ok, "data": reply.get("error")})
    for path in plan.get("read", []):
        reply = ask("fs/read_text_file", {"sessionId": sid, "path": path.replace("$CWD", cwd)})
        ok = "result" in reply
        data = reply["result"]["content"] if ok else reply.get("error")
        results.append({"method": "read", "path": path, "ok": ok, "data": data})
    update = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": json.dumps(results)},
        "messageId": "m1",
    }
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": sid, "update": update},
        }
    )
    send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})


def main() -> None:
    cwd = ""
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False},
                "agentInfo": {"name": "acp-escape", "version": "1.0.0"},
                "authMethods": [],
            }
            send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif method == "session/new":
            cwd = message["params"]["cwd"]
            send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            prompt(rid, message["params"], cwd)
        elif rid is not None:
            error = {"code": -32601, "message": f"no {method}"}
            send({"jsonrpc": "2.0", "id": rid, "error": error})


if __name__ == "__main__":
    main()
