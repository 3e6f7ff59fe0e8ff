"""Test agent answering with its argv, working directory and a few variables (NDJSON)."""

import json
import os
import sys

seen = {
    "argv": sys.argv[1:],
    "cwd": os.getcwd(),
    "home": os.environ.get("HOME"),
    "marker": os.environ.get("AXIS_JOB_MARKER"),
    "stdin": sys.stdin.read(),
}
print(json.dumps({"type": "result", "text": json.dumps(seen)}))
