"""ax.io/v1alpha1 Task and Workspace as lenient pydantic models, in proto field order.

Keys may be camelCase (protojson, as AX writes them) or snake_case (the proto names);
unknown keys are kept aside (``extra="allow"``) for :mod:`ax_task_runner.spec` to report
and drop; ``key:`` with no value means the field's default; numbers are accepted where
strings are expected; timestamps may be strings or YAML dates. A validator that ignores
a value says so through the ``warnings`` list of the validation context.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel


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
