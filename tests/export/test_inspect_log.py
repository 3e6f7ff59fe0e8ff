"""``axis export --inspect``: a real report (``axis run`` on a scripted NDJSON agent) as an
Inspect AI eval log, read back with Inspect's own reader (``inspect_ai.log.read_eval_log``)
and compared with the report's manifest and transcripts; a planted secret masked; a run
without a transcript still a sample; the command end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from axis_eval.errors import UsageError
from axis_eval.export.inspect_log import write_inspect_log
from axis_eval.runs.store import read_manifest

from . import PLANTED, SECRET_VAR, make_report, report_folder, run_axis, transcripts

pytestmark = pytest.mark.slow  # runs `axis run` once per module

SCORE_NAMES = ("axisScore", "goalAchievement", "environment", "service", "agent")


def _inspect() -> Any:
    try:
        from inspect_ai import log
    except ImportError as exc:  # a dev dependency (pyproject's dev extras)
        import system_parts

        system_parts.not_run("INSPECT AI LOG READER", str(exc))
    return log


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("inspect") / "project"
    return root, make_report(root)


def _export(folder: Path, out: Path) -> int:
    return write_inspect_log(folder, read_manifest(folder), out)


def _runs(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every run of the report by its sample's (id, epoch)."""
    return {
        f"{pair['scenarioKey']}/{pair['agentName']}#{run['runIndex']}": {**run, "pair": pair}
        for pair in report["results"]
        for run in pair["runs"]
    }


def test_the_log_reads_back_and_matches_the_report(
    made: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    log_api = _inspect()
    root, report = made
    out = tmp_path / "log.json"
    written = _export(report_folder(root, report), out)
    log = log_api.read_eval_log(str(out))
    runs = _runs(report)
    assert written == len(runs) == len(log.samples) == 4
    assert log.version == 2 and log.status == "success"
    assert log.eval.dataset.samples == len(runs)
    shown = transcripts(root, report)
    for sample in log.samples:
        run = runs.pop(f"{sample.id}#{sample.epoch}")
        pair = run["pair"]
        assert sample.input == pair["prompt"]
        meta = sample.metadata
        assert (meta["scenario"], meta["agent"], meta["runIndex"], meta["status"]) == (
            pair["scenarioKey"],
            pair["agentName"],
            run["runIndex"],
            run["status"],
        )
        assert meta["reportId"] == report["reportId"]
        # scores: the composite, the four dimensions, the rubric checks
        score = run["score"]
        if score is None:
            assert sample.scores is None and sample.error is not None
        else:
            assert {k: sample.scores[k].value for k in SCORE_NAMES} == {
                k: score[k] for k in SCORE_NAMES
            }
            rubric = sample.scores["rubric"]
            assert rubric.value == {c["check"]: c["score"] for c in score["checks"]}
            for check in score["checks"]:
                assert check["rationale"] in rubric.explanation
        # messages: the prompt, then each tool call on an assistant message before its result
        messages = sample.messages
        assert messages[0].role == "user" and messages[0].text == pair["prompt"]
        calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls or []]
        tools = [e["tool"] for e in shown[(pair["scenarioKey"], run["runIndex"])]["entries"]]
        tools = [t for t in tools if t is not None]
        assert [(c.id, c.function, c.arguments) for c in calls] == [
            (t["id"], t["name"], t["input"]) for t in tools
        ]
        results = [m for m in messages if m.role == "tool"]
        assert [(m.tool_call_id, m.function, m.text) for m in results] == [
            (t["id"], t["name"], t["output"]) for t in tools
        ]
        assert [m.error is not None for m in results] == [t["isError"] for t in tools]
        for i, message in enumerate(messages):
            if message.role == "tool":  # right after the assistant message with its call
                before = messages[i - 1]
                holder = before if before.role == "assistant" else messages[i - 2]
                assert message.tool_call_id in [c.id for c in holder.tool_calls or []]
        # token usage
        usage = run["tokenUsage"]
        (model_usage,) = sample.model_usage.values()
        assert (model_usage.input_tokens, model_usage.output_tokens) == (
            usage["input"],
            usage["output"],
        )
        assert model_usage.input_tokens_cache_read == usage["cacheReadInput"]
    assert runs == {}


def test_the_header_alone_has_the_results(
    made: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    log_api = _inspect()
    root, report = made
    out = tmp_path / "log.json"
    _export(report_folder(root, report), out)
    header = log_api.read_eval_log(str(out), header_only=True)
    assert header.samples is None
    runs = [run for pair in report["results"] for run in pair["runs"]]
    assert header.eval.dataset.samples == header.results.total_samples == len(runs)
    means = {s.name: s.metrics["mean"].value for s in header.results.scores if s.metrics}
    for name in SCORE_NAMES:
        values = [r["score"][name] for r in runs if r["score"] is not None]
        assert values and means[name] == pytest.approx(sum(values) / len(values), abs=1e-3)
    usage = header.stats.model_usage["tooler"]
    assert usage.input_tokens == sum(r["tokenUsage"]["input"] for r in runs)


def test_a_secret_in_the_environment_is_masked(
    made: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, report = made
    folder = report_folder(root, report)
    _export(folder, tmp_path / "plain.json")
    assert PLANTED in (tmp_path / "plain.json").read_text()  # the report itself keeps it
    monkeypatch.setenv(SECRET_VAR, PLANTED)
    _export(folder, tmp_path / "masked.json")
    text = (tmp_path / "masked.json").read_text()
    assert PLANTED not in text and "[REDACTED]" in text
    json.loads(text)


def test_a_cancelled_run_without_a_transcript_is_a_sample_with_an_error(
    made: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    log_api = _inspect()
    root, report = made
    folder = tmp_path / "report"
    shutil.copytree(report_folder(root, report), folder)
    manifest = json.loads((folder / "report.json").read_text())
    ok = next(p for p in manifest["results"] if p["scenarioKey"] == "ok")
    run = ok["runs"][1]
    (folder / run["dir"] / "transcript.json").unlink()
    run.update(status="cancelled", failed=True, score=None, result=None, error=None)
    (folder / "report.json").write_text(json.dumps(manifest))
    assert _export(folder, tmp_path / "log.json") == 4
    log = log_api.read_eval_log(str(tmp_path / "log.json"))
    (sample,) = [s for s in log.samples if s.id == "ok/tooler" and s.epoch == run["runIndex"]]
    assert sample.error is not None and "cancelled" in sample.error.message
    assert sample.scores is None and sample.metadata["status"] == "cancelled"
    assert [(m.role, m.text) for m in sample.messages] == [("user", ok["prompt"])]
    assert log.results.scores[0].scored_samples == 2


def test_the_eval_zip_format_is_refused(made: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, report = made
    with pytest.raises(UsageError, match=r"\.eval \(zip\) log format is not written"):
        _export(report_folder(root, report), tmp_path / "log.eval")
    assert not (tmp_path / "log.eval").exists()


def test_axis_export_latest_inspect(made: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    log_api = _inspect()
    root, report = made
    out = tmp_path / "deep" / "out.json"
    done = run_axis("export", "latest", "--inspect", str(out), cwd=root)
    assert done.exit_code == 0, done.stderr
    assert f"inspect: 4 sample(s) → {out}" in done.stdout
    log = log_api.read_eval_log(str(out))
    assert len(log.samples) == sum(len(p["runs"]) for p in report["results"])
    refused = run_axis("export", "latest", "--inspect", str(tmp_path / "x.eval"), cwd=root)
    assert refused.exit_code == 2
    assert "not written" in refused.output and "Traceback" not in refused.output
