#!/usr/bin/env python3
"""Issue 16's bench: sleeping jobs through `axis run` on a real Dask cluster and locally.

Run by hand (never from tests):  .venv/bin/python bench/dask_overhead.py [--scenarios 8,40]
                                  [--runs 5] [--reps 3] [--sandbox auto,none]

It writes one project per scenario count (a declarative text-output agent,
``sh -c 'sleep 1; echo done'``, ``--runs`` runs of each scenario: 40 × 5 = the issue's 200
jobs; ``--no-score``, so nothing is judged), starts a real cluster on 127.0.0.1 as
tests/dask_runs/conftest.py does (``dask scheduler`` and ``--workers`` × ``dask worker
--nthreads S --resources slot=S --no-nanny``), and then measures, alternating within each
repeat (the order flips from one repeat to the next), for every sandbox listed:

- the local path: ``axis run --no-score --concurrency C --sandbox X``;
- the Dask path: the same plus ``--scheduler ADDRESS`` (the cluster started once for the
  whole bench: the first Dask run of a project also unpacks its bundle on each worker).

Each ``axis run`` is a child measured with wait4() (wall, CPU of it and every descendant
it reaped) under bench/overhead.py's wrapper: an exit hook records the process's own CPU
(``getrusage(RUSAGE_SELF)``, every thread of it, no child), which is the number this bench
is about: **axis-run CPU** (agents excluded). "rest" is the wait4 total minus it: locally
the agents, bwrap and the sentinel; on Dask nearly nothing (the agents run under the
workers). The workers' and the scheduler's CPU is sampled from /proc/<pid>/stat (utime +
stime of the process; cutime + cstime: its reaped children) before and after each run,
during local runs too (what an idle cluster costs over the same time). The ideal wall is
ceil(jobs / min(concurrency, workers × slots)) × sleep (waves of full slots). The wall is
split by the report's times: before the first job starts (start-up, connecting,
pre-flight), the job span (first start to last end), after the last job ends (the report,
teardown). Every report is checked (runsTotal == runsCompleted == jobs, no failed run,
the sandbox asked for, ``auto`` meaning bwrap; on Dask every run names a worker, locally
none does); one whose only failures are bwrap failing to set a sandbox up is measured
again and listed (see MAX_ATTEMPTS). ``--warmup`` runs of the smallest project on each
side come first, unmeasured: a worker imports axis-eval at its first job, once in its
life. With more than one scenario count, least-squares fits over the job count split each
path's axis-run CPU into fixed + per job. Markdown goes to stdout, progress to stderr.

Unset PYTHONDONTWRITEBYTECODE first (``env -u PYTHONDONTWRITEBYTECODE``): with it set,
every ``axis`` start, and every worker, recompiles the sources.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

BIN = Path(sys.executable).parent
DASK = str(BIN / "dask")
SELF_FILE = "AXIS_BENCH_SELF_FILE"
CLK_TCK = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_S = 60.0
MAX_ATTEMPTS = 3
"""A measurement is taken again (up to this many times in all) when its only failed jobs are
bwrap failing to set up their sandbox (seen while another process mounted and unmounted
Docker overlays on the host): the job never started, so nothing about the path measured."""

# As in bench/overhead.py: at exit, the process's own CPU (not its children's) goes to the
# file named by $AXIS_BENCH_SELF_FILE; LIFO atexit order puts it after Dask's own hooks.
AXIS_WRAPPER = f"""
import atexit, os, resource
def _bench_self(pid=os.getpid(), out=os.environ.get({SELF_FILE!r})):
    if out and os.getpid() == pid:
        u = resource.getrusage(resource.RUSAGE_SELF)
        with open(out, "w") as f:
            f.write(repr(u.ru_utime + u.ru_stime))
atexit.register(_bench_self)
import sys
sys.argv = ["axis", *sys.argv[1:]]
from axis_eval.cli.main import main
sys.exit(main())
"""

# The scheduler's workers and their resources, asked through a client in a child process
# (the bench itself never imports Dask).
INFO = """
import json, sys
from distributed import Client
with Client(sys.argv[1], timeout=10) as client:
    info = client.scheduler_info(n_workers=-1)
    print(json.dumps({a: w.get("resources", {}) for a, w in info["workers"].items()}))
"""


def make_project(folder: Path, scenarios: int, runs: int, sleep: float) -> None:
    (folder / "scenarios").mkdir(parents=True)
    agent = ["sh", "-c", f"sleep {sleep:g}; echo done"]
    config = {
        "scenarios": "./scenarios",
        "agents": ["sleeper"],
        "adapters": {"sleeper": {"command": agent, "args": [], "output": "text"}},
        "settings": {"runs": runs},
    }
    (folder / "axis.config.json").write_text(json.dumps(config, indent=2))
    for i in range(scenarios):
        scenario = {"name": f"s{i}", "prompt": "sleep", "judge": [{"check": "done", "weight": 1}]}
        (folder / "scenarios" / f"s{i:04d}.json").write_text(json.dumps(scenario))


# ---------------------------------------------------------------------------- the cluster


class ProcCpu(NamedTuple):
    own: float
    children: float


def proc_cpu(pid: int) -> ProcCpu:
    """utime + stime and cutime + cstime of a live process, in seconds."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return ProcCpu((utime + stime) / CLK_TCK, (cutime + cstime) / CLK_TCK)


@dataclass
class Cluster:
    folder: Path
    address: str = ""
    scheduler: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, count: int, slots: int) -> None:
        scheduler_file = self.folder / "scheduler.json"
        self.scheduler = self._spawn(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(scheduler_file)],
            "scheduler",
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the scheduler did not start: {self._log('scheduler')}")
            time.sleep(0.1)
        time.sleep(0.1)
        self.address = json.loads(scheduler_file.read_text())["address"]
        for i in range(count):
            name = f"w{i}"
            argv = [
                DASK, "worker", self.address, "--name", name, "--host", "127.0.0.1",
                "--nthreads", str(slots), "--resources", f"slot={slots}", "--no-nanny",
                "--no-dashboard", "--local-directory", str(self.folder / f"scratch-{name}"),
                "--preload", "axis_eval.distributed.preload",  # as docs/distributed.md says
            ]  # fmt: skip
            self.workers.append(self._spawn(argv, name))
        while len(self.info()) < count:
            for i, proc in enumerate(self.workers):
                if proc.poll() is not None:
                    raise SystemExit(f"worker w{i} died: {self._log(f'w{i}')}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{count} workers did not join in {START_TIMEOUT_S:g} s")
            time.sleep(0.2)

    def _spawn(self, argv: list[str], name: str) -> subprocess.Popen[bytes]:
        with (self.folder / f"{name}.log").open("wb") as out:
            return subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip

    def _log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text()[-3000:]

    def info(self) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", INFO, self.address],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            return {}
        workers: dict[str, Any] = json.loads(done.stdout)
        return workers

    def sample(self) -> tuple[list[ProcCpu], ProcCpu]:
        """Each worker's CPU and the scheduler's, now."""
        assert self.scheduler is not None
        return [proc_cpu(w.pid) for w in self.workers], proc_cpu(self.scheduler.pid)

    def stop(self) -> None:
        for proc in [*self.workers, *([self.scheduler] if self.scheduler else [])]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)


# ---------------------------------------------------------------------------- measuring


@dataclass
class Sample:
    wall: float
    total: float
    """CPU of axis run and every descendant it reaped (wait4)."""
    own: float
    """axis run's own CPU at its exit hook (RUSAGE_SELF)."""
    span: float
    """The report's first job start to its last job end."""
    before: float
    """From the start of ``axis run`` to its first job's start (start-up, pre-flight)."""
    after: float
    """From the last job's end to the exit of ``axis run`` (report, teardown)."""
    workers_own: float
    workers_children: float
    scheduler: float
    placed: dict[str, int]
    """Runs per worker (Dask)."""
    job: float
    """The median run's own duration (the report's ``durationMs``)."""

    @property
    def rest(self) -> float:
        return self.total - self.own


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class NotWhole(Exception):
    """A report with runs that did not complete."""

    def __init__(self, message: str, *, sandbox_start: bool) -> None:
        super().__init__(message)
        self.sandbox_start = sandbox_start
        """Every failure is bwrap failing to set up the sandbox, before the agent started."""


def check_report(
    folder: Path, jobs: int, sandbox: str, dask: bool
) -> tuple[float, float, Counter[str], float]:
    """The latest report's first job start and last job end (epoch seconds), its runs per
    worker and its median run duration; raises unless it is whole."""
    reports = sorted((folder / ".axis" / "reports").iterdir(), key=lambda p: p.stat().st_mtime)
    manifest = json.loads((reports[-1] / "report.json").read_text())
    s = manifest["summary"]
    runs = [run for result in manifest["results"] for run in result["runs"]]
    if not s["runsTotal"] == s["runsCompleted"] == jobs or s["runsFailed"]:
        kept = Path(tempfile.mkdtemp(prefix="axis-dask-bench-failed-"))
        shutil.copytree(reports[-1], kept / reports[-1].name)
        bad = [
            {k: run.get(k) for k in ("dir", "status", "errorKind", "error", "exitCode", "worker")}
            for run in runs
            if run["failed"] or run["status"] != "completed"
        ]
        raise NotWhole(
            f"{'dask' if dask else 'local'} run not whole ({s}); report kept in {kept}; "
            f"{json.dumps(bad, indent=1)[:3000]}",
            sandbox_start=all(str(b.get("error") or "").startswith("bwrap: ") for b in bad),
        )
    assert len(runs) == jobs, len(runs)
    kinds = {run.get("sandbox") for run in runs}
    wanted = {"bwrap"} if sandbox == "auto" else {sandbox}  # auto: bwrap works here (checked)
    assert kinds == wanted, f"asked for sandbox {sandbox}, the report says {kinds}"
    workers = Counter(str(run.get("worker")) for run in runs)
    if dask:
        assert "None" not in workers, f"runs without a worker: {workers}"
    else:
        assert set(workers) == {"None"}, f"a local run names workers: {workers}"
    starts = [_time(run["startedAt"]) for run in runs]
    ends = [_time(run["endedAt"]) for run in runs]
    duration = statistics.median(run["durationMs"] for run in runs) / 1000
    return min(starts), max(ends), workers, duration


def measure(
    argv: list[str], cwd: Path, self_file: Path, cluster: Cluster, check: tuple[int, str, bool]
) -> Sample:
    env = {**os.environ, SELF_FILE: str(self_file)}
    self_file.unlink(missing_ok=True)
    workers0, sched0 = cluster.sample()
    # stderr to a file (a pipe could be held open by something axis leaves behind), out of
    # the project: a file in the config folder would change the bundle's digest every run.
    log = self_file.with_name("stderr.log")
    epoch0, t0 = time.time(), time.perf_counter()
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
    wall, epoch1 = time.perf_counter() - t0, time.time()
    workers1, sched1 = cluster.sample()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if proc.returncode != 0:
        text = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{argv[2:]} exited {proc.returncode}: {text}")
    first, last, placed, job = check_report(cwd, *check)
    return Sample(
        wall=wall,
        total=usage.ru_utime + usage.ru_stime,
        own=float(self_file.read_text()),
        span=last - first,
        before=first - epoch0,
        after=epoch1 - last,
        workers_own=sum(b.own - a.own for a, b in zip(workers0, workers1, strict=True)),
        workers_children=sum(
            b.children - a.children for a, b in zip(workers0, workers1, strict=True)
        ),
        scheduler=sched1.own - sched0.own,
        placed=dict(placed),
        job=job,
    )


def med(samples: list[Sample], name: str) -> float:
    return statistics.median(float(getattr(s, name)) for s in samples)


def spread(samples: list[Sample], name: str, fmt: str) -> str:
    values = [getattr(s, name) for s in samples]
    m = statistics.median(values)
    if len(values) < 2:
        return format(m, fmt)
    return f"{format(m, fmt)} [{format(min(values), fmt)}–{format(max(values), fmt)}]"


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - b * mx, b


# ---------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="8,40", help="comma list of scenario counts")
    parser.add_argument("--runs", type=int, default=5, help="runs of each scenario (odd)")
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds each job sleeps")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=10, help="slots (and threads) a worker")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--reps", type=int, default=3, help="alternating repeats of each side")
    parser.add_argument("--sandbox", default="auto,none", help="comma list: auto, none, bwrap")
    parser.add_argument("--target", type=float, default=0.15, help="allowed wall over ideal")
    parser.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="unmeasured runs of the smallest project on each side first (the workers import "
        "axis-eval at their first job, once per worker process)",
    )
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("warning: PYTHONDONTWRITEBYTECODE is set: axis recompiles at start", file=sys.stderr)
    counts = [int(n) for n in args.scenarios.split(",")]
    sandboxes = args.sandbox.split(",")
    capacity = min(args.concurrency, args.workers * args.slots)
    load0 = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    tree0 = tree()  # others may change the working tree while this runs: both ends shown
    results: dict[tuple[str, int, str], list[Sample]] = {}
    discarded: list[str] = []
    with tempfile.TemporaryDirectory(prefix="axis-dask-bench-") as tmp:
        root = Path(tmp)
        wrapper = root / "axis_wrapper.py"
        wrapper.write_text(AXIS_WRAPPER)
        self_file = root / "self-cpu"
        projects = {}
        for n in counts:
            projects[n] = root / f"p{n}"
            make_project(projects[n], n, args.runs, args.sleep)
        (root / "dask").mkdir()
        cluster = Cluster(root / "dask")

        def take(
            argv: list[str], project: Path, check: tuple[int, str, bool], label: str
        ) -> Sample:
            for attempt in range(1, MAX_ATTEMPTS + 1):
                try:
                    return measure(argv, project, self_file, cluster, check)
                except NotWhole as exc:
                    if not exc.sandbox_start or attempt == MAX_ATTEMPTS:
                        raise SystemExit(f"{label}: {exc}") from exc
                    discarded.append(f"{label}: {exc}")
                    print(f"discarded, measured again: {label}: {exc}", file=sys.stderr)
            raise AssertionError("unreachable")

        try:
            cluster.start(args.workers, args.slots)
            t_cluster = time.strftime("%H:%M:%S UTC", time.gmtime())
            print(f"cluster at {cluster.address} ({t_cluster})", file=sys.stderr)
            base = [sys.executable, str(wrapper), "run", "--no-score"]
            base += ["--concurrency", str(args.concurrency)]
            smallest = min(counts)
            for _ in range(args.warmup):
                for side in ("local", "dask"):
                    argv = [*base, "--sandbox", sandboxes[0]]
                    argv += ["--scheduler", cluster.address] if side == "dask" else []
                    check = (smallest * args.runs, sandboxes[0], side == "dask")
                    take(argv, projects[smallest], check, f"warm-up {side}")
            for rep in range(args.reps):
                for n in counts:
                    for sandbox in sandboxes:
                        sides = ["local", "dask"] if rep % 2 == 0 else ["dask", "local"]
                        for side in sides:
                            argv = [*base, "--sandbox", sandbox]
                            if side == "dask":
                                argv += ["--scheduler", cluster.address]
                            jobs = n * args.runs
                            check = (jobs, sandbox, side == "dask")
                            label = f"rep {rep} {side} {jobs} jobs {sandbox}"
                            sample = take(argv, projects[n], check, label)
                            results.setdefault((side, n, sandbox), []).append(sample)
                            print(
                                f"rep {rep} {side:5} {jobs:4} jobs sandbox {sandbox}: wall "
                                f"{sample.wall:.2f} s, own CPU {sample.own:.2f} s, "
                                f"load {os.getloadavg()[0]:.1f}",
                                file=sys.stderr,
                            )
        finally:
            cluster.stop()
    load1 = os.getloadavg()
    report(args, counts, sandboxes, capacity, results, started, load0, load1, tree0)
    print(
        f"\nRuns discarded and measured again (bwrap could not set a sandbox up): {len(discarded)}"
    )
    for line in discarded:
        print(f"- {line}")


def machine() -> str:
    model = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{platform.platform()}, {os.cpu_count()} cores ({model}), "
        f"Python {platform.python_version()}"
    )


def tree() -> str:
    """The code measured: HEAD, and which files under src/ differ from it (read-only git)."""
    here = Path(__file__).resolve().parent.parent

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=here, capture_output=True, text=True)
        return done.stdout.rstrip() if done.returncode == 0 else "?"

    changed = git("status", "--porcelain", "--", "src").splitlines()
    files = ", ".join(line[3:] for line in changed) or "none"
    return f"HEAD {git('rev-parse', '--short', 'HEAD')}; changed under src/: {files}"


def report(
    args: argparse.Namespace,
    counts: list[int],
    sandboxes: list[str],
    capacity: int,
    results: dict[tuple[str, int, str], list[Sample]],
    started: str,
    load0: tuple[float, float, float],
    load1: tuple[float, float, float],
    tree0: str,
) -> None:
    ended = time.strftime("%H:%M UTC", time.gmtime())
    print(f"Machine: {machine()}")
    print(f"Date: {started} – {ended}")
    tree1 = tree()
    print(
        f"Tree: {tree0}" if tree1 == tree0 else f"Tree at the start: {tree0}; at the end: {tree1}"
    )
    loads = " / ".join(f"{a:.1f} → {b:.1f}" for a, b in zip(load0, load1, strict=True))
    print(f"Load average (1 / 5 / 15 min), start → end: {loads}")
    print(
        f"Cluster: {args.workers} workers × {args.slots} slots, concurrency "
        f"{args.concurrency}; each job sleeps {args.sleep:g} s; {args.warmup} warm-up run(s) "
        f"per side, then {args.reps} alternating repeats each, medians [min–max]\n"
    )
    header = [
        "jobs", "sandbox", "path", "wall (s)", "ideal (s)", "wall/ideal",
        "before first job / job span / after last job (s)", "median job (s)",
        "axis-run CPU (s)", "per job (ms)", "rest (s)", "workers' CPU own (s)",
        "workers' children (s)", "scheduler (s)", "runs per worker",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in counts:
        jobs = n * args.runs
        ideal = math.ceil(jobs / capacity) * args.sleep
        for sandbox in sandboxes:
            for side in ("local", "dask"):
                samples = results[(side, n, sandbox)]
                ratio = [s.wall / ideal for s in samples]
                per_job = [s.own / jobs * 1000 for s in samples]
                per_worker = (
                    "; ".join(" + ".join(map(str, sorted(s.placed.values()))) for s in samples)
                    if side == "dask"
                    else "–"
                )
                cells = [
                    str(jobs), sandbox, side, spread(samples, "wall", ".2f"), f"{ideal:g}",
                    f"{statistics.median(ratio):.3f} [{min(ratio):.3f}–{max(ratio):.3f}]",
                    f"{med(samples, 'before'):.2f} / {med(samples, 'span'):.2f} / "
                    f"{med(samples, 'after'):.2f}", f"{med(samples, 'job'):.3f}",
                    spread(samples, "own", ".2f"),
                    f"{statistics.median(per_job):.2f}", spread(samples, "rest", ".2f"),
                    spread(samples, "workers_own", ".2f"),
                    spread(samples, "workers_children", ".2f"),
                    spread(samples, "scheduler", ".2f"), per_worker,
                ]  # fmt: skip
                print("| " + " | ".join(cells) + " |")
    print("\nDask − local, per job (medians; CPU: axis run's own):\n")
    print("| jobs | sandbox | axis-run CPU Δ/job | wall Δ/job | wall/ideal local → dask | "
          f"within {args.target:.0%} of ideal (dask) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for n in counts:
        jobs = n * args.runs
        ideal = math.ceil(jobs / capacity) * args.sleep
        for sandbox in sandboxes:
            loc, dsk = results[("local", n, sandbox)], results[("dask", n, sandbox)]
            cpu = (med(dsk, "own") - med(loc, "own")) / jobs * 1000
            wall = (med(dsk, "wall") - med(loc, "wall")) / jobs * 1000
            ok = sum(s.wall <= ideal * (1 + args.target) for s in dsk)
            print(
                f"| {jobs} | {sandbox} | {cpu:+.2f} ms | {wall:+.1f} ms | "
                f"{med(loc, 'wall') / ideal:.3f} → {med(dsk, 'wall') / ideal:.3f} | "
                f"{'yes' if ok == len(dsk) else 'no'} ({ok}/{len(dsk)} runs) |"
            )
    if len(counts) > 1:
        print("\nLeast-squares fits over the job count of axis-run CPU (medians per count):\n")
        xs = [float(n * args.runs) for n in counts]
        for sandbox in sandboxes:
            fits = {}
            for side in ("local", "dask"):
                ys = [med(results[(side, n, sandbox)], "own") for n in counts]
                fits[side] = fit(xs, ys)
                a, b = fits[side]
                print(f"- sandbox {sandbox}, {side}: {a:.3f} s + {b * 1000:.2f} ms × jobs")
            (la, lb), (da, db) = fits["local"], fits["dask"]
            print(
                f"- sandbox {sandbox}, dask − local: {da - la:+.3f} s fixed, "
                f"**{(db - lb) * 1000:+.2f} ms a job**"
            )


if __name__ == "__main__":
    main()
