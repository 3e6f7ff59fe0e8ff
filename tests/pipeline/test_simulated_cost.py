"""Usage answered by the scripted model server is simulated: marked, never summed as spend.

One run mixes an agent on the scripted server (it claims a cost, as Claude Code does from
the tape's tokens) and an agent with an endpoint of its own (real spend); both are judged
by an API judge the run points at the scripted server. The report, the terminal summary,
``axis reports`` and the HTML page must all tell the simulated usage from the real spend.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.processes import read_json

from .helpers import REPO, cli_env, only_report, run_cli

pytestmark = pytest.mark.slow  # runs `axis run` end to end as a subprocess

CLIENT = REPO / "tests" / "agents" / "run_api_client.py"

SCRIPTED_ADAPTER = f'''
"""Asks the model API at the job's endpoint once and claims a cost for its tokens."""

from axis_eval.adapters import AdapterResult, AggregateMode, TokenUsage, create_agent_adapter


def _done(ctx):
    usage = TokenUsage(input=1000, output=200)
    return AdapterResult(result=ctx.state["out"].strip() or None, usage=usage, cost_usd=0.25)


def _chunk(chunk, ctx):
    ctx.state["out"] += chunk


adapter = create_agent_adapter(
    name="api-client",
    resolve_command=lambda inp: [{sys.executable!r}, {str(CLIENT)!r}, inp.endpoint or "none"],
    build_args=lambda inp: [],
    prompt_via="stdin",
    initial_state=lambda: {{"out": ""}},
    stream=AggregateMode(on_chunk=_chunk),
    get_result=_done,
    required_env=["ANTHROPIC_API_KEY"],
)
'''

PAID_ADAPTER = f'''
"""Stands for an agent on a real API of its own: it reports what it spent."""

from axis_eval.adapters import AdapterResult, AggregateMode, TokenUsage, create_agent_adapter


def _done(ctx):
    usage = TokenUsage(input=300, output=50)
    return AdapterResult(result=ctx.state["out"].strip() or None, usage=usage, cost_usd=0.1)


def _chunk(chunk, ctx):
    ctx.state["out"] += chunk


adapter = create_agent_adapter(
    name="paid",
    resolve_command=lambda inp: [{sys.executable!r}, "-c", "print('Hello from my API.')"],
    build_args=lambda inp: [],
    prompt_via="stdin",
    initial_state=lambda: {{"out": ""}},
    stream=AggregateMode(on_chunk=_chunk),
    get_result=_done,
)
'''

TAPE = """
version: 1
conversations:
  - name: judge-goal
    match: "GOAL JUDGMENT"
    turns:
      - text: '{"checks": [{"index": 1, "score": 10, "rationale": "It greets."}]}'
  - name: judge-audit
    match: "INTERACTION AUDIT"
    turns:
      - text: >-
          {"audits": [], "necessity": {"environment": {"score": 1.0, "unnecessary_ids": []},
          "service": {"score": 1.0, "unnecessary_ids": []},
          "agent": {"score": 1.0, "unnecessary_ids": []}}}
  - name: greet
    match: "say hello"
    turns:
      - text: "Hello from the tape."
"""

DOLLARS = re.compile(r"\$\d")


def _project(root: Path, agents: list[object]) -> Path:
    root.mkdir(parents=True)
    (root / "client_adapter.py").write_text(SCRIPTED_ADAPTER)
    (root / "paid_adapter.py").write_text(PAID_ADAPTER)
    (root / "tape.yaml").write_text(TAPE)
    config = {
        "scenarios": "./scenarios",
        "agents": agents,
        "adapters": {"client": "./client_adapter.py", "paid": "./paid_adapter.py"},
        "judging": {"model": "anthropic:claude-sonnet-4-5"},
        "model_server": {"tape": "./tape.yaml", "trap_outside_traffic": True},
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    (root / "scenarios" / "greet.json").write_text(
        json.dumps({"name": "greet", "prompt": "Please say hello.", "judge": "It greets."})
    )
    return root


def _env() -> dict[str, str]:
    env = cli_env()
    env.pop("ANTHROPIC_API_KEY", None)  # the scripted model gets a placeholder key
    return env


def test_a_scripted_run_is_simulated_everywhere_and_costs_nothing(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj", ["client"])
    done = run_cli(root, env=_env())
    assert done.exit_code == 0, done.stdout + done.stderr
    report = only_report(root)
    manifest = read_json(report / "report.json")
    [pair] = manifest["results"]
    [run] = pair["runs"]
    assert run["result"] == "Hello from the tape."
    assert run["costSimulated"] is True and pair["costSimulated"] is True
    assert run["totalCostUsd"] is None and pair["totalCostUsd"] is None  # the $0.25 claim
    assert run["tokenUsage"]["input"] == 1000  # the tokens stay, marked simulated
    judge = run["score"]["judge"]
    assert judge["kind"] == "api" and judge["calls"] >= 1
    assert judge["costSimulated"] is True and judge["costUsd"] is None
    spend = manifest["summary"]["spend"]
    assert spend["costSimulated"] is True and spend["simulatedRuns"] == 1
    assert spend["simulatedTokens"] == 1200 and spend["simulatedJudgeTokens"] > 0
    assert spend["totalCostUsd"] is None and spend["agentCostUsd"] is None
    assert spend["judgeCostUsd"] is None
    transcript = read_json(report / run["dir"] / "transcript.json")
    assert transcript["costSimulated"] is True
    # The terminal: the live lines and the end summary say simulated, and show no dollars.
    assert "usage is simulated" in done.stderr
    assert "tok simulated" in done.stderr
    assert "Cost:       agents simulated (1,200 tok) · judges simulated (" in done.stderr
    assert not DOLLARS.search(done.stderr), done.stderr
    listing = run_cli_reports(root)
    assert "simulated" in listing and not DOLLARS.search(listing), listing
    page = (report / "report.html").read_text()
    assert "simulated (1,200 tok)" in page
    cards = page[page.index("Agent cost") : page.index("Agent cost") + 600]
    assert not DOLLARS.search(cards), cards


def test_a_mixed_report_sums_only_the_real_spend(tmp_path: Path) -> None:
    agents = ["client", {"agent": "paid", "endpoint": "http://127.0.0.1:9"}]
    root = _project(tmp_path / "proj", agents)
    summary_md = tmp_path / "summary.md"
    done = run_cli(root, "--summary-md", str(summary_md), env=_env())
    assert done.exit_code == 0, done.stdout + done.stderr
    report = only_report(root)
    manifest = read_json(report / "report.json")
    by_agent = {p["agentName"]: p for p in manifest["results"]}
    paid = by_agent["paid"]["runs"][0]
    assert paid["costSimulated"] is False and paid["totalCostUsd"] == pytest.approx(0.1)
    assert by_agent["client"]["runs"][0]["costSimulated"] is True
    spend = manifest["summary"]["spend"]
    assert spend["agentCostUsd"] == pytest.approx(0.1)  # not 0.35: the $0.25 is simulated
    assert spend["totalCostUsd"] == pytest.approx(0.1)  # both judges were scripted
    assert spend["simulatedRuns"] == 1 and spend["simulatedTokens"] == 1200
    assert "agents $0.1000 + simulated (1,200 tok)" in done.stderr
    page = (report / "report.html").read_text()
    assert "$0.1000 + simulated (1,200 tok)" in page
    # Markdown-escaped: it renders as "agents $0.1000 + simulated (1,200 tok)"
    assert r"Cost: agents $0.1000 \+ simulated \(1,200 tok\)" in summary_md.read_text()


def run_cli_reports(root: Path) -> str:
    """``axis reports`` in the project: the list's cost column."""
    done = subprocess.run(
        [sys.executable, "-m", "axis_eval", "reports"],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout
