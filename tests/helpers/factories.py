"""Hand-built report objects for tests: scores, runs, pairs and manifests with plain defaults.

One place to make a :class:`ScoreResult`, :class:`RunEntry`, :class:`PairEntry` or
:class:`ReportManifest` so a test states only what it is about, and a new required field is
added here once instead of in every test module. Every factory takes keyword overrides for
any field of the model it builds. Test modules import it as ``helpers.factories`` (``tests/``
is on the path, as for ``system_parts``).
"""

from __future__ import annotations

from typing import Any, Literal

from axis_eval._types import DIMENSIONS, JobStatus
from axis_eval.report.models import PairEntry, ReportManifest, RunEntry, Summary, ToolInfo
from axis_eval.runs.aggregate import PassGate, refresh_pair
from axis_eval.scoring.models import ScoreResult

Value = int | Literal["withheld"] | None
"""A run's score in :func:`run_entry`: a composite, ``"withheld"`` or ``None`` (not judged)."""


def score(value: int = 80, **fields: Any) -> ScoreResult:
    """A judged score: the composite and all four dimensions at ``value`` unless overridden."""
    return ScoreResult(**{"axis_score": value, **dict.fromkeys(DIMENSIONS, value), **fields})


def withheld(reason: str = "judge failed") -> ScoreResult:
    """A score the judge could not give: no composite, only the reason."""
    return ScoreResult(withheld=True, withheld_reason=reason)


def run_entry(
    index: int = 1, value: Value = None, *, status: JobStatus = "completed", **fields: Any
) -> RunEntry:
    """Run ``index`` of a pair, in folder ``run-{index}``; ``failed`` iff status ``failed``.

    ``value`` is a shorthand for the score (:data:`Value`); pass ``score=`` for any other.
    The score is set whatever the status, so a test can give a failed run one on purpose.
    """
    if value is not None:
        assert "score" not in fields, "give either value or score"
        fields["score"] = withheld() if value == "withheld" else score(value)
    fields.setdefault("failed", status == "failed")
    fields.setdefault("dir", f"run-{index}")
    return RunEntry(run_index=index, status=status, **fields)


def pair(
    *runs: RunEntry,
    scenario: str = "s",
    agent: str = "codex",
    refresh: bool = True,
    gate: PassGate | None = None,
    **fields: Any,
) -> PairEntry:
    """The (``scenario``, ``agent``) pair of ``runs``, its headline fields from its runs.

    A ``scenario`` of ``base@variant`` sets the base key and the variant. With ``refresh``
    (the default) :func:`refresh_pair` fills status, score, spread … as a run would, under
    ``gate``; ``refresh=False`` keeps the fields as given (status ``completed`` unless told).
    """
    base, _, variant = scenario.partition("@")
    entry = PairEntry(
        **{
            "scenario_key": scenario,
            "base_key": base,
            "variant": variant or None,
            "scenario_name": scenario,
            "agent_name": agent,
            "agent": agent,
            "status": "completed",
            "failed": False,
            "run_count": len(runs),
            "dir": f"scenarios/{scenario}/{agent}",
            "prompt": "do it",
            "judge": "done",
            "agent_config": {},
            "resolved_config": {},
            "runs": list(runs),
            **fields,
        }
    )
    if refresh:
        refresh_pair(entry, gate)
    return entry


def manifest(*pairs: PairEntry, report_id: str = "r", **fields: Any) -> ReportManifest:
    """Report ``report_id`` holding ``pairs``; its summary counts only the pairs unless given.

    ``config_path`` defaults to ``axis.config.json`` in ``config_dir`` (``/p``).
    """
    config_dir = fields.pop("config_dir", "/p")
    return ReportManifest(
        **{
            "tool": ToolInfo(version="test"),
            "report_id": report_id,
            "started_at": "2026-01-01T00:00:00.000Z",
            "timestamp": "2026-01-01T00:01:00.000Z",
            "config_path": f"{config_dir}/axis.config.json",
            "config_dir": config_dir,
            "summary": Summary(total=len(pairs)),
            "results": list(pairs),
            **fields,
        }
    )
