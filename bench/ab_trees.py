#!/usr/bin/env python3
"""Paired A/B of two source trees' harness overhead: does a change make axis-eval slower?

Run by hand (never from tests), with nothing else writing to the disk:

    .venv/bin/python bench/ab_trees.py --a /path/to/old-clone --b . [--n 150] [--pairs 8]

Each tree needs its own ``.venv`` (``make install`` there). For N instant jobs
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


def _run(tree_python: str, wrapper: Path, project: Path, self_file: Path, n: int) -> Sample:
    sample = measure(
        [tree_python, str(wrapper), "run", "--no-score", "--concurrency", "15"],
        project,
        self_file=self_file,
    )
    check_report(project, n)
    return sample


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--a", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--b", type=Path, required=True, help="the tree after the change")
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--fixed-pairs", type=int, default=15)
    args = parser.parse_args()
    pythons = {"A": _python(args.a.resolve()), "B": _python(args.b.resolve())}
    results: dict[str, dict[str, list[Sample]]] = {"N": {"A": [], "B": []}, "1": {"A": [], "B": []}}
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = Path(tmp) / "axis_wrapper.py"
        wrapper.write_text(AXIS_WRAPPER)
        self_file = Path(tmp) / "self-cpu"
        for label, n, pairs in (("N", args.n, args.pairs), ("1", 1, args.fixed_pairs)):
            project = Path(tmp) / f"p{label}"
            make_project(project, n)
            _run(pythons["A"], wrapper, project, self_file, n)  # warm both trees' caches
            _run(pythons["B"], wrapper, project, self_file, n)
            for i in range(pairs):
                order = ("A", "B") if i % 2 == 0 else ("B", "A")
                for side in order:
                    results[label][side].append(_run(pythons[side], wrapper, project, self_file, n))
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
    print(f"A = {args.a}, B = {args.b}\n")
    print("| jobs | measure | A median | B median | paired B − A: median (min … max) |")
    print("|---|---|---|---|---|")
    for label, n in (("N", args.n), ("1", 1)):
        a, b = results[label]["A"], results[label]["B"]
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
