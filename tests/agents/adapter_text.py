"""Test agent printing the prompt back as plain text, splitting a character across writes."""

import sys
import time

out = sys.stdout.buffer
prompt = " ".join(sys.argv[1:])
out.write(b"  echo: ")
out.flush()
data = "café ☕ ".encode()
out.write(data[:4])  # ends inside the two-byte "é"
out.flush()
time.sleep(0.05)
out.write(data[4:])
out.write(prompt.encode() + b"\n\n")
out.flush()
