"""The skip-or-fail policy every system-part test goes through."""

from __future__ import annotations

import pytest

from helpers.system_parts import not_run


def test_a_missing_part_skips_loudly_outside_ci(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="!!! DOCKER TEST NOT RUN: no dockerd"):
        not_run("DOCKER TEST", "no dockerd")
    assert "!!! DOCKER TEST NOT RUN: no dockerd" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["true", "TRUE"])
def test_a_missing_part_fails_under_ci(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="!!! DOCKER TEST NOT RUN: no dockerd"):
        not_run("DOCKER TEST", "no dockerd")
