"""The lazy parts of the page as JSON-ready data: a pair's detail and its transcripts.

The page carries them gzip-compressed and decodes them only when a reader opens a pair or
a transcript, so a 1,000-job report shows its summary at once. Everything here is data for
the page's script, which renders it as text (``append`` of strings, attribute values); the
only markup is the charts, drawn from escaping templates by :mod:`._charts` (and the script
keeps only the SVG elements and attributes a chart has).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from pydantic import ValidationError

from axis_eval._types import SCORES, camel
from axis_eval.report.html import _charts
from axis_eval.report.models import (
    RESULT_FILE,
    SPARSE_INDEX_FILE,
    TRANSCRIPT_FILE,
    VERDICTS_FILE,
    ArtifactEntry,
    PairEntry,
    ReportManifest,
    RunEntry,
)
from axis_eval.report.render_stats import interval_lines, load_lines
from axis_eval.scoring.models import ScoreResult
from axis_eval.scoring.signals import interaction_signals, interaction_speed, speed_category
from axis_eval.transcript.models import Entry, Transcript
from axis_eval.transcript.sparse_index import CATEGORY_LABELS, SparseIndex, build_sparse_index

if TYPE_CHECKING:  # annotations only
    from axis_eval.runs.baseline_models import ComparisonEntry

TEXT_CHARS = 20_000
"""A transcript text, tool input or tool output is cut to this many characters in the page
(the rest is in ``transcript.json``, linked): one huge tool output must not make the file
or the rendered transcript unusable."""

ARTIFACT_INLINE_CHARS = 8_000
"""Text artifacts up to this size are shown inline; larger ones only as a file link."""

RUN_FILES = (
    TRANSCRIPT_FILE,
    RESULT_FILE,
    SPARSE_INDEX_FILE,
    VERDICTS_FILE,
    "raw.ndjson",
    "raw.txt",
    "stderr.log",
)
"""Files of a run folder the page links to when present."""

TIERS = {1.0: "excellent", 0.9: "good", 0.8: "fair", 0.6: "slow", 0.4: "very slow"}


def encode_payload(value: Any) -> str:
    """JSON → gzip → base64 (``mtime=0``: the same report gives the same bytes)."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def href(link_root: str, relative: str) -> str:
    """A relative URL to a file of the report folder (percent-encoded: keys hold ``@``,
    agent names ``|``)."""
    path = f"{link_root}/{relative}" if link_root else relative
    return quote(path, safe="/")


def cut(text: str | None, limit: int = TEXT_CHARS) -> str | None:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit:,} more characters in transcript.json]"


def scores(score: ScoreResult | None) -> dict[str, int | None] | None:
    """The composite and four dimensions by their camelCase names; None when unscored."""
    if score is None or score.withheld:
        return None
    return {camel(name): getattr(score, name) for name in SCORES}


class WrittenFiles(Protocol):
    """What the writer of a report folder still knows of it (``axis run``'s
    :class:`~axis_eval.runs.store.ReportStore`): the page asks it before the disk."""

    def recall(self, relative: str) -> bytes | None:
        """A file's bytes as written, when kept."""

    def written_in(self, folder: str) -> Collection[str] | None:
        """The names of a folder's files, when the writer made it (and so wrote them all)."""


def read_transcript(
    folder: Path, run: RunEntry, written: WrittenFiles | None = None
) -> Transcript | None:
    """A run's ``transcript.json``; None when missing or unreadable (a crashed run)."""
    relative = f"{run.dir}/{TRANSCRIPT_FILE}"
    try:
        data = written.recall(relative) if written is not None else None
        if data is None:
            data = (folder / relative).read_bytes()
        return Transcript.model_validate_json(data)
    except (OSError, ValidationError, ValueError):
        return None


def _artifact(art: ArtifactEntry, link_root: str) -> dict[str, Any]:
    content = art.content
    inline = content is not None and len(content) <= ARTIFACT_INLINE_CHARS
    return {
        "path": art.path,
        "size": art.size_bytes,
        "mime": art.mime_type,
        "href": href(link_root, art.file),
        "content": content if inline else None,
    }


def _run_files(
    folder: Path, run: RunEntry, link_root: str, written: WrittenFiles | None
) -> list[dict[str, str]]:
    present = written.written_in(run.dir) if written is not None else None
    if present is None:
        try:
            present = {e.name for e in os.scandir(folder / run.dir) if e.is_file()}
        except OSError:
            return []
    return [
        {"name": name, "href": href(link_root, f"{run.dir}/{name}")}
        for name in RUN_FILES
        if name in present
    ]


def _run(
    run: RunEntry,
    pair: PairEntry,
    folder: Path,
    link_root: str,
    has_transcript: bool,
    written: WrittenFiles | None,
) -> dict[str, Any]:
    score = run.score
    usage = run.token_usage
    judge = score.judge if score is not None else None
    return {
        "index": run.run_index,
        "status": run.status,
        "failed": run.failed,
        "representative": run.run_index == pair.representative_run_index,
        "exitCode": run.exit_code,
        "error": run.error,
        "errorKind": run.error_kind,
        "startedAt": run.started_at,
        "durationMs": run.duration_ms,
        "scores": scores(score),
        "withheld": bool(score and score.withheld),
        "withheldReason": score.withheld_reason if score else None,
        "tokens": usage.model_dump(by_alias=True) if usage else None,
        "cost": run.total_cost_usd,
        "costEstimated": run.cost_estimated,
        "costSimulated": run.cost_simulated,
        "judge": judge.model_dump(by_alias=True) if judge and judge.kind != "none" else None,
        "agentVersion": run.agent_version,
        "sandbox": run.sandbox,
        "result": cut(run.result),
        "warnings": run.warnings,
        "setupOutput": cut(run.setup_output),
        "teardownOutput": cut(run.teardown_output),
        "artifacts": [_artifact(a, link_root) for a in run.artifacts],
        "files": _run_files(folder, run, link_root, written),
        "hasTranscript": has_transcript,
    }


def _interactions(index: SparseIndex, score: ScoreResult | None) -> list[dict[str, Any]]:
    audits = {a.interaction_id: a for a in score.audits} if score else {}
    rows = []
    for sig in interaction_signals(index, audits.values()):
        it = sig.interaction
        audit = audits.get(it.id)
        rows.append(
            {
                "id": it.id,
                "categories": [CATEGORY_LABELS[c] for c in it.categories],
                "tool": it.tool,
                "detail": it.detail,
                "startMs": it.start_ms,
                "durationMs": it.duration_ms,
                "tier": TIERS.get(sig.speed, "excellent"),
                "error": it.is_error,
                "success": sig.success,
                "speed": sig.speed,
                "weight": sig.weight,
                "relevance": sig.relevance,
                "audited": sig.audited,
                "rationale": audit.rationale if audit else "",
            }
        )
    return rows


def _waterfall(index: SparseIndex, transcript: Transcript) -> tuple[str, str]:
    bars = []
    for it in index.interactions:
        timed_by = CATEGORY_LABELS[speed_category(it.categories)]
        bars.append(
            _charts.Bar(
                id=it.id,
                tool=it.tool,
                category=timed_by,
                categories=",".join(CATEGORY_LABELS[c] for c in it.categories),
                start_ms=it.start_ms,
                duration_ms=it.duration_ms,
                tier=TIERS.get(interaction_speed(it), "excellent"),
                error=it.is_error,
            )
        )
    total = max(transcript.duration_ms, index.stats.wall_clock_ms)
    return _charts.waterfall(bars, total)


def _baseline(entry: ComparisonEntry | None, name: str) -> dict[str, Any] | None:
    if entry is None:
        return None
    data = entry.model_dump(by_alias=True, mode="json")
    data["baselineName"] = name
    return data


def pair_payload(
    pair: PairEntry,
    folder: Path,
    link_root: str,
    transcripts: dict[int, Transcript],
    baseline: ComparisonEntry | None,
    baseline_name: str,
    written: WrittenFiles | None = None,
) -> dict[str, Any]:
    """Everything a pair's detail shows, but the transcripts (a payload of their own)."""
    label = f"{pair.scenario_key} · {pair.agent_name}"
    dots = [
        _charts.RunDot(
            r.run_index, r.score.axis_score, r.run_index == pair.representative_run_index
        )
        for r in pair.runs
        if r.score is not None and r.score.axis_score is not None
    ]
    median = pair.spread.axis_score.median if pair.spread else None
    if dots:
        dist_svg, dist_text = _charts.distribution(dots, median, label)
    else:  # nothing to draw (an unscored pair): the text alone, no chart built and dropped
        dist_svg, dist_text = None, _charts.distribution_text(dots, median)
    rep = next((r for r in pair.runs if r.run_index == pair.representative_run_index), None)
    rep_transcript = transcripts.get(rep.run_index) if rep else None
    score = pair.score
    interactions: list[dict[str, Any]] = []
    sparse: list[str] = []
    wf_svg = wf_text = None
    if rep_transcript is not None:
        index = build_sparse_index(
            rep_transcript, scenario_key=pair.scenario_key, agent_name=pair.agent_name
        )
        interactions = _interactions(index, score)
        sparse = index.header()
        if index.interactions:
            wf_svg, wf_text = _waterfall(index, rep_transcript)
    categories = (
        {k: v.model_dump(by_alias=True) for k, v in score.categories.items()} if score else {}
    )
    return {
        "key": pair.scenario_key,
        "agentName": pair.agent_name,
        "name": pair.scenario_name,
        "adapter": pair.agent,
        "model": pair.model,
        "status": pair.status,
        "error": pair.error,
        "representative": pair.representative_run_index,
        "runs": [
            _run(r, pair, folder, link_root, r.run_index in transcripts, written) for r in pair.runs
        ],
        "spread": pair.spread.model_dump(by_alias=True) if pair.spread else None,
        "reliability": pair.reliability.model_dump(by_alias=True) if pair.reliability else None,
        "passRates": pair.pass_rates.model_dump(by_alias=True) if pair.pass_rates else None,
        # Intervals and load warnings, as the terminal writes them (docs/statistics.md).
        "statsLines": [
            line.strip() for line in interval_lines(pair) + load_lines(pair) if line.strip()
        ],
        "charts": {
            "distribution": dist_svg,
            "distributionText": dist_text,
            "waterfall": wf_svg,
            "waterfallText": wf_text,
        },
        "interactions": interactions,
        "sparse": sparse,
        "checks": [c.model_dump(by_alias=True) for c in score.checks] if score else [],
        "categories": categories,
        "insights": score.insights if score else [],
        "notes": score.notes if score else [],
        "withheldReason": score.withheld_reason if score else None,
        "baseline": _baseline(baseline, baseline_name),
        "config": {
            "prompt": pair.prompt,
            "judge": pair.judge,
            "agentConfig": pair.agent_config,
            "resolvedConfig": pair.resolved_config,
        },
    }


def _entry(entry: Entry) -> dict[str, Any]:
    out: dict[str, Any] = {"type": entry.type, "ms": entry.offset_ms}
    if entry.text is not None:
        out["text"] = cut(entry.text)
    tool = entry.tool
    if tool is not None:
        raw_input = (
            tool.input
            if isinstance(tool.input, str)
            else json.dumps(tool.input, indent=2, ensure_ascii=False, default=str)
        )
        out["tool"] = {
            "name": tool.name,
            "input": cut(raw_input) if tool.input is not None else None,
            "output": cut(tool.output),
            "error": tool.is_error,
            "durationMs": tool.duration_ms,
            "inputBytes": tool.input_bytes,
            "outputBytes": tool.output_bytes,
        }
    return out


def transcripts_payload(transcripts: dict[int, Transcript]) -> dict[str, Any]:
    """Every run's transcript entries, by run index (one payload per pair)."""
    return {
        str(index): {
            "agentVersion": t.agent_version,
            "model": t.model,
            "durationMs": t.duration_ms,
            "entries": [_entry(e) for e in t.entries],
        }
        for index, t in transcripts.items()
    }


def config_payload(manifest: ReportManifest) -> dict[str, Any]:
    """The report's resolved configuration (secrets redacted by the writer)."""
    return {
        "configPath": manifest.config_path,
        "profile": manifest.profile,
        "configHash": manifest.config_hash,
        "scoringWeights": manifest.scoring_weights,
        "modelServer": manifest.model_server,
        "resolvedConfig": manifest.resolved_config,
    }
