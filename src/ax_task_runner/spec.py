"""ax.io/v1alpha1 Task and Workspace documents: reading YAML into models, writing them back.

Unknown keys are reported as warnings and dropped; documents of another kind are skipped
with a warning. A document that cannot be read raises
:class:`~ax_task_runner.errors.SpecError`, whose message names the field but never its
value. The models themselves are in :mod:`ax_task_runner.spec_models` and are importable
from here too. Nothing here reads files or the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ax_task_runner.errors import SpecError
from ax_task_runner.spec_models import (
    Condition,
    EnvVar,
    GatewayRef,
    GitRepo,
    McpConfig,
    McpRegistry,
    McpServer,
    ObjectMeta,
    ResourceList,
    ResourceRequirements,
    SkillsConfig,
    SkillsRegistry,
    Task,
    TaskSpec,
    TaskStatus,
    Workspace,
    WorkspaceRef,
    WorkspaceSpec,
)

__all__ = [
    "API_VERSION",
    "Condition",
    "EnvVar",
    "GatewayRef",
    "GitRepo",
    "McpConfig",
    "McpRegistry",
    "McpServer",
    "ObjectMeta",
    "Parsed",
    "ResourceList",
    "ResourceRequirements",
    "SkillsConfig",
    "SkillsRegistry",
    "Task",
    "TaskSpec",
    "TaskStatus",
    "Workspace",
    "WorkspaceRef",
    "WorkspaceSpec",
    "dump_task",
    "dump_workspaces",
    "is_label",
    "parse_task",
    "parse_workspaces",
]

API_VERSION = "ax.io/v1alpha1"
REDACTED = "<redacted>"
"""What a secret ``spec.env`` value becomes in the YAML the runner serves."""

T = TypeVar("T")
Resource = TypeVar("Resource", Task, Workspace)


@dataclass
class Parsed(Generic[T]):
    """A parse result with the warnings it produced (unknown keys, skipped documents)."""

    value: T
    warnings: list[str] = field(default_factory=list)


# -- reading ------------------------------------------------------------------------------


def _documents(text: str, source: str) -> list[Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        # Never the snippet: the offending line may hold a secret.
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "malformed YAML"
        raise SpecError(f"{source}: invalid YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: invalid YAML: {type(exc).__name__}") from None


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _validate(
    model: type[Resource], doc: dict[str, Any], where: str, warnings: list[str]
) -> Resource:
    context: dict[str, Any] = {"warnings": []}
    try:
        value = model.model_validate(doc, context=context)
    except ValidationError as exc:
        problems = [
            f"{_location(err['loc'])}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)
        ]
        raise SpecError(f"{where}: " + "; ".join(problems)) from None
    warnings += [f"{where}: {w}" for w in context["warnings"]]
    for path in _unknown_keys(value, ""):
        warnings.append(f"{where}: unknown field {path} ignored")
    return value


def _unknown_keys(value: Any, path: str) -> Iterator[str]:
    """Paths of keys no model knows; they are removed from the models as they are found."""
    if isinstance(value, BaseModel):
        extra = value.__pydantic_extra__
        if extra:
            for key in list(extra):
                yield f"{path}.{key}" if path else key
            extra.clear()
        for name in type(value).model_fields:
            key = type(value).model_fields[name].alias or name
            yield from _unknown_keys(getattr(value, name), f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _unknown_keys(item, f"{path}[{i}]")


def _check_header(doc: dict[str, Any], where: str, warnings: list[str]) -> None:
    version = doc.get("apiVersion", doc.get("api_version"))
    if version not in (None, "", API_VERSION):
        warnings.append(f"{where}: apiVersion {version!r} is not {API_VERSION}; read anyway")


def _kind(doc: dict[str, Any]) -> str | None:
    kind = doc.get("kind")
    return kind if isinstance(kind, str) and kind else None


def _mapping(doc: Any, where: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise SpecError(f"{where}: expected a mapping, found {type(doc).__name__}")
    return doc


def _resources(
    text: str, source: str, model: type[Resource], warnings: list[str], *, first_only: bool
) -> list[Resource]:
    """The documents of ``model``'s kind (or of no kind) that have ``metadata``, in order.

    Other kinds, documents without ``metadata`` (ignored, as upstream does) and, with
    ``first_only``, every document after the first one kept are skipped with a warning.
    """
    kind = model.__name__
    out: list[Resource] = []
    for i, raw in enumerate(_documents(text, source), start=1):
        where = f"{source} (document {i})"
        doc = _mapping(raw, where)
        found = _kind(doc)
        if found not in (None, kind):
            warnings.append(f"{where}: kind {found} skipped")
            continue
        if first_only and out:
            warnings.append(f"{where}: a second {kind} skipped")
            continue
        _check_header(doc, where, warnings)
        value = _validate(model, doc, where, warnings)
        if value.metadata is None:
            warnings.append(f"{where}: a {kind} without metadata is ignored")
            continue
        out.append(value)
    return out


def parse_task(text: str, *, source: str = "AX_TASK_YAML") -> Parsed[Task | None]:
    """Read the Task from YAML: the first document of kind Task (or of no kind).

    Empty input, or a Task without ``metadata`` (ignored, as upstream does), gives None.
    Documents of other kinds are skipped with a warning.

    Raises:
        SpecError: the YAML is malformed, or a field has a type that cannot be read.
    """
    warnings: list[str] = []
    tasks = _resources(text, source, Task, warnings, first_only=True)
    return Parsed(tasks[0] if tasks else None, warnings)


def parse_workspaces(text: str, *, source: str = "AX_WORKSPACES_YAML") -> Parsed[list[Workspace]]:
    """Read every Workspace of a multi-document YAML stream, in order.

    Documents of another kind, and Workspaces without ``metadata``, are skipped with a
    warning.

    Raises:
        SpecError: the YAML is malformed, or a field has a type that cannot be read.
    """
    warnings: list[str] = []
    return Parsed(_resources(text, source, Workspace, warnings, first_only=False), warnings)


# -- writing ------------------------------------------------------------------------------


def _rfc3339(value: datetime) -> str:
    text = value.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def _prune(value: Any) -> Any:
    """protojson's output rules: zero values and empty lists or objects are left out."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            pruned = _prune(item)
            if pruned not in (None, "", 0, False, [], {}):
                out[key] = pruned
        return out
    if isinstance(value, list):
        return [_prune(item) for item in value]
    if isinstance(value, datetime):
        return _rfc3339(value)
    return value


class _Dumper(yaml.SafeDumper):
    """Go yaml.v3 style: four-space indent, sequences indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _yaml(doc: dict[str, Any]) -> str:
    return str(
        yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, indent=4, width=1 << 16)
    )


def dump_task(task: Task, *, is_secret: Callable[[str], bool] = lambda name: False) -> str:
    """The Task as served at ``/metadata/v1alpha1/ax/task``: no ``status``, no ``suspend``.

    Values of ``spec.env`` entries whose name ``is_secret`` are replaced by ``<redacted>``.
    """
    doc = task.model_dump(mode="python", exclude={"status": True, "spec": {"suspend"}})
    for entry in doc.get("spec", {}).get("env", []):
        if is_secret(str(entry.get("name", ""))) and entry.get("value"):
            entry["value"] = REDACTED
    return _yaml(_prune(doc))


def dump_workspaces(workspaces: list[Workspace]) -> str:
    """Workspaces as a multi-document YAML stream, in the order given."""
    return "---\n".join(_yaml(_prune(ws.model_dump(mode="python"))) for ws in workspaces)


_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def is_label(name: str) -> bool:
    """Whether ``name`` is a lowercase RFC 1123 label (what ``ax apply`` accepts)."""
    return bool(_LABEL.match(name))
