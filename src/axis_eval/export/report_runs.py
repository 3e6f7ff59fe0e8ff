"""A finished report's runs, one at a time, for the exporters.

:func:`iter_runs` walks a report's pairs and their runs in manifest order and yields a
:class:`ReportRun` for each; its transcript and judge verdicts are read from the run's
folder only when asked for (and then kept), so an exporter holds one run's files at a
time however large the report. A missing or unreadable file reads as ``None`` (a run that
crashed before its transcript was written), and a run folder that would lie outside the
report folder is never read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from axis_eval.report.models import (
    TRANSCRIPT_FILE,
    VERDICTS_FILE,
    PairEntry,
    ReportManifest,
    RunEntry,
)
from axis_eval.scoring.models import JudgeVerdicts
from axis_eval.transcript.models import Transcript

M = TypeVar("M", bound=BaseModel)

_UNREAD = object()


@dataclass
class ReportRun:
    """One run of a report with its pair; :meth:`transcript` and :meth:`verdicts` load lazily."""

    folder: Path
    """The report folder."""
    manifest: ReportManifest
    pair: PairEntry
    run: RunEntry
    _cache: dict[str, object] = field(default_factory=dict, repr=False)

    @property
    def run_folder(self) -> Path | None:
        """The run's folder; None when its ``dir`` points outside the report folder."""
        root = self.folder.resolve()
        path = (root / self.run.dir).resolve()
        return path if path.is_relative_to(root) else None

    def transcript(self) -> Transcript | None:
        """The run's ``transcript.json``; None when missing or unreadable."""
        return self._load(TRANSCRIPT_FILE, Transcript)

    def verdicts(self) -> JudgeVerdicts | None:
        """The run's ``verdicts.json`` (its judge's raw grades); None when unscored."""
        return self._load(VERDICTS_FILE, JudgeVerdicts)

    def _load(self, name: str, model: type[M]) -> M | None:
        found = self._cache.get(name, _UNREAD)
        if found is _UNREAD:
            found = _read(self.run_folder, name, model)
            self._cache[name] = found
        return found if isinstance(found, model) else None


def _read(folder: Path | None, name: str, model: type[M]) -> M | None:
    if folder is None:
        return None
    try:
        return model.model_validate_json((folder / name).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def iter_runs(folder: Path, manifest: ReportManifest) -> Iterator[ReportRun]:
    """Every run of every pair of ``manifest`` (the report in ``folder``), in order."""
    for pair in manifest.results:
        for run in pair.runs:
            yield ReportRun(folder=folder, manifest=manifest, pair=pair, run=run)


def count_runs(manifest: ReportManifest) -> int:
    """How many runs :func:`iter_runs` yields."""
    return sum(len(pair.runs) for pair in manifest.results)
