"""JSON Schema for every file format, generated from the pydantic models.

Fields are documented by the string literal under them (an "attribute docstring"). The
models do not set pydantic's ``use_attribute_docstrings``: with it, pydantic reads and
parses the source of every model class as the class is created, which cost about 50 ms
of every ``axis`` start. Only a schema shows descriptions, so :func:`document_fields`
reads the docstrings here instead, when a schema is exported, following pydantic's own
rules (a test compares the two on inherited and redefined fields).
"""

from __future__ import annotations

import ast
import functools
import graphlib
import inspect
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

SCHEMA_NAMES = ("config", "scenario", "report", "result", "tape", "baseline")


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema of one format: config, scenario, report (``report.json``), result or
    tape (a scripted model for ``axis model-server``) or baseline."""
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
    document_fields(model)
    schema = model.model_json_schema(mode=mode, by_alias=True)  # type: ignore[arg-type]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = title
    return schema


def write_schemas(folder: Path) -> list[Path]:
    """Write ``<name>.schema.json`` for every format into ``folder``."""
    from axis_eval.files import atomic_write_text

    written = []
    for name in SCHEMA_NAMES:
        path = folder / f"{name}.schema.json"
        atomic_write_text(path, json.dumps(schema_for(name), indent=2) + "\n")
        written.append(path)
    return written


# ------------------------------------------------------------- attribute docstrings

_documented: set[type[BaseModel]] = set()


def document_fields(model: type[BaseModel]) -> None:
    """Give every field of ``model`` and of the models its schema contains the docstring
    written under it as its description, as ``use_attribute_docstrings=True`` would have.

    An explicit ``Field(description=...)`` wins. Changed models are rebuilt, nested models
    first, because a model's schema embeds the schemas its fields' models had when it was
    built. Done once per model; it changes descriptions only, never validation.
    """
    from pydantic import BaseModel

    graph: dict[type[BaseModel], set[type[BaseModel]]] = {}
    pending = [model]
    while pending:
        cls = pending.pop()
        if cls in graph:
            continue
        graph[cls] = set()
        if not cls.__pydantic_complete__:
            cls.model_rebuild()  # a deferred build: its core schema is only a placeholder
        for base in cls.__mro__[1:]:
            # Bases first: a field a class inherits copies its base's description.
            if issubclass(base, BaseModel) and base is not BaseModel:
                graph[cls].add(base)
        graph[cls] |= _nested_models(cls.__pydantic_core_schema__) - {cls}
        pending.extend(graph[cls])
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:  # pragma: no cover - no recursive model today
        # A recursive model embeds itself: rebuilding it before its nested models would keep
        # their schemas without descriptions. Add a second rebuild pass if one is ever needed.
        raise RuntimeError(f"recursive models cannot be documented yet: {exc.args[1]}") from exc
    changed: list[type[BaseModel]] = []
    for cls in order:
        if cls in _documented:
            continue
        if _set_descriptions(cls) or any(dep in changed for dep in graph[cls]):
            changed.append(cls)
        _documented.add(cls)
    for cls in changed:  # in dependency order
        cls.model_rebuild(force=True)


def _set_descriptions(cls: type[BaseModel]) -> bool:
    """pydantic's rule, applied late: a field the class declares (annotates) itself takes
    the docstring in the class body; an inherited one keeps its base's description."""
    own = inspect.get_annotations(cls)
    inherited: dict[str, Any] = {}
    for base in reversed(cls.__bases__):
        inherited.update(getattr(base, "__pydantic_fields__", None) or {})
    docs: dict[str, str] | None = None
    changed = False
    for name, field in cls.__pydantic_fields__.items():
        if field.description is not None:
            continue
        # A field the class declares is new; an inherited one was copied from its base
        # (with the base's description, set above as the bases come first).
        description = None if name in own else getattr(inherited.get(name), "description", None)
        if description is None:
            if docs is None:
                docs = attribute_docstrings(cls)
            description = docs.get(name)
        if description is not None:
            field.description = description
            changed = True
    return changed


def _nested_models(schema: Any) -> set[type[BaseModel]]:
    """The model classes a pydantic core schema contains."""
    found: set[type[BaseModel]] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "model" and isinstance(item.get("cls"), type):
                found.add(item["cls"])
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def attribute_docstrings(cls: type) -> dict[str, str]:
    """``{attribute: docstring}`` for the string literals right under the annotated
    attributes in ``cls``'s body (the same rules as pydantic's ``use_attribute_docstrings``)."""
    node = _class_node(cls)
    if node is None:
        return {}
    visitor = _DocstringVisitor()
    visitor.generic_visit(node)
    return visitor.attrs


def _class_node(cls: type) -> ast.ClassDef | None:
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    if path is None or "<locals>" in cls.__qualname__:
        return _class_node_by_inspect(cls)
    tree = _module_tree(path)
    if tree is None:
        return None
    target = cls.__qualname__.split(".")
    found: list[ast.ClassDef] = []

    def search(nodes: list[ast.stmt], depth: int) -> None:
        for node in nodes:
            if isinstance(node, ast.ClassDef):
                if node.name == target[depth]:
                    if depth == len(target) - 1:
                        found.append(node)
                    else:
                        search(node.body, depth + 1)
            elif isinstance(node, ast.If | ast.Try | ast.With):
                # Classes defined under `if`/`try` at this level (functions have <locals>).
                for part in ("body", "orelse", "finalbody"):
                    search(getattr(node, part, []), depth)
                for handler in getattr(node, "handlers", []):
                    search(handler.body, depth)

    search(tree.body, 0)
    # The last definition is the one the name is bound to.
    return found[-1] if found else None


def _class_node_by_inspect(cls: type) -> ast.ClassDef | None:
    import textwrap

    try:
        lines, _ = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return None
    try:
        body = ast.parse(textwrap.dedent("".join(lines))).body
    except SyntaxError:
        return None
    return body[0] if body and isinstance(body[0], ast.ClassDef) else None


@functools.cache
def _module_tree(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


class _DocstringVisitor(ast.NodeVisitor):
    """pydantic's ``DocstringVisitor``: a string statement right after ``name: type``."""

    def __init__(self) -> None:
        super().__init__()
        self.target: str | None = None
        self.attrs: dict[str, str] = {}
        self.previous: type[ast.AST] | None = None

    def visit(self, node: ast.AST) -> Any:
        result = super().visit(node)
        self.previous = type(node)
        return result

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.target = node.target.id

    def visit_Expr(self, node: ast.Expr) -> None:
        value = node.value
        if (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and self.previous is ast.AnnAssign
        ):
            if self.target:
                self.attrs[self.target] = inspect.cleandoc(value.value)
            self.target = None

    # Nested classes and functions have attributes of their own.
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        pass

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        pass

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        pass
