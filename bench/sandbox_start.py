#!/usr/bin/env python3
"""What bwrap adds to one job, measured apart from the rest of the harness.

Run by hand (never from tests):  .venv/bin/python bench/sandbox_start.py [--pairs 40]
                                 [--churn off,on] [--calls 300]

Two numbers `bench/overhead.py` can only see through the noise of a whole run:

- **harness CPU**: what the harness itself spends to confine a job: building the job's
  ``BwrapSandbox`` and its bwrap options (``_options``: the folders to hide and to keep
  readable, resolved on disk), and the check of the program before the spawn; main-thread
  CPU (``time.thread_time``) over ``--calls`` jobs, median of 5 rounds;
- **start wall and CPU**: the instant agent of `bench/overhead.py` (``python3 -c
  "print('ok')"``) started and waited for, directly and through ``bwrap`` with a real job's
  options (a job folder, the config folder hidden's ``.axis``), alternating ``--pairs``
  times; wall of each start, and the CPU of what was started (``wait4``: bwrap and the
  agent) — bwrap's own CPU is the harness's children's, the ``rest`` of `bench/overhead.py`.

Each with and without the background churn of `bench/overhead.py` (``--churn-rate``
short processes a second). Medians; paired differences for the starts. Markdown to stdout.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead import AGENT, Churn

from axis_eval.config.sandbox import SandboxPolicy
from axis_eval.execute.process import ProcessSpec, become_subreaper
from axis_eval.execute.sandbox.bwrap import BwrapSandbox, _check_program
from axis_eval.execute.workspace import create_job_dirs


def options_cpu(base: str, config_dir: str, calls: int) -> float:
    """Main-thread CPU seconds per job to make its sandbox and its bwrap options."""
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    dirs = create_job_dirs(base)
    spec = ProcessSpec(AGENT, dirs.work_dir, env, None)
    policy = SandboxPolicy(mode="bwrap")
    hidden = [f"{config_dir}/.axis"]
    rounds = []
    try:
        for _ in range(5):
            start = time.thread_time()
            for _ in range(calls):
                box = BwrapSandbox(dirs, policy, config_dir=config_dir, hidden=hidden)
                _check_program(spec)
                box._options(env, AGENT[0])
            rounds.append((time.thread_time() - start) / calls)
    finally:
        dirs.remove()
    return statistics.median(rounds)


def start(argv: list[str], cwd: str, orphans: int = 0) -> tuple[float, float]:
    """Wall and CPU (it and its descendants) of one start of ``argv``, to its exit.

    bwrap's outer process does not reap the namespace's init: it is orphaned to this
    process (a subreaper, as the harness is), and only reaping it brings the CPU of the
    command inside (``orphans``: how many such to reap, within a second)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.stdout.close()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0 and out.strip() == b"ok", (argv[:3], proc.returncode, out)
    cpu = usage.ru_utime + usage.ru_stime
    deadline = time.monotonic() + 1.0
    while orphans and time.monotonic() < deadline:
        pid, _, usage = os.wait4(-1, os.WNOHANG)
        if pid == 0:
            time.sleep(0.0005)
            continue
        cpu += usage.ru_utime + usage.ru_stime
        orphans -= 1
    assert orphans == 0, "bwrap's namespace init was not orphaned to this process"
    return wall, cpu


def starts(base: str, config_dir: str, pairs: int) -> dict[str, list[float]]:
    env = {"PATH": os.environ.get("PATH", os.defpath)}
    dirs = create_job_dirs(base)
    box = BwrapSandbox(
        dirs, SandboxPolicy(mode="bwrap"), config_dir=config_dir, hidden=[f"{config_dir}/.axis"]
    )
    wrapped = [box._binary, *box._options(env, AGENT[0]), "--chdir", dirs.work_dir, "--", *AGENT]
    out: dict[str, list[float]] = {"direct": [], "bwrap": [], "wall": [], "cpu": []}
    try:
        for _ in range(pairs):
            direct_wall, direct_cpu = start(AGENT, dirs.work_dir)
            bwrap_wall, bwrap_cpu = start(wrapped, dirs.work_dir, orphans=1)
            out["direct"].append(direct_wall)
            out["bwrap"].append(bwrap_wall)
            out["wall"].append(bwrap_wall - direct_wall)
            out["cpu"].append(bwrap_cpu - direct_cpu)
    finally:
        dirs.remove()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--churn", default="off,on")
    parser.add_argument("--churn-rate", type=int, default=200)
    args = parser.parse_args()
    if not become_subreaper():
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        config_dir = Path(tmp) / "project"
        (config_dir / ".axis" / "reports").mkdir(parents=True)
        for churn in args.churn.split(","):
            with Churn(args.churn_rate if churn == "on" else 0, Path(tmp)) as background:
                load = os.getloadavg()[0]
                cpu = options_cpu(tmp, str(config_dir), args.calls)
                measured = starts(tmp, str(config_dir), args.pairs)
            rows.append((churn, background.rate, load, cpu, measured))
    py = platform.python_version()
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    header = [
        "churn", "load (1 min)", "harness CPU/job (sandbox + options + program check)",
        "start wall direct", "start wall bwrap", "added wall (paired median [IQR])",
        "added CPU in children (paired median)",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for churn, rate, load, cpu, m in rows:
        q1, _, q3 = statistics.quantiles(m["wall"], n=4)
        cells = [
            f"{rate:.0f}/s" if churn == "on" else "off",
            f"{load:.1f}",
            f"{cpu * 1000:.3f} ms",
            f"{statistics.median(m['direct']) * 1000:.1f} ms",
            f"{statistics.median(m['bwrap']) * 1000:.1f} ms",
            f"{statistics.median(m['wall']) * 1000:.1f} ms [{q1 * 1000:.1f}–{q3 * 1000:.1f}]",
            f"{statistics.median(m['cpu']) * 1000:.1f} ms",
        ]
        print("| " + " | ".join(cells) + " |")
    print(f"\n{args.pairs} alternating pairs per row; harness CPU: {args.calls} jobs × 5 rounds.")


if __name__ == "__main__":
    main()
