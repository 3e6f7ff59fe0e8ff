"""``report.html``: one self-contained page per report, readable offline.

``render_html(folder)`` reads ``report.json``, each run's ``transcript.json`` (and
``baseline-comparison.json`` when the run was compared with a baseline) and returns the page;
``write_html`` writes it atomically (default: ``report.html`` in the report folder). The page
makes no network request: styles, script, charts and data are inside the file, and the heavy
parts (each pair's detail, the transcripts) are gzip+base64 payloads decoded in the browser
only when opened. See docs/reports.md, "HTML report".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from axis_eval._util.files import atomic_write_text
from axis_eval.report.html import _page, _payload
from axis_eval.report.models import ReportManifest
from axis_eval.runs.store import COMPARISON_FILE, HTML_FILE, read_manifest

if TYPE_CHECKING:
    from axis_eval.runs.baseline_models import BaselineComparison, ComparisonEntry

__all__ = ["render_html", "write_html"]


def _comparison(report_dir: Path) -> BaselineComparison | None:
    path = report_dir / COMPARISON_FILE
    if not path.exists():
        return None
    # Loaded only when there is a comparison: most runs have none.
    from axis_eval.runs.baseline_models import BaselineComparison

    try:
        return BaselineComparison.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        # A broken side file must not cost the reader the whole page: no deltas shown.
        return None


def render_html(
    report_dir: Path, *, link_root: str = "", manifest: ReportManifest | None = None
) -> str:
    """The page of the report in ``report_dir``.

    ``link_root`` is the report folder relative to where the page will be saved ("" when it
    is saved inside the folder): artifact and run-file links are relative to it. A caller
    that holds the folder's manifest passes it (``axis run`` at its end): it is not read again.

    Raises:
        ReportNotFound: no readable ``report.json`` in ``report_dir``.
    """
    if manifest is None:
        manifest = read_manifest(report_dir)
    comparison = _comparison(report_dir)
    by_pair: dict[tuple[str, str], ComparisonEntry] | None = None
    if comparison is not None:
        by_pair = {(e.scenario_key, e.agent_name): e for e in comparison.entries}
    page = _page.Page(manifest=manifest, comparison=comparison)
    details: list[str] = []
    for number, pair in enumerate(manifest.results):
        transcripts = {}
        for run in pair.runs:
            transcript = _payload.read_transcript(report_dir, run)
            if transcript is not None:
                transcripts[run.run_index] = transcript
        detail = _payload.pair_payload(
            pair,
            report_dir,
            link_root,
            transcripts,
            by_pair.get((pair.scenario_key, pair.agent_name)) if by_pair else None,
            comparison.baseline_name if comparison else "",
        )
        page.payloads.append((f"p{number}", _page.encode_payload(detail)))
        if transcripts:
            encoded = _page.encode_payload(_payload.transcripts_payload(transcripts))
            page.payloads.append((f"t{number}", encoded))
        details.append(_page.pair_details(number, pair, bool(transcripts)))
    config = {
        "configPath": manifest.config_path,
        "profile": manifest.profile,
        "configHash": manifest.config_hash,
        "scoringWeights": manifest.scoring_weights,
        "modelServer": manifest.model_server,
        "resolvedConfig": manifest.resolved_config,
    }
    page.payloads.append(("config", _page.encode_payload(config)))
    rows = _page.summary_table(manifest.results, by_pair)
    return _page.document(page, details, rows)


def write_html(
    report_dir: Path, out: Path | None = None, *, manifest: ReportManifest | None = None
) -> Path:
    """Write the page atomically; default ``report_dir/report.html``. Returns the path.

    Raises:
        ReportNotFound: no readable ``report.json`` in ``report_dir``.
    """
    target = out if out is not None else report_dir / HTML_FILE
    if target.is_dir():
        target = target / HTML_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(report_dir.resolve(), target.parent.resolve())
    link_root = "" if relative == "." else relative.replace(os.sep, "/")
    atomic_write_text(target, render_html(report_dir, link_root=link_root, manifest=manifest))
    return target
