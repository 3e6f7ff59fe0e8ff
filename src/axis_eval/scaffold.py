"""``axis init``: write a starter config and a sample scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from axis_eval.errors import UsageError
from axis_eval.files import atomic_write_text

ConfigFormat = Literal["json", "yaml", "toml"]

SAMPLE_SCENARIO = {
    "name": "Hello World",
    "prompt": "Create a file named hello.txt containing exactly: Hello, World!",
    "judge": [
        {"check": "A file named hello.txt was created in the working directory"},
        {"check": "hello.txt contains the text 'Hello, World!'"},
    ],
}


def _render(data: dict[str, object], fmt: ConfigFormat) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        import yaml

        return str(yaml.safe_dump(data, sort_keys=False))
    lines = [f"{k} = {json.dumps(v)}" for k, v in data.items()]
    return "\n".join(lines) + "\n"


def init_project(
    folder: str | Path,
    *,
    agents: list[str] | None = None,
    scenarios: str = "./scenarios",
    fmt: ConfigFormat = "json",
    force: bool = False,
) -> list[Path]:
    """Write ``axis.config.<fmt>`` and ``<scenarios>/hello-world.json`` into ``folder``.

    Raises:
        UsageError: a file exists and ``force`` is not set, or an agent name is unknown.
    """
    from axis_eval.adapters.builtins import BUILTINS

    names = [a.strip().lower() for a in (agents or ["claude-code"]) if a.strip()]
    unknown = [a for a in names if a not in BUILTINS]
    if unknown:
        raise UsageError(
            f"unknown agent {unknown[0]!r}",
            hint=f"built-in agents: {', '.join(sorted(BUILTINS))}",
        )
    root = Path(folder)
    config_path = root / f"axis.config.{fmt}"
    scenario_path = root / scenarios / "hello-world.json"
    existing = [p for p in (config_path, scenario_path) if p.exists()]
    if existing and not force:
        raise UsageError(f"{existing[0]} already exists", hint="pass --force to overwrite")
    atomic_write_text(config_path, _render({"scenarios": scenarios, "agents": names}, fmt))
    atomic_write_text(scenario_path, json.dumps(SAMPLE_SCENARIO, indent=2) + "\n")
    return [config_path, scenario_path]
