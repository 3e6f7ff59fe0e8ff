"""A judge on the scripted model server spends nothing: its spend is marked simulated."""

from __future__ import annotations

from axis_eval._types import TokenUsage
from axis_eval.planning.models import AgentSpec
from axis_eval.scoring.judge import (
    JudgeChoice,
    JudgeReply,
    SpendMeter,
    judged_on_model_server,
    on_model_server,
)

URL = "http://127.0.0.1:4567"
API = JudgeChoice(kind="api", provider="anthropic", model="claude-sonnet-4-5")


def test_which_judges_ask_the_scripted_server() -> None:
    assert judged_on_model_server(on_model_server(API, URL), URL)
    openai = JudgeChoice(kind="api", provider="openai", model="gpt-5")
    assert judged_on_model_server(on_model_server(openai, URL), URL)  # …/v1
    own = JudgeChoice(kind="api", provider="anthropic", model="m", base_url="https://x.test")
    assert not judged_on_model_server(on_model_server(own, URL), URL)
    assert not judged_on_model_server(API, None)  # no scripted server in the run
    agent = AgentSpec(name="claude-code", adapter="claude-code")
    assert judged_on_model_server(JudgeChoice(kind="agent", agent=agent), URL)
    elsewhere = agent.model_copy(update={"endpoint": "https://proxy.test"})
    assert not judged_on_model_server(JudgeChoice(kind="agent", agent=elsewhere), URL)


def test_a_simulated_meter_reports_tokens_and_no_cost() -> None:
    reply = JudgeReply(
        text="{}", usage=TokenUsage(input=100, output=7), cost_usd=0.01, cost_estimated=True
    )
    for simulated in (True, False):
        meter = SpendMeter(choice=API, simulated=simulated)
        meter.add(reply)
        spend = meter.spend()
        assert (spend.input_tokens, spend.output_tokens) == (100, 7)
        assert spend.cost_simulated is simulated
        assert spend.cost_usd == (None if simulated else 0.01)
        assert spend.cost_estimated is not simulated
