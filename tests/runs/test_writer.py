"""ReportWriter: the report folder while a run is under way, its layout, and redaction."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from axis_eval._types import TokenUsage
from axis_eval.config.load import load_config
from axis_eval.config.models import LoadedConfig
from axis_eval.execute.models import CollectedArtifact, JobOutcome
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import JobSpec, Plan
from axis_eval.redact import MASK, Redactor
from axis_eval.report.models import PairEntry, ReportManifest, RunResult
from axis_eval.report.outcome import exit_code_for
from axis_eval.runs.run_folder import store_score
from axis_eval.runs.store import ReportStore, new_report_id, reports_root
from axis_eval.runs.writer import ReportWriter
from axis_eval.transcript.models import Entry, Transcript
from axis_eval.transcript.sparse_index import build_sparse_index
from helpers.factories import score

MakeProject = Callable[..., Path]


def sc(name: str = "S", **fields: Any) -> dict[str, Any]:
    return {"name": name, "prompt": f"do {name}", "judge": "done", **fields}


def planned(
    root: Path,
    make_project: MakeProject,
    config: dict[str, Any],
    scenarios: dict[str, Any],
    **selection: Any,
) -> tuple[Plan, LoadedConfig]:
    make_project(root, config, scenarios)
    loaded = load_config(str(root))
    return plan(loaded, Selection(**selection)), loaded


def outcome(job: JobSpec, status: str = "completed", **fields: Any) -> JobOutcome:
    defaults: dict[str, Any] = {
        "failed": status == "failed",
        "exit_code": 0 if status == "completed" else 1,
        "started_at": "2026-01-01T00:00:00.000Z",
        "ended_at": "2026-01-01T00:00:01.000Z",
        "duration_ms": 1000,
        "result": f"answer for {job.id}",
    }
    return JobOutcome(spec=job, status=status, **{**defaults, **fields})  # type: ignore[arg-type]


def manifest_on_disk(store: ReportStore) -> ReportManifest:
    return ReportManifest.model_validate_json((store.folder / "report.json").read_bytes())


def new_store(loaded: LoadedConfig, redactor: Redactor | None = None) -> ReportStore:
    root = reports_root(loaded.config_dir)
    return ReportStore(root / new_report_id(root), redactor)


def test_manifest_is_written_before_any_job(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(
        tmp_path,
        make_project,
        {"agents": ["codex", "goose"], "name": "Suite"},
        {"a": sc(), "b": sc(runs=3), "off": sc(skip=True)},
    )
    store = new_store(loaded)
    ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    m = manifest_on_disk(store)
    assert m.state == "running" and m.report_id == store.report_id and m.name == "Suite"
    assert [(p.scenario_key, p.agent_name, p.run_count) for p in m.results] == [
        ("a", "codex", 1),
        ("b", "codex", 3),
        ("a", "goose", 1),
        ("b", "goose", 3),
    ]
    assert all(
        r.status == "cancelled" and r.error == "not started" for p in m.results for r in p.runs
    )
    s = m.summary
    assert (s.total, s.cancelled, s.runs_total, s.runs_cancelled, s.skipped) == (4, 4, 8, 8, 1)
    assert m.skipped == ["off"]
    assert m.scoring_weights == {
        "goal_achievement": 0.4,
        "environment": 0.2,
        "service": 0.2,
        "agent": 0.2,
    }
    assert m.config_path == loaded.path and m.config_dir == loaded.config_dir


def test_manifest_uses_axis_field_names(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(runs=3)})
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writer.record(outcome(the_plan.jobs[0]))
    raw = json.loads((store.folder / "report.json").read_text())
    for key in (
        "schemaVersion",
        "reportId",
        "startedAt",
        "durationMs",
        "summary",
        "results",
        "loadFailures",
        "scoringWeights",
        "resolvedConfig",
    ):
        assert key in raw, key
    for key in ("total", "completed", "failed", "runsTotal", "runsFailed", "loadFailures"):
        assert key in raw["summary"], key
    entry = raw["results"][0]
    for key in (
        "scenarioKey",
        "agentName",
        "runCount",
        "durationMs",
        "exitCode",
        "failed",
        "runs",
        "reliability",
        "representativeRunIndex",
    ):
        assert key in entry, key
    assert {"runIndex", "status", "failed", "exitCode", "durationMs", "dir"} <= set(
        entry["runs"][0]
    )


def test_layout_single_run_is_flat(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(
        tmp_path,
        make_project,
        {"agents": [{"agent": "claude-code", "model": "anthropic/claude-3.5-sonnet"}]},
        {"cms/post": sc(variants=[{"name": "v"}])},
    )
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    [job] = the_plan.jobs
    writer.record(
        outcome(
            job,
            transcript=Transcript(
                agent="claude-code",
                usage=TokenUsage(input=10, output=5),
                cost_usd=0.5,
                entries=[Entry(type="assistant", timestamp="t", text="hi")],
            ),
            raw_output=['{"type": "a"}', '{"type": "b"}'],
            stderr="some stderr",
            artifacts=[
                CollectedArtifact(
                    path="out/notes.txt", size_bytes=5, mime_type="text/plain", data=b"hello"
                ),
                CollectedArtifact(
                    path="huge.bin",
                    size_bytes=10**9,
                    mime_type="application/x",
                    note="over the size cap",
                ),
            ],
        )
    )
    folder = (
        store.folder / "scenarios" / "cms" / "post@v" / "claude-code--anthropic-claude-3.5-sonnet"
    )
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "artifacts/out/notes.txt",
        "raw.ndjson",
        "result.json",
        "sparse-index.txt",
        "stderr.log",
        "transcript.json",
    ]
    result = RunResult.model_validate_json((folder / "result.json").read_bytes())
    assert result.scenario_key == "cms/post@v"
    assert result.run.status == "completed" and result.run.result == f"answer for {job.id}"
    assert result.spec["scenario"]["key"] == "cms/post@v"
    assert set(result.files) == {"transcript", "raw", "stderr", "sparseIndex"}
    assert (
        (folder / "sparse-index.txt")
        .read_text()
        .startswith(
            "# Sparse Index: cms/post@v / claude-code|anthropic-claude-3.5-sonnet\n# 0 interactions"
        )
    )
    notes, huge = result.run.artifacts
    assert notes.content == "hello" and notes.file.endswith("artifacts/out/notes.txt")
    assert huge.file == "" and huge.content is None
    m = manifest_on_disk(store)
    [entry] = m.results
    assert entry.dir == "scenarios/cms/post@v/claude-code--anthropic-claude-3.5-sonnet"
    assert entry.agent_name == "claude-code|anthropic-claude-3.5-sonnet"  # the display name
    assert entry.file == f"{entry.dir}/result.json"
    assert entry.base_key == "cms/post" and entry.variant == "v"
    assert entry.token_usage is not None and entry.token_usage.total == 15
    assert entry.total_cost_usd == 0.5


def test_raw_output_that_is_not_json_is_raw_txt(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc()})
    store = new_store(loaded)
    ReportWriter(store, the_plan, loaded, flush_interval_s=0).record(
        outcome(the_plan.jobs[0], raw_output=["plain text\n", "more\n"])
    )
    assert (store.folder / "scenarios/a/codex/raw.txt").read_text() == "plain text\nmore\n"


def test_no_score_runs_have_no_sparse_index_until_scored(
    tmp_path: Path, make_project: MakeProject
) -> None:
    """As in AXIS, ``sparse-index.txt`` is the scorer's file: a writer told that nothing is
    scored (``--no-score``) leaves it out, and a score stored later writes it."""
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc()})
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0, sparse_index=False)
    transcript = Transcript(
        agent="codex",
        entries=[Entry(type="assistant", timestamp="2026-01-01T00:00:00.500Z", text="hi")],
    )
    run = writer.record(outcome(the_plan.jobs[0], transcript=transcript))
    folder = store.folder / "scenarios/a/codex"
    assert sorted(p.name for p in folder.iterdir()) == ["result.json", "transcript.json"]
    saved = RunResult.model_validate_json((folder / "result.json").read_bytes())
    assert "sparseIndex" not in saved.files

    result = score(80)
    index = build_sparse_index(transcript, scenario_key="a", agent_name="codex")
    store_score(store, run, result, None, index)  # the index the judges saw
    saved = RunResult.model_validate_json((folder / "result.json").read_bytes())
    assert saved.files["sparseIndex"] == "scenarios/a/codex/sparse-index.txt"
    assert saved.run.score is not None and saved.run.score.axis_score == 80
    assert (folder / "sparse-index.txt").read_text() == index.render()


def test_layout_repeated_runs_get_run_folders(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(runs=3)})
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    for job in the_plan.jobs:
        writer.record(outcome(job))
    pair = store.folder / "scenarios" / "a" / "codex"
    assert sorted(p.name for p in pair.iterdir()) == ["run-1", "run-2", "run-3"]
    assert all((pair / f"run-{i}" / "result.json").is_file() for i in (1, 2, 3))
    [entry] = manifest_on_disk(store).results
    assert [r.dir for r in entry.runs] == [f"scenarios/a/codex/run-{i}" for i in (1, 2, 3)]
    assert entry.representative_run_index == 1
    assert entry.file == "scenarios/a/codex/run-1/result.json"


def test_job_is_on_disk_before_the_manifest_is_rewritten(
    tmp_path: Path, make_project: MakeProject
) -> None:
    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(), "b": sc()}
    )

    writes: list[str] = []

    class Recording(ReportStore):
        def write_json(
            self, relative: str, value: Any, *, durable: bool = False, keep: bool = False
        ) -> None:
            if relative != "report.json":  # (a manifest is recorded by write_manifest)
                writes.append(relative)
            super().write_json(relative, value, durable=durable, keep=keep)

        def write_manifest(
            self,
            manifest: ReportManifest,
            *,
            durable: bool = False,
            chunks: Iterable[bytes] | None = None,
        ) -> None:
            writes.append("report.json")
            super().write_manifest(manifest, durable=durable, chunks=chunks)

    root = reports_root(loaded.config_dir)
    store = Recording(root / new_report_id(root))
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writes.clear()
    writer.record(outcome(the_plan.jobs[0]))
    writer.record(outcome(the_plan.jobs[1]))
    assert writes == [
        "scenarios/a/codex/result.json",
        "report.json",
        "scenarios/b/codex/result.json",
        "report.json",
    ]


def test_manifest_rewrites_are_rate_limited_but_results_are_not(
    tmp_path: Path, make_project: MakeProject
) -> None:
    """With thousands of jobs the manifest is not rewritten per job; result.json always is."""
    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(), "b": sc()}
    )
    root = reports_root(loaded.config_dir)
    store = ReportStore(root / new_report_id(root))
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=3600)
    writer.record(outcome(the_plan.jobs[0]))  # the first record after start is throttled
    writer.record(outcome(the_plan.jobs[1]))
    assert (store.folder / "scenarios/a/codex/result.json").is_file()
    assert (store.folder / "scenarios/b/codex/result.json").is_file()
    assert {r.runs[0].status for r in manifest_on_disk(store).results} == {"cancelled"}
    writer.finish("finished", 0)
    assert {r.runs[0].status for r in manifest_on_disk(store).results} == {"completed"}


def test_manifest_tracks_progress_and_finish(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(), "b": sc()}
    )
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writer.record(outcome(the_plan.jobs[0]))
    mid = manifest_on_disk(store)
    assert [p.status for p in mid.results] == ["completed", "cancelled"]
    assert (mid.summary.completed, mid.summary.cancelled) == (1, 1)
    writer.record(
        outcome(
            the_plan.jobs[1],
            status="failed",
            error="agent crashed",
            error_kind="agent",
            result=None,
        )
    )
    final = writer.finish("finished", 1)
    assert final.state == "finished" and final.exit_code == 1
    on_disk = manifest_on_disk(store)
    assert on_disk.state == "finished" and on_disk.exit_code == 1
    assert (on_disk.summary.completed, on_disk.summary.failed) == (1, 1)
    assert on_disk.results[1].error == "agent crashed" and on_disk.results[1].failed is True
    assert exit_code_for(on_disk) == 1


def test_answer_then_nonzero_exit_is_not_a_failure(
    tmp_path: Path, make_project: MakeProject
) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc()})
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writer.record(outcome(the_plan.jobs[0], exit_code=143, failed=False, result="the answer"))
    m = writer.finish("finished", None)
    [entry] = m.results
    assert entry.status == "completed" and entry.failed is False and entry.exit_code == 143
    assert exit_code_for(m) == 0


def test_one_failed_run_of_a_repeated_pair_does_not_fail_the_suite(
    tmp_path: Path, make_project: MakeProject
) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(runs=3)})
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    first, second, third = the_plan.jobs
    writer.record(outcome(first, status="failed", error="flaky"))
    writer.record(outcome(second))
    writer.record(outcome(third))
    m = writer.finish("finished", None)
    [entry] = m.results
    assert entry.status == "completed" and entry.representative_run_index == 2
    assert entry.reliability is not None
    assert (entry.reliability.succeeded, entry.reliability.total) == (2, 3)
    assert (m.summary.failed, m.summary.runs_failed, m.summary.runs_total) == (0, 1, 3)
    assert exit_code_for(m) == 0


def test_load_failures_are_in_the_report(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(
        tmp_path,
        make_project,
        {"agents": ["codex"]},
        {"a": sc(), "bad": {"name": "b", "prompt": "p"}},
    )
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writer.record(outcome(the_plan.jobs[0]))
    m = writer.finish("finished", None)
    assert [f.path for f in m.load_failures] == ["scenarios/bad.json"]
    assert m.summary.load_failures == 1
    assert exit_code_for(m) == 1, "load failures fail the run"


SECRET = "sk-live-0123456789abcdef"
HEADER = "Bearer hdr-secret-value"


def test_secrets_never_reach_disk(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(
        tmp_path,
        make_project,
        {
            "agents": ["codex"],
            "env": ["OPENAI_API_KEY"],
            "mcp_servers": {
                "docs": {"type": "http", "url": "https://mcp", "headers": {"Authorization": HEADER}}
            },
        },
        {"a": sc(prompt=f"use key {SECRET}", env={"API_TOKEN": SECRET})},
    )
    redactor = Redactor.from_env(["OPENAI_API_KEY"], {"OPENAI_API_KEY": SECRET}, [HEADER])
    store = new_store(loaded, redactor)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writer.record(
        outcome(
            the_plan.jobs[0],
            result=f"I used {SECRET}",
            stderr=f"debug: token={SECRET}",
            raw_output=[json.dumps({"text": SECRET}), json.dumps({"auth": HEADER})],
            transcript=Transcript(
                agent="codex",
                result=SECRET,
                entries=[Entry(type="user", timestamp="t", text=SECRET)],
            ),
            artifacts=[
                CollectedArtifact(
                    path="log.txt",
                    size_bytes=10,
                    mime_type="text/plain",
                    data=f"key={SECRET}".encode(),
                )
            ],
            setup_output=f"seeded {SECRET}",
        )
    )
    writer.finish("finished", 0)
    files = [p for p in store.folder.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        if "artifacts" in path.parts:
            continue
        text = path.read_text()
        assert SECRET not in text, path
        assert "hdr-secret-value" not in text, path
    report = (store.folder / "report.json").read_text()
    assert MASK in report
    m = manifest_on_disk(store)
    assert m.resolved_config["mcp_servers"]["docs"]["headers"] == {"Authorization": MASK}
    assert m.results[0].resolved_config["mcpServers"]["docs"]["headers"] == {"Authorization": MASK}
    assert m.results[0].runs[0].artifacts[0].content == f"key={MASK}"


def test_no_temporary_files_are_left(tmp_path: Path, make_project: MakeProject) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(runs=3)})
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    for job in the_plan.jobs:
        writer.record(outcome(job, stderr="x", raw_output=["{}"]))
    writer.finish("finished", 0)
    leftovers = [p for p in store.folder.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


@pytest.mark.parametrize("state", ["interrupted", "finished"])
def test_finish_states(tmp_path: Path, make_project: MakeProject, state: str) -> None:
    the_plan, loaded = planned(tmp_path, make_project, {"agents": ["codex"]}, {"a": sc()})
    store = new_store(loaded)
    m = ReportWriter(store, the_plan, loaded, flush_interval_s=0).finish(state, 130)
    assert manifest_on_disk(store).state == state
    assert m.results[0].status == "cancelled", "an unfinished job is cancelled, to be re-run"


# -- closing a run that did not end normally: each try needs less than the one before -----


def _closing(tmp_path: Path, make_project: MakeProject) -> tuple[ReportWriter, ReportStore]:
    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(), "b": sc()}
    )
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    writer.record(outcome(the_plan.jobs[0]))
    return writer, store


def test_close_writes_the_final_manifest_with_the_error(
    tmp_path: Path, make_project: MakeProject
) -> None:
    writer, store = _closing(tmp_path, make_project)
    assert writer.close("crashed", 3, "KeyError: 'x'") is None
    m = manifest_on_disk(store)
    assert (m.state, m.exit_code, m.error) == ("crashed", 3, "KeyError: 'x'")
    assert m.summary.runs_completed == 1 and m.summary.runs_cancelled == 1


def test_close_writes_the_manifest_as_it_stands_when_the_summary_fails(
    tmp_path: Path, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    import axis_eval.runs.writer as writer_module

    writer, store = _closing(tmp_path, make_project)

    def summarize(*args: Any) -> Any:
        raise ZeroDivisionError("the bug that crashed the run")

    monkeypatch.setattr(writer_module, "summarize", summarize)
    assert writer.close("crashed", 3, "ZeroDivisionError") is None
    m = manifest_on_disk(store)
    assert (m.state, m.error) == ("crashed", "ZeroDivisionError")
    assert [r.status for p in m.results for r in p.runs] == ["completed", "cancelled"]


def test_close_patches_the_file_on_disk_when_no_manifest_can_be_written(
    tmp_path: Path, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, store = _closing(tmp_path, make_project)

    def write_manifest(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("cannot serialize")

    monkeypatch.setattr(store, "write_manifest", write_manifest)
    assert writer.close("interrupted", 130, None) is None
    m = manifest_on_disk(store)
    assert (m.state, m.exit_code, m.error) == ("interrupted", 130, None)


def test_close_says_why_when_nothing_can_be_written(
    tmp_path: Path, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer, store = _closing(tmp_path, make_project)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "write_manifest", refuse)
    monkeypatch.setattr(store, "patch_manifest", refuse)
    assert writer.close("crashed", 3, "x") == "OSError: [Errno 28] No space left on device"
    assert manifest_on_disk(store).state == "running"  # the last write that worked


def test_a_resumed_crashed_report_runs_again_and_remembers_the_crash(
    tmp_path: Path, make_project: MakeProject
) -> None:
    writer, store = _closing(tmp_path, make_project)
    writer.close("crashed", 3, "KeyError: 'x'")
    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(), "b": sc()}
    )
    again = ReportWriter(store, the_plan, loaded, previous=manifest_on_disk(store))
    m = manifest_on_disk(store)
    assert (m.state, m.exit_code, m.error) == ("running", None, None)
    assert "an earlier attempt crashed (KeyError: 'x'): see crash.log" in m.warnings
    assert [j.scenario.key for j in again.pending] == ["b"]
    assert [j.scenario.key for j, _ in again.kept] == ["a"]


def test_interim_manifests_are_the_whole_manifest_serialized(
    tmp_path: Path, make_project: MakeProject
) -> None:
    # Each interim write serializes again only the pairs that changed; every write must
    # still be exactly what serializing the whole manifest gives, hostile text included
    # (a prompt holding the very text the pairs are spliced at, newlines, quotes, a secret).
    splice = '\n  "results": []'
    the_plan, loaded = planned(
        tmp_path,
        make_project,
        {"agents": ["codex", "goose"]},
        {"a": sc(prompt=f'say {splice} "quoted" é 🙂'), "b": sc(runs=3), "c": sc()},
    )
    store = new_store(loaded, Redactor(["sk-live-0123456789abcdef"]))
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)

    def expected() -> str:
        whole = writer.manifest.model_dump_json(by_alias=True, indent=2)
        return store.redactor.json_text(whole) + "\n"

    assert (store.folder / "report.json").read_text() == expected()
    for i, job in enumerate(the_plan.jobs):
        result = f"line one\nline two {splice} sk-live-0123456789abcdef" if i % 2 else "ok"
        if i == 0:
            result = "a value learnt as secret later: late-secret-value-4567"
        if i == 2:  # a pair kept since job 0 must be redacted again
            store.redactor.add(["late-secret-value-4567"])
        writer.record(outcome(job, "failed" if i == 3 else "completed", result=result))
        on_disk = (store.folder / "report.json").read_text()
        assert on_disk == expected(), f"after job {i}"
        assert "sk-live-0123456789abcdef" not in on_disk
        assert ("late-secret-value-4567" in on_disk) == (i < 2)
    writer.finish("finished", 0)
    assert (store.folder / "report.json").read_text() == expected()
    assert manifest_on_disk(store).summary.completed == 5


def test_an_interim_write_serializes_only_the_pair_that_changed(
    tmp_path: Path, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {k: sc() for k in "abcdef"}
    )
    dumped: list[str] = []
    original = PairEntry.model_dump_json

    def counting(self: PairEntry, **kwargs: Any) -> str:
        dumped.append(self.scenario_key)
        return original(self, **kwargs)

    monkeypatch.setattr(PairEntry, "model_dump_json", counting)
    store = new_store(loaded)
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    assert sorted(dumped) == list("abcdef")  # the first write: every pair
    dumped.clear()
    writer.record(outcome(the_plan.jobs[2]))
    assert dumped == ["c"]
    dumped.clear()
    writer.finish("finished", 0)  # a forced write: every pair again, whatever changed
    assert sorted(dumped) == list("abcdef")


def test_the_run_page_from_what_the_store_kept_is_the_page_from_the_disk(
    tmp_path: Path, make_project: MakeProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``axis run`` writes report.html from the transcripts and run files its store wrote,
    # without reading them back; the page must be the one the files on disk give.
    from axis_eval.report.html import render_html
    from axis_eval.runs import store as store_mod

    the_plan, loaded = planned(
        tmp_path, make_project, {"agents": ["codex"]}, {"a": sc(runs=2), "b": sc(), "c": sc()}
    )
    store = new_store(loaded, Redactor(["sk-live-0123456789abcdef"]))
    writer = ReportWriter(store, the_plan, loaded, flush_interval_s=0)
    monkeypatch.setattr(store_mod, "KEPT_FILE_BYTES", 2_000)  # c's transcript: not kept
    for job in the_plan.jobs:
        words = "x" * (3_000 if job.scenario.key == "c" else 10)
        entry = Entry(type="assistant", timestamp="t", text=f"{words} sk-live-0123456789abcdef")
        writer.record(
            outcome(
                job,
                transcript=Transcript(agent="codex", entries=[entry]),
                stderr="oops" if job.scenario.key == "b" else "",
                raw_output=["plain"],
            )
        )
    manifest = writer.finish("finished", 0)
    assert store.recall("scenarios/c/codex/transcript.json") is None
    assert store.recall("scenarios/b/codex/transcript.json") is not None
    assert store.written_in("scenarios/b/codex") == {
        "result.json",
        "transcript.json",
        "raw.txt",
        "stderr.log",
        "sparse-index.txt",
    }
    assert store.written_in("scenarios") is not None and store.written_in("nowhere") is None
    from_disk = render_html(store.folder, manifest=manifest)
    reads: list[str] = []
    real_read = Path.read_bytes

    def counting(self: Path) -> bytes:
        reads.append(self.name)
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", counting)
    from_store = render_html(store.folder, manifest=manifest, written=store)
    assert from_store == from_disk
    assert reads.count("transcript.json") == 1  # c's alone: too large to keep
    assert "sk-live-0123456789abcdef" not in from_store
