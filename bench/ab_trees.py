#!/usr/bin/env python3
"""Paired A/B of two source trees' harness overhead: does a change make axis-eval slower?

Run by hand (never from tests), with nothing else writing to the disk:

    .venv/bin/python bench/ab_trees.py --a /path/to/old-clone --b . [--n 150] [--pairs 8]
    .venv/bin/python bench/ab_trees.py --pythonpath --a /tmp/old/src --b src --sandbox bwrap

Each tree needs its own ``.venv`` (``make install`` there); with ``--pythonpath`` the two are
source folders (``git archive REV src | tar -x -C /tmp/old``) run by this interpreter, which
is enough when the dependencies did not change. For N instant jobs
(``bench/overhead.py``'s project and one-line agent), and for one job (the fixed cost), it runs
``axis run --no-score --concurrency 15`` through tree A's interpreter, then tree B's,
alternating, ``--pairs`` times, and measures each side's own CPU at exit (RUSAGE_SELF: the
harness alone, agents excluded), its total CPU with children (wait4), wall time and peak RSS.
The verdict is the median of the paired differences B − A for N jobs and for one job (the
fixed cost), and per job beyond the fixed cost ((N-job diff − 1-job diff) / (N − 1)).
Alternation cancels drift in the machine's load; pairing cancels most of its noise.
Results go to stdout as Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import AXIS_WRAPPER, Sample, check_report, make_project, measure


def _python(tree: Path) -> str:
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{tree}: no .venv (run `make install` there first)")
    return str(python)


def _run(
    side: tuple[str, dict[str, str]],
    wrapper: Path,
    project: Path,
    self_file: Path,
    n: int,
    sandbox: str | None,
) -> Sample:
    python, env = side
    argv = [python, str(wrapper), "run", "--no-score", "--concurrency", "15"]
    if sandbox is not None:
        argv += ["--sandbox", sandbox]
    sample = measure(argv, project, self_file=self_file, extra_env=env)
    check_report(project, n, sandbox)
    return sample


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--b", type=Path, required=True, help="the tree after the change")
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--fixed-pairs", type=int, default=15)
    parser.add_argument("--sandbox", help="passed to axis run (none, bwrap): both sides")
    parser.add_argument(
        "--pythonpath",
        action="store_true",
        help="--a and --b are source folders (``src``) run by this interpreter on PYTHONPATH, "
        "not trees with a .venv each (git archive REV src | tar -x -C DIR)",
    )
    args = parser.parse_args()
    if args.pythonpath:
        pythons = {
            side: (sys.executable, {"PYTHONPATH": str(tree.resolve())})
            for side, tree in (("A", args.a), ("B", args.b))
        }
    else:
        pythons = {"A": (_python(args.a.resolve()), {}), "B": (_python(args.b.resolve()), {})}
    results: dict[str, dict[str, list[Sample]]] = {"N": {"A": [], "B": []}, "1": {"A": [], "B": []}}
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "axis_wrapper.py"
        wrapper.write_text(AXIS_WRAPPER)
        self_file = Path(tmp) / "self-cpu"
        for label, n, pairs in (("N", args.n, args.pairs), ("1", 1, args.fixed_pairs)):
            project = Path(tmp) / f"p{label}"
            make_project(project, n)
            for side in ("A", "B"):  # warm both trees' caches
                _run(pythons[side], wrapper, project, self_file, n, args.sandbox)
            for i in range(pairs):
                order = ("A", "B") if i % 2 == 0 else ("B", "A")
                for side in order:
                    sample = _run(pythons[side], wrapper, project, self_file, n, args.sandbox)
                    results[label][side].append(sample)
    _report(args, results)


def _paired(a: list[Sample], b: list[Sample], field: str) -> tuple[float, float, float]:
    diffs = [getattr(y, field) - getattr(x, field) for x, y in zip(a, b, strict=True)]
    return statistics.median(diffs), min(diffs), max(diffs)


def _report(args: argparse.Namespace, results: dict[str, dict[str, list[Sample]]]) -> None:
    print(
        f"Machine: {platform.platform()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load {os.getloadavg()[0]:.2f}"
    )
    print(f"A = {args.a}, B = {args.b}, sandbox {args.sandbox or 'default'}\n")
    print("| jobs | measure | A median | B median | paired B − A: median (min … max) |")
    print("|---|---|---|---|---|")
    for label, n in (("N", args.n), ("1", 1)):
        a, b = results[label]["A"], results[label]["B"]
        if not a:  # --fixed-pairs 0: no one-job runs
            continue
        for field, unit, scale in (("own", "ms/job", 1000 / n), ("total", "ms/job", 1000 / n),
                                   ("wall", "s", 1.0), ("rss", "MiB", 1.0)):  # fmt: skip
            if label == "1" and field in ("own", "total"):
                unit, scale = "ms", 1000.0
            med_a = statistics.median(getattr(s, field) for s in a) * scale
            med_b = statistics.median(getattr(s, field) for s in b) * scale
            mid, lo, hi = (v * scale for v in _paired(a, b, field))
            print(
                f"| {n} | {field} CPU ({unit}) | {med_a:.3f} | {med_b:.3f} | "
                f"{mid:+.3f} ({lo:+.3f} … {hi:+.3f}) |"
                if field in ("own", "total")
                else f"| {n} | {field} ({unit}) | {med_a:.2f} | {med_b:.2f} | "
                f"{mid:+.2f} ({lo:+.2f} … {hi:+.2f}) |"
            )

    if not results["1"]["A"]:
        return
    per_job = {}
    for field in ("own", "total"):
        many = _paired(results["N"]["A"], results["N"]["B"], field)[0]
        one = _paired(results["1"]["A"], results["1"]["B"], field)[0]
        per_job[field] = (many - one) / (args.n - 1) * 1000
    print(
        f"\nPer job beyond the fixed cost, B − A: own CPU {per_job['own']:+.3f} ms, "
        f"total CPU {per_job['total']:+.3f} ms (paired medians at N = {args.n} and N = 1)."
    )


if __name__ == "__main__":
    main()
