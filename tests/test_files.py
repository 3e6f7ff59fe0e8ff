"""The one atomic writer (harness reports and caches, the task runner's markers)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from axis_eval import files
from axis_eval.files import atomic_write_bytes, atomic_write_chunks, atomic_write_text


def test_writes_are_private_unless_a_mode_is_given(tmp_path: Path) -> None:
    private = tmp_path / "new" / "folder" / "a.json"  # missing folders are created
    atomic_write_text(private, "{}\n")
    assert private.read_text() == "{}\n"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    shared = tmp_path / "marker"
    atomic_write_bytes(shared, b"done", durable=True, mode=0o644)
    assert shared.read_bytes() == b"done"
    assert stat.S_IMODE(shared.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["marker", "new"]  # no leftovers


def test_small_chunks_are_gathered_and_large_ones_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A manifest comes in hundreds of parts: one write(2) each was most of writing it.
    sizes: list[int] = []
    real_write = os.write

    def counting(fd: int, data: bytes) -> int:
        sizes.append(len(memoryview(data)))
        return real_write(fd, data)

    monkeypatch.setattr(files.os, "write", counting)
    parts = [f"part {i},".encode() for i in range(2000)]
    atomic_write_chunks(tmp_path / "small", iter(parts))
    assert (tmp_path / "small").read_bytes() == b"".join(parts)
    assert len(sizes) == 1
    sizes.clear()
    big = [bytes([65 + i % 26]) * 100_000 for i in range(30)]  # 3 MB in 100 kB chunks
    atomic_write_chunks(tmp_path / "big", iter(big))
    assert (tmp_path / "big").read_bytes() == b"".join(big)
    assert 10 <= len(sizes) <= 12 and max(sizes) < 400_000  # gathered, never all at once
    sizes.clear()
    mixed = [b"head,", b"x" * 1_000_000, b"tail"]  # a large chunk goes as it is, not copied
    atomic_write_chunks(tmp_path / "mixed", iter(mixed))
    assert (tmp_path / "mixed").read_bytes() == b"".join(mixed)
    assert sizes == [5, 1_000_000, 4]
