"""Every number in a config or scenario is finite and at most a documented ceiling.

``time_minutes: Infinity`` (or ``.inf``, or ``1e308``) used to be accepted and silently
disabled the limit. The walk below finds every int and float field of the input models, so a
field added later without one of the bounded types of ``config/_base.py`` fails here.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal, get_args, get_origin

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from axis_eval.config._base import (
    MAX_CONCURRENCY,
    MAX_MINUTES,
    MAX_SECONDS,
    MAX_TOKENS,
    Bounds,
)
from axis_eval.config.load import validate_config
from axis_eval.config.models import Config
from axis_eval.config.scenario import ScenarioInput
from axis_eval.errors import EXIT_USAGE, ConfigError

FILE = "/proj/axis.config.json"

NAN, INF = math.nan, math.inf
HOSTILE: list[Any] = [NAN, INF, -INF, "NaN", "Infinity", "-inf", 1e308, 10**400]
"""Not finite, or finite but past any ceiling (as a float, and as an int no float holds)."""


def numeric_leaves(annotation: Any, path: str, seen: set[type]) -> Iterator[tuple[str, Any]]:
    """``(path, type)`` for every int or float reachable from ``annotation``, with the
    ``Annotated`` metadata that validates it kept on the type."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base = get_args(annotation)[0]
        if isinstance(base, type) and issubclass(base, int | float) and base is not bool:
            yield path, annotation
        else:
            yield from numeric_leaves(base, path, seen)
    elif origin in (typing.Union, types.UnionType):
        for member in get_args(annotation):
            yield from numeric_leaves(member, path, seen)
    elif origin in (list, tuple, set, frozenset):
        for member in get_args(annotation):
            yield from numeric_leaves(member, f"{path}[]", seen)
    elif origin is dict:
        key, value = get_args(annotation)
        yield from numeric_leaves(key, f"{path}.<key>", seen)
        yield from numeric_leaves(value, f"{path}.*", seen)
    elif origin is Literal or annotation is bool or annotation is Any:
        return
    elif annotation in (int, float):
        yield path, annotation
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen = seen | {annotation}
        for name, field in annotation.model_fields.items():
            typ: Any = field.annotation
            if field.metadata:
                typ = Annotated[typ, *field.metadata]
            where = f"{path}.{field.alias or name}" if path else field.alias or name
            yield from numeric_leaves(typ, where, seen)


def leaves() -> dict[str, Any]:
    found = dict(numeric_leaves(Config, "", set()))
    found.update(numeric_leaves(ScenarioInput, "<scenario file>", set()))
    return found


LEAVES = leaves()


def test_the_walk_finds_the_known_numbers() -> None:
    """The walk is not vacuous: it reaches the fields the campaign found, in every place."""
    expected = {
        "settings.concurrency",
        "settings.runs",
        "settings.limits.run.time_minutes",
        "settings.limits.run.tokens",
        "settings.limits.scenario.time_minutes",
        "settings.scoring_weights.goal_achievement",
        "settings.remotes.maxDepth",
        "judging.timeout_seconds",
        "judging.concurrency",
        "judging.context_tokens",
        "judging.max_attempts",
        "beforeAll[].timeout_minutes",
        "afterAll[].timeout_minutes",
        "scenarios[].limits.time_minutes",
        "scenarios[].setup[].timeout_minutes",
        "scenarios[].judge[].weight",
        "scenarios[].runs",
        "scenarios[].variants[].limits.tokens",
        "<scenario file>.limits.time_minutes",
        "<scenario file>.variants[].teardown[].timeout_minutes",
        "<scenario file>.judge[].weight",
    }
    assert expected <= set(LEAVES), sorted(expected - set(LEAVES))


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_every_number_field_rejects_nan_infinity_and_huge_values(path: str) -> None:
    adapter = TypeAdapter(LEAVES[path])
    for value in HOSTILE:
        with pytest.raises(ValidationError):
            adapter.validate_python(value)


def test_a_bare_float_would_fail_the_walk() -> None:
    """The check above is what catches an unbounded field: a plain float takes them all."""
    adapter = TypeAdapter(float)
    assert [adapter.validate_python(v) for v in (INF, 1e308)] == [INF, 1e308]
    assert TypeAdapter(int).validate_python(10**400) == 10**400


def problems(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        validate_config(raw, FILE)
    assert info.value.exit_code == EXIT_USAGE
    return info.value.render()


def cfg(**fields: Any) -> dict[str, Any]:
    return {"agents": ["claude-code"], **fields}


def inline(**fields: Any) -> dict[str, Any]:
    return cfg(scenarios=[{"key": "k", "name": "n", "prompt": "p", "judge": "j", **fields}])


def limits(which: str, **limit: Any) -> dict[str, Any]:
    return cfg(settings={"limits": {which: limit}})


CASES: list[tuple[str, Any]] = [
    ("settings.limits.scenario.time_minutes", lambda v: limits("scenario", time_minutes=v)),
    ("settings.limits.run.time_minutes", lambda v: limits("run", time_minutes=v)),
    ("settings.limits.run.tokens", lambda v: limits("run", tokens=v)),
    ("judging.timeout_seconds", lambda v: cfg(judging={"timeout_seconds": v})),
    ("judging.context_tokens", lambda v: cfg(judging={"context_tokens": v})),
    ("settings.concurrency", lambda v: cfg(settings={"concurrency": v})),
    (
        "beforeAll[0].timeout_minutes",
        lambda v: cfg(beforeAll=[{"action": "run_script", "command": "x", "timeout_minutes": v}]),
    ),
    ("scenarios[0].limits.time_minutes", lambda v: inline(limits={"time_minutes": v})),
    (
        "scenarios[0].judge[0].weight",
        lambda v: inline(judge=[{"check": "c", "weight": v}]),
    ),
    (
        "settings.scoring_weights.agent",
        lambda v: cfg(
            settings={
                "scoring_weights": {
                    "goal_achievement": 0.4,
                    "environment": 0.2,
                    "service": 0.2,
                    "agent": v,
                }
            }
        ),
    ),
]


@pytest.mark.parametrize(("path", "build"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("value", [NAN, INF, -INF], ids=["nan", "inf", "-inf"])
def test_non_finite_values_name_the_file_and_the_field(path: str, build: Any, value: float) -> None:
    text = problems(build(value))
    assert FILE in text
    assert f"{path}: expected a finite number " in text


@pytest.mark.parametrize(("path", "build"), CASES, ids=[c[0] for c in CASES])
def test_huge_values_name_the_field_and_the_ceiling(path: str, build: Any) -> None:
    whole = "tokens" in path or "concurrency" in path
    text = problems(build(10**18 if whole else 1e308))
    assert f"{path}: expected a number of at most " in text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            limits("run", time_minutes=INF),
            "settings.limits.run.time_minutes: expected a finite number greater than 0 and at "
            "most 10,080 (7 days), found Infinity",
        ),
        (
            limits("scenario", time_minutes=1e308),
            "settings.limits.scenario.time_minutes: expected a number of at most 10,080 "
            "(7 days), found 1e+308",
        ),
        (
            cfg(judging={"timeout_seconds": INF}),
            "judging.timeout_seconds: expected a finite number greater than 0 and at most "
            "604,800 (7 days), found Infinity",
        ),
        (
            limits("run", tokens=MAX_TOKENS + 1),
            "settings.limits.run.tokens: expected a number of at most 1,000,000,000,000",
        ),
        (
            cfg(settings={"concurrency": MAX_CONCURRENCY + 1}),
            "settings.concurrency: expected a number of at most 1000, found 1001",
        ),
    ],
)
def test_messages(raw: dict[str, Any], expected: str) -> None:
    assert expected in problems(raw)


def test_the_ceilings_themselves_are_accepted() -> None:
    config = validate_config(
        cfg(
            settings={
                "concurrency": MAX_CONCURRENCY,
                "limits": {"run": {"time_minutes": MAX_MINUTES, "tokens": MAX_TOKENS}},
            },
            judging={"timeout_seconds": MAX_SECONDS},
        ),
        FILE,
    )
    run = config.settings.limits.run
    assert run is not None and (run.time_minutes, run.tokens) == (MAX_MINUTES, MAX_TOKENS)
    assert config.judging is not None and config.judging.timeout_seconds == MAX_SECONDS


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("time_minutes: .inf\n", INF),
        ("time_minutes: -.inf\n", -INF),
        ("time_minutes: .nan\n", NAN),
        ("time_minutes: 1.0e+308\n", 1e308),
    ],
)
def test_yaml_spellings_reach_the_check(text: str, value: float) -> None:
    import yaml

    parsed = yaml.safe_load(text)["time_minutes"]
    assert isinstance(parsed, float)
    assert parsed == value or (math.isnan(parsed) and math.isnan(value))
    assert "settings.limits.run.time_minutes: expected a" in problems(
        limits("run", time_minutes=parsed)
    )


@pytest.mark.parametrize(
    ("bounds", "value", "expected"),
    [
        (Bounds(ge=0, le=1), 0.5, None),
        (Bounds(ge=0, le=1), 1.5, "a number of at most 1"),
        (Bounds(ge=0, le=1), -0.1, "a number of at least 0"),
        (Bounds(ge=0, le=1), NAN, "a finite number of at least 0 and at most 1"),
        (
            Bounds(gt=0, le=60, note=" (a minute)"),
            INF,
            "a finite number greater than 0 and at most 60 (a minute)",
        ),
        (Bounds(le=10), 2.5, None),
    ],
)
def test_bounds_problem_is_reusable_outside_models(
    bounds: Bounds, value: float, expected: str | None
) -> None:
    """Command-line options use the same rule without a model."""
    assert bounds.problem(value) == expected


def test_json_schema_states_the_ceiling() -> None:
    from axis_eval.schemas import schema_for

    limit = schema_for("config")["$defs"]["Limit"]["properties"]
    [minutes, _] = limit["time_minutes"]["anyOf"]
    assert minutes == {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_MINUTES}
