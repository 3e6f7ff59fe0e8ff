"""End to end: in a run, a bwrap job that leaves its folders as made passes them to the next
job; a job that leaves anything behind, or runs unconfined, gets the next job new ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from axis_eval.execute.sandbox.probe import bwrap_problem
from helpers.processes import read_json
from helpers.projects import base_environ, run_api, write_project
from helpers.system_parts import not_run

pytestmark = pytest.mark.slow

AGENT = """\
pwd
stat -c %i .
find . "$HOME" "$TMPDIR" -mindepth 1 | wc -l
case "$AXIS_SCENARIO" in b-*) echo left > left.txt ;; esac
"""
"""Says where it runs (path and inode of its workspace) and how many entries its folders
hold; the ``b-`` scenario leaves a file behind."""


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    problem = bwrap_problem()
    if problem is not None:
        not_run("BWRAP SANDBOX TEST", problem)


@pytest.mark.parametrize("mode", ["bwrap", "none"])
async def test_folders_pass_to_the_next_job_only_when_confined_and_untouched(
    tmp_path: Path, mode: str
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "agent.sh").write_text(AGENT)
    write_project(
        root,
        {"probe": {"command": ["/bin/sh", str(root / "agent.sh")], "output": "text"}},
        {key: {} for key in ("a-quiet", "b-leaves", "c-after", "d-last")},
        settings={"concurrency": 1, "sandbox": mode},
    )
    outcome = await run_api(root, base_environ(), concurrency=1)
    manifest = read_json(outcome.report_dir / "report.json")
    seen = {}
    for pair in manifest["results"]:
        run = pair["runs"][0]
        assert run["status"] == "completed", run
        assert run["sandbox"] == mode
        path, inode, entries = run["result"].split()
        seen[pair["scenarioKey"]] = (path, inode, int(entries))
    assert [entries for _, _, entries in seen.values()] == [0, 0, 0, 0]  # always empty
    paths = {key: path for key, (path, _, _) in seen.items()}
    if mode == "bwrap":
        assert seen["a-quiet"][:2] == seen["b-leaves"][:2]  # the same folder, passed on
        assert paths["c-after"] != paths["b-leaves"]  # b left a file: new folders
        assert seen["d-last"][:2] == seen["c-after"][:2]
    else:
        assert len(set(paths.values())) == 4  # unconfined: new folders for every job
    assert not any(Path(p).exists() for p in paths.values())  # and none left after the run
