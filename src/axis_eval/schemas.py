"""JSON Schema for every file format, generated from the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_NAMES = ("config", "scenario", "report", "result", "tape", "baseline")


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema of one format: config, scenario, report (``report.json``), result or
    tape (a scripted model for ``axis model-server``) or baseline."""
    from pydantic import BaseModel

    from axis_eval.config.models import Config
    from axis_eval.config.scenario import ScenarioInput
    from axis_eval.report.models import ReportManifest, RunResult
    from axis_eval.runs.baseline_models import Baseline
    from axis_model_server.tape import Tape

    models: dict[str, tuple[type[BaseModel], str, str]] = {
        "config": (Config, "validation", "axis.config.json"),
        "scenario": (ScenarioInput, "validation", "An axis-eval / AXIS scenario file"),
        "report": (ReportManifest, "serialization", "report.json"),
        "result": (RunResult, "serialization", "A run's result.json"),
        "tape": (Tape, "validation", "A tape for axis model-server"),
        "baseline": (Baseline, "serialization", "A baseline (.axis/baselines/<name>.json)"),
    }
    if name not in models:
        raise KeyError(name)
    model, mode, title = models[name]
    schema = model.model_json_schema(mode=mode, by_alias=True)  # type: ignore[arg-type]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    return schema


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<name>.schema.json`` for every format into ``folder``."""
    from axis_eval._util.files import atomic_write_text

    written = []
    for name in SCHEMA_NAMES:
        path = folder / f"{name}.schema.json"
        atomic_write_text(path, json.dumps(schema_for(name), indent=2) + "\n")
        written.append(path)
    return written
