"""``axis run`` for CI: the summary table, ``--min-score``, ``--junit``, ``--summary-md``.

End to end through the real CLI in a child process. The agents are shell commands (a
declarative adapter); scores come from deterministic checks, so every number is real and
known: a check that passes is worth its weight in the goal, no interactions leave the
other three dimensions at 100, and the composite is ``0.4 × goal + 60``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from markdown_it import MarkdownIt

from axis_eval.runs.baseline_models import BaselineComparison

XSD = Path(__file__).parent / "junit_xsd" / "JUnit.xsd"
SRC = Path(__file__).resolve().parents[2] / "src"
Axis = Callable[..., Any]

EXISTS = {"check": "out.txt exists", "run": "test -f out.txt", "weight": 0.5}
BYE = {"check": "out.txt says bye", "run": "grep -q bye out.txt", "weight": 0.5}
# `maker` writes out.txt; "bye" only on run 2 (so a repeated pair has a spread).
MAKER = 'echo hi > out.txt; if [ "$AXIS_RUN_INDEX" = 2 ]; then echo bye >> out.txt; fi; echo made'
ALWAYS_BYE = "echo hi > out.txt; echo bye >> out.txt; echo made"
# `broken` fails with terminal escapes on stderr: the XML must still be well formed.
BROKEN = "printf '\\033[31moops\\a\\n' >&2; exit 3"


def project(root: Path, maker: str = MAKER, *, extra_scenarios: bool = True) -> Path:
    """good (one check: 100), half (80), flaky (3 runs: 80, 100, 80), crash (fails)."""
    root.mkdir(parents=True, exist_ok=True)
    config = {
        # An agent may signal the test through a file beside the project (bwrap hides it).
        "settings": {"sandbox": {"writable": [str(root.parent)]}},
        "scenarios": "./scenarios",
        # `maker|m.1`: a display name with a pipe and a dot, as real ones have
        "agents": [{"agent": "maker", "model": "m.1"}, "broken"],
        "adapters": {
            "maker": {"command": ["sh", "-c", maker], "args": [], "output": "text"},
            "broken": {"command": ["sh", "-c", BROKEN], "args": [], "output": "text"},
        },
    }
    (root / "axis.config.json").write_text(json.dumps(config))
    folder = root / "scenarios"
    folder.mkdir(exist_ok=True)
    scenarios: dict[str, dict[str, Any]] = {
        "good": {"agents": ["maker"], "judge": [{"check": "exists", "run": "test -f out.txt"}]},
        "half": {"agents": ["maker"], "judge": [EXISTS, BYE]},
    }
    if extra_scenarios:
        scenarios["flaky"] = {"agents": ["maker"], "runs": 3, "judge": [EXISTS, BYE]}
        scenarios["crash"] = {"agents": ["broken"], "judge": [EXISTS]}
    for key, body in scenarios.items():
        data = {"name": key, "prompt": f"do {key}", **body}
        (folder / f"{key}.json").write_text(json.dumps(data))
    return root


def report_json(root: Path, stderr: str) -> tuple[Path, dict[str, Any]]:
    line = next(x for x in stderr.splitlines() if "Report saved:" in x)
    folder = Path(line.split("Report saved:", 1)[1].strip())
    return folder, json.loads((folder / "report.json").read_text())


def pairs_of(manifest: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(p["scenarioKey"], p["agentName"]): p for p in manifest["results"]}


# --- JUnit ---------------------------------------------------------------------------------


def junit(path: Path) -> ET.Element:
    """The document, after validating it against the vendored XSD."""
    xmlschema.XMLSchema(str(XSD)).validate(str(path))
    return ET.parse(path).getroot()


def junit_cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    """(classname, name) → testcase; fails on a duplicate."""
    found: dict[tuple[str, str], ET.Element] = {}
    for case in root.iter("testcase"):
        key = (case.attrib["classname"], case.attrib["name"])
        assert key not in found, f"two test cases for {key}"
        found[key] = case
    return found


def outcome(case: ET.Element) -> tuple[str, str, str]:
    """("passed"|"failure"|"error"|"skipped", type, message)."""
    for tag in ("failure", "error", "skipped"):
        child = case.find(tag)
        if child is not None:
            return tag, child.attrib.get("type", ""), child.attrib.get("message", "")
    return "passed", "", ""


def properties(suite: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}


def check_suite_counts(root: ET.Element) -> None:
    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        kinds = [outcome(c)[0] for c in cases]
        assert int(suite.attrib["tests"]) == len(cases)
        assert int(suite.attrib["failures"]) == kinds.count("failure")
        assert int(suite.attrib["errors"]) == kinds.count("error")
        assert int(suite.attrib["skipped"]) == kinds.count("skipped")
        total = sum(float(c.attrib["time"]) for c in cases)
        assert abs(float(suite.attrib["time"]) - total) < 0.01


# --- Markdown ------------------------------------------------------------------------------


def _text(token: Any) -> str:
    return "".join(c.content for c in token.children or [] if c.type in ("text", "code_inline"))


def md_tables(text: str) -> list[list[list[str]]]:
    """Every table of a Markdown document as rows of cell texts (header row first)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables: list[list[list[str]]] = []
    row: list[str] = []
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            row.append(_text(tokens[i + 1]))
        elif token.type == "tr_close":
            tables[-1].append(row)
    return tables


def md_rows(text: str) -> dict[tuple[str, str], dict[str, str]]:
    tables = md_tables(text)
    assert len(tables) == 1, "one table of pairs"
    header, *rows = tables[0]
    out = {}
    for cells in rows:
        cell = dict(zip(header, cells, strict=True))
        out[(cell["Scenario"], cell["Agent"])] = cell
    return out


def expected_cells(pair: dict[str, Any]) -> dict[str, str]:
    """What the summary's row must say, from report.json's pair entry."""
    score = pair["score"] or {}
    dims = ("axisScore", "goalAchievement", "environment", "service", "agent")
    heads = ("AXIS", "Goal", "Env", "Svc", "Agent dim")
    pairs = zip(heads, dims, strict=True)
    cells = {h: str(score[d]) if score.get(d) is not None else "-" for h, d in pairs}
    stdev = (pair["spread"] or {}).get("axisScore", {}).get("stdev")
    cells["Runs · σ"] = str(pair["runCount"]) + ("" if stdev is None else f" · σ {stdev:g}")
    rel = pair["reliability"]
    cells["Reliability"] = f"{rel['succeeded']}/{rel['total']}"
    return cells


# --- tests ---------------------------------------------------------------------------------


def test_junit_summary_and_min_score_for_a_failing_run(tmp_path: Path, axis_process: Axis) -> None:
    root = project(tmp_path / "proj")
    (root / "scenarios" / "torn.json").write_text("{not json")  # a load failure
    (tmp_path / "out").mkdir()
    done = axis_process(
        "run",
        "--min-score",
        "90",
        "--junit",
        "../out/junit.xml",
        "--summary-md",
        "../out/summary.md",
        cwd=root,
    )
    assert done.exit_code == 1, done.stderr
    assert "Traceback" not in done.stderr
    folder, manifest = report_json(root, done.stderr)
    pairs = pairs_of(manifest)
    assert pairs[("half", "maker|m.1")]["score"]["axisScore"] == 80
    assert pairs[("flaky", "maker|m.1")]["score"]["axisScore"] == 80
    assert pairs[("good", "maker|m.1")]["score"]["axisScore"] == 100
    assert pairs[("crash", "broken")]["failed"] is True

    # --min-score names each pair below it (on stderr, after the one summary table)
    err = done.stderr
    assert "BELOW --min-score 90: half × maker|m.1 (composite 80)" in err
    assert "BELOW --min-score 90: flaky × maker|m.1 (composite 80)" in err
    assert "good × maker|m.1" not in err
    assert err.count("Scenario  Agent") == 1
    table = err.index("Scenario  Agent")
    assert table < err.index("BELOW --min-score") < err.index("Report saved:")
    row = next(x for x in err.splitlines() if x.startswith("flaky "))
    assert row.split()[2:10] == ["✗", "fail", "80", "50", "100", "100", "100", "3"]
    stdev = pairs[("flaky", "maker|m.1")]["spread"]["axisScore"]["stdev"]
    assert f"3 · σ {stdev:.1f}" in row and "3/3 scored" in row

    # JUnit: valid, one test case per pair plus one error per unloadable file
    root_el = junit(tmp_path / "out" / "junit.xml")
    cases = junit_cases(root_el)
    expected = {(agent, key) for key, agent in pairs} | {("load", "scenarios/torn.json")}
    assert set(cases) == expected
    assert outcome(cases[("maker|m.1", "good")]) == ("passed", "", "")
    kind, typ, message = outcome(cases[("maker|m.1", "half")])
    assert (kind, typ, message) == (
        "failure",
        "below-min-score",
        "composite 80 below --min-score 90",
    )
    assert outcome(cases[("maker|m.1", "flaky")])[1] == "below-min-score"
    kind, typ, message = outcome(cases[("broken", "crash")])
    assert (kind, typ, message) == ("failure", "failed", "failed: oops")  # escapes dropped
    assert outcome(cases[("load", "scenarios/torn.json")])[:2] == ("error", "load-failure")
    check_suite_counts(root_el)
    suites = {s.attrib["name"]: s for s in root_el.iter("testsuite")}
    assert set(suites) == {"maker|m.1", "broken", "load-failures"}
    maker = properties(suites["maker|m.1"])
    assert maker["axis.reportId"] == manifest["reportId"] == folder.name
    assert maker["axis.version"] == manifest["tool"]["version"]
    assert maker["axis.minScore"] == "90" and maker["axis.reliability"] == "5/5"
    assert float(maker["axis.score.composite"]) == pytest.approx((100 + 80 + 80) / 3, abs=0.05)
    assert maker["axis.passRate"] == "1"  # 5 of 5 runs reached --pass-score 75
    runs_ms = sum(r["durationMs"] for r in pairs[("flaky", "maker|m.1")]["runs"])
    assert float(cases[("maker|m.1", "flaky")].attrib["time"]) == pytest.approx(runs_ms / 1000)
    assert suites["maker|m.1"].attrib["timestamp"] == manifest["startedAt"][:19]
    out = suites["maker|m.1"].findtext("system-out") or ""
    assert "half: failed · composite 80 (goal 50 · env 100 · svc 100 · agent 100)" in out

    # Markdown: one table; its cells are report.json's numbers
    text = (tmp_path / "out" / "summary.md").read_text()
    rows = md_rows(text)
    assert set(rows) == set(pairs)
    for key, pair in pairs.items():
        cells = rows[key]
        for name, value in expected_cells(pair).items():
            assert cells[name] == value, (key, name)
    flaky = pairs[("flaky", "maker|m.1")]["passRates"]
    assert rows[("flaky", "maker|m.1")]["pass@k"] == f"{flaky['passAtK'][-1]:.2f} (k=3)"
    assert rows[("good", "maker|m.1")]["pass@k"] == "-"
    status = {k: v["Status"] for k, v in rows.items()}
    assert status == {
        ("good", "maker|m.1"): "✅ pass",
        ("half", "maker|m.1"): "❌ fail",
        ("flaky", "maker|m.1"): "❌ fail",
        ("crash", "broken"): "❌ fail",
    }
    head = text.splitlines()[0]
    assert head == f"## ❌ AXIS report {manifest['reportId']}"
    average = manifest["summary"]["averageAxisScore"]
    assert f"**1 passed** · **3 failed** of 4 pairs · average composite **{average:g}**" in text
    assert "- ❌ **half × maker\\|m.1**: composite 80 below --min-score 90" in text
    assert "- ❌ **crash × broken**: failed: oops" in text


def test_a_regression_fails_the_case_and_the_comparison_is_saved(
    tmp_path: Path, axis_process: Axis
) -> None:
    root = project(tmp_path / "proj", ALWAYS_BYE, extra_scenarios=False)
    first = axis_process("run", cwd=root)
    assert first.exit_code == 0, first.stderr
    assert axis_process("baseline", "set", "ci", cwd=root).exit_code == 0
    project(root, "echo hi > out.txt; echo made", extra_scenarios=False)  # "bye" is gone
    fresh = {"name": "fresh", "prompt": "do fresh", "agents": ["maker"], "judge": [EXISTS]}
    (root / "scenarios" / "fresh.json").write_text(json.dumps(fresh))  # not in the baseline

    done = axis_process(
        "run", "--compare-baseline", "ci", "--junit", "j.xml", "--summary-md", "s.md", cwd=root
    )
    assert done.exit_code == 1, done.stderr
    folder, manifest = report_json(root, done.stderr)
    assert pairs_of(manifest)[("half", "maker|m.1")]["score"]["axisScore"] == 80

    # the comparison beside the report is exactly what `axis baseline compare --json` says
    saved = json.loads((folder / "baseline-comparison.json").read_text())
    again = axis_process(
        "baseline", "compare", "ci", "--report", manifest["reportId"], "--json", cwd=root
    )
    assert again.exit_code == 1
    assert saved == json.loads(again.stdout)
    comparison = BaselineComparison.model_validate(saved)
    half = next(e for e in comparison.entries if e.scenario_key == "half")
    assert (half.baseline, half.current, half.delta, half.verdict) == (100, 80, -20, "regressed")

    err = done.stderr
    assert "Baseline: ci" in err and "0 improved, 1 regressed, 1 unchanged" in err
    assert "REGRESSION half × maker|m.1: 100 → 80 (-20)" in err
    assert err.index("Scenario  Agent") < err.index("Baseline: ci") < err.index("Report saved:")

    cases = junit_cases(junit(root / "j.xml"))
    assert set(cases) == {("maker|m.1", "good"), ("maker|m.1", "half"), ("maker|m.1", "fresh")}
    assert outcome(cases[("maker|m.1", "fresh")])[0] == "passed"
    assert outcome(cases[("maker|m.1", "good")])[0] == "passed"
    kind, typ, message = outcome(cases[("maker|m.1", "half")])
    assert (kind, typ) == ("failure", "regressed")
    assert message.startswith("regressed vs baseline ci: 100 → 80 (-20), beyond the noise band ±1")

    rows = md_rows((root / "s.md").read_text())
    assert rows[("half", "maker|m.1")]["Δ baseline"] == f"{half.delta:+g}" == "-20"
    assert rows[("half", "maker|m.1")]["Verdict"] == "regressed"
    assert rows[("good", "maker|m.1")]["Δ baseline"] == "+0"
    assert rows[("good", "maker|m.1")]["Verdict"] == "unchanged"
    assert rows[("half", "maker|m.1")]["Status"] == "❌ fail"
    assert (
        rows[("fresh", "maker|m.1")]["Δ baseline"],
        rows[("fresh", "maker|m.1")]["Verdict"],
    ) == (
        "-",
        "new",
    )
    fresh_row = next(line for line in err.splitlines() if line.startswith("fresh "))
    assert fresh_row.split()[-2:-1] == ["new"]  # the terminal table: ΔBaseline -, Verdict new


@pytest.mark.parametrize(
    ("flag", "target", "says"),
    [
        ("--junit", "missing/junit.xml", "does not exist"),
        ("--summary-md", "a-folder", "is a folder"),
        ("--junit", "a-file/junit.xml", "is not a folder"),
    ],
)
def test_a_bad_output_path_exits_2_before_any_job(
    tmp_path: Path, axis_process: Axis, flag: str, target: str, says: str
) -> None:
    marker = tmp_path / "agent-ran"
    root = project(tmp_path / "proj", f"touch {marker}; echo made", extra_scenarios=False)
    (root / "a-folder").mkdir()
    (root / "a-file").write_text("")
    done = axis_process("run", flag, target, cwd=root)
    assert done.exit_code == 2
    assert f"error: {flag} {target}: " in done.stderr and says in done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists() and not (root / ".axis" / "reports").exists()


def test_a_missing_baseline_exits_before_any_job(tmp_path: Path, axis_process: Axis) -> None:
    marker = tmp_path / "agent-ran"
    root = project(tmp_path / "proj", f"touch {marker}; echo made", extra_scenarios=False)
    done = axis_process("run", "--compare-baseline", "nope", "--junit", "j.xml", cwd=root)
    assert done.exit_code == 1 and 'Baseline "nope" not found' in done.stderr
    assert not marker.exists() and not (root / "j.xml").exists()


def test_junit_and_summary_with_dry_run_are_refused(tmp_path: Path, axis_process: Axis) -> None:
    root = project(tmp_path / "proj", extra_scenarios=False)
    done = axis_process("run", "--dry-run", "--junit", "j.xml", cwd=root)
    assert done.exit_code == 2 and "cannot be combined with --dry-run" in done.stderr


def test_a_no_score_run_still_writes_valid_junit(tmp_path: Path, axis_process: Axis) -> None:
    root = project(tmp_path / "proj")
    done = axis_process(
        "run",
        "--no-score",
        "--min-score",
        "50",
        "--junit",
        "j.xml",
        "--summary-md",
        "s.md",
        cwd=root,
    )
    assert done.exit_code == 1, done.stderr  # `crash` failed; nothing else did
    assert "warning: --min-score 50 skipped: --no-score scored nothing" in done.stderr
    _, manifest = report_json(root, done.stderr)
    assert all(r["score"] is None for p in manifest["results"] for r in p["runs"])
    root_el = junit(root / "j.xml")
    cases = junit_cases(root_el)
    assert len(cases) == 4
    failing = {k for k, c in cases.items() if outcome(c)[0] != "passed"}
    assert failing == {("broken", "crash")}
    check_suite_counts(root_el)
    maker = properties(next(s for s in root_el.iter("testsuite") if s.attrib["name"] != "broken"))
    assert "axis.score.composite" not in maker and maker["axis.reliability"] == "5/5"
    rows = md_rows((root / "s.md").read_text())
    assert rows[("good", "maker|m.1")]["AXIS"] == "-"
    assert rows[("good", "maker|m.1")]["Status"] == "✅ pass"


def test_an_interrupted_run_writes_skipped_cases(tmp_path: Path) -> None:
    started = tmp_path / "started"
    root = project(tmp_path / "proj", f"touch {started}; exec sleep 30", extra_scenarios=False)
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "axis_eval", "run", "--junit", "j.xml", "--summary-md", "s.md"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the agent never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    _, manifest = report_json(root, stderr)
    assert manifest["state"] == "interrupted"
    cases = junit_cases(junit(root / "j.xml"))
    assert {outcome(c)[0] for c in cases.values()} == {"skipped"}
    assert len(cases) == len(manifest["results"]) == 2
    text = (root / "s.md").read_text()
    assert text.startswith(f"## ❌ AXIS report {manifest['reportId']}")
    assert "interrupted" in text.splitlines()[2]
