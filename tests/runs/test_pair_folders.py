"""Safe pair folder names (``runs.folder_names``): the rule, its injectivity, a real run
whose agent name holds a ``|``, and old reports (the display names as folders) still read,
resume, diff, re-score and render."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, strategies as st

from axis_eval.runs.folder_names import (
    HASH_LENGTH,
    MAX_LENGTH,
    agent_folder,
    folder_name,
    legacy_pair_dir,
    scenario_folder,
)
from axis_eval.runs.store import pair_dir, read_manifest, run_dir
from helpers.projects import only_report, report_dirs, write_project

AGENT_SCRIPT = Path(__file__).resolve().parents[1] / "agents" / "run_agent.py"
SAFE = re.compile(r"[A-Za-z0-9._-]+")
SAFE_AT = re.compile(r"[A-Za-z0-9._@-]+")
RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10))}
RESERVED |= {f"lpt{i}" for i in range(1, 10)}


def assert_safe(folder: str, pattern: re.Pattern[str] = SAFE) -> None:
    assert pattern.fullmatch(folder), folder
    assert folder[0] not in ".-", folder
    assert not folder.endswith("."), folder
    assert len(folder) <= MAX_LENGTH, folder
    assert folder.split(".", 1)[0].lower() not in RESERVED, folder


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("codex", "codex"),
        ("codex|gpt-5.5", "codex--gpt-5.5"),
        ("claude-code|anthropic-claude-3.5-sonnet-2", "claude-code--anthropic-claude-3.5-sonnet-2"),
        ("a|b|c", "a--b--c"),
    ],
)
def test_plain_names_stay_readable(name: str, folder: str) -> None:
    assert agent_folder(name) == folder


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("a--b", "a--b-"),  # would read as a|b: hashed
        ("a|-b", "a---b-"),
        ("my agent!", "my_agent_-"),
        (".hidden", "_hidden-"),
        ("-rf", "_rf-"),
        ("CON", "_CON-"),
        ("nul.txt", "_nul.txt-"),
        ("dots.", "dots.-"),
        ("", "_-"),
        ("x-0123abcd", "x-0123abcd-"),  # ends like a hash suffix
        ("ü|ö", "_--_-"),
    ],
)
def test_other_names_get_a_stable_hash_suffix(name: str, start: str) -> None:
    folder = agent_folder(name)
    assert folder.startswith(start) and len(folder) == len(start) + HASH_LENGTH, folder
    assert re.fullmatch(rf"[0-9a-f]{{{HASH_LENGTH}}}", folder[len(start) :])
    assert agent_folder(name) == folder  # stable: the name alone decides
    assert_safe(folder)


def test_long_names_are_bounded_and_kept_apart() -> None:
    a, b = "x" * 200 + "a", "x" * 200 + "b"
    assert len(agent_folder(a)) == MAX_LENGTH and agent_folder(a) != agent_folder(b)
    assert agent_folder("y" * MAX_LENGTH) == "y" * MAX_LENGTH
    assert agent_folder("y" * (MAX_LENGTH + 1)) != "y" * (MAX_LENGTH + 1)


def test_scenario_keys_keep_their_folders_and_variants() -> None:
    assert scenario_folder("files/append-line@short") == "files/append-line@short"
    assert scenario_folder("cms/post") == "cms/post"
    weird = scenario_folder("my dir/a:b")
    assert weird.startswith("my_dir-") and "/a_b-" in weird
    assert pair_dir("cms/post@v", "codex|gpt-5") == "scenarios/cms/post@v/codex--gpt-5"
    assert run_dir("cms/post@v", "codex|gpt-5", 2, 3) == "scenarios/cms/post@v/codex--gpt-5/run-2"
    assert legacy_pair_dir("cms/post@v", "codex|gpt-5") == "scenarios/cms/post@v/codex|gpt-5"


NAMES = st.text(max_size=80) | st.text(alphabet="ab-|.@_C0Nn", max_size=14)
"""Any text, and text from the characters the rule treats specially (dense collisions)."""


@given(NAMES, NAMES)
def test_distinct_names_get_distinct_safe_folders(a: str, b: str) -> None:
    fa, fb = agent_folder(a), agent_folder(b)
    assert_safe(fa)
    assert_safe(fb)
    assert (fa == fb) == (a == b), (a, b, fa)


@given(NAMES, NAMES)
def test_distinct_scenario_parts_get_distinct_safe_folders(a: str, b: str) -> None:
    fa, fb = folder_name(a, keep="@"), folder_name(b, keep="@")
    assert_safe(fa, SAFE_AT)
    assert_safe(fb, SAFE_AT)
    assert (fa == fb) == (a == b), (a, b, fa)


KEYS = st.lists(st.text(alphabet="ab/@|. -", min_size=1, max_size=5), min_size=1, max_size=3)


@given(KEYS, NAMES, KEYS, NAMES)
def test_distinct_pairs_get_distinct_folders(
    key_a: list[str], agent_a: str, key_b: list[str], agent_b: str
) -> None:
    a, b = ("/".join(key_a), agent_a), ("/".join(key_b), agent_b)
    assert (pair_dir(*a) == pair_dir(*b)) == (a == b)


# --- end to end ------------------------------------------------------------------------

Axis = Callable[..., Any]
CHECKS = [
    {"check": "it ran", "run": "true", "weight": 0.5},
    {"check": "it did the impossible", "run": "false", "weight": 0.5},
]
"""Deterministic checks only: goal 50, composite 80 (no interactions), no judge to ask."""


def project(root: Path, **config: Any) -> Path:
    """One toy declarative agent with a model (its name: ``toy|x-y``), a single and a
    repeated scenario."""
    return write_project(
        root,
        adapters={
            "toy": {
                "command": [sys.executable, str(AGENT_SCRIPT), "quick"],
                "args": ["{prompt}"],
                "prompt_via": "argv",
                "output": "ndjson",
            }
        },
        scenarios={"hello": {"judge": CHECKS}, "twice": {"runs": 3, "judge": CHECKS}},
        agents=[{"agent": "toy", "model": "x/y"}],
        **config,
    )


def paths_under(folder: Path) -> list[str]:
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*")]


def to_old_format(report: Path) -> None:
    """Make a fresh report look like one written before safe folder names: its pair folders
    named by the display names, and every path in its manifest and results saying so."""
    for folder in report.glob("scenarios/*/toy--x-y"):
        folder.rename(folder.with_name("toy|x-y"))
    for path in [report / "report.json", *report.glob("scenarios/**/result.json")]:
        text = path.read_text().replace("/toy--x-y", "/toy|x-y")
        path.write_text(text)
    assert "toy--x-y" not in "".join(paths_under(report))
    assert "toy--x-y" not in (report / "report.json").read_text()


def interrupt(report: Path) -> None:
    """Make the report look killed before ``twice`` run 3 finished."""
    data = json.loads((report / "report.json").read_text())
    data["state"] = "interrupted"
    [pair] = [p for p in data["results"] if p["scenarioKey"] == "twice"]
    run = pair["runs"][2]
    shutil.rmtree(report / run["dir"])
    pair["runs"][2] = {
        "runIndex": 3,
        "status": "cancelled",
        "failed": False,
        "error": "not started",
        "dir": run["dir"],
    }
    (report / "report.json").write_text(json.dumps(data, indent=2))


@pytest.mark.slow  # three `axis run`s and an `axis score` as subprocesses
def test_pipe_in_the_agent_name_and_old_reports(tmp_path: Path, axis_process: Axis) -> None:
    root = project(tmp_path / "proj")

    # A fresh run: no `|` in any path; the manifest maps display names to folders.
    done = axis_process("run", cwd=root)
    assert done.exit_code == 0, done.stderr
    new = only_report(root)
    assert not [p for p in paths_under(new) if "|" in p]
    manifest = read_manifest(new)
    folders = {(p.scenario_key, p.agent_name): p.dir for p in manifest.results}
    assert folders == {
        ("hello", "toy|x-y"): "scenarios/hello/toy--x-y",
        ("twice", "toy|x-y"): "scenarios/twice/toy--x-y",
    }
    runs = [r.dir for p in manifest.results for r in p.runs]
    assert runs == [
        "scenarios/hello/toy--x-y",
        "scenarios/twice/toy--x-y/run-1",
        "scenarios/twice/toy--x-y/run-2",
        "scenarios/twice/toy--x-y/run-3",
    ]
    assert all((new / d / "result.json").is_file() for d in runs)

    # An old report: folders named `toy|x-y`, killed before its last run finished.
    done = axis_process("run", cwd=root)
    assert done.exit_code == 0, done.stderr
    [old] = [d for d in report_dirs(root) if d != new]
    to_old_format(old)
    interrupt(old)

    # Resumed: the killed run runs (and is scored) into the old report's folder.
    resumed = axis_process("run", "--resume", old.name, cwd=root)
    assert resumed.exit_code == 0, resumed.stderr
    again = read_manifest(old)
    assert again.state == "finished"
    [twice] = [p for p in again.results if p.scenario_key == "twice"]
    assert [(r.status, r.dir) for r in twice.runs] == [
        ("completed", "scenarios/twice/toy|x-y/run-1"),
        ("completed", "scenarios/twice/toy|x-y/run-2"),
        ("completed", "scenarios/twice/toy|x-y/run-3"),
    ]
    # The resumed run went where the old report keeps its runs, not to a new folder.
    assert (old / "scenarios/twice/toy|x-y/run-3/result.json").is_file()
    assert not list(old.glob("scenarios/*/toy--x-y"))

    shown = axis_process("reports", old.name, cwd=root)
    assert shown.exit_code == 0, shown.stderr
    assert "toy|x-y" in shown.stdout and "hello" in shown.stdout

    diff = axis_process("reports", "diff", new.name, old.name, "--json", cwd=root)
    assert diff.exit_code == 0, diff.stderr
    verdicts = {
        (p["scenarioKey"], p["agentName"]): p["verdict"] for p in json.loads(diff.stdout)["pairs"]
    }
    assert set(verdicts) == set(folders)
    assert not {"new", "vanished"} & set(verdicts.values())

    for pair in again.results:
        for run in pair.runs:
            assert run.score is not None and run.score.axis_score == 80, run.dir
            assert (old / run.dir / "verdicts.json").is_file() and "|" in run.dir

    # `axis score` with new weights: every run scored again from the verdicts saved in the
    # old folders (no judge: one not found would leave the run unscored).
    project(
        root,
        settings={
            "scoring_weights": {"goal_achievement": 1.0, "environment": 0, "service": 0, "agent": 0}
        },
    )
    scored = axis_process("score", old.name, cwd=root)
    assert scored.exit_code == 0, scored.stderr
    assert "judge calls: 0" in scored.stderr
    for pair in read_manifest(old).results:
        for run in pair.runs:
            assert run.score is not None and run.score.axis_score == 50, run.dir
            saved = json.loads((old / run.dir / "result.json").read_text())
            assert saved["run"]["score"]["axisScore"] == 50

    html = axis_process("reports", old.name, "--html", cwd=root)
    assert html.exit_code == 0, html.stderr
    page = Path(html.stdout.strip().splitlines()[-1])
    # The page's pairs (gzip + base64 payloads) hold the transcripts and file links it read
    # from the old folders.
    found = re.findall(r'data-payload="[^"]+">([^<]*)</script>', page.read_text())
    decoded = json.dumps([json.loads(gzip.decompress(base64.b64decode(p))) for p in found])
    assert "quick answer" in decoded
    assert "run-3/transcript.json" in decoded and "run-3/result.json" in decoded
