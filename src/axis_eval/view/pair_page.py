"""One pair's two representative transcripts side by side (``axis view`` compare).

:func:`pair_compare_html` returns an HTML fragment: a header per side (report, run, scores),
the aligned steps (:mod:`axis_eval.view.align`) with the first divergence anchored
``#diverge``, each step's interaction signals and audit rationale, and the judges' goal
checks and necessity rationales beside the columns. No script, no inline style, no event
handler: it works under a CSP without ``script-src`` (style it with :data:`PAIR_COMPARE_CSS`).
Every value goes through :mod:`axis_eval.report.html._markup`'s escaping templates, after the
current environment's redactor (reports are redacted already: defence in depth).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from axis_eval.redact import Redactor
from axis_eval.report.html._markup import EMPTY, Markup, Template
from axis_eval.report.html._payload import read_transcript
from axis_eval.report.models import VERDICTS_FILE, PairEntry, ReportManifest, RunEntry
from axis_eval.scoring.models import CheckVerdict, InteractionAudit, JudgeVerdicts, NecessityVerdict
from axis_eval.scoring.signals import InteractionSignals, interaction_signals
from axis_eval.transcript.models import Transcript
from axis_eval.transcript.sparse_index import CATEGORY_LABELS, build_sparse_index
from axis_eval.view.align import Alignment, Row, Step, align_transcripts

__all__ = ["MAX_ROWS", "PAIR_COMPARE_CSS", "TEXT_CHARS", "pair_compare_html"]

TEXT_CHARS = 4_000
"""A step's text, tool input or output is cut to this many characters (the rest: the file)."""

MAX_ROWS = 1_500
"""Rows drawn at most; a longer alignment shows a window around the first divergence."""

PAIR_COMPARE_CSS = """
.pair-compare{--pc-bg:#fff;--pc-fg:#1b1f24;--pc-muted:#59636e;--pc-line:#d1d9e0;
--pc-changed:#fff8c5;--pc-left:#ffebe9;--pc-right:#dafbe1;--pc-mark:#cf222e;--pc-code:#f6f8fa;
color:var(--pc-fg);background:var(--pc-bg);font:14px/1.45 system-ui,sans-serif;padding:8px}
@media (prefers-color-scheme:dark){.pair-compare{--pc-bg:#0d1117;--pc-fg:#e6edf3;
--pc-muted:#9198a1;--pc-line:#3d444d;--pc-changed:#3b2e00;--pc-left:#4b1113;
--pc-right:#0f3a1e;--pc-mark:#ff7b72;--pc-code:#151b23}}
.pair-compare h2,.pair-compare h3{margin:.3em 0}.pair-compare a{color:inherit}
.pc-heads{display:grid;grid-template-columns:1fr 1fr;gap:12px}.pc-head p{margin:.2em 0}
.pc-head,.pc-judge{border:1px solid var(--pc-line);border-radius:6px;padding:6px 10px}
.pc-meta,.pc-at,.pc-note,.pc-summary,.pc-signals,.pc-gutter{color:var(--pc-muted)}
.pc-message{border-left:4px solid var(--pc-mark);padding:6px 10px;background:var(--pc-code)}
.pc-layout{display:grid;grid-template-columns:minmax(0,1fr) 22rem;gap:12px;align-items:start}
@media (max-width:1100px){.pc-layout{grid-template-columns:minmax(0,1fr)}}
.pc-row{display:grid;grid-template-columns:minmax(0,1fr) 2rem minmax(0,1fr);
border-top:1px solid var(--pc-line)}.pc-cell{padding:4px 8px;min-width:0}
.pc-colheads{font-weight:600;position:sticky;top:0;background:var(--pc-bg);z-index:1}
.pc-gutter{text-align:center;font-weight:700;padding-top:4px}
.pc-changed .pc-step{background:var(--pc-changed)}.pc-only-left .pc-step{background:var(--pc-left)}
.pc-only-right .pc-step{background:var(--pc-right)}
.pc-diverge{outline:3px solid var(--pc-mark);outline-offset:-2px}
.pc-diverge-mark{grid-column:1/-1;margin:0;padding:2px 8px;color:var(--pc-mark);font-weight:700}
.pc-step-head{margin:0;display:flex;justify-content:space-between;gap:8px}
.pc-kind{font-weight:600;overflow-wrap:anywhere}.pc-check-score{font-weight:700;margin-right:6px}
.pc-text{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--pc-code);margin:4px 0;
padding:4px 6px;border-radius:4px;max-height:24em;overflow:auto;font:12px/1.4 monospace}
.pc-signals{font-size:12px}.pc-signals p,.pc-check p{margin:2px 0}.pc-judge{margin-bottom:8px}
.pc-rationale{white-space:pre-wrap;overflow-wrap:anywhere}
.pc-check{border-top:1px solid var(--pc-line);padding:4px 0}
"""
"""The fragment's stylesheet (light and dark through ``prefers-color-scheme``); every rule
is scoped under ``.pair-compare`` or a ``pc-`` class."""

_LABELS = {"same": "=", "changed": "≠", "only-left": "◀", "only-right": "▶"}
_TITLES = {"same": "same step", "only-left": "only in A", "only-right": "only in B"}
_TITLES["changed"] = "same tool, different input (or other text)"


def _t(name: str, text: str) -> Template:
    return Template(f"pair_page#{name}", " ".join(line.strip() for line in text.splitlines()))


ROOT = _t(
    "root",
    """<section class="pair-compare" data-scenario="{{scenario}}" data-agent="{{agent}}">
    <h2 class="pc-title">{{scenario}} · {{agent}}</h2>
    <div class="pc-heads">{{heads}}</div>{{body}}</section>""",
)
HEAD = _t(
    "head",
    """<div class="pc-head pc-side-{{side}}"><h3>{{label}}: report {{report}}</h3>
    <p class="pc-run">{{run}}</p><p class="pc-scores">{{scores}}</p>
    <p class="pc-meta">{{meta}}</p></div>""",
)
MESSAGE = _t("message", """<p class="pc-message" role="status">{{text}}</p>""")
NOTE = _t("note", """<p class="pc-note">{{text}}</p>""")
BODY = _t(
    "body",
    """<p class="pc-summary">{{summary}}</p>{{jump}}{{notes}}<div class="pc-layout">
    <div class="pc-steps" role="table" aria-label="aligned steps">
    <div class="pc-row pc-colheads" role="row"><div class="pc-cell" role="columnheader">A</div>
    <div class="pc-gutter" role="columnheader"></div>
    <div class="pc-cell" role="columnheader">B</div></div>{{rows}}</div>
    <aside class="pc-judges">{{judges}}</aside></div>""",
)
JUMP = _t("jump", """<p class="pc-jump"><a href="#diverge">Jump to the first divergence</a></p>""")
ROW = _t(
    "row",
    """<div class="pc-row pc-{{relation}}" role="row" data-relation="{{relation}}"
    data-row="{{number}}">{{left}}<div class="pc-gutter" title="{{title}}">{{label}}</div>
    {{right}}</div>""",
)
DIVERGE_ROW = _t(
    "diverge_row",
    """<div class="pc-row pc-{{relation}} pc-diverge" id="diverge" role="row"
    data-relation="{{relation}}" data-row="{{number}}"><p class="pc-diverge-mark">
    ⚑ First divergence: {{title}}</p>{{left}}<div class="pc-gutter" title="{{title}}">
    {{label}}</div>{{right}}</div>""",
)
CELL = _t(
    "cell",
    """<div class="pc-cell pc-step pc-kind-{{kind}}" role="cell" data-step="{{step}}">
    <p class="pc-step-head"><span class="pc-kind">{{head}}</span>
    <span class="pc-at">{{at}}</span></p>{{content}}{{signals}}</div>""",
)
EMPTY_CELL = _t("empty_cell", """<div class="pc-cell pc-none" role="cell"></div>""")
PRE = _t("pre", """<pre class="pc-text">{{text}}</pre>""")
OUTPUT = _t(
    "output",
    """<details class="pc-output"><summary>{{summary}}</summary>
    <pre class="pc-text">{{text}}</pre></details>""",
)
SIGNALS = _t(
    "signals",
    """<div class="pc-signals"><p class="pc-signal-line">{{line}}</p>{{rationale}}</div>""",
)
JUDGES = _t("judges", """<aside class="pc-judges">{{judges}}</aside>""")
RATIONALE = _t("rationale", """<p class="pc-rationale">{{text}}</p>""")
JUDGE_SIDE = _t(
    "judge_side",
    """<section class="pc-judge pc-side-{{side}}"><h3>Judge · {{label}}</h3>{{items}}</section>""",
)
CHECK = _t(
    "check",
    """<div class="pc-check"><p class="pc-check-head"><span class="pc-check-score">{{score}}</span>
    {{check}}</p>{{detail}}</div>""",
)


@dataclass(frozen=True)
class _Side:
    """One report's view of the pair: what was found and what could be read."""

    label: str
    manifest: ReportManifest
    pair: PairEntry | None
    run: RunEntry | None
    transcript: Transcript | None
    verdicts: JudgeVerdicts | None
    problem: str | None


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit:,} more characters: see transcript.json]"


def _read_verdicts(folder: Path, run: RunEntry) -> JudgeVerdicts | None:
    try:
        return JudgeVerdicts.model_validate_json((folder / run.dir / VERDICTS_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def _side(label: str, folder: Path, manifest: ReportManifest, key: str, agent: str) -> _Side:
    pair = next(
        (p for p in manifest.results if p.scenario_key == key and p.agent_name == agent), None
    )
    if pair is None:
        problem = f"Report {manifest.report_id} has no pair {key} · {agent}."
        return _Side(label, manifest, None, None, None, None, problem)
    run = next((r for r in pair.runs if r.run_index == pair.representative_run_index), None)
    if run is None and pair.runs:
        run = pair.runs[0]  # no scored run to represent the pair: its first run
    if run is None:
        problem = f"Report {manifest.report_id} recorded no run of {key} · {agent}."
        return _Side(label, manifest, pair, None, None, None, problem)
    transcript = read_transcript(folder, run)
    missing: str | None = None
    if transcript is None:
        missing = (
            f"Run #{run.run_index} of report {manifest.report_id} has no readable transcript "
            f"({run.status}{': ' + run.error if run.error else ''})."
        )
    return _Side(label, manifest, pair, run, transcript, _read_verdicts(folder, run), missing)


def _scores_text(run: RunEntry | None) -> str:
    score = run.score if run else None
    if score is None:
        return "not scored"
    if score.withheld:
        return f"score withheld: {score.withheld_reason or 'the judge failed'}"
    parts = [
        ("AXIS", score.axis_score),
        ("goal", score.goal_achievement),
        ("env", score.environment),
        ("svc", score.service),
        ("agent", score.agent),
    ]
    return " · ".join(f"{name} {'–' if v is None else v}" for name, v in parts)


def _head(side: _Side, redact: Redactor) -> Markup:
    pair, run = side.pair, side.run
    if pair is None or run is None:
        run_text = "pair not in this report" if pair is None else "no run recorded"
        meta = side.manifest.timestamp
    else:
        chosen = (
            "representative run"
            if run.run_index == pair.representative_run_index
            else "first run (no representative)"
        )
        run_text = f"run #{run.run_index} of {pair.run_count} · {chosen} · {run.status}"
        steps = len(side.transcript.entries) if side.transcript else 0
        details = [side.manifest.timestamp, f"{run.duration_ms / 1000:.1f}s", f"{steps} steps"]
        if pair.model:
            details.append(pair.model)
        if run.agent_version:
            details.append(run.agent_version)
        meta = " · ".join(details)
    return HEAD.render(
        side=side.label.lower(),
        label=side.label,
        report=redact.text(side.manifest.report_id),
        run=redact.text(run_text),
        scores=redact.text(_scores_text(run)),
        meta=redact.text(meta),
    )


def _signal_rows(side: _Side, key: str, agent: str) -> dict[int, tuple[InteractionSignals, str]]:
    """Per transcript entry index: its interaction's signals and the audit's rationale."""
    if side.transcript is None:
        return {}
    audits: list[InteractionAudit] = []
    if side.verdicts is not None:
        audits = list(side.verdicts.audits)
    elif side.run is not None and side.run.score is not None:
        audits = list(side.run.score.audits)
    rationale = {a.interaction_id: a.rationale for a in audits}
    index = build_sparse_index(side.transcript, scenario_key=key, agent_name=agent)
    return {
        sig.interaction.entry_index: (sig, rationale.get(sig.interaction.id, ""))
        for sig in interaction_signals(index, audits)
    }


def _signals(found: tuple[InteractionSignals, str] | None, redact: Redactor) -> Markup:
    if found is None:
        return EMPTY
    sig, rationale = found
    it = sig.interaction
    cats = ",".join(CATEGORY_LABELS[c] for c in it.categories)
    line = (
        f"#{it.id} {cats} · success {sig.success:.2f} · speed {sig.speed:.2f} · "
        f"weight {sig.weight:.2f} · relevance {sig.relevance:.2f} · "
        + ("audited" if sig.audited else "not audited (defaults)")
        + (" · error" if it.is_error else "")
    )
    note = RATIONALE.render(text=redact.text(_cut(rationale))) if rationale else EMPTY
    return SIGNALS.render(line=line, rationale=note)


def _cell(
    step: Step | None,
    signals: dict[int, tuple[InteractionSignals, str]],
    redact: Redactor,
) -> Markup:
    if step is None:
        return EMPTY_CELL.render()
    entry = step.entry
    parts: list[Markup] = []
    call = entry.tool
    if call is not None:
        head = f"{step.index + 1}. {call.name}" + (" (error)" if call.is_error else "")
        if call.input is not None:
            shown = (
                call.input
                if isinstance(call.input, str)
                else json.dumps(call.input, indent=2, ensure_ascii=False, default=str)
            )
            parts.append(PRE.render(text=redact.text(_cut(shown))))
        if call.output is not None:
            summary = f"output ({call.output_bytes or len(call.output.encode()):,} bytes)"
            parts.append(OUTPUT.render(summary=summary, text=redact.text(_cut(call.output))))
    else:
        head = f"{step.index + 1}. {entry.type}"
        if entry.text:
            parts.append(PRE.render(text=redact.text(_cut(entry.text))))
    return CELL.render(
        kind=entry.type,
        step=step.index + 1,
        head=redact.text(head),
        at=f"@{entry.offset_ms / 1000:.1f}s",
        content=parts,
        signals=_signals(signals.get(step.entry_index), redact),
    )


def _window(alignment: Alignment) -> tuple[int, int]:
    total = len(alignment.rows)
    if total <= MAX_ROWS:
        return 0, total
    start = max(0, min((alignment.first_divergence or 0) - 50, total - MAX_ROWS))
    return start, start + MAX_ROWS


def _rows(
    alignment: Alignment,
    left: dict[int, tuple[InteractionSignals, str]],
    right: dict[int, tuple[InteractionSignals, str]],
    redact: Redactor,
) -> list[Markup]:
    start, stop = _window(alignment)
    out: list[Markup] = []
    if start:
        out.append(NOTE.render(text=f"{start:,} earlier rows (all the same) not shown."))
    for number in range(start, stop):
        row: Row = alignment.rows[number]
        template = DIVERGE_ROW if number == alignment.first_divergence else ROW
        out.append(
            template.render(
                relation=row.relation,
                number=number + 1,
                title=_TITLES[row.relation],
                label=_LABELS[row.relation],
                left=_cell(row.left, left, redact),
                right=_cell(row.right, right, redact),
            )
        )
    if stop < len(alignment.rows):
        rest = len(alignment.rows) - stop
        out.append(NOTE.render(text=f"{rest:,} later rows not shown: see the transcript files."))
    return out


def _check(check: CheckVerdict, redact: Redactor) -> Markup:
    detail: list[Markup] = []
    if check.rationale:
        detail.append(RATIONALE.render(text=redact.text(_cut(check.rationale))))
    if check.kind == "deterministic" and check.command:
        code = "did not run" if check.exit_code is None else f"exit {check.exit_code}"
        detail.append(RATIONALE.render(text=redact.text(f"$ {check.command} → {code}")))
    return CHECK.render(
        score=f"{check.score}/10", check=redact.text(_cut(check.check, 500)), detail=detail
    )


def _necessity(category: str, verdict: NecessityVerdict, redact: Redactor) -> Markup:
    ids = ", ".join(f"#{i}" for i in verdict.unnecessary_ids)
    detail = (
        [RATIONALE.render(text=redact.text(_cut(verdict.rationale)))] if verdict.rationale else []
    )
    return CHECK.render(
        score=f"{verdict.score:.2f}",
        check=f"necessity · {category}" + (f" (unnecessary: {ids})" if ids else ""),
        detail=detail,
    )


def _judge(side: _Side, redact: Redactor) -> Markup:
    items: list[Markup] = []
    verdicts = side.verdicts
    checks = (
        verdicts.checks
        if verdicts is not None
        else (side.run.score.checks if side.run and side.run.score else [])
    )
    items += [_check(c, redact) for c in checks]
    if verdicts is not None:
        items += [_necessity(k, v, redact) for k, v in verdicts.necessity.items()]
        if verdicts.withheld_reason:
            items.append(NOTE.render(text=redact.text(f"withheld: {verdicts.withheld_reason}")))
    if not items:
        items.append(NOTE.render(text="No judge verdicts for this run."))
    return JUDGE_SIDE.render(side=side.label.lower(), label=side.label, items=items)


def _summary(alignment: Alignment) -> str:
    counts = Counter(row.relation for row in alignment.rows)
    text = (
        f"{len(alignment.rows)} rows: {counts['same']} same, {counts['changed']} changed, "
        f"{counts['only-left']} only in A, {counts['only-right']} only in B."
    )
    if alignment.first_divergence is None:
        return text + " The two runs took the same steps."
    return text + f" They first diverge at row {alignment.first_divergence + 1}."


def pair_compare_html(
    a_folder: Path,
    a: ReportManifest,
    b_folder: Path,
    b: ReportManifest,
    scenario_key: str,
    agent_name: str,
) -> str:
    """The fragment comparing one pair's representative transcripts in reports A and B."""
    redact = Redactor.from_env(os.environ, os.environ)
    left = _side("A", a_folder, a, scenario_key, agent_name)
    right = _side("B", b_folder, b, scenario_key, agent_name)
    heads = [_head(left, redact), _head(right, redact)]
    problems = [s.problem for s in (left, right) if s.problem]
    if problems or left.transcript is None or right.transcript is None:
        body: list[Markup] = [MESSAGE.render(text=redact.text(p)) for p in problems]
        body.append(MESSAGE.render(text="Nothing to align: both sides need a transcript."))
        if left.run is not None or right.run is not None:
            judges = [_judge(s, redact) for s in (left, right) if s.run is not None]
            body.append(JUDGES.render(judges=judges))
    else:
        alignment = align_transcripts(left.transcript, right.transcript)
        notes = [NOTE.render(text=alignment.note)] if alignment.note else []
        if not alignment.rows:
            notes.append(NOTE.render(text="Both transcripts are empty."))
        body = [
            BODY.render(
                summary=_summary(alignment),
                jump=JUMP.render() if alignment.first_divergence is not None else EMPTY,
                notes=notes,
                rows=_rows(
                    alignment,
                    _signal_rows(left, scenario_key, agent_name),
                    _signal_rows(right, scenario_key, agent_name),
                    redact,
                ),
                judges=[_judge(left, redact), _judge(right, redact)],
            )
        ]
    return str(
        ROOT.render(
            scenario=redact.text(scenario_key),
            agent=redact.text(agent_name),
            heads=heads,
            body=body,
        )
    )
