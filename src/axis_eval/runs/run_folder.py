"""One run's folder in a report: what a finished job leaves there, and a score added later.

The folder holds ``result.json`` (its :class:`RunEntry`, the job spec, the other files'
names), the transcript, the judges' verdicts, the raw output, stderr, the sparse index and
the collected artifacts. ``result.json`` is written last: a run folder with one is a run
that finished, whatever happened to the manifest afterwards.

Whatever the agent printed, writing its folder stays bounded: what a job holds is capped
(``limits.output``), the transcript is written entry by entry (never as one string), and
nothing here parses the agent's output in a way that can raise (a line of JSON nested too
deep for the parser is simply not JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from pydantic_core import PydanticSerializationError

from axis_eval.execute.models import JobOutcome
from axis_eval.files import atomic_write_chunks
from axis_eval.report.models import (
    RESULT_FILE,
    SPARSE_INDEX_FILE,
    TRANSCRIPT_FILE,
    VERDICTS_FILE,
    ArtifactEntry,
    RunEntry,
    RunResult,
)
from axis_eval.runs import run_entry
from axis_eval.runs.store import ReportStore, run_dir
from axis_eval.scoring.models import JudgeVerdicts, ScoreResult
from axis_eval.transcript.models import Entry, Transcript
from axis_eval.transcript.sparse_index import SparseIndex, build_sparse_index

INLINE_TEXT_BYTES = 64 * 1024
"""Text artifacts up to this size are also inlined in the manifest; larger ones are linked."""


def save_run(
    store: ReportStore,
    outcome: JobOutcome,
    *,
    sparse_index: bool = True,
    folder: str | None = None,
) -> RunEntry:
    """Write one finished job's folder and return its run entry.

    ``sparse_index`` off (``--no-score``): an unscored run gets no ``sparse-index.txt``, as
    in AXIS, where it is the scorer's file. ``folder``: the run's folder (default: a new
    report's, from :func:`run_dir`; a resumed old report's pair keeps its own).
    """
    spec = outcome.spec
    folder = folder or run_dir(*spec.pair_key, spec.run_index, spec.run_count)
    run = run_entry.from_outcome(
        outcome, dir=folder, artifacts=_save_artifacts(store, outcome, folder)
    )
    files = _save_files(store, outcome, folder)
    if outcome.transcript is not None and (sparse_index or outcome.score is not None):
        index = build_sparse_index(
            outcome.transcript, scenario_key=spec.scenario.key, agent_name=spec.agent.name
        )
        files["sparseIndex"] = _write_sparse_index(store, folder, index)
    store.write_json(
        f"{folder}/{RESULT_FILE}",
        RunResult(
            scenario_key=spec.scenario.key,
            scenario_name=spec.scenario.name,
            agent_name=spec.agent.name,
            run=run,
            spec=spec.model_dump(mode="json"),
            workspace=outcome.workspace,
            files=files,
        ),
    )
    return run


def read_saved_run(store: ReportStore, folder: str) -> RunEntry | None:
    """The run entry a folder's ``result.json`` holds; None when it has none (or unreadable)."""
    path = store.folder / folder / RESULT_FILE
    try:
        return RunResult.model_validate_json(path.read_bytes()).run
    except (OSError, ValueError):
        return None


def store_score(
    store: ReportStore,
    run: RunEntry,
    score: ScoreResult,
    verdicts: JudgeVerdicts | None,
    index: SparseIndex | None = None,
) -> None:
    """Put a new score on a saved run: ``verdicts.json``, ``sparse-index.txt`` (``index``,
    the one the judges saw, when the run was saved without one: a ``--no-score`` run),
    ``result.json``, then ``run``.

    The manifest is the caller's to write (after its pairs are refreshed).
    """
    if verdicts is not None:
        store.write_json(f"{run.dir}/{VERDICTS_FILE}", verdicts)
    path = store.folder / run.dir / RESULT_FILE
    if path.is_file():
        saved = RunResult.model_validate_json(path.read_bytes())
        saved.run.score = score
        if verdicts is not None:
            saved.files["verdicts"] = f"{run.dir}/{VERDICTS_FILE}"
        if index is not None and "sparseIndex" not in saved.files:
            saved.files["sparseIndex"] = _write_sparse_index(store, run.dir, index)
        store.write_json(f"{run.dir}/{RESULT_FILE}", saved)
    run.score = score


def _save_files(store: ReportStore, outcome: JobOutcome, folder: str) -> dict[str, str]:
    """The transcript, verdicts, raw output and stderr; returns ``result.json``'s ``files``."""
    files: dict[str, str] = {}
    if outcome.transcript is not None:
        _write_transcript(store, f"{folder}/{TRANSCRIPT_FILE}", outcome.transcript)
        files["transcript"] = f"{folder}/{TRANSCRIPT_FILE}"
    if outcome.verdicts is not None:
        store.write_json(f"{folder}/{VERDICTS_FILE}", outcome.verdicts)
        files["verdicts"] = f"{folder}/{VERDICTS_FILE}"
    if outcome.raw_output:
        name = "raw.ndjson" if _is_ndjson(outcome.raw_output) else "raw.txt"
        if name == "raw.ndjson":
            store.write_lines(f"{folder}/{name}", outcome.raw_output)
        else:
            store.write_text(f"{folder}/{name}", "".join(outcome.raw_output))
        files["raw"] = f"{folder}/{name}"
    if outcome.stderr:
        store.write_text(f"{folder}/stderr.log", outcome.stderr)
        files["stderr"] = f"{folder}/stderr.log"
    return files


def _save_artifacts(store: ReportStore, outcome: JobOutcome, folder: str) -> list[ArtifactEntry]:
    out: list[ArtifactEntry] = []
    for art in outcome.artifacts:
        target = ""
        content: str | None = None
        if art.data is not None:
            target = f"{folder}/artifacts/{art.path}"
            store.write_bytes(target, art.data)
            if len(art.data) <= INLINE_TEXT_BYTES and _is_text(art.mime_type, art.data):
                content = store.redactor.text(art.data.decode("utf-8"))
        out.append(
            ArtifactEntry(
                path=art.path,
                size_bytes=art.size_bytes,
                mime_type=art.mime_type,
                file=target,
                content=content,
            )
        )
    return out


def _write_sparse_index(store: ReportStore, folder: str, index: SparseIndex) -> str:
    """Write a run's ``sparse-index.txt``; returns its path in the report folder."""
    relative = f"{folder}/{SPARSE_INDEX_FILE}"
    store.write_text(relative, index.render())
    return relative


_ENTRIES = '\n  "entries": []'
"""How an empty ``entries`` list reads in a transcript written with ``indent=2``."""


_STREAM_FROM = 1024 * 1024
"""A transcript with more text than this is written entry by entry; a smaller one (most)
in one piece, which costs less."""


def _text_size(transcript: Transcript) -> int:
    """About the characters a transcript holds (an upper bound of what its texts hold)."""
    size = len(transcript.result or "")
    for e in transcript.entries:
        size += len(e.text or "")
        if e.tool is not None:
            size += len(e.tool.output or "") + e.tool.input_bytes
    return size


def _write_transcript(store: ReportStore, relative: str, transcript: Transcript) -> None:
    """Write ``transcript.json`` as :meth:`ReportStore.write_json` would (the same bytes);
    a large one one entry at a time, each redacted on its own: the file is never one
    string (which, redacted and encoded, would cost four times the transcript)."""
    if _text_size(transcript) <= _STREAM_FROM:
        try:
            store.write_json(relative, transcript, keep=True)  # the report page reads it
            return
        except (PydanticSerializationError, ValueError, RecursionError):
            pass  # an entry that cannot be serialized: one by one, that one as text
    shell = transcript.model_copy(update={"entries": []})
    head, found, tail = shell.model_dump_json(by_alias=True, indent=2).partition(_ENTRIES)
    if not found:  # (the format changed): the plain way
        store.write_json(relative, transcript)
        return
    redact = store.redactor.json_text

    def chunks() -> Iterator[bytes]:
        yield (redact(head) + '\n  "entries": [').encode("utf-8")
        for i, entry in enumerate(transcript.entries):
            text = _entry_json(entry).replace("\n", "\n    ")
            yield (("," if i else "") + "\n    " + redact(text)).encode("utf-8")
        yield (("\n  ]" if transcript.entries else "]") + redact(tail) + "\n").encode("utf-8")

    atomic_write_chunks(store.path(relative), chunks())
    store.wrote(relative)


def _entry_json(entry: Entry) -> str:
    """One entry as JSON; a tool input that cannot be serialized (a Python adapter's odd
    value, nesting past the serializer's depth) is written as its text instead."""
    try:
        return entry.model_dump_json(by_alias=True, indent=2)
    except (PydanticSerializationError, ValueError, RecursionError):
        pass
    tool = entry.tool
    if tool is not None:
        try:
            shown = json.dumps(tool.input, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            shown = "(a value that cannot be written as JSON)"
        fixed = entry.model_copy(update={"tool": tool.model_copy(update={"input": shown})})
        try:
            return fixed.model_dump_json(by_alias=True, indent=2)
        except (PydanticSerializationError, ValueError, RecursionError):
            pass
    return Entry(
        type=entry.type,
        timestamp=entry.timestamp,
        offset_ms=entry.offset_ms,
        text="[axis: this entry could not be written as JSON]",
    ).model_dump_json(by_alias=True, indent=2)


def _is_ndjson(lines: list[str]) -> bool:
    """Whether the raw output reads as NDJSON (its first 50 lines; names the file only)."""
    for line in lines[:50]:
        text = line.strip()
        if not text:
            continue
        try:
            json.loads(text)
        except (ValueError, RecursionError):  # nested past the parser's depth: not JSON
            return False
    return True


def _is_text(mime: str, data: bytes) -> bool:
    textual = mime.startswith("text/") or mime in ("application/json", "application/xml")
    if not textual and b"\x00" in data[:1024]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
