"""Test agent that prints the environment it was started with (/proc/self/environ) as JSON."""

import json

with open("/proc/self/environ", "rb") as handle:
    entries = [item.decode() for item in handle.read().split(b"\0") if item]
print(json.dumps(dict(item.split("=", 1) for item in entries)), flush=True)
