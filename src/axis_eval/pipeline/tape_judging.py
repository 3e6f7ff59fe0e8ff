"""Before any job starts: will the scripted model's tape answer the judge?

With ``model_server`` (or ``axis run --tape``), an API judge without ``base_url`` and a
built-in judge agent ask the same scripted server. A tape that does not script the judge
answers its prompts with an agent's conversation or the default one, and every score is
then withheld, after the runs. This predicts that from the tape and the scenarios, so the
run can say so up front (a warning naming the tape), and says how runs are judged when
the judge is not on the tape at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from axis_eval.config.models import LoadedConfig
from axis_eval.planning.models import Plan

if TYPE_CHECKING:
    from axis_eval.config.scenario import Scenario
    from axis_eval.scoring.judge import JudgeChoice, JudgeRequest
    from axis_model_server.tape import Tape

GOAL_MARKER = "GOAL JUDGMENT"
AUDIT_MARKER = "INTERACTION AUDIT"
LOCAL_URL = "http://127.0.0.1"
"""Stands for the scripted server's URL: where the judge goes is all that matters here."""


def tape_judging_warnings(
    the_plan: Plan, loaded: LoadedConfig, *, judge_override: str | None = None
) -> list[str]:
    """Warnings (each naming the tape) when the runs' judges will not be answered by the
    tape's judge conversations: what will judge them instead, or why every score will be
    withheld. Empty without a scripted model server or when the tape scripts the judge.

    Call only when the run scores (importing the judging stack).
    """
    settings = loaded.config.model_server
    if settings is None or not the_plan.jobs:
        return []
    from axis_eval.scoring.judge import choose_judge, on_model_server
    from axis_model_server import TapeError, load_tape

    path = (Path(loaded.config_dir) / settings.tape).resolve()
    try:
        tape = load_tape(path)
    except TapeError:
        return []  # the run's own server start reports the broken tape, exit 2
    out: list[str] = []
    seen: set[str] = set()
    for job in the_plan.jobs:
        raw = choose_judge(loaded.config.judging, job.agent, judge_override)
        choice = on_model_server(raw, LOCAL_URL)
        outside = _outside(raw)
        if outside is not None:
            line = (
                f"tape {path} does not answer the judge: runs of {job.agent.name} are "
                f"judged by {outside}"
            )
        else:
            problem = _judge_problem(tape, job.scenario)
            if problem is None:
                continue
            line = (
                f"tape {path} does not script the judge ({choice.label}, asked through the "
                f"scripted model): {problem}; every score of {job.scenario.name!r} will be "
                "withheld. Put judge conversations matching "
                f'"{GOAL_MARKER}" and "{AUDIT_MARKER}" first in the tape '
                "(docs/model-server.md, docs/judging.md), or pass --no-score"
            )
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out


def _outside(choice: JudgeChoice) -> str | None:
    """Who judges when it is not the scripted server (None: the scripted server does).

    ``choice`` is the judge as configured, before the run points it at the server.
    """
    from axis_eval.adapters.builtins import BUILTINS

    if choice.kind == "api":
        if not choice.base_url:
            return None  # the run sends it to the scripted server
        return f"{choice.label} at {choice.base_url} (judging.base_url, not the tape)"
    assert choice.agent is not None
    if choice.agent.endpoint or choice.agent.adapter not in BUILTINS:
        where = choice.agent.endpoint or "its own model"
        return f"the agent {choice.label} against {where} (not the tape)"
    return None


def _judge_problem(tape: Tape, scenario: Scenario) -> str | None:
    """Why the tape's answers to this scenario's judge prompts are unusable, or None."""
    from axis_eval.scoring.checks import rubric_of
    from axis_eval.scoring.prompts import RunFacts, audit_request, goal_request

    facts = RunFacts(scenario=scenario.name, task=scenario.prompt)
    judged = [c.text for c in rubric_of(scenario) if c.run is None]
    asks: list[tuple[str, str, str]] = [
        (AUDIT_MARKER, "audit", _text(audit_request(facts, "", "")))
    ]
    if judged:
        goal = _text(goal_request(facts, judged, ""))
        asks.insert(0, (GOAL_MARKER, "goal", goal))
    for marker, kind, prompt in asks:
        problem = _answer_problem(
            tape, marker, kind, prompt, task=scenario.prompt, checks=len(judged)
        )
        if problem is not None:
            return problem
    return None


def _text(request: JudgeRequest) -> str:
    """The request's user text: what the scripted server matches conversations on."""
    return "\n\n".join(m.text for m in request.messages if m.role == "user")


def _answer_problem(
    tape: Tape, marker: str, kind: str, prompt: str, *, task: str, checks: int
) -> str | None:
    """Why the conversation that answers ``prompt`` does not give a usable ``kind`` answer."""
    from axis_eval.scoring.judge import validate_answer
    from axis_eval.scoring.prompts import AuditAnswer, GoalAnswer, goal_checker

    winner = next((c for c in tape.conversations if c.matches(prompt)), tape.default)
    if winner is None:
        return f"no conversation matches the {kind} judge's prompt ({marker} …)"
    # A judge conversation fits the judge's prompt, not the agent's (which it quotes).
    if winner.is_default or winner.matches(task):
        how = "the default conversation" if winner.is_default else "an agent conversation"
        return f"the {kind} judge's prompt is answered by {how} {winner.name!r}"
    text = winner.turns[0].text or ""
    try:
        if kind == "goal":
            validate_answer(text, GoalAnswer, goal_checker(checks))
        else:
            validate_answer(text, AuditAnswer, lambda _answer: None)
    except ValueError as exc:
        why = " ".join(str(exc).split())
        return f"conversation {winner.name!r} answers the {kind} judge unusably: {why}"
    return None
