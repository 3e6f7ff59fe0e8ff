"""ax.io/v1alpha1 Task and Workspace: lenient models, YAML parsing and YAML output.

Keys may be camelCase (protojson, as AX writes them) or snake_case (the proto names).
Unknown keys are reported as warnings and dropped, timestamps may be strings or YAML
dates, numbers are accepted where strings are expected. A document that cannot be read
raises :class:`~ax_task_runner.errors.SpecError`, whose message names the field but never
its value. Nothing here reads files or the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Annotated, Any, Generic, TypeVar

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from ax_task_runner.errors import SpecError

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
    "parse_task",
    "parse_workspaces",
]

API_VERSION = "ax.io/v1alpha1"
REDACTED = "<redacted>"
"""What a secret ``spec.env`` value becomes in the YAML the runner serves."""

T = TypeVar("T")
M = TypeVar("M", bound="SpecModel")


def _warn(info: ValidationInfo, message: str) -> None:
    context = info.context
    if isinstance(context, dict) and isinstance(context.get("warnings"), list):
        context["warnings"].append(message)


class SpecModel(BaseModel):
    """Base of every spec model: camelCase or snake_case keys, unknown keys kept aside."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        coerce_numbers_to_str=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        """``key:`` with no value means the field's default, as protojson reads ``null``."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


def _timestamp(value: Any, info: ValidationInfo) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            parsed = datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            _warn(info, f"{info.field_name}: {text[:40]!r} is not an RFC 3339 timestamp; ignored")
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    _warn(info, f"{info.field_name}: expected a timestamp, found {type(value).__name__}; ignored")
    return None


Timestamp = Annotated[datetime | None, BeforeValidator(_timestamp)]
"""An RFC 3339 string, a YAML date or datetime; a naive time is taken as UTC."""


class ObjectMeta(SpecModel):
    """``metadata``: the resource's name and atespace."""

    name: str = ""
    atespace: str = ""
    creation_timestamp: Timestamp = None


class EnvVar(SpecModel):
    """One ``spec.env`` entry, set in the container and in the command's environment."""

    name: str = ""
    value: str = ""

    @field_validator("value", mode="before")
    @classmethod
    def _scalar(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool):
            _warn(info, "spec.env: a true/false value was read as a string; quote it")
            return "true" if value else "false"
        return value


class ResourceList(SpecModel):
    """Kubernetes quantities (``"2"``, ``"4Gi"``)."""

    cpu: str = ""
    memory: str = ""


class ResourceRequirements(SpecModel):
    """``spec.resources``: only ``limits`` are applied by AX."""

    requests: ResourceList | None = None
    limits: ResourceList | None = None


class WorkspaceRef(SpecModel):
    """A binding in ``spec.workspaces``: which Workspace, where, and an optional goal."""

    name: str = ""
    path: str = ""
    goal: str = ""


class GatewayRef(SpecModel):
    """``spec.gateway`` (an earlier API version): the Gateway the task uses."""

    name: str = ""


class TaskSpec(SpecModel):
    """``Task.spec``, in proto field order."""

    suspend: bool = False
    image: str = ""
    command: list[str] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    resources: ResourceRequirements | None = None
    workspaces: list[WorkspaceRef] = Field(default_factory=list)
    gateway: GatewayRef | None = None
    debug: bool = False

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError("must be a list of strings (an argv, run without a shell)")
        return value


class Condition(SpecModel):
    """A status condition (``WorkspaceReady``, ``Ready`` …)."""

    type: str = ""
    status: str = ""
    last_transition_time: Timestamp = None
    reason: str = ""
    message: str = ""


class PendingApproval(SpecModel):
    """``status.pendingApproval`` (unused by AX)."""

    id: str = ""
    action: str = ""
    requested_at: Timestamp = None


class TaskUsage(SpecModel):
    """``status.usage`` (unused by AX)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


class TaskStatus(SpecModel):
    """``Task.status``: accepted on input, never served (AX strips it too)."""

    phase: str = ""
    id: str = ""
    actor: str = ""
    worker_ip: str = Field(default="", alias="workerIP")
    pending_approval: PendingApproval | None = None
    usage: TaskUsage | None = None
    conditions: list[Condition] = Field(default_factory=list)


class Task(SpecModel):
    """An ``ax.io/v1alpha1`` Task."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta | None = None
    spec: TaskSpec = Field(default_factory=TaskSpec)
    status: TaskStatus | None = None


class GitRepo(SpecModel):
    """A repository to fetch into the workspace."""

    name: str = ""
    repo: str = ""
    branch: str = ""
    dir: str = ""
    depth: int = 0


class McpServer(SpecModel):
    """An MCP server: remote (``endpoint``) or local (``command`` + ``args``)."""

    name: str = ""
    endpoint: str = ""
    command: str = ""
    args: list[str] = Field(default_factory=list)


class McpRegistry(SpecModel):
    """A registry query for MCP servers (not resolved by the runner)."""

    provider: str = ""
    project: str = ""
    query: str = ""
    servers: list[McpServer] = Field(default_factory=list)


class McpConfig(SpecModel):
    """``Workspace.spec.mcp``."""

    registries: list[McpRegistry] = Field(default_factory=list)
    servers: list[McpServer] = Field(default_factory=list)


class SkillsRegistry(SpecModel):
    """A registry query for skills (not resolved by the runner)."""

    provider: str = ""
    project: str = ""
    query: str = ""


class SkillsConfig(SpecModel):
    """``Workspace.spec.skills``: the skills folder to create."""

    registries: list[SkillsRegistry] = Field(default_factory=list)
    path: str = ""


class WorkspaceSpec(SpecModel):
    """``Workspace.spec``."""

    git: list[GitRepo] = Field(default_factory=list)
    mcp: McpConfig | None = None
    skills: SkillsConfig | None = None

    @field_validator("mcp", mode="before")
    @classmethod
    def _legacy_mcp(cls, value: Any) -> Any:
        """An older shape: ``mcp:`` as a bare list of servers."""
        return {"servers": value} if isinstance(value, list) else value


class Workspace(SpecModel):
    """An ``ax.io/v1alpha1`` Workspace."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta | None = None
    spec: WorkspaceSpec = Field(default_factory=WorkspaceSpec)


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


def _validate(model: type[M], doc: dict[str, Any], where: str, warnings: list[str]) -> M:
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


def parse_task(text: str, *, source: str = "AX_TASK_YAML") -> Parsed[Task | None]:
    """Read the Task from YAML: the first document of kind Task (or of no kind).

    Empty input, or a Task without ``metadata`` (ignored, as upstream does), gives None.
    Documents of other kinds are skipped with a warning.

    Raises:
        SpecError: the YAML is malformed, or a field has a type that cannot be read.
    """
    warnings: list[str] = []
    task: Task | None = None
    for i, raw in enumerate(_documents(text, source), start=1):
        where = f"{source} (document {i})"
        doc = _mapping(raw, where)
        kind = _kind(doc)
        if kind not in (None, "Task") or task is not None:
            reason = f"kind {kind}" if kind not in (None, "Task") else "a second Task"
            warnings.append(f"{where}: {reason} skipped")
            continue
        _check_header(doc, where, warnings)
        parsed = _validate(Task, doc, where, warnings)
        if parsed.metadata is None:
            warnings.append(f"{where}: a Task without metadata is ignored")
            continue
        task = parsed
    return Parsed(task, warnings)


def parse_workspaces(text: str, *, source: str = "AX_WORKSPACES_YAML") -> Parsed[list[Workspace]]:
    """Read every Workspace of a multi-document YAML stream, in order.

    Documents of another kind, and Workspaces without ``metadata``, are skipped with a
    warning.

    Raises:
        SpecError: the YAML is malformed, or a field has a type that cannot be read.
    """
    warnings: list[str] = []
    out: list[Workspace] = []
    for i, raw in enumerate(_documents(text, source), start=1):
        where = f"{source} (document {i})"
        doc = _mapping(raw, where)
        kind = _kind(doc)
        if kind not in (None, "Workspace"):
            warnings.append(f"{where}: kind {kind} skipped")
            continue
        _check_header(doc, where, warnings)
        workspace = _validate(Workspace, doc, where, warnings)
        if workspace.metadata is None:
            warnings.append(f"{where}: a Workspace without metadata is ignored")
            continue
        out.append(workspace)
    return Parsed(out, warnings)


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
