"""The JSON Schemas kept in schemas/ match the models (regenerate with `make schemas`)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from axis_eval.schemas import SCHEMA_NAMES, document_fields, schema_for

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


# Fields are documented by the docstring under them; the models leave pydantic's
# `use_attribute_docstrings` off (it parses every class's source at import, ~50 ms of every
# `axis` start) and `schema_for` reads the docstrings itself. The twins below are the same
# source loaded twice: with pydantic's flag on, and with it off plus `document_fields`.
TWIN_SOURCE = '''
from pydantic import BaseModel, ConfigDict, Field

ON = __name__.endswith("_on")


class Base(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=ON)

    kept: int = 0
    """Inherited as is."""
    redefined_plain: int = 0
    """Lost when a subclass redefines the field without a docstring."""
    redefined_documented: int = 0
    """The base's words."""
    explicit: int = Field(default=0, description="An explicit description wins.")
    """Not used."""
    multi: str = ""
    """First line.

        Second paragraph,
            indented.
    """
    undocumented: int = 0


class Leaf(Base):
    redefined_plain: int = 1
    redefined_documented: int = 1
    """The leaf's words."""
    own: str = ""
    """A field of the subclass."""

    class Inner(BaseModel):
        model_config = ConfigDict(use_attribute_docstrings=ON)

        x: int = 0
        """A field of a nested class."""

    inner: Inner = Field(default_factory=Inner)


class Root(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=ON, alias_generator=str.upper)

    leaf: Leaf
    """A nested model."""
    leaves: list[Leaf] = []
    if ON or not ON:
        conditional: int = 0
        """Under an `if` in the class body."""
'''


def _load_twin(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(TWIN_SOURCE)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_document_fields_matches_pydantic_attribute_docstrings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on = _load_twin(tmp_path, "twin_docs_on", monkeypatch)
    off = _load_twin(tmp_path, "twin_docs_off", monkeypatch)
    assert "The leaf's words." not in json.dumps(off.Root.model_json_schema())

    document_fields(off.Root)

    for mode in ("validation", "serialization"):
        expected = on.Root.model_json_schema(mode=mode, by_alias=True)
        assert off.Root.model_json_schema(mode=mode, by_alias=True) == expected
    assert off.Base.model_json_schema() == on.Base.model_json_schema()
    leaf = expected["$defs"]["Leaf"]["properties"]
    assert leaf["redefined_documented"]["description"] == "The leaf's words."
    assert leaf["kept"]["description"] == "Inherited as is."
    assert "description" not in leaf["redefined_plain"]
    assert leaf["explicit"]["description"] == "An explicit description wins."
    assert leaf["multi"]["description"] == "First line.\n\nSecond paragraph,\n    indented."
    assert expected["$defs"]["Inner"]["properties"]["x"]["description"]
    assert expected["properties"]["CONDITIONAL"]["description"]
    # Validation is untouched by the rebuild.
    assert off.Root.model_validate({"LEAF": {"own": "x"}}).leaf.own == "x"


def test_no_model_parses_its_source_at_import() -> None:
    for module in (
        "axis_eval.pipeline.engine",  # every model a run uses
        "axis_eval.runs.baseline_models",
        "axis_eval.scoring.scorer",
        "axis_model_server.tape",
        "axis_model_server.records",
    ):
        importlib.import_module(module)

    def subclasses(cls: type[BaseModel]) -> list[type[BaseModel]]:
        return [c for s in cls.__subclasses__() for c in (s, *subclasses(s))]

    ours = [
        c for c in subclasses(BaseModel) if c.__module__.startswith(("axis_eval", "axis_model"))
    ]
    assert len(ours) > 50
    slow = [c.__qualname__ for c in ours if c.model_config.get("use_attribute_docstrings")]
    assert slow == [], "use_attribute_docstrings costs every start; schema_for documents fields"
