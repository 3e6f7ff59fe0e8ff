"""What a job returns: serializable, so a remote executor can send it back whole."""

from pydantic import Field

from axis_eval._types import ErrorKind, JobStatus, OutputModel, WorkspaceFile
from axis_eval._util.defaults import empty_list
from axis_eval.config.sandbox import SandboxKind
from axis_eval.planning.models import JobSpec
from axis_eval.scoring.models import CheckVerdict, JudgeVerdicts, ScoreResult
from axis_eval.transcript.models import Transcript


class CollectedArtifact(WorkspaceFile):
    """A file collected from the workspace; ``data`` is absent when over the size cap."""

    data: bytes | None = None
    note: str | None = None


class MachineLoad(OutputModel):
    """Where the job ran: the 1-minute load average and CPU count at its start and end
    (None: the platform could not tell)."""

    load_start: float | None = None
    load_end: float | None = None
    cpus_start: int | None = None
    cpus_end: int | None = None

    @property
    def overloaded(self) -> bool:
        """The load exceeded the CPU count at the start or the end."""
        loads = [v for v in (self.load_start, self.load_end) if v is not None]
        cpus = [v for v in (self.cpus_start, self.cpus_end) if v is not None]
        return bool(loads and cpus) and max(loads) > min(cpus)


class AgentRun(OutputModel):
    """What one run of an agent left: the record the supervisor fills.

    A job's :class:`JobOutcome` is one (with the job around it); a judge agent or the task
    runner's goal agent gets a bare one. The supervisor writes each field once, here.
    """

    transcript: Transcript | None = None
    raw_output: list[str] = Field(default_factory=empty_list)
    """stdout: one item per non-blank line (lines mode), per decoded chunk (aggregate) or
    per JSON-RPC message (ACP); its first and last 4 MiB, with a note of what was left out
    between them (:class:`~axis_eval.adapters.supervision.RawOutput`)."""
    stderr: str = ""
    """The last 100,000 bytes of stderr, decoded."""
    exit_code: int | None = None
    """A negative signal number when a signal ended the agent; None when nothing ran."""
    result: str | None = None
    """The final answer."""
    error: str | None = None
    error_kind: ErrorKind | None = None
    failed: bool = False
    """The run failed; a job then settles its status (and its own ``failed``) from it."""
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int = 0
    warnings: list[str] = Field(default_factory=empty_list)


class JobOutcome(AgentRun):
    """Everything one job produced: its agent's run and what the job did around it."""

    spec: JobSpec
    status: JobStatus
    failed: bool
    """Required here (a bare run defaults to not failed): whoever makes a job's outcome says
    whether it failed; a run's ending then settles it."""
    setup_output: str | None = None
    teardown_output: str | None = None
    artifacts: list[CollectedArtifact] = Field(default_factory=empty_list)
    score: ScoreResult | None = None
    verdicts: JudgeVerdicts | None = None
    """What the judges said (kept so ``axis score`` can recompute without calling them)."""
    workspace: str | None = None
    sandbox: SandboxKind | None = None
    """What confined the job (None: it never started one)."""
    worker: str | None = None
    """Where the job ran, when not in this process (a Dask worker's address)."""
    machine: MachineLoad | None = None
    """The load and CPU count where the job ran (None: it never started)."""
    attempts: int = 1
    """How many times the job was started: more than one when a worker was lost under it."""
    checks: dict[int, CheckVerdict] | None = None
    """The rubric's deterministic checks by rubric position, when they ran where the job ran
    (a remote worker) and the judges run here."""

    @property
    def tokens(self) -> int:
        """Total tokens (input + output + cache reads)."""
        return self.transcript.usage.total if self.transcript else 0
