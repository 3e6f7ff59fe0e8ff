"""Removing what a hostile agent wrote: any depth, never through a link, never raising."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from axis_eval._util import tree_removal
from axis_eval._util.tree_removal import remove_tree

SRC = Path(__file__).resolve().parents[1] / "src"


def deep_chain(top: Path, depth: int) -> None:
    """``top/d/d/.../d`` ``depth`` folders deep, a file every 100 levels (built through
    descriptors: the path of the deepest is longer than PATH_MAX)."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for level in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
            if level % 100 == 0:
                os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    finally:
        os.close(fd)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_tree_deeper_than_rmtree_can_go_is_removed_with_few_descriptors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = tmp_path / "deep"
    deep_chain(top, 3000)
    with pytest.raises(RecursionError):  # what the job folders' removal used before
        shutil.rmtree(top, ignore_errors=True)
    most = 0
    real_open = tree_removal._open_dir

    def counting(name: str, dir_fd: int, dev: int | None = None) -> int:
        nonlocal most
        most = max(most, open_fds())
        return real_open(name, dir_fd, dev)

    monkeypatch.setattr(tree_removal, "_open_dir", counting)
    before = open_fds()
    assert remove_tree(str(top))
    assert not top.exists() and list(tmp_path.iterdir()) == []
    assert open_fds() == before
    # Each open folder holds its descriptor and its listing's.
    assert most <= before + 2 * tree_removal.MAX_OPEN + 2, (most, before)


def test_links_are_removed_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "x").write_text("x")
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "link").symlink_to(outside)
    (tree / "a" / "b" / "file-link").symlink_to(outside / "keep" / "x")
    (tree / "top-link").symlink_to(outside / "keep")
    assert remove_tree(str(tree))
    assert (outside / "keep" / "x").read_text() == "x"
    link = tmp_path / "link-to-outside"
    link.symlink_to(outside)
    assert remove_tree(str(link))  # the link goes, not what it leads to
    assert not link.is_symlink() and (outside / "keep" / "x").read_text() == "x"
    assert remove_tree(str(tmp_path / "missing"))
    assert remove_tree(tmp_path / "missing")  # a Path too
    assert not remove_tree(str(tmp_path / "x\0y"))  # a NUL: no such name, and no raise
    (tmp_path / "kept" / "sub").mkdir(parents=True)
    assert not remove_tree(str(tmp_path / "kept" / "sub" / ".."))  # never by "." or ".."
    assert (tmp_path / "kept" / "sub").is_dir()
    single = tmp_path / "file"
    single.write_text("x")
    assert remove_tree(str(single)) and not single.exists()


def test_a_folder_swapped_for_a_link_while_it_is_removed_leads_nowhere(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    for n in range(50):
        (outside / f"keep-{n}").write_text("x")
    for round_ in range(20):
        tree = tmp_path / f"tree-{round_}"
        for n in range(30):
            (tree / f"sub-{n}" / "inner").mkdir(parents=True)
            (tree / f"sub-{n}" / "inner" / "f").write_text("x")
        stop = threading.Event()

        def swap(tree: Path = tree, stop: threading.Event = stop) -> None:
            while not stop.is_set():  # a hostile process racing the removal
                for n in range(30):
                    sub = tree / f"sub-{n}"
                    try:
                        sub.rename(tree / f"gone-{n}")
                        sub.symlink_to(outside)
                    except OSError:
                        pass

        racer = threading.Thread(target=swap)
        racer.start()
        try:
            remove_tree(str(tree))
        finally:
            stop.set()
            racer.join()
        remove_tree(str(tree))
        assert not tree.exists()
        assert sorted(p.name for p in outside.iterdir()) == sorted(f"keep-{n}" for n in range(50))


REMOVE_AS_NOBODY = """
import sys
sys.path.insert(0, sys.argv[1])
from axis_eval._util.tree_removal import remove_tree
print(remove_tree(sys.argv[2]))
"""


def removed_as_nobody(tree: Path) -> str:
    """What ``remove_tree(tree)`` returns run as nobody (uid 65534), or its error."""
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    done = subprocess.run(
        [*nobody, sys.executable, "-c", REMOVE_AS_NOBODY, str(SRC), str(tree)],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the removal as another user")
def test_folders_made_unreadable_by_their_owner_are_removed() -> None:
    """As a user without root's override (root reads a mode-000 folder anyway), in a folder
    that user can reach."""
    base = Path(tempfile.mkdtemp(prefix="axis-test-removal-", dir="/tmp"))
    try:
        base.chmod(0o755)
        tree = base / "tree"
        (tree / "locked" / "inner").mkdir(parents=True)
        (tree / "locked" / "inner" / "f").write_text("x")
        for path in (base, tree, tree / "locked", tree / "locked" / "inner"):
            os.chown(path, 65534, 65534)
        (tree / "locked" / "inner").chmod(0)
        (tree / "locked").chmod(0)
        assert removed_as_nobody(tree) == "True"
        assert not tree.exists()
        # A mount inside, made unreadable: left as it is, its mode too.
        mount = tree / "a" / "mounted"
        mount.mkdir(parents=True)
        for path in (tree, tree / "a"):
            os.chown(path, 65534, 65534)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m,mode=000,uid=65534,gid=65534", "t", mount],
            check=True,
        )
        try:
            assert removed_as_nobody(tree) == "False"
            assert (mount.stat().st_mode & 0o777) == 0
        finally:
            subprocess.run(["umount", str(mount)], check=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a filesystem")
def test_another_filesystem_inside_is_left_alone(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    mount = tree / "a" / "mounted"
    mount.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        (mount / "theirs").write_text("x")
        (tree / "a" / "ours").write_text("x")
        assert not remove_tree(str(tree))  # what holds the mount stays
        assert (mount / "theirs").read_text() == "x"
        assert not (tree / "a" / "ours").exists()
    finally:
        subprocess.run(["umount", str(mount)], check=True)
    assert remove_tree(str(tree)) and not tree.exists()
