"""The reports ``axis view`` shows: found under folders, read lazily, cached, never written.

A report is a folder holding ``report.json``. :class:`Catalog` finds them under the roots it
is given (a report folder, or a folder of report folders), each known by its folder name (a
safe id: letters, digits, ``._-``), and reads a manifest only when a page asks for it, kept
while the file's (path, mtime, size) stays the same.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from axis_eval.report.models import ReportManifest
from axis_eval.runs.store import MANIFEST_FILE, read_manifest

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
"""A report id the viewer serves: its folder name, nothing that walks out of a folder."""


@dataclass(frozen=True)
class Headline:
    """A report's numbers in the list."""

    report_id: str
    started_at: str
    timestamp: str
    name: str | None
    profile: str | None
    state: str
    agents: tuple[str, ...]
    scenarios: tuple[str, ...]
    pairs: int
    runs: int
    statuses: dict[str, int] = field(default_factory=dict)
    average: float | None = None

    @property
    def date(self) -> str:
        """``YYYY-MM-DD`` of the start."""
        return self.started_at[:10]


def headline(report_id: str, manifest: ReportManifest) -> Headline:
    """The list's numbers of one report."""
    statuses = Counter(p.status for p in manifest.results)
    return Headline(
        report_id=report_id,
        started_at=manifest.started_at,
        timestamp=manifest.timestamp,
        name=manifest.name,
        profile=manifest.profile,
        state=manifest.state,
        agents=tuple(sorted({p.agent_name for p in manifest.results})),
        scenarios=tuple(sorted({p.scenario_key for p in manifest.results})),
        pairs=len(manifest.results),
        runs=manifest.summary.runs_total,
        statuses=dict(sorted(statuses.items())),
        average=manifest.summary.average_axis_score,
    )


class Catalog:
    """The report folders under ``roots``, their manifests read on demand and cached."""

    def __init__(self, roots: list[Path], config_dir: Path | None = None) -> None:
        self.roots = [Path(r) for r in roots]
        self.config_dir = config_dir
        """The project folder (baselines live there); None when only folders were given."""
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[int, int], ReportManifest, Headline]] = {}

    def folders(self) -> dict[str, Path]:
        """Every report folder by id (a name seen twice gets ``~2``, ``~3`` …)."""
        found: dict[str, Path] = {}
        for root in self.roots:
            for folder in _report_folders(root):
                rid, n = folder.name, 1
                while rid in found:
                    if found[rid] == folder:
                        break
                    n += 1
                    rid = f"{folder.name}~{n}"
                if SAFE_ID.match(folder.name):
                    found[rid] = folder
        return found

    def folder(self, report_id: str) -> Path | None:
        """The folder of ``report_id``, or None for an id the catalog does not hold."""
        if not SAFE_ID.match(report_id.replace("~", "")):
            return None
        return self.folders().get(report_id)

    def _load(self, folder: Path) -> tuple[ReportManifest, Headline] | None:
        path = folder / MANIFEST_FILE
        try:
            stat = path.stat()
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            hit = self._cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1], hit[2]
        try:
            manifest = read_manifest(folder)
        except Exception:  # an unreadable report is left out, not a crash of the viewer
            return None
        head = headline(folder.name, manifest)
        with self._lock:
            self._cache[path] = (stamp, manifest, head)
        return manifest, head

    def manifest(self, report_id: str) -> ReportManifest | None:
        """The manifest of ``report_id`` (None: unknown or unreadable)."""
        folder = self.folder(report_id)
        loaded = None if folder is None else self._load(folder)
        return None if loaded is None else loaded[0]

    def headlines(self) -> list[Headline]:
        """Every readable report, newest first (by start time, then id)."""
        heads = []
        for rid, folder in self.folders().items():
            loaded = self._load(folder)
            if loaded is not None:
                head = loaded[1]
                if head.report_id != rid:
                    head = Headline(**{**head.__dict__, "report_id": rid})
                heads.append(head)
        return sorted(heads, key=lambda h: (h.started_at, h.report_id), reverse=True)


def _report_folders(root: Path) -> list[Path]:
    if (root / MANIFEST_FILE).is_file():
        return [root.resolve()]
    try:
        children = sorted(root.iterdir())
    except OSError:
        return []
    return [c.resolve() for c in children if c.is_dir() and (c / MANIFEST_FILE).is_file()]
