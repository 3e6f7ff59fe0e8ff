"""What runs cost: real spend summed, simulated usage counted apart.

A run (or a judge call) answered by the embedded scripted model server spent nothing: the
agent or the price table may still put a dollar figure on the tape's tokens, but that
figure is never money. So real costs are summed over real runs and judges only, and the
scripted model's tokens are counted in their own fields. The report's summary
(``summary.spend``), the HTML page, the terminal and the Markdown summary all read
:func:`spend_of`, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

from axis_eval.report.models import RunEntry, Spend


def spend_of(runs: Iterable[RunEntry]) -> Spend:
    """Real agent and judge spend over ``runs``, simulated usage apart."""
    agent = judge = 0.0
    agent_known = judge_known = False
    out = Spend()
    for run in runs:
        if run.cost_simulated:
            out.simulated_runs += 1
            out.simulated_tokens += run.tokens
        elif run.total_cost_usd is not None:
            agent += run.total_cost_usd
            agent_known = True
            out.agent_cost_estimated |= run.cost_estimated
        judged = run.score.judge if run.score else None
        if judged is None:
            continue
        if judged.cost_simulated:
            out.simulated_judge_tokens += judged.input_tokens + judged.output_tokens
        elif judged.cost_usd is not None:
            judge += judged.cost_usd
            judge_known = True
            out.judge_cost_estimated |= judged.cost_estimated
    out.agent_cost_usd = round(agent, 6) if agent_known else None
    out.judge_cost_usd = round(judge, 6) if judge_known else None
    if agent_known or judge_known:
        out.total_cost_usd = round(agent + judge, 6)
    out.cost_simulated = bool(out.simulated_runs or out.simulated_judge_tokens)
    return out


def money(value: float | None, estimated: bool = False) -> str:
    """``$0.0123``, ``≈$0.0123`` when computed from a price table, ``–`` when unknown."""
    if value is None:
        return "–"
    return f"{'≈' if estimated else ''}${value:.4f}"


def _with_simulated(real: str, known: bool, tokens: int, simulated: bool) -> str:
    if not simulated:
        return real
    if not known:
        return f"simulated ({tokens:,} tok)"
    return f"{real} + simulated ({tokens:,} tok)"


def agent_text(spend: Spend) -> str:
    """The agents' cost as shown: ``$0.0300``, ``simulated (12,345 tok)`` or both joined
    by ``+``; ``–`` when nothing is known."""
    real = money(spend.agent_cost_usd, spend.agent_cost_estimated)
    known = spend.agent_cost_usd is not None
    return _with_simulated(real, known, spend.simulated_tokens, spend.simulated_runs > 0)


def judge_text(spend: Spend) -> str:
    """The judges' cost as shown, like :func:`agent_text`."""
    real = money(spend.judge_cost_usd, spend.judge_cost_estimated)
    known = spend.judge_cost_usd is not None
    tokens = spend.simulated_judge_tokens
    return _with_simulated(real, known, tokens, tokens > 0)


def cost_line(runs: Iterable[RunEntry]) -> str | None:
    """``agents $0.0300 + simulated (1,200 tok) · judges ≈$0.0100``: real spend, the
    scripted model's tokens apart; None when the runs know no cost and no simulated usage."""
    spend = spend_of(runs)
    known = spend.agent_cost_usd is not None or spend.judge_cost_usd is not None
    if not known and not spend.cost_simulated:
        return None
    return f"agents {agent_text(spend)} · judges {judge_text(spend)}"
