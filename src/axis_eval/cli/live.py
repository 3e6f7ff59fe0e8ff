"""Progress on stderr: a live view on a TTY, plain lines otherwise.

One row per pair (scenario × agent). While a large suite runs, only active rows are shown
plus a summary line. Rows are built from the same outcomes the report records, so the
final frame and ``report.json`` agree by construction.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from axis_eval._types import round_half_up
from axis_eval.planning.models import JobSpec, Plan
from axis_eval.progress import JobView, Phase, usage_simulated
from axis_eval.runs.aggregate import pick_representative
from axis_eval.scoring.models import ScoreResult

ICONS = {
    "pending": "○",
    "setup": "◌",
    "running": "●",
    "scoring": "◐",
    "teardown": "◌",
    "completed": "✓",
    "failed": "✗",
    "cancelled": "⊘",
}
MAX_ROWS = 20


def _duration(ms: float) -> str:
    return f"{ms:.0f}ms" if ms < 1000 else f"{ms / 1000:.1f}s"


@dataclass
class _Pair:
    key: str
    agent: str
    runs: int
    state: dict[int, str] = field(default_factory=dict)
    started: float | None = None
    ended_ms: int | None = None
    tokens: int = 0
    simulated: bool = False
    """A finished run's usage came from the scripted model server (shown as simulated)."""
    scores: dict[int, float] = field(default_factory=dict)
    """Run index → composite of the runs that completed and were scored (not withheld)."""
    judged: set[int] = field(default_factory=set)
    """Runs that carry a score, withheld or not (scoring is on)."""
    where: dict[int, str] = field(default_factory=dict)
    """Run index → the Dask worker running it (a distributed run)."""

    def placement(self) -> str:
        """The workers of the runs under way (``""`` for a local run)."""
        running = [w for i, w in sorted(self.where.items()) if self.state.get(i) in ACTIVE_STATES]
        return " ".join(dict.fromkeys(_short(w) for w in running))

    def record(self, run_index: int, view: JobView) -> None:
        """A run finished: keep its state and, when it scored, its composite."""
        self.state[run_index] = view.status
        score = getattr(view, "score", None)
        if isinstance(score, ScoreResult):
            self.judged.add(run_index)
            if view.status == "completed" and not score.withheld and score.axis_score is not None:
                self.scores[run_index] = float(score.axis_score)

    def finished(self) -> bool:
        return len(self.state) >= self.runs and all(
            s in ("completed", "failed", "cancelled") for s in self.state.values()
        )

    def representative(self) -> int | None:
        """The same pick as the report's (one selection function for both)."""
        return pick_representative(self.scores)

    def chip(self, index: int, rep: int | None) -> str:
        state = self.state.get(index, "pending")
        if state != "completed":
            return ICONS[state]
        if index in self.scores:
            star = "*" if index == rep else ""
            return f"{self.scores[index]:g}✓{star}"
        return "?✓" if index in self.judged else "✓"

    def progress(self) -> str:
        """``2/3 · med 86   [87✓ 84✓ ●]``: succeeded/total, running median, a chip per run.

        While runs are under way the median is rounded half-up, as the seed shows it. Once
        every run finished the headline is the representative's own composite (the report's
        headline); when the scored runs are even in number the median, a midpoint, follows
        in brackets: ``2/3 · 84 (med 85.5)``. The representative's chip carries ``*``.
        """
        done = self.finished()
        rep = self.representative() if done else None
        ok = len(self.scores) if self.judged else sum(s == "completed" for s in self.state.values())
        parts = [f"{ok}/{self.runs}"]
        if self.scores:
            median = statistics.median(self.scores.values())
            if rep is None:
                parts.append(f"med {round_half_up(median)}")
            elif self.scores[rep] == median:
                parts.append(f"med {self.scores[rep]:g}")
            else:
                parts.append(f"{self.scores[rep]:g} (med {round(median, 1):g})")
        chips = " ".join(self.chip(i, rep) for i in range(1, self.runs + 1))
        return f"{' · '.join(parts)}   [{chips}]"

    def status(self) -> str:
        states = list(self.state.values())
        for active in ACTIVE_STATES:
            if active in states:
                return active
        if len(states) < self.runs or "pending" in states:
            return "pending" if not self.started else "running"
        if "completed" in states:
            return "completed"
        return "cancelled" if "cancelled" in states else "failed"


ACTIVE_STATES = ("running", "scoring", "setup", "teardown")


def _short(address: str) -> str:
    """A worker's address without its scheme (``tcp://10.0.0.5:4012`` → ``10.0.0.5:4012``)."""
    return address.split("://", 1)[-1]


class _Tracker:
    def __init__(self) -> None:
        self.pairs: dict[tuple[str, str], _Pair] = {}
        self.total_jobs = 0
        self.done = 0
        self.failed = 0
        self.report_id = ""

    def start(self, plan: Plan, report_id: str) -> None:
        self.report_id = report_id
        self.total_jobs = len(plan.jobs)
        for p in plan.pairs:
            self.pairs[(p.scenario_key, p.agent_name)] = _Pair(
                p.scenario_key, p.agent_name, p.run_count
            )

    def pair(self, job: JobSpec) -> _Pair:
        return self.pairs[job.pair_key]

    def grow(self, jobs: list[JobSpec]) -> None:
        """Adaptive repeats added these jobs: more to do, more runs for their pairs."""
        self.total_jobs += len(jobs)
        for job in jobs:
            pair = self.pair(job)
            pair.runs = max(pair.runs, job.run_count)


class PlainDisplay:
    """One line per event, for logs and CI (stderr is not a TTY)."""

    def __init__(self, stream: TextIO | None = None, verbose: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self.t = _Tracker()

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def start(self, plan: Plan, report_id: str) -> None:
        self.t.start(plan, report_id)
        self._print(f"axis: {plan.status_line} · report {report_id}")

    def grow(self, jobs: list[JobSpec]) -> None:
        """Adaptive repeats added ``jobs`` (see :meth:`_Tracker.grow`)."""
        self.t.grow(jobs)

    def phase(self, job: JobSpec, phase: Phase) -> None:
        if self.verbose:
            self._print(f"  {ICONS[phase]} {job.id}: {phase}")

    def tokens(self, job: JobSpec, total: int) -> None:
        return None

    def placed(self, job: JobSpec, where: str) -> None:
        pair = self.t.pair(job)
        if pair.where.get(job.run_index) != where:
            pair.where[job.run_index] = where
            if self.verbose:
                self._print(f"  → {job.id}: on {_short(where)}")

    def finished(self, job: JobSpec, view: JobView) -> None:
        self.t.done += 1
        line = (
            f"[{self.t.done}/{self.t.total_jobs}] {ICONS[view.status]} {job.scenario.key}  "
            f"{job.agent.name}  run {job.run_index}/{job.run_count}  {view.status}  "
            f"{_duration(view.duration_ms)}  {view.tokens:,} tok"
            + (" simulated" if usage_simulated(view) else "")
        )
        worker = getattr(view, "worker", None)
        if worker:
            line += f"  on {_short(worker)}"
        if view.error:
            line += f"\n    ↳ {view.error.splitlines()[0][:160]}"
        pair = self.t.pair(job)
        pair.record(job.run_index, view)
        if pair.runs > 1 and pair.finished():
            line += f"\n    ↳ {job.scenario.key}  {job.agent.name}  {pair.progress()}"
        self._print(line)

    def message(self, text: str) -> None:
        self._print(text)

    def stop(self) -> None:
        return None


class LiveDisplay:
    """A redrawn table on a TTY (rich), one row per pair."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.t = _Tracker()
        self.t0 = time.monotonic()
        self.header = "AXIS"
        self.live = Live(
            console=self.console, refresh_per_second=8, transient=False, get_renderable=self._render
        )

    def start(self, plan: Plan, report_id: str) -> None:
        self.t.start(plan, report_id)
        self.header = f"AXIS · {plan.status_line} · report {report_id}"
        self.live.start()

    def grow(self, jobs: list[JobSpec]) -> None:
        """Adaptive repeats added ``jobs`` (see :meth:`_Tracker.grow`)."""
        self.t.grow(jobs)

    def phase(self, job: JobSpec, phase: Phase) -> None:
        pair = self.t.pair(job)
        pair.state[job.run_index] = phase
        if pair.started is None:
            pair.started = time.monotonic()

    def tokens(self, job: JobSpec, total: int) -> None:
        self.t.pair(job).tokens = max(self.t.pair(job).tokens, total)

    def placed(self, job: JobSpec, where: str) -> None:
        self.t.pair(job).where[job.run_index] = where

    def finished(self, job: JobSpec, view: JobView) -> None:
        pair = self.t.pair(job)
        pair.record(job.run_index, view)
        pair.tokens = max(pair.tokens, view.tokens)
        pair.simulated |= usage_simulated(view)
        self.t.done += 1
        if pair.status() in ("completed", "failed", "cancelled"):
            pair.ended_ms = view.duration_ms

    def message(self, text: str) -> None:
        self.console.print(text)

    def stop(self) -> None:
        self.live.stop()

    def _render(self) -> Any:
        from rich.table import Table

        table = Table.grid(padding=(0, 2))
        pairs = list(self.t.pairs.values())
        finished = all(p.status() in ("completed", "failed", "cancelled") for p in pairs)
        shown = (
            pairs
            if finished or len(pairs) <= MAX_ROWS
            else [
                p
                for p in pairs
                if p.status() not in ("pending", "completed", "failed", "cancelled")
            ][:MAX_ROWS]
        )
        distributed = any(p.where for p in pairs)  # a worker column for a Dask run
        for p in shown:
            status = p.status()
            elapsed = _duration((time.monotonic() - p.started) * 1000) if p.started else "-"
            color = {"completed": "green", "failed": "red", "cancelled": "yellow"}.get(status, "")
            table.add_row(
                f"[{color}]{ICONS[status]}[/]" if color else ICONS[status],
                p.key,
                p.agent,
                p.progress() if p.runs > 1 else _single(p, status),
                elapsed,
                f"~{p.tokens:,} tok" + (" simulated" if p.simulated else ""),
                *([f"[dim]{p.placement()}[/]"] if distributed else []),
            )
        done = sum(p.status() in ("completed", "failed", "cancelled") for p in pairs)
        footer = (
            f"{self.t.done}/{self.t.total_jobs} jobs · {done}/{len(pairs)} pairs done · "
            f"{_duration((time.monotonic() - self.t0) * 1000)}"
        )
        outer = Table.grid()
        outer.add_row(self.header)
        outer.add_row(table)
        outer.add_row(footer)
        return outer


def _single(pair: _Pair, status: str) -> str:
    score = pair.scores.get(1)
    return status if score is None else f"{status} {score:g}"


def make_display(verbose: bool = False) -> PlainDisplay | LiveDisplay:
    """The live view when stderr is a terminal, else plain lines."""
    if sys.stderr.isatty():
        return LiveDisplay()
    return PlainDisplay(verbose=verbose)
