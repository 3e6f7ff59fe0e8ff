"""report.html without a browser: content, escaping, payloads, unscored and failed runs, CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

from axis_eval.errors import ReportNotFound
from axis_eval.report.html import render_html, write_html
from axis_eval.report.html._payload import TIERS
from axis_eval.scoring.signals import speed_category, speed_score
from axis_eval.transcript.sparse_index import CATEGORY_LABELS

from ._project import (
    HOSTILE,
    Reports,
    axis,
    expected_cells,
    parse,
    payloads,
    run_report,
    shared_reports,
)
from .helpers import OpenReport


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Reports:
    return shared_reports(tmp_path_factory)


def manifest(folder: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / "report.json").read_text())
    return data


def test_summary_rows_show_the_representatives_scores(reports: Reports) -> None:
    page = render_html(reports.scored)
    pairs = manifest(reports.scored)["results"]
    assert isinstance(pairs, list)
    rows = parse(page).rows
    assert [(r["@scenario"], r["@agent"]) for r in rows] == [
        (p["scenarioKey"], p["agentName"]) for p in pairs
    ]
    for row, pair in zip(rows, pairs, strict=True):
        assert {k: v for k, v in row.items() if not k.startswith("@")} == (expected_cells(pair))
    words = next(p for p in pairs if p["scenarioKey"] == "words")
    assert words["representativeRunIndex"] == 3  # the median of 77, 57, 67
    assert f'data-axis-report="{reports.scored.name}"' in page


def test_every_payload_decodes_and_carries_the_pair(reports: Reports) -> None:
    page = render_html(reports.scored)
    decoded = payloads(page)
    pairs = manifest(reports.scored)["results"]
    assert isinstance(pairs, list)
    assert "config" in decoded
    for number, pair in enumerate(pairs):
        detail = decoded[f"p{number}"]
        assert (detail["key"], detail["agentName"]) == (pair["scenarioKey"], pair["agentName"])
        reps = [r["index"] for r in detail["runs"] if r["representative"]]
        expected = [pair["representativeRunIndex"]] if pair["representativeRunIndex"] else []
        assert reps == expected
        assert [r["scores"] for r in detail["runs"]] == [
            None if r["score"] is None else {k: r["score"][k] for k in expected_cells(r)}
            for r in pair["runs"]
        ]
    words = decoded[f"p{[p['scenarioKey'] for p in pairs].index('words')}"]
    # signals with the judge's rationale, both kinds of checks, insights, judge spend
    audited = {i["id"]: i for i in words["interactions"] if i["audited"]}
    assert audited[1]["rationale"] == "Listing was not needed."
    # the speed tier comes from the call's real duration (a loaded machine is slower): it is
    # the one the scoring tables give that duration, whatever the duration was
    labels = {label: category for category, label in CATEGORY_LABELS.items()}
    category = speed_category(labels[c] for c in audited[1]["categories"])
    expected_tier = TIERS.get(speed_score(category, audited[1]["durationMs"]), "excellent")
    assert audited[1]["tier"] == expected_tier
    assert audited[3]["success"] == 0 and audited[3]["error"] is True
    assert {c["kind"] for c in words["checks"]} == {"judge", "deterministic"}
    assert words["insights"] and words["charts"]["waterfall"].startswith("<svg")
    # the judge asked the scripted model server: simulated, no dollar figure
    assert all(
        r["judge"]["calls"] == 2 and r["judge"]["costSimulated"] and r["judge"]["costUsd"] is None
        for r in words["runs"]
    )
    assert all(r["costSimulated"] and r["cost"] is None for r in words["runs"])
    # a small artifact inline, a large one only linked
    arts = {a["path"]: a for a in words["runs"][0]["artifacts"]}
    assert arts["out.txt"]["content"] == "alpha beta gamma\n"
    assert arts["big.log"]["content"] is None
    assert (reports.scored / unquote(arts["big.log"]["href"])).stat().st_size == 70001
    assert words["runs"][0]["setupOutput"].startswith("## Setup")


def test_transcripts_are_payloads_not_markup(reports: Reports) -> None:
    page = render_html(reports.scored)
    decoded = payloads(page)
    pairs = manifest(reports.scored)["results"]
    assert isinstance(pairs, list)
    number = [p["scenarioKey"] for p in pairs].index("words")
    transcripts = decoded[f"t{number}"]
    assert sorted(transcripts) == ["1", "2", "3"]
    tools = [e["tool"] for e in transcripts["3"]["entries"] if "tool" in e]
    assert [t["name"] for t in tools] == ["Bash", "Write", "Bash"]
    assert HOSTILE in tools[0]["output"]  # carried intact, decoded by the page on demand
    assert "total 0" not in page  # ... and nowhere in the markup


def test_hostile_text_cannot_break_out(reports: Reports) -> None:
    page = render_html(reports.scored)
    tags = parse(page)
    # The scenario name, the judge's rationale, the answer and tool output all hold HOSTILE.
    assert "<img" not in page and "<!--" not in page
    assert {t for t, _ in tags.tags} <= {
        "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt",
        "dd", "div", "main", "section", "figure", "svg", "desc", "text", "rect",
        "figcaption", "p", "label", "input", "span", "table", "caption", "thead", "tr", "th",
        "tbody", "td", "a", "details", "summary", "ul", "li", "code", "pre", "footer", "script",
        "line", "circle",
    }  # fmt: skip
    scripts = [a for t, a in tags.tags if t == "script"]
    assert page.count("</script>") == len(scripts)
    assert all(a.get("type") in (None, "application/x-axis-gzip") for a in scripts)
    assert len([a for a in scripts if a.get("type") is None]) == 1  # ours, allowed by hash
    assert "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page  # shown as text


def test_unscored_and_failed_runs_render(reports: Reports) -> None:
    page = render_html(reports.unscored)
    rows = {r["@scenario"]: r for r in parse(page).rows}
    assert rows["words"]["axisScore"] == "–" and rows["crash"]["agent"] == "–"
    assert 'class="status" title="the agent crashed on purpose"' in page
    decoded = payloads(page)
    pairs = manifest(reports.unscored)["results"]
    assert isinstance(pairs, list)
    crash = decoded[f"p{[p['scenarioKey'] for p in pairs].index('crash')}"]
    assert crash["status"] == "failed" and crash["error"] == "the agent crashed on purpose"
    assert crash["runs"][0]["errorKind"] == "agent" and crash["runs"][0]["scores"] is None
    words = decoded[f"p{[p['scenarioKey'] for p in pairs].index('words')}"]
    assert words["runs"][0]["scores"] is None and words["checks"] == []
    assert words["interactions"]  # the waterfall needs no score


def test_baseline_deltas_show_per_pair(reports: Reports, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(reports.root, root)
    folder = root / ".axis" / "reports" / reports.scored.name
    assert axis(root, "baseline", "set", "main", "--from", reports.scored.name).returncode == 0
    done = axis(root, "baseline", "compare", "main", "--report", reports.scored.name, "--json")
    comparison = json.loads(done.stdout)
    (folder / "baseline-comparison.json").write_text(done.stdout)
    page = render_html(folder)
    assert "Compared with baseline <strong>main</strong>" in page
    decoded = payloads(page)
    entry = comparison["entries"][0]
    shown = [p["baseline"] for p in decoded.values() if isinstance(p.get("baseline"), dict)]
    assert [(b["scenarioKey"], b["delta"], b["baselineName"]) for b in shown] == [
        (entry["scenarioKey"], entry["delta"], "main")
    ]
    assert '<td class="delta unchanged"' in page


def test_write_html_default_and_elsewhere_links_resolve(reports: Reports, tmp_path: Path) -> None:
    default = write_html(reports.scored)
    assert default == reports.scored / "report.html"
    assert default.read_text() == render_html(reports.scored)
    out = write_html(reports.scored, tmp_path / "site" / "x.html")
    decoded = payloads(out.read_text())
    links = [a["href"] for p in decoded.values() for r in p.get("runs", []) for a in r["artifacts"]]
    links += [f["href"] for p in decoded.values() for r in p.get("runs", []) for f in r["files"]]
    assert links
    for link in links:
        assert (out.parent / unquote(link)).resolve().is_file(), link
    assert not list(tmp_path.joinpath("site").glob(".*.tmp"))  # atomic: no leftovers


def test_missing_manifest_is_report_not_found(tmp_path: Path) -> None:
    with pytest.raises(ReportNotFound):
        render_html(tmp_path)


def test_cli_reports_html(reports: Reports, tmp_path: Path) -> None:
    root = reports.root
    target = reports.unscored / "report.html"
    target.unlink(missing_ok=True)
    done = axis(root, "reports", reports.unscored.name, "--html")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(target) and target.is_file()
    elsewhere = tmp_path / "page.html"
    done = axis(root, "reports", "latest", "--html", str(elsewhere))
    assert done.returncode == 0 and done.stdout.strip() == str(elsewhere), done.stderr
    assert elsewhere.read_text().count("data-axis-report=") == 1
    bad = axis(root, "reports", "--html")
    assert bad.returncode == 2 and "needs a report" in bad.stderr
    missing = axis(root, "reports", "nope", "--html")
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


def test_axis_run_writes_the_page_and_a_baseline_run_rewrites_it(
    reports: Reports, tmp_path: Path
) -> None:
    """The end of `axis run` writes report.html (no `--html` needed); with
    `--compare-baseline` the page is written again with the deltas."""
    page = (reports.scored / "report.html").read_text()
    assert f'data-axis-report="{reports.scored.name}"' in page
    assert "Compared with baseline" not in page
    root = tmp_path / "proj"
    shutil.copytree(reports.root, root)
    assert axis(root, "baseline", "set", "main", "--from", reports.scored.name).returncode == 0
    folder = run_report(root, "--compare-baseline", "main")
    saved = json.loads((folder / "baseline-comparison.json").read_text())
    page = (folder / "report.html").read_text()
    assert "Compared with baseline <strong>main</strong>" in page
    shown = [p["baseline"] for p in payloads(page).values() if isinstance(p.get("baseline"), dict)]
    assert [(b["scenarioKey"], b["delta"]) for b in shown] == [
        (e["scenarioKey"], e["delta"]) for e in saved["entries"]
    ]


def test_summary_and_script_come_before_the_payloads(reports: Reports) -> None:
    """The parser reaches the summary table and the page's script before any payload, so the
    summary is painted and interactive while megabytes of payloads are still being read."""
    page = render_html(reports.scored)
    summary = page.index('<table id="summary"')
    details = page.index('<details class="pair"')
    script = page.index("<script>")
    first_payload = page.index('<script type="application/x-axis-gzip"')
    assert summary < details < script < first_payload
    assert page.rindex("<script>") == script  # one page script, ahead of every payload
    assert page.count('<script type="application/x-axis-gzip"') == len(payloads(page))


def test_a_pair_opened_before_its_payload_is_parsed_still_renders(
    reports: Reports, open_report: OpenReport, tmp_path: Path
) -> None:
    """`#pair-N` in the address opens that pair as the script runs, while the parser still
    has megabytes of payloads to read (padding, as in a 1,000-job page, ahead of the real
    ones): the detail waits for its payload, then renders; nothing fails on the way."""
    pairs = manifest(reports.scored)["results"]
    assert isinstance(pairs, list)
    number = [p["scenarioKey"] for p in pairs].index("words")
    page_html = render_html(reports.scored)
    cut = page_html.index('<script type="application/x-axis-gzip"')
    padding = "".join(
        f'<script type="application/x-axis-gzip" data-payload="pad{i}">{"A" * 8000}</script>\n'
        for i in range(2000)
    )
    target = tmp_path / "padded.html"
    target.write_text(page_html[:cut] + padding + page_html[cut:], encoding="utf-8")
    opened = open_report(target, wait_until="commit")
    page = opened.page
    page.evaluate(f"location.hash = '#pair-{number}'")
    page.reload(wait_until="commit")
    detail = page.locator(f'#pair-{number}[data-rendered="true"]')
    detail.wait_for()
    assert detail.get_attribute("open") is not None
    assert detail.locator("tr.run-row").count() == 3
    page.locator("#config summary").click()  # the last payload
    page.wait_for_selector("#config pre")
    opened.assert_clean()
