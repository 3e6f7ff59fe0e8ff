"""Test agent that says one thing, reports some usage, then sleeps forever."""

import json
import sys
import time

print(json.dumps({"type": "assistant", "text": "Starting the long task"}), flush=True)
print(json.dumps({"type": "usage", "input_tokens": 10, "output_tokens": 5}), flush=True)
sys.stderr.write("still working\n")
sys.stderr.flush()
while True:
    time.sleep(60)
