"""The config file format (``axis.config.*``): every field AXIS knows, plus ours."""

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from axis_eval._util.defaults import empty_list
from axis_eval.config._base import (
    MAX_REMOTE_DEPTH,
    MAX_TOKENS,
    Boolean,
    Bounds,
    Concurrency,
    EnvName,
    FileRoot,
    FolderName,
    InputModel,
    NonEmptyStr,
    RunCount,
    Seconds,
    Weight,
    by_kind,
)
from axis_eval.config._text import check_keys, folder_name_problem
from axis_eval.config.actions import LifecycleAction, Limit, McpServer
from axis_eval.config.executor import ExecutorConfig
from axis_eval.config.git_sources import ResolvedRemote
from axis_eval.config.sandbox import NetworkMode, SandboxConfig
from axis_eval.config.scenario import ScenarioInput

DEFAULT_CONCURRENCY = 15
DEFAULT_SCENARIO_MINUTES = 15.0
DEFAULT_JUDGE_CONCURRENCY = 8
DEFAULT_JUDGE_CONTEXT_TOKENS = 150_000
DEFAULT_JUDGE_TIMEOUT_S = 300.0
DEFAULT_JUDGE_ATTEMPTS = 6
DEFAULT_WEIGHTS = {"goal_achievement": 0.4, "environment": 0.2, "service": 0.2, "agent": 0.2}


Command = Annotated[
    Annotated[NonEmptyStr, Tag("<text>")]
    | Annotated[list[NonEmptyStr], Field(min_length=1), Tag("<argv>")],
    by_kind(
        "axis_command",
        "a command string or a non-empty list of arguments",
        (str, "<text>"),
        (list, "<argv>"),
    ),
]
"""A binary (``"my-cli"``) or an argv prefix (``["npx", "my-cli"]``)."""


FlagValue = Annotated[
    Annotated[Boolean, Tag("<switch>")] | Annotated[str, Tag("<value>")],
    by_kind("axis_flag", "true, false or a string", (bool, "<switch>"), (str, "<value>")),
]


class AgentEntry(InputModel):
    """One agent to run: a string in the config is shorthand for ``{agent: <string>}``."""

    agent: FolderName
    """Adapter name: a built-in (``claude-code``, ``codex`` …) or a key of ``adapters``."""
    name: FolderName | None = None
    """Explicit display name; wins over the generated ``agent|model``. It names a folder:
    no ``/``, ``\\``, leading ``.`` or control characters, at most 255 bytes."""
    model: NonEmptyStr | None = None
    """Passed verbatim to the agent CLI."""
    endpoint: NonEmptyStr | None = None
    """Model API base URL for this agent (e.g. a proxy or the scripted model server)."""
    flags: dict[str, FlagValue] = Field(default_factory=dict)
    """CLI flags without ``--``: true → ``--k``, false → omitted, string → ``--k value``."""
    command: Command | None = None
    """Binary (or argv prefix) to spawn instead of the adapter's default."""
    scenarios: list[NonEmptyStr] | None = None
    """Scenario filters for this agent: keys, base keys or globs; ``*`` = all."""
    skills: list[str] = Field(default_factory=empty_list)
    network: NetworkMode | None = None
    """``none``: this agent's jobs get no network but loopback (default ``host``)."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"agent": data} if isinstance(data, str) else data

    @field_validator("agent", mode="after")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()


class ScoringWeights(InputModel):
    """Weights of the four dimensions in the composite."""

    goal_achievement: Weight
    environment: Weight
    service: Weight
    agent: Weight

    @model_validator(mode="after")
    def _sum_to_one(self) -> "ScoringWeights":
        values = [self.goal_achievement, self.environment, self.service, self.agent]
        total = sum(values)
        if total == 0:
            raise ValueError("weights that are not all zero")
        if abs(total - 1.0) > 0.01:
            raise ValueError(f"weights summing to 1 (± 0.01); they sum to {total:g}")
        return self


class LimitsSettings(InputModel):
    """Budgets for the whole run and the default per scenario."""

    run: Limit | None = None
    """One budget for the whole ``axis run`` (all repeats share it)."""
    scenario: Limit | None = None
    """Default per-job budget; time defaults to 15 minutes."""

    @field_validator("run", mode="after")
    @classmethod
    def _no_run_output(cls, value: Limit | None) -> Limit | None:
        # What an agent prints is held per job; a run-wide sum would bound nothing.
        if value is not None and value.output is not None:
            raise ValueError(
                "no output limit here: output limits are per job; "
                "set settings.limits.scenario.output (or a scenario's limits.output)"
            )
        held = [n for n in ("memory_mb", "pids", "cpus") if getattr(value, n, None) is not None]
        if held:
            raise ValueError(
                f"no {held[0]} here: container limits are per job; "
                f"set settings.limits.scenario.{held[0]} (or a scenario's limits.{held[0]})"
            )
        return value


class RemotesSettings(InputModel):
    """Settings for remote scenario sources (git repositories in ``scenarios``)."""

    max_depth: Annotated[int, Bounds(gt=0, le=MAX_REMOTE_DEPTH)] = Field(
        default=1, alias="maxDepth"
    )
    """How deep remotes may list remotes: 1 (AXIS's default) = a remote's config may not."""


DEFAULT_ADAPTIVE_MIN = 3
DEFAULT_ADAPTIVE_MAX = 9
DEFAULT_ADAPTIVE_TARGET = 10.0


class AdaptiveRuns(InputModel):
    """``runs: {min, max, target}``: adaptive repeats (docs/statistics.md)."""

    min: RunCount = DEFAULT_ADAPTIVE_MIN
    """Runs every pair gets first: odd, at least 3 (an interval needs them)."""
    max: RunCount = DEFAULT_ADAPTIVE_MAX
    """Runs a pair never goes past: odd, at least ``min``."""
    target: Annotated[float, Bounds(gt=0, le=100)] = DEFAULT_ADAPTIVE_TARGET
    """Stop once the composite's confidence interval is at most this many points wide (full
    width, upper minus lower)."""
    rule: Literal["t", "hoeffding"] = "t"
    """``t``: Student t with alpha split over the looks (assumes roughly normal run scores);
    ``hoeffding``: distribution-free for 0-100 scores, but wide with few runs."""

    @model_validator(mode="after")
    def _ordered(self) -> "AdaptiveRuns":
        if self.min < 3:
            raise ValueError(f"min of at least 3 (an interval needs them), not {self.min}")
        if self.max < self.min:
            raise ValueError(f"max >= min, not max {self.max} below min {self.min}")
        return self


Runs = Annotated[
    Annotated[RunCount, Tag("<count>")] | Annotated[AdaptiveRuns, Tag("<adaptive>")],
    by_kind(
        "axis_runs",
        "an odd run count from 1 to 19, or {min, max, target} for adaptive repeats",
        ((int, float, str), "<count>"),  # "3", 3.0: the count's own "expected an integer"
        ((dict, AdaptiveRuns), "<adaptive>"),
    ),
]


class Settings(InputModel):
    """Run settings."""

    concurrency: Concurrency = DEFAULT_CONCURRENCY
    """Jobs at once (at most 1000); ``--concurrency`` wins."""
    runs: Runs | None = None
    """Default repeat count: odd, 1 to 19; or ``{min, max, target}``: adaptive repeats."""
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    sandbox: SandboxConfig | None = None
    """How every job is confined: ``auto`` (default), ``none``, ``bwrap``, ``docker``, or
    ``{mode, image}`` (docs/sandboxes.md); a scenario's ``sandbox`` and ``--sandbox`` win."""
    executor: ExecutorConfig | None = None
    """Where jobs run: ``local`` (default) or ``dask`` (docs/distributed.md); the
    ``--executor``, ``--scheduler`` and ``--workers`` flags win."""
    scoring_weights: ScoringWeights | None = None
    """Composite weights; default 0.4 / 0.2 / 0.2 / 0.2."""
    remotes: RemotesSettings | None = None


DEFAULT_PANEL_MARGIN = 25.0
"""Points (0–100, a check's 0–10 grade × 10) by which a panel's grades may differ unflagged."""


class PanelJudge(InputModel):
    """One API member of ``judging.panel`` with its own server or key variable."""

    model: NonEmptyStr
    """``anthropic:<model>`` or ``openai:<model>``."""
    base_url: NonEmptyStr | None = None
    """Default: ``judging.base_url``."""
    api_key_env: EnvName | None = None
    """Default: ``judging.api_key_env``, then the provider's variable."""


PanelEntry = NonEmptyStr | PanelJudge
"""A string is read as ``--judge`` is (``provider:model``, or a ``judging.agents`` name or an
adapter name); an object is an API judge of its own."""


class Judging(InputModel):
    """Who judges: an API model, or agents (the first whose adapter differs from the run's);
    or a ``panel`` of judges whose median grade per check counts."""

    agents: list[AgentEntry] | None = Field(default=None, min_length=1)
    model: NonEmptyStr | None = None
    """API judge, ``anthropic:<model>`` or ``openai:<model>``."""
    base_url: NonEmptyStr | None = None
    """Any server compatible with that API."""
    api_key_env: EnvName | None = None
    """The variable holding the API judge's key; default ``ANTHROPIC_API_KEY`` or
    ``OPENAI_API_KEY`` by provider."""
    concurrency: Concurrency = DEFAULT_JUDGE_CONCURRENCY
    """Judge calls at once (at most 1000), shared by all jobs; lowered while the API answers
    429 and raised back after successes."""
    context_tokens: Annotated[int, Field(strict=True), Bounds(ge=4000, le=MAX_TOKENS)] = (
        DEFAULT_JUDGE_CONTEXT_TOKENS
    )
    """The judge's context budget (tokens counted as characters / 4); longer transcripts
    are judged in chunks that each carry the sparse index."""
    timeout_seconds: Seconds = DEFAULT_JUDGE_TIMEOUT_S
    """One API judge call's time limit (timeouts are retried); an agent judge's whole run;
    at most 7 days."""
    max_attempts: Annotated[int, Field(strict=True), Bounds(ge=1, le=20)] = DEFAULT_JUDGE_ATTEMPTS
    """Tries per call on 429, 5xx, timeouts and connection errors before the score is
    withheld."""
    panel: list[PanelEntry] | None = Field(default=None, min_length=2, max_length=9)
    """2–9 judges that each grade every run; a check's grade is their median, and the
    report shows their agreement (Krippendorff's alpha, docs/statistics.md)."""
    panel_margin: Annotated[float, Bounds(ge=0, le=100)] = Field(
        default=DEFAULT_PANEL_MARGIN, validation_alias=AliasChoices("panel_margin", "panelMargin")
    )
    """A check is flagged when its panel grades (× 10, points) differ by more than this."""


class ModelServerSettings(InputModel):
    """Run the agents against the embedded scripted model server instead of a real API."""

    tape: NonEmptyStr
    """The tape (YAML or JSON) that scripts the model's answers, relative to the config."""
    trap_outside_traffic: Boolean = False
    """Point HTTPS_PROXY/HTTP_PROXY at the server so every outside connection is refused
    and recorded in the report (not for agents that proxy loopback traffic, like Qwen Code)."""


class DeclarativeAdapter(InputModel):
    """A custom agent described without Python: a command and how to read its output."""

    command: Command
    args: list[str] = Field(default_factory=lambda: ["{prompt}"])
    """Arguments; ``{prompt}`` is replaced by the prompt (omit it with stdin)."""
    prompt_via: Literal["argv", "stdin"] = "argv"
    output: Literal["text", "ndjson"] = "text"
    """``text``: stdout is the answer; ``ndjson``: axis-eval's normalized events."""
    required_env: list[EnvName] = Field(default_factory=empty_list)
    """Variables the agent needs; checked before any job starts."""


AdapterRef = Annotated[
    Annotated[NonEmptyStr, Tag("<ref>")] | Annotated[DeclarativeAdapter, Tag("<declarative>")],
    by_kind(
        "axis_adapter",
        "a Python file, a module:attribute, or a {command, args, output} object",
        (str, "<ref>"),
        ((dict, DeclarativeAdapter), "<declarative>"),
    ),
]


ScenarioSource = Annotated[
    Annotated[NonEmptyStr, Tag("<path>")] | Annotated[ScenarioInput, Tag("<inline>")],
    by_kind(
        "axis_source",
        "a path or an inline scenario object",
        (str, "<path>"),
        ((dict, ScenarioInput), "<inline>"),
    ),
]


def _remote_as_text(entry: Any) -> Any:
    """A ``{"url": URL, "ref": REF}`` entry as the ``URL#REF`` it means; others unchanged."""
    if not isinstance(entry, dict) or "url" not in entry or "prompt" in entry:
        return entry
    url, ref = entry.get("url"), entry.get("ref")
    extra = sorted(str(k) for k in entry if k not in ("url", "ref"))
    if not isinstance(url, str) or not url.strip() or extra:
        raise ValueError(
            "a {url, ref} object with a git URL and an optional ref"
            + (f" (unknown keys: {', '.join(extra)})" if extra else "")
        )
    if ref is None:
        return url
    if not isinstance(ref, str) or not ref.strip() or "#" in url:
        raise ValueError("a `ref` that is a branch, tag or commit (and no '#' in `url`)")
    return f"{url.strip()}#{ref.strip()}"


class Config(FileRoot):
    """An ``axis.config.*`` file."""

    schema_: str | None = Field(default=None, alias="$schema")
    """Editor hint; ignored."""
    name: str | None = None
    """Shown in the report."""
    scenarios: list[ScenarioSource] = Field(default_factory=lambda: list[Any](["./scenarios"]))
    """Folders, files, inline scenarios (with ``key``), or git repositories (``URL``,
    ``URL#REF`` or ``{url, ref}``; docs/config.md); default ``./scenarios``."""
    agents: list[AgentEntry] = Field(min_length=1)
    """Agents to run every scenario with."""
    adapters: dict[str, AdapterRef] = Field(default_factory=dict)
    """Custom adapters by name (agents name them, so each name is a folder name too)."""
    include: list[NonEmptyStr] | None = None
    """The default suite: scenario globs to run (omitted = all)."""
    exclude: list[NonEmptyStr] | None = None
    """Scenario globs the default suite leaves out."""
    profiles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Named overlays chosen with ``--profile``: deep-merged; include/exclude replaced."""
    settings: Settings = Field(default_factory=Settings)
    env: list[EnvName] = Field(default_factory=empty_list)
    """Names of variables passed through to agents and scripts."""
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    skills: list[str] = Field(default_factory=empty_list)
    artifacts: list[NonEmptyStr] = Field(default_factory=empty_list)
    judging: Judging | None = None
    model_server: ModelServerSettings | None = None
    """Scripted model answers for every built-in agent: a dry run that spends no tokens."""
    before_all: list[LifecycleAction] = Field(default_factory=empty_list, alias="beforeAll")
    """Run once before any job, in the config directory."""
    after_all: list[LifecycleAction] = Field(default_factory=empty_list, alias="afterAll")
    """Run once after the report is written, with its folder and counts."""

    @field_validator("scenarios", mode="before")
    @classmethod
    def _one_source(cls, value: Any) -> Any:
        value = [value] if isinstance(value, str) else value
        return [_remote_as_text(v) for v in value] if isinstance(value, list) else value

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _one_glob(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("env", mode="before")
    @classmethod
    def _one_env(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("adapters", mode="after")
    @classmethod
    def _adapter_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_keys(value, folder_name_problem)
        return value


def weights_of(config: Config) -> dict[str, float]:
    """The composite weights in force."""
    w = config.settings.scoring_weights
    if w is None:
        return dict(DEFAULT_WEIGHTS)
    return {
        "goal_achievement": w.goal_achievement,
        "environment": w.environment,
        "service": w.service,
        "agent": w.agent,
    }


class LoadedConfig(BaseModel):
    """A validated config with where it came from."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    config: Config
    path: str
    """Absolute path of the config file."""
    config_dir: str
    """Absolute directory of the config file: base of relative paths and of ``.axis/``."""
    profile: str | None = None
    warnings: list[str] = Field(default_factory=empty_list)
    remotes: list[ResolvedRemote] = Field(default_factory=empty_list)
    """The remote scenario sources, as fetched for this load (URL, ref, commit)."""
