#!/usr/bin/env python3
"""Hostile agents against `axis run`: the harness's peak memory and report size, default caps.

Run by hand (never from tests):  .venv/bin/python bench/hostile_agents.py [--modes flood,tools]
[--time-minutes 2] [--limit-mib 150]

Each mode of bench/hostile_agent.py (endless events, one endless 1 MiB event after
another, an endless streamed message, endless free text, one endless line, endless
non-JSON lines, endless stderr, 100k tool calls, a line of JSON nested 1,100 deep, a
bounded fork storm of double-forked orphans) runs as one job of its own project with the
DEFAULT `limits.output` (nothing set), under `axis run --no-score`. The harness runs under a
small wrapper whose exit hook writes its own peak RSS (`getrusage(RUSAGE_SELF)`: the
harness only, not the agent, the sentinel or anything else it starts), as
bench/overhead.py measures its own CPU. Per mode: wall time, the harness's peak RSS, the
run's status and error, and the report folder's size (all files) with its largest file.
The target: every mode under --limit-mib of peak RSS. Results go to stdout as Markdown for
docs/benchmarks.md; the exit code is 1 when a mode missed the target or did not finish.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
AGENT = HERE / "hostile_agent.py"
MODES = (
    "quiet",
    "flood",
    "flood-big",
    "deltas",
    "text",
    "line",
    "garbage",
    "stderr",
    "tools",
    "deep",
    "forks",
)
WHAT = {
    "quiet": "one answer, then exit (the harness's floor)",
    "flood": "endless assistant events, 1 KB each",
    "flood-big": "endless assistant events, 1 MiB each",
    "deltas": "one message streamed forever (assistant_delta, never flushed)",
    "text": "endless free text (`output: text`)",
    "line": "one endless line, no newline",
    "garbage": "endless lines that are not JSON",
    "stderr": "endless stderr, silent stdout",
    "tools": "100,000 tool calls and results (10 MB), then an answer",
    "deep": "one JSON line nested 1,100 deep, then an answer",
    "forks": "2,000 double forks (orphans exit within 20 ms), then an answer",
}
RSS_FILE = "AXIS_BENCH_RSS_FILE"
WRAPPER = f"""
import atexit, os, resource, sys
def _bench_rss(pid=os.getpid(), out=os.environ.get({RSS_FILE!r})):
    if out and os.getpid() == pid:
        with open(out, "w") as f:
            f.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
atexit.register(_bench_rss)
sys.argv = ["axis", *sys.argv[1:]]
from axis_eval.cli.main import main
sys.exit(main())
"""


class Result(NamedTuple):
    mode: str
    wall: float
    rss_mib: float | None
    exit_code: int | None
    status: str
    error: str
    report_bytes: int
    largest: str


def make_project(folder: Path, mode: str, minutes: float) -> None:
    (folder / "scenarios").mkdir(parents=True)
    adapter = {
        "command": [sys.executable, str(AGENT), mode],
        "args": [],
        "output": "text" if mode == "text" else "ndjson",
    }
    config = {"scenarios": "./scenarios", "agents": ["hostile"], "adapters": {"hostile": adapter}}
    (folder / "axis.config.json").write_text(json.dumps(config))
    limits = {"time_minutes": minutes}  # and no `output`: the default caps
    scenario = {"name": mode, "prompt": "do it", "judge": "it did", "limits": limits}
    (folder / "scenarios" / f"{mode}.json").write_text(json.dumps(scenario))


def folder_size(folder: Path) -> tuple[int, str]:
    total, largest, name = 0, 0, "-"
    for path in folder.rglob("*"):
        if path.is_file():
            size = path.stat().st_size
            total += size
            if size > largest:
                largest, name = size, f"{path.name} {mib(size)}"
    return total, name


def mib(size: float) -> str:
    return f"{size / 2**20:.1f} MiB"


def run(mode: str, tmp: Path, wrapper: Path, minutes: float, timeout_s: float) -> Result:
    project = tmp / mode
    make_project(project, mode, minutes)
    rss_file = tmp / f"{mode}.rss"
    env = {**os.environ, RSS_FILE: str(rss_file)}
    argv = [sys.executable, str(wrapper), "run", "--no-score", "-c", str(project)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        code: int | None = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    wall = time.perf_counter() - t0
    rss = int(rss_file.read_text()) / 1024 if rss_file.exists() else None
    status, error = "did not finish", ""
    reports = sorted((project / ".axis" / "reports").glob("*/report.json"))
    if reports:
        runs = [r for p in json.loads(reports[-1].read_text())["results"] for r in p["runs"]]
        if runs:
            status, error = runs[0]["status"], runs[0].get("error") or ""
    size, largest = folder_size(reports[-1].parent) if reports else (0, "-")
    return Result(mode, wall, rss, code, status, error, size, largest)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--time-minutes", type=float, default=2.0, help="each job's time limit")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per axis run")
    parser.add_argument("--limit-mib", type=float, default=150.0, help="the RSS target")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    results = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        wrapper = tmp / "axis_wrapper.py"
        wrapper.write_text(WRAPPER)
        for mode in modes:
            results.append(run(mode, tmp, wrapper, args.time_minutes, args.timeout))
            print(f"done: {results[-1]}", file=sys.stderr)
    report(results, args.limit_mib)
    missed = [r for r in results if r.rss_mib is None or r.rss_mib >= args.limit_mib]
    return 1 if missed else 0


def report(results: list[Result], limit: float) -> None:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    py = platform.python_version()
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load}\n")
    header = ["agent", "what it does", "wall (s)", "harness peak RSS", "run", "error"]
    header += ["report", "largest file"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in results:
        rss = f"{r.rss_mib:.0f} MiB" if r.rss_mib is not None else "-"
        cells = [
            f"`{r.mode}`", WHAT.get(r.mode, ""), f"{r.wall:.1f}", rss, r.status,
            r.error.replace("|", "\\|")[:110] or "-", mib(r.report_bytes), r.largest,
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    worst = max((r.rss_mib or float("inf") for r in results), default=0.0)
    verdict = "met" if worst < limit else "MISSED"
    print(f"\nTarget: peak RSS under {limit:.0f} MiB for every agent: {verdict}", end="")
    print(f" (worst {worst:.0f} MiB)")


if __name__ == "__main__":
    sys.exit(main())
