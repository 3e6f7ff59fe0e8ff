#!/usr/bin/env python3
"""``axis view``'s memory over many large reports: the server process's peak RSS after a tour.

Run by hand (never from tests), after ``bench/view_render.py --keep DIR`` built a set:

    .venv/bin/python bench/view_memory.py DIR/view-1000x1 [--copies 30]

It makes ``--copies`` hard-linked copies of the set's newest (largest) report in a scratch
project (no extra disk), then, in this process, asks ``App.get`` for the list, every
report's page and one agent's history, and prints the peak RSS (``ru_maxrss``) and the
time. ``PYTHONPATH=OTHER/src`` (``git archive REV src``) measures an earlier tree's viewer.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", type=Path, help="a project folder view_render.py built")
    parser.add_argument("--copies", type=int, default=30)
    args = parser.parse_args()
    reports = args.set / ".axis" / "reports"
    newest = max(reports.iterdir(), key=lambda p: (p / "report.json").stat().st_size)
    import axis_eval
    from axis_eval.view import App, Catalog  # the tree PYTHONPATH names, if any

    with tempfile.TemporaryDirectory(prefix="axis-view-mem-", dir=args.set.parent) as tmp:
        root = Path(tmp) / "reports"
        root.mkdir()
        for i in range(args.copies):
            subprocess.run(["cp", "-al", str(newest), str(root / f"copy-{i:03d}")], check=True)
        catalog = Catalog([root])
        app = App(catalog)
        ids = sorted(catalog.folders())
        agent = catalog.head(ids[0]) if hasattr(catalog, "head") else None
        name = agent.results[0].agent_name if agent is not None else "claude-code"
        t0 = time.perf_counter()
        for target in ["/", *(f"/report/{r}" for r in ids), f"/history/agent?agent={name}"]:
            status = app.get(target).status
            if status != 200:
                print(f"{target}: {status}", file=sys.stderr)
                return 1
        wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = (newest / "report.json").stat().st_size / 1e6
    print(
        f"{Path(axis_eval.__file__).parents[1]}: {args.copies} reports of {size:.1f} MB "
        f"report.json, list + every report page + agent history: peak RSS {peak:,.0f} MiB, "
        f"{wall:.1f} s (load {os.getloadavg()[0]:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
