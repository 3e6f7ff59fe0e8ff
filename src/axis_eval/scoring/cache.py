"""The judge answer cache: validated answers on disk, keyed by judge, prompt and schema.

``<config dir>/.axis/judge-cache/<2 hex>/<64 hex>.json``. The key is a SHA-256 over the
judge (provider, model and base URL), the whole request (system text and messages, already
redacted) and the answer schema's hash, so a changed prompt, model or schema misses. Only
answers that passed validation are stored; writes are atomic, so a reader never sees half
an entry, and an unreadable entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from axis_eval._util.files import atomic_write_text

if TYPE_CHECKING:
    from axis_eval.scoring.judge import JudgeChoice, JudgeRequest

CACHE_DIR = Path(".axis") / "judge-cache"
CACHE_VERSION = 1


def cache_root(config_dir: str | Path) -> Path:
    """``<config dir>/.axis/judge-cache``."""
    return Path(config_dir) / CACHE_DIR


class JudgeCache:
    """Validated judge answers by key; safe to share between jobs and processes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(choice: JudgeChoice, request: JudgeRequest, schema_digest: str) -> str:
        """The cache key of one request to one judge."""
        body = {
            "v": CACHE_VERSION,
            "judge": [choice.provider, choice.model, choice.base_url],
            "system": request.system,
            "messages": [[m.role, m.text] for m in request.messages],
            "schema": schema_digest,
        }
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(data.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The stored answer (JSON text), or None."""
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        answer = entry.get("answer") if isinstance(entry, dict) else None
        if not isinstance(answer, str):
            self.misses += 1
            return None
        self.hits += 1
        return answer

    def put(self, key: str, answer: str) -> None:
        """Store a validated answer (atomically; a failed write is only a lost entry)."""
        entry = {"version": CACHE_VERSION, "answer": answer}
        try:
            atomic_write_text(self._path(key), json.dumps(entry, ensure_ascii=False))
        except OSError:
            pass
