#!/usr/bin/env python3
"""A job's file pattern alone, on one disk: what the kernel charges the harness for it.

Run by hand (never from tests):  .venv/bin/python bench/folder_pattern.py [--dir DIR]
                                  [--jobs 600] [--rate 45] [--rounds 3]

Each "job" makes its four folders (root, work, home, tmp), one report folder and three small
files in it, then removes the four folders, as an instant job does; ``--rate`` jobs a second
(a run's pace at concurrency 15 here). Each round runs it twice, the folders removed at each
job's end, then all at the end, and removes everything after. Printed: the process CPU per
job of making, of removing, and both. On ext4 without a journal (this VM's root disk) every
new inode skips the inodes removed in the minutes before, so the cost grows round after
round; with a journal, or on tmpfs, it stays flat (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time


def make_job_folders(root: str) -> list[str]:
    """A job's four folders under ``root`` (made), in the order they are removed."""
    os.mkdir(root)
    inner = [f"{root}/{name}" for name in ("work", "home", "tmp")]
    for folder in inner:
        os.mkdir(folder)
    return [*inner, root]


def one_run(base_dir: str, jobs: int, rate: float, *, at_end: bool) -> tuple[float, float]:
    base = tempfile.mkdtemp(prefix="folder-pattern-", dir=base_dir)
    os.mkdir(f"{base}/report")
    making = removing = 0.0
    pending: list[str] = []
    start = time.monotonic()
    for i in range(jobs):
        t = time.process_time()
        folders = make_job_folders(f"{base}/{i}")
        os.mkdir(f"{base}/report/{i}")
        for name in ("result.json", "raw.txt", "transcript.json"):
            fd = os.open(f"{base}/report/{i}/{name}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.write(fd, b"x" * 300)
            os.close(fd)
        making += time.process_time() - t
        t = time.process_time()
        if at_end:
            pending += folders
        else:
            for folder in folders:
                os.rmdir(folder)
        removing += time.process_time() - t
        pause = start + (i + 1) / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    t = time.process_time()
    for folder in pending:
        os.rmdir(folder)
    removing += time.process_time() - t
    shutil.rmtree(base)
    return making / jobs * 1e6, removing / jobs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--jobs", type=int, default=600)
    parser.add_argument("--rate", type=float, default=45.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.dir}: {args.jobs} jobs at {args.rate:.0f}/s, {args.rounds} rounds")
    for _ in range(args.rounds):
        for at_end in (False, True):
            making, removing = one_run(args.dir, args.jobs, args.rate, at_end=at_end)
            when = "at the end" if at_end else "at once   "
            print(
                f"removed {when}: making {making:.0f} µs, removing {removing:.0f} µs, "
                f"{making + removing:.0f} µs a job",
                flush=True,
            )
        time.sleep(5)


if __name__ == "__main__":
    main()
