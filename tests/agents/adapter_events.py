"""Test agent printing axis-eval's normalized NDJSON events; argv[1] picks a script."""

import json
import sys


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def conversation() -> None:
    emit(type="session", id="sess-42")
    emit(type="thinking", text="I should list the files.")
    emit(type="assistant_delta", text="Let me ")
    emit(type="assistant_delta", text="look.")
    emit(type="tool_call", id="t1", name="Bash", input={"command": "ls"})
    emit(type="tool_result", id="t1", output="README.md\n", is_error=False)
    emit(
        type="usage", input_tokens=120, output_tokens=30, cache_read_input_tokens=50, cost_usd=0.01
    )
    emit(type="assistant", text="The folder holds README.md.")


script = sys.argv[1] if len(sys.argv) > 1 else "full"
if script == "full":
    conversation()
    emit(type="result", text="README.md")
elif script == "no-result":  # answer only as the last assistant message
    conversation()
elif script == "bad-line":
    emit(type="assistant", text="before")
    sys.stdout.write("this is not json {\n\n   \n")
    emit(type="result", text="after")
elif script == "unknown":
    emit(type="telemetry", data=1)
    emit(type="assistant", text=5)
    emit(type="result", text="done")
elif script == "result-then-fail":
    emit(type="assistant", text="All done.")
    emit(type="result", text="All done.")
    sys.stderr.write("crashed while shutting down\n")
    sys.exit(3)
elif script == "fail-no-result":
    emit(type="assistant", text="Working on it")
    sys.stderr.write("warming up\n\nfatal: the model is overloaded\n")
    sys.exit(2)
elif script == "error-event":
    emit(type="error", message="API key invalid")
elif script == "nothing":
    pass
elif script == "banner":
    print("Welcome to some agent v1.0")
