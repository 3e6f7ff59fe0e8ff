"""The report on disk: ``report.json`` (the manifest) and each run's ``result.json``.

Field names follow AXIS's manifest (camelCase: ``scenarioKey``, ``agentName``,
``runIndex``, ``durationMs``, ``exitCode``, ``failed``, ``runsTotal``, ``runsFailed`` …).
Later versions only add fields; ``schemaVersion`` says which shape a file has.
"""

from typing import Any, Literal

from pydantic import Field

from axis_eval._types import (
    ErrorKind,
    JobStatus,
    OutputModel,
    ReportState,
    TokenUsage,
    WorkspaceFile,
)
from axis_eval._util.defaults import empty_list
from axis_eval.config.sandbox import SandboxKind
from axis_eval.execute.models import MachineLoad
from axis_eval.report.adaptive_models import AdaptiveStop
from axis_eval.report.judge_noise_models import JudgeNoise
from axis_eval.report.panel_models import PanelAgreement
from axis_eval.scoring.models import ScoreResult

SCHEMA_VERSION = 1
AXIS_MANIFEST_VERSION = "0.1.0"


class ArtifactEntry(WorkspaceFile):
    """A file collected from the workspace after the agent finished."""

    file: str
    """Where the copy lives, relative to the report folder."""
    content: str | None = None
    """Text content inlined when small and textual; large files are only linked."""


class RunEntry(OutputModel):
    """One run (job) of a pair."""

    run_index: int
    status: JobStatus
    failed: bool
    """Computed from the whole run output: an answer followed by a non-zero exit is no failure."""
    exit_code: int | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int = 0
    token_usage: TokenUsage | None = None
    total_cost_usd: float | None = None
    """Money the run spent (None: unknown, or simulated: see ``costSimulated``)."""
    cost_estimated: bool = False
    cost_simulated: bool = False
    """The agent's model was the embedded scripted model server: ``tokenUsage`` is the
    tape's accounting, no money was spent, and ``totalCostUsd`` stays null."""
    agent_version: str | None = None
    """The agent CLI's exact version, when the adapter could tell."""
    sandbox: SandboxKind | None = None
    """What confined the run: ``none``, ``bwrap`` or ``docker`` (absent: it never started)."""
    worker: str | None = None
    """The Dask worker that ran it (absent: ``axis run``'s own process)."""
    executor: Literal["local", "dask"] | None = None
    """What placed it: ``local`` (this process) or ``dask`` (absent: older reports)."""
    machine: MachineLoad | None = None
    """Load average and CPUs where it ran, at start and end (docs/statistics.md)."""
    attempts: int = 1
    """How many times it was started (more than one: its worker was lost and it re-ran)."""
    result: str | None = None
    """The agent's final answer (its last message)."""
    dir: str
    """This run's folder, relative to the report folder."""
    artifacts: list[ArtifactEntry] = Field(default_factory=empty_list)
    setup_output: str | None = None
    """Notes the setup actions wrote to ``$AXIS_OUTPUT`` (never shown to the agent)."""
    teardown_output: str | None = None
    score: ScoreResult | None = None
    """The AXIS Result; absent until scored (or with ``--no-score``); ``withheld`` when the
    judge failed for good."""
    warnings: list[str] = Field(default_factory=empty_list)
    """What went oddly without failing the run (e.g. stdout lines that were not JSON)."""

    @property
    def tokens(self) -> int:
        """Total tokens (input + output + cache reads), as the live display shows them."""
        return self.token_usage.total if self.token_usage else 0


class Reliability(OutputModel):
    """Runs that succeeded out of the runs that count.

    Succeeded: scored (with ``--no-score``: completed). Withheld runs (the judge failed),
    infrastructure failures (a sandbox or a worker that could not run it: not the agent's
    doing) and cancelled runs leave the denominator; failed runs count against it.
    """

    succeeded: int
    total: int
    withheld: int = 0
    infrastructure: int = 0
    """Runs that failed for the infrastructure (``errorKind: infrastructure``)."""


class SpreadStats(OutputModel):
    """Statistics of the scored runs' composites, rounded to 2 decimals (AXIS's shape)."""

    median: float
    """The median; with an even number of scored runs a midpoint no run earned."""
    min: float
    max: float
    mean: float
    stdev: float | None = None
    """Sample standard deviation (n − 1); None below two scored runs (noise unmeasured)."""


class Spread(OutputModel):
    """How a pair's scored runs spread around the representative."""

    n: int
    """Scored runs (completed, not withheld): the sample the statistics describe."""
    axis_score: SpreadStats
    representative_run_index: int | None = None


class ScoreInterval(OutputModel):
    """One score of a pair over its 3+ scored runs (docs/statistics.md): the 95 % Student
    t interval for the mean (n − 1 df, clipped to 0–100) and the exact order-statistic
    interval ``[x(k), x(n−k+1)]`` for the median with its coverage (below 0.95 under 6 runs,
    when it is the range: 1 − 2^(1−n))."""

    n: int
    mean: float
    low: float
    high: float
    df: int
    median: float
    median_low: float
    median_high: float
    median_coverage: float


class AgentInterval(OutputModel):
    """An agent's suite mean composite clustered by scenario: the mean of its scenarios'
    mean composites, with a 95 % t interval over them (clusters − 1 df)."""

    agent_name: str
    clusters: int
    """Scenarios (base keys: a scenario's variants are one) with a scored run."""
    runs: int
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    df: int | None = None
    note: str | None = None
    """Why there is no interval (fewer than 2 clusters)."""


class PassRates(OutputModel):
    """Beyond AXIS: how often a pair's runs pass, and the optional per-pair gate.

    A run passes when its composite reaches ``passScore``. ``n`` counts the runs that also
    count for reliability (finished, not withheld): a crash is a run that did not pass. With
    ``c`` passing of ``n``, the unbiased estimators are ``pass@k = 1 − C(n−c, k) / C(n, k)``
    (at least one of k runs drawn without replacement passes) and ``pass^k = C(c, k) / C(n, k)``
    (all k pass); the lists hold k = 1 … n.
    """

    pass_score: int = 75
    min_pass_rate: float | None = None
    """``--min-pass-rate``: below it the pair fails (None: no gate)."""
    n: int = 0
    passed: int = 0
    rate: float | None = None
    """``passed / n`` (= pass@1), rounded to 4 decimals; None when no run counts."""
    pass_at_k: list[float] = Field(default_factory=empty_list)
    pass_hat_k: list[float] = Field(default_factory=empty_list)
    gate_failed: bool = False
    """The pass rate fell below ``minPassRate``: the pair is failed."""


class PairEntry(OutputModel):
    """One (scenario, agent) pair with its runs; the headline fields are its representative's."""

    scenario_key: str
    base_key: str
    variant: str | None = None
    scenario_name: str
    agent_name: str
    agent: str
    """Adapter name."""
    model: str | None = None
    status: JobStatus
    failed: bool
    run_count: int
    representative_run_index: int | None = None
    duration_ms: int = 0
    exit_code: int | None = None
    error: str | None = None
    token_usage: TokenUsage | None = None
    total_cost_usd: float | None = None
    cost_simulated: bool = False
    """The representative run's usage is simulated (the scripted model server)."""
    score: ScoreResult | None = None
    """The representative run's score."""
    file: str | None = None
    """The representative run's ``result.json``, relative to the report folder."""
    dir: str
    """The pair's folder, relative to the report folder."""
    prompt: str
    judge: str | list[dict[str, Any]]
    agent_config: dict[str, Any]
    resolved_config: dict[str, Any]
    runs: list[RunEntry] = Field(default_factory=empty_list)
    reliability: Reliability | None = None
    spread: Spread | None = None
    """Statistics over the scored runs; None until a run is scored."""
    pass_rates: PassRates | None = None
    """pass@k / pass^k over the runs; None without scores (``--no-score``)."""
    intervals: dict[str, ScoreInterval] | None = None
    """By score (``axisScore``, ``goalAchievement`` …); None below 3 scored runs."""
    load_warning: str | None = None
    """Runs whose speed signals were scored while the load exceeded the CPU count."""
    judge_noise: JudgeNoise | None = None
    """``axis score --rejudge K``: the judge's spread beside the runs' (None: not re-judged)."""
    adaptive: AdaptiveStop | None = None
    """Adaptive repeats (``runs: auto``): runs taken and why they stopped."""
    panel: PanelAgreement | None = None  # judging.panel: its agreement (None: no panel)


class Spend(OutputModel):
    """What a report's runs cost, over every run; simulated usage (``costSimulated``: the
    scripted model server) is never summed into the costs, only counted apart."""

    agent_cost_usd: float | None = None
    """The agents' real spend; None when no real run reported or estimated a cost."""
    agent_cost_estimated: bool = False
    judge_cost_usd: float | None = None
    """The judges' real spend; None when no real judge call had a cost."""
    judge_cost_estimated: bool = False
    total_cost_usd: float | None = None
    """Agents plus judges, real spend only; None when neither is known."""
    cost_simulated: bool = False
    """Some usage in the report is simulated (the scripted model server)."""
    simulated_runs: int = 0
    """Runs whose agent usage is simulated."""
    simulated_tokens: int = 0
    """The agents' simulated tokens (input + output + cache reads), apart from real ones."""
    simulated_judge_tokens: int = 0
    """The judges' simulated tokens (input + output)."""


class Summary(OutputModel):
    """Counts over pairs (``total`` …) and over runs (``runsTotal`` …)."""

    total: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    skipped: int = 0
    runs_total: int = 0
    runs_completed: int = 0
    runs_failed: int = 0
    runs_cancelled: int = 0
    load_failures: int = 0
    average_axis_score: float | None = None
    spend: Spend = Field(default_factory=Spend)
    """Real spend, and simulated usage apart from it."""
    agent_intervals: list[AgentInterval] | None = None
    """Per agent: its mean composite over the scenarios, clustered by scenario."""
    panel: PanelAgreement | None = None  # judging.panel over every pair's runs


class LoadFailureEntry(OutputModel):
    """A scenario file that failed to load."""

    path: str
    key: str | None = None
    error: str


class ToolInfo(OutputModel):
    """What wrote the report."""

    name: str = "axis-eval"
    version: str


class RemoteEntry(OutputModel):
    """A remote scenario source (a git repository in ``scenarios``) as the run used it."""

    url: str
    ref: str | None = None
    """The pinned branch, tag or commit (None: the default branch)."""
    commit: str
    """The commit its checkout was at."""
    listed_by: str | None = None
    """The remote whose config listed it (None: the run's config)."""


class ReportManifest(OutputModel):
    """``report.json``: one entry per pair with its runs."""

    schema_version: int = SCHEMA_VERSION
    version: str = AXIS_MANIFEST_VERSION
    """AXIS's manifest version string."""
    tool: ToolInfo
    report_id: str
    name: str | None = None
    state: ReportState = "running"
    """``running`` while jobs are under way; unfinished runs are recorded as cancelled.
    ``finished``, ``interrupted`` (a signal) or ``crashed`` (a bug: see ``error``) after;
    ``axis run --resume`` finishes an interrupted or crashed report."""
    started_at: str
    timestamp: str
    """When the run ended (or the manifest was last written while running)."""
    duration_ms: int = 0
    config_path: str
    config_dir: str
    profile: str | None = None
    summary: Summary
    results: list[PairEntry] = Field(default_factory=empty_list)
    skipped: list[str] = Field(default_factory=empty_list)
    load_failures: list[LoadFailureEntry] = Field(default_factory=empty_list)
    warnings: list[str] = Field(default_factory=empty_list)
    scoring_weights: dict[str, float] | None = None
    resolved_config: dict[str, Any] = Field(default_factory=dict)
    """The config in force (profile merged), secrets redacted."""
    config_hash: str | None = None
    """sha256 of the resolved config when the run started: ``--resume`` refuses a changed
    config unless ``--force``."""
    model_server: dict[str, Any] | None = None
    """The embedded scripted model server, when used: tape, requests, refused connections."""
    remotes: list[RemoteEntry] | None = None
    """The remote scenario sources and the commit each was at (None: the config has none)."""
    before_all_output: str | None = None
    after_all_output: str | None = None
    exit_code: int | None = None
    """The exit code ``axis run`` ended with."""
    error: str | None = None
    """State ``crashed``: what ended the run (the exception, one line); the full traceback
    is in the report folder's ``crash.log``."""


RESULT_FILE = "result.json"
"""A run folder's :class:`RunResult` (written last: a run with one has finished)."""
TRANSCRIPT_FILE = "transcript.json"
"""A run folder's normalized transcript."""
SPARSE_INDEX_FILE = "sparse-index.txt"
"""A scored run's sparse index (as in AXIS, the scorer's file: ``--no-score`` writes none)."""
VERDICTS_FILE = "verdicts.json"
"""A run's judge verdicts, kept so ``axis score`` can score it again."""


class RunResult(OutputModel):
    """A run's ``result.json``: its entry, the job spec that produced it, and output metadata."""

    schema_version: int = SCHEMA_VERSION
    scenario_key: str
    scenario_name: str
    agent_name: str
    run: RunEntry
    spec: dict[str, Any]
    """The job spec (serialized ``JobSpec``), so a run can be re-run or re-scored alone."""
    workspace: str | None = None
    """Where the agent ran (deleted after the job)."""
    files: dict[str, str] = Field(default_factory=dict)
    """Other files of this run (transcript, raw output, stderr), relative to the report."""


DiffVerdict = Literal[
    "improved", "regressed", "unchanged", "mixed", "unmeasured", "unscored", "new", "vanished"
]


class DeltaInterval(OutputModel):
    """B − A of the mean scores with a 95 % Welch t interval (2+ scored runs a side)."""

    mean_delta: float
    low: float
    high: float
    df: float | None = None
    """Welch–Satterthwaite df (None: neither side varied; the interval is the point)."""


class PairedTest(OutputModel):
    """Paired t test of the composite's mean deltas over the pairs both reports scored."""

    n: int
    mean_delta: float | None = None
    stdev: float | None = None
    t: float | None = None
    df: int | None = None
    p_value: float | None = None
    """Two-sided; None below 2 pairs."""
    low: float | None = None
    high: float | None = None
    note: str | None = None


class ScoreDelta(OutputModel):
    """One score of a pair in two reports (``axis reports diff``): the composite
    (``axisScore``) or a dimension, judged against report A's noise.

    Not the baseline comparison's ``DimensionDelta`` (``runs.baseline_models``), which
    compares a report to a saved baseline by category."""

    name: str
    """``axisScore``, ``goalAchievement``, ``environment``, ``service`` or ``agent``."""
    a: int | None = None
    b: int | None = None
    delta: int | None = None
    """``b − a``; None when either side has no score."""
    noise: float = 1.0
    """The tolerance: max(1, 2σ) of report A's runs for this score."""
    changed: bool = False
    """``|delta| > noise``: a change beyond the measured noise."""
    interval: DeltaInterval | None = None
    """The difference of means with its interval (None: a side has under 2 scored runs)."""


class PairDiff(OutputModel):
    """One (scenario, agent) pair in ``axis reports diff A B``."""

    scenario_key: str
    agent_name: str
    verdict: DiffVerdict
    runs_a: int = 0
    runs_b: int = 0
    noise_measured: bool = False
    """False when report A scored fewer than two runs: the floor of 1 applies, and a
    change beyond it reads ``unmeasured``, not improved or regressed."""
    deltas: list[ScoreDelta] = Field(default_factory=empty_list)
    reliability_a: Reliability | None = None
    reliability_b: Reliability | None = None


class ReportDiff(OutputModel):
    """``axis reports diff A B --json``: per-pair deltas from report A to report B."""

    report_a: str
    report_b: str
    pairs: list[PairDiff] = Field(default_factory=empty_list)
    """Pairs in both reports, then new ones (only in B), then vanished ones (only in A)."""
    paired: PairedTest | None = None
    """The paired t test of composite deltas across the pairs both reports hold."""
