"""A test agent: writes hello.txt in its workspace and reports it as normalized events."""

import json
import sys
from pathlib import Path


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


Path("hello.txt").write_text("Hello")
emit(type="tool_call", id="t1", name="Bash", input={"command": "printf Hello > hello.txt"})
emit(type="tool_result", id="t1", output="", is_error=False)
emit(type="tool_call", id="t2", name="Read", input={"file_path": "hello.txt"})
emit(type="tool_result", id="t2", output="Hello", is_error=False)
emit(type="usage", input_tokens=900, output_tokens=60)
emit(type="result", text="Created hello.txt; it says Hello.")
