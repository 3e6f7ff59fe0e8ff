"""The scheduler plugin that counts each job's starts (the worker-loss tests use it live)."""

from __future__ import annotations

import pytest

from axis_eval.distributed import attempts, names
from axis_eval.distributed.attempts import AttemptsPlugin


def test_each_start_is_recorded_in_order_and_forgotten_with_its_key() -> None:
    plugin = AttemptsPlugin()
    key = names.task_key("tok", 3)
    assert plugin.attempt(key, "tcp://a") == ["tcp://a"]
    assert plugin.attempt(key, "tcp://b") == ["tcp://a", "tcp://b"]
    assert plugin.attempt(names.task_key("tok", 4), "tcp://b") == ["tcp://b"]
    plugin.transition(key, "memory", "released")
    assert plugin.starts[key] == ["tcp://a", "tcp://b"]  # released is not the end
    plugin.transition(key, "released", "forgotten")
    assert key not in plugin.starts
    plugin.transition("someone-else", "released", "forgotten")  # other keys: untouched
    assert list(plugin.starts) == [names.task_key("tok", 4)]


def test_the_record_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attempts, "MAX_KEYS", 3)
    plugin = AttemptsPlugin()
    for n in range(5):
        plugin.attempt(names.task_key("tok", n), "w")
    assert list(plugin.starts) == [names.task_key("tok", n) for n in (2, 3, 4)]


def test_job_keys_are_the_keys_it_forgets() -> None:
    assert names.task_key("tok", 1).startswith(attempts.PREFIX)
