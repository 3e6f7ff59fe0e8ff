"""Spend over runs: real costs summed, the scripted model's simulated usage counted apart."""

from __future__ import annotations

import pytest

from axis_eval._types import TokenUsage
from axis_eval.report.models import PairEntry
from axis_eval.report.render import render_report_detail, render_report_list
from axis_eval.runs.aggregate import summarize
from axis_eval.runs.spend import agent_text, cost_line, judge_text, spend_of
from axis_eval.scoring.models import JudgeSpend
from helpers.factories import manifest, pair, run_entry, score


def _judged(cost: float | None, *, simulated: bool, tokens: int = 100) -> JudgeSpend:
    return JudgeSpend(
        kind="api",
        calls=2,
        input_tokens=tokens,
        output_tokens=10,
        cost_usd=cost,
        cost_estimated=cost is not None,
        cost_simulated=simulated,
    )


def _mixed() -> list[PairEntry]:
    real = score(80).model_copy(update={"judge": _judged(0.02, simulated=False)})
    fake = score(90).model_copy(update={"judge": _judged(None, simulated=True, tokens=500)})
    return [
        pair(
            run_entry(1, score=real, total_cost_usd=0.5, token_usage=TokenUsage(input=40)),
            agent="paid",
        ),
        pair(
            run_entry(
                1,
                score=fake,
                cost_simulated=True,
                token_usage=TokenUsage(input=1000, output=200),
            ),
            # A simulated run with a stray cost (an old result) is still never spend.
            run_entry(2, 85, cost_simulated=True, total_cost_usd=9.0),
            agent="scripted",
        ),
    ]


def test_a_mixed_report_sums_only_real_runs_and_judges() -> None:
    pairs = _mixed()
    summary = summarize(pairs, 0, 0)
    spend = summary.spend
    assert spend.agent_cost_usd == pytest.approx(0.5)  # not 9.5
    assert spend.judge_cost_usd == pytest.approx(0.02) and spend.judge_cost_estimated
    assert spend.total_cost_usd == pytest.approx(0.52)
    assert spend.cost_simulated and spend.simulated_runs == 2
    assert spend.simulated_tokens == 1200
    assert spend.simulated_judge_tokens == 510
    assert agent_text(spend) == "$0.5000 + simulated (1,200 tok)"
    assert judge_text(spend) == "≈$0.0200 + simulated (510 tok)"
    scripted = pairs[1]
    assert scripted.cost_simulated and scripted.total_cost_usd is None


def test_an_all_simulated_report_has_no_real_cost() -> None:
    runs = [run_entry(1, 70, cost_simulated=True, token_usage=TokenUsage(input=10))]
    spend = spend_of(runs)
    assert spend.total_cost_usd is None and spend.agent_cost_usd is None
    assert agent_text(spend) == "simulated (10 tok)" and judge_text(spend) == "–"
    assert cost_line(runs) == "agents simulated (10 tok) · judges –"


def test_nothing_known_shows_no_cost_line() -> None:
    assert cost_line([run_entry(1, 70)]) is None
    spend = spend_of([run_entry(1, 70, total_cost_usd=0.0)])
    assert spend.total_cost_usd == 0.0 and not spend.cost_simulated


def test_the_terminal_tables_mark_simulated_pairs() -> None:
    m = manifest(*_mixed())
    m.summary = summarize(m.results, 0, 0)
    detail = render_report_detail(m)
    rows = {line.split()[1]: line for line in detail.splitlines() if line.startswith("s ")}
    assert rows["scripted"].rstrip().endswith("simulated") and "$" not in rows["scripted"]
    assert rows["paid"].rstrip().endswith("$0.5000")
    assert "Cost:       agents $0.5000 + simulated (1,200 tok)" in detail
    listing = render_report_list([m], 10)
    assert "$0.5200 + simulated" in listing
