"""``axis view`` as a user runs it: the installed ``axis`` in a child process, over a real
project with two synthetic reports (``bench/synth_report.py``).

The static export prints its counts and writes the pages; a FOLDER that is not a folder and
a taken ``--port`` exit 2 with a one-line ``error:`` (no traceback); served on ``--port 0``,
the first stdout line names the URL, the URL answers with the list, and SIGINT (Ctrl-C)
ends it with exit 0 and nothing left listening.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from urllib.request import urlopen

import pytest

from helpers.processes import wait_for
from report.html.helpers import load_synth

SRC = Path(__file__).resolve().parents[2] / "src"
URL_LINE = re.compile(
    r"axis view: (\d+) report\(s\) at (http://127\.0\.0\.1:(\d+)/) \(Ctrl-C to stop\)"
)
ROW = re.compile(r'<tr class="report" data-id="([^"]+)"')


def axis_command() -> list[str]:
    """The ``axis`` console script beside this Python (the venv's), else ``-m axis_eval``."""
    exe = Path(sys.executable).with_name("axis")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "axis_eval"]


ENV = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}


def run_axis(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*axis_command(), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A project with two reports (ids two days apart: no waiting for the clock)."""
    root = tmp_path_factory.mktemp("view-cli") / "project"
    synth = load_synth()
    real = synth.new_report_id
    ids = []
    try:
        for seed, day in enumerate((10, 11), 1):
            when = datetime(2026, 3, day, 9, 0, tzinfo=UTC)
            synth.new_report_id = lambda root, now=None, when=when: real(root, when)
            folder = synth.write_synthetic_report(root, 6, runs_per_pair=3, seed=seed)
            ids.append(folder.name)
    finally:
        synth.new_report_id = real
    return root, ids


def _listening(port: int) -> bool:
    """Is anything on this machine listening on TCP ``port`` (IPv4 or IPv6)?"""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                return True
    return False


def test_export_prints_its_counts_and_writes_the_pages(
    project: tuple[Path, list[str]], tmp_path: Path
) -> None:
    root, ids = project
    out = tmp_path / "site"
    done = run_axis("view", "--export", str(out), "-c", str(root), cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert done.stdout == f"view: {len(ids)} report(s), {len(files)} page(s) → {out}\n"
    index = (out / "index.html").read_text()
    assert ROW.findall(index) == sorted(ids, reverse=True)  # newest first
    assert all((out / f"report-{rid}-1.html").is_file() for rid in ids)
    one = tmp_path / "one"  # a report folder given directly
    done = run_axis(
        "view", str(root / ".axis" / "reports" / ids[0]), "--export", str(one), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("view: 1 report(s), ")
    assert ROW.findall((one / "index.html").read_text()) == [ids[0]]


def test_a_project_without_reports_yet_is_an_empty_list(tmp_path: Path) -> None:
    (tmp_path / "axis.config.json").write_text('{"agents": []}')
    out = tmp_path / "site"
    done = run_axis("view", "--export", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("view: 0 report(s), ")
    assert ROW.findall((out / "index.html").read_text()) == []
    assert not (tmp_path / ".axis").exists()  # the viewer creates nothing in the project


@pytest.mark.parametrize("what", ["missing", "a file"])
def test_a_folder_that_is_not_one_exits_2(tmp_path: Path, what: str) -> None:
    target = tmp_path / "nothing-here"
    if what == "a file":
        target.write_text("not a folder")
    done = run_axis("view", str(target), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: axis view: {target}: not a folder\n"), done.stderr
    assert "Traceback" not in done.stderr


def test_serves_the_list_until_sigint(project: tuple[Path, list[str]], tmp_path: Path) -> None:
    root, ids = project
    proc = subprocess.Popen(
        [*axis_command(), "view", "-c", str(root), "--port", "0"],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C's disposition in a terminal, whatever this test's parent ignores
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        line = proc.stdout.readline() if ready else ""
        found = URL_LINE.fullmatch(line.rstrip("\n"))
        assert found, f"first line {line!r}; stderr: {proc.stderr.read() if not ready else ''}"
        assert int(found[1]) == len(ids)
        url, port = found[2], int(found[3])
        with urlopen(url, timeout=10) as got:
            assert got.status == 200 and ROW.findall(got.read().decode()) == sorted(
                ids, reverse=True
            )
        with urlopen(f"{url}report/{ids[0]}", timeout=10) as got:
            assert got.status == 200
        assert _listening(port)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0  # Ctrl-C is how it is meant to stop: a clean exit
        stderr = proc.stderr.read()
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    wait_for(lambda: not _listening(port), timeout=5, what=f"port {port} closed")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_taken_port_exits_2(project: tuple[Path, list[str]], tmp_path: Path) -> None:
    root, _ = project
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_axis("view", "-c", str(root), "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""  # no URL printed
    assert done.stderr.startswith(f"error: axis view: cannot listen on 127.0.0.1:{port}: "), (
        done.stderr
    )
    assert "Traceback" not in done.stderr
