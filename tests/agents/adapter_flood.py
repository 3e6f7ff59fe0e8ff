"""Test agent that keeps writing long assistant messages until stopped."""

import json
import time

line = json.dumps({"type": "assistant", "text": "x" * 1000})
while True:
    print(line, flush=True)
    time.sleep(0.01)
