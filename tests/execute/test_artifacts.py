"""Artifact collection from a workspace the agent controlled: links, FIFOs, depth, size."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from axis_eval._util.tree_removal import remove_tree
from axis_eval.execute.artifacts import MAX_DEPTH, collect_artifacts


def collected(workspace: Path, *patterns: str, cap: int = 1 << 20) -> dict[str, bytes | None]:
    return {a.path: a.data for a in collect_artifacts(workspace, patterns, cap_bytes=cap)}


def test_matching_regular_files_are_collected_and_links_are_not(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "secrets").mkdir(parents=True)
    (host / "secrets" / "id.txt").write_text("HOST SECRET")
    work = tmp_path / "work"
    (work / "out" / "deep").mkdir(parents=True)
    (work / "out" / "a.json").write_text("{}")
    (work / "out" / "deep" / "b.txt").write_text("b")
    (work / "top.txt").write_text("t")
    (work / "linked-dir").symlink_to(host / "secrets")
    (work / "linked.txt").symlink_to(host / "secrets" / "id.txt")
    os.mkfifo(work / "pipe.txt")  # read, it would block the run's event loop for good
    assert collected(work, "**/*.txt", "out/*.json") == {
        "out/a.json": b"{}",
        "out/deep/b.txt": b"b",
        "top.txt": b"t",
    }
    assert collected(work, "out/*") == {"out/a.json": b"{}"}


def test_a_workspace_the_agent_made_a_link_yields_nothing(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "id.txt").write_text("HOST SECRET")
    work = tmp_path / "work"
    work.symlink_to(host)  # `mv work elsewhere; ln -s /root/.ssh work` inside its job
    assert collect_artifacts(work, ["*.txt"]) == []


def test_a_folder_swapped_for_a_link_after_the_walk_is_not_read_through(
    tmp_path: Path,
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "r.txt").write_text("HOST SECRET")
    work = tmp_path / "work"
    stop = threading.Event()
    seen: set[bytes] = set()
    for _ in range(200):
        (work / "out").mkdir(parents=True, exist_ok=True)
        (work / "out" / "r.txt").write_text("mine")

        def swap() -> None:  # another job holding a descriptor of the workspace
            while not stop.is_set():
                try:
                    (work / "out").rename(work / "was-out")
                    (work / "out").symlink_to(host)
                    return
                except OSError:
                    return

        racer = threading.Thread(target=swap)
        racer.start()
        seen.update(a.data or b"" for a in collect_artifacts(work, ["out/*.txt"]))
        stop.set()
        racer.join()
        stop.clear()
        for leftover in (work / "out", work / "was-out"):
            if leftover.is_symlink():
                leftover.unlink()
            elif leftover.is_dir():
                (leftover / "r.txt").unlink(missing_ok=True)
                leftover.rmdir()
    assert b"HOST SECRET" not in seen
    assert (host / "r.txt").read_text() == "HOST SECRET"


def test_depth_and_size_are_bounded(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fd = os.open(work, os.O_RDONLY)
    for level in range(1500):  # deeper than Python's recursion: os.walk gave up here
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
        if level in (10, MAX_DEPTH + 5):
            with open(os.open("f.txt", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd), "w") as f:
                f.write(str(level))
    os.close(fd)
    before = len(os.listdir("/proc/self/fd"))
    found = collected(work, "**/*.txt")
    assert list(found.values()) == [b"10"]  # the deeper one is past MAX_DEPTH
    assert len(os.listdir("/proc/self/fd")) == before
    (work / "big.txt").write_bytes(b"x" * 1000)
    (work / "small.txt").write_bytes(b"y" * 10)
    notes = {a.path: (a.data, a.note) for a in collect_artifacts(work, ["*.txt"], cap_bytes=500)}
    assert notes["small.txt"] == (b"y" * 10, None)
    assert notes["big.txt"][0] is None and "exceed 500 bytes" in (notes["big.txt"][1] or "")
    assert remove_tree(str(work))  # pytest's own clean-up of old tmp folders recurses
