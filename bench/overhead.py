#!/usr/bin/env python3
"""Harness overhead: N instant jobs through `axis run` against a bare asyncio floor.

Run by hand (never from tests):  .venv/bin/python bench/overhead.py [--ns 50,150,300] [--reps 3]
                                  [--sandbox none,bwrap] [--churn off,on]
                                  [--latency-ns 10,40] [--reference DIR]

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
Markdown for docs/benchmarks.md.

Sandboxes (issue 15): ``--sandbox none,bwrap`` runs each measurement under every listed
sandbox (``axis run --sandbox X``, each report checked to say so), alternating with the
same floor, so each sandbox gets its own fits against one floor. ``--churn off,on`` repeats
everything with and without a background churn: a separate process, started by the bench,
that starts ``--churn-rate`` short processes (``/bin/true``) a second on the same machine,
as a busy CI box has (its achieved rate is printed). ``--latency-ns`` adds a concurrency-1
sweep (floor and each sandbox, ``--latency-reps`` alternating rounds): the per-job wall
there is a job's latency, so a sandbox's added wall per job is the difference of those
slopes (the concurrency-15 wall slope is throughput on the machine's cores, which the
sandbox's own CPU in its children also eats into); on a loaded machine that sweep cannot
tell equal code apart, and bench/sandbox_start.py's paired starts are the measure. The
harness CPU of a sandbox stays ``own``: bwrap's own processes are children, in ``rest``.
The summary table at the end puts the sandboxes side by side. ``--reference DIR`` (the
``src`` folder of an earlier tree, ``git archive REV src | tar -x -C ...``) adds that tree
as one more side, run as it ran then: the same code measured on another day tells the
machine's state from the code's.
Unset PYTHONDONTWRITEBYTECODE first: with it set, every
`axis` start recompiles the sources (~0.1 s). Run it with nothing else writing to the disk:
each axis job makes folders and files (the floor makes none), and while the disk is busy
those cost measurably more CPU (+1.5 to +2 ms a job during a large write). Start it at
least six minutes after any large deletion (another bench's clean-up at its end, a test
suite): ext4 without a journal (this VM's) skips each recently deleted inode when it makes
a new one, for one to six minutes, so every folder and file a run makes costs more until
then. The "folder gauge" printed first (CPU to make and remove four folders, before and
after) shows that state.

The projects and the jobs' folders go where ``TMPDIR`` points (printed first, with its
filesystem and whether an ext4 has a journal). To measure on another disk than the VM's,
as root: ``truncate -s 8G /var/tmp/j.img && mkfs.ext4 -q -F /var/tmp/j.img && mkdir -p
/mnt/j && mount -o loop /var/tmp/j.img /mnt/j && mkdir -m 1777 /mnt/j/tmp``, then run with
``TMPDIR=/mnt/j/tmp`` (an ext4 with a journal, as most CI disks are), or with
``TMPDIR=/dev/shm/x`` (tmpfs: what the harness costs when files cost next to nothing).
The summary's "floor own CPU/job" is the machine's speed in the same minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from folder_pattern import make_job_folders  # bench/ is the script's folder


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


# The background churn: ~RATE short processes a second (posix_spawn of /bin/true, reaped at
# once), paced by the clock; on SIGTERM it writes "<started> <seconds>" to OUT and exits.
CHURN = """
import os, signal, sys, time
rate, out = float(sys.argv[1]), sys.argv[2]
started, t0 = 0, time.monotonic()
def stop(*_):
    with open(out, "w") as f:
        f.write(f"{started} {time.monotonic() - t0}")
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
due = t0
while True:
    os.waitpid(os.posix_spawn("/bin/true", ["true"], {}), 0)
    started += 1
    due += 1 / rate
    delay = due - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    elif delay < -1:
        due = time.monotonic()  # fell behind by a second: do not burst to catch up
"""


class Churn:
    """The background churn while the block runs (rate 0: none); ``rate`` is what it
    achieved, in processes a second."""

    def __init__(self, rate: int, folder: Path) -> None:
        self.wanted = rate
        self.out = folder / "churn.txt"
        self.rate = 0.0
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Churn:
        if self.wanted:
            argv = [PYTHON, "-c", CHURN, str(self.wanted), str(self.out)]
            self.proc = subprocess.Popen(argv)
            time.sleep(1.0)  # let it reach its pace before anything is measured
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        self.proc.wait(timeout=10)
        started, seconds = self.out.read_text().split()
        self.rate = int(started) / float(seconds)


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


def folder_gauge(rounds: int = 200) -> float:
    """The machine's state for folder work: CPU µs to make and remove four folders (a job's
    folders) in a new folder of the system tmp, the median of ``rounds``.

    On ext4 without a journal a removed inode stays "recently deleted" for one to six
    minutes, and each new inode in its block group first skips every such one: after a
    large deletion (another bench's clean-up, a test suite) every folder and file a run
    makes costs more, for minutes (docs/benchmarks.md). This gauge shows it: ~60 µs on a
    quiet disk here, 80-200 µs after.
    """
    base = tempfile.mkdtemp(prefix="axis-gauge-")
    costs = []
    try:
        for i in range(rounds):
            start = time.process_time()
            for folder in make_job_folders(f"{base}/{i}"):
                os.rmdir(folder)
            costs.append(time.process_time() - start)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return statistics.median(costs) * 1e6


def tmp_filesystem(path: str) -> str:
    """Where ``path`` lies: its mount, filesystem and device, and for ext4 whether it has a
    journal (without one, each new inode skips the recently deleted ones: see
    :func:`folder_gauge`)."""
    best = ("", "?", "?")
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            parts = line.split()
            mount, rest = parts[4], parts[parts.index("-") + 1 :]
            inside = path == mount or path.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) >= len(best[0]):
                best = (mount, rest[0], rest[1])
    mount, fstype, source = best
    journal = ""
    if fstype == "ext4":
        try:
            task = Path(f"/sys/fs/ext4/{os.path.basename(source)}/journal_task").read_text()
        except OSError:
            task = "?"
        journal = {"<none>": ", no journal", "?": ""}.get(task.strip(), ", journal")
    return f"{path} on {mount} ({fstype}, {source}{journal})"


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


def measure(
    argv: list[str],
    cwd: Path | None = None,
    *,
    self_file: Path | None = None,
    extra_env: dict[str, str] | None = None,
) -> Sample:
    """Wall seconds, CPU seconds (total and own) and peak RSS MiB of a command."""
    env = {**os.environ, **(extra_env or {})}
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


def check_report(folder: Path, n: int, sandbox: str | None = None) -> None:
    reports = sorted((folder / ".axis" / "reports").iterdir())
    manifest = json.loads((reports[-1] / "report.json").read_text())
    s = manifest["summary"]
    assert s["total"] == s["completed"] == n and s["failed"] == 0, s
    if sandbox is not None:
        kinds = {run.get("sandbox") for result in manifest["results"] for run in result["runs"]}
        assert kinds == {sandbox}, f"asked for sandbox {sandbox}, the report says {kinds}"


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - b * mx, b


def med(samples: list[Sample], field: str) -> float:
    return statistics.median(getattr(s, field) for s in samples)


@dataclass
class Config:
    """One sandbox under one churn condition: its sweep against the shared floor."""

    sandbox: str
    churn: str
    rows: list[tuple[int, list[Sample], list[Sample]]] = dataclasses.field(default_factory=list)
    diffs: dict[str, list[float]] = dataclasses.field(
        default_factory=lambda: {"wall": [], "total": [], "own": [], "rest": []}
    )
    fixed: dict[str, list[float]] = dataclasses.field(
        default_factory=lambda: {"total": [], "own": [], "rest": []}
    )
    latency: dict[int, tuple[list[float], list[float]]] = dataclasses.field(default_factory=dict)
    """Concurrency 1: N → (floor walls, axis walls)."""
    load: tuple[float, float] = (0.0, 0.0)
    """1-minute load average when the churn condition's block started and ended."""
    churn_rate: float = 0.0

    @property
    def title(self) -> str:
        churn = f"churn {self.churn_rate:.0f} processes/s" if self.churn == "on" else "no churn"
        return f"sandbox {self.sandbox}, {churn}"

    def fit(self, field_name: str) -> tuple[float, float]:
        return fit([float(n) for n, _, _ in self.rows], self.diffs[field_name])

    def latency_slopes(self) -> tuple[float, float] | None:
        """Per-job wall at concurrency 1 (floor, axis), from the medians per N."""
        if len(self.latency) < 2:
            return None
        ns = sorted(self.latency)
        xs = [float(n) for n in ns]
        floor = fit(xs, [statistics.median(self.latency[n][0]) for n in ns])[1]
        axis = fit(xs, [statistics.median(self.latency[n][1]) for n in ns])[1]
        return floor, axis

    def wall_slope(self) -> float:
        """The axis side's own wall per job at concurrency 15 (fit over N of its medians)."""
        return fit([float(n) for n, _, _ in self.rows], [med(a, "wall") for _, _, a in self.rows])[
            1
        ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ns", default="50,150,300")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--fixed-reps", type=int, default=15, help="N = 1 pairs (0: skip)")
    parser.add_argument("--sandbox", default="none", help="comma list: none, bwrap")
    parser.add_argument("--churn", default="off", help="off, on, or both: off,on")
    parser.add_argument("--churn-rate", type=int, default=200, help="processes a second")
    parser.add_argument(
        "--latency-ns", default="", help="concurrency-1 sweep, e.g. 10,40 (empty: skip)"
    )
    parser.add_argument("--latency-reps", type=int, default=3)
    parser.add_argument(
        "--reference",
        default="",
        help="a src/ folder of an earlier tree (git archive REV src | tar -x -C DIR): measured "
        "alongside as sandbox 'reference' (no --sandbox flag), to tell the machine's state "
        "from the code's",
    )
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("warning: PYTHONDONTWRITEBYTECODE is set: axis recompiles at start", file=sys.stderr)
    ns = [int(n) for n in args.ns.split(",")]
    sandboxes = args.sandbox.split(",") + (["reference"] if args.reference else [])
    latency_ns = [int(n) for n in args.latency_ns.split(",") if n]
    configs: list[Config] = []
    gauge_start = folder_gauge()
    with tempfile.TemporaryDirectory() as tmp:
        floor_script = Path(tmp) / "floor.py"
        floor_script.write_text(FLOOR.replace("__CMD__", repr(AGENT)))
        axis_script = Path(tmp) / "axis_wrapper.py"
        axis_script.write_text(AXIS_WRAPPER)
        self_file = Path(tmp) / "self-cpu"
        floor_cmd = [PYTHON, str(floor_script)]
        axis_cmd = [sys.executable, str(axis_script), "run", "--no-score"]
        projects: dict[int, Path] = {}
        for n in {*ns, 1, *latency_ns}:
            projects[n] = Path(tmp) / f"p{n}"
            make_project(projects[n], n)

        def floor_run(n: int, concurrency: int = 15) -> Sample:
            return measure([*floor_cmd, str(n), str(concurrency)], self_file=self_file)

        def axis_run(n: int, sandbox: str, concurrency: int = 15) -> Sample:
            argv = [*axis_cmd, "--concurrency", str(concurrency)]
            if sandbox == "reference":  # the earlier tree, as it ran then
                env = {"PYTHONPATH": args.reference}
                sample = measure(argv, projects[n], self_file=self_file, extra_env=env)
                check_report(projects[n], n)
                return sample
            sample = measure([*argv, "--sandbox", sandbox], projects[n], self_file=self_file)
            check_report(projects[n], n, sandbox)
            return sample

        for churn in args.churn.split(","):
            block = {sandbox: Config(sandbox, churn) for sandbox in sandboxes}
            rate = args.churn_rate if churn == "on" else 0
            with Churn(rate, Path(tmp)) as background:
                load_start = os.getloadavg()[0]
                for n in ns:
                    floors: list[Sample] = []
                    axes: dict[str, list[Sample]] = {sandbox: [] for sandbox in sandboxes}
                    for _ in range(args.reps):  # the floor, then each sandbox, alternating
                        floors.append(floor_run(n))
                        for sandbox in sandboxes:
                            axes[sandbox].append(axis_run(n, sandbox))
                    for sandbox, config in block.items():
                        config.rows.append((n, floors, axes[sandbox]))
                        for field_name in config.diffs:
                            config.diffs[field_name].append(
                                med(axes[sandbox], field_name) - med(floors, field_name)
                            )
                for _ in range(args.fixed_reps):
                    floor = floor_run(1)
                    for sandbox, config in block.items():
                        axis = axis_run(1, sandbox)
                        for field_name, values in config.fixed.items():
                            values.append(getattr(axis, field_name) - getattr(floor, field_name))
                for _ in range(args.latency_reps if latency_ns else 0):
                    for n in latency_ns:
                        wall = floor_run(n, 1).wall
                        for sandbox, config in block.items():
                            walls = config.latency.setdefault(n, ([], []))
                            walls[0].append(wall)
                            walls[1].append(axis_run(n, sandbox, 1).wall)
                load_end = os.getloadavg()[0]
            for config in block.values():
                config.load = (load_start, load_end)
                config.churn_rate = background.rate
            configs.extend(block.values())
        startup = {}
        for flag in ("--version", "--help"):
            walls = [measure([AXIS, flag]).wall for _ in range(10)]
            startup[flag] = (statistics.median(walls), min(walls), max(walls))
    gauge_end = folder_gauge()
    py = platform.python_version()
    print(f"Machine: {platform.platform()}, {os.cpu_count()} cores, Python {py}")
    print(f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"Temporary folder (the projects, the jobs' folders): {tmp_filesystem(tmp)}")
    print(
        f"Folder gauge (4 folders made and removed in the system tmp, CPU): "
        f"{gauge_start:.0f} µs before, {gauge_end:.0f} µs after\n"
    )
    for config in configs:
        if len(configs) > 1:
            load = f"1-minute load {config.load[0]:.1f} → {config.load[1]:.1f}"
            print(f"\n### {config.title} ({load})\n")
        report(ns, config.rows, config.diffs, config.fixed)
        slopes = config.latency_slopes()
        if slopes is not None:
            floor, axis = slopes
            print(
                f"Concurrency 1 (N = {', '.join(map(str, sorted(config.latency)))}, "
                f"{args.latency_reps} rounds): wall per job floor {floor * 1000:.1f} ms, "
                f"axis {axis * 1000:.1f} ms (over the floor {(axis - floor) * 1000:.1f} ms)\n"
            )
    for flag, (m, lo, hi) in startup.items():
        print(f"`axis {flag}`: {m * 1000:.0f} ms [{lo * 1000:.0f}–{hi * 1000:.0f}] (10 runs)")
    if len(configs) > 1:
        summary(configs)


def summary(configs: list[Config]) -> None:
    """The sandboxes side by side: per-job harness CPU and wall, and what each adds to
    ``none`` under the same churn condition. The floor's own CPU a job (the bare asyncio
    loop's) is the machine's speed: the same code reads more over the floor when it is up."""
    print("\n### Summary\n")
    header = [
        "sandbox", "churn", "load (1 min)", "floor own CPU/job", "own CPU/job over floor",
        "rest/job",
        "fixed N = 1 (own + rest)", "wall/job c=15", "added wall/job vs none c=15",
        "latency/job c=1 (over floor)", "added latency/job vs none c=1",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    base = {c.churn: c for c in configs if c.sandbox == "none"}
    for c in configs:
        own, rest = c.fit("own")[1], c.fit("rest")[1]
        both = [o + r for o, r in zip(c.fixed["own"], c.fixed["rest"], strict=True)]
        fixed = f"{statistics.median(both) * 1000:.0f} ms" if both else "–"
        ref = base.get(c.churn)
        added_wall = (
            f"{(c.wall_slope() - ref.wall_slope()) * 1000:+.1f} ms"
            if ref is not None and ref is not c
            else "–"
        )
        slopes, ref_slopes = c.latency_slopes(), ref.latency_slopes() if ref else None
        latency = (
            f"{slopes[1] * 1000:.1f} ms ({(slopes[1] - slopes[0]) * 1000:+.1f} ms)"
            if slopes
            else "–"
        )
        added_latency = (
            f"{(slopes[1] - ref_slopes[1]) * 1000:+.1f} ms"
            if slopes and ref_slopes and ref is not c
            else "–"
        )
        churn = f"{c.churn_rate:.0f}/s" if c.churn == "on" else "off"
        floor = fit([float(n) for n, _, _ in c.rows], [med(f, "own") for _, f, _ in c.rows])[1]
        cells = [
            c.sandbox, churn, f"{c.load[0]:.1f} → {c.load[1]:.1f}", f"{floor * 1000:.2f} ms",
            f"{own * 1000:.2f} ms", f"{rest * 1000:.2f} ms", fixed,
            f"{c.wall_slope() * 1000:.1f} ms", added_wall, latency, added_latency,
        ]  # fmt: skip
        print("| " + " | ".join(cells) + " |")


def report(
    ns: list[int],
    rows: list[tuple[int, list[Sample], list[Sample]]],
    diffs: dict[str, list[float]],
    fixed: dict[str, list[float]],
) -> None:
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


if __name__ == "__main__":
    main()
