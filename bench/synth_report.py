"""Synthetic but valid report folders, for the HTML report's tests and render benchmark.

    from synth_report import write_synthetic_report   # with bench/ on sys.path
    folder = write_synthetic_report(tmp_path, jobs=1000, runs_per_pair=3, seed=1)

Nothing is executed and nothing is hand-written JSON. The generator writes a real project
(``axis.config.json`` and scenario files) into ``config_dir``, loads and plans it with the
real code (``load_config``, ``plan``), then feeds made-up job outcomes through the real
``ReportWriter``. So the folder has exactly the files a real ``axis run`` writes
(``report.json``; per run ``result.json``, ``transcript.json``, ``sparse-index.txt``,
``verdicts.json``, ``raw.ndjson``, ``stderr.log``, ``artifacts/``), every score is computed
by ``score_from_verdicts`` from seeded judge verdicts, and the representative run, spread,
reliability, pass rates and summary come from ``runs.aggregate``, as in a real run.

What is made up (seeded, so the same arguments give the same content): three agents with
their own tool names (Claude Code, Codex, Gemini), ``interactions`` tool calls per completed
run with outputs from a few hundred bytes to a few KiB, judge checks (some deterministic),
per-interaction audits with rationales, necessity verdicts, judge spend, token usage and
cost (estimated for Gemini), setup and teardown notes, artifacts (a few large ones only
linked), about 6 % failed runs (timeout, crash, spawn error), about 2 % withheld scores.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from axis_eval._types import CATEGORIES, ErrorKind, JobStatus, TokenUsage
from axis_eval.config.load import load_config
from axis_eval.execute.models import CollectedArtifact, JobOutcome
from axis_eval.planning.matrix import Selection, plan
from axis_eval.planning.models import JobSpec
from axis_eval.runs.aggregate import PassGate
from axis_eval.runs.store import ReportStore, new_report_id, reports_root
from axis_eval.runs.writer import ReportWriter
from axis_eval.scoring.composite import score_from_verdicts
from axis_eval.scoring.models import (
    CheckVerdict,
    InteractionAudit,
    JudgeSpend,
    JudgeVerdicts,
    NecessityVerdict,
)
from axis_eval.transcript.models import Entry, ToolCall, Transcript
from axis_eval.transcript.sparse_index import SparseIndex, build_sparse_index

AGENTS: list[dict[str, str]] = [
    {"agent": "claude-code"},
    {"agent": "codex", "model": "gpt-5.5"},
    {"agent": "gemini", "model": "gemini-2.5-pro"},
]
"""Built-in adapters: planning resolves them by name and never looks for the CLIs."""

FAILED_SHARE = 0.06
WITHHELD_SHARE = 0.02
EPOCH = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

AREAS = ("billing", "search", "auth", "files", "deploy", "reports", "users", "webhooks")
TASKS = ("refund", "lookup", "rotate-key", "upload", "rollback", "export", "invite", "retry")
WORDS = (
    "invoice", "customer", "request", "token", "service", "deploy", "cluster", "config",
    "bucket", "record", "batch", "retry", "timeout", "status", "payload", "schema", "version",
    "region", "owner", "account", "quota", "event", "job", "build", "cache", "index", "query",
    "result", "error", "warning", "handler", "client", "server", "policy", "key",
)  # fmt: skip
CHECK_TEXTS = (
    "The agent used the documented endpoint rather than scraping the dashboard",
    "The final answer states the identifier of the object it changed",
    "No secret from the environment appears in the transcript",
    "The change was verified by reading the object back",
    "The agent explained why a retry was needed",
    "Only the requested record was modified",
)
RATIONALES = (
    "The call returned the expected records on the first try.",
    "Output was far larger than needed: a full listing where one id was enough.",
    "The command failed with a permission error and was repeated unchanged.",
    "Relevant: it located the configuration the task depends on.",
    "Redundant with #{prev}: the same file was read again without a change in between.",
    "Right-sized query, filtered on the server side.",
)


@dataclass(frozen=True)
class _Style:
    """How one agent names its tools (the categories follow from the names)."""

    shell: str
    read: str
    edit: str
    fetch: str
    plan: str
    mcp: str
    shell_kind: str | None = None
    cost_estimated: bool = False


STYLES = {
    "claude-code": _Style("Bash", "Read", "Edit", "WebFetch", "TodoWrite", "mcp__api__call"),
    "codex": _Style(
        "command_execution",
        "command_execution",
        "file_change",
        "web_search",
        "todo_list",
        "mcp_tool_call",
        shell_kind="command_execution",
    ),
    "gemini": _Style(
        "run_shell_command",
        "read_file",
        "replace",
        "web_fetch",
        "write_todos",
        "mcp__api__call",
        cost_estimated=True,
    ),
}


def write_synthetic_report(
    config_dir: Path,
    jobs: int,
    *,
    runs_per_pair: int = 1,
    interactions: int = 25,
    seed: int = 0,
) -> Path:
    """Write a complete report with ``jobs`` runs (``jobs // runs_per_pair`` pairs).

    Returns the report folder, ``config_dir/.axis/reports/<id>/``. ``jobs`` must be a
    positive multiple of ``runs_per_pair``, which is an odd count from 1 to 19 as ``--runs``
    takes it (planning raises ``UsageError`` otherwise).
    """
    if runs_per_pair < 1 or jobs < runs_per_pair or jobs % runs_per_pair:
        raise ValueError(f"jobs ({jobs}) must be a positive multiple of runs ({runs_per_pair})")
    pairs = jobs // runs_per_pair
    rng = random.Random(seed)
    config_dir.mkdir(parents=True, exist_ok=True)
    _write_project(config_dir, pairs, rng)
    loaded = load_config(str(config_dir))
    the_plan = plan(loaded, Selection(runs=runs_per_pair))
    assert len(the_plan.jobs) == jobs, (len(the_plan.jobs), jobs)
    folder = reports_root(config_dir) / new_report_id(reports_root(config_dir))
    writer = ReportWriter(ReportStore(folder), the_plan, loaded, gate=PassGate())
    quality = {
        pair: min(0.98, max(0.2, rng.gauss(0.72, 0.18)))
        for pair in dict.fromkeys(job.pair_key for job in the_plan.jobs)
    }
    for job in the_plan.jobs:
        writer.record(_outcome(job, quality[job.pair_key], interactions, rng))
    failed = any(p.failed for p in writer.manifest.results)
    writer.finish("finished", 1 if failed else 0)
    return folder


# --- the project ---------------------------------------------------------------------------


def _write_project(root: Path, pairs: int, rng: random.Random) -> None:
    n_agents = min(len(AGENTS), pairs)
    n_scenarios = math.ceil(pairs / n_agents)
    last_agents = pairs - (n_scenarios - 1) * n_agents
    config = {
        "name": f"synthetic ({pairs} pairs)",
        "agents": AGENTS[:n_agents],
        "judging": {"model": "anthropic:claude-sonnet-4-5"},
        "artifacts": ["*.txt", "*.log"],
        "env": ["API_BASE_URL", "API_TOKEN"],
    }
    (root / "axis.config.json").write_text(json.dumps(config, indent=2))
    for number in range(n_scenarios):
        area = AREAS[number % len(AREAS)]
        task = TASKS[(number // len(AREAS)) % len(TASKS)]
        path = root / "scenarios" / area / f"{task}-{number:04d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        scenario: dict[str, Any] = {
            "name": f"{task.replace('-', ' ').capitalize()} in {area} #{number}",
            "prompt": _sentence(rng, 30) + " Report the id of what you changed.",
            "judge": _rubric(rng),
            "setup": [
                {
                    "action": "run_script",
                    "command": 'echo "seeded fixtures for run $AXIS_RUN_INDEX" >> "$AXIS_OUTPUT"',
                }
            ],
        }
        if rng.random() < 0.3:
            scenario["teardown"] = [{"action": "run_script", "command": "echo cleaned"}]
        if number == n_scenarios - 1 and last_agents < n_agents:
            scenario["agents"] = [a["agent"] for a in AGENTS[:last_agents]]
        path.write_text(json.dumps(scenario, indent=2))


def _rubric(rng: random.Random) -> list[dict[str, Any]]:
    checks: list[dict[str, Any]] = [
        {"check": text, "weight": rng.choice([0.5, 1.0, 1.0, 2.0])}
        for text in rng.sample(CHECK_TEXTS, rng.randint(2, 4))
    ]
    if rng.random() < 0.4:
        checks.append({"check": "The output file exists", "run": "test -s out.txt"})
    return checks


# --- one job's outcome -----------------------------------------------------------------------


def _outcome(job: JobSpec, quality: float, interactions: int, rng: random.Random) -> JobOutcome:
    q = min(0.99, max(0.05, quality + rng.gauss(0, 0.06)))
    style = STYLES[job.agent.adapter]
    start = EPOCH + timedelta(seconds=37 * job.number)
    fail: ErrorKind | None = None
    if rng.random() < FAILED_SHARE:
        fail = rng.choice(["timeout", "agent", "spawn"])
    calls = 0 if fail == "spawn" else interactions
    if fail in ("timeout", "agent"):
        calls = rng.randint(0, max(0, interactions - 1))
    transcript = None if fail == "spawn" else _transcript(job, style, q, calls, start, rng)
    status: JobStatus = "failed" if fail else "completed"
    duration = transcript.duration_ms if transcript else 40
    outcome = JobOutcome(
        spec=job,
        status=status,
        failed=fail is not None,
        exit_code={None: 0, "timeout": None, "agent": 1, "spawn": None}[fail],
        error=_error(fail, job),
        error_kind=fail,
        started_at=_iso(start),
        ended_at=_iso(start + timedelta(milliseconds=duration)),
        duration_ms=duration,
        transcript=transcript,
        raw_output=_raw(transcript),
        stderr="" if fail is None else f"{job.agent.adapter}: {_error(fail, job)}\n",
        result=transcript.result if transcript else None,
        setup_output=f"seeded fixtures for run {job.run_index}",
        teardown_output="cleaned" if job.scenario.teardown else None,
        artifacts=_artifacts(rng) if fail is None else [],
        workspace=f"/tmp/axis-synth/{job.number}/workspace",
        warnings=["2 stdout lines were not JSON"] if rng.random() < 0.03 else [],
    )
    if transcript is not None and fail is None:
        index = build_sparse_index(
            transcript, scenario_key=job.scenario.key, agent_name=job.agent.name
        )
        verdicts = _verdicts(job, index, q, rng)
        outcome.verdicts = verdicts
        outcome.score = score_from_verdicts(transcript, index, verdicts)
    return outcome


def _error(fail: ErrorKind | None, job: JobSpec) -> str | None:
    if fail is None:
        return None
    return {
        "timeout": f"Timed out after {job.time_limit_s / 60:g} minutes",
        "agent": "The agent exited with code 1 before answering",
        "spawn": f"{job.agent.adapter}: command not found",
    }.get(fail, "failed")


def _transcript(
    job: JobSpec, style: _Style, q: float, calls: int, start: datetime, rng: random.Random
) -> Transcript:
    offset = rng.randint(300, 2500)
    entries = [
        Entry(type="user", timestamp=_iso(start), offset_ms=0, text=job.scenario.prompt),
        Entry(
            type="system",
            timestamp=_iso(start + timedelta(milliseconds=offset)),
            offset_ms=offset,
            text=f"init: model {job.agent.model or 'default'}, 24 tools",
        ),
    ]
    for number in range(1, calls + 1):
        if rng.random() < 0.5:
            kind = "thinking" if rng.random() < 0.3 else "assistant"
            entries.append(_entry(kind, start, offset, _sentence(rng, rng.randint(8, 40))))
            offset += rng.randint(200, 3000)
        call, took = _call(style, number, q, start, offset, rng)
        entries.append(
            Entry(type="tool", timestamp=_iso(start + timedelta(milliseconds=offset)),
                  offset_ms=offset, tool=call)
        )  # fmt: skip
        offset += took + rng.randint(50, 1500)
    answer = f"Done: changed {rng.choice(WORDS)}-{rng.randint(1000, 9999)}. " + _sentence(rng, 20)
    entries.append(_entry("assistant", start, offset, answer))
    offset += rng.randint(100, 900)
    input_tokens = rng.randint(8_000, 60_000) + calls * rng.randint(1_500, 4_000)
    output_tokens = rng.randint(300, 1_200) + calls * rng.randint(40, 200)
    cached = int(input_tokens * rng.uniform(0.3, 0.8))
    return Transcript(
        agent=job.agent.adapter,
        agent_version={"claude-code": "2.1.197", "codex": "0.98.0", "gemini": "0.21.3"}.get(
            job.agent.adapter
        ),
        model=job.agent.model or "claude-opus-4-8",
        session_id=f"synth-{job.number:06d}",
        started_at=_iso(start),
        ended_at=_iso(start + timedelta(milliseconds=offset)),
        duration_ms=offset,
        entries=entries,
        usage=TokenUsage(
            input=input_tokens - cached, output=output_tokens, cache_read_input=cached
        ),
        cost_usd=round((input_tokens - cached) * 3e-6 + cached * 3e-7 + output_tokens * 1.5e-5, 6),
        cost_estimated=style.cost_estimated,
        result=answer,
    )


def _entry(kind: Any, start: datetime, offset: int, text: str) -> Entry:
    return Entry(
        type=kind,
        timestamp=_iso(start + timedelta(milliseconds=offset)),
        offset_ms=offset,
        text=text,
    )


def _call(
    style: _Style, number: int, q: float, start: datetime, offset: int, rng: random.Random
) -> tuple[ToolCall, int]:
    pick = rng.random()
    word = rng.choice(WORDS)
    name, kind, tool_input = style.shell, style.shell_kind, {"command": f"ls -la ./{word}"}
    if pick < 0.25:
        tool_input = {"command": f"grep -rn {word} src/ | head -50"}
    elif pick < 0.4:
        tool_input = {"command": f"curl -s https://api.example.test/v1/{word}s?limit=20"}
    elif pick < 0.55:
        name, tool_input = style.read, {"file_path": f"/workspace/{word}/{rng.choice(WORDS)}.py"}
    elif pick < 0.7:
        name, tool_input = (
            style.edit,
            {
                "file_path": f"/workspace/{word}.yaml",
                "old_string": f"{word}: {rng.randint(1, 9)}",
                "new_string": f"{word}: {rng.randint(10, 99)}",
            },
        )
    elif pick < 0.8:
        name, tool_input = style.fetch, {"url": f"https://docs.example.test/{word}"}
    elif pick < 0.88:
        name, tool_input = style.plan, {"todos": [_sentence(rng, 6) for _ in range(3)]}
    else:
        name, tool_input = style.mcp, {"operation": f"get_{word}", "id": rng.randint(1, 10_000)}
    if name != style.shell:
        kind = {"file_change": "file_change", "mcp_tool_call": "mcp_tool_call"}.get(name)
    error = rng.random() < (1 - q) * 0.35
    output = _output(rng, error)
    took = int(min(60_000, rng.lognormvariate(5.5, 1.3)))
    begin = start + timedelta(milliseconds=offset)
    call = ToolCall(
        id=f"call_{number:03d}_{rng.getrandbits(32):08x}",
        name=name,
        input=tool_input,
        output=output,
        is_error=error,
        kind=kind,
        started_at=_iso(begin),
        ended_at=_iso(begin + timedelta(milliseconds=took)),
        duration_ms=took,
        input_bytes=len(json.dumps(tool_input)),
        output_bytes=len(output.encode()),
    )
    return call, took


def _output(rng: random.Random, error: bool) -> str:
    """A few hundred bytes to a few KiB of plausible tool output."""
    if error:
        return f"error: {rng.choice(WORDS)} {rng.choice(WORDS)} failed (exit 1)\n" + _lines(
            rng, rng.randint(2, 8)
        )
    size = int(rng.lognormvariate(6.8, 0.8))  # median ~900 B, most between 200 B and 5 KiB
    return _lines(rng, max(3, size // 60))


def _lines(rng: random.Random, count: int) -> str:
    out = []
    for _ in range(count):
        form = rng.random()
        if form < 0.4:
            out.append(
                f"-rw-r--r-- 1 dev dev {rng.randint(10, 99999):>6} Nov 30 09:{rng.randint(10, 59)} "
                f"{rng.choice(WORDS)}_{rng.choice(WORDS)}.py"
            )
        elif form < 0.7:
            out.append(
                json.dumps({"id": rng.randint(1, 10**6), rng.choice(WORDS): rng.choice(WORDS)})
            )
        else:
            out.append(f"{rng.choice(('INFO', 'DEBUG', 'WARN'))} {_sentence(rng, 8)}")
    return "\n".join(out) + "\n"


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(max(1, words)))
    return text[0].upper() + text[1:] + "."


def _verdicts(job: JobSpec, index: SparseIndex, q: float, rng: random.Random) -> JudgeVerdicts:
    if rng.random() < WITHHELD_SHARE:
        return JudgeVerdicts(
            withheld_reason="judge failed after 6 attempts: HTTP 529 overloaded",
            chunks=1,
            spend=JudgeSpend(judge="anthropic", model="claude-sonnet-4-5", kind="api", calls=6),
        )
    checks: list[CheckVerdict] = []
    rubric = job.scenario.judge if isinstance(job.scenario.judge, list) else []
    for item in rubric:
        met = rng.random() < q
        if item.run:
            code = 0 if met else 1
            checks.append(
                CheckVerdict(
                    check=item.check,
                    weight=item.weight,
                    score=10 if met else 0,
                    rationale=f"`{item.run}` exited {code}",
                    kind="deterministic",
                    command=item.run,
                    exit_code=code,
                    output="" if met else "out.txt: empty",
                )
            )
        else:
            score = 10 if met else rng.choice([0, 5, 5, 7])
            checks.append(
                CheckVerdict(
                    check=item.check,
                    weight=item.weight,
                    score=score,
                    rationale=_sentence(rng, rng.randint(10, 30)),
                )
            )
    audits = []
    for interaction in index.interactions:
        if rng.random() > 0.6:
            continue
        good = rng.random() < q
        audits.append(
            InteractionAudit(
                interaction_id=interaction.id,
                success=0.0 if interaction.is_error else (1.0 if good else 0.7),
                weight=1.0 if good else rng.choice([0.3, 0.7]),
                relevance=1.0 if good else rng.choice([0.3, 0.5, 0.8]),
                rationale=rng.choice(RATIONALES).format(prev=max(1, interaction.id - 1)),
            )
        )
    necessity = {}
    for category in CATEGORIES:
        members = [i.id for i in index.in_category(category)]
        extra = [i for i in members if rng.random() > q + 0.15]
        necessity[category] = NecessityVerdict(
            score=round(max(0.2, 1 - len(extra) / max(1, len(members))), 2),
            unnecessary_ids=extra,
            rationale=_sentence(rng, 15) if extra else "",
        )
    calls = 2 + (len(index.interactions) > 0)
    input_tokens = 1_200 + 180 * len(index.interactions)
    output_tokens = 90 + 40 * len(audits)
    return JudgeVerdicts(
        checks=checks,
        audits=audits,
        necessity=necessity,
        chunks=1,
        spend=JudgeSpend(
            judge="anthropic",
            model="claude-sonnet-4-5",
            kind="api",
            calls=calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=round(input_tokens * 3e-6 + output_tokens * 1.5e-5, 6),
            cost_estimated=True,
        ),
        notes=[f"{len(index.interactions) - len(audits)} interaction(s) were not audited"],
    )


def _artifacts(rng: random.Random) -> list[CollectedArtifact]:
    text = _lines(rng, rng.randint(3, 30)).encode()
    found = [CollectedArtifact(path="out.txt", size_bytes=len(text), mime_type="text/plain",
                               data=text)]  # fmt: skip
    roll = rng.random()
    if roll < 0.05:  # larger than the manifest inlines (64 KiB): linked as a file only
        big = _lines(rng, 1_400).encode()
        found.append(
            CollectedArtifact(path="debug.log", size_bytes=len(big), mime_type="text/plain",
                              data=big)
        )  # fmt: skip
    elif roll < 0.07:  # over the collection cap: recorded, not copied
        found.append(
            CollectedArtifact(
                path="dump.log",
                size_bytes=60 * 1024 * 1024,
                mime_type="text/plain",
                note="not copied: the run's artifacts exceed 52428800 bytes",
            )
        )
    return found


def _raw(transcript: Transcript | None) -> list[str]:
    """The agent's stdout as NDJSON events (shorter than the real thing: no outputs)."""
    if transcript is None:
        return []
    lines = []
    for entry in transcript.entries:
        event: dict[str, Any] = {"type": entry.type, "offsetMs": entry.offset_ms}
        if entry.tool is not None:
            event.update(name=entry.tool.name, id=entry.tool.id)
        elif entry.text:
            event["text"] = entry.text[:200]
        lines.append(json.dumps(event))
    return lines


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
