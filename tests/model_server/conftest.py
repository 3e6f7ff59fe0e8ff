"""Fixtures for the scripted model server tests: a tape and a running server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from axis_model_server import ScriptedModelServer, Tape, parse_tape

from .helpers import TAPE_YAML


@pytest.fixture
def tape() -> Tape:
    return parse_tape(yaml.safe_load(TAPE_YAML))


@pytest.fixture
def server(tape: Tape) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(tape) as running:
        yield running
