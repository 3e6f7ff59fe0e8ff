"""The JSON Schemas kept in schemas/ match the models (regenerate with `make schemas`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axis_eval.schemas import SCHEMA_NAMES, schema_for

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_committed_schema_is_current(name: str) -> None:
    committed = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    assert committed == schema_for(name), f"schemas/{name}.schema.json is stale: run make schemas"


def test_config_schema_documents_fields() -> None:
    schema = schema_for("config")
    assert "agents" in schema["properties"]
    assert "description" in schema["properties"]["agents"]
    assert "beforeAll" in schema["properties"]
