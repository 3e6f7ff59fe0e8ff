"""Test agent that answers, leaves a background child holding stdout, and exits 0."""

import json
import subprocess
import sys

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
print(json.dumps({"type": "result", "text": "done, daemon left behind"}), flush=True)
