"""Test harness for tests/execute/sandbox: runs jobs one after another as ``axis run`` does.

Usage: ``sandbox_harness.py REQUEST RESULT``. REQUEST is a JSON file::

    {"jobs": [JobSpec, ...], "tokens": [str, ...], "tmp_base": str,
     "hidden": [str, ...], "checks": bool, "bare": bool,
     "python": str, "agents": str}

Around the jobs: this process a child subreaper with the orphan reaper and the run's
sentinel (the sentinel inherits this environment, as ``axis run``'s does), the run's
:class:`Sandboxes` hiding ``hidden`` (the pipeline passes ``<config_dir>/.axis``), closed
at the end as the pipeline closes it. With
``bare`` only the sentinel: no subreaper and no orphan reaper, so whatever a job leaves is
not this process's to find (what a sandbox must end on its own). Each job's
agent (adapter ``scripted``) is the script its prompt names (``script arg...``), in the
folder ``agents`` (default tests/agents), run by ``python`` (default this interpreter; a
container's ``python3`` under docker); ``@HARNESS@`` and ``@SENTINEL@`` in a prompt become
this process's pid and the sentinel's. Adapter ``acp`` runs ``acp_escape.py`` there over
ACP. With ``checks`` the rubric's ``run`` checks run through the real scorer
(``JudgeScorer.run_checks``, in the job's sandbox); nothing is judged.

The test starts this process with the secrets it plants (a secret variable in the
environment, HOME at a fake home), so ``/proc/<this pid>/environ`` holds them as a real
harness's does. Right after each job, while the run still goes on, every process whose
command line holds the job's token is a survivor of that job. RESULT gets::

    {"harness": pid, "sentinel": pid, "outcomes": [JobOutcome, ...],
     "survivors": [[[pid, cmdline], ...], ...], "walls": [seconds, ...],
     "checks": [[CheckVerdict, ...], ...]}
"""

import asyncio
import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from axis_eval.adapters.base import (
    AdapterResult,
    AgentAdapter,
    LinesMode,
    ResultContext,
    StreamContext,
    create_agent_adapter,
)
from axis_eval.execute.job import JobContext, StopSignal, run_job
from axis_eval.execute.models import JobOutcome
from axis_eval.execute.process import (
    OrphanReaper,
    Sentinel,
    ignore_existing_processes,
    new_run_token,
    subreaper,
)
from axis_eval.execute.sandbox import JobSandbox, Sandboxes
from axis_eval.planning.models import JobSpec
from axis_eval.scoring.models import CheckVerdict

HERE = Path(__file__).resolve().parent


@dataclass
class Answer:
    text: str | None = None


def _on_line(event: Any, ctx: StreamContext[Answer]) -> None:
    if isinstance(event, dict) and event.get("type") == "result":
        ctx.state.text = str(event.get("text"))


def _get_result(ctx: ResultContext[Answer]) -> AdapterResult:
    return AdapterResult(ctx.state.text)


def adapter(python: str, agents: Path) -> AgentAdapter[Answer]:
    return create_agent_adapter(
        name="scripted",
        build_args=lambda inp: inp.prompt.split()[1:],
        initial_state=Answer,
        stream=LinesMode(on_line=_on_line),
        get_result=_get_result,
        resolve_command=lambda inp: [python, str(agents / inp.prompt.split()[0])],
    )


def acp_adapter(python: str, agents: Path) -> AgentAdapter[Any]:
    from axis_eval.adapters.acp import create_acp_adapter

    return create_acp_adapter(name="acp", command=[python, str(agents / "acp_escape.py")])


class ChecksOnly:
    """The scorer seam with the real deterministic checks and no judge."""

    def __init__(self, run_token: str, parent_env: dict[str, str]) -> None:
        from axis_eval.scoring.scorer import JudgeScorer  # only these runs pay its import

        self.scorer = JudgeScorer(
            judging=None,
            config_dir="/",
            use_cache=False,
            parent_env=parent_env,
            run_token=run_token,
        )
        self.verdicts: dict[int, list[CheckVerdict]] = {}

    async def run_checks(
        self, outcome: JobOutcome, workspace: Path, sandbox: JobSandbox | None = None
    ) -> list[CheckVerdict]:
        verdicts = await self.scorer.run_checks(outcome, workspace, sandbox)
        self.verdicts[outcome.spec.number] = verdicts
        return verdicts

    async def score(self, outcome: JobOutcome, workspace: Path) -> None:
        return None


def survivors(token: str) -> list[tuple[int, str]]:
    """Processes other than this one whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if token.encode() in cmdline:
            found.append((int(name), cmdline.replace(b"\0", b" ")[:100].decode(errors="replace")))
    return found


async def main(request: dict[str, Any]) -> dict[str, Any]:
    token = new_run_token()
    env = dict(os.environ)
    async with contextlib.AsyncExitStack() as scope:
        if not request.get("bare"):
            scope.enter_context(subreaper())
            ignore_existing_processes()
        sentinel = await Sentinel.start(token)
        scope.push_async_callback(sentinel.close)
        if not request.get("bare"):
            await scope.enter_async_context(OrphanReaper())
        checks = ChecksOnly(token, env) if request.get("checks") else None
        python = request.get("python", sys.executable)
        agents = Path(request.get("agents", HERE))
        sandboxes = Sandboxes(token, hidden=request.get("hidden", []))
        scope.push_async_callback(sandboxes.aclose)  # a docker run's spare containers
        ctx = JobContext(
            run_token=token,
            adapters={"scripted": adapter(python, agents), "acp": acp_adapter(python, agents)},
            parent_env=env,
            stop=StopSignal(),
            grace_s=0.5,
            tmp_base=request["tmp_base"],
            scorer=checks,
            sandboxes=sandboxes,
        )
        outcomes, left, walls = [], [], []
        for raw, job_token in zip(request["jobs"], request["tokens"], strict=True):
            spec = JobSpec.model_validate(raw)
            prompt = spec.scenario.prompt.replace("@HARNESS@", str(os.getpid()))
            prompt = prompt.replace("@SENTINEL@", str(sentinel.pid))
            scenario = spec.scenario.model_copy(update={"prompt": prompt})
            started = time.monotonic()
            outcome = await run_job(spec.model_copy(update={"scenario": scenario}), ctx)
            walls.append(time.monotonic() - started)
            outcomes.append(outcome.model_dump(mode="json"))
            left.append(survivors(job_token))
    verdicts = checks.verdicts if checks is not None else {}
    return {
        "harness": os.getpid(),
        "sentinel": sentinel.pid,
        "outcomes": outcomes,
        "survivors": left,
        "walls": walls,
        "checks": [
            [v.model_dump(mode="json") for v in verdicts.get(o["spec"]["number"], [])]
            for o in outcomes
        ],
    }


if __name__ == "__main__":
    request_path, result_path = sys.argv[1:3]
    result = asyncio.run(main(json.loads(Path(request_path).read_text())))
    Path(result_path).write_text(json.dumps(result))
