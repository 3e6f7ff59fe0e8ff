"""A run never ends `running`: whatever raises inside `axis run`, its report is closed.

Faults are injected (monkeypatch) into real in-process `axis run`s: while a result is
saved, after it, in the display, inside a job, in the scoring of a resume, in the final
manifest write, in afterAll and after the run. Each time: the report says `crashed` (or
`interrupted`) with the error, the traceback is in `crash.log`, every finished run is on
disk, no agent process survives (a holder agent keeps a process tree, one child in its own
session, running when the fault strikes), the exit code is 3 with a one-paragraph message,
and `axis run --resume` finishes the report, re-running only what did not finish.
"""

from __future__ import annotations

import errno
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helpers.processes import read_json, wait_dead, wait_for

from .helpers import (
    CliRun,
    cli_env,
    host_pids,
    job_processes,
    ndjson_adapter,
    observed,
    only_report,
    scenario,
    write_project,
)

pytestmark = pytest.mark.slow  # real `axis run`s (in process), with real agents

Axis = Callable[..., Any]
HOLDER = Path(__file__).with_name("holder_agent.py")


@pytest.fixture(autouse=True)
def e2e_env(e2e_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In-process runs: the agents get ``E2E_DIR`` from this process's environment."""
    monkeypatch.setenv("E2E_DIR", str(e2e_dir))
    monkeypatch.setenv("NO_COLOR", "1")
    yield


def holder_project(root: Path, e2e_dir: Path) -> Path:
    """Two quick pairs and one holder pair, all three running at once."""
    holder = {
        "command": [sys.executable, str(HOLDER)],
        "args": ["{prompt}"],
        "prompt_via": "argv",
        "output": "ndjson",
    }
    return write_project(
        root,
        adapters={"quick": ndjson_adapter("quick"), "holder": holder},
        scenarios={
            "a": scenario(agents=["quick"]),
            "b": scenario(agents=["quick"]),
            "h": scenario(agents=["holder"]),
        },
        env=["E2E_DIR"],
        settings=observed(e2e_dir, concurrency=3),
    )


def quick_project(root: Path, **config: Any) -> Path:
    return write_project(
        root,
        adapters={"quick": ndjson_adapter("quick")},
        scenarios={"a": scenario(), "b": scenario()},
        **config,
    )


@dataclass
class Holder:
    """The holder agent's process tree in a run of :func:`holder_project`."""

    root: Path
    e2e_dir: Path
    pids: list[int] = field(default_factory=list)
    """Its three processes' host pids (the agent reports those of its PID namespace under
    bwrap), known once :meth:`wait_up` returned."""

    def wait_up(self) -> None:
        """Wait until the tree is up and note its host pids (the processes run meanwhile)."""
        found = self.e2e_dir / "holder.json"
        wait_for(found.exists, timeout=30, what="the holder agent's process tree")
        self.pids = host_pids(self.root, "h", read_json(found).values())


class Fault:
    """Raises ``exc`` on the ``nth`` call of what it wraps (``after``: once that call has
    returned), after waiting until the holder agent's tree is up (when it is in the run)."""

    def __init__(self, holder: Holder | None, nth: int, exc: BaseException, after: bool = False):
        self.holder = holder
        self.nth, self.exc, self.after = nth, exc, after
        self.calls = 0

    def _strike(self) -> None:
        if self.holder is not None:
            self.holder.wait_up()
        raise self.exc

    def wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def patched(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self.nth and not self.after:
                self._strike()
            value = original(*args, **kwargs)
            if self.calls == self.nth:
                self._strike()
            return value

        return patched


def manifest_of(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_json(only_report(root) / "report.json")
    return data


def runs_of(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["scenarioKey"]: p["runs"][0] for p in manifest["results"]}


def saved_runs(folder: Path) -> dict[str, dict[str, Any]]:
    """The runs with a result.json on disk, by scenario key."""
    found = {}
    for path in folder.glob("scenarios/*/*/result.json"):
        result = read_json(path)
        found[result["scenarioKey"]] = result["run"]
    return found


def check_crashed(root: Path, done: Any, error_type: str) -> dict[str, Any]:
    """The report is closed `crashed`, with the error and its traceback; the message says
    where and how to resume; every finished run is on disk. Returns the manifest."""
    folder = only_report(root)
    manifest = manifest_of(root)
    assert done.exit_code == 3, done.stderr
    assert manifest["state"] == "crashed"
    assert manifest["exitCode"] == 3
    assert manifest["error"].startswith(f"{error_type}")
    log = (folder / "crash.log").read_text()
    assert "Traceback" in log and error_type in log
    message = done.stderr
    assert "internal error: axis-eval crashed" in message
    assert error_type in message
    assert str(folder) in message and str(folder / "crash.log") in message
    assert f"--resume {folder.name}" in message
    assert "Traceback" not in message
    finished = {k: r for k, r in runs_of(manifest).items() if r["status"] != "cancelled"}
    assert saved_runs(folder).keys() >= finished.keys()
    return manifest


def check_no_agent_left(root: Path, holder: Holder) -> None:
    assert len(holder.pids) == 3, holder.pids  # seen alive when the fault struck
    wait_dead(holder.pids, timeout=1.0)  # already dead (a second for the reaper to collect them)
    assert job_processes(root.parent) == []


def resume_and_check(axis: Axis, root: Path, e2e_dir: Path, *extra: str) -> dict[str, Any]:
    """`--resume` finishes the report: only the unfinished jobs run again."""
    folder = only_report(root)
    before = saved_runs(folder)
    (e2e_dir / "release").touch()
    done = axis("run", "-c", str(root), "--no-score", "--resume", folder.name, *extra)
    assert done.exit_code == 0, done.stderr
    manifest = manifest_of(root)
    assert manifest["state"] == "finished" and manifest["exitCode"] == 0
    assert manifest["error"] is None
    assert any("an earlier attempt crashed" in w for w in manifest["warnings"])
    runs = runs_of(manifest)
    assert {r["status"] for r in runs.values()} == {"completed"}
    for key, run in before.items():  # kept as they were, never re-run
        assert runs[key]["startedAt"] == run["startedAt"], key
    return manifest


# -- faults while a job's result is saved and shown --------------------------------------


def _save_run(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
    import axis_eval.runs.writer as writer

    monkeypatch.setattr(writer, "save_run", fault.wrap(writer.save_run))


def _record(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
    from axis_eval.runs.writer import ReportWriter

    fault.after = True  # the result is saved, then the manifest update fails
    monkeypatch.setattr(ReportWriter, "record", fault.wrap(ReportWriter.record))


def _display(monkeypatch: pytest.MonkeyPatch, fault: Fault) -> None:
    from axis_eval.cli.live import PlainDisplay

    monkeypatch.setattr(PlainDisplay, "finished", fault.wrap(PlainDisplay.finished))


FAULTS: dict[str, tuple[Callable[[pytest.MonkeyPatch, Fault], None], BaseException]] = {
    # A NDJSON line nested ~1,100 deep once crashed save_run with a RecursionError.
    "saving-a-result": (_save_run, RecursionError("maximum recursion depth exceeded")),
    "after-saving-a-result": (_record, KeyError("pair")),
    "showing-a-result": (_display, AttributeError("'NoneType' object has no attribute 'x'")),
}


@pytest.mark.parametrize("where", sorted(FAULTS))
def test_a_fault_while_results_are_saved_closes_the_report_crashed(
    axis: Axis, tmp_path: Path, e2e_dir: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    root = holder_project(tmp_path / "proj", e2e_dir)
    holder = Holder(root, e2e_dir)
    patch, exc = FAULTS[where]
    with monkeypatch.context() as patched:
        patch(patched, Fault(holder, 2, exc))
        done = axis("run", "-c", str(root), "--no-score")
    manifest = check_crashed(root, done, type(exc).__name__)
    check_no_agent_left(root, holder)
    runs = runs_of(manifest)
    assert runs["h"]["status"] == "cancelled"  # running when the fault struck: to run again
    finished = [k for k, r in runs.items() if r["status"] == "completed"]
    assert len(finished) == (1 if where == "saving-a-result" else 2)
    resume_and_check(axis, root, e2e_dir)


SYSTEM_EXIT = """
import asyncio, sys
from pathlib import Path
import axis_eval.execute.executor as executor
from axis_eval.cli.main import main

original = executor.run_job
go = Path(sys.argv.pop(1))

async def run_job(spec, ctx):
    if spec.scenario.key == "b":
        while not go.exists():
            await asyncio.sleep(0.02)
        raise SystemExit(0)
    return await original(spec, ctx)

executor.run_job = run_job
main()
"""


# A real `axis` process: SystemExit leaves asyncio in pieces, by design.
def test_a_system_exit_inside_a_job_leaves_the_loop_and_still_closes_the_report(
    axis: Axis, tmp_path: Path, e2e_dir: Path
) -> None:
    """SystemExit (a plugin calling sys.exit) is no Exception: it leaves the event loop at
    once, past every handler inside it; the sync entry point closes the report and kills
    the run's processes before the process ends."""
    root = holder_project(tmp_path / "proj", e2e_dir)
    holder = Holder(root, e2e_dir)
    go = e2e_dir / "strike"  # job b raises once the holder's tree is up and noted
    argv = [sys.executable, "-c", SYSTEM_EXIT, str(go)]
    with subprocess.Popen(
        [*argv, "run", "-c", str(root), "--no-score"],
        env=cli_env(E2E_DIR=str(e2e_dir)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    ) as ran:
        try:
            holder.wait_up()
            go.touch()
            out, err = ran.communicate(timeout=60)
        finally:
            if ran.poll() is None:
                ran.kill()
    check_crashed(root, CliRun(ran.returncode, out, err), "SystemExit")
    check_no_agent_left(root, holder)
    resume_and_check(axis, root, e2e_dir)


def test_a_bug_inside_one_job_fails_that_job_only(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception from deep inside a job is that job's failure (kind internal); the run
    goes on and finishes."""
    import axis_eval.execute.executor as executor

    original = executor.run_job

    async def run_job(spec: Any, ctx: Any) -> Any:
        if spec.scenario.key == "b":
            raise KeyError("deep inside")
        return await original(spec, ctx)

    monkeypatch.setattr(executor, "run_job", run_job)
    root = quick_project(tmp_path / "proj")
    done = axis("run", "-c", str(root), "--no-score")
    assert done.exit_code == 1
    manifest = manifest_of(root)
    assert manifest["state"] == "finished"
    runs = runs_of(manifest)
    assert runs["a"]["status"] == "completed"
    assert runs["b"]["errorKind"] == "internal" and "KeyError" in runs["b"]["error"]


# -- faults in scoring, the final write, afterAll, and after the run ------------------------


def test_a_fault_while_a_resume_scores_kept_runs_closes_the_report_crashed(
    axis: Axis, tmp_path: Path, e2e_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = holder_project(tmp_path / "proj", e2e_dir)
    with monkeypatch.context() as patched:
        _save_run(patched, Fault(Holder(root, e2e_dir), 2, RecursionError("deep")))
        first = axis("run", "-c", str(root), "--no-score")
    check_crashed(root, first, "RecursionError")
    folder = only_report(root)
    import axis_eval.scoring.rescore as rescore

    async def score_finished_run(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("division by zero")

    (e2e_dir / "holder.json").unlink()
    with monkeypatch.context() as patched:
        patched.setattr(rescore, "score_finished_run", score_finished_run)
        # The kept run (unscored) is scored beside the jobs left to run: the judge is an
        # agent of the config, so the pre-flight needs no key (the fault strikes first).
        done = axis("run", "-c", str(root), "--resume", folder.name, "--judge", "quick")
    manifest = check_crashed(root, done, "ZeroDivisionError")
    assert runs_of(manifest)["h"]["status"] == "cancelled"
    assert job_processes(root.parent) == []
    resume_and_check(axis, root, e2e_dir)


class DiskFull:
    """OSError ENOSPC from what it wraps, for the final (durable) manifest writes."""

    def __init__(self, only_durable: bool = True) -> None:
        self.only_durable = only_durable

    def wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def patched(*args: Any, **kwargs: Any) -> Any:
            if not self.only_durable or kwargs.get("durable"):
                raise OSError(errno.ENOSPC, "No space left on device")
            return original(*args, **kwargs)

        return patched


def test_a_failing_final_report_write_still_closes_the_report(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The normal final write fails: the manifest is written as it stands instead."""
    from axis_eval.runs.writer import ReportWriter

    root = quick_project(tmp_path / "proj")
    with monkeypatch.context() as patched:
        patched.setattr(
            ReportWriter, "finish", DiskFull(only_durable=False).wrap(ReportWriter.finish)
        )
        done = axis("run", "-c", str(root), "--no-score")
    manifest = check_crashed(root, done, "OSError")
    assert "No space left on device" in manifest["error"]
    assert {r["status"] for r in runs_of(manifest).values()} == {"completed"}
    done = axis("run", "-c", str(root), "--no-score", "--resume", manifest["reportId"])
    assert done.exit_code == 0, done.stderr
    assert "0 to run" in done.stderr
    assert manifest_of(root)["state"] == "finished"


def test_when_the_manifest_cannot_be_written_its_state_is_patched_on_disk(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axis_eval.runs.store import ReportStore

    root = quick_project(tmp_path / "proj")
    with monkeypatch.context() as patched:
        patched.setattr(ReportStore, "write_manifest", DiskFull().wrap(ReportStore.write_manifest))
        done = axis("run", "-c", str(root), "--no-score")
    manifest = check_crashed(root, done, "OSError")  # the last resort: fields patched in
    done = axis("run", "-c", str(root), "--no-score", "--resume", manifest["reportId"])
    assert done.exit_code == 0, done.stderr
    assert manifest_of(root)["state"] == "finished"


def test_when_nothing_can_be_written_the_message_says_so(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from axis_eval.runs.store import ReportStore

    root = quick_project(tmp_path / "proj")
    with monkeypatch.context() as patched:
        patched.setattr(ReportStore, "write_manifest", DiskFull().wrap(ReportStore.write_manifest))
        patched.setattr(
            ReportStore, "patch_manifest", DiskFull(False).wrap(ReportStore.patch_manifest)
        )
        done = axis("run", "-c", str(root), "--no-score")
    assert done.exit_code == 3
    assert "The report could not be closed (OSError" in done.stderr
    assert f"--resume {only_report(root).name}" in done.stderr
    assert manifest_of(root)["state"] == "running"  # the last write that worked
    done = axis("run", "-c", str(root), "--no-score", "--resume", only_report(root).name)
    assert done.exit_code == 0, done.stderr
    assert manifest_of(root)["state"] == "finished"


def test_a_fault_in_after_all_closes_the_finished_report_crashed(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import axis_eval.pipeline.hooks as hooks

    original = hooks.run_hook

    async def run_hook(loaded: Any, name: str, *args: Any) -> Any:
        if name == "afterAll":
            raise RuntimeError("afterAll exploded")
        return await original(loaded, name, *args)

    root = quick_project(tmp_path / "proj")
    with monkeypatch.context() as patched:
        patched.setattr(hooks, "run_hook", run_hook)
        done = axis("run", "-c", str(root), "--no-score")
    manifest = check_crashed(root, done, "RuntimeError")
    assert {r["status"] for r in runs_of(manifest).values()} == {"completed"}


def test_a_fault_showing_the_results_after_the_run_exits_3_and_keeps_the_report(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is over and saved: only its summary could not be shown."""
    import axis_eval.report.render as render

    def render_run_summary(*args: Any, **kwargs: Any) -> str:
        raise IndexError("list index out of range")

    root = quick_project(tmp_path / "proj")
    monkeypatch.setattr(render, "render_run_summary", render_run_summary)
    done = axis("run", "-c", str(root), "--no-score")
    folder = only_report(root)
    assert done.exit_code == 3
    assert "internal error: axis-eval failed (IndexError: list index out of range)" in done.stderr
    assert f"its report is saved ({folder}, state finished)" in done.stderr
    assert str(folder / "crash.log") in done.stderr and "Traceback" not in done.stderr
    assert "IndexError" in (folder / "crash.log").read_text()
    assert manifest_of(root)["state"] == "finished"


def test_an_interrupt_inside_the_run_closes_the_report_interrupted(
    axis: Axis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KeyboardInterrupt where the run's own SIGINT handler is not in place (here raised
    while afterAll runs): `interrupted`, exit 130, and how to resume."""
    import axis_eval.pipeline.hooks as hooks

    original = hooks.run_hook

    async def run_hook(loaded: Any, name: str, *args: Any) -> Any:
        if name == "afterAll":
            raise KeyboardInterrupt
        return await original(loaded, name, *args)

    root = quick_project(tmp_path / "proj")
    with monkeypatch.context() as patched:
        patched.setattr(hooks, "run_hook", run_hook)
        done = axis("run", "-c", str(root), "--no-score")
    assert done.exit_code == 130
    manifest = manifest_of(root)
    assert manifest["state"] == "interrupted" and manifest["exitCode"] == 130
    assert f"saved as interrupted. `axis run -c {root} --resume" in done.stderr


# -- `.axis` that is not a folder ------------------------------------------------------------


def _file(root: Path, rel: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("not a folder")


def _dangling(root: Path, rel: str) -> None:
    (root / rel).symlink_to(root / "nowhere")


@pytest.mark.parametrize(
    ("make", "rel", "message"),
    [
        (_file, ".axis", "is a file: expected a folder (to hold {root}/.axis/reports)"),
        (_file, ".axis/reports", "is a file: expected a folder"),
        (_dangling, ".axis", "is a broken symbolic link: expected a folder"),
    ],
    ids=["axis-file", "reports-file", "axis-dangling-link"],
)
def test_a_dot_axis_that_is_not_a_folder_is_a_usage_error_before_anything_runs(
    axis: Axis,
    tmp_path: Path,
    e2e_dir: Path,
    make: Callable[[Path, str], None],
    rel: str,
    message: str,
) -> None:
    marker = e2e_dir / "before-all-ran"
    root = quick_project(
        tmp_path / "proj",
        beforeAll=[{"action": "run_script", "command": f"touch {marker}"}],
    )
    make(root, rel)
    done = axis("run", "-c", str(root), "--no-score")
    assert done.exit_code == 2, done.stderr
    assert f"error: {root / rel} {message.format(root=root)}" in done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists(), "no hook (and no job) ran"


# -- a bug outside any report, and the library's own numbers ------------------------------


def test_a_bug_before_any_report_exits_3_with_the_traceback_in_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import axis_eval.cli.run as run_module
    from axis_eval.cli import import_gc
    from axis_eval.cli.main import main

    def dry_run(*args: Any, **kwargs: Any) -> None:
        raise TypeError("unsupported operand")

    # `main` tunes the collector for a process about to exit; this one is the test worker,
    # which other tests share (tests/test_startup.py reads its thresholds).
    monkeypatch.setattr(import_gc, "raise_threshold", lambda: None)
    monkeypatch.setattr(import_gc, "freeze_at_exit", lambda: None)

    root = quick_project(tmp_path / "proj")
    monkeypatch.setattr(run_module, "_dry_run", dry_run)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["axis", "run", "-c", str(root), "--dry-run"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 3
    err = capsys.readouterr().err
    assert "internal error: axis-eval failed (TypeError: unsupported operand)" in err
    assert "Traceback" not in err
    [log] = tmp_path.glob("axis-crash-*.log")
    assert str(log) in err
    assert "TypeError: unsupported operand" in log.read_text()
