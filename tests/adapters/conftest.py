"""Fixtures for adapter tests: job inputs and run controls (helpers in tests/agent_runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from axis_eval.execute.supervise import RunControl
from helpers.agent_runs import MakeInput, input_maker, new_control


@pytest.fixture
def control() -> RunControl:
    return new_control()


@pytest.fixture
def make_input(tmp_path: Path) -> MakeInput:
    return input_maker(tmp_path)
