"""A test agent for the git-source tests: records what it finds, then answers.

Usage: ``git_probe.py ndjson|claude [ARGS...]``. Writes ``$E2E_DIR/probe-<scenario>.json``:
the workspace's files (relative path -> text) and the skills installed in
``$CLAUDE_CONFIG_DIR/skills`` (relative path -> text). Answers in axis-eval's normalized
events (``ndjson``) or as Claude Code's stream-json ``result`` line (``claude``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def _files(root: Path) -> dict[str, str]:
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_text(errors="replace")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ndjson"
    skills = Path(os.environ.get("CLAUDE_CONFIG_DIR", "/nonexistent")) / "skills"
    seen = {"workspace": _files(Path.cwd()), "skills": _files(skills)}
    scenario = os.environ.get("AXIS_SCENARIO", "unknown").replace("/", "_")
    (Path(os.environ["E2E_DIR"]) / f"probe-{scenario}.json").write_text(json.dumps(seen))
    if mode == "claude":
        result = {"type": "result", "subtype": "success", "is_error": False, "result": "probed"}
        print(json.dumps(result), flush=True)
    else:
        print(json.dumps({"type": "result", "text": "probed"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
