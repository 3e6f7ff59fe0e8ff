"""Setup and teardown, `$AXIS_OUTPUT` notes, artifacts, beforeAll/afterAll and pre-flight."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import (
    base_environ,
    cli_env,
    ndjson_adapter,
    observed,
    report_dirs,
    run_api,
    run_cli,
    runs_by_scenario,
    scenario,
    write_project,
)

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess


async def test_a_setup_failure_fails_only_that_job_and_teardown_still_runs(
    tmp_path: Path, e2e_dir: Path
) -> None:
    failing = 'echo "preparing"; echo "boom: no database" >&2; exit 7'
    teardown = [{"action": "run_script", "command": 'echo "$AXIS_SCENARIO" >> "$E2E_DIR/teardown"'}]
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={
            "broken": scenario(
                setup=[
                    {"action": "run_script", "command": 'echo "first step ran" >> "$AXIS_OUTPUT"'},
                    {"action": "run_script", "command": failing},
                    {"action": "run_script", "command": 'touch "$E2E_DIR/never"'},
                ],
                teardown=teardown,
            ),
            "fine-1": scenario(teardown=teardown),
            # A failing teardown is noted, never fails the job.
            "fine-2": scenario(
                teardown=[{"action": "run_script", "command": "echo cleanup-broke >&2; exit 5"}]
            ),
            # A setup command over its own time limit fails the job like any setup error.
            "slow-setup": scenario(
                setup=[{"action": "run_script", "command": "sleep 30", "timeout_minutes": 0.01}]
            ),
        },
        env=["E2E_DIR"],
        settings=observed(e2e_dir),
    )
    outcome = await run_api(root, base_environ(E2E_DIR=str(e2e_dir)))
    manifest = read_json(outcome.report_dir / "report.json")
    runs = runs_by_scenario(manifest)
    broken = runs["broken"]
    assert broken["status"] == "failed"
    assert broken["errorKind"] == "setup"
    assert failing in broken["error"]  # the failing command …
    assert "exited with code 7" in broken["error"]
    assert "boom: no database" in broken["error"]  # … and its output
    assert broken["setupOutput"] == "first step ran"
    assert not (e2e_dir / "never").exists()  # the phase stopped at the failure
    assert runs["fine-1"]["status"] == "completed"
    assert runs["fine-2"]["status"] == "completed"
    assert "Teardown failed" in runs["fine-2"]["teardownOutput"]
    assert "cleanup-broke" in runs["fine-2"]["teardownOutput"]
    slow = runs["slow-setup"]
    assert (slow["status"], slow["errorKind"]) == ("failed", "setup")
    assert "timed out" in slow["error"] and "sleep 30" in slow["error"], slow["error"]
    # Teardown ran for the failed job too (and for the other one that has a teardown).
    assert sorted((e2e_dir / "teardown").read_text().split()) == ["broken", "fine-1"]
    assert manifest["summary"]["failed"] == 2
    assert outcome.exit_code == 1


async def test_artifacts_and_phase_notes(tmp_path: Path, e2e_dir: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"maker": ndjson_adapter("artifacts")},
        scenarios={
            "make": scenario(
                artifacts=["out/**"],
                setup=[
                    {
                        "action": "run_script",
                        "command": 'echo "setup note: seeded $AXIS_SCENARIO" >> "$AXIS_OUTPUT"',
                    }
                ],
                teardown=[
                    {
                        "action": "run_script",
                        # Artifacts are collected before teardown: deleting a file here
                        # must not lose it.
                        "command": "rm notes.txt && "
                        'echo "teardown note: cleaned" >> "$AXIS_OUTPUT"',
                    }
                ],
            )
        },
        artifacts=["*.txt"],
    )
    outcome = await run_api(root, base_environ())
    manifest = read_json(outcome.report_dir / "report.json")
    run = runs_by_scenario(manifest)["make"]
    assert run["status"] == "completed", run
    # The agent never saw AXIS_OUTPUT nor a notes file beside its workspace.
    assert run["result"] == "AXIS_OUTPUT=unset notes_visible=False"
    assert run["setupOutput"] == "setup note: seeded make"
    assert run["teardownOutput"] == "teardown note: cleaned"

    arts = {a["path"]: a for a in run["artifacts"]}
    # config `*.txt` (top level only) + scenario `out/**`; skip.log matches neither.
    assert sorted(arts) == ["big.txt", "notes.txt", "out/data.json", "out/nested/deep.txt"]
    report = outcome.report_dir
    for path, art in arts.items():
        stored = report / art["file"]
        assert stored.is_file(), path
        assert stored.is_relative_to(report / run["dir"])
        assert stored.stat().st_size == art["sizeBytes"]
    assert arts["notes.txt"]["content"] == "small text artifact\n"
    assert arts["out/data.json"]["content"] == '{"answer": 42}\n'
    assert arts["out/nested/deep.txt"]["content"] == "deep\n"
    assert arts["big.txt"]["content"] is None  # large files are only linked
    assert arts["big.txt"]["sizeBytes"] == 100_001


def test_before_all_and_after_all_run_once_with_the_counts(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick"), "broken": ndjson_adapter("fail")},
        scenarios={"one": scenario(agents=["quick"]), "two": scenario()},
        beforeAll=[
            {
                "action": "run_script",
                "command": 'echo before >> hooks.log; echo "b-note" >> "$AXIS_OUTPUT"',
            }
        ],
        afterAll=[
            {
                "action": "run_script",
                "command": (
                    'echo "after $AXIS_REPORT_DIR total=$AXIS_TOTAL completed=$AXIS_COMPLETED '
                    'failed=$AXIS_FAILED" >> hooks.log'
                ),
            }
        ],
    )
    done = run_cli(root, "--no-score", env=cli_env())
    assert done.exit_code == 1, done.stderr
    report = report_dirs(root)
    assert len(report) == 1
    lines = (root / "hooks.log").read_text().splitlines()
    assert lines == [
        "before",
        f"after {report[0]} total=3 completed=2 failed=1",
    ]
    manifest = read_json(report[0] / "report.json")
    assert manifest["beforeAllOutput"] == "b-note"
    assert manifest["summary"]["total"] == 3


def test_a_missing_required_variable_fails_preflight(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "proj",
        adapters={
            "quick": ndjson_adapter("quick"),
            "keyed": ndjson_adapter("quick", required_env=["E2E_SOME_KEY"]),
        },
        scenarios={"one": scenario()},
        beforeAll=[{"action": "run_script", "command": "touch before-all-ran"}],
    )
    done = run_cli(root, env=cli_env())
    assert done.exit_code == 2, done.stderr
    assert "keyed" in done.stderr and "E2E_SOME_KEY" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / ".axis").exists()  # no report folder
    assert not (root / "before-all-ran").exists()  # nothing ran, not even beforeAll

    # With the variable set the same project runs.
    done = run_cli(root, "--no-score", env=cli_env(E2E_SOME_KEY="k-123"))
    assert done.exit_code == 0, done.stderr
    assert (root / "before-all-ran").exists()


async def test_lifecycle_scripts_see_model_and_variant(tmp_path: Path) -> None:
    """Setup and teardown get AXIS_MODEL and AXIS_VARIANT (when set); the agent does not."""
    note = 'echo "model=$AXIS_MODEL variant=$AXIS_VARIANT run=$AXIS_RUN_INDEX" >> "$AXIS_OUTPUT"'
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        agents=[{"agent": "quick", "model": "m-1"}],
        scenarios={
            "v": scenario(
                setup=[{"action": "run_script", "command": note}],
                teardown=[{"action": "run_script", "command": note}],
                variants=[{"name": "alpha"}],
            )
        },
    )
    outcome = await run_api(root, base_environ())
    assert outcome.exit_code == 0
    run = outcome.manifest.results[0].runs[0]
    assert run.setup_output == "model=m-1 variant=alpha run=1"
    assert run.teardown_output == "model=m-1 variant=alpha run=1"


def test_the_report_page_shows_what_after_all_left_in_the_report_folder(tmp_path: Path) -> None:
    # The page at the end of a run takes the transcripts its store wrote, unless afterAll
    # (which gets the report folder) may have changed them: then it reads the folder.
    from axis_eval.report.html import render_html

    scrub = (
        'rm "$AXIS_REPORT_DIR"/scenarios/*/*/transcript.json "$AXIS_REPORT_DIR"/scenarios/*/*/raw.*'
    )
    root = write_project(
        tmp_path / "proj",
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={"one": scenario(), "two": scenario()},
        afterAll=[{"action": "run_script", "command": scrub}],
    )
    done = run_cli(root, "--no-score", env=cli_env())
    assert done.exit_code == 0, done.stderr
    (report,) = report_dirs(root)
    assert not list(report.glob("scenarios/*/*/transcript.json"))
    assert (report / "report.html").read_text() == render_html(report)
