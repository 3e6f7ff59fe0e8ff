"""AXIS custom adapters in JavaScript and TypeScript run unchanged, end to end.

Each test writes a project whose ``adapters`` name an AXIS-style module (built with
``createAgentAdapter``/``createAcpBasedAdapter`` from ``@netlify/axis``, resolved to our
shim: no npm package is installed) and its Python twin, runs ``axis run`` as a child
process on a real agent (``tests/agents/axis_stream.py`` or the fake ACP agent) and compares
the two runs' transcripts. Real Node; the TypeScript test also needs the pinned tsx (or a
Node that strips types): where either is missing the tests skip loudly (fail under CI=true).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from axis_eval._util import node_ts
from helpers.processes import read_json
from helpers.projects import cli_env, only_report, write_project
from helpers.system_parts import not_run

from . import adapters as src

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def node() -> str:
    found = shutil.which("node")
    if found is None:
        not_run("JAVASCRIPT ADAPTER TEST", "node is not on PATH")
    return found


def run_cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axis_eval", "run", "-c", str(root), "--no-score", *args],
        env=cli_env(**env),
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def runs(root: Path) -> dict[str, dict[str, Any]]:
    """``agentName`` → its one run, with the run's transcript under ``"transcript"``."""
    report = only_report(root)
    out: dict[str, dict[str, Any]] = {}
    for pair in read_json(report / "report.json")["results"]:
        (run,) = pair["runs"]
        path = report / run["dir"] / "transcript.json"
        run["transcript"] = read_json(path) if path.is_file() else None
        out[pair["agentName"]] = run
    return out


def shape(transcript: dict[str, Any]) -> dict[str, Any]:
    """What two equal transcripts share (no clocks, no agent name)."""
    entries = []
    for entry in transcript["entries"]:
        tool = entry.get("tool")
        if tool is not None:
            tool = {k: tool.get(k) for k in ("id", "name", "input", "output", "isError", "kind")}
        entries.append({"type": entry["type"], "text": entry.get("text"), "tool": tool})
    keys = ("result", "usage", "costUsd", "sessionId")
    return {"entries": entries, **{k: transcript.get(k) for k in keys}}


def project(tmp_path: Path, files: dict[str, str], **scenarios: dict[str, Any]) -> Path:
    adapters = {name.split(".")[0]: f"./adapters/{name}" for name in files}
    root = write_project(tmp_path / "proj", adapters, scenarios or {"hello": {}})
    (root / "adapters").mkdir()
    for name, text in files.items():
        (root / "adapters" / name).write_text(src.fill(text))
    return root


@pytest.mark.parametrize("module", ["js.mjs", "js.ts"])
def test_a_js_or_ts_adapter_in_lines_mode_gives_the_python_adapters_transcript(
    tmp_path: Path, node: str, module: str
) -> None:
    if module.endswith(".ts"):
        try:
            node_ts.typescript_node_args(node)
        except node_ts.TypeScriptUnavailable as exc:
            not_run("TYPESCRIPT ADAPTER TEST", f"{exc.message} ({exc.hint})")
    root = project(
        tmp_path,
        {module: src.LINES_JS, "py.py": src.LINES_PY},
        hello={"prompt": "list the files"},
    )
    done = run_cli(root)
    assert done.returncode == 0, done.stderr
    got = runs(root)
    js, py = got["js"], got["py"]
    assert js["status"] == py["status"] == "completed", (js.get("error"), py.get("error"))
    assert shape(js["transcript"]) == shape(py["transcript"])
    # … and that transcript is the stream the agent printed, read by the adapter.
    entries = js["transcript"]["entries"]
    assert [e["type"] for e in entries] == ["user", "assistant", "tool", "tool", "assistant"]
    assert entries[1]["text"] == "Working on: list the files"
    assert entries[3]["tool"]["isError"] is True and entries[3]["tool"]["output"] == "no such file"
    assert js["result"] == "a.txt, b.txt"
    assert js["transcript"]["usage"]["input"] == 120 and js["transcript"]["sessionId"] == "js-0"
    # onLine got every line, the one that is not JSON too (it ignores it): no warnings.
    assert "progress 50% (not JSON)" in (only_report(root) / js["dir"] / "raw.txt").read_text()


def test_a_ts_adapter_in_aggregate_mode_gives_the_python_adapters_transcript(
    tmp_path: Path, node: str
) -> None:
    try:
        node_ts.typescript_node_args(node)
    except node_ts.TypeScriptUnavailable as exc:
        not_run("TYPESCRIPT ADAPTER TEST", f"{exc.message} ({exc.hint})")
    root = project(
        tmp_path,
        {"ts.ts": src.TEXT_TS, "py.py": src.TEXT_PY},
        hello={"prompt": "the answer"},
    )
    done = run_cli(root)
    assert done.returncode == 0, done.stderr
    got = runs(root)
    ts, py = got["ts"], got["py"]
    assert ts["status"] == py["status"] == "completed", (ts.get("error"), py.get("error"))
    assert shape(ts["transcript"]) == shape(py["transcript"])
    entries = ts["transcript"]["entries"]
    # The prompt went on stdin; isolationEnv reached the agent's environment.
    assert entries[1]["text"] == "Thinking about the answer (isolated)"
    assert entries[2]["tool"]["input"] == {"command": "grep -r foo"}
    assert ts["result"] == "42" and ts["transcript"]["costUsd"] == 0.25


def test_an_acp_based_js_adapter_runs_the_acp_agent_as_the_python_one(tmp_path: Path) -> None:
    root = project(tmp_path, {"acpjs.cjs": src.ACP_JS, "acppy.py": src.ACP_PY})
    done = run_cli(root)
    assert done.returncode == 0, done.stderr
    got = runs(root)
    js, py = got["acpjs"], got["acppy"]
    assert js["status"] == py["status"] == "completed", (js.get("error"), py.get("error"))
    assert shape(js["transcript"]) == shape(py["transcript"])
    assert js["result"] and any(e.get("tool") for e in js["transcript"]["entries"])


def test_a_module_that_exports_no_adapter_exits_2_with_axis_message(tmp_path: Path) -> None:
    root = project(tmp_path, {"none.mjs": src.NO_ADAPTER_JS})
    done = run_cli(root)
    assert done.returncode == 2, done.stderr
    path = root / "adapters" / "none.mjs"
    assert (
        f'Custom adapter "none" at {path} must export a valid AgentAdapter '
        '(as default export or named "adapter" export).'
    ) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (root / ".axis" / "reports").exists()


def test_a_missing_adapter_module_exits_2(tmp_path: Path) -> None:
    root = write_project(tmp_path / "proj", {"gone": "./adapters/gone.ts"}, {"hello": {}})
    done = run_cli(root)
    assert done.returncode == 2, done.stderr
    assert f"adapters.gone: adapter file not found: {root / 'adapters' / 'gone.ts'}" in done.stderr


def test_a_throwing_onLine_fails_that_run_and_the_others_go_on(tmp_path: Path) -> None:
    root = project(tmp_path, {"bad.mjs": src.THROWING_JS, "good.mjs": src.LINES_JS})
    done = run_cli(root)
    assert done.returncode == 1, done.stderr
    got = runs(root)
    bad, good = got["bad"], got["good"]
    assert good["status"] == "completed" and good["result"] == "a.txt, b.txt"
    assert bad["status"] == "failed"
    assert bad["error"] == "bad: onLine threw RangeError: line three is cursed"
    errors = [e["text"] for e in bad["transcript"]["entries"] if e["type"] == "error"]
    assert errors == [bad["error"]]


def test_a_hanging_callback_is_stopped_and_fails_its_run(tmp_path: Path) -> None:
    root = project(tmp_path, {"hang.mjs": src.HANGING_JS, "good.mjs": src.LINES_JS})
    done = run_cli(root, AXIS_ADAPTER_CALLBACK_TIMEOUT_S="1")
    assert done.returncode == 1, done.stderr
    got = runs(root)
    assert got["good"]["status"] == "completed"
    hang = got["hang"]
    assert hang["status"] == "failed"
    assert hang["error"] == ("hang: onLine did not return within 1s; the Node host was stopped"), (
        hang["error"]
    )


def test_a_slow_onLine_holds_up_its_own_job_only(tmp_path: Path) -> None:
    # "slow"'s first onLine busies its Node host for 3 s; "good"'s agent starts printing a
    # second in, so it is mid-run then. The event loop must run on meanwhile: good's job
    # ends, and is recorded, well before slow's; before, the whole run waited on onLine.
    root = project(tmp_path, {"slow.mjs": src.SLOW_ONCE_JS, "good.mjs": src.PACED_JS})
    done = run_cli(root, "--concurrency", "2")
    assert done.returncode == 0, done.stderr
    got = runs(root)
    slow, good = got["slow"], got["good"]
    assert slow["status"] == good["status"] == "completed", (slow.get("error"), good["error"])
    assert slow["result"] == good["result"] == "a.txt, b.txt"
    assert good["transcript"]["entries"][1]["text"] == "Working on: do hello"
    assert slow["durationMs"] >= 3000  # onLine did busy the host
    ended = {name: datetime.fromisoformat(run["endedAt"]) for name, run in got.items()}
    ahead = (ended["slow"] - ended["good"]).total_seconds()
    assert ahead >= 1.5, f"good ended {ahead:.2f}s before slow: it waited on slow's onLine"
    assert good["durationMs"] < slow["durationMs"] - 1500
