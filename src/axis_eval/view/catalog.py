"""The reports ``axis view`` shows: found under folders, read lazily, cached, never written.

A report is a folder holding ``report.json``. :class:`Catalog` finds them under the roots it
is given (a report folder, or a folder of report folders), each known by its folder name (a
safe id: letters, digits, ``._-``). The list, the history charts and the search use a light
read of each ``report.json`` (:class:`~axis_eval.view.catalog_models.Head`: statuses, scores
and folders, the rest skipped unvalidated), kept for every report while the file's (mtime,
size) stays the same; a whole manifest is read only for a page that shows one, and only the
last few are kept: a 1,000-job manifest is ~20 MB on disk and far more as objects.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from axis_eval.report.models import ReportDiff, ReportManifest
from axis_eval.runs.aggregate import diff_reports
from axis_eval.runs.store import MANIFEST_FILE, read_manifest
from axis_eval.view.catalog_models import Head

SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
"""A report id the viewer serves: its folder name, nothing that walks out of a folder."""

MANIFEST_CACHE = 8
"""Whole manifests kept in memory (a page shows at most two; each may be hundreds of MB as
objects): the list, history and search read :class:`Head` instead, kept for every report."""

LISTING_TTL = 1.0
"""Seconds a listing of the report folders is reused (see :meth:`Catalog.folders`)."""


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


def headline(report_id: str, manifest: ReportManifest | Head) -> Headline:
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
        self._cache: OrderedDict[Path, tuple[tuple[int, int], ReportManifest]] = OrderedDict()
        self._heads: dict[Path, tuple[tuple[int, int], tuple[Head, Headline]]] = {}
        self._diff: tuple[tuple[object, ...], ReportDiff] | None = None
        """The last comparison, by both files' (path, mtime, size)."""
        self._listing: tuple[float, dict[str, Path]] | None = None

    def folders(self) -> dict[str, Path]:
        """Every report folder by id (a name seen twice gets ``~2``, ``~3`` …).

        Listed again at most every ``LISTING_TTL`` seconds: one page asks once per report it
        links (a history of 200 reports rescanned 200 folders 200 times), and a report that a
        run writes meanwhile shows on the next page a moment later."""
        now = time.monotonic()
        with self._lock:
            if self._listing is not None and now - self._listing[0] < LISTING_TTL:
                return dict(self._listing[1])
        found = self._scan()
        listed = {folder / MANIFEST_FILE for folder in found.values()}
        with self._lock:
            self._listing = (now, found)
            for path in [p for p in self._heads if p not in listed]:  # a report deleted since
                del self._heads[path]
        return dict(found)

    def _scan(self) -> dict[str, Path]:
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

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int] | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _load(self, folder: Path) -> ReportManifest | None:
        """The whole manifest (the last ``MANIFEST_CACHE`` read are kept)."""
        path = folder / MANIFEST_FILE
        stamp = self._stamp(path)
        if stamp is None:
            return None
        with self._lock:
            hit = self._cache.get(path)
            if hit is not None and hit[0] == stamp:
                self._cache.move_to_end(path)
                return hit[1]
        try:
            manifest = read_manifest(folder)
        except Exception:  # an unreadable report is left out, not a crash of the viewer
            return None
        with self._lock:
            self._cache[path] = (stamp, manifest)
            self._cache.move_to_end(path)
            while len(self._cache) > MANIFEST_CACHE:
                self._cache.popitem(last=False)
        return manifest

    def _head(self, folder: Path) -> tuple[Head, Headline] | None:
        """The light read of a report (cached while its file stays the same)."""
        path = folder / MANIFEST_FILE
        stamp = self._stamp(path)
        if stamp is None:
            return None
        with self._lock:
            hit = self._heads.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            head = Head.model_validate_json(path.read_bytes())
        except Exception:  # an unreadable report is left out, not a crash of the viewer
            return None
        loaded = (head, headline(folder.name, head))
        with self._lock:
            self._heads[path] = (stamp, loaded)
        return loaded

    def manifest(self, report_id: str) -> ReportManifest | None:
        """The manifest of ``report_id`` (None: unknown or unreadable)."""
        folder = self.folder(report_id)
        return None if folder is None else self._load(folder)

    def head(self, report_id: str) -> Head | None:
        """The light read of ``report_id``: each pair's and run's status, scores and folder
        (None: unknown or unreadable)."""
        folder = self.folder(report_id)
        loaded = None if folder is None else self._head(folder)
        return None if loaded is None else loaded[0]

    def diff(self, a_id: str, b_id: str) -> ReportDiff | None:
        """``axis reports diff`` of two reports (None: either unknown or unreadable). The last
        one is kept while both files stay the same: the compare page in another sort order
        (as a reader re-sorts, and the export writes each order) is not diffed again; a diff
        of 333 pairs × 3 runs is ~0.5 s of t quantiles."""
        a_dir, b_dir = self.folder(a_id), self.folder(b_id)
        if a_dir is None or b_dir is None:
            return None
        paths = (a_dir / MANIFEST_FILE, b_dir / MANIFEST_FILE)
        key = (*paths, *(self._stamp(p) for p in paths))
        with self._lock:
            last = self._diff
        if last is not None and last[0] == key:
            return last[1]
        a, b = self._load(a_dir), self._load(b_dir)
        if a is None or b is None:
            return None
        diff = diff_reports(a, b)
        with self._lock:
            self._diff = (key, diff)
        return diff

    def headlines(self) -> list[Headline]:
        """Every readable report, newest first (by start time, then id)."""
        heads = []
        for rid, folder in self.folders().items():
            loaded = self._head(folder)
            if loaded is not None:
                head = loaded[1]
                if head.report_id != rid:
                    head = Headline(**{**head.__dict__, "report_id": rid})
                heads.append(head)
        return sorted(heads, key=lambda h: (h.started_at, h.report_id), reverse=True)


def _report_folders(root: Path) -> list[Path]:
    """Resolved, sorted by name. Every page asks (the export thousands of times), so one
    ``scandir`` and a ``stat`` per child, and ``resolve`` only for a symlinked child."""
    if (root / MANIFEST_FILE).is_file():
        return [root.resolve()]
    try:
        with os.scandir(root) as listing:
            children = sorted(listing, key=lambda c: c.name)
        base = root.resolve()
    except OSError:
        return []
    found = []
    for child in children:
        try:
            if not child.is_dir() or not os.path.isfile(os.path.join(child.path, MANIFEST_FILE)):
                continue
            found.append(Path(child.path).resolve() if child.is_symlink() else base / child.name)
        except OSError:
            continue
    return found
