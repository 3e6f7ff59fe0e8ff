"""The scenario file format, judge checks, and variant expansion."""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Tag, field_validator, model_validator

from axis_eval._util.defaults import empty_list
from axis_eval.config._base import (
    Boolean,
    EnvName,
    FileRoot,
    InputModel,
    NonEmptyStr,
    RunCount,
    ScenarioKey,
    Weight,
    by_kind,
)
from axis_eval.config._text import check_keys, env_name_problem
from axis_eval.config.actions import LifecycleAction, Limit, McpServer
from axis_eval.config.sandbox import NetworkMode, SandboxConfig

VARIANT_NAME_PATTERN = r"^[a-zA-Z0-9_-]+$"


class JudgeCheck(InputModel):
    """One rubric check the judge scores from 0 to 10."""

    check: NonEmptyStr
    """What the judge verifies, in plain words."""
    weight: Weight | None = None
    """Relative weight (0 to a million); unweighted checks share what the weighted ones
    leave of 1."""
    run: NonEmptyStr | None = None
    """A deterministic check instead of a judged one: a shell command run in the workspace
    after the agent finishes (before artifacts and judges); exit 0 scores 10, else 0."""


Judge = Annotated[
    Annotated[NonEmptyStr, Tag("<text>")] | Annotated[list[JudgeCheck], Tag("<checks>")],
    by_kind(
        "axis_judge",
        "a string or a list of {check, weight?} objects",
        (str, "<text>"),
        (list, "<checks>"),
    ),
]


ScenarioEnv = Annotated[
    Annotated[list[EnvName], Tag("<names>")] | Annotated[dict[str, str], Tag("<values>")],
    by_kind(
        "axis_env",
        "a list of variable names or a NAME: value mapping",
        (list, "<names>"),
        (dict, "<values>"),
    ),
]
"""Names to pass through from the parent environment, or literal NAME: value pairs."""


def _rename_rubric(data: Any) -> Any:
    """Accept AXIS's legacy ``rubric`` as ``judge``."""
    if isinstance(data, dict) and "rubric" in data:
        data = dict(data)
        rubric = data.pop("rubric")
        data.setdefault("judge", rubric)
    return data


class _ScenarioFields(InputModel):
    """Fields a scenario and a variant share."""

    prompt: NonEmptyStr | None = None
    """The task sent to the agent."""
    judge: Judge | None = None
    """Rubric: a string, or checks with optional weights. Alias: ``rubric``."""
    skip: Boolean | None = None
    """Exclude from runs; counted as skipped."""
    setup: list[LifecycleAction] | None = None
    """Actions run in the workspace before the agent starts."""
    teardown: list[LifecycleAction] | None = None
    """Actions run in the workspace after the agent (and the judge) finish."""
    agents: list[NonEmptyStr] | None = Field(default=None, min_length=1)
    """Only these agents run it: display names or adapter names, no globs."""
    skills: list[str] | None = None
    mcp_servers: dict[str, McpServer] | None = None
    limits: Limit | None = None
    """Replaces ``settings.limits.scenario`` wholesale for this scenario."""
    runs: RunCount | None = None
    """Repeat count: odd, 1 to 19."""
    env: ScenarioEnv | None = None
    artifacts: list[NonEmptyStr] | None = None
    """Globs collected from the workspace after the agent finishes."""
    sandbox: SandboxConfig | None = None
    """How this scenario's jobs are confined (wins over ``settings.sandbox``)."""
    network: NetworkMode | None = None
    """``none``: its jobs get no network but loopback (default ``host``)."""

    @model_validator(mode="before")
    @classmethod
    def _rubric(cls, data: Any) -> Any:
        return _rename_rubric(data)

    @field_validator("env", mode="after")
    @classmethod
    def _env_names(cls, value: list[str] | dict[str, str] | None) -> Any:
        if isinstance(value, dict):
            check_keys(value, env_name_problem)
        return value

    @field_validator("agents", mode="after")
    @classmethod
    def _lower_agents(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [a.lower() for a in value]


class ScenarioVariant(_ScenarioFields):
    """A variant: inherits the base scenario and overrides what it sets."""

    name: Annotated[str, Field(pattern=VARIANT_NAME_PATTERN)]
    """Letters, digits, ``-`` and ``_``; the job key becomes ``<base>@<name>``."""


class ScenarioInput(_ScenarioFields, FileRoot):
    """A scenario file (or an inline scenario in the config) as written."""

    key: ScenarioKey | None = None
    """Required for inline scenarios; a file's key comes from its path. Parts separated by
    ``/`` become folders: none empty, ``.`` or ``..``, without ``\\`` or control characters."""
    name: NonEmptyStr
    """Human-readable title."""
    variants: list[ScenarioVariant] | None = None
    """When present, the base is a template and only the variants run."""

    @model_validator(mode="after")
    def _required_and_unique(self) -> "ScenarioInput":
        if self.variants:
            seen: set[str] = set()
            for variant in self.variants:
                if variant.name in seen:
                    raise ValueError(f"unique variant names (duplicate {variant.name!r})")
                seen.add(variant.name)
            missing = [v.name for v in self.variants if (v.prompt or self.prompt) is None] + [
                v.name for v in self.variants if (v.judge or self.judge) is None
            ]
            if missing:
                raise ValueError(
                    "a prompt and a judge on the scenario or on every variant "
                    f"(variant {missing[0]!r} has none)"
                )
        else:
            if self.prompt is None:
                raise ValueError("a `prompt` (the task sent to the agent)")
            if self.judge is None:
                raise ValueError("a `judge` (or `rubric`): a string or a list of checks")
        return self


class ResolvedCheck(BaseModel):
    """A judge check with its resolved weight."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    check: str
    weight: float
    run: str | None = None
    """The shell command of a deterministic check; None for a judged check."""


class Scenario(BaseModel):
    """A runnable scenario: one file, or one variant of it, with every field resolved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    """``cms/create-post`` or ``cms/create-post@with-mcp``."""
    base_key: str
    variant: str | None = None
    name: str
    prompt: str
    judge: str | list[ResolvedCheck]
    skip: bool = False
    setup: list[LifecycleAction] = Field(default_factory=empty_list)
    teardown: list[LifecycleAction] = Field(default_factory=empty_list)
    agents: list[str] | None = None
    skills: list[str] = Field(default_factory=empty_list)
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    limits: Limit | None = None
    runs: int | None = None
    env: ScenarioEnv = Field(default_factory=empty_list)
    artifacts: list[str] = Field(default_factory=empty_list)
    sandbox: SandboxConfig | None = None
    network: NetworkMode | None = None
    source: str | None = None
    """The file it came from (absolute), or None for an inline scenario."""


def resolve_weights(judge: str | list[JudgeCheck]) -> str | list[ResolvedCheck]:
    """Give every check a weight as AXIS does.

    Explicit weights are kept; unweighted checks share ``max(0, 1 - sum(explicit))``
    equally. Weights need not sum to 1: scoring divides by their total.
    """
    if isinstance(judge, str):
        return judge
    explicit = sum(c.weight for c in judge if c.weight is not None)
    unweighted = [c for c in judge if c.weight is None]
    share = max(0.0, 1.0 - explicit) / len(unweighted) if unweighted else 0.0
    return [
        ResolvedCheck(check=c.check, weight=c.weight if c.weight is not None else share, run=c.run)
        for c in judge
    ]


def expand(source: ScenarioInput, key: str, path: str | None) -> list[Scenario]:
    """Turn a scenario input into runnable scenarios: itself, or one per variant."""
    if not source.variants:
        assert source.prompt is not None and source.judge is not None
        return [_build(source, None, key, source.name, path)]
    return [
        _build(source, variant, f"{key}@{variant.name}", f"{source.name} [{variant.name}]", path)
        for variant in source.variants
    ]


def _pick(variant: ScenarioVariant | None, base: ScenarioInput, field: str) -> Any:
    if variant is not None and getattr(variant, field) is not None:
        return getattr(variant, field)
    return getattr(base, field)


def _build(
    base: ScenarioInput,
    variant: ScenarioVariant | None,
    key: str,
    name: str,
    path: str | None,
) -> Scenario:
    mcp = dict(base.mcp_servers or {})
    if variant is not None and variant.mcp_servers is not None:
        mcp.update(variant.mcp_servers)
    judge = _pick(variant, base, "judge")
    return Scenario(
        key=key,
        base_key=key.split("@", 1)[0],
        variant=variant.name if variant else None,
        name=name,
        prompt=_pick(variant, base, "prompt"),
        judge=resolve_weights(judge),
        skip=bool(_pick(variant, base, "skip")),
        setup=_pick(variant, base, "setup") or [],
        teardown=_pick(variant, base, "teardown") or [],
        agents=_pick(variant, base, "agents"),
        skills=_pick(variant, base, "skills") or [],
        mcp_servers=mcp,
        limits=_pick(variant, base, "limits"),
        runs=_pick(variant, base, "runs"),
        env=_pick(variant, base, "env") or [],
        artifacts=_pick(variant, base, "artifacts") or [],
        sandbox=_pick(variant, base, "sandbox"),
        network=_pick(variant, base, "network"),
        source=path,
    )
