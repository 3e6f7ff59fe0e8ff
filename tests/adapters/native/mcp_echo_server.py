"""A stdio MCP server with one tool, ``echo``, for the MCP tests (newline-delimited JSON-RPC).

When ``MCP_ECHO_LOG`` is set, it appends one JSON line per start: its cwd, a few environment
variables and whether the agent's MCP config sits in its config folder or the workspace.
"""

import json
import os
import sys

if os.environ.get("MCP_ECHO_LOG"):
    cwd = os.getcwd()
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR", "")
    seen = {
        "cwd": cwd,
        "home": os.environ.get("HOME"),
        "config_dir": config_dir,
        "config_has_mcp_json": os.path.isfile(os.path.join(config_dir, "mcp.json")),
        "workspace_files": sorted(os.listdir(cwd)),
    }
    with open(os.environ["MCP_ECHO_LOG"], "a") as log:
        log.write(json.dumps(seen) + "\n")

TOOL = {
    "name": "echo",
    "description": "Echo text back",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}

for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        continue  # a notification
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2024-11-05")
        result = {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo-mcp", "version": "0.1"}}  # fmt: skip
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        result = {"content": [{"type": "text", "text": "MCP-ECHO:" + text}]}
    else:
        error = {"code": -32601, "message": f"unknown method {method}"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "error": error}) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()
