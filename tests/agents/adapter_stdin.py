"""Test agent that answers with what it read on stdin and the arguments it got (NDJSON)."""

import json
import sys

data = sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
print(json.dumps({"type": "assistant", "text": "argv=" + json.dumps(sys.argv[1:])}))
print(json.dumps({"type": "result", "text": data}))
