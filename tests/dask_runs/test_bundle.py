"""The config folder's bundle (no cluster): what goes in, its reproducible name, its bounds,
and unpacking it on a worker (once, whoever asks at the same time, only what it claims)."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from axis_eval.distributed import bundle
from axis_eval.distributed.bundle import EXCLUDED, build_bundle, unpack
from axis_eval.errors import PreflightError


def _tree(root: Path, *, reverse: bool = False) -> Path:
    """A config folder: a config, scenarios, a fixture, an executable script, a link in it
    (files written in either order: the bundle must not care)."""
    files = {
        "axis.config.json": '{"scenarios": "./scenarios"}\n',
        "scenarios/a.json": '{"name": "a"}\n',
        "scenarios/deep/b.json": '{"name": "b"}\n',
        "fixtures/seed.txt": "seed\n",
        "scripts/prepare.sh": "#!/bin/sh\necho prepared\n",
    }
    for name, text in sorted(files.items(), reverse=reverse):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "scripts" / "prepare.sh").chmod(0o755)
    (root / "fixtures" / "alias.txt").symlink_to("seed.txt")
    return root


def _contents(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's text, a link's target, a folder's ``/``."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            out[name] = "/"
        else:
            out[name] = path.read_text()
    return out


def _names(data: bytes, tmp_path: Path) -> set[str]:
    digest = hashlib.sha256(data).hexdigest()
    return set(_contents(unpack(data, digest, tmp_path / "names")))


# ---------------------------------------------------------------- the digest


def test_the_same_tree_gives_the_same_digest_wherever_and_whenever_it_was_written(
    tmp_path: Path,
) -> None:
    one = build_bundle(_tree(tmp_path / "one"))
    again = build_bundle(tmp_path / "one")
    elsewhere = build_bundle(_tree(tmp_path / "elsewhere" / "two", reverse=True))
    assert one.digest == again.digest == elsewhere.digest
    assert one.data == elsewhere.data
    assert one.digest == hashlib.sha256(one.data).hexdigest()
    assert (one.files, one.size) == (5, sum(len(t) for t in _contents(tmp_path / "one").values()
                                            if not t.startswith(("-> ", "/"))))  # fmt: skip


def test_touching_files_and_folders_keeps_the_digest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    before = build_bundle(root).digest
    for path in [root, *root.rglob("*")]:
        os.utime(path, (1_000_000, 1_000_000), follow_symlinks=False)
    assert build_bundle(root).digest == before


@pytest.mark.parametrize("change", ["content", "new file", "removed", "renamed", "mode"])
def test_any_change_a_job_could_see_changes_the_digest(tmp_path: Path, change: str) -> None:
    root = _tree(tmp_path / "proj")
    before = build_bundle(root).digest
    seed = root / "fixtures" / "seed.txt"
    if change == "content":
        seed.write_text("seeD\n")  # same size
    elif change == "new file":
        (root / "fixtures" / "more.txt").write_text("")
    elif change == "removed":
        (root / "scenarios" / "deep" / "b.json").unlink()
    elif change == "renamed":
        seed.rename(root / "fixtures" / "seed2.txt")
    else:
        (root / "scripts" / "prepare.sh").chmod(0o644)  # a script that no longer runs
    assert build_bundle(root).digest != before


# ---------------------------------------------------------------- what goes in


def test_excluded_folders_are_left_out_at_any_depth(tmp_path: Path) -> None:
    root = _tree(tmp_path / "proj")
    for folder in (".axis/reports/r1", ".git/objects", "node_modules/pkg", "sub/node_modules",
                   "scenarios/.git", "scripts/__pycache__", ".venv/bin"):  # fmt: skip
        (root / folder).mkdir(parents=True)
        (root / folder / "big.bin").write_bytes(b"x" * 1000)
    # Names that only look like excluded ones stay.
    (root / ".gitignore").write_text("*.log\n")
    (root / "sub" / "node_modules.txt").write_text("kept\n")
    made = build_bundle(root)
    names = _names(made.data, tmp_path)
    assert not [n for n in names if set(n.split("/")) & EXCLUDED], names
    assert {".gitignore", "sub/node_modules.txt", "scripts/prepare.sh"} <= names
    assert made.files == 7
    # Exactly as if the excluded folders were not there at all.
    plain = _tree(tmp_path / "plain")
    (plain / ".gitignore").write_text("*.log\n")
    (plain / "sub").mkdir()
    (plain / "sub" / "node_modules.txt").write_text("kept\n")
    assert build_bundle(plain).digest == made.digest


def test_links_out_of_the_folder_are_left_out_links_inside_kept(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not for workers\n")
    root = _tree(tmp_path / "proj")
    (root / "abs").symlink_to(outside)
    (root / "fixtures" / "up").symlink_to("../../secret.txt")
    (root / "fixtures" / "outdir").symlink_to(tmp_path)  # a folder out: not walked either
    (root / "abs-inside").symlink_to(root / "fixtures" / "seed.txt")  # absolute: not portable
    (root / "chain").symlink_to("abs")  # inside, but on to the outside
    (root / "scenarios-too").symlink_to("scenarios")
    names = _names(build_bundle(root).data, tmp_path)
    for left_out in ("abs", "fixtures/up", "fixtures/outdir", "abs-inside", "chain"):
        assert left_out not in names
    assert not [n for n in names if "secret" in n], names
    unpacked = unpack(build_bundle(root).data, build_bundle(root).digest, tmp_path / "w")
    assert (unpacked / "fixtures" / "alias.txt").read_text() == "seed\n"
    assert (unpacked / "scenarios-too" / "a.json").read_text() == '{"name": "a"}\n'


def test_a_hard_linked_file_goes_in_whole(tmp_path: Path) -> None:
    """A second name of an inode (``cp -al``, some package managers) is stored as a tar hard
    link, which was skipped: the file was missing on the workers."""
    root = _tree(tmp_path / "proj")
    os.link(root / "fixtures" / "seed.txt", root / "scenarios" / "seed-copy.txt")
    made = build_bundle(root)
    unpacked = unpack(made.data, made.digest, tmp_path / "w")
    assert (unpacked / "scenarios" / "seed-copy.txt").read_text() == "seed\n"
    assert (unpacked / "fixtures" / "seed.txt").read_text() == "seed\n"
    assert made.files == 6
    # The same content copied instead of linked: the same bundle.
    copied = _tree(tmp_path / "copied")
    shutil.copy(copied / "fixtures" / "seed.txt", copied / "scenarios" / "seed-copy.txt")
    assert build_bundle(copied).digest == made.digest


def test_an_empty_config_folder_is_an_empty_bundle(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    made = build_bundle(tmp_path / "empty")
    assert (made.files, made.size) == (0, 0)
    unpacked = unpack(made.data, made.digest, tmp_path / "w")
    assert unpacked == tmp_path / "w" / made.digest
    assert unpacked.is_dir() and list(unpacked.iterdir()) == []
    assert unpack(made.data, made.digest, tmp_path / "w") == unpacked


# ---------------------------------------------------------------- bounds


def test_too_many_files_is_a_preflight_error_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "proj")
    monkeypatch.setattr(bundle, "MAX_FILES", 5)
    assert build_bundle(root).files == 5  # the bound itself is fine
    data = root / "data"
    data.mkdir()
    for n in range(3):
        (data / f"{n}.csv").write_text("1\n")
    (root / "node_modules").mkdir()  # excluded files do not count
    for n in range(10):
        (root / "node_modules" / f"{n}.js").write_text("")
    with pytest.raises(PreflightError) as caught:
        build_bundle(root)
    assert str(root) in caught.value.message
    message = caught.value.message
    assert "it holds more than 5 files (largest: data (3 files, 0.0 MiB), " in message
    assert "node_modules" not in message.split("largest:")[1]  # excluded: not to blame
    assert caught.value.hint and ".axis" in caught.value.hint


def test_too_many_bytes_is_a_preflight_error_naming_the_biggest_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "proj")
    (root / "datasets").mkdir()
    (root / "datasets" / "huge.bin").write_bytes(b"\0" * 3 * 2**20)
    monkeypatch.setattr(bundle, "MAX_BYTES", 2**20)
    with pytest.raises(PreflightError) as caught:
        build_bundle(root)
    message = caught.value.message
    assert str(root) in message and "it holds more than 1 MiB" in message
    assert message.split("largest: ")[1].startswith("datasets (1 file, 3.0 MiB), "), message


# ---------------------------------------------------------------- unpacking


def test_unpack_is_idempotent(tmp_path: Path) -> None:
    made = build_bundle(_tree(tmp_path / "proj"))
    into = tmp_path / "worker" / "axis-bundles"
    first = unpack(made.data, made.digest, into)
    assert _contents(first) == _contents(tmp_path / "proj")
    assert os.access(first / "scripts" / "prepare.sh", os.X_OK)  # scripts still run
    marker = first / "fixtures" / "seed.txt"
    stamp = marker.stat().st_mtime_ns
    assert unpack(made.data, made.digest, into) == first
    assert marker.stat().st_mtime_ns == stamp  # not unpacked again
    assert [p.name for p in into.iterdir()] == [made.digest]


def test_unpack_is_safe_when_many_ask_at_once(tmp_path: Path) -> None:
    made = build_bundle(_tree(tmp_path / "proj"))
    expected = _contents(tmp_path / "proj")
    callers = 8
    for attempt in range(5):
        into = tmp_path / f"bundles-{attempt}"
        start = threading.Barrier(callers)

        def one(_: int, into: Path = into, start: threading.Barrier = start) -> Path:
            start.wait(timeout=10)
            return unpack(made.data, made.digest, into)

        with ThreadPoolExecutor(callers) as pool:
            got = set(pool.map(one, range(callers), timeout=30))
        assert got == {into / made.digest}
        assert _contents(into / made.digest) == expected
        assert [p.name for p in into.iterdir()] == [made.digest]  # no scratch left behind


def test_unpack_refuses_data_that_is_not_its_digest(tmp_path: Path) -> None:
    made = build_bundle(_tree(tmp_path / "proj"))
    other = build_bundle(_tree(tmp_path / "other", reverse=True) / "scenarios")
    into = tmp_path / "w"
    with pytest.raises(ValueError, match=made.digest[:12]):
        unpack(other.data, made.digest, into)
    with pytest.raises(ValueError, match=made.digest[:12]):
        middle = len(made.data) // 2
        flipped = made.data[:middle] + bytes([made.data[middle] ^ 1]) + made.data[middle + 1 :]
        unpack(flipped, made.digest, into)
    assert not (into / made.digest).exists()
    assert not into.exists() or list(into.iterdir()) == []


def test_old_bundles_are_pruned_but_the_recent_and_those_in_use(tmp_path: Path) -> None:
    """A long-lived worker serving many configs keeps the few bundles used last (and every
    one a run here holds), not one per config edit forever."""
    into = tmp_path / "axis-bundles"
    made = []
    for n in range(8):
        project = tmp_path / f"proj-{n}"
        (project / "scenarios").mkdir(parents=True)
        (project / "scenarios" / "s.json").write_text(f'{{"n": {n}}}')
        made.append(build_bundle(project))
        unpack(made[-1].data, made[-1].digest, into)
        os.utime(into / made[-1].digest, (1_000 + n, 1_000 + n))  # oldest first
    unpack(made[0].data, made[0].digest, into)  # used again now: the most recent
    (into / ".scratch-of-an-unpack").mkdir()  # another caller's unpack in progress
    removed = bundle.prune(into, in_use={made[1].digest}, keep=3)
    kept = {p.name for p in into.iterdir()}
    # Kept: in use (1), the three used last (0 just now, then 7 and 6), the scratch.
    assert kept == {made[i].digest for i in (0, 1, 6, 7)} | {".scratch-of-an-unpack"}
    assert sorted(removed) == sorted(made[i].digest for i in (2, 3, 4, 5))
    assert bundle.prune(tmp_path / "missing", in_use=set()) == []
