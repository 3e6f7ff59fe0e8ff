"""The judge answer cache: validated answers on disk, by key.

``<config dir>/.axis/judge-cache/<2 hex>/<64 hex>.json``. The key
(:func:`axis_eval.scoring.judge.cache_key`) is a SHA-256 over the judge, the whole request
(already redacted) and the answer schema's hash, so a changed prompt, model or schema
misses. Only answers that passed validation are stored; writes are atomic, so a reader
never sees half an entry, and an unreadable entry is a miss.
"""

from __future__ import annotations

import json
from pathlib import Path

from axis_eval.files import atomic_write_text

CACHE_DIR = Path(".axis") / "judge-cache"
CACHE_VERSION = 1
"""Part of every key and entry: bump it to drop every stored answer."""


def cache_root(config_dir: str | Path) -> Path:
    """``<config dir>/.axis/judge-cache``."""
    return Path(config_dir) / CACHE_DIR


class JudgeCache:
    """Validated judge answers by key; safe to share between jobs and processes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0

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
