"""`make test` relies on ``--dist loadgroup``: tests marked ``xdist_group("docker")`` share
one private dockerd (its data root is one folder), so they must all run on one worker.

pytest 9.2 with pytest-xdist 3.8 dropped the group silently (the group suffix went to a field
pytest no longer reads); this runs a small suite the way the Makefile does and checks where
its tests ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUITE = """
import json, os, pytest, time

GROUP = pytest.mark.xdist_group("g")

def _record(name):
    with open(os.environ["WHERE"], "a") as out:
        out.write(json.dumps([name, os.environ.get("PYTEST_XDIST_WORKER")]) + "\\n")
    time.sleep(0.2)  # long enough for the other worker to ask for more

@pytest.mark.xdist_group("g")
@pytest.mark.parametrize("i", range(4))
def test_marked(i):
    _record(f"marked{i}")

@pytest.mark.parametrize("i", [pytest.param(i, marks=GROUP) for i in range(2)])
def test_param_marked(i):
    _record(f"param{i}")

@pytest.mark.parametrize("i", range(4))
def test_free(i):
    _record(f"free{i}")
"""


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_groups.py").write_text(SUITE)
    where = tmp_path / "where.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", str(tmp_path / "test_groups.py")],
        cwd=tmp_path,
        env={**os.environ, "WHERE": str(where)},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ran = dict(json.loads(line) for line in where.read_text().splitlines())
    assert len(ran) == 10
    group = {worker for name, worker in ran.items() if not name.startswith("free")}
    assert len(group) == 1, f"one group ran on several workers: {ran}"
    assert set(ran.values()) == {"gw0", "gw1"}, "both workers should have run tests"
