"""``render_html`` and ``write_html``: a report folder in, the whole page out.

The summary (:mod:`._summary`) is plain HTML, painted before any script runs. Pair details
and transcripts (:mod:`._payload`) are gzip+base64 payloads in inert
``<script type="application/x-axis-gzip">`` elements that the page's script decodes when
they are opened. The script sits after the summary and before the payloads
(``assets/page.html``), so the summary is interactive while the parser still reads the
payloads (megabytes at 1,000 jobs).
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from axis_eval.files import atomic_write_text
from axis_eval.report.html import _payload, _summary
from axis_eval.report.html._markup import Markup, trusted_asset
from axis_eval.report.models import ReportManifest
from axis_eval.runs.store import COMPARISON_FILE, HTML_FILE, read_manifest

if TYPE_CHECKING:
    from axis_eval.runs.baseline_models import BaselineComparison, ComparisonEntry

PAYLOAD_TYPE = "application/x-axis-gzip"
"""The type of the payload elements (``assets/page.html``, ``report.js``): inert data."""


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


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(js: str, css: str) -> str:
    """Only our own script and stylesheet run (by hash); no request of any kind.

    An injected ``<script>`` or ``onerror=`` would not run even if escaping ever failed, and
    the browser itself refuses fetches, images and fonts from anywhere. ``'unsafe-eval'``
    lets test drivers (Playwright's ``wait_for_function``) evaluate code in the page; it
    runs nothing by itself (our script never calls eval) and only code already running could
    use it.
    """
    return (
        f"default-src 'none'; script-src {_sha256(js)} 'unsafe-eval'; style-src {_sha256(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def render_html(
    report_dir: Path,
    *,
    link_root: str = "",
    manifest: ReportManifest | None = None,
    written: _payload.WrittenFiles | None = None,
) -> str:
    """The page of the report in ``report_dir``.

    ``link_root`` is the report folder relative to where the page will be saved ("" when it
    is saved inside the folder): artifact and run-file links are relative to it. A caller
    that holds the folder's manifest passes it (``axis run`` at its end): it is not read again;
    and the folder's writer (``written``) is asked for the transcripts and run files it wrote
    before the disk is.

    Raises:
        ReportNotFound: no readable ``report.json`` in ``report_dir``.
    """
    if manifest is None:
        manifest = read_manifest(report_dir)
    comparison = _comparison(report_dir)
    by_pair: dict[tuple[str, str], ComparisonEntry] | None = None
    if comparison is not None:
        by_pair = {(e.scenario_key, e.agent_name): e for e in comparison.entries}
    payloads: list[Markup] = []
    details: list[Markup] = []
    for number, pair in enumerate(manifest.results):
        transcripts = {}
        for run in pair.runs:
            transcript = _payload.read_transcript(report_dir, run, written)
            if transcript is not None:
                transcripts[run.run_index] = transcript
        detail = _payload.pair_payload(
            pair,
            report_dir,
            link_root,
            transcripts,
            by_pair.get((pair.scenario_key, pair.agent_name)) if by_pair else None,
            comparison.baseline_name if comparison else "",
            written,
        )
        payloads.append(_payload_element(f"p{number}", detail))
        if transcripts:
            payloads.append(
                _payload_element(f"t{number}", _payload.transcripts_payload(transcripts))
            )
        details.append(_summary.pair_details(number, pair, bool(transcripts)))
    payloads.append(_payload_element("config", _payload.config_payload(manifest)))
    js = trusted_asset("report.js")
    css = trusted_asset("report.css")
    return _summary.fragment(
        "page",
        report_id=manifest.report_id,
        csp=content_security_policy(js, css),
        css=css,
        header=_summary.header(manifest, comparison),
        chart=_summary.agents_chart(manifest.results),
        filter=_summary.filter_box(len(manifest.results)),
        table=_summary.summary_table(manifest.results, by_pair),
        notes=_summary.notes(manifest, comparison),
        pairs=details,
        js=js,
        payloads=payloads,
    )


def _payload_element(pid: str, value: object) -> Markup:
    """One inert payload element (its base64 text could not close the element anyway, and
    its slot escapes for a script's text all the same)."""
    return _summary.fragment("payload", id=pid, data=_payload.encode_payload(value))


def write_html(
    report_dir: Path,
    out: Path | None = None,
    *,
    manifest: ReportManifest | None = None,
    written: _payload.WrittenFiles | None = None,
) -> Path:
    """Write the page atomically; default ``report_dir/report.html``. Returns the path
    (``manifest``, ``written``: see :func:`render_html`).

    Raises:
        ReportNotFound: no readable ``report.json`` in ``report_dir``.
    """
    target = out if out is not None else report_dir / HTML_FILE
    if target.is_dir():
        target = target / HTML_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(report_dir.resolve(), target.parent.resolve())
    link_root = "" if relative == "." else relative.replace(os.sep, "/")
    page = render_html(report_dir, link_root=link_root, manifest=manifest, written=written)
    atomic_write_text(target, page)
    return target
