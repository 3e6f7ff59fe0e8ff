"""The job matrix: agents with display names, pairs, and serializable job specs."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from axis_eval._util.defaults import empty_list
from axis_eval.config.actions import McpServer
from axis_eval.config.discover import LoadFailure
from axis_eval.config.models import AdaptiveRuns
from axis_eval.config.output_limit import OutputLimit
from axis_eval.config.sandbox import NetworkMode, SandboxPolicy
from axis_eval.config.scenario import Scenario


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgentSpec(_Frozen):
    """One configured agent with its resolved display name."""

    name: str
    """Display name: ``agent|sanitized-model``, ``-2`` suffixed on duplicates, or explicit."""
    adapter: str
    """Adapter name (built-in or a key of the config's ``adapters``)."""
    model: str | None = None
    endpoint: str | None = None
    flags: dict[str, str | bool] = Field(default_factory=dict)
    command: list[str] | None = None
    skills: list[str] = Field(default_factory=empty_list)
    scenarios: list[str] | None = None
    network: NetworkMode | None = None
    """``none``: the agent's jobs get loopback only."""


class Pair(_Frozen):
    """A (scenario-or-variant, agent) pair: one row in every view."""

    scenario_key: str
    agent_name: str
    run_count: int
    """Runs planned (adaptive: ``min``, the first round)."""
    adaptive: AdaptiveRuns | None = None
    """Adaptive repeats: the pair may grow to ``adaptive.max`` runs (runs/adaptive.py)."""


class JobSpec(_Frozen):
    """Everything one job needs, serializable, so any executor can run it anywhere."""

    number: int
    """1-based position in scheduling order."""
    scenario: Scenario
    agent: AgentSpec
    run_index: int
    """1-based repeat index."""
    run_count: int
    time_limit_s: float
    """Per-job time limit: scenario ``limits``, else ``settings.limits.scenario``, else 15 min."""
    token_limit: int | None = None
    output_limit: OutputLimit = Field(default_factory=OutputLimit)
    """What the agent may print and the transcript keep: the ``limits.output`` in force."""
    env_pass: list[str] = Field(default_factory=empty_list)
    """Names passed through from the parent environment (config ``env`` + scenario list)."""
    env_set: dict[str, str] = Field(default_factory=dict)
    """Literal values a scenario sets."""
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    """Config servers overlaid by the scenario's."""
    skills: list[str] = Field(default_factory=empty_list)
    """Config + agent + scenario skills, de-duplicated."""
    artifacts: list[str] = Field(default_factory=empty_list)
    """Config + scenario artifact globs, de-duplicated."""
    config_dir: str
    sandbox: SandboxPolicy = Field(default_factory=SandboxPolicy)
    """How the job is confined (``settings.sandbox``, the scenario's, ``--sandbox``; the
    ``network`` of the scenario and the agent; ``limits.memory_mb/pids/cpus``)."""

    @property
    def pair_key(self) -> tuple[str, str]:
        """``(scenario key, agent name)``."""
        return (self.scenario.key, self.agent.name)

    @property
    def id(self) -> str:
        """``<scenario key> <agent name> #<run>``: unique in a run."""
        return f"{self.scenario.key} {self.agent.name} #{self.run_index}"


class Plan(_Frozen):
    """What ``axis run`` will do, in scheduling order; a dry run prints exactly this."""

    config_path: str
    config_dir: str
    profile: str | None = None
    agents: list[AgentSpec]
    pairs: list[Pair]
    jobs: list[JobSpec]
    """Run-major: every pair's run 1 before any pair's run 2."""
    skipped: list[str] = Field(default_factory=empty_list)
    """Keys of selected scenarios marked ``skip``."""
    load_failures: list[LoadFailure] = Field(default_factory=empty_list)
    warnings: list[str] = Field(default_factory=empty_list)
    notes: list[str] = Field(default_factory=empty_list)
    """Start-up notes, such as a run-level limit shared by repeats."""
    status_line: str = ""
    """``Discovered N scenarios across M agents: P pairs, J jobs``."""
    max_runs: int = 1
    selection: Literal["suite", "failed"] = "suite"
