#!/usr/bin/env python3
"""Harness overhead: N instant jobs through `axis run` against a bare asyncio floor.

Run by hand (never from tests):  .venv/bin/python bench/overhead.py [--ns 50,150,300] [--reps 3]

For each N it writes a project with N scenarios and one declarative "instant" agent (a
`python3 -c` one-liner that prints a line and exits), then measures, alternately:

- the floor: a bare asyncio loop launching the same one-liner N times behind a semaphore
  of 15, reading its stdout and waiting for it;
- `axis run --no-score --concurrency 15` on the project.

Each side runs as a child process measured with wait4(): wall time, CPU (user + sys,
including every descendant) and peak RSS. A least-squares fit over N of (axis - floor)
separates fixed cost from per-job cost. With three values of N that fit moves by ~0.1 s
between runs on a busy machine, so the fixed cost is also measured directly: one job
(N = 1) through each side, --fixed-reps alternating pairs, median of the paired CPU
differences. It also times `axis --version` and `axis --help`. Results go to stdout as
Markdown for docs/benchmarks.md. Unset PYTHONDONTWRITEBYTECODE first: with it set, every
`axis` start recompiles the sources (~0.1 s).
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

FLOOR = """
import asyncio, sys
CMD = {cmd!r}
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


def measure(argv: list[str], cwd: Path | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of a command and its descendants."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{argv[:3]} exited {code}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


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
    fit_n, fit_wall, fit_cpu = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        floor_script = Path(tmp) / "floor.py"
        floor_script.write_text(FLOOR.format(cmd=AGENT))
        for n in ns:
            project = Path(tmp) / f"p{n}"
            make_project(project, n)
            floors, axes = [], []
            for _ in range(args.reps):
                floors.append(measure([PYTHON, str(floor_script), str(n), "15"]))
                axes.append(measure([AXIS, "run", "--no-score", "--concurrency", "15"], project))
                check_report(project, n)
            fw = statistics.median(f[0] for f in floors)
            fc = statistics.median(f[1] for f in floors)
            aw = statistics.median(a[0] for a in axes)
            ac = statistics.median(a[1] for a in axes)
            rss = statistics.median(a[2] for a in axes)
            frss = statistics.median(f[2] for f in floors)
            rows.append((n, fw, aw, (aw - fw) / n * 1000, (ac - fc) / n * 1000, frss, rss, fc, ac))
            fit_n.append(n)
            fit_wall.append(aw - fw)
            fit_cpu.append(ac - fc)
        fixed: list[float] = []
        if args.fixed_reps:
            project = Path(tmp) / "p1"
            make_project(project, 1)
            for _ in range(args.fixed_reps):
                floor_cpu = measure([PYTHON, str(floor_script), "1", "15"])[1]
                axis_cpu = measure([AXIS, "run", "--no-score", "--concurrency", "15"], project)[1]
                check_report(project, 1)
                fixed.append(axis_cpu - floor_cpu)
        startup = {}
        for flag in ("--version", "--help"):
            walls = [measure([AXIS, flag])[0] for _ in range(10)]
            startup[flag] = (statistics.median(walls), min(walls), max(walls))
    py = platform.python_version()
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    print(f"Date: {time.strftime('%Y-%m-%d', time.gmtime())}\n")
    header = [
        "N", "floor wall (s)", "axis wall (s)", "(axis−floor)/N wall", "(axis−floor)/N CPU",
        "floor peak RSS", "axis peak RSS", "CPU floor → axis (s)",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|---|---|---|---|---|---|---|---|")
    for n, fw, aw, dw, dc, frss, rss, fc, ac in rows:
        cells = [
            str(n), f"{fw:.2f}", f"{aw:.2f}", f"{dw:.1f} ms", f"{dc:.1f} ms",
            f"{frss:.0f} MiB", f"{rss:.0f} MiB", f"{fc:.2f} → {ac:.2f}",
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    a, b = fit(fit_n, fit_wall)
    c, d = fit(fit_n, fit_cpu)
    print(
        f"\nFit over N: wall axis − floor ≈ {a:.2f} s + {b * 1000:.2f} ms × N; "
        f"CPU axis − floor ≈ {c:.2f} s + {d * 1000:.2f} ms × N\n"
    )
    if fixed:
        q1, _, q3 = statistics.quantiles(fixed, n=4)
        print(
            f"Fixed cost, direct: axis − floor CPU at N = 1 ≈ {statistics.median(fixed):.3f} s "
            f"[IQR {q1:.3f}–{q3:.3f}] ({len(fixed)} alternating pairs)\n"
        )
    for flag, (med, lo, hi) in startup.items():
        print(f"`axis {flag}`: {med * 1000:.0f} ms [{lo * 1000:.0f}–{hi * 1000:.0f}] (10 runs)")


if __name__ == "__main__":
    main()
