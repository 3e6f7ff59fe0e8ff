"""What ``run`` takes and what it gives back."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from axis_eval.config.models import LoadedConfig
from axis_eval.errors import AxisError
from axis_eval.execute.executor import Executor
from axis_eval.execute.job import Scorer
from axis_eval.planning.matrix import Selection
from axis_eval.progress import Display
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


@dataclass
class RunOutcome:
    """What a run left: its manifest, its folder and the exit code."""

    manifest: ReportManifest
    report_dir: Path
    exit_code: int


def config_hash(loaded: LoadedConfig) -> str:
    """sha256 of the resolved config (profile merged): what ``--resume`` compares."""
    return hashlib.sha256(loaded.config.model_dump_json().encode()).hexdigest()
