#!/usr/bin/env python3
"""Harness overhead: N instant jobs through `axis run` against a bare asyncio floor.

Run by hand (never from tests):  .venv/bin/python bench/overhead.py [--ns 50,150,300] [--reps 3]

For each N it writes a project with N scenarios and one declarative "instant" agent (a
`python3 -c` one-liner that prints a line and exits), then measures, alternately:

- the floor: a bare asyncio loop launching the same one-liner N times behind a semaphore
  of 15, reading its stdout and waiting for it;
- `axis run --no-score --concurrency 15` on the project.

Each side runs as a child process measured with wait4(): wall time, CPU (user + sys,
including every descendant) and peak RSS. That total is dominated by the agents' own CPU
(~42 ms a job, the same work on both sides), whose wobble of 1-2 % swamps the harness's
share, so the CPU is also split: each side runs under a small wrapper whose exit hook
records its own CPU (``getrusage(RUSAGE_SELF)``; for axis the wrapper calls
``axis_eval.cli.main.main()`` with ``sys.argv`` set, as the console script does), and the
rest of the wait4() total (total - self: the agents, the sentinel, anything else spawned,
plus the interpreter's teardown after the exit hook) is reported separately. Least-squares
fits over N of (axis - floor) separate fixed cost from per-job cost, for the total, for
the self part and for the rest; the headline is own fit + rest fit. The fixed cost is
also measured directly: one job (N = 1) through each side, --fixed-reps alternating
pairs, median of the paired differences. Every report is checked (total == completed ==
N). It also times `axis --version` and `axis --help`. Results go to stdout as
Markdown for docs/benchmarks.md. Unset PYTHONDONTWRITEBYTECODE first: with it set, every
`axis` start recompiles the sources (~0.1 s). Run it with nothing else writing to the disk:
each axis job makes folders and files (the floor makes none), and while the ext4 journal is
busy those cost measurably more CPU (+1.5 to +2 ms a job during a large write).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple


def _real_python() -> str:
    """The interpreter itself, not a pyenv-style shim script (a shim costs ~60 ms a launch)."""
    found = shutil.which("python3") or sys.executable
    try:
        out = subprocess.run(
            [found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True
        )
        return out.stdout.strip() or found
    except OSError:
        return found


PYTHON = _real_python()
AGENT = [PYTHON, "-c", "print('ok')"]
AXIS = str(Path(sys.executable).with_name("axis"))
SELF_FILE = "AXIS_BENCH_SELF_FILE"

# Prepended to both sides: at exit, the process's own CPU (not its children's) goes to the
# file named by $AXIS_BENCH_SELF_FILE (only from the process that registered the hook).
SELF_HOOK = f"""
import atexit, os, resource
def _bench_self(pid=os.getpid(), out=os.environ.get({SELF_FILE!r})):
    if out and os.getpid() == pid:
        u = resource.getrusage(resource.RUSAGE_SELF)
        with open(out, "w") as f:
            f.write(repr(u.ru_utime + u.ru_stime))
atexit.register(_bench_self)
"""

AXIS_WRAPPER = (
    SELF_HOOK
    + """
import sys
sys.argv = ["axis", *sys.argv[1:]]
from axis_eval.cli.main import main
sys.exit(main())
"""
)

FLOOR = (
    SELF_HOOK
    + """
import asyncio, sys
CMD = __CMD__
async def one(sem):
    async with sem:
        p = await asyncio.create_subprocess_exec(*CMD, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, _ = await p.communicate()
        assert p.returncode == 0 and out.strip() == b"ok"
async def main(n, c):
    sem = asyncio.Semaphore(c)
    await asyncio.gather(*(one(sem) for _ in range(n)))
asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""
)


def make_project(folder: Path, n: int) -> None:
    (folder / "scenarios").mkdir(parents=True)
    config = {
        "scenarios": "./scenarios",
        "agents": ["instant"],
        "adapters": {"instant": {"command": AGENT, "args": [], "output": "text"}},
        "settings": {"concurrency": 15},
    }
    (folder / "axis.config.json").write_text(json.dumps(config))
    for i in range(n):
        scenario = {"name": f"s{i}", "prompt": "say ok", "judge": [{"check": "ok", "weight": 1}]}
        (folder / "scenarios" / f"s{i:04d}.json").write_text(json.dumps(scenario))


class Sample(NamedTuple):
    wall: float
    total: float
    """CPU of the process and every descendant it waited for (wait4)."""
    own: float
    """The process's own CPU at its exit hook (RUSAGE_SELF)."""
    rss: float

    @property
    def rest(self) -> float:
        """Children (agents, sentinel, ...) plus the interpreter teardown after the hook."""
        return self.total - self.own


def measure(argv: list[str], cwd: Path | None = None, *, self_file: Path | None = None) -> Sample:
    """Wall seconds, CPU seconds (total and own) and peak RSS MiB of a command."""
    env = dict(os.environ)
    if self_file is not None:
        self_file.unlink(missing_ok=True)
        env[SELF_FILE] = str(self_file)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{argv[:3]} exited {code}: {err[-2000:]}")
    if proc.stderr:
        proc.stderr.close()
    total = usage.ru_utime + usage.ru_stime
    own = float(self_file.read_text()) if self_file is not None else total
    return Sample(wall, total, own, usage.ru_maxrss / 1024)


def check_report(folder: Path, n: int) -> None:
    reports = sorted((folder / ".axis" / "reports").iterdir())
    manifest = json.loads((reports[-1] / "report.json").read_text())
    s = manifest["summary"]
    assert s["total"] == s["completed"] == n and s["failed"] == 0, s


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - b * mx, b


def med(samples: list[Sample], field: str) -> float:
    return statistics.median(getattr(s, field) for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ns", default="50,150,300")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--fixed-reps", type=int, default=15, help="N = 1 pairs (0: skip)")
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("warning: PYTHONDONTWRITEBYTECODE is set: axis recompiles at start", file=sys.stderr)
    ns = [int(n) for n in args.ns.split(",")]
    rows = []
    diffs: dict[str, list[float]] = {"wall": [], "total": [], "own": [], "rest": []}
    with tempfile.TemporaryDirectory() as tmp:
        floor_script = Path(tmp) / "floor.py"
        floor_script.write_text(FLOOR.replace("__CMD__", repr(AGENT)))
        axis_script = Path(tmp) / "axis_wrapper.py"
        axis_script.write_text(AXIS_WRAPPER)
        self_file = Path(tmp) / "self-cpu"
        floor_cmd = [PYTHON, str(floor_script)]
        axis_cmd = [sys.executable, str(axis_script), "run", "--no-score", "--concurrency", "15"]

        def pair(n: int, project: Path) -> tuple[Sample, Sample]:
            floor = measure([*floor_cmd, str(n), "15"], self_file=self_file)
            axis = measure(axis_cmd, project, self_file=self_file)
            check_report(project, n)
            return floor, axis

        for n in ns:
            project = Path(tmp) / f"p{n}"
            make_project(project, n)
            floors, axes = [], []
            for _ in range(args.reps):
                floor, axis = pair(n, project)
                floors.append(floor)
                axes.append(axis)
            rows.append((n, floors, axes))
            for field in diffs:
                diffs[field].append(med(axes, field) - med(floors, field))
        fixed: dict[str, list[float]] = {"total": [], "own": [], "rest": []}
        if args.fixed_reps:
            project = Path(tmp) / "p1"
            make_project(project, 1)
            for _ in range(args.fixed_reps):
                floor, axis = pair(1, project)
                for field, values in fixed.items():
                    values.append(getattr(axis, field) - getattr(floor, field))
        startup = {}
        for flag in ("--version", "--help"):
            walls = [measure([AXIS, flag]).wall for _ in range(10)]
            startup[flag] = (statistics.median(walls), min(walls), max(walls))
    report(ns, rows, diffs, fixed, startup)


def report(
    ns: list[int],
    rows: list[tuple[int, list[Sample], list[Sample]]],
    diffs: dict[str, list[float]],
    fixed: dict[str, list[float]],
    startup: dict[str, tuple[float, float, float]],
) -> None:
    py = platform.python_version()
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    header = [
        "N", "floor wall (s)", "axis wall (s)", "floor peak RSS", "axis peak RSS",
        "CPU total floor → axis (s)", "own CPU floor → axis (s)", "rest floor → axis (s)",
        "(axis−floor)/N own", "(axis−floor)/N rest",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n, floors, axes in rows:
        f, a = (
            {k: med(floors, k) for k in Sample._fields},
            {k: med(axes, k) for k in Sample._fields},
        )
        fr, ar = med(floors, "rest"), med(axes, "rest")
        cells = [
            str(n), f"{f['wall']:.2f}", f"{a['wall']:.2f}",
            f"{f['rss']:.0f} MiB", f"{a['rss']:.0f} MiB",
            f"{f['total']:.2f} → {a['total']:.2f}", f"{f['own']:.3f} → {a['own']:.3f}",
            f"{fr:.2f} → {ar:.2f}",
            f"{(a['own'] - f['own']) / n * 1000:.2f} ms", f"{(ar - fr) / n * 1000:.2f} ms",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    print("\nLeast-squares fits over N of axis − floor (medians per N):\n")
    fits = {field: fit([float(n) for n in ns], values) for field, values in diffs.items()}
    names = {
        "own": "own CPU (the harness process itself)",
        "rest": "rest (children: agents, sentinel; exit teardown)",
        "total": "CPU total (wait4, for reference)",
        "wall": "wall",
    }
    for field in ("own", "rest", "total", "wall"):
        a, b = fits[field]
        print(f"- {names[field]}: {a:.3f} s + {b * 1000:.2f} ms × N")
    (a1, b1), (a2, b2) = fits["own"], fits["rest"]
    print(
        f"\n**Harness overhead = own + rest ≈ {a1 + a2:.3f} s + {(b1 + b2) * 1000:.2f} ms × N**\n"
    )
    if fixed["own"]:
        for field in ("own", "rest", "total"):
            values = fixed[field]
            q1, _, q3 = statistics.quantiles(values, n=4)
            print(
                f"Fixed cost, direct (N = 1, {len(values)} alternating pairs), {names[field]}: "
                f"{statistics.median(values):.3f} s [IQR {q1:.3f}–{q3:.3f}]"
            )
        print()
    for flag, (m, lo, hi) in startup.items():
        print(f"`axis {flag}`: {m * 1000:.0f} ms [{lo * 1000:.0f}–{hi * 1000:.0f}] (10 runs)")


if __name__ == "__main__":
    main()
