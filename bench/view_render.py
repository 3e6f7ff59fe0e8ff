#!/usr/bin/env python3
"""``axis view`` over many reports: page load in Chromium, server time and CPU, export wall.

Run by hand (never from tests), on a quiet machine:

    .venv/bin/python bench/view_render.py [--cases 1000x1,999x3] [--others 20]
        [--other-jobs 60] [--reps 5] [--export-reps 5] [--keep DIR] [--profile]

For each case ``JOBSxRUNS`` it builds one project folder (``bench/synth_report.py``: the
real ``ReportWriter``, 25 tool calls per run, each report also given its ``report.html``
by ``write_html``, as ``axis run`` does) holding ``--others`` small reports (``--other-jobs``
jobs each, seeds 10, 11, …), then two reports of JOBS jobs (RUNS runs per pair, seeds 0 and
1): A, then B, the newest. Then, per page and rep, it starts ``axis view -c FOLDER --port 0``
as a subprocess (a cold server: nothing read yet), opens the page in headless Chromium
(Debian's ``chromium`` launched as the browser tests launch it, a fresh context per open,
1280×900), then opens it once more on the same server (warm: manifests cached), and stops
the server. Pages:

- list: ``/``, every report's headline (cold: every manifest read);
- report: ``/report/B``, its first page of 100 pairs (B's previous report is A);
- compare: ``/compare/A/B`` (every pair's deltas);
- pair history: ``/history/pair`` of a pair every report holds; agent history: one agent;
- search hit: ``/search?q=invoice`` (stops at 50 hits, in the newest reports);
- search miss: ``/search?q=…`` of a term no transcript holds (every transcript read).

Per open, from the page's navigation entry (``PerformanceNavigationTiming``, ms from
navigation start): **load** (``loadEventEnd``: request, server, transfer, parse, layout);
**server** (``responseStart − requestStart``: the server renders a page before sending
any byte, so this is its render time plus a loopback round trip); and the server process's
CPU (utime + stime from ``/proc/PID/stat`` before and after the open; 10 ms ticks). Medians
and maxima over ``--reps``; the server start (spawn → its URL printed) is reported too.
Last, ``axis view -c FOLDER --export DIR`` is timed ``--export-reps`` times (wall, and its
CPU from ``wait4``). ``--profile`` prints, per page, the top functions of a cold
``App.get`` in this process (cProfile). Last per case, a memory tour: one server opens
every page above once, then every report's page, and its peak RSS (``VmHWM``) and final
RSS are read from ``/proc/PID/status``. ``PYTHONPATH=OTHER/src`` (an earlier tree, ``git
archive REV src``) runs that tree's viewer on the same sets (``--keep DIR`` reuses them).
The tables are Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

from playwright.sync_api import sync_playwright
from report_render import _browser_helpers, _cpu
from synth_report import write_synthetic_report

from axis_eval.report.html import write_html
from axis_eval.runs.store import read_manifest, reports_root

REPO = Path(__file__).resolve().parents[1]
AXIS = REPO / ".venv" / "bin" / "axis"
TARGET_MS = 2000.0
"""Issue 20: a 1,000-job report's list renders in under 2 s in Chromium."""
LOOPBACK = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
"""launch_chromium resolves no host at all; the viewer is on 127.0.0.1."""
MISS = "zq-no-such-term"
TICK = os.sysconf("SC_CLK_TCK")

NAV_JS = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  return {load: n.loadEventEnd, server: n.responseStart - n.requestStart,
          dcl: n.domContentLoadedEventEnd, bytes: n.decodedBodySize,
          elements: document.getElementsByTagName('*').length};
}"""


def build_set(root: Path, jobs: int, runs: int, others: int, other_jobs: int) -> dict[str, Any]:
    """Write the reports of one case into ``root`` (a project folder); reuse a matching one."""
    marker = root / "bench-set.json"
    wanted = {"jobs": jobs, "runs": runs, "others": others, "otherJobs": other_jobs}
    if marker.is_file():
        found: dict[str, Any] = json.loads(marker.read_text())
        if found["params"] == wanted:
            return found
        shutil.rmtree(root)
    target = reports_root(root)
    target.mkdir(parents=True)
    gen = root.parent / f"{root.name}-gen"
    shutil.rmtree(gen, ignore_errors=True)
    small = max(runs, other_jobs - other_jobs % runs)
    plan = [(f"other-{i}", small, 10 + i) for i in range(others)]
    plan += [("a", jobs, 0), ("b", jobs, 1)]
    ids: dict[str, str] = {}
    t0 = time.perf_counter()
    for name, count, seed in plan:
        folder = write_synthetic_report(gen / name, count, runs_per_pair=runs, seed=seed)
        write_html(folder)
        dest, n = target / folder.name, 1
        while dest.exists():  # two reports written in one second (as new_report_id names them)
            n += 1
            dest = target / f"{folder.name}-{n}"
        folder.rename(dest)
        ids[name] = dest.name
        time.sleep(0.01)
    shutil.copy(gen / "b" / "axis.config.json", root / "axis.config.json")
    shutil.rmtree(gen)
    manifests = [read_manifest(target / rid) for rid in ids.values()]
    common = set.intersection(
        *({(p.scenario_key, p.agent_name) for p in m.results} for m in manifests)
    )
    scenario, agent = min(common)
    found = {
        "params": wanted,
        "a": ids["a"],
        "b": ids["b"],
        "pairs": len(manifests[-1].results),
        "scenario": scenario,
        "agent": agent,
        "reports": len(ids),
        "buildSeconds": round(time.perf_counter() - t0, 1),
        "megabytes": sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 1e6,
    }
    marker.write_text(json.dumps(found, indent=2))
    return found


def pages(s: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    """(label, path, a selector, how many the page must hold): a wrong page fails the run."""
    a, b, n = s["a"], s["b"], s["reports"]
    pair = f"scenario={quote(s['scenario'])}&agent={quote(s['agent'])}"
    return [
        ("list `/`", "/", "tr.report", n),
        ("report B, page 1", f"/report/{b}", "tr.pair", min(100, s["pairs"])),
        ("compare A → B", f"/compare/{a}/{b}", "tr.diff", s["pairs"]),
        ("pair history", f"/history/pair?{pair}", "tr.point", n),
        ("agent history", f"/history/agent?agent={quote(s['agent'])}", "tr.point", n),
        ("search, 50 hits", "/search?q=invoice", "li.hit", 50),
        ("search, no hit", f"/search?q={MISS}", "li.hit", 0),
    ]


def _server_cpu(pid: int) -> float:
    """utime + stime of ``pid`` (s)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def start_server(folder: Path) -> tuple[subprocess.Popen[str], str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(AXIS), "view", "-c", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    started = time.perf_counter() - t0
    if " at http://127.0.0.1:" not in line:
        proc.kill()
        raise RuntimeError(f"axis view printed {line!r}")
    return proc, line.split(" at ", 1)[1].split()[0], started


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def one_open(browser: Any, url: str, pid: int, expect: tuple[str, int]) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        cpu = _server_cpu(pid)
        response = page.goto(url, wait_until="load", timeout=120_000)
        if response is None or response.status != 200:
            raise RuntimeError(f"{url}: {None if response is None else response.status}")
        sample: dict[str, float] = page.evaluate(NAV_JS)
        held = page.locator(expect[0]).count()
        if held != expect[1]:
            raise RuntimeError(f"{url}: {held} × {expect[0]}, expected {expect[1]}")
        sample["cpu"] = (_server_cpu(pid) - cpu) * 1000
        return sample
    finally:
        context.close()


def _status_kib(pid: int, key: str) -> int:
    """A ``/proc/PID/status`` size (``VmHWM``: peak RSS, ``VmRSS``) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise KeyError(key)


def memory_tour(browser: Any, folder: Path, s: dict[str, Any]) -> dict[str, float]:
    """One server, every page opened once in turn (then every report's own page): its peak
    RSS, and its RSS at the end (what it holds on to)."""
    ids = sorted(p.name for p in reports_root(folder).iterdir())
    proc, base, _ = start_server(folder)
    try:
        for _label, path, selector, count in pages(s):
            one_open(browser, base.rstrip("/") + path, proc.pid, (selector, count))
        for rid in ids:
            one_open(browser, f"{base.rstrip('/')}/report/{rid}", proc.pid, ("h1", 1))
        return {
            "opened": len(pages(s)) + len(ids),
            "peak": _status_kib(proc.pid, "VmHWM") / 1024,
            "end": _status_kib(proc.pid, "VmRSS") / 1024,
        }
    finally:
        stop_server(proc)


def measure(
    browser: Any, folder: Path, path: str, expect: tuple[str, int], reps: int
) -> dict[str, list[float]]:
    """Per rep: a fresh server, the page cold, then warm."""
    out: dict[str, list[float]] = {}
    for _ in range(reps):
        proc, base, started = start_server(folder)
        try:
            cold = one_open(browser, base.rstrip("/") + path, proc.pid, expect)
            warm = one_open(browser, base.rstrip("/") + path, proc.pid, expect)
        finally:
            stop_server(proc)
        out.setdefault("start", []).append(started * 1000)
        for key, value in cold.items():
            out.setdefault(f"cold_{key}", []).append(value)
        for key, value in warm.items():
            out.setdefault(f"warm_{key}", []).append(value)
    return out


def export(folder: Path, reps: int) -> dict[str, float]:
    walls, cpus, files, size = [], [], 0, 0
    for _ in range(reps):
        out = Path(tempfile.mkdtemp(prefix="axis-view-export-"))
        try:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [str(AXIS), "view", "-c", str(folder), "--export", str(out / "site")],
                stdout=subprocess.DEVNULL,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            walls.append(time.perf_counter() - t0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise RuntimeError(f"axis view --export exited {proc.returncode}")
            cpus.append(usage.ru_utime + usage.ru_stime)
            written = [f for f in (out / "site").iterdir() if f.is_file()]
            files, size = len(written), sum(f.stat().st_size for f in written)
        finally:
            shutil.rmtree(out)
    return {
        "wall": statistics.median(walls),
        "wallMax": max(walls),
        "cpu": statistics.median(cpus),
        "files": files,
        "mb": size / 1e6,
    }


def profile(folder: Path, paths: list[tuple[str, str, str, int]]) -> None:
    """The top of a cold ``App.get`` per page, in this process (stderr)."""
    from axis_eval.view import App, Catalog

    for label, path, _, _ in paths:
        app = App(Catalog([reports_root(folder)], folder))
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.runcall(app.get, path)
        took = time.perf_counter() - t0
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(14)
        print(
            f"## profile {label} ({path}): {took * 1000:.0f} ms\n{text.getvalue()}", file=sys.stderr
        )


def _mm(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} / {max(values):,.0f} ms"


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="1000x1,999x3", help="comma-separated JOBSxRUNS")
    parser.add_argument("--others", type=int, default=20, help="small reports beside the two")
    parser.add_argument("--other-jobs", type=int, default=60, help="jobs of each small report")
    parser.add_argument("--reps", type=int, default=5, help="server starts per page (median)")
    parser.add_argument("--export-reps", type=int, default=5, help="timed exports per case")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the report sets here")
    parser.add_argument("--profile", action="store_true", help="cProfile a cold App.get")
    args = parser.parse_args()
    cases = [tuple(int(n) for n in c.split("x")) for c in args.cases.split(",")]
    if not AXIS.exists():
        print(f"{AXIS} is missing (make install)", file=sys.stderr)
        return 2
    helpers = _browser_helpers()
    executable = helpers.find_chromium()
    if executable is None:
        print("chromium is missing (`make system-deps`)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="axis-view-bench-") as scratch:
        rows, exports = run(helpers, executable, cases, args, args.keep or Path(scratch))
    print(
        "| case | page | HTML | elements | load cold (median / max) | load warm (median / max) "
        "| server cold / warm (median) | server CPU cold / warm (median) | < 2 s |"
    )
    print("|:---|:---|---:|---:|---:|---:|---:|---:|:---:|")
    print("\n".join(rows))
    print()
    print("| case | reports | set on disk | `--export` wall (median / max) | CPU | pages | size |")
    print("|:---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(exports))
    return 0


def run(
    helpers: ModuleType,
    executable: str,
    cases: list[tuple[int, ...]],
    args: argparse.Namespace,
    root: Path,
) -> tuple[list[str], list[str]]:
    rows: list[str] = []
    exports: list[str] = []
    memory: list[str] = []
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"# start {started}, load {_load()}", file=sys.stderr)
    sets = []
    for jobs, runs in cases:
        folder = root / f"view-{jobs}x{runs}"
        s = build_set(folder, jobs, runs, args.others, args.other_jobs)
        print(f"# {jobs}x{runs}: {s}", file=sys.stderr)
        sets.append((jobs, runs, folder, s))
    print(
        f"# sets ready {time.strftime('%H:%M:%S', time.gmtime())}, load {_load()}", file=sys.stderr
    )
    with sync_playwright() as pw:
        browser = helpers.launch_chromium(pw, executable, extra_args=LOOPBACK)
        try:
            warm = browser.new_page()  # the browser's own start-up is not the viewer's cost
            warm.goto("about:blank")
            warm.close()
            print(
                f"# {platform.node()}: {_cpu()}, {os.cpu_count()} cores, "
                f"Python {platform.python_version()}, chromium {browser.version} "
                f"({executable}), {args.reps} reps",
                file=sys.stderr,
            )
            for jobs, runs, folder, s in sets:
                case = f"{jobs:,} × {runs}"
                if args.profile:
                    profile(folder, pages(s))
                for label, path, selector, count in pages(s):
                    m = measure(browser, folder, path, (selector, count), args.reps)
                    worst = max(m["cold_load"] + m["warm_load"])
                    rows.append(
                        f"| {case} | {label} | {statistics.median(m['cold_bytes']) / 1e3:,.0f} kB "
                        f"| {statistics.median(m['cold_elements']):,.0f} "
                        f"| {_mm(m['cold_load'])} | {_mm(m['warm_load'])} "
                        f"| {statistics.median(m['cold_server']):,.0f} / "
                        f"{statistics.median(m['warm_server']):,.0f} ms "
                        f"| {statistics.median(m['cold_cpu']):,.0f} / "
                        f"{statistics.median(m['warm_cpu']):,.0f} ms "
                        f"| {'✓' if worst < TARGET_MS else '✗'} |"
                    )
                    print(f"{rows[-1]}  start {_mm(m['start'])}, load {_load()}", file=sys.stderr)
                mem = memory_tour(browser, folder, s)
                memory.append(
                    f"| {case} | {mem['opened']} | {mem['peak']:,.0f} MiB | {mem['end']:,.0f} MiB |"
                )
                print(f"{memory[-1]}  load {_load()}", file=sys.stderr)
                e = export(folder, args.export_reps)
                exports.append(
                    f"| {case} | {s['reports']} | {s['megabytes']:,.0f} MB "
                    f"| {e['wall']:.1f} / {e['wallMax']:.1f} s | {e['cpu']:.1f} s "
                    f"| {e['files']:,} | {e['mb']:,.0f} MB |"
                )
                print(f"{exports[-1]}  load {_load()}", file=sys.stderr)
        finally:
            browser.close()
    ended = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"# end {ended}, load {_load()}", file=sys.stderr)
    return rows, [*exports, "", *MEMORY_HEAD, *memory]


MEMORY_HEAD = [
    "| case | pages opened on one server | server peak RSS | RSS after them |",
    "|:---|---:|---:|---:|",
]


if __name__ == "__main__":
    sys.exit(main())
