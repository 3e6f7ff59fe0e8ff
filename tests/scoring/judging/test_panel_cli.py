"""A panel of three API judges end to end: ``axis run`` judged by three scripted model
servers (one per member, each with its own model name and tape), the run's check grades
their medians, the agreement in ``report.json`` and in ``axis reports ID``."""

from __future__ import annotations

import base64
import gzip
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axis_eval.report.models import ReportManifest
from axis_model_server import ScriptedModelServer, parse_tape

from .helpers import audit_json, goal_json, judge_tape

AGENT = Path(__file__).with_name("events_agent.py")
CHECKS = ["the file exists", "the answer names the file", "the answer quotes the content"]
GRADES = {"judge-a": (10, 8, 0), "judge-b": (10, 7, 5), "judge-c": (10, 6, 10)}
"""Each member's 0–10 grades of the three checks."""


@pytest.fixture
def servers() -> Iterator[dict[str, ScriptedModelServer]]:
    made = {
        model: ScriptedModelServer(
            parse_tape(judge_tape(goal_json(*grades), audit_json([1, 2])))
        ).start()
        for model, grades in GRADES.items()
    }
    yield made
    for server in made.values():
        server.stop()


def _project(root: Path, judging: dict[str, Any]) -> Path:
    config = {
        "agents": ["events"],
        "adapters": {
            "events": {"command": [sys.executable, str(AGENT)], "args": [], "output": "ndjson"}
        },
        "judging": judging,
    }
    scenario = {
        "name": "Hello",
        "prompt": "Create hello.txt saying Hello",
        "judge": [{"check": c, "weight": 1} for c in CHECKS],
    }
    root.mkdir()
    (root / "axis.config.json").write_text(json.dumps(config))
    (root / "scenarios").mkdir()
    (root / "scenarios" / "hello.json").write_text(json.dumps(scenario))
    return root


def _manifest(root: Path) -> ReportManifest:
    path = next(root.rglob("report.json"))
    return ReportManifest.model_validate_json(path.read_bytes())


def test_a_panel_grades_by_median_and_reports_its_agreement(
    servers: dict[str, ScriptedModelServer], tmp_path: Path, axis: Any
) -> None:
    panel = [{"model": f"anthropic:{m}", "base_url": s.url} for m, s in servers.items()]
    root = _project(tmp_path / "p", {"panel": panel})  # panelMargin: the default 25
    out = axis("run", cwd=root)
    assert out.exit_code == 0, out.stderr + out.stdout
    manifest = _manifest(root)
    pair = manifest.results[0]
    run = pair.runs[0]
    assert run.score is not None and not run.score.withheld
    # Medians by hand: (10, 10, 10) → 10, (8, 7, 6) → 7, (0, 5, 10) → 5.
    assert [c.score for c in run.score.checks] == [10, 7, 5]
    assert run.score.goal_achievement == round((100 + 70 + 50) / 3)  # 73
    assert run.score.judge.judge is not None and run.score.judge.judge.startswith("panel: ")
    # Every member was asked (goal + audit each), each cached under its own identity.
    assert run.score.judge.calls == 6
    assert len(list((root / ".axis" / "judge-cache").rglob("*.json"))) == 6

    agreement = pair.panel
    assert agreement is not None
    assert agreement.members == [f"anthropic:{m}" for m in GRADES]
    assert agreement.units == 3 and agreement.margin == 25
    # Values × 10: [100, 100, 100], [80, 70, 60], [0, 50, 100]. Ordered-pair sums within
    # units 0, 1200, 30000, each over m − 1 = 2: D_o = (0 + 600 + 15000) / 9. All nine
    # values: Σ = 660, Σv² = 57400, Σ_{i≠j} = 2·(9·57400 − 660²) = 162000, D_e = 162000/72.
    assert agreement.alpha == round(1 - (15600 / 9) / (162000 / 72), 4) == 0.2296
    ab = next(p for p in agreement.pairs if p.members == agreement.members[:2])
    # a, b: [100, 100], [80, 70], [0, 50]: D_o = (0 + 200 + 5000) / 6; the six values'
    # Σ = 400, Σv² = 33800, Σ_{i≠j} = 2·(6·33800 − 400²) = 85600, D_e = 85600 / 30.
    assert ab.alpha == round(1 - (5200 / 6) / (85600 / 30), 4)
    # Only the third check spreads past 25 points (100); the second spreads 20.
    assert [(f.check, f.spread) for f in agreement.flagged] == [(CHECKS[2], 100)]
    suite = manifest.summary.panel
    assert suite is not None and suite.alpha == agreement.alpha
    assert [f.scenario_key for f in suite.flagged] == [pair.scenario_key]

    text = axis("reports", manifest.report_id, cwd=root)
    assert text.exit_code == 0, text.stderr
    assert "Krippendorff α 0.23 over 3 check grades" in text.stdout
    flagged = [line for line in text.stdout.splitlines() if "panel disagrees" in line]
    assert len(flagged) == 1, text.stdout
    assert CHECKS[2] in flagged[0] and "anthropic:judge-a 0" in flagged[0]
    assert "100 points > 25" in flagged[0]
    assert "1 check grade flagged (> 25 points apart)" in text.stdout  # the suite's line
    html = axis("reports", manifest.report_id, "--html", cwd=root)
    assert html.exit_code == 0, html.stderr
    page = Path(html.stdout.strip().splitlines()[-1]).read_text()
    found = re.findall(r'data-payload="[^"]+">([^<]*)</script>', page)
    decoded = [json.loads(gzip.decompress(base64.b64decode(p))) for p in found]
    stats = " ".join(
        line for d in decoded if isinstance(d, dict) for line in d.get("statsLines", [])
    )
    assert "Krippendorff α 0.23" in stats and "panel disagrees on run #1" in stats
    assert "Judge panel agreement (the whole run)" in page  # the suite's line, on the page
    assert "1 check grade flagged (&gt; 25 points apart)" in page

    # A re-score asks the panel again, through the cache: every member's answers are
    # found under its own identity, none makes a call (one shared key would hand all three
    # the same grades, and other medians).
    again = axis("score", manifest.report_id, cwd=root)
    assert again.exit_code == 0, again.stderr
    rescored = _manifest(root)
    score = rescored.results[0].runs[0].score
    assert score is not None and [c.score for c in score.checks] == [10, 7, 5]
    assert (score.judge.calls, score.judge.cached_calls) == (6, 6)
    assert "agent-judge verdicts reused" not in again.stderr
    assert rescored.results[0].panel == agreement
    # Re-judging re-judges with the whole panel: the same grades, so no judge spread.
    rejudged = axis("score", manifest.report_id, "--rejudge", "1", "--yes", cwd=root)
    assert rejudged.exit_code == 0, rejudged.stderr
    noise = _manifest(root).results[0].judge_noise
    assert noise is not None and noise.runs == 1, rejudged.stderr
    assert noise.grades[0].grades["goalAchievement"] == [73, 73]
    estimate = next(x for x in rejudged.stderr.splitlines() if x.startswith("re-judging"))
    assert "≈6 judge calls" in estimate and all(m in estimate for m in agreement.members)


def test_a_wider_margin_flags_nothing(
    servers: dict[str, ScriptedModelServer], tmp_path: Path, axis: Any
) -> None:
    panel = [{"model": f"anthropic:{m}", "base_url": s.url} for m, s in servers.items()]
    root = _project(tmp_path / "p", {"panel": panel, "panelMargin": 100})
    out = axis("run", cwd=root)
    assert out.exit_code == 0, out.stderr + out.stdout
    agreement = _manifest(root).results[0].panel
    assert agreement is not None and agreement.margin == 100 and agreement.flagged == []
    text = axis("reports", _manifest(root).report_id, cwd=root).stdout
    assert "panel disagrees" not in text and "0 check grades flagged" in text


def test_a_malformed_panel_member_is_a_config_error(tmp_path: Path, axis: Any) -> None:
    root = _project(tmp_path / "p", {"panel": ["anthropic:a", "nope:b"]})
    out = axis("run", cwd=root)
    assert out.exit_code == 2
    assert "judging.panel[1]" in out.stderr + out.stdout
