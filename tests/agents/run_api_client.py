"""A minimal "agent" that asks a model API once: POST <endpoint>/v1/messages, print the text.

argv: ENDPOINT. The prompt arrives on stdin; the key comes from ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request


def main() -> int:
    endpoint, prompt = sys.argv[1], sys.stdin.read()
    body = {
        "model": "claude-test",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": prompt}],
    }
    request = urllib.request.Request(
        endpoint.rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={
            "content-type": "application/json",
            "x-api-key": os.environ["ANTHROPIC_API_KEY"],
            "anthropic-version": "2023-06-01",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.load(response)
    print("".join(b.get("text", "") for b in answer["content"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
