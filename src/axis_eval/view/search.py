"""Page (5): search the transcripts of every report (tool names, commands, text).

Transcripts are read one at a time, newest report first, and the search stops at
``MAX_HITS`` hits (or after ``MAX_FILES`` transcripts), so a search over many large reports
answers quickly with the newest matches. Every shown text passes the environment's redactor.
A transcript whose file cannot hold the term is skipped unparsed (:func:`_may_hold`): a search
that finds nothing reads every file, and parsing each one was most of its time.
"""

from __future__ import annotations

import json

from axis_eval.redact import MASK, Redactor
from axis_eval.report.html._markup import escape
from axis_eval.transcript.models import Transcript
from axis_eval.view.catalog import Catalog
from axis_eval.view.layout import Links, page

MAX_HITS = 50
MAX_FILES = 5_000
SNIPPET = 160
TRANSCRIPT_FILE = "transcript.json"


_NOT_QUICK = frozenset('"\\[]{}:,')
_NUMBER = frozenset("0123456789.e+-")


def _quick(needle: str) -> bool:
    """Does ``needle`` in no field of a transcript imply ``needle`` not in its file's text?

    The fields are JSON strings of the file (the same characters where no JSON escape is
    involved), except the tool input, which is dumped again (other spacing and number
    format). So: ASCII printable (no escape; a stripped needle's inner space never meets a
    separator's, which follows ``,`` or ``:``), none of the JSON punctuation, not a number
    alone, and no overlap with the redactor's mask (the one text a field gains)."""
    chars = set(needle)
    return (
        needle.isascii()
        and needle.isprintable()
        and not chars & _NOT_QUICK
        and not chars <= _NUMBER
        and needle not in MASK.lower()
    )


def _may_hold(data: bytes, needle: str) -> bool:
    """Could a transcript file holding ``data`` match ``needle`` (see :func:`_quick`)?"""
    try:
        low = data.decode("utf-8").lower()
    except UnicodeDecodeError:
        return True  # the parser decides
    # the only characters that lower to ASCII (K and İ), if the file escapes them
    return needle in low or "\\u212a" in low or "\\u0130" in low


def _snippet(text: str, needle: str) -> tuple[str, str, str]:
    at = text.lower().find(needle)
    start = max(0, at - SNIPPET // 2)
    end = min(len(text), at + len(needle) + SNIPPET // 2)
    return (
        ("…" if start else "") + text[start:at],
        text[at : at + len(needle)],
        text[at + len(needle) : end] + ("…" if end < len(text) else ""),
    )


def search(
    catalog: Catalog, query: str, redactor: Redactor, limit: int = MAX_HITS
) -> tuple[list[dict[str, str]], bool]:
    """Hits (report, scenario, agent, run, step, where, before, match, after) and whether cut."""
    needle = query.strip().lower()
    hits: list[dict[str, str]] = []
    if not needle:
        return hits, False
    files, quick = 0, _quick(needle)
    for head in catalog.headlines():
        folder = catalog.folder(head.report_id)
        light = catalog.head(head.report_id)  # the runs' folders, not the whole manifest
        if folder is None or light is None:
            continue
        for pair in light.results:
            for run in pair.runs:
                files += 1
                if files > MAX_FILES:
                    return hits, True
                path = folder / run.dir / TRANSCRIPT_FILE
                try:
                    if path.stat().st_size == 0:
                        continue
                    data = path.read_bytes()
                    if quick and not _may_hold(data, needle):
                        continue
                    transcript = Transcript.model_validate_json(data)
                except (OSError, ValueError):
                    continue
                for step, entry in enumerate(transcript.entries, 1):
                    fields: list[tuple[str, str]] = []
                    if entry.text:
                        fields.append((entry.type, entry.text))
                    if entry.tool is not None:
                        fields.append(("tool", entry.tool.name))
                        if entry.tool.input is not None:
                            fields.append(
                                ("input", json.dumps(entry.tool.input, ensure_ascii=False))
                            )
                        if entry.tool.output:
                            fields.append(("output", entry.tool.output))
                    for where, text in fields:
                        text = redactor.text(text)
                        if needle in text.lower():
                            before, match, after = _snippet(text, needle)
                            hits.append(
                                {
                                    "report": head.report_id,
                                    "scenario": pair.scenario_key,
                                    "agent": pair.agent_name,
                                    "run": str(run.run_index),
                                    "step": str(step),
                                    "where": where,
                                    "before": before,
                                    "match": match,
                                    "after": after,
                                }
                            )
                            if len(hits) >= limit:
                                return hits, True
                            break
    return hits, False


def _hit_href(hit: dict[str, str], links: Links) -> str:
    return links.report(hit["report"], scenario=hit["scenario"], agent=hit["agent"])


def search_page(catalog: Catalog, query: str, redactor: Redactor, links: Links) -> str:
    if not links.server:
        body = (
            "<h1>Search</h1><p>Searching transcripts needs the server: run "
            "<code>axis view</code> over these reports (the static export holds no index).</p>"
        )
        return page("Search", body, links)
    hits, cut = search(catalog, query, redactor)
    rows = "".join(
        f'<li class="hit"><a href="{_hit_href(h, links)}">'
        f"{escape(h['report'])} · {escape(h['scenario'])} · {escape(h['agent'])}</a> "
        f'<span class="muted">run {escape(h["run"])}, step {escape(h["step"])}, '
        f"{escape(h['where'])}</span>"
        f'<pre class="hit">{escape(h["before"])}<mark>{escape(h["match"])}</mark>'
        f"{escape(h['after'])}</pre></li>"
        for h in hits
    )
    note = (
        f'<p class="muted">First {len(hits)} hits shown.</p>'
        if cut
        else f'<p class="muted">{len(hits)} hits.</p>'
    )
    body = (
        '<h1>Search transcripts</h1><form method="get" action="/search">'
        f'<input type="search" name="q" value="{escape(query)}" size="40" '
        'placeholder="tool name, command, text"> '
        f"<button>Search</button></form>{note if query else ''}<ul>{rows}</ul>"
    )
    return page("Search", body, links)
