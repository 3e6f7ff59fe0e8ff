"""What ``run`` takes and what it gives back."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from axis_eval.config.models import LoadedConfig
from axis_eval.errors import AxisError, UsageError
from axis_eval.execute.executor import Executor
from axis_eval.execute.job import Scorer
from axis_eval.planning.matrix import Selection
from axis_eval.progress import Display
from axis_eval.redact import Redactor
from axis_eval.report.models import ReportManifest


class RunAborted(AxisError):
    """A run-level hook (beforeAll) failed; nothing ran."""


@dataclass
class RunOptions:
    """Everything ``axis run`` takes; the CLI fills it from flags."""

    loaded: LoadedConfig
    selection: Selection = field(default_factory=Selection)
    concurrency: int | None = None
    score: bool = True
    grace_s: float = 5.0
    verbose: bool = False
    json_output: bool = False
    display: Display | None = None
    executor: Executor | None = None
    scorer: Scorer | None = None
    """Default: judges as the config's ``judging`` says (unless ``score`` is False)."""
    judge: str | None = None
    """``--judge``: an API model (``anthropic:<model>``) or an agent name for every run."""
    environ: Mapping[str, str] | None = None
    """The parent environment (default ``os.environ``)."""
    handle_signals: bool = True
    """Install SIGINT/SIGTERM handlers (first: cancel; second: exit at once)."""
    pass_score: int = 75
    """``--pass-score``: a run passes (for pass@k / pass^k) when its composite reaches it."""
    min_pass_rate: float | None = None
    """``--min-pass-rate``: a pair whose runs pass less often than this fails (exit 1)."""
    resume: ReportManifest | None = None
    """``--resume``: finish this report in its own folder (``selection`` is ignored)."""
    force: bool = False
    """``--force``: resume even when the config changed since the report started."""
    offline: bool = False
    """``--offline``: GitHub skills and ``copy`` repositories come from their caches; never
    fetched (remote scenario sources: ``load_config(remotes=RemoteFetch(offline=True))``)."""
    refresh_skills: bool = False
    """``--refresh-skills``: clone GitHub skills afresh instead of reusing the cache."""
    refresh_repos: bool = False
    """``--refresh-repos``: clone ``copy`` repositories afresh instead of reusing the cache."""

    def __post_init__(self) -> None:
        """The numbers a caller passes are checked as the CLI checks its flags: a NaN
        grace period would mean an agent that is never killed.

        Raises:
            UsageError: a number that is NaN, infinite or out of its range (exit 2).
        """
        _check_number("grace_s", self.grace_s, low=0)
        if self.min_pass_rate is not None:
            _check_number("min_pass_rate", self.min_pass_rate, low=0, high=1)
        _check_number("pass_score", self.pass_score, low=0, high=100)
        if self.concurrency is not None:
            _check_number("concurrency", self.concurrency, low=1)


def _check_number(name: str, value: float, *, low: float, high: float | None = None) -> None:
    expected = f"a number from {low:g} to {high:g}" if high is not None else f"a number >= {low:g}"
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < low
        or (high is not None and value > high)
    ):
        raise UsageError(f"RunOptions.{name}: expected {expected}, found {value!r}")


@dataclass
class RunOutcome:
    """What a run left: its manifest, its folder and the exit code."""

    manifest: ReportManifest
    report_dir: Path
    exit_code: int
    redactor: Redactor | None = None
    """The run's redactor (what the CLI masks in a traceback written after the run)."""


def config_hash(loaded: LoadedConfig) -> str:
    """sha256 of the resolved config (profile merged): what ``--resume`` compares."""
    return hashlib.sha256(loaded.config.model_dump_json().encode()).hexdigest()
