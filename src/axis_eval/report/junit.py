"""``axis run --junit PATH``: the report as JUnit XML, one test case per pair.

The shape is the Ant JUnit schema most CI systems read (GitLab, Jenkins, Azure, CircleCI;
tests/cli/junit_xsd/ vendors it): ``<testsuites>`` holding one ``<testsuite>`` per agent
(in the report's order), each with ``<properties>``, its ``<testcase>`` elements, then
``<system-out>`` and ``<system-err>``. A test case is named after the scenario key, its
class after the agent. It fails (``<failure>``) when the pair failed, regressed or fell
below ``--min-score``; the message names every reason with its numbers. A cancelled pair
is ``<skipped>``. Scenario files that failed to load are ``<error>`` test cases in a last
suite, ``load-failures``. The schema has no properties per test case, so a pair's numbers
are listed in its suite's ``<system-out>``.
"""

from __future__ import annotations

import re
import socket
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime

from axis_eval._types import DIMENSIONS, camel
from axis_eval.report.models import ReportManifest
from axis_eval.report.verdicts import CiVerdicts, PairVerdict, first_line, strip_ansi
from axis_eval.runs.aggregate import describe_reliability, pair_duration_ms

_INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot carry (an agent's stderr can hold terminal escapes)."""


def _clean(text: str) -> str:
    return _INVALID_XML.sub("", strip_ansi(text))


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.3f}"


def junit_timestamp(iso: str) -> str:
    """``2026-01-02T10:15:00.123Z`` → ``2026-01-02T10:15:00`` (UTC; the schema allows no zone)."""
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        when = datetime.now(UTC)
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S")


def _hostname() -> str:
    try:
        name = socket.gethostname().strip()
    except OSError:
        name = ""
    return name or "localhost"


def _mean(values: Sequence[float]) -> str | None:
    return f"{round(statistics.fmean(values), 1):g}" if values else None


def _suite_properties(
    result: CiVerdicts, agent: str, group: list[PairVerdict]
) -> list[tuple[str, str]]:
    m = result.manifest
    props = [
        ("axis.reportId", m.report_id),
        ("axis.reportDir", str(result.report_dir)),
        ("axis.version", m.tool.version),
        ("axis.agentName", agent),
        ("axis.state", m.state),
    ]
    if m.profile:
        props.append(("axis.profile", m.profile))
    scores = [p.pair.score for p in group if p.composite is not None]
    average = _mean([float(v.composite) for v in group if v.composite is not None])
    if average is not None:
        props.append(("axis.score.composite", average))
        for attr in DIMENSIONS:
            values = [float(v) for s in scores if s is not None and (v := getattr(s, attr))]
            props.append((f"axis.score.{camel(attr)}", _mean(values) or "-"))
    succeeded = sum(v.pair.reliability.succeeded for v in group if v.pair.reliability)
    total = sum(v.pair.reliability.total for v in group if v.pair.reliability)
    props.append(("axis.reliability", f"{succeeded}/{total}"))
    rates = [v.pair.pass_rates for v in group if v.pair.pass_rates is not None]
    n = sum(r.n for r in rates)
    if rates and n:
        passed = sum(r.passed for r in rates)
        props.append(("axis.passRate", f"{passed / n:.4g}"))
        props.append(("axis.passScore", str(rates[0].pass_score)))
    if result.min_score is not None:
        props.append(("axis.minScore", str(result.min_score)))
    if result.comparison is not None:
        props.append(("axis.baseline", result.comparison.baseline_name))
    return props


def pair_line(v: PairVerdict, *, scored: bool) -> str:
    """One pair in a suite's ``<system-out>``: its numbers and its outcome."""
    p = v.pair
    parts = [f"{p.scenario_key}: {v.outcome}"]
    score = p.score
    if score is not None and score.withheld:
        parts.append("score withheld")
    elif v.composite is not None and score is not None:
        parts.append(
            f"composite {v.composite} (goal {score.goal_achievement} · env "
            f"{score.environment} · svc {score.service} · agent {score.agent})"
        )
    runs = f"{p.run_count} run" + ("s" if p.run_count != 1 else "")
    if p.spread is not None and p.spread.axis_score.stdev is not None:
        runs += f" · σ {p.spread.axis_score.stdev:g}"
    parts.append(runs)
    if p.reliability is not None:
        parts.append(describe_reliability(p.reliability, scored=scored))
    rates = p.pass_rates
    if rates is not None and rates.n and p.run_count > 1:
        parts.append(f"pass@{rates.n} {rates.pass_at_k[-1]:.2f}")
    if v.comparison is not None and v.comparison.delta is not None:
        parts.append(f"vs baseline {v.comparison.delta:+g} ({v.comparison.verdict})")
    return " · ".join(parts)


def _testcase(parent: ET.Element, v: PairVerdict, *, scored: bool) -> None:
    p = v.pair
    case = ET.SubElement(
        parent,
        "testcase",
        name=_clean(p.scenario_key),
        classname=_clean(p.agent_name),
        time=_seconds(pair_duration_ms(p)),
    )
    if v.reasons:
        message = "; ".join(r.message for r in v.reasons)
        failure = ET.SubElement(case, "failure", type=v.reasons[0].kind, message=_clean(message))
        body = [r.message for r in v.reasons]
        if p.error and "\n" in p.error.strip():
            body += ["", p.error.strip()[:4000]]
        body += ["", pair_line(v, scored=scored)]
        failure.text = _clean("\n".join(body))
    elif v.outcome == "skipped":
        ET.SubElement(
            case, "skipped", message="cancelled: the run was interrupted before this pair finished"
        )


def _suite(
    root: ET.Element,
    *,
    index: int,
    name: str,
    timestamp: str,
    hostname: str,
    props: list[tuple[str, str]],
    counts: tuple[int, int, int, int],
    time_ms: int,
) -> ET.Element:
    tests, failures, errors, skipped = counts
    suite = ET.SubElement(
        root,
        "testsuite",
        name=_clean(name),
        package="axis",
        id=str(index),
        timestamp=timestamp,
        hostname=_clean(hostname),
        tests=str(tests),
        failures=str(failures),
        errors=str(errors),
        skipped=str(skipped),
        time=_seconds(time_ms),
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in props:
        ET.SubElement(properties, "property", name=key, value=_clean(value))
    return suite


def _head_lines(m: ReportManifest, result: CiVerdicts) -> list[str]:
    s = m.summary
    avg = "-" if s.average_axis_score is None else f"{s.average_axis_score:g}"
    return [
        f"AXIS report {m.report_id} ({m.state}): {result.count('passed')} passed, "
        f"{result.count('failed')} failed, {result.count('skipped')} skipped of {s.total} "
        f"pairs; average composite {avg}; {s.runs_total} runs",
        f"report folder: {result.report_dir}",
    ]


def render_junit(result: CiVerdicts) -> str:
    """The JUnit XML document (UTF-8, with its declaration)."""
    m = result.manifest
    root = ET.Element("testsuites")
    timestamp = junit_timestamp(m.started_at)
    hostname = _hostname()
    groups: dict[str, list[PairVerdict]] = {}
    for v in result.pairs:
        groups.setdefault(v.pair.agent_name, []).append(v)
    head = _head_lines(m, result)
    for index, (agent, group) in enumerate(groups.items()):
        counts = (
            len(group),
            sum(v.outcome == "failed" for v in group),
            0,
            sum(v.outcome == "skipped" for v in group),
        )
        suite = _suite(
            root,
            index=index,
            name=agent,
            timestamp=timestamp,
            hostname=hostname,
            props=_suite_properties(result, agent, group),
            counts=counts,
            time_ms=sum(pair_duration_ms(v.pair) for v in group),
        )
        for v in group:
            _testcase(suite, v, scored=result.scored)
        out = ET.SubElement(suite, "system-out")
        out.text = _clean(
            "\n".join([*head, *(pair_line(v, scored=result.scored) for v in group)]) + "\n"
        )
        ET.SubElement(suite, "system-err")
    if m.load_failures:
        n = len(m.load_failures)
        suite = _suite(
            root,
            index=len(groups),
            name="load-failures",
            timestamp=timestamp,
            hostname=hostname,
            props=[("axis.reportId", m.report_id), ("axis.version", m.tool.version)],
            counts=(n, 0, n, 0),
            time_ms=0,
        )
        for failure in m.load_failures:
            case = ET.SubElement(
                suite, "testcase", name=_clean(failure.path), classname="load", time="0.000"
            )
            error = ET.SubElement(
                case,
                "error",
                type="load-failure",
                message=_clean(first_line(failure.error) or "failed to load"),
            )
            error.text = _clean(failure.error)
        out = ET.SubElement(suite, "system-out")
        out.text = _clean("\n".join(head) + "\n")
        ET.SubElement(suite, "system-err")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
