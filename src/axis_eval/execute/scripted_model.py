"""The embedded scripted model server: agents answer from a tape, no tokens spent.

When the config has ``model_server`` (or ``axis run --tape``), the run starts the server
from :mod:`axis_model_server` on 127.0.0.1, points every built-in agent at it (their
``endpoint``), supplies placeholder API keys for the keys the agents require, and records
what the server saw in the report.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from axis_eval.config.models import ModelServerSettings
from axis_eval.errors import ConfigError

if TYPE_CHECKING:
    from axis_model_server import ScriptedModelServer

PLACEHOLDER_KEY = "axis-scripted-model"
"""The value given to required API keys the environment does not set."""


def placeholder_keys(required: list[str], parent: Mapping[str, str]) -> dict[str, str]:
    """The placeholder value for each required API key ``parent`` does not set: what a run
    against the scripted server adds (and what ``--dry-run`` assumes it will)."""
    return {name: PLACEHOLDER_KEY for name in required if not parent.get(name)}


class EmbeddedModelServer:
    """A started scripted model server and what a run needs from it."""

    def __init__(self, settings: ModelServerSettings, config_dir: str) -> None:
        from axis_model_server import ScriptedModelServer, TapeError, load_tape

        path = (Path(config_dir) / settings.tape).resolve()
        try:
            tape = load_tape(path)
        except TapeError as exc:
            raise ConfigError(f"model_server.tape: {exc}") from exc
        self.tape_path = path
        self.settings = settings
        self.server: ScriptedModelServer = ScriptedModelServer(tape).start()

    @property
    def url(self) -> str:
        """The server's base URL."""
        return str(self.server.url)

    def environment(self, required: list[str], parent: Mapping[str, str]) -> dict[str, str]:
        """Variables to add to the parent environment: :func:`placeholder_keys`."""
        return placeholder_keys(required, parent)

    def job_env(self) -> dict[str, str]:
        """Variables every job gets: the proxy trap when asked for."""
        if not self.settings.trap_outside_traffic:
            return {}
        return {
            "HTTPS_PROXY": self.url,
            "HTTP_PROXY": self.url,
            "https_proxy": self.url,
            "http_proxy": self.url,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def summary(self) -> dict[str, Any]:
        """What the report records about the server."""
        requests = self.server.requests
        return {
            "tape": str(self.tape_path),
            "url": self.url,
            "requests": len(requests),
            "sideRequests": sum(1 for r in requests if r.side),
            "unmatchedRequests": sum(1 for r in requests if r.unmatched),
            "connectAttempts": [a.target for a in self.server.connect_attempts],
            "log": "model-server.ndjson",
        }

    def log_lines(self) -> list[str]:
        """Every request and refused connection, one JSON object per line."""
        records: list[Any] = [*self.server.requests, *self.server.connect_attempts]
        records.sort(key=lambda r: r.timestamp)
        return [json.dumps(r.model_dump(mode="json")) for r in records]

    def stop(self) -> None:
        """Stop serving."""
        self.server.stop()
