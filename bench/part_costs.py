#!/usr/bin/env python3
"""What one part of ``axis run`` truly costs the harness: the run with that part knocked out.

Run by hand (never from tests), with nothing else running:

    env -u PYTHONDONTWRITEBYTECODE .venv/bin/python bench/part_costs.py [--n 300] [--reps 4]
        [--sandbox bwrap] [--parts html,rmdir,save,result,raw,transcript]

A profiler inflates Python-heavy code and cannot see what the kernel spends on a file's
creation while fifteen agents thrash the caches; taking a part away can. For N instant jobs
(``bench/overhead.py``'s project and agent) it runs ``axis run --no-score`` as it is and
with each part replaced by nothing, alternating, and prints the harness's own user and
system CPU (``RUSAGE_SELF`` at exit) per job that each part costs: the medians' difference,
divided by N. The runs without a part write incomplete reports: only the CPU is compared.

The parts are patched by their names in ``src/`` (this script follows the code: a renamed
function makes its part fail loudly, never measure nothing):
- ``html``: the report page at the end (``pipeline.engine._write_html``);
- ``rmdir``: removing each job's empty folders (``JobDirs.remove_if_empty``);
- ``save``: a run's folder in the report (``runs.writer.save_run``, the run entry kept);
- ``result``, ``raw``, ``transcript``: one file of it (``result.json``, ``raw.txt``,
  ``transcript.json``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import make_project

WRAPPER = r"""
import atexit, os, resource, sys
def _cpu(pid=os.getpid(), out=os.environ["PART_COSTS_OUT"]):
    if os.getpid() == pid:
        u = resource.getrusage(resource.RUSAGE_SELF)
        with open(out, "w") as f:
            f.write(f"{u.ru_utime} {u.ru_stime}")
atexit.register(_cpu)
part = os.environ.get("PART_COSTS_PART", "")
if part == "html":
    import axis_eval.pipeline.engine as engine
    assert hasattr(engine, "_write_html")
    engine._write_html = lambda *a, **k: None
elif part == "rmdir":
    from axis_eval.execute.workspace import JobDirs
    assert hasattr(JobDirs, "remove_if_empty")
    JobDirs.remove_if_empty = lambda self: True
elif part == "save":
    import axis_eval.runs.writer as writer
    from axis_eval.runs import run_entry
    assert hasattr(writer, "save_run")
    writer.save_run = lambda store, outcome, *, sparse_index=True, folder=None: (
        run_entry.from_outcome(outcome, dir=folder, artifacts=[])
    )
elif part in ("result", "raw", "transcript"):
    from axis_eval.runs.store import ReportStore
    name = {"result": "result.json", "raw": "raw.txt", "transcript": "transcript.json"}[part]
    write_json, write_text = ReportStore.write_json, ReportStore.write_text
    def json_but(self, relative, value, **kw):
        if not relative.endswith(name):
            write_json(self, relative, value, **kw)
    def text_but(self, relative, text):
        if not relative.endswith(name):
            write_text(self, relative, text)
    ReportStore.write_json, ReportStore.write_text = json_but, text_but
elif part:
    raise SystemExit(f"unknown part {part!r}")
sys.argv = ["axis", *sys.argv[1:]]
from axis_eval.cli.main import main
sys.exit(main())
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--parts", default="html,rmdir,save,result,raw,transcript")
    args = parser.parse_args()
    parts = ["", *args.parts.split(",")]
    cpu: dict[str, list[tuple[float, float]]] = {p: [] for p in parts}
    with tempfile.TemporaryDirectory() as tmp:
        project, out = Path(tmp) / "project", Path(tmp) / "cpu"
        make_project(project, args.n)
        argv = [sys.executable, "-c", WRAPPER, "run", "--no-score", "--sandbox", args.sandbox]
        for _ in range(args.reps):
            for part in parts:
                env = {**os.environ, "PART_COSTS_OUT": str(out), "PART_COSTS_PART": part}
                subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
                user, system = map(float, out.read_text().split())
                cpu[part].append((user, system))
    base_user = statistics.median(u for u, _ in cpu[""])
    base_sys = statistics.median(s for _, s in cpu[""])
    print(f"N = {args.n}, sandbox {args.sandbox}, {args.reps} runs each; load now "
          f"{os.getloadavg()[0]:.1f}\n")  # fmt: skip
    print("| part knocked out | user CPU (s) | system CPU (s) | the part's user / system per job |")
    print("|---|---|---|---|")
    for part in parts:
        user = statistics.median(u for u, _ in cpu[part])
        system = statistics.median(s for _, s in cpu[part])
        du, ds = (base_user - user) / args.n * 1e3, (base_sys - system) / args.n * 1e3
        per = f"{du:+.3f} / {ds:+.3f} ms"
        print(f"| {part or '(none: the whole run)'} | {user:.3f} | {system:.3f} | "
              f"{'–' if not part else per} |")  # fmt: skip


if __name__ == "__main__":
    main()
