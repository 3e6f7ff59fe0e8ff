"""What a job returns: serializable, so a remote executor can send it back whole."""

from __future__ import annotations

from pydantic import Field

from axis_eval._types import ErrorKind, JobStatus, OutputModel
from axis_eval._util.defaults import empty_list
from axis_eval.planning.models import JobSpec
from axis_eval.scoring.models import JudgeVerdicts, ScoreResult
from axis_eval.transcript.models import Transcript


class CollectedArtifact(OutputModel):
    """A file collected from the workspace; ``data`` is absent when over the size cap."""

    path: str
    size_bytes: int
    mime_type: str
    data: bytes | None = None
    note: str | None = None


class JobOutcome(OutputModel):
    """Everything one job produced."""

    spec: JobSpec
    status: JobStatus
    failed: bool
    exit_code: int | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    started_at: str | None = None
    ended_at: str | None = None
    duration_ms: int = 0
    transcript: Transcript | None = None
    raw_output: list[str] = Field(default_factory=empty_list)
    stderr: str = ""
    result: str | None = None
    setup_output: str | None = None
    teardown_output: str | None = None
    artifacts: list[CollectedArtifact] = Field(default_factory=empty_list)
    score: ScoreResult | None = None
    verdicts: JudgeVerdicts | None = None
    """What the judges said (kept so ``axis score`` can recompute without calling them)."""
    workspace: str | None = None
    warnings: list[str] = Field(default_factory=empty_list)

    @property
    def tokens(self) -> int:
        """Total tokens (input + output + cache reads)."""
        return self.transcript.usage.total if self.transcript else 0
