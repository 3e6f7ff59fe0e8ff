"""Output limits: whatever an agent prints, the run ends at a cap with what came before kept.

Agents that print forever (tests/agents/output_hostile.py) run through the supervisor with
small caps (``RunControl.output``, the config's ``limits.output``): each run must end at
once with kind ``output_limit`` and the limit named, the agent's processes gone, and the
transcript, the raw output and stderr bounded. Without the caps each of these agents runs
until the time limit (set far above what the test waits for) holding everything it printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from axis_eval.adapters.base import AdapterInput
from axis_eval.adapters.declarative import declarative_adapter
from axis_eval.adapters.supervision import (
    MAX_LINE_BYTES,
    RAW_HEAD_BYTES,
    RAW_TAIL_BYTES,
    RawOutput,
)
from axis_eval.adapters.transcript_builder import ENTRY_TEXT_BYTES, TranscriptBuilder
from axis_eval.config.models import DeclarativeAdapter
from axis_eval.config.output_limit import OutputLimit
from axis_eval.execute.process import marked_pids
from axis_eval.execute.supervise import AgentRun, RunControl, run_agent
from helpers.agent_runs import MakeInput, agent_argv, input_maker, new_control

MIB = 1024 * 1024
WAIT_S = 20.0  # the time limit: a run that is not stopped by a cap takes this long
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def make_input(tmp_path: Path) -> MakeInput:
    return input_maker(tmp_path)


def hostile(mode: str, *args: str, output: str = "ndjson") -> Any:
    spec = DeclarativeAdapter(
        command=agent_argv("output_hostile.py", mode, *args), args=[], output=output
    )
    return declarative_adapter("hostile", spec)


def caps(**fields: int) -> OutputLimit:
    """Small caps; what is not given is far out of the way."""
    wide: dict[str, int] = {"bytes": 512 * MIB, "transcript_bytes": 256 * MIB, "events": 10**6}
    return OutputLimit(**{**wide, **fields})


async def run(adapter: Any, inp: AdapterInput, control: RunControl) -> tuple[AgentRun, float]:
    t0 = time.monotonic()
    out = await run_agent(adapter, inp, control)
    return out, time.monotonic() - t0


def text_bytes(out: AgentRun) -> int:
    assert out.transcript is not None
    total = 0
    for e in out.transcript.entries:
        total += len((e.text or "").encode())
        if e.tool is not None:
            total += len((e.tool.output or "").encode()) + len(json.dumps(e.tool.input))
    return total


async def test_endless_output_stops_at_the_byte_cap(make_input: MakeInput) -> None:
    control = new_control(output=caps(bytes=2 * MIB))
    out, took = await run(hostile("flood"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit", out.error
    assert out.error == (
        "Output limit reached: the agent printed more than 2 MiB on stdout and stderr "
        "(limits.output.bytes)"
    )
    assert out.failed and took < WAIT_S / 2
    assert marked_pids(control.marker) == []  # its process group was stopped
    assert out.transcript is not None
    kept = [e for e in out.transcript.entries if e.type == "assistant"]
    # What came before the cap is kept (the cap's last partial line is not an event).
    assert 1800 <= len(kept) <= 2 * MIB // 1000
    assert sum(len(x) for x in out.raw_output) <= 2 * MIB


async def test_stderr_counts_toward_the_byte_cap(make_input: MakeInput) -> None:
    control = new_control(output=caps(bytes=1 * MIB))
    out, took = await run(hostile("stderr"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit" and "limits.output.bytes" in (out.error or "")
    assert took < WAIT_S / 2
    assert len(out.stderr) <= 100_000


async def test_events_cap_keeps_the_transcript_up_to_it(make_input: MakeInput) -> None:
    control = new_control(output=caps(events=200))
    out, _ = await run(hostile("tools", "5000"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit"
    assert out.error == (
        "Output limit reached: the transcript holds 200 events (limits.output.events)"
    )
    assert out.transcript is not None
    entries = out.transcript.entries
    assert len(entries) == 201  # the cap, then the note of what was left out
    assert entries[-1].type == "system" and "limits.output.events" in (entries[-1].text or "")
    tools = [e.tool for e in entries if e.tool is not None]
    assert [t.id for t in tools] == [f"t{i}" for i in range(len(tools))]  # in order, no stray
    assert all(t.output == str(i) for i, t in enumerate(tools[:-1]))  # results paired
    assert out.result is None  # the answer came after the cap


async def test_transcript_text_cap(make_input: MakeInput) -> None:
    control = new_control(output=caps(transcript_bytes=100_000))
    out, took = await run(hostile("flood"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit"
    assert "limits.output.transcript_bytes" in (out.error or "")
    assert took < WAIT_S / 2
    assert 90_000 <= text_bytes(out) <= 100_000 + 200


async def test_a_message_streamed_forever_is_held_to_one_text(make_input: MakeInput) -> None:
    control = new_control(output=caps(bytes=12 * MIB))
    out, _ = await run(hostile("deltas"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit" and "limits.output.bytes" in (out.error or "")
    assert out.transcript is not None
    (message,) = [e.text or "" for e in out.transcript.entries if e.type == "assistant"]
    assert ENTRY_TEXT_BYTES - 1000 <= len(message.encode()) <= ENTRY_TEXT_BYTES + 100
    assert message.endswith("more bytes left out]")


async def test_one_endless_line_is_never_held_whole(make_input: MakeInput) -> None:
    control = new_control(output=caps(bytes=MAX_LINE_BYTES + 4 * MIB))
    out, took = await run(hostile("line"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit" and took < WAIT_S / 2
    (line,) = out.raw_output
    assert len(line) < 100_000 and line.endswith("more bytes left out]")
    assert any("longer than a line may be" in w for w in out.warnings)


async def test_a_line_too_long_is_left_out_and_the_run_goes_on(make_input: MakeInput) -> None:
    size = MAX_LINE_BYTES + MIB
    out, _ = await run(
        hostile("long-line", str(size)), make_input(time_limit_s=WAIT_S), new_control()
    )
    assert out.error is None and out.result == "done"
    assert len(out.raw_output[0]) < 100_000
    assert any(f"is {size:,} bytes, longer than a line may be" in w for w in out.warnings)


async def test_raw_output_keeps_its_head_and_tail(make_input: MakeInput) -> None:
    total = RAW_HEAD_BYTES + RAW_TAIL_BYTES + 4 * MIB
    control = new_control(output=caps(bytes=total))
    out, _ = await run(hostile("deltas"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit"
    raw = out.raw_output
    notes = [json.loads(x) for x in raw if x.startswith('{"axis"')]
    assert len(notes) == 1 and notes[0]["bytes"] > 3 * MIB
    kept = sum(len(x) for x in raw)
    assert RAW_HEAD_BYTES + RAW_TAIL_BYTES - 2 * MIB < kept <= RAW_HEAD_BYTES + RAW_TAIL_BYTES
    assert json.loads(raw[0])["type"] == "assistant_delta"  # the head, as printed


async def test_endless_free_text_stops_at_the_text_cap(make_input: MakeInput) -> None:
    control = new_control(output=caps(transcript_bytes=1 * MIB))
    out, took = await run(hostile("text", output="text"), make_input(time_limit_s=WAIT_S), control)
    assert out.error_kind == "output_limit"
    assert "limits.output.transcript_bytes" in (out.error or "")
    assert took < WAIT_S / 2
    assert out.result is not None and len(out.result) <= MIB + 100


async def test_long_free_text_keeps_its_head_and_tail(make_input: MakeInput) -> None:
    out, _ = await run(hostile("text-of", str(6 * MIB), output="text"), make_input(), new_control())
    assert out.error is None and out.result is not None
    assert out.result.startswith("HEAD ") and out.result.endswith(" TAIL")
    assert "bytes of output left out here]" in out.result
    assert len(out.result) <= ENTRY_TEXT_BYTES


async def test_deep_line_is_not_json_and_the_run_goes_on(make_input: MakeInput) -> None:
    out, _ = await run(hostile("deep"), make_input(), new_control())
    assert out.error is None and out.result == "done"
    assert any("is not JSON" in w for w in out.warnings)


# -- the whole run, in a child process: its memory and its report ------------------------


def _project(root: Path, mode: str, output: dict[str, int], minutes: float = 1.0) -> Path:
    root.mkdir(parents=True)
    (root / "scenarios").mkdir()
    adapter = {
        "command": agent_argv("output_hostile.py", mode),
        "args": [],
        "output": "text" if mode == "text" else "ndjson",
    }
    config = {
        "name": "hostile",
        "agents": ["hostile"],
        "adapters": {"hostile": adapter},
        "settings": {"limits": {"scenario": {"time_minutes": minutes, "output": output}}},
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    scenario = {"name": mode, "prompt": "print", "judge": "it printed"}
    (root / "scenarios" / f"{mode}.json").write_text(json.dumps(scenario))
    return root


HARNESS_HWM_MIB = 0.0
"""The last :func:`_run_cli` child's own peak RSS (its agent excluded), in MiB."""


def _run_cli(root: Path, timeout_s: float = 50) -> tuple[int, float, float]:
    """``axis run --no-score`` in a child; exit code, wall seconds, peak RSS MiB (wait4: the
    harness and every process it waited for, the agent included)."""

    def limit_memory() -> None:  # without the caps, fail fast instead of eating the machine
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "axis_eval", "run", "--no-score", "-c", str(root)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=limit_memory,
    )
    deadline = time.monotonic() + timeout_s
    global HARNESS_HWM_MIB
    HARNESS_HWM_MIB = 0.0
    while True:
        with contextlib.suppress(OSError, ValueError, IndexError):  # axis run alone, for messages
            status_text = Path(f"/proc/{proc.pid}/status").read_text()
            hwm = [line for line in status_text.splitlines() if line.startswith("VmHWM:")]
            HARNESS_HWM_MIB = max(HARNESS_HWM_MIB, int(hwm[0].split()[1]) / 1024)
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, 9)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.monotonic() - t0, usage.ru_maxrss / 1024


def _only_run(root: Path) -> tuple[Path, dict[str, Any]]:
    (folder,) = [p for p in (root / ".axis" / "reports").iterdir() if p.is_dir()]
    manifest = json.loads((folder / "report.json").read_text())
    (pair,) = manifest["results"]
    (entry,) = pair["runs"]
    return folder, entry


def test_a_flooding_agent_leaves_memory_and_report_bounded(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "flood", {"bytes": 6 * MIB, "events": 3000})
    code, took, rss = _run_cli(root)
    assert code == 1 and took < 40
    folder, entry = _only_run(root)
    assert entry["errorKind"] == "output_limit"
    assert "limits.output.events" in entry["error"]
    sizes = {p.name: p.stat().st_size for p in folder.rglob("*") if p.is_file()}
    assert sum(sizes.values()) < 12 * MIB, sizes  # 3000 × 1 KB, twice (raw and transcript)
    transcript = json.loads((folder / "scenarios/flood/hostile/transcript.json").read_text())
    assert len(transcript["entries"]) == 3001
    raw = (folder / "scenarios/flood/hostile/raw.ndjson").read_text().splitlines()
    assert json.loads(raw[0]) == {"type": "assistant", "text": "x" * 1000}  # the head
    # ~70 on a quiet machine (~45 for an agent that says "ok"), the bound is the issue's
    # target for one hostile agent. Without the caps this run grows until its 3 GiB
    # address-space limit.
    # The bound is the harness's: axis run's own peak (VmHWM, read until it exits). The
    # peak of the whole tree (wait4: the flooding agent, bwrap, the sentinel) is what the
    # agent itself grew to; 151-182 MiB were seen under full-suite load with axis run at
    # 69 MiB, so that one is only held to a sanity bound.
    assert HARNESS_HWM_MIB < 150, f"axis run's peak RSS {HARNESS_HWM_MIB:.0f} MiB"
    assert rss < 400, f"peak RSS of the tree {rss:.0f} MiB (axis run: {HARNESS_HWM_MIB:.0f})"


def test_settings_limits_run_takes_no_output_limit(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "flood", {})
    config = json.loads((root / "axis.config.json").read_text())
    config["settings"]["limits"]["run"] = {"output": {"bytes": 1000}}
    (root / "axis.config.json").write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "axis_eval", "run", "--dry-run", "-c", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2, done.stderr
    assert "settings.limits.run" in done.stderr and "output limits are per job" in done.stderr
    assert "Traceback" not in done.stderr


def test_scenario_limits_output_reaches_the_job(tmp_path: Path) -> None:
    from axis_eval.config.load import load_config
    from axis_eval.planning.matrix import plan

    root = _project(tmp_path / "p", "flood", {"bytes": 5000})
    scenario = {"name": "s", "prompt": "p", "judge": "j", "limits": {"output": {"events": 7}}}
    (root / "scenarios" / "own.json").write_text(json.dumps(scenario))
    jobs = {j.scenario.key: j.output_limit for j in plan(load_config(str(root))).jobs}
    assert jobs["flood"] == OutputLimit(bytes=5000)  # settings.limits.scenario
    assert jobs["own"] == OutputLimit(events=7)  # replaces it wholesale, as `limits` does


# -- the bounded containers ---------------------------------------------------------------


def test_raw_output_head_ring_and_note() -> None:
    raw = RawOutput(head_bytes=1000, tail_bytes=1000)
    for i in range(10_000):
        raw.append(f"line {i:05d}")
    kept = raw.kept()
    note = next(json.loads(x) for x in kept if x.startswith('{"axis"'))
    head, tail = kept[: kept.index(json.dumps(note))], kept[kept.index(json.dumps(note)) + 1 :]
    assert head[0] == "line 00000" and tail[-1] == "line 09999"
    assert len(head) + len(tail) < 20  # tiny items count what they cost, not their text
    assert note["items"] == 10_000 - len(head) - len(tail)
    assert note["bytes"] == note["items"] * len("line 00000")
    whole = RawOutput()
    whole.append("a")
    assert whole.kept() == ["a"]


def test_past_a_cap_a_left_out_call_never_touches_a_kept_one() -> None:
    reached: list[str] = []
    builder = TranscriptBuilder("a", max_entries=2, on_limit=reached.append)
    builder.user("go")
    builder.tool_call("kept", {"n": 1}, id="k")
    call_id = builder.tool_call("left-out", {"n": 2}, id="x")
    spare = builder.transcript.entries[-1]  # a writer may look at the entry it just added
    assert spare.tool is not None and spare.tool.name == "left-out"
    builder.tool_result(call_id, "late")
    builder.tool_result(None, "unpaired")
    builder.assistant_delta("more")
    transcript = builder.finish()
    assert reached == ["Output limit reached: the transcript holds 2 events (limits.output.events)"]
    assert [e.type for e in transcript.entries] == ["user", "tool", "system"]
    kept = transcript.entries[1].tool
    assert kept is not None and kept.name == "kept" and kept.output is None
    assert transcript.entries[-1].text == f"axis: {reached[0]}; 1 more event left out"


def test_text_streamed_before_a_cap_is_kept() -> None:
    builder = TranscriptBuilder("a", max_text_bytes=100)
    builder.assistant_delta("a" * 60)
    builder.assistant_delta("b" * 60)  # past the cap: the message so far is kept
    builder.thinking("never")
    transcript = builder.finish()
    assert [e.text for e in transcript.entries if e.type == "assistant"] == ["a" * 60]
    assert builder.limit is not None and "limits.output.transcript_bytes" in builder.limit
