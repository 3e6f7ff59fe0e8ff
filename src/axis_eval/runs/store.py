"""The report folder: ids, layout, atomic redacted writes, and reading reports back.

::

    <config dir>/.axis/reports/<id>/
      report.json                          the manifest
      crash.log                            state crashed: the traceback of what ended the run
      report.html                          the HTML report (axis_eval.report.html)
      baseline-comparison.json             with --compare-baseline
      scenarios/<scenario>/<agent>/        one folder per pair (safe names: runs.folder_names)
        result.json transcript.json raw.ndjson stderr.log artifacts/   (runs: 1)
        run-<i>/result.json …                                          (runs > 1)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from axis_eval.errors import ReportNotFound, UsageError
from axis_eval.files import atomic_write_bytes, atomic_write_chunks, atomic_write_text
from axis_eval.redact import Redactor
from axis_eval.report.models import ReportManifest
from axis_eval.runs.folder_names import agent_folder, scenario_folder

REPORTS_DIR = Path(".axis") / "reports"
MANIFEST_FILE = "report.json"
HTML_FILE = "report.html"
COMPARISON_FILE = "baseline-comparison.json"
"""Saved by ``--compare-baseline``: the comparison the HTML page shows deltas from."""
CRASH_FILE = "crash.log"
"""Written when a bug ends a run (state ``crashed``): the full traceback, redacted."""

M = TypeVar("M", bound=BaseModel)


def reports_root(config_dir: str | Path) -> Path:
    """``<config dir>/.axis/reports``."""
    return Path(config_dir) / REPORTS_DIR


def check_folders(config_dir: str | Path, *relative: Path) -> None:
    """Check that each of ``relative`` (``.axis/reports``…, under ``config_dir``) is, or
    can be made, a folder axis-eval writes to; nothing is created.

    Checked before a run starts anything (no hook, no job), so a ``.axis`` (or
    ``.axis/reports``) that is a file, a broken link or read-only is a clear error instead
    of a crash halfway through the run.

    Raises:
        UsageError: a path on the way is not a folder, or the deepest one that exists
            cannot be written (exit 2, the path named).
    """
    for rel in relative:
        wanted = Path(config_dir) / rel
        path = deepest = Path(config_dir)
        for part in rel.parts:
            path = path / part
            if not (path.exists() or path.is_symlink()):
                break  # made when the run writes there
            _check_folder(path, wanted)
            deepest = path
        if not os.access(deepest, os.W_OK | os.X_OK):
            raise UsageError(
                f"{deepest} is not writable: expected a folder axis-eval can write to ({wanted})",
                hint="fix its permissions, or run from a config folder you can write to",
            )


def _check_folder(path: Path, wanted: Path) -> None:
    """``path`` (which exists) is a folder; else a UsageError naming it."""
    what = f"a folder (to hold {wanted})" if path != wanted else "a folder"
    if path.is_symlink() and not path.exists():
        raise UsageError(f"{path} is a broken symbolic link: expected {what}")
    if not path.is_dir():
        kind = "a file" if path.is_file() else "not a folder"
        raise UsageError(
            f"{path} is {kind}: expected {what}",
            hint=f"move or delete {path}; axis-eval creates the folder itself",
        )


def new_report_id(root: Path, now: datetime | None = None) -> str:
    """Create a fresh report folder and return its id: ``YYYY-MM-DD-HHMMSS[-n]``.

    The folder is created with an exclusive ``mkdir``, so two runs started in the same
    second get different ids.
    """
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d-%H%M%S")
    root.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        rid = stamp if n == 1 else f"{stamp}-{n}"
        try:
            (root / rid).mkdir()
        except FileExistsError:
            n += 1
            continue
        return rid


def pair_dir(scenario_key: str, agent_name: str) -> str:
    """A new pair's folder relative to the report folder, made of safe names
    (``scenarios/cms/post@v/codex--gpt-5``); the pair's entry records it as ``dir``, and
    everything that reads a report goes by that (old reports: the display names as is)."""
    return f"scenarios/{scenario_folder(scenario_key)}/{agent_folder(agent_name)}"


def run_dir(scenario_key: str, agent_name: str, run_index: int, run_count: int) -> str:
    """A new run's folder relative to the report folder: the pair folder when unrepeated."""
    return run_in(pair_dir(scenario_key, agent_name), run_index, run_count)


def run_in(pair_folder: str, run_index: int, run_count: int) -> str:
    """A run's folder in its pair's folder (``pair_folder`` itself when unrepeated)."""
    return pair_folder if run_count == 1 else f"{pair_folder}/run-{run_index}"


KEPT_BYTES = 16 * 1024 * 1024
"""The most a store keeps of the files it wrote, for readers later in the same run."""
KEPT_FILE_BYTES = 256 * 1024
"""The largest file a store keeps (larger ones are read back from the disk)."""
MAX_NAMES = 100_000
"""The most file names a store remembers (past them it forgets all: readers list folders)."""


class ReportStore:
    """Writes one report folder; every file goes through the redactor and an atomic rename."""

    def __init__(self, folder: Path, redactor: Redactor | None = None) -> None:
        self.folder = folder
        self.redactor = redactor or Redactor()
        self._root = os.fspath(folder)
        self._made: set[str] = set()
        self._new: set[str] = set()
        """Folders this store created: every file in them was written through it."""
        self._names: dict[str, set[str]] = {}
        """Each of those folders' files, by name (what :meth:`written_in` answers)."""
        self._name_count = 0
        self._kept: dict[str, bytes] = {}
        self._kept_bytes = 0

    @property
    def report_id(self) -> str:
        """The folder's name."""
        return self.folder.name

    def path(self, relative: str) -> Path:
        """An absolute path inside the report folder (its folder created); refuses to leave
        the report folder."""
        return Path(self._target(relative))

    def _target(self, relative: str) -> str:
        """:meth:`path` as a string, for the writes: a job writes four files, and pathlib's
        parsing and hashing per file was a measurable share of an instant job's cost.

        Checked lexically (no absolute paths, no ``..``): the folder is ours, and resolving
        every component with lstat() per file was a measurable share of a job's cost too.
        """
        parts = relative.replace("\\", "/").split("/")
        if relative.startswith("/") or ".." in parts:
            raise ValueError(f"path escapes the report folder: {relative}")
        target = f"{self._root}/{relative}"
        parent = target.rpartition("/")[0]
        if parent not in self._made:
            self._make(parent)
        return target

    def wrote(self, relative: str, data: bytes | None = None) -> None:
        """``relative`` has just been written (``data``: its bytes, to keep for
        :meth:`recall` when small); a writer that streams a file through :meth:`path`
        says so here, the write methods do it themselves."""
        parent, _, name = f"{self._root}/{relative}".rpartition("/")
        if parent in self._new:
            names = self._names.setdefault(parent, set())
            if name not in names:
                self._name_count += 1
                names.add(name)
            if self._name_count > MAX_NAMES:  # (a flood of artifacts): the disk knows
                self._new.clear()
                self._names.clear()
        old = self._kept.pop(relative, None)
        if old is not None:
            self._kept_bytes -= len(old)
        if data is None or len(data) > KEPT_FILE_BYTES:
            return
        if self._kept_bytes + len(data) <= KEPT_BYTES:
            self._kept[relative] = data
            self._kept_bytes += len(data)

    def written_in(self, folder: str) -> frozenset[str] | None:
        """The names of the files in ``folder`` (relative) when this store created it, so
        that it wrote them all; None for a folder it found (read it from the disk)."""
        absolute = f"{self._root}/{folder}".rstrip("/")
        if absolute not in self._new:
            return None
        return frozenset(self._names.get(absolute, ()))

    def recall(self, relative: str) -> bytes | None:
        """The bytes last written to ``relative`` with ``keep``, when still kept (the
        report page reads every transcript back: from here, without a walk of its path
        and four system calls)."""
        return self._kept.get(relative)

    def forget(self) -> None:
        """Something else may have changed the folder (an ``afterAll`` hook gets it): from
        now on :meth:`recall` and :meth:`written_in` know nothing, readers go to the disk."""
        self._new.clear()
        self._names.clear()
        self._kept.clear()
        self._kept_bytes = 0

    def _make(self, folder: str) -> None:
        """Create ``folder`` (once), parents first: one mkdir() per new folder, where
        ``mkdir(parents=True)`` first fails on the missing parent and then retries."""
        if folder == self._root or len(folder) < len(self._root):
            os.makedirs(folder, exist_ok=True)
        else:
            parent = folder.rpartition("/")[0]
            if parent not in self._made:
                self._make(parent)
            try:
                os.mkdir(folder)  # noqa: PTH102 -- strings, see _target
                if self._name_count <= MAX_NAMES:  # past it, no folder's files are listed
                    self._new.add(folder)
            except FileExistsError:
                if not os.path.isdir(folder):
                    raise
        self._made.add(folder)

    def write_text(self, relative: str, text: str) -> None:
        """Write redacted text atomically."""
        target = self._target(relative)
        atomic_write_text(target, self.redactor.text(text))
        self.wrote(relative)

    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write bytes atomically (artifacts: not redacted, they are the agent's work)."""
        target = self._target(relative)
        atomic_write_bytes(target, data)
        self.wrote(relative)

    def write_json(
        self, relative: str, value: Any, *, durable: bool = False, keep: bool = False
    ) -> None:
        """Write a model or JSON-like value, redacted, pretty-printed, atomically (``keep``:
        also keep its bytes for :meth:`recall`, when small)."""
        if isinstance(value, BaseModel):
            # pydantic's serializer (Rust) is ~20x faster than json.dumps with indent.
            text = value.model_dump_json(by_alias=True, indent=2)
        else:
            text = json.dumps(value, indent=2, ensure_ascii=False)
        target = self._target(relative)
        data = (self.redactor.json_text(text) + "\n").encode("utf-8")
        atomic_write_bytes(target, data, durable=durable)
        self.wrote(relative, data if keep else None)

    def write_lines(self, relative: str, lines: list[str]) -> None:
        """Write lines (raw output), redacted, atomically."""
        self.write_text(relative, "".join(line + "\n" for line in lines))

    def write_manifest(
        self,
        manifest: ReportManifest,
        *,
        durable: bool = False,
        chunks: Iterable[bytes] | None = None,
    ) -> None:
        """Write ``report.json`` (``chunks``: its content already serialized and redacted,
        as :meth:`write_json` would write it, in parts)."""
        if chunks is None:
            self.write_json(MANIFEST_FILE, manifest, durable=durable)
            return
        target = self._target(MANIFEST_FILE)
        atomic_write_chunks(target, chunks, durable=durable)
        self.wrote(MANIFEST_FILE)

    def patch_manifest(self, fields: dict[str, Any]) -> None:
        """Set top-level ``fields`` (camelCase) in the ``report.json`` on disk, as JSON.

        The last resort of a crashed run, when the manifest cannot be written from its
        model: the last manifest written stays as it was, except for these fields.
        """
        target = self._target(MANIFEST_FILE)
        with open(target, "rb") as file:
            data = json.load(file)
        data.update(fields)
        text = json.dumps(data, indent=2, ensure_ascii=False)
        atomic_write_text(target, self.redactor.json_text(text) + "\n", durable=True)
        self.wrote(MANIFEST_FILE)


def list_reports(config_dir: str | Path) -> list[ReportManifest]:
    """Every readable report, newest first; unreadable manifests are skipped."""
    root = reports_root(config_dir)
    if not root.is_dir():
        return []
    folders = (Path(e.path) for e in os.scandir(root) if e.is_dir())
    found = read_readable(ReportManifest, (f / MANIFEST_FILE for f in folders))
    found.sort(key=lambda m: (m.started_at, m.report_id), reverse=True)
    return found


def read_readable(model: type[M], paths: Iterable[Path]) -> list[M]:
    """Every file of ``paths`` that parses as ``model``, in order: a listing skips a
    missing, unreadable or invalid file instead of failing for it."""
    found: list[M] = []
    for path in paths:
        try:
            found.append(model.model_validate_json(path.read_bytes()))
        except (ValidationError, OSError, ValueError):
            continue
    return found


def read_report(config_dir: str | Path, report_id: str = "latest") -> ReportManifest:
    """One report by id; ``latest`` is the newest.

    Raises:
        ReportNotFound: no such report, or its manifest is unreadable.
    """
    if report_id == "latest":
        reports = list_reports(config_dir)
        if not reports:
            raise ReportNotFound("no reports found", hint="run `axis run` to create one")
        return reports[0]
    root = reports_root(config_dir)
    folder = (root / report_id).resolve()
    if not folder.is_relative_to(root.resolve()) or not (folder / MANIFEST_FILE).is_file():
        raise ReportNotFound(f"report {report_id!r} not found in {root}")
    return read_manifest(folder)


def read_manifest(folder: Path) -> ReportManifest:
    """The manifest of a report folder.

    Raises:
        ReportNotFound: no ``report.json`` there, or it is unreadable.
    """
    path = folder / MANIFEST_FILE
    try:
        return ReportManifest.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise ReportNotFound(f"no {MANIFEST_FILE} in {folder}") from exc
    except (OSError, ValidationError, ValueError) as exc:
        raise ReportNotFound(
            f"report {folder.name!r} has an unreadable {MANIFEST_FILE} ({path}): {exc}"
        ) from exc


def report_folder(config_dir: str | Path, report_id: str) -> Path:
    """The folder of a report id."""
    return reports_root(config_dir) / report_id
