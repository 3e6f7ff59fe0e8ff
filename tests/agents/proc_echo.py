"""Test agent that copies stdin to stdout until EOF."""

import sys

sys.stdout.buffer.write(sys.stdin.buffer.read())
sys.stdout.buffer.flush()
