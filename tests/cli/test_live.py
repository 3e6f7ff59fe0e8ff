"""The progress displays: plain lines off a TTY, a live table on one."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from axis_eval import load_config, plan
from axis_eval.cli.live import MAX_ROWS, LiveDisplay, PlainDisplay
from axis_eval.execute.models import JobOutcome

pytestmark = pytest.mark.slow  # drives the live view on a real terminal


def _plan(tmp_path: Path, make_project: Any, n: int) -> Any:
    scenarios = {f"s{i:02d}": {"name": "s", "prompt": "p", "judge": "j"} for i in range(n)}
    make_project(tmp_path, {"agents": ["codex"]}, scenarios)
    return plan(load_config(str(tmp_path)))


def test_plain_display_prints_one_line_per_finished_job(tmp_path: Path, make_project: Any) -> None:
    the_plan = _plan(tmp_path, make_project, 2)
    out = io.StringIO()
    display = PlainDisplay(stream=out)
    display.start(the_plan, "rid")
    job = the_plan.jobs[0]
    display.finished(job, JobOutcome(spec=job, status="failed", failed=True, error="boom\nmore"))
    lines = out.getvalue().splitlines()
    assert lines[0] == f"axis: {the_plan.status_line} · report rid"
    assert lines[1].startswith("[1/2] ✗ s00  codex  run 1/1  failed")
    assert lines[2] == "    ↳ boom"


def test_live_view_shows_only_active_rows_when_large(tmp_path: Path, make_project: Any) -> None:
    the_plan = _plan(tmp_path, make_project, MAX_ROWS + 5)
    display = LiveDisplay()
    display.console = Console(file=io.StringIO(), width=120, force_terminal=False)
    display.t.start(the_plan, "rid")
    display.header = "AXIS"
    running = the_plan.jobs[3]
    display.phase(running, "running")
    done = the_plan.jobs[4]
    display.phase(done, "running")
    display.finished(done, JobOutcome(spec=done, status="completed", failed=False))
    console = Console(file=io.StringIO(), width=120)
    console.print(display._render())
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "s03" in text  # the active pair
    assert "s04" not in text and "s00" not in text  # finished and pending rows are hidden
    assert f"1/{MAX_ROWS + 5} jobs" in text
    for job in the_plan.jobs:
        if job is not running and job is not done:
            display.finished(job, JobOutcome(spec=job, status="completed", failed=False))
    display.finished(running, JobOutcome(spec=running, status="completed", failed=False))
    console = Console(file=io.StringIO(), width=120)
    console.print(display._render())
    final = console.file.getvalue()  # type: ignore[attr-defined]
    assert all(f"s{i:02d}" in final for i in range(MAX_ROWS + 5))  # all rows once finished


def test_live_view_on_a_real_terminal(tmp_path: Path) -> None:
    """`axis run` under a pseudo-terminal draws the live table and still finishes cleanly."""
    import os
    import pty
    import shutil
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    project = tmp_path / "quickstart"
    shutil.copytree(
        repo / "examples" / "quickstart", project, ignore=shutil.ignore_patterns(".axis")
    )
    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "axis_eval", "run", "-a", "toy"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the terminal closed: the process is done with it
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=60) == 0
    os.close(main)
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "\x1b[" in screen  # drawn with terminal control sequences: the live view
    assert "3/3 jobs" in screen and "3/3 pairs done" in screen
    assert "Report saved:" in screen


def test_both_displays_mark_simulated_usage(tmp_path: Path, make_project: Any) -> None:
    from axis_eval.transcript.models import Transcript

    the_plan = _plan(tmp_path, make_project, 2)
    scripted, real = the_plan.jobs
    fake = Transcript(agent="codex", cost_simulated=True, cost_usd=0.3)
    fake.usage.input = 1234
    outcomes = [
        JobOutcome(spec=scripted, status="completed", failed=False, transcript=fake),
        JobOutcome(spec=real, status="completed", failed=False),
    ]
    out = io.StringIO()
    plain = PlainDisplay(stream=out)
    plain.start(the_plan, "rid")
    live = LiveDisplay()
    live.console = Console(file=io.StringIO(), width=120, force_terminal=False)
    live.t.start(the_plan, "rid")
    for outcome in outcomes:
        plain.finished(outcome.spec, outcome)
        live.finished(outcome.spec, outcome)
    lines = out.getvalue().splitlines()
    assert lines[1].endswith("1,234 tok simulated") and lines[2].endswith(" 0 tok")
    console = Console(file=io.StringIO(), width=120)
    console.print(live._render())
    rows = {line.split()[1]: line for line in console.file.getvalue().splitlines()[1:3]}  # type: ignore[attr-defined]
    assert "~1,234 tok simulated" in rows["s00"] and "simulated" not in rows["s01"]
