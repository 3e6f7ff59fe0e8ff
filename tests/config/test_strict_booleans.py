"""Booleans in config and scenario files are real booleans, as AXIS's validator has them.

Upstream ``test/unit/config/validator.test.ts``, "rejects variant with non-boolean skip":
``validateScenario({..., variants: [{name: "v", skip: "yes"}]})`` throws
``variants[0].skip must be a boolean``. pydantic's lax mode read ``"yes"`` (and ``1``,
``"true"``, ``1.0``) as ``true`` here; every boolean field is strict now and the error
names the field and says "expected true or false".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from axis_eval.config._problems import problems_from
from axis_eval.config.discover import discover
from axis_eval.config.load import load_config
from axis_eval.config.models import Config
from axis_eval.config.scenario import ScenarioInput
from axis_eval.errors import EXIT_USAGE, ConfigError

NOT_BOOLEANS: list[Any] = ["yes", "no", "true", "false", "", 1, 0, 1.0, [], {}]


def _scenario(**fields: Any) -> dict[str, Any]:
    return {"name": "S", "prompt": "p", "judge": "j", **fields}


def _problems(model: type[BaseModel], raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(raw)
    return [p.render() for p in problems_from(info.value)]


def test_a_variant_skip_of_yes_is_an_error_naming_the_field() -> None:
    """Upstream ``validator.test.ts``, "rejects variant with non-boolean skip"."""
    raw = _scenario(variants=[{"name": "v", "skip": "yes"}])
    assert _problems(ScenarioInput, raw) == [
        'variants[0].skip: expected true or false, found "yes"'
    ]


@pytest.mark.parametrize("value", NOT_BOOLEANS)
def test_no_boolean_field_takes_a_string_or_number(value: Any) -> None:
    """The same rule for a scenario's own ``skip`` and for the config's booleans."""
    [own] = _problems(ScenarioInput, _scenario(skip=value))
    assert own.startswith("skip: expected true or false")
    [variant] = _problems(ScenarioInput, _scenario(variants=[{"name": "v", "skip": value}]))
    assert variant.startswith("variants[0].skip: expected true or false")
    config = {"agents": ["codex"], "model_server": {"tape": "t", "trap_outside_traffic": value}}
    assert _problems(Config, config)[0].startswith(
        "model_server.trap_outside_traffic: expected true or false"
    )


@pytest.mark.parametrize("value", [1, 0, 1.0, [], {}])
def test_an_agent_flag_is_true_false_or_a_string(value: Any) -> None:
    """Flags take strings too (``--k value``), so only the other non-booleans are errors."""
    config = {"agents": [{"agent": "codex", "flags": {"k": value}}]}
    assert _problems(Config, config) == [
        f"agents[0].flags.k: expected true, false or a string, found {_shown(value)}"
    ]


def _shown(value: Any) -> str:
    return {"[]": "[]", "{}": "an object"}.get(repr(value), repr(value))


def test_true_false_and_unset_still_load() -> None:
    base = ScenarioInput.model_validate(
        _scenario(skip=True, variants=[{"name": "on", "skip": False}, {"name": "off"}])
    )
    assert base.skip is True and [v.skip for v in base.variants or []] == [False, None]
    assert ScenarioInput.model_validate(_scenario(skip=None)).skip is None
    config = Config.model_validate(
        {"agents": ["codex"], "model_server": {"tape": "t", "trap_outside_traffic": True}}
    )
    assert config.model_server is not None and config.model_server.trap_outside_traffic


def _bool_schemas(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        if node.get("type") == "bool":
            yield path, node
        for key, child in node.items():
            yield from _bool_schemas(child, f"{path}/{key}")
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _bool_schemas(child, f"{path}/{index}")


@pytest.mark.parametrize("model", [Config, ScenarioInput])
def test_every_boolean_of_the_file_formats_is_strict(model: type[BaseModel]) -> None:
    """A boolean field added later without ``Boolean`` (``config/_base.py``) fails here."""
    found = list(_bool_schemas(model.__pydantic_core_schema__))
    assert found, "the walk found no boolean at all"
    assert [path for path, schema in found if schema.get("strict") is not True] == []


def test_a_config_file_with_a_string_boolean_is_exit_2_naming_file_and_field(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    root = make_project(
        tmp_path, {"agents": ["codex"], "model_server": {"tape": "t", "trap_outside_traffic": "no"}}
    )
    with pytest.raises(ConfigError) as info:
        load_config(cwd=str(root))
    assert info.value.exit_code == EXIT_USAGE
    text = info.value.render()
    assert "axis.config.json" in text
    assert 'model_server.trap_outside_traffic: expected true or false, found "no"' in text


def test_a_scenario_file_with_a_string_skip_is_a_load_failure_naming_the_field(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    """A scenario that fails to load is listed with the others (docs/configuration.md);
    the rest still run."""
    root = make_project(
        tmp_path,
        {"agents": ["codex"]},
        {"bad.json": _scenario(variants=[{"name": "v", "skip": "yes"}]), "good.json": _scenario()},
    )
    loaded = load_config(cwd=str(root))
    found = discover(loaded.config, loaded.config_dir)
    assert [s.key for s in found.scenarios] == ["good"]
    [failure] = found.load_failures
    assert failure.path.endswith("bad.json")
    assert failure.error == 'variants[0].skip: expected true or false, found "yes"'


def test_yaml_booleans_are_booleans_and_quoted_text_is_not(
    tmp_path: Path, make_project: Callable[..., Path]
) -> None:
    """YAML (ours; AXIS reads no YAML) is read as YAML 1.1: an unquoted ``yes`` is that
    file's own ``true``, a quoted ``"yes"`` is text and an error."""
    scenarios = {
        "plain.yaml": "name: P\nprompt: p\njudge: j\nskip: yes\n",
        "quoted.yaml": 'name: Q\nprompt: p\njudge: j\nskip: "yes"\n',
    }
    root = make_project(tmp_path, {"agents": ["codex"]}, scenarios)
    loaded = load_config(cwd=str(root))
    found = discover(loaded.config, loaded.config_dir)
    assert [(s.key, s.skip) for s in found.scenarios] == [("plain", True)]
    assert [f.error for f in found.load_failures] == ['skip: expected true or false, found "yes"']
