"""The harness's ``fs/read_text_file`` and ``fs/write_text_file`` for an ACP agent: only the
job's own regular files, whatever the agent swaps meanwhile."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import acp
import pytest

from axis_eval.adapters import _acp_client
from axis_eval.adapters._acp_client import AcpClient


def job(tmp_path: Path) -> tuple[Path, Path, AcpClient]:
    """A workspace, a folder outside it holding a secret, and a client for the workspace."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text("HOST SECRET")
    (outside / "keep.txt").write_text("kept")
    return work, outside, AcpClient([str(work)])


async def test_reads_and_writes_stay_in_the_job(tmp_path: Path) -> None:
    work, outside, client = job(tmp_path)
    await client.write_text_file("s", str(work / "new" / "deeper" / "a.txt"), "one\r\ntwo\n")
    assert (work / "new" / "deeper" / "a.txt").read_bytes() == b"one\r\ntwo\n"
    read = await client.read_text_file("s", str(work / "new" / "deeper" / "a.txt"), line=2)
    assert read.content == "two\n"
    (work / "inside-link").symlink_to(work / "new")  # a link that stays inside: followed
    read = await client.read_text_file("s", str(work / "inside-link" / "deeper" / "a.txt"))
    assert read.content == "one\ntwo\n"
    (work / "out-link").symlink_to(outside)
    for call in (
        client.read_text_file("s", str(work / "out-link" / "f.txt")),
        client.write_text_file("s", str(work / "out-link" / "keep.txt"), "x"),
        client.read_text_file("s", str(work)),
    ):
        with pytest.raises(acp.RequestError):
            await call
    assert (outside / "keep.txt").read_text() == "kept"


async def test_a_fifo_or_a_file_too_large_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, _, client = job(tmp_path)
    os.mkfifo(work / "pipe")
    for call in (
        client.read_text_file("s", str(work / "pipe")),
        client.write_text_file("s", str(work / "pipe"), "x"),
    ):
        with pytest.raises(acp.RequestError):
            await asyncio.wait_for(call, 5)
    monkeypatch.setattr(_acp_client, "MAX_READ_BYTES", 10)
    (work / "big.txt").write_text("x" * 11)
    with pytest.raises(acp.RequestError):
        await client.read_text_file("s", str(work / "big.txt"))


async def test_a_folder_swapped_for_a_link_after_the_check_leads_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work, outside, client = job(tmp_path)
    (work / "sub" / "f.txt").write_text("mine")
    (work / "sub" / "keep.txt").write_text("mine")
    real_realpath = os.path.realpath

    def the_agent_wins_the_race(path: str) -> str:
        resolved = real_realpath(path)  # checked inside the workspace
        if path.startswith(str(work / "sub")) and not (work / "sub").is_symlink():
            (work / "sub").rename(work / "real-sub")  # then swapped before the open
            (work / "sub").symlink_to(outside)
        return resolved

    monkeypatch.setattr(_acp_client.os.path, "realpath", the_agent_wins_the_race)
    with pytest.raises(acp.RequestError):
        await client.read_text_file("s", str(work / "sub" / "f.txt"))
    (work / "sub").unlink()
    (work / "real-sub").rename(work / "sub")
    with pytest.raises(acp.RequestError):
        await client.write_text_file("s", str(work / "sub" / "keep.txt"), "written")
    assert (outside / "keep.txt").read_text() == "kept"
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt", "keep.txt"]


async def test_a_root_the_agent_made_a_link_before_the_client_is_built_is_never_followed(
    tmp_path: Path,
) -> None:
    """The agent starts before the harness builds its client, and can write in its job's
    folder: ``mv home h; ln -s /etc home`` may come first."""
    job_root, outside = tmp_path / "job", tmp_path / "outside"
    (job_root / "work").mkdir(parents=True)
    (job_root / "home-real").mkdir()
    outside.mkdir()
    (outside / "f.txt").write_text("HOST SECRET")
    (job_root / "home").symlink_to(outside)
    client = AcpClient([str(job_root / "work"), str(job_root / "home")])
    for path in (job_root / "home" / "f.txt", outside / "f.txt"):
        with pytest.raises(acp.RequestError):
            await client.read_text_file("s", str(path))
        with pytest.raises(acp.RequestError):
            await client.write_text_file("s", str(path), "PWNED")
    assert (outside / "f.txt").read_text() == "HOST SECRET"
    await client.write_text_file("s", str(job_root / "work" / "ok.txt"), "fine")
    assert (job_root / "work" / "ok.txt").read_text() == "fine"


async def test_bad_text_or_paths_are_refused_before_any_file_is_touched(tmp_path: Path) -> None:
    work, _, client = job(tmp_path)
    (work / "kept.txt").write_text("kept")
    with pytest.raises(acp.RequestError):
        await client.write_text_file("s", str(work / "kept.txt"), "lone \udcff surrogate")
    assert (work / "kept.txt").read_text() == "kept"
    with pytest.raises(acp.RequestError):
        await client.read_text_file("s", str(work / "x\0y"))
