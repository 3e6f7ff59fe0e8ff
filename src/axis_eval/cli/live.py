"""Progress on stderr: a live view on a TTY, plain lines otherwise.

One row per pair (scenario × agent). While a large suite runs, only active rows are shown
plus a summary line. Rows are built from the same outcomes the report records, so the
final frame and ``report.json`` agree by construction.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from axis_eval.planning.models import JobSpec, Plan
from axis_eval.progress import JobView, Phase

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

    def status(self) -> str:
        states = list(self.state.values())
        for active in ("running", "scoring", "setup", "teardown"):
            if active in states:
                return active
        if len(states) < self.runs or "pending" in states:
            return "pending" if not self.started else "running"
        if "completed" in states:
            return "completed"
        return "cancelled" if "cancelled" in states else "failed"


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

    def phase(self, job: JobSpec, phase: Phase) -> None:
        if self.verbose:
            self._print(f"  {ICONS[phase]} {job.id}: {phase}")

    def tokens(self, job: JobSpec, total: int) -> None:
        return None

    def finished(self, job: JobSpec, view: JobView) -> None:
        self.t.done += 1
        line = (
            f"[{self.t.done}/{self.t.total_jobs}] {ICONS[view.status]} {job.scenario.key}  "
            f"{job.agent.name}  run {job.run_index}/{job.run_count}  {view.status}  "
            f"{_duration(view.duration_ms)}  {view.tokens:,} tok"
        )
        if view.error:
            line += f"\n    ↳ {view.error.splitlines()[0][:160]}"
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

    def phase(self, job: JobSpec, phase: Phase) -> None:
        pair = self.t.pair(job)
        pair.state[job.run_index] = phase
        if pair.started is None:
            pair.started = time.monotonic()

    def tokens(self, job: JobSpec, total: int) -> None:
        self.t.pair(job).tokens = max(self.t.pair(job).tokens, total)

    def finished(self, job: JobSpec, view: JobView) -> None:
        pair = self.t.pair(job)
        pair.state[job.run_index] = view.status
        pair.tokens = max(pair.tokens, view.tokens)
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
        for p in shown:
            status = p.status()
            chips = " ".join(ICONS[p.state.get(i, "pending")] for i in range(1, p.runs + 1))
            elapsed = _duration((time.monotonic() - p.started) * 1000) if p.started else "-"
            color = {"completed": "green", "failed": "red", "cancelled": "yellow"}.get(status, "")
            table.add_row(
                f"[{color}]{ICONS[status]}[/]" if color else ICONS[status],
                p.key,
                p.agent,
                f"[{chips}]" if p.runs > 1 else status,
                elapsed,
                f"~{p.tokens:,} tok",
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


def make_display(verbose: bool = False) -> PlainDisplay | LiveDisplay:
    """The live view when stderr is a terminal, else plain lines."""
    if sys.stderr.isatty():
        return LiveDisplay()
    return PlainDisplay(verbose=verbose)
